/* Unit tests of the dashboard's one-second ring (src/obs/series.c): per-second
 * deltas of cumulative counters, gaps, wrap-around after an hour, window
 * reads, TTFT quantiles per second, gauges, the bounded name tables. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "obs/series.h"

static const double bounds[] = {0.1, 0.5, 1};

static struct sw_series_input reading(double local, double cloud)
{
    struct sw_series_input in = {.requests = {local, cloud}, .ttft_bounds = bounds, .n_bounds = 3,
                                 .ttft_budget_ms = 800};
    return in;
}

/* Sum of local requests over the window (now - w, now]; gaps count 0. */
static unsigned window_sum(const struct sw_series *s, int64_t now, int64_t w, int *gaps)
{
    unsigned sum = 0;
    *gaps = 0;
    for (int64_t t = now - w + 1; t <= now; t++) {
        const struct sw_series_sample *x = sw_series_at(s, t);
        if (x)
            sum += x->requests[SW_SERIES_LOCAL];
        else
            (*gaps)++;
    }
    return sum;
}

static void test_deltas_per_second(void **state)
{
    (void)state;
    struct sw_series *s = sw_series_new();
    assert_non_null(s);
    assert_int_equal(sw_series_last(s), -1);
    assert_null(sw_series_at(s, 0));
    struct sw_series_input in = reading(3, 1);
    in.spilled = 1;
    sw_series_record(s, 100, &in);
    in = reading(10, 1);
    in.spilled = 1;
    sw_series_record(s, 101, &in);
    const struct sw_series_sample *a = sw_series_at(s, 100), *b = sw_series_at(s, 101);
    assert_non_null(a);
    assert_non_null(b);
    assert_int_equal(a->requests[SW_SERIES_LOCAL], 3);
    assert_int_equal(a->requests[SW_SERIES_CLOUD], 1);
    assert_int_equal(a->spilled, 1);
    assert_int_equal(b->requests[SW_SERIES_LOCAL], 7);
    assert_int_equal(b->requests[SW_SERIES_CLOUD], 0);
    assert_int_equal(b->spilled, 0);
    assert_true(b->ttft_budget_ms == 800);
    /* Two readings in one second add up; the gauges are the last ones. */
    in = reading(12, 1);
    in.ttft_budget_ms = 500;
    sw_series_record(s, 101, &in);
    assert_int_equal(sw_series_at(s, 101)->requests[SW_SERIES_LOCAL], 9);
    assert_true(sw_series_at(s, 101)->ttft_budget_ms == 500);
    assert_int_equal(sw_series_last(s), 101);
    /* Nothing after the last second, nothing before the first. */
    assert_null(sw_series_at(s, 102));
    assert_null(sw_series_at(s, 99));
    sw_series_free(s);
}

static void test_gap_counts_go_to_the_next_second(void **state)
{
    (void)state;
    struct sw_series *s = sw_series_new();
    struct sw_series_input in = reading(5, 0);
    sw_series_record(s, 10, &in);
    in = reading(9, 0);
    sw_series_record(s, 14, &in);   /* 11, 12, 13 missed: the loop was blocked */
    int gaps;
    assert_int_equal(window_sum(s, 14, 5, &gaps), 9);
    assert_int_equal(gaps, 3);
    assert_null(sw_series_at(s, 12));
    assert_int_equal(sw_series_at(s, 14)->requests[SW_SERIES_LOCAL], 4);
    sw_series_free(s);
}

static void test_wrap_around_and_windows(void **state)
{
    (void)state;
    struct sw_series *s = sw_series_new();
    /* One request a second for SLOTS + 100 seconds. */
    int64_t t0 = 7, n = SW_SERIES_SLOTS + 100;
    for (int64_t i = 0; i < n; i++) {
        struct sw_series_input in = reading((double)(i + 1), 0);
        sw_series_record(s, t0 + i, &in);
    }
    int64_t last = t0 + n - 1;
    assert_int_equal(sw_series_last(s), last);
    /* The oldest 100 seconds are overwritten; the last hour is whole. */
    assert_null(sw_series_at(s, t0));
    assert_null(sw_series_at(s, last - SW_SERIES_SLOTS));
    assert_non_null(sw_series_at(s, last - SW_SERIES_SLOTS + 1));
    int gaps;
    assert_int_equal(window_sum(s, last, SW_SERIES_SLOTS, &gaps), SW_SERIES_SLOTS);
    assert_int_equal(gaps, 0);
    assert_int_equal(window_sum(s, last, 300, &gaps), 300);
    assert_int_equal(window_sum(s, last, 900, &gaps), 900);
    /* A window longer than the ring: the part before it is gaps. */
    assert_int_equal(window_sum(s, last, SW_SERIES_SLOTS + 50, &gaps), SW_SERIES_SLOTS);
    assert_int_equal(gaps, 50);
    /* A slot reused by a later second does not answer for the earlier one. */
    assert_int_equal(sw_series_at(s, last)->t, last);
    assert_null(sw_series_at(s, last - SW_SERIES_SLOTS));
    sw_series_free(s);
}

