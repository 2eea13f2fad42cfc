/* Unit tests of the metrics registry (src/obs/metrics.c): exact exposition
 * text, label escaping, cumulative histogram buckets with _sum and _count,
 * the series bound with its "other" series, scrape-time gauges and the
 * windowed spill ratio. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

#include <cmocka.h>

#include "common/err.h"
#include "obs/metrics.h"

/* The lines of one family in a rendered text: from "# HELP name " up to the
 * next "# HELP" (or the end). Returns a malloc'ed copy; "" if absent. */
static char *section(const char *text, const char *name)
{
    char head[160];
    snprintf(head, sizeof head, "# HELP %s ", name);
    const char *p = strstr(text, head);
    if (!p)
        return strdup("");
    const char *end = strstr(p + 1, "# HELP ");
    size_t n = end ? (size_t)(end - p) : strlen(p);
    return strndup(p, n);
}

static char *render(struct sw_metrics *m)
{
    struct sw_buf b;
    sw_buf_init(&b, 1 << 20);
    assert_int_equal(sw_metrics_render(m, &b), SW_OK);
    return b.ptr;
}

static void assert_section(struct sw_metrics *m, const char *name, const char *expected)
{
    char *text = render(m);
    char *s = section(text, name);
    assert_string_equal(s, expected);
    free(s);
    free(text);
}

static void test_fresh_registry(void **state)
{
    (void)state;
    struct sw_metrics *m = sw_metrics_new();
    assert_non_null(m);
    char *text = render(m);
    /* Every family: HELP and TYPE exactly once. */
    for (int k = 0; k < SW_M__COUNT; k++) {
        const char *name = sw_metrics_name((enum sw_metric)k);
        char type[160];
        snprintf(type, sizeof type, "# TYPE %s ", name);
        const char *p = strstr(text, type);
        assert_non_null(p);
        assert_null(strstr(p + 1, type));
    }
    free(text);
    assert_section(m, "spillway_config_reloads_total",
                   "# HELP spillway_config_reloads_total Configuration reloads, by result (ok, "
                   "failed).\n"
                   "# TYPE spillway_config_reloads_total counter\n"
                   "spillway_config_reloads_total{result=\"ok\"} 0\n"
                   "spillway_config_reloads_total{result=\"failed\"} 0\n");
    assert_section(m, "spillway_errors_total",
                   "# HELP spillway_errors_total Failed upstream attempts and failed answers, by "
                   "error class.\n"
                   "# TYPE spillway_errors_total counter\n");
    sw_metrics_free(m);
}

static void test_counters_and_escaping(void **state)
{
    (void)state;
    struct sw_metrics *m = sw_metrics_new();
    const char *a[] = {"chat", "edge", "local", "baseline"};
    const char *b[] = {"we\"ird\\mo\ndel", "cloud", "cloud", "overflow"};
    sw_metrics_inc(m, SW_M_REQUESTS, a, 1);
    sw_metrics_inc(m, SW_M_REQUESTS, b, 1);
    sw_metrics_inc(m, SW_M_REQUESTS, a, 2);
    /* Ignored: negative, NaN, infinite, a histogram family. */
    sw_metrics_inc(m, SW_M_REQUESTS, a, -1);
    sw_metrics_inc(m, SW_M_REQUESTS, a, NAN);
    sw_metrics_inc(m, SW_M_REQUESTS, a, INFINITY);
    sw_metrics_inc(m, SW_M_TTFT, a, 1);
    sw_metrics_observe(m, SW_M_REQUESTS, a, 1);
    assert_section(m, "spillway_requests_total",
                   "# HELP spillway_requests_total Requests served, by requested model, backend, "
                   "tier and routing reason.\n"
                   "# TYPE spillway_requests_total counter\n"
                   "spillway_requests_total{model=\"chat\",backend=\"edge\",tier=\"local\","
                   "reason=\"baseline\"} 3\n"
                   "spillway_requests_total{model=\"we\\\"ird\\\\mo\\ndel\",backend=\"cloud\","
                   "tier=\"cloud\",reason=\"overflow\"} 1\n");
    assert_true(sw_metrics_value(m, SW_M_REQUESTS, a) == 3);
    assert_true(sw_metrics_value(m, SW_M_TTFT, a) == 0);

    const char *cost[] = {"openai"};
    sw_metrics_inc(m, SW_M_CLOUD_COST, cost, 0.1);
    sw_metrics_inc(m, SW_M_CLOUD_COST, cost, 0.000025);
    assert_section(m, "spillway_cloud_cost_usd_total",
                   "# HELP spillway_cloud_cost_usd_total Cloud spend in US dollars from reported "
                   "usage, per backend.\n"
                   "# TYPE spillway_cloud_cost_usd_total counter\n"
                   "spillway_cloud_cost_usd_total{backend=\"openai\"} 0.100025\n");
    /* A NULL label value renders as "". */
    const char *none[] = {NULL};
    sw_metrics_inc(m, SW_M_ERRORS, none, 1);
    assert_section(m, "spillway_errors_total",
                   "# HELP spillway_errors_total Failed upstream attempts and failed answers, by "
                   "error class.\n"
                   "# TYPE spillway_errors_total counter\n"
                   "spillway_errors_total{class=\"\"} 1\n");
    sw_metrics_free(m);
}

