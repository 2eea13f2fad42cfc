/* Normalised view of a text for detection; see view.h. */
#include "pii/view.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
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

static inline bool ws(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static inline bool dig(unsigned char c)
{
    return c >= '0' && c <= '9';
}

/* Whether the input at i starts with a decimal digit of any script. */
static bool digit_at(const unsigned char *t, size_t len, size_t i)
{
    if (i >= len)
        return false;
    if (t[i] < 0x80)
        return dig(t[i]);
    utf8proc_int32_t c;
    return utf8proc_iterate(t + i, (utf8proc_ssize_t)(len - i), &c) > 0 &&
           utf8proc_category(c) == UTF8PROC_CATEGORY_ND;
}

/* A dash, hyphen or minus sign: category Pd and the minus signs of other
 * categories (U+2212, modifier, superscript and subscript minus, the hyphen
 * bullet, the heavy minus). The view reads one as '-' next to a digit (a
 * separator inside a number: "06\u201312345678"); elsewhere it is prose
 * ("word \u2014 word") and stays as it is, so text with dashes but no
 * number next to one needs no view. */
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
        p->category == UTF8PROC_CATEGORY_ND)
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
static inline unsigned special_mask(const unsigned char *p)
{
#ifdef __SSE2__
    const __m128i pc = _mm_set1_epi8('%'), am = _mm_set1_epi8('&'), ctl = _mm_set1_epi8(0x0d),
                  z = _mm_setzero_si128();
    __m128i a = _mm_loadu_si128((const __m128i *)p);
    /* bytes <= 0x0d: (a - 0x0d, saturating) == 0; bytes >= 0x80: their sign bit */
    __m128i m = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(a, pc), _mm_cmpeq_epi8(a, am)),
                             _mm_cmpeq_epi8(_mm_subs_epu8(a, ctl), z));
    return (unsigned)_mm_movemask_epi8(_mm_or_si128(m, a));
#else
    unsigned m = 0;
    for (int k = 0; k < 16; k++)
        m |= (unsigned)(p[k] >= 0x80 || p[k] == '%' || p[k] == '&' || p[k] <= 0x0d) << k;
    return m;
#endif
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HAVE_AVX2_PATH 1
/* The same, 32 bytes a compare (checked at run time, as detect.c does). */
__attribute__((target("avx2"))) static size_t next_special_avx2(const unsigned char *t, size_t i, size_t len)
{
    const __m256i pc = _mm256_set1_epi8('%'), am = _mm256_set1_epi8('&'), ctl = _mm256_set1_epi8(0x0d),
                  z = _mm256_setzero_si256();
    for (; i + 64 <= len; i += 64) {
        __m256i a = _mm256_loadu_si256((const __m256i *)(t + i));
        __m256i b = _mm256_loadu_si256((const __m256i *)(t + i + 32));
        __m256i ma = _mm256_or_si256(_mm256_or_si256(_mm256_cmpeq_epi8(a, pc), _mm256_cmpeq_epi8(a, am)),
                                     _mm256_or_si256(_mm256_cmpeq_epi8(_mm256_subs_epu8(a, ctl), z), a));
        __m256i mb = _mm256_or_si256(_mm256_or_si256(_mm256_cmpeq_epi8(b, pc), _mm256_cmpeq_epi8(b, am)),
                                     _mm256_or_si256(_mm256_cmpeq_epi8(_mm256_subs_epu8(b, ctl), z), b));
        if (!_mm256_testz_si256(_mm256_or_si256(ma, mb), _mm256_set1_epi8((char)0x80))) {
            uint64_t m = (uint32_t)_mm256_movemask_epi8(ma) | (uint64_t)(uint32_t)_mm256_movemask_epi8(mb) << 32;
            return i + (size_t)__builtin_ctzll(m);
        }
    }
    return i;
}
#endif

