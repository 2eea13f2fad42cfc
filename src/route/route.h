/* The routing decision: plan = decide(facts, view, policy, now).
 *
 * Pure: no I/O, no clock reads, no globals. Everything it needs is passed in,
 * so it can be tested exhaustively and reused unchanged by the capacity
 * planner's simulation. The gateway builds the view (route/view.h) from its
 * live state (state/live.c), with the estimators of route/estimate.h, and
 * acts on the plan; decide() orders by the same estimators. docs/routing.md
 * explains every rule. */
#ifndef SW_ROUTE_ROUTE_H
#define SW_ROUTE_ROUTE_H

#include <stdbool.h>
#include <stddef.h>
#include <math.h>
#include <stdint.h>

#include "config/config.h"
#include "route/estimate.h"
#include "route/view.h"

/* The closed set of reasons; they appear in headers, metrics and logs alike.
 * A reason says why *this* backend serves rather than the one the normal
 * preference (best local, else the first cloud in configured order) would
 * have picked. docs/routing.md has the full table. */
enum sw_reason {
    SW_REASON_BASELINE,     /* the normal first choice: the best local (or the first cloud
                               of a model without local backends) */
    SW_REASON_OVERFLOW,     /* cloud: the local wait would break the TTFT budget (or the
                               deadline), or every local queue is full */
    SW_REASON_LATENCY,      /* local degraded, or latency-critical to the lowest TTFT */
    SW_REASON_PRIVACY,      /* kept local although the cloud was wanted: the request may not
                               leave (allows_cloud false, or sensitive without emergency) */
    SW_REASON_COST,         /* a model without local backends: an earlier cloud backend was
                               passed over because this request's estimated cost there would
                               cross the spend cap, and this cheaper one still fits */
    SW_REASON_BUDGET,       /* spend cap reached: kept local / degraded (policy keep_local,
                               degrade, or a latency-critical request local serves in budget) */
    SW_REASON_BREAKER,      /* chosen because a preferred backend's breaker is open (or
                               half-open with its probe taken) */
    SW_REASON_COLD_START,   /* local cold and warming would outlast the deadline */
    SW_REASON_CAPACITY,     /* the preferred backend cannot serve it (context, tools, images) */
    SW_REASON_FALLBACK,     /* a later attempt; or the primary after the preferred backend
                               failed for this request (exclude bit), is down or rate-limited */
    SW_REASON_EMERGENCY,    /* sensitive request sent masked to the cloud in a declared emergency */
    SW_REASON_PANIC,        /* every backend the request may use has its breaker open (or its
                               probe out): sent anyway to the one whose latest failure is oldest,
                               rather than rejected (docs/routing.md, "Panic") */
    SW_REASON_LONG_PROMPT,  /* local although its estimate is over the TTFT budget: the box is
                               idle (nothing in flight, queued or reported there) and the
                               request's own prefill is what breaks the budget, which no
                               other queue would shorten (docs/routing.md, "Idle box") */
    SW_REASON_AFFINITY,     /* a local other than the least-wait one: it served the longest
                               prefix of this request recently (its cache likely holds it) and
                               its estimate is within the TTFT budget (docs/routing.md,
                               "Prefix affinity") */
    SW_REASON__COUNT
};

/* Stable lowercase name ("baseline", "cold_start", ...); "unknown" out of range. */
const char *sw_reason_name(enum sw_reason r);

/* Why a backend was not eligible for this request: one code per backend, the
 * first that applies in this (checking) order. For the decision log. */
