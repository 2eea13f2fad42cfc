#include "server.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/buffer.h>
#include <event2/event_struct.h>
#include <jansson.h>

#include "azure.h"
#include "bedrock.h"
#include "chat.h"
#include "embed.h"
#include "common/buf.h"
#include "common/err.h"
#include "common/json.h"
#include "common/log.h"
#include "common/query.h"
#include "http/server.h"
#include "faults.h"
#include "gauth.h"
#include "gemini.h"
#include "model.h"
#include "prefix.h"
#include "render.h"
#include "responses.h"

#define MAX_BODY_BYTES (8 << 20)      /* a request body larger than this is a 413 */
#define MAX_HEADER_BYTES (64 << 10)   /* a request line + headers larger than this is a 431 */
#define MAX_CONNECTIONS 1000000       /* open client connections (the fd limit binds first) */
#define MAX_RENDER_BYTES (64 << 20)   /* one rendered response */
#define LISTEN_BACKLOG 8192
#define MAX_STATUS 600
#define MAX_TOKENS_ISSUED 256         /* tokens of the token endpoints kept (oldest replaced) */

/* ---- Types ---- */

enum sim_state {
    S_DELAYED,                   /* waiting out the latency fault */
    S_HANGING,                   /* hang fault: never answered */
    S_QUEUED,                    /* waiting for a slot */
    S_ACTIVE                     /* holding a slot */
};

/* One chat request in progress. Owned by the server from the handler until
 * it is answered, the client goes away (on_gone) or the server is freed. */
struct sim {
    struct sw_llmsim_server *srv;
    struct sw_http_req *req;
    struct event timer;          /* the one timer of this request */
    enum sim_state state;
    struct sw_llmsim_gen gen;
    struct sw_llmsim_chat chat;  /* owns the echo source text */
    struct sw_llmsim_reply reply;
    struct sw_llmsim_text text;
    struct sw_buf drifted;       /* echo source under the drift fault (owned) */
    json_t *rroot;               /* a Responses request (POST /v1/responses): its body, echoed
                                  * in the answer (owned); NULL for chat */
    struct sw_llmsim_rstream *rs; /* its event stream when streamed (owned) */
    struct sw_llmsim_verdict verdict;
    bool length;                 /* stopped by max_tokens */
    bool headers_sent;           /* stream started */
    int sent;                    /* tokens sent */
    struct sim *prev, *next;     /* srv->live */
};

struct sw_llmsim_server {
    struct sw_llmsim_opts o;
    struct event_base *base;
    struct sw_http_server *http;
    struct event *exit_timer;    /* exit once the answer to {"exit": true} is written */
    int port;
    struct sw_llmsim_model model;
    struct sw_llmsim_fault_state faults;
    struct sim *live;            /* every struct sim, for shutdown */
    struct sw_buf scratch;       /* rendering, reused */
    struct evbuffer *out;        /* stream bytes handed to the HTTP server, reused */
    uint64_t chat_seq;           /* chat requests accepted (seeds lorem) */
    /* evidence */
    json_t **received;           /* ring of o.keep_received entries */
    size_t recv_head, recv_count;
    uint64_t served, aborted, hanging, closed_by_fault, errored_by_fault, delayed;
    uint64_t status[MAX_STATUS];
    uint64_t prompt_tokens_total, tokens_predicted_total;
    uint64_t cache_queries_total, cache_hits_total; /* chat prompt tokens, and of them cached */
    uint64_t tokens_sent;        /* tokens written, streams cut short included */
    uint64_t lag_sum_us, lag_n, lag_max_us; /* timer lateness: is the loop keeping up? */
    double prompt_seconds_total, predicted_seconds_total;
    /* the token endpoints (gauth.h) */
    char *sa_pubkey;             /* --google-sa-pubkey's PEM (owned), NULL off */
    struct { char token[48]; int64_t expires_us; } issued[MAX_TOKENS_ISSUED];
    uint64_t issued_n;
    uint64_t token_requests_google, token_requests_entra, token_refused;
};

static int64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* ---- Replies ---- */

static void count_status(struct sw_llmsim_server *s, int status)
{
    if (status >= 0 && status < MAX_STATUS)
        s->status[status]++;
}

static void send_bytes(struct sw_llmsim_server *s, struct sw_http_req *req, int status,
                       const char *ctype, const char *body, size_t len)
{
    (void)s;
    sw_http_add_header(req, "Server", "llmsim/" SW_VERSION);
    sw_http_reply(req, status, ctype, body, len);
}

static void send_json(struct sw_llmsim_server *s, struct sw_http_req *req, int status,
                      json_t *body)
{
    char *text = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    if (!text) {
        send_bytes(s, req, 500, "application/json", "{}", 2);
        return;
    }
    send_bytes(s, req, status, "application/json", text, strlen(text));
    free(text);
}

/* An error in dialect d's shape, with Retry-After when retry_after_s >= 0. */
static void send_error(struct sw_llmsim_server *s, struct sw_http_req *req,
                       enum sw_llmsim_dialect d, int status, const char *msg, const char *limit,
                       int retry_after_s)
{
    if (status == 429 && retry_after_s < 0)
        retry_after_s = 1;
    if (retry_after_s >= 0) {
        char v[24];
        snprintf(v, sizeof v, "%d", retry_after_s);
        sw_http_add_header(req, "Retry-After", v);
    }
    if (d == SW_LLMSIM_ANTHROPIC && status == 429)
        sw_http_add_header(req, "x-should-retry", "true");
    sw_buf_reset(&s->scratch);
    if (sw_llmsim_render_error(&s->scratch, d, status, msg, limit))
        sw_buf_reset(&s->scratch);
    send_bytes(s, req, status, "application/json", s->scratch.ptr ? s->scratch.ptr : "",
               s->scratch.len);
}

/* ---- Chat requests: lifecycle ---- */

static void on_tick(evutil_socket_t fd, short what, void *arg);

static void arm_at(struct sim *r, int64_t due_us)
{
    int64_t d = due_us - now_us();
    if (d < 0)
        d = 0;
    struct timeval tv = {(time_t)(d / 1000000), (suseconds_t)(d % 1000000)};
    evtimer_add(&r->timer, &tv);
}

/* The next moment r has something to send. */
static void arm_next(struct sim *r)
{
    struct sw_llmsim_model *m = &r->srv->model;
    int k;
    r->reply.cached_tokens = r->gen.cached_tokens;  /* known once it holds a slot */
    if (r->chat.stream)
        k = r->sent < r->gen.output_tokens ? r->sent + 1 : r->gen.output_tokens;
    else
        k = r->gen.output_tokens;
    arm_at(r, sw_llmsim_token_due_us(m, &r->gen, k));
}

/* Unlinks and frees r. The caller has answered r->req or lost it. */
static void sim_free(struct sim *r)
{
    struct sw_llmsim_server *s = r->srv;
    sw_buf_free(&r->drifted);
    sw_llmsim_rstream_free(r->rs);
    json_decref(r->rroot);
    if (evtimer_initialized(&r->timer))
        evtimer_del(&r->timer);
    if (r->prev)
        r->prev->next = r->next;
    else
        s->live = r->next;
    if (r->next)
        r->next->prev = r->prev;
    sw_llmsim_chat_free(&r->chat);
    free(r);
}

/* r leaves the model; the request that gets its slot starts now. */
static void release_slot(struct sim *r)
{
    struct sw_llmsim_server *s = r->srv;
    struct sw_llmsim_gen *next = sw_llmsim_release(&s->model, &r->gen, now_us());
    if (next) {
        struct sim *n = (struct sim *)((char *)next - offsetof(struct sim, gen));
        n->state = S_ACTIVE;
        arm_next(n);
    }
}

/* r is finished with its connection: no more close notifications. Call it
 * before the answer's last call (after which the handle is gone). */
static void detach(struct sim *r)
{
    sw_http_on_gone(r->req, NULL, NULL);
}

/* The client disconnected before the answer was complete (the HTTP server
 * keeps reading a connection whose request is being answered, so this comes
 * at once in every state: queued, delayed, hanging, prefill, mid-stream). */
static void on_gone(void *arg)
{
    struct sim *r = arg;
    struct sw_llmsim_server *s = r->srv;
    s->aborted++;
    if (r->state == S_HANGING)
        s->hanging--;
    if (r->state == S_DELAYED)
        s->delayed--;
    release_slot(r); /* a no-op unless it is queued or holds a slot */
    if (s->o.verbose)
        sw_info("llmsim: client went away (state %d, %d tokens sent)", (int)r->state, r->sent);
    sim_free(r); /* the HTTP server frees the request */
}