static size_t next_special(const unsigned char *t, size_t i, size_t len)
{
#ifdef HAVE_AVX2_PATH
    if (len - i >= 64 && __builtin_cpu_supports("avx2")) {
        i = next_special_avx2(t, i, len);
        if (i + 64 <= len)
            return i;
    }
#endif
    for (; i + 64 <= len; i += 64) {
        unsigned a = special_mask(t + i), b = special_mask(t + i + 16), c = special_mask(t + i + 32),
                 d = special_mask(t + i + 48);
        if (a | b | c | d) {
            uint64_t m = (uint64_t)a | (uint64_t)b << 16 | (uint64_t)c << 32 | (uint64_t)d << 48;
            return i + (size_t)__builtin_ctzll(m);
        }
    }
    for (; i + 16 <= len; i += 16) {
        unsigned m = special_mask(t + i);
        if (m)
            return i + (size_t)__builtin_ctz(m);
    }
    while (i < len && t[i] < 0x80 && t[i] != '%' && t[i] != '&' && t[i] > 0x0d)
        i++;
    return i;
}


/* The digits of the number-like run (digits and " -./()") that ends at e
 * (back) or starts at s (forward), at most 24 bytes of it. */
static inline bool numch(char c)
{
    return dig((unsigned char)c) || c == ' ' || c == '\t' || c == '-' || c == '.' || c == '/' || c == '(' || c == ')';
}

static int digits_back(const char *t, size_t e)
{
    int n = 0;
    for (size_t k = e; k > 0 && e - k < 24 && numch(t[k - 1]); k--)
        n += dig((unsigned char)t[k - 1]);
    return n;
}

static int digits_fwd(const char *t, size_t len, size_t s)
{
    int n = 0;
    for (size_t k = s; k < len && k - s < 24 && numch(t[k]); k++)
        n += dig((unsigned char)t[k]);
    return n;
}

/* A break joins two parts of a number only when they have the digits of
 * one: 7 or more (the fewest of any entity but an IPv4 address). */
#define BREAK_MIN_DIGITS 7

static inline bool alnum(unsigned char c)
{
    return dig(c) || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z');
}

/* Whether a blank run between k (the end of the text before it) and j (the
 * start of the text after it) may sit between two groups of an IBAN: after
 * it 1-4 letters or digits, then no more; before it groups of four, one
 * space apart, back to the IBAN's head (two letters, two digits) with no
 * letter or digit before it, at most eight groups back. The IBAN detector
 * still checks the length and the checksum of what this joins. */
static bool iban_gap(const unsigned char *t, size_t len, size_t k, size_t j)
{
    size_t a = j;
    while (a < len && a - j < 5 && alnum(t[a]))
        a++;
    if (a == j || a - j > 4)
        return false;
    for (int g = 0; g < 8 && k >= 4; g++) {
        size_t s = k - 4;
        for (size_t x = s; x < k; x++)
            if (!alnum(t[x]))
                return false;
        if ((s == 0 || !alnum(t[s - 1])) && !dig(t[s]) && !dig(t[s + 1]) && dig(t[s + 2]) && dig(t[s + 3]))
            return true;
        if (s == 0 || t[s - 1] != ' ')
            return false;
        k = s - 1;
    }
    return false;
}

/* Whether the tab or line break at i may sit inside a number: within a run
 * of blanks after a digit (or a digit and one of ")-./", or a capital of an
 * IBAN group) and before a digit, the two sides with BREAK_MIN_DIGITS
 * digits; or between two groups of an IBAN (iban_gap()). The test
 * fold_text() makes. */
static bool break_in_number(const unsigned char *t, size_t len, size_t i)
{
    size_t k = i, j = i + 1;
    while (k > 0 && i - k < 16 && ws(t[k - 1]))
        k--;
    if (k == 0)
        return false;
    unsigned char p = t[k - 1];
    if (!(dig(p) || p == ')' || (p >= 'A' && p <= 'Z') ||
          ((p == '-' || p == '.' || p == '/') && k >= 2 && dig(t[k - 2]))))
        return false;
    while (j < len && j - i < 16 && ws(t[j]))
        j++;
    if (j < len && alnum(t[j]) && iban_gap(t, len, k, j))
        return true;
    if (j >= len || !dig(t[j]))
        return false;
    return digits_back((const char *)t, k) + digits_fwd((const char *)t, len, j) >= BREAK_MIN_DIGITS;
}

