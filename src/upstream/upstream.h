/* One attempt against one backend: an HTTP POST built from the backend's
 * config (URL, API key, TLS, connect timeout) with the time left of the
 * request's deadline as its total timeout. Two transports serve it behind
 * one ops struct (upstream/transport.h): plain-HTTP backends on numeric
 * addresses (local inference servers) go through Spillway's own HTTP/1.1
 * client (upstream/h1.h); HTTPS and named hosts through the shared curl multi
 * handle. Both keep keep-alive pools. The relay drives an attempt through two
 * callbacks and this API, and cannot tell the two apart: no transport's
 * header or symbol reaches it.
 *
 * The headers that depend on the API the backend speaks (authentication,
 * version) come from the caller (upstream/dialect.h). */
#ifndef SW_UPSTREAM_UPSTREAM_H
#define SW_UPSTREAM_UPSTREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/uio.h>

#include "common/iovs.h"

#include "config/config.h"

struct sw_curlev;
struct sw_upstream_transport;

/* on_data's answer "not now": the transfer pauses and the same bytes come
 * again after sw_upstream_resume. */
#define SW_UPSTREAM_PAUSE ((size_t)0x10000001)

struct sw_upstream_cbs {
    /* Response bytes (after the status line and headers). Return len to go
     * on, 0 to abort the transfer (on_done then reports SW_ECANCELED), or
     * SW_UPSTREAM_PAUSE to be called again with the same bytes after
     * sw_upstream_resume. u->status is set before the first call. */
    size_t (*on_data)(void *ud, const char *bytes, size_t len);
    /* The transfer ended: err is SW_OK (u->status holds the HTTP status),
     * SW_ECONNECT, SW_ETIMEOUT, SW_EPROTO or SW_ECANCELED. Not called after
     * sw_upstream_abort. */
    void (*on_done)(void *ud, int err);
};

#define SW_UPSTREAM_ERRBUF 256  /* at least curl's CURL_ERROR_SIZE */

struct sw_upstream {
    const struct sw_upstream_transport *t; /* the transport serving it; NULL before start */
    void *handle;               /* the transport's request, NULL when none (owned by it) */
    void *aux;                  /* the transport's request headers (owned by it) */
    char *body;                 /* owned request body */
    size_t body_len;
    /* what is sent: body alone (one piece), or pieces sent one after
     * another, bytes the caller keeps until the transfer ends (a transport
     * that cannot send pieces joins them into body) */
    struct sw_iovs parts;
    struct sw_curlev *cev;      /* borrowed: both transports' pools */
    struct sw_upstream_cbs cbs;
    void *ud;
    bool running;
    long status;                /* HTTP status, 0 before the headers */
    long retry_after_s;         /* Retry-After header in seconds, -1 if absent */
    char errbuf[SW_UPSTREAM_ERRBUF]; /* why the transfer failed, for logs ("" if unknown) */
    int sock_errno;             /* curl: why its socket could not be opened (0: it could) */
};

/* A transport as one ops struct (the implementations: upstream/transport.h).
 * It keeps its request in u->handle and its request headers in u->aux,
 * reports through u->cbs, and sets u->status, u->retry_after_s, u->running
 * and u->errbuf. */
struct sw_upstream_transport {
    const char *name;           /* "h1", "curl": for logs and tests */
    /* Sends u->parts with the extra `headers` ("Name:
     * value\r\n" each, may be NULL) and X-Request-Id `trace_id` (may be
     * NULL). SW_OK with u->running set, or an error (the caller cleans up). */
    int (*start)(struct sw_upstream *u, const struct sw_config_backend *be, const char *path,
                 const char *headers, long timeout_ms, const char *trace_id);
    /* Stops a running request at once; nothing more is reported. */
    void (*abort)(struct sw_upstream *u);
    /* Resumes a request paused by on_data returning SW_UPSTREAM_PAUSE. */
    void (*resume)(struct sw_upstream *u);
    /* Frees u->body and u->aux once the request is sent and will not be
     * sent again (its answer began); NULL: the transport keeps them to the
     * end. */
    void (*drop_sent)(struct sw_upstream *u);
    /* Frees u->handle and u->aux after abort (u->body is the caller's). */
    void (*release)(struct sw_upstream *u);
};

/* Starts POST {backend.url}{path} with `body` (ownership taken, freed by
 * sw_upstream_cleanup), a total timeout of timeout_ms and the backend's
 * connect timeout, on the transport that serves the backend's URL.
 * `trace_id` goes out as X-Request-Id; `headers` (borrowed, may be NULL) are
 * more request headers, "Name: value\r\n" each: the dialect's authentication
 * and version headers. */
int sw_upstream_start(struct sw_upstream *u, struct sw_curlev *cev,
                      const struct sw_config_backend *be, const char *path, const char *headers,
                      char *body, size_t body_len, long timeout_ms, const char *trace_id,
                      const struct sw_upstream_cbs *cbs, void *ud);
/* The same with the body as n_parts pieces (at least 1) sent one after
 * another (the array is copied): their bytes borrowed until the transfer ends
 * (sw_upstream_cleanup), so a body that is mostly bytes the caller holds
 * anyway is not copied; `owned` (may be NULL; the bytes of some of the
 * pieces) is freed with the transfer. */
int sw_upstream_start_parts(struct sw_upstream *u, struct sw_curlev *cev,
                            const struct sw_config_backend *be, const char *path,
                            const char *headers, const struct iovec *parts, int n_parts,
                            char *owned, long timeout_ms, const char *trace_id,
                            const struct sw_upstream_cbs *cbs, void *ud);
/* sw_upstream_start (n_parts 0) or sw_upstream_start_parts on a given
 * transport (tests drive a fake one). */
int sw_upstream_start_on(struct sw_upstream *u, const struct sw_upstream_transport *t,
                         struct sw_curlev *cev, const struct sw_config_backend *be,
                         const char *path, const char *headers, char *body, size_t body_len,
                         const struct iovec *parts, int n_parts, long timeout_ms,
                         const char *trace_id, const struct sw_upstream_cbs *cbs, void *ud);
/* Aborts a running attempt at once; the upstream sees the connection close. */
void sw_upstream_abort(struct sw_upstream *u);
/* Resumes a transfer paused by on_data returning SW_UPSTREAM_PAUSE. */
void sw_upstream_resume(struct sw_upstream *u);
/* Frees the request's body and headers when the transport no longer needs
 * them (sent, the answer begun): a long answer does not hold them. */
void sw_upstream_drop_sent(struct sw_upstream *u);
/* Frees everything; aborts first if still running. Leaves u reusable. */
void sw_upstream_cleanup(struct sw_upstream *u);

#endif