static void account_done(struct sim *r)
{
    struct sw_llmsim_server *s = r->srv;
    s->served++;
    s->tokens_predicted_total += (uint64_t)r->gen.output_tokens;
    /* what was prefilled: the prompt less what the slot's cache held */
    int prefilled = r->gen.prompt_tokens - r->gen.cached_tokens;
    s->prompt_tokens_total += (uint64_t)prefilled;
    s->cache_queries_total += (uint64_t)r->gen.prompt_tokens;
    s->cache_hits_total += (uint64_t)r->gen.cached_tokens;
    s->prompt_seconds_total += sw_llmsim_prefill_us(&s->model.p, prefilled) / 1e6;
    s->predicted_seconds_total +=
        (double)r->gen.output_tokens * sw_llmsim_period_us(&s->model.p) / 1e6;
}

/* Sends the rendered bytes (s->scratch) as they are: one write to the socket
 * when nothing is waiting before them (one HTTP chunk on HTTP/1.1). */
static void send_stream_bytes(struct sim *r)
{
    struct sw_llmsim_server *s = r->srv;
    if (s->scratch.len == 0)
        return;
    evbuffer_add(s->out, s->scratch.ptr, s->scratch.len);
    sw_http_stream_write(r->req, s->out); /* drains s->out */
}

/* Sends what is due of a streaming answer. */
static void tick_stream(struct sim *r, int due)
{
    struct sw_llmsim_server *s = r->srv;
    int err = SW_OK;
    sw_buf_reset(&s->scratch);
    if (!r->headers_sent) {
        /* the HTTP server sets TCP_NODELAY: each token leaves at its time */
        sw_http_add_header(r->req, "Server", "llmsim/" SW_VERSION);
        sw_http_add_header(r->req, "Cache-Control", "no-cache");
        sw_http_stream_start(r->req, 200, "text/event-stream; charset=utf-8");
        count_status(s, 200);
        r->headers_sent = true;
        err = r->rs ? sw_llmsim_rstream_start(r->rs, &s->scratch)
                    : sw_llmsim_render_stream_start(&s->scratch, &r->reply);
        if (!err && r->verdict.stream_error_after == 0 && r->gen.output_tokens > 0) {
            /* an error before any token: the start goes out alone, the error
             * event one decode period later (as an upstream that accepted
             * the request and then failed) */
            send_stream_bytes(r);
            arm_at(r, sw_llmsim_token_due_us(&s->model, &r->gen, r->gen.output_tokens >= 2 ? 2 : 1));
            return;
        }
    }
    /* the malformed event is token 2 (token 1 when there is only one) */
    int bad = r->gen.output_tokens >= 2 ? 2 : 1;
    int close_k = r->verdict.close_after_chunks;
    int error_k = r->verdict.stream_error_after;
    while (!err && r->sent < due && r->sent != error_k) {
        struct sw_str t = sw_llmsim_text_next(&r->text);
        r->sent++;
        s->tokens_sent++;
        enum sw_llmsim_malformed mf = r->sent == bad ? r->verdict.malformed
                                                     : SW_LLMSIM_MALFORMED_NONE;
        err = r->rs ? sw_llmsim_rstream_token(r->rs, &s->scratch, t, mf)
                    : sw_llmsim_render_stream_token(&s->scratch, &r->reply, t, mf);
        if (close_k > 0 && r->sent == close_k)
            break;
    }
    if (err) {
        sw_error("llmsim: rendering a stream failed: %s", sw_err_str(err));
        close_k = r->sent; /* cut the stream */
    }
    if (close_k > 0 && r->sent >= close_k && r->sent < r->gen.output_tokens) {
        /* close-after-chunks: the chunks go out, then the connection closes */
        send_stream_bytes(r);
        s->closed_by_fault++;
        detach(r);
        sw_http_stream_abort(r->req);
        release_slot(r);
        sim_free(r);
        return;
    }
    if (error_k >= 0 && r->sent == error_k && r->sent < r->gen.output_tokens) {
        /* stream-error-after: the error event ends a stream that started well */
        if (r->rs ? sw_llmsim_rstream_error(r->rs, &s->scratch)
                  : sw_llmsim_render_stream_error(&s->scratch, &r->reply))
            sw_error("llmsim: rendering a stream error failed");
        send_stream_bytes(r);
        s->errored_by_fault++;
        detach(r);
        sw_http_stream_end(r->req);
        release_slot(r);
        sim_free(r);
        return;
    }
    if (r->sent < r->gen.output_tokens) {
        send_stream_bytes(r);
        arm_next(r);
        return;
    }
    err = r->rs ? sw_llmsim_rstream_end(r->rs, &s->scratch, r->gen.output_tokens, r->length)
                : sw_llmsim_render_stream_end(&s->scratch, &r->reply, r->gen.output_tokens,
                                              r->length);
    if (err)
        sw_error("llmsim: rendering a stream end failed: %s", sw_err_str(err));
    send_stream_bytes(r);
    detach(r);
    sw_http_stream_end(r->req);
    account_done(r);
    release_slot(r);
    sim_free(r);
}

/* Sends the whole non-streaming answer. */
static void finish_message(struct sim *r)
{
    struct sw_llmsim_server *s = r->srv;
    struct sw_buf text;
    int err = SW_OK;
    sw_buf_init(&text, MAX_RENDER_BYTES);
    for (int k = 0; !err && k < r->gen.output_tokens; k++) {
        struct sw_str t = sw_llmsim_text_next(&r->text);
        err = sw_buf_append(&text, t.ptr, t.len);
    }
    sw_buf_reset(&s->scratch);
    if (!err && r->rroot)
        err = sw_llmsim_responses_message(&s->scratch, &r->reply, r->rroot,
                                          text.ptr ? text.ptr : "", text.len, r->gen.output_tokens,
                                          r->length, r->verdict.malformed);
    else if (!err)
        err = sw_llmsim_render_message(&s->scratch, &r->reply, text.ptr ? text.ptr : "", text.len,
                                       r->gen.output_tokens, r->length, r->verdict.malformed);
    sw_buf_free(&text);
    detach(r);
    if (err) {
        sw_error("llmsim: rendering an answer failed: %s", sw_err_str(err));
        count_status(s, 500);
        send_error(s, r->req, r->reply.dialect, 500, "llmsim could not render the answer", NULL,
                   -1);
    } else {
        count_status(s, 200);
        r->sent = r->gen.output_tokens;
        s->tokens_sent += (uint64_t)r->gen.output_tokens;
        send_bytes(s, r->req, 200, "application/json", s->scratch.ptr, s->scratch.len);
        account_done(r);
    }
    release_slot(r);
    sim_free(r);
}

/* After the latency fault: answer the decided error or enter the model. */
static void proceed(struct sim *r)
{
    struct sw_llmsim_server *s = r->srv;
    if (r->verdict.status) {
        char msg[160];
        if (r->verdict.limit)
            snprintf(msg, sizeof msg, "Rate limit reached for %s per min (llmsim). Please try again "
                     "in %ds.", r->verdict.limit, r->verdict.retry_after_s);
        else
            snprintf(msg, sizeof msg, "llmsim: injected error %d", r->verdict.status);
        count_status(s, r->verdict.status);
        detach(r);
        send_error(s, r->req, r->reply.dialect, r->verdict.status, msg, r->verdict.limit,
                   r->verdict.retry_after_s);
        sim_free(r);
        return;
    }
    switch (sw_llmsim_submit(&s->model, &r->gen, now_us())) {
    case SW_LLMSIM_STARTED:
        r->state = S_ACTIVE;
        arm_next(r);
        break;
    case SW_LLMSIM_QUEUED:
        r->state = S_QUEUED;
        break;
    case SW_LLMSIM_REJECTED:
        count_status(s, 503);
        detach(r);
        send_error(s, r->req, r->reply.dialect, 503, "llmsim: the queue is full (--queue-max)",
                   NULL, 1);
        sim_free(r);
        break;
    }
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    struct sim *r = arg;
    (void)fd;
    (void)what;
    if (r->state == S_DELAYED) {
        r->srv->delayed--;
        proceed(r);
        return;
    }
    if (r->state != S_ACTIVE)
        return;
    struct sw_llmsim_server *srv = r->srv;
    int64_t now = now_us();
    int due = sw_llmsim_tokens_due(&srv->model, &r->gen, now);
    int next_k = r->chat.stream && r->sent < r->gen.output_tokens ? r->sent + 1
                                                                  : r->gen.output_tokens;
    int64_t lag = now - sw_llmsim_token_due_us(&srv->model, &r->gen, next_k);
    if (lag >= 0) {
        srv->lag_sum_us += (uint64_t)lag;
        srv->lag_n++;
        if ((uint64_t)lag > srv->lag_max_us)
            srv->lag_max_us = (uint64_t)lag;
    }
    if (r->chat.stream) {
        int first_due = r->gen.output_tokens == 0 ? 1 : due;
        if (first_due > r->sent || due == r->gen.output_tokens)
            tick_stream(r, due);
        else
            arm_next(r);
    } else if (due >= r->gen.output_tokens) {
        finish_message(r);
    } else {
        arm_next(r);
    }
}

