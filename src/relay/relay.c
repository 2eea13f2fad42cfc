#include "relay/relay.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/keyvalq_struct.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/err.h"
#include "common/log.h"
#include "relay/reply.h"
#include "relay/sse.h"
#include "upstream/upstream.h"

/* Largest error body kept from a failed attempt, and largest SSE event. */
#define ERROR_BODY_MAX (64 * 1024)
#define SSE_EVENT_MAX (1024 * 1024)
/* Pause the upstream while this much is waiting to be written to the client. */
#define CLIENT_PENDING_MAX (1024 * 1024)
#define RESUME_CHECK_US 10000

struct proxy {
    struct sw_relay_env env;
    struct evhttp_request *req;     /* NULL once answered or the client is gone */
    struct evhttp_connection *evcon;
    struct sw_config *cfg;          /* referenced */
    struct sw_chat_request chat;
    char *public_model;             /* what the client asked for */
    struct sw_relay_plan plan;
    size_t cur;                     /* the attempt in progress */
    int64_t deadline_ms;
    char id[48];

    struct sw_upstream up;
    struct sw_buf resp;             /* non-stream body, or the error body of a failed attempt */
    struct sw_sse sse;
    struct evbuffer *out;           /* events parsed from the current upstream write */

    bool started;                   /* the first byte went to the client */
    bool saw_done;                  /* upstream sent data: [DONE] */
    bool client_gone;
    bool paused;                    /* upstream paused for a slow client */
    struct event *resume_timer;
    int abort_err;                  /* why on_data aborted the transfer (SW_EPROTO, ...) */
    char abort_msg[160];

    /* The failures so far, for the final error message: "edge: connect_error; ..." */
    /* evhttp's own connection callbacks, wrapped while the relay owns the request */
    bool watching;
    bufferevent_data_cb evhttp_read_cb;
    bufferevent_data_cb evhttp_write_cb;
    bufferevent_event_cb evhttp_event_cb;
    void *evhttp_cb_arg;

    char failures[512];
    long retry_after_s;
    bool any_timeout;
};

static void start_attempt(struct proxy *p);
static void unwatch_client(struct proxy *p);
static void watch_client(struct proxy *p);

/* ---- Lifetime ---- */

static void proxy_free(struct proxy *p)
{
    unwatch_client(p);
    if (p->evcon)
        evhttp_connection_set_closecb(p->evcon, NULL, NULL);
    sw_upstream_cleanup(&p->up);
    sw_buf_free(&p->resp);
    sw_sse_free(&p->sse);
    if (p->out)
        evbuffer_free(p->out);
    if (p->resume_timer)
        event_free(p->resume_timer);
    sw_request_free(&p->chat);
    free(p->public_model);
    sw_config_unref(p->cfg);
    void (*on_finish)(void *) = p->env.on_finish;
    void *ud = p->env.ud;
    free(p);
    if (on_finish)
        on_finish(ud);
}

/* The client's connection closed: libevent frees the request right after
 * this callback, so forget it and abort the upstream transfer at once. */
static void on_client_close(struct evhttp_connection *evcon, void *arg)
{
    (void)evcon;
    struct proxy *p = arg;
    /* When libevent itself saw the failure (a write error or timeout) it
     * detached the unanswered request from the connection and leaves it to
     * us; otherwise it frees it with the connection right after this. */
    if (p->req && !evhttp_request_get_connection(p->req))
        evhttp_request_free(p->req);
    p->client_gone = true;
    p->req = NULL;
    p->evcon = NULL;
    sw_info("request %s: client disconnected, upstream aborted", p->id);
    proxy_free(p);
}

/* libevent 2.1 stops reading a server connection once the request is read
 * (and evhttp_read_cb aborts the process if data arrives while it answers),
 * so a client that gives up is only noticed when a write fails. For an LLM
 * request that may sit in prefill for seconds, that keeps a local slot busy
 * for nobody. So while the relay owns the request it owns the connection's
 * callbacks: reads are left in the buffer (bounded by a watermark) for
 * evhttp to parse after the answer, writes and other events go to evhttp,
 * and EOF or an error aborts the upstream at once. */
#define CLIENT_READ_MAX (64 * 1024)

static void on_client_read(struct bufferevent *bev, void *arg)
{
    (void)bev;
    (void)arg; /* pipelined bytes wait for evhttp */
}

