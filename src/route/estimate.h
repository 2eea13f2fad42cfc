/* The estimators over a backend's view: when a request arriving now would
 * start (sw_route_est_ttft_ms), how long a running request still holds its
 * slot (sw_route_busy_left_ms), when the first slot frees
 * (sw_route_first_release_ms), and when a queued request leaves for the
 * cloud (sw_route_leave_queue) or another local (sw_route_move_local). The view builder (state/live.c) fills the
 * view's slot releases with them once per snapshot; the decision
 * (route/route.c), the relay's queue check, the planner and the admin API
 * read the first-token estimate from the view. Pure: no I/O, no clock. */
#ifndef SW_ROUTE_ESTIMATE_H
#define SW_ROUTE_ESTIMATE_H

#include <stdbool.h>
#include <stddef.h>
#include <float.h>
#include <math.h>

#include "route/view.h"

/* Priors used by sw_route_est_ttft_ms while a backend has no learned data
 * (a learned value <= 0 or not finite counts as no data). */
#define SW_ROUTE_PRIOR_PREFILL_MS_PER_TOKEN 0.5
#define SW_ROUTE_PRIOR_DECODE_TPS           30.0
#define SW_ROUTE_PRIOR_OUTPUT_TOKENS        256.0
#define SW_ROUTE_PRIOR_WARM_MS              10000.0

/* What a running request past its bound still counts as holding, as a
 * fraction of the bound (sw_route_busy_left_ms). */
#define SW_ROUTE_OVERRUN_FRACTION 0.1
/* The chance at which the first slot release of a full local backend is
 * expected (sw_route_first_release_ms; the view's first_release_ms): low, so
 * a request waits for a slot that may well come in time; the queue check
 * (sw_route_leave_queue) sends it to the cloud while that still makes the
 * budget if the slot did not come. */
#define SW_ROUTE_FIRST_RELEASE_Q 0.1

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

/* Whether a request arriving now at local backend b would wait for a slot
 * (sw_route_ahead > 0), the cheap check first. */
static inline bool sw_route_waits(const struct sw_route_backend_view *b)
{
    return b->slots > 0 && sw_route_may_wait(b) && sw_route_ahead(b) > 0;
}

/* Estimated ms before a request arriving now at local backend b would start
 * generating its first token: queue position and learned service times, plus
 * its own prefill (of what b->cached_tokens does not cover) and the RTT. Warm-up (cold/warming) is NOT included; the
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
 * them (fluid): wait = ahead x service / slots. Overdue holders (n_overdue,
 * sw_route_overdue) free no slot: the releases come from the other slots
 * (slots - n_overdue in place of slots); with none left the wait is
 * unbounded (1e300). slots <= 0 means unbounded
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

/* How long a request holding a slot of local backend b is expected to hold
 * it: prefill (prompt_tokens x prefill_ms_per_token) plus the learned
 * average output (at most max_tokens when > 0) at decode_tps; learned rates
 * or the priors, as in sw_route_est_ttft_ms. Its own estimated finish, for
 * sw_route_overdue. Always finite, >= 0. */
double sw_route_expected_hold_ms(const struct sw_route_backend_view *b, long prompt_tokens,
                                 long max_tokens);

/* Whether a request that has held its slot for elapsed_ms is overdue: busy
 * past factor x its expected hold (expected_ms, sw_route_expected_hold_ms)
 * plus floor_ms, strictly (docs/routing.md, "Overdue slots"). An overdue
 * slot counts as not freeing in the wait estimate (the view's n_overdue).
 * factor <= 0 (or not finite): never (the rule is off). */
bool sw_route_overdue(double elapsed_ms, double expected_ms, double factor, double floor_ms);

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

/* Whether a request waiting in a local queue (for waited_ms so far) should
 * move to another local that has a free slot and that the router would
 * send it to now, whose estimated first token from now is est_there_ms:
 * when that comes sooner, by more than the checks' period (check_ms), than
 * where it waits (est_here_ms, for its place in the queue); or once it has
 * waited longer than moving would take. The second is the rent-or-buy rule:
 * the wait estimate a request queued on is optimistic by design (the first
 * release at SW_ROUTE_FIRST_RELEASE_Q, the rest at the fluid rate), and
 * when the slots were all taken at once and are held for as long as each
 * other, it stays low while the wait runs on; moving once the wait has cost
 * what a move costs takes at most twice the better of the two. Only to a
 * box that starts it at once, so it never moves twice. */
