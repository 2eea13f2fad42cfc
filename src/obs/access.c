/* The access log: see access.h. */
#include "obs/access.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/json.h"
#include "obs/declog.h"

static size_t cut(const char *s)
{
    size_t n = strlen(s);
    return n > SW_ACCESS_MAX_FIELD ? SW_ACCESS_MAX_FIELD : n;
}

static int json_field(struct sw_buf *b, const char *name, const char *v, bool first)
{
    int err = sw_buf_appendf(b, "%s\"%s\":", first ? "" : ",", name);
    if (err)
        return err;
    if (!v)
        return sw_buf_append(b, "null", 4);
    err = sw_buf_append(b, "\"", 1);
    if (!err)
        err = sw_json_escape(b, v, cut(v), SW_JSON_ESC_ALL_CTL | SW_JSON_ESC_FIX_UTF8);
    if (!err)
        err = sw_buf_append(b, "\"", 1);
    return err;
}

/* A field of the combined format: "-" for none, else the bytes with
 * anything but printable ASCII other than '"' and '\' as '?'. */
static int plain(struct sw_buf *b, const char *v)
{
    if (!v || !*v)
        return sw_buf_append(b, "-", 1);
    char t[SW_ACCESS_MAX_FIELD];
    size_t n = cut(v);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)v[i];
        t[i] = c > 0x20 && c < 0x7f && c != '"' && c != '\\' ? (char)c : '?';
    }
    return sw_buf_append(b, t, n);
}

/* Days since 1970-01-01 to a civil date (proleptic Gregorian). */
static void civil(int64_t days, int *y, int *m, int *d)
{
    days += 719468;
    int64_t era = (days >= 0 ? days : days - 146096) / 146097;
    int64_t doe = days - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = (int)(yoe + era * 400 + (*m <= 2));
}

static int combined(struct sw_buf *b, const struct sw_access_entry *e)
{
    static const char *const mon[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                      "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    int64_t s = e->time_ms >= 0 ? e->time_ms / 1000 : 0;
    int y, m, d;
    civil(s / 86400, &y, &m, &d);
    int64_t sod = s % 86400;
    int err = plain(b, e->client);
    if (!err)
        err = sw_buf_append(b, " - ", 3);
    if (!err)
        err = plain(b, e->key_name);
    if (!err)
        err = sw_buf_appendf(b, " [%02d/%s/%04d:%02d:%02d:%02d +0000] \"", d, mon[m - 1], y,
                             (int)(sod / 3600), (int)(sod / 60 % 60), (int)(sod % 60));
    if (!err)
        err = plain(b, e->method);
    if (!err)
        err = sw_buf_append(b, " ", 1);
    if (!err)
        err = plain(b, e->path);
    if (!err)
        err = sw_buf_appendf(b, " HTTP/1.1\" %d %llu \"-\" \"-\" rid=", e->status,
                             (unsigned long long)e->bytes_out);
    if (!err)
        err = plain(b, e->request_id);
    if (!err)
        err = sw_buf_appendf(b, " in=%llu dur_ms=%.1f backend=",
                             (unsigned long long)e->bytes_in, e->duration_ms);
    if (!err)
        err = plain(b, e->backend);
    if (!err)
        err = sw_buf_append(b, " reason=", 8);
    if (!err)
        err = plain(b, e->reason);
    return err;
}

int sw_access_format(struct sw_buf *out, const struct sw_access_entry *e,
                     enum sw_access_format f)
{
    if (f == SW_ACCESS_COMBINED)
        return combined(out, e);
    int err = sw_buf_append(out, "{\"time\":\"", 9);
    if (!err)
        err = sw_declog_append_time(out, e->time_ms);
    if (!err)
        err = sw_buf_append(out, "\"", 1);
    if (!err)
        err = json_field(out, "request_id", e->request_id, false);
    if (!err)
        err = json_field(out, "client", e->client, false);
    if (!err)
        err = json_field(out, "method", e->method, false);
    if (!err)
        err = json_field(out, "path", e->path, false);
    if (!err)
        err = sw_buf_appendf(out, ",\"status\":%d,\"bytes_in\":%llu,\"bytes_out\":%llu,"
                             "\"duration_ms\":%.1f", e->status, (unsigned long long)e->bytes_in,
                             (unsigned long long)e->bytes_out,
                             e->duration_ms >= 0 ? e->duration_ms : 0);
    if (!err)
        err = json_field(out, "backend", e->backend, false);
    if (!err)
        err = json_field(out, "reason", e->reason, false);
    if (!err)
        err = json_field(out, "key", e->key_name, false);
    if (!err)
        err = sw_buf_append(out, "}", 1);
    return err;
}

/* path is prefix itself or below it (prefix followed by '/'). */
static bool under(const char *path, const char *prefix)
{
    size_t n = strlen(prefix);
    return !strncmp(path, prefix, n) && (path[n] == '\0' || path[n] == '/');
}

const char *sw_access_path_class(const char *path)
{
    if (!path)
        return "unknown";
    if (under(path, "/v1/models"))
        return "models";
    if (under(path, "/v1"))
        return "api";
    if (under(path, "/admin"))
        return "admin";
    if (!strcmp(path, "/healthz") || !strcmp(path, "/metrics") || under(path, "/dashboard"))
        return "ops";
    return "unknown";
}

/* ---- The sink ---- */

struct sw_access {
    struct sw_declog *w;
    enum sw_access_format format;
    struct sw_buf line;
};

struct sw_access *sw_access_open(const char *path, enum sw_access_format f,
                                 void (*flush_schedule)(void *ud), void *ud)
{
    struct sw_access *a = calloc(1, sizeof *a);
    if (!a)
        return NULL;
    a->w = sw_declog_open(path);
    if (!a->w) {
        free(a);
        return NULL;
    }
    sw_declog_name(a->w, "access log");
    a->format = f;
    sw_buf_init(&a->line, 16 * 1024);
    if (flush_schedule)
        sw_declog_batch(a->w, flush_schedule, ud);
    return a;
}

void sw_access_write(struct sw_access *a, const struct sw_access_entry *e)
{
    if (!a)
        return;
    sw_buf_reset(&a->line);
    if (sw_access_format(&a->line, e, a->format) || sw_buf_append(&a->line, "", 1))
        return;
    sw_declog_write(a->w, a->line.ptr);
}

void sw_access_flush(struct sw_access *a)
{
    if (a)
        sw_declog_flush(a->w);
}

void sw_access_reopen(struct sw_access *a)
{
    if (a)
        sw_declog_reopen(a->w);
}

uint64_t sw_access_lines(const struct sw_access *a)
{
    return a ? sw_declog_lines(a->w) : 0;
}

void sw_access_close(struct sw_access *a)
{
    if (!a)
        return;
    sw_declog_close(a->w);
    sw_buf_free(&a->line);
    free(a);
}
