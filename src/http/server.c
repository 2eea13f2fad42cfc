#include "http/server.h"

#include <errno.h>
#include <stddef.h>
#include <event2/listener.h>
#include <llhttp.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/err.h"
#include "common/log.h"
#include "common/spares.h"

/* Headers per request, and response headers set by the application. */
#define MAX_HEADERS 64
#define MAX_OUT_HEADERS 24
/* Input read ahead (pipelined requests) while a request is being answered. */
#define READ_AHEAD_MAX (64 * 1024)
#define READ_CHUNK 4096
/* Requests whose head fits REQ_HEAD_ROOM are kept for reuse (common/spares.h). */
#define REQ_HEAD_ROOM 2048
/* After the last byte of an answer on a connection that closes, unread
 * input is drained this long so the client is not reset before it read the
 * answer (a client still sending a refused body, say). */
#define LINGER_MS 2000

/* ---- Types ---- */

enum conn_state {
    C_IDLE,     /* between requests (keep-alive) */
    C_HEAD,     /* receiving a request line and headers */
    C_BODY,     /* receiving a body */
    C_BUSY,     /* the application owns the request */
    C_CLOSING,  /* the last answer is being written; then shutdown and linger */
    C_LINGER,   /* write side shut; discarding input until EOF or the timer */
};

struct hdr {
    const char *name, *value;
    size_t name_len, value_len;
};

/* Answer headers: name and value copied into the request's `outs` when they
 * fit (the usual case: no allocation per header), else one allocation. */
struct out_hdr {
    char *name, *value;
    size_t name_len, value_len;
    char *heap;                 /* owned: the copy that did not fit, or NULL */
};
#define OUT_ARENA 768

struct conn;

struct sw_http_req {
    struct conn *c;
    char *head;                 /* copy of the header block (allocated with the request);
                                   names and values point into it */
    int n_hdrs;
    const char *url;            /* start of the URL in head */
    size_t url_len;
    const char *path, *query;
    enum sw_http_method method;
    const char *method_name;
    int minor;
    bool handed;                /* on_request was called */
    bool headers_done;
    bool complete;              /* the whole message is in */
    bool body_too_big;
    bool bad_header;
    bool space_before_colon;    /* a header name followed by whitespace before its ':' */
    bool pooled;                /* allocated with REQ_HEAD_ROOM bytes of head: reusable */
    char *body;
    size_t body_len, body_cap;
    bool body_gone;             /* sw_http_body_release: body_len still counts it */
    int n_out;
    size_t outs_used;
    bool streaming;             /* stream_start was called */
    bool chunked;               /* the stream is chunk-encoded */
    void (*on_gone)(void *ud);
    void *gone_ud;
    void (*on_drained)(void *ud);
    void *drained_ud;
    size_t drained_low;
    /* For the access log (sw_http_handler.on_done): the status answered
     * (0: none yet), the bytes queued to the client, when the head was in. */
    int status;
    uint64_t bytes_out;
    int64_t start_ms;
    /* Not zeroed when a request starts: each entry is written before it is
     * read (n_hdrs, n_out and outs_used bound them). */
    struct hdr hdrs[MAX_HEADERS];
    struct out_hdr out[MAX_OUT_HEADERS];
    char outs[OUT_ARENA];
};

struct conn {
    struct sw_http_server *s;
    int fd;
    struct event *rev, *wev, *timer, *defer;
    char *in;
    size_t in_len, in_cap;
    struct evbuffer *out;
    llhttp_t parser;
    struct sw_http_req *req;    /* being received or answered */
    enum conn_state state;
    bool keep_alive;            /* the current request allows another after it */
    char peer[INET6_ADDRSTRLEN];    /* the client's address, "" when not known: written
                                     * from peer_addr when first asked (sw_http_peer) */
    unsigned char peer_addr[16];    /* in_addr or in6_addr, by peer_family */
    sa_family_t peer_family;        /* AF_INET, AF_INET6, or 0: not known */
    bool reading;               /* rev is added */
    bool writing;               /* wev is added */
    bool dead;                  /* failed: finish (on_gone, free) on the next loop turn */
    bool in_process;
    bool line_checked;          /* the request line of the request in C_HEAD was checked */
    int depth;                  /* nesting of entry points; free only at 0 */
    struct conn *prev, *next;
};

struct sw_http_server {
    struct event_base *base;
    struct evconnlistener *listener;
    struct sw_http_limits lim;
    struct sw_http_handler h;
    struct conn *conns;         /* newest first */
    struct conn *oldest;        /* the list's tail */
    long n_conns;
    unsigned long evicted;      /* idle connections closed to make room */
    bool accepting;
    bool stopping;
    bool resting;               /* accept failed for want of a descriptor: paused */
    unsigned long rests;        /* such pauses, for the log's 1st, 2nd, 4th, ... */
    struct event *rest;         /* ends the pause */
    int port;
    /* Input buffers of READ_CHUNK bytes put back by connections whose request
     * is being answered, taken again by the next read on any connection. */
    struct sw_spares spare_in;      /* READ_CHUNK buffers */
    struct sw_spares spare_req;     /* requests with REQ_HEAD_ROOM */
};

static void process(struct conn *c);
static void conn_fail(struct conn *c);
static void flush_out(struct conn *c);
static void req_done(struct conn *c);

/* ---- Small helpers ---- */

static struct timeval ms_tv(long ms)
{
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    return tv;
}

const char *sw_http_status_text(int status)
{
    switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 204: return "No Content";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 411: return "Length Required";
    case 413: return "Payload Too Large";
    case 415: return "Unsupported Media Type";
    case 417: return "Expectation Failed";
    case 421: return "Misdirected Request";
    case 422: return "Unprocessable Entity";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 499: return "Client Closed Request";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    case 505: return "HTTP Version Not Supported";
    case 529: return "Overloaded";
    default: return status < 400 ? "OK" : "Error";
    }
}

/* "Date: Mon, 30 Nov 2026 14:57:37 GMT\r\n", formatted once per second. */
static const char *date_line(size_t *len)
{
    static char line[64];
    static size_t n;
    static time_t last = -1;
    time_t now = time(NULL);
    if (now != last) {
        struct tm tm;
        gmtime_r(&now, &tm);
        n = strftime(line, sizeof line, "Date: %a, %d %b %Y %H:%M:%S GMT\r\n", &tm);
        last = now;
    }
    *len = n;
    return line;
}

#define ADD_LIT(buf, lit) evbuffer_add((buf), (lit), sizeof(lit) - 1)

