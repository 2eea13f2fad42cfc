/* The accounting of a relayed request: see account.h. */
#include "relay/account.h"

#include <stdio.h>

#include "common/clock.h"
#include "common/err.h"
#include "common/log.h"
#include "dialect/anth_req.h"
#include "obs/obs.h"
#include "route/route.h"
#include "state/claim.h"
#include "state/live.h"
#include "state/store.h"
#include "state/tenant.h"
#include "relay/trace.h"
#include "upstream/dialect.h"

/* ---- One attempt ---- */

double sw_relay_worst_usd(const struct proxy *p, const struct sw_config_backend *be)
{
    long out = p->facts.max_tokens;
    if (!p->facts.max_tokens_given && be->max_output_tokens > 0)
        out = be->max_output_tokens;
    return sw_spend_cost_usd(sw_route_spend_prompt_tokens(&p->facts), out, be->input_usd_per_mtok,
                             be->output_usd_per_mtok);
}

void sw_relay_settle(struct proxy *p, enum sw_relay_outcome o, int http_status,
                     int transport_err)
{
    struct sw_relay_attempt *a = &p->a;
    struct sw_live *live = p->live;
    const struct sw_config_backend *be = sw_relay_backend(p);
    int64_t now = sw_now_ms();
    double ttft = a->first_byte_ms ? (double)(a->first_byte_ms - a->attempt_ms) : -1;
    if (p->n_att < SW_DECLOG_MAX_ATTEMPTS) {
        struct sw_declog_attempt *l = &p->att[p->n_att++];
        l->backend = be->name;
        l->reason = sw_reason_name(a->reason);
        l->outcome = o == SW_OUTCOME_OK       ? SW_ATTEMPT_OK
                     : o == SW_OUTCOME_FAILED ? SW_ATTEMPT_FAILED
                     : p->client_gone         ? SW_ATTEMPT_CLIENT_GONE
                                              : SW_ATTEMPT_SKIPPED;
        l->status = http_status;
        l->error = o == SW_OUTCOME_OK ? NULL
                   : a->end_class     ? a->end_class
                   : transport_err    ? sw_err_str(transport_err)
                   : http_status      ? "status"
                                      : NULL;
        l->ttft_ms = ttft;
        sw_relay_trace_attempt_end(p, p->n_att - 1, now);
    }
    long in = a->usage.in ? a->usage.in : p->chat.prompt_tokens_est;
    long out = a->usage.out ? a->usage.out : a->usage.chunks;
    double decode = a->first_byte_ms && a->last_byte_ms > a->first_byte_ms
                        ? (double)(a->last_byte_ms - a->first_byte_ms)
                        : 0;
    a->end_class = NULL;
    double cost_before = p->cost_usd;
    bool sent = p->claim.sent;
    p->claim.whole_answer = !p->chat.stream;
    p->claim.usage_unreported = !a->usage.in;
    /* A local box's prefix cache: what it reported teaches the hit share,
     * and the rates learn from the prompt it really prefilled. */
    long prefilled = in;
    if (o == SW_OUTCOME_OK && be->tier == SW_TIER_LOCAL) {
        sw_live_on_cache(live, a->be, a->prefix_tokens, a->usage.cached_known ? a->usage.cached : -1,
                         a->busy_at_start);
        sw_live_prefix_served(live, a->be, &p->prefix, now);
        if (a->usage.cached_known && a->usage.cached > 0)
            prefilled = a->usage.cached < in ? in - a->usage.cached : 0;
    }
    p->cost_usd += sw_claim_settle(live, &p->claim,
                                   o == SW_OUTCOME_OK       ? SW_CLAIM_OK
                                   : o == SW_OUTCOME_FAILED ? SW_CLAIM_FAILED
                                                            : SW_CLAIM_NEUTRAL,
                                   prefilled, out, ttft, decode, http_status, transport_err,
                                   p->up.retry_after_s, now);
    double usd = p->cost_usd - cost_before;
    sw_store_release(&live->g->store, live, &p->rh, usd > 0 ? usd : 0, sent, in + out);
    if (p->tw.ask.n)
        sw_tenant_settle(live->g->tenant, &p->tw, usd > 0 ? usd : 0, sw_wall_ms());
    sw_store_breaker_check(&live->g->store, live, a->be);
    a->lease_wait = false;
    if (o == SW_OUTCOME_OK) {
        p->served = true;
        p->tok_in = in;
        p->tok_out = out;
        if (a->first_byte_ms)
            p->ttft_ms = (double)(a->first_byte_ms - p->start_ms);
    }
}

