#include "common/jmemo.h"

#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>
#if defined(__x86_64__)
#include <xxh_x86dispatch.h>
#define hash64 XXH3_64bits_dispatch     /* AVX2 where the CPU has it */
#else
#define hash64 XXH3_64bits
#endif

#include "common/buf.h"
#include "common/err.h"
#include "common/jscan.h"

/* Notes kept per value: the prefix identity's, and one per engine and
 * surface a value is scanned with (a key's allow list is an engine of its
 * own). */
#define NOTES 6

/* A note's bytes, counted: the memo's reference, and one per request that
 * sends them without a copy (sw_jmemo_note_ref), so they outlive the value
 * being dropped. */
struct blob {
    union {
        unsigned refs;
        max_align_t align;      /* data as aligned as malloc's: a note may be a struct */
    } h;
    unsigned char data[];
};

static struct blob *blob_new(const void *data, size_t len)
{
    struct blob *b = malloc(sizeof *b + len);
    if (b) {
        b->h.refs = 1;
        memcpy(b->data, data, len);
    }
    return b;
}

static void blob_unref(struct blob *b)
{
    if (b && !__atomic_sub_fetch(&b->h.refs, 1, __ATOMIC_ACQ_REL))
        free(b);
}

struct sw_jmemo_entry {
    struct sw_jmemo_entry *chain;       /* the bucket's next */
    struct sw_jmemo_entry *vchain;      /* the bucket's next, by value */
    struct sw_jmemo_entry *older, *newer;
    uint64_t hash;
    size_t len, values, depth, flags, bytes;
    json_t *value;
    struct note {
        uint64_t key;
        size_t len;                     /* 0: a free slot */
        struct blob *b;
    } notes[NOTES];
    unsigned next_note;                 /* the slot a new key takes */
    /* The element that followed this one in the last body planned with it
     * (its hash and length; 0: none): an agent's next turn resends it
     * there, and the plan finds it by that, without walking its bytes. */
    uint64_t next_hash;
    size_t next_len;
    /* What was derived from the value (sw_jmemo_derived_put): the array, its
     * key, and an entry for each of its elements (in the value table only,
     * dropped with this one: a derived entry is not in the LRU list, has no
     * raw bytes, and its notes are counted in its parent's bytes too) */
    uint64_t dkey;
    json_t *derived;
    size_t dbytes;                      /* what the derived value is counted as */
    struct sw_jmemo_entry *parent, *kids, *next_kid;
    unsigned char raw[];                /* the len bytes it was parsed from */
};

static uint64_t xxh3(const void *p, size_t len)
{
    return hash64(p, len);
}

static struct {
    uint64_t (*hash)(const void *p, size_t len);
    struct sw_jmemo_entry **tab, **vtab;    /* by the bytes' hash, by the value */
    size_t cap;                         /* a power of two (both tables), or 0 */
    struct sw_jmemo_entry *newest, *oldest;
    struct sw_jmemo_stats st;
    size_t kids;                        /* derived entries (in vtab only) */
    pthread_t owner;
    bool owned;
    pthread_mutex_t lock;               /* the loop plans, a scan's worker reads notes */
} M = {.hash = xxh3, .lock = PTHREAD_MUTEX_INITIALIZER};

static size_t vslot(const json_t *v)
{
    return (size_t)(((uint64_t)(uintptr_t)v >> 4) * 0x9e3779b97f4a7c15ull >> 20) & (M.cap - 1);
}

/* What an entry is counted as: its bytes, the entry, and the tree, about
 * one block of 32 bytes per value plus the strings' bytes. */
static size_t entry_bytes(size_t len, size_t values)
{
    return sizeof(struct sw_jmemo_entry) + 2 * len + 32 * values;
}

static void unlink_lru(struct sw_jmemo_entry *e)
{
    if (e->older)
        e->older->newer = e->newer;
    else
        M.oldest = e->newer;
    if (e->newer)
        e->newer->older = e->older;
    else
        M.newest = e->older;
    e->older = e->newer = NULL;
}