enum sw_route_excl {
    SW_EXCL_NONE,           /* eligible */
    SW_EXCL_FAILED,         /* its bit is set in facts.exclude: it already failed this request */
    SW_EXCL_PRIVACY,        /* cloud, and the request may not leave (or, sensitive with an
                               allowed cloud region, this cloud is outside the regions) */
    SW_EXCL_NO_MASKING,     /* cloud, sensitive, emergency declared but no masking available */
    SW_EXCL_CONTEXT,        /* prompt + max_tokens > max_context_tokens */
    SW_EXCL_TOOLS,          /* needs tools, backend does not support them */
    SW_EXCL_IMAGES,         /* needs images, backend does not support them */
    SW_EXCL_DOWN,           /* health DOWN */
    SW_EXCL_BREAKER_OPEN,   /* breaker open */
    SW_EXCL_PROBE_BUSY,     /* breaker half-open and its one probe is already out */
    SW_EXCL_QUEUE_FULL,     /* local: every slot busy and Spillway's queue at queue_max */
    SW_EXCL_BUDGET,         /* cloud: spend + this request's estimated cost > spend cap */
    SW_EXCL_RATE_RPM,       /* cloud: request bucket below 1 (skipped, not failed) */
    SW_EXCL_RATE_TPM,       /* cloud: token bucket below prompt + max_tokens (skipped) */
    SW_EXCL_DEGRADE_ONLY,   /* otherwise eligible, but reserved for the spend cap's degrade */
    SW_EXCL__COUNT
};

/* Stable lowercase name ("breaker_open", "rate_tpm", ...); "unknown" out of range. */
const char *sw_route_excl_name(enum sw_route_excl e);

/* Rejection codes (plan.code) and their HTTP status; docs/routing.md explains
 * when each is used. One status per code. */
#define SW_ROUTE_CODE_CAPABILITY    "local_capacity_insufficient"   /* 422 */
#define SW_ROUTE_CODE_QUEUE_FULL    "local_queue_full"              /* 503, Retry-After */
#define SW_ROUTE_CODE_PRIVACY       "privacy_restricted"            /* 503 */
#define SW_ROUTE_CODE_BUDGET        "budget_exhausted"              /* 429, Retry-After */
#define SW_ROUTE_CODE_DEADLINE      "deadline_exceeded"             /* 504 */
#define SW_ROUTE_CODE_ALL_FAILED    "all_backends_failed"           /* 503 */

/* "up", "degraded", "cold", "warming", "down"; "unknown" past the enum. */
const char *sw_health_name(enum sw_health h);
/* "closed", "open", "half_open"; "unknown" past the enum. */
const char *sw_breaker_name(enum sw_breaker_state b);
/* The breaker as a number ordered by severity, as the
 * spillway_backend_breaker gauge and the one-second series show it:
 * 0 closed, 1 half-open, 2 open. sw_breaker_from_gauge is its inverse
 * (closed for any other number). */
int sw_breaker_gauge(enum sw_breaker_state b);
enum sw_breaker_state sw_breaker_from_gauge(int gauge);

/* What the request needs and may do. */
struct sw_route_facts {
    long prompt_tokens_est;     /* realistic estimate: TTFT, context, token buckets */
    long prompt_tokens_max;     /* upper bound (sw_request_bound_tokens): what the spend cap
                                   checks and reserves; 0: prompt_tokens_est */
    long max_tokens;            /* requested, or the gateway's default estimate; used for the
                                   context check, the token bucket and the cost estimate */
    bool allows_cloud;          /* key policy, header and body combined (most restrictive) */
    bool sensitive;             /* PII or declared sensitive: never cloud unless emergency+masking */
    bool latency_critical;
    bool needs_tools;
    bool needs_images;
    int64_t deadline_ms;        /* absolute, same clock as `now`; 0: no deadline */
    uint32_t exclude;           /* bit i: backend i already failed for this request; any bit
                                   set makes this a re-decision (primary reason fallback) */
    long ttft_budget_ms;        /* the key's own TTFT budget; 0: the policy's (model/global) */
    /* Residency: the cloud regions a sensitive request may use, unmasked, besides local
     * backends (the intersection of the global, key and model lists; n_regions 0: none).
     * Borrowed strings. Ignored when the request is not sensitive or may not leave. */
    const char *regions[SW_CONFIG_MAX_REGIONS];
    size_t n_regions;
    bool max_tokens_given;      /* the request named max_tokens (else max_tokens is the
                                   gateway's estimate; under a spend cap a cloud then
                                   reserves its max_output_tokens) */
    enum sw_priority priority;  /* batch: its own budget (policy.batch_ttft_budget_ms) */
    long ttft_budget_cap_ms;    /* a client's tighter budget (X-Spillway-TTFT-Budget-Ms):
                                   the budget is at most this; 0: none */
    bool tenant_budget_out;     /* the key's or its team's cloud budget cannot take this
                                   request (state/tenant.h): no priced cloud, reason budget */
};

