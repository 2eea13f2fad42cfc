#include "relay/account.h"

#include <stdio.h>

#include "common/clock.h"
#include "common/log.h"
#include "dialect/anth_req.h"
#include "obs/obs.h"
#include "relay/trace.h"
#include "upstream/dialect.h"

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
