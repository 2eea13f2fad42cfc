#include "obs/tracectx.h"

#include <string.h>

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1; /* upper case is invalid in both headers */
}

/* n bytes from 2n lower-case hex digits at s; false on any other byte. */
static bool unhex(const char *s, uint8_t *out, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int hi = hexval(s[2 * i]), lo = hexval(s[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return false;
        out[i] = (uint8_t)(hi << 4 | lo);
    }
    return true;
}

static bool ows(char c)
{
    return c == ' ' || c == '\t';
}

bool sw_traceparent_parse(const char *s, size_t len, struct sw_traceparent *out)
{
    while (len && ows(*s))
        s++, len--;
    while (len && ows(s[len - 1]))
        len--;
    if (len < SW_TRACEPARENT_LEN)
        return false;
    uint8_t version;
    if (!unhex(s, &version, 1) || version == 0xff)
        return false;
    if (version == 0 && len != SW_TRACEPARENT_LEN)
        return false;
    if (len > SW_TRACEPARENT_LEN && s[SW_TRACEPARENT_LEN] != '-')
        return false;
    if (s[2] != '-' || s[35] != '-' || s[52] != '-')
        return false;
    struct sw_traceparent t;
    if (!unhex(s + 3, t.trace_id, SW_TRACE_ID_LEN) || !unhex(s + 36, t.parent_id, SW_SPAN_ID_LEN) ||
        !unhex(s + 53, &t.flags, 1))
        return false;
    if (sw_trace_id_zero(t.trace_id, SW_TRACE_ID_LEN) ||
        sw_trace_id_zero(t.parent_id, SW_SPAN_ID_LEN))
        return false;
    *out = t;
    return true;
}

/* The two lower-case hex digits of every byte value, one lookup per byte. */
static const char hex_pairs[513] =
        "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
        "202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f"
        "404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f"
        "606162636465666768696a6b6c6d6e6f707172737475767778797a7b7c7d7e7f"
        "808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f"
        "a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebf"
        "c0c1c2c3c4c5c6c7c8c9cacbcccdcecfd0d1d2d3d4d5d6d7d8d9dadbdcdddedf"
        "e0e1e2e3e4e5e6e7e8e9eaebecedeeeff0f1f2f3f4f5f6f7f8f9fafbfcfdfeff";

void sw_trace_hex(const uint8_t *b, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++)
        memcpy(out + 2 * i, hex_pairs + 2 * b[i], 2);
    out[2 * n] = '\0';
}

void sw_traceparent_format(const uint8_t trace_id[SW_TRACE_ID_LEN],
                           const uint8_t span_id[SW_SPAN_ID_LEN], uint8_t flags, char *out)
{
    out[0] = '0';
    out[1] = '0';
    out[2] = '-';
    sw_trace_hex(trace_id, SW_TRACE_ID_LEN, out + 3);
    out[35] = '-';
    sw_trace_hex(span_id, SW_SPAN_ID_LEN, out + 36);
    out[52] = '-';
    sw_trace_hex(&flags, 1, out + 53);
}

bool sw_trace_id_zero(const uint8_t *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (b[i])
            return false;
    return true;
}

/* ---- tracestate ---- */

static bool lcalpha(char c)
{
    return c >= 'a' && c <= 'z';
}

static bool key_char(char c)
{
    return lcalpha(c) || (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '*' || c == '/';
}

/* key = simple-key / tenant-id "@" system-id */
static bool key_ok(const char *k, size_t n)
{
    const char *at = memchr(k, '@', n);
    if (!at) {
        if (n < 1 || n > 256 || !lcalpha(k[0]))
            return false;
        for (size_t i = 1; i < n; i++)
            if (!key_char(k[i]))
                return false;
        return true;
    }
    size_t tn = (size_t)(at - k), sn = n - tn - 1;
    if (tn < 1 || tn > 241 || sn < 1 || sn > 14)
        return false;
    if (!lcalpha(k[0]) && !(k[0] >= '0' && k[0] <= '9'))
        return false;
    for (size_t i = 1; i < tn; i++)
        if (!key_char(k[i]))
            return false;
    if (!lcalpha(at[1]))
        return false;
    for (size_t i = 1; i < sn; i++)
        if (!key_char(at[1 + i]))
            return false;
    return true;
}

/* value = 0*255(chr) nblk-chr; chr = %x20 / nblk-chr; nblk-chr = %x21-2B / %x2D-3C / %x3E-7E */
static bool value_ok(const char *v, size_t n)
{
    if (n < 1 || n > 256 || v[n - 1] == ' ')
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)v[i];
        if (c < 0x20 || c > 0x7e || c == ',' || c == '=')
            return false;
    }
    return true;
}

struct member {
    const char *key;
    size_t key_len;
};

bool sw_tracestate_parse(const char *s, size_t len, char *out, size_t cap)
{
    struct member seen[SW_TRACESTATE_MAX_MEMBERS];
    size_t n_seen = 0, used = 0;
    if (cap < 1)
        return false;
    out[0] = '\0';
    size_t i = 0;
    while (i <= len) {
        size_t end = i;
        while (end < len && s[end] != ',')
            end++;
        size_t a = i, b = end;
        while (a < b && ows(s[a]))
            a++;
        while (b > a && ows(s[b - 1]))
            b--;
        i = end + 1;
        if (a == b)
            continue; /* an empty member is allowed and dropped */
        const char *eq = memchr(s + a, '=', b - a);
        if (!eq)
            goto bad;
        size_t kl = (size_t)(eq - (s + a)), vl = b - a - kl - 1;
        if (!key_ok(s + a, kl) || !value_ok(eq + 1, vl))
            goto bad;
        for (size_t k = 0; k < n_seen; k++)
            if (seen[k].key_len == kl && !memcmp(seen[k].key, s + a, kl))
                goto bad;
        if (n_seen == SW_TRACESTATE_MAX_MEMBERS)
            goto bad;
        seen[n_seen++] = (struct member){s + a, kl};
        size_t add = (used ? 1 : 0) + (b - a);
        if (used + add > SW_TRACESTATE_MAX || used + add + 1 > cap)
            goto bad;
        if (used)
            out[used++] = ',';
        memcpy(out + used, s + a, b - a);
        used += b - a;
        out[used] = '\0';
    }
    return true;
bad:
    out[0] = '\0';
    return false;
}

/* ---- Sampling ---- */

bool sw_trace_sampled(const uint8_t trace_id[SW_TRACE_ID_LEN], double ratio, bool has_parent,
                      uint8_t parent_flags)
{
    if (has_parent)
        return (parent_flags & SW_TRACE_FLAG_SAMPLED) != 0;
    if (!(ratio > 0))
        return false;
    if (ratio >= 1)
        return true;
    uint64_t r = 0;
    for (size_t i = SW_TRACE_ID_LEN - 7; i < SW_TRACE_ID_LEN; i++)
        r = r << 8 | trace_id[i];
    double threshold = ratio * (double)(UINT64_C(1) << 56);
    return (double)r < threshold;
}
