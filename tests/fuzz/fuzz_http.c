/* libFuzzer driver for the HTTP/1.x server (src/http/server.c): its request
 * parsing is driven over a real loopback connection, since the server owns
 * its sockets. One server lives for the whole run on an ephemeral port; each
 * input is written on a fresh connection, which is then half-closed, and the
 * loop runs until the server has closed it. Checks: no crash, leak or
 * undefined behaviour; whatever the server sends starts with "HTTP/1."; and
 * every half-closed connection is closed by the server (within 5 s) and
 * forgotten (sw_http_server_connections back to 0), so nothing accumulates
 * across inputs.
 * The handler answers early (401 before the body) for /early, streams the
 * body back for /stream, and echoes it for any other path. */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "http/server.h"

#include "check.h"

static struct event_base *base;
static struct sw_http_server *srv;
static int port;

static bool on_headers(struct sw_http_req *req, void *ud)
{
    (void)ud;
    if (strcmp(sw_http_path(req), "/early") == 0) {
        sw_http_reply(req, 401, NULL, "{}", 2);
        return false;
    }
    return true;
}

static void on_request(struct sw_http_req *req, void *ud)
{
    (void)ud;
    size_t len;
    const char *body = sw_http_body(req, &len);
    (void)sw_http_header(req, "content-type", NULL);
    (void)sw_http_query(req);
    if (strncmp(sw_http_path(req), "/stream", 7) == 0) {
        struct evbuffer *b = evbuffer_new();
        CHECK(b != NULL);
        sw_http_stream_start(req, 200, "text/event-stream");
        evbuffer_add(b, body, len);
        sw_http_stream_write(req, b);
        sw_http_stream_end(req);
        evbuffer_free(b);
        return;
    }
    sw_http_add_header(req, "X-Method", sw_http_method_name(req));
    sw_http_reply(req, 200, "text/plain", body, len);
}

static void setup(void)
{
    struct sw_http_limits lim = {
        .max_header_bytes = 8192,
        .max_body_bytes = 16384,
        .client_timeout_ms = 2000,
        .max_connections = 16,
    };
    static const struct sw_http_handler h = {
        .on_headers = on_headers,
        .on_request = on_request,
    };
    base = event_base_new();
    CHECK(base != NULL);
    srv = sw_http_server_new(base, "127.0.0.1", 0, 16, &lim, &h);
    CHECK(srv != NULL);
    port = sw_http_server_port(srv);
}

struct client {
    int fd;
    size_t got;
    char head[8];
    bool done;
};

static void on_client_read(evutil_socket_t fd, short what, void *arg)
{
    struct client *cl = arg;
    char buf[16384];
    /* A half-closed connection is answered and closed, never kept. */
    CHECK(!(what & EV_TIMEOUT));
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (n <= 0) {
        cl->done = true;
        return;
    }
    for (ssize_t i = 0; i < n && cl->got < sizeof cl->head; i++)
        cl->head[cl->got++] = buf[i];
    if (cl->got >= 7)
        CHECK(memcmp(cl->head, "HTTP/1.", 7) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!base)
        setup();
    struct client cl = {.fd = socket(AF_INET, SOCK_STREAM, 0)};
    CHECK(cl.fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int rc = connect(cl.fd, (struct sockaddr *)&a, sizeof a);
    if (rc != 0 && errno == EINTR) {
        /* libFuzzer's timers (SIGALRM) interrupt a blocking connect; the
         * handshake goes on: wait for it and take its result */
        struct pollfd pfd = {.fd = cl.fd, .events = POLLOUT};
        int soerr = 0;
        socklen_t sl = sizeof soerr;
        while (poll(&pfd, 1, -1) < 0 && errno == EINTR)
            ;
        CHECK(getsockopt(cl.fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) == 0);
        errno = soerr;
        rc = soerr ? -1 : 0;
    }
    if (rc != 0) {
        /* Every input is one loopback connection: a long run can use up the
         * ephemeral ports (TIME_WAIT). That says nothing about the server:
         * skip the input; any other failure is one. */
        int err = errno;
        close(cl.fd);
        if (err == EADDRNOTAVAIL)
            return 0;
        fprintf(stderr, "connect: %s\n", strerror(err));
        CHECK(0);
    }
    /* The input fits the socket buffers (libFuzzer's inputs are small), so a
     * blocking write cannot wait on the server, which is not running yet. */
    size_t off = 0;
    while (off < size) {
        ssize_t n = write(cl.fd, data + off, size - off);
        if (n < 0 && errno == EINTR)
            continue;
        CHECK(n > 0);
        off += (size_t)n;
    }
    shutdown(cl.fd, SHUT_WR);
    evutil_make_socket_nonblocking(cl.fd);
    struct event *ev = event_new(base, cl.fd, EV_READ | EV_PERSIST, on_client_read, &cl);
    struct timeval tv = {5, 0};
    event_add(ev, &tv);
    while (!cl.done)
        event_base_loop(base, EVLOOP_ONCE);
    event_free(ev);
    close(cl.fd);
    /* The server notices the close and forgets the connection. */
    for (int i = 0; i < 1000 && sw_http_server_connections(srv) > 0; i++)
        event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
    while (sw_http_server_connections(srv) > 0)
        event_base_loop(base, EVLOOP_ONCE);
    return 0;
}
