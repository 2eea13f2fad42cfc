/* The decision-log formatter (src/obs/declog.c) against a reference: the
 * straightforward piece-by-piece formatter it replaced, kept here verbatim.
 * Lines must be byte for byte the same for any entry: many random entries
 * with strings holding quotes, backslashes, control bytes, valid, invalid
 * and cut UTF-8, fields longer than SW_DECLOG_MAX_FIELD, numbers NaN,
 * infinite, negative, huge, at the rounding edges; both through
 * sw_declog_format and through sw_declog_record (the ring and the file). */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/buf.h"
#include "common/err.h"
#include "obs/declog.h"

/* ---- The reference: the formatter as it was, one piece at a time ---- */

/* ---- JSON pieces ---- */

/* sw_buf_append inlined for the pieces of a line: one compare and a memcpy
 * while the buffer has room (it is sized for a typical line up front). */
static inline int put(struct sw_buf *out, const void *data, size_t n)
{
    if (out->ptr && n < out->cap - out->len && n <= out->max - out->len) {
        memcpy(out->ptr + out->len, data, n);
        out->len += n;
        out->ptr[out->len] = '\0';
        return SW_OK;
    }
    return sw_buf_append(out, data, n);
}
#define PUT_LIT(out, lit) put((out), (lit), sizeof(lit) - 1)

/* Bytes a JSON string may hold as they are: printable ASCII but the quote
 * and the backslash. */
static const unsigned char plain_byte[256] = {
    [0x20] = 1, [0x21] = 1, [0x23 ... 0x5b] = 1, [0x5d ... 0x7f] = 1,
};

/* Length of a valid UTF-8 sequence at s (at most n bytes available), 0 if invalid. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    size_t len;
    unsigned char lo = 0x80, hi = 0xBF;     /* bounds of the second byte */
    if (c >= 0xC2 && c <= 0xDF)
        len = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        if (c == 0xE0)
            lo = 0xA0;
        else if (c == 0xED)
            hi = 0x9F;                      /* no UTF-16 surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        if (c == 0xF0)
            lo = 0x90;
        else if (c == 0xF4)
            hi = 0x8F;
    } else
        return 0;
    if (n < len || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++)
        if ((s[i] & 0xC0) != 0x80)
            return 0;
    return len;
}

/* Appends s (cut to SW_DECLOG_MAX_FIELD bytes) as a JSON string, or null. */
static int append_string(struct sw_buf *out, const char *str)
{
    if (!str)
        return sw_buf_append(out, "null", 4);
    const unsigned char *s = (const unsigned char *)str;
    size_t n = strnlen(str, SW_DECLOG_MAX_FIELD);
    int err = put(out, "\"", 1);
    size_t i = 0;
    while (i < n && !err) {
        size_t run = i;
        while (run < n && plain_byte[s[run]])
            run++;
        if (run > i) {
            err = put(out, s + i, run - i);
            i = run;
            continue;
        }
        unsigned char c = s[i];
        if (c == '"' || c == '\\') {
            char esc[2] = {'\\', (char)c};
            err = sw_buf_append(out, esc, 2);
            i++;
        } else if (c < 0x20) {
            err = sw_buf_appendf(out, "\\u%04x", c);
            i++;
        } else {
            size_t len = utf8_len(s + i, n - i);
            if (len) {
                err = sw_buf_append(out, s + i, len);
                i += len;
            } else {
                /* Invalid, or a character cut by the field limit. */
                err = sw_buf_append(out, "\\ufffd", 6);
                i++;
                while (i < n && (s[i] & 0xC0) == 0x80)
                    i++;
            }
        }
    }
    return err ? err : put(out, "\"", 1);
}

