/* The response store's interface and its memory implementation: see
 * respstore.h. Pure: the clock is injected, nothing is logged. */
#include "state/respstore.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/jdump.h"
#include "common/ntmem.h"

/* What a record costs beyond its strings (its header, list and hash links). */
#define RECORD_OVERHEAD 128
#define MIN_BUCKETS 64

size_t sw_resp_record_bytes(const struct sw_resp_record *r)
{
    return RECORD_OVERHEAD + (r->id ? strlen(r->id) : 0) + (r->scope ? strlen(r->scope) : 0) +
           r->input_len + r->output_len + (r->meta ? r->meta_len : 0);
}

int sw_resp_record_check(const struct sw_resp_record *r)
{
    size_t id_len = r->id ? strnlen(r->id, SW_RESPSTORE_MAX_ID + 1) : 0;
    if (id_len == 0)
        return SW_EINVAL;
    if (id_len > SW_RESPSTORE_MAX_ID)
        return SW_ETOOBIG;
    if (r->scope && strnlen(r->scope, SW_RESPSTORE_MAX_SCOPE + 1) > SW_RESPSTORE_MAX_SCOPE)
        return SW_ETOOBIG;
    if ((r->input_len && !r->input) || (r->output_len && !r->output))
        return SW_EINVAL;
    return SW_OK;
}

/* ---- Memory ---- */

/* One record: the header, then id, scope, input, output and meta, each
 * NUL-terminated, in data[]. */
struct entry {
    struct entry *hnext;            /* hash chain */
    struct entry *older, *newer;    /* the age list: oldest put first */
    int64_t put_ms;                 /* the store's clock at put */
    size_t alloc;                   /* bytes of this allocation (wiped before free) */
    size_t bytes;                   /* sw_resp_record_bytes */
    uint64_t hash;
    bool sensitive;
    int64_t created_at_s;
    size_t id_len, scope_len, input_len, output_len, meta_len;
    char data[];
};

struct mem {
    struct sw_respstore store;
    struct sw_respstore_limits lim;
    int64_t (*now_ms)(void *ud);
    void *clock_ud;
    struct entry **buckets;
    size_t n_buckets;               /* a power of two */
    struct entry *oldest, *newest;
    size_t n, bytes;
    uint64_t evicted, expired, refused;
};

static uint64_t hash_id(const char *id, size_t len)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)id[i];
        h *= 1099511628211ULL;
    }
    return h;
}

static const char *e_id(const struct entry *e) { return e->data; }
static const char *e_scope(const struct entry *e) { return e->data + e->id_len + 1; }
static const char *e_input(const struct entry *e) { return e_scope(e) + e->scope_len + 1; }
static const char *e_output(const struct entry *e) { return e_input(e) + e->input_len + 1; }
static const char *e_meta(const struct entry *e) { return e_output(e) + e->output_len + 1; }

static struct entry **find_slot(struct mem *m, const char *id, size_t len, uint64_t h)
{
    struct entry **p = &m->buckets[h & (m->n_buckets - 1)];
    for (; *p; p = &(*p)->hnext)
        if ((*p)->hash == h && (*p)->id_len == len && !memcmp(e_id(*p), id, len))
            return p;
    return p;
}

/* Unlinks e from the hash and the age list. */
static void unlink_entry(struct mem *m, struct entry *e)
{
    struct entry **p = find_slot(m, e_id(e), e->id_len, e->hash);
    if (*p == e)
        *p = e->hnext;
    if (e->older)
        e->older->newer = e->newer;
    else
        m->oldest = e->newer;
    if (e->newer)
        e->newer->older = e->older;
    else
        m->newest = e->older;
    m->n--;
    m->bytes -= e->bytes;
}

/* Unlinks e, wipes and frees it. The wipe streams (common/ntmem.h): the
 * record dropped is usually the oldest, long out of the cache. */
static void drop(struct mem *m, struct entry *e)
{
    unlink_entry(m, e);
    sw_nt_wipe(e, e->alloc);
    free(e);
}

/* Unlinks e to make room for a record of need bytes of allocation: kept in
 * *spare, unwiped, when it can hold that record with at most an eighth to
 * spare and there is none yet (the record is written over it and the rest
 * wiped), else dropped. A store at its bounds evicts for every put, and the
 * memory of what it evicts is cold: written over (with streaming stores),
 * instead of wiped and then given to the record by malloc, it is written
 * once, not twice. The eighth is not counted in max_bytes: the memory held
 * stays within 9/8 of it. */
