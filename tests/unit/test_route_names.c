/* One name function per routing enum (route/route.h): the health and the
 * breaker as /admin/state, /metrics, the series events and the relay's
 * "no backend could serve" message write them, and the breaker gauge's
 * order (by severity) apart from the enum's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "route/route.h"

static void test_health(void **state)
{
    (void)state;
    assert_string_equal(sw_health_name(SW_HEALTH_UP), "up");
    assert_string_equal(sw_health_name(SW_HEALTH_DEGRADED), "degraded");
    assert_string_equal(sw_health_name(SW_HEALTH_COLD), "cold");
    assert_string_equal(sw_health_name(SW_HEALTH_WARMING), "warming");
    assert_string_equal(sw_health_name(SW_HEALTH_DOWN), "down");
    assert_string_equal(sw_health_name((enum sw_health)(SW_HEALTH_DOWN + 1)), "unknown");
    assert_string_equal(sw_health_name((enum sw_health)-1), "unknown");
}

static void test_breaker(void **state)
{
    (void)state;
    assert_string_equal(sw_breaker_name(SW_BREAKER_CLOSED), "closed");
    assert_string_equal(sw_breaker_name(SW_BREAKER_OPEN), "open");
    assert_string_equal(sw_breaker_name(SW_BREAKER_HALF_OPEN), "half_open");
    assert_string_equal(sw_breaker_name((enum sw_breaker_state)3), "unknown");
    /* the gauge: 0 closed, 1 half-open, 2 open; and back */
    assert_int_equal(sw_breaker_gauge(SW_BREAKER_CLOSED), 0);
    assert_int_equal(sw_breaker_gauge(SW_BREAKER_HALF_OPEN), 1);
    assert_int_equal(sw_breaker_gauge(SW_BREAKER_OPEN), 2);
    for (int b = SW_BREAKER_CLOSED; b <= SW_BREAKER_HALF_OPEN; b++)
        assert_int_equal(sw_breaker_from_gauge(sw_breaker_gauge((enum sw_breaker_state)b)), b);
    assert_int_equal(sw_breaker_from_gauge(3), SW_BREAKER_CLOSED);
    assert_int_equal(sw_breaker_from_gauge(-1), SW_BREAKER_CLOSED);
    /* the series event of a gauge value names the state, not the enum's index */
    assert_string_equal(sw_breaker_name(sw_breaker_from_gauge(1)), "half_open");
    assert_string_equal(sw_breaker_name(sw_breaker_from_gauge(2)), "open");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_health),
        cmocka_unit_test(test_breaker),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
