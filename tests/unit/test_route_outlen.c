/* Unit tests of the learned output lengths (src/route/outlen.c) and of what
 * the router makes of them (src/route/route.c): the expected first slot
 * release of a full local backend (sw_route_first_release_ms) and the queue
 * check's rule for leaving a local queue (sw_route_leave_queue). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "route/outlen.h"
#include "route/route.h"

static void feed(struct sw_outlen *o, long out, long max, int times)
{
    for (int i = 0; i < times; i++)
        assert_int_equal(sw_outlen_observe(o, out, max), 1);
}

/* A sample is output / max_tokens, in twentieths rounded up; an answer
 * longer than its limit counts as the whole limit; nonsense is ignored. */
static void test_observe_bins_and_guards(void **state)
{
    (void)state;
    struct sw_outlen o;
    sw_outlen_init(&o);
    assert_int_equal(o.dist.n, 0);
    assert_int_equal(sw_outlen_observe(&o, 0, 100), 0);
    assert_int_equal(sw_outlen_observe(&o, 10, 0), 0);
    assert_int_equal(sw_outlen_observe(&o, -3, -1), 0);
    assert_int_equal(o.dist.n, 0);

    feed(&o, 1, 100, 1);        /* 0.01: (0, 0.05] */
    feed(&o, 5, 100, 1);        /* 0.05 exactly: still the first bin */
    feed(&o, 6, 100, 1);        /* 0.06: (0.05, 0.10] */
    feed(&o, 100, 100, 1);      /* the whole limit: the top bin */
    feed(&o, 900, 100, 1);      /* past it: the top bin too */
    feed(&o, 1, 1000000000000L, 1);
    assert_int_equal(o.dist.count[0], 3);
    assert_int_equal(o.dist.count[1], 1);
    assert_int_equal(o.dist.count[SW_OUTLEN_BINS - 1], 2);
    assert_int_equal(o.dist.n, 6);
}

/* The window keeps the latest SW_OUTLEN_WINDOW samples: a change of traffic
 * replaces the old distribution entirely. */
static void test_window_forgets_old_samples(void **state)
{
    (void)state;
    struct sw_outlen o;
    sw_outlen_init(&o);
    feed(&o, 100, 100, SW_OUTLEN_WINDOW);
    assert_int_equal(o.dist.n, SW_OUTLEN_WINDOW);
    assert_true(sw_outlen_bound(&o.dist, 0.5, 0) == 1.0);
    feed(&o, 10, 100, SW_OUTLEN_WINDOW - 1);
    assert_int_equal(o.dist.count[SW_OUTLEN_BINS - 1], 1);
    assert_int_equal(o.dist.count[1], SW_OUTLEN_WINDOW - 1);
    feed(&o, 10, 100, 1);
    assert_int_equal(o.dist.count[SW_OUTLEN_BINS - 1], 0);
    assert_int_equal(o.dist.n, SW_OUTLEN_WINDOW);
    assert_float_equal(sw_outlen_bound(&o.dist, 0.95, 0), 0.10, 1e-12);
}

/* The quantile among the answers that got further than progress; the limit
 * itself without enough samples, or with too few that got that far. */
