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
#include <math.h>
#include <stdint.h>

#include "config/config.h"
#include "route/outlen.h"

#define SW_ROUTE_MAX_BACKENDS 16

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

/* Priors used by sw_route_est_ttft_ms while a backend has no learned data
 * (a learned value <= 0 or not finite counts as no data). */
#define SW_ROUTE_PRIOR_PREFILL_MS_PER_TOKEN 0.5
#define SW_ROUTE_PRIOR_DECODE_TPS           30.0
#define SW_ROUTE_PRIOR_OUTPUT_TOKENS        256.0
#define SW_ROUTE_PRIOR_WARM_MS              10000.0

/* How many running requests' slot releases a view carries per backend. */
#define SW_ROUTE_BUSY_MAX 8
/* What a running request past its bound still counts as holding, as a
 * fraction of the bound (sw_route_busy_left_ms). */
#define SW_ROUTE_OVERRUN_FRACTION 0.1
/* The chance at which the first slot release of a full local backend is
 * expected (sw_route_first_release_ms; the view's first_release_ms): low, so
 * a request waits for a slot that may well come in time; the queue check
 * (sw_route_leave_queue) sends it to the cloud while that still makes the
 * budget if the slot did not come. */
#define SW_ROUTE_FIRST_RELEASE_Q 0.1

enum sw_health {
    SW_HEALTH_UP,
    SW_HEALTH_DEGRADED,     /* latency window above the threshold (with hysteresis) */
    SW_HEALTH_COLD,         /* model not loaded (health 503 "Loading model" or unloaded) */
    SW_HEALTH_WARMING,      /* loading in progress */
    SW_HEALTH_DOWN          /* health check failing / connection refused */
};

enum sw_breaker_state { SW_BREAKER_CLOSED, SW_BREAKER_OPEN, SW_BREAKER_HALF_OPEN };

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
    double busy_left_ms[SW_ROUTE_BUSY_MAX];
    /* local: learned output tokens / max_tokens of the requests that named
     * max_tokens (route/outlen.h); all zero: no data */
    struct sw_outlen_dist out_ratio;
    /* local: in how many ms the first running request is expected to end
     * (sw_route_first_release_ms at SW_ROUTE_FIRST_RELEASE_Q), when sooner
     * than busy_left_ms[0]; 0: not known (busy_left_ms[0] counts) */
    double first_release_ms;
};

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

/* The slot releases a request arriving now at local backend b needs before
 * it starts (sw_route_est_ttft_ms): everyone ahead of it beyond the free
 * slots (the server's outside work included), plus one for itself; <= 0: it
 * starts at once. Read only when b->slots > 0. */
static inline double sw_route_ahead(const struct sw_route_backend_view *b);

/* For b->slots > 0: false only when sw_route_ahead(b) is surely <= 0: fewer
 * requests in flight and queued than slots, no outside load, and counts
 * small enough (< 2^52) for the double sum to be exact, or none at all.
 * Cheaper than sw_route_ahead. */
static inline bool sw_route_may_wait(const struct sw_route_backend_view *b)
{
    if ((b->in_flight | b->queued) == 0)    /* ahead is then 1 - slots + outside load */
        return b->outside_load > 0;
    long in_flight = b->in_flight > 0 ? b->in_flight : 0;
    long queued = b->queued > 0 ? b->queued : 0;
    return queued >= b->slots - in_flight || b->outside_load > 0 || b->slots > (1L << 52);
}

static inline double sw_route_ahead(const struct sw_route_backend_view *b)
{
    long in_flight = b->in_flight > 0 ? b->in_flight : 0;
    long queued = b->queued > 0 ? b->queued : 0;
    double outside = b->outside_load;
    outside = isfinite(outside) && outside > 0 ? outside : 0;
    return (double)in_flight + (double)queued + outside - (double)b->slots + 1;
}