/* ---- Evidence ---- */

/* One request header into the JSON object ud, its name lowercased. */
static void add_header_json(const char *key, const char *value, void *ud)
{
    char name[128];
    size_t n = strlen(key);
    if (n >= sizeof name)
        return;
    for (size_t i = 0; i <= n; i++)
        name[i] = (char)tolower((unsigned char)key[i]);
    json_t *v = json_string(value);
    json_object_set_new((json_t *)ud, name, v ? v : json_null());
}

static void record_received(struct sw_llmsim_server *s, struct sw_http_req *req,
                            const char *path, json_t *parsed, const char *body, size_t len)
{
    size_t keep = (size_t)s->o.keep_received;
    if (keep == 0)
        return;
    json_t *headers = json_object();
    if (headers)
        sw_http_each_header(req, add_header_json, headers);
    json_t *b = parsed ? json_incref(parsed) : json_stringn(body ? body : "", len);
    const char *method = sw_http_method_name(req);
    json_t *e = json_pack("{s:s, s:s, s:o, s:o}", "method", method, "path", path, "headers",
                          headers, "body", b ? b : json_null());
    if (!e)
        return;
    /* the path as it came, query included, when llmsim routed it elsewhere */
    const char *wp = sw_http_path(req), *q = sw_http_query(req);
    if ((q && *q) || strcmp(wp, path)) {
        char wire[SW_LLMSIM_PATH_MAX + 512];
        snprintf(wire, sizeof wire, "%s%s%s", wp, q && *q ? "?" : "", q ? q : "");
        json_object_set_new(e, "wire_path", json_string(wire));
    }
    size_t slot = (s->recv_head + s->recv_count) % keep;
    if (s->recv_count == keep) {
        json_decref(s->received[s->recv_head]);
        s->recv_head = (s->recv_head + 1) % keep;
    } else {
        s->recv_count++;
    }
    s->received[slot] = e;
}

static void clear_received(struct sw_llmsim_server *s)
{
    size_t keep = (size_t)s->o.keep_received;
    for (size_t i = 0; i < s->recv_count; i++)
        json_decref(s->received[(s->recv_head + i) % keep]);
    s->recv_head = s->recv_count = 0;
}

/* ---- Chat endpoint ---- */

/* The echo text as a drifting model would answer a JSON request: valid
 * JSON of another shape ({"answer": "<text>"}), or prose around it. */
static int drift_text(struct sw_buf *out, enum sw_llmsim_drift d, const char *src, size_t len)
{
    sw_buf_init(out, SW_LLMSIM_ECHO_MAX + 64);
    int err;
    if (d == SW_LLMSIM_DRIFT_SHAPE) {
        err = sw_buf_append_str(out, "{\"answer\": \"");
        if (!err)
            err = sw_json_escape(out, src, len, 0);
        if (!err)
            err = sw_buf_append_str(out, "\"}");
    } else {
        err = sw_buf_append_str(out, "Sure! Here it is: ");
        if (!err)
            err = sw_buf_append(out, src, len);
    }
    return err;
}

static void on_chat(struct sw_llmsim_server *s, struct sw_http_req *req, const char *path,
                    enum sw_llmsim_dialect d, bool gem_stream)
{
    size_t len;
    const char *body = sw_http_body(req, &len);
    json_error_t jerr;
    json_t *root = json_loadb(body, len, 0, &jerr);
    record_received(s, req, path, root, body, len);
    if (sw_llmsim_faults_arrive(&s->faults)) {
        sw_warn("llmsim: exiting on chat request #%d (exit_after)", s->faults.f.exit_after);
        fflush(stdout);
        exit(1);
    }
    if (!root) {
        char msg[256];
        snprintf(msg, sizeof msg, "We could not parse the JSON body of your request: %s",
                 jerr.text);
        count_status(s, 400);
        send_error(s, req, d, 400, msg, NULL, -1);
        return;
    }
    struct sim *r = calloc(1, sizeof *r);
    if (!r) {
        json_decref(root);
        count_status(s, 500);
        send_error(s, req, d, 500, "llmsim: out of memory", NULL, -1);
        return;
    }
    char msg[256];
    bool responses = !strcmp(path, "/v1/responses");
    int err = responses               ? sw_llmsim_responses_parse(root, &r->chat, msg, sizeof msg)
              : d == SW_LLMSIM_GEMINI ? sw_llmsim_gem_parse(root, &r->chat, msg, sizeof msg)
                                      : sw_llmsim_chat_parse(root, d, &r->chat, msg, sizeof msg);
    if (!err && d == SW_LLMSIM_GEMINI)
        r->chat.stream = gem_stream;
    if (!err && s->o.params.prefix_cache > 0)
        sw_llmsim_prefix_of(root, s->o.tokenizer_pieces ? r->chat.prompt_tokens_pieces
                                                        : r->chat.prompt_tokens, &r->gen.prefix);
    if (responses && !err)
        r->rroot = root;
    else
        json_decref(root);
    if (err) {
        sw_llmsim_chat_free(&r->chat);
        free(r);
        count_status(s, 400);
        send_error(s, req, d, 400, msg, NULL, -1);
        return;
    }
    if (s->o.tokenizer_pieces)
        r->chat.prompt_tokens = r->chat.prompt_tokens_pieces;
    r->srv = s;
    r->req = req;
    r->next = s->live;
    if (s->live)
        s->live->prev = r;
    s->live = r;
    evtimer_assign(&r->timer, s->base, on_tick, r);

    /* the answer */
    uint64_t seq = ++s->chat_seq;
    struct sw_llmsim_reply *rp = &r->reply;
    rp->dialect = d;
    if (r->rroot)
        snprintf(rp->id, sizeof rp->id, "resp_sim%016llx", (unsigned long long)seq);
    else if (d == SW_LLMSIM_OPENAI)
        snprintf(rp->id, sizeof rp->id, "chatcmpl-sim%016llx", (unsigned long long)seq);
    else if (d == SW_LLMSIM_GEMINI)
        snprintf(rp->id, sizeof rp->id, "gsim%016llx", (unsigned long long)seq);
    else
        snprintf(rp->id, sizeof rp->id, "msg_sim%016llx", (unsigned long long)seq);
    rp->created = (long long)time(NULL);
    snprintf(rp->model, sizeof rp->model, "%s", r->chat.model[0] ? r->chat.model : s->o.model);
    rp->prompt_tokens = r->chat.prompt_tokens;
    rp->include_usage = r->chat.include_usage;
    /* A forced tool is called (echo only); streamed, only the anthropic
     * dialect, the Responses API and a scripted call send it as a tool call. */
    if (s->o.reply == SW_LLMSIM_REPLY_ECHO &&
        (!r->chat.stream || d == SW_LLMSIM_ANTHROPIC || d == SW_LLMSIM_GEMINI || r->rroot ||
         r->chat.scripted))
        snprintf(rp->tool, sizeof rp->tool, "%s", r->chat.forced_tool);
    /* Thinking asked of the Anthropic API (echo only): a thinking block
     * whose text is the last user message's, cut at a character boundary. */
    if (s->o.reply == SW_LLMSIM_REPLY_ECHO && d == SW_LLMSIM_ANTHROPIC && !r->rroot &&
        r->chat.thinking && !rp->tool[0] && r->chat.last_user.len) {
        size_t n = r->chat.last_user.len < sizeof rp->thinking - 1 ? r->chat.last_user.len
                                                                   : sizeof rp->thinking - 1;
        while (n > 0 && n < r->chat.last_user.len &&
               ((unsigned char)r->chat.last_user.ptr[n] & 0xC0) == 0x80)
            n--;
        memcpy(rp->thinking, r->chat.last_user.ptr, n);
        rp->thinking[n] = '\0';
    }
    if (d == SW_LLMSIM_GEMINI) {
        rp->tool_args = r->chat.last_user.ptr;
        rp->tool_args_len = r->chat.last_user.len;
        rp->block = memmem(body, len, "GEMINI_SAFETY_BLOCK", 19)   ? 1
                    : memmem(body, len, "GEMINI_PROMPT_BLOCK", 19) ? 2
                                                                   : 0;
    }
    if (sw_llmsim_reply_prepare(rp))
        rp->head_len = 0; /* too long to cache: built per chunk */
    if (r->rroot && r->chat.stream && !(r->rs = sw_llmsim_rstream_new(rp, r->rroot))) {
        count_status(s, 500); /* sim_free unlinks r and frees what it holds */
        send_error(s, req, d, 500, "llmsim: out of memory", NULL, -1);
        sim_free(r);
        return;
    }

