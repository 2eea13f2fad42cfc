#include "relay/relay.h"

#include <event2/buffer.h>
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/err.h"
#include "common/jscan.h"
#include "common/json.h"
#include "common/log.h"
#include "common/satmath.h"
#include "common/spares.h"
#include "contract/contract.h"
#include "dialect/anth_resp.h"
#include "relay/reply.h"
#include "relay/sse.h"
#include "route/route.h"
#include "state/claim.h"
#include "state/live.h"
#include "state/store.h"
#include "upstream/dialect.h"
#include "upstream/upstream.h"

/* Largest error body kept from a failed attempt, and largest SSE event. */
#define ERROR_BODY_MAX (64 * 1024)
#define SSE_EVENT_MAX (1024 * 1024)
/* Pause the upstream while this much is waiting to be written to the client. */
#define CLIENT_PENDING_MAX (1024 * 1024)
/* How often a request waiting in a local queue re-checks its estimate. */
#define QUEUE_CHECK_US 25000

struct proxy {
    struct sw_relay_env env;
    struct sw_live *live;           /* referenced: the snapshot this request started on */
    struct sw_http_req *req;        /* NULL once answered or the client is gone */
    struct sw_config *cfg;          /* referenced */
    struct sw_chat_request chat;
    char *public_model;             /* what the client asked for */
    char *public_model_json;        /* ... as a JSON string, quotes included */
    const struct sw_config_model *model;
    struct sw_route_facts facts;
    struct sw_route_plan plan;
    size_t step;                    /* the attempt of the plan in progress */
    int64_t start_ms;               /* arrival */
    int64_t deadline_ms;

    /* The current attempt. */
    size_t be;                      /* config index of its backend */
    enum sw_reason reason;
    bool attempting;                /* begun: its settle and log entry are due */
    struct sw_claim claim;          /* what it holds of the shared state */
    struct sw_store_hold rh;        /* ... and of the state shared by replicas (state.redis) */
    bool lease_wait;                /* holds its local slot, waits for a replica-wide lease */
    bool spend_refused;             /* the shared spend counter refused a reservation */
    struct event *queue_timer;
    struct event *ttft_timer;       /* the attempt's TTFT budget (abandon when no first byte) */
    long ttft_abandon_ms;           /* that budget, 0: none */
    const char *end_class;          /* error class of the attempt ending now, when it is not
                                       the transport's: "ttft_abandoned", "stream_cut" */
    int64_t attempt_ms, first_byte_ms, last_byte_ms;
    long usage_in, usage_out;       /* from the upstream's usage, 0 if none */
    long chunks;                    /* content chunks relayed (a token count when no usage) */
    bool client_wants_usage;        /* stream_options.include_usage was the client's */
    bool overflowed;                /* left a local queue for the cloud */
    uint32_t left_queue;            /* the local(s) it left (exclude bits), eligible again
                                     * once a later attempt fails */

    /* PII: what the front found; the map and stream of masked attempts. */
    struct sw_facts_pii pii;
    bool need_mask;                 /* the current attempt must be masked */
    bool masked;                    /* ... and was: the answer must be unmasked */
    struct sw_pii_map *map;         /* per request; never logged */
    struct sw_pii_stream *pstream;  /* per masked streaming attempt */

    /* Output contract: the schema of the request's response_format (borrowed
     * from chat.body), the verdict on the answer, the streamed content so far. */
    const json_t *schema;
    const char *contract;           /* static verdict name; NULL: no contract */
    const char *contract_tool;      /* an Anthropic client's forced tool: the schema is its
                                     * input_schema, the judged text its input (borrowed) */
    bool contract_retried;          /* the other tier was asked after a violation */
    bool contract_refused;          /* a backend answered, Spillway refused it (502) */
    struct sw_buf contract_text;
    bool contract_overflow;         /* the streamed text passed its bound: judged as no JSON */
    int contract_block;             /* native stream: the forced tool's tool_use block, -1 none */
    bool contract_called;           /* native stream: that block started */
    char up_error_type[32];         /* native stream: the upstream error event's type */

    /* For the decision log and the metrics (never prompt or answer text). */
    const char *key_name;           /* borrowed from cfg */
    struct sw_declog_attempt att[SW_DECLOG_MAX_ATTEMPTS];
    size_t n_att;
    bool served;
    int final_status;
    const char *rej_code;           /* static string */
    double cost_usd;
    double ttft_ms;                 /* arrival to first byte of the answer that served; -1 none */
    long tok_in, tok_out;
    char id[48];

    struct sw_upstream up;
    struct sw_buf resp;             /* non-stream body, or the error body of a failed attempt */
    struct sw_sse sse;
    struct evbuffer *out;           /* events of the current upstream write (streams only) */

    bool started;                   /* the first byte went to the client */
    bool saw_done;                  /* upstream sent data: [DONE] */
    bool anth_preamble;             /* an Anthropic stream sent only message_start,
                                     * content_block_start or ping so far: what they
                                     * made is held, so an error event still fails over */
    bool client_gone;
    bool paused;                    /* upstream paused for a slow client */
    int abort_err;                  /* why on_data aborted the transfer (SW_EPROTO, ...) */
    char abort_msg[160];

    /* APIs (upstream/dialect.h): the client's, and the current attempt's. */
    bool anth_client;               /* the client spoke Anthropic: answers go out in its shape */
    enum sw_dialect up_dialect;     /* what the current attempt speaks */
    bool native;                    /* the attempt carries the client's own body, no translation */
    struct sw_request_error *cannot;    /* a backend that could not carry the request, why */
    bool other_failure;             /* an attempt failed for another reason */
    struct sw_buf aout;             /* o2a's output, per chunk */

    /* The failures so far, for the final error message: "edge: connect_error; ..." */
    char failures[512];
    long retry_after_s;
    bool any_timeout;

    /* Not zeroed when a proxy is created (5.6 KB of the 6.7 KB would be):
     * each is written in full before it is read. */
    struct sw_live_snapshot snap;   /* the view the current plan was made on (plan_next) */
    struct sw_anth_to_oai a2o;      /* an Anthropic upstream stream -> chunks (dispatch) */
    struct sw_oai_to_anth o2a;      /* chunks -> the Anthropic client's stream (dispatch) */
};

enum outcome { OUTCOME_OK, OUTCOME_FAILED, OUTCOME_NEUTRAL };

static void plan_next(struct proxy *p);
static void attempt_end(struct proxy *p, enum outcome o, int http_status, int transport_err);

/* ---- Lifetime ---- */

/* The account step: one decision-log line and the metrics for the request. */
static void record_decision(struct proxy *p)
{
    struct sw_obs_sinks *obs = p->env.obs;
    if (!obs)
        return;
    int64_t now = sw_now_ms();
    const struct sw_config_backend *be = p->served ? &p->cfg->backends[p->be] : NULL;
    const char *reason = p->served ? sw_reason_name(p->reason) : NULL;
    struct sw_declog_pii pii[SW_PII_MAX_TYPES];
    size_t n_pii = sw_obs_pii_list(p->live->pii, &p->pii.counts, pii);
    struct sw_declog_entry e = {
        .request_id = p->id,
        .time_ms = sw_live_wall_ms(p->live, p->start_ms),
        .model = p->public_model,
        .key_name = p->key_name,
        .decision = p->served && !p->contract_refused ? SW_DECLOG_SERVED : SW_DECLOG_REJECTED,
        .status = p->final_status ? p->final_status : (p->client_gone ? 499 : 0),
        .backend = be ? be->name : NULL,
        .tier = be ? sw_tier_name(be->tier) : NULL,
        .region = be ? be->region : NULL,
        .reason = reason,
        .code = p->contract_refused ? "contract_violation"
                : p->served         ? NULL
                                    : (p->rej_code ? p->rej_code : "client_gone"),
        .attempts = p->att,
        .n_attempts = p->n_att,
        .ttft_ms = p->ttft_ms,
        .duration_ms = (double)(now - p->start_ms),
        .tokens_in = p->served ? p->tok_in : -1,
        .tokens_out = p->served ? p->tok_out : -1,
        .cost_usd = p->cost_usd,
        .stream = p->chat.stream,
        .api = p->chat.api == SW_API_EMBEDDINGS ? "embeddings"
               : p->anth_client                ? "anthropic"
                                               : "openai",
        .contract = p->contract,
        .pii = pii,
        .n_pii = n_pii,
        .priority = p->facts.priority == SW_PRIORITY_BATCH ? "batch" : "interactive",
        .pii_outcome = !n_pii ? NULL
                       : be && be->tier == SW_TIER_CLOUD && !p->masked ? "region_cloud"
                       : be && be->tier == SW_TIER_CLOUD ? "masked_cloud"
                       : be                              ? "kept_local"
                                                         : NULL,
    };
    /* Spilled: served by the cloud although the model has a local backend
     * (the model's backends are looked at only when a cloud served). */
    bool spilled = false;
    for (size_t i = 0; be && be->tier == SW_TIER_CLOUD && !spilled && i < p->model->n_backends;
         i++)
        spilled = p->cfg->backends[p->model->backends[i]].tier == SW_TIER_LOCAL;
    sw_obs_record(obs, &e, spilled, now / 1000);
}

/* Freed proxies (over 9 KB each) kept for the next requests. */
static struct sw_spares spare_proxies;

static struct proxy *proxy_get(void)
{
    return sw_spares_get(&spare_proxies, sizeof(struct proxy));
}

static void proxy_put(struct proxy *p)
{
    sw_spares_put(&spare_proxies, p);
}

static void proxy_free(struct proxy *p)
{
    sw_upstream_cleanup(&p->up); /* abort first: the backend frees its slot at once */
    attempt_end(p, OUTCOME_NEUTRAL, 0, 0);
    record_decision(p);
    if (p->queue_timer)
        event_free(p->queue_timer);
    if (p->ttft_timer)
        event_free(p->ttft_timer);
    if (p->req) /* not answered (out of memory on the way): the client is told nothing more */
        sw_http_on_gone(p->req, NULL, NULL);
    sw_buf_free(&p->resp);
    sw_buf_free(&p->contract_text);
    sw_buf_free(&p->aout);
    free(p->cannot);
    sw_sse_free(&p->sse);
    if (p->out)
        evbuffer_free(p->out);
    sw_request_free(&p->chat);
    sw_pii_stream_free(p->pstream);
    sw_pii_map_free(p->map);
    free(p->public_model);
    free(p->public_model_json);
    sw_live_unref(p->live);
    sw_config_unref(p->cfg);
    void (*on_finish)(void *) = p->env.on_finish;
    void *ud = p->env.ud;
    proxy_put(p);
    if (on_finish)
        on_finish(ud);
}

/* The client disconnected (or stopped reading past the client timeout)
 * before its answer was complete: abort the upstream transfer at once, so a
 * local server frees its slot, whether the request is queued, in prefill or
 * streaming. */
static void on_client_gone(void *arg)
{
    struct proxy *p = arg;
    p->client_gone = true;
    p->req = NULL;
    sw_info("request %s: client disconnected, upstream aborted", p->id);
    proxy_free(p);
}

/* The answer is complete and the request handle is the server's again. */
static void detach_client(struct proxy *p)
{
    p->req = NULL;
}