/* ---- Connections: lifetime ---- */

/* An idle connection (between requests, or opened and silent, nothing
 * buffered either way) that can be closed to make room for a new one. */
static bool idle_conn(const struct conn *c)
{
    return !c->dead && c->state == C_IDLE && !c->in_len && !c->req &&
           !evbuffer_get_length(c->out);
}

static bool any_idle(const struct sw_http_server *s)
{
    for (const struct conn *c = s->oldest; c; c = c->prev)
        if (idle_conn(c))
            return true;
    return false;
}

/* Accepting while under the connection limit, and at it while some
 * connection is idle (the new one then takes an idle one's place). */
static void listener_update(struct sw_http_server *s)
{
    bool want = !s->stopping && !s->resting &&
                (s->n_conns < s->lim.max_connections ||
                 (s->n_conns == s->lim.max_connections && any_idle(s)));
    if (want && !s->accepting) {
        evconnlistener_enable(s->listener);
        s->accepting = true;
    } else if (!want && s->accepting) {
        evconnlistener_disable(s->listener);
        s->accepting = false;
        if (!s->stopping && !s->resting)
            sw_warn("connection limit %ld reached; not accepting until one closes",
                    s->lim.max_connections);
    }
}

/* A buffer of READ_CHUNK bytes: a spare one when there is, else a new one. */
static char *chunk_get(struct sw_http_server *s)
{
    return sw_spares_get(&s->spare_in, READ_CHUNK);
}

/* buf (cap bytes) back to the spares when it is a READ_CHUNK one, else freed. */
static void chunk_put(struct sw_http_server *s, char *buf, size_t cap)
{
    if (cap == READ_CHUNK)
        sw_spares_put(&s->spare_in, buf);
    else
        free(buf);
}

static void req_free(struct sw_http_server *s, struct sw_http_req *r)
{
    if (!r)
        return;
    for (int i = 0; i < r->n_out; i++)
        free(r->out[i].heap);
    chunk_put(s, r->body, r->body_cap);
    if (r->pooled)
        sw_spares_put(&s->spare_req, r);
    else
        free(r);
}

/* The connection's input buffer goes back to the server's spares (or is
 * freed): a connection holds none while its request is answered. */
static void in_release(struct conn *c)
{
    chunk_put(c->s, c->in, c->in_cap);
    c->in = NULL;
    c->in_cap = 0;
    c->in_len = 0;
}

static void set_reading(struct conn *c, bool on)
{
    if (on == c->reading)
        return;
    if (on)
        event_add(c->rev, NULL);
    else
        event_del(c->rev);
    c->reading = on;
}

/* Frees the connection: the application's request first learns it is gone. */
static void conn_free(struct conn *c)
{
    struct sw_http_server *s = c->s;
    struct sw_http_req *r = c->req;
    c->req = NULL;
    if (r && r->on_gone) {
        void (*cb)(void *) = r->on_gone;
        r->on_gone = NULL;
        r->c = NULL;
        cb(r->gone_ud);
    }
    req_free(s, r);
    event_free(c->rev);
    event_free(c->wev);
    event_free(c->timer);
    event_free(c->defer);
    evbuffer_free(c->out);
    if (c->fd >= 0)
        close(c->fd);
    in_release(c);
    if (c->prev)
        c->prev->next = c->next;
    else
        s->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    else
        s->oldest = c->prev;
    free(c);
    s->n_conns--;
    listener_update(s);
    if (s->h.on_conn_closed)
        s->h.on_conn_closed(s->h.ud);
}

/* The connection is finished (error, EOF, timeout, or done closing). It is
 * freed on the next loop turn, never inside a call that may still use it. */
static void conn_fail(struct conn *c)
{
    if (c->dead)
        return;
    c->dead = true;
    set_reading(c, false);
    if (c->writing) {
        event_del(c->wev);
        c->writing = false;
    }
    evtimer_del(c->timer);
    if (c->req) {
        c->req->on_drained = NULL;
    }
    event_active(c->defer, EV_TIMEOUT, 0);
}

static void enter(struct conn *c)
{
    c->depth++;
}

/* Leaves an entry point; frees a dead connection once nothing uses it. */
static void leave(struct conn *c)
{
    if (--c->depth == 0 && c->dead)
        conn_free(c);
}

/* The application's drained callback, once the output is low enough. */
static void call_drained(struct conn *c)
{
    struct sw_http_req *r = c->req;
    if (!c->dead && r && r->on_drained && evbuffer_get_length(c->out) <= r->drained_low) {
        void (*cb)(void *) = r->on_drained;
        r->on_drained = NULL;
        cb(r->drained_ud);
    }
}

/* Deferred work: a dead connection's end, or a drained callback due. */
static void on_defer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct conn *c = arg;
    enter(c);
    call_drained(c);
    leave(c);
}

/* ---- Timers ---- */

static void start_timer(struct conn *c, long ms)
{
    struct timeval tv = ms_tv(ms);
    evtimer_add(c->timer, &tv);
}

/* A request with no request line yet: enough to answer an error on. */
static struct sw_http_req *bare_req(struct conn *c)
{
    if (!c->req) {
        c->req = calloc(1, sizeof *c->req);
        if (!c->req)
            return NULL;
        c->req->c = c;
        c->req->minor = 1;
        c->req->path = "";
        c->req->start_ms = sw_now_ms();
    }
    return c->req;
}

/* Answers an error the server found itself and closes after it. */
static void server_error(struct conn *c, int status, const char *code, const char *msg)
{
    struct sw_http_req *r = bare_req(c);
    c->keep_alive = false;
    if (!r) {
        conn_fail(c);
        return;
    }
    sw_info("http: %d %s (%s)", status, code, msg);
    if (c->s->h.on_error) {
        c->s->h.on_error(r, status, code, msg, c->s->h.ud);
    } else {
        char body[512];
        int n = snprintf(body, sizeof body,
                         "{\"error\":{\"message\":\"%s\",\"type\":\"invalid_request_error\","
                         "\"param\":null,\"code\":\"%s\"}}", msg, code);
        sw_http_reply(r, status, NULL, body, (size_t)n);
    }
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct conn *c = arg;
    enter(c);
    switch (c->state) {
    case C_HEAD:
    case C_BODY:
        server_error(c, 408, "request_timeout",
                     "The request was not received in full within the client timeout.");
        break;
    case C_BUSY:
        break;
    default: /* idle keep-alive, or lingering: close quietly */
        conn_fail(c);
        break;
    }
    leave(c);
}

