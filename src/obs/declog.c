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

int sw_declog_append_time(struct sw_buf *out, int64_t epoch_ms)
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
        err = sw_declog_append_time(out, e->time_ms);
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

char *sw_declog_format(const struct sw_declog_entry *e)
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

/* ---- Writer ---- */

struct sw_declog {
    int fd;
    char *path;             /* NULL: stdout */
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

struct sw_declog *sw_declog_open(const char *path)
{
    struct sw_declog *d = calloc(1, sizeof *d);
    if (!d)
        return NULL;
    if (!path || strcmp(path, "-") == 0) {
        d->fd = STDOUT_FILENO;
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
        sw_warn("decision log: cannot reopen %s: %s; keeping the old file", d->path,
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
            sw_warn("decision log: write to %s failed: %s; lines are dropped (counted) "
                    "until it works again",
                    d->path ? d->path : "stdout", strerror(e));
        d->failing = true;
        return SW_EIO;
    }
    if (d->failing)
        sw_info("decision log: writing to %s again after %llu lost lines",
                d->path ? d->path : "stdout", (unsigned long long)d->errors);
    d->failing = false;
    d->lines += n;
    return SW_OK;
}

int sw_declog_write(struct sw_declog *d, const char *line)
{
    if (!d || !line)
        return SW_EINVAL;
    size_t n = strlen(line);
    if (d->schedule) {
        bool was_empty = d->pend.len == 0;
        if (!was_empty && d->pend.len + n + 1 > SW_DECLOG_BATCH_MAX)
            sw_declog_flush(d), was_empty = true;
        if (sw_buf_append(&d->pend, line, n) == SW_OK) {
            if (sw_buf_append(&d->pend, "\n", 1) == SW_OK) {
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
    if (!r->lines) {
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
    free(r);
}

int sw_declog_ring_push(struct sw_declog_ring *r, const char *line)
{
    char *copy = strdup(line);
    if (!copy)
        return SW_ENOMEM;
    size_t slot = (r->head + r->count) % r->cap;
    if (r->count == r->cap) {
        free(r->lines[r->head]);
        r->head = (r->head + 1) % r->cap;
    } else {
        r->count++;
    }
    r->lines[slot] = copy;
    return SW_OK;
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
    char *line = sw_declog_format(e);
    if (!line)
        return SW_ENOMEM;
    int err = SW_OK;
    if (d)
        err = sw_declog_write(d, line);
    if (r) {
        int e2 = sw_declog_ring_push(r, line);
        if (!err)
            err = e2;
    }
    free(line);
    return err;
}
