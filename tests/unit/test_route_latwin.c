/* Unit tests of the latency window (src/route/latwin.c) on a fake clock:
 * exact averages and eviction, and the hysteresis: an oscillating signal does
 * not flap, a real rise degrades, a sustained fall recovers after the dwell
 * and not a sample before. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "route/latwin.h"

static struct sw_latwin w; /* ~16 KiB of ring: keep it off the stack */

static void test_defaults_and_bounds(void **state)
{
    (void)state;
    sw_latwin_init(&w, 0, 0, 0, 0);
    assert_int_equal(w.window_ms, 30000);
    assert_true(w.degrade_ms == 200.0);
    assert_true(w.recover_ms == 150.0);
    assert_int_equal(w.dwell_ms, 10000);
    assert_int_equal(w.min_samples, 3);
    assert_false(sw_latwin_degraded(&w, 0));
    assert_true(sw_latwin_avg(&w, 0) == 0);
    /* recover above degrade is lowered to degrade */
    sw_latwin_init(&w, 1000, 100, 300, 500);
    assert_true(w.recover_ms == 100.0);
}

static void test_average_and_eviction(void **state)
{
    (void)state;
    sw_latwin_init(&w, 0, 0, 0, 0);
    sw_latwin_add(&w, 0, 100);
    sw_latwin_add(&w, 10000, 200);
    sw_latwin_add(&w, 20000, 301.5);
    assert_true(sw_latwin_avg(&w, 20000) == 601.5 / 3);
    assert_true(sw_latwin_avg(&w, 29999) == 601.5 / 3);
    assert_true(sw_latwin_avg(&w, 30000) == 250.75);  /* the sample at 0 is gone */
    assert_int_equal(sw_latwin_count(&w, 30000), 2);
    assert_true(sw_latwin_avg(&w, 40000) == 301.5);
    assert_true(sw_latwin_avg(&w, 50000) == 0);
    assert_int_equal(sw_latwin_count(&w, 50000), 0);

    /* guards: negative and NaN count as 0, huge is clamped */
    sw_latwin_add(&w, 60000, -5);
    sw_latwin_add(&w, 60000, NAN);
    sw_latwin_add(&w, 60000, 1e300);
    assert_true(sw_latwin_avg(&w, 60000) == SW_LATWIN_MAX_SAMPLE_MS / 3);
}

static void test_ring_full_evicts_oldest(void **state)
{
    (void)state;
    sw_latwin_init(&w, 0, 1e6, 0, 0); /* never degrades here */
    for (int i = 0; i < SW_LATWIN_MAX_SAMPLES + 76; i++)
        sw_latwin_add(&w, i, (double)i);
    int n = SW_LATWIN_MAX_SAMPLES;
    assert_int_equal(sw_latwin_count(&w, n + 75), n);
    assert_int_equal(w.evicted_full_total, 76);
    /* the survivors are 76 .. 1099: mean (76 + 1099) / 2 */
    assert_true(sw_latwin_avg(&w, n + 75) == (76.0 + 1099.0) / 2);
}

static void test_min_samples(void **state)
{
    (void)state;
    sw_latwin_init(&w, 0, 0, 0, 0);
    sw_latwin_add(&w, 0, 5000);               /* one slow cold request */
    assert_false(sw_latwin_degraded(&w, 0));
    sw_latwin_add(&w, 100, 5000);
    assert_false(sw_latwin_degraded(&w, 100));
    sw_latwin_add(&w, 200, 5000);
    assert_true(sw_latwin_degraded(&w, 200));
    /* min_samples 1: a single sample decides */
    sw_latwin_init(&w, 0, 0, 0, 0);
    w.min_samples = 1;
    sw_latwin_add(&w, 0, 201);
    assert_true(sw_latwin_degraded(&w, 0));
    /* exactly at the threshold is not above it */
    sw_latwin_init(&w, 0, 0, 0, 0);
    for (int i = 0; i < 10; i++)
        sw_latwin_add(&w, i, 200);
    assert_false(sw_latwin_degraded(&w, 10));
}

/* Square wave of period period_ms: half at lo, half at hi, one sample every
 * 100 ms for total_ms. Returns how often a plain threshold on the window
 * average (no hysteresis) would have changed its mind. */
static int drive_square(int64_t t0, int64_t total_ms, int64_t period_ms, double lo, double hi,
                        double naive_threshold)
{
    bool naive = sw_latwin_avg(&w, t0) > naive_threshold;
    int naive_changes = 0;
    for (int64_t t = t0; t < t0 + total_ms; t += 100) {
        double v = ((t - t0) % period_ms) < period_ms / 2 ? lo : hi;
        sw_latwin_add(&w, t, v);
        bool now = sw_latwin_avg(&w, t) > naive_threshold;
        if (now != naive)
            naive_changes++;
        naive = now;
    }
    return naive_changes;
}