static void test_bound_quantile_and_fallbacks(void **state)
{
    (void)state;
    struct sw_outlen o;
    sw_outlen_init(&o);
    /* 40 answers: 30 stop at a quarter, 10 use the whole limit. */
    feed(&o, 25, 100, SW_OUTLEN_MIN_SAMPLES - 10 - 1);
    feed(&o, 100, 100, 10);
    assert_true(sw_outlen_bound(&o.dist, 0.5, 0) == 1.0);       /* one sample short */
    feed(&o, 25, 100, 1);
    feed(&o, 25, 100, 40 - SW_OUTLEN_MIN_SAMPLES);
    assert_int_equal(o.dist.n, 40);
    assert_float_equal(sw_outlen_bound(&o.dist, 0.5, 0), 0.25, 1e-12);
    assert_float_equal(sw_outlen_bound(&o.dist, 0.75, 0), 0.25, 1e-12);
    assert_float_equal(sw_outlen_bound(&o.dist, 0.8, 0), 1.0, 1e-12);
    /* Past a quarter only the long ones are left: the limit. */
    assert_float_equal(sw_outlen_bound(&o.dist, 0.1, 0.3), 1.0, 1e-12);
    /* Inside the quarter's bin it still counts: rounded up, above progress. */
    assert_float_equal(sw_outlen_bound(&o.dist, 0.5, 0.21), 0.25, 1e-12);
    /* Nonsense q and progress: the limit, and progress 0. */
    assert_float_equal(sw_outlen_bound(&o.dist, NAN, 0), 1.0, 1e-12);
    assert_float_equal(sw_outlen_bound(&o.dist, 0.5, NAN), 0.25, 1e-12);
    assert_float_equal(sw_outlen_bound(&o.dist, 0.5, 1.5), 1.0, 1e-12);

    /* Fewer than SW_OUTLEN_MIN_TAIL past progress: the limit. */
    sw_outlen_init(&o);
    feed(&o, 25, 100, 60);
    feed(&o, 50, 100, SW_OUTLEN_MIN_TAIL - 1);
    assert_float_equal(sw_outlen_bound(&o.dist, 0.5, 0.3), 1.0, 1e-12);
    feed(&o, 50, 100, 1);
    assert_float_equal(sw_outlen_bound(&o.dist, 0.5, 0.3), 0.5, 1e-12);
}

/* Priors: 0.5 ms per prompt token, 30 tokens/s (a token every 33.3 ms). */
static struct sw_route_backend_view local_view(void)
{
    return (struct sw_route_backend_view){.name = "L", .tier = SW_TIER_LOCAL,
                                          .health = SW_HEALTH_UP, .slots = 4, .in_flight = 4};
}

/* Four requests of max_tokens 300 that started together: without learned
 * lengths, their first release is their bound (10 s); with answers that
 * stop at a tenth of the limit, at 30 tokens (1 s); with answers that stop
 * anywhere, sooner than any one alone would at the same chance. */
static void test_first_release(void **state)
{
    (void)state;
    struct sw_route_backend_view v = local_view();
    struct sw_route_holder h[4];
    for (int i = 0; i < 4; i++)
        h[i] = (struct sw_route_holder){0, 300, true, 0};
    assert_float_equal(sw_route_first_release_ms(&v, h, 0, 0.5), 0, 1e-9);
    assert_float_equal(sw_route_first_release_ms(&v, h, 4, 0.1), 10000, 1e-6);

    struct sw_outlen o;
    sw_outlen_init(&o);
    feed(&o, 30, 300, SW_OUTLEN_MIN_SAMPLES);
    v.out_ratio = o.dist;
    assert_float_equal(sw_route_first_release_ms(&v, h, 4, 0.1), 1000, 1e-6);
    assert_float_equal(sw_route_first_release_ms(&v, h, 4, 1.0), 1000, 1e-6);
    /* A request that did not name max_tokens ends at its bound. */
    for (int i = 0; i < 4; i++)
        h[i].max_tokens_given = false;
    assert_float_equal(sw_route_first_release_ms(&v, h, 4, 0.1), 10000, 1e-6);
    /* Past its max_tokens bound: the overrun rule (a tenth of the bound). */
    for (int i = 0; i < 4; i++)
        h[i] = (struct sw_route_holder){0, 300, true, 10000};
    assert_float_equal(sw_route_first_release_ms(&v, h, 4, 0.1), 1000, 1e-6);

    /* Answers spread evenly over the limit (one per bin). Each alone ends in
     * its first 5 % with chance 1/20; one of four, with 1 - (19/20)^4 = 0.19. */
    sw_outlen_init(&o);
    for (int k = 1; k <= 20; k++)
        feed(&o, 15 * k, 300, 2);
    v.out_ratio = o.dist;
    for (int i = 0; i < 4; i++)
        h[i] = (struct sw_route_holder){0, 300, true, 0};
    assert_float_equal(sw_route_first_release_ms(&v, h, 1, 0.05), 500, 1e-6);
    assert_float_equal(sw_route_first_release_ms(&v, h, 1, 0.1), 1000, 1e-6);
    assert_float_equal(sw_route_first_release_ms(&v, h, 4, 0.1), 500, 1e-6);
    assert_float_equal(sw_route_first_release_ms(&v, h, 4, 0.19), 1000, 1e-6);
    /* Having run 6.1 s (183 tokens, 61 % of the limit), the first of four
     * ends at the next bin's edge (195 tokens, 6.5 s) with chance
     * 1 - (7/8)^4 = 0.41: the answers that got as far stop in 8 bins. */
    for (int i = 0; i < 4; i++)
        h[i].elapsed_ms = 6100;
    assert_float_equal(sw_route_first_release_ms(&v, h, 4, 0.4), 400, 1e-6);
    assert_float_equal(sw_route_first_release_ms(&v, h, 3, 0.4), 900, 1e-6);
    /* Never later than the soonest bound. */
    h[0] = (struct sw_route_holder){0, 300, false, 9900};
    assert_float_equal(sw_route_first_release_ms(&v, h, 4, 1.0), 100, 1e-6);
}

