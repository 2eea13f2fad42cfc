#include "server.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <errno.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event_struct.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/listener.h>
#include <jansson.h>

#include "chat.h"
#include "common/buf.h"
#include "common/err.h"
#include "common/log.h"
#include "faults.h"
#include "model.h"
#include "render.h"

#define MAX_BODY_BYTES (8 << 20)      /* a chat request body larger than this is a 413 */
#define MAX_RENDER_BYTES (64 << 20)   /* one rendered response */
#define CONN_TIMEOUT_S 3600           /* idle read/write timeout of a connection */
#define LISTEN_BACKLOG 8192
#define MAX_STATUS 600

/* ---- Types ---- */

enum sim_state {
    S_DELAYED,                   /* waiting out the latency fault */
    S_HANGING,                   /* hang fault: never answered */
    S_QUEUED,                    /* waiting for a slot */
    S_ACTIVE,                    /* holding a slot */
    S_CLOSING                    /* close-after-chunks: closes once the chunks are out */
};

/* One chat request in progress. Owned by the server from the handler until
 * it is answered, the client goes away (on_close) or the server is freed. */
struct sim {
    struct sw_llmsim_server *srv;
    struct evhttp_request *req;
    struct evhttp_connection *evcon;
    struct event timer;          /* the one timer of this request */
    enum sim_state state;
    struct sw_llmsim_gen gen;
    struct sw_llmsim_chat chat;  /* owns the echo source text */
    struct sw_llmsim_reply reply;
    struct sw_llmsim_text text;
    struct sw_llmsim_verdict verdict;
    bool length;                 /* stopped by max_tokens */
    bool headers_sent;           /* stream started */
    bool direct;                 /* chunked encoding: write chunks to the socket ourselves */
    int sent;                    /* tokens sent */
    struct sim *prev, *next;     /* srv->live */
};

struct sw_llmsim_server {
    struct sw_llmsim_opts o;
    struct event_base *base;
    struct evhttp *http;
    struct evconnlistener *listener;
    int port;
    struct sw_llmsim_model model;
    struct sw_llmsim_fault_state faults;
    struct sim *live;            /* every struct sim, for shutdown */
    struct sw_buf scratch;       /* rendering, reused */
    struct evbuffer *out;        /* handed to evhttp, reused */
    uint64_t chat_seq;           /* chat requests accepted (seeds lorem) */
    /* evidence */
    json_t **received;           /* ring of o.keep_received entries */
    size_t recv_head, recv_count;
    uint64_t served, aborted, hanging, closed_by_fault, delayed;
    uint64_t status[MAX_STATUS];
    uint64_t prompt_tokens_total, tokens_predicted_total;
    uint64_t tokens_sent;        /* tokens written, streams cut short included */
    uint64_t lag_sum_us, lag_n, lag_max_us; /* timer lateness: is the loop keeping up? */
    double prompt_seconds_total, predicted_seconds_total;
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

static void add_common_headers(struct evhttp_request *req, const char *ctype)
{
    struct evkeyvalq *h = evhttp_request_get_output_headers(req);
    evhttp_add_header(h, "Content-Type", ctype);
    evhttp_add_header(h, "Server", "llmsim/" SW_VERSION);
}

static const char *reason(int status)
{
    switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 413: return "Payload Too Large";
    case 429: return "Too Many Requests";
    case 500: return "Internal Server Error";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    case 529: return "Overloaded";
    default: return status < 500 ? "Client Error" : "Server Error";
    }
}

static void send_bytes(struct sw_llmsim_server *s, struct evhttp_request *req, int status,
                       const char *ctype, const char *body, size_t len)
{
    add_common_headers(req, ctype);
    evbuffer_add(s->out, body, len);
    evhttp_send_reply(req, status, reason(status), s->out);
    evbuffer_drain(s->out, evbuffer_get_length(s->out));
}