/* '@' written as "%40" or an HTML character reference: its length at i, or 0. */
static size_t encoded_at(const unsigned char *t, size_t len, size_t i)
{
    static const char *const forms[] = {"%40", "&#64;", "&#064;", "&#x40;", "&#X40;", "&commat;"};
    if (i + 3 > len || (t[i + 1] != '4' && t[i + 1] != '#' && t[i + 1] != 'c'))
        return 0;
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
        if (n <= 0 || !sw_pii_view_keeps(c) ||
            (dash_cp(c, utf8proc_category(c)) && ((i > 0 && dig(t[i - 1])) || digit_at(t, len, i + (size_t)n))))
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
static int fold(struct sw_pii_view *v, utf8proc_int32_t c, size_t s, size_t e,
                const unsigned char *in, size_t len)
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
    if (dash_cp(c, cat) && ((v->len && dig((unsigned char)v->t[v->len - 1])) || digit_at(in, len, e)))
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
 * on a row of one (table_rows()) tabs separate cells. Each view byte keeps
 * the input range it covers. */
/* The next byte of the view at or after i that fold_text() may change: '%',
 * '&', a tab, CR or LF (or any byte <= 0x0d), or n. 16 bytes a step. */
static size_t next_fold(const char *t, size_t i, size_t n)
{
#ifdef __SSE2__
    const __m128i pc = _mm_set1_epi8('%'), am = _mm_set1_epi8('&'), ctl = _mm_set1_epi8(0x0d),
                  z = _mm_setzero_si128();
    for (; i + 16 <= n; i += 16) {
        __m128i a = _mm_loadu_si128((const __m128i *)(t + i));
        __m128i m = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(a, pc), _mm_cmpeq_epi8(a, am)),
                                 _mm_cmpeq_epi8(_mm_subs_epu8(a, ctl), z));
        int bits = _mm_movemask_epi8(m);
        if (bits)
            return i + (size_t)__builtin_ctz((unsigned)bits);
    }
#endif
    while (i < n && t[i] != '%' && t[i] != '&' && (unsigned char)t[i] > 0x0d)
        i++;
    return i;
}

static void move(struct sw_pii_view *v, size_t w, size_t r, size_t k)
{
    if (w == r || k == 0)
        return;
    memmove(v->t + w, v->t + r, k);
    memmove(v->os + w, v->os + r, k * sizeof *v->os);
    memmove(v->oe + w, v->oe + r, k * sizeof *v->oe);
}

/* The rows of tables in the view from `from` on: runs of two or more
 * lines with two tabs or more each (three cells), one line break apart (not
 * a JSON string's edge), as ranges [s, e) in order. A line with tabs on its
 * own, or with one tab (a number pasted from two cells, or wrapped, one a
 * line), is none. NULL with *n_rows 0 when
 * there is none; on ENOMEM NULL with *n_rows SIZE_MAX: every line is a row. */
static size_t (*table_rows(const struct sw_pii_view *v, const unsigned char *in, size_t from, size_t *n_rows))[2]
{
    const char *t = v->t;
    size_t n = v->len, nr = 0, cap = 0, (*rows)[2] = NULL;
    size_t ls = from, ps = 0, pe = 0;
    bool prev = false;                  /* the line before had a tab and ends in a line break */
    *n_rows = 0;
    for (;;) {
        const char *nl = memchr(t + ls, '\n', n - ls);
        size_t le = nl ? (size_t)(nl - t) : n;
        const char *t1 = memchr(t + ls, '\t', le - ls);
        bool tab = t1 && memchr(t1 + 1, '\t', (size_t)(t + le - t1 - 1));
        if (tab && prev) {
            if (nr && rows[nr - 1][1] == pe) {
                rows[nr - 1][1] = le;
            } else {
                if (nr == cap) {
                    size_t (*g)[2] = realloc(rows, (cap = cap ? 2 * cap : 8) * sizeof *rows);
                    if (!g) {
                        free(rows);
                        *n_rows = SIZE_MAX;
                        return NULL;
                    }
                    rows = g;
                }
                rows[nr][0] = ps;
                rows[nr++][1] = le;
            }
        }
        if (!nl)
            break;
        prev = tab && !edge(v, in, le);
        ps = ls;
        pe = le;
        ls = le + 1;
    }
    *n_rows = nr;
    return rows;
}