/* ---- Fields left out ---- */

/* The names of the field classes in bits, in class order. */
static size_t dropped_names(uint32_t bits, const char **names)
{
    size_t n = 0;
    for (unsigned f = 0; f < SW_ANTH_FIELD_N; f++)
        if (bits & (1u << f))
            names[n++] = sw_anth_field_name(f);
    return n;
}

bool sw_relay_drop_fields(struct proxy *p)
{
    if (sw_config_translation(p->cfg, p->model) != SW_TRANSLATION_DROP)
        return false;
    /* a parse that names no class (another API's) counts its fields as other */
    uint32_t bits = p->chat.untranslatable_fields ? p->chat.untranslatable_fields
                                                  : 1u << SW_ANTH_FIELD_OTHER;
    p->a.dropped = bits;
    sw_relay_log_dropped(p->id, sw_relay_backend(p)->name, bits);
    return true;
}

void sw_relay_log_dropped(const char *id, const char *backend, uint32_t bits)
{
    char list[512];
    sw_anth_field_list(bits, list, sizeof list);
    sw_info("request %s: %s cannot carry %s: dropped (translation.unsupported: drop)", id,
            backend ? backend : "the backend", list);
}

/* ---- The request ---- */

void sw_relay_record(const struct proxy *p)
{
    struct sw_obs_sinks *obs = p->env.obs;
    if (!obs)
        return;
    int64_t now = sw_now_ms();
    const struct sw_config_backend *be = p->served ? &p->cfg->backends[p->a.be] : NULL;
    const char *reason = p->served ? sw_reason_name(p->a.reason) : NULL;
    const char *dropped[SW_ANTH_FIELD_N];
    size_t n_dropped = p->served ? dropped_names(p->a.dropped | p->dialect.dropped, dropped) : 0;
    struct sw_declog_pii pii[SW_PII_MAX_TYPES];
    size_t n_pii = sw_obs_pii_list(p->live->pii, &p->pii.counts, pii);
    struct sw_declog_entry e = {
        .request_id = p->id,
        .time_ms = sw_live_wall_ms(p->live, p->start_ms),
        .model = p->public_model,
        .key_name = p->key_name,
        .key_id = p->key ? p->key->id : NULL,
        .decision = p->served && !p->refused_code ? SW_DECLOG_SERVED : SW_DECLOG_REJECTED,
        .status = p->final_status ? p->final_status : (p->client_gone ? 499 : 0),
        .backend = be ? be->name : NULL,
        .tier = be ? sw_tier_name(be->tier) : NULL,
        .region = be ? be->region : NULL,
        .reason = reason,
        .code = p->refused_code ? p->refused_code
                : p->served     ? NULL
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
                                                : sw_upstream_dialect(p->client_dialect)->api_name,
        .contract = p->contract.verdict,
        .pii = pii,
        .n_pii = n_pii,
        .pii_allowed = p->pii.counts.allowed,
        .priority = p->facts.priority == SW_PRIORITY_BATCH ? "batch" : "interactive",
        .dropped = dropped,
        .n_dropped = n_dropped,
        .pii_outcome = !n_pii ? NULL
                       : be && be->tier == SW_TIER_CLOUD && !p->pii_st.masked ? "region_cloud"
                       : be && be->tier == SW_TIER_CLOUD ? "masked_cloud"
                       : be                              ? "kept_local"
                                                         : NULL,
        .trace_id = p->x.trace.on ? p->x.trace.trace_hex : NULL,
    };
    /* Spilled: served by the cloud although the model has a local backend
     * (the model's backends are looked at only when a cloud served). */
    bool spilled = false;
    for (size_t i = 0; be && be->tier == SW_TIER_CLOUD && !spilled && i < p->model->n_backends;
         i++)
        spilled = p->cfg->backends[p->model->backends[i]].tier == SW_TIER_LOCAL;
    sw_obs_record(obs, &e, spilled, now / 1000);
    sw_relay_trace_end(p, &e, now);
}