static void send_json(struct sw_llmsim_server *s, struct evhttp_request *req, int status,
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
static void send_error(struct sw_llmsim_server *s, struct evhttp_request *req,
                       enum sw_llmsim_dialect d, int status, const char *msg, const char *limit,
                       int retry_after_s)
{
    if (status == 429 && retry_after_s < 0)
        retry_after_s = 1;
    if (retry_after_s >= 0) {
        char v[24];
        snprintf(v, sizeof v, "%d", retry_after_s);
        evhttp_add_header(evhttp_request_get_output_headers(req), "Retry-After", v);
    }
    if (d == SW_LLMSIM_ANTHROPIC && status == 429)
        evhttp_add_header(evhttp_request_get_output_headers(req), "x-should-retry", "true");
    sw_buf_reset(&s->scratch);
    if (sw_llmsim_render_error(&s->scratch, d, status, msg, limit))
        sw_buf_reset(&s->scratch);
    send_bytes(s, req, status, "application/json", s->scratch.ptr ? s->scratch.ptr : "",
               s->scratch.len);
}

/* ---- Chat requests: lifecycle ---- */

static void on_tick(evutil_socket_t fd, short what, void *arg);
static void on_close(struct evhttp_connection *evcon, void *arg);

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
    if (r->chat.stream)
        k = r->sent < r->gen.output_tokens ? r->sent + 1 : r->gen.output_tokens;
    else
        k = r->gen.output_tokens;
    arm_at(r, sw_llmsim_token_due_us(m, &r->gen, k));
}

/* Libevent reads a server connection only while it parses a request or
 * writes a reply; in between (queued, delayed, hanging, prefill of a
 * non-streaming answer) it would not see the client close. Enable reading
 * with no read callback (pipelined bytes just wait in the buffer) so an EOF
 * reaches evhttp's error callback, which fails the connection and calls
 * on_close at once. */
static void watch_close(struct sim *r)
{
    struct bufferevent *bev = evhttp_connection_get_bufferevent(r->evcon);
    bufferevent_data_cb wcb = NULL;
    bufferevent_event_cb ecb = NULL;
    void *arg = NULL;
    bufferevent_getcb(bev, NULL, &wcb, &ecb, &arg);
    bufferevent_setcb(bev, NULL, wcb, ecb, arg);
    bufferevent_enable(bev, EV_READ);
}