bool sw_route_move_local(double waited_ms, double est_here_ms, double est_there_ms,
                         double check_ms);
/* ---- Inline helpers (the decision's loop and estimate.c) ---- */

/* A learned value, or the prior when there is no data yet: v > 0 and finite
 * (NaN fails the first comparison, +inf the second). */
static inline double sw_route_learned(double v, double prior)
{
    return v > 0 && v <= DBL_MAX ? v : prior;
}

static inline double sw_route_nonneg(double v)
{
    return v > 0 && v <= DBL_MAX ? v : 0;
}

/* The prompt tokens of a request of `prompt` tokens that backend b must
 * prefill: those its prefix cache is not expected to hold
 * (b->cached_tokens), at least 0. */
static inline double sw_route_uncached(const struct sw_route_backend_view *b, double prompt)
{
    double cached = sw_route_nonneg(b->cached_tokens);
    return cached < prompt ? prompt - cached : 0;
}

/* sw_route_est_ttft_ms with the request's prompt as a double (>= 0) and
 * may_wait = b->slots > 0 && sw_route_may_wait(b), which the caller knows:
 * inline, for the decision's loop over the backends. */
static inline __attribute__((always_inline)) double
sw_route_est_ttft(const struct sw_route_backend_view *b, double prompt, bool may_wait)
{
    double prefill = sw_route_learned(b->prefill_ms_per_token, SW_ROUTE_PRIOR_PREFILL_MS_PER_TOKEN);
    double wait = 0;

    if (may_wait) {
        double ahead = sw_route_ahead(b);
        if (ahead > 0) {
            long in_flight = b->in_flight > 0 ? b->in_flight : 0;
            double avg_prompt = sw_route_learned(b->avg_prompt_tokens, prompt);
            double service = avg_prompt * prefill +
                             1000.0 *
                                 sw_route_learned(b->avg_output_tokens,
                                                  SW_ROUTE_PRIOR_OUTPUT_TOKENS) /
                                 sw_route_learned(b->decode_tps, SW_ROUTE_PRIOR_DECODE_TPS);
            /* Overdue holders free no slot: the others do all the releases
             * (ahead is the same count of them); none left, no slot frees. */
            long overdue = b->n_overdue > 0 ? b->n_overdue : 0;
            if (overdue > in_flight)
                overdue = in_flight;
            if (overdue >= b->slots)
                return 1e300;
            double freeing = (double)(b->slots - overdue);
            long known = b->n_busy > 0 ? b->n_busy : 0;
            if (known > SW_ROUTE_BUSY_MAX)
                known = SW_ROUTE_BUSY_MAX;
            if (known > in_flight - overdue)
                known = in_flight - overdue;
            if (known > 0) {
                /* The k-th release is the k-th soonest end of a running
                 * request; beyond those known, the fluid rate. */
                long k = (long)ahead <= known ? (long)ahead : known;
                double kth = sw_route_nonneg(b->busy_left_ms[k - 1]);
                if (k == 1 && b->first_release_ms > 0 && b->first_release_ms < kth)
                    kth = b->first_release_ms;  /* the expected first end */
                wait = kth + (ahead - (double)k) * service / freeing;
            }
            /* Fluid approximation: slots release at slots / service per ms. It
             * caps the above when the running requests' max_tokens say little
             * (set far above what they generate). */
            double fluid = ahead * service / freeing;
            if (known <= 0 || fluid < wait)
                wait = fluid;
        }
    }
    double own;
    if (b->tier == SW_TIER_CLOUD && isfinite(b->ttft_avg_ms) && b->ttft_avg_ms > 0) {
        own = b->ttft_avg_ms;   /* measured: the provider's queue, prefill and network */
    } else {    /* prefill of what the cache does not hold, then the first token's decode step */
        own = sw_route_uncached(b, prompt) * prefill +
              1000.0 / sw_route_learned(b->decode_tps, SW_ROUTE_PRIOR_DECODE_TPS) +
              sw_route_nonneg(b->rtt_ms);
        if (b->follow_left_ms > 0)  /* it takes the slot of the request it follows */
            wait = b->follow_left_ms;
    }
    double est = wait + own;    /* >= 0, +inf or NaN */
    return est <= DBL_MAX ? est : 1e300;
}

#endif
