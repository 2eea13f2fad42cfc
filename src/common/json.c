#include "common/json.h"

#include <jansson.h>
#include <stdbool.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "common/err.h"
#include "common/utf8.h"

/* ---- String escape ---- */

/* How many bytes from s on are written as they are: printable ASCII but
 * '"' and '\', and non-ASCII bytes (only valid sequences when the UTF-8 is
 * checked or fixed). */
static size_t plain_run(const unsigned char *s, size_t n, unsigned flags)
{
    bool utf8 = flags & (SW_JSON_ESC_FIX_UTF8 | SW_JSON_ESC_CHECK_UTF8);
    size_t i = 0;
    for (;;) {
#if defined(__SSE2__)
        /* sixteen bytes at a time up to the first that is a control byte,
         * '"' or '\\' (or, when the UTF-8 is read, not ASCII) */
        const __m128i hi3 = _mm_set1_epi8((char)0xE0), quote = _mm_set1_epi8('"'),
                      bslash = _mm_set1_epi8('\\'), zero = _mm_setzero_si128();
        while (n - i >= 16) {
            __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(s + i));
            __m128i stop = _mm_or_si128(_mm_cmpeq_epi8(_mm_and_si128(v, hi3), zero),
                                        _mm_or_si128(_mm_cmpeq_epi8(v, quote),
                                                     _mm_cmpeq_epi8(v, bslash)));
            unsigned m = (unsigned)_mm_movemask_epi8(stop);
            if (utf8)
                m |= (unsigned)_mm_movemask_epi8(v);
            if (m) {
                i += (size_t)__builtin_ctz(m);
                break;
            }
            i += 16;
        }
#else
        /* eight bytes at a time while they are all printable ASCII but '"' and '\\' */
        const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
        while (n - i >= 8) {
            uint64_t w;
            memcpy(&w, s + i, 8);
            uint64_t q = w ^ (ones * '"'), b = w ^ (ones * '\\');
            uint64_t special = ((w - ones * 0x20) | (q - ones) | (b - ones)) & ~w & highs;
            if (special || (w & highs))
                break;
            i += 8;
        }
#endif
        if (i >= n)
            return n;
        /* one character, then the fast loop again */
        unsigned c = s[i];
        if (c < 0x80) {
            if (c < 0x20 || c == '"' || c == '\\')
                return i;
            i++;
        } else if (!utf8) {
            i++;
        } else {
            size_t k = sw_utf8_seq(s + i, n - i);
            if (!k)
                return i;
            i += k;
        }
    }
}

/* The escape of the character at s, which plain_run stopped at (n > 0
 * bytes readable), into out (6 bytes); returns its length and sets *used
 * to the input bytes it stands for. 0: invalid UTF-8 under
 * SW_JSON_ESC_CHECK_UTF8. */
static size_t escape_one(const unsigned char *s, size_t n, unsigned flags, char *out,
                         size_t *used)
{
    static const char lower[] = "0123456789abcdef", upper[] = "0123456789ABCDEF";
    unsigned c = s[0];
    *used = 1;
    if (c == '"' || c == '\\') {
        out[0] = '\\';
        out[1] = (char)c;
        return 2;
    }
    if (c < 0x20) {
        if (!(flags & SW_JSON_ESC_ALL_CTL)) {
            char e = c == '\b' ? 'b' : c == '\f' ? 'f' : c == '\n' ? 'n' : c == '\r' ? 'r'
                   : c == '\t' ? 't' : 0;
            if (e) {
                out[0] = '\\';
                out[1] = e;
                return 2;
            }
        }
        const char *hex = flags & SW_JSON_ESC_ALL_CTL ? lower : upper;
        memcpy(out, "\\u00", 4);
        out[4] = hex[c >> 4];
        out[5] = hex[c & 15];
        return 6;
    }
    /* A byte >= 0x80 that starts no valid sequence. */
    if (flags & SW_JSON_ESC_CHECK_UTF8)
        return 0;
    memcpy(out, "\\ufffd", 6);
    while (*used < n && (s[*used] & 0xC0) == 0x80)
        (*used)++;
    return 6;
}