static const struct sw_config_backend *cur_backend(const struct proxy *p)
{
    return &p->cfg->backends[p->be];
}

static void set_route_headers(struct proxy *p)
{
    const struct sw_config_backend *be = cur_backend(p);
    sw_reply_route_headers(p->req, be->name, sw_tier_name(be->tier), be->region,
                           sw_reason_name(p->reason));
}

/* ---- Accounting of one attempt ---- */

/* Ends the current attempt: logs it and settles its claim (sw_claim_settle:
 * the bucket and the spend on the real usage, the breaker and the learned
 * rates told the outcome, the local slot released, which may start the next
 * queued request). Idempotent. */
static void attempt_end(struct proxy *p, enum outcome o, int http_status, int transport_err)
{
    if (!p->attempting)
        return;
    p->attempting = false;
    struct sw_live *live = p->live;
    const struct sw_config_backend *be = cur_backend(p);
    int64_t now = sw_now_ms();
    if (p->queue_timer)
        evtimer_del(p->queue_timer);
    if (p->ttft_timer)
        evtimer_del(p->ttft_timer);
    if (p->n_att < SW_DECLOG_MAX_ATTEMPTS) {
        struct sw_declog_attempt *a = &p->att[p->n_att++];
        a->backend = be->name;
        a->reason = sw_reason_name(p->reason);
        a->outcome = o == OUTCOME_OK       ? SW_ATTEMPT_OK
                     : o == OUTCOME_FAILED ? SW_ATTEMPT_FAILED
                     : p->client_gone      ? SW_ATTEMPT_CLIENT_GONE
                                           : SW_ATTEMPT_SKIPPED;
        a->status = http_status;
        a->error = o == OUTCOME_OK ? NULL
                   : p->end_class ? p->end_class
                   : transport_err ? sw_err_str(transport_err)
                   : http_status   ? "status"
                                   : NULL;
        a->ttft_ms = p->first_byte_ms ? (double)(p->first_byte_ms - p->attempt_ms) : -1;
    }

    long in = p->usage_in ? p->usage_in : p->chat.prompt_tokens_est;
    long out = p->usage_out ? p->usage_out : p->chunks;
    double ttft = p->first_byte_ms ? (double)(p->first_byte_ms - p->attempt_ms) : -1;
    double decode = p->first_byte_ms && p->last_byte_ms > p->first_byte_ms
                        ? (double)(p->last_byte_ms - p->first_byte_ms)
                        : 0;
    p->end_class = NULL;
    double cost_before = p->cost_usd;
    bool sent = p->claim.sent;
    p->claim.whole_answer = !p->chat.stream;
    p->claim.usage_unreported = !p->usage_in;
    p->cost_usd += sw_claim_settle(live, &p->claim,
                                   o == OUTCOME_OK       ? SW_CLAIM_OK
                                   : o == OUTCOME_FAILED ? SW_CLAIM_FAILED
                                                         : SW_CLAIM_NEUTRAL,
                                   in, out, ttft, decode, http_status, transport_err,
                                   p->up.retry_after_s, now);
    double usd = p->cost_usd - cost_before;
    sw_store_release(&live->g->store, live, &p->rh, usd > 0 ? usd : 0, sent, in + out);
    sw_store_breaker_check(&live->g->store, live, p->be);
    p->lease_wait = false;
    if (o == OUTCOME_OK) {
        p->served = true;
        p->tok_in = in;
        p->tok_out = out;
        if (p->first_byte_ms)
            p->ttft_ms = (double)(p->first_byte_ms - p->start_ms);
    }
}

/* ---- Ending the request ---- */

static void fail_all(struct proxy *p)
{
    bool deadline = p->any_timeout && sw_now_ms() >= p->deadline_ms;
    p->rej_code = deadline ? "deadline_exceeded" : "all_backends_failed";
    p->final_status = deadline ? 504 : 503;
    if (deadline) {
        sw_reply_error(p->req, 504, "timeout_error", "deadline_exceeded", NULL,
                       "No backend answered within the request deadline (%s).", p->failures);
    } else {
        if (p->retry_after_s >= 0) {
            char v[24];
            snprintf(v, sizeof v, "%ld", p->retry_after_s);
            sw_http_add_header(p->req, "Retry-After", v);
        }
        sw_reply_error(p->req, 503, "server_error", "all_backends_failed", NULL,
                       "Every backend for model '%s' failed (%s). The gateway's log and GET "
                       "/admin/state (each backend's last_error) say why.",
                       p->public_model, p->failures);
    }
    sw_warn("request %s: all backends failed: %s", p->id, p->failures);
    detach_client(p);
    proxy_free(p);
}

/* Ends a stream that already started with an error event and [DONE]: a
 * failure after the first byte is never a silent truncation. */
static void fail_stream(struct proxy *p, const char *msg)
{
    if (p->anth_client) {
        sw_buf_reset(&p->aout);
        /* an Anthropic upstream's own error type (overloaded_error ...) */
        const char *type = p->native ? p->up_error_type : p->a2o.error_type;
        if (sw_oai_to_anth_error_typed(&p->o2a, type, msg, &p->aout) == SW_OK) {
            struct evbuffer *b = evbuffer_new();
            if (b) {
                evbuffer_add(b, p->aout.ptr, p->aout.len);
                sw_http_stream_write(p->req, b);
                evbuffer_free(b);
            }
        }
        goto end;
    }
    json_t *ev = json_pack("{s:{s:s, s:s, s:n, s:s}}", "error", "message", msg, "type",
                           "server_error", "param", "code", "upstream_stream_failed");
    char *s = ev ? json_dumps(ev, JSON_COMPACT) : NULL;
    struct evbuffer *b = evbuffer_new();
    if (b) {
        if (s)
            evbuffer_add_printf(b, "data: %s\n\n", s);
        evbuffer_add_printf(b, "data: [DONE]\n\n");
        sw_http_stream_write(p->req, b);
        evbuffer_free(b);
    }
    free(s);
    json_decref(ev);
end:
    sw_http_on_drained(p->req, 0, NULL, NULL);
    sw_http_stream_end(p->req);
    p->served = true;
    p->final_status = 200;
    sw_warn("request %s: stream from %s failed after the first byte: %s", p->id,
            cur_backend(p)->name, msg);
    detach_client(p);
    proxy_free(p);
}

static void note_failure(struct proxy *p, const char *what)
{
    size_t used = strlen(p->failures);
    snprintf(p->failures + used, sizeof p->failures - used, "%s%s: %s", used ? "; " : "",
             cur_backend(p)->name, what);
}

/* The current backend is out for this request: exclude it and decide again
 * with fresh state (breakers, queues, buckets may have moved meanwhile). */
static void exclude_and_replan(struct proxy *p)
{
    for (size_t k = 0; k < p->snap.view.n; k++)
        if (p->snap.map[k] == p->be)
            p->facts.exclude |= 1u << k;
    plan_next(p);
}

/* Records why the current attempt failed and moves on to the next backend. */
static void attempt_failed(struct proxy *p, const char *what, int http_status, int transport_err)
{
    p->other_failure = true;
    note_failure(p, what);
    sw_warn("request %s: attempt on %s failed: %s", p->id, cur_backend(p)->name, what);
    if (p->up.retry_after_s >= 0 &&
        (p->retry_after_s < 0 || p->up.retry_after_s < p->retry_after_s))
        p->retry_after_s = p->up.retry_after_s;
    attempt_end(p, OUTCOME_FAILED, http_status, transport_err);
    sw_upstream_cleanup(&p->up);
    sw_buf_free(&p->resp);
    sw_sse_free(&p->sse);
    p->abort_err = SW_OK;
    p->saw_done = false;
    if (!p->started && p->out) /* what a failed attempt's preamble made is not sent */
        evbuffer_drain(p->out, evbuffer_get_length(p->out));
    /* A local queue left for an attempt that failed is no failure of that
     * local: it may take the request again (once), within the deadline. */
    p->facts.exclude &= ~p->left_queue;
    p->left_queue = 0;
    exclude_and_replan(p);
}

/* ---- Streaming ---- */

/* One SSE event from the upstream: rewrite `model`, queue it for the client.
 * Before the first byte went out, an error or garbage aborts the attempt so
 * the next backend can answer instead. */
static void read_usage(struct proxy *p, const json_t *usage);

/* Reads prompt_tokens and completion_tokens of a usage object span; with
 * `checked` (the span is inside text sw_jscan_object accepted whole) its
 * syntax is not checked a second time. */
static void read_usage_span(struct proxy *p, const char *text, struct sw_jspan span, bool checked)
{
    static const char *const keys[] = {"prompt_tokens", "completion_tokens"};
    struct sw_jspan us[2];
    if (!span.len || text[span.off] != '{')
        return;
    if (!(checked ? sw_jscan_members : sw_jscan_object)(text + span.off, span.len, keys, us, NULL, 2))
        return;
    long in = sw_jscan_long(text + span.off, us[0]), out = sw_jscan_long(text + span.off, us[1]);
    if (in >= 0)
        p->usage_in = in;
    if (out >= 0)
        p->usage_out = out;
}

/* An event of an unmasked stream, edited as bytes: `model` rewritten, the
 * usage Spillway asked for on the client's behalf dropped, usage read. */
static int plain_event(struct proxy *p, const char *data, size_t len)
{
    static const char *const keys[] = {"model", "choices", "usage", "error"};
    struct sw_jspan v[4], m[4];
    if (!sw_jscan_object(data, len, keys, v, m, 4)) {
        p->abort_err = SW_EPROTO;
        snprintf(p->abort_msg, sizeof p->abort_msg, "malformed JSON in stream event");
        return SW_EPROTO;
    }
    if (v[3].len && !p->started) {
        p->abort_err = SW_ESTATUS;
        snprintf(p->abort_msg, sizeof p->abort_msg, "error event before the first token");
        return SW_ESTATUS;
    }
    bool choices = v[1].len && data[v[1].off] == '[';
    bool no_choices = choices && sw_jscan_empty_array(data, v[1]);
    struct sw_jspan cut = {0, 0};
    if (v[2].len && data[v[2].off] == '{') {
        read_usage_span(p, data, v[2], false);
        if (!p->client_wants_usage && no_choices)
            return SW_OK; /* the usage-only chunk the client did not ask for */
    } else if (v[2].len == 4 && !memcmp(data + v[2].off, "null", 4) && !p->client_wants_usage) {
        cut = sw_jscan_cut(data, len, m[2]);
    }
    if (choices && !no_choices)
        p->chunks++;
    /* Up to two edits in text order: the model value and the cut usage. */
    struct sw_jspan edit[2];
    const char *with[2];
    int n = 0;
    /* The model is rewritten only when it differs from the public name. */
    if (v[0].len && data[v[0].off] == '"' && p->public_model_json &&
        (v[0].len != strlen(p->public_model_json) ||
         memcmp(data + v[0].off, p->public_model_json, v[0].len) != 0)) {
        edit[n] = v[0];
        with[n++] = p->public_model_json;
    }
    if (cut.len) {
        edit[n] = cut;
        with[n++] = "";
    }
    if (n == 2 && edit[1].off < edit[0].off) {
        struct sw_jspan t = edit[0];
        const char *w = with[0];
        edit[0] = edit[1], with[0] = with[1];
        edit[1] = t, with[1] = w;
    }
    /* Written in one piece: the event's size is known, so one reserved
     * extent takes it instead of an evbuffer_add per part. */
    size_t wlen[2], total = 6 + len + 2;
    for (int i = 0; i < n; i++) {
        wlen[i] = strlen(with[i]);
        total += wlen[i] - edit[i].len;
    }
    struct evbuffer_iovec vec;
    if (evbuffer_reserve_space(p->out, (ev_ssize_t)total, &vec, 1) != 1) {
        p->abort_err = SW_ENOMEM;
        snprintf(p->abort_msg, sizeof p->abort_msg, "out of memory");
        return SW_ENOMEM;
    }
    char *o = vec.iov_base;
    memcpy(o, "data: ", 6);
    o += 6;
    size_t at = 0;
    for (int i = 0; i < n; i++) {
        memcpy(o, data + at, edit[i].off - at);
        o += edit[i].off - at;
        memcpy(o, with[i], wlen[i]);
        o += wlen[i];
        at = edit[i].off + edit[i].len;
    }
    memcpy(o, data + at, len - at);
    o += len - at;
    memcpy(o, "\n\n", 2);
    vec.iov_len = total;
    evbuffer_commit_space(p->out, &vec, 1);
    return SW_OK;
}

