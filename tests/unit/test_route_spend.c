/* Unit tests of the cloud spend window (src/route/spend.c) on a fake clock.
 * Amounts are binary fractions (0.25, 0.5, ...) so totals compare exactly. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "common/err.h"
#include "route/spend.h"

#define H SW_SPEND_HOUR_MS

static struct sw_spend sp; /* large (the reservation table): keep it off the stack */

static void test_cost(void **state)
{
    (void)state;
    static const struct {
        long in, out;
        double pin, pout, want;
    } t[] = {
        {1000000, 0, 2.5, 10, 2.5},
        {0, 1000000, 2.5, 10, 10},
        {500000, 250000, 2, 8, 3},
        {1000, 500, 3, 15, 0.0105},
        {-5, 1000000, 3, 15, 15},     /* negative tokens count as 0 */
        {1000000, 1000000, -1, 0, 0}, /* negative prices too */
        {1000000, 1000000, NAN, 1, 1},
        {0, 0, 3, 15, 0},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        double got = sw_spend_cost_usd(t[i].in, t[i].out, t[i].pin, t[i].pout);
        if (fabs(got - t[i].want) > 1e-12) {
            print_error("cost row %zu: %.17g want %.17g\n", i, got, t[i].want);
            fail();
        }
    }
}

static void test_reserve_settle_release(void **state)
{
    (void)state;
    sw_spend_handle a, b, c;
    sw_spend_init(&sp, H, 0);
    assert_true(sw_spend_total(&sp, 0) == 0);

    assert_int_equal(sw_spend_reserve(&sp, 10, 1.0, &a), SW_OK);
    assert_int_equal(sw_spend_reserve(&sp, 11, 0.5, &b), SW_OK);
    assert_int_equal(sw_spend_reserve(&sp, 12, 0.25, &c), SW_OK);
    assert_true(a != 0 && b != 0 && c != 0 && a != b && b != c && a != c);
    assert_true(sw_spend_total(&sp, 12) == 1.75);

    /* settle for less than reserved */
    assert_int_equal(sw_spend_settle(&sp, 20, a, 0.25), SW_OK);
    assert_true(sw_spend_total(&sp, 20) == 1.0);   /* 0.25 settled + 0.75 outstanding */
    /* settle for more than reserved */
    assert_int_equal(sw_spend_settle(&sp, 21, b, 2.0), SW_OK);
    assert_true(sw_spend_total(&sp, 21) == 2.5);
    /* release: no cost */
    assert_int_equal(sw_spend_release(&sp, c), SW_OK);
    assert_true(sw_spend_total(&sp, 22) == 2.25);
    assert_int_equal(sp.n_outstanding, 0);
    assert_true(sp.reserved_usd == 0);

    /* handles go stale once used: settling again still counts the money */
    assert_int_equal(sw_spend_release(&sp, c), SW_ENOTFOUND);
    assert_int_equal(sw_spend_settle(&sp, 23, a, 0.5), SW_ENOTFOUND);
    assert_true(sw_spend_total(&sp, 23) == 2.75);
    assert_int_equal(sw_spend_settle(&sp, 24, 0, 0.25), SW_ENOTFOUND); /* no reservation */
    assert_true(sw_spend_total(&sp, 24) == 3.0);
    assert_int_equal(sw_spend_release(&sp, 0), SW_ENOTFOUND);
    assert_int_equal(sp.stale_total, 4);
    assert_true(sp.spent_total_usd == 3.0);

    /* a reused slot gets a new generation: the old handle stays stale */
    sw_spend_handle d;
    assert_int_equal(sw_spend_reserve(&sp, 25, 0.5, &d), SW_OK);
    assert_true(d != a && d != b && d != c);
    assert_int_equal(sw_spend_release(&sp, c), SW_ENOTFOUND);
    assert_true(sw_spend_total(&sp, 25) == 3.5);

    /* bad amounts */
    sw_spend_handle e = 99;
    assert_int_equal(sw_spend_reserve(&sp, 26, -1, &e), SW_EINVAL);
    assert_true(e == 0);
    assert_int_equal(sw_spend_reserve(&sp, 26, NAN, &e), SW_EINVAL);
    assert_int_equal(sw_spend_reserve(&sp, 26, INFINITY, &e), SW_EINVAL);
    assert_int_equal(sw_spend_settle(&sp, 27, d, NAN), SW_OK); /* NaN: the estimate counts */
    assert_true(sw_spend_total(&sp, 27) == 3.5);
    assert_int_equal(sw_spend_reserve(&sp, 28, 0.5, &e), SW_OK);
    assert_int_equal(sw_spend_settle(&sp, 28, e, -3), SW_OK);  /* negative: 0 */
    assert_true(sw_spend_total(&sp, 28) == 3.5);
}

