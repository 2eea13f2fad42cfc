#include "common/jscan.h"

#include <limits.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include <stdint.h>
#include <string.h>

#include "common/utf8.h"

struct scan {
    const unsigned char *p, *end;
};

static inline void skip_ws(struct scan *s)
{
    /* Most tokens follow the previous one directly: one compare for them. */
    while (s->p < s->end && *s->p <= ' ' &&
           (*s->p == ' ' || *s->p == '\n' || *s->p == '\r' || *s->p == '\t'))
        s->p++;
}

static bool hex4(struct scan *s, unsigned *v)
{
    if (s->end - s->p < 4)
        return false;
    *v = 0;
    for (int i = 0; i < 4; i++) {
        unsigned c = s->p[i], d;
        if (c >= '0' && c <= '9')
            d = c - '0';
        else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f')
            d = (c | 0x20) - 'a' + 10;
        else
            return false;
        *v = *v << 4 | d;
    }
    s->p += 4;
    return true;
}

/* One UTF-8 sequence starting at a byte >= 0x80 (common/utf8.h). */
static inline bool utf8_seq(struct scan *s)
{
    size_t k = sw_utf8_seq(s->p, (size_t)(s->end - s->p));
    s->p += k;
    return k != 0;
}

#define ONES UINT64_C(0x0101010101010101)
#define HIGHS UINT64_C(0x8080808080808080)

/* Whether a byte of v is 0 (may also flag a byte after one that is). */
static inline uint64_t zero8(uint64_t v)
{
    return (v - ONES) & ~v & HIGHS;
}

/* The high bit of each byte of w that is a quote, a backslash, below 0x20
 * or 0x80 and above (may also flag a plain byte that follows such a byte,
 * never one before the first such byte). */
static inline uint64_t special8(uint64_t w)
{
    return (w | ((w - 0x20 * ONES) & ~w) | zero8(w ^ ('"' * ONES)) |
            zero8(w ^ ('\\' * ONES))) & HIGHS;
}

/* Bytes a string holds as they are: 0x20-0x7f but the quote and the
 * backslash (one load per byte instead of four comparisons). */
#define PLAIN16(x) 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1
static const unsigned char plain_byte[256] = {
    [0x20] = 1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0x22 '"' */
    PLAIN16(3), PLAIN16(4),
    [0x50] = 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1, /* 0x5c '\\' */
    PLAIN16(6), PLAIN16(7),
};
#undef PLAIN16

/* A string; s->p on the opening quote. A key may not hold \u0000 (jansson,
 * which decodes the same text elsewhere, refuses it there). */
static inline __attribute__((always_inline)) bool string(struct scan *s, bool key)
{
    s->p++;
    while (s->p < s->end) {
#if defined(__SSE2__)
        /* Sixteen bytes at a time while sixteen remain: a quote, a
         * backslash, a control character or a byte past ASCII stops it. */
        while (s->end - s->p >= 16) {
            __m128i v = _mm_loadu_si128((const __m128i *)(const void *)s->p);
            __m128i special = _mm_or_si128(
                _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')), _mm_cmpeq_epi8(v, _mm_set1_epi8('\\'))),
                _mm_cmplt_epi8(v, _mm_set1_epi8(0x20)));  /* signed: 0x80 and above too */
            unsigned m = (unsigned)_mm_movemask_epi8(special);
            if (m) {
                s->p += __builtin_ctz(m);
                goto special;
            }
            s->p += 16;
        }
#endif
        /* Eight plain bytes at a time: none a quote, a backslash, a
         * control character or past ASCII (most of any text). */
        while (s->end - s->p >= 8) {
            uint64_t w;
            memcpy(&w, s->p, 8);
            uint64_t m = special8(w);
            if (m) {
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
                /* The lowest flagged byte is a special one (the borrows that
                 * flag plain bytes run upwards only): go straight to it. */
                s->p += (unsigned)__builtin_ctzll(m) >> 3;
#endif
                break;
            }
            s->p += 8;
        }
        /* Then the plain bytes before the one that stopped it, one by one
         * (not eight at a time again for each: short strings are most keys). */
        while (s->p < s->end && plain_byte[*s->p])
            s->p++;
        if (s->p == s->end)
            break;
#if defined(__SSE2__)
    special:;
#endif
        unsigned c = *s->p;
        if (c == '"') {
            s->p++;
            return true;
        }
        if (c < 0x20)
            return false;
        if (c == '\\') {
            if (++s->p == s->end)
                return false;
            c = *s->p++;
            if (c == 'u') {
                unsigned u;
                if (!hex4(s, &u) || (key && u == 0))
                    return false;
                if (u >= 0xd800 && u <= 0xdbff) { /* a high surrogate needs its low half */
                    unsigned lo;
                    if (s->end - s->p < 2 || s->p[0] != '\\' || s->p[1] != 'u')
                        return false;
                    s->p += 2;
                    if (!hex4(s, &lo) || lo < 0xdc00 || lo > 0xdfff)
                        return false;
                } else if (u >= 0xdc00 && u <= 0xdfff) {
                    return false;
                }
            } else if (!strchr("\"\\/bfnrt", (int)c) || c == 0) {
                return false;
            }
        } else if (c >= 0x80) {
            if (!utf8_seq(s))
                return false;
        } else {
            s->p++;
        }
    }
    return false;
}