/* Appends a chunk's choices[0].delta.content to the streamed content the
 * contract judges at the end (bounded like a non-streamed answer). */
static void contract_collect(struct proxy *p, const json_t *chunk)
{
    if (!p->schema)
        return;
    const json_t *delta =
        json_object_get(json_array_get(json_object_get(chunk, "choices"), 0), "delta");
    const json_t *c = json_object_get(delta, "content");
    if (p->contract_tool) /* the forced tool's arguments (its only call) */
        c = json_object_get(json_object_get(json_array_get(json_object_get(delta, "tool_calls"), 0),
                                            "function"),
                            "arguments");
    if (json_is_string(c) &&
        sw_buf_append(&p->contract_text, json_string_value(c), json_string_length(c)))
        p->contract_overflow = true;
}

static enum sw_contract_verdict contract_judge(struct proxy *p, const char *content, size_t len);

/* A chunk for the client (borrowed): as it is for an OpenAI client, as
 * Anthropic events for an Anthropic one. */
static int emit_chunk(struct proxy *p, const json_t *chunk)
{
    if (p->anth_client) {
        sw_buf_reset(&p->aout);
        if (sw_oai_to_anth_chunk(&p->o2a, chunk, &p->aout))
            return SW_ENOMEM;
        evbuffer_add(p->out, p->aout.ptr, p->aout.len);
        return SW_OK;
    }
    char *s = json_dumps(chunk, JSON_COMPACT);
    if (!s)
        return SW_ENOMEM;
    evbuffer_add_printf(p->out, "data: %s\n\n", s);
    free(s);
    return SW_OK;
}

/* A streamed answer's judged text at its end: the verdict; under stream:
 * enforce a violation (or no JSON) adds the client's error event. True when
 * it did (an Anthropic stream then ends there). */
static bool contract_stream_end(struct proxy *p, const char *text, size_t len)
{
    if (contract_judge(p, text, len) == SW_CONTRACT_OK || !strcmp(p->contract, "unchecked") ||
        p->model->contract.stream != SW_CONTRACT_STREAM_ENFORCE)
        return false;
    const char *msg = p->contract_tool
                          ? "The answer does not call the tool that tool_choice forces with "
                            "an input its input_schema accepts."
                          : "The answer does not follow the JSON schema the request's "
                            "response_format asked for.";
    json_t *ev = p->anth_client
                     ? json_pack("{s:s, s:{s:s, s:s}}", "type", "error", "error", "type",
                                 "api_error", "message", msg)
                     : json_pack("{s:{s:s, s:s, s:n, s:s}}", "error", "message", msg, "type",
                                 "server_error", "param", "code", "contract_violation");
    char *s = ev ? json_dumps(ev, JSON_COMPACT) : NULL;
    if (s)
        evbuffer_add_printf(p->out, "%sdata: %s\n\n", p->anth_client ? "event: error\n" : "", s);
    free(s);
    json_decref(ev);
    return true;
}

/* The upstream's stream is complete: what the unmasker held back, then the
 * end ([DONE], or message_delta and message_stop for an Anthropic client).
 * A streamed answer is judged against the output contract here; under
 * stream: enforce a violation ends it with an error event instead. */
static int stream_done(struct proxy *p)
{
    p->saw_done = true;
    json_t *held = p->pstream ? sw_pii_stream_finish(p->pstream) : NULL;
    if (held) {
        contract_collect(p, held);
        json_object_set_new(held, "model", json_string(p->public_model));
        emit_chunk(p, held);
        json_decref(held);
    }
    if (p->schema && contract_stream_end(p, p->contract_overflow  ? NULL
                                            : p->contract_text.ptr ? p->contract_text.ptr
                                                                   : "",
                                         p->contract_text.len) &&
        p->anth_client)
        return SW_OK;   /* an Anthropic stream ends at its error event */
    if (p->anth_client) {
        sw_buf_reset(&p->aout);
        if (sw_oai_to_anth_finish(&p->o2a, &p->aout))
            return SW_ENOMEM;
        evbuffer_add(p->out, p->aout.ptr, p->aout.len);
    } else {
        evbuffer_add(p->out, "data: [DONE]\n\n", 14);
    }
    return SW_OK;
}

/* One OpenAI chunk (taken): usage read, masked values restored, model
 * rewritten, then out to the client. */
static int json_chunk(struct proxy *p, json_t *chunk)
{
    if (json_object_get(chunk, "error") && !p->started) {
        json_decref(chunk);
        p->abort_err = SW_ESTATUS;
        snprintf(p->abort_msg, sizeof p->abort_msg, "error event before the first token");
        return SW_ESTATUS;
    }
    json_t *usage = json_object_get(chunk, "usage");
    json_t *choices = json_object_get(chunk, "choices");
    if (json_is_object(usage)) {
        read_usage(p, usage);
        /* The usage-only chunk Spillway asked for on the client's behalf. */
        if (!p->client_wants_usage && json_is_array(choices) && json_array_size(choices) == 0) {
            json_decref(chunk);
            return SW_OK;
        }
    } else if (json_is_null(usage) && !p->client_wants_usage) {
        json_object_del(chunk, "usage"); /* "usage": null that include_usage adds */
    }
    if (json_is_array(choices) && json_array_size(choices) > 0)
        p->chunks++;
    if (p->pstream && sw_pii_stream_chunk(p->pstream, chunk) != SW_OK) {
        json_decref(chunk);
        p->abort_err = SW_EPROTO;
        snprintf(p->abort_msg, sizeof p->abort_msg, "could not restore the masked values");
        return SW_EPROTO;
    }
    contract_collect(p, chunk);
    if (json_is_string(json_object_get(chunk, "model")))
        json_object_set_new(chunk, "model", json_string(p->public_model));
    int err = emit_chunk(p, chunk);
    json_decref(chunk);
    if (err) {
        p->abort_err = SW_ENOMEM;
        snprintf(p->abort_msg, sizeof p->abort_msg, "out of memory");
    }
    return err;
}

/* message_start, content_block_start and ping carry no token: a stream
 * that sent only these has not started answering. */
static bool anth_preamble_type(const char *t, size_t n)
{
    return (n == 13 && !memcmp(t, "message_start", 13)) ||
           (n == 19 && !memcmp(t, "content_block_start", 19)) || (n == 4 && !memcmp(t, "ping", 4));
}

static void anth_preamble_check(struct proxy *p, const char *data, size_t len)
{
    static const char *const keys[] = {"type"};
    struct sw_jspan v[1];
    if (!p->anth_preamble)
        return;
    if (sw_jscan_object(data, len, keys, v, NULL, 1) && v[0].len >= 2 && data[v[0].off] == '"' &&
        anth_preamble_type(data + v[0].off + 1, v[0].len - 2))
        return;
    p->anth_preamble = false;
}

/* An Anthropic upstream's event, translated into chunks. */
static int anth_event(struct proxy *p, const char *data, size_t len)
{
    anth_preamble_check(p, data, len);
    json_t *chunks = json_array();
    const char *msg = "out of memory";
    if (!chunks || sw_anth_to_oai_event(&p->a2o, data, len, chunks, &msg)) {
        json_decref(chunks);
        p->abort_err = p->started ? SW_EPROTO : SW_ESTATUS;
        snprintf(p->abort_msg, sizeof p->abort_msg, "%s%s", msg,
                 p->started ? "" : " before the first token");
        return p->abort_err;
    }
    size_t i;
    json_t *c;
    int err = SW_OK;
    json_array_foreach(chunks, i, c) {
        if (!err)
            err = json_chunk(p, json_incref(c));
    }
    json_decref(chunks);
    if (!err && p->a2o.done)
        err = stream_done(p);
    return err;
}

/* An Anthropic client's forced tool, streamed from an Anthropic backend:
 * the input_json_delta fragments of its tool_use block (bounded like a
 * non-streamed answer). */
static void contract_collect_native(struct proxy *p, const char *type, const json_t *ev)
{
    const json_t *idx = json_object_get(ev, "index");
    if (!strcmp(type, "content_block_start") && p->contract_block < 0 && json_is_integer(idx)) {
        const json_t *cb = json_object_get(ev, "content_block");
        const char *t = json_string_value(json_object_get(cb, "type"));
        const char *n = json_string_value(json_object_get(cb, "name"));
        if (t && n && !strcmp(t, "tool_use") && !strcmp(n, p->contract_tool)) {
            p->contract_block = (int)json_integer_value(idx);
            p->contract_called = true;
        }
    } else if (!strcmp(type, "content_block_delta") && p->contract_block >= 0 &&
               json_is_integer(idx) && json_integer_value(idx) == p->contract_block) {
        const json_t *d = json_object_get(ev, "delta");
        const json_t *pj = json_object_get(d, "partial_json");
        const char *dt = json_string_value(json_object_get(d, "type"));
        if (dt && !strcmp(dt, "input_json_delta") && json_is_string(pj) &&
            sw_buf_append(&p->contract_text, json_string_value(pj), json_string_length(pj)))
            p->contract_overflow = true;
    } else if (!strcmp(type, "content_block_stop") && json_is_integer(idx) &&
               json_integer_value(idx) == p->contract_block) {
        p->contract_block = -2; /* done: a later block of the same name is not judged */
    }
}

/* The judged text of a native stream: the tool's input; "{}" when it was
 * called with no fragments (an empty input); NULL when it was not called or
 * its input passed the bound. */
static const char *contract_native_text(struct proxy *p)
{
    if (!p->contract_called || p->contract_overflow)
        return NULL;
    return p->contract_text.len ? p->contract_text.ptr : "{}";
}

/* The prompt tokens an Anthropic usage object bills: input_tokens plus the
 * tokens written to and read from the prompt cache, which input_tokens
 * leaves out; -1 without input_tokens. */
