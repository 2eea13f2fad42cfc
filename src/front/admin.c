#include "front/admin.h"

#include <errno.h>
#include <math.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/err.h"
#include "common/jmemo.h"
#include "common/log.h"
#include "common/workpool.h"
#include "common/query.h"
#include "front/admin_keys.h"
#include "obs/dashboard.h"
#include "obs/series.h"
#include "pii/cache.h"
#include "state/store.h"
#include "relay/reply.h"
#include "upstream/otlp.h"

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
/* Where backend i's prefill rate in its view comes from (route/prefill.h). */
static const char *prefill_source(const struct sw_live *l, size_t i)
{
    enum sw_prefill_source src;
    sw_prefill_ms_per_token(&l->b[i]->prefill, &l->b[i]->ewma, &src);
    return sw_prefill_source_name(src);
}

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
            .health = sw_health_name(v->health),
            .breaker = sw_breaker_gauge(v->breaker),
            .in_flight = (double)v->in_flight,
            .slots = (double)v->slots,
            .queued = (double)v->queued,
            .est_wait_ms = sw_route_est_ttft_ms(v, 0),
            .prefill_ms_per_token = v->prefill_ms_per_token,
            .prefill_source = prefill_source(l, i),
            .decode_tps = v->decode_tps,
            .rpm_available = v->rpm_available,
            .tpm_available = v->tpm_available,
            .load_signal = v->tier == SW_TIER_LOCAL && l->cfg->backends[i].load.source != 0,
            .outside_load = v->outside_load,
            .load_stale = sw_live_load_stale(l, i, now),
        };
    }
    struct sw_pii_cache_stats pc;
    sw_pii_cache_get_stats(sw_pii_engine_cache(l->pii), &pc);
    struct sw_jmemo_stats jm;
    sw_jmemo_get_stats(&jm);
    struct sw_obs_gauges g = {
        .backends = obs,
        .n_backends = n,
        .spend_usd = sw_live_spend_usd(l, now),
        .spend_cap_usd = sw_live_spend_cap_usd(l),
        .ttft_budget_ms = (double)(l->g->ttft_budget_ms ? l->g->ttft_budget_ms
                                                        : f->cfg->routing.ttft_budget_ms),
        .spill_ratio = sw_spill_ratio(&f->obs->spill, now / 1000),
        .emergency = l->g->emergency,
        .state_shared = l->g->store.ops->shared,
        .state_degraded = sw_store_degraded(&l->g->store),
        .declog_write_errors = sw_declog_write_errors(f->obs->log),
        .loop_lag_ms = sw_ticks_lag_ms(&f->ticks),
        .idle_evicted = sw_http_server_evicted(f->http),
        .pii_scans_offloaded = f->scans_offloaded,
        .pii_scans_dropped = f->scans_dropped,
        .pii_jobs_off_loop = sw_workpool_submitted(f->scan_pool),
        .pii_cache_hits = pc.hits,
        .pii_cache_misses = pc.misses,
        .pii_cache_evicted = pc.evicted,
        .pii_cache_bytes = (double)pc.bytes,
        .pii_cache_entries = (double)pc.entries,
        .pii_cache_max_bytes = (double)pc.max_bytes,
        .parse_cache_hits = jm.hits,
        .parse_cache_misses = jm.misses,
        .parse_cache_evicted = jm.evicted,
        .parse_cache_bytes = (double)jm.bytes,
        .parse_cache_entries = (double)jm.entries,
        .parse_cache_max_bytes = (double)jm.max_bytes,
    };
    struct sw_buf b;
    sw_buf_init(&b, 16 << 20);
    int err = sw_metrics_render(f->obs->metrics, &b);
    if (!err)
        err = sw_obs_render_gauges(&b, &g);
    if (!err)
        err = sw_admin_keys_metrics(f, &b);
    if (!err && l->g->resp) {
        struct sw_respstore_stats rs;
        sw_respstore_stats(l->g->resp, &rs);
        const struct sw_obs_resp_store r = {
            .store = l->g->resp->ops->name, .entries = rs.entries, .bytes = rs.bytes,
            .evicted = rs.evicted, .expired = rs.expired, .refused = rs.refused};
        err = sw_obs_render_resp_store(&b, &r);
    }
    if (!err && f->obs->otlp)
        err = sw_otlp_render_metrics(f->obs->otlp, &b);
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
                       "The admin API needs 'Authorization: Bearer ADMIN_KEY', the secret "
                       "under admin.key in the gateway's config.");
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

