/* What the router sees: every backend of the model as a view (health,
 * breaker, queue, learned rates, buckets, prices), the spend window and the
 * policy in force. Data only: state/live.c fills it, route/estimate.h
 * estimates from it, sw_route_decide (route/route.h) decides on it. */
#ifndef SW_ROUTE_VIEW_H
#define SW_ROUTE_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "route/outlen.h"

#define SW_ROUTE_MAX_BACKENDS 16

/* How many running requests' slot releases a view carries per backend. */
#define SW_ROUTE_BUSY_MAX 8
enum sw_health {
    SW_HEALTH_UP,
    SW_HEALTH_DEGRADED,     /* latency window above the threshold (with hysteresis) */
    SW_HEALTH_COLD,         /* model not loaded (health 503 "Loading model" or unloaded) */
    SW_HEALTH_WARMING,      /* loading in progress */
    SW_HEALTH_DOWN          /* health check failing / connection refused */
};

enum sw_breaker_state { SW_BREAKER_CLOSED, SW_BREAKER_OPEN, SW_BREAKER_HALF_OPEN };

/* One backend as the router sees it, in the model's configured order. */
struct sw_route_backend_view {
    const char *name;
    enum sw_tier tier;
    enum sw_health health;
    enum sw_breaker_state breaker;
    bool probe_free;            /* half-open: the single probe may be sent now */
    /* capacity and learned service rates (local) */
    long slots;
    long in_flight;
    long queued;                /* Spillway's own queue for this endpoint */
    long queue_max;
    double prefill_ms_per_token;    /* learned moving average */
    double decode_tps;              /* learned moving average, per slot */
    double avg_output_tokens;       /* learned moving average */
    double ttft_avg_ms;             /* latency window average (0: no data) */
    double rtt_ms;
    double warm_eta_ms;             /* cold/warming: expected ms until warm */
    /* capability, from config */
    long max_context_tokens;        /* 0: not declared */
    bool supports_tools;
    bool supports_images;
    /* cloud */
    double rpm_available;           /* token bucket levels; < 0: no limit configured */
    double tpm_available;
    double input_usd_per_mtok;
    double output_usd_per_mtok;
    /* added after the first contract; zero defaults keep the old behaviour */
    double avg_prompt_tokens;       /* learned moving average of requests served (0: no data,
                                       this request's prompt stands in) */
    bool degrade_only;              /* a smaller local model reserved for the spend cap's
                                       degrade policy: never chosen otherwise */
    const char *region;             /* cloud: its region label, NULL when none; a sensitive
                                       request may use it unmasked only if it is in
                                       facts.regions */
    /* panic (all breakers open); zero defaults: no panic request may go */
    bool panic_free;                /* breaker not closed and a panic request may go now */
    int64_t breaker_failed_ms;      /* its latest qualifying failure (same clock as now; 0:
                                       none): panic tries the one that failed longest ago */
    /* local: work the server reports beyond what Spillway has in flight there
     * (its processing + waiting minus in_flight, from a fresh load signal; 0:
     * none or stale, the estimate is then Spillway's own queue alone) */
    double outside_load;
    long max_output_tokens;         /* cloud: the output a request without max_tokens is
                                       reserved for under a spend cap (0: facts.max_tokens) */
    /* local: the running requests that free their slots soonest, as ms until
     * each does at the latest (sw_route_busy_left_ms), soonest first; n_busy 0:
     * not known (the fluid wait estimate). A snapshot (state/live.h) fills
     * them and out_ratio only when the request would wait (sw_route_ahead >
     * 0), the only case the estimate reads them: else n_busy and
     * first_release_ms are 0 and busy_left_ms and out_ratio unset */
    long n_busy;                    /* 0..SW_ROUTE_BUSY_MAX */
    /* local: of the running requests, those overdue (sw_route_overdue):
     * they free no slot in the wait estimate and are not among busy_left_ms
     * or first_release_ms; filled and read as n_busy is */
    long n_overdue;
    double busy_left_ms[SW_ROUTE_BUSY_MAX];
    /* local: learned output tokens / max_tokens of the requests that named
     * max_tokens (route/outlen.h); all zero: no data */
    struct sw_outlen_dist out_ratio;
    /* local: in how many ms the first running request is expected to end
     * (sw_route_first_release_ms at SW_ROUTE_FIRST_RELEASE_Q), when sooner
     * than busy_left_ms[0]; 0: not known (busy_left_ms[0] counts) */
    double first_release_ms;
    /* local, per request (prefix affinity, route/affinity.h): the prompt
     * tokens of the longest prefix of this request the backend served
     * recently (0: none), and how many of them it is expected to find in its
     * cache (prefix_tokens times the hit the server reports, learned; 0 when
     * it reports none): the estimate prefills only the rest */
    long prefix_tokens;
    double cached_tokens;
    /* local, per request: ms since the backend served the prefix its table
     * would drop next (the least recently served, the table being full;
     * SW_ROUTE_DROP_NONE while it has room): sized like the server's own
     * cache, the prefix a request that holds nothing there displaces. 0:
     * not known (affinity off) */
    double drop_age_ms;
    /* local, per request (prefix affinity, docs/routing.md "Following a
     * running turn"): > 0: the request follows a request running here whose
     * whole prompt it extends, and takes that one's slot when it ends, in at
     * most this many ms (sw_route_busy_left_ms), finding prefix_tokens there
     * (cached_tokens as expected): the estimate waits for that slot alone,
     * whatever the queue. 0: it does not */
    double follow_left_ms;
};

#define SW_ROUTE_DROP_NONE 1e12

struct sw_route_view {
    const struct sw_route_backend_view *backends;
    size_t n;
    double spend_usd;               /* cloud spend in the current window, incl. reservations */
    bool emergency;                 /* declared by an admin or config */
};

enum sw_cap_policy { SW_CAP_SHED, SW_CAP_DEGRADE, SW_CAP_KEEP_LOCAL };

struct sw_route_policy {
    long ttft_budget_ms;            /* <= 0: no TTFT budget (never overflow on the wait) */
    double spend_cap_usd;           /* 0: no cap */
    enum sw_cap_policy on_cap;
    long degrade_backend;           /* index in the view for SW_CAP_DEGRADE (a local backend);
                                       -1 none: degrade then behaves as keep_local */
    bool masking_available;         /* PII masking exists; without it sensitive never goes to cloud */
    long shed_retry_after_s;        /* Retry-After of budget_exhausted; <= 0: none */
    long batch_ttft_budget_ms;      /* the TTFT budget of batch requests; <= 0: none (a batch
                                       request overflows only on its deadline) */
};

#endif
