/* Unit tests of the front's clocks (src/front/ticks.c): the event-loop lag
 * ring keeps the worst lateness of the last SW_TICKS_LAG_N ticks, never
 * negative; the timers start and stop on a real event base, and the
 * one-second callback runs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "common/err.h"
#include "front/ticks.h"

static void test_lag_ring(void **state)
{
    (void)state;
    struct sw_ticks t = {0};
    t.lag_last_ms = 1000;
    assert_true(sw_ticks_lag_ms(&t) == 0);
    sw_ticks_lag_record(&t, 1100);          /* on time */
    assert_true(sw_ticks_lag_ms(&t) == 0);
    sw_ticks_lag_record(&t, 1150);          /* early: counts as 0, not -50 */
    assert_true(sw_ticks_lag_ms(&t) == 0);
    sw_ticks_lag_record(&t, 1290);          /* 40 ms late */
    assert_true(sw_ticks_lag_ms(&t) == 40);
    sw_ticks_lag_record(&t, 1397);          /* 7 late: the worst stays */
    assert_true(sw_ticks_lag_ms(&t) == 40);
    int64_t now = 1397;
    for (int i = 0; i < SW_TICKS_LAG_N - 1; i++) {
        now += SW_TICKS_LAG_MS + 1;
        sw_ticks_lag_record(&t, now);
    }
    assert_true(sw_ticks_lag_ms(&t) == 7);  /* the 40 left the ring */
    now += SW_TICKS_LAG_MS + 1;
    sw_ticks_lag_record(&t, now);
    assert_true(sw_ticks_lag_ms(&t) == 1);  /* and then the 7 */
}

static int seconds;

static void on_second(void *ud)
{
    struct event_base *base = ud;
    seconds++;
    event_base_loopbreak(base);
}

static void test_timers(void **state)
{
    (void)state;
    struct event_base *base = event_base_new();
    assert_non_null(base);
    struct sw_ticks t = {0};
    assert_int_equal(sw_ticks_start(&t, base, on_second, base), SW_OK);
    assert_non_null(t.lag_timer);
    assert_non_null(t.second_timer);
    /* Bounded: the one-second callback breaks the loop; loopexit ends it
     * after 10 s if the callback never came. */
    struct timeval limit = {10, 0};
    event_base_loopexit(base, &limit);
    seconds = 0;
    event_base_dispatch(base);
    assert_int_equal(seconds, 1);
    assert_true(t.lag_i >= 1);              /* the lag timer ran before the second passed */
    sw_ticks_stop(&t);
    assert_null(t.lag_timer);
    assert_null(t.second_timer);
    sw_ticks_stop(&t);                      /* twice is harmless */
    event_base_free(base);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lag_ring),
        cmocka_unit_test(test_timers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
