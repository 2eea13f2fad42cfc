/* The parse memo: the jansson value of an array element of a request body,
 * kept by the element's exact bytes, so a body that resends elements parsed
 * before (an agent's conversation: every turn resends the earlier messages,
 * tools and system blocks) builds a tree only for what is new.
 *
 * Before a body of at least SW_JMEMO_MIN_BODY bytes is parsed
 * (sw_json_load_bounded), sw_jmemo_plan finds the elements of its top-level
 * arrays (of at least SW_JMEMO_MIN_BYTES each) and looks each up: by a
 * 64-bit XXH3 of its bytes, then byte for byte against the bytes the entry
 * was parsed from, so an element that differs by one byte is never taken
 * for another. An entry knows the element that followed it in the last
 * body planned with it; where the next element's bytes are that one's
 * (compared byte for byte), it is taken without its bytes being walked or
 * hashed: an agent's turn resends its conversation in order. The padded copy the parser reads has each hit replaced
 * by a 0 (sw_jmemo_compact); the parser checks the rest of the body as it
 * would have, and the builder puts the entry's value where the 0 is. The
 * values are shared, never changed (a request that edits its tree edits a
 * copy); jansson counts their references atomically, so a worker thread may
 * read them while the loop parses the next body.
 *
 * Substituting is exact: a hit's bytes are a whole JSON value that parsed
 * before with the same flags, so the body is well-formed exactly when the
 * compacted copy is, and its tree is the copy's with the entry's value in
 * place of the 0. The body's bounds (values, depth) count a hit as the
 * structural characters and nesting its bytes have.
 *
 * Bounded by limits.parse_cache_bytes (0: off); the least recently used
 * entries go first. One thread parses with it: the first that plans a
 * parse (the event loop); any other parses without it. Pure: no I/O, no
 * clock. */
#ifndef SW_COMMON_JMEMO_H
#define SW_COMMON_JMEMO_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct sw_buf;

#define SW_JMEMO_MIN_BODY 8192      /* smaller bodies are parsed whole */
#define SW_JMEMO_MIN_BYTES 64       /* smaller elements are parsed each time */

struct sw_jmemo_stats {
    uint64_t hits;              /* elements whose value came from the memo */
    uint64_t misses;            /* elements parsed, then kept */
    uint64_t evicted;           /* entries dropped to stay under the bound */
    size_t bytes;               /* held now (an estimate of the trees and their bytes) */
    size_t entries;
    size_t max_bytes;
};

/* The bound; 0 empties the memo and turns it off. Past a smaller bound the
 * least recently used entries go at once. */
void sw_jmemo_set_max(size_t max_bytes);
void sw_jmemo_clear(void);
void sw_jmemo_get_stats(struct sw_jmemo_stats *st);
/* Notes: what another layer worked out from a value the memo holds (the
 * PII scan's verdict on a message), kept with it for as long as it is held:
 * a value the memo holds never changes, so a note about it stays true. A
 * few notes per value, each found by its key (what it depends on besides
 * the value: the engine, the surface); a new key takes the oldest one's
 * place. Counted in the memo's bytes. Any thread.
 * sw_jmemo_note_get: whether v is held with a note of key and len bytes
 * (copied to out). sw_jmemo_note_put: does nothing when v is not held. */
bool sw_jmemo_note_get(const json_t *v, uint64_t key, void *out, size_t len);
void sw_jmemo_note_put(const json_t *v, uint64_t key, const void *data, size_t len);
/* A note of any length (a value's compact text) appended to out: false
 * when v is not held with a note of key, or out cannot take it. */
bool sw_jmemo_note_append(const json_t *v, uint64_t key, struct sw_buf *out);
/* The same note shared, not copied: its bytes in *data and *len, kept by
 * the reference returned (after the memo dropped the value too) until it
 * is given back with sw_jmemo_note_unref (any thread). NULL when v is not
 * held with a note of key. */
void *sw_jmemo_note_ref(const json_t *v, uint64_t key, const void **data, size_t *len);
void sw_jmemo_note_unref(void *ref);

