#include "obs/obs.h"

#include <math.h>
#include <string.h>

#include "common/err.h"

/* ---- One finished request -> counters ---- */

void sw_obs_account(struct sw_metrics *m, struct sw_spill *spill,
                    const struct sw_declog_entry *e, bool spilled, int64_t now_s)
{
    size_t na = e->attempts ? e->n_attempts : 0;
    for (size_t i = 0; i < na; i++) {
        const struct sw_declog_attempt *a = &e->attempts[i];
        const char *cls = NULL;
        if (a->outcome == SW_ATTEMPT_FAILED)
            cls = a->error ? a->error : "unknown";
        else if (a->outcome == SW_ATTEMPT_CLIENT_GONE)
            cls = "client_gone";
        if (cls)
            sw_metrics_inc(m, SW_M_ERRORS, &cls, 1);
        if (a->reason && a->backend && strcmp(a->reason, "panic") == 0)
            sw_metrics_inc(m, SW_M_PANIC, &a->backend, 1);
    }

    if (e->decision == SW_DECLOG_REJECTED) {
        const char *code = e->code ? e->code : "unknown";
        sw_metrics_inc(m, SW_M_REJECTIONS, &code, 1);
        /* An answer that was refused (output contract) still used tokens
         * and, on a cloud, cost money. */
        const char *in[] = {e->backend, "in"}, *out[] = {e->backend, "out"};
        if (e->backend && e->tokens_in >= 0)
            sw_metrics_inc(m, SW_M_TOKENS, in, (double)e->tokens_in);
        if (e->backend && e->tokens_out >= 0)
            sw_metrics_inc(m, SW_M_TOKENS, out, (double)e->tokens_out);
        if (e->backend && e->tier && strcmp(e->tier, "cloud") == 0)
            sw_metrics_inc(m, SW_M_CLOUD_COST, &e->backend, e->cost_usd);
    } else {
        const char *req[] = {e->model, e->backend, e->tier, e->reason};
        sw_metrics_inc(m, SW_M_REQUESTS, req, 1);
        if (e->api && strcmp(e->api, "embeddings") == 0)
            sw_metrics_inc(m, SW_M_EMBEDDINGS, req, 1);
        if (e->priority) {
            const char *pr[] = {e->priority, e->tier, e->reason};
            sw_metrics_inc(m, SW_M_PRIORITY, pr, 1);
        }
        const char *in[] = {e->backend, "in"}, *out[] = {e->backend, "out"};
        if (e->tokens_in >= 0)
            sw_metrics_inc(m, SW_M_TOKENS, in, (double)e->tokens_in);
        if (e->tokens_out >= 0)
            sw_metrics_inc(m, SW_M_TOKENS, out, (double)e->tokens_out);
        if (e->tier && strcmp(e->tier, "cloud") == 0)
            sw_metrics_inc(m, SW_M_CLOUD_COST, &e->backend, e->cost_usd);
        if (e->ttft_ms >= 0)
            sw_metrics_observe(m, SW_M_TTFT, &e->backend, e->ttft_ms / 1000);
        if (e->duration_ms >= 0)
            sw_metrics_observe(m, SW_M_DURATION, &e->backend, e->duration_ms / 1000);
        if (spilled)
            sw_metrics_inc(m, SW_M_SPILLED, &e->model, 1);
        for (size_t i = 0; e->dropped && i < e->n_dropped; i++)
            sw_metrics_inc(m, SW_M_DROPPED, &e->dropped[i], 1);
        if (spill)
            sw_spill_add(spill, now_s, spilled);
    }

    size_t np = e->pii ? e->n_pii : 0;
    const char *outcome = e->pii_outcome ? e->pii_outcome : "found";
    for (size_t i = 0; i < np; i++) {
        const char *l[] = {e->pii[i].type, outcome};
        if (e->pii[i].n)
            sw_metrics_inc(m, SW_M_PII, l, (double)e->pii[i].n);
    }
}

void sw_obs_record(struct sw_obs_sinks *s, const struct sw_declog_entry *e, bool spilled,
                   int64_t now_s)
{
    sw_obs_account(s->metrics, &s->spill, e, spilled, now_s);
    sw_declog_record(s->log, s->ring, e);
}

/* ---- Gauges at scrape time ---- */

enum which {
    QUEUE, IN_FLIGHT, SLOTS, WAIT, PREFILL, PREFILL_TPS, DECODE, BREAKER, UP, RPM, TPM, OUTSIDE,
    STALE
};

