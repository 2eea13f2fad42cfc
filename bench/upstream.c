/* The fixed upstream of bench/proxy.sh: a single-threaded epoll HTTP/1.1
 * server that answers every POST with a canned OpenAI chat completion, so the
 * proxies in front of it are what is measured.
 *
 *   POST, body without "stream": true  -> one chat.completion JSON
 *                                         (Content-Length, keep-alive)
 *   POST, body with "stream": true     -> text/event-stream, chunked: 22 SSE
 *                                         events, the first at once, then one
 *                                         every EVENT_MS ms, the last one
 *                                         "data: [DONE]"
 *   GET (any path, e.g. /health)       -> 200 {"status":"ok"}
 *
 * Every event is due EVENT_MS after the previous one of the same stream, so
 * one FIFO of waiting streams is always in due order: no timer heap.
 *
 *   upstream PORT EVENT_MS [EVENTS]
 *                               prints "listening on 127.0.0.1:PORT" (PORT 0:
 *                               a free one); EVENTS (22) per stream */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static int n_events = 22; /* SSE events per stream, the last one [DONE] (at least 2) */
#define MAX_REQ (1 << 20)

static const char completion[] =
    "{\"id\":\"chatcmpl-bench\",\"object\":\"chat.completion\",\"created\":1700000000,"
    "\"model\":\"bench\",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\","
    "\"content\":\"A spillway lets a reservoir release surplus water safely, so the dam "
    "itself is never overtopped.\"},\"finish_reason\":\"stop\"}],"
    "\"usage\":{\"prompt_tokens\":240,\"completion_tokens\":21,\"total_tokens\":261}}";

struct conn {
    int fd;
    char *in;
    size_t in_len, in_cap;
    char *out;
    size_t out_len, out_off, out_cap;
    int streaming;      /* events sent so far; 0: not streaming */
    int close_after;    /* the request asked for Connection: close */
    int want_out;       /* EPOLLOUT registered */
    double due;         /* next event, when queued */
    struct conn *next;  /* FIFO of streams waiting for their next event */
    int queued;
    int dead;
};

static int ep;
static double event_s;
static struct conn *q_head, *q_tail;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void out_add(struct conn *c, const char *p, size_t n)
{
    if (c->out_len + n > c->out_cap) {
        c->out_cap = (c->out_len + n) * 2;
        c->out = realloc(c->out, c->out_cap);
        if (!c->out)
            abort();
    }
    memcpy(c->out + c->out_len, p, n);
    c->out_len += n;
}

static void conn_close(struct conn *c)
{
    close(c->fd);
    c->dead = 1;
    free(c->in);
    free(c->out);
    c->in = c->out = NULL;
    if (!c->queued)
        free(c);
    /* a queued connection is freed when the FIFO reaches it */
}

/* Writes what the socket takes; 0 ok, -1 closed. */
static int flush(struct conn *c)
{
    while (c->out_off < c->out_len) {
        ssize_t w = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && errno == EAGAIN)
            break;
        if (w <= 0) {
            conn_close(c);
            return -1;
        }
        c->out_off += (size_t)w;
    }
    if (c->out_off == c->out_len)
        c->out_off = c->out_len = 0;
    int want = c->out_len > 0;
    if (want != c->want_out) {
        struct epoll_event ev = {.events = EPOLLIN | (want ? EPOLLOUT : 0), .data.ptr = c};
        epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
        c->want_out = want;
    }
    if (!c->out_len && !c->streaming && c->close_after) {
        conn_close(c);
        return -1;
    }
    return 0;
}

static void chunk(struct conn *c, const char *p, size_t n)
{
    char h[16];
    int hn = snprintf(h, sizeof h, "%zx\r\n", n);
    out_add(c, h, (size_t)hn);
    out_add(c, p, n);
    out_add(c, "\r\n", 2);
}

