#include "relay/trace.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "common/clock.h"
#include "state/live.h"
#include "obs/span.h"
#include "relay/proxy.h"
#include "route/route.h"
#include "upstream/dialect.h"
#include "upstream/otlp.h"

/* ---- Strings (bounded copies, no formatting on the request's path) ---- */

/* a[0..an) then b, cut to cap - 1 bytes, NUL-terminated. */
static void cat(char *out, size_t cap, const char *a, size_t an, const char *b)
{
    size_t bn = strlen(b);
    if (an > cap - 1)
        an = cap - 1;
    if (bn > cap - 1 - an)
        bn = cap - 1 - an;
    memcpy(out, a, an);
    memcpy(out + an, b, bn);
    out[an + bn] = '\0';
}

/* ---- Context ---- */

/* The client's tracestate headers joined with ",", bounded. */
struct state_join {
    char buf[SW_TRACESTATE_MAX * 2 + 2];
    size_t len;
    bool over;
};

static void on_header(const char *key, const char *value, void *ud)
{
    struct state_join *j = ud;
    if (strcasecmp(key, "tracestate"))
        return;
    size_t n = strlen(value);
    if (j->len + n + 1 >= sizeof j->buf) {
        j->over = true;
        return;
    }
    if (j->len)
        j->buf[j->len++] = ',';
    memcpy(j->buf + j->len, value, n);
    j->len += n;
}

/* The request's trace context: the client's traceparent (and tracestate)
 * continued, or a new trace; its SERVER span's id; the sampling decision. */
static void read_ctx(struct sw_otlp *o, struct sw_http_req *req, uint8_t *trace_id,
                     uint8_t *span_id, uint8_t *parent_id, char *state, size_t state_cap,
                     bool *has_parent, bool *sampled)
{
    int count = 0;
    const char *tp = sw_http_header(req, "traceparent", &count);
    struct sw_traceparent parent;
    /* more than one traceparent is no valid context: a new trace starts */
    if (tp && count == 1 && sw_traceparent_parse(tp, strlen(tp), &parent)) {
        *has_parent = true;
        memcpy(trace_id, parent.trace_id, SW_TRACE_ID_LEN);
        memcpy(parent_id, parent.parent_id, SW_SPAN_ID_LEN);
        struct state_join j = {.len = 0};
        sw_http_each_header(req, on_header, &j);
        if (!j.over)
            sw_tracestate_parse(j.buf, j.len, state, state_cap);
        *sampled = sw_trace_sampled(trace_id, 0, true, parent.flags);
    } else {
        *has_parent = false;
        sw_otlp_random(o, trace_id, SW_TRACE_ID_LEN);
        *sampled = sw_trace_sampled(trace_id, sw_otlp_sample_ratio(o), false, 0);
    }
    sw_otlp_random(o, span_id, SW_SPAN_ID_LEN);
}

void sw_relay_trace_start(struct proxy *p, const struct sw_relay_trace_ctx *c)
{
    struct sw_otlp *o = p->env.obs ? p->env.obs->otlp : NULL;
    struct sw_relay_trace *t = &p->x.trace;
    /* the scratch is not zeroed: what is read before it is written starts here */
    t->on = t->sampled = t->has_parent = false;
    t->n_ev = t->n_finish = 0;
    t->state[0] = '\0';
    if (!o || !p->req)
        return;
    t->on = true;
    if (c && c->on) {
        t->has_parent = c->has_parent;
        t->sampled = c->sampled;
        memcpy(t->trace_id, c->trace_id, sizeof t->trace_id);
        memcpy(t->span_id, c->span_id, sizeof t->span_id);
        memcpy(t->parent_id, c->parent_id, sizeof t->parent_id);
        cat(t->state, sizeof t->state, "", 0, c->state);
        memcpy(t->trace_hex, c->trace_hex, sizeof t->trace_hex);
    } else {
        read_ctx(o, p->req, t->trace_id, t->span_id, t->parent_id, t->state, sizeof t->state,
                 &t->has_parent, &t->sampled);
        sw_trace_hex(t->trace_id, sizeof t->trace_id, t->trace_hex);
        sw_http_add_header(p->req, "X-Trace-Id", t->trace_hex); /* the front's reader sets it */
    }
    t->method = sw_http_method_name(p->req);
    cat(t->path, sizeof t->path, "", 0, sw_http_path(p->req));
}

