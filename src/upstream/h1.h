/* A plain-HTTP/1.1 client for the hop to local inference servers, on the
 * same libevent loop as the front: keep-alive pools per backend address,
 * non-blocking connect with the backend's connect timeout, one deadline per
 * attempt, response parsing with libhttp-parser (Content-Length, chunked or
 * close-delimited bodies), pause/resume for a slow client, abort by closing
 * the connection (the server sees it and frees its slot).
 *
 * It serves `http://` backends whose host is a numeric address or
 * `localhost` (nothing to resolve on the loop); HTTPS and named hosts go
 * through libcurl (src/upstream/upstream.c decides). Measured reasons:
 * docs/internals/datapath.md. */
#ifndef SW_UPSTREAM_H1_H
#define SW_UPSTREAM_H1_H

#include <event2/event.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/uio.h>

struct sw_h1pool;
struct sw_h1req;

/* What sw_h1 reports to its caller (the same shape as sw_upstream_cbs). */
struct sw_h1_cbs {
    /* Body bytes. Return len, 0 to abort (done reports SW_ECANCELED), or
     * SW_H1_PAUSE to get the same bytes again after sw_h1_resume. */
    size_t (*on_data)(void *ud, const char *bytes, size_t len);
    /* The response ended (err SW_OK) or failed (SW_ECONNECT, SW_ETIMEOUT,
     * SW_EPROTO, SW_ECANCELED; `why` says what happened, for logs). The
     * request is already freed. Not called after sw_h1_abort. */
    void (*on_done)(void *ud, int err, const char *why);
    /* The status and Retry-After (seconds, -1 if absent) once the headers
     * are in, before any on_data. */
    void (*on_head)(void *ud, long status, long retry_after_s);
};

#define SW_H1_PAUSE ((size_t)0x10000001) /* the value of CURL_WRITEFUNC_PAUSE */

struct sw_h1pool *sw_h1pool_new(struct event_base *base);
/* Closes idle connections; requests still running must be aborted first. */
void sw_h1pool_free(struct sw_h1pool *pool);

/* Whether url ("http://HOST[:PORT][/prefix]") is served by this client. */
bool sw_h1_handles(const char *url);
/* The same, remembered per URL in the pool (no parsing once a URL was seen). */
bool sw_h1pool_handles(struct sw_h1pool *pool, const char *url);

/* Starts POST {url}{path}. `head` holds the extra request headers, each
 * line ending in CRLF (borrowed until done or abort); the body is the
 * n_body pieces of `body` (at least 1) sent one after another, their
 * bytes borrowed until then too (the array itself is copied). NULL on
 * allocation failure, no piece or a URL it does not handle. */
struct sw_h1req *sw_h1_start(struct sw_h1pool *pool, const char *url, const char *path,
                             const char *head, size_t head_len, const struct iovec *body,
                             int n_body, long connect_timeout_ms, long timeout_ms,
                             const struct sw_h1_cbs *cbs, void *ud);

/* Aborts: the connection is closed, nothing more is reported, r is freed. */
void sw_h1_abort(struct sw_h1req *r);
/* Resumes a request paused by on_data returning SW_H1_PAUSE. */
void sw_h1_resume(struct sw_h1req *r);
/* True once the whole request went out and its answer began (no retry on a
 * new connection sends it again): r then forgets the head and body it was
 * given, and the caller may free them. */
bool sw_h1_forget_request(struct sw_h1req *r);

#endif
