/* A bounded cache of scan verdicts: the spans a scan found in a text, keyed
 * by a fingerprint of the text's exact bytes, its length, its mode (plain or
 * JSON text) and the engine's generation (a number no other engine of the
 * process has, renewed by every change of what the engine detects: custom
 * types, phone regions, pii.allow lists). A text already scanned by the same
 * engine is not scanned again: its spans are replayed.
 *
 * The fingerprint is Poly1305 (RFC 8439) under a secret key drawn from the
 * system's random source when the cache is made, used as a keyed universal
 * hash: for any two different texts of at most L bytes, chosen without
 * knowing the key, the chance that their fingerprints are equal is at most
 * 8 x ceil(L / 16) / 2^106 (below 2^-81 for the largest text the scanner
 * takes), so a text cannot be made to pass as one already scanned. The key
 * and the fingerprints never leave the process (no log, no metric, no
 * store), so nothing can be learned about the key from them; Poly1305's
 * one-time-key rule guards tags that are shown to an attacker, and these
 * never are. It runs at several GB/s where SHA-256 runs at about one, and the
 * digest is most of what a conversation's later turn costs the scan.
 *
 * An entry holds the fingerprint and the spans (offsets, lengths, types),
 * never a byte of the text: nothing in the cache can be read back as a
 * value. A hit needs the same fingerprint and length, so a text changed by
 * one byte anywhere is a miss and is scanned.
 * Masking stays per request: the cache gives spans, each request's own map
 * gives the placeholders.
 *
 * Bounded by bytes (entries and their spans, the table not counted):
 * past the bound the least recently used entries are evicted. One mutex
 * around the table; an engine's scans on any thread may share it. Plain
 * texts shorter than SW_PII_CACHE_MIN_TEXT, and JSON texts (tool-call
 * arguments) shorter than SW_PII_CACHE_MIN_JSON, are scanned as before:
 * their scan costs about what the fingerprint and the lock would (a JSON text's
 * scan builds a decoded view first, so a short one already costs more).
 * Pure: no I/O, no clock. */
#ifndef SW_PII_CACHE_H
#define SW_PII_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pii/pii.h"

#define SW_PII_CACHE_MIN_TEXT 256
#define SW_PII_CACHE_MIN_JSON 16
#define SW_PII_CACHE_DEFAULT_BYTES ((size_t)16 << 20)

struct sw_pii_cache;

struct sw_pii_cache_stats {
    uint64_t hits;              /* scans answered from the cache */
    uint64_t misses;            /* scans of a text not in the cache (then stored) */
    uint64_t evicted;           /* entries dropped to stay under the bound */
    uint64_t cleared;           /* entries dropped by sw_pii_cache_clear */
    size_t bytes;               /* held now */
    size_t entries;
    size_t max_bytes;
};

/* A cache of at most max_bytes (0: stores nothing, every scan runs). NULL on
 * ENOMEM. */
struct sw_pii_cache *sw_pii_cache_new(size_t max_bytes);
void sw_pii_cache_free(struct sw_pii_cache *c);
/* Drops every entry (a reload: the old engines' verdicts are never asked
 * for again). */
void sw_pii_cache_clear(struct sw_pii_cache *c);
/* A new bound; entries past it are evicted at once. */
void sw_pii_cache_set_max(struct sw_pii_cache *c, size_t max_bytes);
void sw_pii_cache_get_stats(const struct sw_pii_cache *c, struct sw_pii_cache_stats *st);

/* Scans of e and of every engine sw_pii_engine_allowing makes from it from
 * now on use c (NULL: none). Set before e is shared; c must outlive them. */
void sw_pii_engine_set_cache(struct sw_pii_engine *e, struct sw_pii_cache *c);
struct sw_pii_cache *sw_pii_engine_cache(const struct sw_pii_engine *e);
/* The engine's generation (tests). */
uint64_t sw_pii_engine_gen(const struct sw_pii_engine *e);

/* ---- Used by detect.c ---- */

struct sw_pii_cache_key {
    unsigned char digest[16];   /* the text's keyed fingerprint (Poly1305) */
    uint64_t gen;
    uint32_t len;
    uint8_t json;
};

/* The key of text under engine generation gen and mode json. false when the
 * fingerprint cannot be computed (then scan without the cache). */
bool sw_pii_cache_key_of(struct sw_pii_cache *c, const char *text, size_t len, uint64_t gen,
                         int json, struct sw_pii_cache_key *k);
/* A hit: true, *n spans written to *sp (buf when they fit in buf_n, else a
 * malloc'd array the caller frees; *sp != buf tells). A miss or ENOMEM:
 * false (counted as a miss). */
bool sw_pii_cache_get(struct sw_pii_cache *c, const struct sw_pii_cache_key *k,
                      struct sw_pii_span *buf, size_t buf_n, struct sw_pii_span **sp, size_t *n);
/* Stores the n spans a scan found for k (copied: offsets, lengths, types).
 * Nothing when it would not fit the bound or memory is short. */
void sw_pii_cache_put(struct sw_pii_cache *c, const struct sw_pii_cache_key *k,
                      const struct sw_pii_span *sp, size_t n);

/* Tests: calls fn with each entry's memory (what the cache holds for it, all
 * of it). */
void sw_pii_cache_each(const struct sw_pii_cache *c,
                       void (*fn)(void *ud, const void *entry, size_t bytes), void *ud);

#endif