/* A backend's load signal: source, the last values and their age, whether
 * the router uses them, and why the latest poll failed. */
static json_t *load_state(const struct sw_live *l, size_t i, int64_t now)
{
    const struct sw_config_backend *be = &l->cfg->backends[i];
    const struct sw_live_backend *b = l->b[i];
    json_t *o = json_pack("{s:s}", "source", sw_load_source_name(be->load.source));
    if (!o || be->load.source == SW_LOAD_NONE)
        return o;
    bool have = b->load.at_ms > 0;
    json_object_set_new(o, "poll_ms", json_integer(be->load.poll_ms));
    json_object_set_new(o, "processing", have ? json_real(b->load.processing) : json_null());
    json_object_set_new(o, "waiting", have ? json_real(b->load.waiting) : json_null());
    json_object_set_new(o, "saturated", json_boolean(have && b->load.saturated));
    json_object_set_new(o, "age_ms", have ? json_integer(now - b->load.at_ms) : json_null());
    json_object_set_new(o, "stale", json_boolean(sw_live_load_stale(l, i, now)));
    json_object_set_new(o, "outside_load", json_real(sw_live_outside_load(l, i, now)));
    json_object_set_new(o, "error", b->load.error[0] ? json_string(b->load.error) : json_null());
    return o;
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
                      sw_health_name(v.health), "breaker", sw_breaker_name(v.breaker), "slots",
                      (json_int_t)v.slots, "in_flight", (json_int_t)v.in_flight, "queued",
                      (json_int_t)v.queued, "est_ttft_ms", sw_route_est_ttft_ms(&v, 0),
                      "prefill_ms_per_token", v.prefill_ms_per_token, "decode_tps",
                      v.decode_tps, "avg_output_tokens", v.avg_output_tokens, "ttft_avg_ms",
                      v.ttft_avg_ms, "rpm_available", v.rpm_available, "tpm_available",
                      v.tpm_available));
        const char *why = l->b[i]->last_error;
        json_t *entry = json_array_get(backends, json_array_size(backends) - 1);
        json_object_set_new(entry, "last_error", why[0] ? json_string(why) : json_null());
        json_object_set_new(entry, "load", load_state(l, i, now));
        json_object_set_new(entry, "prefill_source", json_string(prefill_source(l, i)));
        if (v.tier == SW_TIER_LOCAL) { /* the learned share of a matched prefix found cached */
            json_object_set_new(entry, "prefix_cache_hit", json_real(sw_live_cache_hit(l, i, false)));
            json_object_set_new(entry, "prefix_cache_hit_busy",
                                json_real(sw_live_cache_hit(l, i, true)));
        }
    }
    /* Rejections and PII: the very counters GET /metrics shows. Every PII type
     * of the snapshot under each outcome, 0 until counted. */
    static const char *const outcomes[] = {"kept_local", "masked_cloud", "region_cloud", "blocked"};
    json_t *pii = json_object();
    for (size_t o = 0; o < sizeof outcomes / sizeof *outcomes; o++) {
        json_t *types = json_object();
        for (int t = 0; t < sw_pii_type_count(l->pii); t++)
            json_object_set_new(types, sw_pii_type_name(l->pii, t), json_integer(0));
        json_object_set_new(pii, outcomes[o], types);
    }
    json_t *rejections = json_object();
    const struct sw_metrics *m = f->obs ? f->obs->metrics : NULL;
    sw_metrics_each(m, SW_M_REJECTIONS, add_rejection, rejections);
    sw_metrics_each(m, SW_M_PII, add_pii, pii);
    const char *degraded = sw_store_degraded_reason(&l->g->store);
    json_t *st = json_pack("{s:s, s:o}", "backend", l->g->store.ops->name, "degraded",
                           degraded ? json_string(degraded) : json_null());
    /* Prefix affinity: entries held (hashes and counts, never content). */
    json_object_set_new(st, "affinity_entries", json_integer((json_int_t)sw_live_affinity_entries(l)));
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
    sw_store_flags_changed(&l->g->store);
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
    char v[32];
    int qerr = sw_query_param(sw_http_query(req), "n", v, sizeof v);
    if (qerr != SW_ENOTFOUND) {
        char *end;
        errno = 0;
        n = strtol(v, &end, 10);
        if (qerr || errno || end == v || *end || n < 1 || n > 1000) {
            sw_reply_error(req, 400, "invalid_request_error", "invalid_value", "n",
                           "n must be an integer from 1 to 1000.");
            return;
        }
    }
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
            sw_store_breaker_reset(&f->live->g->store, f->live, i);
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
    sw_store_flags_changed(&g->store);
    sw_warn("admin: thresholds changed (ttft_budget_ms %ld, spend_cap_usd %.4f)",
            g->ttft_budget_ms, g->spend_cap_usd);
    sw_admin_state(f, req);
}

