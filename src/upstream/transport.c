#include "upstream/transport.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/buf.h"
#include "common/err.h"
#include "upstream/curlev.h"
#include "upstream/h1.h"

_Static_assert(SW_UPSTREAM_ERRBUF >= CURL_ERROR_SIZE, "errbuf holds curl's error text");

/* ---- libcurl ---- */

static size_t on_write(char *ptr, size_t size, size_t nmemb, void *arg)
{
    struct sw_upstream *u = arg;
    if (u->status == 0)
        curl_easy_getinfo(u->handle, CURLINFO_RESPONSE_CODE, &u->status);
    size_t n = u->cbs.on_data(u->ud, ptr, size * nmemb);
    return n == SW_UPSTREAM_PAUSE ? CURL_WRITEFUNC_PAUSE : n;
}

/* Keeps the status of the final response (not of a 100 Continue) and the
 * Retry-After header, which the breaker will honour. */
static size_t on_header(char *ptr, size_t size, size_t nmemb, void *arg)
{
    struct sw_upstream *u = arg;
    size_t len = size * nmemb;
    static const char ra[] = "retry-after:";
    if (len > sizeof ra - 1 && strncasecmp(ptr, ra, sizeof ra - 1) == 0) {
        char tmp[32];
        size_t n = len - (sizeof ra - 1);
        if (n >= sizeof tmp)
            n = sizeof tmp - 1;
        memcpy(tmp, ptr + sizeof ra - 1, n);
        tmp[n] = '\0';
        char *end;
        long v = strtol(tmp, &end, 10);
        if (end != tmp && v >= 0)
            u->retry_after_s = v;
    }
    return len;
}

static int err_of(CURLcode rc)
{
    switch (rc) {
    case CURLE_OK:
        return SW_OK;
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_CONNECT:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CACERT_BADFILE:
        return SW_ECONNECT;
    case CURLE_OPERATION_TIMEDOUT:
        return SW_ETIMEOUT;
    case CURLE_WRITE_ERROR:
        return SW_ECANCELED;
    default:
        return SW_EPROTO;
    }
}

static void on_transfer_done(void *ud, CURLcode rc)
{
    struct sw_upstream *u = ud;
    u->running = false;
    if (rc == CURLE_OK)
        curl_easy_getinfo(u->handle, CURLINFO_RESPONSE_CODE, &u->status);
    u->cbs.on_done(u->ud, sw_curlev_local_limit(rc, u->sock_errno) ? SW_ELOCAL : err_of(rc));
}

/* The request headers as a curl list: ours, then the caller's lines. NULL on
 * allocation failure. */
static struct curl_slist *curl_headers(const char *headers, const char *trace_id)
{
    struct sw_buf tmp;
    sw_buf_init(&tmp, 8192);
    struct curl_slist *h = NULL;
#define ADD_HEADER(...)                                                   \
    do {                                                                  \
        sw_buf_reset(&tmp);                                               \
        if (sw_buf_appendf(&tmp, __VA_ARGS__))                            \
            goto fail;                                                    \
        struct curl_slist *n_ = curl_slist_append(h, tmp.ptr);            \
        if (!n_)                                                          \
            goto fail;                                                    \
        h = n_;                                                           \
    } while (0)
    ADD_HEADER("Content-Type: application/json");
    ADD_HEADER("Accept: application/json, text/event-stream");
    ADD_HEADER("Expect:"); /* no 100-continue round trip */
    if (trace_id)
        ADD_HEADER("X-Request-Id: %s", trace_id);
    for (const char *line = headers; line && *line;) {
        size_t n = strcspn(line, "\r\n");
        if (n)
            ADD_HEADER("%.*s", (int)n, line);
        line += n;
        line += strspn(line, "\r\n");
    }
#undef ADD_HEADER
    sw_buf_free(&tmp);
    return h;
fail:
    sw_buf_free(&tmp);
    curl_slist_free_all(h);
    return NULL;
}

/* curl sends one buffer: the pieces joined into u->body. */
static int join_parts(struct sw_upstream *u)
{
    const struct iovec *v = sw_iovs_cv(&u->parts);
    size_t n = 0;
    for (int i = 0; i < u->parts.n; i++)
        n += v[i].iov_len;
    char *b = malloc(n + 1), *at = b;
    if (!b)
        return SW_ENOMEM;
    for (int i = 0; i < u->parts.n; i++) {
        memcpy(at, v[i].iov_base, v[i].iov_len);
        at += v[i].iov_len;
    }
    b[n] = '\0';
    free(u->body);
    u->body = b;
    u->body_len = n;
    return sw_iovs_set(&u->parts, &(struct iovec){b, n}, 1);
}

static int curl_start(struct sw_upstream *u, const struct sw_config_backend *be,
                      const char *path, const char *headers, long timeout_ms,
                      const char *trace_id)
{
    if (u->parts.n > 1 && join_parts(u))
        return SW_ENOMEM;
    CURL *easy = sw_curlev_easy(be, path, timeout_ms);
    if (!easy)
        return SW_ENOMEM;
    u->handle = easy;
    sw_curlev_note_socket_errno(easy, &u->sock_errno);
    struct curl_slist *h = curl_headers(headers, trace_id);
    if (!h)
        return SW_ENOMEM;
    u->aux = h;
    curl_easy_setopt(easy, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(easy, CURLOPT_POST, 1L);
    curl_easy_setopt(easy, CURLOPT_POSTFIELDS, u->body);
    curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)u->body_len);
    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(easy, CURLOPT_WRITEDATA, u);
    curl_easy_setopt(easy, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(easy, CURLOPT_HEADERDATA, u);
    curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, u->errbuf);
    curl_easy_setopt(easy, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(easy, CURLOPT_TCP_KEEPALIVE, 1L);
    /* Streams must reach the client as they arrive: no content decoding
     * buffering, and ask for identity so nothing needs decoding. */
    curl_easy_setopt(easy, CURLOPT_ACCEPT_ENCODING, NULL);
    int err = sw_curlev_add(u->cev, easy, on_transfer_done, u);
    if (err)
        return err;
    u->running = true;
    return SW_OK;
}

