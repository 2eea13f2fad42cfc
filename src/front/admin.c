#include "front/admin.h"

#include <errno.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/err.h"
#include "common/log.h"
#include "obs/dashboard.h"
#include "state/rstate.h"
#include "relay/reply.h"

static const char *health_name(enum sw_health h)
{
    static const char *const names[] = {"up", "degraded", "cold", "warming", "down"};
    return (unsigned)h < sizeof names / sizeof names[0] ? names[h] : "unknown";
}

/* ---- Metrics and the dashboard ---- */

/* Backend i as the router sees it now (the view of a one-backend model). */
static struct sw_route_backend_view backend_view(struct sw_live *l, size_t i, int64_t now)
{
    struct sw_config_model one = {.name = "", .backends = &i, .n_backends = 1};
    struct sw_live_snapshot snap;
    sw_live_snapshot(l, &one, now, &snap);
    return snap.backends[0];
}

/* GET /metrics: the counters and histograms, then gauges read from the live
 * state (the same numbers /admin/state shows). */
void sw_admin_metrics(struct sw_front *f, struct sw_http_req *req)
{
    struct sw_live *l = f->live;
    int64_t now = sw_now_ms();
    struct sw_obs_backend obs[SW_ROUTE_MAX_BACKENDS];
    size_t n = 0;
    for (size_t i = 0; i < l->n && n < SW_ROUTE_MAX_BACKENDS; i++) {
        struct sw_route_backend_view view = backend_view(l, i, now);
        const struct sw_route_backend_view *v = &view;
        obs[n++] = (struct sw_obs_backend){
            .name = v->name,
            .local = v->tier == SW_TIER_LOCAL,
            .health = health_name(v->health),
            .breaker = v->breaker == SW_BREAKER_OPEN        ? 2
                       : v->breaker == SW_BREAKER_HALF_OPEN ? 1
                                                            : 0,
            .in_flight = (double)v->in_flight,
            .queued = (double)v->queued,
            .est_wait_ms = sw_route_est_ttft_ms(v, 0),
            .prefill_ms_per_token = v->prefill_ms_per_token,
            .decode_tps = v->decode_tps,
            .rpm_available = v->rpm_available,
            .tpm_available = v->tpm_available,
        };
    }
    struct sw_obs_gauges g = {
        .backends = obs,
        .n_backends = n,
        .spend_usd = sw_live_spend_usd(l, now),
        .spend_cap_usd = sw_live_spend_cap_usd(l),
        .spill_ratio = sw_spill_ratio(&f->obs->spill, now / 1000),
        .emergency = l->g->emergency,
        .state_shared = l->g->rstate != NULL,
        .state_degraded = sw_rstate_degraded(l->g->rstate),
        .declog_write_errors = sw_declog_write_errors(f->obs->log),
        .loop_lag_ms = sw_front_loop_lag_ms(f),
    };
    struct sw_buf b;
    sw_buf_init(&b, 16 << 20);
    int err = sw_metrics_render(f->obs->metrics, &b);
    if (!err)
        err = sw_obs_render_gauges(&b, &g);
    if (err) {
        sw_buf_free(&b);
        sw_reply_error(req, 500, "server_error", NULL, NULL, "metrics: %s", sw_err_str(err));
        return;
    }
    sw_http_reply(req, 200, "text/plain; version=0.0.4; charset=utf-8", b.ptr, b.len);
    sw_buf_free(&b);
}

/* GET /dashboard: the self-contained page; its data comes from the admin API. */
void sw_admin_dashboard(struct sw_front *f, struct sw_http_req *req)
{
    (void)f;
    size_t len;
    const char *html = sw_dashboard_html(&len);
    sw_http_add_header(req, "Cache-Control", "no-store");
    sw_http_add_header(req, "Content-Security-Policy",
                       "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
                       "connect-src 'self'; img-src 'self' data:; base-uri 'none'; "
                       "form-action 'none'; frame-ancestors 'none'");
    sw_http_add_header(req, "X-Content-Type-Options", "nosniff");
    sw_http_reply(req, 200, "text/html; charset=utf-8", html, len);
}

/* ---- Admin API (its own key: admin.key) ---- */

