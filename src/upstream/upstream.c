#include "upstream/upstream.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/buf.h"
#include "common/err.h"

static size_t on_write(char *ptr, size_t size, size_t nmemb, void *arg)
{
    struct sw_upstream *u = arg;
    if (u->status == 0)
        curl_easy_getinfo(u->easy, CURLINFO_RESPONSE_CODE, &u->status);
    return u->cbs.on_data(u->ud, ptr, size * nmemb);
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

static void on_transfer_done(void *ud, CURLcode rc)
{
    struct sw_upstream *u = ud;
    u->running = false;
    int err;
    switch (rc) {
    case CURLE_OK:
        err = SW_OK;
        curl_easy_getinfo(u->easy, CURLINFO_RESPONSE_CODE, &u->status);
        break;
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_CONNECT:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CACERT_BADFILE:
        err = SW_ECONNECT;
        break;
    case CURLE_OPERATION_TIMEDOUT:
        err = SW_ETIMEOUT;
        break;
    case CURLE_WRITE_ERROR:
        err = SW_ECANCELED;
        break;
    default:
        err = SW_EPROTO;
        break;
    }
    u->cbs.on_done(u->ud, err);
}

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
    return u->cbs.on_data(u->ud, bytes, len);
}

static void on_h1_done(void *ud, int err, const char *why)
{
    struct sw_upstream *u = ud;
    u->h1 = NULL; /* already freed */
    u->running = false;
    size_t n = why ? strnlen(why, sizeof u->errbuf - 1) : 0;
    memcpy(u->errbuf, why ? why : "", n);
    u->errbuf[n] = '\0';
    u->cbs.on_done(u->ud, err);
}

static int start_h1(struct sw_upstream *u, struct sw_curlev *cev,
                    const struct sw_config_backend *be, const char *path, const char *headers,
                    long timeout_ms, const char *trace_id)
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
    u->h1_head = h.ptr;
    u->h1 = sw_h1_start(sw_curlev_h1(cev), be->url, path, h.ptr, h.len, u->body, u->body_len,
                        be->connect_timeout_ms, timeout_ms, &cbs, u);
    if (!u->h1)
        return SW_ENOMEM;
    u->running = true;
    return SW_OK;
}

int sw_upstream_start(struct sw_upstream *u, struct sw_curlev *cev,
                      const struct sw_config_backend *be, const char *path, const char *headers,
                      char *body, size_t body_len, long timeout_ms, const char *trace_id,
                      const struct sw_upstream_cbs *cbs, void *ud)
{
    memset(u, 0, sizeof *u);
    u->body = body;
    u->cev = cev;
    u->cbs = *cbs;
    u->ud = ud;
    u->retry_after_s = -1;
    u->body_len = body_len;
    int err = SW_ENOMEM;
    if (sw_h1pool_handles(sw_curlev_h1(cev), be->url)) {
        err = start_h1(u, cev, be, path, headers, timeout_ms, trace_id);
        if (err)
            sw_upstream_cleanup(u);
        return err;
    }

    u->easy = sw_curlev_easy(be, path, timeout_ms);
    if (!u->easy)
        goto fail;
    struct sw_buf tmp;
    sw_buf_init(&tmp, 8192);

    struct curl_slist *h = NULL;
#define ADD_HEADER(...)                                                   \
    do {                                                                  \
        sw_buf_reset(&tmp);                                               \
        if (sw_buf_appendf(&tmp, __VA_ARGS__))                            \
            goto fail_tmp;                                                \
        struct curl_slist *n_ = curl_slist_append(h, tmp.ptr);            \
        if (!n_)                                                          \
            goto fail_tmp;                                                \
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
    u->headers = h;
    sw_buf_free(&tmp);

    curl_easy_setopt(u->easy, CURLOPT_HTTPHEADER, u->headers);
    curl_easy_setopt(u->easy, CURLOPT_POST, 1L);
    curl_easy_setopt(u->easy, CURLOPT_POSTFIELDS, u->body);
    curl_easy_setopt(u->easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body_len);
    curl_easy_setopt(u->easy, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(u->easy, CURLOPT_WRITEDATA, u);
    curl_easy_setopt(u->easy, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(u->easy, CURLOPT_HEADERDATA, u);
    curl_easy_setopt(u->easy, CURLOPT_ERRORBUFFER, u->errbuf);
    curl_easy_setopt(u->easy, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(u->easy, CURLOPT_TCP_KEEPALIVE, 1L);
    /* Streams must reach the client as they arrive: no content decoding
     * buffering, and ask for identity so nothing needs decoding. */
    curl_easy_setopt(u->easy, CURLOPT_ACCEPT_ENCODING, NULL);

    err = sw_curlev_add(cev, u->easy, on_transfer_done, u);
    if (err)
        goto fail;
    u->running = true;
    return SW_OK;

fail_tmp:
    sw_buf_free(&tmp);
fail:
    sw_upstream_cleanup(u);
    return err;
}

void sw_upstream_abort(struct sw_upstream *u)
{
    if (u->h1) {
        sw_h1_abort(u->h1);
        u->h1 = NULL;
        u->running = false;
        return;
    }
    if (u->running) {
        sw_curlev_remove(u->cev, u->easy);
        u->running = false;
    }
}

void sw_upstream_resume(struct sw_upstream *u)
{
    if (u->h1)
        sw_h1_resume(u->h1);
    else if (u->running)
        curl_easy_pause(u->easy, CURLPAUSE_CONT);
}

void sw_upstream_cleanup(struct sw_upstream *u)
{
    sw_upstream_abort(u);
    if (u->easy)
        curl_easy_cleanup(u->easy);
    curl_slist_free_all(u->headers);
    free(u->h1_head);
    u->h1_head = NULL;
    free(u->body);
    u->easy = NULL;
    u->headers = NULL;
    u->body = NULL;
}