static void fold_text(struct sw_pii_view *v, const unsigned char *in, size_t from, bool join)
{
    char *t = v->t;
    size_t w = from, r = from, n = v->len;
    size_t line_fold = SIZE_MAX;    /* where the last number that took a line break was written to */
    size_t n_rows = 0, row = 0, (*rows)[2] = NULL;
    if (memchr(t + from, '\t', n - from))
        rows = table_rows(v, in, from, &n_rows);
    while (r < n) {
        size_t q = next_fold(t, r, n);
        unsigned char ch = q < n ? (unsigned char)t[q] : 0;
        size_t rs = q;                  /* the blank run starts with the spaces before q */
        if (q < n && ws(ch))
            while (rs > r && t[rs - 1] == ' ')
                rs--;
        move(v, w, r, rs - r);          /* the plain bytes before it, as they are */
        w += rs - r;
        r = rs;
        if (q >= n)
            break;
        if (ch == '%' || ch == '&') {
            size_t l = encoded_at((const unsigned char *)t, n, q);
            if (l) {
                t[w] = '@';
                v->os[w] = v->os[q];
                v->oe[w] = v->oe[q + l - 1];
                w++;
                r = q + l;
                continue;
            }
        } else if (ws(ch) && !edge(v, in, q) && w > 0) {
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
            /* the number already took a line break: it reaches back to that one */
            bool broken = false;
            if (lines && line_fold != SIZE_MAX && line_fold <= w && w - line_fold <= 48) {
                size_t k = w;
                while (k > line_fold && numch(t[k - 1]))
                    k--;
                broken = k == line_fold;
            }
            /* (positions from r on are the view's before folding: rows' coordinates) */
            while (rows && row < n_rows && rows[row][1] <= r)
                row++;
            bool in_row = n_rows == SIZE_MAX || (rows && row < n_rows && rows[row][0] <= r);
            bool iban = false;
            /* (an IBAN's checksum tells its groups from a table's cells) */
            if (join && ctl && j < n && lines <= 1 && !broken &&
                (((lines || !in_row) && dig((unsigned char)t[j]) && (after_digit || after_sep) &&
                  digits_back(t, w) + digits_fwd(t, n, j) >= BREAK_MIN_DIGITS) ||
                 (iban = iban_gap((const unsigned char *)t, n, w, j)))) {
                if (after_digit || iban) {
                    t[w] = ' ';
                    v->os[w] = v->os[r];
                    v->oe[w] = v->oe[j - 1];
                    w++;
                }
                if (lines)
                    line_fold = w;
                v->joined++;
                r = j;
                continue;
            }
            move(v, w, r, j - r);
            w += j - r;
            r = j;
            continue;
        }
        move(v, w, r, q + 1 - r);       /* a byte left as it is */
        w += q + 1 - r;
        r = q + 1;
    }
    v->len = w;
    free(rows);
}

bool sw_pii_phone_key(const char *k, size_t n)
{
    static const char *const words[] = {"phone", "tel", "mobile", "mobiel", "cell", "fax",
                                        "whatsapp", "msisdn", "gsm", "sms"};
    for (size_t w = 0; w < sizeof words / sizeof *words; w++) {
        size_t wl = strlen(words[w]);
        for (size_t i = 0; i + wl <= n; i++)
            if (!strncasecmp(k + i, words[w], wl))
                return true;
    }
    return false;
}

/* In JSON text, an integer of 11 to 15 digits under a phone-named key
 * ("phone": 31612345678) starts at the returned position in [i, j): a
 * phone number that has lost its '+'. j otherwise. */