static void push_newest(struct sw_jmemo_entry *e)
{
    e->older = M.newest;
    e->newer = NULL;
    if (M.newest)
        M.newest->newer = e;
    else
        M.oldest = e;
    M.newest = e;
}

/* Takes e out of the value table and frees it (its bytes are counted by
 * the caller). */
static void free_entry(struct sw_jmemo_entry *e)
{
    struct sw_jmemo_entry **pp = &M.vtab[vslot(e->value)];
    while (*pp != e)
        pp = &(*pp)->vchain;
    *pp = e->vchain;
    json_decref(e->value);
    for (int i = 0; i < NOTES; i++)
        blob_unref(e->notes[i].b);
    free(e);
}

/* Drops what was derived from e; returns the bytes it was counted as (in
 * e's). */
static size_t drop_kids(struct sw_jmemo_entry *e)
{
    size_t bytes = e->dbytes;
    for (struct sw_jmemo_entry *k = e->kids, *next; k; k = next) {
        next = k->next_kid;
        bytes += k->bytes;
        free_entry(k);
        M.kids--;
    }
    e->kids = NULL;
    json_decref(e->derived);
    e->derived = NULL;
    e->dkey = 0;
    e->dbytes = 0;
    return bytes;
}

static void drop(struct sw_jmemo_entry *e)
{
    struct sw_jmemo_entry **pp = &M.tab[e->hash & (M.cap - 1)];
    while (*pp != e)
        pp = &(*pp)->chain;
    *pp = e->chain;
    drop_kids(e);
    unlink_lru(e);
    M.st.bytes -= e->bytes;
    __atomic_sub_fetch(&M.st.entries, 1, __ATOMIC_RELAXED);
    free_entry(e);
}

static void trim(size_t max)
{
    while (M.oldest && M.st.bytes > max) {
        drop(M.oldest);
        M.st.evicted++;
    }
}

/* This thread's takes of M.lock: a hold (sw_jmemo_hold) over a walk of
 * many elements counts one, and the calls inside it take it no more. */
static __thread unsigned taken;

static void take(void)
{
    if (!taken++)
        pthread_mutex_lock(&M.lock);
}

static void give(void)
{
    if (!--taken)
        pthread_mutex_unlock(&M.lock);
}

void sw_jmemo_hold(void)
{
    take();
}

void sw_jmemo_release(void)
{
    give();
}

void sw_jmemo_set_max(size_t max_bytes)
{
    take();
    M.st.max_bytes = max_bytes;
    trim(max_bytes);
    if (!max_bytes) {
        free(M.tab);
        free(M.vtab);
        M.tab = M.vtab = NULL;
        M.cap = 0;
    }
    give();
}

void sw_jmemo_clear(void)
{
    take();
    trim(0);
    give();
}

void sw_jmemo_get_stats(struct sw_jmemo_stats *st)
{
    take();
    *st = M.st;
    give();
}

void sw_jmemo_set_hash(uint64_t (*hash)(const void *p, size_t len))
{
    sw_jmemo_clear();
    M.hash = hash ? hash : xxh3;
}

static struct sw_jmemo_entry *holding(const json_t *v)
{
    if (!M.cap)
        return NULL;
    for (struct sw_jmemo_entry *e = M.vtab[vslot(v)]; e; e = e->vchain)
        if (e->value == v)
            return e;
    return NULL;
}

static struct note *note_of(struct sw_jmemo_entry *e, uint64_t key)
{
    for (int i = 0; e && i < NOTES; i++)
        if (e->notes[i].len && e->notes[i].key == key)
            return &e->notes[i];
    return NULL;
}

/* Whether the memo holds nothing, read without the lock: a small body's
 * values are never held, and its walks need not lock to learn it. A value
 * a walk is given was kept before the walk began (the parse ends first), so
 * a walk of a held value never reads 0 here. */
