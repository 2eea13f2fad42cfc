#include "common/sigv4.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/crypto.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"

/* ---- Dates (UTC, no clock read) ---- */

/* Howard Hinnant's days-from-civil and its inverse. */
static void civil(long long days, long long *y, int *m, int *d)
{
    days += 719468;
    long long era = (days >= 0 ? days : days - 146096) / 146097;
    long long doe = days - era * 146097;
    long long yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    long long doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    long long mp = (5 * doy + 2) / 153;
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = yoe + era * 400 + (*m <= 2);
}

static long long days_from_civil(long long y, int m, int d)
{
    y -= m <= 2;
    long long era = (y >= 0 ? y : y - 399) / 400;
    long long yoe = y - era * 400;
    long long doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    long long doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

void sw_sigv4_amz_date(long long t, char out[17])
{
    long long days = t >= 0 ? t / 86400 : (t - 86399) / 86400, sec = t - days * 86400, y;
    int m, d;
    civil(days, &y, &m, &d);
    unsigned v[6] = {(unsigned)(y < 0 ? 0 : y % 10000), (unsigned)m, (unsigned)d,
                     (unsigned)(sec / 3600), (unsigned)(sec / 60 % 60), (unsigned)(sec % 60)};
    static const int width[6] = {4, 2, 2, 2, 2, 2};
    char *o = out;
    for (int i = 0; i < 6; i++) {
        if (i == 3)
            *o++ = 'T';
        for (int k = width[i] - 1; k >= 0; k--)
            o[k] = (char)('0' + v[i] % 10), v[i] /= 10;
        o += width[i];
    }
    *o++ = 'Z';
    *o = '\0';
}

static int num(const char *s, int n)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v;
}

long long sw_sigv4_parse_date(const char *s)
{
    if (!s || strlen(s) != 16 || s[8] != 'T' || s[15] != 'Z')
        return -1;
    int y = num(s, 4), mo = num(s + 4, 2), d = num(s + 6, 2), h = num(s + 9, 2),
        mi = num(s + 11, 2), se = num(s + 13, 2);
    if (y < 0 || mo < 1 || mo > 12 || d < 1 || d > 31 || h < 0 || h > 23 || mi < 0 || mi > 59 ||
        se < 0 || se > 60)
        return -1;
    return days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se;
}

/* ---- Hashing ---- */

static void hex(const unsigned char *p, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[p[i] >> 4];
        out[2 * i + 1] = digits[p[i] & 15];
    }
    out[2 * n] = '\0';
}

static int sha256_hex(const void *p, size_t n, char out[65])
{
    unsigned char md[32];
    unsigned int len = 0;
    if (!EVP_Digest(p ? p : "", n, md, &len, EVP_sha256(), NULL) || len != 32)
        return SW_ENOMEM;
    hex(md, 32, out);
    return SW_OK;
}

static int hmac(const void *key, size_t klen, const char *msg, unsigned char out[32])
{
    unsigned int len = 0;
    if (!HMAC(EVP_sha256(), key, (int)klen, (const unsigned char *)msg, strlen(msg), out, &len) ||
        len != 32)
        return SW_ENOMEM;
    return SW_OK;
}

/* ---- Canonical forms ---- */

static bool unreserved(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
           c == '-' || c == '_' || c == '.' || c == '~';
}

int sw_sigv4_canonical_path(const char *path, struct sw_buf *out)
{
    /* the segments kept, as offsets into path */
    enum { MAX_SEG = 128 };
    size_t start[MAX_SEG], len[MAX_SEG], n = 0;
    size_t plen = strlen(path);
    for (size_t i = 0; i < plen;) {
        size_t j = i;
        while (j < plen && path[j] != '/')
            j++;
        size_t l = j - i;
        if (l == 2 && path[i] == '.' && path[i + 1] == '.') {
            if (n)
                n--;
        } else if (l && !(l == 1 && path[i] == '.')) {
            if (n == MAX_SEG)
                return SW_ETOOBIG;
            start[n] = i, len[n] = l, n++;
        }
        i = j + 1;
    }
    int err = plen && path[0] == '/' ? sw_buf_append(out, "/", 1) : SW_OK;
    for (size_t s = 0; !err && s < n; s++) {
        if (s)
            err = sw_buf_append(out, "/", 1);
        for (size_t k = 0; !err && k < len[s]; k++) {
            unsigned char c = (unsigned char)path[start[s] + k];
            err = unreserved(c) ? sw_buf_append(out, &c, 1) : sw_buf_appendf(out, "%%%02X", c);
        }
    }
    if (!err && n && plen && path[plen - 1] == '/')
        err = sw_buf_append(out, "/", 1);
    return err;
}