static void on_client_write(struct bufferevent *bev, void *arg)
{
    struct proxy *p = arg;
    if (p->evhttp_write_cb)
        p->evhttp_write_cb(bev, p->evhttp_cb_arg);
}

static void on_client_event(struct bufferevent *bev, short what, void *arg)
{
    struct proxy *p = arg;
    if (!(what & (BEV_EVENT_EOF | BEV_EVENT_ERROR))) {
        p->evhttp_event_cb(bev, what, p->evhttp_cb_arg);
        return;
    }
    struct evhttp_connection *evcon = p->evcon;
    sw_info("request %s: client disconnected, upstream aborted", p->id);
    p->client_gone = true;
    proxy_free(p); /* gives the callbacks back to evhttp */
    evhttp_connection_free(evcon);
}

static void watch_client(struct proxy *p)
{
    struct bufferevent *bev = evhttp_connection_get_bufferevent(p->evcon);
    if (!p->watching) {
        bufferevent_getcb(bev, &p->evhttp_read_cb, &p->evhttp_write_cb, &p->evhttp_event_cb,
                          &p->evhttp_cb_arg);
        bufferevent_setcb(bev, on_client_read, on_client_write, on_client_event, p);
        bufferevent_setwatermark(bev, EV_READ, 0, CLIENT_READ_MAX);
        p->watching = true;
    }
    bufferevent_enable(bev, EV_READ);
}

static void unwatch_client(struct proxy *p)
{
    if (!p->watching || !p->evcon)
        return;
    struct bufferevent *bev = evhttp_connection_get_bufferevent(p->evcon);
    bufferevent_disable(bev, EV_READ);
    bufferevent_setwatermark(bev, EV_READ, 0, 0);
    bufferevent_setcb(bev, p->evhttp_read_cb, p->evhttp_write_cb, p->evhttp_event_cb,
                      p->evhttp_cb_arg);
    p->watching = false;
}

/* Hands the request back to libevent (it is answered) and detaches. */
static void detach_client(struct proxy *p)
{
    unwatch_client(p);
    if (p->evcon)
        evhttp_connection_set_closecb(p->evcon, NULL, NULL);
    p->evcon = NULL;
    p->req = NULL;
}

static const struct sw_config_backend *cur_backend(const struct proxy *p)
{
    return &p->cfg->backends[p->plan.backends[p->cur]];
}

static void set_route_headers(struct proxy *p)
{
    const struct sw_config_backend *be = cur_backend(p);
    sw_reply_route_headers(p->req, be->name, sw_tier_name(be->tier), p->plan.reasons[p->cur]);
}

/* ---- Ending the request ---- */

static void fail_all(struct proxy *p)
{
    if (p->any_timeout && sw_now_ms() >= p->deadline_ms) {
        sw_reply_error(p->req, 504, "timeout_error", "deadline_exceeded", NULL,
                       "No backend answered within the request deadline (%s).", p->failures);
    } else {
        if (p->retry_after_s >= 0) {
            char v[24];
            snprintf(v, sizeof v, "%ld", p->retry_after_s);
            evhttp_add_header(evhttp_request_get_output_headers(p->req), "Retry-After", v);
        }
        sw_reply_error(p->req, 503, "server_error", "all_backends_failed", NULL,
                       "Every backend for model '%s' failed (%s).", p->public_model, p->failures);
    }
    sw_warn("request %s: all backends failed: %s", p->id, p->failures);
    detach_client(p);
    proxy_free(p);
}

/* Ends a stream that already started with an error event and [DONE]: a
 * failure after the first byte is never a silent truncation. */
static void fail_stream(struct proxy *p, const char *msg)
{
    json_t *ev = json_pack("{s:{s:s, s:s, s:n, s:s}}", "error", "message", msg, "type",
                           "server_error", "param", "code", "upstream_stream_failed");
    char *s = ev ? json_dumps(ev, JSON_COMPACT) : NULL;
    struct evbuffer *b = evbuffer_new();
    if (b) {
        if (s)
            evbuffer_add_printf(b, "data: %s\n\n", s);
        evbuffer_add_printf(b, "data: [DONE]\n\n");
        evhttp_send_reply_chunk(p->req, b);
        evbuffer_free(b);
    }
    free(s);
    json_decref(ev);
    evhttp_send_reply_end(p->req);
    sw_warn("request %s: stream from %s failed after the first byte: %s", p->id,
            cur_backend(p)->name, msg);
    detach_client(p);
    proxy_free(p);
}