static void test_histogram(void **state)
{
    (void)state;
    struct sw_metrics *m = sw_metrics_new();
    const char *edge[] = {"edge"};
    /* Bounds are inclusive (le): 0.5 and 1 land in their own buckets. */
    sw_metrics_observe(m, SW_M_TTFT, edge, 0.03125);
    sw_metrics_observe(m, SW_M_TTFT, edge, 1);
    sw_metrics_observe(m, SW_M_TTFT, edge, 0.5);
    sw_metrics_observe(m, SW_M_TTFT, edge, 100);
    sw_metrics_observe(m, SW_M_TTFT, edge, NAN);    /* ignored */
    assert_section(m, "spillway_ttft_seconds",
                   "# HELP spillway_ttft_seconds Time from request arrival to the first token "
                   "sent, per backend.\n"
                   "# TYPE spillway_ttft_seconds histogram\n"
                   "spillway_ttft_seconds_bucket{backend=\"edge\",le=\"0.025\"} 0\n"
                   "spillway_ttft_seconds_bucket{backend=\"edge\",le=\"0.05\"} 1\n"
                   "spillway_ttft_seconds_bucket{backend=\"edge\",le=\"0.1\"} 1\n"
                   "spillway_ttft_seconds_bucket{backend=\"edge\",le=\"0.25\"} 1\n"
                   "spillway_ttft_seconds_bucket{backend=\"edge\",le=\"0.5\"} 2\n"
                   "spillway_ttft_seconds_bucket{backend=\"edge\",le=\"0.75\"} 2\n"
                   "spillway_ttft_seconds_bucket{backend=\"edge\",le=\"1\"} 3\n"
                   "spillway_ttft_seconds_bucket{backend=\"edge\",le=\"1.5\"} 3\n"
                   "spillway_ttft_seconds_bucket{backend=\"edge\",le=\"2.5\"} 3\n"
                   "spillway_ttft_seconds_bucket{backend=\"edge\",le=\"5\"} 3\n"
                   "spillway_ttft_seconds_bucket{backend=\"edge\",le=\"10\"} 3\n"
                   "spillway_ttft_seconds_bucket{backend=\"edge\",le=\"30\"} 3\n"
                   "spillway_ttft_seconds_bucket{backend=\"edge\",le=\"+Inf\"} 4\n"
                   "spillway_ttft_seconds_sum{backend=\"edge\"} 101.53125\n"
                   "spillway_ttft_seconds_count{backend=\"edge\"} 4\n");
    assert_true(sw_metrics_value(m, SW_M_TTFT, edge) == 4);

    /* A touched series is there at zero before any observation. */
    const char *cloud[] = {"cloud"};
    sw_metrics_touch(m, SW_M_DURATION, cloud);
    char *text = render(m);
    char *s = section(text, "spillway_request_duration_seconds");
    assert_non_null(strstr(s, "spillway_request_duration_seconds_bucket{backend=\"cloud\","
                              "le=\"300\"} 0\n"
                              "spillway_request_duration_seconds_bucket{backend=\"cloud\","
                              "le=\"+Inf\"} 0\n"
                              "spillway_request_duration_seconds_sum{backend=\"cloud\"} 0\n"
                              "spillway_request_duration_seconds_count{backend=\"cloud\"} 0\n"));
    free(s);
    free(text);
    sw_metrics_free(m);
}