struct sw_route_attempt {
    size_t backend;                 /* index in the view */
    enum sw_reason reason;
    bool masked;                    /* must be sent through PII masking */
    bool panic;                     /* admitted past an open breaker (SW_REASON_PANIC) */
};

struct sw_route_plan {
    struct sw_route_attempt attempts[SW_ROUTE_MAX_BACKENDS];
    size_t n;
    /* A structured rejection when n == 0; status 0, code NULL, message "" otherwise. */
    int status;                     /* 422, 503, 429 or 504: see SW_ROUTE_CODE_* */
    const char *code;               /* stable, one of SW_ROUTE_CODE_* (static string) */
    char message[256];
    long retry_after_s;             /* -1: none */
    /* For the decision log, indexed like the view (first n_backends entries). */
    size_t n_backends;              /* min(view->n, SW_ROUTE_MAX_BACKENDS) */
    enum sw_route_excl excluded[SW_ROUTE_MAX_BACKENDS];
    double est_ttft_ms[SW_ROUTE_MAX_BACKENDS];  /* estimate used for ordering: the wait, plus
                                                   warm-up if cold/warming, at least the
                                                   window average if degraded */
};

/* The TTFT budget that applies to this request: for a batch request the
 * batch budget (0: none); else the key's, else the policy's; a client's
 * ttft_budget_cap_ms can only make it tighter. */
static inline long sw_route_budget_ms(const struct sw_route_facts *f, const struct sw_route_policy *p)
{
    long b;
    if (f->priority == SW_PRIORITY_BATCH)
        b = p->batch_ttft_budget_ms > 0 ? p->batch_ttft_budget_ms : 0;
    else
        b = f->ttft_budget_ms > 0 ? f->ttft_budget_ms : p->ttft_budget_ms;
    if (f->ttft_budget_cap_ms > 0 && (b <= 0 || f->ttft_budget_cap_ms < b))
        b = f->ttft_budget_cap_ms;
    return b;
}

/* The prompt tokens a request's spend is checked and reserved at: the upper
 * bound, never below the estimate (docs/routing.md, "Spend reservation"). */
static inline long sw_route_spend_prompt_tokens(const struct sw_route_facts *f)
{
    long est = f->prompt_tokens_est > 0 ? f->prompt_tokens_est : 0;
    return f->prompt_tokens_max > est ? f->prompt_tokens_max : est;
}

/* The output tokens a request is reserved for on backend b: what it asked
 * for; without max_tokens, under a spend cap (cap_usd > 0) on a cloud with
 * max_output_tokens, that worst case; else the gateway's estimate. */
static inline long sw_route_reserve_tokens(const struct sw_route_facts *f,
                                           const struct sw_route_backend_view *b, double cap_usd)
{
    if (!f->max_tokens_given && cap_usd > 0 && b->tier == SW_TIER_CLOUD &&
        b->max_output_tokens > 0)
        return b->max_output_tokens;
    return f->max_tokens;
}

/* Decides where the request goes. Never fails: the plan holds either attempts
 * (every eligible backend exactly once, primary first) or a rejection. Borrows
 * everything; keeps no pointer. Only the first SW_ROUTE_MAX_BACKENDS backends of
 * the view are considered. Pure: no clock, no I/O, no allocation. */
void sw_route_decide(const struct sw_route_facts *facts, const struct sw_route_view *view,
                     const struct sw_route_policy *policy, int64_t now_ms,
                     struct sw_route_plan *plan);

/* Whether a request queued on a local for waited_ms, with est_here_ms its
 * estimate there now, moves to the first attempt of plan (decided with that
 * local excluded, on view): a local with a free slot, and
 * sw_route_move_local on its estimate. Pure. */
bool sw_route_moves_to(const struct sw_route_view *view, const struct sw_route_plan *plan,
                       double waited_ms, double est_here_ms, double check_ms);

#endif
