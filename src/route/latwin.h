/* Per-endpoint latency window with hysteresis (latency-based routing). Pure and
 * clock-injected; fixed memory (a ring of SW_LATWIN_MAX_SAMPLES samples).
 *
 * Samples are latencies in ms (TTFT of live requests, RTT of active health
 * checks: the caller decides what it feeds; one window per signal if they
 * should not be mixed) stamped with now_ms. The window keeps the samples
 * younger than window_ms (a sample added at t is gone from t + window_ms on);
 * when the ring is full the oldest is evicted first. The average is exact:
 * samples are held in whole microseconds and summed as integers.
 *
 * Health, evaluated at every sw_latwin_add and sw_latwin_degraded call:
 *
 *   healthy  -> degraded  when the average is above degrade_ms (strictly) and
 *                         the window holds at least min_samples samples (one
 *                         slow request alone does not degrade an endpoint);
 *   degraded -> healthy   when the average has been below recover_ms
 *                         (strictly) at every evaluation for at least dwell_ms
 *                         (measured from the first evaluation that saw it
 *                         below); any evaluation at or above recover_ms, or
 *                         with an empty window, restarts the dwell.
 *
 * recover_ms < degrade_ms plus the dwell is the hysteresis: an average
 * oscillating around degrade_ms degrades once and stays degraded; only a
 * sustained fall recovers. An empty window is no evidence either way: a
 * healthy endpoint stays healthy, a degraded one stays degraded (recovery
 * needs samples, which the active health checks provide). */
#ifndef SW_ROUTE_LATWIN_H
#define SW_ROUTE_LATWIN_H

#include <stdbool.h>
#include <stdint.h>

#define SW_LATWIN_MAX_SAMPLES        1024
#define SW_LATWIN_DEFAULT_WINDOW_MS  30000
#define SW_LATWIN_DEFAULT_DEGRADE_MS 200.0
#define SW_LATWIN_DEFAULT_RECOVER_MS 150.0
#define SW_LATWIN_DEFAULT_DWELL_MS   10000
#define SW_LATWIN_DEFAULT_MIN_SAMPLES 3
#define SW_LATWIN_MAX_SAMPLE_MS      3600000.0  /* larger samples are clamped (1 h) */

struct sw_latwin_sample {
    int64_t t_ms;               /* when it was added */
    int64_t us;                 /* latency in whole microseconds */
};

struct sw_latwin {
    /* configuration (sw_latwin_init; min_samples may be changed after init) */
    int64_t window_ms;
    double degrade_ms;          /* degrade when the average is above this */
    double recover_ms;          /* recover when below this for dwell_ms */
    int64_t dwell_ms;
    int min_samples;            /* samples needed before degrading; >= 1 */

    /* the ring */
    struct sw_latwin_sample s[SW_LATWIN_MAX_SAMPLES];
    int head;                   /* index of the oldest sample */
    int n;                      /* samples in the window */
    int64_t sum_us;             /* sum of the samples in the window */

    /* health */
    bool degraded;
    bool below;                 /* degraded and the average was below recover_ms ... */
    int64_t below_since_ms;     /* ... since this evaluation */

    /* counters for /metrics */
    uint64_t changes_total;     /* healthy <-> degraded transitions */
    uint64_t evicted_full_total; /* samples evicted because the ring was full */
};

/* A healthy, empty window. Each argument <= 0 selects its default (30000 ms,
 * 200 ms, 150 ms, 10000 ms); a recover_ms above degrade_ms is lowered to
 * degrade_ms (no hysteresis band, but never "recovered while degraded"). */
void sw_latwin_init(struct sw_latwin *w, int64_t window_ms, double degrade_ms, double recover_ms,
                    int64_t dwell_ms);

/* Adds a latency sample (ms; negative or NaN counts as 0, above
 * SW_LATWIN_MAX_SAMPLE_MS is clamped) observed at now_ms, then evaluates the
 * health. */
void sw_latwin_add(struct sw_latwin *w, int64_t now_ms, double latency_ms);

/* The view's average and health in one call: sw_latwin_avg at now_ms, and
 * when `evaluate`, *degraded as sw_latwin_degraded at now_ms (else false, and
 * the health is not evaluated). An empty window of a healthy endpoint has
 * nothing to evict or evaluate. */
double sw_latwin_view_slow(struct sw_latwin *w, int64_t now_ms, bool evaluate, bool *degraded);
static inline double sw_latwin_view(struct sw_latwin *w, int64_t now_ms, bool evaluate,
                                    bool *degraded)
{
    if (w->n == 0 && !w->degraded) {
        *degraded = false;
        return 0;
    }
    return sw_latwin_view_slow(w, now_ms, evaluate, degraded);
}

/* Average of the samples in the window as of now_ms, in ms; 0 when empty
 * (the view's "0: no data"). Evicts expired samples; does not evaluate the
 * health. */
double sw_latwin_avg(struct sw_latwin *w, int64_t now_ms);

/* Number of samples in the window as of now_ms. */
int sw_latwin_count(struct sw_latwin *w, int64_t now_ms);

/* Evaluates the health as of now_ms and returns true when degraded. Call it
 * when building the view (a dwell can complete without new samples). */
bool sw_latwin_degraded(struct sw_latwin *w, int64_t now_ms);

#endif