static void evict(struct mem *m, struct entry *e, size_t need, struct entry **spare)
{
    if (*spare || e->alloc < need || e->alloc - need > need / 8) {
        drop(m, e);
        return;
    }
    unlink_entry(m, e);
    *spare = e;
}

static bool expired(const struct mem *m, const struct entry *e, int64_t now)
{
    return now - e->put_ms >= (int64_t)m->lim.ttl_s * 1000;
}

/* Drops the records past their TTL: the oldest first, so it stops at the
 * first one still alive. */
static void purge(struct mem *m, int64_t now)
{
    while (m->oldest && expired(m, m->oldest, now)) {
        drop(m, m->oldest);
        m->expired++;
    }
}

static void grow(struct mem *m)
{
    size_t nb = m->n_buckets * 2;
    struct entry **b = calloc(nb, sizeof *b);
    if (!b)
        return; /* longer chains, still correct */
    for (size_t i = 0; i < m->n_buckets; i++) {
        struct entry *e = m->buckets[i], *next;
        for (; e; e = next) {
            next = e->hnext;
            e->hnext = b[e->hash & (nb - 1)];
            b[e->hash & (nb - 1)] = e;
        }
    }
    free(m->buckets);
    m->buckets = b;
    m->n_buckets = nb;
}

static void mem_put(void *impl, const struct sw_resp_record *r, sw_respstore_done_fn cb, void *ud)
{
    struct mem *m = impl;
    int err = sw_resp_record_check(r);
    size_t bytes = sw_resp_record_bytes(r);
    if (!err && bytes > (size_t)m->lim.max_bytes)
        err = SW_ETOOBIG;
    if (err) {
        m->refused++;
        cb(err, ud);
        return;
    }
    int64_t now = m->now_ms(m->clock_ud);
    purge(m, now);
    size_t id_len = strlen(r->id), scope_len = r->scope ? strlen(r->scope) : 0;
    size_t meta_len = r->meta ? r->meta_len : 0;
    uint64_t h = hash_id(r->id, id_len);
    struct entry **slot = find_slot(m, r->id, id_len, h);
    if (*slot && strcmp(e_scope(*slot), r->scope ? r->scope : "")) {
        m->refused++; /* another scope's record is never replaced */
        cb(SW_EINVAL, ud);
        return;
    }
    size_t alloc = sizeof(struct entry) + id_len + scope_len + r->input_len + r->output_len +
                   meta_len + 5;
    struct entry *e = NULL;
    if (*slot)
        evict(m, *slot, alloc, &e);
    while (m->oldest && ((long)m->n + 1 > m->lim.max_entries || m->bytes + bytes > (size_t)m->lim.max_bytes)) {
        evict(m, m->oldest, alloc, &e);
        m->evicted++;
    }
    size_t held = e ? e->alloc : alloc;
    bool cold = e != NULL; /* an evicted record's memory: written with streaming stores */
    if (e)
        sw_nt_wipe((char *)e + alloc, held - alloc); /* what the record leaves of the old one */
    else
        e = malloc(alloc);
    if (!e) {
        m->refused++;
        cb(SW_ENOMEM, ud);
        return;
    }
    *e = (struct entry){.put_ms = now, .alloc = held, .bytes = bytes, .hash = h,
                        .sensitive = r->sensitive, .created_at_s = r->created_at_s,
                        .id_len = id_len, .scope_len = scope_len, .input_len = r->input_len,
                        .output_len = r->output_len, .meta_len = meta_len};
    char *at = e->data;
    const char *src[] = {r->id, r->scope, r->input, r->output, r->meta};
    const size_t len[] = {id_len, scope_len, r->input_len, r->output_len, meta_len};
    for (size_t i = 0; i < 5; i++) {
        if (len[i] && cold)
            sw_nt_copy(at, src[i], len[i]);
        else if (len[i])
            memcpy(at, src[i], len[i]);
        at[len[i]] = '\0';
        at += len[i] + 1;
    }
    if (m->n + 1 > m->n_buckets)
        grow(m);
    slot = &m->buckets[h & (m->n_buckets - 1)];
    e->hnext = *slot;
    *slot = e;
    e->older = m->newest;
    e->newer = NULL;
    if (m->newest)
        m->newest->newer = e;
    else
        m->oldest = e;
    m->newest = e;
    m->n++;
    m->bytes += bytes;
    cb(SW_OK, ud);
}

