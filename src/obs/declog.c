#include "obs/declog.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/err.h"
#include "common/json.h"
#include "common/log.h"

const char *sw_declog_decision_name(enum sw_declog_decision d)
{
    return d == SW_DECLOG_REJECTED ? "rejected" : "served";
}

const char *sw_declog_outcome_name(enum sw_declog_outcome o)
{
    static const char *const names[] = {"ok", "failed", "skipped", "client_gone"};
    return (unsigned)o < sizeof names / sizeof names[0] ? names[o] : "failed";
}

/* ---- The line being formatted ----
 *
 * In the caller's buffer (on its stack) until it outgrows it, then on the
 * heap. Each field reserves room for all it may write (a string's worst
 * case: 6 bytes per input byte) with one compare, then writes without
 * further checks. */
struct line {
    char *p;
    size_t len, cap;        /* cap > len always: room for a final NUL or newline */
    bool heap;              /* p was malloc'ed here */
};

static void line_init(struct line *l, char *stack, size_t size)
{
    l->p = stack;
    l->len = 0;
    l->cap = size;
    l->heap = false;
}

static void line_free(struct line *l)
{
    if (l->heap)
        free(l->p);
}

static __attribute__((noinline)) int grow(struct line *l, size_t n)
{
    size_t cap = l->cap * 2;
    if (cap < l->len + n + 1)
        cap = l->len + n + 1;
    char *p = l->heap ? realloc(l->p, cap) : malloc(cap);
    if (!p)
        return SW_ENOMEM;
    if (!l->heap)
        memcpy(p, l->p, l->len);
    l->p = p;
    l->cap = cap;
    l->heap = true;
    return SW_OK;
}

/* The pieces of a field are inlined where the field is written, so that
 * copies of constant keys become plain stores. */
#define PIECE static inline __attribute__((always_inline))

/* Room for n more bytes (and one after them). */
PIECE int room(struct line *l, size_t n)
{
    return n < l->cap - l->len ? SW_OK : grow(l, n);
}

PIECE void put(struct line *l, const void *data, size_t n)
{
    memcpy(l->p + l->len, data, n);
    l->len += n;
}
#define PUT_LIT(l, lit) put((l), (lit), sizeof(lit) - 1)

#define TRY(x)                                                                                     \
    do {                                                                                           \
        int err_ = (x);                                                                            \
        if (err_)                                                                                  \
            return err_;                                                                           \
    } while (0)

/* ---- JSON pieces ---- */

/* Bytes a JSON string may hold as they are: printable ASCII but the quote
 * and the backslash. */
static const unsigned char plain_byte[256] = {
    [0x20] = 1, [0x21] = 1, [0x23 ... 0x5b] = 1, [0x5d ... 0x7f] = 1,
};

/* key, then s as a JSON string whose first `plain` bytes need no escape and
 * the byte after them is neither NUL nor plain. */
static __attribute__((noinline)) int put_escaped(struct line *l, const char *key, size_t klen,
                                                 const unsigned char *s, size_t plain)
{
    size_t n = plain + strnlen((const char *)s + plain, SW_DECLOG_MAX_FIELD - plain);
    TRY(room(l, klen + 2 + plain + SW_JSON_ESCAPED_MAX(n - plain)));
    char *w = l->p + l->len;
    memcpy(w, key, klen);
    w += klen;
    *w++ = '"';
    memcpy(w, s, plain);
    w += plain;
    /* Invalid UTF-8, or a character cut by the field limit, is U+FFFD. */
    w += sw_json_escape_into(w, (const char *)s + plain, n - plain,
                             SW_JSON_ESC_ALL_CTL | SW_JSON_ESC_FIX_UTF8);
    *w++ = '"';
    l->len = (size_t)(w - l->p);
    return SW_OK;
}

/* memcpy, out of line: where copy() is inlined with a string constant the
 * compiler would otherwise warn about the long branch it cannot rule out. */
static __attribute__((noinline)) void copy_long(char *w, const unsigned char *s, size_t n)
{
    memcpy(w, s, n);
}

