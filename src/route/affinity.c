/* The prefix-affinity table; see affinity.h. */
#include "route/affinity.h"

#include <stdlib.h>
#include <string.h>

#include "common/err.h"

struct sw_affinity_entry {
    uint64_t hash, backend;
    long tokens;
    int64_t at_ms;
    uint32_t hnext;             /* the bucket's chain (index + 1) */
    uint32_t prev, next;        /* recency (index + 1); head most recent */
};

#define MAX_ENTRIES ((size_t)1 << 24)

uint64_t sw_affinity_backend_id(const char *name)
{
    uint64_t h = 1469598103934665603ull;    /* FNV-1a */
    for (const unsigned char *s = (const unsigned char *)(name ? name : ""); *s; s++)
        h = (h ^ *s) * 1099511628211ull;
    return h;
}

static size_t bucket_of(const struct sw_affinity *t, uint64_t hash, uint64_t backend)
{
    uint64_t k = hash ^ (backend * 0x9e3779b97f4a7c15ull);
    k ^= k >> 29;
    return (size_t)k & (t->n_buckets - 1);
}

int sw_affinity_init(struct sw_affinity *t, size_t max_entries, int64_t ttl_ms)
{
    memset(t, 0, sizeof *t);
    if (max_entries < 1)
        max_entries = 1;
    if (max_entries > MAX_ENTRIES)
        max_entries = MAX_ENTRIES;
    size_t nb = 16;
    while (nb < max_entries)
        nb *= 2;
    t->e = calloc(max_entries, sizeof *t->e);
    t->bucket = calloc(nb, sizeof *t->bucket);
    if (!t->e || !t->bucket) {
        free(t->e);
        free(t->bucket);
        memset(t, 0, sizeof *t);
        return SW_ENOMEM;
    }
    t->n_buckets = nb;
    t->max = max_entries;
    t->ttl_ms = ttl_ms;
    for (size_t i = 0; i < max_entries; i++)    /* the free list, in index order */
        t->e[i].next = i + 1 < max_entries ? (uint32_t)(i + 2) : 0;
    t->free = 1;
    return SW_OK;
}

void sw_affinity_free(struct sw_affinity *t)
{
    free(t->e);
    free(t->bucket);
    memset(t, 0, sizeof *t);
}

int sw_affinity_reset(struct sw_affinity *t, size_t max_entries, int64_t ttl_ms)
{
    struct sw_affinity n;
    if (sw_affinity_init(&n, max_entries, ttl_ms))
        return SW_ENOMEM;
    n.evicted = t->evicted;
    n.expired = t->expired;
    sw_affinity_free(t);
    *t = n;
    return SW_OK;
}

#define E(t, i) (&(t)->e[(i) - 1])

static void lru_unlink(struct sw_affinity *t, uint32_t i)
{
    struct sw_affinity_entry *x = E(t, i);
    if (x->prev)
        E(t, x->prev)->next = x->next;
    else
        t->head = x->next;
    if (x->next)
        E(t, x->next)->prev = x->prev;
    else
        t->tail = x->prev;
    x->prev = x->next = 0;
}

static void lru_front(struct sw_affinity *t, uint32_t i)
{
    struct sw_affinity_entry *x = E(t, i);
    x->prev = 0;
    x->next = t->head;
    if (t->head)
        E(t, t->head)->prev = i;
    t->head = i;
    if (!t->tail)
        t->tail = i;
}

/* Drops entry i from its bucket and the recency list onto the free list. */
static void drop(struct sw_affinity *t, uint32_t i)
{
    struct sw_affinity_entry *x = E(t, i);
    uint32_t *pp = &t->bucket[bucket_of(t, x->hash, x->backend)];
    while (*pp && *pp != i)
        pp = &E(t, *pp)->hnext;
    if (*pp)
        *pp = x->hnext;
    lru_unlink(t, i);
    x->hnext = 0;
    x->next = t->free;
    t->free = i;
    t->used--;
}

static bool expired(const struct sw_affinity *t, const struct sw_affinity_entry *x, int64_t now_ms)
{
    return t->ttl_ms > 0 && now_ms - x->at_ms > t->ttl_ms;
}

static uint32_t find(struct sw_affinity *t, uint64_t hash, uint64_t backend)
{
    for (uint32_t i = t->bucket[bucket_of(t, hash, backend)]; i; i = E(t, i)->hnext)
        if (E(t, i)->hash == hash && E(t, i)->backend == backend)
            return i;
    return 0;
}

void sw_affinity_put(struct sw_affinity *t, uint64_t hash, uint64_t backend, long tokens,
                     int64_t now_ms)
{
    if (!t->e)
        return;
    uint32_t i = find(t, hash, backend);
    if (i) {
        lru_unlink(t, i);
    } else {
        /* The oldest entries go first: expired ones, then, when full, the
         * least recently used. */
        while (t->tail && expired(t, E(t, t->tail), now_ms)) {
            drop(t, t->tail);
            t->expired++;
        }
        if (!t->free) {
            drop(t, t->tail);
            t->evicted++;
        }
        i = t->free;
        t->free = E(t, i)->next;
        struct sw_affinity_entry *x = E(t, i);
        x->hash = hash;
        x->backend = backend;
        size_t b = bucket_of(t, hash, backend);
        x->hnext = t->bucket[b];
        t->bucket[b] = i;
        t->used++;
    }
    E(t, i)->tokens = tokens > 0 ? tokens : 0;
    E(t, i)->at_ms = now_ms;
    lru_front(t, i);
}

void sw_affinity_put_prefix(struct sw_affinity *t, const struct sw_prefix *p, uint64_t backend,
                            int64_t now_ms)
{
    size_t n = p->n < SW_PREFIX_MAX ? p->n : SW_PREFIX_MAX;
    if (n == 0)
        return;
    if (n > 1)
        sw_affinity_put(t, p->hash[0], backend, p->tokens[0], now_ms);
    sw_affinity_put(t, p->hash[n - 1], backend, p->tokens[n - 1], now_ms);
}

long sw_affinity_match(struct sw_affinity *t, const struct sw_prefix *p, uint64_t backend,
                       int64_t now_ms)
{
    size_t n = p->n < SW_PREFIX_MAX ? p->n : SW_PREFIX_MAX;
    if (!t->e)
        return 0;
    for (size_t k = n; k-- > 0;) {
        uint32_t i = find(t, p->hash[k], backend);
        if (!i)
            continue;
        if (expired(t, E(t, i), now_ms)) {
            drop(t, i);
            t->expired++;
            continue;
        }
        long held = E(t, i)->tokens;
        return held < p->tokens[k] ? held : p->tokens[k];
    }
    return 0;
}

int64_t sw_affinity_oldest_ms(const struct sw_affinity *t)
{
    return t->e && t->tail ? E(t, t->tail)->at_ms : -1;
}

size_t sw_affinity_size(const struct sw_affinity *t)
{
    return t->used;
}
