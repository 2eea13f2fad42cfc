/* The planner's discrete-event simulation (docs/planning.md): a trace
 * replayed through the gateway's own routing state and decision
 * (state/live.c, state/claim.c, route/route.c: breakers, buckets, spend
 * window, learned rates, the gateway's local queue and its move to the cloud
 * of a waiter whose estimated start breaks the TTFT budget), on a simulated
 * clock. Backends are modelled like llmsim's performance model: a slot
 * dispatched at t gives its first token at t + prompt x prefill + one decode
 * period and its last at t + prompt x prefill + output x period. */
#ifndef SW_PLAN_SIM_H
#define SW_PLAN_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "plan/trace.h"

/* Speeds used when neither the config nor a decision log gives one. */
#define SW_PLAN_DEFAULT_LOCAL_PREFILL_MS 0.5    /* = SW_ROUTE_PRIOR_PREFILL_MS_PER_TOKEN */
#define SW_PLAN_DEFAULT_LOCAL_DECODE_TPS 30.0   /* = SW_ROUTE_PRIOR_DECODE_TPS */
#define SW_PLAN_DEFAULT_CLOUD_PREFILL_MS 0.2
#define SW_PLAN_DEFAULT_CLOUD_DECODE_TPS 80.0
#define SW_PLAN_TTFT_HIST_MS 600000             /* TTFT histogram: 1 ms buckets up to 10 min */
#define SW_PLAN_HOURS_IN_MONTH 730.0
#define SW_PLAN_DAYS_IN_MONTH (730.0 / 24.0)

enum { SW_PLAN_LOCAL = 1, SW_PLAN_CLOUD = 2 };

struct sw_plan_strategy {
    const char *name;
    int tiers;                  /* SW_PLAN_LOCAL | SW_PLAN_CLOUD: which of the model's backends */
    long slots;                 /* > 0: every local backend gets this many slots */
    long budget_ms;             /* > 0: the TTFT budget instead of the config's */
    double cap_usd;             /* >= 0: the spend cap instead of the config's (0: none) */
};

struct sw_plan_hour {
    uint32_t arrivals, cloud, rejected, within;
    uint32_t queue_max;         /* deepest local queue seen at an arrival */
    double spend_usd;
};

struct sw_plan_result {
    char name[48];
    long slots;                 /* local slots in total */
    long budget_ms;
    double cap_usd;
    uint64_t n, local, cloud, rejected, within, spilled;
    uint64_t moved;             /* queued requests that moved to another local */
    double ttft_p50, ttft_p95, ttft_p99;    /* served requests, ms */
    double ttft_sum_ms;         /* served requests, exact */
    double spend_usd;           /* cloud */
    double tokens;              /* prompt + output of served requests */
    double local_busy_ms;       /* slot-ms spent generating locally */
    double duration_ms;
    struct sw_plan_hour *hours;
    size_t n_hours;
    /* derived (sw_plan_derive) */
    double within_share, cloud_share, rejected_share;
    double spill_per_hour_mean, spill_per_hour_max;
    double spend_per_day, spend_per_month;
    double local_per_month, total_per_month, usd_per_mtok;
    double utilisation;
};

/* Speeds of config backend i: what the config says, else (local) what the
 * decision log taught, else the defaults above. */
void sw_plan_speeds(const struct sw_config *cfg, size_t i, const struct sw_plan_learned *l,
                    double *prefill_ms_per_token, double *decode_tps);

/* Replays trace t for `model` under strategy s. cfg is modified during the
 * call (slots) and restored. Returns 0, or -1 (out of memory; or the
 * strategy leaves the model no backend: err says which). */
int sw_plan_run(struct sw_config *cfg, const struct sw_config_model *model,
                const struct sw_plan_trace *t, const struct sw_plan_strategy *s,
                struct sw_plan_result *out, char *err, size_t errlen);

/* Shares, rates and costs from the counts (local cost scales with the slots
 * against the configured local slots). */
void sw_plan_derive(const struct sw_config *cfg, const struct sw_config_model *model,
                    struct sw_plan_result *r);

void sw_plan_result_free(struct sw_plan_result *r);

/* Local slots of the model as configured (sum over its local backends). */
long sw_plan_config_slots(const struct sw_config *cfg, const struct sw_config_model *model);

#endif
