#include "state/live.h"

#include <stdlib.h>
#include <string.h>

#include "common/err.h"

struct sw_live *sw_live_new(struct sw_config *cfg, int64_t now_ms, int64_t wall_ms)
{
    struct sw_live *l = calloc(1, sizeof *l);
    if (!l)
        return NULL;
    l->b = calloc(cfg->n_backends ? cfg->n_backends : 1, sizeof *l->b);
    if (!l->b) {
        free(l);
        return NULL;
    }
    l->cfg = sw_config_ref(cfg);
    l->n = cfg->n_backends;
    const struct sw_config_routing *r = &cfg->routing;
    for (size_t i = 0; i < l->n; i++) {
        const struct sw_config_backend *be = &cfg->backends[i];
        struct sw_live_backend *b = &l->b[i];
        sw_breaker_init(&b->breaker, (int)r->breaker.failures, r->breaker.window_ms,
                        r->breaker.cooldown_ms);
        sw_bucket_init(&b->bucket, be->rpm, be->tpm, now_ms);
        sw_latwin_init(&b->latwin, r->latency.window_ms, (double)r->latency.degrade_ms,
                       (double)r->latency.recover_ms, r->latency.dwell_ms);
        sw_ewma_init(&b->ewma, SW_EWMA_DEFAULT_ALPHA);
        sw_localq_init(&b->q, be->tier == SW_TIER_LOCAL ? be->slots : 1000000,
                       be->tier == SW_TIER_LOCAL ? be->queue_max : 0);
        b->health = SW_HEALTH_UP;
        b->load_ms = SW_LIVE_PRIOR_LOAD_MS;
    }
    l->wall_offset_ms = wall_ms - now_ms;
    sw_spend_init(&l->spend,
                  r->spend.window == SW_SPEND_DAY ? SW_SPEND_DAY_MS : SW_SPEND_HOUR_MS, wall_ms);
    l->emergency = r->emergency;
    if (l->emergency)
        strncpy(l->emergency_reason, "declared in the configuration", sizeof l->emergency_reason - 1);
    return l;
}

void sw_live_free(struct sw_live *l)
{
    if (!l)
        return;
    sw_config_unref(l->cfg);
    free(l->b);
    free(l);
}

static void fill_view(struct sw_live *l, size_t i, int64_t now_ms, struct sw_route_backend_view *v)
{
    const struct sw_config_backend *be = &l->cfg->backends[i];
    struct sw_live_backend *b = &l->b[i];
    memset(v, 0, sizeof *v);
    v->name = be->name;
    v->tier = be->tier;
    v->health = b->health;
    if (v->health == SW_HEALTH_UP && sw_latwin_degraded(&b->latwin, now_ms))
        v->health = SW_HEALTH_DEGRADED;
    v->breaker = sw_breaker_state(&b->breaker, now_ms);
    v->probe_free = sw_breaker_probe_free(&b->breaker, now_ms);
    v->slots = be->tier == SW_TIER_LOCAL ? be->slots : 0;
    v->in_flight = b->q.in_flight;
    v->queued = b->q.queued;
    v->queue_max = b->q.queue_max;
    v->prefill_ms_per_token = b->ewma.prefill_ms_per_token;
    v->decode_tps = b->ewma.decode_tps;
    v->avg_output_tokens = b->ewma.output_tokens;
    v->ttft_avg_ms = sw_latwin_avg(&b->latwin, now_ms);
    v->rtt_ms = b->rtt_ms;
    if (b->health == SW_HEALTH_COLD) {
        v->warm_eta_ms = b->load_ms;
    } else if (b->health == SW_HEALTH_WARMING) {
        double elapsed = (double)(now_ms - b->warming_since_ms);
        v->warm_eta_ms = b->load_ms > elapsed ? b->load_ms - elapsed : 0;
    }
    v->max_context_tokens = be->max_context_tokens;
    v->supports_tools = be->supports_tools;
    v->supports_images = be->supports_images;
    v->rpm_available = be->rpm ? sw_bucket_rpm_available(&b->bucket, now_ms) : -1;
    v->tpm_available = be->tpm ? sw_bucket_tpm_available(&b->bucket, now_ms) : -1;
    v->input_usd_per_mtok = be->input_usd_per_mtok;
    v->output_usd_per_mtok = be->output_usd_per_mtok;
}