/* Records why the current attempt failed and moves on to the next backend. */
static void attempt_failed(struct proxy *p, const char *what)
{
    const struct sw_config_backend *be = cur_backend(p);
    size_t used = strlen(p->failures);
    snprintf(p->failures + used, sizeof p->failures - used, "%s%s: %s", used ? "; " : "",
             be->name, what);
    sw_warn("request %s: attempt %zu on %s failed: %s", p->id, p->cur + 1, be->name, what);
    if (p->up.retry_after_s >= 0 &&
        (p->retry_after_s < 0 || p->up.retry_after_s < p->retry_after_s))
        p->retry_after_s = p->up.retry_after_s;
    sw_upstream_cleanup(&p->up);
    sw_buf_free(&p->resp);
    sw_sse_free(&p->sse);
    p->abort_err = SW_OK;
    p->saw_done = false;
    p->cur++;
    if (p->cur < p->plan.n)
        start_attempt(p);
    else
        fail_all(p);
}

/* ---- Streaming ---- */

/* One SSE event from the upstream: rewrite `model`, queue it for the client.
 * Before the first byte went out, an error or garbage aborts the attempt so
 * the next backend can answer instead. */
static int on_sse_event(void *ud, const char *event, const char *data, size_t len)
{
    (void)event;
    struct proxy *p = ud;
    if (len == 6 && memcmp(data, "[DONE]", 6) == 0) {
        p->saw_done = true;
        evbuffer_add(p->out, "data: [DONE]\n\n", 14);
        return SW_OK;
    }
    json_error_t jerr;
    json_t *chunk = json_loadb(data, len, 0, &jerr);
    if (!chunk || !json_is_object(chunk)) {
        json_decref(chunk);
        p->abort_err = SW_EPROTO;
        snprintf(p->abort_msg, sizeof p->abort_msg, "malformed JSON in stream event");
        return SW_EPROTO;
    }
    if (json_object_get(chunk, "error") && !p->started) {
        json_decref(chunk);
        p->abort_err = SW_ESTATUS;
        snprintf(p->abort_msg, sizeof p->abort_msg, "error event before the first token");
        return SW_ESTATUS;
    }
    if (json_is_string(json_object_get(chunk, "model")))
        json_object_set_new(chunk, "model", json_string(p->public_model));
    char *s = json_dumps(chunk, JSON_COMPACT);
    json_decref(chunk);
    if (!s) {
        p->abort_err = SW_ENOMEM;
        snprintf(p->abort_msg, sizeof p->abort_msg, "out of memory");
        return SW_ENOMEM;
    }
    evbuffer_add_printf(p->out, "data: %s\n\n", s);
    free(s);
    return SW_OK;
}

/* Bytes accepted for the client but not yet written to its socket: the
 * connection's bufferevent and the socket bufferevent under it. */
static size_t client_pending(const struct proxy *p)
{
    struct bufferevent *bev = p->evcon ? evhttp_connection_get_bufferevent(p->evcon) : NULL;
    if (!bev)
        return 0;
    size_t n = evbuffer_get_length(bufferevent_get_output(bev));
    struct bufferevent *under = bufferevent_get_underlying(bev);
    if (under)
        n += evbuffer_get_length(bufferevent_get_output(under));
    return n;
}

/* While paused for a slow client, look every few milliseconds whether it
 * caught up (simpler and sturdier than chaining on write callbacks that
 * evhttp also uses). */
static void on_resume_check(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct proxy *p = arg;
    if (client_pending(p) > CLIENT_PENDING_MAX / 2) {
        struct timeval tv = {0, RESUME_CHECK_US};
        evtimer_add(p->resume_timer, &tv);
        return;
    }
    p->paused = false;
    sw_upstream_resume(&p->up);
}

static void start_client_stream(struct proxy *p)
{
    struct evkeyvalq *h = evhttp_request_get_output_headers(p->req);
    set_route_headers(p);
    evhttp_add_header(h, "Content-Type", "text/event-stream");
    evhttp_add_header(h, "Cache-Control", "no-cache");
    evhttp_send_reply_start(p->req, 200, "OK");
    p->started = true;
}

