/* The attempt loop: plan, claim, gate, dispatch, settle, replan, reject,
 * free. What shapes a request and its answer runs as stages (stage.h); only
 * this file ends a request. docs/internals/relay.md describes both. */
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
#include "common/log.h"
#include "common/spares.h"
#include "relay/account.h"
#include "relay/body.h"
#include "relay/errors.h"
#include "relay/feed.h"
#include "relay/stages.h"
#include "relay/tenancy.h"
#include "relay/proxy.h"
#include "relay/trace.h"
#include "relay/reply.h"
#include "relay/wait.h"
#include "request/prefix.h"
#include "route/route.h"
#include "state/claim.h"
#include "state/live.h"
#include "state/store.h"
#include "state/tenant.h"
#include "upstream/dialect.h"
#include "upstream/upstream.h"

/* Largest error body kept from a failed attempt. */
#define ERROR_BODY_MAX (64 * 1024)
/* How often a request waiting in a local queue re-checks its estimate. */
#define QUEUE_CHECK_US 25000

/* A proxy is zeroed up to its scratch, which is its last member. */
_Static_assert(offsetof(struct proxy, x) + sizeof(struct proxy_scratch) == sizeof(struct proxy),
               "struct proxy: the scratch must be the last member");

static void plan_next(struct proxy *p);
static void attempt_end(struct proxy *p, enum sw_relay_outcome o, int http_status,
                        int transport_err);

/* ---- Lifetime ---- */

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

/* Planning views, kept like the proxies. */
static struct sw_spares spare_snaps;

void sw_relay_snap_release(struct proxy *p)
{
    sw_spares_put(&spare_snaps, p->snap);
    p->snap = NULL;
}