static const struct {
    enum which which;
    const char *name;
    const char *help;
    bool local_only;
} per_backend[] = {
    {QUEUE, "spillway_local_queue_depth",
     "Requests waiting in Spillway's own queue for a local backend.", true},
    {IN_FLIGHT, "spillway_local_in_flight",
     "Requests running on a local backend now (at most its slots).", true},
    {SLOTS, "spillway_local_slots",
     "Slots of a local backend (the most requests it runs at once; 0: unbounded).", true},
    {WAIT, "spillway_local_estimated_wait_seconds",
     "Estimated time before a new request would start generating on a local backend.", true},
    {PREFILL, "spillway_learned_prefill_seconds_per_token",
     "Prefill time per prompt token the router assumes for a local backend (the rate in "
     "force: see spillway_prefill_tokens_per_second for its source).", true},
    {PREFILL_TPS, "spillway_prefill_tokens_per_second",
     "Prefill rate the router assumes for a local backend, prompt tokens/s; the source label "
     "says where it comes from: server (its own metrics), learned (first-token times), warmup "
     "(a timed request of its own), config (backends[].prefill_tps) or default.",
     true},
    {DECODE, "spillway_learned_decode_tokens_per_second",
     "Learned decode speed per slot of a local backend.", true},
    {BREAKER, "spillway_breaker_state",
     "Circuit breaker of a backend: 0 closed, 1 half-open, 2 open.", false},
    {UP, "spillway_backend_up",
     "1 when a backend takes traffic (health up or degraded), else 0; the health label "
     "carries its state (up, degraded, cold, warming, down).",
     false},
    {RPM, "spillway_bucket_requests_available",
     "Requests left in a backend's requests-per-minute bucket (backends with a limit).", false},
    {TPM, "spillway_bucket_tokens_available",
     "Tokens left in a backend's tokens-per-minute bucket (backends with a limit).", false},
    {OUTSIDE, "spillway_backend_outside_load",
     "Requests a local server reports (processing + waiting) beyond Spillway's own in flight "
     "there; 0 while its load signal is stale (backends with a load source).", true},
    {STALE, "spillway_load_signal_stale",
     "1 when a local backend's load signal is missing, older than 4 polls or failing (the "
     "wait estimate then uses Spillway's own queue alone), else 0.", true},
};

/* The per-backend gauges (per_backend), one series per backend. */
static int render_backends(struct sw_metrics_scrape *s, const struct sw_obs_gauges *g)
{
    static const char *const backend_label[] = {"backend"};
    static const char *const up_labels[] = {"backend", "health"};
    static const char *const prefill_labels[] = {"backend", "source"};
    int err = SW_OK;
    for (size_t f = 0; f < sizeof per_backend / sizeof per_backend[0] && !err; f++) {
        for (size_t i = 0; i < g->n_backends && !err; i++) {
            const struct sw_obs_backend *b = &g->backends[i];
            if (per_backend[f].local_only && !b->local)
                continue;
            if ((per_backend[f].which == OUTSIDE || per_backend[f].which == STALE) &&
                !b->load_signal)
                continue;
            double v;
            switch (per_backend[f].which) {
            case QUEUE: v = b->queued; break;
            case IN_FLIGHT: v = b->in_flight; break;
            case SLOTS: v = b->slots; break;
            case WAIT: v = b->est_wait_ms / 1000; break;
            case PREFILL: v = b->prefill_ms_per_token / 1000; break;
            case PREFILL_TPS:
                v = b->prefill_ms_per_token > 0 ? 1000 / b->prefill_ms_per_token : 0;
                break;
            case DECODE: v = b->decode_tps; break;
            case BREAKER: v = b->breaker; break;
            case UP:
                v = b->health && (!strcmp(b->health, "up") || !strcmp(b->health, "degraded"));
                break;
            case RPM: v = b->rpm_available; break;
            case TPM: v = b->tpm_available; break;
            case OUTSIDE: v = b->outside_load; break;
            case STALE: v = b->load_stale; break;
            default: v = NAN; break;
            }
            if ((per_backend[f].which == RPM || per_backend[f].which == TPM) &&
                (!isfinite(v) || v < 0))
                continue;   /* no limit: no bucket */
            if (per_backend[f].which == PREFILL_TPS) {
                const char *vals[] = {b->name, b->prefill_source ? b->prefill_source : "default"};
                err = sw_metrics_gauge(s, per_backend[f].name, per_backend[f].help,
                                       prefill_labels, vals, 2, v);
            } else if (per_backend[f].which == UP) {
                const char *vals[] = {b->name, b->health ? b->health : "unknown"};
                err = sw_metrics_gauge(s, per_backend[f].name, per_backend[f].help, up_labels,
                                       vals, 2, v);
            } else {
                err = sw_metrics_gauge(s, per_backend[f].name, per_backend[f].help,
                                       backend_label, &b->name, 1, v);
            }
        }
    }
    return err;
}