static bool digits(struct scan *s)
{
    const unsigned char *start = s->p;
    while (s->p < s->end && *s->p >= '0' && *s->p <= '9')
        s->p++;
    return s->p > start;
}

static bool number(struct scan *s)
{
    if (*s->p == '-')
        s->p++;
    if (s->p == s->end)
        return false;
    if (*s->p == '0')
        s->p++;
    else if (!digits(s))
        return false;
    if (s->p < s->end && *s->p == '.') {
        s->p++;
        if (!digits(s))
            return false;
    }
    if (s->p < s->end && (*s->p == 'e' || *s->p == 'E')) {
        s->p++;
        if (s->p < s->end && (*s->p == '+' || *s->p == '-'))
            s->p++;
        if (!digits(s))
            return false;
    }
    return true;
}

static bool literal(struct scan *s, const char *word, size_t n)
{
    if ((size_t)(s->end - s->p) < n || memcmp(s->p, word, n) != 0)
        return false;
    s->p += n;
    return true;
}

/* Whether a key's bytes k (klen of them, between its quotes; holding a
 * backslash) say key (keylen bytes, ASCII) with their escapes decoded. */
static bool key_decoded(const char *key, size_t keylen, const unsigned char *k, size_t klen)
{
    static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
    size_t j = 0;
    for (size_t i = 0; i < klen; j++) {
        unsigned c = k[i++];
        if (c == '\\' && i < klen && k[i] == 'u') {
            struct scan h = {k + i + 1, k + klen};
            if (!hex4(&h, &c))
                return false;
            i += 5;     /* above 0x7f: never a byte of key */
        } else if (c == '\\') {
            const char *f = i < klen ? memchr(from, k[i], sizeof from - 1) : NULL;
            if (!f)
                return false;
            c = (unsigned char)to[f - from];
            i++;
        }
        if (j >= keylen || c != (unsigned char)key[j])
            return false;
    }
    return j == keylen;
}

/* Whether a key's bytes k (klen of them, between its quotes; a string the
 * scanner accepted or, for sw_jscan_members, one the parse did) say key
 * (keylen bytes, ASCII): byte for byte, or with its escapes decoded, so a
 * member the parse reads as key is found however the client wrote its name
 * ("m\u006fdel"). *esc: whether k holds a backslash, -1 until a name longer
 * than a key asks (found once per member, and only then). Inlined: most
 * names differ from most keys in length or first byte. */
static inline __attribute__((always_inline)) bool key_is(const char *key, size_t keylen,
                                                         const unsigned char *k, size_t klen,
                                                         int *esc)
{
    if (klen == keylen)
        return !klen || ((unsigned char)key[0] == k[0] && !memcmp(key, k, klen));
    if (klen < keylen)
        return false;   /* an escape only makes a name longer */
    if (*esc < 0)
        *esc = memchr(k, '\\', klen) != NULL;
    return *esc && key_decoded(key, keylen, k, klen);
}

/* The keys' lengths are measured once, not once per member (the callers
 * ask for up to four keys; more are measured at each member). */
#define KEYS_MEASURED 8

static size_t key_len(const char *const *keys, const size_t *klens, size_t i)
{
    return i < KEYS_MEASURED ? klens[i] : strlen(keys[i]);
}