/* Copies n bytes; a short copy (names, codes, ids) without a call. */
PIECE void copy(char *w, const unsigned char *s, size_t n)
{
    if (n <= 16 && n >= 8) {
        uint64_t a, b;
        memcpy(&a, s, 8);
        memcpy(&b, s + n - 8, 8);
        memcpy(w, &a, 8);
        memcpy(w + n - 8, &b, 8);
    } else if (n < 8 && n >= 4) {
        uint32_t a, b;
        memcpy(&a, s, 4);
        memcpy(&b, s + n - 4, 4);
        memcpy(w, &a, 4);
        memcpy(w + n - 4, &b, 4);
    } else if (n < 4) {
        if (n) {
            w[0] = (char)s[0];
            w[n / 2] = (char)s[n / 2];
            w[n - 1] = (char)s[n - 1];
        }
    } else {
        copy_long(w, s, n);
    }
}

/* key (klen bytes, may be 0), then str cut to SW_DECLOG_MAX_FIELD bytes as a
 * JSON string, or null. One pass finds both the length and whether any
 * byte needs an escape; a plain string (the usual case) is one copy. */
PIECE int put_string(struct line *l, const char *key, size_t klen, const char *str)
{
    if (!str) {
        TRY(room(l, klen + 4));
        put(l, key, klen);
        PUT_LIT(l, "null");
        return SW_OK;
    }
    const unsigned char *s = (const unsigned char *)str;
    size_t n = 0;
    /* four bytes per bound check; each byte is read only after the one
     * before it was found plain (so not the NUL) */
    while (n + 4 <= SW_DECLOG_MAX_FIELD && plain_byte[s[n]] && plain_byte[s[n + 1]] &&
           plain_byte[s[n + 2]] && plain_byte[s[n + 3]])
        n += 4;
    while (n < SW_DECLOG_MAX_FIELD && plain_byte[s[n]])
        n++;
    if (n < SW_DECLOG_MAX_FIELD && s[n] != '\0')
        return put_escaped(l, key, klen, s, n);
    TRY(room(l, klen + n + 2));
    char *w = l->p + l->len;
    memcpy(w, key, klen);
    w += klen;
    *w++ = '"';
    copy(w, s, n);
    w += n;
    *w++ = '"';
    l->len = (size_t)(w - l->p);
    return SW_OK;
}

/* The decimal digits of v, zero-padded to min_digits (at most 20), at w;
 * returns how many. What sw_fmt_u64(w, v, 10, min_digits) writes, two
 * digits at a time and without reversing. */
static size_t put_dec(char *w, uint64_t v, size_t min_digits)
{
    static const uint64_t pow10[20] = {
        1ULL, 10ULL, 100ULL, 1000ULL, 10000ULL, 100000ULL, 1000000ULL, 10000000ULL,
        100000000ULL, 1000000000ULL, 10000000000ULL, 100000000000ULL, 1000000000000ULL,
        10000000000000ULL, 100000000000000ULL, 1000000000000000ULL, 10000000000000000ULL,
        100000000000000000ULL, 1000000000000000000ULL, 10000000000000000000ULL};
    static const char pairs[] = "00010203040506070809101112131415161718192021222324252627282930"
                                "31323334353637383940414243444546474849505152535455565758596061"
                                "62636465666768697071727374757677787980818283848586878889909192"
                                "93949596979899";
    if (v < 1000 && min_digits <= 3) {     /* statuses, most counts */
        size_t n = v < 10 ? 1 : v < 100 ? 2 : 3;
        if (n < min_digits)
            n = min_digits;
        if (n == 3) {
            w[0] = (char)('0' + v / 100);
            memcpy(w + 1, pairs + v % 100 * 2, 2);
        } else if (n == 2) {
            memcpy(w, pairs + v * 2, 2);
        } else {
            w[0] = (char)('0' + v);
        }
        return n;
    }
    size_t n = 1;
    while (n < 20 && v >= pow10[n])
        n++;
    if (n < min_digits)
        n = min_digits < 20 ? min_digits : 20;
    char *p = w + n;
    while (v >= 100) {
        p -= 2;
        memcpy(p, pairs + v % 100 * 2, 2);
        v /= 100;
    }
    if (v >= 10) {
        p -= 2;
        memcpy(p, pairs + v * 2, 2);
    } else {
        *--p = (char)('0' + v);
    }
    while (p > w)
        *--p = '0';
    return n;
}

/* round(x), without a call: half away from zero, the same double for every
 * x but the sign of a zero result (which the callers drop). */