static void test_ttft_quantiles_per_second(void **state)
{
    (void)state;
    /* Prometheus interpolation: 4 observations in (0.1, 0.5]: p50 at 0.3 s. */
    uint64_t c[4] = {0, 4, 0, 0};
    assert_float_equal(sw_series_quantile_ms(bounds, c, 3, 0.5), 300, 1e-9);
    uint64_t above[4] = {0, 0, 0, 2};
    assert_float_equal(sw_series_quantile_ms(bounds, above, 3, 0.99), 1000, 1e-9);
    uint64_t none[4] = {0};
    assert_true(isnan(sw_series_quantile_ms(bounds, none, 3, 0.5)));

    struct sw_series *s = sw_series_new();
    struct sw_series_input in = reading(0, 0);
    in.ttft[SW_SERIES_CLOUD][1] = 4;     /* cumulative: 4 cloud first tokens in (0.1, 0.5] */
    sw_series_record(s, 1, &in);
    in.ttft[SW_SERIES_CLOUD][0] = 100;   /* the next second: 100 fast ones */
    sw_series_record(s, 2, &in);
    sw_series_record(s, 3, &in);         /* nothing new */
    assert_float_equal(sw_series_at(s, 1)->ttft_p50_ms[SW_SERIES_CLOUD], 300, 1e-3);
    assert_true(isnan(sw_series_at(s, 1)->ttft_p50_ms[SW_SERIES_LOCAL]));
    assert_float_equal(sw_series_at(s, 2)->ttft_p50_ms[SW_SERIES_CLOUD], 50, 1e-3);
    assert_float_equal(sw_series_at(s, 2)->ttft_p99_ms[SW_SERIES_CLOUD], 99, 1e-3);
    assert_true(isnan(sw_series_at(s, 3)->ttft_p99_ms[SW_SERIES_CLOUD]));
    sw_series_free(s);
}

static void test_gauges_codes_and_bounded_tables(void **state)
{
    (void)state;
    struct sw_series *s = sw_series_new();
    struct sw_series_backend_in be[SW_SERIES_MAX_BACKENDS + 2];
    char names[SW_SERIES_MAX_BACKENDS + 2][16];
    for (int i = 0; i < SW_SERIES_MAX_BACKENDS + 2; i++) {
        snprintf(names[i], sizeof names[i], "b%d", i);
        be[i] = (struct sw_series_backend_in){names[i], i == 0, 1, 70000, 2, i == 1 ? 2 : 0};
    }
    struct sw_series_code_in codes[SW_SERIES_MAX_CODES + 3];
    char cnames[SW_SERIES_MAX_CODES + 3][16];
    for (int i = 0; i < SW_SERIES_MAX_CODES + 3; i++) {
        snprintf(cnames[i], sizeof cnames[i], "code%d", i);
        codes[i] = (struct sw_series_code_in){cnames[i], 2};
    }
    struct sw_series_input in = reading(0, 0);
    in.backends = be;
    in.n_backends = SW_SERIES_MAX_BACKENDS + 2;
    in.codes = codes;
    in.n_codes = SW_SERIES_MAX_CODES + 3;
    in.spend_usd = 1.5;
    in.spend_cap_usd = 5;
    in.emergency = true;
    sw_series_record(s, 50, &in);
    const struct sw_series_sample *x = sw_series_at(s, 50);
    assert_string_equal(sw_series_backend_name(s, 0), "b0");
    assert_true(sw_series_backend_local(s, 0));
    assert_false(sw_series_backend_local(s, 1));
    assert_null(sw_series_backend_name(s, SW_SERIES_MAX_BACKENDS));
    assert_int_equal(x->backends[0].in_flight, 1);
    assert_int_equal(x->backends[0].queued, 65535);     /* saturated, not wrapped */
    assert_int_equal(x->backends[1].breaker, 2);
    assert_int_equal(x->backends[0].present, 1);
    assert_true(x->spend_usd == 1.5 && x->spend_cap_usd == 5 && x->emergency);
    /* 15 codes by name, the 4 beyond under "other". */
    assert_string_equal(sw_series_code_name(s, 0), "code0");
    assert_string_equal(sw_series_code_name(s, SW_SERIES_MAX_CODES - 2), "code14");
    assert_string_equal(sw_series_code_name(s, SW_SERIES_MAX_CODES - 1), "other");
    assert_int_equal(x->rejections[0], 2);
    assert_int_equal(x->rejections[SW_SERIES_MAX_CODES - 1], 8);
    /* A backend gone after a reload is absent from later samples. */
    in.n_backends = 1;
    codes[0].total = 5;
    sw_series_record(s, 51, &in);
    x = sw_series_at(s, 51);
    assert_int_equal(x->backends[0].present, 1);
    assert_int_equal(x->backends[1].present, 0);
    assert_int_equal(x->rejections[0], 3);
    assert_int_equal(x->rejections[1], 0);
    assert_true(sw_series_memory() < (1u << 20));
    sw_series_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_deltas_per_second),
        cmocka_unit_test(test_gap_counts_go_to_the_next_second),
        cmocka_unit_test(test_wrap_around_and_windows),
        cmocka_unit_test(test_ttft_quantiles_per_second),
        cmocka_unit_test(test_gauges_codes_and_bounded_tables),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
