/* Normalised view of a text for detection; see view.h. */
#include "pii/view.h"

#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "common/err.h"

static bool space_cp(utf8proc_int32_t c)
{
    return c == 0xa0 || (c >= 0x2000 && c <= 0x200a) || c == 0x202f || c == 0x205f ||
           c == 0x3000 || c == 0x1680;
}

/* A dash, hyphen or minus sign: category Pd and the minus signs of other
 * categories (U+2212, modifier, superscript and subscript minus, the hyphen
 * bullet, the heavy minus). The view reads each as '-'. */
static bool dash_cp(utf8proc_int32_t c, utf8proc_category_t cat)
{
    return cat == UTF8PROC_CATEGORY_PD || c == 0x2212 || c == 0x02d7 || c == 0x207b ||
           c == 0x208b || c == 0x2043 || c == 0x2796;
}

/* The value of a decimal digit (category Nd): Unicode encodes every such
 * digit in runs of ten with ascending values 0-9 (runs may be adjacent, as
 * the mathematical digits are), so the value is the distance from the start
 * of its run of Nd characters, modulo 10. The longest run is 50. */
static int nd_value(utf8proc_int32_t c)
{
    int k = 0;
    while (k < 64 && c - k - 1 >= 0 && utf8proc_category(c - k - 1) == UTF8PROC_CATEGORY_ND)
        k++;
    return k % 10;
}

bool sw_pii_view_keeps(int32_t c)
{
    if (c < 0x80 || space_cp(c))
        return c < 0x80;
    const utf8proc_property_t *p = utf8proc_get_property(c);
    if (p->category == UTF8PROC_CATEGORY_CF || p->category == UTF8PROC_CATEGORY_ZS ||
        p->category == UTF8PROC_CATEGORY_ND || dash_cp(c, (utf8proc_category_t)p->category))
        return false;
    if (p->decomp_seqindex == UINT16_MAX)
        return true;            /* no decomposition: the character itself */
    utf8proc_int32_t d[8];
    int last = 0;
    utf8proc_ssize_t n = utf8proc_decompose_char(c, d, 8, UTF8PROC_COMPAT | UTF8PROC_DECOMPOSE, &last);
    if (n <= 0 || n > 8)
        return true;
    for (utf8proc_ssize_t k = 0; k < n; k++)
        if (d[k] < 0 || d[k] >= 0x80)
            return true;
    return false;               /* an ASCII compatibility form: folded */
}

/* The offset of the first byte at or after i that needs a look: >= 0x80,
 * '%' or '&' (an encoded '@'), a tab, CR or LF (maybe inside a number), or
 * len. 64 bytes a step while there is none. */
static size_t next_special(const unsigned char *t, size_t i, size_t len)
{
#ifdef __SSE2__
    const __m128i pc = _mm_set1_epi8('%'), am = _mm_set1_epi8('&'), ctl = _mm_set1_epi8(0x0d),
                  z = _mm_setzero_si128();
    for (; i + 16 <= len; i += 16) {
        __m128i a = _mm_loadu_si128((const __m128i *)(t + i));
        /* bytes <= 0x0d: (a - 0x0d, saturating) == 0 */
        __m128i m = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(a, pc), _mm_cmpeq_epi8(a, am)),
                                 _mm_cmpeq_epi8(_mm_subs_epu8(a, ctl), z));
        if (_mm_movemask_epi8(_mm_or_si128(m, a)))
            break;
    }
#endif
    while (i < len && t[i] < 0x80 && t[i] != '%' && t[i] != '&' && t[i] > 0x0d)
        i++;
    return i;
}

