/* The streaming client of bench/proxy.sh: N concurrent streaming chat
 * completions, each on its own connection that sends one POST with
 * "stream": true and "Connection: close" (like many independent clients), and
 * reads the SSE answer to its end.
 *
 *   streams HOST:PORT N BODY_FILE [PIDS] [WINDOW] [CLOSE]
 *
 * BODY_FILE is a JSON chat request; "stream":true is put in front of its keys.
 * Connections are opened as fast as they are answered, with at most WINDOW
 * (default 1000) opened and still waiting for their first byte. PIDS
 * (comma-separated) are the proxy's processes: their CPU time (utime+stime)
 * over the run (up to the last sample if one exits) and their summed RSS,
 * sampled every 50 ms, are reported.
 * CLOSE 0 leaves out "Connection: close" (the client still closes after the
 * answer).
 *
 * Prints one line of key=value:
 *   n ok done failed connect_err http_err fb_p50_ms fb_p99_ms fb_max_ms
 *   cpu_s rss_idle_kb rss_peak_kb wall_s
 * done: 200 and "data: [DONE]" seen; first byte: from connect() to the first
 * response byte. A stream gets at most 60 s. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { S_CONNECTING, S_SENDING, S_HEAD, S_BODY, S_DONE };
enum { C_SIZE, C_DATA, C_DATA_CRLF, C_TRAILER, C_END };

struct stream {
    int fd;
    int state;
    size_t sent;
    double t0, fb;      /* connect start, first byte (seconds after t0; <0: none) */
    char head[4096];
    size_t head_len;
    int status, chunked;
    int cstate;          /* chunked decoder */
    size_t csize;
    char tail[16];       /* last bytes of the decoded body, for [DONE] across reads */
    size_t tail_len;
    int done;
    int failed;          /* 1 connect, 2 http status, 3 cut short */
};

static char *req;
static size_t req_len;
static int n_pids;
static int pids[16];
static long hz;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static double proc_cpu_s(void)
{
    double t = 0;
    for (int i = 0; i < n_pids; i++) {
        char path[64], buf[2048];
        snprintf(path, sizeof path, "/proc/%d/stat", pids[i]);
        FILE *f = fopen(path, "r");
        if (!f)
            return -1;  /* gone: the caller keeps its last sample */
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[n] = '\0';
        char *p = strrchr(buf, ')');    /* comm may hold spaces */
        unsigned long ut = 0, st = 0;
        if (p && sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut,
                        &st) == 2)
            t += (double)(ut + st) / (double)hz;
    }
    return t;
}

static long proc_rss_kb(void)
{
    long t = 0;
    for (int i = 0; i < n_pids; i++) {
        char path[64], line[256];
        snprintf(path, sizeof path, "/proc/%d/status", pids[i]);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        while (fgets(line, sizeof line, f))
            if (!strncmp(line, "VmRSS:", 6))
                t += atol(line + 6);
        fclose(f);
    }
    return t;
}

/* The decoded body, a piece at a time: looks for "data: [DONE]". */
static void body_bytes(struct stream *s, const char *p, size_t n)
{
    static const char done[] = "data: [DONE]";
    char buf[16 + 4096];
    while (n) {
        size_t k = n > 4096 ? 4096 : n;
        memcpy(buf, s->tail, s->tail_len);
        memcpy(buf + s->tail_len, p, k);
        size_t m = s->tail_len + k;
        if (memmem(buf, m, done, sizeof done - 1))
            s->done = 1;
        s->tail_len = m < sizeof done - 1 ? m : sizeof done - 1;
        memcpy(s->tail, buf + m - s->tail_len, s->tail_len);
        p += k;
        n -= k;
    }
}

/* Chunked transfer decoding; returns 1 at the last chunk. */
static int chunked(struct stream *s, const char *p, size_t n)
{
    for (size_t i = 0; i < n;) {
        char ch = p[i];
        switch (s->cstate) {
        case C_SIZE:
            if (ch == '\n') {
                s->cstate = s->csize ? C_DATA : C_TRAILER;
            } else if (ch >= '0' && ch <= '9') {
                s->csize = s->csize * 16 + (size_t)(ch - '0');
            } else if ((ch | 32) >= 'a' && (ch | 32) <= 'f') {
                s->csize = s->csize * 16 + (size_t)((ch | 32) - 'a' + 10);
            }   /* ';' extensions and '\r' are skipped */
            i++;
            break;
        case C_DATA: {
            size_t k = n - i < s->csize ? n - i : s->csize;
            body_bytes(s, p + i, k);
            s->csize -= k;
            i += k;
            if (!s->csize)
                s->cstate = C_DATA_CRLF;
            break;
        }
        case C_DATA_CRLF:
            if (ch == '\n')
                s->cstate = C_SIZE;
            i++;
            break;
        case C_TRAILER:     /* the empty line that ends the trailers */
            if (ch == '\n') {
                s->cstate = C_END;
                return 1;
            }
            if (ch != '\r')
                s->cstate = C_SIZE; /* a trailer line: skip it as if a size line */
            i++;
            break;
        default:
            return 1;
        }
    }
    return 0;
}