bool sw_admin_authorized(struct sw_front *f, struct sw_http_req *req)
{
    if (!f->cfg->admin_key) {
        sw_reply_error(req, 404, "invalid_request_error", "admin_disabled", NULL,
                       "The admin API is disabled: set admin.key in the configuration.");
        return false;
    }
    const char *auth = sw_http_header(req, "Authorization", NULL);
    static const char bearer[] = "Bearer ";
    if (!auth || strncasecmp(auth, bearer, sizeof bearer - 1) != 0 ||
        !sw_config_secret_equal(f->cfg->admin_key, auth + sizeof bearer - 1)) {
        sw_reply_error(req, 401, "invalid_request_error", "invalid_admin_key", NULL,
                       "The admin API needs 'Authorization: Bearer ADMIN_KEY'.");
        sw_warn("admin: rejected a call without the admin key");
        return false;
    }
    return true;
}

static void reply_json_value(struct sw_http_req *req, int status, json_t *v)
{
    char *s = v ? json_dumps(v, JSON_COMPACT) : NULL;
    if (s)
        sw_reply_json(req, status, s, strlen(s));
    else
        sw_reply_error(req, 500, "server_error", NULL, NULL, "Out of memory.");
    free(s);
    json_decref(v);
}

static const char *breaker_name(enum sw_breaker_state b)
{
    static const char *const names[] = {"closed", "open", "half_open"};
    return (unsigned)b < sizeof names / sizeof names[0] ? names[b] : "unknown";
}

/* spillway_rejections_total{code} -> "rejections": {code: n}. */
static void add_rejection(void *ud, const char *const *labels, double v)
{
    json_object_set_new(ud, labels[0], json_integer((json_int_t)v));
}

/* spillway_pii_entities_total{type,outcome} -> "pii": {outcome: {type: n}}. */
static void add_pii(void *ud, const char *const *labels, double v)
{
    json_t *types = json_object_get(ud, labels[1]);
    if (!types) {
        types = json_object();
        json_object_set_new(ud, labels[1], types);
    }
    json_object_set_new(types, labels[0], json_integer((json_int_t)v));
}

/* GET /admin/state: what the router sees right now, per backend. */
void sw_admin_state(struct sw_front *f, struct sw_http_req *req)
{
    struct sw_live *l = f->live;
    int64_t now = sw_now_ms();
    json_t *backends = json_array();
    for (size_t i = 0; i < l->n; i++) {
        struct sw_route_backend_view v = backend_view(l, i, now);
        json_array_append_new(
            backends,
            json_pack("{s:s, s:s, s:s, s:s, s:I, s:I, s:I, s:f, s:f, s:f, s:f, s:f, s:f, s:f}",
                      "name", v.name, "tier", sw_tier_name(v.tier), "health",
                      health_name(v.health), "breaker", breaker_name(v.breaker), "slots",
                      (json_int_t)v.slots, "in_flight", (json_int_t)v.in_flight, "queued",
                      (json_int_t)v.queued, "est_ttft_ms", sw_route_est_ttft_ms(&v, 0),
                      "prefill_ms_per_token", v.prefill_ms_per_token, "decode_tps",
                      v.decode_tps, "avg_output_tokens", v.avg_output_tokens, "ttft_avg_ms",
                      v.ttft_avg_ms, "rpm_available", v.rpm_available, "tpm_available",
                      v.tpm_available));
        const char *why = l->b[i]->last_error;
        json_object_set_new(json_array_get(backends, json_array_size(backends) - 1), "last_error",
                            why[0] ? json_string(why) : json_null());
    }
    /* Rejections and PII: the very counters GET /metrics shows. Every PII type
     * of the snapshot under each outcome, 0 until counted. */
    static const char *const outcomes[] = {"kept_local", "masked_cloud", "blocked"};
    json_t *pii = json_object();
    for (int o = 0; o < 3; o++) {
        json_t *types = json_object();
        for (int t = 0; t < sw_pii_type_count(l->pii); t++)
            json_object_set_new(types, sw_pii_type_name(l->pii, t), json_integer(0));
        json_object_set_new(pii, outcomes[o], types);
    }
    json_t *rejections = json_object();
    const struct sw_metrics *m = f->obs ? f->obs->metrics : NULL;
    sw_metrics_each(m, SW_M_REJECTIONS, add_rejection, rejections);
    sw_metrics_each(m, SW_M_PII, add_pii, pii);
    json_t *st = json_pack("{s:s, s:o}", "backend", l->g->rstate ? "redis" : "memory",
                           "degraded",
                           sw_rstate_degraded_reason(l->g->rstate)
                               ? json_string(sw_rstate_degraded_reason(l->g->rstate))
                               : json_null());
    reply_json_value(req, 200,
                     json_pack("{s:b, s:s, s:f, s:f, s:o, s:o, s:o, s:o}", "emergency",
                               l->g->emergency, "emergency_reason", l->g->emergency_reason,
                               "spend_usd", sw_live_spend_usd(l, now), "spend_cap_usd",
                               sw_live_spend_cap_usd(l), "backends", backends, "rejections",
                               rejections, "pii", pii, "state", st));
}