void sw_relay_trace_ctx_read(struct sw_otlp *o, struct sw_http_req *req, bool route,
                             struct sw_relay_trace_ctx *c)
{
    c->on = o && req;
    c->state[0] = '\0';
    c->path[0] = '\0';
    if (!c->on)
        return;
    read_ctx(o, req, c->trace_id, c->span_id, c->parent_id, c->state, sizeof c->state,
             &c->has_parent, &c->sampled);
    sw_trace_hex(c->trace_id, sizeof c->trace_id, c->trace_hex);
    c->method = sw_http_method_name(req);
    if (route)
        cat(c->path, sizeof c->path, "", 0, sw_http_path(req));
}

void sw_relay_trace_attempt(struct proxy *p)
{
    struct sw_otlp *o = p->x.trace.on ? p->env.obs->otlp : NULL;
    if (o)
        sw_otlp_random(o, p->a.span_id, sizeof p->a.span_id);
}

int sw_relay_trace_headers(const struct proxy *p, struct sw_buf *hdrs)
{
    const struct sw_relay_trace *t = &p->x.trace;
    /* no span id: the exporter went away (a reload) before this attempt */
    if (!t->on || sw_trace_id_zero(p->a.span_id, sizeof p->a.span_id))
        return 0;
    /* "00-<trace>-<span>-<flags>": the trace id's hex is the request's */
    char tp[SW_TRACEPARENT_LEN + 3];
    memcpy(tp, "00-", 3);
    memcpy(tp + 3, t->trace_hex, 2 * SW_TRACE_ID_LEN);
    tp[35] = '-';
    sw_trace_hex(p->a.span_id, SW_SPAN_ID_LEN, tp + 36);
    memcpy(tp + 52, t->sampled ? "-01\r\n" : "-00\r\n", 5);
    int err = sw_buf_append(hdrs, "traceparent: ", 13);
    if (!err)
        err = sw_buf_append(hdrs, tp, SW_TRACEPARENT_LEN + 2);
    if (!err && t->state[0]) {
        err = sw_buf_append(hdrs, "tracestate: ", 12);
        if (!err)
            err = sw_buf_append_str(hdrs, t->state);
        if (!err)
            err = sw_buf_append(hdrs, "\r\n", 2);
    }
    return err;
}

void sw_relay_trace_attempt_end(struct proxy *p, size_t i, int64_t now_ms)
{
    if (!p->x.trace.on || i >= SW_DECLOG_MAX_ATTEMPTS)
        return;
    struct sw_relay_trace_attempt *ta = &p->x.trace.att[i];
    memcpy(ta->span_id, p->a.span_id, sizeof ta->span_id);
    ta->claim_ms = p->a.claim_ms;
    ta->sent_ms = p->claim.sent ? p->a.attempt_ms : 0;
    ta->first_byte_ms = p->a.first_byte_ms;
    ta->end_ms = now_ms;
    ta->est_ttft_ms = p->a.est_ttft_ms;
    ta->breaker = p->a.breaker;
    ta->masked = p->a.need_mask;
}

void sw_relay_trace_event(struct proxy *p, const char *name, const char *backend,
                          const char *what, long value)
{
    struct sw_relay_trace *t = &p->x.trace;
    if (!t->sampled || t->n_ev >= SW_RELAY_TRACE_EVENTS)
        return;
    t->ev[t->n_ev++] = (struct sw_relay_trace_event){name, sw_now_ms(), backend, what, value};
}

/* ---- Finish reasons ---- */

/* The names an answer's finish_reason / stop_reason may carry: only these
 * reach a span, so no text of the answer can. */
static const char *const finish_names[] = {
    "stop", "length", "tool_calls", "content_filter", "function_call", "end_turn",
    "max_tokens", "tool_use", "stop_sequence", "pause_turn", "refusal", NULL};

static void note_finish(struct sw_relay_trace *t, const char *v, size_t n)
{
    for (const char *const *f = finish_names; *f; f++) {
        if (strlen(*f) != n || memcmp(*f, v, n))
            continue;
        for (unsigned i = 0; i < t->n_finish; i++)
            if (!strcmp(t->finish[i], *f))
                return;
        if (t->n_finish < SW_RELAY_TRACE_FINISH)
            cat(t->finish[t->n_finish++], sizeof t->finish[0], "", 0, *f);
        return;
    }
}