static inline double round_half_away(double x)
{
    if (!(fabs(x) < 4503599627370496.0))  /* 2^52: x is whole already */
        return x;
    double t = (double)(int64_t)x;          /* trunc(x) */
    double frac = x - t;                    /* exact */
    if (frac >= 0.5)
        t += 1;
    else if (frac <= -0.5)
        t -= 1;
    return t;
}

/* The longest text number_text writes. */
#define NUMBER_MAX 48

/* v with at most `decimals` decimals, shortest form, into w (NUMBER_MAX
 * bytes); null if not finite. Returns the length. */
static size_t number_text(char *w, double v, int decimals)
{
    if (!isfinite(v)) {
        memcpy(w, "null", 4);
        return 4;
    }
    /* 10^decimals from a table: the line's numbers have 0 to 9 decimals */
    static const uint64_t pow10_u[] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000,
                                       100000000, 1000000000};
    bool tab = decimals >= 0 && decimals <= 9;
    double scale = tab ? (double)pow10_u[decimals] : pow(10, decimals);
    double r = round_half_away(v * scale) / scale;
    if (r == 0)
        r = 0;      /* no "-0" */
    /* Exact integer arithmetic for everything a log line holds (counts,
     * milliseconds, dollars to 9 decimals): no printf on the hot path. */
    double scaled = fabs(r) * scale;
    if (scaled < 9e15) {
        uint64_t u = (uint64_t)round_half_away(scaled),
                 div = tab ? pow10_u[decimals] : (uint64_t)llround(scale);
        size_t k = 0;
        if (r < 0)
            w[k++] = '-';
        k += put_dec(w + k, u / div, 1);
        uint64_t frac = u % div;
        if (frac) {
            int digits = decimals;
            while (frac % 10 == 0) {
                frac /= 10;
                digits--;
            }
            w[k++] = '.';
            k += put_dec(w + k, frac, (size_t)digits);
        }
        return k;
    }
    if (r == floor(r) && fabs(r) < 1e15)
        return (size_t)snprintf(w, NUMBER_MAX, "%.0f", r);
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(w, NUMBER_MAX, "%.*g", prec, r);
        if (strtod(w, NULL) == r)
            break;
    }
    /* %g may choose an exponent (1e+06): valid JSON. */
    return strlen(w);
}

/* key, then v as number_text writes it, or null when not present. */
PIECE int put_number(struct line *l, const char *key, size_t klen, double v, bool present,
                      int decimals)
{
    TRY(room(l, klen + NUMBER_MAX));
    put(l, key, klen);
    if (present)
        l->len += number_text(l->p + l->len, v, decimals);
    else
        PUT_LIT(l, "null");
    return SW_OK;
}

/* key, then a count (status, tokens: a whole number, no decimals), or null
 * when not present. What number_text(v, 0) writes, without floating point
 * while v is exact in a double. */