static bool empty(void)
{
    return __atomic_load_n(&M.st.entries, __ATOMIC_RELAXED) == 0;
}

bool sw_jmemo_note_get(const json_t *v, uint64_t key, void *out, size_t len)
{
    if (empty())
        return false;
    take();
    struct note *n = note_of(holding(v), key);
    bool ok = n && n->len == len;
    if (ok)
        memcpy(out, n->b->data, len);
    give();
    return ok;
}

uint64_t sw_jmemo_note_each(const json_t *arr, size_t from, uint64_t key, size_t len,
                            bool (*fn)(void *ud, size_t i, const void *note), void *ud)
{
    size_t n = json_array_size(arr);
    uint64_t bits = 0;
    if (empty() || from >= n)
        return 0;
    size_t to = n - from > 64 ? from + 64 : n;
    take();
    for (size_t i = from; i < to; i++) {
        const struct note *nt = note_of(holding(json_array_get(arr, i)), key);
        if (nt && nt->len == len && fn(ud, i, nt->b->data))
            bits |= (uint64_t)1 << (i - from);
    }
    give();
    return bits;
}

void sw_jmemo_note_put(const json_t *v, uint64_t key, const void *data, size_t len)
{
    if (empty())
        return;
    take();
    struct sw_jmemo_entry *e = holding(v);
    struct blob *copy = e && len ? blob_new(data, len) : NULL;
    if (copy) {
        struct note *n = note_of(e, key);
        if (!n)
            n = &e->notes[e->next_note++ % NOTES];
        blob_unref(n->b);
        /* a derived entry's notes count in its parent's bytes, and in its
         * own (what dropping its parent's derived value frees) */
        e->bytes += len - n->len;
        if (e->parent)
            e->parent->bytes += len - n->len;
        M.st.bytes += len - n->len;
        *n = (struct note){key, len, copy};
    }
    give();
}

bool sw_jmemo_note_append(const json_t *v, uint64_t key, struct sw_buf *out)
{
    if (empty())
        return false;
    take();
    struct note *n = note_of(holding(v), key);
    bool ok = n && sw_buf_append(out, n->b->data, n->len) == SW_OK;
    give();
    return ok;
}

void *sw_jmemo_note_ref(const json_t *v, uint64_t key, const void **data, size_t *len)
{
    if (empty())
        return NULL;
    take();
    struct note *n = note_of(holding(v), key);
    struct blob *b = n ? n->b : NULL;
    if (b) {
        __atomic_add_fetch(&b->h.refs, 1, __ATOMIC_RELAXED);
        *data = b->data;
        *len = n->len;
    }
    give();
    return b;
}

void sw_jmemo_note_unref(void *ref)
{
    blob_unref(ref);
}

json_t *sw_jmemo_derived_get(const json_t *v, uint64_t key)
{
    uint64_t k;
    json_t *d = sw_jmemo_derived_get_any(v, &k);
    if (d && k != key) {
        json_decref(d);
        return NULL;
    }
    return d;
}

json_t *sw_jmemo_derived_get_any(const json_t *v, uint64_t *key)
{
    if (empty())
        return NULL;
    take();
    struct sw_jmemo_entry *e = holding(v);
    json_t *d = e && e->derived ? json_incref(e->derived) : NULL;
    *key = d ? e->dkey : 0;
    give();
    return d;
}

static void grow(void);

/* Holds x as derived from e (an entry of its own in the value table). */
static bool hold_kid(struct sw_jmemo_entry *e, json_t *x)
{
    if (holding(x))
        return true;        /* held already (a value shared with the original) */
    if (M.st.entries + M.kids >= M.cap)
        grow();
    struct sw_jmemo_entry *k = calloc(1, sizeof *k);
    if (!k)
        return false;
    k->value = json_incref(x);
    k->parent = e;
    k->vchain = M.vtab[vslot(x)];
    M.vtab[vslot(x)] = k;
    k->next_kid = e->kids;
    e->kids = k;
    M.kids++;
    return true;
}

