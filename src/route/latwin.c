/* Latency window with hysteresis: see latwin.h. */
#include "route/latwin.h"

#include <math.h>

static void expire(struct sw_latwin *w, int64_t now_ms)
{
    while (w->n > 0 && now_ms - w->s[w->head].t_ms >= w->window_ms) {
        w->sum_us -= w->s[w->head].us;
        w->head = (w->head + 1) % SW_LATWIN_MAX_SAMPLES;
        w->n--;
    }
}

static double avg_ms(const struct sw_latwin *w)
{
    return w->n ? (double)w->sum_us / w->n / 1000.0 : 0;
}

static void evaluate(struct sw_latwin *w, int64_t now_ms)
{
    double avg = avg_ms(w);
    int min_samples = w->min_samples > 1 ? w->min_samples : 1;

    if (!w->degraded) {
        if (w->n >= min_samples && avg > w->degrade_ms) {
            w->degraded = true;
            w->below = false;
            w->changes_total++;
        }
        return;
    }
    if (w->n == 0 || avg >= w->recover_ms) {
        w->below = false;
        return;
    }
    if (!w->below) {
        w->below = true;
        w->below_since_ms = now_ms;
    }
    if (now_ms - w->below_since_ms >= w->dwell_ms) {
        w->degraded = false;
        w->below = false;
        w->changes_total++;
    }
}

void sw_latwin_init(struct sw_latwin *w, int64_t window_ms, double degrade_ms, double recover_ms,
                    int64_t dwell_ms)
{
    *w = (struct sw_latwin){0};
    w->window_ms = window_ms > 0 ? window_ms : SW_LATWIN_DEFAULT_WINDOW_MS;
    w->degrade_ms = degrade_ms > 0 ? degrade_ms : SW_LATWIN_DEFAULT_DEGRADE_MS;
    w->recover_ms = recover_ms > 0 ? recover_ms : SW_LATWIN_DEFAULT_RECOVER_MS;
    if (w->recover_ms > w->degrade_ms)
        w->recover_ms = w->degrade_ms;
    w->dwell_ms = dwell_ms > 0 ? dwell_ms : SW_LATWIN_DEFAULT_DWELL_MS;
    w->min_samples = SW_LATWIN_DEFAULT_MIN_SAMPLES;
}

void sw_latwin_add(struct sw_latwin *w, int64_t now_ms, double latency_ms)
{
    if (!(latency_ms > 0)) /* negative and NaN */
        latency_ms = 0;
    if (latency_ms > SW_LATWIN_MAX_SAMPLE_MS)
        latency_ms = SW_LATWIN_MAX_SAMPLE_MS;

    expire(w, now_ms);
    if (w->n == SW_LATWIN_MAX_SAMPLES) {
        w->sum_us -= w->s[w->head].us;
        w->head = (w->head + 1) % SW_LATWIN_MAX_SAMPLES;
        w->n--;
        w->evicted_full_total++;
    }
    int tail = (w->head + w->n) % SW_LATWIN_MAX_SAMPLES;
    w->s[tail].t_ms = now_ms;
    w->s[tail].us = llround(latency_ms * 1000.0);
    w->sum_us += w->s[tail].us;
    w->n++;
    evaluate(w, now_ms);
}

double sw_latwin_avg(struct sw_latwin *w, int64_t now_ms)
{
    expire(w, now_ms);
    return avg_ms(w);
}

int sw_latwin_count(struct sw_latwin *w, int64_t now_ms)
{
    expire(w, now_ms);
    return w->n;
}

bool sw_latwin_degraded(struct sw_latwin *w, int64_t now_ms)
{
    expire(w, now_ms);
    evaluate(w, now_ms);
    return w->degraded;
}

double sw_latwin_view_slow(struct sw_latwin *w, int64_t now_ms, bool evaluate_health,
                           bool *degraded)
{
    expire(w, now_ms);
    if (evaluate_health)
        evaluate(w, now_ms);
    *degraded = evaluate_health && w->degraded;
    return avg_ms(w);
}