static void proxy_free(struct proxy *p)
{
    sw_upstream_cleanup(&p->up); /* abort first: the backend frees its slot at once */
    attempt_end(p, SW_OUTCOME_NEUTRAL, 0, 0);
    sw_relay_snap_release(p);
    sw_tenant_cancel(p->live->g->tenant, &p->tw);
    if (p->tw.held)
        sw_tenant_settle(p->live->g->tenant, &p->tw, 0, sw_wall_ms());
    sw_relay_record(p);
    if (p->queue_timer)
        event_free(p->queue_timer);
    if (p->ttft_timer)
        event_free(p->ttft_timer);
    if (p->req) /* not answered (out of memory on the way): the client is told nothing more */
        sw_http_on_gone(p->req, NULL, NULL);
    sw_stage_io_clear(&p->a.io);
    sw_buf_free(&p->resp);
    free(p->cannot);
    free(p->failures);
    sw_sse_free(&p->sse);
    sw_evs_free(&p->evs);
    sw_buf_free(&p->evs_data);
    if (p->out)
        evbuffer_free(p->out);
    sw_request_free(&p->chat);
    sw_pii_stage_free(&p->pii_st);
    sw_contract_stage_free(&p->contract);
    sw_dialect_stage_free(&p->dialect);
    sw_auth_stage_free(&p->auth);
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

/* ---- Settling an attempt ---- */

/* Ends the current attempt: its timers stop, and it is logged and settled
 * (sw_relay_settle). Idempotent. */
static void attempt_end(struct proxy *p, enum sw_relay_outcome o, int http_status,
                        int transport_err)
{
    struct sw_relay_attempt *a = &p->a;
    if (!a->attempting)
        return;
    a->attempting = false;
    if (p->queue_timer)
        evtimer_del(p->queue_timer);
    if (p->ttft_timer)
        evtimer_del(p->ttft_timer);
    sw_relay_settle(p, o, http_status, transport_err);
}

/* ---- Ending the request ---- */

static void fail_all(struct proxy *p)
{
    sw_relay_reply_failed(p);
    detach_client(p);
    proxy_free(p);
}

/* Ends a stream that already started with an error event in the client's
 * API: a failure after the first byte is never a silent truncation. */
static void fail_stream(struct proxy *p, const char *msg)
{
    struct evbuffer *b = evbuffer_new();
    if (b) {
        sw_dialect_stage_error(&p->dialect, true, "upstream_stream_failed", msg, b);
        sw_http_stream_write(p->req, b);
        evbuffer_free(b);
    }
    sw_http_on_drained(p->req, 0, NULL, NULL);
    sw_http_stream_end(p->req);
    p->served = true;
    p->final_status = 200;
    sw_warn("request %s: stream from %s failed after the first byte: %s", p->id,
            sw_relay_backend(p)->name, msg);
    detach_client(p);
    proxy_free(p);
}

char *sw_relay_failures_buf(struct proxy *p)
{
    if (!p->failures)
        p->failures = calloc(1, SW_RELAY_FAILURES_MAX);
    return p->failures;
}

static void note_failure(struct proxy *p, const char *what)
{
    char *f = sw_relay_failures_buf(p);
    if (!f)
        return;
    size_t used = strlen(f);
    snprintf(f + used, SW_RELAY_FAILURES_MAX - used, "%s%s: %s", used ? "; " : "",
             sw_relay_backend(p)->name, what);
}

/* The current backend (or its whole tier) is out for this request: exclude
 * it and decide again with fresh state (breakers, queues, buckets may have
 * moved meanwhile). */
static void exclude_and_replan(struct proxy *p, bool whole_tier)
{
    enum sw_tier tier = sw_relay_backend(p)->tier;
    if (!p->snap) { /* released with the first byte: no attempt may follow it */
        fail_stream(p, "the stream failed after its first byte");
        return;
    }
    for (size_t k = 0; k < p->snap->view.n; k++)
        if (whole_tier ? p->cfg->backends[p->snap->map[k]].tier == tier
                       : p->snap->map[k] == p->a.be)
            p->facts.exclude |= 1u << k;
    plan_next(p);
}

/* An attempt that ends without being sent (or without its backend failing):
 * noted, logged as skipped, and the request decided again without it. */
static void skip(struct proxy *p, const char *what)
{
    note_failure(p, what);
    attempt_end(p, SW_OUTCOME_NEUTRAL, 0, 0);
    exclude_and_replan(p, false);
}

/* Records why the current attempt failed and moves on to the next backend. */
static void attempt_failed(struct proxy *p, const char *what, int http_status, int transport_err)
{
    sw_relay_trace_event(p, "failover", sw_relay_backend(p)->name,
                         p->a.end_class ? p->a.end_class
                         : transport_err ? sw_err_str(transport_err)
                                         : "status",
                         -1);
    p->other_failure = true;
    note_failure(p, what);
    sw_warn("request %s: attempt on %s failed: %s", p->id, sw_relay_backend(p)->name, what);
    if (p->up.retry_after_s >= 0 &&
        (p->retry_after_s < 0 || p->up.retry_after_s < p->retry_after_s))
        p->retry_after_s = p->up.retry_after_s;
    attempt_end(p, SW_OUTCOME_FAILED, http_status, transport_err);
    sw_upstream_cleanup(&p->up);
    sw_buf_free(&p->resp);
    sw_sse_free(&p->sse);
    sw_evs_free(&p->evs);
    if (!p->started && p->out) /* what a failed attempt's preamble made is not sent */
        evbuffer_drain(p->out, evbuffer_get_length(p->out));
    /* A local queue left for an attempt that failed is no failure of that
     * local: it may take the request again (once), within the deadline. */
    p->facts.exclude &= ~p->left_queue;
    p->left_queue = 0;
    exclude_and_replan(p, false);
}

/* A stage failed the attempt before the first byte (sw_stage_action). */
static void stage_failed(struct proxy *p, const struct sw_stage_verdict *v)
{
    if (v->whole_tier) {
        /* the backend answered and did not fail: the other tier is asked */
        note_failure(p, v->msg);
        p->a.end_class = v->end_class;
        sw_relay_trace_event(p, "failover", sw_relay_backend(p)->name,
                             v->end_class ? v->end_class : "stage", -1);
        attempt_end(p, SW_OUTCOME_NEUTRAL, v->status, 0);
        sw_upstream_cleanup(&p->up);
        sw_buf_free(&p->resp);
        sw_info("request %s: asking the other tier after a %s", p->id,
                v->end_class ? v->end_class : v->msg);
        exclude_and_replan(p, true);
        return;
    }
    attempt_failed(p, v->msg, v->status, v->err);
}

/* A stage refused the answer before the first byte: a backend answered,
 * Spillway refuses it (its backend, tokens and cost are logged). */
static void refuse(struct proxy *p, const struct sw_stage_verdict *v)
{
    p->a.end_class = v->end_class;
    attempt_end(p, SW_OUTCOME_NEUTRAL, (int)p->up.status, 0);
    p->served = true;
    p->refused_code = v->code;
    p->tok_in = p->a.usage.in ? p->a.usage.in : p->chat.prompt_tokens_est;
    p->tok_out = p->a.usage.out ? p->a.usage.out : p->a.usage.chunks;
    p->final_status = v->reply_status;
    sw_relay_route_headers(p);
    sw_reply_error(p->req, v->reply_status,
                   v->reply_status >= 500 ? "server_error" : "invalid_request_error", v->code,
                   v->param, "%s", v->msg);
    detach_client(p);
    proxy_free(p);
}

/* 408, 409, 425, 429 and 5xx are the backend's trouble: try the next one.
 * Other 4xx are the request's: pass them through. */
static bool status_retryable(long status)
{
    return status == 408 || status == 409 || status == 425 || status == 429 || status >= 500;
}

/* What the answer hooks decided: serve, refuse or fail over. */
static void act_answer(struct proxy *p, enum sw_stage_rc rc)
{
    struct sw_stage_io *io = &p->a.io;
    switch (sw_stage_action(rc, p->started)) {
    case SW_ACT_GO_ON:
        attempt_end(p, SW_OUTCOME_OK, 200, 0);
        p->final_status = 200;
        sw_relay_route_headers(p);
        sw_reply_json(p->req, 200, io->reply, io->reply_len);
        detach_client(p);
        proxy_free(p);
        return;
    case SW_ACT_WAIT:
        return;
    case SW_ACT_ANSWER_ERROR:
        refuse(p, &io->verdict);
        return;
    case SW_ACT_NEXT_BACKEND:
    case SW_ACT_END_STREAM: /* a whole answer has no stream */
        stage_failed(p, &io->verdict);
        return;
    }
}

/* A whole answer arrived: through the answer hooks to the client. */
static void on_answer(struct proxy *p)
{
    struct sw_stage_io *io = &p->a.io;
    io->answer_text = &p->resp;
    io->up_status = (int)p->up.status;
    io->created = (long long)sw_wall_s();
    io->started = p->started;
    act_answer(p, sw_stage_run(p->a.stages, p->a.n_stages, SW_STAGE_ANSWER, io));
}

/* A non-retryable upstream 4xx: the request itself is wrong for the backend.
 * Passed through in the client's shape. */
static void pass_through_error(struct proxy *p)
{
    attempt_end(p, SW_OUTCOME_NEUTRAL, (int)p->up.status, 0);
    p->served = true; /* the backend answered; the request was wrong for it */
    sw_relay_reply_upstream_error(p);
    detach_client(p);
    proxy_free(p);
}

static void on_done(void *ud, int err)
{
    struct proxy *p = ud;
    struct sw_relay_attempt *a = &p->a;
    char what[200];
    int status = (int)p->up.status;
    int transport = err;
    if (p->chat.stream && a->saw_done) {
        /* The client has the whole answer and its end: a failure after it
         * (the connection closed before the response's last chunk, bytes
         * after [DONE]) takes nothing from it and writes nothing after it. */
        if (err || a->abort_err || sw_sse_pending(&p->sse) || sw_evs_pending(&p->evs))
            sw_warn("request %s: %s after the end of the stream from %s (the answer was "
                    "complete)", p->id, err ? sw_err_str(err) : "bytes",
                    sw_relay_backend(p)->name);
        attempt_end(p, SW_OUTCOME_OK, 200, 0);
        p->final_status = 200;
        sw_http_on_drained(p->req, 0, NULL, NULL);
        sw_http_stream_end(p->req);
        detach_client(p);
        proxy_free(p);
        return;
    }
    if (a->abort_err) {
        snprintf(what, sizeof what, "%s", a->abort_msg);
        transport = a->abort_err == SW_ESTATUS ? 0 : SW_EPROTO;
        if (a->abort_err == SW_ESTATUS)
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
        on_answer(p);
        return;
    } else {
        snprintf(what, sizeof what, "stream ended without [DONE]");
        transport = SW_EPROTO;
    }
    /* A 2xx stream that the upstream cut short (the connection closed before
     * [DONE], not an answer we failed to parse) is the backend failing: its
     * breaker counts it like a 502, so a backend that keeps dropping streams
     * is routed around. */
    if (p->chat.stream && !a->abort_err && transport == SW_EPROTO &&
        p->up.status >= 200 && p->up.status <= 299) {
        status = 502;
        transport = SW_OK;
        a->end_class = "stream_cut";
    }
    if (sw_stage_action(SW_STAGE_FAILOVER, p->started) == SW_ACT_END_STREAM) {
        attempt_end(p, SW_OUTCOME_FAILED, status, transport);
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
    if (p->cannot && !p->other_failure)
        sw_relay_reply_untranslatable(p);
    else if (sw_relay_failures(p)[0] && (!pl->code || !strcmp(pl->code, "all_backends_failed")))
        sw_relay_reply_failed(p);
    else
        sw_relay_reply_rejected(p);
    detach_client(p);
    proxy_free(p);
}

/* ---- TTFT abandon ---- */

static void on_ttft_timer(evutil_socket_t fd, short what, void *arg);

/* Arms the TTFT budget of the attempt just sent (sw_relay_ttft_budget_ms). */
static void arm_ttft_timer(struct proxy *p, int64_t left_ms)
{
    p->a.ttft_abandon_ms = sw_relay_ttft_budget_ms(&p->facts, p->snap, &p->plan, p->chat.stream,
                                                   left_ms);
    if (!p->a.ttft_abandon_ms)
        return;
    if (!p->ttft_timer)
        p->ttft_timer = evtimer_new(p->env.base, on_ttft_timer, p);
    struct timeval tv = {p->a.ttft_abandon_ms / 1000, (p->a.ttft_abandon_ms % 1000) * 1000};
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
    if (!p->a.attempting || p->a.first_byte_ms || p->started || !p->up.running)
        return;
    if (p->up.status && (p->up.status < 200 || p->up.status > 299))
        return;
    if (now + 1 >= p->deadline_ms ||
        !sw_relay_another_would_take(p->live, p->model, &p->facts, &p->prefix, p->a.be, now)) {
        arm_ttft_timer(p, p->deadline_ms - now);
        return;
    }
    char what_s[96];
    snprintf(what_s, sizeof what_s, "no first byte within the TTFT budget (%ld ms)",
             p->a.ttft_abandon_ms);
    sw_upstream_abort(&p->up);
    p->any_timeout = true;
    p->a.end_class = "ttft_abandoned";
    sw_relay_trace_event(p, "ttft_abandon", sw_relay_backend(p)->name, "ttft_abandoned",
                         p->a.ttft_abandon_ms);
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
    skip(p, "cannot carry a field of the request in its API");
}

/* ---- Dispatch ---- */

static void send_attempt(struct proxy *p);

/* What the request hooks decided: send, wait, or put the backend out. */
static void act_request(struct proxy *p, enum sw_stage_rc rc)
{
    const struct sw_stage_verdict *v = &p->a.io.verdict;
    if (rc == SW_STAGE_OK) {
        send_attempt(p);
    } else if (rc == SW_STAGE_PENDING) {
        return;
    } else if (v->cannot) {
        cannot_carry(p, v->cannot);
    } else if (v->before_send) {
        if (v->sensitive)
            p->facts.sensitive = true;
        skip(p, v->msg);
    } else {
        p->a.end_class = v->end_class; /* its class in the log and spillway_errors_total */
        attempt_failed(p, v->msg, v->status, v->err);
    }
}

/* A request hook that answered SW_STAGE_PENDING finished. */
static void on_request_resumed(struct sw_stage_io *io, enum sw_stage_rc rc)
{
    struct proxy *p = io->ud;
    act_request(p, sw_stage_resume(p->a.stages, p->a.n_stages, SW_STAGE_REQUEST, io, rc));
}

/* Builds the attempt's body through the stages' request hooks; the current
 * backend holds a slot (local) or has passed the bucket and the spend
 * reservation (cloud). */
static void dispatch(struct proxy *p)
{
    struct sw_relay_attempt *a = &p->a;
    const struct sw_config_backend *be = sw_relay_backend(p);
    a->attempt_ms = sw_now_ms();
    if (p->deadline_ms - a->attempt_ms <= 0) {
        p->any_timeout = true;
        note_failure(p, "not tried, deadline passed");
        attempt_end(p, SW_OUTCOME_NEUTRAL, 0, 0);
        fail_all(p);
        return;
    }
    enum sw_dialect ud = sw_upstream_dialect_for(be, p->client_dialect);
    if (p->chat.api == SW_API_EMBEDDINGS && !sw_upstream_dialect(ud)->embeddings) {
        /* Embeddings exist in OpenAI's API only: this backend is out for them. */
        skip(p, "embeddings need a backend that speaks OpenAI's API");
        return;
    }
    a->up_dialect = ud;
    /* The request goes in the client's own API when the backend speaks it;
     * the answer is passed through as it is unless it must be unmasked and
     * the unmasker has no form for that API (then it is read in the internal
     * form, as a translated one is). Anthropic's is unmasked in its own
     * shape, so its thinking blocks reach the client. */
    bool own_api = p->client_dialect != SW_DIALECT_OPENAI && ud == p->client_dialect;
    /* A contract on response_format judges the text in the internal form. */
    a->native = own_api &&
                (!a->need_mask || sw_upstream_dialect(p->client_dialect)->native_unmask) &&
                !(p->contract.schema && !p->contract.tool);
    if (!own_api && p->chat.untranslatable && !sw_relay_drop_fields(p)) {
        cannot_carry(p, p->chat.untranslatable);
        return;
    }
    bool limit = sw_relay_body_limit(p, be);
    sw_relay_stages_pick(p, own_api);
    sw_dialect_stage_attempt(&p->dialect, sw_upstream_dialect(ud), a->native, own_api,
                             sw_relay_format_tool(p), p->started,
                             (long long)sw_wall_s());
    struct sw_stage_io *io = &a->io;
    io->usage = &a->usage;
    io->out = p->out;
    io->resume = on_request_resumed;
    io->ud = p;
    if (sw_relay_body(p, be, own_api, limit, io) ||
        (a->stages[1].ops != &sw_splice_ops && !(io->chunks = json_array()))) {
        attempt_failed(p, "out of memory", 0, SW_ENOMEM);
        return;
    }
    act_request(p, sw_stage_run(a->stages, a->n_stages, SW_STAGE_REQUEST, io));
}

/* Sends the body the request hooks built, serialised once. */
static void send_attempt(struct proxy *p)
{
    struct sw_relay_attempt *a = &p->a;
    struct sw_stage_io *io = &a->io;
    const struct sw_config_backend *be = sw_relay_backend(p);
    if (sw_relay_body_text(io)) {
        attempt_failed(p, "out of memory", 0, SW_ENOMEM);
        return;
    }
    int64_t left = p->deadline_ms - a->attempt_ms;
    sw_claim_mark_sent(&p->claim);
    sw_buf_init(&p->resp, p->chat.stream ? ERROR_BODY_MAX : (size_t)p->cfg->limits.max_response_bytes);
    sw_sse_init(&p->sse, SW_RELAY_SSE_EVENT_MAX, sw_relay_on_sse_event, p);
    sw_evs_free(&p->evs);
    sw_evs_init(&p->evs, SW_RELAY_SSE_EVENT_MAX, sw_relay_on_evs_message, p);
    static const struct sw_upstream_cbs cbs = {sw_relay_on_data, on_done};
    struct sw_buf hdrs, path;
    sw_buf_init(&hdrs, 64 * 1024);
    sw_buf_init(&path, 4096);
    int err = sw_relay_target(p, be, &path, &hdrs);
    if (!err && io->parts.n)
        err = sw_upstream_start_parts(&p->up, p->env.cev, be, path.ptr, hdrs.ptr,
                                      sw_iovs_cv(&io->parts), io->parts.n, io->text, (long)left,
                                      p->id, &cbs, p);
    else if (!err)
        err = sw_upstream_start(&p->up, p->env.cev, be, path.ptr, hdrs.ptr, io->text,
                                io->text_len, (long)left, p->id, &cbs, p);
    else
        free(io->text);
    io->text = NULL; /* the transfer took it */
    io->parts.n = 0;
    sw_buf_free(&hdrs);
    sw_buf_free(&path);
    if (err) {
        attempt_failed(p, sw_err_str(err), 0, err);
        return;
    }
    arm_ttft_timer(p, left);
}

/* ---- Gate, claim, queue ---- */

static void on_queue_check(evutil_socket_t fd, short what, void *arg);

static void queue_check_later(struct proxy *p)
{
    if (!p->queue_timer)
        p->queue_timer = evtimer_new(p->env.base, on_queue_check, p);
    struct timeval tv = {0, QUEUE_CHECK_US};
    if (p->queue_timer)
        evtimer_add(p->queue_timer, &tv);
}

/* What the replicas' shared state said about the attempt that holds its
 * local claim: send, wait for a replica-wide slot, or decide again. */
static void on_gate(struct sw_store_hold *h, enum sw_store_verdict v)
{
    struct proxy *p = (struct proxy *)((char *)h - offsetof(struct proxy, rh));
    switch (v) {
    case SW_STORE_OK:
        p->a.lease_wait = false;
        dispatch(p);
        return;
    case SW_STORE_NO_SLOT:
        /* every replica's slots are busy: wait (the queue check asks again,
         * and moves the request to the cloud when the wait breaks its budget) */
        p->a.lease_wait = true;
        queue_check_later(p);
        return;
    case SW_STORE_SPEND_FULL:
        note_failure(p, p->rh.unshared || sw_store_degraded(&p->live->g->store)
                            ? "no shared spend counter (fails closed)"
                            : "spend cap reached (shared by the replicas)");
        attempt_end(p, SW_OUTCOME_NEUTRAL, 0, 0);
        if (!p->spend_refused) {
            /* decide again on the spend the refusal reported: the cap's
             * policy (shed, degrade, keep_local) applies as on one gateway */
            p->spend_refused = true;
            plan_next(p);
        } else {
            exclude_and_replan(p, false);
        }
        return;
    case SW_STORE_PROBE_TAKEN:
        skip(p, "breaker half-open, its probe out on another replica");
        return;
    case SW_STORE_RATE_LIMITED:
        skip(p, "provider rate limit reached across the replicas (skipped)");
        return;
    }
    attempt_end(p, SW_OUTCOME_NEUTRAL, 0, 0);
    exclude_and_replan(p, false);
}

static void store_gate(struct proxy *p);

/* What the key's and team's budgets said about a cloud attempt: on to the
 * shared state, or decide again without the priced clouds (reason budget),
 * or answer the 429 of on_budget: reject (sw_relay_tenant_reserved). */
static void on_tenant_reserved(struct sw_tenant_wait *w, const struct sw_tenant_answer *a)
{
    struct proxy *p = (struct proxy *)((char *)w - offsetof(struct proxy, tw));
    if (a->v == SW_TENANT_OK) {
        store_gate(p);
        return;
    }
    note_failure(p, sw_relay_tenant_why(a));
    attempt_end(p, SW_OUTCOME_NEUTRAL, 0, 0);
    if (sw_relay_tenant_reserved(p, a))
        reject(p);
    else
        plan_next(p);
}

/* The local claim is held: a priced cloud attempt of a key with a budget
 * reserves its worst case on the key's and team's ledgers first; then the
 * shared state. */
static void gate(struct proxy *p)
{
    struct sw_tenant_answer a;
    bool now;
    if (!sw_relay_tenant_reserve(p, on_tenant_reserved, &a, &now))
        store_gate(p);
    else if (now)
        on_tenant_reserved(&p->tw, &a);
}

/* Asks the shared state (state.redis) for the rest (spend reservation,
 * replica-wide slot lease, the half-open probe). */
static void store_gate(struct proxy *p)
{
    const struct sw_config_backend *be = sw_relay_backend(p);
    double est = 0;
    if (be->tier == SW_TIER_CLOUD && sw_live_spend_cap_usd(p->live) > 0)
        est = sw_relay_worst_usd(p, be);
    long tokens = be->tier == SW_TIER_CLOUD && (be->rpm || be->tpm)
                      ? p->facts.prompt_tokens_est + p->facts.max_tokens
                      : 0;
    p->rh.cb = on_gate;
    int v = sw_store_admit(&p->live->g->store, p->live, &p->rh, p->a.be, est, p->claim.probe,
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

/* A request waiting for a local slot: past its deadline it fails (504); when
 * another local would start it at once and sooner, it moves there; when it
 * may leave and its estimated start now breaks the TTFT budget, or the slot
 * has not come by the last check at which the cloud still makes the budget
 * (sw_relay_leave_queue), it moves to the cloud before it ever started
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
        attempt_end(p, SW_OUTCOME_NEUTRAL, 0, 0);
        fail_all(p);
        return;
    }
    size_t k;
    bool to_local;
    if (sw_relay_leave_queue(p->live, p->model, &p->facts, &p->prefix, &p->claim, p->a.be,
                             p->start_ms, now, QUEUE_CHECK_US / 1000.0, p->id,
                             sw_relay_backend(p)->name, &k, &to_local)) {
        const char *left = sw_relay_backend(p)->name;
        sw_relay_trace_event(p, to_local ? "queue_move" : "queue_leave", left, NULL,
                             (long)(now - p->a.claim_ms));
        if (to_local && p->env.obs && p->env.obs->metrics)
            sw_metrics_inc(p->env.obs->metrics, SW_M_QUEUE_MOVES, &left, 1);
        attempt_end(p, SW_OUTCOME_NEUTRAL, 0, 0);
        if (!to_local)
            p->overflowed = true;
        p->left_queue |= 1u << k;
        exclude_and_replan(p, false);
        return;
    }
    if (p->a.lease_wait && !p->rh.op) {
        gate(p); /* ask for a replica-wide slot again */
        return;
    }
    queue_check_later(p);
}

/* Claims what the plan's first attempt needs, then dispatches, queues, or
 * (when a claim fails) decides again without that backend. */
static void try_attempt(struct proxy *p)
{
    const struct sw_route_attempt *pa = &p->plan.attempts[0];
    sw_stage_io_clear(&p->a.io);
    p->a = (struct sw_relay_attempt){
        .be = p->snap->map[pa->backend],
        .prefix_tokens = p->snap->backends[pa->backend].prefix_tokens,
        .busy_at_start = sw_live_cache_busy(p->live, p->snap->map[pa->backend],
                                            &p->snap->backends[pa->backend]),
        .reason = p->overflowed && pa->reason == SW_REASON_FALLBACK ? SW_REASON_OVERFLOW
                                                                     : pa->reason,
    };
    struct sw_live *live = p->live;
    const struct sw_config_backend *be = sw_relay_backend(p);
    int64_t now = sw_now_ms();
    p->a.claim_ms = now;
    p->a.est_ttft_ms = pa->backend < p->plan.n_backends ? p->plan.est_ttft_ms[pa->backend] : -1;
    p->a.breaker = pa->backend < p->snap->view.n ? (int)p->snap->view.backends[pa->backend].breaker : 0;
    sw_relay_trace_attempt(p);
    p->a.need_mask = be->tier == SW_TIER_CLOUD &&
                     (pa->masked || (p->pii.policy == SW_PII_POLICY_MASK && p->pii.counts.total > 0));
    if (p->a.need_mask && !live->pii) {
        note_failure(p, "needs masking, which is not available");
        exclude_and_replan(p, false);
        return;
    }
    p->claim.on_grant = on_slot_granted;
    p->claim.allow_panic = pa->panic;
    p->claim.prefix_matched = p->a.prefix_tokens > 0;
    /* kept on the slot for requests extending it; this one may follow one */
    p->claim.prefix = p->prefix.n ? &p->prefix : NULL;
    p->claim.follow = p->snap->backends[pa->backend].follow_left_ms > 0;
    /* A local slot is held for the prefill of what its cache is expected to
     * miss (the wait estimates of the requests behind it count that). */
    struct sw_route_facts held = p->facts;
    double cached = p->snap->backends[pa->backend].cached_tokens;
    if (be->tier == SW_TIER_LOCAL && cached > 0)
        held.prompt_tokens_est = (long)sw_route_uncached(&p->snap->backends[pa->backend],
                                                         (double)held.prompt_tokens_est);
    enum sw_claim_result r = sw_claim_take(live, p->a.be, &held, now, &p->claim);
    if (r == SW_CLAIM_BREAKER_OPEN) {
        note_failure(p, "breaker open");
        exclude_and_replan(p, false);
        return;
    }
    p->a.attempting = true;
    if (r == SW_CLAIM_GRANTED) {
        gate(p);
        return;
    }
    if (r == SW_CLAIM_QUEUED) {
        /* the slot it gets may not hold its prefix (no lesson) unless it follows */
        if (be->slots > 1 && !p->claim.parked)
            p->a.prefix_tokens = 0;
        queue_check_later(p);
        return;
    }
    /* Skipped: logged as an attempt, nothing held. */
    skip(p, r == SW_CLAIM_RATE_LIMITED ? "provider rate limit reached (skipped)"
            : r == SW_CLAIM_SPEND_FULL ? "spend reservations full (fails closed)"
                                       : "local queue full");
}

static void plan_next(struct proxy *p)
{
    int64_t now = sw_now_ms();
    if (!p->snap && !(p->snap = sw_spares_get(&spare_snaps, sizeof *p->snap))) {
        p->plan = (struct sw_route_plan){.status = 500, .code = "server_error"};
        reject(p);
        return;
    }
    sw_live_snapshot(p->live, p->model, now, p->snap);
    sw_live_prefix_view(p->live, &p->prefix, now, p->snap);
    sw_route_decide(&p->facts, &p->snap->view, &p->snap->policy, now, &p->plan);
    if (p->plan.n == 0) {
        reject(p);
        return;
    }
    try_attempt(p);
}

/* ---- Start ---- */

/* The key's and team's buckets answered (sw_relay_tenant_admitted). */
static void on_tenant_admitted(struct sw_tenant_wait *w, const struct sw_tenant_answer *a)
{
    struct proxy *p = (struct proxy *)((char *)w - offsetof(struct proxy, tw));
    if (sw_relay_tenant_admitted(p, a))
        reject(p);
    else
        plan_next(p);
}

void sw_relay_start(const struct sw_relay_request *r)
{
    const struct sw_relay_env *env = r->env;
    struct sw_http_req *req = r->req;
    struct sw_chat_request *chat = r->chat;
    const struct sw_facts *facts = r->facts;
    struct proxy *p = proxy_get();
    if (p)
        memset(p, 0, offsetof(struct proxy, x));
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
    p->public_model_json = sw_splice_quote(public_model);
    p->model = r->model;
    p->facts = facts->route;
    p->pii = facts->pii;
    p->engine = r->pii ? r->pii : p->live->pii;
    p->key_name = r->key_name;
    p->ttft_ms = -1;
    p->start_ms = facts->start_ms;
    p->deadline_ms = facts->route.deadline_ms;
    p->out = out;
    p->retry_after_s = -1;
    size_t id_len = strnlen(r->request_id, sizeof p->id - 1);
    memcpy(p->id, r->request_id, id_len);
    p->id[id_len] = '\0';
    p->client_dialect = (enum sw_dialect)p->chat.dialect;
    sw_buf_init(&p->resp, ERROR_BODY_MAX);
    sw_sse_init(&p->sse, SW_RELAY_SSE_EVENT_MAX, sw_relay_on_sse_event, p);
    sw_evs_init(&p->evs, SW_RELAY_SSE_EVENT_MAX, sw_relay_on_evs_message, p);
    sw_buf_init(&p->evs_data, SW_RELAY_SSE_EVENT_MAX + 256);
    sw_relay_stages_init(p);
    sw_relay_strip_fields(p->chat.body);
    p->prefix.n = 0;
    if (sw_live_prefix_wanted(p->live, p->cfg, p->model))
        sw_request_prefix(p->chat.body, p->chat.prompt_tokens_est, &p->prefix);
    sw_relay_ask_for_usage(p);
    p->splice.client_wants_usage = p->dialect.client_wants_usage = p->client_wants_usage;
    sw_http_on_gone(req, on_client_gone, p);
    sw_relay_trace_start(p, r->trace);
    p->key = r->key;
    struct sw_tenant_answer a;
    bool now;
    if (sw_relay_tenant_admit(p, on_tenant_admitted, &a, &now)) {
        if (now)
            on_tenant_admitted(&p->tw, &a);
        return;
    }
    plan_next(p);
}
