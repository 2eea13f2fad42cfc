/* Unit tests of the tenancy arithmetic (src/route/tenant.c): UTC windows,
 * rolling slots, wildcard model lists, the key/team merge, the buckets. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "route/tenant.h"

#define DAY 86400000LL
/* 2026-03-15 (a Sunday) 13:45:10.250 UTC */
#define T0 (1773582310250LL)

static void test_calendar(void **state)
{
    (void)state;
    static const struct {
        enum sw_budget_window w;
        int64_t at, start, end;
    } t[] = {
        {SW_BUDGET_HOUR, T0, 1773579600000LL, 1773583200000LL},      /* 13:00 .. 14:00 */
        {SW_BUDGET_DAY, T0, 1773532800000LL, 1773619200000LL},       /* 03-15 .. 03-16 */
        {SW_BUDGET_WEEK, T0, 1773014400000LL, 1773619200000LL},      /* Mon 03-09 .. Mon 03-16 */
        {SW_BUDGET_MONTH, T0, 1772323200000LL, 1775001600000LL},     /* 03-01 .. 04-01 */
        {SW_BUDGET_MONTH, 1767225599999LL, 1764547200000LL, 1767225600000LL}, /* Dec .. Jan 1 */
        {SW_BUDGET_MONTH, 1709164800000LL, 1709164800000LL - 28 * DAY, 1709251200000LL}, /* Feb 29 2024 */
        {SW_BUDGET_WEEK, 0, -3 * DAY, 4 * DAY},                      /* epoch is a Thursday */
        {SW_BUDGET_DAY, -1, -DAY, 0},                                /* before the epoch */
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        int64_t s, o;
        sw_tenant_slot(t[i].w, 0, t[i].at, &s, &o);
        if (s != t[i].start || o != s || sw_tenant_window_end_ms(t[i].w, 0, t[i].at) != t[i].end) {
            print_error("row %zu: start %lld end %lld\n", i, (long long)s,
                        (long long)sw_tenant_window_end_ms(t[i].w, 0, t[i].at));
            fail();
        }
    }
}

static void test_rolling(void **state)
{
    (void)state;
    int64_t s, o;
    sw_tenant_slot(SW_BUDGET_ROLLING, 2000, 10250, &s, &o);
    assert_int_equal(s, 51); /* slots of 200 ms */
    assert_int_equal(o, 41); /* eleven counted: 41..51 */
    assert_int_equal(sw_tenant_window_end_ms(SW_BUDGET_ROLLING, 2000, 10250), 10400);
    /* spend settled in slot 51 stops counting once the slot is 61: between 2 s and 2.2 s */
    sw_tenant_slot(SW_BUDGET_ROLLING, 2000, 10250 + 2000, &s, &o);
    assert_true(51 >= o);
    sw_tenant_slot(SW_BUDGET_ROLLING, 2000, 10250 + 2150, &s, &o);
    assert_true(51 < o);
}