/* The wait estimate of a full local backend takes the expected first release
 * when it is sooner than the soonest bound; the bound estimate does not. */
static void test_wait_uses_first_release(void **state)
{
    (void)state;
    struct sw_route_backend_view v = local_view();
    v.n_busy = 4;
    v.busy_left_ms[0] = v.busy_left_ms[1] = v.busy_left_ms[2] = v.busy_left_ms[3] = 5000;
    double own = 1000.0 / SW_ROUTE_PRIOR_DECODE_TPS;  /* no prompt: the first token's step */
    v.avg_output_tokens = 3000; /* the fluid rate says little */
    assert_float_equal(sw_route_est_ttft_ms(&v, 0), 5000 + own, 1e-6);
    v.first_release_ms = 700;
    assert_float_equal(sw_route_est_ttft_ms(&v, 0), 700 + own, 1e-6);
    v.first_release_ms = 9000;  /* later than the bound: the bound */
    assert_float_equal(sw_route_est_ttft_ms(&v, 0), 5000 + own, 1e-6);
}

/* Leave the queue when the local estimate breaks the budget; else only at
 * the last check at which the cloud still makes it, and only when the local
 * with every request at its bound would not. */
static void test_leave_queue(void **state)
{
    (void)state;
    /* elapsed, local, local at its bounds, cloud, budget, check */
    assert_true(sw_route_leave_queue(100, 950, 950, 400, 1000, 25));
    assert_false(sw_route_leave_queue(100, 800, 5000, 400, 1000, 25));  /* cloud has time */
    assert_true(sw_route_leave_queue(580, 300, 5000, 400, 1000, 25));   /* its last check */
    assert_false(sw_route_leave_queue(580, 300, 400, 400, 1000, 25));   /* local surely in time */
    assert_false(sw_route_leave_queue(620, 300, 5000, 400, 1000, 25));  /* cloud too late too */
    assert_false(sw_route_leave_queue(580, 300, 5000, 400, 0, 25));     /* no budget */
}

/* Move to another local (that starts it at once) when its estimate there
 * is sooner by more than a check, or once the wait so far has cost what
 * the move costs; never on a NaN estimate there. */
static void test_move_local(void **state)
{
    (void)state;
    /* waited, here, there, check */
    assert_true(sw_route_move_local(0, 500, 400, 25));      /* sooner there */
    assert_false(sw_route_move_local(0, 420, 400, 25));     /* within a check: stay */
    assert_false(sw_route_move_local(300, 100, 400, 25));   /* the estimate here still holds */
    assert_true(sw_route_move_local(401, 100, 400, 25));    /* waited what the move costs */
    assert_false(sw_route_move_local(400, 100, 400, 25));
    assert_true(sw_route_move_local(0, 500, 0, 25));        /* an idle box with the prefix */
    assert_false(sw_route_move_local(1e9, 1e9, NAN, 25));
    assert_false(sw_route_move_local(1e9, 1e9, -1, 25));
    assert_false(sw_route_move_local(0, NAN, 400, 25));     /* NaN here: only the wait decides */
    assert_true(sw_route_move_local(500, NAN, 400, 25));
    assert_true(sw_route_move_local(0, INFINITY, 400, 25)); /* an unbounded wait here */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_observe_bins_and_guards),
        cmocka_unit_test(test_window_forgets_old_samples),
        cmocka_unit_test(test_bound_quantile_and_fallbacks),
        cmocka_unit_test(test_first_release),
        cmocka_unit_test(test_wait_uses_first_release),
        cmocka_unit_test(test_leave_queue),
        cmocka_unit_test(test_move_local),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