static size_t on_stream_data(struct proxy *p, const char *bytes, size_t len)
{
    if (p->started && client_pending(p) > CLIENT_PENDING_MAX) {
        if (!p->resume_timer)
            p->resume_timer = evtimer_new(p->env.base, on_resume_check, p);
        if (p->resume_timer) {
            struct timeval tv = {0, RESUME_CHECK_US};
            evtimer_add(p->resume_timer, &tv);
            p->paused = true;
            return CURL_WRITEFUNC_PAUSE;
        }
    }
    int err = sw_sse_feed(&p->sse, bytes, len);
    if (err == SW_ETOOBIG && !p->abort_err) {
        p->abort_err = SW_EPROTO;
        snprintf(p->abort_msg, sizeof p->abort_msg, "stream event larger than %d bytes",
                 SSE_EVENT_MAX);
    }
    if (evbuffer_get_length(p->out) > 0) {
        if (!p->started)
            start_client_stream(p);
        evhttp_send_reply_chunk(p->req, p->out);
        watch_client(p); /* evhttp stopped reading to write; keep noticing EOF */
    }
    return err ? 0 : len;
}

/* ---- Attempts ---- */

static size_t on_data(void *ud, const char *bytes, size_t len)
{
    struct proxy *p = ud;
    if (p->client_gone)
        return 0;
    if (p->up.status < 200 || p->up.status > 299) {
        /* Keep what fits of the error body; it is passed through or logged. */
        size_t room = p->resp.max - p->resp.len;
        sw_buf_append(&p->resp, bytes, len < room ? len : room);
        return len;
    }
    if (p->chat.stream)
        return on_stream_data(p, bytes, len);
    if (sw_buf_append(&p->resp, bytes, len)) {
        p->abort_err = SW_ETOOBIG;
        snprintf(p->abort_msg, sizeof p->abort_msg, "answer larger than %ld bytes",
                 p->cfg->limits.max_response_bytes);
        return 0;
    }
    return len;
}

/* 408, 409, 425, 429 and 5xx are the backend's trouble: try the next one.
 * Other 4xx are the request's: pass them through. */
static bool status_retryable(long status)
{
    return status == 408 || status == 409 || status == 425 || status == 429 || status >= 500;
}

static void finish_non_stream(struct proxy *p)
{
    json_error_t jerr;
    json_t *body = json_loadb(p->resp.ptr ? p->resp.ptr : "", p->resp.len, 0, &jerr);
    if (!body || !json_is_object(body) || !json_is_array(json_object_get(body, "choices"))) {
        json_decref(body);
        attempt_failed(p, "malformed JSON answer");
        return;
    }
    json_object_set_new(body, "model", json_string(p->public_model));
    char *s = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    if (!s) {
        attempt_failed(p, "out of memory");
        return;
    }
    set_route_headers(p);
    sw_reply_json(p->req, 200, s, strlen(s));
    free(s);
    detach_client(p);
    proxy_free(p);
}

/* A non-retryable upstream 4xx: the request itself is wrong for the backend.
 * Pass it through in OpenAI's shape. */
static void pass_through_error(struct proxy *p)
{
    long status = p->up.status;
    json_error_t jerr;
    json_t *body = json_loadb(p->resp.ptr ? p->resp.ptr : "", p->resp.len, 0, &jerr);
    set_route_headers(p);
    if (body && json_is_object(json_object_get(body, "error"))) {
        char *s = json_dumps(body, JSON_COMPACT);
        if (s)
            sw_reply_json(p->req, (int)status, s, strlen(s));
        else
            sw_reply_error(p->req, (int)status, "invalid_request_error", "upstream_rejected",
                           NULL, "Backend '%s' rejected the request with status %ld.",
                           cur_backend(p)->name, status);
        free(s);
    } else {
        sw_reply_error(p->req, (int)status, "invalid_request_error", "upstream_rejected", NULL,
                       "Backend '%s' rejected the request with status %ld.",
                       cur_backend(p)->name, status);
    }
    json_decref(body);
    sw_info("request %s: %s rejected the request with %ld", p->id, cur_backend(p)->name, status);
    detach_client(p);
    proxy_free(p);
}