struct hdr {
    char name[64];
    const char *value;
};

static int by_name(const void *a, const void *b)
{
    return strcmp(((const struct hdr *)a)->name, ((const struct hdr *)b)->name);
}

/* A value as signed: trimmed, runs of white space as one space. */
static int canonical_value(struct sw_buf *out, const char *v)
{
    const char *e = v + strlen(v);
    while (v < e && (*v == ' ' || *v == '\t'))
        v++;
    while (e > v && (e[-1] == ' ' || e[-1] == '\t'))
        e--;
    int err = SW_OK;
    for (bool space = false; !err && v < e; v++) {
        bool ws = *v == ' ' || *v == '\t';
        if (ws && space)
            continue;
        space = ws;
        err = sw_buf_append(out, ws ? " " : v, 1);
    }
    return err;
}

static bool sendable(const char *s, bool name)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '\r' || c == '\n' || c == 0x7f || (c < 0x20 && c != '\t') || (name && c <= ' ') ||
            (name && c == ':'))
            return false;
    }
    return true;
}

/* The headers signed, sorted, lower-case names (hs[0..*n)). */
static int collect(const struct sw_sigv4_req *r, const struct sw_sigv4_creds *c,
                   const struct sw_sigv4_out *o, struct hdr *hs, size_t *n)
{
    const char *fixed[][2] = {{"host", r->host},
                              {"x-amz-content-sha256", o->payload_hash},
                              {"x-amz-date", o->amz_date},
                              {"x-amz-security-token", c->session_token}};
    size_t k = 0;
    for (size_t i = 0; i < 4; i++)
        if (fixed[i][1]) {
            snprintf(hs[k].name, sizeof hs[k].name, "%s", fixed[i][0]);
            hs[k++].value = fixed[i][1];
        }
    if (r->n > SW_SIGV4_MAX_HEADERS)
        return SW_EINVAL;
    for (size_t i = 0; i < r->n; i++) {
        size_t l = strlen(r->names[i]);
        if (!l || l >= sizeof hs[k].name || !sendable(r->names[i], true) ||
            !sendable(r->values[i], false))
            return SW_EINVAL;
        for (size_t j = 0; j <= l; j++) {
            char ch = r->names[i][j];
            hs[k].name[j] = ch >= 'A' && ch <= 'Z' ? (char)(ch + 32) : ch;
        }
        for (size_t j = 0; j < k; j++)
            if (!strcmp(hs[j].name, hs[k].name))
                return SW_EINVAL;
        hs[k++].value = r->values[i];
    }
    qsort(hs, k, sizeof hs[0], by_name);
    *n = k;
    return SW_OK;
}

static int canonical_request(const struct sw_sigv4_req *r, const struct hdr *hs, size_t n,
                             struct sw_sigv4_out *o, struct sw_buf *cr)
{
    int err = sw_buf_appendf(cr, "%s\n", r->method);
    if (!err)
        err = sw_sigv4_canonical_path(r->path, cr);
    if (!err)
        err = sw_buf_append(cr, "\n\n", 2);
    size_t sl = 0;
    o->signed_headers[0] = '\0';
    for (size_t i = 0; !err && i < n; i++) {
        err = sw_buf_appendf(cr, "%s:", hs[i].name);
        if (!err)
            err = canonical_value(cr, hs[i].value);
        if (!err)
            err = sw_buf_append(cr, "\n", 1);
        int w = snprintf(o->signed_headers + sl, sizeof o->signed_headers - sl, "%s%s",
                         i ? ";" : "", hs[i].name);
        if (w < 0 || (size_t)w >= sizeof o->signed_headers - sl)
            err = SW_ETOOBIG;
        else
            sl += (size_t)w;
    }
    if (!err)
        err = sw_buf_appendf(cr, "\n%s\n%s", o->signed_headers, o->payload_hash);
    return err;
}