/* Parses the admin call's JSON body; answers 400 and returns NULL if it is not an object. */
static json_t *admin_body(struct sw_http_req *req)
{
    size_t len;
    const char *text = sw_http_body(req, &len);
    json_error_t jerr;
    json_t *body = json_loadb(text, len, 0, &jerr);
    if (!json_is_object(body)) {
        json_decref(body);
        sw_reply_error(req, 400, "invalid_request_error", "invalid_json", NULL,
                       "Expected a JSON object: %s.", jerr.text);
        return NULL;
    }
    return body;
}

/* POST /admin/emergency {"declared": true|false, "reason": "..."}: an explicit
 * business emergency that lets sensitive requests reach the cloud,
 * masked, when the local tier has failed. Audited in the log. */
void sw_admin_emergency(struct sw_front *f, struct sw_http_req *req)
{
    json_t *body = admin_body(req);
    if (!body)
        return;
    json_t *declared = json_object_get(body, "declared");
    json_t *reason = json_object_get(body, "reason");
    if (!json_is_boolean(declared) || (reason && !json_is_string(reason))) {
        json_decref(body);
        sw_reply_error(req, 400, "invalid_request_error", "invalid_value", "declared",
                       "Expected {\"declared\": true|false, \"reason\": \"...\"}.");
        return;
    }
    struct sw_live *l = f->live;
    l->g->emergency = json_is_true(declared);
    sw_metrics_inc(f->obs->metrics, SW_M_EMERGENCY,
                   (const char *const[]){l->g->emergency ? "declared" : "cleared"}, 1);
    snprintf(l->g->emergency_reason, sizeof l->g->emergency_reason, "%s",
             reason ? json_string_value(reason) : "");
    sw_rstate_flags_changed(l->g->rstate);
    sw_warn("admin: emergency %s (reason: %s)", l->g->emergency ? "DECLARED" : "cleared",
            l->g->emergency_reason[0] ? l->g->emergency_reason : "none given");
    json_decref(body);
    reply_json_value(req, 200, json_pack("{s:b, s:s}", "emergency", l->g->emergency, "reason",
                                         l->g->emergency_reason));
}

/* GET /admin/decisions?n=N (1..1000, default 20): the latest decision-log lines. */
void sw_admin_decisions(struct sw_front *f, struct sw_http_req *req)
{
    long n = 20;
    const char *q = sw_http_query(req);
    struct evkeyvalq params = {0};
    if (q && evhttp_parse_query_str(q, &params) == 0) {
        const char *v = evhttp_find_header(&params, "n");
        char *end;
        if (v) {
            errno = 0;
            n = strtol(v, &end, 10);
            if (errno || end == v || *end || n < 1 || n > 1000) {
                evhttp_clear_headers(&params);
                sw_reply_error(req, 400, "invalid_request_error", "invalid_value", "n",
                               "n must be an integer from 1 to 1000.");
                return;
            }
        }
    }
    evhttp_clear_headers(&params);
    struct sw_buf b;
    sw_buf_init(&b, 64 << 20);
    if (sw_declog_ring_render(f->obs->ring, (size_t)n, &b)) {
        sw_buf_free(&b);
        sw_reply_error(req, 500, "server_error", NULL, NULL, "Out of memory.");
        return;
    }
    sw_reply_json(req, 200, b.ptr, b.len);
    sw_buf_free(&b);
}