/* ---- Parsing ---- */

static int on_url(llhttp_t *p, const char *at, size_t len)
{
    struct sw_http_req *r = ((struct conn *)p->data)->req;
    if (!r->url)
        r->url = at;
    r->url_len = (size_t)(at + len - r->url);
    return 0;
}

static int on_header_field(llhttp_t *p, const char *at, size_t len)
{
    struct sw_http_req *r = ((struct conn *)p->data)->req;
    if (r->headers_done)
        return 0; /* trailers of a chunked body: ignored */
    if (r->n_hdrs == MAX_HEADERS) {
        r->bad_header = true;
        return 1;
    }
    /* The head is not written to while the parser reads it: names and
     * values are NUL-terminated after the parse (terminate_headers). */
    r->hdrs[r->n_hdrs] = (struct hdr){.name = at, .name_len = len, .value = NULL};
    r->n_hdrs++;
    return 0;
}

static int on_header_value(llhttp_t *p, const char *at, size_t len)
{
    struct sw_http_req *r = ((struct conn *)p->data)->req;
    if (r->headers_done || r->n_hdrs == 0)
        return 0;
    struct hdr *h = &r->hdrs[r->n_hdrs - 1];
    if (!h->value)
        h->value = at;
    h->value_len = (size_t)(at + len - h->value);
    return 0;
}

static int on_headers_complete(llhttp_t *p)
{
    struct sw_http_req *r = ((struct conn *)p->data)->req;
    r->headers_done = true;
    return 0;
}

static int on_body(llhttp_t *p, const char *at, size_t len)
{
    struct conn *c = p->data;
    struct sw_http_req *r = c->req;
    if (r->body_len + len > c->s->lim.max_body_bytes) {
        r->body_too_big = true;
        return 1;
    }
    if (r->body_len + len + 1 > r->body_cap) {
        size_t cap = r->body_cap ? r->body_cap : 1024;
        while (cap < r->body_len + len + 1)
            cap *= 2;
        if (cap > c->s->lim.max_body_bytes + 1)
            cap = c->s->lim.max_body_bytes + 1;
        char *b = realloc(r->body, cap);
        if (!b)
            return 1;
        r->body = b;
        r->body_cap = cap;
    }
    if (at != r->body + r->body_len) /* not read straight into it */
        memcpy(r->body + r->body_len, at, len);
    r->body_len += len;
    r->body[r->body_len] = '\0';
    return 0;
}

/* A chunk whose announced size would take the body over the limit is
 * refused when its size line is in, not once its bytes arrived. */
static int on_chunk_header(llhttp_t *p)
{
    struct conn *c = p->data;
    struct sw_http_req *r = c->req;
    if (p->content_length > c->s->lim.max_body_bytes - r->body_len) {
        r->body_too_big = true;
        return -1;
    }
    return 0;
}

static int on_message_complete(llhttp_t *p)
{
    struct sw_http_req *r = ((struct conn *)p->data)->req;
    r->complete = true;
    return HPE_PAUSED; /* pipelined bytes after it wait for the next request */
}

static const llhttp_settings_t parser_settings = {
    .on_url = on_url,
    .on_header_field = on_header_field,
    .on_header_value = on_header_value,
    .on_headers_complete = on_headers_complete,
    .on_body = on_body,
    .on_chunk_header = on_chunk_header,
    .on_message_complete = on_message_complete,
};

/* Ends each header name at its ':' and each value at the CR or LF after it,
 * once the parser is done with the head. */
static void terminate_headers(struct sw_http_req *r)
{
    for (int i = 0; i < r->n_hdrs; i++) {
        struct hdr *h = &r->hdrs[i];
        if (h->name[h->name_len] != ':' ||
            (h->name_len && (h->name[h->name_len - 1] == ' ' || h->name[h->name_len - 1] == '\t')))
            r->space_before_colon = true;
        ((char *)h->name)[h->name_len] = '\0';
        if (h->value)
            ((char *)h->value)[h->value_len] = '\0';
        else
            h->value = "";      /* an empty value: no span */
    }
}

/* Runs the parser over n bytes: how many it took (it stops after a complete
 * message, so pipelined bytes stay for the next one), its verdict in *e. */
static size_t parse(struct conn *c, const char *data, size_t n, llhttp_errno_t *e)
{
    *e = llhttp_execute(&c->parser, data, n);
    if (*e == HPE_OK)
        return n;
    const char *at = llhttp_get_error_pos(&c->parser);
    return at && at >= data && at <= data + n ? (size_t)(at - data) : 0;
}

static enum sw_http_method method_of(unsigned m)
{
    switch (m) {
    case HTTP_GET: return SW_HTTP_GET;
    case HTTP_HEAD: return SW_HTTP_HEAD;
    case HTTP_POST: return SW_HTTP_POST;
    case HTTP_PUT: return SW_HTTP_PUT;
    case HTTP_DELETE: return SW_HTTP_DELETE;
    case HTTP_OPTIONS: return SW_HTTP_OPTIONS;
    default: return SW_HTTP_OTHER;
    }
}

static void consume(struct conn *c, size_t n)
{
    if (n == 0)
        return;
    memmove(c->in, c->in + n, c->in_len - n);
    c->in_len -= n;
}

/* The end of the header block in c->in (just past the empty line), or 0;
 * *folded: a line of it starts with a space or a tab (obsolete line
 * folding), seen on the way. */
static size_t header_end(const struct conn *c, bool *folded)
{
    *folded = false;
    if (c->in_len == 0)
        return 0;
    const char *end = c->in + c->in_len;
    for (const char *nl = c->in; (nl = memchr(nl, '\n', (size_t)(end - nl))) != NULL; nl++) {
        size_t i = (size_t)(nl - c->in);
        if (i + 1 >= c->in_len)
            break;
        if (c->in[i + 1] == '\n')
            return i + 2;
        if (c->in[i + 1] == '\r' && i + 2 < c->in_len && c->in[i + 2] == '\n')
            return i + 3;
        if (c->in[i + 1] == ' ' || c->in[i + 1] == '\t')
            *folded = true;
    }
    return 0;
}

/* Whether the request line in c->in ends with an HTTP version ("GET /
 * HTTP/1.1"): 1 yes, 0 no (an HTTP/0.9 line "GET /", or no request line at
 * all), -1 not in whole yet. A line without a version would otherwise wait
 * for a blank line that never comes. */