    r->gen.prompt_tokens = r->chat.prompt_tokens;
    rp->timings = s->o.params.prefix_cache > 0;
    if (s->o.reply == SW_LLMSIM_REPLY_ECHO) {
        int limit = r->chat.max_tokens > 0 ? r->chat.max_tokens : s->o.params.max_output_tokens;
        const char *src = r->chat.last_user.ptr;
        size_t srclen = r->chat.last_user.len;
        if (r->chat.wants_json && s->faults.f.drift != SW_LLMSIM_DRIFT_NONE &&
            drift_text(&r->drifted, s->faults.f.drift, src, srclen) == SW_OK) {
            src = r->drifted.ptr;
            srclen = r->drifted.len;
        }
        int pieces = sw_llmsim_echo_tokens(src, srclen);
        r->gen.output_tokens = pieces < limit ? pieces : limit;
        r->length = pieces > limit;
        sw_llmsim_text_echo(&r->text, src, srclen);
    } else {
        r->gen.output_tokens = sw_llmsim_output_len(&s->model, r->chat.max_tokens);
        r->length = r->chat.max_tokens > 0;
        uint64_t st = s->o.params.seed ^ (seq * 0x9e3779b97f4a7c15ULL);
        sw_llmsim_text_lorem(&r->text, sw_llmsim_rand(&st));
    }

    sw_llmsim_faults_decide(&s->faults, now_us(), r->gen.prompt_tokens + r->gen.output_tokens,
                            &r->verdict);
    if (s->o.verbose)
        sw_info("llmsim: %s #%llu prompt=%d output=%d stream=%d status=%d", path,
                (unsigned long long)seq, r->gen.prompt_tokens, r->gen.output_tokens,
                (int)r->chat.stream, r->verdict.status);
    sw_http_on_gone(req, on_gone, r);
    if (r->verdict.hang) {
        r->state = S_HANGING;
        s->hanging++;
        return;
    }
    if (r->verdict.latency_ms > 0) {
        r->state = S_DELAYED;
        s->delayed++;
        arm_at(r, now_us() + (int64_t)r->verdict.latency_ms * 1000);
        return;
    }
    proceed(r);
}

/* ---- Embeddings ---- */

/* Answered at once (no slot, no prefill time): recorded like a chat request,
 * subject to the error faults (error_rate, rpm, tpm), not to the timing ones. */
static void on_embeddings(struct sw_llmsim_server *s, struct sw_http_req *req, const char *path)
{
    size_t len;
    const char *body = sw_http_body(req, &len);
    json_error_t jerr;
    json_t *root = json_loadb(body, len, 0, &jerr);
    record_received(s, req, path, root, body, len);
    char msg[256];
    if (!root) {
        snprintf(msg, sizeof msg, "We could not parse the JSON body of your request: %s", jerr.text);
        count_status(s, 400);
        send_error(s, req, SW_LLMSIM_OPENAI, 400, msg, NULL, -1);
        return;
    }
    struct sw_buf out;
    sw_buf_init(&out, MAX_RENDER_BYTES);
    int tokens = 0;
    int err = sw_llmsim_embed(root, s->o.model, &out, &tokens, msg, sizeof msg);
    json_decref(root);
    if (err) {
        sw_buf_free(&out);
        count_status(s, err == SW_EINVAL ? 400 : 500);
        send_error(s, req, SW_LLMSIM_OPENAI, err == SW_EINVAL ? 400 : 500, msg, NULL, -1);
        return;
    }
    struct sw_llmsim_verdict v;
    sw_llmsim_faults_decide(&s->faults, now_us(), tokens, &v);
    if (v.status) {
        sw_buf_free(&out);
        count_status(s, v.status);
        send_error(s, req, SW_LLMSIM_OPENAI, v.status, "llmsim: injected error", v.limit,
                   v.retry_after_s);
        return;
    }
    s->prompt_tokens_total += (uint64_t)tokens;
    s->served++;
    count_status(s, 200);
    send_bytes(s, req, 200, "application/json", out.ptr ? out.ptr : "", out.len);
    sw_buf_free(&out);
}

/* ---- Other endpoints ---- */

static void on_models(struct sw_llmsim_server *s, struct sw_http_req *req)
{
    const char *id = s->o.model;
    if (s->o.dialect == SW_LLMSIM_ANTHROPIC) {
        send_json(s, req, 200,
                  json_pack("{s:[{s:s, s:s, s:s, s:s}], s:b, s:s, s:s}", "data", "type", "model",
                            "id", id, "display_name", id, "created_at", "2025-01-01T00:00:00Z",
                            "has_more", 0, "first_id", id, "last_id", id));
        return;
    }
    send_json(s, req, 200,
              json_pack("{s:s, s:[{s:s, s:s, s:I, s:s, s:{s:i, s:i}}]}", "object", "list", "data",
                        "id", id, "object", "model", "created", (json_int_t)1735689600,
                        "owned_by", "llmsim", "meta", "n_ctx_train", s->o.n_ctx, "n_vocab",
                        32000));
}

static void on_health(struct sw_llmsim_server *s, struct sw_http_req *req)
{
    if (sw_llmsim_load_state(&s->model, now_us()) == SW_LLMSIM_LOADED) {
        send_json(s, req, 200, json_pack("{s:s}", "status", "ok"));
        return;
    }
    send_json(s, req, 503,
              json_pack("{s:{s:i, s:s, s:s}}", "error", "code", 503, "message", "Loading model",
                        "type", "unavailable_error"));
}

static void on_props(struct sw_llmsim_server *s, struct sw_http_req *req)
{
    send_json(s, req, 200,
              json_pack("{s:{s:i, s:i, s:s}, s:i, s:s, s:s, s:{s:b, s:b}, s:s, s:b}",
                        "default_generation_settings", "n_ctx", s->o.n_ctx, "n_predict", -1,
                        "model", s->o.model, "total_slots", s->o.params.slots, "model_path",
                        s->o.model, "chat_template", "", "modalities", "vision", 0, "audio", 0,
                        "build_info", "llmsim " SW_VERSION, "is_sleeping",
                        sw_llmsim_load_state(&s->model, now_us()) != SW_LLMSIM_LOADED));
}

