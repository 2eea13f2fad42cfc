/* The transports of an upstream attempt (upstream/upstream.h) as one ops
 * struct: the built-in HTTP/1.1 client (upstream/h1.h) and libcurl's multi
 * handle (upstream/curlev.h). A transport keeps its request in u->handle and
 * its request headers in u->aux, reports through u->cbs, and sets u->status,
 * u->retry_after_s, u->running and u->errbuf. Another transport is one more
 * table. */
#ifndef SW_UPSTREAM_TRANSPORT_H
#define SW_UPSTREAM_TRANSPORT_H

#include <stdbool.h>

#include "upstream/upstream.h"

struct sw_upstream_transport {
    const char *name;           /* "h1", "curl": for logs and tests */
    /* Sends u->body (u->body_len bytes) with the extra `headers` ("Name:
     * value\r\n" each, may be NULL) and X-Request-Id `trace_id` (may be
     * NULL). SW_OK with u->running set, or an error (the caller cleans up). */
    int (*start)(struct sw_upstream *u, const struct sw_config_backend *be, const char *path,
                 const char *headers, long timeout_ms, const char *trace_id);
    /* Stops a running request at once; nothing more is reported. */
    void (*abort)(struct sw_upstream *u);
    /* Resumes a request paused by on_data returning SW_UPSTREAM_PAUSE. */
    void (*resume)(struct sw_upstream *u);
    /* Frees u->handle and u->aux after abort (u->body is the caller's). */
    void (*release)(struct sw_upstream *u);
};

extern const struct sw_upstream_transport sw_transport_h1;
extern const struct sw_upstream_transport sw_transport_curl;

/* The transport that serves url: the HTTP/1.1 client for plain HTTP on a
 * numeric address or localhost, curl for the rest. */
const struct sw_upstream_transport *sw_transport_for(struct sw_curlev *cev, const char *url);

#endif