static int request_line_ok(const struct conn *c)
{
    const char *nl = memchr(c->in, '\n', c->in_len);
    if (!nl)
        return -1;
    size_t len = (size_t)(nl - c->in);
    if (len && c->in[len - 1] == '\r')
        len--;
    size_t sp = len;
    while (sp > 0 && c->in[sp - 1] != ' ')
        sp--;
    static const char ver[] = "HTTP/";
    return sp > 0 && len - sp >= sizeof ver - 1 && !memcmp(c->in + sp, ver, sizeof ver - 1);
}

static void split_url(struct sw_http_req *r)
{
    char *u = (char *)r->url;
    u[r->url_len] = '\0'; /* the space before the version */
    char *q = strchr(u, '?');
    if (q) {
        *q = '\0';
        r->query = q + 1;
    }
    r->path = u;
}

/* The parsed head of r (n bytes, parsed up to `done` with result e)
 * judged: version, syntax, folding, header names and upgrades; the method,
 * version and URL of r set. False when it was refused (answered). */
static bool head_ok(struct conn *c, struct sw_http_req *r, size_t n, bool folded,
                    llhttp_errno_t e, size_t done)
{
    if (r->bad_header) {
        server_error(c, 431, "request_header_fields_too_large", "Too many request headers.");
        return false;
    }
    /* 505 for HTTP/2's preface, a version llhttp does not know, or any
     * version but 1.x */
    if (e == HPE_PAUSED_H2_UPGRADE || e == HPE_INVALID_VERSION ||
        (r->headers_done && c->parser.http_major != 1)) {
        server_error(c, 505, "http_version_not_supported", "Only HTTP/1.0 and HTTP/1.1 are served.");
        return false;
    }
    if ((e != HPE_OK && e != HPE_PAUSED && e != HPE_PAUSED_UPGRADE) || done != n ||
        !r->headers_done || !r->url) {
        char msg[160];
        const char *why = e != HPE_OK && e != HPE_PAUSED ? llhttp_get_error_reason(&c->parser) : NULL;
        snprintf(msg, sizeof msg, "Malformed HTTP request: %s.",
                 why ? why : "the header block does not end where the blank line is");
        server_error(c, e == HPE_INVALID_TRANSFER_ENCODING ? 501 : 400, "invalid_http", msg);
        return false;
    }
    /* The parser ended the headers before the blank line the head was cut at
     * (a stray CR) and read body bytes out of the head: refused, since the
     * two readings of where the body starts disagree. */
    if (r->body_len > 0) {
        server_error(c, 400, "invalid_http", "Malformed HTTP request: bad header terminator.");
        return false;
    }
    r->method_name = llhttp_method_name((llhttp_method_t)c->parser.method);
    r->method = method_of(c->parser.method);
    r->minor = c->parser.http_minor;
    split_url(r);
    if (folded) {
        server_error(c, 400, "invalid_http", "Folded header lines are not accepted.");
        return false;
    }
    /* RFC 9112 section 5.1: no whitespace between a field name and its colon
     * ("Name : value" names no header a server may guess at). */
    if (r->space_before_colon) {
        server_error(c, 400, "invalid_http",
                     "Malformed HTTP request: whitespace between a header name and its colon.");
        return false;
    }
    if (c->parser.upgrade && !r->complete) {
        server_error(c, 400, "invalid_http", "Protocol upgrades are not supported.");
        return false;
    }
    return true;
}

/* The buffer of a Content-Length body still to come: a spare for the usual
 * size. False when it cannot be had (the connection failed). */
static bool body_buffer(struct conn *c, struct sw_http_req *r)
{
    struct sw_http_server *s = c->s;
    if ((c->parser.flags & F_CONTENT_LENGTH) && !r->complete) {
        size_t cap = c->parser.content_length + 1;
        if (cap <= READ_CHUNK) { /* the usual body: a spare buffer */
            r->body = chunk_get(s);
            cap = READ_CHUNK;
        } else {
            r->body = malloc(cap);
        }
        if (!r->body) {
            conn_fail(c);
            return false;
        }
        r->body_cap = cap;
    }
    return true;
}

/* Starts a request from a complete header block of `n` bytes (folded: one
 * of its lines is folded, header_end). */
static void begin_request(struct conn *c, size_t n, bool folded)
{
    struct sw_http_server *s = c->s;
    /* the request and its copy of the head in one allocation; the answer
     * headers' arena is written before it is read */
    bool pooled = n + 1 <= REQ_HEAD_ROOM;
    struct sw_http_req *r = pooled ? sw_spares_get(&s->spare_req, sizeof *r + REQ_HEAD_ROOM)
                                   : malloc(sizeof *r + n + 1);
    if (!r) {
        conn_fail(c);
        return;
    }
    memset(r, 0, offsetof(struct sw_http_req, hdrs));
    r->pooled = pooled;
    char *head = (char *)(r + 1);
    memcpy(head, c->in, n);
    head[n] = '\0';
    consume(c, n);
    r->c = c;
    r->head = head;
    r->path = "";
    r->start_ms = sw_now_ms();
    c->req = r;
    llhttp_init(&c->parser, HTTP_REQUEST, &parser_settings);
    c->parser.data = c;
    llhttp_errno_t e;
    size_t done = parse(c, head, n, &e);
    terminate_headers(r);
    if (!head_ok(c, r, n, folded, e, done))
        return;
    c->keep_alive = llhttp_should_keep_alive(&c->parser) && !s->stopping;
    if ((c->parser.flags & F_CONTENT_LENGTH) && c->parser.content_length > s->lim.max_body_bytes) {
        char msg[160];
        snprintf(msg, sizeof msg, "Request body is %llu bytes; the limit is %zu bytes.",
                 (unsigned long long)c->parser.content_length, s->lim.max_body_bytes);
        server_error(c, 413, "request_too_large", msg);
        return;
    }
    if (!body_buffer(c, r))
        return;
    c->state = r->complete ? C_BUSY : C_BODY;
    /* Answered here: r is gone, and sw_http_reply closed the connection
     * after the answer when a body was due (it is never read). */
    if (s->h.on_headers && !s->h.on_headers(r, s->h.ud))
        return;
    if (!r->complete && r->minor == 1) {
        const char *expect = sw_http_header(r, "Expect", NULL);
        if (expect && !strcasecmp(expect, "100-continue")) {
            ADD_LIT(c->out, "HTTP/1.1 100 Continue\r\n\r\n");
            flush_out(c);
        }
    }
}

/* Feeds n body bytes at data to the parser: the buffered input's (consumed
 * as far as the parser took it) or bytes read straight into the body. At
 * the end of the message the request is ready to be handed over. */