static void test_series_bound(void **state)
{
    (void)state;
    struct sw_metrics *m = sw_metrics_new();
    char name[32];
    const char *l[] = {name};
    /* spillway_rejections_total keeps 64 label sets. */
    for (int i = 0; i < 70; i++) {
        snprintf(name, sizeof name, "code_%02d", i);
        sw_metrics_inc(m, SW_M_REJECTIONS, l, 1);
    }
    snprintf(name, sizeof name, "code_03");
    sw_metrics_inc(m, SW_M_REJECTIONS, l, 1);   /* existing: not dropped */
    snprintf(name, sizeof name, "code_99");
    sw_metrics_touch(m, SW_M_REJECTIONS, l);    /* touching is not a drop */
    char *text = render(m);
    char *s = section(text, "spillway_rejections_total");
    int lines = 0;
    for (const char *p = s; (p = strchr(p, '\n')); p++)
        lines++;
    assert_int_equal(lines, 2 + 64 + 1);
    assert_non_null(strstr(s, "spillway_rejections_total{code=\"code_03\"} 2\n"));
    assert_non_null(strstr(s, "spillway_rejections_total{code=\"code_63\"} 1\n"));
    assert_null(strstr(s, "code_64"));
    assert_non_null(strstr(s, "spillway_rejections_total{code=\"other\"} 6\n"));
    free(s);
    s = section(text, "spillway_metrics_series_dropped_total");
    assert_non_null(
        strstr(s, "spillway_metrics_series_dropped_total{family=\"spillway_rejections_total\"} "
                  "6\n"));
    assert_non_null(
        strstr(s, "spillway_metrics_series_dropped_total{family=\"spillway_requests_total\"} "
                  "0\n"));
    free(s);
    free(text);

    /* Histograms overflow the same way; "other" for every label. */
    for (int i = 0; i < 65; i++) {
        snprintf(name, sizeof name, "b%d", i);
        sw_metrics_observe(m, SW_M_DURATION, l, 1);
    }
    text = render(m);
    assert_non_null(strstr(text, "spillway_request_duration_seconds_count{backend=\"other\"} 1\n"));
    free(text);
    sw_metrics_free(m);
}

static void test_long_label_cut_at_character(void **state)
{
    (void)state;
    struct sw_metrics *m = sw_metrics_new();
    char v[300];
    memset(v, 'a', 127);
    strcpy(v + 127, "\xc3\xa9tail");    /* é straddles byte 128 */
    const char *l[] = {v};
    sw_metrics_inc(m, SW_M_SPILLED, l, 1);
    v[127] = '\0';
    const char *cut[] = {v};
    assert_true(sw_metrics_value(m, SW_M_SPILLED, cut) == 1);
    sw_metrics_free(m);
}

/* A label past the length limit counts into the series of its cut form,
 * however it goes on after the cut (valid or invalid UTF-8), whether the
 * series was the last one updated or not; one differing before the cut
 * does not. */