static void test_glob(void **state)
{
    (void)state;
    static const struct {
        const char *p, *n;
        bool want;
    } t[] = {
        {"gpt-4o", "gpt-4o", true},       {"gpt-4o", "gpt-4o-mini", false},
        {"gpt-4o*", "gpt-4o-mini", true}, {"*", "", true},
        {"*", "anything", true},          {"*-mini", "gpt-4o-mini", true},
        {"*-mini", "gpt-4o", false},      {"a*b*c", "aXXbYYc", true},
        {"a*b*c", "aXXbYY", false},       {"**", "x", true},
        {"claude-*-4*", "claude-sonnet-4-5", true}, {"", "", true},
        {"", "x", false},                 {"a*a*a*a*b", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", false},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (sw_tenant_glob(t[i].p, t[i].n) != t[i].want) {
            print_error("row %zu: %s ~ %s\n", i, t[i].p, t[i].n);
            fail();
        }
    char *list[] = {"local*", "gpt-4o"};
    assert_true(sw_tenant_models_allow(list, 0, "x"));
    assert_true(sw_tenant_models_allow(list, 2, "local-small"));
    assert_false(sw_tenant_models_allow(list, 2, "gpt-4o-mini"));
    assert_false(sw_tenant_models_allow(list, 2, NULL));
}

static void test_merge(void **state)
{
    (void)state;
    struct sw_config_tenancy key = {.max_tier = SW_MAX_TIER_CLOUD, .on_budget = SW_ON_BUDGET_KEEP_LOCAL,
                                    .models = {"gpt-*"}, .n_models = 1};
    struct sw_config_tenancy team = {.max_tier = SW_MAX_TIER_LOCAL, .on_budget = SW_ON_BUDGET_REJECT,
                                     .models = {"*-mini", "local"}, .n_models = 2};
    struct sw_tenant_policy p;
    sw_tenant_merge(&key, NULL, &p);
    assert_int_equal(p.max_tier, SW_TIER_CLOUD);
    assert_int_equal(p.on_budget, SW_ON_BUDGET_KEEP_LOCAL);
    assert_true(sw_tenant_policy_allows_model(&p, "gpt-4o"));
    sw_tenant_merge(&key, &team, &p);
    assert_int_equal(p.max_tier, SW_TIER_LOCAL);        /* the team's local wins */
    assert_int_equal(p.on_budget, SW_ON_BUDGET_REJECT); /* reject wins */
    assert_true(sw_tenant_policy_allows_model(&p, "gpt-4o-mini")); /* in both lists */
    assert_false(sw_tenant_policy_allows_model(&p, "gpt-4o"));     /* the team's list refuses */
    assert_false(sw_tenant_policy_allows_model(&p, "local"));      /* the key's list refuses */
    sw_tenant_merge(&team, &key, &p); /* symmetric */
    assert_int_equal(p.max_tier, SW_TIER_LOCAL);
    assert_false(sw_tenant_counts(&key));
    key.rpm = 5;
    assert_true(sw_tenant_counts(&key));
}

static void test_bucket(void **state)
{
    (void)state;
    struct sw_tenant_bucket b = {0};
    int ok = 0;
    for (int i = 0; i < 10; i++)
        ok += sw_tenant_bucket_take(&b, 6, 1, 1000, false).ok;
    assert_int_equal(ok, 6); /* a fresh bucket holds one minute's worth */
    struct sw_tenant_take t = sw_tenant_bucket_take(&b, 6, 1, 1000, false);
    assert_false(t.ok);
    assert_int_equal(t.remaining, 0);
    assert_int_equal(t.retry_ms, 10000); /* 6 per minute: one every 10 s */
    assert_int_equal(t.reset_ms, 60000);
    assert_false(sw_tenant_bucket_take(&b, 6, 1, 10999, false).ok);
    t = sw_tenant_bucket_take(&b, 6, 1, 11000, false);
    assert_true(t.ok);
    /* dry leaves the level */
    struct sw_tenant_bucket d = {0};
    for (int i = 0; i < 20; i++)
        assert_true(sw_tenant_bucket_take(&d, 6, 1, 0, true).ok);
    /* a cost over the capacity takes the whole bucket */
    struct sw_tenant_bucket tk = {0};
    assert_true(sw_tenant_bucket_take(&tk, 100, 500, 0, false).ok);
    assert_false(sw_tenant_bucket_take(&tk, 100, 1, 0, false).ok);
    assert_true(sw_tenant_bucket_take(&tk, 0, 1e9, 0, false).ok); /* no limit */
}

static void test_fmt(void **state)
{
    (void)state;
    char b[32];
    sw_tenant_fmt_reset(b, sizeof b, 20);
    assert_string_equal(b, "20ms");
    sw_tenant_fmt_reset(b, sizeof b, 1500);
    assert_string_equal(b, "1.5s");
    sw_tenant_fmt_reset(b, sizeof b, 360000);
    assert_string_equal(b, "6m0s");
    sw_tenant_fmt_reset(b, sizeof b, 3723000);
    assert_string_equal(b, "1h2m3s");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_calendar), cmocka_unit_test(test_rolling),
        cmocka_unit_test(test_glob),     cmocka_unit_test(test_merge),
        cmocka_unit_test(test_bucket),   cmocka_unit_test(test_fmt),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
