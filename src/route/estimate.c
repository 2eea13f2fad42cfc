/* The estimators over a backend's view (route/estimate.h; docs/routing.md,
 * "Estimates"). Pure: no clock, no I/O, no allocation. */
#include "route/estimate.h"

#include <float.h>
#include <math.h>

double sw_route_est_ttft_ms(const struct sw_route_backend_view *b, long prompt_tokens)
{
    return sw_route_est_ttft(b, prompt_tokens > 0 ? (double)prompt_tokens : 0,
                    b->slots > 0 && sw_route_may_wait(b));
}

double sw_route_busy_left_ms(const struct sw_route_backend_view *b, long prompt_tokens,
                             long max_tokens, double elapsed_ms)
{
    double prompt = prompt_tokens > 0 ? (double)prompt_tokens : 0;
    double out = max_tokens > 0
                     ? (double)max_tokens
                     : sw_route_learned(b->avg_output_tokens, SW_ROUTE_PRIOR_OUTPUT_TOKENS);
    double hold = prompt * sw_route_learned(b->prefill_ms_per_token,
                                            SW_ROUTE_PRIOR_PREFILL_MS_PER_TOKEN) +
                  1000.0 * out / sw_route_learned(b->decode_tps, SW_ROUTE_PRIOR_DECODE_TPS);
    /* Past its bound at the learned rates, the box is slower than learned
     * (the rates lag a slowdown) or the request hangs: it still holds a tenth
     * of its bound, and as long again as it has overrun so far, so a request
     * that never ends makes the wait grow, never shrink to nothing. */
    double left = hold - sw_route_nonneg(elapsed_ms);
    if (!(left > 0)) {
        double overrun = sw_route_nonneg(elapsed_ms) - hold;
        left = SW_ROUTE_OVERRUN_FRACTION * hold;
        if (overrun > left)
            left = overrun;
    }
    return isfinite(left) && left > 0 ? left : 0;
}

double sw_route_expected_hold_ms(const struct sw_route_backend_view *b, long prompt_tokens,
                                 long max_tokens)
{
    double prompt = prompt_tokens > 0 ? (double)prompt_tokens : 0;
    double out = sw_route_learned(b->avg_output_tokens, SW_ROUTE_PRIOR_OUTPUT_TOKENS);
    if (max_tokens > 0 && (double)max_tokens < out)
        out = (double)max_tokens;
    double hold = prompt * sw_route_learned(b->prefill_ms_per_token,
                                            SW_ROUTE_PRIOR_PREFILL_MS_PER_TOKEN) +
                  1000.0 * out / sw_route_learned(b->decode_tps, SW_ROUTE_PRIOR_DECODE_TPS);
    return sw_route_nonneg(hold);
}

bool sw_route_overdue(double elapsed_ms, double expected_ms, double factor, double floor_ms)
{
    if (!(factor > 0 && factor <= DBL_MAX))
        return false;
    double limit = factor * sw_route_nonneg(expected_ms) + sw_route_nonneg(floor_ms);
    return elapsed_ms > limit;
}

/* A point where one running request may end, and the chance it does there. */
struct rel_ev {
    double t;
    size_t i;
    double p;
};

#define REL_MAX_EV (SW_ROUTE_BUSY_MAX * (SW_OUTLEN_BINS + 1))