static void on_metrics(struct sw_llmsim_server *s, struct sw_http_req *req)
{
    struct sw_buf b;
    sw_buf_init(&b, 1 << 16);
    double ptps = s->prompt_seconds_total > 0 ? s->prompt_tokens_total / s->prompt_seconds_total : 0;
    double dtps = s->predicted_seconds_total > 0
                      ? s->tokens_predicted_total / s->predicted_seconds_total
                      : 0;
    int err = sw_buf_appendf(
        &b,
        "# HELP llamacpp:prompt_tokens_total Number of prompt tokens processed.\n"
        "# TYPE llamacpp:prompt_tokens_total counter\n"
        "llamacpp:prompt_tokens_total %llu\n"
        "# HELP llamacpp:prompt_seconds_total Prompt process time\n"
        "# TYPE llamacpp:prompt_seconds_total counter\n"
        "llamacpp:prompt_seconds_total %.6f\n"
        "# HELP llamacpp:tokens_predicted_total Number of generation tokens processed.\n"
        "# TYPE llamacpp:tokens_predicted_total counter\n"
        "llamacpp:tokens_predicted_total %llu\n"
        "# HELP llamacpp:tokens_predicted_seconds_total Predict process time\n"
        "# TYPE llamacpp:tokens_predicted_seconds_total counter\n"
        "llamacpp:tokens_predicted_seconds_total %.3f\n"
        "# HELP llamacpp:prompt_tokens_seconds Average prompt throughput in tokens/s.\n"
        "# TYPE llamacpp:prompt_tokens_seconds gauge\n"
        "llamacpp:prompt_tokens_seconds %.3f\n"
        "# HELP llamacpp:predicted_tokens_seconds Average generation throughput in tokens/s.\n"
        "# TYPE llamacpp:predicted_tokens_seconds gauge\n"
        "llamacpp:predicted_tokens_seconds %.3f\n"
        "# HELP llamacpp:requests_processing Number of requests processing.\n"
        "# TYPE llamacpp:requests_processing gauge\n"
        "llamacpp:requests_processing %d\n"
        "# HELP llamacpp:requests_deferred Number of requests deferred.\n"
        "# TYPE llamacpp:requests_deferred gauge\n"
        "llamacpp:requests_deferred %d\n",
        (unsigned long long)s->prompt_tokens_total, s->prompt_seconds_total,
        (unsigned long long)s->tokens_predicted_total, s->predicted_seconds_total, ptps, dtps,
        s->model.in_flight + s->model.outside, s->model.queued + s->model.outside_waiting);
    /* vLLM's names for the same two numbers, so one simulator stands for both. */
    if (!err)
        err = sw_buf_appendf(
            &b,
            "# HELP vllm:num_requests_running Number of requests currently running on GPU.\n"
            "# TYPE vllm:num_requests_running gauge\n"
            "vllm:num_requests_running{model_name=\"%s\"} %d.0\n"
            "# HELP vllm:num_requests_waiting Number of requests waiting to be processed.\n"
            "# TYPE vllm:num_requests_waiting gauge\n"
            "vllm:num_requests_waiting{model_name=\"%s\"} %d.0\n"
            "# HELP vllm:request_prompt_tokens Number of prefill tokens processed.\n"
            "# TYPE vllm:request_prompt_tokens histogram\n"
            "vllm:request_prompt_tokens_sum{model_name=\"%s\"} %llu.0\n"
            "# HELP vllm:request_prefill_time_seconds Histogram of time spent in PREFILL phase "
            "for request.\n"
            "# TYPE vllm:request_prefill_time_seconds histogram\n"
            "vllm:request_prefill_time_seconds_sum{model_name=\"%s\"} %.6f\n"
            "# HELP vllm:prefix_cache_queries_total Prefix cache queries, in terms of number "
            "of queried tokens.\n"
            "# TYPE vllm:prefix_cache_queries_total counter\n"
            "vllm:prefix_cache_queries_total{model_name=\"%s\"} %llu.0\n"
            "# HELP vllm:prefix_cache_hits_total Prefix cache hits, in terms of number of "
            "cached tokens.\n"
            "# TYPE vllm:prefix_cache_hits_total counter\n"
            "vllm:prefix_cache_hits_total{model_name=\"%s\"} %llu.0\n",
            s->o.model, s->model.in_flight + s->model.outside, s->o.model,
            s->model.queued + s->model.outside_waiting, s->o.model,
            (unsigned long long)s->prompt_tokens_total, s->o.model, s->prompt_seconds_total,
            s->o.model, (unsigned long long)s->cache_queries_total, s->o.model,
            (unsigned long long)s->cache_hits_total);
    if (err)
        send_bytes(s, req, 500, "text/plain", "", 0);
    else
        send_bytes(s, req, 200, "text/plain; version=0.0.4", b.ptr, b.len);
    sw_buf_free(&b);
}

/* llama.cpp's GET /slots: one entry per slot, the busy ones first (this
 * server's generations and the outside load's). */
static void on_slots(struct sw_llmsim_server *s, struct sw_http_req *req)
{
    json_t *a = json_array();
    int busy = s->model.in_flight + s->model.outside;
    for (int i = 0; a && i < s->o.params.slots; i++)
        json_array_append_new(a, json_pack("{s:i, s:i, s:b}", "id", i, "n_ctx", s->o.n_ctx,
                                           "is_processing", i < busy));
    send_json(s, req, 200, a);
}

/* POST /admin/outside-load {"processing":N,"waiting":M}: another client's
 * work on this box (N slots held, M reported waiting); GET: the current. */
static void on_outside(struct sw_llmsim_server *s, struct sw_http_req *req, bool post)
{
    if (post) {
        size_t len;
        const char *body = sw_http_body(req, &len);
        json_t *j = json_loadb(body ? body : "", len, 0, NULL);
        json_t *p = json_object_get(j, "processing"), *w = json_object_get(j, "waiting");
        bool ok = json_is_object(j) && (!p || json_is_integer(p)) && (!w || json_is_integer(w)) &&
                  json_object_size(j) == (size_t)(!!p + !!w);
        json_int_t np = p ? json_integer_value(p) : 0, nw = w ? json_integer_value(w) : 0;
        json_decref(j);
        if (!ok || np < 0 || nw < 0 || np >= s->o.params.slots || nw > 1000000) {
            char msg[160];
            snprintf(msg, sizeof msg, "expected {\"processing\": 0..%d, \"waiting\": 0..1000000}",
                     s->o.params.slots - 1);
            send_error(s, req, SW_LLMSIM_OPENAI, 400, msg, NULL, -1);
            return;
        }
        sw_llmsim_set_outside(&s->model, (int)np, (int)nw);
        struct sw_llmsim_gen *g;
        while ((g = sw_llmsim_start_next(&s->model, now_us()))) {
            struct sim *n = (struct sim *)((char *)g - offsetof(struct sim, gen));
            n->state = S_ACTIVE;
            arm_next(n);
        }
    }
    send_json(s, req, 200, json_pack("{s:i, s:i}", "processing", s->model.outside, "waiting",
                                     s->model.outside_waiting));
}

static void on_stats(struct sw_llmsim_server *s, struct sw_http_req *req)
{
    json_t *st = json_object();
    for (int i = 0; i < MAX_STATUS; i++) {
        if (!s->status[i])
            continue;
        char k[16];
        snprintf(k, sizeof k, "%d", i);
        json_object_set_new(st, k, json_integer((json_int_t)s->status[i]));
    }
    enum sw_llmsim_load ls = sw_llmsim_load_state(&s->model, now_us());
    json_t *o = json_pack("{s:i, s:i, s:I, s:I, s:b, s:b, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
                          "in_flight", s->model.in_flight, "queued", s->model.queued, "served",
                          (json_int_t)s->served, "aborted", (json_int_t)s->aborted, "loaded",
                          ls == SW_LLMSIM_LOADED, "loading", ls == SW_LLMSIM_LOADING, "hanging",
                          (json_int_t)s->hanging, "delayed", (json_int_t)s->delayed,
                          "closed_by_fault", (json_int_t)s->closed_by_fault, "chat_requests",
                          (json_int_t)s->chat_seq, "prompt_tokens",
                          (json_int_t)s->prompt_tokens_total, "tokens_generated",
                          (json_int_t)s->tokens_predicted_total, "tokens_sent",
                          (json_int_t)s->tokens_sent);
    if (o)
        json_object_set_new(o, "errored_by_fault", json_integer((json_int_t)s->errored_by_fault));
    if (o)
        json_object_set_new(o, "token_requests",
                            json_pack("{s:I, s:I, s:I}", "google",
                                      (json_int_t)s->token_requests_google, "entra",
                                      (json_int_t)s->token_requests_entra, "refused",
                                      (json_int_t)s->token_refused));
    if (!o) {
        json_decref(st);
        send_bytes(s, req, 500, "application/json", "{}", 2);
        return;
    }
    json_object_set_new(o, "concurrent_max", json_integer(s->model.concurrent_max));
    json_object_set_new(o, "timer_lag_us_avg",
                        json_integer(s->lag_n ? (json_int_t)(s->lag_sum_us / s->lag_n) : 0));
    json_object_set_new(o, "timer_lag_us_max", json_integer((json_int_t)s->lag_max_us));
    json_object_set_new(o, "timer_lag_us_sum", json_integer((json_int_t)s->lag_sum_us));
    json_object_set_new(o, "timer_ticks", json_integer((json_int_t)s->lag_n));
    json_object_set_new(o, "status", st);
    send_json(s, req, 200, o);
}

