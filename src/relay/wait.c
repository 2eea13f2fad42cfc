#include "relay/wait.h"

#include <stdio.h>

#include "common/log.h"
#include "route/estimate.h"

long sw_relay_ttft_budget_ms(const struct sw_route_facts *f, const struct sw_live_snapshot *snap,
                             const struct sw_route_plan *plan, bool stream, int64_t left_ms)
{
    long budget = sw_route_budget_ms(f, &snap->policy);
    /* A backend chosen although its own estimate exceeded the budget (a long
     * prompt's prefill, nowhere else to go) gets that estimate. */
    if (budget > 0 && plan->n > 0) {
        size_t i = plan->attempts[0].backend;
        double est = plan->est_ttft_ms[i];
        if (est > (double)budget && est < (double)left_ms)
            budget = (long)est;
        /* A non-streamed answer's first byte comes with its last: add the
         * expected generation time (max_tokens, else the learned average
         * output, at the learned decode speed; priors without data). */
        if (!stream) {
            const struct sw_route_backend_view *v = &snap->backends[i];
            double tokens = f->max_tokens > 0 ? (double)f->max_tokens
                            : v->avg_output_tokens > 0 ? v->avg_output_tokens
                                                       : SW_ROUTE_PRIOR_OUTPUT_TOKENS;
            double tps = v->decode_tps > 0 ? v->decode_tps : SW_ROUTE_PRIOR_DECODE_TPS;
            double gen = 1000.0 * tokens / tps;
            budget = gen < (double)left_ms ? budget + (long)gen : 0;
        }
    }
    return budget > 0 && budget < left_ms ? budget : 0;
}

bool sw_relay_another_would_take(struct sw_live *live, const struct sw_config_model *model,
                                 const struct sw_route_facts *facts, const struct sw_prefix *prefix,
                                 size_t be, int64_t now)
{
    struct sw_live_snapshot snap;
    sw_live_snapshot(live, model, now, &snap);
    sw_live_prefix_view(live, prefix, now, &snap);
    struct sw_route_facts f = *facts;
    for (size_t k = 0; k < snap.view.n; k++)
        if (snap.map[k] == be)
            f.exclude |= 1u << k;
    struct sw_route_plan plan;
    sw_route_decide(&f, &snap.view, &snap.policy, now, &plan);
    return plan.n > 0;
}

/* The local estimate with every running request at its bound. */
static double bound_est(const struct sw_route_backend_view *v, const struct sw_route_facts *f)
{
    struct sw_route_backend_view b = *v;
    b.first_release_ms = 0;
    return sw_route_est_ttft_ms(&b, f->prompt_tokens_est);
}

bool sw_relay_leave_queue(struct sw_live *live, const struct sw_config_model *model,
                          const struct sw_route_facts *f, const struct sw_prefix *prefix,
                          const struct sw_claim *c, size_t be,
                          int64_t start_ms, int64_t now, double check_ms, const char *id,
                          const char *be_name, size_t *k, bool *to_local)
{
    bool cloud_ok = f->allows_cloud && !(f->sensitive && f->n_regions == 0);
    *to_local = false;
    struct sw_live_snapshot snap;
    sw_live_snapshot(live, model, now, &snap);
    sw_live_prefix_view(live, prefix, now, &snap);
    for (size_t i = 0; i < snap.view.n; i++) {
        if (snap.map[i] != be)
            continue;
        struct sw_route_backend_view v = snap.backends[i];
        v.queued = sw_claim_queue_position(live, c);
        double here = sw_route_est_ttft_ms(&v, f->prompt_tokens_est);
        double elapsed = (double)(now - start_ms), waited = (double)(now - c->taken_ms);
        /* where the router would send it without this backend: both ways
         * out read that one decision */
        struct sw_route_facts fx = *f;
        fx.exclude |= 1u << i;
        struct sw_route_plan plan;
        sw_route_decide(&fx, &snap.view, &snap.policy, now, &plan);
        double there = plan.n ? plan.est_ttft_ms[plan.attempts[0].backend] : 0;
        if (sw_route_moves_to(&snap.view, &plan, waited, here, check_ms)) {
            sw_info("request %s: waited %.0f ms on %s, estimated first token there in %.0f ms, "
                    "on another local with a free slot in %.0f ms: leaving the queue", id,
                    waited, be_name, here, there);
            *k = i;
            *to_local = true;
            return true;
        }
        /* to a cloud, not a rejection: the spend cap, privacy or breakers may say no.
         * budget 0: none (a batch request without a batch budget waits for its
         * deadline) */
        long budget = sw_route_budget_ms(f, &snap.policy);
        bool cloud = plan.n > 0 && snap.backends[plan.attempts[0].backend].tier == SW_TIER_CLOUD;
        if (cloud_ok && budget > 0 && cloud &&
            sw_route_leave_queue(elapsed, here, bound_est(&v, f), there, budget, check_ms)) {
            sw_info("request %s: estimated first token on %s at %.0f ms, on the cloud at "
                    "%.0f ms, budget %ld ms: leaving the local queue", id, be_name,
                    elapsed + here, elapsed + there, budget);
            *k = i;
            return true;
        }
    }
    return false;
}

void sw_relay_describe_backends(const struct sw_live *live, const struct sw_live_snapshot *snap,
                                char *out, size_t size)
{
    size_t used = 0;
    for (size_t k = 0; k < snap->view.n && used + 1 < size; k++) {
        const struct sw_route_backend_view *v = &snap->backends[k];
        const char *why = live->b[snap->map[k]]->last_error;
        int w = snprintf(out + used, size - used, "%s%s: %s%s%s%s", k ? "; " : "", v->name,
                         sw_health_name(v->health),
                         v->breaker == SW_BREAKER_CLOSED ? "" : ", breaker open",
                         why[0] ? ", last error: " : "", why);
        if (w < 0)
            break;
        used += (size_t)w;
    }
    if (used >= size)
        out[size - 1] = '\0';
}