void sw_jmemo_derived_put(const json_t *v, uint64_t key, const json_t *arr, size_t from)
{
    if (empty() || from >= json_array_size(arr))
        return;
    take();
    struct sw_jmemo_entry *e = holding(v);
    json_t *derived = e && !e->parent ? json_array() : NULL;
    for (size_t j = from; derived && j < json_array_size(arr); j++)
        if (json_array_append(derived, json_array_get(arr, j))) {
            json_decref(derived);
            derived = NULL;
        }
    if (derived) {
        size_t freed = drop_kids(e);
        e->bytes -= freed;
        M.st.bytes -= freed;
        /* counted as an entry per element and the tree's blocks; the
         * strings are most often the original's, shared */
        size_t n = json_array_size(derived), bytes = n * sizeof *e + 32 * e->values, i;
        json_t *x;
        bool ok = true;
        json_array_foreach(derived, i, x) ok = ok && hold_kid(e, x);
        if (!ok) {
            drop_kids(e);
        } else {
            e->dkey = key;
            e->derived = json_incref(derived);
            e->dbytes = bytes;
            e->bytes += bytes;
            M.st.bytes += bytes;
            trim(M.st.max_bytes);
        }
        json_decref(derived);
    }
    give();
}

static struct sw_jmemo_entry *find(uint64_t hash, const char *bytes, size_t len, size_t flags)
{
    if (!M.cap)
        return NULL;
    for (struct sw_jmemo_entry *e = M.tab[hash & (M.cap - 1)]; e; e = e->chain)
        if (e->hash == hash && e->len == len && e->flags == flags &&
            memcmp(e->raw, bytes, len) == 0)
            return e;
    return NULL;
}

static bool mine(void)
{
    if (!M.owned) {
        M.owner = pthread_self();
        M.owned = true;
    }
    return pthread_equal(M.owner, pthread_self());
}

static bool add(struct sw_jmemo_plan *p, const struct sw_jmemo_elem *el)
{
    if (p->n == p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 64;
        struct sw_jmemo_elem *e = realloc(p->e, cap * sizeof *e);
        if (!e)
            return false;
        p->e = e;
        p->cap = cap;
    }
    p->e[p->n++] = *el;
    return true;
}

/* The elements of one top-level array whose content starts at q. */
static const unsigned char *plan_array(struct sw_jmemo_plan *p, const unsigned char *base,
                                       const unsigned char *q, const unsigned char *end,
                                       uint32_t member)
{
    q = sw_jscan_skip_ws(q, end);
    if (q < end && *q == ']')
        return q + 1;
    const struct sw_jmemo_entry *prev = NULL;
    for (uint32_t k = 0;; k++) {
        const unsigned char *v = q;
        /* the element that followed the one before, last time: its bytes
         * are a whole value, so where they match it ends where they do */
        struct sw_jmemo_entry *next =
            prev && prev->next_len && prev->next_len <= (size_t)(end - v)
                ? find(prev->next_hash, (const char *)v, prev->next_len, p->flags)
                : NULL;
        if (next)
            q = v + next->len;
        else if (!(q = sw_jscan_skip_value(q, end)) || q == v)
            return NULL;
        size_t len = (size_t)(q - v);
        prev = NULL;
        if (len >= SW_JMEMO_MIN_BYTES && (*v == '{' || *v == '[')) {
            struct sw_jmemo_elem el = {.off = (size_t)(v - base), .len = len, .member = member,
                                       .index = k, .hash = next ? next->hash : M.hash(v, len)};
            el.hit = next ? next : find(el.hash, (const char *)v, len, p->flags);
            prev = el.hit;
            if (el.hit) {
                el.value = json_incref(el.hit->value);
                unlink_lru(el.hit);
                push_newest(el.hit);
                p->hits++;
                p->hit_values += el.hit->values;
                if (el.hit->depth > p->hit_depth)
                    p->hit_depth = el.hit->depth;
            }
            if (!add(p, &el)) {
                json_decref(el.value);
                return NULL;
            }
        }
        q = sw_jscan_skip_ws(q, end);
        if (q == end)
            return NULL;
        if (*q == ']')
            return q + 1;
        if (*q++ != ',')
            return NULL;
        q = sw_jscan_skip_ws(q, end);
    }
}

