/* Unit tests of the memory ledgers of keys and teams (src/state/tenant.c):
 * reservations against a budget, both ledgers or neither, settlement, the
 * window roll, the buckets all or none. Times are injected wall ms. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "state/tenant.h"

#define T0 1773532800000LL /* a UTC midnight */

static struct sw_tenant_wait wait_for(const struct sw_config_tenancy *key,
                                      const struct sw_config_tenancy *team, long tokens)
{
    struct sw_tenant_wait w = {0};
    snprintf(w.ask.l[0].id, sizeof w.ask.l[0].id, "k:a");
    w.ask.l[0].rules = key;
    w.ask.n = 1;
    if (team) {
        snprintf(w.ask.l[1].id, sizeof w.ask.l[1].id, "t:red");
        w.ask.l[1].rules = team;
        w.ask.n = 2;
    }
    w.ask.tokens = tokens;
    return w;
}

static void test_reserve_settle(void **state)
{
    (void)state;
    struct sw_tenant *t = sw_tenant_new();
    struct sw_config_tenancy key = {.budget = {.usd = 1.0, .window = SW_BUDGET_DAY}};
    struct sw_tenant_answer a;
    struct sw_tenant_wait w1 = wait_for(&key, NULL, 10), w2 = wait_for(&key, NULL, 10);
    assert_int_equal(sw_tenant_reserve(t, &w1, 0.75, T0, &a), 1);
    assert_int_equal(a.v, SW_TENANT_OK);
    assert_true(w1.held);
    /* 0.75 held: another 0.5 does not fit, 0.25 does */
    assert_int_equal(sw_tenant_reserve(t, &w2, 0.5, T0, &a), 1);
    assert_int_equal(a.v, SW_TENANT_OVER_BUDGET);
    assert_int_equal(a.retry_ms, 86400000); /* the day's end */
    assert_false(w2.held);
    assert_int_equal(sw_tenant_reserve(t, &w2, 0.25, T0, &a), 1);
    assert_int_equal(a.v, SW_TENANT_OK);
    /* settled below the reservation: the rest comes back */
    sw_tenant_settle(t, &w1, 0.25, T0 + 1);
    sw_tenant_settle(t, &w2, 0.25, T0 + 2);
    struct sw_tenant_stats s;
    sw_tenant_stats(t, "k:a", &key, T0 + 3, &s);
    assert_true(s.window_usd == 0.5);
    assert_true(s.reserved_usd == 0);
    assert_true(s.max_reserved_usd == 0.75);
    struct sw_tenant_wait w3 = wait_for(&key, NULL, 10);
    assert_int_equal(sw_tenant_reserve(t, &w3, 0.5, T0 + 4, &a), 1);
    assert_int_equal(a.v, SW_TENANT_OK);
    sw_tenant_settle(t, &w3, 0.5, T0 + 5);
    /* spent: the admission says so; the next day the budget is back */
    struct sw_tenant_wait w4 = wait_for(&key, NULL, 10);
    assert_int_equal(sw_tenant_admit(t, &w4, T0 + 6, &a), 1);
    assert_true(a.budget_spent);
    assert_int_equal(sw_tenant_admit(t, &w4, T0 + 86400000, &a), 1);
    assert_false(a.budget_spent);
    sw_tenant_stats(t, "k:a", &key, T0 + 86400000, &s);
    assert_true(s.window_usd == 0);
    assert_true(s.spent_usd_total == 1.0);
    sw_tenant_free(t);
}