static void on_received(struct sw_llmsim_server *s, struct sw_http_req *req)
{
    if (sw_http_method(req) == SW_HTTP_DELETE) {
        clear_received(s);
        send_json(s, req, 200, json_pack("{s:b}", "ok", 1));
        return;
    }
    size_t n = s->recv_count;
    char v[32];
    int qerr = sw_query_param(sw_http_query(req), "n", v, sizeof v);
    if (qerr != SW_ENOTFOUND) {
        char *end;
        long want = strtol(v, &end, 10);
        if (qerr || end == v || *end || want < 0) {
            send_error(s, req, SW_LLMSIM_OPENAI, 400, "n: must be a non-negative integer", NULL,
                       -1);
            return;
        }
        if ((size_t)want < n)
            n = (size_t)want;
    }
    json_t *arr = json_array();
    size_t keep = (size_t)s->o.keep_received;
    for (size_t i = s->recv_count - n; i < s->recv_count; i++)
        json_array_append(arr, s->received[(s->recv_head + i) % keep]);
    send_json(s, req, 200, json_pack("{s:o}", "requests", arr));
}

/* Exits once every answer's bytes are written (the one to {"exit": true}
 * included), checking each millisecond. */
static void on_exit_timer(evutil_socket_t fd, short what, void *arg)
{
    struct sw_llmsim_server *s = arg;
    (void)fd;
    (void)what;
    if (!sw_http_server_flushed(s->http)) {
        struct timeval tv = {0, 1000};
        evtimer_add(s->exit_timer, &tv);
        return;
    }
    sw_warn("llmsim: exiting (POST /admin/faults {\"exit\": true})");
    exit(1);
}

static void on_faults(struct sw_llmsim_server *s, struct sw_http_req *req)
{
    enum sw_http_method cmd = sw_http_method(req);
    bool exit_after = false;
    if (cmd == SW_HTTP_DELETE) {
        struct sw_llmsim_faults f;
        sw_llmsim_faults_clear(&f);
        sw_llmsim_faults_set(&s->faults, &f, now_us());
    } else if (cmd == SW_HTTP_POST || cmd == SW_HTTP_PUT) {
        size_t len;
        const char *body = sw_http_body(req, &len);
        struct sw_llmsim_faults f;
        char msg[256];
        if (sw_llmsim_faults_parse(body, len, &f, msg, sizeof msg)) {
            send_error(s, req, SW_LLMSIM_OPENAI, 400, msg, NULL, -1);
            return;
        }
        sw_llmsim_faults_set(&s->faults, &f, now_us());
        exit_after = f.exit;
    } else if (cmd != SW_HTTP_GET && cmd != SW_HTTP_HEAD) {
        send_error(s, req, SW_LLMSIM_OPENAI, 405, "use GET, POST or DELETE", NULL, -1);
        return;
    }
    send_json(s, req, 200, sw_llmsim_faults_to_json(&s->faults.f));
    if (exit_after)
        event_active(s->exit_timer, EV_TIMEOUT, 0);
}

/* ---- Routing ---- */

static void send_azure_error(struct sw_llmsim_server *s, struct sw_http_req *req, int status,
                             const char *code, const char *msg)
{
    char *b = sw_llmsim_azure_error(status, code, msg);
    count_status(s, status);
    send_bytes(s, req, status, "application/json", b ? b : "{}", b ? strlen(b) : 2);
    free(b);
}

/* ---- Google (Gemini API, Vertex AI) and the token endpoints ---- */

/* A bearer token one of the token endpoints issued, not expired. */
static bool bearer_issued(struct sw_llmsim_server *s, const char *authorization)
{
    if (!authorization || strncmp(authorization, "Bearer ", 7))
        return false;
    int64_t now = now_us();
    size_t n = s->issued_n < MAX_TOKENS_ISSUED ? (size_t)s->issued_n : MAX_TOKENS_ISSUED;
    for (size_t i = 0; i < n; i++)
        if (!strcmp(s->issued[i].token, authorization + 7))
            return s->issued[i].expires_us > now;
    return false;
}

static void issue_token(struct sw_llmsim_server *s, struct sw_http_req *req, const char *prefix)
{
    size_t slot = (size_t)(s->issued_n % MAX_TOKENS_ISSUED);
    snprintf(s->issued[slot].token, sizeof s->issued[slot].token, "%s-sim%08llx", prefix,
             (unsigned long long)++s->issued_n);
    s->issued[slot].expires_us = now_us() + (int64_t)s->o.token_ttl_s * 1000000;
    count_status(s, 200);
    send_json(s, req, 200, json_pack("{s:s, s:i, s:s}", "access_token", s->issued[slot].token,
                                     "expires_in", s->o.token_ttl_s, "token_type", "Bearer"));
}

/* An OAuth2 error answer: {"error": code, "error_description": ...}. */
static void token_refused(struct sw_llmsim_server *s, struct sw_http_req *req, const char *why)
{
    char code[64];
    size_t n = strcspn(why, ":");
    snprintf(code, sizeof code, "%.*s", (int)(n < 63 ? n : 63), why);
    s->token_refused++;
    count_status(s, 400);
    send_json(s, req, 400, json_pack("{s:s, s:s}", "error", code, "error_description",
                                     why[n] ? why + n + 2 : why));
}

static void on_token(struct sw_llmsim_server *s, struct sw_http_req *req, bool entra)
{
    size_t len;
    const char *body = sw_http_body(req, &len);
    char why[160];
    record_received(s, req, sw_http_path(req), NULL, body, len);
    if (entra) {
        s->token_requests_entra++;
        if (sw_llmsim_entra_grant(body ? body : "", len, s->o.entra_client_id, s->o.entra_secret,
                                  why, sizeof why))
            token_refused(s, req, why);
        else
            issue_token(s, req, "eyJ0eXAiOiJKV1Qi.entra");
        return;
    }
    s->token_requests_google++;
    if (sw_llmsim_google_grant(body ? body : "", len, s->sa_pubkey, (int64_t)time(NULL), why,
                               sizeof why))
        token_refused(s, req, why);
    else
        issue_token(s, req, "ya29.c");
}

static void send_gem_error(struct sw_llmsim_server *s, struct sw_http_req *req, int status,
                           const char *msg)
{
    count_status(s, status);
    send_error(s, req, SW_LLMSIM_GEMINI, status, msg, NULL, -1);
}

/* Anthropic's Messages on Vertex AI: an issued bearer, a body with
 * anthropic_version vertex-2023-10-16 and no model (the path names it). */
static void vertex_anthropic(struct sw_llmsim_server *s, struct sw_http_req *req, const char *path,
                             bool post)
{
    if (!bearer_issued(s, sw_http_header(req, "authorization", NULL))) {
        send_gem_error(s, req, 401, "Request had invalid authentication credentials.");
        return;
    }
    size_t len;
    const char *body = sw_http_body(req, &len);
    json_t *root = json_loadb(body ? body : "", len, 0, NULL);
    const char *v = json_string_value(json_object_get(root, "anthropic_version"));
    bool ok = v && !strcmp(v, "vertex-2023-10-16") && !json_object_get(root, "model");
    json_decref(root);
    if (!post || !ok) {
        count_status(s, 400);
        send_error(s, req, SW_LLMSIM_ANTHROPIC, 400,
                   !post ? "use POST"
                         : "anthropic_version: vertex-2023-10-16 is required, and model is not "
                           "allowed (the path names it)", NULL, -1);
        return;
    }
    on_chat(s, req, path, SW_LLMSIM_ANTHROPIC, false);
}

/* Google's door: the token endpoints, and generateContent with its key
 * (Gemini API) or an issued bearer (Vertex AI). false: not Google's path. */
static bool google_route(struct sw_llmsim_server *s, struct sw_http_req *req, const char *path)
{
    bool post = sw_http_method(req) == SW_HTTP_POST;
    if (post && s->sa_pubkey && !strcmp(path, "/token")) {
        on_token(s, req, false);
        return true;
    }
    if (post && s->o.entra_client_id[0] && sw_llmsim_entra_path(path)) {
        on_token(s, req, true);
        return true;
    }
    char model[SW_LLMSIM_MODEL_MAX], key[256] = "";
    bool stream, vertex;
    if (s->sa_pubkey && !sw_llmsim_vertex_anthropic_route(path, model, sizeof model, &stream)) {
        vertex_anthropic(s, req, path, post);
        return true;
    }
    if ((!s->o.gemini_key[0] && !s->sa_pubkey) ||
        sw_llmsim_gem_route(path, model, sizeof model, &stream, &vertex))
        return false;
    const char *hk = sw_http_header(req, "x-goog-api-key", NULL);
    if (!hk && !sw_query_param(sw_http_query(req), "key", key, sizeof key))
        hk = key;
    if (vertex ? !bearer_issued(s, sw_http_header(req, "authorization", NULL))
               : !(s->o.gemini_key[0] && hk && !strcmp(hk, s->o.gemini_key))) {
        send_gem_error(s, req, vertex ? 401 : 400,
                       vertex ? "Request had invalid authentication credentials. Expected OAuth 2 "
                                "access token, login cookie or other valid authentication "
                                "credential."
                              : "API key not valid. Please pass a valid API key.");
        return true;
    }
    char alt[16] = "";
    if (stream && (sw_query_param(sw_http_query(req), "alt", alt, sizeof alt) || strcmp(alt, "sse"))) {
        send_gem_error(s, req, 400, "llmsim serves streamGenerateContent with alt=sse only");
        return true;
    }
    if (!post) {
        send_gem_error(s, req, 405, "use POST");
        return true;
    }
    on_chat(s, req, path, SW_LLMSIM_GEMINI, stream);
    return true;
}