static void feed_body(struct conn *c, const char *data, size_t n)
{
    struct sw_http_req *r = c->req;
    llhttp_errno_t e;
    size_t done = parse(c, data, n, &e);
    if (data == c->in)
        consume(c, done);
    if (r->body_too_big) {
        char msg[160];
        snprintf(msg, sizeof msg, "Request body is over the limit of %zu bytes.",
                 c->s->lim.max_body_bytes);
        server_error(c, 413, "request_too_large", msg);
        return;
    }
    if (e != HPE_OK && e != HPE_PAUSED) {
        char msg[160];
        snprintf(msg, sizeof msg, "Malformed request body: %s.", llhttp_get_error_reason(&c->parser));
        server_error(c, 400, "invalid_http", msg);
        return;
    }
    if (r->complete)
        c->state = C_BUSY;
}

/* Runs the state machine over buffered input until it needs more bytes or
 * the application owns a request. */
static void process(struct conn *c)
{
    if (c->in_process)
        return;
    c->in_process = true;
    struct sw_http_server *s = c->s;
    while (!c->dead) {
        if (c->state == C_IDLE) {
            /* Empty lines between requests are allowed and ignored. */
            size_t skip = 0;
            while (skip < c->in_len && (c->in[skip] == '\r' || c->in[skip] == '\n'))
                skip++;
            consume(c, skip);
            if (c->in_len == 0)
                break;
            c->state = C_HEAD;
            c->line_checked = false;
            start_timer(c, s->lim.client_timeout_ms);
            if (s->accepting && s->n_conns >= s->lim.max_connections)
                listener_update(s); /* one idle connection fewer to make room with */
        }
        if (c->state == C_HEAD) {
            if (!c->line_checked) {
                int ok = request_line_ok(c);
                if (ok == 0) {
                    server_error(c, 400, "invalid_http",
                                 "Malformed HTTP request: the request line has no HTTP version "
                                 "(HTTP/0.9 is not served).");
                    continue;
                }
                c->line_checked = ok > 0;
            }
            bool folded;
            size_t end = header_end(c, &folded);
            if ((!end && c->in_len > s->lim.max_header_bytes) || end > s->lim.max_header_bytes + 2) {
                char msg[160];
                snprintf(msg, sizeof msg, "The request line and headers are over the limit of %zu bytes.",
                         s->lim.max_header_bytes);
                server_error(c, 431, "request_header_fields_too_large", msg);
                continue;
            }
            if (!end)
                break;
            begin_request(c, end, folded);
            continue;
        }
        if (c->state == C_BODY) {
            if (c->in_len == 0)
                break;
            feed_body(c, c->in, c->in_len);
            continue;
        }
        if (c->state == C_BUSY && c->req && !c->req->handed) {
            struct sw_http_req *r = c->req;
            r->handed = true;
            evtimer_del(c->timer);
            if (c->in_len == 0) /* nothing pipelined: no buffer while it is answered */
                in_release(c);
            s->h.on_request(r, s->h.ud);
            continue;
        }
        break;
    }
    c->in_process = false;
    /* on_read stops reading when the read-ahead is full; room again here. */
    if (!c->dead && c->state != C_LINGER)
        set_reading(c, true);
}

/* ---- Reading ---- */

/* The rest of a Content-Length body, once nothing is buffered, is read
 * straight into the body's buffer (sized for all of it): one read per
 * socket-buffer's worth instead of one per READ_CHUNK, and no copy. At most
 * the bytes still due are read, so a pipelined request stays in the socket.
 * False when this read is not such a read. */
static bool read_body_direct(struct conn *c)
{
    struct sw_http_req *r = c->req;
    uint64_t due = c->parser.content_length;
    if (c->state != C_BODY || c->in_len || !(c->parser.flags & F_CONTENT_LENGTH) ||
        (c->parser.flags & F_CHUNKED) || due == 0 || !r->body || r->body_cap - r->body_len <= due)
        return false;
    char *at = r->body + r->body_len;
    ssize_t n = read(c->fd, at, (size_t)due);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return true;
    if (n <= 0) {
        conn_fail(c); /* EOF or reset before the body ended */
        return true;
    }
    feed_body(c, at, (size_t)n);
    process(c);
    return true;
}

static void on_read(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    struct conn *c = arg;
    enter(c);
    if (c->state == C_LINGER) {
        char sink[4096];
        ssize_t n = read(fd, sink, sizeof sink);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
            conn_fail(c);
        leave(c);
        return;
    }
    if (read_body_direct(c)) {
        leave(c);
        return;
    }
    size_t limit = c->state == C_HEAD ? c->s->lim.max_header_bytes + READ_CHUNK : READ_AHEAD_MAX;
    if (c->in_cap == 0 && (c->in = sw_spares_take(&c->s->spare_in)) != NULL)
        c->in_cap = READ_CHUNK;
    if (c->in_cap - c->in_len < READ_CHUNK / 2 && c->in_cap < limit) {
        size_t cap = c->in_cap ? c->in_cap * 2 : READ_CHUNK;
        char *in = realloc(c->in, cap);
        if (!in) {
            conn_fail(c);
            leave(c);
            return;
        }
        c->in = in;
        c->in_cap = cap;
    }
    if (c->in_len == c->in_cap) {
        set_reading(c, false); /* read ahead is full: wait for the answer */
        leave(c);
        return;
    }
    ssize_t n = read(fd, c->in + c->in_len, c->in_cap - c->in_len);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
        leave(c);
        return;
    }
    if (n <= 0) {
        /* EOF or reset: a request being answered is abandoned (on_gone). */
        conn_fail(c);
        leave(c);
        return;
    }
    c->in_len += (size_t)n;
    process(c);
    leave(c);
}

/* ---- Writing ---- */

/* The answer's last byte left: close (shutdown, linger) or go idle. */
static void after_flush(struct conn *c)
{
    if (c->state == C_IDLE && !c->s->accepting) /* idle now: room for a new connection */
        listener_update(c->s);
    if (c->state == C_CLOSING) {
        shutdown(c->fd, SHUT_WR);
        c->state = C_LINGER;
        c->in_len = 0;
        set_reading(c, true);
        start_timer(c, LINGER_MS);
    }
}