static void finish(int ep, struct stream *s, int failed, int *active)
{
    epoll_ctl(ep, EPOLL_CTL_DEL, s->fd, NULL);
    close(s->fd);
    s->fd = -1;
    s->state = S_DONE;
    if (!s->done && !failed)
        failed = 3;
    if (failed)
        s->done = 0;
    s->failed = failed;
    (*active)--;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: %s HOST:PORT N BODY_FILE [PIDS] [WINDOW] [CLOSE]\n", argv[0]);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    hz = sysconf(_SC_CLK_TCK);
    char host[64];
    snprintf(host, sizeof host, "%s", argv[1]);
    char *colon = strrchr(host, ':');
    if (!colon)
        return 2;
    *colon = '\0';
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(colon + 1))};
    inet_pton(AF_INET, host, &sa.sin_addr);
    int n = atoi(argv[2]);
    int window = argc > 5 ? atoi(argv[5]) : 1000;
    int conn_close = argc > 6 ? atoi(argv[6]) : 1;
    if (window < 1)
        window = 1;
    if (argc > 4)
        for (char *p = argv[4]; *p && n_pids < 16;) {
            pids[n_pids++] = (int)strtol(p, &p, 10);
            if (*p == ',')
                p++;
        }

    FILE *f = fopen(argv[3], "rb");
    if (!f) {
        perror(argv[3]);
        return 2;
    }
    static char body[4 << 20];   /* agent-sized bodies (bench/agent_trace.py) */
    size_t bl = fread(body, 1, sizeof body - 1, f);
    fclose(f);
    while (bl && (body[bl - 1] == '\n' || body[bl - 1] == ' '))
        bl--;
    if (!bl || body[0] != '{')
        return 2;
    req = malloc(bl + 1024);
    req_len = (size_t)sprintf(req,
                              "POST /v1/chat/completions HTTP/1.1\r\nHost: %s\r\n"
                              "Content-Type: application/json\r\nAccept: text/event-stream\r\n"
                              "%sContent-Length: %zu\r\n\r\n{\"stream\":true,",
                              argv[1], conn_close ? "Connection: close\r\n" : "", bl + 14);
    memcpy(req + req_len, body + 1, bl - 1);
    req_len += bl - 1;

    struct stream *st = calloc((size_t)n, sizeof *st);
    int ep = epoll_create1(0);
    struct epoll_event evs[1024];
    int next = 0, active = 0, waiting_fb = 0;
    double cpu0 = proc_cpu_s(), cpu_last = cpu0;
    long rss_idle = proc_rss_kb(), rss_peak = rss_idle;
    double start = now_s(), last_sample = start;
    char buf[65536];

    while (next < n || active > 0) {
        /* open more, keeping at most WINDOW waiting for their first byte */
        while (next < n && waiting_fb < window) {
            struct stream *s = &st[next++];
            s->fb = -1;
            s->t0 = now_s();
            s->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
            if (s->fd < 0) {
                s->state = S_DONE;
                s->failed = 1;
                continue;
            }
            int one = 1;
            setsockopt(s->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            if (connect(s->fd, (struct sockaddr *)&sa, sizeof sa) && errno != EINPROGRESS) {
                close(s->fd);
                s->state = S_DONE;
                s->failed = 1;
                continue;
            }
            s->state = S_CONNECTING;
            struct epoll_event ev = {.events = EPOLLOUT | EPOLLIN, .data.ptr = s};
            epoll_ctl(ep, EPOLL_CTL_ADD, s->fd, &ev);
            active++;
            waiting_fb++;
        }
        int k = epoll_wait(ep, evs, 1024, 50);
        double t = now_s();
        for (int i = 0; i < k; i++) {
            struct stream *s = evs[i].data.ptr;
            if (s->state == S_DONE)
                continue;
            if (s->state == S_CONNECTING) {
                int err = 0;
                socklen_t el = sizeof err;
                getsockopt(s->fd, SOL_SOCKET, SO_ERROR, &err, &el);
                if (err) {
                    if (s->fb < 0)
                        waiting_fb--;
                    finish(ep, s, 1, &active);
                    continue;
                }
                s->state = S_SENDING;
            }
            if (s->state == S_SENDING && (evs[i].events & EPOLLOUT)) {
                ssize_t w = send(s->fd, req + s->sent, req_len - s->sent, MSG_NOSIGNAL);
                if (w > 0)
                    s->sent += (size_t)w;
                if (s->sent == req_len) {
                    s->state = S_HEAD;
                    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = s};
                    epoll_ctl(ep, EPOLL_CTL_MOD, s->fd, &ev);
                } else if (w < 0 && errno != EAGAIN) {
                    if (s->fb < 0)
                        waiting_fb--;
                    finish(ep, s, 1, &active);
                    continue;
                }
            }
            if (!(evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)))
                continue;
            for (;;) {
                ssize_t r = recv(s->fd, buf, sizeof buf, 0);
                if (r < 0 && (errno == EAGAIN || errno == EINTR))
                    break;
                if (r <= 0) {   /* EOF or reset: the response ends here */
                    if (s->fb < 0) {
                        waiting_fb--;
                        s->fb = t - s->t0;
                    }
                    finish(ep, s, s->status ? (s->status == 200 ? 0 : 2) : 1, &active);
                    break;
                }
                if (s->fb < 0) {
                    s->fb = t - s->t0;
                    waiting_fb--;
                }
                const char *p = buf;
                size_t m = (size_t)r;
                if (s->state == S_HEAD) {
                    size_t room = sizeof s->head - 1 - s->head_len;
                    size_t take = m < room ? m : room;
                    memcpy(s->head + s->head_len, p, take);
                    s->head_len += take;
                    s->head[s->head_len] = '\0';
                    char *he = strstr(s->head, "\r\n\r\n");
                    if (!he) {
                        if (take == room) {
                            finish(ep, s, 2, &active);
                            break;
                        }
                        continue;
                    }
                    size_t used = (size_t)(he + 4 - s->head) - (s->head_len - take);
                    sscanf(s->head, "HTTP/1.%*d %d", &s->status);
                    for (char *c = s->head; *c && c < he; c++)
                        if (*c >= 'A' && *c <= 'Z')
                            *c = (char)(*c + 32);
                    s->chunked = strstr(s->head, "transfer-encoding: chunked") != NULL;
                    s->state = S_BODY;
                    p += used;
                    m -= used;
                    if (s->status != 200) {
                        finish(ep, s, 2, &active);
                        break;
                    }
                }
                if (s->chunked) {
                    if (chunked(s, p, m)) {
                        finish(ep, s, 0, &active);
                        break;
                    }
                } else {
                    body_bytes(s, p, m);
                }
            }
        }
        if (t - last_sample >= 0.05) {
            last_sample = t;
            long rss = proc_rss_kb();
            if (rss > rss_peak)
                rss_peak = rss;
            double c = proc_cpu_s();
            if (c >= 0)
                cpu_last = c;
            for (int i = 0; i < next; i++)     /* the 60 s cap per stream */
                if (st[i].state != S_DONE && t - st[i].t0 > 60) {
                    if (st[i].fb < 0)
                        waiting_fb--;
                    finish(ep, &st[i], 3, &active);
                }
        }
    }
    double wall = now_s() - start;
    double cpu_end = proc_cpu_s();
    double cpu = (cpu_end >= 0 ? cpu_end : cpu_last) - cpu0;

    double *fbs = malloc((size_t)n * sizeof *fbs);
    int nfb = 0, ok = 0, done = 0, cerr = 0, herr = 0;
    for (int i = 0; i < n; i++) {
        if (st[i].status && st[i].fb >= 0)
            fbs[nfb++] = st[i].fb * 1000;
        ok += st[i].status == 200;
        done += st[i].done;
        cerr += st[i].failed == 1;
        herr += st[i].failed == 2;
    }
    qsort(fbs, (size_t)nfb, sizeof *fbs, cmp_d);
    double p50 = nfb ? fbs[(nfb - 1) * 50 / 100] : -1, p99 = nfb ? fbs[(nfb - 1) * 99 / 100] : -1;
    printf("n=%d ok=%d done=%d failed=%d connect_err=%d http_err=%d fb_p50_ms=%.2f "
           "fb_p99_ms=%.2f fb_max_ms=%.2f cpu_s=%.3f rss_idle_kb=%ld rss_peak_kb=%ld wall_s=%.2f\n",
           n, ok, done, n - done, cerr, herr, p50, p99, nfb ? fbs[nfb - 1] : -1, cpu, rss_idle,
           rss_peak, wall);
    return 0;
}