double sw_route_first_release_ms(const struct sw_route_backend_view *b,
                                 const struct sw_route_holder *h, size_t n, double q)
{
    if (n == 0)
        return 0;
    if (n > SW_ROUTE_BUSY_MAX)
        n = SW_ROUTE_BUSY_MAX;
    if (!(q > 0 && q <= 1))
        q = 1;
    struct rel_ev ev[REL_MAX_EV];
    size_t nev = 0;
    double alive[SW_ROUTE_BUSY_MAX];
    double soonest = 1e300;
    const struct sw_outlen_dist *d = &b->out_ratio;
    double prefill_rate =
        sw_route_learned(b->prefill_ms_per_token, SW_ROUTE_PRIOR_PREFILL_MS_PER_TOKEN);
    double period = 1000.0 / sw_route_learned(b->decode_tps, SW_ROUTE_PRIOR_DECODE_TPS);

    for (size_t i = 0; i < n; i++) {
        double full =
            sw_route_busy_left_ms(b, h[i].prompt_tokens, h[i].max_tokens, h[i].elapsed_ms);
        if (full < soonest)
            soonest = full;
        alive[i] = 1;
        double prefill = (h[i].prompt_tokens > 0 ? (double)h[i].prompt_tokens : 0) * prefill_rate;
        double max = (double)h[i].max_tokens;
        double elapsed = sw_route_nonneg(h[i].elapsed_ms);
        bool learnt = h[i].max_tokens_given && h[i].max_tokens > 0 &&
                      d->n >= SW_OUTLEN_MIN_SAMPLES && elapsed < prefill + max * period;
        int first = 0;
        unsigned tail = 0;
        double done = 0;    /* tokens produced so far, at the learned rates */
        if (learnt) {
            done = elapsed > prefill ? (elapsed - prefill) / period : 0;
            first = (int)floor(done * SW_OUTLEN_BINS / max);
            if (first > SW_OUTLEN_BINS - 1)
                first = SW_OUTLEN_BINS - 1;
            for (int j = first; j < SW_OUTLEN_BINS; j++)
                tail += d->count[j];
            learnt = tail >= SW_OUTLEN_MIN_TAIL;
        }
        if (!learnt) {  /* it ends at its bound */
            ev[nev++] = (struct rel_ev){full, i, 1};
            continue;
        }
        /* It ends at the upper edge of a bin above what it has produced, as
         * often as the answers that got that far did. */
        for (int j = first; j < SW_OUTLEN_BINS; j++) {
            if (!d->count[j])
                continue;
            double tokens = ceil((double)(j + 1) * max / SW_OUTLEN_BINS);
            double t = prefill + tokens * period - elapsed;
            if (!(t > 0))
                t = 0;
            if (t > full)
                t = full;
            ev[nev++] = (struct rel_ev){t, i, (double)d->count[j] / (double)tail};
        }
    }
    /* Sweep the ends in time order until one has ended with chance q. */
    for (size_t a = 1; a < nev; a++) {
        struct rel_ev x = ev[a];
        size_t k = a;
        while (k > 0 && ev[k - 1].t > x.t) {
            ev[k] = ev[k - 1];
            k--;
        }
        ev[k] = x;
    }
    double result = soonest;
    for (size_t a = 0; a < nev; a++) {
        alive[ev[a].i] -= ev[a].p;
        if (alive[ev[a].i] < 0)
            alive[ev[a].i] = 0;
        double none = 1;
        for (size_t i = 0; i < n; i++)
            none *= alive[i];
        if (1 - none >= q - 1e-9) {
            result = ev[a].t;
            break;
        }
    }
    if (result > soonest)
        result = soonest;
    return isfinite(result) && result > 0 ? result : 0;
}

bool sw_route_move_local(double waited_ms, double est_here_ms, double est_there_ms,
                         double check_ms)
{
    /* a NaN estimate there: no move */
    return est_there_ms >= 0 &&
           (est_there_ms + sw_route_nonneg(check_ms) < est_here_ms || waited_ms > est_there_ms);
}

bool sw_route_leave_queue(double elapsed_ms, double est_local_ms, double est_bound_ms,
                          double est_cloud_ms, long budget_ms, double check_ms)
{
    if (budget_ms <= 0)
        return false;
    double budget = (double)budget_ms, elapsed = sw_route_nonneg(elapsed_ms);
    if (!(elapsed + sw_route_nonneg(est_local_ms) <= budget))
        return true;
    double cloud = elapsed + sw_route_nonneg(est_cloud_ms);
    return cloud <= budget && cloud + sw_route_nonneg(check_ms) > budget &&
           !(elapsed + sw_route_nonneg(est_bound_ms) <= budget);
}
