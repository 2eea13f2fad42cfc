/* The access log: one line per HTTP request the front answered, API or not
 * (404, 401 and 405 included), so an operator sees which client endpoint
 * failed. Off unless access_log.path is set (docs/operations.md, "Access
 * log").
 *
 * A line carries only: the time, the request id, the client's address, the
 * method, the path (never the query), the status, bytes in and out, the
 * duration, the backend and routing reason that served it, and the API
 * key's configured name. Never a header value, a key, a query string or any
 * body text.
 *
 * sw_access_format is pure (entry -> line); the sink writes lines with the
 * decision log's writer (obs/declog.h: one write(2) of whole lines per turn
 * of the event loop, reopened on SIGHUP). */
#ifndef SW_OBS_ACCESS_H
#define SW_OBS_ACCESS_H

#include <stdint.h>

#include "common/buf.h"

enum sw_access_format { SW_ACCESS_JSON, SW_ACCESS_COMBINED };

/* A string field longer than this is cut. */
#define SW_ACCESS_MAX_FIELD 512

/* Every pointer is borrowed for the call; NULL strings are written as null
 * (json) or "-" (combined). */
struct sw_access_entry {
    int64_t time_ms;            /* wall clock, ms since the epoch */
    const char *request_id;
    const char *client;         /* the client's address */
    const char *method;
    const char *path;           /* without the query */
    int status;                 /* 0: none was sent */
    uint64_t bytes_in;          /* request body */
    uint64_t bytes_out;         /* answer, head and body */
    double duration_ms;
    const char *backend;        /* the backend that served it; NULL: none */
    const char *reason;         /* its routing reason; NULL: none */
    const char *key_name;       /* the API key's configured name; NULL: none */
};

/* Appends e as one line without its newline. json: one object, fields in
 * the order of the struct ("time" ISO-8601 UTC); combined: Apache's combined
 * format with the key name as the user, then rid=, dur_ms=, backend= and
 * reason= pairs. SW_OK or a buffer error. */
int sw_access_format(struct sw_buf *out, const struct sw_access_entry *e,
                     enum sw_access_format f);

/* The class of a request path, for counting refusals without the path
 * itself (a bounded label set): "models" (/v1/models and below), "api"
 * (any other /v1/ path), "admin" (/admin and below), "ops" (/healthz,
 * /metrics, /dashboard and below) or "unknown". Pure. */
const char *sw_access_path_class(const char *path);

struct sw_access;

/* path: a file (appended, created 0640), "-" (stdout) or "stderr". NULL
 * when it cannot be opened (errno set). flush_schedule(ud) is called when
 * lines wait to be written; the owner then calls sw_access_flush. */
struct sw_access *sw_access_open(const char *path, enum sw_access_format f,
                                 void (*flush_schedule)(void *ud), void *ud);
void sw_access_write(struct sw_access *a, const struct sw_access_entry *e);
void sw_access_flush(struct sw_access *a);
/* After logrotate moved the file (SIGHUP). */
void sw_access_reopen(struct sw_access *a);
uint64_t sw_access_lines(const struct sw_access *a);
void sw_access_close(struct sw_access *a);

#endif