/* The notes of key (len bytes each) of the elements of arr from index
 * `from` on, at most 64 of them, read under one take of the lock (a walk of
 * an agent's resent messages asks about each): fn is called with each
 * element's index and note, under the lock (it takes no lock). Returns the
 * bits 1 << (i - from) of the elements i whose note fn accepted. */
uint64_t sw_jmemo_note_each(const json_t *arr, size_t from, uint64_t key, size_t len,
                            bool (*fn)(void *ud, size_t i, const void *note), void *ud);

/* The memo's lock held by this thread across a walk that asks about many
 * elements in turn (a dump of a body's messages), so that each question
 * does not take it again; every other thread waits meanwhile. Pairs; they
 * nest. Call nothing under a hold that takes another lock. */
void sw_jmemo_hold(void);
void sw_jmemo_release(void);

/* Derived values: what another layer builds from a held value (its
 * translation into another API's form, an array of the values it became),
 * kept with it under a key (what else the building depends on), so a
 * later request that resends the value reuses it whole. Each element of
 * the array is held in turn, for as long as the value is: notes can be
 * kept on it, and a walk of a tree built with it finds them. A derived
 * value is shared and never changed, as a parsed one is; a new key takes
 * the old one's place; its size is counted in the value's bytes.
 * sw_jmemo_derived_get: a new reference, or NULL. sw_jmemo_derived_put:
 * nothing when v is not held (or is itself derived). Any thread. */
json_t *sw_jmemo_derived_get(const json_t *v, uint64_t key);
/* The derived value whatever its key, and the key in *key: for a caller
 * that says something about the value in its key. */
json_t *sw_jmemo_derived_get_any(const json_t *v, uint64_t *key);
/* The derived value: the elements of arr from index `from` on. */
void sw_jmemo_derived_put(const json_t *v, uint64_t key, const json_t *arr, size_t from);

/* Tests: the hash the memo keys by (NULL: XXH3); empties the memo. */
void sw_jmemo_set_hash(uint64_t (*hash)(const void *p, size_t len));

struct sw_jmemo_entry;

/* One element of the body being parsed, in text order. */
struct sw_jmemo_elem {
    size_t off, len;            /* its bytes in the body */
    uint32_t member, index;     /* the top-level member's ordinal, the element's */
    uint64_t hash;
    struct sw_jmemo_entry *hit; /* NULL: parsed now, then offered */
    json_t *value;              /* the hit's value, or the one parsed (a reference) */
};

struct sw_jmemo_plan {
    struct sw_jmemo_elem *e;
    size_t n, cap;
    size_t hits;
    size_t hit_values;          /* structural characters of the hits' bytes */
    size_t hit_depth;           /* the deepest nesting within a hit (an object: 1) */
    size_t flags;               /* the parse's json_loadb flags */
};

/* Plans the parse of len bytes of text with flags: false when the memo is
 * off, the text is shorter than SW_JMEMO_MIN_BODY, this is not the memo's
 * thread, or the text is not laid out as an object (the parser then runs as
 * without the memo and decides). Each hit holds a reference until
 * sw_jmemo_done. */
bool sw_jmemo_plan(const char *text, size_t len, size_t flags, struct sw_jmemo_plan *p);

/* Writes the planned text (len bytes of text) to out (room for len bytes)
 * with each hit replaced by a 0, for the parser; returns its length. */
size_t sw_jmemo_compact(const struct sw_jmemo_plan *p, const char *text, size_t len, char *out);

/* Ends a plan: when parsed is true (the tree was built), keeps the values
 * parsed for the elements that missed (text: the planned text); then
 * drops the plan's references. */
void sw_jmemo_done(struct sw_jmemo_plan *p, const char *text, bool parsed);

/* The bytes of the body the calling thread parsed last (sw_json_load_bounded)
 * whose trees came from the memo: 0 when it planned nothing or failed. What
 * is left is what a scan of that body has to look at. */
size_t sw_jmemo_reused(void);

#ifdef __cplusplus
}
#endif

#endif