PIECE int put_count(struct line *l, const char *key, size_t klen, long v, bool present)
{
    if (present && (v < 0 || v >= 9000000000000000L))
        return put_number(l, key, klen, (double)v, true, 0);
    TRY(room(l, klen + 24));
    put(l, key, klen);
    if (present)
        l->len += put_dec(l->p + l->len, (uint64_t)v, 1);
    else
        PUT_LIT(l, "null");
    return SW_OK;
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

/* The ISO-8601 form of epoch_ms into t (at least 64 bytes); returns the length. */
static size_t time_text(char *t, int64_t epoch_ms)
{
    int64_t ms = epoch_ms % 1000, s = epoch_ms / 1000;
    if (ms < 0) {
        ms += 1000;
        s--;
    }
    /* Lines come in the same second one after the other: its text is kept. */
    static _Thread_local int64_t last_s = INT64_MIN;
    static _Thread_local char last[20];
    if (s != last_s) {
        int64_t days = s / 86400, rem = s % 86400;
        if (rem < 0) {
            rem += 86400;
            days--;
        }
        int64_t y;
        unsigned mo, d;
        civil_from_days(days, &y, &mo, &d);
        if (y < 0 || y > 9999)
            return (size_t)snprintf(t, 64, "%04lld-%02u-%02uT%02d:%02d:%02d.%03dZ", (long long)y,
                                    mo, d, (int)(rem / 3600), (int)(rem / 60 % 60),
                                    (int)(rem % 60), (int)ms);
        char p[20] = "0000-00-00T00:00:00.";
        const unsigned v[] = {(unsigned)y, mo, d, (unsigned)(rem / 3600),
                              (unsigned)(rem / 60 % 60), (unsigned)(rem % 60)};
        const int at[] = {3, 6, 9, 12, 15, 18}; /* last digit of each field */
        for (int i = 0; i < 6; i++)
            for (unsigned x = v[i], k = (unsigned)at[i]; x; x /= 10, k--)
                p[k] = (char)('0' + x % 10);
        memcpy(last, p, sizeof last);
        last_s = s;
    }
    memcpy(t, last, sizeof last);
    t[20] = (char)('0' + ms / 100);
    t[21] = (char)('0' + ms / 10 % 10);
    t[22] = (char)('0' + ms % 10);
    t[23] = 'Z';
    return 24;
}

int sw_declog_append_time(struct sw_buf *out, int64_t epoch_ms)
{
    char t[64];
    return sw_buf_append(out, t, time_text(t, epoch_ms));
}

/* ---- Formatting ---- */

/* A member's key with its separator: ",\"name\":" as one literal. */
#define KEY(name) ",\"" name "\":"
#define STR(l, name, v) put_string((l), KEY(name), sizeof KEY(name) - 1, (v))
#define NUM(l, name, ...) put_number((l), KEY(name), sizeof KEY(name) - 1, __VA_ARGS__)
#define COUNT(l, name, ...) put_count((l), KEY(name), sizeof KEY(name) - 1, __VA_ARGS__)

static int format_attempt(struct line *l, const struct sw_declog_attempt *a, bool first)
{
    TRY(first ? put_string(l, "{\"backend\":", 11, a->backend)
              : put_string(l, ",{\"backend\":", 12, a->backend));
    TRY(STR(l, "reason", a->reason));
    TRY(STR(l, "outcome", sw_declog_outcome_name(a->outcome)));
    TRY(COUNT(l, "status", a->status, a->status > 0));
    TRY(STR(l, "error", a->error));
    TRY(NUM(l, "ttft_ms", a->ttft_ms, a->ttft_ms >= 0, 3));
    TRY(room(l, 1));
    PUT_LIT(l, "}");
    return SW_OK;
}

static int format(struct line *l, const struct sw_declog_entry *e)
{
    TRY(room(l, 64 + 10));
    PUT_LIT(l, "{\"time\":\"");
    l->len += time_text(l->p + l->len, e->time_ms);
    PUT_LIT(l, "\"");
    TRY(STR(l, "request_id", e->request_id));
    TRY(STR(l, "model", e->model));
    TRY(STR(l, "key_name", e->key_name));
    if (e->key_id) /* only with a key: lines without one keep the documented keys */
        TRY(STR(l, "key_id", e->key_id));
    /* the names of declog.c's own tables, quoted here once */
    TRY(room(l, sizeof KEY("decision") "\"rejected\""));
    if (e->decision == SW_DECLOG_REJECTED)
        PUT_LIT(l, KEY("decision") "\"rejected\"");
    else
        PUT_LIT(l, KEY("decision") "\"served\"");
    TRY(COUNT(l, "status", e->status, e->status > 0));
    TRY(STR(l, "backend", e->backend));
    TRY(STR(l, "tier", e->tier));
    TRY(STR(l, "region", e->region));
    TRY(STR(l, "reason", e->reason));
    TRY(STR(l, "code", e->code));
    TRY(room(l, sizeof KEY("attempts")));
    PUT_LIT(l, KEY("attempts") "[");
    size_t na = e->attempts ? e->n_attempts : 0;
    if (na > SW_DECLOG_MAX_ATTEMPTS)
        na = SW_DECLOG_MAX_ATTEMPTS;
    for (size_t i = 0; i < na; i++)
        TRY(format_attempt(l, &e->attempts[i], i == 0));
    TRY(room(l, 1));
    PUT_LIT(l, "]");
    TRY(NUM(l, "ttft_ms", e->ttft_ms, e->ttft_ms >= 0, 3));
    TRY(NUM(l, "duration_ms", e->duration_ms, true, 3));
    TRY(COUNT(l, "tokens_in", e->tokens_in, e->tokens_in >= 0));
    TRY(COUNT(l, "tokens_out", e->tokens_out, e->tokens_out >= 0));
    TRY(NUM(l, "cost_usd", e->cost_usd, true, 9));
    TRY(room(l, sizeof(KEY("stream") "false" KEY("pii") "{")));
    if (e->stream)
        PUT_LIT(l, KEY("stream") "true" KEY("pii") "{");
    else
        PUT_LIT(l, KEY("stream") "false" KEY("pii") "{");
    size_t np = e->pii ? e->n_pii : 0;
    if (np > SW_DECLOG_MAX_PII_TYPES)
        np = SW_DECLOG_MAX_PII_TYPES;
    for (size_t i = 0; i < np; i++) {
        TRY(put_string(l, ",", i ? 1 : 0, e->pii[i].type ? e->pii[i].type : ""));
        TRY(room(l, 24));
        PUT_LIT(l, ":");
        l->len += put_dec(l->p + l->len, e->pii[i].n, 1);
    }
    TRY(room(l, 1));
    PUT_LIT(l, "}");
    TRY(STR(l, "pii_outcome", e->pii_outcome));
    if (e->pii_allowed)
        TRY(COUNT(l, "pii_allowed", (long)e->pii_allowed, true));
    TRY(STR(l, "api", e->api ? e->api : "openai"));
    if (e->priority)
        TRY(STR(l, "priority", e->priority));
    if (e->contract)
        TRY(STR(l, "contract", e->contract));
    size_t nd = e->dropped ? e->n_dropped : 0;
    if (nd) {
        TRY(room(l, sizeof KEY("dropped") "["));
        PUT_LIT(l, KEY("dropped") "[");
        for (size_t i = 0; i < nd; i++)
            TRY(put_string(l, ",", i ? 1 : 0, e->dropped[i] ? e->dropped[i] : ""));
        TRY(room(l, 1));
        PUT_LIT(l, "]");
    }
    if (e->trace_id)
        TRY(STR(l, "trace_id", e->trace_id));
    TRY(room(l, 1));
    PUT_LIT(l, "}");
    return l->len <= SW_DECLOG_MAX_LINE ? SW_OK : SW_ETOOBIG;
}

/* A typical line fits: formatting it allocates nothing. */
#define LINE_STACK 2048

char *sw_declog_format(const struct sw_declog_entry *e)
{
    char stack[LINE_STACK];
    struct line l;
    line_init(&l, stack, sizeof stack);
    if (format(&l, e) != SW_OK) {
        line_free(&l);
        return NULL;
    }
    l.p[l.len] = '\0';
    if (l.heap)
        return l.p;     /* ownership moves to the caller */
    char *s = malloc(l.len + 1);
    if (s)
        memcpy(s, l.p, l.len + 1);
    return s;
}

/* ---- Writer ---- */

struct sw_declog {
    int fd;
    char *path;             /* NULL: stdout */
    const char *what;       /* the log's name in warnings (static) */
    uint64_t lines;
    uint64_t errors;
    bool failing;           /* the last write failed: log again only on recovery */
    void (*schedule)(void *);   /* batching on: asks the owner for a flush */
    void *schedule_ud;
    struct sw_buf pend;         /* batched lines not written yet, each ending in "\n" */
    uint64_t pend_lines;
};

static int open_append(const char *path)
{
    return open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
}

void sw_declog_name(struct sw_declog *d, const char *what)
{
    d->what = what;
}

struct sw_declog *sw_declog_open(const char *path)
{
    struct sw_declog *d = calloc(1, sizeof *d);
    if (!d)
        return NULL;
    d->what = "decision log";
    if (!path || strcmp(path, "-") == 0) {
        d->fd = STDOUT_FILENO;
        return d;
    }
    if (strcmp(path, "stderr") == 0) {
        d->fd = STDERR_FILENO;
        return d;
    }
    d->path = strdup(path);
    d->fd = d->path ? open_append(path) : -1;
    if (d->fd < 0) {
        int e = d->path ? errno : ENOMEM;
        free(d->path);
        free(d);
        errno = e;
        return NULL;
    }
    return d;
}

int sw_declog_reopen(struct sw_declog *d)
{
    if (!d || !d->path)
        return SW_OK;
    sw_declog_flush(d); /* what was logged before goes to the file it was logged to */
    int fd = open_append(d->path);
    if (fd < 0) {
        sw_warn("%s: cannot reopen %s: %s; keeping the old file", d->what, d->path,
                strerror(errno));
        return SW_EIO;
    }
    close(d->fd);
    d->fd = fd;
    return SW_OK;
}

static int write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return w < 0 ? errno : EIO;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* The outcome of writing n lines: counted, and logged when it changes. */
static int written(struct sw_declog *d, int e, uint64_t n)
{
    if (e) {
        d->errors += n;
        if (!d->failing)
            sw_warn("%s: write to %s failed: %s; lines are dropped (counted) "
                    "until it works again",
                    d->what, d->path ? d->path : "stdout", strerror(e));
        d->failing = true;
        return SW_EIO;
    }
    if (d->failing)
        sw_info("%s: writing to %s again after %llu lost lines", d->what,
                d->path ? d->path : "stdout", (unsigned long long)d->errors);
    d->failing = false;
    d->lines += n;
    return SW_OK;
}

/* Writes line (n bytes; nl: followed by a newline within the n) and a
 * newline if it has none. */
static int write_line(struct sw_declog *d, const char *line, size_t n, bool nl)
{
    size_t whole = nl ? n : n + 1;
    if (d->schedule) {
        bool was_empty = d->pend.len == 0;
        if (!was_empty && d->pend.len + whole > SW_DECLOG_BATCH_MAX)
            sw_declog_flush(d), was_empty = true;
        struct sw_buf *b = &d->pend;
        if (nl && b->ptr && n < b->cap - b->len && n <= b->max - b->len) {
            /* the usual case: room in the batch, no call to append */
            memcpy(b->ptr + b->len, line, n);
            b->len += n;
            b->ptr[b->len] = '\0';
            d->pend_lines++;
            if (b->len >= SW_DECLOG_BATCH_MAX)
                return sw_declog_flush(d);
            if (was_empty)
                d->schedule(d->schedule_ud);
            return SW_OK;
        }
        if (sw_buf_append(&d->pend, line, n) == SW_OK) {
            if (nl || sw_buf_append(&d->pend, "\n", 1) == SW_OK) {
                d->pend_lines++;
                if (d->pend.len >= SW_DECLOG_BATCH_MAX)
                    return sw_declog_flush(d);
                if (was_empty)
                    d->schedule(d->schedule_ud);
                return SW_OK;
            }
            d->pend.len -= n; /* no half line stays behind */
            d->pend.ptr[d->pend.len] = '\0';
        }
        return written(d, ENOMEM, 1);
    }
    if (nl)
        return written(d, write_all(d->fd, line, n), 1);
    char *buf = malloc(n + 1);
    int e = ENOMEM;
    if (buf) {
        memcpy(buf, line, n);
        buf[n] = '\n';
        e = write_all(d->fd, buf, n + 1);
        free(buf);
    }
    return written(d, e, 1);
}

int sw_declog_write(struct sw_declog *d, const char *line)
{
    if (!d || !line)
        return SW_EINVAL;
    return write_line(d, line, strlen(line), false);
}

void sw_declog_batch(struct sw_declog *d, void (*schedule)(void *ud), void *ud)
{
    if (!d)
        return;
    sw_declog_flush(d);
    d->schedule = schedule;
    d->schedule_ud = ud;
    /* a whole line fits whatever is buffered before it (flushed past the batch size) */
    sw_buf_init(&d->pend, SW_DECLOG_BATCH_MAX + SW_DECLOG_MAX_LINE + 1);
}

int sw_declog_flush(struct sw_declog *d)
{
    if (!d || !d->pend.len)
        return SW_OK;
    int e = write_all(d->fd, d->pend.ptr, d->pend.len);
    uint64_t n = d->pend_lines;
    d->pend_lines = 0;
    sw_buf_reset(&d->pend);
    return written(d, e, n);
}

uint64_t sw_declog_lines(const struct sw_declog *d)
{
    return d ? d->lines : 0;
}

uint64_t sw_declog_write_errors(const struct sw_declog *d)
{
    return d ? d->errors : 0;
}

void sw_declog_close(struct sw_declog *d)
{
    if (!d)
        return;
    sw_declog_flush(d);
    sw_buf_free(&d->pend);
    if (d->path)
        close(d->fd);
    free(d->path);
    free(d);
}

/* ---- Ring of the latest lines ---- */

struct sw_declog_ring {
    char **lines;       /* owned; lines[(head + i) % cap] for i < count, oldest first */
    size_t *size;       /* bytes allocated for each of lines[] (kept for the next line there) */
    size_t cap, head, count;
};

struct sw_declog_ring *sw_declog_ring_new(size_t cap)
{
    if (cap == 0)
        cap = 1;
    struct sw_declog_ring *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->lines = calloc(cap, sizeof *r->lines);
    r->size = calloc(cap, sizeof *r->size);
    if (!r->lines || !r->size) {
        free(r->lines);
        free(r->size);
        free(r);
        return NULL;
    }
    r->cap = cap;
    return r;
}

void sw_declog_ring_free(struct sw_declog_ring *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->cap; i++)
        free(r->lines[i]);
    free(r->lines);
    free(r->size);
    free(r);
}