/* Unlinks and frees r. The caller has answered r->req or lost it. */
static void sim_free(struct sim *r)
{
    struct sw_llmsim_server *s = r->srv;
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

/* r is finished with its connection: no more close notifications. */
static void detach(struct sim *r)
{
    evhttp_connection_set_closecb(r->evcon, NULL, NULL);
}

static void on_close(struct evhttp_connection *evcon, void *arg)
{
    struct sim *r = arg;
    struct sw_llmsim_server *s = r->srv;
    (void)evcon;
    s->aborted++;
    if (r->state == S_HANGING)
        s->hanging--;
    if (r->state == S_DELAYED)
        s->delayed--;
    release_slot(r); /* a no-op unless it is queued or holds a slot */
    if (s->o.verbose)
        sw_info("llmsim: client went away (state %d, %d tokens sent)", (int)r->state, r->sent);
    /* On EOF evhttp detaches an unfinished request from the dying connection
     * and leaves it to us; on other closes it frees the request itself. */
    if (evhttp_request_get_connection(r->req) == NULL)
        evhttp_request_free(r->req);
    sim_free(r);
}

static void account_done(struct sim *r)
{
    struct sw_llmsim_server *s = r->srv;
    s->served++;
    s->tokens_predicted_total += (uint64_t)r->gen.output_tokens;
    s->prompt_tokens_total += (uint64_t)r->gen.prompt_tokens;
    s->prompt_seconds_total += sw_llmsim_prefill_us(&s->model.p, r->gen.prompt_tokens) / 1e6;
    s->predicted_seconds_total +=
        (double)r->gen.output_tokens * sw_llmsim_period_us(&s->model.p) / 1e6;
}

/* Sends the rendered bytes as one HTTP chunk. The common case (nothing
 * waiting in the connection's output buffer) writes the chunk to the socket
 * at once with one writev: through evhttp, each chunk would cost an
 * allocation, two epoll_ctl calls and a loop iteration, which is what limits
 * how many streams one core can drive. Whatever the socket does not take
 * goes to the output buffer, where libevent sends it in order. */
static void send_stream_bytes(struct sim *r)
{
    struct sw_llmsim_server *s = r->srv;
    struct bufferevent *bev = evhttp_connection_get_bufferevent(r->evcon);
    struct evbuffer *ob = bufferevent_get_output(bev);
    if (!r->direct || s->scratch.len == 0) {
        evbuffer_add(s->out, s->scratch.ptr, s->scratch.len);
        evhttp_send_reply_chunk(r->req, s->out);
        evbuffer_drain(s->out, evbuffer_get_length(s->out));
        return;
    }
    char hdr[24];
    int hl = snprintf(hdr, sizeof hdr, "%zx\r\n", s->scratch.len);
    struct iovec iov[3] = {{hdr, (size_t)hl}, {s->scratch.ptr, s->scratch.len}, {"\r\n", 2}};
    ssize_t n = 0;
    if (evbuffer_get_length(ob) == 0) {
        n = writev(bufferevent_getfd(bev), iov, 3);
        if (n < 0)
            n = 0; /* EAGAIN or an error: libevent meets it on its own write */
    }
    for (int i = 0; i < 3; i++) {
        size_t skip = (size_t)n < iov[i].iov_len ? (size_t)n : iov[i].iov_len;
        n -= (ssize_t)skip;
        if (skip < iov[i].iov_len)
            evbuffer_add(ob, (char *)iov[i].iov_base + skip, iov[i].iov_len - skip);
    }
}

static void on_chunks_written(struct evhttp_connection *evcon, void *arg)
{
    struct sim *r = arg;
    (void)evcon;
    /* Close from the timer, outside evhttp's write callback. */
    event_active(&r->timer, EV_TIMEOUT, 0);
}

/* Sends what is due of a streaming answer. */
static void tick_stream(struct sim *r, int due)
{
    struct sw_llmsim_server *s = r->srv;
    int err = SW_OK;
    sw_buf_reset(&s->scratch);
    if (!r->headers_sent) {
        struct evkeyvalq *h = evhttp_request_get_output_headers(r->req);
        add_common_headers(r->req, "text/event-stream; charset=utf-8");
        evhttp_add_header(h, "Cache-Control", "no-cache");
        evhttp_send_reply_start(r->req, 200, "OK");
        const char *te = evhttp_find_header(h, "Transfer-Encoding");
        r->direct = te && !strcmp(te, "chunked");
        /* each token leaves at its time, not when Nagle lets it */
        int one = 1;
        setsockopt(bufferevent_getfd(evhttp_connection_get_bufferevent(r->evcon)), IPPROTO_TCP,
                   TCP_NODELAY, &one, sizeof one);
        count_status(s, 200);
        r->headers_sent = true;
        err = sw_llmsim_render_stream_start(&s->scratch, &r->reply);
    }
    /* the malformed event is token 2 (token 1 when there is only one) */
    int bad = r->gen.output_tokens >= 2 ? 2 : 1;
    int close_k = r->verdict.close_after_chunks;
    while (!err && r->sent < due) {
        struct sw_str t = sw_llmsim_text_next(&r->text);
        r->sent++;
        s->tokens_sent++;
        err = sw_llmsim_render_stream_token(&s->scratch, &r->reply, t,
                                            r->sent == bad ? r->verdict.malformed
                                                           : SW_LLMSIM_MALFORMED_NONE);
        if (close_k > 0 && r->sent == close_k)
            break;
    }
    if (err) {
        sw_error("llmsim: rendering a stream failed: %s", sw_err_str(err));
        close_k = r->sent; /* cut the stream */
    }
    if (close_k > 0 && r->sent >= close_k && r->sent < r->gen.output_tokens) {
        /* close-after-chunks: the chunks go out, then the connection closes */
        evbuffer_add(s->out, s->scratch.ptr, s->scratch.len);
        r->state = S_CLOSING;
        evhttp_send_reply_chunk_with_cb(r->req, s->out, on_chunks_written, r);
        evbuffer_drain(s->out, evbuffer_get_length(s->out));
        return;
    }
    if (r->sent < r->gen.output_tokens) {
        send_stream_bytes(r);
        arm_next(r);
        return;
    }
    err = sw_llmsim_render_stream_end(&s->scratch, &r->reply, r->gen.output_tokens, r->length);
    if (err)
        sw_error("llmsim: rendering a stream end failed: %s", sw_err_str(err));
    send_stream_bytes(r);
    detach(r);
    evhttp_send_reply_end(r->req);
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
    if (!err)
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
    if (r->state == S_CLOSING) {
        struct sw_llmsim_server *s = r->srv;
        struct evhttp_connection *evcon = r->evcon;
        s->closed_by_fault++;
        detach(r);
        release_slot(r);
        sim_free(r);
        evhttp_connection_free(evcon); /* frees the request too */
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

static void record_received(struct sw_llmsim_server *s, struct evhttp_request *req,
                            const char *path, json_t *parsed, const char *body, size_t len)
{
    size_t keep = (size_t)s->o.keep_received;
    if (keep == 0)
        return;
    json_t *headers = json_object();
    struct evkeyval *kv;
    TAILQ_FOREACH(kv, evhttp_request_get_input_headers(req), next) {
        char name[128];
        size_t n = strlen(kv->key);
        if (n >= sizeof name)
            continue;
        for (size_t i = 0; i <= n; i++)
            name[i] = (char)tolower((unsigned char)kv->key[i]);
        json_t *v = json_string(kv->value);
        json_object_set_new(headers, name, v ? v : json_null());
    }
    json_t *b = parsed ? json_incref(parsed) : json_stringn(body ? body : "", len);
    const char *method = evhttp_request_get_command(req) == EVHTTP_REQ_POST ? "POST"
                         : evhttp_request_get_command(req) == EVHTTP_REQ_GET ? "GET"
                                                                             : "OTHER";
    json_t *e = json_pack("{s:s, s:s, s:o, s:o}", "method", method, "path", path, "headers",
                          headers, "body", b ? b : json_null());
    if (!e)
        return;
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

static void on_chat(struct sw_llmsim_server *s, struct evhttp_request *req, const char *path)
{
    enum sw_llmsim_dialect d = s->o.dialect;
    struct evbuffer *in = evhttp_request_get_input_buffer(req);
    size_t len = evbuffer_get_length(in);
    const char *body = len ? (const char *)evbuffer_pullup(in, -1) : "";
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
    int err = sw_llmsim_chat_parse(root, d, &r->chat, msg, sizeof msg);
    json_decref(root);
    if (err) {
        sw_llmsim_chat_free(&r->chat);
        free(r);
        count_status(s, 400);
        send_error(s, req, d, 400, msg, NULL, -1);
        return;
    }
    r->srv = s;
    r->req = req;
    r->evcon = evhttp_request_get_connection(req);
    r->next = s->live;
    if (s->live)
        s->live->prev = r;
    s->live = r;
    evtimer_assign(&r->timer, s->base, on_tick, r);

    /* the answer */
    uint64_t seq = ++s->chat_seq;
    struct sw_llmsim_reply *rp = &r->reply;
    rp->dialect = d;
    if (d == SW_LLMSIM_OPENAI)
        snprintf(rp->id, sizeof rp->id, "chatcmpl-sim%016llx", (unsigned long long)seq);
    else
        snprintf(rp->id, sizeof rp->id, "msg_sim%016llx", (unsigned long long)seq);
    rp->created = (long long)time(NULL);
    snprintf(rp->model, sizeof rp->model, "%s", r->chat.model[0] ? r->chat.model : s->o.model);
    rp->prompt_tokens = r->chat.prompt_tokens;
    rp->include_usage = r->chat.include_usage;
    if (sw_llmsim_reply_prepare(rp))
        rp->head_len = 0; /* too long to cache: built per chunk */

    r->gen.prompt_tokens = r->chat.prompt_tokens;
    if (s->o.reply == SW_LLMSIM_REPLY_ECHO) {
        int limit = r->chat.max_tokens > 0 ? r->chat.max_tokens : s->o.params.max_output_tokens;
        int pieces = sw_llmsim_echo_tokens(r->chat.last_user.ptr, r->chat.last_user.len);
        r->gen.output_tokens = pieces < limit ? pieces : limit;
        r->length = pieces > limit;
        sw_llmsim_text_echo(&r->text, r->chat.last_user.ptr, r->chat.last_user.len);
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
    evhttp_connection_set_closecb(r->evcon, on_close, r);
    watch_close(r);
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

/* ---- Other endpoints ---- */

static void on_models(struct sw_llmsim_server *s, struct evhttp_request *req)
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

static void on_health(struct sw_llmsim_server *s, struct evhttp_request *req)
{
    if (sw_llmsim_load_state(&s->model, now_us()) == SW_LLMSIM_LOADED) {
        send_json(s, req, 200, json_pack("{s:s}", "status", "ok"));
        return;
    }
    send_json(s, req, 503,
              json_pack("{s:{s:i, s:s, s:s}}", "error", "code", 503, "message", "Loading model",
                        "type", "unavailable_error"));
}

static void on_props(struct sw_llmsim_server *s, struct evhttp_request *req)
{
    send_json(s, req, 200,
              json_pack("{s:{s:i, s:i, s:s}, s:i, s:s, s:s, s:{s:b, s:b}, s:s, s:b}",
                        "default_generation_settings", "n_ctx", s->o.n_ctx, "n_predict", -1,
                        "model", s->o.model, "total_slots", s->o.params.slots, "model_path",
                        s->o.model, "chat_template", "", "modalities", "vision", 0, "audio", 0,
                        "build_info", "llmsim " SW_VERSION, "is_sleeping",
                        sw_llmsim_load_state(&s->model, now_us()) != SW_LLMSIM_LOADED));
}

static void on_metrics(struct sw_llmsim_server *s, struct evhttp_request *req)
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
        "llamacpp:prompt_seconds_total %.3f\n"
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
        s->model.in_flight, s->model.queued);
    if (err)
        send_bytes(s, req, 500, "text/plain", "", 0);
    else
        send_bytes(s, req, 200, "text/plain; version=0.0.4", b.ptr, b.len);
    sw_buf_free(&b);
}

static void on_stats(struct sw_llmsim_server *s, struct evhttp_request *req)
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
    if (!o) {
        json_decref(st);
        send_bytes(s, req, 500, "application/json", "{}", 2);
        return;
    }
    json_object_set_new(o, "timer_lag_us_avg",
                        json_integer(s->lag_n ? (json_int_t)(s->lag_sum_us / s->lag_n) : 0));
    json_object_set_new(o, "timer_lag_us_max", json_integer((json_int_t)s->lag_max_us));
    json_object_set_new(o, "timer_lag_us_sum", json_integer((json_int_t)s->lag_sum_us));
    json_object_set_new(o, "timer_ticks", json_integer((json_int_t)s->lag_n));
    json_object_set_new(o, "status", st);
    send_json(s, req, 200, o);
}

static void on_received(struct sw_llmsim_server *s, struct evhttp_request *req)
{
    if (evhttp_request_get_command(req) == EVHTTP_REQ_DELETE) {
        clear_received(s);
        send_json(s, req, 200, json_pack("{s:b}", "ok", 1));
        return;
    }
    size_t n = s->recv_count;
    const char *q = evhttp_uri_get_query(evhttp_request_get_evhttp_uri(req));
    if (q) {
        struct evkeyvalq args;
        TAILQ_INIT(&args);
        if (evhttp_parse_query_str(q, &args) == 0) {
            const char *v = evhttp_find_header(&args, "n");
            char *end;
            long want = v ? strtol(v, &end, 10) : -1;
            if (v && (*end || want < 0)) {
                evhttp_clear_headers(&args);
                send_error(s, req, SW_LLMSIM_OPENAI, 400, "n: must be a non-negative integer",
                           NULL, -1);
                return;
            }
            if (want >= 0 && (size_t)want < n)
                n = (size_t)want;
        }
        evhttp_clear_headers(&args);
    }
    json_t *arr = json_array();
    size_t keep = (size_t)s->o.keep_received;
    for (size_t i = s->recv_count - n; i < s->recv_count; i++)
        json_array_append(arr, s->received[(s->recv_head + i) % keep]);
    send_json(s, req, 200, json_pack("{s:o}", "requests", arr));
}

static void on_exit_complete(struct evhttp_request *req, void *arg)
{
    (void)req;
    (void)arg;
    sw_warn("llmsim: exiting (POST /admin/faults {\"exit\": true})");
    exit(1);
}

static void on_faults(struct sw_llmsim_server *s, struct evhttp_request *req)
{
    enum evhttp_cmd_type cmd = evhttp_request_get_command(req);
    if (cmd == EVHTTP_REQ_DELETE) {
        struct sw_llmsim_faults f;
        sw_llmsim_faults_clear(&f);
        sw_llmsim_faults_set(&s->faults, &f, now_us());
    } else if (cmd == EVHTTP_REQ_POST || cmd == EVHTTP_REQ_PUT) {
        struct evbuffer *in = evhttp_request_get_input_buffer(req);
        size_t len = evbuffer_get_length(in);
        const char *body = len ? (const char *)evbuffer_pullup(in, -1) : "";
        struct sw_llmsim_faults f;
        char msg[256];
        if (sw_llmsim_faults_parse(body, len, &f, msg, sizeof msg)) {
            send_error(s, req, SW_LLMSIM_OPENAI, 400, msg, NULL, -1);
            return;
        }
        sw_llmsim_faults_set(&s->faults, &f, now_us());
        if (f.exit)
            evhttp_request_set_on_complete_cb(req, on_exit_complete, NULL);
    } else if (cmd != EVHTTP_REQ_GET) {
        send_error(s, req, SW_LLMSIM_OPENAI, 405, "use GET, POST or DELETE", NULL, -1);
        return;
    }
    send_json(s, req, 200, sw_llmsim_faults_to_json(&s->faults.f));
}

/* ---- Routing ---- */

static bool is(enum evhttp_cmd_type cmd, enum evhttp_cmd_type want)
{
    return cmd == want;
}

static void on_request(struct evhttp_request *req, void *arg)
{
    struct sw_llmsim_server *s = arg;
    enum evhttp_cmd_type cmd = evhttp_request_get_command(req);
    const char *path = evhttp_uri_get_path(evhttp_request_get_evhttp_uri(req));
    if (!path)
        path = "/";
    bool chat = (s->o.dialect == SW_LLMSIM_OPENAI && !strcmp(path, "/v1/chat/completions")) ||
                (s->o.dialect == SW_LLMSIM_ANTHROPIC && !strcmp(path, "/v1/messages"));
    if (chat) {
        if (!is(cmd, EVHTTP_REQ_POST)) {
            send_error(s, req, s->o.dialect, 405, "use POST", NULL, -1);
            return;
        }
        on_chat(s, req, path);
        return;
    }
    bool get = is(cmd, EVHTTP_REQ_GET);
    if (get && !strcmp(path, "/v1/models"))
        on_models(s, req);
    else if (get && !strcmp(path, "/health"))
        on_health(s, req);
    else if (get && !strcmp(path, "/props"))
        on_props(s, req);
    else if (get && !strcmp(path, "/metrics"))
        on_metrics(s, req);
    else if (get && !strcmp(path, "/admin/stats"))
        on_stats(s, req);
    else if ((get || is(cmd, EVHTTP_REQ_DELETE)) && !strcmp(path, "/admin/received"))
        on_received(s, req);
    else if (!strcmp(path, "/admin/faults"))
        on_faults(s, req);
    else if (is(cmd, EVHTTP_REQ_POST) && !strcmp(path, "/admin/unload")) {
        sw_llmsim_unload(&s->model);
        send_json(s, req, 200,
                  json_pack("{s:b, s:b}", "ok", 1, "loaded",
                            sw_llmsim_load_state(&s->model, now_us()) == SW_LLMSIM_LOADED));
    } else {
        char msg[300];
        snprintf(msg, sizeof msg, "llmsim: no route for %s %.200s",
                 get ? "GET" : is(cmd, EVHTTP_REQ_POST) ? "POST" : "this method", path);
        send_error(s, req, s->o.dialect, 404, msg, NULL, -1);
    }
}

/* ---- Setup ---- */

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
    s->out = evbuffer_new();
    s->http = evhttp_new(base);
    if (!s->out || !s->http)
        goto fail;
    evhttp_set_gencb(s->http, on_request, s);
    evhttp_set_max_body_size(s->http, MAX_BODY_BYTES);
    evhttp_set_timeout(s->http, CONN_TIMEOUT_S);
    evhttp_set_allowed_methods(s->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_DELETE |
                                            EVHTTP_REQ_PUT | EVHTTP_REQ_HEAD);

    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons((uint16_t)o->port)};
    if (inet_pton(AF_INET, o->host, &sin.sin_addr) != 1) {
        sw_error("llmsim: --host %s: not an IPv4 address", o->host);
        err = SW_EINVAL;
        goto fail;
    }
    s->listener = evconnlistener_new_bind(base, NULL, NULL,
                                          LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_FREE |
                                              LEV_OPT_CLOSE_ON_EXEC,
                                          LISTEN_BACKLOG, (struct sockaddr *)&sin, sizeof sin);
    if (!s->listener) {
        sw_error("llmsim: cannot listen on %s:%d", o->host, o->port);
        err = SW_EIO;
        goto fail;
    }
    struct sockaddr_in bound;
    socklen_t blen = sizeof bound;
    if (getsockname(evconnlistener_get_fd(s->listener), (struct sockaddr *)&bound, &blen) != 0) {
        err = SW_EIO;
        goto fail;
    }
    s->port = ntohs(bound.sin_port);
    if (!evhttp_bind_listener(s->http, s->listener)) {
        err = SW_EIO;
        goto fail;
    }
    s->listener = NULL; /* owned by evhttp now */
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
    /* Requests in progress: stop their timers and close notifications; evhttp
     * frees the requests with their connections. */
    while (s->live) {
        struct sim *r = s->live;
        detach(r);
        sw_llmsim_release(&s->model, &r->gen, now_us());
        sim_free(r);
    }
    if (s->http)
        evhttp_free(s->http);
    if (s->listener)
        evconnlistener_free(s->listener);
    if (s->out)
        evbuffer_free(s->out);
    if (s->received) {
        clear_received(s);
        free(s->received);
    }
    sw_buf_free(&s->scratch);
    free(s);
}