/* Azure OpenAI's door: its paths as llmsim's (routed), its key checked, its
 * content filter (a prompt with AZURE_CONTENT_FILTER is refused). false: it
 * answered the request itself. llmsim's own paths (/health, /admin/...)
 * pass without a key. */
static bool azure_route(struct sw_llmsim_server *s, struct sw_http_req *req, const char *path,
                        char *routed, size_t cap)
{
    bool azure = !strncmp(path, "/openai/", 8);
    if (azure && !sw_llmsim_azure_auth_ok(sw_http_header(req, "api-key", NULL),
                                          sw_http_header(req, "authorization", NULL),
                                          s->o.azure_key) &&
        !bearer_issued(s, sw_http_header(req, "authorization", NULL))) {
        send_azure_error(s, req, 401, "401",
                         "Access denied due to invalid subscription key or wrong API endpoint. "
                         "Make sure to provide a valid key for an active subscription and use a "
                         "correct regional API endpoint for your resource.");
        return false;
    }
    const char *code, *msg;
    int st = sw_llmsim_azure_route(path, sw_http_query(req),
                                   s->o.azure_deployment[0] ? s->o.azure_deployment : s->o.model,
                                   routed, cap, &code, &msg);
    if (st) {
        send_azure_error(s, req, st, code, msg);
        return false;
    }
    size_t len;
    const char *body = sw_http_body(req, &len);
    static const char trigger[] = "AZURE_CONTENT_FILTER";
    if (azure && body && memmem(body, len, trigger, sizeof trigger - 1)) {
        send_azure_error(s, req, 400, "content_filter",
                         "The response was filtered due to the prompt triggering Azure OpenAI's "
                         "content management policy. Please modify your prompt and retry.");
        return false;
    }
    return true;
}

/* ---- AWS Bedrock (--bedrock-key) ---- */

static const char *bedrock_header(void *ud, const char *name)
{
    return sw_http_header(ud, name, NULL);
}

static void send_bedrock_error(struct sw_llmsim_server *s, struct sw_http_req *req, int status,
                               const char *type, const char *msg)
{
    char *b = sw_llmsim_bedrock_error(msg);
    sw_http_add_header(req, "x-amzn-ErrorType", type);
    count_status(s, status);
    send_bytes(s, req, status, "application/json", b ? b : "{}", b ? strlen(b) : 2);
    free(b);
}

/* The exception a stream fault ends a ConverseStream with, by error_status. */
static const char *bedrock_stream_exception(int status)
{
    return status == 429   ? "throttlingException"
           : status == 503 ? "serviceUnavailableException"
           : status == 400 ? "validationException"
                           : "modelStreamErrorException";
}

/* A stream's last message, held back (a fault's exception): sent by a timer. */
struct bedrock_tail {
    struct sw_llmsim_server *s;
    struct sw_http_req *req;
    struct event *ev;
    struct sw_buf rest;
};

static void bedrock_tail_free(struct bedrock_tail *t)
{
    event_free(t->ev);
    sw_buf_free(&t->rest);
    free(t);
}

static void on_bedrock_gone(void *arg)
{
    bedrock_tail_free(arg);
}

static void on_bedrock_tail(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what;
    struct bedrock_tail *t = arg;
    sw_http_on_gone(t->req, NULL, NULL);
    evbuffer_add(t->s->out, t->rest.ptr, t->rest.len);
    sw_http_stream_write(t->req, t->s->out);
    sw_http_stream_end(t->req);
    bedrock_tail_free(t);
}

static void bedrock_reply(struct sw_llmsim_server *s, struct sw_http_req *req, bool stream,
                          const struct sw_llmsim_bedrock_plan *plan,
                          const struct sw_llmsim_verdict *v)
{
    char rid[64];
    snprintf(rid, sizeof rid, "sim-%016llx", (unsigned long long)s->chat_seq);
    sw_http_add_header(req, "x-amzn-RequestId", rid);
    count_status(s, 200);
    s->served++;
    s->prompt_tokens_total += (uint64_t)plan->input_tokens;
    s->tokens_predicted_total += (uint64_t)plan->output_tokens;
    if (!stream) {
        send_json(s, req, 200, sw_llmsim_bedrock_answer(plan, v->latency_ms));
        return;
    }
    sw_buf_reset(&s->scratch);
    int err = sw_llmsim_bedrock_stream(plan, v->stream_error_after,
                                       bedrock_stream_exception(s->faults.f.error_status),
                                       v->close_after_chunks, &s->scratch);
    if (v->stream_error_after >= 0)
        s->errored_by_fault++;
    else if (v->close_after_chunks > 0)
        s->closed_by_fault++;
    sw_http_stream_start(req, 200, "application/vnd.amazon.eventstream");
    size_t first = s->scratch.len;
    if (!err && v->stream_error_after >= 0) /* the exception is the last message */
        for (size_t off = 0; off + 4 <= s->scratch.len;) {
            const unsigned char *u = (const unsigned char *)s->scratch.ptr + off;
            size_t total = (size_t)u[0] << 24 | (size_t)u[1] << 16 | (size_t)u[2] << 8 | u[3];
            if (!total || off + total >= s->scratch.len) {
                first = off;
                break;
            }
            off += total;
        }
    if (!err && first)
        evbuffer_add(s->out, s->scratch.ptr, first);
    sw_http_stream_write(req, s->out);
    if (err || first == s->scratch.len) {
        sw_http_stream_end(req);
        return;
    }
    /* the exception comes a moment later, after what came before reached the client */
    struct bedrock_tail *t = calloc(1, sizeof *t);
    if (!t) {
        sw_http_stream_abort(req);
        return;
    }
    t->s = s, t->req = req;
    sw_buf_init(&t->rest, s->scratch.len);
    sw_buf_append(&t->rest, s->scratch.ptr + first, s->scratch.len - first);
    t->ev = evtimer_new(s->base, on_bedrock_tail, t);
    struct timeval tv = {0, 50000};
    sw_http_on_gone(req, on_bedrock_gone, t);
    evtimer_add(t->ev, &tv);
}

/* POST /model/{id}/converse[-stream]: routed, SigV4 checked, faults, answered. */
static void on_bedrock(struct sw_llmsim_server *s, struct sw_http_req *req, const char *path)
{
    char model[SW_LLMSIM_MODEL_MAX + 64], msg[400];
    bool stream = false;
    if (sw_http_method(req) != SW_HTTP_POST ||
        sw_llmsim_bedrock_route(path, model, sizeof model, &stream)) {
        send_bedrock_error(s, req, 404, "UnknownOperationException", "Unknown operation.");
        return;
    }
    size_t len;
    const char *body = sw_http_body(req, &len);
    json_t *root = json_loadb(body ? body : "", len, 0, NULL);
    record_received(s, req, path, root, body, len);
    char id[256];
    snprintf(id, sizeof id, "%s", s->o.bedrock_key);
    char *secret = strchr(id, ':');
    *secret++ = '\0';
    const char *type = NULL;
    int st = sw_llmsim_sigv4_verify("POST", path, body ? body : "", len, bedrock_header, req, id,
                                    secret, s->o.bedrock_region, (long long)time(NULL), &type,
                                    msg, sizeof msg);
    struct sw_llmsim_bedrock_plan plan;
    memset(&plan, 0, sizeof plan);
    if (!st && strcmp(model, s->o.model)) {
        st = 400, type = "ValidationException";
        snprintf(msg, sizeof msg, "The provided model identifier is invalid.");
    }
    if (!st && sw_llmsim_bedrock_parse(root, (long long)++s->chat_seq, &plan, msg, sizeof msg))
        st = 400, type = "ValidationException";
    json_decref(root);
    if (st) {
        sw_llmsim_bedrock_plan_free(&plan);
        send_bedrock_error(s, req, st, type, msg);
        return;
    }
    struct sw_llmsim_verdict v;
    sw_llmsim_faults_decide(&s->faults, now_us(), plan.input_tokens + plan.output_tokens, &v);
    if (v.status) {
        s->errored_by_fault++;
        snprintf(msg, sizeof msg, "llmsim: injected %d", v.status);
        send_bedrock_error(s, req, v.status, sw_llmsim_bedrock_exception(v.status), msg);
    } else {
        bedrock_reply(s, req, stream, &plan, &v);
    }
    sw_llmsim_bedrock_plan_free(&plan);
}

