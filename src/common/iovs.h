/* A body as pieces sent one after another: a few held in place (the
 * client's bytes around a spliced model name), or as many as a body the
 * gateway wrote around the kept texts of resent messages has (one per
 * message and the bytes between), on the heap. The pieces' bytes are the
 * owner's; the list is this struct's. Zeroed: empty. */
#ifndef SW_COMMON_IOVS_H
#define SW_COMMON_IOVS_H

#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "common/err.h"

#define SW_IOVS_INLINE 5

struct sw_iovs {
    struct iovec *heap;         /* NULL: the pieces are in `one` */
    int n, cap;                 /* cap: the heap's room */
    struct iovec one[SW_IOVS_INLINE];
};

static inline struct iovec *sw_iovs_v(struct sw_iovs *s)
{
    return s->heap ? s->heap : s->one;
}

static inline const struct iovec *sw_iovs_cv(const struct sw_iovs *s)
{
    return s->heap ? s->heap : s->one;
}

/* Room for n pieces in all, those held kept: the array to write them in. */
static inline struct iovec *sw_iovs_room(struct sw_iovs *s, int n)
{
    if (n <= (s->heap ? s->cap : SW_IOVS_INLINE))
        return sw_iovs_v(s);
    struct iovec *h = malloc((size_t)n * sizeof *h);
    if (!h)
        return NULL;
    memcpy(h, sw_iovs_v(s), (size_t)s->n * sizeof *h);
    free(s->heap);
    s->heap = h;
    s->cap = n;
    return h;
}

/* s holds a copy of the n pieces of v. */
static inline int sw_iovs_set(struct sw_iovs *s, const struct iovec *v, int n)
{
    s->n = 0;
    struct iovec *to = sw_iovs_room(s, n);
    if (!to)
        return SW_ENOMEM;
    memcpy(to, v, (size_t)n * sizeof *v);
    s->n = n;
    return SW_OK;
}

static inline void sw_iovs_free(struct sw_iovs *s)
{
    free(s->heap);
    s->heap = NULL;
    s->n = s->cap = 0;
}

#endif