/* The scan-verdict cache's and the parse memo's series. */
static int render_caches(struct sw_metrics_scrape *s, const struct sw_obs_gauges *g)
{
    const struct {
        const char *name, *help;
        bool counter;
        double v;
    } series[] = {
        {"spillway_pii_scan_cache_hits_total",
         "Texts of at least 256 bytes (arguments: 16) whose PII scan verdict came from the "
         "cache: the same bytes were scanned before by the same engine "
         "(limits.scan_cache_bytes).", true, (double)g->pii_cache_hits},
        {"spillway_pii_scan_cache_misses_total",
         "Texts of those sizes scanned for PII because their verdict was not in the cache.",
         true, (double)g->pii_cache_misses},
        {"spillway_pii_scan_cache_evicted_total",
         "Scan verdicts dropped from the cache to stay under limits.scan_cache_bytes.", true,
         (double)g->pii_cache_evicted},
        {"spillway_pii_scan_cache_bytes",
         "Bytes the scan-verdict cache holds (spans and digests, never text).", false,
         g->pii_cache_bytes},
        {"spillway_pii_scan_cache_entries", "Scan verdicts the cache holds.", false,
         g->pii_cache_entries},
        {"spillway_pii_scan_cache_max_bytes",
         "The scan-verdict cache's bound (limits.scan_cache_bytes; 0: off).", false,
         g->pii_cache_max_bytes},
        {"spillway_parse_cache_hits_total",
         "Array elements of request bodies (messages, input items, tools, system blocks) of at "
         "least 64 bytes whose tree came from the parse memo: the same bytes were parsed "
         "before (limits.parse_cache_bytes).", true, (double)g->parse_cache_hits},
        {"spillway_parse_cache_misses_total", "Elements of that size parsed, then kept.", true,
         (double)g->parse_cache_misses},
        {"spillway_parse_cache_evicted_total",
         "Parsed elements dropped from the memo to stay under limits.parse_cache_bytes.", true,
         (double)g->parse_cache_evicted},
        {"spillway_parse_cache_bytes",
         "Bytes the parse memo holds (an estimate: the elements' bytes and their trees).",
         false, g->parse_cache_bytes},
        {"spillway_parse_cache_entries", "Parsed elements the memo holds.", false,
         g->parse_cache_entries},
        {"spillway_parse_cache_max_bytes", "The parse memo's bound (limits.parse_cache_bytes; "
         "0: off).", false, g->parse_cache_max_bytes},
    };
    int err = SW_OK;
    for (size_t i = 0; !err && i < sizeof series / sizeof *series; i++)
        err = (series[i].counter ? sw_metrics_scrape_counter : sw_metrics_gauge)(
            s, series[i].name, series[i].help, NULL, NULL, 0, series[i].v);
    return err;
}