static void flush_out(struct conn *c)
{
    if (c->dead)
        return;
    while (evbuffer_get_length(c->out) > 0) {
        int n = evbuffer_write(c->out, c->fd);
        if (n < 0) {
            if (errno == EAGAIN || errno == EINTR)
                break;
            conn_fail(c);
            return;
        }
        if (n == 0)
            break;
    }
    if (evbuffer_get_length(c->out) > 0) {
        if (!c->writing) {
            struct timeval tv = ms_tv(c->s->lim.client_timeout_ms);
            event_add(c->wev, &tv);
            c->writing = true;
        }
        return;
    }
    if (c->writing) {
        event_del(c->wev);
        c->writing = false;
    }
    after_flush(c);
}

static void on_write(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    struct conn *c = arg;
    enter(c);
    if (what & EV_TIMEOUT) {
        sw_info("http: client stopped reading for %ld ms; closing", c->s->lim.client_timeout_ms);
        conn_fail(c);
    } else {
        flush_out(c);
        call_drained(c);
    }
    leave(c);
}

/* ---- Accepting ---- */

/* Over the connection limit, the connection idle the longest (between
 * requests, or opened and silent) is closed to make room for the new one, so
 * idle clients cannot keep active ones out; the listener pauses only while
 * every connection is working on a request. */
static void evict_idle(struct sw_http_server *s, struct conn *fresh)
{
    for (struct conn *c = s->oldest; c; c = c->prev) {
        if (c == fresh || c->depth || !idle_conn(c))
            continue;
        if (sw_log_doubling(&s->evicted))
            sw_warn("connection limit %ld reached; closed the longest-idle connection "
                    "(%lu so far)", s->lim.max_connections, s->evicted);
        conn_free(c);
        return;
    }
}

static void on_accept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa,
                      int socklen, void *arg)
{
    (void)l;
    struct sw_http_server *s = arg;
    struct conn *c = calloc(1, sizeof *c);
    if (c) {
        /* the address as text only when asked for (the access log) */
        if (sa && sa->sa_family == AF_INET && socklen >= (int)sizeof(struct sockaddr_in)) {
            memcpy(c->peer_addr, &((struct sockaddr_in *)sa)->sin_addr, sizeof(struct in_addr));
            c->peer_family = AF_INET;
        } else if (sa && sa->sa_family == AF_INET6 && socklen >= (int)sizeof(struct sockaddr_in6)) {
            memcpy(c->peer_addr, &((struct sockaddr_in6 *)sa)->sin6_addr, sizeof(struct in6_addr));
            c->peer_family = AF_INET6;
        }
        c->s = s;
        c->fd = fd;
        c->rev = event_new(s->base, fd, EV_READ | EV_PERSIST, on_read, c);
        c->wev = event_new(s->base, fd, EV_WRITE | EV_PERSIST, on_write, c);
        c->timer = evtimer_new(s->base, on_timer, c);
        c->defer = event_new(s->base, -1, 0, on_defer, c);
        c->out = evbuffer_new();
    }
    if (!c || !c->rev || !c->wev || !c->timer || !c->defer || !c->out) {
        sw_error("out of memory accepting a connection");
        if (c) {
            if (c->rev) event_free(c->rev);
            if (c->wev) event_free(c->wev);
            if (c->timer) event_free(c->timer);
            if (c->defer) event_free(c->defer);
            if (c->out) evbuffer_free(c->out);
            free(c);
        }
        close(fd);
        return;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    c->next = s->conns;
    if (s->conns)
        s->conns->prev = c;
    else
        s->oldest = c;
    s->conns = c;
    s->n_conns++;
    if (s->n_conns > s->lim.max_connections)
        evict_idle(s, c);
    listener_update(s);
    c->state = C_IDLE;
    set_reading(c, true);
    start_timer(c, s->lim.client_timeout_ms);
}

/* An accept that failed for want of a descriptor (or of memory) would fail
 * again at once: the listening socket stays readable, and the loop would
 * spin on it, logging each time. The listener rests ACCEPT_REST_MS instead
 * (the connections wait in the kernel's backlog), and the rests are logged
 * at the 1st, 2nd, 4th, ... . */
#define ACCEPT_REST_MS 100

static void on_rest_end(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct sw_http_server *s = arg;
    s->resting = false;
    listener_update(s);
}

static void on_accept_error(struct evconnlistener *l, void *arg)
{
    (void)l;
    struct sw_http_server *s = arg;
    int err = EVUTIL_SOCKET_ERROR();
    if (!sw_errno_local_limit(err) || !s->rest) {
        sw_warn("accept: %s", evutil_socket_error_to_string(err));
        return;
    }
    if (sw_log_doubling(&s->rests))
        sw_warn("accept: %s; not accepting for %d ms (%lu time(s) so far): raise the "
                "open-files limit or lower limits.max_connections",
                evutil_socket_error_to_string(err), ACCEPT_REST_MS, s->rests);
    s->resting = true;
    listener_update(s);
    struct timeval tv = ms_tv(ACCEPT_REST_MS);
    evtimer_add(s->rest, &tv);
}

struct sw_http_server *sw_http_server_new(struct event_base *base, const char *host, int port,
                                          int backlog, const struct sw_http_limits *limits,
                                          const struct sw_http_handler *handler)
{
    struct sw_http_server *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->base = base;
    s->lim = *limits;
    s->h = *handler;
    struct evutil_addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                                    .ai_flags = EVUTIL_AI_PASSIVE | EVUTIL_AI_ADDRCONFIG};
    struct evutil_addrinfo *ai = NULL;
    char service[16];
    snprintf(service, sizeof service, "%d", port);
    if (evutil_getaddrinfo(host, service, &hints, &ai) != 0 || !ai) {
        free(s);
        errno = EADDRNOTAVAIL;
        return NULL;
    }
    s->listener = evconnlistener_new_bind(base, on_accept, s,
                                          LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE |
                                              LEV_OPT_CLOSE_ON_EXEC,
                                          backlog, ai->ai_addr, (int)ai->ai_addrlen);
    evutil_freeaddrinfo(ai);
    if (!s->listener) {
        int e = errno;
        free(s);
        errno = e;
        return NULL;
    }
    evconnlistener_set_error_cb(s->listener, on_accept_error);
    s->accepting = true;
    s->rest = evtimer_new(base, on_rest_end, s);
    struct sockaddr_storage bound;
    socklen_t bl = sizeof bound;
    s->port = port;
    if (getsockname(evconnlistener_get_fd(s->listener), (struct sockaddr *)&bound, &bl) == 0)
        s->port = bound.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&bound)->sin6_port)
                                              : ntohs(((struct sockaddr_in *)&bound)->sin_port);
    return s;
}

int sw_http_server_port(const struct sw_http_server *s)
{
    return s->port;
}