static bool plan_locked(const char *text, size_t len, struct sw_jmemo_plan *p);

/* The bytes the calling thread's last planned parse took from the memo. */
static _Thread_local size_t reused;

size_t sw_jmemo_reused(void)
{
    return reused;
}

bool sw_jmemo_plan(const char *text, size_t len, size_t flags, struct sw_jmemo_plan *p)
{
    *p = (struct sw_jmemo_plan){.flags = flags};
    reused = 0;
    if (len < SW_JMEMO_MIN_BODY)
        return false;
    take();
    bool planned = M.st.max_bytes && mine() && plan_locked(text, len, p);
    give();
    return planned;
}

static bool plan_locked(const char *text, size_t len, struct sw_jmemo_plan *p)
{
    const unsigned char *base = (const unsigned char *)text, *end = base + len;
    const unsigned char *q = sw_jscan_skip_ws(base, end);
    if (q == end || *q++ != '{')
        return false;
    q = sw_jscan_skip_ws(q, end);
    for (uint32_t m = 0; q < end && *q == '"'; m++) {
        if (!(q = sw_jscan_skip_string(q + 1, end)) || (q = sw_jscan_skip_ws(q, end)) == end ||
            *q++ != ':')
            break;
        q = sw_jscan_skip_ws(q, end);
        const unsigned char *v = q;
        if (q < end && *q == '[')
            q = plan_array(p, base, q + 1, end, m);
        else
            q = sw_jscan_skip_value(q, end);
        if (!q || q == v || (q = sw_jscan_skip_ws(q, end)) == end || *q != ',')
            break;
        q = sw_jscan_skip_ws(q + 1, end);
    }
    /* whatever ends the walk, the elements found so far stand: the parser
     * checks the whole body */
    if (p->n)
        return true;
    free(p->e);
    *p = (struct sw_jmemo_plan){0};
    return false;
}

size_t sw_jmemo_compact(const struct sw_jmemo_plan *p, const char *text, size_t len, char *out)
{
    size_t from = 0, n = 0;
    for (size_t i = 0; i < p->n; i++) {
        const struct sw_jmemo_elem *el = &p->e[i];
        if (!el->hit)
            continue;
        memcpy(out + n, text + from, el->off - from);
        n += el->off - from;
        out[n++] = '0';
        from = el->off + el->len;
    }
    memcpy(out + n, text + from, len - from);
    return n + len - from;
}

/* The structural characters simdjson finds in a well-formed value (each of
 * {}[]:, and the start of each string and scalar) and its nesting. */
static void measure(const unsigned char *p, size_t len, size_t *values, size_t *depth)
{
    const unsigned char *end = p + len;
    size_t n = 0, d = 0, deepest = 0;
    while (p < end) {
        unsigned char c = *p;
        if (c == '"') {
            n++;
            p = sw_jscan_skip_string(p + 1, end);
            if (!p)
                break;
            continue;
        }
        p++;
        if (c == '{' || c == '[') {
            n++;
            if (++d > deepest)
                deepest = d;
        } else if (c == '}' || c == ']') {
            n++;
            d--;
        } else if (c == ':' || c == ',') {
            n++;
        } else if (c != ' ' && c != '\n' && c != '\r' && c != '\t') {
            n++;            /* a number or a literal: one at its start */
            p = sw_jscan_skip_value(p - 1, end);
        }
    }
    *values = n;
    *depth = deepest;
}