struct want {
    const char *const *keys;
    struct sw_jspan *spans, *members;
    size_t n;
    const unsigned char *base;
    size_t klens[KEYS_MEASURED];
};

static bool value(struct scan *s, int depth, const struct want *w);

/* An object or array; s->p on its opening bracket. At depth 0 (the top
 * object) the members named in keys are recorded. */
static bool container(struct scan *s, int depth, const struct want *w)
{
    if (depth >= SW_JSCAN_MAX_DEPTH)
        return false;
    bool obj = *s->p == '{';
    unsigned char close = obj ? '}' : ']';
    s->p++;
    skip_ws(s);
    if (s->p < s->end && *s->p == close) {
        s->p++;
        return true;
    }
    for (;;) {
        size_t want = w->n; /* the key this member's value is recorded for; n: none */
        const unsigned char *k = s->p + 1;
        if (obj) {
            if (s->p == s->end || *s->p != '"')
                return false;
            if (!string(s, true))
                return false;
            size_t klen = (size_t)(s->p - 1 - k);
            int esc = -1;
            for (size_t i = 0; depth == 0 && i < w->n; i++) {
                if (!key_is(w->keys[i], key_len(w->keys, w->klens, i), k, klen, &esc))
                    continue;
                if (w->spans[i].len)
                    return false; /* twice: which one counts is ambiguous */
                want = i;
            }
            skip_ws(s);
            if (s->p == s->end || *s->p++ != ':')
                return false;
            skip_ws(s);
        }
        const unsigned char *v = s->p;
        if (!value(s, depth + 1, w))
            return false;
        if (want < w->n) {
            w->spans[want] = (struct sw_jspan){(size_t)(v - w->base), (size_t)(s->p - v)};
            if (w->members)
                w->members[want] = (struct sw_jspan){(size_t)(k - 1 - w->base), (size_t)(s->p - k + 1)};
        }
        skip_ws(s);
        if (s->p == s->end)
            return false;
        if (*s->p == close) {
            s->p++;
            return true;
        }
        if (*s->p++ != ',')
            return false;
        skip_ws(s);
    }
}

static bool value(struct scan *s, int depth, const struct want *w)
{
    if (s->p == s->end)
        return false;
    switch (*s->p) {
    case '{':
    case '[': return container(s, depth, w);
    case '"': return string(s, false);
    case 't': return literal(s, "true", 4);
    case 'f': return literal(s, "false", 5);
    case 'n': return literal(s, "null", 4);
    default: return number(s);
    }
}

bool sw_jscan_object(const char *text, size_t len, const char *const *keys,
                     struct sw_jspan *spans, struct sw_jspan *members, size_t n)
{
    struct scan s = {(const unsigned char *)text, (const unsigned char *)text + len};
    struct want w = {keys, spans, members, n, (const unsigned char *)text, {0}};
    for (size_t i = 0; i < n; i++) {
        spans[i] = (struct sw_jspan){0, 0};
        if (members)
            members[i] = (struct sw_jspan){0, 0};
        if (i < KEYS_MEASURED)
            w.klens[i] = strlen(keys[i]);
    }
    skip_ws(&s);
    if (s.p == s.end || *s.p != '{')
        return false;
    if (!container(&s, 0, &w))
        return false;
    skip_ws(&s);
    return s.p == s.end;
}

/* ---- Locating members in a text known to be well-formed ---- */

/* Past the closing quote of a string whose content starts at p; NULL: none. */
static const unsigned char *skip_string(const unsigned char *p, const unsigned char *end)
{
    for (;;) {
        const unsigned char *q = memchr(p, '"', (size_t)(end - p));
        if (!q)
            return NULL;
        const unsigned char *b = q; /* an even run of backslashes before it: it ends */
        while (b > p && b[-1] == '\\')
            b--;
        if (((q - b) & 1) == 0)
            return q + 1;
        p = q + 1;
    }
}

static const unsigned char *skip_ws_to(const unsigned char *p, const unsigned char *end)
{
    while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
        p++;
    return p;
}