static inline bool ws(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static inline bool dig(unsigned char c)
{
    return c >= '0' && c <= '9';
}

/* Whether the tab or line break at i may sit inside a number: within a run
 * of blanks after a digit (or a digit and one of ")-./") and before a digit.
 * A superset of what fold_text() folds. */
static bool break_in_number(const unsigned char *t, size_t len, size_t i)
{
    size_t k = i, j = i;
    while (k > 0 && i - k < 16 && ws(t[k - 1]))
        k--;
    while (j < len && j - i < 16 && ws(t[j]))
        j++;
    if (k == 0 || j >= len || !dig(t[j]))
        return false;
    unsigned char p = t[k - 1];
    return dig(p) || p == ')' || (p >= 'A' && p <= 'Z') || ((p == '-' || p == '.' || p == '/') && k >= 2 && dig(t[k - 2]));
}

/* '@' written as "%40" or an HTML character reference: its length at i, or 0. */
static size_t encoded_at(const unsigned char *t, size_t len, size_t i)
{
    static const char *const forms[] = {"%40", "&#64;", "&#064;", "&#x40;", "&#X40;", "&commat;"};
    for (size_t k = 0; k < sizeof forms / sizeof forms[0]; k++) {
        size_t l = strlen(forms[k]);
        if (l <= len - i && !memcmp(t + i, forms[k], l))
            return l;
    }
    return 0;
}

int sw_pii_view_kind(const char *text, size_t len, int json)
{
    const unsigned char *t = (const unsigned char *)text;
    int kind = SW_PII_VIEW_NONE;
    if (json && (memchr(text, '\\', len) || memchr(text, '"', len)))
        return SW_PII_VIEW_BUILD;
    for (size_t i = 0; (i = next_special(t, i, len)) < len;) {
        if (t[i] < 0x80) {
            if ((t[i] == '%' || t[i] == '&') ? encoded_at(t, len, i) > 0
                : (t[i] == '\t' || t[i] == '\n' || t[i] == '\r') && break_in_number(t, len, i))
                return SW_PII_VIEW_BUILD;
            i++;
            continue;
        }
        utf8proc_int32_t c;
        utf8proc_ssize_t n = utf8proc_iterate(t + i, (utf8proc_ssize_t)(len - i), &c);
        if (n <= 0 || !sw_pii_view_keeps(c))
            return SW_PII_VIEW_BUILD;
        kind = SW_PII_VIEW_UTF8;
        i += (size_t)n;
    }
    return kind;
}

static int grow(struct sw_pii_view *v, size_t need)
{
    if (v->len + need <= v->cap)
        return SW_OK;
    size_t nc = v->cap ? v->cap : 64;
    while (nc < v->len + need)
        nc *= 2;
    char *t = realloc(v->t, nc);
    if (!t)
        return SW_ENOMEM;
    v->t = t;
    uint32_t *os = realloc(v->os, nc * sizeof *os);
    if (!os)
        return SW_ENOMEM;
    v->os = os;
    uint32_t *oe = realloc(v->oe, nc * sizeof *oe);
    if (!oe)
        return SW_ENOMEM;
    v->oe = oe;
    v->cap = nc;
    return SW_OK;
}

static int emit(struct sw_pii_view *v, const char *b, size_t n, size_t s, size_t e)
{
    int rc = grow(v, n);
    if (rc)
        return rc;
    for (size_t i = 0; i < n; i++) {
        v->t[v->len] = b[i];
        v->os[v->len] = (uint32_t)s;
        v->oe[v->len] = (uint32_t)e;
        v->len++;
    }
    return SW_OK;
}

/* One code point of the input [s, e): folded into the view. */
static int fold(struct sw_pii_view *v, utf8proc_int32_t c, size_t s, size_t e)
{
    char b[4];
    if (c < 0x80) {
        b[0] = (char)c;
        return emit(v, b, 1, s, e);
    }
    if (space_cp(c))
        return emit(v, " ", 1, s, e);
    utf8proc_category_t cat = utf8proc_category(c);
    if (cat == UTF8PROC_CATEGORY_CF)
        return SW_OK;           /* zero-width, soft hyphen, BOM, bidi marks: removed */
    if (cat == UTF8PROC_CATEGORY_ZS)
        return emit(v, " ", 1, s, e);
    if (cat == UTF8PROC_CATEGORY_ND) {
        b[0] = (char)('0' + nd_value(c));      /* a digit of any script */
        return emit(v, b, 1, s, e);
    }
    if (dash_cp(c, cat))
        return emit(v, "-", 1, s, e);
    /* compatibility decomposition (NFKC's K): when it is all ASCII (full-width
     * forms, small/compatibility variants), the ASCII is what a reader sees */
    utf8proc_int32_t d[8];
    int last = 0;
    utf8proc_ssize_t n = utf8proc_decompose_char(c, d, 8, UTF8PROC_COMPAT | UTF8PROC_DECOMPOSE, &last);
    if (n > 0 && n <= 8) {
        bool ascii = true;
        for (utf8proc_ssize_t k = 0; k < n && ascii; k++)
            ascii = d[k] >= 0 && d[k] < 0x80;
        if (ascii) {
            char a[8];
            for (utf8proc_ssize_t k = 0; k < n; k++)
                a[k] = (char)d[k];
            return emit(v, a, (size_t)n, s, e);
        }
    }
    utf8proc_uint8_t u[4];
    utf8proc_ssize_t ul = utf8proc_encode_char(c, u);
    return emit(v, (const char *)u, (size_t)ul, s, e);
}

static int hexv(unsigned char ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    ch |= 0x20;
    return ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
}

static int hex4(const unsigned char *t, size_t len, size_t i, utf8proc_int32_t *out)
{
    if (i + 4 > len)
        return -1;
    int r = 0;
    for (int k = 0; k < 4; k++) {
        int h = hexv(t[i + k]);
        if (h < 0)
            return -1;
        r = r * 16 + h;
    }
    *out = r;
    return 0;
}

/* The end of the run of plain ASCII from i: no byte >= 0x80 and, in JSON,
 * no quote (nor, inside a string, backslash). Eight bytes at a time while
 * none of them is special. */
static size_t ascii_run(const unsigned char *t, size_t len, size_t i, int json, bool in_str)
{
    const uint64_t ones = 0x0101010101010101ull, high = 0x8080808080808080ull;
    for (; i + 8 <= len; i += 8) {
        uint64_t w;
        memcpy(&w, t + i, 8);
        uint64_t bad = w & high;
        if (json) {
            uint64_t q = w ^ (ones * '"');
            bad |= (q - ones) & ~q & high;          /* a '"' byte */
            if (in_str) {
                uint64_t b = w ^ (ones * '\\');
                bad |= (b - ones) & ~b & high;      /* a '\\' byte */
            }
        }
        if (bad)
            break;
    }
    while (i < len && t[i] < 0x80 && !(json && (t[i] == '"' || (in_str && t[i] == '\\'))))
        i++;
    return i;
}

/* A JSON string's edge, which the view writes as '\n' (never folded). */
static inline bool edge(const struct sw_pii_view *v, const unsigned char *in, size_t k)
{
    return v->t[k] == '\n' && in[v->os[k]] == '"';
}

/* The second pass over the view, in place (it only shortens it): '@'
 * written as "%40", "&#64;", "&#064;", "&#x40;" or "&commat;" becomes '@';
 * a run of blanks with tabs or one line break inside a number becomes one
 * ' ' (after a digit) or nothing (after a separator: "06-\n12345678"). A
 * number takes at most one line break this way, and a blank line ends it:
 * numbers on consecutive lines stay separate numbers ("1234\n5678\n9012"
 * reads "1234 5678\n9012"). Tabs alone do not join numbers in a table:
 * a text with tabs on two or more lines is tabular, and its tabs separate
 * cells. Each view byte keeps the input range it covers. */
static void fold_text(struct sw_pii_view *v, const unsigned char *in, size_t from)
{
    char *t = v->t;
    size_t w = from, n = v->len;
    bool broken = false;        /* the current number took a line break */
    bool tabular = false;
    const char *tab = memchr(t + from, '\t', n - from);
    if (tab) {
        const char *nl = memchr(tab, '\n', (size_t)(t + n - tab));
        tabular = nl && memchr(nl, '\t', (size_t)(t + n - nl));
    }
    for (size_t r = from; r < n;) {
        unsigned char ch = (unsigned char)t[r];
        if (ch == '%' || ch == '&') {
            size_t l = encoded_at((const unsigned char *)t, n, r);
            if (l) {
                t[w] = '@';
                v->os[w] = v->os[r];
                v->oe[w] = v->oe[r + l - 1];
                w++;
                r += l;
                broken = false;
                continue;
            }
        } else if (ws(ch) && !edge(v, in, r) && w > 0) {
            size_t j = r;
            int lines = 0;
            bool ctl = false;
            while (j < n && j - r < 16 && ws((unsigned char)t[j]) && !edge(v, in, j)) {
                lines += t[j] == '\n' || (t[j] == '\r' && (j + 1 >= n || t[j + 1] != '\n'));
                ctl |= t[j] != ' ';
                j++;
            }
            unsigned char p = (unsigned char)t[w - 1];
            /* a digit or ')' ends a group; so does an upper-case letter of an
             * IBAN's group ("NL91 ABNA\n0417 ...") */
            bool after_digit = dig(p) || p == ')' || (p >= 'A' && p <= 'Z');
            bool after_sep = (p == '-' || p == '.' || p == '/') && w >= 2 && dig((unsigned char)t[w - 2]);
            if (ctl && j < n && dig((unsigned char)t[j]) && (after_digit || after_sep) &&
                lines <= 1 && !(lines && broken) && (lines || !tabular)) {
                if (after_digit) {
                    t[w] = ' ';
                    v->os[w] = v->os[r];
                    v->oe[w] = v->oe[j - 1];
                    w++;
                }
                broken |= lines > 0;
                r = j;
                continue;
            }
            for (; r < j; r++, w++) {
                t[w] = t[r];
                v->os[w] = v->os[r];
                v->oe[w] = v->oe[r];
            }
            if (ctl)
                broken = false;
            continue;
        }
        if (!dig(ch) && ch != ' ' && ch != '-' && ch != '.' && ch != '/' && ch != '(' && ch != ')')
            broken = false;
        t[w] = t[r];
        v->os[w] = v->os[r];
        v->oe[w] = v->oe[r];
        w++;
        r++;
    }
    v->len = w;
}

int sw_pii_view_build(struct sw_pii_view *v, const char *text, size_t len, int json)
{
    const unsigned char *t = (const unsigned char *)text;
    bool in_str = false;
    int rc = SW_OK;
    memset(v, 0, sizeof *v);
    if ((rc = grow(v, len + 16)))
        return rc;
    for (size_t i = 0; i < len && !rc;) {
        unsigned char ch = t[i];
        if (json && in_str && ch == '\\' && i + 1 < len) {
            utf8proc_int32_t c;
            size_t s = i;
            switch (t[i + 1]) {
            case 'n': c = '\n'; i += 2; break;
            case 't': c = '\t'; i += 2; break;
            case 'r': c = '\r'; i += 2; break;
            case 'b': c = '\b'; i += 2; break;
            case 'f': c = '\f'; i += 2; break;
            case 'u':
                if (hex4(t, len, i + 2, &c)) {
                    c = 'u';
                    i += 2;
                    break;
                }
                i += 6;
                if (c >= 0xd800 && c < 0xdc00) {
                    utf8proc_int32_t lo;
                    if (i + 1 < len && t[i] == '\\' && t[i + 1] == 'u' && !hex4(t, len, i + 2, &lo) &&
                        lo >= 0xdc00 && lo < 0xe000) {
                        c = 0x10000 + ((c - 0xd800) << 10) + (lo - 0xdc00);
                        i += 6;
                    } else {
                        c = 0xfffd;
                    }
                } else if (c >= 0xdc00 && c < 0xe000) {
                    c = 0xfffd;
                }
                break;
            default: c = t[i + 1]; i += 2; break;     /* \" \\ \/ */
            }
            rc = fold(v, c, s, i);
            continue;
        }
        if (ch < 0x80 && !(json && (ch == '"' || (in_str && ch == '\\')))) {
            /* a run of plain ASCII: copied as it is */
            size_t j = ascii_run(t, len, i + 1, json, in_str);
            if ((rc = grow(v, j - i)))
                break;
            memcpy(v->t + v->len, t + i, j - i);
            uint32_t *os = v->os + v->len, *oe = v->oe + v->len;
            uint32_t k0 = (uint32_t)i, n = (uint32_t)(j - i), k = 0;
#ifdef __SSE2__
            /* four offsets a store: the run's bytes are i, i+1, ... */
            __m128i o = _mm_add_epi32(_mm_set1_epi32((int)k0), _mm_setr_epi32(0, 1, 2, 3));
            const __m128i four = _mm_set1_epi32(4), one = _mm_set1_epi32(1);
            for (; k + 4 <= n; k += 4) {
                _mm_storeu_si128((__m128i *)(os + k), o);
                _mm_storeu_si128((__m128i *)(oe + k), _mm_add_epi32(o, one));
                o = _mm_add_epi32(o, four);
            }
#endif
            for (; k < n; k++) {
                os[k] = k0 + k;
                oe[k] = k0 + k + 1;
            }
            v->len += j - i;
            i = j;
            continue;
        }
        if (ch < 0x80) {
            char b = (char)ch;
            if (json && ch == '"') {
                in_str = !in_str;
                b = '\n';      /* a string's edge ends any value, as a line break does */
            }
            rc = emit(v, &b, 1, i, i + 1);
            i++;
            continue;
        }
        utf8proc_int32_t c;
        utf8proc_ssize_t n = utf8proc_iterate(t + i, (utf8proc_ssize_t)(len - i), &c);
        if (n <= 0) {
            rc = emit(v, (const char *)t + i, 1, i, i + 1);    /* not UTF-8: as it is */
            i++;
            continue;
        }
        rc = fold(v, c, i, i + (size_t)n);
        i += (size_t)n;
    }
    if (rc) {
        sw_pii_view_free(v);
        return rc;
    }
    size_t from = v->len;
    static const char special[] = "%&\t\n\r";
    for (const char *sp = special; *sp; sp++) {
        const char *q = memchr(v->t, *sp, from);
        if (q)
            from = (size_t)(q - v->t);
    }
    while (from > 0 && from < v->len && v->t[from - 1] == ' ')
        from--;                 /* a blank run starts before its first tab or break */
    if (from < v->len)
        fold_text(v, t, from);
    return SW_OK;
}

void sw_pii_view_free(struct sw_pii_view *v)
{
    free(v->t);
    free(v->os);
    free(v->oe);
    memset(v, 0, sizeof *v);
}