/* ---- Time series for the dashboard's charts ---- */

struct series_read {
    struct sw_front *f;
    struct sw_series_input *in;
    struct sw_series_code_in codes[SW_SERIES_MAX_CODES * 4];
    size_t n_codes;
};

static void read_request(void *ud, const char *const *labels, double v)
{
    struct series_read *r = ud;
    r->in->requests[strcmp(labels[2], "local") == 0 ? SW_SERIES_LOCAL : SW_SERIES_CLOUD] += v;
}

static void read_spilled(void *ud, const char *const *labels, double v)
{
    (void)labels;
    ((struct series_read *)ud)->in->spilled += v;
}

static void read_code(void *ud, const char *const *labels, double v)
{
    struct series_read *r = ud;
    if (r->n_codes < sizeof r->codes / sizeof r->codes[0])
        r->codes[r->n_codes++] = (struct sw_series_code_in){labels[0], v};
}

/* spillway_ttft_seconds{backend}, summed by the backend's tier (a backend
 * the configuration no longer has is left out). */
static void read_ttft(void *ud, const char *const *labels, const double *bounds,
                      const uint64_t *counts, size_t n_bounds, uint64_t total)
{
    struct series_read *r = ud;
    struct sw_live *l = r->f->live;
    int tier = -1;
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->b[i]->name, labels[0]) == 0)
            tier = l->b[i]->tier == SW_TIER_LOCAL ? SW_SERIES_LOCAL : SW_SERIES_CLOUD;
    if (tier < 0 || n_bounds > SW_SERIES_MAX_BOUNDS)
        return;
    r->in->ttft_bounds = bounds;
    r->in->n_bounds = n_bounds;
    uint64_t below = 0;
    for (size_t i = 0; i < n_bounds; i++) {
        r->in->ttft[tier][i] += counts[i];
        below += counts[i];
    }
    r->in->ttft[tier][n_bounds] += total > below ? total - below : 0;
}

void sw_admin_series_tick(struct sw_front *f)
{
    if (!f->series)
        return;
    struct sw_live *l = f->live;
    int64_t now = sw_now_ms();
    struct sw_series_input in = {0};
    struct series_read r = {.f = f, .in = &in};
    const struct sw_metrics *m = f->obs ? f->obs->metrics : NULL;
    sw_metrics_each(m, SW_M_REQUESTS, read_request, &r);
    sw_metrics_each(m, SW_M_SPILLED, read_spilled, &r);
    sw_metrics_each(m, SW_M_REJECTIONS, read_code, &r);
    sw_metrics_each_hist(m, SW_M_TTFT, read_ttft, &r);
    in.codes = r.codes;
    in.n_codes = r.n_codes;
    struct sw_series_backend_in be[SW_SERIES_MAX_BACKENDS];
    size_t n = 0;
    for (size_t i = 0; i < l->n && n < SW_SERIES_MAX_BACKENDS; i++) {
        struct sw_route_backend_view v = backend_view(l, i, now);
        be[n++] = (struct sw_series_backend_in){
            .name = v.name,
            .local = v.tier == SW_TIER_LOCAL,
            .in_flight = (double)v.in_flight,
            .queued = (double)v.queued,
            .slots = (double)v.slots,
            .breaker = sw_breaker_gauge(v.breaker),
        };
    }
    in.backends = be;
    in.n_backends = n;
    in.spend_usd = sw_live_spend_usd(l, now);
    in.spend_cap_usd = sw_live_spend_cap_usd(l);
    in.ttft_budget_ms = (double)(l->g->ttft_budget_ms ? l->g->ttft_budget_ms
                                                      : f->cfg->routing.ttft_budget_ms);
    in.emergency = l->g->emergency;
    sw_series_record(f->series, now / 1000, &in);
}