/* A key as JSON writes it ("finish_reason": or "stop_reason":) can only be
 * a key: inside a JSON string its quotes would be escaped. One pass looks
 * for what both end with: each '_' (memchr, many bytes at a time), then the
 * eight bytes there compared at once; a stream's every chunk has such a
 * key, so there is no per-match set-up as a general substring search has. */
void sw_relay_trace_scan(struct proxy *p, const char *bytes, size_t len)
{
    struct sw_relay_trace *t = &p->x.trace;
    if (!t->sampled || t->n_finish >= SW_RELAY_TRACE_FINISH)
        return;
    static const char tail[] = "_reason\"";
    const size_t tl = sizeof tail - 1;
    const char *end = bytes + len;
    for (const char *at = bytes; (size_t)(end - at) >= tl; at++) {
        at = memchr(at, '_', (size_t)(end - at) - tl + 1);
        if (!at)
            break;
        const char *k = at;
        if (memcmp(k, tail, tl))
            continue;
        if (!((k - bytes >= 7 && !memcmp(k - 7, "\"finish", 7)) ||
              (k - bytes >= 5 && !memcmp(k - 5, "\"stop", 5))))
            continue;
        const char *v = k + tl;
        while (v < end && (*v == ' ' || *v == '\t'))
            v++;
        if (v >= end || *v != ':')
            continue;
        v++;
        while (v < end && (*v == ' ' || *v == '\t'))
            v++;
        if (v >= end || *v != '"')
            continue;
        size_t room = (size_t)(end - v - 1) < 24 ? (size_t)(end - v - 1) : 24;
        const char *q = memchr(v + 1, '"', room);
        if (q)
            note_finish(t, v + 1, (size_t)(q - v - 1));
    }
}

/* ---- Spans ---- */

static int64_t wall_ns(const struct proxy *p, int64_t mono_ms)
{
    return sw_live_wall_ms(p->live, mono_ms) * 1000000;
}

/* host and port of a backend's URL (http(s)://host[:port][/...]). */
static void url_host_port(const char *url, char *host, size_t cap, long *port)
{
    bool tls = !strncmp(url, "https://", 8);
    const char *h = strstr(url, "://");
    h = h ? h + 3 : url;
    size_t n = strcspn(h, "/");
    const char *colon = NULL;
    if (*h == '[') {
        const char *rb = memchr(h, ']', n);
        if (rb && rb + 1 < h + n && rb[1] == ':')
            colon = rb + 1;
        size_t hn = rb ? (size_t)(rb - h - 1) : n;
        cat(host, cap, h + 1, hn, "");
    } else {
        colon = memchr(h, ':', n);
        cat(host, cap, h, colon ? (size_t)(colon - h) : n, "");
    }
    *port = tls ? 443 : 80;
    if (colon) {
        long v = 0;
        for (const char *c = colon + 1; c < h + n && *c >= '0' && *c <= '9'; c++)
            v = v * 10 + (*c - '0');
        if (v > 0 && v < 65536)
            *port = v;
    }
}

/* A configured name: copied unchecked when the config found it plain. */
static void span_name(struct sw_attrs *as, const char *key, uint16_t klen, const char *v,
                      bool plain)
{
    if (plain)
        sw_attrs_name_k(as, key, klen, v);
    else
        sw_attrs_str_k(as, key, klen, v);
}

static void base_span(const struct proxy *p, struct sw_span *s, const char *name,
                      enum sw_span_kind kind)
{
    const struct sw_relay_trace *t = &p->x.trace;
    memset(s, 0, offsetof(struct sw_span, attrs));
    s->attrs.n = s->attrs.dropped = 0;
    s->attrs.cap = 0;
    s->n_events = 0;
    s->dropped_events = 0;
    memcpy(s->trace_id, t->trace_id, sizeof s->trace_id);
    s->trace_hex = t->trace_hex;
    s->trace_state = t->state;
    /* W3C flags, and "the parent's remoteness is known" (local unless set below) */
    s->flags = SW_TRACE_FLAG_SAMPLED | 0x100;
    s->name = name;
    s->kind = kind;
}