static void link_bytes(struct sw_jmemo_entry *e)
{
    e->chain = M.tab[e->hash & (M.cap - 1)];
    M.tab[e->hash & (M.cap - 1)] = e;
}

static void link_value(struct sw_jmemo_entry *e)
{
    e->vchain = M.vtab[vslot(e->value)];
    M.vtab[vslot(e->value)] = e;
}

static void grow(void)
{
    size_t cap = M.cap ? 2 * M.cap : 256;
    struct sw_jmemo_entry **tab = calloc(cap, sizeof *tab), **vtab = calloc(cap, sizeof *vtab);
    if (!tab || !vtab) {
        free(tab);
        free(vtab);
        return;
    }
    struct sw_jmemo_entry **old = M.tab, **old_v = M.vtab;
    size_t old_cap = M.cap;
    M.tab = tab;
    M.vtab = vtab;
    M.cap = cap;
    for (size_t i = 0; i < old_cap; i++) {
        for (struct sw_jmemo_entry *e = old[i], *next; e; e = next) {
            next = e->chain;
            link_bytes(e);
        }
        for (struct sw_jmemo_entry *e = old_v[i], *next; e; e = next) {
            next = e->vchain;
            link_value(e);
        }
    }
    free(old);
    free(old_v);
}

/* The entry kept for el (NULL: none). */
static struct sw_jmemo_entry *keep(const struct sw_jmemo_elem *el, const char *text, size_t flags)
{
    const unsigned char *raw = (const unsigned char *)text + el->off;
    struct sw_jmemo_entry *e = find(el->hash, (const char *)raw, el->len, flags);
    if (e)
        return e;           /* the same bytes twice in one body */
    size_t values, depth;
    measure(raw, el->len, &values, &depth);
    size_t bytes = entry_bytes(el->len, values);
    if (bytes > M.st.max_bytes)
        return NULL;
    trim(M.st.max_bytes - bytes);
    if (M.st.entries + M.kids >= M.cap)
        grow();
    e = M.cap ? malloc(sizeof *e + el->len) : NULL;
    if (!e)
        return NULL;
    *e = (struct sw_jmemo_entry){.hash = el->hash, .len = el->len, .values = values,
                                 .depth = depth, .flags = flags, .bytes = bytes,
                                 .value = json_incref(el->value)};
    memcpy(e->raw, raw, el->len);
    link_bytes(e);
    link_value(e);
    push_newest(e);
    M.st.bytes += bytes;
    __atomic_add_fetch(&M.st.entries, 1, __ATOMIC_RELAXED);
    return e;
}

/* e (held now) is followed by element i + 1 of the plan, when that one is
 * the next element of the same array. */
static void hint(struct sw_jmemo_entry *e, const struct sw_jmemo_plan *p, size_t i)
{
    if (e && i + 1 < p->n && p->e[i + 1].member == p->e[i].member &&
        p->e[i + 1].index == p->e[i].index + 1) {
        e->next_hash = p->e[i + 1].hash;
        e->next_len = p->e[i + 1].len;
    }
}

void sw_jmemo_done(struct sw_jmemo_plan *p, const char *text, bool parsed)
{
    take();
    if (parsed) {
        M.st.hits += p->hits;
        /* before anything is kept (keeping may drop older entries): each
         * hit's entry is held */
        for (size_t i = 0; i < p->n; i++)
            if (p->e[i].hit) {
                reused += p->e[i].len;
                hint(p->e[i].hit, p, i);
            }
    }
    for (size_t i = 0; i < p->n; i++) {
        struct sw_jmemo_elem *el = &p->e[i];
        if (parsed && !el->hit) {
            M.st.misses++;
            if (el->value)
                hint(keep(el, text, p->flags), p, i);
        }
        json_decref(el->value);
    }
    give();
    free(p->e);
    *p = (struct sw_jmemo_plan){0};
}