void sw_live_snapshot(struct sw_live *l, const struct sw_config_model *model, int64_t now_ms,
                      struct sw_live_snapshot *out)
{
    const struct sw_config_routing *r = &l->cfg->routing;
    size_t n = 0;
    for (size_t k = 0; k < model->n_backends && n < SW_ROUTE_MAX_BACKENDS; k++) {
        out->map[n] = model->backends[k];
        fill_view(l, model->backends[k], now_ms, &out->backends[n++]);
    }
    long degrade = -1;
    if (r->spend.degrade_backend >= 0) {
        for (size_t k = 0; k < n; k++)
            if (out->map[k] == (size_t)r->spend.degrade_backend)
                degrade = (long)k;
        if (degrade < 0 && n < SW_ROUTE_MAX_BACKENDS) {
            out->map[n] = (size_t)r->spend.degrade_backend;
            fill_view(l, out->map[n], now_ms, &out->backends[n]);
            out->backends[n].degrade_only = true; /* only for the cap's degrade policy */
            degrade = (long)n++;
        }
    }
    out->view = (struct sw_route_view){
        .backends = out->backends,
        .n = n,
        .spend_usd = sw_spend_total(&l->spend, sw_live_wall_ms(l, now_ms)),
        .emergency = l->emergency,
    };
    out->policy = (struct sw_route_policy){
        .ttft_budget_ms = model->ttft_budget_ms ? model->ttft_budget_ms : r->ttft_budget_ms,
        .spend_cap_usd = r->spend.cap_usd,
        .on_cap = r->spend.on_cap == SW_ON_CAP_DEGRADE   ? SW_CAP_DEGRADE
                  : r->spend.on_cap == SW_ON_CAP_KEEP_LOCAL ? SW_CAP_KEEP_LOCAL
                                                            : SW_CAP_SHED,
        .degrade_backend = degrade,
        .masking_available = false, /* the PII issue brings masking */
        .shed_retry_after_s = r->spend.shed_retry_after_s,
    };
}

/* Up again; a finished warm-up teaches how long loading takes. */
static void mark_up(struct sw_live_backend *b, int64_t now_ms)
{
    if (b->health == SW_HEALTH_WARMING)
        b->load_ms = (double)(now_ms - b->warming_since_ms);
    b->health = SW_HEALTH_UP;
    b->warming_since_ms = 0;
}

void sw_live_on_warmup(struct sw_live *l, size_t i, int64_t now_ms)
{
    struct sw_live_backend *b = &l->b[i];
    if (b->health != SW_HEALTH_WARMING) {
        b->health = SW_HEALTH_WARMING;
        b->warming_since_ms = now_ms;
    }
}

void sw_live_on_success(struct sw_live *l, size_t i, int64_t now_ms, long prompt_tokens,
                        double ttft_ms, double decode_ms, long output_tokens)
{
    struct sw_live_backend *b = &l->b[i];
    sw_breaker_on_success(&b->breaker, now_ms);
    if (ttft_ms >= 0)
        sw_latwin_add(&b->latwin, now_ms, ttft_ms);
    sw_ewma_observe(&b->ewma, prompt_tokens, ttft_ms, b->rtt_ms, decode_ms, output_tokens);
    mark_up(b, now_ms);
}

void sw_live_on_failure(struct sw_live *l, size_t i, int64_t now_ms, int http_status,
                        int transport_err, long retry_after_s)
{
    struct sw_live_backend *b = &l->b[i];
    if (sw_breaker_qualifies(http_status, transport_err))
        sw_breaker_on_failure(&b->breaker, now_ms, retry_after_s > 0 ? retry_after_s * 1000 : 0);
    else /* it answered: reachable, whatever it thought of this request */
        sw_breaker_on_success(&b->breaker, now_ms);
    if (transport_err == SW_ECONNECT)
        b->health = SW_HEALTH_DOWN;
}

void sw_live_count_rejection(struct sw_live *l, const char *code)
{
    for (size_t i = 0; i < l->n_codes; i++) {
        if (!strcmp(l->rejections[i].code, code)) {
            l->rejections[i].n++;
            return;
        }
    }
    if (l->n_codes < SW_LIVE_MAX_CODES)
        l->rejections[l->n_codes++] = (typeof(l->rejections[0])){code, 1};
}

void sw_live_on_probe(struct sw_live *l, size_t i, int64_t now_ms, double ttft_ms)
{
    sw_latwin_add(&l->b[i].latwin, now_ms, ttft_ms);
}

void sw_live_on_health(struct sw_live *l, size_t i, int64_t now_ms, int status, double rtt_ms)
{
    struct sw_live_backend *b = &l->b[i];
    if (status == 200) {
        mark_up(b, now_ms);
        b->rtt_ms = rtt_ms;
    } else if (status == 503) {
        if (b->health != SW_HEALTH_WARMING)
            b->health = SW_HEALTH_COLD;
        b->rtt_ms = rtt_ms;
    } else {
        /* The daemon's heartbeat is gone: that counts against the breaker
         * like a failed request, so a crash opens it without costing
         * requests; only a real request (the half-open probe) closes it. */
        b->health = SW_HEALTH_DOWN;
        sw_breaker_on_failure(&b->breaker, now_ms, 0);
    }
}
