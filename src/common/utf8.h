/* UTF-8 as RFC 3629 defines it, for every module: no overlong forms, no
 * UTF-16 surrogates (U+D800..U+DFFF), nothing past U+10FFFF. One table of
 * what the second byte of a sequence may be does all three checks. */
#ifndef SW_COMMON_UTF8_H
#define SW_COMMON_UTF8_H

#include <stdbool.h>
#include <stddef.h>

/* The length (1 to 4) of the valid UTF-8 sequence at s, of which n > 0
 * bytes are readable; 0 when the bytes there are not one (a stray
 * continuation byte, a lead byte that never starts a sequence, an
 * overlong form, a surrogate, a code point past U+10FFFF, or a sequence
 * cut by the end of the n bytes). An ASCII byte, NUL included, is 1.
 * Inline: the JSON scanner calls it for every non-ASCII character. */
static inline size_t sw_utf8_seq(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    size_t len;
    unsigned lo = 0x80, hi = 0xBF;      /* what the second byte may be */
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF) {
        len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        if (c == 0xE0)
            lo = 0xA0;                  /* shorter would be overlong */
        else if (c == 0xED)
            hi = 0x9F;                  /* U+D800.. are surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        if (c == 0xF0)
            lo = 0x90;                  /* overlong */
        else if (c == 0xF4)
            hi = 0x8F;                  /* past U+10FFFF */
    } else {
        return 0;                       /* 0x80..0xC1 (continuation, overlong), 0xF5.. */
    }
    if (n < len || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++)
        if ((s[i] & 0xC0) != 0x80)
            return 0;
    return len;
}

/* Whether all n bytes at s are valid UTF-8 (NUL bytes count as valid). */
bool sw_utf8_valid(const char *s, size_t n);

/* The length of s[0..len) without an incomplete sequence at its end (as a
 * cut at a byte limit leaves): the last byte >= 0x80 that is no
 * continuation byte, when its sequence would need more bytes than follow
 * it, is dropped with them. Only the last four bytes are looked at; what
 * is invalid elsewhere stays. */
size_t sw_utf8_trim(const char *s, size_t len);

/* Replaces, in place, every byte of s[0..len) that does not start or
 * belong to a valid sequence with '?', so the text is valid UTF-8 of the
 * same length. */
void sw_utf8_sanitize(char *s, size_t len);

#endif