/* The live record of id in scope, or NULL. */
static struct entry *lookup(struct mem *m, const char *id, const char *scope)
{
    purge(m, m->now_ms(m->clock_ud));
    if (!id)
        return NULL;
    size_t len = strnlen(id, SW_RESPSTORE_MAX_ID + 1);
    if (!len || len > SW_RESPSTORE_MAX_ID)
        return NULL;
    struct entry *e = *find_slot(m, id, len, hash_id(id, len));
    if (!e || strcmp(e_scope(e), scope ? scope : ""))
        return NULL;
    return e;
}

static void mem_get(void *impl, const char *id, const char *scope, sw_respstore_get_fn cb, void *ud)
{
    struct entry *e = lookup(impl, id, scope);
    if (!e) {
        cb(SW_ENOTFOUND, NULL, ud);
        return;
    }
    const struct sw_resp_record r = {
        .id = e_id(e), .scope = e_scope(e), .sensitive = e->sensitive,
        .created_at_s = e->created_at_s, .input = e_input(e), .input_len = e->input_len,
        .output = e_output(e), .output_len = e->output_len,
        .meta = e->meta_len ? e_meta(e) : NULL, .meta_len = e->meta_len,
    };
    cb(SW_OK, &r, ud);
}

static void mem_del(void *impl, const char *id, const char *scope, sw_respstore_done_fn cb, void *ud)
{
    struct entry *e = lookup(impl, id, scope);
    if (e)
        drop(impl, e);
    cb(e ? SW_OK : SW_ENOTFOUND, ud);
}

static void mem_set_limits(void *impl, const struct sw_respstore_limits *l)
{
    struct mem *m = impl;
    m->lim = *l;
    purge(m, m->now_ms(m->clock_ud));
    while (m->oldest && ((long)m->n > m->lim.max_entries || m->bytes > (size_t)m->lim.max_bytes)) {
        drop(m, m->oldest);
        m->evicted++;
    }
}

static void mem_stats(void *impl, struct sw_respstore_stats *out)
{
    struct mem *m = impl;
    *out = (struct sw_respstore_stats){.entries = m->n, .bytes = m->bytes, .evicted = m->evicted,
                                       .expired = m->expired, .refused = m->refused};
}

static void mem_free(void *impl)
{
    struct mem *m = impl;
    while (m->oldest)
        drop(m, m->oldest);
    free(m->buckets);
    free(m);
}

static const struct sw_respstore_ops mem_ops = {
    .name = "memory",
    .put = mem_put,
    .get = mem_get,
    .del = mem_del,
    .set_limits = mem_set_limits,
    .stats = mem_stats,
    .free = mem_free,
};

struct sw_respstore *sw_respstore_memory_new(const struct sw_respstore_limits *l,
                                             int64_t (*now_ms)(void *ud), void *clock_ud)
{
    struct mem *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->buckets = calloc(MIN_BUCKETS, sizeof *m->buckets);
    if (!m->buckets) {
        free(m);
        return NULL;
    }
    m->n_buckets = MIN_BUCKETS;
    m->lim = *l;
    m->now_ms = now_ms;
    m->clock_ud = clock_ud;
    m->store = (struct sw_respstore){&mem_ops, m};
    return &m->store;
}

/* ---- Input item pages ---- */


/* ---- The interface ---- */

void sw_respstore_put(struct sw_respstore *s, const struct sw_resp_record *r,
                      sw_respstore_done_fn cb, void *ud)
{
    s->ops->put(s->impl, r, cb, ud);
}

void sw_respstore_get(struct sw_respstore *s, const char *id, const char *scope,
                      sw_respstore_get_fn cb, void *ud)
{
    s->ops->get(s->impl, id, scope ? scope : "", cb, ud);
}

void sw_respstore_delete(struct sw_respstore *s, const char *id, const char *scope,
                         sw_respstore_done_fn cb, void *ud)
{
    s->ops->del(s->impl, id, scope ? scope : "", cb, ud);
}

void sw_respstore_set_limits(struct sw_respstore *s, const struct sw_respstore_limits *l)
{
    s->ops->set_limits(s->impl, l);
}

void sw_respstore_stats(struct sw_respstore *s, struct sw_respstore_stats *out)
{
    s->ops->stats(s->impl, out);
}

void sw_respstore_free(struct sw_respstore *s)
{
    if (s)
        s->ops->free(s->impl);
}