/* The signing key: HMAC chain over date, region, service, "aws4_request". */
static int signing_key(const char *region, const char *service, const char *secret,
                       const char *date, unsigned char key[32])
{
    struct sw_buf k;
    sw_buf_init(&k, 4096);
    int err = sw_buf_appendf(&k, "AWS4%s", secret);
    unsigned char a[32], b[32];
    if (!err)
        err = hmac(k.ptr, k.len, date, a);
    if (!err)
        err = hmac(a, 32, region, b);
    if (!err)
        err = hmac(b, 32, service, a);
    if (!err)
        err = hmac(a, 32, "aws4_request", key);
    if (k.ptr)
        OPENSSL_cleanse(k.ptr, k.len);
    OPENSSL_cleanse(a, sizeof a);
    OPENSSL_cleanse(b, sizeof b);
    sw_buf_free(&k);
    return err;
}

int sw_sigv4_signature(const char *canonical, size_t len, const char *amz_date,
                       const char *region, const char *service, const char *secret,
                       char sig[65])
{
    char date[9], crh[65];
    if (!amz_date || strlen(amz_date) < 8 || !region || !service || !secret)
        return SW_EINVAL;
    memcpy(date, amz_date, 8);
    date[8] = '\0';
    struct sw_buf sts;
    sw_buf_init(&sts, 1024);
    int err = sha256_hex(canonical, len, crh);
    if (!err)
        err = sw_buf_appendf(&sts, "AWS4-HMAC-SHA256\n%s\n%s/%s/%s/aws4_request\n%s", amz_date,
                             date, region, service, crh);
    unsigned char key[32], mac[32];
    if (!err)
        err = signing_key(region, service, secret, date, key);
    if (!err)
        err = hmac(key, 32, sts.ptr, mac);
    OPENSSL_cleanse(key, sizeof key);
    if (!err)
        hex(mac, 32, sig);
    sw_buf_free(&sts);
    return err;
}

int sw_sigv4_sha256_hex(const void *p, size_t n, char out[65])
{
    return sha256_hex(p, n, out);
}

int sw_sigv4_sign(const struct sw_sigv4_req *r, const struct sw_sigv4_creds *c,
                  struct sw_sigv4_out *o, struct sw_buf *hdrs)
{
    if (!r->method || !r->host || !r->path || !r->region || !r->service || !c->access_key_id ||
        !c->secret_access_key || !sendable(r->host, false) || !sendable(c->access_key_id, false) ||
        (c->session_token && !sendable(c->session_token, false)) || strchr(r->region, '/') ||
        strchr(r->service, '/'))
        return SW_EINVAL;
    memset(o, 0, sizeof *o);
    sw_sigv4_amz_date(r->now_s, o->amz_date);
    int err = sha256_hex(r->body, r->body_len, o->payload_hash);
    struct hdr hs[SW_SIGV4_MAX_HEADERS + 4];
    size_t n = 0;
    if (!err)
        err = collect(r, c, o, hs, &n);
    struct sw_buf cr;
    sw_buf_init(&cr, 64 * 1024);
    if (!err)
        err = canonical_request(r, hs, n, o, &cr);
    char date[9];
    memcpy(date, o->amz_date, 8);
    date[8] = '\0';
    if (!err)
        err = sw_sigv4_signature(cr.ptr, cr.len, o->amz_date, r->region, r->service,
                                 c->secret_access_key, o->signature);
    if (!err && hdrs) {
        err = sw_buf_appendf(hdrs, "X-Amz-Date: %s\r\nX-Amz-Content-Sha256: %s\r\n", o->amz_date,
                             o->payload_hash);
        if (!err && c->session_token)
            err = sw_buf_appendf(hdrs, "X-Amz-Security-Token: %s\r\n", c->session_token);
        if (!err)
            err = sw_buf_appendf(hdrs,
                                 "Authorization: AWS4-HMAC-SHA256 Credential=%s/%s/%s/%s/"
                                 "aws4_request, SignedHeaders=%s, Signature=%s\r\n",
                                 c->access_key_id, date, r->region, r->service,
                                 o->signed_headers, o->signature);
    }
    sw_buf_free(&cr);
    return err;
}
