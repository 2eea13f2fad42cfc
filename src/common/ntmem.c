/* Streaming copies and wipes: see ntmem.h. */
#include "common/ntmem.h"

#include <stdint.h>
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>

/* Below this the ordinary routines are as fast and keep the line cached. */
#define NT_MIN 4096

/* The bytes before dst's next 16-byte boundary. */
static size_t head(const void *dst)
{
    return (16 - ((uintptr_t)dst & 15)) & 15;
}

void sw_nt_copy(void *dst, const void *src, size_t n)
{
    if (n < NT_MIN) {
        memcpy(dst, src, n);
        return;
    }
    unsigned char *d = dst;
    const unsigned char *s = src;
    size_t h = head(d);
    memcpy(d, s, h);
    d += h, s += h, n -= h;
    for (; n >= 64; d += 64, s += 64, n -= 64) {
        for (size_t i = 0; i < 64; i += 16)
            _mm_stream_si128((__m128i *)(d + i), _mm_loadu_si128((const __m128i *)(s + i)));
    }
    _mm_sfence(); /* ordered before what follows, as ordinary stores are */
    memcpy(d, s, n);
}

void sw_nt_wipe(void *p, size_t n)
{
    if (n < NT_MIN) {
        explicit_bzero(p, n);
        return;
    }
    unsigned char *d = p;
    size_t h = head(d);
    explicit_bzero(d, h);
    d += h, n -= h;
    const __m128i z = _mm_setzero_si128();
    for (; n >= 64; d += 64, n -= 64) {
        for (size_t i = 0; i < 64; i += 16)
            _mm_stream_si128((__m128i *)(d + i), z);
    }
    _mm_sfence();
    explicit_bzero(d, n);
    /* the zeroes count as read: no store above is dropped as dead before a free */
    __asm__ __volatile__("" : : "r"(p) : "memory");
}

#else

void sw_nt_copy(void *dst, const void *src, size_t n)
{
    memcpy(dst, src, n);
}

void sw_nt_wipe(void *p, size_t n)
{
    explicit_bzero(p, n);
}

#endif
