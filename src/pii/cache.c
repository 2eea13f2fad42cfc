/* The scan-verdict cache; see cache.h. */
#include "pii/cache.h"

#include <openssl/evp.h>
#include <openssl/rand.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* One span as stored: offsets fit 32 bits (SW_PII_MAX_TEXT is 64 MiB). */
struct cspan {
    uint32_t start, len;
    int32_t type;
};

/* An entry: the key (a digest, never the text), the links, the spans. */
struct entry {
    struct sw_pii_cache_key key;
    struct entry *hnext;        /* the bucket's chain */
    struct entry *prev, *next;  /* recency: head most recent */
    uint32_t n;
    struct cspan sp[];
};

struct sw_pii_cache {
    pthread_mutex_t lock;
    unsigned char key[32];      /* the fingerprint's secret key, random per cache */
    struct entry **bucket;
    size_t n_buckets;           /* power of two */
    struct entry *head, *tail;
    struct sw_pii_cache_stats st;
};

#define MIN_BUCKETS 1024
#define MAX_BUCKETS ((size_t)1 << 20)

static size_t entry_bytes(size_t n)
{
    return sizeof(struct entry) + n * sizeof(struct cspan);
}

struct sw_pii_cache *sw_pii_cache_new(size_t max_bytes)
{
    struct sw_pii_cache *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    /* one bucket per 256 bytes of bound: about one entry per bucket */
    size_t nb = MIN_BUCKETS;
    while (nb < MAX_BUCKETS && nb * 256 < max_bytes)
        nb *= 2;
    c->n_buckets = nb;
    c->bucket = calloc(nb, sizeof *c->bucket);
    if (!c->bucket || RAND_priv_bytes(c->key, sizeof c->key) != 1) {
        free(c->bucket);
        free(c);
        return NULL;
    }
    pthread_mutex_init(&c->lock, NULL);
    c->st.max_bytes = max_bytes;
    return c;
}

static size_t bucket_of(const struct sw_pii_cache *c, const struct sw_pii_cache_key *k)
{
    uint64_t h;
    memcpy(&h, k->digest, sizeof h);
    return (size_t)(h ^ k->gen * 0x9e3779b97f4a7c15ull) & (c->n_buckets - 1);
}

static bool same_key(const struct sw_pii_cache_key *a, const struct sw_pii_cache_key *b)
{
    return a->gen == b->gen && a->len == b->len && a->json == b->json &&
           !memcmp(a->digest, b->digest, sizeof a->digest);
}

static void unlink_lru(struct sw_pii_cache *c, struct entry *e)
{
    if (e->prev)
        e->prev->next = e->next;
    else
        c->head = e->next;
    if (e->next)
        e->next->prev = e->prev;
    else
        c->tail = e->prev;
    e->prev = e->next = NULL;
}

static void push_front(struct sw_pii_cache *c, struct entry *e)
{
    e->prev = NULL;
    e->next = c->head;
    if (c->head)
        c->head->prev = e;
    c->head = e;
    if (!c->tail)
        c->tail = e;
}

/* Unlinks e from its bucket and the recency list and frees it. */
static void drop(struct sw_pii_cache *c, struct entry *e)
{
    struct entry **p = &c->bucket[bucket_of(c, &e->key)];
    while (*p != e)
        p = &(*p)->hnext;
    *p = e->hnext;
    unlink_lru(c, e);
    c->st.bytes -= entry_bytes(e->n);
    c->st.entries--;
    free(e);
}

static void evict_to(struct sw_pii_cache *c, size_t room)
{
    while (c->tail && c->st.bytes + room > c->st.max_bytes) {
        drop(c, c->tail);
        c->st.evicted++;
    }
}

void sw_pii_cache_clear(struct sw_pii_cache *c)
{
    if (!c)
        return;
    pthread_mutex_lock(&c->lock);
    while (c->head) {
        drop(c, c->head);
        c->st.cleared++;
    }
    pthread_mutex_unlock(&c->lock);
}

void sw_pii_cache_set_max(struct sw_pii_cache *c, size_t max_bytes)
{
    if (!c)
        return;
    pthread_mutex_lock(&c->lock);
    c->st.max_bytes = max_bytes;
    evict_to(c, 0);
    pthread_mutex_unlock(&c->lock);
}

void sw_pii_cache_free(struct sw_pii_cache *c)
{
    if (!c)
        return;
    sw_pii_cache_clear(c);
    pthread_mutex_destroy(&c->lock);
    OPENSSL_cleanse(c->key, sizeof c->key);
    free(c->bucket);
    free(c);
}

void sw_pii_cache_get_stats(const struct sw_pii_cache *c, struct sw_pii_cache_stats *st)
{
    memset(st, 0, sizeof *st);
    if (!c)
        return;
    pthread_mutex_lock((pthread_mutex_t *)&c->lock);
    *st = c->st;
    pthread_mutex_unlock((pthread_mutex_t *)&c->lock);
}

