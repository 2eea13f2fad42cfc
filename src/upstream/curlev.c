#include "upstream/curlev.h"

#include <errno.h>
#include <event2/event_struct.h>
#include <stdlib.h>
#include <sys/socket.h>

#include "common/buf.h"
#include "common/err.h"
#include "common/log.h"
#include "config/config.h"
#include "upstream/h1.h"

struct sw_curlev {
    struct event_base *base;
    CURLM *multi;
    struct event *timer;
    int running;
    struct sw_h1pool *h1;       /* plain-HTTP backends on numeric addresses */
};

/* Per-socket watcher, attached to curl's socket with curl_multi_assign. */
struct sock {
    struct event ev;
    short kind;                 /* the events ev watches; 0 before the first add */
};

/* Per-transfer completion callback, stored in CURLINFO_PRIVATE. */
struct xfer {
    sw_curlev_done_fn on_done;
    void *ud;
};

static void check_done(struct sw_curlev *cev)
{
    CURLMsg *msg;
    int left;
    while ((msg = curl_multi_info_read(cev->multi, &left))) {
        if (msg->msg != CURLMSG_DONE)
            continue;
        CURL *easy = msg->easy_handle;
        CURLcode rc = msg->data.result;
        struct xfer *x = NULL;
        curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&x);
        curl_multi_remove_handle(cev->multi, easy);
        cev->running--;
        curl_easy_setopt(easy, CURLOPT_PRIVATE, NULL);
        if (x) {
            sw_curlev_done_fn fn = x->on_done;
            void *ud = x->ud;
            free(x);
            fn(ud, rc);
        }
    }
}

static void on_socket_ready(evutil_socket_t fd, short what, void *arg)
{
    struct sw_curlev *cev = arg;
    int flags = 0;
    if (what & EV_READ)
        flags |= CURL_CSELECT_IN;
    if (what & EV_WRITE)
        flags |= CURL_CSELECT_OUT;
    int still;
    curl_multi_socket_action(cev->multi, fd, flags, &still);
    check_done(cev);
}

static void on_timeout(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct sw_curlev *cev = arg;
    int still;
    curl_multi_socket_action(cev->multi, CURL_SOCKET_TIMEOUT, 0, &still);
    check_done(cev);
}

static int on_curl_timer(CURLM *multi, long timeout_ms, void *arg)
{
    (void)multi;
    struct sw_curlev *cev = arg;
    if (timeout_ms < 0) {
        evtimer_del(cev->timer);
        return 0;
    }
    struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    evtimer_add(cev->timer, &tv);
    return 0;
}

static int on_curl_socket(CURL *easy, curl_socket_t s, int what, void *arg, void *sockp)
{
    (void)easy;
    struct sw_curlev *cev = arg;
    struct sock *sk = sockp;
    if (what == CURL_POLL_REMOVE) {
        if (sk) {
            event_del(&sk->ev);
            free(sk);
            curl_multi_assign(cev->multi, s, NULL);
        }
        return 0;
    }
    short kind = EV_PERSIST;
    if (what & CURL_POLL_IN)
        kind |= EV_READ;
    if (what & CURL_POLL_OUT)
        kind |= EV_WRITE;
    if (!sk) {
        sk = calloc(1, sizeof *sk);
        if (!sk)
            return -1;
        curl_multi_assign(cev->multi, s, sk);
    } else if (sk->kind == kind) {
        return 0; /* already watching exactly this: no epoll_ctl churn */
    } else {
        event_del(&sk->ev);
    }
    event_assign(&sk->ev, cev->base, s, kind, on_socket_ready, cev);
    sk->kind = kind;
    event_add(&sk->ev, NULL);
    return 0;
}