/* POST /admin/reload: the same as SIGHUP. */
void sw_admin_reload(struct sw_front *f, struct sw_http_req *req)
{
    char msg[512] = "";
    if (!f->hooks.reload) {
        sw_reply_error(req, 503, "server_error", "reload_unavailable", NULL,
                       "Reload is not available.");
        return;
    }
    if (f->hooks.reload(f->hooks.ud, msg, sizeof msg) != SW_OK) {
        sw_reply_error(req, 422, "invalid_request_error", "invalid_config", NULL,
                       "The new configuration was refused; the old one keeps serving: %s", msg);
        return;
    }
    reply_json_value(req, 200, json_pack("{s:b, s:s}", "reloaded", 1, "config", f->cfg->path));
}

/* POST /admin/breakers/{backend}/reset: closes that backend's breaker now. */
void sw_admin_breaker_reset(struct sw_front *f, struct sw_http_req *req,
                                       const char *name, size_t len)
{
    for (size_t i = 0; i < f->live->n; i++) {
        struct sw_live_backend *b = f->live->b[i];
        if (strlen(b->name) == len && !memcmp(b->name, name, len)) {
            sw_breaker_reset(&b->breaker);
            sw_rstate_breaker_reset(f->live->g->rstate, f->live, i);
            sw_warn("admin: breaker of %s reset", b->name);
            reply_json_value(req, 200, json_pack("{s:s, s:s}", "backend", b->name, "breaker",
                                                 "closed"));
            return;
        }
    }
    sw_reply_error(req, 404, "invalid_request_error", "unknown_backend", NULL,
                   "No backend named '%.*s'.", (int)len, name);
}

/* PUT /admin/thresholds: runtime changes without a restart (until the next
 * reload): ttft_budget_ms, spend_cap_usd, latency_degrade_ms,
 * latency_recover_ms. Every field is checked before any is applied. */
void sw_admin_thresholds(struct sw_front *f, struct sw_http_req *req)
{
    json_t *body = admin_body(req);
    if (!body)
        return;
    struct sw_live_shared *g = f->live->g;
    json_t *ttft = json_object_get(body, "ttft_budget_ms");
    json_t *cap = json_object_get(body, "spend_cap_usd");
    json_t *deg = json_object_get(body, "latency_degrade_ms");
    json_t *rec = json_object_get(body, "latency_recover_ms");
    const char *bad = NULL;
    if (ttft && (!json_is_integer(ttft) || json_integer_value(ttft) < 1 ||
                 json_integer_value(ttft) > 600000))
        bad = "ttft_budget_ms: an integer 1..600000";
    else if (cap && (!json_is_number(cap) || json_number_value(cap) < 0))
        bad = "spend_cap_usd: a number >= 0 (0: no cap)";
    else if ((deg && (!json_is_number(deg) || json_number_value(deg) <= 0)) ||
             (rec && (!json_is_number(rec) || json_number_value(rec) <= 0)))
        bad = "latency_degrade_ms / latency_recover_ms: numbers > 0";
    else if (f->live->n && (deg || rec) &&
             (rec ? json_number_value(rec) : f->live->b[0]->latwin.recover_ms) >=
                 (deg ? json_number_value(deg) : f->live->b[0]->latwin.degrade_ms))
        bad = "latency_recover_ms must stay below latency_degrade_ms (the hysteresis)";
    if (bad) {
        json_decref(body);
        sw_reply_error(req, 400, "invalid_request_error", "invalid_value", NULL, "%s", bad);
        return;
    }
    if (ttft)
        g->ttft_budget_ms = (long)json_integer_value(ttft);
    if (cap)
        g->spend_cap_usd = json_number_value(cap);
    for (size_t i = 0; i < f->live->n; i++) {
        if (deg)
            f->live->b[i]->latwin.degrade_ms = json_number_value(deg);
        if (rec)
            f->live->b[i]->latwin.recover_ms = json_number_value(rec);
    }
    json_decref(body);
    sw_rstate_flags_changed(g->rstate);
    sw_warn("admin: thresholds changed (ttft_budget_ms %ld, spend_cap_usd %.4f)",
            g->ttft_budget_ms, g->spend_cap_usd);
    sw_admin_state(f, req);
}