static void test_long_label_same_series(void **state)
{
    (void)state;
    struct sw_metrics *m = sw_metrics_new();
    char cut[200], longer[300], invalid[300], other[300];
    memset(cut, 'a', 120);
    cut[120] = '\0';
    strcpy(longer, cut);
    strcat(longer, "bbbbbbbb\xc3\xa9tail");    /* cut at 128 bytes */
    memcpy(cut + 120, "bbbbbbbb", 9);           /* the cut form: 128 bytes */
    strcpy(invalid, cut);
    strcat(invalid, "x\x80\x80\x80\x80\x80");   /* invalid UTF-8 after the cut */
    strcpy(other, longer);
    other[5] = 'z';
    const char *const spellings[] = {longer, cut, invalid, other, "x"};
    /* the same order twice: each first found through the last-used series,
     * then (after "other" and "x" came in between) through the search */
    for (int round = 0; round < 2; round++)
        for (size_t i = 0; i < 5; i++)
            sw_metrics_inc(m, SW_M_SPILLED, &spellings[i], 1);
    const char *const c[] = {cut}, *const o[] = {other};
    assert_true(sw_metrics_value(m, SW_M_SPILLED, c) == 6);
    assert_true(sw_metrics_value(m, SW_M_SPILLED, o) == 2);
    /* a label past the cut with continuation bytes at it is cut where they start
     * (and the byte before them, taken as their lead) */
    char cont[300];
    memset(cont, 'q', 126);
    memset(cont + 126, 0x80, 10);
    cont[136] = '\0';
    const char *const ct[] = {cont};
    sw_metrics_inc(m, SW_M_SPILLED, ct, 1);
    cont[125] = '\0';
    sw_metrics_inc(m, SW_M_SPILLED, ct, 1);
    assert_true(sw_metrics_value(m, SW_M_SPILLED, ct) == 2);
    /* a short label that starts another is not that one (the last used) */
    const char *const ab[] = {"ab"}, *const abc[] = {"abc"};
    sw_metrics_inc(m, SW_M_SPILLED, ab, 1);
    sw_metrics_inc(m, SW_M_SPILLED, ab, 1);
    sw_metrics_inc(m, SW_M_SPILLED, abc, 1);
    assert_true(sw_metrics_value(m, SW_M_SPILLED, ab) == 2);
    assert_true(sw_metrics_value(m, SW_M_SPILLED, abc) == 1);
    char *text = render(m);
    char *sec = section(text, "spillway_spilled_requests_total");
    int lines = 0;
    for (const char *p = sec; (p = strchr(p, '\n')); p++)
        lines++;
    assert_int_equal(lines, 2 + 6);     /* cut, other, x, cont, ab, abc */
    free(sec);
    free(text);
    sw_metrics_free(m);
}