static long anth_input_tokens(const json_t *usage)
{
    json_t *in = json_object_get(usage, "input_tokens");
    if (!json_is_integer(in) || json_integer_value(in) < 0)
        return -1;
    long t = (long)json_integer_value(in);
    static const char *const cache[] = {"cache_creation_input_tokens", "cache_read_input_tokens"};
    for (size_t i = 0; i < 2; i++) {
        json_t *c = json_object_get(usage, cache[i]);
        if (json_is_integer(c) && json_integer_value(c) > 0)
            t = sw_sat_add_long(t, (long)json_integer_value(c));
    }
    return t;
}

/* An event of an Anthropic client's own stream from an Anthropic backend:
 * passed on with the model rewritten, usage read on the way. */
static int native_event(struct proxy *p, const char *event, const char *data, size_t len)
{
    json_error_t jerr;
    json_t *ev = json_loadb(data, len, 0, &jerr);
    const char *type = json_string_value(json_object_get(ev, "type"));
    if (!type) {
        json_decref(ev);
        p->abort_err = SW_EPROTO;
        snprintf(p->abort_msg, sizeof p->abort_msg, "malformed JSON in stream event");
        return SW_EPROTO;
    }
    if (p->anth_preamble && !anth_preamble_type(type, strlen(type)))
        p->anth_preamble = false;
    if (!strcmp(type, "error")) {
        const char *et = json_string_value(json_object_get(json_object_get(ev, "error"), "type"));
        size_t etn = et ? strlen(et) : 0; /* kept when it looks like Anthropic's (a-z _) */
        if (etn && etn < sizeof p->up_error_type &&
            strspn(et, "abcdefghijklmnopqrstuvwxyz_") == etn)
            snprintf(p->up_error_type, sizeof p->up_error_type, "%s", et);
        json_decref(ev);
        p->abort_err = p->started ? SW_EPROTO : SW_ESTATUS;
        snprintf(p->abort_msg, sizeof p->abort_msg, "error event%s",
                 p->started ? " mid-stream" : " before the first token");
        return p->abort_err;
    }
    json_t *usage = NULL;
    if (!strcmp(type, "message_start")) {
        json_t *m = json_object_get(ev, "message");
        if (json_is_object(m))
            json_object_set_new(m, "model", json_string(p->public_model));
        usage = json_object_get(m, "usage");
    } else if (!strcmp(type, "message_delta")) {
        usage = json_object_get(ev, "usage");
    } else if (!strcmp(type, "content_block_delta")) {
        p->chunks++;
    }
    if (p->contract_tool)
        contract_collect_native(p, type, ev);
    long in = anth_input_tokens(usage);
    json_t *out = json_object_get(usage, "output_tokens");
    if (in > 0)
        p->usage_in = in;
    if (json_is_integer(out) && json_integer_value(out) >= 0)
        p->usage_out = (long)json_integer_value(out);
    bool stop = !strcmp(type, "message_stop");
    if (stop && p->contract_tool &&
        contract_stream_end(p, contract_native_text(p),
                            !p->contract_called ? 0 : p->contract_text.len ? p->contract_text.len : 2)) {
        json_decref(ev); /* an Anthropic stream ends at its error event */
        p->saw_done = true;
        return SW_OK;
    }
    char name[64];
    snprintf(name, sizeof name, "%s", event[0] ? event : type);
    char *s = json_dumps(ev, JSON_COMPACT);
    json_decref(ev); /* type pointed into ev */
    if (!s) {
        p->abort_err = SW_ENOMEM;
        snprintf(p->abort_msg, sizeof p->abort_msg, "out of memory");
        return SW_ENOMEM;
    }
    evbuffer_add_printf(p->out, "event: %s\ndata: %s\n\n", name, s);
    free(s);
    if (stop)
        p->saw_done = true;
    return SW_OK;
}

static int on_sse_event(void *ud, const char *event, const char *data, size_t len)
{
    struct proxy *p = ud;
    if (p->native)
        return native_event(p, event, data, len);
    if (p->up_dialect == SW_DIALECT_ANTHROPIC)
        return anth_event(p, data, len);
    if (len == 6 && memcmp(data, "[DONE]", 6) == 0)
        return stream_done(p);
    if (!p->pstream && !p->anth_client && !p->schema)
        return plain_event(p, data, len);
    json_error_t jerr;
    json_t *chunk = json_loadb(data, len, 0, &jerr);
    if (!chunk || !json_is_object(chunk)) {
        json_decref(chunk);
        p->abort_err = SW_EPROTO;
        snprintf(p->abort_msg, sizeof p->abort_msg, "malformed JSON in stream event");
        return SW_EPROTO;
    }
    return json_chunk(p, chunk);
}

/* The slow client caught up: resume the upstream transfer. */
static void on_client_drained(void *arg)
{
    struct proxy *p = arg;
    p->paused = false;
    sw_upstream_resume(&p->up);
}

static void start_client_stream(struct proxy *p)
{
    set_route_headers(p);
    sw_http_add_header(p->req, "Cache-Control", "no-cache");
    sw_http_stream_start(p->req, 200, "text/event-stream");
    p->started = true;
}

