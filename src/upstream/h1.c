#include "upstream/h1.h"

#include <errno.h>
#include <event2/event_struct.h>
#include <fcntl.h>
#include <llhttp.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/err.h"
#include "common/iovs.h"
#include "common/log.h"
#include "common/spares.h"

/* Idle keep-alive connections kept per backend address. */
#define IDLE_MAX 1024
#define READ_BUF 16384
#define SEND_IOV 256        /* pieces given to one writev (a body may have more) */
#define MAX_ANSWER_HEAD (80 * 1024)   /* header bytes of an answer */
/* Bytes held back while the caller is paused (a read's worth at most). */
#define PENDING_MAX (READ_BUF + 64)

/* ---- Pool ---- */

/* One connection to a backend. Its read event stays registered for the
 * connection's whole life, idle or in use, so a request costs no epoll
 * changes: the callback serves the request using it, or notices that an
 * idle connection was closed by the server. */
struct conn {
    int fd;
    struct event rev;
    bool reading;                   /* rev is added */
    struct entry *e;
    struct sw_h1req *req;           /* the request using it; NULL while idle */
    struct conn *next;              /* the idle list */
};

/* The connections of one address ("127.0.0.1:8081"). */
struct entry {
    struct sw_h1pool *pool;
    char key[80];                   /* host (< 64, IPv6 in brackets) ":" port */
    struct sockaddr_storage addr;
    socklen_t addr_len;
    struct conn *idle;              /* LIFO: the warmest first */
    int n_idle;
    struct entry *next;
};

/* A URL seen before: whether it is handled here, its address entry and the
 * path prefix after host:port, so a request does not parse the URL again. */
struct known_url {
    char *url;
    bool handled;
    struct entry *e;
    size_t prefix_off;
    struct known_url *next;
};

struct sw_h1pool {
    struct event_base *base;
    struct entry *entries;
    struct known_url *urls;
    struct sw_spares spare;         /* ended requests (about 1 KB each) for the next ones */
};

/* One attempt: a POST on a connection of the pool. */
struct sw_h1req {
    struct sw_h1pool *pool;
    struct entry *e;
    struct conn *c;                 /* the connection in use, or NULL */
    bool reused;                    /* the connection came from the pool */
    bool retried;
    bool connected;
    struct event wev;               /* write: connect, or a request the socket did not take whole */
    bool writing;                   /* wev is added */
    bool starting;                  /* inside sw_h1_start: failures wait for the loop */
    struct event timer;             /* connect timeout, then the deadline */
    int64_t deadline_ms;            /* sw_now_ms() clock */
    long connect_timeout_ms;
    int fail_err;                   /* a failure found inside sw_h1_start, reported by the timer */
    char fail_why[96];
    char line[512];
    size_t line_len;
    const char *head;
    size_t head_len;
    struct sw_iovs body;            /* the body's pieces, sent in turn */
    size_t body_len;                /* their sum */
    size_t sent;                    /* bytes of the request written */
    llhttp_t parser;
    size_t head_bytes;              /* header names and values of the answer so far */
    bool got_bytes;                 /* any response byte arrived */
    bool complete, keep_alive;
    char field[16];                 /* the header name being read, if it can be Retry-After */
    size_t field_len;
    bool in_value;                  /* the parser is in a header value */
    bool in_retry_after;
    char ra[16];
    size_t ra_len;
    bool paused;
    int abort_err;                  /* set by a callback to stop */
    struct sw_buf pending;          /* body bytes held while paused */
    struct sw_h1_cbs cbs;
    void *ud;
};


static void on_conn_read(evutil_socket_t fd, short what, void *arg);

static void conn_reading(struct conn *c, bool on)
{
    if (on == c->reading)
        return;
    if (on)
        event_add(&c->rev, NULL);
    else
        event_del(&c->rev);
    c->reading = on;
}