static void test_window_roll(void **state)
{
    (void)state;
    sw_spend_handle a, b;
    sw_spend_init(&sp, H, H / 2);           /* window [0, H) */
    assert_int_equal(sw_spend_window_end_ms(&sp, H / 2), H);

    assert_int_equal(sw_spend_reserve(&sp, H / 2, 1.0, &a), SW_OK);
    assert_int_equal(sw_spend_reserve(&sp, H / 2, 2.0, &b), SW_OK);
    assert_int_equal(sw_spend_settle(&sp, H - 1, a, 4.0), SW_OK);
    assert_true(sw_spend_total(&sp, H - 1) == 6.0);  /* 4 settled + 2 outstanding */

    /* at H: settled resets, the outstanding 2.0 carries */
    assert_true(sw_spend_total(&sp, H) == 2.0);
    assert_int_equal(sp.windows_total, 1);
    assert_int_equal(sw_spend_window_end_ms(&sp, H), 2 * H);
    /* it settles in the new window and counts there */
    assert_int_equal(sw_spend_settle(&sp, H + 5, b, 0.5), SW_OK);
    assert_true(sw_spend_total(&sp, H + 5) == 0.5);

    /* idle for several windows: lands in the window containing now */
    assert_true(sw_spend_total(&sp, 5 * H + 7) == 0);
    assert_int_equal(sw_spend_window_end_ms(&sp, 5 * H + 7), 6 * H);

    /* day windows, aligned to multiples of the day from t = 0 */
    sw_spend_init(&sp, SW_SPEND_DAY_MS, 1700000000000LL); /* 2023-11-14T22:13:20Z */
    assert_int_equal(sw_spend_window_end_ms(&sp, 1700000000000LL), 1700006400000LL); /* midnight UTC */
    assert_int_equal(sw_spend_reserve(&sp, 1700000000000LL, 1.0, &a), SW_OK);
    assert_int_equal(sw_spend_settle(&sp, 1700000000001LL, a, 1.0), SW_OK);
    assert_true(sw_spend_total(&sp, 1700006399999LL) == 1.0);
    assert_true(sw_spend_total(&sp, 1700006400000LL) == 0);

    /* window_ms <= 0 means an hour; negative clocks floor correctly */
    sw_spend_init(&sp, 0, -1);
    assert_int_equal(sp.window_ms, H);
    assert_int_equal(sw_spend_window_end_ms(&sp, -1), 0);
    assert_int_equal(sw_spend_window_end_ms(&sp, -H), 0);
    assert_int_equal(sw_spend_window_end_ms(&sp, -H - 1), -H);
}