/* The next event of a stream; the last one ends the response. */
static void send_event(struct conn *c)
{
    char ev[512];
    int i = c->streaming++;
    int n;
    if (i == n_events - 1) {
        n = snprintf(ev, sizeof ev, "data: [DONE]\n\n");
    } else if (i == n_events - 2) {
        n = snprintf(ev, sizeof ev,
                     "data: {\"id\":\"chatcmpl-bench\",\"object\":\"chat.completion.chunk\","
                     "\"created\":1700000000,\"model\":\"bench\",\"choices\":[{\"index\":0,"
                     "\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":240,"
                     "\"completion_tokens\":20,\"total_tokens\":260}}\n\n");
    } else {
        n = snprintf(ev, sizeof ev,
                     "data: {\"id\":\"chatcmpl-bench\",\"object\":\"chat.completion.chunk\","
                     "\"created\":1700000000,\"model\":\"bench\",\"choices\":[{\"index\":0,"
                     "\"delta\":{%s\"content\":\" tok%02d\"},\"finish_reason\":null}]}\n\n",
                     i == 0 ? "\"role\":\"assistant\"," : "", i);
    }
    chunk(c, ev, (size_t)n);
    if (c->streaming == n_events) {
        out_add(c, "0\r\n\r\n", 5);
        c->streaming = 0;
    } else {
        c->due = now_s() + event_s;
        c->next = NULL;
        c->queued = 1;
        if (q_tail)
            q_tail->next = c;
        else
            q_head = c;
        q_tail = c;
    }
}

static const char *find_hdr_end(const char *p, size_t n)
{
    for (size_t i = 3; i < n; i++)
        if (p[i] == '\n' && p[i - 1] == '\r' && p[i - 2] == '\n' && p[i - 3] == '\r')
            return p + i + 1;
    return NULL;
}

/* "stream" : true anywhere in the body (the request's own key). */
static int wants_stream(const char *b, size_t n)
{
    static const char key[] = "\"stream\"";
    for (const char *p = b; p && p + sizeof key - 1 <= b + n;) {
        p = memmem(p, (size_t)(b + n - p), key, sizeof key - 1);
        if (!p)
            return 0;
        p += sizeof key - 1;
        while (p < b + n && (*p == ' ' || *p == ':' || *p == '\t'))
            p++;
        if ((size_t)(b + n - p) >= 4 && !memcmp(p, "true", 4))
            return 1;
    }
    return 0;
}

/* Handles every complete request in the input buffer; 0 ok, -1 closed. */
static int serve(struct conn *c)
{
    while (!c->streaming && c->in_len) {
        const char *he = find_hdr_end(c->in, c->in_len);
        if (!he)
            return c->in_len > 65536 ? (conn_close(c), -1) : 0;
        size_t hlen = (size_t)(he - c->in), clen = 0;
        int get = !strncmp(c->in, "GET ", 4) || !strncmp(c->in, "HEAD ", 5);
        c->close_after = 0;
        for (const char *l = c->in; l < he;) {
            const char *e = memchr(l, '\n', (size_t)(he - l));
            if (!e)
                break;
            if (!strncasecmp(l, "content-length:", 15))
                clen = strtoul(l + 15, NULL, 10);
            else if (!strncasecmp(l, "connection:", 11) && memmem(l, (size_t)(e - l), "lose", 4))
                c->close_after = 1;
            l = e + 1;
        }
        if (clen > MAX_REQ)
            return conn_close(c), -1;
        if (c->in_len < hlen + clen)
            return 0;
        const char *body = he;
        char hdr[256];
        if (get) {
            static const char ok[] = "{\"status\":\"ok\"}";
            int n = snprintf(hdr, sizeof hdr,
                             "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                             "Content-Length: %zu\r\n%s\r\n",
                             sizeof ok - 1, c->close_after ? "Connection: close\r\n" : "");
            out_add(c, hdr, (size_t)n);
            out_add(c, ok, sizeof ok - 1);
        } else if (wants_stream(body, clen)) {
            int n = snprintf(hdr, sizeof hdr,
                             "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                             "Cache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n%s\r\n",
                             c->close_after ? "Connection: close\r\n" : "");
            out_add(c, hdr, (size_t)n);
            send_event(c);      /* the first event at once */
        } else {
            int n = snprintf(hdr, sizeof hdr,
                             "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                             "Content-Length: %zu\r\n%s\r\n",
                             sizeof completion - 1, c->close_after ? "Connection: close\r\n" : "");
            out_add(c, hdr, (size_t)n);
            out_add(c, completion, sizeof completion - 1);
        }
        memmove(c->in, c->in + hlen + clen, c->in_len - hlen - clen);
        c->in_len -= hlen + clen;
        if (flush(c))
            return -1;
    }
    return 0;
}