void sw_http_server_set_limits(struct sw_http_server *s, const struct sw_http_limits *limits)
{
    s->lim = *limits;
    listener_update(s);
}

void sw_http_server_stop_accepting(struct sw_http_server *s)
{
    s->stopping = true;
    listener_update(s);
    /* Idle keep-alive connections stay: a request on one gets its answer
     * (503 shutting_down from the front) and the connection closes after it. */
    for (struct conn *c = s->conns; c; c = c->next)
        c->keep_alive = false;
}

long sw_http_server_connections(const struct sw_http_server *s)
{
    return s->n_conns;
}

unsigned long sw_http_server_evicted(const struct sw_http_server *s)
{
    return s->evicted;
}

bool sw_http_server_flushed(const struct sw_http_server *s)
{
    for (const struct conn *c = s->conns; c; c = c->next)
        if (!c->dead && evbuffer_get_length(c->out) > 0)
            return false;
    return true;
}

void sw_http_server_free(struct sw_http_server *s)
{
    if (!s)
        return;
    s->stopping = true;
    while (s->conns)
        conn_free(s->conns);
    if (s->listener)
        evconnlistener_free(s->listener);
    if (s->rest)
        event_free(s->rest);
    sw_spares_free(&s->spare_in);
    sw_spares_free(&s->spare_req);
    free(s);
}

/* ---- The request ---- */

enum sw_http_method sw_http_method(const struct sw_http_req *req)
{
    return req->method;
}

const char *sw_http_method_name(const struct sw_http_req *req)
{
    return req->method_name ? req->method_name : "";
}

const char *sw_http_path(const struct sw_http_req *req)
{
    return req->path;
}

const char *sw_http_query(const struct sw_http_req *req)
{
    return req->query;
}

const char *sw_http_header(const struct sw_http_req *req, const char *name, int *count)
{
    const char *first = NULL;
    int n = 0;
    size_t len = strlen(name);
    for (int i = 0; i < req->n_hdrs; i++) {
        if (req->hdrs[i].name_len != len || strncasecmp(req->hdrs[i].name, name, len) != 0)
            continue;
        if (!first)
            first = req->hdrs[i].value;
        n++;
    }
    if (count)
        *count = n;
    return first;
}

void sw_http_each_header(const struct sw_http_req *req,
                         void (*fn)(const char *name, const char *value, void *ud), void *ud)
{
    for (int i = 0; i < req->n_hdrs; i++)
        fn(req->hdrs[i].name, req->hdrs[i].value, ud);
}

const char *sw_http_body(const struct sw_http_req *req, size_t *len)
{
    *len = req->body_gone ? 0 : req->body_len;
    return req->body ? req->body : "";
}

size_t sw_http_body_len(const struct sw_http_req *req)
{
    return req->body_len;
}

void sw_http_body_release(struct sw_http_req *req)
{
    if (!req || !req->complete || req->body_gone)
        return;
    chunk_put(req->c->s, req->body, req->body_cap);
    req->body = NULL;
    req->body_cap = 0;
    req->body_gone = true;
}

int sw_http_version_minor(const struct sw_http_req *req)
{
    return req->minor;
}

/* ---- Answering ---- */

/* A copy of name and value (each NUL-terminated) into h: the request's
 * arena when it has room, else one allocation. */
static bool out_copy(struct sw_http_req *req, struct out_hdr *h, const char *name,
                     size_t name_len, const char *value, size_t value_len)
{
    size_t need = name_len + value_len + 2;
    char *at;
    char *heap = NULL;
    if (need <= sizeof req->outs - req->outs_used) {
        at = req->outs + req->outs_used;
        req->outs_used += need;
    } else {
        at = heap = malloc(need);
        if (!at)
            return false;
    }
    memcpy(at, name, name_len);
    at[name_len] = '\0';
    memcpy(at + name_len + 1, value, value_len);
    at[name_len + 1 + value_len] = '\0';
    free(h->heap);
    *h = (struct out_hdr){at, at + name_len + 1, name_len, value_len, heap};
    return true;
}

void sw_http_add_header(struct sw_http_req *req, const char *name, const char *value)
{
    if (req->n_out == MAX_OUT_HEADERS)
        return;
    struct out_hdr *h = &req->out[req->n_out];
    *h = (struct out_hdr){0};
    if (out_copy(req, h, name, strlen(name), value, strlen(value)))
        req->n_out++;
}

static struct out_hdr *out_find(const struct sw_http_req *req, const char *name, size_t len)
{
    for (int i = 0; i < req->n_out; i++)
        if (req->out[i].name_len == len && strncasecmp(req->out[i].name, name, len) == 0)
            return (struct out_hdr *)&req->out[i];
    return NULL;
}

void sw_http_set_header(struct sw_http_req *req, const char *name, const char *value)
{
    size_t len = strlen(name);
    struct out_hdr *h = out_find(req, name, len);
    if (h) {
        /* the old copy stays in the arena until the request ends */
        struct out_hdr n = {0};
        if (out_copy(req, &n, h->name, h->name_len, value, strlen(value))) {
            free(h->heap);
            *h = n;
        }
        return;
    }
    sw_http_add_header(req, name, value);
}

bool sw_http_has_header_out(const struct sw_http_req *req, const char *name)
{
    return out_find(req, name, strlen(name)) != NULL;
}

const char *sw_http_header_out(const struct sw_http_req *req, const char *name)
{
    const struct out_hdr *h = out_find(req, name, strlen(name));
    return h ? h->value : NULL;
}

/* The status line and headers into the connection's output. */
/* An answer's head gathered in one buffer and added to the output at once
 * (one evbuffer_add instead of one per piece). */
struct head {
    struct evbuffer *o;
    size_t n;
    char buf[2048];
};

static void head_put(struct head *h, const void *p, size_t len)
{
    if (len > sizeof h->buf - h->n) {
        evbuffer_add(h->o, h->buf, h->n);
        h->n = 0;
        if (len > sizeof h->buf) {
            evbuffer_add(h->o, p, len);
            return;
        }
    }
    memcpy(h->buf + h->n, p, len);
    h->n += len;
}
#define HEAD_LIT(h, lit) head_put((h), (lit), sizeof(lit) - 1)