/* The letter after the backslash of a two-byte escape, 0 for any other byte. */
static const char two_byte[256] = {['"'] = '"', ['\\'] = '\\', ['\b'] = 'b', ['\f'] = 'f',
                                   ['\n'] = 'n', ['\r'] = 'r', ['\t'] = 't'};

size_t sw_json_escape_into(char *w, const char *s, size_t n, unsigned flags)
{
    const unsigned char *p = (const unsigned char *)s;
    char *start = w;
    size_t i = 0;
#if defined(__SSE2__)
    /* Sixteen bytes at a time, copied whole before looking at them: the
     * room (six bytes a byte) is never short of sixteen while sixteen are
     * left to read, and what follows the first byte to stop at is written
     * again. */
    bool utf8 = flags & (SW_JSON_ESC_FIX_UTF8 | SW_JSON_ESC_CHECK_UTF8);
    const __m128i hi3 = _mm_set1_epi8((char)0xE0), quote = _mm_set1_epi8('"'),
                  bslash = _mm_set1_epi8('\\'), zero = _mm_setzero_si128();
    while (n - i >= 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(p + i));
        _mm_storeu_si128((__m128i *)(void *)w, v);
        __m128i stop = _mm_or_si128(_mm_cmpeq_epi8(_mm_and_si128(v, hi3), zero),
                                    _mm_or_si128(_mm_cmpeq_epi8(v, quote),
                                                 _mm_cmpeq_epi8(v, bslash)));
        unsigned m = (unsigned)_mm_movemask_epi8(stop);
        if (utf8)
            m |= (unsigned)_mm_movemask_epi8(v);
        if (!m) {
            i += 16;
            w += 16;
            continue;
        }
        size_t run = (size_t)__builtin_ctz(m), used;
        i += run;
        w += run;
        /* the usual stop (a quote, a backslash, a newline in code): two
         * bytes, written here */
        char e = two_byte[p[i]];
        if (e && (p[i] >= 0x20 || !(flags & SW_JSON_ESC_ALL_CTL))) {
            w[0] = '\\';
            w[1] = e;
            w += 2;
            i++;
            continue;
        }
        if (p[i] >= 0x80) {
            size_t k = sw_utf8_seq(p + i, n - i);
            if (k) { /* a valid sequence: as it is */
                memcpy(w, p + i, k);
                w += k;
                i += k;
                continue;
            }
        }
        size_t k = escape_one(p + i, n - i, flags, w, &used);
        if (!k)
            return SIZE_MAX;
        w += k;
        i += used;
    }
#endif
    while (i < n) {
        size_t run = plain_run(p + i, n - i, flags), used;
        memcpy(w, p + i, run);
        w += run;
        i += run;
        if (i == n)
            break;
        size_t k = escape_one(p + i, n - i, flags, w, &used);
        if (!k)
            return SIZE_MAX;
        w += k;
        i += used;
    }
    return (size_t)(w - start);
}

int sw_json_escape(struct sw_buf *out, const char *s, size_t n, unsigned flags)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t was = out->len, i = 0;
    int err = SW_OK;
    while (i < n && !err) {
        size_t run = plain_run(p + i, n - i, flags), used;
        char esc[6];
        err = sw_buf_append(out, p + i, run);
        i += run;
        if (err || i == n)
            break;
        size_t k = escape_one(p + i, n - i, flags, esc, &used);
        err = k ? sw_buf_append(out, esc, k) : SW_EINVAL;
        i += used;
    }
    if (err && out->ptr) {
        out->len = was;
        out->ptr[was] = '\0';
    }
    return err;
}

/* ---- Type names ---- */

const char *sw_json_type_name(const struct json_t *v)
{
    if (!v)
        return "a value";
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a decimal";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    case JSON_NULL: return "null";
    }
    return "a value";
}