static void on_read(struct conn *c)
{
    for (;;) {
        if (c->in_cap - c->in_len < 16384) {
            c->in_cap = c->in_cap ? c->in_cap * 2 : 32768;
            if (c->in_cap > 2 * MAX_REQ) {
                conn_close(c);
                return;
            }
            c->in = realloc(c->in, c->in_cap);
            if (!c->in)
                abort();
        }
        ssize_t r = recv(c->fd, c->in + c->in_len, c->in_cap - c->in_len, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 && errno == EAGAIN)
            break;
        if (r <= 0) {
            conn_close(c);
            return;
        }
        c->in_len += (size_t)r;
    }
    serve(c);
}

int main(int argc, char **argv)
{
    if (argc != 3 && argc != 4) {
        fprintf(stderr, "usage: %s PORT EVENT_MS [EVENTS]\n", argv[0]);
        return 2;
    }
    if (argc == 4 && (n_events = atoi(argv[3])) < 2)
        n_events = 2;
    event_s = atof(argv[2]) / 1000.0;
    signal(SIGPIPE, SIG_IGN);
    int ls = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    int one = 1;
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[1])),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    if (bind(ls, (struct sockaddr *)&a, sizeof a) || listen(ls, 65535) ||
        getsockname(ls, (struct sockaddr *)&a, &al)) {
        perror("upstream: listen");
        return 1;
    }
    printf("listening on 127.0.0.1:%d\n", ntohs(a.sin_port));
    fflush(stdout);
    ep = epoll_create1(0);
    struct epoll_event lev = {.events = EPOLLIN, .data.ptr = NULL};
    epoll_ctl(ep, EPOLL_CTL_ADD, ls, &lev);
    struct epoll_event evs[512];
    for (;;) {
        int timeout = -1;
        if (q_head) {
            double d = q_head->due - now_s();
            timeout = d <= 0 ? 0 : (int)(d * 1000) + 1;
        }
        int n = epoll_wait(ep, evs, 512, timeout);
        for (int i = 0; i < n; i++) {
            struct conn *c = evs[i].data.ptr;
            if (!c) {
                int fd;
                while ((fd = accept4(ls, NULL, NULL, SOCK_NONBLOCK)) >= 0) {
                    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                    struct conn *nc = calloc(1, sizeof *nc);
                    nc->fd = fd;
                    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = nc};
                    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
                }
                continue;
            }
            if (c->dead)
                continue;
            if (evs[i].events & EPOLLOUT) {
                if (flush(c))
                    continue;
            }
            if (evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR))
                on_read(c);
        }
        /* streams whose next event is due */
        double t = now_s();
        while (q_head && q_head->due <= t) {
            struct conn *c = q_head;
            q_head = c->next;
            if (!q_head)
                q_tail = NULL;
            c->queued = 0;
            if (c->dead) {
                free(c);
                continue;
            }
            send_event(c);
            if (flush(c) == 0 && !c->streaming)
                serve(c);   /* a pipelined request that waited for the stream */
        }
    }
}