static void write_head(struct sw_http_req *r, int status, const char *ctype, bool has_len,
                       uint64_t len)
{
    struct conn *c = r->c;
    struct head h; /* its buffer is written before it is read */
    h.o = c->out;
    h.n = 0;
    struct head *o = &h;
    char num[24];
    HEAD_LIT(o, "HTTP/1.1 ");
    head_put(o, num, sw_fmt_u64(num, (uint64_t)status, 10, 1));
    head_put(o, " ", 1);
    const char *text = sw_http_status_text(status);
    head_put(o, text, strlen(text));
    HEAD_LIT(o, "\r\n");
    size_t dl;
    const char *d = date_line(&dl);
    head_put(o, d, dl);
    HEAD_LIT(o, "Content-Type: ");
    ctype = ctype ? ctype : "application/json";
    head_put(o, ctype, strlen(ctype));
    HEAD_LIT(o, "\r\n");
    if (has_len) {
        HEAD_LIT(o, "Content-Length: ");
        head_put(o, num, sw_fmt_u64(num, len, 10, 1));
        HEAD_LIT(o, "\r\n");
    } else if (r->chunked) {
        HEAD_LIT(o, "Transfer-Encoding: chunked\r\n");
    }
    if (!c->keep_alive) {
        HEAD_LIT(o, "Connection: close\r\n");
    } else {
        if (r->minor == 0)
            HEAD_LIT(o, "Connection: keep-alive\r\n");
        /* The idle limit, rounded down, so that a client honouring it (Node's
         * undici, Go, curl) closes an idle connection before the server does
         * instead of racing a new request against the server's close. */
        HEAD_LIT(o, "Keep-Alive: timeout=");
        head_put(o, num, sw_fmt_u64(num, (uint64_t)(c->s->lim.client_timeout_ms / 1000), 10, 1));
        HEAD_LIT(o, "\r\n");
    }
    for (int i = 0; i < r->n_out; i++) {
        head_put(o, r->out[i].name, r->out[i].name_len);
        HEAD_LIT(o, ": ");
        head_put(o, r->out[i].value, r->out[i].value_len);
        HEAD_LIT(o, "\r\n");
    }
    HEAD_LIT(o, "\r\n");
    evbuffer_add(h.o, h.buf, h.n);
}

/* The answer is queued in full: the request ends here. */
static void req_done(struct conn *c)
{
    struct sw_http_req *r = c->req;
    if (c->s->h.on_done)
        c->s->h.on_done(r, c->s->h.ud);
    c->req = NULL;
    req_free(c->s, r);
    if (c->dead)
        return;
    evtimer_del(c->timer);
    if (!c->keep_alive || c->s->stopping) {
        c->state = C_CLOSING;
        c->keep_alive = false;
    } else {
        c->state = C_IDLE;
        start_timer(c, c->s->lim.client_timeout_ms);
    }
    flush_out(c);
    if (!c->dead && c->state == C_IDLE && !c->in_process) {
        enter(c);
        process(c);
        leave(c);
    }
}

void sw_http_reply(struct sw_http_req *req, int status, const char *content_type,
                   const char *body, size_t len)
{
    struct conn *c = req->c;
    if (!c) /* only inside on_gone; the connection frees the request */
        return;
    if (c->state != C_BUSY)
        c->keep_alive = false; /* answered before the body was read */
    if (!c->dead) {
        size_t before = evbuffer_get_length(c->out);
        write_head(req, status, content_type, true, len);
        if (req->method != SW_HTTP_HEAD && len)
            evbuffer_add(c->out, body, len);
        req->bytes_out += evbuffer_get_length(c->out) - before;
    }
    req->status = status;
    req_done(c);
}

void sw_http_stream_start(struct sw_http_req *req, int status, const char *content_type)
{
    struct conn *c = req->c;
    req->streaming = true;
    if (!c || c->dead)
        return;
    if (req->minor == 0)
        c->keep_alive = false; /* the end of the body is the end of the connection */
    else
        req->chunked = true;
    size_t before = evbuffer_get_length(c->out);
    write_head(req, status, content_type, false, 0);
    req->bytes_out += evbuffer_get_length(c->out) - before;
    req->status = status;
    /* no write of its own: the head goes out with the first bytes */
}

void sw_http_stream_write(struct sw_http_req *req, struct evbuffer *data)
{
    struct conn *c = req->c;
    size_t n = evbuffer_get_length(data);
    if (!c || c->dead || n == 0) {
        evbuffer_drain(data, n);
        return;
    }
    req->bytes_out += n;
    if (req->chunked) {
        char size[24];
        size_t k = sw_fmt_u64(size, n, 16, 1);
        size[k++] = '\r';
        size[k++] = '\n';
        evbuffer_add(c->out, size, k);
        evbuffer_add_buffer(c->out, data);
        ADD_LIT(c->out, "\r\n");
    } else {
        evbuffer_add_buffer(c->out, data);
    }
    flush_out(c);
}

void sw_http_stream_end(struct sw_http_req *req)
{
    struct conn *c = req->c;
    if (!c) /* only inside on_gone; the connection frees the request */
        return;
    if (!c->dead && req->chunked)
        ADD_LIT(c->out, "0\r\n\r\n");
    req_done(c);
}

void sw_http_stream_abort(struct sw_http_req *req)
{
    struct conn *c = req->c;
    if (!c) /* only inside on_gone; the connection frees the request */
        return;
    c->keep_alive = false;
    req_done(c);
}

size_t sw_http_pending(const struct sw_http_req *req)
{
    return req->c && !req->c->dead ? evbuffer_get_length(req->c->out) : 0;
}

void sw_http_on_drained(struct sw_http_req *req, size_t low, void (*cb)(void *ud), void *ud)
{
    req->on_drained = cb;
    req->drained_ud = ud;
    req->drained_low = low;
    if (cb && req->c && !req->c->dead && evbuffer_get_length(req->c->out) <= low)
        event_active(req->c->defer, EV_TIMEOUT, 0);
}

void sw_http_on_gone(struct sw_http_req *req, void (*cb)(void *ud), void *ud)
{
    req->on_gone = cb;
    req->gone_ud = ud;
}

int sw_http_status(const struct sw_http_req *req)
{
    return req->status;
}

uint64_t sw_http_bytes_out(const struct sw_http_req *req)
{
    return req->bytes_out;
}

int64_t sw_http_start_ms(const struct sw_http_req *req)
{
    return req->start_ms;
}

const char *sw_http_peer(const struct sw_http_req *req)
{
    struct conn *c = req->c;
    if (!c)
        return "";
    if (!c->peer[0] && c->peer_family &&
        !inet_ntop(c->peer_family, c->peer_addr, c->peer, sizeof c->peer))
        c->peer[0] = '\0';
    return c->peer;
}
