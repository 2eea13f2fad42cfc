/* The routing decision: plan = decide(facts, view, policy, now).
 *
 * Pure: no I/O, no clock reads, no globals. Everything it needs is passed in,
 * so it can be tested exhaustively and reused unchanged by the capacity
 * planner's simulation. The gateway builds the view from its live state
 * (breakers, buckets, spend window, latency windows, queues, learned rates)
 * and acts on the plan. docs/routing.md explains every rule. */
#ifndef SW_ROUTE_ROUTE_H
#define SW_ROUTE_ROUTE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/config.h"

#define SW_ROUTE_MAX_BACKENDS 16

/* The closed set of reasons; they appear in headers, metrics and logs alike. */
enum sw_reason {
    SW_REASON_BASELINE,     /* local, the normal case */
    SW_REASON_OVERFLOW,     /* cloud: the local wait would break the TTFT budget */
    SW_REASON_LATENCY,      /* local degraded, or latency-critical to the lowest TTFT */
    SW_REASON_PRIVACY,      /* kept local because the request may not leave */
    SW_REASON_COST,         /* see docs/routing.md */
    SW_REASON_BUDGET,       /* spend cap reached: kept local / degraded */
    SW_REASON_BREAKER,      /* chosen because a preferred backend's breaker is open */
    SW_REASON_COLD_START,   /* local cold and warming would outlast the deadline */
    SW_REASON_CAPACITY,     /* local cannot serve it (context, tools, images) */
    SW_REASON_FALLBACK,     /* a later attempt after the one before failed */
    SW_REASON_EMERGENCY,    /* sensitive request sent masked to the cloud in a declared emergency */
    SW_REASON__COUNT
};

const char *sw_reason_name(enum sw_reason r);

enum sw_health {
    SW_HEALTH_UP,
    SW_HEALTH_DEGRADED,     /* latency window above the threshold (with hysteresis) */
    SW_HEALTH_COLD,         /* model not loaded (health 503 "Loading model" or unloaded) */
    SW_HEALTH_WARMING,      /* loading in progress */
    SW_HEALTH_DOWN          /* health check failing / connection refused */
};

enum sw_breaker_state { SW_BREAKER_CLOSED, SW_BREAKER_OPEN, SW_BREAKER_HALF_OPEN };

/* What the request needs and may do. */
struct sw_route_facts {
    long prompt_tokens_est;
    long max_tokens;            /* requested, or the gateway's default estimate */
    bool allows_cloud;          /* key policy, header and body combined (most restrictive) */
    bool sensitive;             /* PII or declared sensitive: never cloud unless emergency+masking */
    bool latency_critical;
    bool needs_tools;
    bool needs_images;
    int64_t deadline_ms;        /* absolute, same clock as `now` */
    uint32_t exclude;           /* bit i: backend i already failed for this request */
};

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
};

struct sw_route_view {
    const struct sw_route_backend_view *backends;
    size_t n;
    double spend_usd;               /* cloud spend in the current window, incl. reservations */
    bool emergency;                 /* declared by an admin or config */
};

enum sw_cap_policy { SW_CAP_SHED, SW_CAP_DEGRADE, SW_CAP_KEEP_LOCAL };

struct sw_route_policy {
    long ttft_budget_ms;
    double spend_cap_usd;           /* 0: no cap */
    enum sw_cap_policy on_cap;
    long degrade_backend;           /* index in the view for SW_CAP_DEGRADE; -1 none */
    bool masking_available;         /* PII masking exists; without it sensitive never goes to cloud */
    long shed_retry_after_s;
};

struct sw_route_attempt {
    size_t backend;                 /* index in the view */
    enum sw_reason reason;
    bool masked;                    /* must be sent through PII masking */
};

struct sw_route_plan {
    struct sw_route_attempt attempts[SW_ROUTE_MAX_BACKENDS];
    size_t n;
    /* A structured rejection when n == 0. */
    int status;                     /* e.g. 503, 429, 400 */
    const char *code;               /* stable: local_capacity_insufficient, privacy_restricted,
                                       budget_exhausted, all_backends_failed, ... */
    char message[256];
    long retry_after_s;             /* -1: none */
};

/* Decides where the request goes. Never fails: the plan holds either attempts
 * or a rejection. */
void sw_route_decide(const struct sw_route_facts *facts, const struct sw_route_view *view,
                     const struct sw_route_policy *policy, int64_t now_ms,
                     struct sw_route_plan *plan);

/* Estimated ms before a request arriving now at local backend b would start
 * generating its first token: queue position and learned service times, plus
 * its own prefill. */
double sw_route_est_ttft_ms(const struct sw_route_backend_view *b, long prompt_tokens);

#endif