static void test_oscillation_does_not_flap(void **state)
{
    (void)state;
    /* 20 s at 120 ms, 20 s at 280 ms for 10 minutes: the 30 s average swings
     * between ~173 and ~227, across degrade_ms (200) again and again, never
     * below recover_ms (150). */
    sw_latwin_init(&w, 0, 0, 0, 0);
    int naive = drive_square(0, 600000, 40000, 120, 280, 200);
    assert_true(naive >= 20);                 /* a plain threshold flaps */
    assert_int_equal(w.changes_total, 1);     /* degraded once, and stays */
    assert_true(sw_latwin_degraded(&w, 600000));

    /* Degraded, a signal that dips below recover_ms for less than the dwell
     * each time: a 2 s window, 8 s at 100 ms, 8 s at 250 ms. A recover
     * threshold without dwell would flip at every dip. */
    sw_latwin_init(&w, 2000, 0, 0, 0);
    sw_latwin_add(&w, 0, 1000);
    sw_latwin_add(&w, 1, 1000);
    sw_latwin_add(&w, 2, 1000);
    assert_true(sw_latwin_degraded(&w, 2));
    int naive_recover = drive_square(100, 600000, 16000, 100, 250, 150);
    assert_true(naive_recover >= 60);
    assert_int_equal(w.changes_total, 1);
    assert_true(sw_latwin_degraded(&w, 600100));
}

static void test_rise_degrades_fall_recovers_after_dwell(void **state)
{
    (void)state;
    sw_latwin_init(&w, 0, 0, 0, 0);
    int64_t t = 0;
    /* 10 s of a healthy 100 ms */
    for (; t < 10000; t += 100)
        sw_latwin_add(&w, t, 100);
    assert_false(sw_latwin_degraded(&w, t));
    /* rise to 400 ms: 100 samples of 100 + k of 400 average above 200 from
     * k = 51, i.e. at t = 10000 + 50 * 100 */
    int64_t degraded_at = -1;
    for (; t < 20000; t += 100) {
        sw_latwin_add(&w, t, 400);
        if (degraded_at < 0 && sw_latwin_degraded(&w, t))
            degraded_at = t;
    }
    assert_int_equal(degraded_at, 15000);
    assert_int_equal(w.changes_total, 1);

    /* between the thresholds (avg 175): stays degraded however long */
    for (; t < 120000; t += 100) {
        sw_latwin_add(&w, t, 175);
        assert_true(sw_latwin_degraded(&w, t));
    }
    /* a sustained fall to 50 ms: the average drops below 150 at some sample;
     * recovery comes exactly dwell_ms later, not one sample before. */
    int64_t below_at = -1, healthy_at = -1;
    for (; t < 200000; t += 100) {
        sw_latwin_add(&w, t, 50);
        if (below_at < 0 && sw_latwin_avg(&w, t) < 150)
            below_at = t;
        if (healthy_at < 0 && !sw_latwin_degraded(&w, t))
            healthy_at = t;
    }
    assert_true(below_at > 120000);
    assert_int_equal(healthy_at, below_at + 10000);
    assert_int_equal(w.changes_total, 2);

    /* the dwell completes between samples too: sw_latwin_degraded evaluates */
    sw_latwin_init(&w, 0, 0, 0, 0);
    for (int i = 0; i < 3; i++)
        sw_latwin_add(&w, 0, 300);
    assert_true(sw_latwin_degraded(&w, 0));
    sw_latwin_add(&w, 30000, 10);            /* the 300s expired: avg 10 */
    assert_true(sw_latwin_degraded(&w, 39999));
    assert_false(sw_latwin_degraded(&w, 40000));
}

static void test_empty_window_is_no_evidence(void **state)
{
    (void)state;
    sw_latwin_init(&w, 1000, 0, 0, 500);
    for (int i = 0; i < 3; i++)
        sw_latwin_add(&w, 0, 300);
    assert_true(sw_latwin_degraded(&w, 0));
    /* all samples expire: still degraded, for as long as nothing is seen */
    assert_true(sw_latwin_degraded(&w, 1000));
    assert_true(sw_latwin_degraded(&w, 100000));
    /* a good sample starts the dwell; the window emptying again restarts it */
    sw_latwin_add(&w, 100000, 10);
    assert_true(sw_latwin_degraded(&w, 100400));
    assert_true(sw_latwin_degraded(&w, 101000));  /* empty: dwell restarts */
    sw_latwin_add(&w, 101100, 10);
    assert_true(sw_latwin_degraded(&w, 101599));
    assert_false(sw_latwin_degraded(&w, 101600));
    /* healthy and empty stays healthy */
    assert_false(sw_latwin_degraded(&w, 500000));
    assert_int_equal(w.changes_total, 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults_and_bounds),
        cmocka_unit_test(test_average_and_eviction),
        cmocka_unit_test(test_ring_full_evicts_oldest),
        cmocka_unit_test(test_min_samples),
        cmocka_unit_test(test_oscillation_does_not_flap),
        cmocka_unit_test(test_rise_degrades_fall_recovers_after_dwell),
        cmocka_unit_test(test_empty_window_is_no_evidence),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
