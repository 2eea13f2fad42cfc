/* Saturating arithmetic for counts that come from clients (token estimates,
 * max_tokens): a sum that would overflow is clamped to LONG_MAX / LONG_MIN
 * instead of wrapping, so "too much" stays "too much" in every comparison. */
#ifndef SW_COMMON_SATMATH_H
#define SW_COMMON_SATMATH_H

#include <limits.h>

static inline long sw_sat_add_long(long a, long b)
{
    long r;
    if (__builtin_add_overflow(a, b, &r))
        return b > 0 ? LONG_MAX : LONG_MIN;
    return r;
}

#endif