static void attempt_span(const struct proxy *p, struct sw_span *s, size_t i, const char *op,
                         char *name, size_t name_cap)
{
    const struct sw_relay_trace_attempt *ta = &p->x.trace.att[i];
    const struct sw_declog_attempt *la = &p->att[i];
    const struct sw_config_backend *be = NULL;
    for (size_t b = 0; b < p->cfg->n_backends && !be; b++)
        if (p->cfg->backends[b].name == la->backend)
            be = &p->cfg->backends[b];
    char opsp[16];
    cat(opsp, sizeof opsp, op, strlen(op), " ");
    cat(name, name_cap, opsp, strlen(opsp), be ? be->model : "");
    base_span(p, s, name, SW_SPAN_CLIENT);
    memcpy(s->span_id, ta->span_id, sizeof s->span_id);
    memcpy(s->parent_id, p->x.trace.span_id, sizeof s->parent_id);
    s->has_parent = true;
    s->start_ns = wall_ns(p, ta->claim_ms);
    s->end_ns = wall_ns(p, ta->end_ms);
    struct sw_attrs *as = &s->attrs;
    sw_attrs_name_k(as, SW_K("gen_ai.operation.name"), op);
    if (be) {
        static __thread char host[256]; /* borrowed by the span until it is encoded */
        long port;
        url_host_port(be->url, host, sizeof host, &port);
        span_name(as, SW_K("gen_ai.request.model"), be->model, be->span_plain);
        sw_attrs_name_k(as, SW_K("gen_ai.provider.name"),
                        sw_upstream_dialect(sw_upstream_dialect_for(be, p->client_dialect))->provider_name);
        sw_attrs_str_k(as, SW_K("server.address"), host);
        sw_attrs_int_k(as, SW_K("server.port"), port);
        sw_attrs_name_k(as, SW_K("spillway.tier"), sw_tier_name(be->tier));
        span_name(as, SW_K("spillway.region"), be->region, be->span_plain);
    }
    sw_attrs_name_k(as, SW_K("spillway.backend"), la->backend);
    sw_attrs_name_k(as, SW_K("spillway.reason"), la->reason);
    sw_attrs_name_k(as, SW_K("spillway.outcome"), sw_declog_outcome_name(la->outcome));
    sw_attrs_name_k(as, SW_K("spillway.breaker"), sw_breaker_name((enum sw_breaker_state)ta->breaker));
    sw_attrs_bool_k(as, SW_K("spillway.masked"), ta->masked);
    if (la->status)
        sw_attrs_int_k(as, SW_K("http.response.status_code"), la->status);
    if (la->error)
        sw_attrs_str_k(as, SW_K("error.type"), la->error);
    if (ta->sent_ms) {
        sw_attrs_double_k(as, SW_K("spillway.queue_wait_ms"), (double)(ta->sent_ms - ta->claim_ms));
        if (ta->first_byte_ms)
            sw_attrs_double_k(as, SW_K("spillway.first_byte_ms"),
                              (double)(ta->first_byte_ms - ta->sent_ms));
    }
    if (ta->est_ttft_ms >= 0)
        sw_attrs_double_k(as, SW_K("spillway.ttft_estimated_ms"), ta->est_ttft_ms);
    s->status = la->outcome == SW_ATTEMPT_FAILED ? SW_SPAN_ERROR : SW_SPAN_UNSET;
    s->status_msg = la->error;
}

static void server_events(const struct proxy *p, struct sw_span *s)
{
    const struct sw_relay_trace *t = &p->x.trace;
    for (unsigned i = 0; i < t->n_ev; i++) {
        const struct sw_relay_trace_event *ev = &t->ev[i];
        struct sw_span_event *e = sw_span_event(s, ev->name, wall_ns(p, ev->at_ms));
        sw_event_str(e, "spillway.backend", ev->backend);
        sw_event_str(e, ev->name[0] == 'c' ? "spillway.contract" : "error.type", ev->what);
        if (ev->value >= 0)
            sw_event_int(e, "spillway.budget_ms", ev->value);
    }
    if (p->contract.verdict) {
        struct sw_span_event *e = sw_span_event(s, "contract", s->end_ns);
        sw_event_str(e, "spillway.contract", p->contract.verdict);
    }
}