static void test_numbers(void **state)
{
    (void)state;
    static const struct {
        double v;
        const char *text;
    } rows[] = {
        {0, "0"},          {-0.0, "0"},          {1, "1"},       {2.5, "2.5"},
        {0.1, "0.1"},      {1e-7, "1e-07"},      {1e20, "1e+20"}, {-3, "-3"},
        {1.0 / 3, "0.3333333333333333"},         {INFINITY, "+Inf"},
        {-INFINITY, "-Inf"}, {NAN, "NaN"},       {123456789012, "123456789012"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        struct sw_buf b;
        sw_buf_init(&b, 64);
        assert_int_equal(sw_metrics_append_number(&b, rows[i].v), SW_OK);
        assert_string_equal(b.ptr, rows[i].text);
        sw_buf_free(&b);
    }
}

static void test_gauges(void **state)
{
    (void)state;
    struct sw_buf b;
    sw_buf_init(&b, 4096);
    struct sw_metrics_scrape s;
    sw_metrics_scrape_init(&s, &b);
    const char *ln[] = {"backend"};
    const char *edge[] = {"edge"}, *edge2[] = {"edge\"2"};
    const char *help = "Requests waiting in Spillway's queue for a local backend.";
    assert_int_equal(sw_metrics_gauge(&s, "spillway_local_queue_depth", help, ln, edge, 1, 3),
                     SW_OK);
    assert_int_equal(sw_metrics_gauge(&s, "spillway_local_queue_depth", help, ln, edge2, 1, 0),
                     SW_OK);
    assert_int_equal(sw_metrics_gauge(&s, "spillway_cloud_spend_usd", "Cloud spend\\now.", NULL,
                                      NULL, 0, 1.25),
                     SW_OK);
    /* Back to an earlier family: refused, nothing written. */
    size_t len = b.len;
    assert_int_equal(sw_metrics_gauge(&s, "spillway_local_queue_depth", help, ln, edge, 1, 1),
                     SW_EINVAL);
    assert_int_equal(b.len, len);
    const char *hl[] = {"backend", "health"}, *hv[] = {"edge", "up"};
    assert_int_equal(sw_metrics_gauge(&s, "spillway_backend_up", "1 when up.", hl, hv, 2, 1),
                     SW_OK);
    assert_string_equal(
        b.ptr,
        "# HELP spillway_local_queue_depth Requests waiting in Spillway's queue for a local "
        "backend.\n"
        "# TYPE spillway_local_queue_depth gauge\n"
        "spillway_local_queue_depth{backend=\"edge\"} 3\n"
        "spillway_local_queue_depth{backend=\"edge\\\"2\"} 0\n"
        "# HELP spillway_cloud_spend_usd Cloud spend\\\\now.\n"
        "# TYPE spillway_cloud_spend_usd gauge\n"
        "spillway_cloud_spend_usd 1.25\n"
        "# HELP spillway_backend_up 1 when up.\n"
        "# TYPE spillway_backend_up gauge\n"
        "spillway_backend_up{backend=\"edge\",health=\"up\"} 1\n");
    sw_buf_free(&b);

    /* A full buffer is reported, not overrun. */
    sw_buf_init(&b, 16);
    sw_metrics_scrape_init(&s, &b);
    assert_int_equal(sw_metrics_gauge(&s, "spillway_emergency", "0 or 1.", NULL, NULL, 0, 0),
                     SW_ETOOBIG);
    sw_buf_free(&b);
}

static void test_render_too_big(void **state)
{
    (void)state;
    struct sw_metrics *m = sw_metrics_new();
    struct sw_buf b;
    sw_buf_init(&b, 100);
    assert_int_equal(sw_metrics_render(m, &b), SW_ETOOBIG);
    sw_buf_free(&b);
    sw_metrics_free(m);
}

static void test_spill_ratio(void **state)
{
    (void)state;
    struct sw_spill s;
    sw_spill_init(&s);
    assert_true(sw_spill_ratio(&s, 0) == 0);
    sw_spill_add(&s, 100, false);
    sw_spill_add(&s, 100, false);
    sw_spill_add(&s, 100, true);
    sw_spill_add(&s, 130, true);
    assert_true(sw_spill_ratio(&s, 130) == 0.5);
    uint64_t total, spilled;
    sw_spill_counts(&s, 159, &total, &spilled);
    assert_int_equal(total, 4);
    assert_int_equal(spilled, 2);
    /* At 160 the second 100 has left the window (160 - 59 = 101). */
    assert_true(sw_spill_ratio(&s, 160) == 1);
    /* 160 reuses 100's slot: it is reset first. */
    sw_spill_add(&s, 160, false);
    sw_spill_counts(&s, 160, &total, &spilled);
    assert_int_equal(total, 2);
    assert_int_equal(spilled, 1);
    /* A long idle period empties the window. */
    assert_true(sw_spill_ratio(&s, 1000) == 0);
    sw_spill_counts(&s, 1000, &total, NULL);
    assert_int_equal(total, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fresh_registry),
        cmocka_unit_test(test_counters_and_escaping),
        cmocka_unit_test(test_histogram),
        cmocka_unit_test(test_series_bound),
        cmocka_unit_test(test_long_label_cut_at_character),
        cmocka_unit_test(test_long_label_same_series),
        cmocka_unit_test(test_numbers),
        cmocka_unit_test(test_gauges),
        cmocka_unit_test(test_render_too_big),
        cmocka_unit_test(test_spill_ratio),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
