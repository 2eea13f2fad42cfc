/* Freed blocks of one size, kept for the next allocation of that size.
 * The event loop is the only thread, and blocks of one to ten kilobytes (a
 * request, an upstream attempt, a relay) otherwise take glibc's slow path on
 * every request. As many are kept as a busy gateway has in flight at once
 * (256: 32 left a server with 256 requests at once in glibc's slow path, about
 * 2,700 instructions a request); at most 256 relays' 9 KB, 2.4 MB. Sanitizer
 * builds keep none, so a use after free is still caught. */
#ifndef SW_COMMON_SPARES_H
#define SW_COMMON_SPARES_H

#include <stddef.h>
#include <stdlib.h>

#if defined(__SANITIZE_ADDRESS__)
#define SW_SPARES_MAX 0
#else
#define SW_SPARES_MAX 256
#endif

struct sw_spares {
    void *v[SW_SPARES_MAX + 1];
    int n;
};

/* A kept block, or NULL when none is kept. */
static inline void *sw_spares_take(struct sw_spares *s)
{
    return s->n > 0 ? s->v[--s->n] : NULL;
}

/* A kept block, or a new one of `size` bytes (NULL: out of memory). */
static inline void *sw_spares_get(struct sw_spares *s, size_t size)
{
    return s->n > 0 ? s->v[--s->n] : malloc(size);
}

/* Keeps p (a block of the spares' size) for the next get, or frees it. */
static inline void sw_spares_put(struct sw_spares *s, void *p)
{
    if (p && s->n < SW_SPARES_MAX)
        s->v[s->n++] = p;
    else
        free(p);
}

static inline void sw_spares_free(struct sw_spares *s)
{
    while (s->n > 0)
        free(s->v[--s->n]);
}

#endif