static struct conn *conn_new(struct entry *e)
{
    struct conn *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->fd = socket(e->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c->fd < 0) {
        int err = errno;  /* the caller tells the gateway's limits by it */
        free(c);
        errno = err;
        return NULL;
    }
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(c->fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
    c->e = e;
    event_assign(&c->rev, e->pool->base, c->fd, EV_READ | EV_PERSIST, on_conn_read, c);
    return c;
}

static void conn_free(struct conn *c)
{
    conn_reading(c, false);
    close(c->fd);
    free(c);
}

static void idle_remove(struct conn *c)
{
    struct entry *e = c->e;
    struct conn **pp = &e->idle;
    while (*pp && *pp != c)
        pp = &(*pp)->next;
    if (*pp) {
        *pp = c->next;
        e->n_idle--;
    }
}

/* Back to the pool after a complete answer on a keep-alive connection. */
static void idle_push(struct conn *c)
{
    struct entry *e = c->e;
    c->req = NULL;
    if (e->n_idle >= IDLE_MAX) {
        conn_free(c);
        return;
    }
    conn_reading(c, true); /* a server that closes it is noticed at once */
    c->next = e->idle;
    e->idle = c;
    e->n_idle++;
}

static struct conn *idle_pop(struct entry *e)
{
    struct conn *c = e->idle;
    if (c) {
        e->idle = c->next;
        e->n_idle--;
    }
    return c;
}

struct sw_h1pool *sw_h1pool_new(struct event_base *base)
{
    struct sw_h1pool *p = calloc(1, sizeof *p);
    if (p)
        p->base = base;
    return p;
}

void sw_h1pool_free(struct sw_h1pool *pool)
{
    if (!pool)
        return;
    while (pool->entries) {
        struct entry *e = pool->entries;
        pool->entries = e->next;
        for (struct conn *c; (c = idle_pop(e));)
            conn_free(c);
        free(e);
    }
    while (pool->urls) {
        struct known_url *k = pool->urls;
        pool->urls = k->next;
        free(k->url);
        free(k);
    }
    sw_spares_free(&pool->spare);
    free(pool);
}

/* ---- URLs ---- */

struct target {
    char host[64];
    int port;
    const char *prefix;             /* the path after host:port, "" if none */
};

static bool parse_url(const char *url, struct target *t)
{
    static const char scheme[] = "http://";
    if (strncasecmp(url, scheme, sizeof scheme - 1) != 0)
        return false;
    const char *h = url + sizeof scheme - 1;
    const char *end = h + strcspn(h, "/");
    const char *colon = NULL;
    if (*h == '[') { /* [v6]:port */
        const char *rb = memchr(h, ']', (size_t)(end - h));
        if (!rb)
            return false;
        colon = rb + 1 < end && rb[1] == ':' ? rb + 1 : NULL;
        size_t n = (size_t)(rb - h - 1);
        if (n >= sizeof t->host)
            return false;
        memcpy(t->host, h + 1, n);
        t->host[n] = '\0';
    } else {
        colon = memchr(h, ':', (size_t)(end - h));
        size_t n = (size_t)((colon ? colon : end) - h);
        if (n == 0 || n >= sizeof t->host)
            return false;
        memcpy(t->host, h, n);
        t->host[n] = '\0';
    }
    t->port = 80;
    if (colon) {
        char *e;
        long port = strtol(colon + 1, &e, 10);
        if (e != end || port < 1 || port > 65535)
            return false;
        t->port = (int)port;
    }
    t->prefix = end;
    return true;
}

static bool numeric_addr(const char *host, int port, struct sockaddr_storage *ss,
                         socklen_t *len)
{
    memset(ss, 0, sizeof *ss);
    struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;
    const char *h = strcasecmp(host, "localhost") == 0 ? "127.0.0.1" : host;
    if (evutil_inet_pton(AF_INET, h, &a4->sin_addr) == 1) {
        a4->sin_family = AF_INET;
        a4->sin_port = htons((uint16_t)port);
        *len = sizeof *a4;
        return true;
    }
    if (evutil_inet_pton(AF_INET6, h, &a6->sin6_addr) == 1) {
        a6->sin6_family = AF_INET6;
        a6->sin6_port = htons((uint16_t)port);
        *len = sizeof *a6;
        return true;
    }
    return false;
}

bool sw_h1_handles(const char *url)
{
    struct target t;
    struct sockaddr_storage ss;
    socklen_t len;
    return parse_url(url, &t) && numeric_addr(t.host, t.port, &ss, &len);
}

static struct entry *entry_for(struct sw_h1pool *pool, const struct target *t)
{
    char key[sizeof ((struct entry *)0)->key];
    /* also the Host header: an IPv6 literal goes in brackets */
    if (strchr(t->host, ':'))
        snprintf(key, sizeof key, "[%s]:%d", t->host, t->port);
    else
        snprintf(key, sizeof key, "%s:%d", t->host, t->port);
    for (struct entry *e = pool->entries; e; e = e->next)
        if (strcmp(e->key, key) == 0)
            return e;
    struct entry *e = calloc(1, sizeof *e);
    if (!e)
        return NULL;
    if (!numeric_addr(t->host, t->port, &e->addr, &e->addr_len)) {
        free(e);
        return NULL;
    }
    e->pool = pool;
    memcpy(e->key, key, sizeof key);
    e->next = pool->entries;
    pool->entries = e;
    return e;
}

/* The URL's record (created on first sight); NULL when out of memory. */
static struct known_url *known_url(struct sw_h1pool *pool, const char *url)
{
    for (struct known_url *k = pool->urls; k; k = k->next)
        if (strcmp(k->url, url) == 0)
            return k;
    struct known_url *k = calloc(1, sizeof *k);
    if (!k || !(k->url = strdup(url))) {
        free(k);
        return NULL;
    }
    struct target t;
    if (parse_url(url, &t) && (k->e = entry_for(pool, &t))) {
        k->handled = true;
        k->prefix_off = (size_t)(t.prefix - url);
    }
    k->next = pool->urls;
    pool->urls = k;
    return k;
}

bool sw_h1pool_handles(struct sw_h1pool *pool, const char *url)
{
    struct known_url *k = known_url(pool, url);
    return k ? k->handled : sw_h1_handles(url);
}

/* ---- Response parsing ---- */

static void deliver(struct sw_h1req *r, const char *at, size_t len)
{
    if (r->paused) { /* held until resume */
        if (sw_buf_append(&r->pending, at, len))
            r->abort_err = SW_ENOMEM;
        return;
    }
    size_t n = r->cbs.on_data(r->ud, at, len);
    if (n == SW_H1_PAUSE) {
        r->paused = true;
        if (sw_buf_append(&r->pending, at, len))
            r->abort_err = SW_ENOMEM;
    } else if (n != len) {
        r->abort_err = SW_ECANCELED;
    }
}

/* Header lines of an answer count against MAX_ANSWER_HEAD bytes. */
static int count_head(llhttp_t *p, struct sw_h1req *r, size_t len)
{
    r->head_bytes += len;
    if (r->head_bytes <= MAX_ANSWER_HEAD)
        return HPE_OK;
    llhttp_set_error_reason(p, "headers over 80 KiB");
    return HPE_USER;
}

static int on_header_field(llhttp_t *p, const char *at, size_t len)
{
    struct sw_h1req *r = p->data;
    if (count_head(p, r, len))
        return HPE_USER;
    if (r->in_value) { /* a new header starts */
        r->in_value = false;
        r->field_len = 0;
    }
    if (r->field_len + len < sizeof r->field) {
        memcpy(r->field + r->field_len, at, len);
        r->field_len += len;
    } else {
        r->field_len = sizeof r->field; /* too long to be Retry-After */
    }
    return 0;
}

static int on_header_value(llhttp_t *p, const char *at, size_t len)
{
    struct sw_h1req *r = p->data;
    if (count_head(p, r, len))
        return HPE_USER;
    if (!r->in_value) {
        r->in_value = true;
        r->in_retry_after = r->field_len == 11 && strncasecmp(r->field, "retry-after", 11) == 0;
        if (r->in_retry_after)
            r->ra_len = 0;
    }
    if (r->in_retry_after && r->ra_len + len < sizeof r->ra) {
        memcpy(r->ra + r->ra_len, at, len);
        r->ra_len += len;
    }
    return 0;
}

static int on_headers_complete(llhttp_t *p)
{
    struct sw_h1req *r = p->data;
    if (p->status_code < 200) /* an interim answer: its headers do not count */
        return 0;
    long ra = -1;
    if (r->ra_len) {
        char tmp[sizeof r->ra + 1];
        memcpy(tmp, r->ra, r->ra_len);
        tmp[r->ra_len] = '\0';
        char *end;
        long v = strtol(tmp, &end, 10);
        if (end != tmp && v >= 0)
            ra = v;
    }
    if (r->cbs.on_head)
        r->cbs.on_head(r->ud, (long)p->status_code, ra);
    return 0;
}

static int on_body(llhttp_t *p, const char *at, size_t len)
{
    struct sw_h1req *r = p->data;
    deliver(r, at, len);
    return r->abort_err ? 1 : 0;
}

static int on_message_complete(llhttp_t *p)
{
    struct sw_h1req *r = p->data;
    if (p->status_code < 200) { /* an interim answer: the real one follows */
        r->field_len = 0;
        r->ra_len = 0;
        r->in_value = false;
        return 0;
    }
    r->complete = true;
    r->keep_alive = llhttp_should_keep_alive(p);
    return HPE_PAUSED;
}

static const llhttp_settings_t settings = {
    .on_header_field = on_header_field,
    .on_header_value = on_header_value,
    .on_headers_complete = on_headers_complete,
    .on_body = on_body,
    .on_message_complete = on_message_complete,
};

/* ---- The request ---- */

static void stop_writing(struct sw_h1req *r)
{
    if (r->writing) {
        event_del(&r->wev);
        r->writing = false;
    }
}

static void req_free(struct sw_h1req *r)
{
    stop_writing(r);
    event_del(&r->timer);
    if (r->c)
        conn_free(r->c); /* not reusable: the answer did not end cleanly */
    sw_buf_free(&r->pending);
    sw_iovs_free(&r->body);
    struct sw_h1pool *pool = r->pool;
    sw_spares_put(&pool->spare, r);
}

/* Ends the request: the connection goes back to the pool when the answer
 * was complete and may be kept; the request is freed before the caller
 * hears of it. */
static void finish(struct sw_h1req *r, int err, const char *why)
{
    if (!err && r->complete && r->keep_alive && r->c && !r->paused) {
        idle_push(r->c);
        r->c = NULL;
    }
    void (*done)(void *, int, const char *) = r->cbs.on_done;
    void *ud = r->ud;
    char msg[160]; /* why may live in r */
    size_t n = why ? strnlen(why, sizeof msg - 1) : 0;
    memcpy(msg, why ? why : "", n);
    msg[n] = '\0';
    req_free(r);
    done(ud, err, msg);
}

/* Arms the timer for min(ms, what is left of the deadline). */
static void arm(struct sw_h1req *r, long ms)
{
    int64_t left = r->deadline_ms - sw_now_ms();
    if (left < 0)
        left = 0;
    if (ms >= 0 && ms < left)
        left = ms;
    left += 1; /* rounding: never before the deadline the relay measures */
    struct timeval tv = {(time_t)(left / 1000), (suseconds_t)(left % 1000) * 1000};
    event_base_update_cache_time(r->pool->base); /* from now, not the loop turn's start */
    evtimer_add(&r->timer, &tv);
}

static bool retry_fresh(struct sw_h1req *r);

/* A connection that failed before any byte of the answer, taken from the
 * pool: the server may have closed it just as it was reused. Once, on a
 * fresh connection. Inside sw_h1_start a failure waits for the loop. */
static void fail_io(struct sw_h1req *r, int err, const char *why)
{
    if (r->reused && !r->got_bytes && !r->retried && retry_fresh(r))
        return;
    if (r->starting) {
        r->fail_err = err;
        snprintf(r->fail_why, sizeof r->fail_why, "%s", why);
        event_active(&r->timer, EV_TIMEOUT, 0);
        return;
    }
    finish(r, err, why);
}

static void read_answer(struct sw_h1req *r)
{
    char buf[READ_BUF];
    for (;;) {
        ssize_t n = read(r->c->fd, buf, sizeof buf);
        if (n < 0) {
            if (errno == EAGAIN || errno == EINTR)
                return;
            fail_io(r, r->connected ? SW_EPROTO : SW_ECONNECT, strerror(errno));
            return;
        }
        if (n > 0)
            r->got_bytes = true;
        /* the end of the stream ends an answer that runs until the close */
        llhttp_errno_t e = n > 0 ? llhttp_execute(&r->parser, buf, (size_t)n) : llhttp_finish(&r->parser);
        size_t done = n == 0 || e == HPE_OK ? (size_t)n
                                            : (size_t)(llhttp_get_error_pos(&r->parser) - buf);
        if (r->abort_err) {
            finish(r, r->abort_err == SW_ENOMEM ? SW_EPROTO : r->abort_err,
                   r->abort_err == SW_ECANCELED ? "aborted by the relay" : "out of memory");
            return;
        }
        if (r->complete) {
            if (done < (size_t)n)
                r->keep_alive = false; /* bytes after the answer: do not reuse */
            if (!r->paused)
                finish(r, SW_OK, NULL);
            else
                conn_reading(r->c, false);
            return;
        }
        if (n == 0) {
            fail_io(r, SW_EPROTO,
                    r->got_bytes ? "connection closed before the answer ended"
                                 : "connection closed without an answer");
            return;
        }
        if (e != HPE_OK) {
            char why[120];
            snprintf(why, sizeof why, "malformed HTTP answer: %s", llhttp_get_error_reason(&r->parser));
            finish(r, SW_EPROTO, why);
            return;
        }
        if (r->paused) {
            conn_reading(r->c, false); /* read on after sw_h1_resume */
            return;
        }
        /* A short read took all the socket had: the (level-triggered) read
         * event says when more comes, without a read that finds nothing. */
        if ((size_t)n < sizeof buf)
            return;
    }
}

static void on_conn_read(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct conn *c = arg;
    if (!c->req) { /* idle: the server closed it, or sent what nobody asked for */
        idle_remove(c);
        conn_free(c);
        return;
    }
    read_answer(c->req);
}

static void send_request(struct sw_h1req *r);

/* The socket connected (or failed to), or takes more of the request. */
static void on_writable(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct sw_h1req *r = arg;
    if (!r->connected) {
        int soerr = 0;
        socklen_t sl = sizeof soerr;
        getsockopt(r->c->fd, SOL_SOCKET, SO_ERROR, &soerr, &sl);
        if (soerr) {
            finish(r, SW_ECONNECT, strerror(soerr));
            return;
        }
        r->connected = true;
        arm(r, -1); /* from here the rest of the deadline */
    }
    send_request(r);
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct sw_h1req *r = arg;
    if (r->fail_err) {
        finish(r, r->fail_err, r->fail_why);
        return;
    }
    /* libevent's timer clock is coarse (a few ms): a deadline timer can fire
     * before the deadline the relay measures. Wait out the rest, so that a
     * request that runs out of time is always seen as past its deadline. */
    if (r->connected && sw_now_ms() < r->deadline_ms) {
        arm(r, -1);
        return;
    }
    finish(r, SW_ETIMEOUT, r->connected ? "no complete answer before the deadline"
                                        : "connect timeout");
}

static void want_write(struct sw_h1req *r)
{
    if (!r->writing) {
        event_assign(&r->wev, r->pool->base, r->c->fd, EV_WRITE | EV_PERSIST, on_writable, r);
        event_add(&r->wev, NULL);
        r->writing = true;
    }
}

static void send_request(struct sw_h1req *r)
{
    size_t total = r->line_len + r->head_len + r->body_len;
    const struct iovec head[2] = {{r->line, r->line_len}, {(void *)r->head, r->head_len}};
    const struct iovec *body = sw_iovs_cv(&r->body);
    while (r->sent < total) {
        /* what is left, SEND_IOV pieces at a time */
        struct iovec iov[SEND_IOV];
        int n = 0;
        size_t skip = r->sent;
        for (int i = 0; i < 2 + r->body.n && n < SEND_IOV; i++) {
            const struct iovec *pt = i < 2 ? &head[i] : &body[i - 2];
            if (skip >= pt->iov_len) {
                skip -= pt->iov_len;
                continue;
            }
            iov[n].iov_base = (char *)pt->iov_base + skip;
            iov[n++].iov_len = pt->iov_len - skip;
            skip = 0;
        }
        ssize_t w = writev(r->c->fd, iov, n);
        if (w < 0) {
            if (errno == EAGAIN || errno == EINTR) {
                want_write(r);
                return;
            }
            fail_io(r, r->connected ? SW_EPROTO : SW_ECONNECT, strerror(errno));
            return;
        }
        if (!r->connected) { /* it took bytes: the handshake is done */
            r->connected = true;
            arm(r, -1);
        }
        r->sent += (size_t)w;
    }
    stop_writing(r);
}

/* Takes a pooled connection or opens one, and starts sending. A failure is
 * reported from the loop (through the timer), never from here. */
static void open_conn(struct sw_h1req *r, bool allow_idle)
{
    r->c = allow_idle ? idle_pop(r->e) : NULL;
    r->reused = r->c != NULL;
    if (r->reused) {
        r->c->req = r;
        r->connected = true;
        arm(r, -1);
        send_request(r);
        return;
    }
    r->connected = false;
    r->c = conn_new(r->e);
    if (r->c) {
        r->c->req = r;
        conn_reading(r->c, true);
        if (connect(r->c->fd, (struct sockaddr *)&r->e->addr, r->e->addr_len) == 0) {
            r->connected = true;
            arm(r, -1);
            send_request(r);
            return;
        }
        if (errno == EINPROGRESS) {
            /* A handshake over loopback is usually done when connect returns:
             * the request goes now, and only a socket that is not connected
             * yet (EAGAIN) waits to be writable (on_writable). */
            arm(r, r->connect_timeout_ms);
            send_request(r);
            return;
        }
    }
    /* the gateway's own limits: the backend was never asked */
    r->fail_err = sw_errno_local_limit(errno) ? SW_ELOCAL : SW_ECONNECT;
    snprintf(r->fail_why, sizeof r->fail_why, "%s", strerror(errno));
    if (r->c) {
        conn_free(r->c);
        r->c = NULL;
    }
    event_active(&r->timer, EV_TIMEOUT, 0);
}

static bool retry_fresh(struct sw_h1req *r)
{
    r->retried = true;
    stop_writing(r);
    conn_free(r->c);
    r->c = NULL;
    r->sent = 0;
    r->got_bytes = false;
    r->head_bytes = 0;
    llhttp_init(&r->parser, HTTP_RESPONSE, &settings);
    r->parser.data = r;
    sw_info("upstream %s: a pooled connection was closed by the server; retrying on a new one",
            r->e->key);
    open_conn(r, false);
    return true;
}

struct sw_h1req *sw_h1_start(struct sw_h1pool *pool, const char *url, const char *path,
                             const char *head, size_t head_len, const struct iovec *body,
                             int n_body, long connect_timeout_ms, long timeout_ms,
                             const struct sw_h1_cbs *cbs, void *ud)
{
    struct known_url *k = known_url(pool, url);
    if (!k || !k->handled || n_body < 1)
        return NULL;
    struct sw_h1req *r = sw_spares_get(&pool->spare, sizeof *r);
    if (!r)
        return NULL;
    memset(r, 0, sizeof *r);
    r->pool = pool;
    r->cbs = *cbs;
    r->ud = ud;
    r->head = head;
    r->head_len = head_len;
    if (sw_iovs_set(&r->body, body, n_body)) {
        sw_spares_put(&pool->spare, r);
        return NULL;
    }
    size_t body_len = 0;
    for (int i = 0; i < n_body; i++)
        body_len += body[i].iov_len;
    r->body_len = body_len;
    r->deadline_ms = sw_now_ms() + (timeout_ms > 0 ? timeout_ms : 1);
    r->connect_timeout_ms = connect_timeout_ms;
    sw_buf_init(&r->pending, PENDING_MAX * 4);
    llhttp_init(&r->parser, HTTP_RESPONSE, &settings);
    r->parser.data = r;
    r->e = k->e;
    evtimer_assign(&r->timer, pool->base, on_timer, r);
    /* "POST {prefix}{path} HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Length: {n}\r\n" */
    const char *prefix = url + k->prefix_off;
    size_t lp = strlen(prefix), lpath = strlen(path), lkey = strlen(r->e->key);
    static const char a[] = "POST ", b[] = " HTTP/1.1\r\nHost: ", c[] = "\r\nContent-Length: ";
    char digits[24];
    size_t ld = sw_fmt_u64(digits, body_len, 10, 1);
    size_t n = sizeof a - 1 + lp + lpath + sizeof b - 1 + lkey + sizeof c - 1 + ld + 2;
    if (n >= sizeof r->line) {
        req_free(r);
        return NULL;
    }
    char *o = r->line;
    memcpy(o, a, sizeof a - 1), o += sizeof a - 1;
    memcpy(o, prefix, lp), o += lp;
    memcpy(o, path, lpath), o += lpath;
    memcpy(o, b, sizeof b - 1), o += sizeof b - 1;
    memcpy(o, r->e->key, lkey), o += lkey;
    memcpy(o, c, sizeof c - 1), o += sizeof c - 1;
    memcpy(o, digits, ld), o += ld;
    memcpy(o, "\r\n", 3);
    r->line_len = n;
    r->starting = true;
    open_conn(r, true);
    r->starting = false;
    return r;
}

bool sw_h1_forget_request(struct sw_h1req *r)
{
    if (!r->got_bytes || r->sent < r->line_len + r->head_len + r->body_len)
        return false;
    r->head = NULL;
    r->body.n = 0;
    r->sent = r->line_len = r->head_len = r->body_len = 0;
    return true;
}

void sw_h1_abort(struct sw_h1req *r)
{
    if (r)
        req_free(r); /* closes the connection: the server sees the abort */
}

void sw_h1_resume(struct sw_h1req *r)
{
    if (!r->paused)
        return;
    r->paused = false;
    while (r->pending.len && !r->paused) {
        size_t len = r->pending.len;
        size_t n = r->cbs.on_data(r->ud, r->pending.ptr, len);
        if (n == SW_H1_PAUSE) {
            r->paused = true;
            return;
        }
        if (n != len) {
            finish(r, SW_ECANCELED, "aborted by the relay");
            return;
        }
        sw_buf_consume(&r->pending, len);
    }
    if (r->complete) {
        finish(r, SW_OK, NULL);
        return;
    }
    conn_reading(r->c, true);
}
