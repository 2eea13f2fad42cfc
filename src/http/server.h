/* An HTTP/1.x server on a libevent loop, shared by the gateway's front and
 * by llmsim. It owns the sockets: accept (with a backlog and a connection
 * limit), reading, parsing (libhttp-parser), framing and writing answers.
 *
 *  - Every client gets an answer: keep-alive or `Connection: close`,
 *    HTTP/1.1 or 1.0, pipelined requests (answered in order), chunked
 *    request bodies, `Expect: 100-continue`, HEAD. A streamed answer is
 *    chunked on HTTP/1.1 and close-delimited on HTTP/1.0; a connection that
 *    must close does so only after the answer's last byte is written.
 *  - Limits the server enforces itself, each answered through the handler's
 *    on_error so the body is in the application's error shape: a header
 *    block over max_header_bytes (431), a body over max_body_bytes (413, by
 *    Content-Length before the body is read, or as soon as a chunked body
 *    crosses it or announces a chunk that would), malformed requests, folded
 *    headers, whitespace between a header name and its colon, and a request
 *    line without an HTTP version (HTTP/0.9) as soon as that line is in
 *    (400), a request not received whole within client_timeout_ms of its
 *    first byte (408).
 *  - At max_connections the connection idle the longest is closed to make
 *    room for a new one; the listener pauses only when none is idle.
 *  - Memory per connection is bounded: the header block, the body, and
 *    pipelined input while a request is being answered (reading pauses).
 *  - A client that disconnects while its request is being answered is
 *    reported at once (on_gone), so the application can abort upstream work.
 *  - Writes go out as soon as they are queued (one write per event where
 *    the socket takes it); EV_WRITE is watched only while output is pending.
 */
#ifndef SW_HTTP_SERVER_H
#define SW_HTTP_SERVER_H

#include <event2/buffer.h>
#include <event2/event.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

struct sw_http_server;
struct sw_http_req;

enum sw_http_method {
    SW_HTTP_OTHER = 0,
    SW_HTTP_GET,
    SW_HTTP_HEAD,
    SW_HTTP_POST,
    SW_HTTP_PUT,
    SW_HTTP_DELETE,
    SW_HTTP_OPTIONS,
};

struct sw_http_limits {
    size_t max_header_bytes;    /* request line + headers */
    size_t max_body_bytes;
    long client_timeout_ms;     /* receive a whole request; keep-alive idle; write stall */
    long max_connections;       /* open client connections; the listener pauses at it */
};

struct sw_http_handler {
    /* The request line and headers are in; the body is not read yet. Return
     * true to read the body (then on_request runs), or answer now (e.g. 401)
     * and return false: the body is then never buffered. May be NULL. */
    bool (*on_headers)(struct sw_http_req *req, void *ud);
    /* The whole request is in. Answer now or later (sw_http_reply or the
     * stream calls); until then reading the connection pauses, except to
     * notice the client leaving. */
    void (*on_request)(struct sw_http_req *req, void *ud);
    /* Renders an error the server itself answers (400, 408, 413, 431, 501,
     * 505) with sw_http_reply. code is a stable snake_case word; message is
     * for humans. May be NULL: then a small JSON error is sent. */
    void (*on_error)(struct sw_http_req *req, int status, const char *code, const char *message,
                     void *ud);
    /* A connection closed (for counting and draining). May be NULL. */
    void (*on_conn_closed)(void *ud);
    void *ud;
    /* A request ended (answered in full, aborted, or an error the server
     * answered itself), just before its handle goes: for the access log
     * (sw_http_status, sw_http_bytes_out, ...). May be NULL. */
    void (*on_done)(struct sw_http_req *req, void *ud);
};

/* Listens on host:port (port 0: an ephemeral one; see sw_http_server_port)
 * with a backlog of `backlog` (the kernel caps it at net.core.somaxconn).
 * The handler is copied. NULL on error, with errno set. */
struct sw_http_server *sw_http_server_new(struct event_base *base, const char *host, int port,
                                          int backlog, const struct sw_http_limits *limits,
                                          const struct sw_http_handler *handler);

/* The bound port. */
int sw_http_server_port(const struct sw_http_server *s);

/* New limits for connections from now on (reload). */
void sw_http_server_set_limits(struct sw_http_server *s, const struct sw_http_limits *limits);

/* Stops accepting (draining): every answer from now on closes its
 * connection after its last byte. */
void sw_http_server_stop_accepting(struct sw_http_server *s);

/* Open client connections, and whether every answer's bytes left the
 * process (nothing is waiting to be written to any socket). */