/* A number with at most `decimals` decimals, shortest form; null if not finite. */
static int append_number(struct sw_buf *out, double v, int decimals)
{
    if (!isfinite(v))
        return sw_buf_append(out, "null", 4);
    /* 10^decimals from a table: the line's numbers have 0 to 9 decimals */
    static const uint64_t pow10_u[] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000,
                                       100000000, 1000000000};
    bool tab = decimals >= 0 && decimals <= 9;
    double scale = tab ? (double)pow10_u[decimals] : pow(10, decimals);
    double r = round(v * scale) / scale;
    if (r == 0)
        r = 0;      /* no "-0" */
    char tmp[48];
    /* Exact integer arithmetic for everything a log line holds (counts,
     * milliseconds, dollars to 9 decimals): no printf on the hot path. */
    double scaled = fabs(r) * scale;
    if (scaled < 9e15) {
        uint64_t u = (uint64_t)llround(scaled), div = tab ? pow10_u[decimals] : (uint64_t)llround(scale);
        size_t k = 0;
        if (r < 0)
            tmp[k++] = '-';
        k += sw_fmt_u64(tmp + k, u / div, 10, 1);
        uint64_t frac = u % div;
        if (frac) {
            int digits = decimals;
            while (frac % 10 == 0) {
                frac /= 10;
                digits--;
            }
            tmp[k++] = '.';
            k += sw_fmt_u64(tmp + k, frac, 10, digits);
        }
        return put(out, tmp, k);
    }
    if (r == floor(r) && fabs(r) < 1e15)
        return sw_buf_appendf(out, "%.0f", r);
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*g", prec, r);
        if (strtod(tmp, NULL) == r)
            break;
    }
    /* %g may choose an exponent (1e+06): valid JSON. */
    return sw_buf_append(out, tmp, strlen(tmp));
}

/* Days since 1970-01-01 -> civil date (Howard Hinnant's days_from_civil inverse). */
static void civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    unsigned doe = (unsigned)(z - era * 146097);
    unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    unsigned mp = (5 * doy + 2) / 153;
    *d = doy - (153 * mp + 2) / 5 + 1;
    *m = mp < 10 ? mp + 3 : mp - 9;
    *y = (int64_t)yoe + era * 400 + (*m <= 2);
}

static int ref_append_time(struct sw_buf *out, int64_t epoch_ms)
{
    int64_t ms = epoch_ms % 1000, s = epoch_ms / 1000;
    if (ms < 0) {
        ms += 1000;
        s--;
    }
    int64_t days = s / 86400, rem = s % 86400;
    if (rem < 0) {
        rem += 86400;
        days--;
    }
    int64_t y;
    unsigned mo, d;
    civil_from_days(days, &y, &mo, &d);
    if (y < 0 || y > 9999)
        return sw_buf_appendf(out, "%04lld-%02u-%02uT%02d:%02d:%02d.%03dZ", (long long)y, mo, d,
                              (int)(rem / 3600), (int)(rem / 60 % 60), (int)(rem % 60), (int)ms);
    char t[24] = "0000-00-00T00:00:00.000Z";
    const unsigned v[] = {(unsigned)y, mo, d, (unsigned)(rem / 3600), (unsigned)(rem / 60 % 60),
                          (unsigned)(rem % 60), (unsigned)ms};
    const int at[] = {3, 6, 9, 12, 15, 18, 22}; /* last digit of each field */
    for (int i = 0; i < 7; i++)
        for (unsigned x = v[i], k = (unsigned)at[i]; x; x /= 10, k--)
            t[k] = (char)('0' + x % 10);
    return sw_buf_append(out, t, sizeof t);
}

/* ---- Formatting ---- */

/* A member's key with its separator: ",\"name\":" as one literal. */
#define KEY(name) ",\"" name "\":"

static int field_str(struct sw_buf *out, const char *k, size_t klen, const char *v)
{
    int err = put(out, k, klen);
    return err ? err : append_string(out, v);
}

static int field_num(struct sw_buf *out, const char *k, size_t klen, double v, int decimals)
{
    int err = put(out, k, klen);
    return err ? err : append_number(out, v, decimals);
}

static int field_opt(struct sw_buf *out, const char *k, size_t klen, double v, bool present,
                     int decimals)
{
    int err = put(out, k, klen);
    if (err)
        return err;
    return present ? append_number(out, v, decimals) : PUT_LIT(out, "null");
}

#define FIELD_STR(out, name, v) field_str((out), KEY(name), sizeof KEY(name) - 1, (v))
#define FIELD_NUM(out, name, ...) field_num((out), KEY(name), sizeof KEY(name) - 1, __VA_ARGS__)
#define FIELD_OPT(out, name, ...) field_opt((out), KEY(name), sizeof KEY(name) - 1, __VA_ARGS__)