/* Past the value starting at p; NULL when the text ends first. */
static const unsigned char *skip_value(const unsigned char *p, const unsigned char *end)
{
    if (p == end)
        return NULL;
    if (*p == '"')
        return skip_string(p + 1, end);
    if (*p != '{' && *p != '[') {
        while (p < end && *p != ',' && *p != '}' && *p != ']' && *p != ' ' && *p != '\n' &&
               *p != '\r' && *p != '\t')
            p++;
        return p;
    }
    size_t depth = 0;
    while (p < end) {
        unsigned char c = *p;
        if (c == '"') {
            if (!(p = skip_string(p + 1, end)))
                return NULL;
            continue;
        }
        p++;
        if (c == '{' || c == '[')
            depth++;
        else if ((c == '}' || c == ']') && --depth == 0)
            return p;
    }
    return NULL;
}

const unsigned char *sw_jscan_skip_string(const unsigned char *p, const unsigned char *end)
{
    return skip_string(p, end);
}

const unsigned char *sw_jscan_skip_ws(const unsigned char *p, const unsigned char *end)
{
    return skip_ws_to(p, end);
}

const unsigned char *sw_jscan_skip_value(const unsigned char *p, const unsigned char *end)
{
    return skip_value(p, end);
}

bool sw_jscan_members(const char *text, size_t len, const char *const *keys,
                      struct sw_jspan *spans, struct sw_jspan *members, size_t n)
{
    const unsigned char *base = (const unsigned char *)text, *end = base + len;
    size_t klens[KEYS_MEASURED];
    for (size_t i = 0; i < n; i++) {
        spans[i] = (struct sw_jspan){0, 0};
        if (members)
            members[i] = (struct sw_jspan){0, 0};
        if (i < KEYS_MEASURED)
            klens[i] = strlen(keys[i]);
    }
    const unsigned char *p = skip_ws_to(base, end);
    if (p == end || *p++ != '{')
        return false;
    p = skip_ws_to(p, end);
    if (p < end && *p == '}')
        return skip_ws_to(p + 1, end) == end;
    for (;;) {
        if (p == end || *p != '"')
            return false;
        const unsigned char *k = p + 1;
        if (!(p = skip_string(k, end)))
            return false;
        size_t klen = (size_t)(p - 1 - k), want = n;
        int esc = -1;
        for (size_t i = 0; i < n; i++) {
            if (!key_is(keys[i], key_len(keys, klens, i), k, klen, &esc))
                continue;
            if (spans[i].len)
                return false;
            want = i;
        }
        p = skip_ws_to(p, end);
        if (p == end || *p++ != ':')
            return false;
        p = skip_ws_to(p, end);
        const unsigned char *v = p;
        if (p == end || !(p = skip_value(p, end)) || p == v)
            return false;
        if (want < n) {
            spans[want] = (struct sw_jspan){(size_t)(v - base), (size_t)(p - v)};
            if (members)
                members[want] = (struct sw_jspan){(size_t)(k - 1 - base), (size_t)(p - k + 1)};
        }
        p = skip_ws_to(p, end);
        if (p == end)
            return false;
        if (*p == '}')
            return skip_ws_to(p + 1, end) == end;
        if (*p++ != ',')
            return false;
        p = skip_ws_to(p, end);
    }
}

long sw_jscan_long(const char *text, struct sw_jspan span)
{
    if (!span.len || span.len > 18)
        return -1;
    long v = 0;
    for (size_t i = 0; i < span.len; i++) {
        char c = text[span.off + i];
        if (c < '0' || c > '9')
            return -1;
        v = v * 10 + (c - '0');
    }
    return v;
}

static bool is_ws(char c)
{
    return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

struct sw_jspan sw_jscan_cut(const char *text, size_t len, struct sw_jspan m)
{
    size_t start = m.off, end = m.off + m.len;
    size_t i = start;
    while (i > 0 && is_ws(text[i - 1]))
        i--;
    if (i > 0 && text[i - 1] == ',')
        return (struct sw_jspan){i - 1, end - (i - 1)}; /* with the comma before it */
    size_t j = end;
    while (j < len && is_ws(text[j]))
        j++;
    if (j < len && text[j] == ',')
        j++; /* the first member: with the comma after it */
    else
        j = end;
    return (struct sw_jspan){start, j - start};
}

bool sw_jscan_empty_array(const char *text, struct sw_jspan span)
{
    if (span.len < 2 || text[span.off] != '[')
        return false;
    size_t i = span.off + 1;
    while (i < span.off + span.len && is_ws(text[i]))
        i++;
    return i < span.off + span.len && text[i] == ']';
}
