#include "relay/account.h"

#include "common/clock.h"
#include "obs/obs.h"
#include "upstream/dialect.h"

void sw_relay_record(const struct proxy *p)
{
    struct sw_obs_sinks *obs = p->env.obs;
    if (!obs)
        return;
    int64_t now = sw_now_ms();
    const struct sw_config_backend *be = p->served ? &p->cfg->backends[p->a.be] : NULL;
    const char *reason = p->served ? sw_reason_name(p->a.reason) : NULL;
    struct sw_declog_pii pii[SW_PII_MAX_TYPES];
    size_t n_pii = sw_obs_pii_list(p->live->pii, &p->pii.counts, pii);
    struct sw_declog_entry e = {
        .request_id = p->id,
        .time_ms = sw_live_wall_ms(p->live, p->start_ms),
        .model = p->public_model,
        .key_name = p->key_name,
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
        .pii_outcome = !n_pii ? NULL
                       : be && be->tier == SW_TIER_CLOUD && !p->pii_st.masked ? "region_cloud"
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