static void test_would_exceed(void **state)
{
    (void)state;
    static const struct {
        double settled, reserved, est, cap;
        bool want;
    } t[] = {
        {0, 0, 1, 0, false},        /* no cap */
        {100, 100, 100, -1, false}, /* no cap */
        {0, 0, 1, 1, false},        /* reaching the cap exactly is allowed */
        {0, 0, 1.5, 1, true},
        {0.5, 0.25, 0.25, 1, false},
        {0.5, 0.25, 0.5, 1, true},
        {1, 0, 0, 1, false},        /* at the cap, a free request is not over it */
        {1, 0.25, 0, 1, true},      /* over already */
        {0, 0, -5, 1, false},       /* negative estimate counts as 0 */
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        sw_spend_handle h;
        sw_spend_init(&sp, H, 0);
        if (t[i].settled > 0) {
            assert_int_equal(sw_spend_reserve(&sp, 0, 0, &h), SW_OK);
            assert_int_equal(sw_spend_settle(&sp, 0, h, t[i].settled), SW_OK);
        }
        if (t[i].reserved > 0)
            assert_int_equal(sw_spend_reserve(&sp, 0, t[i].reserved, &h), SW_OK);
        if (sw_spend_would_exceed(&sp, 1, t[i].est, t[i].cap) != t[i].want) {
            print_error("would_exceed row %zu\n", i);
            fail();
        }
    }
    /* the window roll lifts the cap */
    sw_spend_handle h;
    sw_spend_init(&sp, H, 0);
    assert_int_equal(sw_spend_reserve(&sp, 0, 1, &h), SW_OK);
    assert_int_equal(sw_spend_settle(&sp, 0, h, 1), SW_OK);
    assert_true(sw_spend_would_exceed(&sp, H - 1, 0.25, 1));
    assert_false(sw_spend_would_exceed(&sp, H, 0.25, 1));
}

static void test_table_full_fails_closed(void **state)
{
    (void)state;
    static sw_spend_handle h[SW_SPEND_MAX_RESERVATIONS];
    sw_spend_handle extra = 7;
    sw_spend_init(&sp, H, 0);
    for (size_t i = 0; i < SW_SPEND_MAX_RESERVATIONS; i++)
        assert_int_equal(sw_spend_reserve(&sp, 0, 0.25, &h[i]), SW_OK);
    assert_int_equal(sw_spend_reserve(&sp, 0, 0.25, &extra), SW_EUNAVAILABLE);
    assert_true(extra == 0);
    assert_int_equal(sp.refused_total, 1);
    assert_true(sw_spend_total(&sp, 0) == 0.25 * SW_SPEND_MAX_RESERVATIONS);
    /* still full across a window roll: reservations carry */
    assert_int_equal(sw_spend_reserve(&sp, 2 * H, 0.25, &extra), SW_EUNAVAILABLE);
    /* one release makes room for exactly one */
    assert_int_equal(sw_spend_release(&sp, h[100]), SW_OK);
    assert_int_equal(sw_spend_reserve(&sp, 2 * H, 0.25, &extra), SW_OK);
    assert_int_equal(sw_spend_reserve(&sp, 2 * H, 0.25, &h[100]), SW_EUNAVAILABLE);
    /* drain everything: back to exactly 0 outstanding */
    for (size_t i = 0; i < SW_SPEND_MAX_RESERVATIONS; i++)
        if (i != 100)
            assert_int_equal(sw_spend_release(&sp, h[i]), SW_OK);
    assert_int_equal(sw_spend_settle(&sp, 2 * H, extra, 0.5), SW_OK);
    assert_int_equal(sp.n_outstanding, 0);
    assert_true(sw_spend_total(&sp, 2 * H) == 0.5);
}

static void test_many_cycles_no_drift(void **state)
{
    (void)state;
    /* Reservations with inexact decimal amounts, released in another order:
     * the outstanding sum snaps back to 0 when nothing is outstanding. */
    sw_spend_handle h[3];
    sw_spend_init(&sp, H, 0);
    for (int round = 0; round < 1000; round++) {
        assert_int_equal(sw_spend_reserve(&sp, round, 0.1, &h[0]), SW_OK);
        assert_int_equal(sw_spend_reserve(&sp, round, 0.7, &h[1]), SW_OK);
        assert_int_equal(sw_spend_reserve(&sp, round, 0.3, &h[2]), SW_OK);
        assert_int_equal(sw_spend_release(&sp, h[1]), SW_OK);
        assert_int_equal(sw_spend_release(&sp, h[0]), SW_OK);
        assert_int_equal(sw_spend_release(&sp, h[2]), SW_OK);
        assert_true(sw_spend_total(&sp, round) == 0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cost),
        cmocka_unit_test(test_reserve_settle_release),
        cmocka_unit_test(test_window_roll),
        cmocka_unit_test(test_would_exceed),
        cmocka_unit_test(test_table_full_fails_closed),
        cmocka_unit_test(test_many_cycles_no_drift),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