long sw_http_server_connections(const struct sw_http_server *s);
/* Idle connections closed to make room at the connection limit. */
unsigned long sw_http_server_evicted(const struct sw_http_server *s);
bool sw_http_server_flushed(const struct sw_http_server *s);

/* Closes every connection (a request still owned by the application gets
 * on_gone first) and the listener. */
void sw_http_server_free(struct sw_http_server *s);

/* ---- The request ---- */

enum sw_http_method sw_http_method(const struct sw_http_req *req);
/* The method as sent ("GET"). */
const char *sw_http_method_name(const struct sw_http_req *req);
/* The path without the query ("/v1/models"), and the query without '?' or
 * NULL. Both are NUL-terminated and live as long as the request. */
const char *sw_http_path(const struct sw_http_req *req);
const char *sw_http_query(const struct sw_http_req *req);
/* The value of the first header called `name` (any case), NUL-terminated, or
 * NULL. *count, if not NULL, gets how many headers carry that name. */
const char *sw_http_header(const struct sw_http_req *req, const char *name, int *count);
/* Calls fn for every header in the order received. */
void sw_http_each_header(const struct sw_http_req *req,
                         void (*fn)(const char *name, const char *value, void *ud), void *ud);
/* The body (NUL-terminated after len bytes; "" when there is none, or after
 * sw_http_body_release). */
const char *sw_http_body(const struct sw_http_req *req, size_t *len);
/* The body's length as received, released or not (what an access log counts). */
size_t sw_http_body_len(const struct sw_http_req *req);
/* Gives the complete body's buffer back, for a request that will not read it
 * again (a stream past its first byte): its memory is not held while the
 * answer runs. */
void sw_http_body_release(struct sw_http_req *req);
/* The peer's HTTP minor version (0 or 1). */
int sw_http_version_minor(const struct sw_http_req *req);
/* For the access log: the status answered (0: none), the bytes queued to
 * the client (head and body), the monotonic ms when the request's head was
 * in, the client's address ("" when not known). */
int sw_http_status(const struct sw_http_req *req);
uint64_t sw_http_bytes_out(const struct sw_http_req *req);
int64_t sw_http_start_ms(const struct sw_http_req *req);
const char *sw_http_peer(const struct sw_http_req *req);

/* ---- Answering ---- */

/* Adds a response header (both strings are copied). Set it before the
 * answer starts. sw_http_set_header replaces any header of that name. */
void sw_http_add_header(struct sw_http_req *req, const char *name, const char *value);
void sw_http_set_header(struct sw_http_req *req, const char *name, const char *value);
/* Whether a response header of that name was set, and its value (the
 * first of that name; NULL when none), valid until the request ends. */
bool sw_http_has_header_out(const struct sw_http_req *req, const char *name);
const char *sw_http_header_out(const struct sw_http_req *req, const char *name);

/* A complete answer with a Content-Length body (copied), then the request is
 * done: the handle must not be used again. `content_type` may be NULL (then
 * application/json). For HEAD only the headers go out. */
void sw_http_reply(struct sw_http_req *req, int status, const char *content_type,
                   const char *body, size_t len);

/* A streamed answer: the status and headers, then bytes as they come
 * (chunked on HTTP/1.1, close-delimited on 1.0), then the end, after which
 * the handle must not be used. write drains `data`. The head is sent with
 * the first write (or the end): one write for it and the first event. */
void sw_http_stream_start(struct sw_http_req *req, int status, const char *content_type);
void sw_http_stream_write(struct sw_http_req *req, struct evbuffer *data);
void sw_http_stream_end(struct sw_http_req *req);
/* Cuts a streamed answer: what was written so far goes out, then the
 * connection closes without the end of the body (no final chunk), so the
 * client sees the answer incomplete. The handle must not be used again. */
void sw_http_stream_abort(struct sw_http_req *req);

/* Bytes of this request's answer queued but not yet taken by the socket. */
size_t sw_http_pending(const struct sw_http_req *req);

/* Calls cb once the pending output has dropped to at most `low` bytes (at
 * once, on the next loop turn, if it already has). One registration at a
 * time; cb NULL cancels. For backpressure on a slow reader. */
void sw_http_on_drained(struct sw_http_req *req, size_t low, void (*cb)(void *ud), void *ud);

/* Registers cb for a client that disconnects (or whose writes fail or
 * stall past client_timeout_ms) before the answer is complete. After cb
 * returns the handle is freed: cb must forget it. */
void sw_http_on_gone(struct sw_http_req *req, void (*cb)(void *ud), void *ud);

/* The reason phrase of a status ("Bad Request"). */
const char *sw_http_status_text(int status);

#endif