/* Copies line (n bytes) in; a full ring's oldest line makes room, and its
 * allocation is reused when the new line fits. */
static int ring_put(struct sw_declog_ring *r, const char *line, size_t n)
{
    size_t slot = (r->head + r->count) % r->cap;    /* the oldest when full */
    char *dst = r->lines[slot];
    if (!dst || r->size[slot] < n + 1) {
        /* rounded up so that lines of similar length reuse it */
        size_t size = (n + 1 + 127) & ~(size_t)127;
        dst = malloc(size);
        if (!dst)
            return SW_ENOMEM;
        free(r->lines[slot]);
        r->lines[slot] = dst;
        r->size[slot] = size;
    }
    memcpy(dst, line, n);
    dst[n] = '\0';
    if (r->count == r->cap)
        r->head = (r->head + 1) % r->cap;
    else
        r->count++;
    return SW_OK;
}

int sw_declog_ring_push(struct sw_declog_ring *r, const char *line)
{
    return ring_put(r, line, strlen(line));
}

size_t sw_declog_ring_count(const struct sw_declog_ring *r)
{
    return r ? r->count : 0;
}

const char *sw_declog_ring_get(const struct sw_declog_ring *r, size_t i)
{
    if (!r || i >= r->count)
        return NULL;
    return r->lines[(r->head + r->count - 1 - i) % r->cap];
}