/* A number, or null for a gap / no value (JSON has no NaN). */
static json_t *num_or_null(const struct sw_series_sample *x, double v)
{
    return x && isfinite(v) ? json_real(v) : json_null();
}

static json_t *int_or_null(const struct sw_series_sample *x, double v)
{
    return x ? json_integer((json_int_t)v) : json_null();
}

/* The arrays of GET /admin/series, one entry per second (events: markers). */
struct series_out {
    json_t *t, *req_local, *req_cloud, *spilled, *budget, *spend, *cap, *emergency, *events;
    json_t *ttft, *p50[SW_SERIES_TIERS], *p99[SW_SERIES_TIERS];
    json_t *codes, *code_arr[SW_SERIES_MAX_CODES];
    json_t *backends, *b_in[SW_SERIES_MAX_BACKENDS], *b_q[SW_SERIES_MAX_BACKENDS],
        *b_slots[SW_SERIES_MAX_BACKENDS];
};

/* ?window=S: 1 to SW_SERIES_SLOTS seconds, 900 without; false after a 400. */
static bool series_window(struct sw_http_req *req, long *window)
{
    *window = 900;
    char v[32];
    int qerr = sw_query_param(sw_http_query(req), "window", v, sizeof v);
    if (qerr == SW_ENOTFOUND)
        return true;
    char *end;
    errno = 0;
    *window = strtol(v, &end, 10);
    if (qerr || errno || end == v || *end || *window < 1 || *window > SW_SERIES_SLOTS) {
        sw_reply_error(req, 400, "invalid_request_error", "invalid_value", "window",
                       "window must be an integer number of seconds from 1 to %d.",
                       SW_SERIES_SLOTS);
        return false;
    }
    return true;
}

/* The empty arrays: per tier, per rejection code and per backend the ring names. */
static void series_open(struct series_out *o, const struct sw_series *s)
{
    memset(o, 0, sizeof *o);
    o->t = json_array(), o->req_local = json_array(), o->req_cloud = json_array();
    o->spilled = json_array(), o->budget = json_array(), o->spend = json_array();
    o->cap = json_array(), o->emergency = json_array(), o->events = json_array();
    o->ttft = json_object();
    const char *tiers[SW_SERIES_TIERS] = {"local", "cloud"};
    for (int k = 0; k < SW_SERIES_TIERS; k++) {
        o->p50[k] = json_array();
        o->p99[k] = json_array();
        json_object_set_new(o->ttft, tiers[k],
                            json_pack("{s:o, s:o}", "p50", o->p50[k], "p99", o->p99[k]));
    }
    o->codes = json_object();
    for (size_t c = 0; c < SW_SERIES_MAX_CODES; c++) {
        const char *name = sw_series_code_name(s, c);
        if (name) {
            o->code_arr[c] = json_array();
            json_object_set_new(o->codes, name, o->code_arr[c]);
        }
    }
    o->backends = json_object();
    for (size_t i = 0; i < SW_SERIES_MAX_BACKENDS; i++) {
        const char *name = sw_series_backend_name(s, i);
        if (!name)
            break;
        o->b_in[i] = json_array();
        o->b_q[i] = json_array();
        o->b_slots[i] = json_array();
        json_object_set_new(o->backends, name,
                            json_pack("{s:s, s:o, s:o, s:o}", "tier",
                                      sw_series_backend_local(s, i) ? "local" : "cloud",
                                      "in_flight", o->b_in[i], "queued", o->b_q[i], "slots",
                                      o->b_slots[i]));
    }
}