static void test_team_both_or_neither(void **state)
{
    (void)state;
    struct sw_tenant *t = sw_tenant_new();
    struct sw_config_tenancy key = {.budget = {.usd = 10, .window = SW_BUDGET_DAY}};
    struct sw_config_tenancy team = {.budget = {.usd = 1, .window = SW_BUDGET_MONTH}};
    struct sw_tenant_answer a;
    struct sw_tenant_wait w = wait_for(&key, &team, 0);
    sw_tenant_reserve(t, &w, 2, T0, &a);
    assert_int_equal(a.v, SW_TENANT_OVER_BUDGET);
    assert_int_equal(a.which, 1); /* the team's refused */
    struct sw_tenant_stats s;
    sw_tenant_stats(t, "k:a", &key, T0, &s);
    assert_true(s.reserved_usd == 0); /* nothing held on the key either */
    sw_tenant_reserve(t, &w, 0.5, T0, &a);
    assert_int_equal(a.v, SW_TENANT_OK);
    sw_tenant_stats(t, "t:red", &team, T0, &s);
    assert_true(s.reserved_usd == 0.5);
    sw_tenant_cancel(t, &w);
    sw_tenant_settle(t, &w, 0.5, T0 + 1);
    sw_tenant_stats(t, "t:red", &team, T0 + 1, &s);
    assert_true(s.window_usd == 0.5 && s.reserved_usd == 0);
    sw_tenant_settle(t, &w, 0, T0 + 2); /* nothing held any more: nothing to drop */
    sw_tenant_stats(t, "k:a", &key, T0 + 2, &s);
    assert_true(s.window_usd == 0.5);
    sw_tenant_free(t);
}

static void test_rolling(void **state)
{
    (void)state;
    struct sw_tenant *t = sw_tenant_new();
    struct sw_config_tenancy key = {.budget = {.usd = 1, .window = SW_BUDGET_ROLLING,
                                               .rolling_ms = 2000}};
    struct sw_tenant_answer a;
    struct sw_tenant_wait w = wait_for(&key, NULL, 0);
    sw_tenant_reserve(t, &w, 1, T0 + 150, &a);
    assert_int_equal(a.v, SW_TENANT_OK);
    sw_tenant_settle(t, &w, 1, T0 + 150);
    /* counted for at least the window, at most 1.1 windows */
    int64_t back = 0;
    for (int64_t ms = 0; ms < 3000 && !back; ms += 10) {
        struct sw_tenant_wait x = wait_for(&key, NULL, 0);
        sw_tenant_reserve(t, &x, 0.5, T0 + 150 + ms, &a);
        if (a.v == SW_TENANT_OK) {
            back = ms;
            sw_tenant_settle(t, &x, 0, T0 + 150 + ms);
        }
    }
    assert_true(back >= 2000 && back <= 2200);
    sw_tenant_free(t);
}

static void test_buckets_all_or_none(void **state)
{
    (void)state;
    struct sw_tenant *t = sw_tenant_new();
    struct sw_config_tenancy key = {.rpm = 3};
    struct sw_config_tenancy team = {.tpm = 250};
    struct sw_tenant_answer a;
    int ok = 0;
    for (int i = 0; i < 5; i++) {
        struct sw_tenant_wait w = wait_for(&key, &team, 100);
        sw_tenant_admit(t, &w, T0, &a);
        ok += a.v == SW_TENANT_OK;
        if (i == 2) { /* the third: the team's tokens are out (250 < 300) */
            assert_int_equal(a.v, SW_TENANT_RATE_LIMITED);
            assert_true(a.tokens);
            assert_int_equal(a.which, 1);
            assert_int_equal(a.tok.limit, 250);
        }
    }
    assert_int_equal(ok, 2);
    /* the refusals took nothing from the key: it has one request left */
    struct sw_tenant_wait w = wait_for(&key, NULL, 0);
    sw_tenant_admit(t, &w, T0, &a);
    assert_int_equal(a.v, SW_TENANT_OK);
    assert_int_equal(a.req.limit, 3);
    assert_int_equal(a.req.remaining, 0);
    sw_tenant_admit(t, &w, T0, &a);
    assert_int_equal(a.v, SW_TENANT_RATE_LIMITED);
    assert_false(a.tokens);
    assert_int_equal(a.retry_ms, 20000); /* 3 a minute */
    struct sw_tenant_stats s;
    sw_tenant_stats(t, "k:a", &key, T0, &s);
    assert_int_equal(s.requests, 3);
    sw_tenant_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reserve_settle),
        cmocka_unit_test(test_team_both_or_neither),
        cmocka_unit_test(test_rolling),
        cmocka_unit_test(test_buckets_all_or_none),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