/* One MAC context per thread, keyed again for each text (a context made
 * and freed per text costs about as much as the MAC of a short one). Freed
 * when its thread ends. */
static pthread_key_t ctx_key;
static pthread_once_t ctx_once = PTHREAD_ONCE_INIT;
static EVP_MAC *poly1305;

static void ctx_free(void *ctx)
{
    EVP_MAC_CTX_free(ctx);
}

static void ctx_key_init(void)
{
    poly1305 = EVP_MAC_fetch(NULL, "POLY1305", NULL);
    if (poly1305 && pthread_key_create(&ctx_key, ctx_free) != 0) {
        EVP_MAC_free(poly1305);
        poly1305 = NULL;
    }
}

static EVP_MAC_CTX *thread_ctx(void)
{
    pthread_once(&ctx_once, ctx_key_init);
    if (!poly1305)
        return NULL;
    EVP_MAC_CTX *ctx = pthread_getspecific(ctx_key);
    if (!ctx && (ctx = EVP_MAC_CTX_new(poly1305)) && pthread_setspecific(ctx_key, ctx)) {
        EVP_MAC_CTX_free(ctx);
        ctx = NULL;
    }
    return ctx;
}

bool sw_pii_cache_key_of(struct sw_pii_cache *c, const char *text, size_t len, uint64_t gen,
                         int json, struct sw_pii_cache_key *k)
{
    memset(k, 0, sizeof *k);
    if (len > UINT32_MAX)
        return false;
    k->gen = gen;
    k->len = (uint32_t)len;
    k->json = json ? 1 : 0;
    size_t tl = 0;
    EVP_MAC_CTX *ctx = thread_ctx();
    return ctx && EVP_MAC_init(ctx, c->key, sizeof c->key, NULL) == 1 &&
           EVP_MAC_update(ctx, (const unsigned char *)text, len) == 1 &&
           EVP_MAC_final(ctx, k->digest, &tl, sizeof k->digest) == 1 && tl == sizeof k->digest;
}

bool sw_pii_cache_get(struct sw_pii_cache *c, const struct sw_pii_cache_key *k,
                      struct sw_pii_span *buf, size_t buf_n, struct sw_pii_span **sp, size_t *n)
{
    *sp = buf;
    *n = 0;
    pthread_mutex_lock(&c->lock);
    struct entry *e = c->bucket[bucket_of(c, k)];
    while (e && !same_key(&e->key, k))
        e = e->hnext;
    struct sw_pii_span *out = buf;
    if (e && e->n > buf_n && !(out = malloc(e->n * sizeof *out)))
        e = NULL;
    if (!e) {
        c->st.misses++;
        pthread_mutex_unlock(&c->lock);
        return false;
    }
    for (uint32_t i = 0; i < e->n; i++)
        out[i] = (struct sw_pii_span){e->sp[i].start, e->sp[i].len, e->sp[i].type};
    *sp = out;
    *n = e->n;
    unlink_lru(c, e);
    push_front(c, e);
    c->st.hits++;
    pthread_mutex_unlock(&c->lock);
    return true;
}

void sw_pii_cache_put(struct sw_pii_cache *c, const struct sw_pii_cache_key *k,
                      const struct sw_pii_span *sp, size_t n)
{
    size_t bytes = entry_bytes(n);
    if (n > UINT32_MAX)
        return;
    struct entry *e = malloc(bytes);
    if (!e)
        return;
    memset(e, 0, sizeof *e);
    e->key = *k;
    e->n = (uint32_t)n;
    for (size_t i = 0; i < n; i++)
        e->sp[i] = (struct cspan){(uint32_t)sp[i].start, (uint32_t)sp[i].len, (int32_t)sp[i].type};
    pthread_mutex_lock(&c->lock);
    size_t b = bucket_of(c, k);
    struct entry *x = c->bucket[b];
    while (x && !same_key(&x->key, k))
        x = x->hnext;
    /* one entry takes at most a quarter of the bound; a text another
     * thread stored meanwhile is kept */
    if (x || bytes > c->st.max_bytes / 4) {
        pthread_mutex_unlock(&c->lock);
        free(e);
        return;
    }
    evict_to(c, bytes);
    e->hnext = c->bucket[b];
    c->bucket[b] = e;
    push_front(c, e);
    c->st.bytes += bytes;
    c->st.entries++;
    pthread_mutex_unlock(&c->lock);
}

void sw_pii_cache_each(const struct sw_pii_cache *c,
                       void (*fn)(void *ud, const void *entry, size_t bytes), void *ud)
{
    pthread_mutex_lock((pthread_mutex_t *)&c->lock);
    for (const struct entry *e = c->head; e; e = e->next)
        fn(ud, e, entry_bytes(e->n));
    pthread_mutex_unlock((pthread_mutex_t *)&c->lock);
}
