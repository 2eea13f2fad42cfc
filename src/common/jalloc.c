#include "common/jalloc.h"

#include <jansson.h>
#include <malloc.h>
#include <stdlib.h>

/* Every block is a plain malloc block, so a string jansson returns
 * (json_dumps) is still released with free(). Class c (2 <= c <= N_CLASS)
 * serves requests of up to 16*c - 8 bytes with blocks of malloc(16*c - 8),
 * whose usable size is exactly that (glibc: a 16*c-byte chunk with an
 * 8-byte header; valgrind: the size asked). The class of a block being
 * released is read back from its usable size u: (u + 8) / 16, never a class
 * asking more than u. A block past the largest class goes back to free(). */
#define N_CLASS ((SW_JALLOC_MAX_SMALL + 23) / 16)

struct node {
    struct node *next;
};

static _Thread_local struct {
    struct node *head[N_CLASS + 1];
    unsigned n[N_CLASS + 1];
} cache;

void *sw_jalloc_malloc(size_t n)
{
    if (n > SW_JALLOC_MAX_SMALL)
        return malloc(n);
    size_t c = n <= 24 ? 2 : (n + 23) / 16;
    struct node *b = cache.head[c];
    if (b) {
        cache.head[c] = b->next;
        cache.n[c]--;
        return b;
    }
    return malloc(16 * c - 8);
}

void sw_jalloc_free(void *p)
{
    if (!p)
        return;
    size_t c = (malloc_usable_size(p) + 8) / 16;
    if (c >= 2 && c <= N_CLASS && cache.n[c] < SW_JALLOC_KEEP) {
        struct node *b = p;
        b->next = cache.head[c];
        cache.head[c] = b;
        cache.n[c]++;
        return;
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

int sw_jalloc_install(void)
{
#if defined(__SANITIZE_ADDRESS__)
    return 0;
#else
    json_set_alloc_funcs(sw_jalloc_malloc, sw_jalloc_free);
    return 1;
#endif
}