int sw_declog_ring_render(const struct sw_declog_ring *r, size_t n, struct sw_buf *out)
{
    int err = sw_buf_append(out, "{\"decisions\":[", 14);
    size_t count = sw_declog_ring_count(r);
    if (n > count)
        n = count;
    for (size_t i = 0; i < n && !err; i++) {
        if (i)
            err = sw_buf_append(out, ",", 1);
        const char *line = sw_declog_ring_get(r, i);
        if (!err)
            err = sw_buf_append(out, line, strlen(line));
    }
    return err ? err : sw_buf_append(out, "]}", 2);
}

int sw_declog_record(struct sw_declog *d, struct sw_declog_ring *r,
                     const struct sw_declog_entry *e)
{
    char stack[LINE_STACK];
    struct line l;
    /* A full ring's oldest line makes room for this one, and its allocation
     * takes the new line as it is formatted: no copy into the ring. (Should
     * formatting fail, the oldest line is gone and the ring holds one less.) */
    size_t slot = r ? (r->head + r->count) % r->cap : 0;
    bool in_ring = r && r->lines[slot];     /* set only in a full ring */
    if (in_ring) {
        l = (struct line){r->lines[slot], 0, r->size[slot], true};
        r->lines[slot] = NULL;
        r->size[slot] = 0;
        r->head = (r->head + 1) % r->cap;
        r->count--;
    } else {
        line_init(&l, stack, sizeof stack);
    }
    /* room for a newline and a NUL after the line */
    int err = format(&l, e);
    if (!err)
        err = room(&l, 1);
    if (err) {
        line_free(&l);
        return SW_ENOMEM;
    }
    if (d) {
        l.p[l.len] = '\n';
        err = write_line(d, l.p, l.len + 1, true);
    }
    l.p[l.len] = '\0';
    if (in_ring) {
        r->lines[slot] = l.p;
        r->size[slot] = l.cap;
        r->count++;
        return err;
    }
    if (r) {
        int e2 = ring_put(r, l.p, l.len);
        if (!err)
            err = e2;
    }
    line_free(&l);
    return err;
}