static void curl_abort(struct sw_upstream *u)
{
    if (u->running) {
        sw_curlev_remove(u->cev, u->handle);
        u->running = false;
    }
}

static void curl_resume(struct sw_upstream *u)
{
    if (u->running)
        curl_easy_pause(u->handle, CURLPAUSE_CONT);
}

static void curl_release(struct sw_upstream *u)
{
    if (u->handle)
        curl_easy_cleanup(u->handle);
    curl_slist_free_all(u->aux);
    u->handle = NULL;
    u->aux = NULL;
}

const struct sw_upstream_transport sw_transport_curl = {
    .name = "curl",
    .start = curl_start,
    .abort = curl_abort,
    .resume = curl_resume,
    .release = curl_release,
};

/* ---- The plain-HTTP client ---- */

static void on_h1_head(void *ud, long status, long retry_after_s)
{
    struct sw_upstream *u = ud;
    u->status = status;
    u->retry_after_s = retry_after_s;
}

static size_t on_h1_data(void *ud, const char *bytes, size_t len)
{
    struct sw_upstream *u = ud;
    size_t n = u->cbs.on_data(u->ud, bytes, len);
    return n == SW_UPSTREAM_PAUSE ? SW_H1_PAUSE : n;
}

static void on_h1_done(void *ud, int err, const char *why)
{
    struct sw_upstream *u = ud;
    u->handle = NULL; /* already freed */
    u->running = false;
    size_t n = why ? strnlen(why, sizeof u->errbuf - 1) : 0;
    memcpy(u->errbuf, why ? why : "", n);
    u->errbuf[n] = '\0';
    u->cbs.on_done(u->ud, err);
}

static int h1_start(struct sw_upstream *u, const struct sw_config_backend *be, const char *path,
                    const char *headers, long timeout_ms, const char *trace_id)
{
    struct sw_buf h;
    sw_buf_init(&h, 8192);
    int err = sw_buf_append_str(&h, "Content-Type: application/json\r\n"
                                    "Accept: application/json, text/event-stream\r\n");
    if (!err && trace_id) {
        err = sw_buf_append_str(&h, "X-Request-Id: ");
        if (!err)
            err = sw_buf_append_str(&h, trace_id);
        if (!err)
            err = sw_buf_append(&h, "\r\n", 2);
    }
    if (!err && headers)
        err = sw_buf_append_str(&h, headers);
    if (!err)
        err = sw_buf_append(&h, "\r\n", 2);
    if (err) {
        sw_buf_free(&h);
        return err;
    }
    static const struct sw_h1_cbs cbs = {on_h1_data, on_h1_done, on_h1_head};
    u->aux = h.ptr;
    u->handle = sw_h1_start(sw_curlev_h1(u->cev), be->url, path, h.ptr, h.len,
                            sw_iovs_cv(&u->parts), u->parts.n, be->connect_timeout_ms, timeout_ms,
                            &cbs, u);
    if (!u->handle)
        return SW_ENOMEM;
    u->running = true;
    return SW_OK;
}

static void h1_abort(struct sw_upstream *u)
{
    if (u->handle) {
        sw_h1_abort(u->handle);
        u->handle = NULL;
        u->running = false;
    }
}

static void h1_resume(struct sw_upstream *u)
{
    if (u->handle)
        sw_h1_resume(u->handle);
}

static void h1_drop_sent(struct sw_upstream *u)
{
    if (u->handle && sw_h1_forget_request(u->handle)) {
        free(u->aux);
        u->aux = NULL;
        free(u->body);
        u->body = NULL;
    }
}

static void h1_release(struct sw_upstream *u)
{
    free(u->aux);
    u->aux = NULL;
}

const struct sw_upstream_transport sw_transport_h1 = {
    .name = "h1",
    .start = h1_start,
    .abort = h1_abort,
    .resume = h1_resume,
    .drop_sent = h1_drop_sent,
    .release = h1_release,
};

const struct sw_upstream_transport *sw_transport_for(struct sw_curlev *cev, const char *url)
{
    return sw_h1pool_handles(sw_curlev_h1(cev), url) ? &sw_transport_h1 : &sw_transport_curl;
}

int sw_upstream_start(struct sw_upstream *u, struct sw_curlev *cev,
                      const struct sw_config_backend *be, const char *path, const char *headers,
                      char *body, size_t body_len, long timeout_ms, const char *trace_id,
                      const struct sw_upstream_cbs *cbs, void *ud)
{
    return sw_upstream_start_on(u, sw_transport_for(cev, be->url), cev, be, path, headers, body,
                                body_len, NULL, 0, timeout_ms, trace_id, cbs, ud);
}

int sw_upstream_start_parts(struct sw_upstream *u, struct sw_curlev *cev,
                            const struct sw_config_backend *be, const char *path,
                            const char *headers, const struct iovec *parts, int n_parts,
                            char *owned, long timeout_ms, const char *trace_id,
                            const struct sw_upstream_cbs *cbs, void *ud)
{
    return sw_upstream_start_on(u, sw_transport_for(cev, be->url), cev, be, path, headers, owned,
                                0, parts, n_parts, timeout_ms, trace_id, cbs, ud);
}