static size_t on_stream_data(struct proxy *p, const char *bytes, size_t len)
{
    if (p->started && sw_http_pending(p->req) > CLIENT_PENDING_MAX) {
        p->paused = true;
        sw_http_on_drained(p->req, CLIENT_PENDING_MAX / 2, on_client_drained, p);
        return SW_UPSTREAM_PAUSE;
    }
    int err = sw_sse_feed(&p->sse, bytes, len);
    if (err == SW_ETOOBIG && !p->abort_err) {
        p->abort_err = SW_EPROTO;
        snprintf(p->abort_msg, sizeof p->abort_msg, "stream event larger than %d bytes",
                 SSE_EVENT_MAX);
    }
    /* Nothing goes out of an attempt that is failing before its first byte. */
    if (evbuffer_get_length(p->out) > 0 &&
        (p->started || (!p->anth_preamble && !p->abort_err))) {
        if (!p->started)
            start_client_stream(p);
        sw_http_stream_write(p->req, p->out);
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
    p->last_byte_ms = sw_now_ms();
    if (!p->first_byte_ms)
        p->first_byte_ms = p->last_byte_ms;
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

/* Keeps the upstream's token counts for the spend, bucket and learned rates. */
static void read_usage(struct proxy *p, const json_t *usage)
{
    if (!json_is_object(usage))
        return;
    json_t *in = json_object_get(usage, "prompt_tokens");
    json_t *out = json_object_get(usage, "completion_tokens");
    if (json_is_integer(in) && json_integer_value(in) >= 0)
        p->usage_in = (long)json_integer_value(in);
    if (json_is_integer(out) && json_integer_value(out) >= 0)
        p->usage_out = (long)json_integer_value(out);
}

/* `s` as a JSON string, quotes included, byte for byte as jansson's
 * json_dumps writes it, without building a jansson value: model names are
 * quoted on every request. NULL when s is not valid UTF-8 (json_string
 * refuses it too) or out of memory; the caller frees the result. */
static char *json_quote(const char *s)
{
    size_t n = strlen(s);
    struct sw_buf b;
    sw_buf_init(&b, SW_JSON_ESCAPED_MAX(n) + 2);
    if (sw_buf_append(&b, "\"", 1) || sw_json_escape(&b, s, n, SW_JSON_ESC_CHECK_UTF8) ||
        sw_buf_append(&b, "\"", 1)) {
        sw_buf_free(&b);
        return NULL;
    }
    return b.ptr;
}

/* `text` with the value at `at` replaced by `with` (at.len 0: `with` is
 * inserted as a new first member `"key":with,`). NULL when out of memory. */
static char *splice_member(const char *text, size_t len, struct sw_jspan at, const char *key,
                           const char *with, size_t *out_len)
{
    size_t wl = strlen(with), kl = strlen(key);
    char *b = malloc(len + kl + wl + 8); /* the whole result, allocated once */
    if (!b)
        return NULL;
    char *o = b;
    if (at.len) {
        memcpy(o, text, at.off);
        o += at.off;
        memcpy(o, with, wl);
        o += wl;
        memcpy(o, text + at.off + at.len, len - at.off - at.len);
        o += len - at.off - at.len;
    } else {
        const char *brace = memchr(text, '{', len);
        size_t head = brace ? (size_t)(brace - text) + 1 : 0;
        memcpy(o, text, head);
        o += head;
        *o++ = '"';
        memcpy(o, key, kl);
        o += kl;
        *o++ = '"';
        *o++ = ':';
        memcpy(o, with, wl);
        o += wl;
        /* A member follows unless the object was empty. */
        size_t i = head;
        while (i < len && strchr(" \t\r\n", text[i]))
            i++;
        if (i < len && text[i] != '}')
            *o++ = ',';
        memcpy(o, text + head, len - head);
        o += len - head;
    }
    *o = '\0';
    *out_len = (size_t)(o - b);
    return b;
}

/* The answer `s` (len bytes; NULL: out of memory) is the request's: the
 * attempt succeeded, the client gets a copy; `s` stays the caller's. */
static void serve_answer_copy(struct proxy *p, const char *s, size_t len)
{
    if (!s) {
        attempt_failed(p, "out of memory", 0, SW_ENOMEM);
        return;
    }
    attempt_end(p, OUTCOME_OK, 200, 0);
    p->final_status = 200;
    set_route_headers(p);
    sw_reply_json(p->req, 200, s, len);
    detach_client(p);
    proxy_free(p);
}

/* The same, `s` taken (freed). */
static void serve_answer(struct proxy *p, char *s, size_t len)
{
    serve_answer_copy(p, s, len);
    free(s);
}

/* The value at `at` (at.len > 0) of the text in b replaced by `with`, in
 * place. False when b cannot grow that much (its limit, or memory). */
static bool splice_in_place(struct sw_buf *b, struct sw_jspan at, const char *with)
{
    size_t wl = strlen(with), tail = b->len - at.off - at.len;
    if (wl > at.len && sw_buf_append(b, with, wl - at.len))
        return false;       /* grown by the difference; every byte is rewritten below */
    memmove(b->ptr + at.off + wl, b->ptr + at.off + at.len, tail);
    memcpy(b->ptr + at.off, with, wl);
    b->len = at.off + wl + tail;
    b->ptr[b->len] = '\0';
    return true;
}

/* An answer that needs no unmasking: checked and edited in place (model
 * rewritten, usage read) without building a tree. */
static void finish_plain(struct proxy *p)
{
    /* An embeddings answer carries its vectors in "data", a chat answer its
     * choices in "choices": either must be there, an array. */
    const char *const keys[] = {"model", p->chat.api == SW_API_EMBEDDINGS ? "data" : "choices", "usage"};
    struct sw_jspan sp[3];
    const char *text = p->resp.ptr ? p->resp.ptr : "";
    if (!sw_jscan_object(text, p->resp.len, keys, sp, NULL, 3) || !sp[1].len || text[sp[1].off] != '[') {
        attempt_failed(p, "malformed JSON answer", (int)p->up.status, SW_EPROTO);
        return;
    }
    read_usage_span(p, text, sp[2], true);
    if (!p->public_model_json) {
        serve_answer(p, NULL, 0);
        return;
    }
    if (sp[0].len && splice_in_place(&p->resp, sp[0], p->public_model_json)) {
        serve_answer_copy(p, p->resp.ptr, p->resp.len);
        return;
    }
    size_t len;
    char *s = splice_member(text, p->resp.len, sp[0], "model", p->public_model_json, &len);
    serve_answer(p, s, len);
}

/* Judges the final answer's content against the request's schema: the
 * verdict goes to the decision log; a violation (or no JSON) is counted per
 * backend and logged (never the content). */
static enum sw_contract_verdict contract_judge(struct proxy *p, const char *content, size_t len)
{
    struct sw_schema_error err;
    enum sw_contract_verdict v = sw_contract_check(p->schema, content, len, &err);
    p->contract = sw_contract_verdict_name(v);
    if (v == SW_CONTRACT_UNCHECKED) {
        sw_warn("request %s: output contract not checked: the schema cannot be applied (%s)",
                p->id, err.reason);
    } else if (v != SW_CONTRACT_OK) {
        const char *labels[] = {cur_backend(p)->name, p->public_model};
        if (p->env.obs && p->env.obs->metrics)
            sw_metrics_inc(p->env.obs->metrics, SW_M_CONTRACT, labels, 1);
        sw_info("request %s: the answer from %s breaks the output contract: %s%s%s", p->id,
                cur_backend(p)->name, p->contract, err.reason[0] ? ", " : "", err.reason);
    }
    return v;
}

/* A non-streamed answer that broke the contract under retry or reject:
 * retry asks the other tier once (within the deadline); reject, or a retry
 * that cannot happen or broke it again, answers 502 contract_violation. */
static void contract_refuse(struct proxy *p)
{
    const struct sw_config_backend *be = cur_backend(p);
    bool other = false;
    for (size_t i = 0; i < p->model->n_backends; i++)
        other |= p->cfg->backends[p->model->backends[i]].tier != be->tier;
    if (p->model->contract.on_violation == SW_CONTRACT_RETRY && !p->contract_retried && other) {
        p->contract_retried = true;
        note_failure(p, "contract_violation");
        p->end_class = "contract_violation";
        attempt_end(p, OUTCOME_NEUTRAL, (int)p->up.status, 0);
        sw_upstream_cleanup(&p->up);
        sw_buf_free(&p->resp);
        for (size_t k = 0; k < p->snap.view.n; k++)
            if (p->cfg->backends[p->snap.map[k]].tier == be->tier)
                p->facts.exclude |= 1u << k;
        sw_info("request %s: asking the other tier after a contract violation", p->id);
        plan_next(p);
        return;
    }
    p->end_class = "contract_violation";
    attempt_end(p, OUTCOME_NEUTRAL, (int)p->up.status, 0);
    p->served = true; /* a backend answered (its backend, tokens and cost are logged) */
    p->contract_refused = true; /* ... and Spillway refused it: decision rejected */
    p->tok_in = p->usage_in ? p->usage_in : p->chat.prompt_tokens_est;
    p->tok_out = p->usage_out ? p->usage_out : p->chunks;
    p->final_status = 502;
    set_route_headers(p);
    if (p->contract_tool)
        sw_reply_error(p->req, 502, "server_error", "contract_violation", "tool_choice",
                       "The answer from backend '%s' does not call the tool '%s' that tool_choice "
                       "forces with an input its input_schema accepts (%s).",
                       be->name, p->contract_tool, p->contract);
    else
        sw_reply_error(p->req, 502, "server_error", "contract_violation", "response_format",
                       "The answer from backend '%s' does not follow the JSON schema the "
                       "request's response_format asked for (%s).", be->name, p->contract);
    detach_client(p);
    proxy_free(p);
}

/* An Anthropic client's own answer from an Anthropic backend (taken):
 * usage read, model rewritten. */
static void finish_native(struct proxy *p, json_t *body)
{
    json_t *usage = json_object_get(body, "usage");
    if (!json_is_array(json_object_get(body, "content")) || !json_is_object(usage)) {
        json_decref(body);
        attempt_failed(p, "malformed JSON answer", (int)p->up.status, SW_EPROTO);
        return;
    }
    long in = anth_input_tokens(usage);
    json_t *out = json_object_get(usage, "output_tokens");
    if (in >= 0)
        p->usage_in = in;
    if (json_is_integer(out) && json_integer_value(out) >= 0)
        p->usage_out = (long)json_integer_value(out);
    if (p->schema && p->contract_tool) {
        /* the forced tool's tool_use block: its input is the judged text */
        size_t i;
        const json_t *blk;
        char *input = NULL;
        json_array_foreach(json_object_get(body, "content"), i, blk) {
            const char *t = json_string_value(json_object_get(blk, "type"));
            const char *n = json_string_value(json_object_get(blk, "name"));
            if (t && n && !strcmp(t, "tool_use") && !strcmp(n, p->contract_tool)) {
                input = json_dumps(json_object_get(blk, "input"), JSON_COMPACT | JSON_ENCODE_ANY);
                break;
            }
        }
        enum sw_contract_verdict v = contract_judge(p, input, input ? strlen(input) : 0);
        free(input);
        if ((v == SW_CONTRACT_VIOLATION || v == SW_CONTRACT_INVALID_JSON) &&
            (p->model->contract.on_violation != SW_CONTRACT_PASS || p->contract_retried)) {
            json_decref(body);
            contract_refuse(p);
            return;
        }
    }
    json_object_set_new(body, "model", json_string(p->public_model));
    char *s = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    serve_answer(p, s, s ? strlen(s) : 0);
}

static void finish_non_stream(struct proxy *p)
{
    /* Vectors hold no placeholders: a masked embeddings answer is plain. */
    if (p->chat.api == SW_API_EMBEDDINGS ||
        (!p->masked && !p->schema && !p->anth_client && p->up_dialect == SW_DIALECT_OPENAI)) {
        finish_plain(p);
        return;
    }
    json_error_t jerr;
    json_t *body = json_loadb(p->resp.ptr ? p->resp.ptr : "", p->resp.len, 0, &jerr);
    if (body && p->native) {
        finish_native(p, body);
        return;
    }
    const struct sw_upstream_dialect *d = sw_upstream_dialect(p->up_dialect);
    if (body && d->answer_to_openai) {
        json_t *o = d->answer_to_openai(body, p->public_model, (long long)sw_wall_s());
        json_decref(body);
        body = o;
        /* an OpenAI client's response_format went as a forced tool */
        if (body && p->schema && !p->contract_tool && p->up_dialect == SW_DIALECT_ANTHROPIC)
            sw_anth_resp_format_tool_to_content(body);
    }
    if (!body || !json_is_object(body) || !json_is_array(json_object_get(body, "choices"))) {
        json_decref(body);
        attempt_failed(p, "malformed JSON answer", (int)p->up.status, SW_EPROTO);
        return;
    }
    read_usage(p, json_object_get(body, "usage"));
    if (p->masked && sw_pii_unmask_response(p->map, body) != SW_OK) {
        json_decref(body);
        attempt_failed(p, "could not restore the masked values", (int)p->up.status, SW_EPROTO);
        return;
    }
    if (p->schema) {
        const json_t *msg =
            json_object_get(json_array_get(json_object_get(body, "choices"), 0), "message");
        const json_t *c = json_object_get(msg, "content");
        if (p->contract_tool) {
            /* the forced tool's call: its arguments are the judged text */
            size_t i;
            const json_t *tc;
            c = NULL;
            json_array_foreach(json_object_get(msg, "tool_calls"), i, tc) {
                const json_t *fn = json_object_get(tc, "function");
                const char *n = json_string_value(json_object_get(fn, "name"));
                if (n && !strcmp(n, p->contract_tool)) {
                    c = json_object_get(fn, "arguments");
                    break;
                }
            }
        }
        enum sw_contract_verdict v = contract_judge(p, json_string_value(c),
                                                    json_is_string(c) ? json_string_length(c) : 0);
        if ((v == SW_CONTRACT_VIOLATION || v == SW_CONTRACT_INVALID_JSON) &&
            (p->model->contract.on_violation != SW_CONTRACT_PASS || p->contract_retried)) {
            json_decref(body);
            contract_refuse(p);
            return;
        }
    }
    json_object_set_new(body, "model", json_string(p->public_model));
    if (p->anth_client) {
        json_t *a = sw_anth_resp_from_openai(body, p->public_model);
        json_decref(body);
        body = a;
    }
    char *s = body ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    serve_answer(p, s, s ? strlen(s) : 0);
}

/* A non-retryable upstream 4xx: the request itself is wrong for the backend.
 * Pass it through in OpenAI's shape. */
static void pass_through_error(struct proxy *p)
{
    long status = p->up.status;
    json_error_t jerr;
    json_t *body = json_loadb(p->resp.ptr ? p->resp.ptr : "", p->resp.len, 0, &jerr);
    attempt_end(p, OUTCOME_NEUTRAL, (int)status, 0);
    p->served = true; /* the backend answered; the request was wrong for it */
    p->final_status = (int)status;
    set_route_headers(p);
    json_t *emsg = json_object_get(json_object_get(body, "error"), "message");
    if ((p->anth_client || p->up_dialect != SW_DIALECT_OPENAI) && json_is_string(emsg)) {
        /* Another API's error, or a client of another API: its message in
         * the client's shape. */
        sw_reply_error(p->req, (int)status, "invalid_request_error", "upstream_rejected", NULL,
                       "%s", json_string_value(emsg));
    } else if (body && !p->anth_client && json_is_object(json_object_get(body, "error"))) {
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
    int status = (int)p->up.status;
    int transport = err;
    if (p->abort_err) {
        snprintf(what, sizeof what, "%s", p->abort_msg);
        transport = p->abort_err == SW_ESTATUS ? 0 : SW_EPROTO;
        if (p->abort_err == SW_ESTATUS)
            status = 502;
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
        attempt_end(p, OUTCOME_OK, 200, 0);
        p->final_status = 200;
        sw_http_on_drained(p->req, 0, NULL, NULL);
        sw_http_stream_end(p->req);
        detach_client(p);
        proxy_free(p);
        return;
    } else {
        snprintf(what, sizeof what, "stream ended without [DONE]");
        transport = SW_EPROTO;
    }
    /* A 2xx stream that the upstream cut short (the connection closed before
     * [DONE], not an answer we failed to parse) is the backend failing: its
     * breaker counts it like a 502, so a backend that keeps dropping streams
     * is routed around. */
    if (p->chat.stream && !p->abort_err && transport == SW_EPROTO && !p->saw_done &&
        p->up.status >= 200 && p->up.status <= 299) {
        status = 502;
        transport = SW_OK;
        p->end_class = "stream_cut";
    }

    if (p->started) {
        attempt_end(p, OUTCOME_FAILED, status, transport);
        fail_stream(p, what);
    } else {
        attempt_failed(p, what, status, transport);
    }
}

/* ---- Routing: plan, queue, dispatch ---- */

/* Answers the plan's structured rejection (or, after failures, what failed). */
static void reject(struct proxy *p)
{
    const struct sw_route_plan *pl = &p->plan;
    if (p->cannot && !p->other_failure) {
        /* The backends tried could not carry the request, and no other may
         * take it: the field is what the client must change. */
        p->final_status = 400;
        p->rej_code = "untranslatable";
        sw_reply_error(p->req, 400, p->cannot->type, p->cannot->code,
                       p->cannot->param[0] ? p->cannot->param : NULL, "%s (%s)",
                       p->cannot->message, p->failures);
        sw_info("request %s: rejected untranslatable (%s)", p->id, p->cannot->code);
        detach_client(p);
        proxy_free(p);
        return;
    }
    if (p->failures[0] && (!pl->code || !strcmp(pl->code, "all_backends_failed"))) {
        fail_all(p);
        return;
    }
    long retry = pl->retry_after_s >= 0 ? pl->retry_after_s : p->retry_after_s;
    if (retry >= 0) {
        char v[24];
        snprintf(v, sizeof v, "%ld", retry);
        sw_http_add_header(p->req, "Retry-After", v);
    }
    int status = pl->status ? pl->status : 503;
    p->rej_code = pl->code ? pl->code : "all_backends_failed";
    /* None was tried: say what each backend's state is and why, so the
     * answer points at the cause (a wrong url, a server that is not up). */
    if (!p->failures[0] && !strcmp(p->rej_code, "all_backends_failed")) {
        size_t used = 0;
        for (size_t k = 0; k < p->snap.view.n && used + 1 < sizeof p->failures; k++) {
            const struct sw_route_backend_view *v = &p->snap.backends[k];
            const char *why = p->live->b[p->snap.map[k]]->last_error;
            int w = snprintf(p->failures + used, sizeof p->failures - used, "%s%s: %s%s%s%s",
                             k ? "; " : "", v->name,
                             sw_health_name(v->health),
                             v->breaker == SW_BREAKER_CLOSED ? "" : ", breaker open",
                             why[0] ? ", last error: " : "", why);
            if (w < 0)
                break;
            used += (size_t)w;
        }
        if (used >= sizeof p->failures)
            p->failures[sizeof p->failures - 1] = '\0';
    }
    p->final_status = status;
    /* What to do next: when to retry, or where to look. */
    char next[160] = "";
    if (retry >= 0)
        snprintf(next, sizeof next, " Retry in %ld s (the Retry-After header)%s.", retry,
                 !strcmp(p->rej_code, "budget_exhausted")
                     ? "; routing.spend.cap_usd in the gateway's config sets the cap" : "");
    else if (!strcmp(p->rej_code, "all_backends_failed"))
        snprintf(next, sizeof next, " GET /admin/state shows each backend's state and last_error.");
    sw_reply_error(p->req, status,
                   status == 429   ? "rate_limit_error"
                   : status < 500 ? "invalid_request_error"
                                  : "server_error",
                   pl->code ? pl->code : "all_backends_failed", NULL, "%s%s%s%s%s", pl->message,
                   p->failures[0] ? " (" : "", p->failures, p->failures[0] ? ")" : "", next);
    sw_info("request %s: rejected %s (%d)", p->id, pl->code ? pl->code : "-", status);
    detach_client(p);
    proxy_free(p);
}

/* Removes metadata.allow_cloud (Spillway's own field; OpenAI accepts only
 * string metadata values, Anthropic none of its own) before the body goes
 * upstream. */
static void strip_spillway_fields(json_t *body)
{
    json_t *md = json_object_get(body, "metadata");
    if (!json_is_object(md))
        return;
    json_object_del(md, "allow_cloud");
    if (json_object_size(md) == 0)
        json_object_del(body, "metadata");
}

/* The body for a masked attempt: a copy of the tree the request is sent
 * from (the internal OpenAI form, or the Anthropic client's own body when
 * the backend speaks Anthropic: a masked request is rebuilt in the
 * backend's own API, never through a translation), every entity replaced
 * by its placeholder (one map across attempts, so a value keeps its
 * placeholder), model set to the backend's; and a stream unmasker for the
 * answer. NULL when masking failed: then nothing is sent. */
static char *masked_body(struct proxy *p, const json_t *from, enum sw_pii_surface surface,
                         const char *model)
{
    if (!p->map)
        p->map = sw_pii_map_new();
    /* Binary parts cannot be masked: such a request never goes masked. */
    json_t *copy = p->map && !p->pii.binary_blocked ? json_deep_copy(from) : NULL;
    char *body = NULL;
    if (copy) {
        json_object_set_new(copy, "model", json_string(model));
        strip_spillway_fields(copy);
    }
    if (copy && sw_pii_mask_body(p->live->pii, p->map, surface, copy, NULL, NULL, 0) == SW_OK)
        body = json_dumps(copy, JSON_COMPACT);
    json_decref(copy);
    sw_pii_stream_free(p->pstream);
    p->pstream = NULL;
    if (body && p->chat.stream && !(p->pstream = sw_pii_stream_new(p->map))) {
        free(body);
        body = NULL;
    }
    p->masked = body != NULL;
    return body;
}

/* The body for an unmasked attempt spliced from the client's own bytes:
 * `model` replaced by the backend's, and for a stream without
 * stream_options the usage request appended. NULL when the body needs
 * edits splicing does not do (metadata, the client's own stream_options):
 * then the tree is serialised instead. */
static char *plain_body(struct proxy *p, const struct sw_config_backend *be, size_t *out_len)
{
    static const char *const keys[] = {"model", "metadata", "stream_options"};
    struct sw_jspan sp[3];
    size_t len;
    const char *text = p->req ? sw_http_body(p->req, &len) : NULL;
    /* The front's parse accepted these bytes: no need to check them again. */
    if (!text || !sw_jscan_members(text, len, keys, sp, NULL, 3) || !sp[0].len || sp[1].len ||
        (sp[2].len && p->chat.stream))
        return NULL;
    char *model = json_quote(be->model);
    if (!model)
        return NULL;
    char *body = splice_member(text, len, sp[0], "model", model, out_len);
    free(model);
    if (body && p->chat.stream) {
        /* Insert before the closing brace: the object has members (model). */
        static const char usage[] = ",\"stream_options\":{\"include_usage\":true}";
        char *close = memrchr(body, '}', *out_len);
        size_t at = close ? (size_t)(close - body) : 0;
        char *grown = close ? realloc(body, *out_len + sizeof usage) : NULL;
        if (!grown) {
            free(body);
            return NULL;
        }
        char *end = grown + at;
        memmove(end + sizeof usage - 1, end, (size_t)(grown + *out_len - end));
        memcpy(end, usage, sizeof usage - 1);
        *out_len += sizeof usage - 1;
        grown[*out_len] = '\0';
        body = grown;
    }
    return body;
}

/* ---- TTFT abandon ---- */

/* Whether the router, without the current backend, would send this request
 * somewhere now (privacy, breakers, budget and queues all still apply). */
static bool another_would_take(const struct proxy *p, int64_t now)
{
    struct sw_live_snapshot snap;
    sw_live_snapshot(p->live, p->model, now, &snap);
    struct sw_route_facts f = p->facts;
    for (size_t k = 0; k < snap.view.n; k++)
        if (snap.map[k] == p->be)
            f.exclude |= 1u << k;
    struct sw_route_plan plan;
    sw_route_decide(&f, &snap.view, &snap.policy, now, &plan);
    return plan.n > 0;
}

static void on_ttft_timer(evutil_socket_t fd, short what, void *arg);

/* Arms the TTFT budget of the attempt just sent (or the router's estimate
 * for that backend, when larger; plus the expected generation time for a
 * non-streamed request): when no first byte came within it and the
 * request's deadline leaves room after it, the attempt may be given up for
 * another backend. */
static void arm_ttft_timer(struct proxy *p, int64_t left_ms)
{
    long budget = sw_route_budget_ms(&p->facts, &p->snap.policy);
    /* A backend chosen although its own estimate exceeded the budget (a long
     * prompt's prefill, nowhere else to go) gets that estimate. */
    if (budget > 0 && p->step < p->plan.n) {
        size_t i = p->plan.attempts[p->step].backend;
        double est = p->plan.est_ttft_ms[i];
        if (est > (double)budget && est < (double)left_ms)
            budget = (long)est;
        /* A non-streamed answer's first byte comes with its last: add the
         * expected generation time (max_tokens, else the learned average
         * output, at the learned decode speed; priors without data). */
        if (!p->chat.stream) {
            const struct sw_route_backend_view *v = &p->snap.backends[i];
            double tokens = p->facts.max_tokens > 0 ? (double)p->facts.max_tokens
                            : v->avg_output_tokens > 0 ? v->avg_output_tokens
                                                       : SW_ROUTE_PRIOR_OUTPUT_TOKENS;
            double tps = v->decode_tps > 0 ? v->decode_tps : SW_ROUTE_PRIOR_DECODE_TPS;
            double gen = 1000.0 * tokens / tps;
            budget = gen < (double)left_ms ? budget + (long)gen : 0;
        }
    }
    p->ttft_abandon_ms = budget > 0 && budget < left_ms ? budget : 0;
    if (!p->ttft_abandon_ms)
        return;
    if (!p->ttft_timer)
        p->ttft_timer = evtimer_new(p->env.base, on_ttft_timer, p);
    struct timeval tv = {p->ttft_abandon_ms / 1000, (p->ttft_abandon_ms % 1000) * 1000};
    if (p->ttft_timer)
        evtimer_add(p->ttft_timer, &tv);
}

/* The attempt's TTFT budget is spent without a first byte (a hung or
 * overloaded backend): when another backend would take the request now, this
 * attempt is abandoned (the backend's breaker hears a timeout, the decision
 * log and spillway_errors_total the class ttft_abandoned) and the request
 * moves on within its one deadline. Otherwise it keeps waiting and looks
 * again one budget later. A backend that already sent its status line with
 * an error is left to finish: its answer decides. */
static void on_ttft_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct proxy *p = arg;
    int64_t now = sw_now_ms();
    if (!p->attempting || p->first_byte_ms || p->started || !p->up.running)
        return;
    if (p->up.status && (p->up.status < 200 || p->up.status > 299))
        return;
    if (now + 1 >= p->deadline_ms || !another_would_take(p, now)) {
        arm_ttft_timer(p, p->deadline_ms - now);
        return;
    }
    char what_s[96];
    snprintf(what_s, sizeof what_s, "no first byte within the TTFT budget (%ld ms)",
             p->ttft_abandon_ms);
    sw_upstream_abort(&p->up);
    p->any_timeout = true;
    p->end_class = "ttft_abandoned";
    attempt_failed(p, what_s, 0, SW_ETIMEOUT);
}

/* The current backend cannot carry this request (a field its API has no
 * form for): it is out for this request, and when no other backend takes
 * it the client gets a 400 naming the field (see reject). */
static void cannot_carry(struct proxy *p, const struct sw_request_error *why)
{
    if (!p->cannot && (p->cannot = malloc(sizeof *p->cannot)))
        *p->cannot = *why;
    /* The note goes to the log too: it names no field (the field's name is
     * the client's; the client's own 400 names it, from *why). */
    note_failure(p, "cannot carry a field of the request in its API");
    attempt_end(p, OUTCOME_NEUTRAL, 0, 0);
    exclude_and_replan(p);
}

/* The Anthropic client's own body for a backend that speaks Anthropic:
 * model replaced by the backend's, Spillway's metadata.allow_cloud removed.
 * The front scanned this very tree, so what leaves is what was scanned. */
static char *native_body(struct proxy *p, const struct sw_config_backend *be)
{
    json_t *copy = json_copy(p->chat.native);
    if (!copy)
        return NULL;
    json_object_set_new(copy, "model", json_string(be->model));
    json_t *md = json_object_get(copy, "metadata");
    if (json_is_object(md) && json_object_get(md, "allow_cloud")) {
        json_object_set_new(copy, "metadata", json_copy(md)); /* the client's stays whole */
        strip_spillway_fields(copy);
    }
    char *s = json_dumps(copy, JSON_COMPACT);
    json_decref(copy);
    return s;
}

/* The PII surface of a backend's API: what its request bodies look like. */
static enum sw_pii_surface pii_surface(const struct proxy *p, enum sw_dialect ud)
{
    if (p->chat.api == SW_API_EMBEDDINGS)
        return SW_PII_SURFACE_EMBEDDINGS;
    return ud == SW_DIALECT_ANTHROPIC ? SW_PII_SURFACE_MESSAGES : SW_PII_SURFACE_CHAT;
}

/* The last check before a body that was built (translated into another
 * API, or masked) leaves for a cloud backend: the bytes themselves are
 * scanned in that backend's API. Masked, they must hold no entity; not
 * masked, no entity the front's scan did not already allow out (it found
 * none, or the request would not be here). A body that cannot be read or
 * scanned fails too; a field outside the API's grammar (a translation need
 * not fit it) is read as text. A body spliced from the client's own bytes,
 * the Anthropic client's own tree or its OpenAI translation is exactly what
 * the front scanned and is not scanned again. */
static bool outgoing_clean(const struct proxy *p, const char *body, size_t len,
                           enum sw_pii_surface surface)
{
    json_error_t jerr;
    json_t *tree = json_loadb(body, len, 0, &jerr);
    struct sw_pii_counts c;
    bool ok = tree && sw_pii_scan_built(p->live->pii, surface, tree, &c) == SW_OK &&
              c.total == 0 && (c.binary == 0 || !p->pii.binary_blocked);
    json_decref(tree);
    return ok;
}

/* Sends the request to the current backend: it holds a slot (local) or has
 * passed the bucket and the spend reservation (cloud). */
static void dispatch(struct proxy *p)
{
    const struct sw_config_backend *be = cur_backend(p);
    int64_t now = sw_now_ms();
    int64_t left = p->deadline_ms - now;
    if (left <= 0) {
        p->any_timeout = true;
        note_failure(p, "not tried, deadline passed");
        attempt_end(p, OUTCOME_NEUTRAL, 0, 0);
        fail_all(p);
        return;
    }
    char *body = NULL;
    size_t body_len = 0;
    p->masked = false;
    enum sw_dialect ud = sw_upstream_dialect_for(be, (enum sw_dialect)p->chat.dialect);
    if (p->chat.api == SW_API_EMBEDDINGS && ud != SW_DIALECT_OPENAI) {
        /* Embeddings exist in OpenAI's API only: this backend is out for them. */
        note_failure(p, "embeddings need a backend that speaks OpenAI's API");
        attempt_end(p, OUTCOME_NEUTRAL, 0, 0);
        exclude_and_replan(p);
        return;
    }
    const struct sw_upstream_dialect *dops = sw_upstream_dialect(ud);
    p->up_dialect = ud;
    /* The request goes in the client's own API when the backend speaks it;
     * the answer is passed through as it is unless it must be unmasked
     * (then it is read in the internal form, as a translated one is). */
    bool native_req = p->chat.dialect != SW_DIALECT_OPENAI && (int)ud == p->chat.dialect;
    p->native = native_req && !p->need_mask;
    if (!native_req && p->chat.untranslatable) {
        cannot_carry(p, p->chat.untranslatable);
        return;
    }
    /* Under a spend cap a cloud attempt without max_tokens is reserved at
     * the backend's max_output_tokens: that limit goes upstream too, so the
     * answer cannot cost more than was reserved. */
    bool limit = !p->facts.max_tokens_given && be->tier == SW_TIER_CLOUD &&
                 be->max_output_tokens > 0 && sw_live_spend_cap_usd(p->live) > 0;
    if (limit)
        json_object_set_new(p->chat.body, "max_completion_tokens",
                            json_integer(be->max_output_tokens));
    else if (!p->facts.max_tokens_given)
        json_object_del(p->chat.body, "max_completion_tokens");
    bool built = false; /* not the client's scanned bytes or tree as they are */
    if (p->need_mask) {
        /* the tree in its own API: the client's Anthropic body, or the
         * internal (OpenAI) one, chat or embeddings */
        body = native_req ? masked_body(p, p->chat.native, SW_PII_SURFACE_MESSAGES, be->model)
                          : masked_body(p, p->chat.body, pii_surface(p, SW_DIALECT_OPENAI), be->model);
        if (!body) {
            /* Never sent unmasked: this backend is out for this request. */
            note_failure(p, p->pii.binary_blocked
                                ? "masking failed: content parts that cannot be scanned"
                                : "masking failed");
            attempt_end(p, OUTCOME_NEUTRAL, 0, 0);
            exclude_and_replan(p);
            return;
        }
        built = true;
    } else if (native_req) {
        body = native_body(p, be);
    } else if (!limit && !p->anth_client && ud == SW_DIALECT_OPENAI) {
        body = plain_body(p, be, &body_len);
    }
    json_t *tree = NULL; /* the internal (OpenAI) body, for a backend of another API */
    if (!body && !p->need_mask && !native_req) {
        /* the internal body as the front scanned it (for an Anthropic client,
         * its translation, which the front scanned too) */
        json_object_set_new(p->chat.body, "model", json_string(be->model));
        if (dops->request_body)
            tree = json_incref(p->chat.body);
        else
            body = json_dumps(p->chat.body, JSON_COMPACT);
    } else if (body && !native_req && dops->request_body) {
        json_error_t jerr;
        tree = json_loadb(body, body_len ? body_len : strlen(body), 0, &jerr);
        free(body);
        body = NULL;
        body_len = 0;
    }
    if (tree) {
        /* The internal body in the backend's API. */
        struct sw_request_error rerr;
        body = dops->request_body(tree, p->cfg->routing.default_max_tokens, &rerr);
        json_decref(tree);
        if (!body && rerr.status == 400) {
            cannot_carry(p, &rerr);
            return;
        }
        built = true;
    }
    if (!body) {
        attempt_failed(p, "out of memory", 0, SW_ENOMEM);
        return;
    }
    if (!body_len)
        body_len = strlen(body);
    if (built && be->tier == SW_TIER_CLOUD && p->pii.policy != SW_PII_POLICY_OFF &&
        (!p->live->pii || !outgoing_clean(p, body, body_len, pii_surface(p, ud)))) {
        /* Never sent: the bytes that would leave hold what may not. */
        free(body);
        p->facts.sensitive = true;
        note_failure(p, p->masked ? "masked body still holds personal data or secrets"
                                  : "outgoing body holds personal data or secrets");
        attempt_end(p, OUTCOME_NEUTRAL, 0, 0);
        exclude_and_replan(p);
        return;
    }
    if (p->anth_client && !p->started)
        sw_oai_to_anth_init(&p->o2a, p->id, p->public_model, p->chat.prompt_tokens_est);
    if (ud == SW_DIALECT_ANTHROPIC) { /* only an Anthropic upstream's stream is translated */
        sw_anth_to_oai_init(&p->a2o, p->public_model, (long long)sw_wall_s());
        /* an OpenAI client's response_format went as the forced format tool */
        p->a2o.format_tool = p->schema && !p->contract_tool;
    } else {
        p->a2o.error_type[0] = '\0'; /* read when a stream to an Anthropic client fails */
    }
    struct sw_upstream_client_hdrs ch = {NULL, NULL};
    if (p->anth_client && p->req) {
        ch.anthropic_version = sw_http_header(p->req, "anthropic-version", NULL);
        ch.anthropic_beta = sw_http_header(p->req, "anthropic-beta", NULL);
    }
    struct sw_buf hdrs;
    sw_buf_init(&hdrs, 64 * 1024);
    if (dops->headers(be, ud == (enum sw_dialect)p->chat.dialect ? &ch : NULL, &hdrs)) {
        sw_buf_free(&hdrs);
        free(body);
        attempt_failed(p, "out of memory", 0, SW_ENOMEM);
        return;
    }
    p->attempt_ms = now;
    sw_claim_mark_sent(&p->claim);
    p->first_byte_ms = p->last_byte_ms = 0;
    p->usage_in = p->usage_out = p->chunks = 0;
    p->anth_preamble = p->chat.stream && ud == SW_DIALECT_ANTHROPIC;
    sw_buf_free(&p->contract_text);
    sw_buf_init(&p->contract_text, (size_t)p->cfg->limits.max_response_bytes);
    p->contract_overflow = false;
    p->contract_block = -1;
    p->contract_called = false;
    p->up_error_type[0] = '\0';
    sw_buf_init(&p->resp, p->chat.stream ? ERROR_BODY_MAX : (size_t)p->cfg->limits.max_response_bytes);
    sw_sse_init(&p->sse, SSE_EVENT_MAX, on_sse_event, p);
    static const struct sw_upstream_cbs cbs = {on_data, on_done};
    const char *path = p->chat.api == SW_API_EMBEDDINGS ? "/v1/embeddings" : dops->chat_path;
    int err = sw_upstream_start(&p->up, p->env.cev, be, path, hdrs.ptr, body,
                                body_len, (long)left, p->id, &cbs, p);
    sw_buf_free(&hdrs);
    if (err) {
        attempt_failed(p, sw_err_str(err), 0, err);
        return;
    }
    arm_ttft_timer(p, left);
}

static void on_queue_check(evutil_socket_t fd, short what, void *arg);

/* What the replicas' shared state said about the attempt that holds its
 * local claim: send, wait for a replica-wide slot, or decide again. */
static void on_gate(struct sw_store_hold *h, enum sw_store_verdict v)
{
    struct proxy *p = (struct proxy *)((char *)h - offsetof(struct proxy, rh));
    switch (v) {
    case SW_STORE_OK:
        p->lease_wait = false;
        dispatch(p);
        return;
    case SW_STORE_NO_SLOT:
        /* every replica's slots are busy: wait (the queue check asks again,
         * and moves the request to the cloud when the wait breaks its budget) */
        p->lease_wait = true;
        if (!p->queue_timer)
            p->queue_timer = evtimer_new(p->env.base, on_queue_check, p);
        if (p->queue_timer) {
            struct timeval tv = {0, QUEUE_CHECK_US};
            evtimer_add(p->queue_timer, &tv);
        }
        return;
    case SW_STORE_SPEND_FULL:
        note_failure(p, sw_store_degraded(&p->live->g->store)
                            ? "no shared spend counter (fails closed)"
                            : "spend cap reached (shared by the replicas)");
        attempt_end(p, OUTCOME_NEUTRAL, 0, 0);
        if (!p->spend_refused) {
            /* decide again on the spend the refusal reported: the cap's
             * policy (shed, degrade, keep_local) applies as on one gateway */
            p->spend_refused = true;
            plan_next(p);
        } else {
            exclude_and_replan(p);
        }
        return;
    case SW_STORE_PROBE_TAKEN:
        note_failure(p, "breaker half-open, its probe out on another replica");
        break;
    case SW_STORE_RATE_LIMITED:
        note_failure(p, "provider rate limit reached across the replicas (skipped)");
        break;
    }
    attempt_end(p, OUTCOME_NEUTRAL, 0, 0);
    exclude_and_replan(p);
}

/* The local claim is held: asks the shared state (state.redis) for the rest
 * (spend reservation, replica-wide slot lease, the half-open probe). */
static void gate(struct proxy *p)
{
    const struct sw_config_backend *be = cur_backend(p);
    double est = 0;
    if (be->tier == SW_TIER_CLOUD && sw_live_spend_cap_usd(p->live) > 0) {
        /* The shared reservation bounds the cap across replicas, so it must
         * not fall short of the bill: the prompt's upper bound, and without
         * max_tokens the max_output_tokens sent upstream (as the local
         * claim reserves). */
        long out = p->facts.max_tokens;
        if (!p->facts.max_tokens_given && be->max_output_tokens > 0)
            out = be->max_output_tokens;
        est = sw_spend_cost_usd(sw_route_spend_prompt_tokens(&p->facts), out,
                                be->input_usd_per_mtok, be->output_usd_per_mtok);
    }
    long tokens = be->tier == SW_TIER_CLOUD && (be->rpm || be->tpm)
                      ? p->facts.prompt_tokens_est + p->facts.max_tokens
                      : 0;
    p->rh.cb = on_gate;
    int v = sw_store_admit(&p->live->g->store, p->live, &p->rh, p->be, est, p->claim.probe,
                           tokens);
    if (v >= 0)
        on_gate(&p->rh, (enum sw_store_verdict)v);
}

static void on_slot_granted(struct sw_claim *c)
{
    struct proxy *p = (struct proxy *)((char *)c - offsetof(struct proxy, claim));
    if (p->queue_timer)
        evtimer_del(p->queue_timer);
    gate(p);
}

/* Whether, without local backend k, the router would send this request to a
 * cloud now (not reject it: the spend cap, privacy or breakers may say no);
 * if so, *est_ms is its estimated first token there. */
static bool cloud_would_take(const struct proxy *p, const struct sw_live_snapshot *snap,
                             size_t k, int64_t now, double *est_ms)
{
    struct sw_route_facts f = p->facts;
    f.exclude |= 1u << k;
    struct sw_route_plan plan;
    sw_route_decide(&f, &snap->view, &snap->policy, now, &plan);
    if (plan.n == 0 || snap->backends[plan.attempts[0].backend].tier != SW_TIER_CLOUD)
        return false;
    *est_ms = plan.est_ttft_ms[plan.attempts[0].backend];
    return true;
}

/* The local estimate with every running request at its bound. */
static double bound_est(const struct sw_route_backend_view *v, const struct sw_route_facts *f)
{
    struct sw_route_backend_view b = *v;
    b.first_release_ms = 0;
    return sw_route_est_ttft_ms(&b, f->prompt_tokens_est);
}

/* A request waiting for a local slot: past its deadline it fails (504); when
 * it may leave and its estimated start now breaks the TTFT budget, or the
 * slot has not come by the last check at which the cloud still makes the
 * budget (sw_route_leave_queue), it moves to the cloud before it ever started
 * locally (reason overflow). */
static void on_queue_check(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct proxy *p = arg;
    int64_t now = sw_now_ms();
    if (now >= p->deadline_ms) {
        p->any_timeout = true;
        note_failure(p, "waited in the local queue until the deadline");
        attempt_end(p, OUTCOME_NEUTRAL, 0, 0);
        fail_all(p);
        return;
    }
    if (p->facts.allows_cloud && (!p->facts.sensitive || p->facts.n_regions > 0)) {
        struct sw_live_snapshot snap;
        sw_live_snapshot(p->live, p->model, now, &snap);
        for (size_t k = 0; k < snap.view.n; k++) {
            if (snap.map[k] != p->be)
                continue;
            struct sw_route_backend_view v = snap.backends[k];
            v.queued = sw_claim_queue_position(p->live, &p->claim);
            double est = (double)(now - p->start_ms) +
                         sw_route_est_ttft_ms(&v, p->facts.prompt_tokens_est);
            long budget = sw_route_budget_ms(&p->facts, &snap.policy);
            /* budget 0: none (a batch request without a batch budget waits
             * for its deadline) */
            double elapsed = (double)(now - p->start_ms), cloud_est = 0;
            if (budget > 0 && cloud_would_take(p, &snap, k, now, &cloud_est) &&
                sw_route_leave_queue(elapsed, est - elapsed, bound_est(&v, &p->facts),
                                     cloud_est, budget, QUEUE_CHECK_US / 1000.0)) {
                sw_info("request %s: estimated first token on %s at %.0f ms, on the cloud at "
                        "%.0f ms, budget %ld ms: leaving the local queue", p->id,
                        cur_backend(p)->name, est, elapsed + cloud_est, budget);
                attempt_end(p, OUTCOME_NEUTRAL, 0, 0);
                p->overflowed = true;
                p->left_queue |= 1u << k;
                exclude_and_replan(p);
                return;
            }
        }
    }
    if (p->lease_wait) {
        if (!p->rh.op)
            gate(p); /* ask for a replica-wide slot again */
        else {
            struct timeval again = {0, QUEUE_CHECK_US};
            evtimer_add(p->queue_timer, &again);
        }
        return;
    }
    struct timeval tv = {0, QUEUE_CHECK_US};
    evtimer_add(p->queue_timer, &tv);
}

/* Claims what the plan's current attempt needs, then dispatches, queues, or
 * (when a claim fails) decides again without that backend. */
static void try_attempt(struct proxy *p)
{
    const struct sw_route_attempt *a = &p->plan.attempts[p->step];
    p->be = p->snap.map[a->backend];
    p->reason = p->overflowed && a->reason == SW_REASON_FALLBACK ? SW_REASON_OVERFLOW : a->reason;
    struct sw_live *live = p->live;
    const struct sw_config_backend *be = cur_backend(p);
    int64_t now = sw_now_ms();
    p->need_mask = be->tier == SW_TIER_CLOUD &&
                   (a->masked || (p->pii.policy == SW_PII_POLICY_MASK && p->pii.counts.total > 0));
    if (p->need_mask && !live->pii) {
        note_failure(p, "needs masking, which is not available");
        exclude_and_replan(p);
        return;
    }
    p->claim.on_grant = on_slot_granted;
    p->claim.allow_panic = a->panic;
    enum sw_claim_result r = sw_claim_take(live, p->be, &p->facts, now, &p->claim);
    if (r == SW_CLAIM_BREAKER_OPEN) {
        note_failure(p, "breaker open");
        exclude_and_replan(p);
        return;
    }
    p->attempting = true;
    p->attempt_ms = 0; /* set by dispatch: the request went out */
    p->first_byte_ms = p->last_byte_ms = 0;
    if (r == SW_CLAIM_GRANTED) {
        gate(p);
        return;
    }
    if (r == SW_CLAIM_QUEUED) {
        if (!p->queue_timer)
            p->queue_timer = evtimer_new(p->env.base, on_queue_check, p);
        struct timeval tv = {0, QUEUE_CHECK_US};
        if (p->queue_timer)
            evtimer_add(p->queue_timer, &tv);
        return;
    }
    note_failure(p, r == SW_CLAIM_RATE_LIMITED ? "provider rate limit reached (skipped)"
                    : r == SW_CLAIM_SPEND_FULL ? "spend reservations full (fails closed)"
                                               : "local queue full");
    /* Skipped: logged as an attempt, nothing held. */
    attempt_end(p, OUTCOME_NEUTRAL, 0, 0);
    exclude_and_replan(p);
}

static void plan_next(struct proxy *p)
{
    int64_t now = sw_now_ms();
    sw_live_snapshot(p->live, p->model, now, &p->snap);
    sw_route_decide(&p->facts, &p->snap.view, &p->snap.policy, now, &p->plan);
    if (p->plan.n == 0) {
        reject(p);
        return;
    }
    p->step = 0;
    try_attempt(p);
}

/* Streams ask the upstream for usage (spend, buckets and learned rates need
 * it); the usage-only chunk is dropped again if the client did not ask. */
static void ask_for_usage(struct proxy *p)
{
    if (!p->chat.stream)
        return;
    /* An Anthropic client always gets usage (in message_delta). */
    p->client_wants_usage = p->chat.include_usage || p->anth_client;
    json_t *so = json_object_get(p->chat.body, "stream_options");
    if (!json_is_object(so)) {
        so = json_object();
        json_object_set_new(p->chat.body, "stream_options", so);
    }
    json_object_set_new(so, "include_usage", json_true());
}

void sw_relay_start(const struct sw_relay_request *r)
{
    const struct sw_relay_env *env = r->env;
    struct sw_http_req *req = r->req;
    struct sw_chat_request *chat = r->chat;
    const struct sw_facts *facts = r->facts;
    struct proxy *p = proxy_get();
    if (p)
        memset(p, 0, offsetof(struct proxy, snap));
    char *public_model = chat->model ? strdup(chat->model) : NULL;
    /* the client's stream of events, for a streamed answer only */
    struct evbuffer *out = chat->stream ? evbuffer_new() : NULL;
    if (!p || !public_model || (chat->stream && !out)) {
        sw_reply_error(req, 500, "server_error", NULL, NULL, "Out of memory.");
        if (p)
            proxy_put(p);
        free(public_model);
        if (out)
            evbuffer_free(out);
        sw_request_free(chat);
        if (env->on_finish)
            env->on_finish(env->ud);
        return;
    }
    p->env = *env;
    p->live = sw_live_ref(env->live);
    p->req = req;
    p->cfg = sw_config_ref(r->cfg);
    p->chat = *chat;
    memset(chat, 0, sizeof *chat);
    p->public_model = public_model;
    p->public_model_json = json_quote(public_model);
    p->model = r->model;
    p->facts = facts->route;
    p->pii = facts->pii;
    p->key_name = r->key_name;
    p->ttft_ms = -1;
    p->start_ms = facts->start_ms;
    p->deadline_ms = facts->route.deadline_ms;
    p->out = out;
    p->retry_after_s = -1;
    size_t id_len = strnlen(r->request_id, sizeof p->id - 1);
    memcpy(p->id, r->request_id, id_len);
    p->id[id_len] = '\0';
    p->anth_client = p->chat.dialect == SW_DIALECT_ANTHROPIC;
    sw_buf_init(&p->aout, SSE_EVENT_MAX * 4);
    sw_buf_init(&p->resp, ERROR_BODY_MAX);
    sw_sse_init(&p->sse, SSE_EVENT_MAX, on_sse_event, p);
    if (p->chat.api == SW_API_CHAT) {
        p->schema = sw_contract_schema(p->chat.body);
        if (!p->schema && p->anth_client)
            p->schema = sw_contract_tool_schema(p->chat.body, &p->contract_tool);
    }
    strip_spillway_fields(p->chat.body);
    ask_for_usage(p);
    sw_http_on_gone(req, on_client_gone, p);
    plan_next(p);
}