struct sw_curlev *sw_curlev_new(struct event_base *base, long max_total_connections)
{
    struct sw_curlev *cev = calloc(1, sizeof *cev);
    if (!cev)
        return NULL;
    cev->base = base;
    cev->multi = curl_multi_init();
    cev->timer = evtimer_new(base, on_timeout, cev);
    cev->h1 = sw_h1pool_new(base);
    if (!cev->multi || !cev->timer || !cev->h1) {
        sw_curlev_free(cev);
        return NULL;
    }
    curl_multi_setopt(cev->multi, CURLMOPT_SOCKETFUNCTION, on_curl_socket);
    curl_multi_setopt(cev->multi, CURLMOPT_SOCKETDATA, cev);
    curl_multi_setopt(cev->multi, CURLMOPT_TIMERFUNCTION, on_curl_timer);
    curl_multi_setopt(cev->multi, CURLMOPT_TIMERDATA, cev);
    /* The connection cache: idle keep-alive connections kept for reuse. */
    curl_multi_setopt(cev->multi, CURLMOPT_MAXCONNECTS, max_total_connections);
    return cev;
}

void sw_curlev_free(struct sw_curlev *cev)
{
    if (!cev)
        return;
    if (cev->multi)
        curl_multi_cleanup(cev->multi);
    if (cev->timer)
        event_free(cev->timer);
    sw_h1pool_free(cev->h1);
    free(cev);
}

int sw_curlev_add(struct sw_curlev *cev, CURL *easy, sw_curlev_done_fn on_done, void *ud)
{
    struct xfer *x = malloc(sizeof *x);
    if (!x)
        return SW_ENOMEM;
    x->on_done = on_done;
    x->ud = ud;
    curl_easy_setopt(easy, CURLOPT_PRIVATE, x);
    if (curl_multi_add_handle(cev->multi, easy) != CURLM_OK) {
        curl_easy_setopt(easy, CURLOPT_PRIVATE, NULL);
        free(x);
        return SW_EIO;
    }
    cev->running++;
    return SW_OK;
}

void sw_curlev_remove(struct sw_curlev *cev, CURL *easy)
{
    struct xfer *x = NULL;
    curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&x);
    if (!x)
        return; /* not running (already finished) */
    curl_multi_remove_handle(cev->multi, easy);
    curl_easy_setopt(easy, CURLOPT_PRIVATE, NULL);
    free(x);
    cev->running--;
}

int sw_curlev_running(const struct sw_curlev *cev)
{
    return cev->running;
}

struct sw_h1pool *sw_curlev_h1(struct sw_curlev *cev)
{
    return cev->h1;
}

/* ---- An easy handle for a backend ---- */

static curl_socket_t open_socket(void *ud, curlsocktype purpose, struct curl_sockaddr *a)
{
    (void)purpose;
    int *sock_errno = ud;
    curl_socket_t s = socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
    *sock_errno = s == CURL_SOCKET_BAD ? errno : 0;
    return s;
}

int sw_curlev_local_limit(CURLcode rc, int sock_errno)
{
    return rc == CURLE_COULDNT_CONNECT && sw_errno_local_limit(sock_errno);
}

void sw_curlev_note_socket_errno(CURL *easy, int *sock_errno)
{
    *sock_errno = 0;
    curl_easy_setopt(easy, CURLOPT_OPENSOCKETFUNCTION, open_socket);
    curl_easy_setopt(easy, CURLOPT_OPENSOCKETDATA, sock_errno);
}

CURL *sw_curlev_easy(const struct sw_config_backend *be, const char *path, long timeout_ms)
{
    struct sw_buf url;
    sw_buf_init(&url, 8192);
    CURL *easy = NULL;
    if (sw_buf_appendf(&url, "%s%s", be->url, path) || !(easy = curl_easy_init())) {
        sw_buf_free(&url);
        return NULL;
    }
    curl_easy_setopt(easy, CURLOPT_URL, url.ptr); /* curl keeps a copy */
    sw_buf_free(&url);
    curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(easy, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
    if (timeout_ms < 1)
        timeout_ms = 1;
    curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS,
                     be->connect_timeout_ms < timeout_ms ? be->connect_timeout_ms : timeout_ms);
    curl_easy_setopt(easy, CURLOPT_SSL_VERIFYPEER, be->tls_verify ? 1L : 0L);
    curl_easy_setopt(easy, CURLOPT_SSL_VERIFYHOST, be->tls_verify ? 2L : 0L);
    if (be->ca_file)
        curl_easy_setopt(easy, CURLOPT_CAINFO, be->ca_file);
    return easy;
}