static int format_attempt(struct sw_buf *out, const struct sw_declog_attempt *a)
{
    int err = PUT_LIT(out, "\"backend\":");
    if (!err)
        err = append_string(out, a->backend);
    if (!err)
        err = FIELD_STR(out, "reason", a->reason);
    if (!err)
        err = FIELD_STR(out, "outcome", sw_declog_outcome_name(a->outcome));
    if (!err)
        err = FIELD_OPT(out, "status", a->status, a->status > 0, 0);
    if (!err)
        err = FIELD_STR(out, "error", a->error);
    if (!err)
        err = FIELD_OPT(out, "ttft_ms", a->ttft_ms, a->ttft_ms >= 0, 3);
    return err;
}

static int format(struct sw_buf *out, const struct sw_declog_entry *e)
{
    int err = PUT_LIT(out, "{\"time\":\"");
    if (!err)
        err = ref_append_time(out, e->time_ms);
    if (!err)
        err = PUT_LIT(out, "\"");
    if (!err)
        err = FIELD_STR(out, "request_id", e->request_id);
    if (!err)
        err = FIELD_STR(out, "model", e->model);
    if (!err)
        err = FIELD_STR(out, "key_name", e->key_name);
    if (!err)
        err = FIELD_STR(out, "decision", sw_declog_decision_name(e->decision));
    if (!err)
        err = FIELD_OPT(out, "status", e->status, e->status > 0, 0);
    if (!err)
        err = FIELD_STR(out, "backend", e->backend);
    if (!err)
        err = FIELD_STR(out, "tier", e->tier);
    if (!err)
        err = FIELD_STR(out, "region", e->region);
    if (!err)
        err = FIELD_STR(out, "reason", e->reason);
    if (!err)
        err = FIELD_STR(out, "code", e->code);
    if (!err)
        err = PUT_LIT(out, KEY("attempts") "[");
    size_t na = e->attempts ? e->n_attempts : 0;
    if (na > SW_DECLOG_MAX_ATTEMPTS)
        na = SW_DECLOG_MAX_ATTEMPTS;
    for (size_t i = 0; i < na && !err; i++) {
        err = i ? PUT_LIT(out, ",{") : PUT_LIT(out, "{");
        if (!err)
            err = format_attempt(out, &e->attempts[i]);
        if (!err)
            err = PUT_LIT(out, "}");
    }
    if (!err)
        err = PUT_LIT(out, "]");
    if (!err)
        err = FIELD_OPT(out, "ttft_ms", e->ttft_ms, e->ttft_ms >= 0, 3);
    if (!err)
        err = FIELD_NUM(out, "duration_ms", e->duration_ms, 3);
    if (!err)
        err = FIELD_OPT(out, "tokens_in", (double)e->tokens_in, e->tokens_in >= 0, 0);
    if (!err)
        err = FIELD_OPT(out, "tokens_out", (double)e->tokens_out, e->tokens_out >= 0, 0);
    if (!err)
        err = FIELD_NUM(out, "cost_usd", e->cost_usd, 9);
    if (!err)
        err = e->stream ? PUT_LIT(out, KEY("stream") "true" KEY("pii") "{")
                        : PUT_LIT(out, KEY("stream") "false" KEY("pii") "{");
    size_t np = e->pii ? e->n_pii : 0;
    if (np > SW_DECLOG_MAX_PII_TYPES)
        np = SW_DECLOG_MAX_PII_TYPES;
    for (size_t i = 0; i < np && !err; i++) {
        if (i)
            err = PUT_LIT(out, ",");
        if (!err)
            err = append_string(out, e->pii[i].type ? e->pii[i].type : "");
        if (!err)
            err = PUT_LIT(out, ":");
        if (!err)
            err = sw_buf_append_u64(out, e->pii[i].n, 1);
    }
    if (!err)
        err = PUT_LIT(out, "}");
    if (!err)
        err = FIELD_STR(out, "pii_outcome", e->pii_outcome);
    if (!err)
        err = FIELD_STR(out, "api", e->api ? e->api : "openai");
    if (!err && e->priority)
        err = FIELD_STR(out, "priority", e->priority);
    if (!err && e->contract)
        err = FIELD_STR(out, "contract", e->contract);
    if (!err)
        err = PUT_LIT(out, "}");
    return err;
}