void sw_relay_trace_end(const struct proxy *p, const struct sw_declog_entry *e, int64_t now_ms)
{
    const struct sw_relay_trace *t = &p->x.trace;
    struct sw_otlp *o = t->on ? p->env.obs->otlp : NULL;
    if (!o || !t->sampled)
        return;
    static __thread struct sw_span s;
    const char *op = p->chat.api == SW_API_EMBEDDINGS ? "embeddings" : "chat";
    char name[SW_SPAN_MAX_STR];
    for (size_t i = 0; i < p->n_att && i < SW_DECLOG_MAX_ATTEMPTS; i++) {
        attempt_span(p, &s, i, op, name, sizeof name);
        sw_otlp_submit(o, &s);
    }
    char opsp[16];
    cat(opsp, sizeof opsp, op, strlen(op), " ");
    cat(name, sizeof name, opsp, strlen(opsp), p->model->name);
    base_span(p, &s, name, SW_SPAN_SERVER);
    memcpy(s.span_id, t->span_id, sizeof s.span_id);
    memcpy(s.parent_id, t->parent_id, sizeof s.parent_id);
    s.has_parent = t->has_parent;
    if (t->has_parent)
        s.flags |= 0x200; /* the parent is remote: the client's */
    s.start_ns = wall_ns(p, p->start_ms);
    s.end_ns = wall_ns(p, now_ms);
    struct sw_attrs *as = &s.attrs;
    sw_attrs_name_k(as, SW_K("gen_ai.operation.name"), op);
    span_name(as, SW_K("gen_ai.request.model"), p->model->name, p->model->span_plain);
    const struct sw_config_backend *be = p->served ? &p->cfg->backends[p->a.be] : NULL;
    if (be)
        span_name(as, SW_K("gen_ai.response.model"), be->model, be->span_plain);
    if (e->tokens_in >= 0)
        sw_attrs_int_k(as, SW_K("gen_ai.usage.input_tokens"), e->tokens_in);
    if (e->tokens_out >= 0)
        sw_attrs_int_k(as, SW_K("gen_ai.usage.output_tokens"), e->tokens_out);
    const char *fin[SW_RELAY_TRACE_FINISH];
    for (unsigned i = 0; i < t->n_finish; i++)
        fin[i] = t->finish[i];
    if (t->n_finish)
        sw_attrs_strs(as, "gen_ai.response.finish_reasons", fin, t->n_finish);
    sw_attrs_name_k(as, SW_K("http.request.method"), t->method);
    sw_attrs_str_k(as, SW_K("url.path"), t->path);
    if (e->status)
        sw_attrs_int_k(as, SW_K("http.response.status_code"), e->status);
    sw_attrs_name_k(as, SW_K("spillway.api"), e->api);
    sw_attrs_str_k(as, SW_K("spillway.request_id"), e->request_id);
    sw_attrs_name_k(as, SW_K("spillway.decision"), sw_declog_decision_name(e->decision));
    sw_attrs_name_k(as, SW_K("spillway.backend"), e->backend);
    sw_attrs_name_k(as, SW_K("spillway.tier"), e->tier);
    if (be && e->region == be->region)
        span_name(as, SW_K("spillway.region"), e->region, be->span_plain);
    else
        sw_attrs_str_k(as, SW_K("spillway.region"), e->region);
    sw_attrs_name_k(as, SW_K("spillway.reason"), e->reason);
    sw_attrs_str_k(as, SW_K("spillway.key_name"), e->key_name);
    sw_attrs_name_k(as, SW_K("spillway.priority"), e->priority);
    sw_attrs_bool_k(as, SW_K("spillway.stream"), e->stream);
    sw_attrs_bool_k(as, SW_K("spillway.masked"), p->pii_st.masked);
    sw_attrs_int_k(as, SW_K("spillway.attempts"), (int64_t)e->n_attempts);
    if (e->code)
        sw_attrs_str_k(as, SW_K("error.type"), e->code);
    if (e->ttft_ms >= 0)
        sw_attrs_double_k(as, SW_K("spillway.ttft_ms"), e->ttft_ms);
    for (size_t i = p->n_att; i-- > 0;) {
        const struct sw_relay_trace_attempt *ta = &t->att[i];
        if (p->att[i].outcome != SW_ATTEMPT_OK && i + 1 != p->n_att)
            continue;
        if (ta->sent_ms)
            sw_attrs_double_k(as, SW_K("spillway.queue_wait_ms"), (double)(ta->sent_ms - ta->claim_ms));
        if (ta->est_ttft_ms >= 0)
            sw_attrs_double_k(as, SW_K("spillway.ttft_estimated_ms"), ta->est_ttft_ms);
        break;
    }
    sw_attrs_double_k(as, SW_K("spillway.cost_usd"), e->cost_usd);
    char keys[SW_DECLOG_MAX_PII_TYPES][64];
    for (size_t i = 0; i < e->n_pii && i < SW_DECLOG_MAX_PII_TYPES; i++) {
        cat(keys[i], sizeof keys[i], "spillway.pii.", 13, e->pii[i].type);
        sw_attrs_int(as, keys[i], (int64_t)e->pii[i].n);
    }
    sw_attrs_name_k(as, SW_K("spillway.pii_outcome"), e->pii_outcome);
    server_events(p, &s);
    s.status = e->status >= 500 ? SW_SPAN_ERROR : SW_SPAN_UNSET;
    s.status_msg = e->code;
    sw_otlp_submit(o, &s);
}

