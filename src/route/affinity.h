/* Prefix affinity (docs/routing.md, "Prefix affinity").
 *
 * A request's prefix identity is a chain of hashes over its leading blocks:
 * block 0 is the tool definitions and the leading system (developer)
 * messages, every later message is one block, and the hash of block k
 * covers blocks 0..k, so two requests share hash k exactly when their first
 * k+1 blocks are the same JSON values. The identity keeps the first boundary and
 * the last SW_PREFIX_MAX - 1 (an agent's next turn extends the last one),
 * each with the estimated prompt tokens up to it. It holds hashes and token
 * counts only, never a byte of content (request/prefix.h computes it).
 *
 * The affinity table remembers which local backend served which prefix
 * recently: entries (prefix hash, backend) with the prompt tokens that
 * backend then held, bounded by max_entries (least recently used evicted
 * first, as the server's own cache does) and a TTL (an entry older than
 * ttl_ms is gone). sw_affinity_match gives, for one backend, the longest
 * prefix of a request that it served. Pure: the clock comes in as now_ms,
 * no I/O; memory is allocated once by sw_affinity_init. */
#ifndef SW_ROUTE_AFFINITY_H
#define SW_ROUTE_AFFINITY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SW_PREFIX_MAX 32

struct sw_prefix {
    uint64_t hash[SW_PREFIX_MAX];   /* hash[k]: the chain up to the k-th kept boundary */
    long tokens[SW_PREFIX_MAX];     /* estimated prompt tokens up to that boundary, rising */
    size_t n;                       /* kept boundaries (0: no identity) */
};

/* The identity of a backend in the table: a hash of its name, the same in
 * every replica and across reloads. */
uint64_t sw_affinity_backend_id(const char *name);

struct sw_affinity_entry;

struct sw_affinity {
    struct sw_affinity_entry *e;    /* max entries */
    uint32_t *bucket;               /* n_buckets heads (index + 1; 0: empty) */
    size_t n_buckets;               /* power of two */
    size_t max, used;
    uint32_t head, tail, free;      /* recency list (head most recent), free list; index + 1 */
    int64_t ttl_ms;
    uint64_t evicted, expired;      /* counters */
};

/* A table of at most max_entries (at least 1) whose entries live ttl_ms
 * (<= 0: forever). SW_OK or SW_ENOMEM. */
int sw_affinity_init(struct sw_affinity *t, size_t max_entries, int64_t ttl_ms);
void sw_affinity_free(struct sw_affinity *t);
/* Empties the table and applies new bounds (a reload). SW_OK or SW_ENOMEM
 * (the old table is kept). */
int sw_affinity_reset(struct sw_affinity *t, size_t max_entries, int64_t ttl_ms);

/* Backend `backend` now holds the prefix `hash` of `tokens` prompt tokens:
 * inserted or refreshed (most recent), evicting the least recent entry when
 * full. */
void sw_affinity_put(struct sw_affinity *t, uint64_t hash, uint64_t backend, long tokens,
                     int64_t now_ms);
/* Puts the boundaries a served request leaves on its backend: the whole
 * prompt (the last boundary) and block 0 (shared by every conversation with
 * the same system prompt and tools). */
void sw_affinity_put_prefix(struct sw_affinity *t, const struct sw_prefix *p, uint64_t backend,
                            int64_t now_ms);
/* The prompt tokens of the longest prefix of p that `backend` served within
 * the TTL (the entry's tokens, at most p's at that boundary); 0: none. A
 * look-up leaves the order alone: only serving a prefix again (a put)
 * makes it recent, as only using it does in the server's cache. Expired
 * entries found on the way are dropped. */
long sw_affinity_match(struct sw_affinity *t, const struct sw_prefix *p, uint64_t backend,
                       int64_t now_ms);
/* When the least recently served entry was served (the next one a full
 * table drops); -1: empty. */
int64_t sw_affinity_oldest_ms(const struct sw_affinity *t);
/* Entries held now (expired ones not yet dropped included). */
size_t sw_affinity_size(const struct sw_affinity *t);

#endif