static char *ref_format(const struct sw_declog_entry *e)
{
    struct sw_buf b;
    sw_buf_init(&b, SW_DECLOG_MAX_LINE);
    /* Room for a typical line at once: the pieces then go in without growing. */
    if ((b.ptr = malloc(1024)) != NULL) {
        b.cap = 1024;
        b.ptr[0] = '\0';
    }
    if (format(&b, e) != SW_OK) {
        sw_buf_free(&b);
        return NULL;
    }
    return b.ptr;   /* ownership moves to the caller */
}

/* ---- Random entries ---- */

static uint64_t rng_state;

static uint64_t rnd(void)
{
    /* splitmix64: the same sequence on every run */
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static size_t below(size_t n)
{
    return (size_t)(rnd() % n);
}

/* Strings of one entry live in one arena, reset per entry. */
static char arena[64 * 1024];
static size_t arena_used;

static const char *const pieces[] = {
    "a", "edge-1", "gpt-4o", " ", "\"", "\\", "\n", "\t", "\x01", "\x1f", "\x7f", "/",
    "caf\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80", "\xff", "\xfe", "\xc3", "\xe2\x82",
    "\xf0\x9f\x98", "\xed\xa0\x80", "\xc0\xaf", "\xe0\x80\xaf", "\xf4\x90\x80\x80", "\x80",
    "\xbf", "\xf5\x80\x80\x80", "x\"y\\z", "\xc2\xa0",
};

static const char *rand_string(void)
{
    size_t kind = below(10);
    if (kind == 0)
        return NULL;
    if (arena_used + 1200 > sizeof arena)
        return "overflow";
    char *s = arena + arena_used;
    size_t n = 0;
    if (kind == 1) {
        /* empty */
    } else if (kind <= 4) {
        /* plain ASCII, sometimes long enough to be cut */
        size_t len = below(4) == 0 ? 200 + below(400) : below(40);
        for (size_t i = 0; i < len; i++)
            s[n++] = (char)(0x20 + below(0x5f));
    } else if (kind <= 7) {
        /* pieces: escapes, control bytes, valid and invalid UTF-8 */
        size_t k = below(4) == 0 ? 100 + below(200) : 1 + below(12);
        for (size_t i = 0; i < k && n < 1000; i++) {
            const char *p = pieces[below(sizeof pieces / sizeof pieces[0])];
            size_t pl = strlen(p);
            memcpy(s + n, p, pl);
            n += pl;
        }
    } else if (kind == 8) {
        /* a multi-byte character across the cut at SW_DECLOG_MAX_FIELD */
        const char *p = pieces[12 + below(3)];
        size_t pl = strlen(p), at = SW_DECLOG_MAX_FIELD - below(pl + 1);
        memset(s, 'x', at);
        n = at;
        memcpy(s + n, p, pl);
        n += pl;
        s[n++] = 'y';
    } else {
        /* random bytes */
        size_t len = below(300);
        for (size_t i = 0; i < len; i++)
            s[n++] = (char)(1 + below(255));
    }
    s[n] = '\0';
    arena_used += n + 1;
    return s;
}

static double rand_double(void)
{
    static const double special[] = {
        0.0, -0.0, 0.0004, 0.0005, 0.0015, -0.0005, 1e-10, 0.9999995, 1.0005, 2.5, -2.5,
        8999999999999.999, 9e12, 9e15, 9.007199254740993e15, 1e15, 999999999999999.9, 1e300,
        -1e300, 1.7976931348623157e308, 4.9e-324, 123456.789012345, 1e21, -1,
    };
    switch (below(8)) {
    case 0:
        return NAN;
    case 1:
        return below(2) ? INFINITY : -INFINITY;
    case 2:
    case 3:
        return special[below(sizeof special / sizeof special[0])];
    case 4: {
        double v;
        uint64_t bits = rnd();
        memcpy(&v, &bits, sizeof v);        /* any bit pattern */
        return v;
    }
    case 5:
        return (double)(int64_t)rnd() / (double)(1 + below(1000000));
    default:
        return (double)below(100000) / 1000.0 * (below(5) ? 1 : -1);
    }
}

static long rand_long(void)
{
    static const long special[] = {-1, 0, 1, 9000000000000000L - 1, 9000000000000000L,
                                   9007199254740993L, LONG_MAX, LONG_MIN, -5};
    if (below(3) == 0)
        return special[below(sizeof special / sizeof special[0])];
    return below(2) ? (long)below(100000) : (long)rnd();
}

static int rand_int(void)
{
    static const int special[] = {0, -1, 200, 499, 503, INT_MAX, INT_MIN};
    return below(2) ? special[below(sizeof special / sizeof special[0])] : (int)rnd();
}

static int64_t rand_time(int64_t prev)
{
    switch (below(5)) {
    case 0:
        return prev + (int64_t)below(2000);         /* the same second, or the next */
    case 1:
        return prev - (int64_t)below(2000);
    case 2:
        return (int64_t)(rnd() % 4102444800000ULL);    /* 1970 to 2100 */
    case 3:
        return -(int64_t)below(100000000000LL);
    default:
        return (int64_t)(rnd() >> below(64)) * (below(2) ? 1 : -1);  /* years past 9999, before 0 */
    }
}

struct rand_entry {
    struct sw_declog_entry e;
    struct sw_declog_attempt att[SW_DECLOG_MAX_ATTEMPTS + 4];
    struct sw_declog_pii pii[SW_DECLOG_MAX_PII_TYPES + 8];
};

static void rand_entry(struct rand_entry *r, int64_t prev_time)
{
    arena_used = 0;
    memset(r, 0, sizeof *r);
    struct sw_declog_entry *e = &r->e;
    e->request_id = rand_string();
    e->time_ms = rand_time(prev_time);
    e->model = rand_string();
    e->key_name = rand_string();
    e->decision = below(2) ? SW_DECLOG_SERVED : SW_DECLOG_REJECTED;
    e->status = rand_int();
    e->backend = rand_string();
    e->tier = rand_string();
    e->region = rand_string();
    e->reason = rand_string();
    e->code = rand_string();
    size_t na = below(4) == 0 ? below(SW_DECLOG_MAX_ATTEMPTS + 4) : below(3);
    for (size_t i = 0; i < na; i++) {
        r->att[i] = (struct sw_declog_attempt){
            .backend = rand_string(),
            .reason = rand_string(),
            .outcome = (enum sw_declog_outcome)below(5),
            .status = rand_int(),
            .error = rand_string(),
            .ttft_ms = rand_double(),
        };
    }
    e->attempts = below(10) ? r->att : NULL;
    e->n_attempts = na;
    e->ttft_ms = rand_double();
    e->duration_ms = rand_double();
    e->tokens_in = rand_long();
    e->tokens_out = rand_long();
    e->cost_usd = rand_double();
    e->stream = below(2);
    size_t np = below(4) == 0 ? below(SW_DECLOG_MAX_PII_TYPES + 8) : below(3);
    for (size_t i = 0; i < np; i++)
        r->pii[i] = (struct sw_declog_pii){rand_string(),
                                           below(3) ? below(100) : (unsigned long)rnd()};
    e->pii = below(10) ? r->pii : NULL;
    e->n_pii = np;
    e->pii_outcome = rand_string();
    e->api = rand_string();
    e->contract = rand_string();
    e->priority = rand_string();
}

/* Where two lines first differ, for the failure message. */
static size_t first_diff(const char *a, const char *b)
{
    size_t i = 0;
    while (a[i] && a[i] == b[i])
        i++;
    return i;
}

/* Up to 80 bytes of s from 20 before at (s has at least `at` bytes). */
static const char *around(const char *s, size_t at, char *out)
{
    size_t from = at > 20 ? at - 20 : 0;
    snprintf(out, 81, "%s", s + from);
    return out;
}

#define FAIL_DIFF(what, round, want, got)                                                         \
    do {                                                                                           \
        size_t at_ = first_diff((want), (got));                                                    \
        char a_[81], b_[81];                                                                       \
        fail_msg("round %d: %s differs at byte %zu\nwant ...%s\ngot  ...%s", (round), (what),      \
                 at_, around((want), at_, a_), around((got), at_, b_));                            \
    } while (0)

#define ROUNDS 20000

static void test_format_matches_reference(void **state)
{
    (void)state;
    rng_state = 0x5eed;
    struct rand_entry *r = malloc(sizeof *r);
    assert_non_null(r);
    int64_t prev = 1764486062123;
    for (int round = 0; round < ROUNDS; round++) {
        rand_entry(r, prev);
        prev = r->e.time_ms;
        char *want = ref_format(&r->e), *got = sw_declog_format(&r->e);
        assert_non_null(want);
        assert_non_null(got);
        if (strcmp(want, got) != 0)
            FAIL_DIFF("line", round, want, got);
        free(want);
        free(got);
    }
    free(r);
}

/* The time alone, over many seconds in a row and jumps back and forth. */
static void test_time_matches_reference(void **state)
{
    (void)state;
    rng_state = 0x71e;
    int64_t t = 1764486062123;
    struct sw_buf a, b;
    sw_buf_init(&a, 128);
    sw_buf_init(&b, 128);
    for (int i = 0; i < 200000; i++) {
        t = i % 1000 == 0 ? rand_time(t) : t + (int64_t)below(700);
        sw_buf_reset(&a);
        sw_buf_reset(&b);
        assert_int_equal(ref_append_time(&a, t), SW_OK);
        assert_int_equal(sw_declog_append_time(&b, t), SW_OK);
        if (strcmp(a.ptr, b.ptr) != 0)
            fail_msg("time %lld: want %s got %s", (long long)t, a.ptr, b.ptr);
    }
    sw_buf_free(&a);
    sw_buf_free(&b);
}

/* sw_declog_record keeps and writes exactly the reference's line. */
static void test_record_matches_reference(void **state)
{
    (void)state;
    rng_state = 0xdec;
    char path[] = "/tmp/sw-declog-ref-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    struct sw_declog *d = sw_declog_open(path);
    assert_non_null(d);
    enum { RING = 7 };
    struct sw_declog_ring *ring = sw_declog_ring_new(RING);
    char *last[RING] = {0};     /* the reference's last lines, as the ring should hold them */
    struct rand_entry *r = malloc(sizeof *r);
    struct sw_buf expect;
    sw_buf_init(&expect, 1 << 30);
    int64_t prev = 1764486062123;
    for (int round = 0; round < 2000; round++) {
        rand_entry(r, prev);
        prev = r->e.time_ms;
        char *want = ref_format(&r->e);
        assert_int_equal(sw_declog_record(d, ring, &r->e), SW_OK);
        assert_int_equal(sw_buf_append_str(&expect, want), SW_OK);
        assert_int_equal(sw_buf_append(&expect, "\n", 1), SW_OK);
        /* the ring: this line, and the older ones untouched */
        free(last[round % RING]);
        last[round % RING] = want;
        size_t kept = sw_declog_ring_count(ring);
        assert_int_equal(kept, round + 1 < RING ? (size_t)round + 1 : RING);
        for (size_t i = 0; i < kept; i++) {
            const char *w = last[(size_t)(round + RING - (int)i) % RING];
            const char *got = sw_declog_ring_get(ring, i);
            if (strcmp(w, got) != 0)
                FAIL_DIFF("ring line", round, w, got);
        }
    }
    for (size_t i = 0; i < RING; i++)
        free(last[i]);
    sw_declog_close(d);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char *got = malloc(expect.len + 2);
    size_t n = fread(got, 1, expect.len + 1, f);
    fclose(f);
    got[n] = '\0';
    assert_int_equal(n, expect.len);
    assert_true(memcmp(got, expect.ptr, n) == 0);
    free(got);
    sw_buf_free(&expect);
    free(r);
    sw_declog_ring_free(ring);
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_format_matches_reference),
        cmocka_unit_test(test_time_matches_reference),
        cmocka_unit_test(test_record_matches_reference),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