/* One second's entries: sample x, or nulls for a gap (x NULL). */
static void series_append(struct series_out *o, const struct sw_series_sample *x,
                          json_int_t unix_s)
{
    json_array_append_new(o->t, json_integer(unix_s));
    json_array_append_new(o->req_local, int_or_null(x, x ? x->requests[SW_SERIES_LOCAL] : 0));
    json_array_append_new(o->req_cloud, int_or_null(x, x ? x->requests[SW_SERIES_CLOUD] : 0));
    json_array_append_new(o->spilled, int_or_null(x, x ? x->spilled : 0));
    for (int k = 0; k < SW_SERIES_TIERS; k++) {
        json_array_append_new(o->p50[k], num_or_null(x, x ? x->ttft_p50_ms[k] : NAN));
        json_array_append_new(o->p99[k], num_or_null(x, x ? x->ttft_p99_ms[k] : NAN));
    }
    json_array_append_new(o->budget, num_or_null(x, x ? x->ttft_budget_ms : NAN));
    json_array_append_new(o->spend, num_or_null(x, x ? x->spend_usd : NAN));
    json_array_append_new(o->cap, num_or_null(x, x ? x->spend_cap_usd : NAN));
    json_array_append_new(o->emergency, x ? json_boolean(x->emergency) : json_null());
    for (size_t c = 0; c < SW_SERIES_MAX_CODES; c++)
        if (o->code_arr[c])
            json_array_append_new(o->code_arr[c], int_or_null(x, x ? x->rejections[c] : 0));
    for (size_t i = 0; i < SW_SERIES_MAX_BACKENDS && o->b_in[i]; i++) {
        const struct sw_series_backend *b = x && x->backends[i].present ? &x->backends[i] : NULL;
        json_array_append_new(o->b_in[i], b ? json_integer(b->in_flight) : json_null());
        json_array_append_new(o->b_q[i], b ? json_integer(b->queued) : json_null());
        json_array_append_new(o->b_slots[i], b ? json_integer(b->slots) : json_null());
    }
}

/* Markers: a breaker or the emergency flag that changed from sample prev to x. */
static void series_events(struct series_out *o, const struct sw_series *s,
                          const struct sw_series_sample *prev, const struct sw_series_sample *x,
                          json_int_t ts)
{
    for (size_t i = 0; i < SW_SERIES_MAX_BACKENDS && o->b_in[i]; i++) {
        const struct sw_series_backend *a = &prev->backends[i], *b = &x->backends[i];
        if (a->present && b->present && a->breaker != b->breaker)
            json_array_append_new(
                o->events, json_pack("{s:I, s:s, s:s, s:s}", "t", ts, "kind", "breaker",
                                     "backend", sw_series_backend_name(s, i), "state",
                                     sw_breaker_name(sw_breaker_from_gauge(b->breaker))));
    }
    if (prev->emergency != x->emergency)
        json_array_append_new(o->events, json_pack("{s:I, s:s, s:s}", "t", ts, "kind",
                                                   "emergency", "state",
                                                   x->emergency ? "declared" : "cleared"));
}

/* GET /admin/series?window=S (1..3600, default 900): the last S seconds of
 * the one-second ring, one array entry per second, oldest first; null where
 * the ring has no sample (a gap). */
void sw_admin_series(struct sw_front *f, struct sw_http_req *req)
{
    long window;
    if (!series_window(req, &window))
        return;
    if (!f->series) {
        sw_reply_error(req, 500, "server_error", NULL, NULL, "Out of memory.");
        return;
    }
    const struct sw_series *s = f->series;
    int64_t last = sw_series_last(s);
    if (last < 0)
        last = sw_now_ms() / 1000;
    /* Unix seconds of the ring's monotonic seconds. */
    int64_t offset = sw_wall_s() - sw_now_ms() / 1000;
    int64_t from = last - window + 1;

    struct series_out o;
    series_open(&o, s);
    const struct sw_series_sample *prev = NULL;
    for (int64_t sec = from; sec <= last; sec++) {
        const struct sw_series_sample *x = sw_series_at(s, sec);
        series_append(&o, x, (json_int_t)(sec + offset));
        if (x && prev)
            series_events(&o, s, prev, x, (json_int_t)(sec + offset));
        if (x)
            prev = x;
    }
    reply_json_value(
        req, 200,
        json_pack("{s:I, s:I, s:i, s:I, s:I, s:o, s:{s:o, s:o}, s:o, s:o, s:o, s:o, s:o, s:o, "
                  "s:o, s:o, s:o}",
                  "now", (json_int_t)(last + offset), "window", (json_int_t)window, "capacity",
                  SW_SERIES_SLOTS, "memory_bytes", (json_int_t)sw_series_memory(), "step",
                  (json_int_t)1, "t", o.t, "requests", "local", o.req_local, "cloud",
                  o.req_cloud, "spilled", o.spilled, "ttft_ms", o.ttft, "ttft_budget_ms",
                  o.budget, "spend_usd", o.spend, "spend_cap_usd", o.cap, "emergency",
                  o.emergency, "rejections", o.codes, "backends", o.backends, "events",
                  o.events));
}
