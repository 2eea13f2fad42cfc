#include "common/jalloc.h"

#include <jansson.h>
#include <malloc.h>
#include <stdlib.h>

/* Every block is a plain malloc block, so a string jansson returns
 * (json_dumps) is still released with free(). Small class c (2 <= c <=
 * N_CLASS) serves requests of up to 16*c - 8 bytes with blocks of
 * malloc(16*c - 8), whose usable size is exactly that (glibc: a 16*c-byte
 * chunk with an 8-byte header; valgrind: the size asked). Large class k
 * (BIG_MIN_SHIFT <= k <= BIG_MAX_SHIFT) serves requests of up to 2^k - 8
 * bytes with blocks of malloc(2^k - 8). The class of a block being released
 * is read back from its usable size u: the largest class asking no more
 * than u (so a block is counted at least at half its size). A block past
 * the largest class goes back to free(). */
#define N_CLASS ((SW_JALLOC_MAX_SMALL + 23) / 16)
#define SMALL_TOP (16 * N_CLASS - 8)    /* the largest small class's size */
#define BIG_MIN_SHIFT 9
#define BIG_MAX_SHIFT 16
#define BIG_SIZE(k) (((size_t)1 << (k)) - 8)

_Static_assert(BIG_SIZE(BIG_MAX_SHIFT) == SW_JALLOC_MAX_BIG, "the largest class");
_Static_assert(BIG_SIZE(BIG_MIN_SHIFT) > SMALL_TOP, "large classes above the small ones");

struct node {
    struct node *next;
};

static _Thread_local struct {
    struct node *head[N_CLASS + 1];
    unsigned n[N_CLASS + 1];
    struct node *big[BIG_MAX_SHIFT + 1];
    size_t bytes;               /* kept in all lists, at most SW_JALLOC_KEEP_BYTES */
} cache;

static void *pop(struct node **head, size_t size)
{
    struct node *b = *head;
    *head = b->next;
    cache.bytes -= size;
    return b;
}

static void push(struct node **head, void *p, size_t size)
{
    struct node *b = p;
    b->next = *head;
    *head = b;
    cache.bytes += size;
}

void *sw_jalloc_malloc(size_t n)
{
    if (n <= SW_JALLOC_MAX_SMALL) {
        size_t c = n <= 24 ? 2 : (n + 23) / 16;
        if (cache.head[c]) {
            cache.n[c]--;
            return pop(&cache.head[c], 16 * c - 8);
        }
        return malloc(16 * c - 8);
    }
    if (n > SW_JALLOC_MAX_BIG)
        return malloc(n);
    unsigned k = BIG_MIN_SHIFT;
    while (BIG_SIZE(k) < n)
        k++;
    return cache.big[k] ? pop(&cache.big[k], BIG_SIZE(k)) : malloc(BIG_SIZE(k));
}

void sw_jalloc_free(void *p)
{
    if (!p)
        return;
    size_t u = malloc_usable_size(p);
    if (u <= SMALL_TOP) {
        size_t c = (u + 8) / 16;
        if (c >= 2 && cache.n[c] < SW_JALLOC_KEEP &&
            cache.bytes + 16 * c - 8 <= SW_JALLOC_KEEP_BYTES) {
            cache.n[c]++;
            push(&cache.head[c], p, 16 * c - 8);
            return;
        }
    } else if (u >= BIG_SIZE(BIG_MIN_SHIFT) && u <= SW_JALLOC_MAX_BIG) {
        unsigned k = BIG_MIN_SHIFT;
        while (k < BIG_MAX_SHIFT && BIG_SIZE(k + 1) <= u)
            k++;
        if (cache.bytes + BIG_SIZE(k) <= SW_JALLOC_KEEP_BYTES) {
            push(&cache.big[k], p, BIG_SIZE(k));
            return;
        }
    }
    free(p);
}

size_t sw_jalloc_cached(void)
{
    size_t t = 0;
    for (size_t c = 2; c <= N_CLASS; c++)
        t += cache.n[c];
    return t;
}

size_t sw_jalloc_cached_bytes(void)
{
    return cache.bytes;
}

int sw_jalloc_install(void)
{
#if defined(__SANITIZE_ADDRESS__)
    return 0;
#else
    json_set_alloc_funcs(sw_jalloc_malloc, sw_jalloc_free);
    return 1;
#endif
}