/* ---- Refusals before routing ---- */

void sw_relay_trace_refused(struct sw_otlp *o, const struct sw_live *live,
                            const struct sw_relay_trace_ctx *c,
                            const struct sw_declog_entry *e, int64_t start_ms,
                            int64_t now_ms)
{
    if (!o || !c->on || !c->sampled)
        return;
    static __thread struct sw_span s;
    memset(&s, 0, offsetof(struct sw_span, attrs));
    s.attrs.n = s.attrs.dropped = 0;
    s.attrs.cap = 0;
    s.n_events = 0;
    s.dropped_events = 0;
    memcpy(s.trace_id, c->trace_id, sizeof s.trace_id);
    memcpy(s.span_id, c->span_id, sizeof s.span_id);
    memcpy(s.parent_id, c->parent_id, sizeof s.parent_id);
    s.has_parent = c->has_parent;
    s.trace_hex = c->trace_hex;
    s.trace_state = c->state;
    s.flags = SW_TRACE_FLAG_SAMPLED | 0x100 | (c->has_parent ? 0x200 : 0);
    const char *op = !e->api ? NULL : !strcmp(e->api, "embeddings") ? "embeddings" : "chat";
    /* "chat <model>" for a configured model, else "<method> <route>" or the method */
    char name[SW_SPAN_MAX_STR], opsp[16];
    bool named_model = op && e->model && strcmp(e->model, "unknown");
    if (named_model) {
        cat(opsp, sizeof opsp, op, strlen(op), " ");
        cat(name, sizeof name, opsp, strlen(opsp), e->model);
    } else {
        cat(opsp, sizeof opsp, c->method, strlen(c->method), c->path[0] ? " " : "");
        cat(name, sizeof name, opsp, strlen(opsp), c->path);
    }
    s.name = name;
    s.kind = SW_SPAN_SERVER;
    s.start_ns = sw_live_wall_ms(live, start_ms) * 1000000;
    s.end_ns = sw_live_wall_ms(live, now_ms) * 1000000;
    struct sw_attrs *as = &s.attrs;
    sw_attrs_name_k(as, SW_K("gen_ai.operation.name"), op);
    if (named_model)
        sw_attrs_str_k(as, SW_K("gen_ai.request.model"), e->model);
    sw_attrs_str_k(as, SW_K("http.request.method"), c->method);
    if (c->path[0])
        sw_attrs_str_k(as, SW_K("url.path"), c->path);
    sw_attrs_int_k(as, SW_K("http.response.status_code"), e->status);
    sw_attrs_str_k(as, SW_K("error.type"), e->code);
    sw_attrs_str_k(as, SW_K("spillway.api"), e->api);
    sw_attrs_str_k(as, SW_K("spillway.request_id"), e->request_id);
    sw_attrs_name_k(as, SW_K("spillway.decision"), sw_declog_decision_name(SW_DECLOG_REJECTED));
    sw_attrs_str_k(as, SW_K("spillway.key_name"), e->key_name);
    char keys[SW_DECLOG_MAX_PII_TYPES][64];
    for (size_t i = 0; i < e->n_pii && i < SW_DECLOG_MAX_PII_TYPES; i++) {
        cat(keys[i], sizeof keys[i], "spillway.pii.", 13, e->pii[i].type);
        sw_attrs_int(as, keys[i], (int64_t)e->pii[i].n);
    }
    sw_attrs_name_k(as, SW_K("spillway.pii_outcome"), e->pii_outcome);
    s.status = e->status >= 500 ? SW_SPAN_ERROR : SW_SPAN_UNSET;
    s.status_msg = e->status >= 500 ? e->code : NULL;
    sw_otlp_submit(o, &s);
}