static size_t phone_int_at(const unsigned char *t, size_t len, size_t i, size_t j)
{
    size_t k = i;
    while (k < j && (t[k] == ' ' || t[k] == '\t' || t[k] == '\r' || t[k] == '\n'))
        k++;
    if (k >= j || t[k] != ':')
        return j;
    k++;
    while (k < j && (t[k] == ' ' || t[k] == '\t' || t[k] == '\r' || t[k] == '\n'))
        k++;
    size_t d = k;
    while (d < len && dig(t[d]))
        d++;
    if (d - k < 11 || d - k > 15 || d > j || (d < len && (t[d] == '.' || t[d] == 'e' || t[d] == 'E')))
        return j;
    return k;
}

/* Decodes the JSON escape at t[i] (a backslash, with t[i + 1] in bounds) into *out: the
 * position after it. A \u not followed by four hex digits is read as 'u'; a lone
 * surrogate as U+FFFD; a surrogate pair as the one code point it encodes. */
static size_t json_unescape(const unsigned char *t, size_t len, size_t i, utf8proc_int32_t *out)
{
    utf8proc_int32_t c;
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
    *out = c;
    return i;
}

/* Appends the plain ASCII bytes t[i, j) to the view as they are, each mapped to itself. */
static int copy_ascii(struct sw_pii_view *v, const unsigned char *t, size_t i, size_t j)
{
    int rc;
    if ((rc = grow(v, j - i)))
        return rc;
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
    return SW_OK;
}

/* Folds the view's text from its first '%', '&', tab or line break on (from the blank run
 * before it, if any); nothing when it has none. */
static void fold_from_special(struct sw_pii_view *v, const unsigned char *t, bool join)
{
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
        fold_text(v, t, from, join);
}

int sw_pii_view_build(struct sw_pii_view *v, const char *text, size_t len, int json)
{
    return sw_pii_view_build2(v, text, len, json, true);
}

int sw_pii_view_build2(struct sw_pii_view *v, const char *text, size_t len, int json, bool join)
{
    const unsigned char *t = (const unsigned char *)text;
    bool in_str = false, phone_key_before = false;
    size_t str_from = 0;                /* where the last string's text starts */
    int rc = SW_OK;
    memset(v, 0, sizeof *v);
    if ((rc = grow(v, len + 16)))
        return rc;
    for (size_t i = 0; i < len && !rc;) {
        unsigned char ch = t[i];
        if (json && in_str && ch == '\\' && i + 1 < len) {
            utf8proc_int32_t c;
            size_t s = i;
            i = json_unescape(t, len, i, &c);
            rc = fold(v, c, s, i, t, len);
            continue;
        }
        if (ch < 0x80 && !(json && (ch == '"' || (in_str && ch == '\\')))) {
            /* a run of plain ASCII: copied as it is */
            size_t j = ascii_run(t, len, i + 1, json, in_str), plus = SIZE_MAX;
            if (json && !in_str && phone_key_before) {
                /* the number under a phone-named key is read with a '+'
                 * before it, mapped to its first digit */
                size_t d = phone_int_at(t, len, i, j);
                if (d < j)
                    plus = j = d;
            }
            phone_key_before = false;
            if ((rc = copy_ascii(v, t, i, j)))
                break;
            i = j;
            if (plus != SIZE_MAX)
                rc = emit(v, "+", 1, plus, plus + 1);
            continue;
        }
        if (ch < 0x80) {
            char b = (char)ch;
            if (json && ch == '"') {
                if (in_str)
                    phone_key_before = sw_pii_phone_key(text + str_from, i - str_from);
                str_from = i + 1;
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
        rc = fold(v, c, i, i + (size_t)n, t, len);
        i += (size_t)n;
    }
    if (rc) {
        sw_pii_view_free(v);
        return rc;
    }
    fold_from_special(v, t, join);
    return SW_OK;
}

void sw_pii_view_free(struct sw_pii_view *v)
{
    free(v->t);
    free(v->os);
    free(v->oe);
    memset(v, 0, sizeof *v);
}