static void on_request(struct sw_http_req *req, void *arg)
{
    struct sw_llmsim_server *s = arg;
    enum sw_http_method cmd = sw_http_method(req);
    const char *path = sw_http_path(req);
    if (!*path)
        path = "/";
    if (google_route(s, req, path))
        return;
    char routed[SW_LLMSIM_PATH_MAX];
    if (s->o.bedrock_key[0] && !strncmp(path, "/model/", 7)) {
        on_bedrock(s, req, path);
        return;
    }
    if (s->o.azure_key[0] && !azure_route(s, req, path, routed, sizeof routed))
        return;
    if (s->o.azure_key[0])
        path = routed;
    else if (s->o.prefix[0]) {
        if (sw_llmsim_prefix_route(s->o.prefix, path, routed, sizeof routed)) {
            char msg[400];
            snprintf(msg, sizeof msg, "llmsim: no route for %.200s (the API is at %s/...)", path,
                     s->o.prefix);
            send_error(s, req, s->o.dialect, 404, msg, NULL, -1);
            return;
        }
        path = routed;
    }
    bool chat = (s->o.dialect == SW_LLMSIM_OPENAI && !strcmp(path, "/v1/chat/completions")) ||
                (s->o.dialect == SW_LLMSIM_OPENAI && !strcmp(path, "/v1/responses")) ||
                (s->o.dialect == SW_LLMSIM_ANTHROPIC && !strcmp(path, "/v1/messages"));
    if (chat) {
        if (cmd != SW_HTTP_POST) {
            send_error(s, req, s->o.dialect, 405, "use POST", NULL, -1);
            return;
        }
        on_chat(s, req, path, s->o.dialect, false);
        return;
    }
    if (s->o.dialect == SW_LLMSIM_OPENAI && !strcmp(path, "/v1/embeddings")) {
        if (cmd != SW_HTTP_POST)
            send_error(s, req, s->o.dialect, 405, "use POST", NULL, -1);
        else
            on_embeddings(s, req, path);
        return;
    }
    /* HEAD is answered as GET; the HTTP server sends the headers only */
    bool get = cmd == SW_HTTP_GET || cmd == SW_HTTP_HEAD;
    if (get && !strcmp(path, "/v1/models"))
        on_models(s, req);
    else if (get && !strcmp(path, "/health"))
        on_health(s, req);
    else if (get && !strcmp(path, "/props"))
        on_props(s, req);
    else if (get && !strcmp(path, "/metrics"))
        on_metrics(s, req);
    else if (get && !strcmp(path, "/slots"))
        on_slots(s, req);
    else if ((get || cmd == SW_HTTP_POST) && !strcmp(path, "/admin/outside-load"))
        on_outside(s, req, cmd == SW_HTTP_POST);
    else if (get && !strcmp(path, "/admin/stats"))
        on_stats(s, req);
    else if ((get || cmd == SW_HTTP_DELETE) && !strcmp(path, "/admin/received"))
        on_received(s, req);
    else if (!strcmp(path, "/admin/faults"))
        on_faults(s, req);
    else if (cmd == SW_HTTP_POST && !strcmp(path, "/admin/unload")) {
        sw_llmsim_unload(&s->model);
        send_json(s, req, 200,
                  json_pack("{s:b, s:b}", "ok", 1, "loaded",
                            sw_llmsim_load_state(&s->model, now_us()) == SW_LLMSIM_LOADED));
    } else {
        char msg[300];
        snprintf(msg, sizeof msg, "llmsim: no route for %.16s %.200s", sw_http_method_name(req),
                 path);
        send_error(s, req, s->o.dialect, 404, msg, NULL, -1);
    }
}

/* Errors the HTTP server answers itself (malformed, 408, 413, 431, ...), in
 * the dialect's error shape. */
static void on_http_error(struct sw_http_req *req, int status, const char *code,
                          const char *message, void *arg)
{
    struct sw_llmsim_server *s = arg;
    (void)code;
    send_error(s, req, s->o.dialect, status, message, NULL, -1);
}

/* ---- Setup ---- */

/* A PEM file's text (at most 64 KiB), malloc'ed; NULL when unreadable. */
static char *read_pem(const char *path)
{
    FILE *f = fopen(path, "rb");
    char *b = f ? calloc(1, 65537) : NULL;
    size_t n = b ? fread(b, 1, 65536, f) : 0;
    if (f)
        fclose(f);
    if (b && !n) {
        free(b);
        return NULL;
    }
    return b;
}

int sw_llmsim_server_new(struct event_base *base, const struct sw_llmsim_opts *o,
                         struct sw_llmsim_server **out)
{
    int err = SW_ENOMEM;
    struct sw_llmsim_server *s = calloc(1, sizeof *s);
    if (!s)
        return SW_ENOMEM;
    s->o = *o;
    s->base = base;
    sw_llmsim_model_init(&s->model, &o->params);
    s->faults.rng = o->params.seed ^ 0x5eed5eed5eed5eedULL;
    sw_llmsim_faults_set(&s->faults, &o->faults, now_us());
    sw_buf_init(&s->scratch, MAX_RENDER_BYTES);
    if (o->keep_received > 0) {
        s->received = calloc((size_t)o->keep_received, sizeof *s->received);
        if (!s->received)
            goto fail;
    }
    if (o->google_sa_pubkey[0] && !(s->sa_pubkey = read_pem(o->google_sa_pubkey))) {
        sw_error("llmsim: --google-sa-pubkey %s: cannot be read", o->google_sa_pubkey);
        err = SW_EINVAL;
        goto fail;
    }
    s->out = evbuffer_new();
    s->exit_timer = evtimer_new(base, on_exit_timer, s);
    if (!s->out || !s->exit_timer)
        goto fail;
    struct in_addr a4;
    if (inet_pton(AF_INET, o->host, &a4) != 1) {
        sw_error("llmsim: --host %s: not an IPv4 address", o->host);
        err = SW_EINVAL;
        goto fail;
    }
    struct sw_http_limits lim = {
        .max_header_bytes = MAX_HEADER_BYTES,
        .max_body_bytes = MAX_BODY_BYTES,
        .client_timeout_ms = o->client_timeout_ms,
        .max_connections = MAX_CONNECTIONS,
    };
    struct sw_http_handler h = {.on_request = on_request, .on_error = on_http_error, .ud = s};
    s->http = sw_http_server_new(base, o->host, o->port, LISTEN_BACKLOG, &lim, &h);
    if (!s->http) {
        sw_error("llmsim: cannot listen on %s:%d: %s", o->host, o->port, strerror(errno));
        err = SW_EIO;
        goto fail;
    }
    s->port = sw_http_server_port(s->http);
    *out = s;
    return SW_OK;
fail:
    sw_llmsim_server_free(s);
    return err;
}

int sw_llmsim_server_port(const struct sw_llmsim_server *s)
{
    return s->port;
}

void sw_llmsim_server_free(struct sw_llmsim_server *s)
{
    if (!s)
        return;
    /* Requests in progress: stop their timers and close notifications; the
     * HTTP server frees the requests with their connections. */
    while (s->live) {
        struct sim *r = s->live;
        detach(r);
        sw_llmsim_release(&s->model, &r->gen, now_us());
        sim_free(r);
    }
    if (s->http)
        sw_http_server_free(s->http);
    if (s->exit_timer)
        event_free(s->exit_timer);
    if (s->out)
        evbuffer_free(s->out);
    if (s->received) {
        clear_received(s);
        free(s->received);
    }
    sw_buf_free(&s->scratch);
    sw_llmsim_model_free(&s->model);
    free(s->sa_pubkey);
    free(s);
}