static void on_done(void *ud, int err)
{
    struct proxy *p = ud;
    char what[200];
    if (p->abort_err) {
        snprintf(what, sizeof what, "%s", p->abort_msg);
    } else if (err) {
        if (err == SW_ETIMEOUT)
            p->any_timeout = true;
        snprintf(what, sizeof what, "%s%s%.150s", sw_err_str(err), p->up.errbuf[0] ? ": " : "",
                 p->up.errbuf);
    } else if (p->up.status < 200 || p->up.status > 299) {
        if (!p->started && !status_retryable(p->up.status)) {
            pass_through_error(p);
            return;
        }
        snprintf(what, sizeof what, "status %ld", p->up.status);
    } else if (!p->chat.stream) {
        finish_non_stream(p);
        return;
    } else if (p->saw_done && !sw_sse_pending(&p->sse)) {
        evhttp_send_reply_end(p->req);
        detach_client(p);
        proxy_free(p);
        return;
    } else {
        snprintf(what, sizeof what, "stream ended without [DONE]");
    }

    if (p->started)
        fail_stream(p, what);
    else
        attempt_failed(p, what);
}

static void start_attempt(struct proxy *p)
{
    const struct sw_config_backend *be = cur_backend(p);
    int64_t left = p->deadline_ms - sw_now_ms();
    if (left <= 0) {
        p->any_timeout = true;
        size_t used = strlen(p->failures);
        snprintf(p->failures + used, sizeof p->failures - used, "%s%s: not tried, deadline passed",
                 used ? "; " : "", be->name);
        fail_all(p);
        return;
    }
    json_object_set_new(p->chat.body, "model", json_string(be->model));
    char *body = json_dumps(p->chat.body, JSON_COMPACT);
    if (!body) {
        attempt_failed(p, "out of memory");
        return;
    }
    sw_buf_init(&p->resp, p->chat.stream ? ERROR_BODY_MAX : (size_t)p->cfg->limits.max_response_bytes);
    sw_sse_init(&p->sse, SSE_EVENT_MAX, on_sse_event, p);
    static const struct sw_upstream_cbs cbs = {on_data, on_done};
    int err = sw_upstream_start(&p->up, p->env.cev, be, "/v1/chat/completions", body,
                                strlen(body), (long)left, p->id, &cbs, p);
    if (err)
        attempt_failed(p, sw_err_str(err));
}

/* Removes metadata.allow_cloud (Spillway's own field; OpenAI accepts only
 * string metadata values) before the body goes upstream. */
static void strip_spillway_fields(json_t *body)
{
    json_t *md = json_object_get(body, "metadata");
    if (!json_is_object(md))
        return;
    json_object_del(md, "allow_cloud");
    if (json_object_size(md) == 0)
        json_object_del(body, "metadata");
}

void sw_relay_start(const struct sw_relay_env *env, struct evhttp_request *req,
                    struct sw_config *cfg, struct sw_chat_request *chat,
                    const struct sw_relay_plan *plan, int64_t deadline_ms,
                    const char *request_id)
{
    struct proxy *p = calloc(1, sizeof *p);
    char *public_model = chat->model ? strdup(chat->model) : NULL;
    struct evbuffer *out = evbuffer_new();
    if (!p || !public_model || !out || plan->n == 0) {
        sw_reply_error(req, 500, "server_error", NULL, NULL, "Out of memory.");
        free(p);
        free(public_model);
        if (out)
            evbuffer_free(out);
        sw_request_free(chat);
        if (env->on_finish)
            env->on_finish(env->ud);
        return;
    }
    p->env = *env;
    p->req = req;
    p->evcon = evhttp_request_get_connection(req);
    p->cfg = sw_config_ref(cfg);
    p->chat = *chat;
    memset(chat, 0, sizeof *chat);
    p->public_model = public_model;
    p->plan = *plan;
    p->deadline_ms = deadline_ms;
    p->out = out;
    p->retry_after_s = -1;
    snprintf(p->id, sizeof p->id, "%s", request_id);
    sw_buf_init(&p->resp, ERROR_BODY_MAX);
    sw_sse_init(&p->sse, SSE_EVENT_MAX, on_sse_event, p);
    strip_spillway_fields(p->chat.body);
    evhttp_connection_set_closecb(p->evcon, on_client_close, p);
    watch_client(p);
    start_attempt(p);
}