int sw_obs_render_gauges(struct sw_buf *out, const struct sw_obs_gauges *g)
{
    struct sw_metrics_scrape s;
    sw_metrics_scrape_init(&s, out);
    int err = render_backends(&s, g);
    if (!err)
        err = sw_metrics_gauge(&s, "spillway_ttft_budget_seconds",
                               "The TTFT budget in force (routing.ttft_budget_ms, or a runtime "
                               "threshold set through PUT /admin/thresholds).",
                               NULL, NULL, 0, g->ttft_budget_ms / 1000);
    if (!err)
        err = sw_metrics_gauge(&s, "spillway_cloud_spend_usd",
                               "Cloud spend in the current spend window, in US dollars "
                               "(including reservations of requests in flight).",
                               NULL, NULL, 0, g->spend_usd);
    if (!err)
        err = sw_metrics_gauge(&s, "spillway_cloud_spend_cap_usd",
                               "Cap on cloud spend per window, in US dollars; 0: no cap.", NULL,
                               NULL, 0, g->spend_cap_usd);
    if (!err)
        err = sw_metrics_gauge(&s, "spillway_spill_ratio",
                               "Share of the requests served in the last 60 s that spilled to "
                               "the cloud because local could not serve them.",
                               NULL, NULL, 0, g->spill_ratio);
    if (!err)
        err = sw_metrics_gauge(&s, "spillway_emergency",
                               "1 while an emergency is declared (sensitive requests may reach "
                               "the cloud, masked), else 0.",
                               NULL, NULL, 0, g->emergency ? 1 : 0);
    /* Also without state.redis (always 0 then), so an alert on it loads everywhere. */
    if (!err)
        err = sw_metrics_gauge(&s, "spillway_state_degraded",
                               "1 while the shared state (state.redis) is unreachable or slow and "
                               "this replica runs on its own (spend cap closed, slot share); "
                               "always 0 without state.redis.",
                               (const char *const[]){"reason"}, (const char *const[]){"redis"},
                               1, g->state_degraded ? 1 : 0);
    if (!err)
        err = sw_metrics_scrape_counter(&s, "spillway_decision_log_write_errors_total",
                                        "Decision-log lines lost because the write failed.",
                                        NULL, NULL, 0, (double)g->declog_write_errors);
    if (!err)
        err = sw_metrics_gauge(&s, "spillway_event_loop_lag_seconds",
                               "Worst lateness of a 100 ms timer on the event loop over the "
                               "last second: how long a ready event may wait to be served.",
                               NULL, NULL, 0, g->loop_lag_ms / 1000.0);
    if (!err)
        err = sw_metrics_scrape_counter(&s, "spillway_idle_connections_closed_total",
                                        "Idle keep-alive client connections closed to make room "
                                        "for a new one at limits.max_connections.",
                                        NULL, NULL, 0, (double)g->idle_evicted);
    if (!err)
        err = sw_metrics_scrape_counter(&s, "spillway_pii_scans_offloaded_total",
                                        "Request bodies above 64 KiB scanned for PII on a worker "
                                        "thread (limits.scan_threads), not on the event loop.",
                                        NULL, NULL, 0, (double)g->pii_scans_offloaded);
    if (!err)
        err = sw_metrics_scrape_counter(&s, "spillway_pii_scans_dropped_total",
                                        "Of the scans off the event loop, those whose result was "
                                        "dropped because the client left mid-scan.",
                                        NULL, NULL, 0, (double)g->pii_scans_dropped);
    if (!err)
        err = sw_metrics_scrape_counter(&s, "spillway_pii_jobs_off_loop_total",
                                        "PII work on large bodies run on a worker thread, not on "
                                        "the event loop: the request scans above, and the relay's "
                                        "masking and egress checks of bodies above 64 KiB.",
                                        NULL, NULL, 0, (double)g->pii_jobs_off_loop);
    if (!err)
        err = render_caches(&s, g);
    return err;
}

int sw_obs_render_resp_store(struct sw_buf *out, const struct sw_obs_resp_store *r)
{
    struct sw_metrics_scrape s;
    sw_metrics_scrape_init(&s, out);
    const char *const lbl[] = {"store"}, *const val[] = {r->store};
    int err = sw_metrics_gauge(&s, "spillway_responses_stored",
                               "Responses held for previous_response_id and GET /v1/responses "
                               "(the memory store; 0 with state.redis, where Redis holds them).",
                               lbl, val, 1, (double)r->entries);
    if (!err)
        err = sw_metrics_gauge(&s, "spillway_responses_stored_bytes",
                               "Bytes of the responses held (the memory store; 0 with "
                               "state.redis), counted against responses.store_max_bytes.",
                               lbl, val, 1, (double)r->bytes);
    if (!err)
        err = sw_metrics_scrape_counter(&s, "spillway_responses_evicted_total",
                                        "Stored responses dropped to make room for a new one "
                                        "(responses.store_max_entries or store_max_bytes).",
                                        lbl, val, 1, (double)r->evicted);
    if (!err)
        err = sw_metrics_scrape_counter(&s, "spillway_responses_expired_total",
                                        "Stored responses dropped at responses.store_ttl_s.",
                                        lbl, val, 1, (double)r->expired);
    if (!err)
        err = sw_metrics_scrape_counter(&s, "spillway_responses_store_refused_total",
                                        "Responses that could not be stored: larger than "
                                        "responses.store_max_bytes, or the store unreachable.",
                                        lbl, val, 1, (double)r->refused);
    return err;
}

size_t sw_obs_pii_list(const struct sw_pii_engine *e, const struct sw_pii_counts *c,
                       struct sw_declog_pii *out)
{
    size_t n = 0;
    if (!e || !c)
        return 0;
    static const uint32_t none[SW_PII_MAX_TYPES];
    if (memcmp(c->n, none, sizeof none) == 0)
        return 0;   /* the usual case */
    for (int t = 0; t < SW_PII_MAX_TYPES; t++)
        if (c->n[t])
            out[n++] = (struct sw_declog_pii){sw_pii_type_name(e, t), c->n[t]};
    return n;
}