/* Decides where the request goes. Never fails: the plan holds either attempts
 * (every eligible backend exactly once, primary first) or a rejection. Borrows
 * everything; keeps no pointer. Only the first SW_ROUTE_MAX_BACKENDS backends of
 * the view are considered. Pure: no clock, no I/O, no allocation. */
void sw_route_decide(const struct sw_route_facts *facts, const struct sw_route_view *view,
                     const struct sw_route_policy *policy, int64_t now_ms,
                     struct sw_route_plan *plan);

/* Estimated ms before a request arriving now at local backend b would start
 * generating its first token: queue position and learned service times, plus
 * its own prefill and the RTT. Warm-up (cold/warming) is NOT included; the
 * router adds warm_eta_ms itself. Wait = max(0, in_flight + queued + outside_load
 * - slots + 1)
 * x service / slots, service (ms) = avg_prompt x prefill_ms_per_token +
 * 1000 x avg_output_tokens / decode_tps;
 * slots <= 0 means unbounded (no wait). A cloud backend with a measured
 * router adds warm_eta_ms itself. It needs ahead = in_flight + queued - slots
 * + 1 slot releases (none: no wait). service (ms) = avg_prompt x
 * prefill_ms_per_token + 1000 x avg_output_tokens / decode_tps. When the view
 * knows when the running requests free their slots (n_busy, busy_left_ms),
 * the k-th release is the k-th soonest of those; releases beyond the n_busy
 * known come at slots / service per ms after the last known one. Without
 * them (fluid): wait = ahead x service / slots. slots <= 0 means unbounded
 * (no wait). A cloud backend with a measured
 * ttft_avg_ms uses that in place of prefill + RTT. Missing data uses the
 * SW_ROUTE_PRIOR_* values. Always finite and >= 0. */
double sw_route_est_ttft_ms(const struct sw_route_backend_view *b, long prompt_tokens);

/* At most how many ms a request running on local backend b still holds its
 * slot, elapsed_ms after it got it: its bound, prefill (prompt_tokens x
 * prefill_ms_per_token) plus max_tokens (the learned average output without
 * one) at decode_tps (it may stop sooner, never later at those rates), less
 * the time elapsed; once past it, the larger of SW_ROUTE_OVERRUN_FRACTION of
 * the bound and the overrun so far (running past it shows the rates are stale,
 * or the request hangs). Learned rates or the priors,
 * as in sw_route_est_ttft_ms. The view's busy_left_ms. Always finite, >= 0. */
double sw_route_busy_left_ms(const struct sw_route_backend_view *b, long prompt_tokens,
                             long max_tokens, double elapsed_ms);

/* One request holding a slot of a local backend, for
 * sw_route_first_release_ms. */
struct sw_route_holder {
    long prompt_tokens, max_tokens;
    bool max_tokens_given;
    double elapsed_ms;
};

/* In how many ms, with confidence q, the first of the n running requests h
 * frees its slot: the least T at which the chance that at least one has
 * ended (1 - the product of the chances that each still runs) reaches q.
 * Each request that named max_tokens ends as the answers on b that got as
 * far as it has (b->out_ratio); any other, and any while b has too few
 * samples, at its bound (sw_route_busy_left_ms). Never later than the
 * soonest sw_route_busy_left_ms of them; n 0: 0. Always finite, >= 0. */
double sw_route_first_release_ms(const struct sw_route_backend_view *b,
                                 const struct sw_route_holder *h, size_t n, double q);

/* Whether a request waiting in a local queue should leave it for the cloud
 * now (when the router would send it there): its estimated first token
 * locally (elapsed_ms since it arrived + est_local_ms) breaks the budget; or
 * this is the last check (check_ms apart) at which the cloud's estimated first
 * token (elapsed_ms + est_cloud_ms) still comes within it, and the local one
 * with every running request at its bound (est_bound_ms: the estimate with
 * first_release_ms 0) does not. budget_ms <= 0: never (no budget). */
bool sw_route_leave_queue(double elapsed_ms, double est_local_ms, double est_bound_ms,
                          double est_cloud_ms, long budget_ms, double check_ms);
#endif
