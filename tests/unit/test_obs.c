/* Unit tests of the account step (src/obs/obs.c): a decision-log entry moves
 * the right counters, and the scrape-time gauges render as documented. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

#include <cmocka.h>

#include "common/err.h"
#include "obs/obs.h"

#define V(m, fam, ...) sw_metrics_value(m, fam, (const char *[]){__VA_ARGS__})

static void test_account(void **state)
{
    (void)state;
    struct sw_metrics *m = sw_metrics_new();
    struct sw_spill spill;
    sw_spill_init(&spill);
    const struct sw_declog_attempt att[] = {
        {"edge", "baseline", SW_ATTEMPT_FAILED, 0, "connect", -1},
        {"cloud", "fallback", SW_ATTEMPT_OK, 200, NULL, 300},
    };
    const struct sw_declog_pii pii[] = {{"email", 2}};
    struct sw_declog_entry served = {
        .request_id = "a", .model = "chat", .decision = SW_DECLOG_SERVED, .status = 200,
        .backend = "cloud", .tier = "cloud", .reason = "fallback", .attempts = att,
        .n_attempts = 2, .ttft_ms = 350, .duration_ms = 1200, .tokens_in = 100,
        .tokens_out = 20, .cost_usd = 0.5, .pii = pii, .n_pii = 1,
        .pii_outcome = "masked_cloud",
    };
    sw_obs_account(m, &spill, &served, true, 10);
    served.backend = "edge";
    served.tier = "local";
    served.reason = "baseline";
    served.n_attempts = 0;
    served.cost_usd = 0;
    served.n_pii = 0;
    served.tokens_out = -1;
    sw_obs_account(m, &spill, &served, false, 11);
    const struct sw_declog_attempt gone[] = {{"edge", "privacy", SW_ATTEMPT_CLIENT_GONE, 0,
                                              "canceled", -1}};
    const struct sw_declog_entry rejected = {
        .request_id = "b", .model = "chat", .decision = SW_DECLOG_REJECTED, .status = 503,
        .code = "local_queue_full", .attempts = gone, .n_attempts = 1, .ttft_ms = -1,
        .tokens_in = -1, .tokens_out = -1,
    };
    sw_obs_account(m, &spill, &rejected, false, 12);

    assert_true(V(m, SW_M_REQUESTS, "chat", "cloud", "cloud", "fallback") == 1);
    assert_true(V(m, SW_M_REQUESTS, "chat", "edge", "local", "baseline") == 1);
    assert_true(V(m, SW_M_TOKENS, "cloud", "in") == 100);
    assert_true(V(m, SW_M_TOKENS, "cloud", "out") == 20);
    assert_true(V(m, SW_M_TOKENS, "edge", "in") == 100);
    assert_true(V(m, SW_M_TOKENS, "edge", "out") == 0);
    assert_true(V(m, SW_M_CLOUD_COST, "cloud") == 0.5);
    assert_true(V(m, SW_M_CLOUD_COST, "edge") == 0);
    assert_true(V(m, SW_M_TTFT, "cloud") == 1);
    assert_true(V(m, SW_M_DURATION, "edge") == 1);
    assert_true(V(m, SW_M_SPILLED, "chat") == 1);
    assert_true(V(m, SW_M_ERRORS, "connect") == 1);
    assert_true(V(m, SW_M_ERRORS, "client_gone") == 1);
    assert_true(V(m, SW_M_REJECTIONS, "local_queue_full") == 1);
    assert_true(V(m, SW_M_PII, "email", "masked_cloud") == 2);
    /* Rejections do not count in the spill ratio: 1 of 2 served spilled. */
    assert_true(sw_spill_ratio(&spill, 12) == 0.5);
    sw_metrics_free(m);
}

static void test_gauges(void **state)
{
    (void)state;
    const struct sw_obs_backend b[] = {
        {"edge", true, "up", 0, 2, 4, 3, 1500, 0.5, 40, -1, INFINITY, false, 0, false, "server"},
        {"cloud", false, "down", 2, 1, 0, 0, 0, 0, 0, 58, 90000, false, 0, false, NULL},
    };
    const struct sw_obs_gauges g = {b, 2, 1.25, 10, 800, 0.75, true, 3, 250, 7, 0, false, 0, 0, 0,
                                    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    struct sw_buf out;
    sw_buf_init(&out, 1 << 16);
    assert_int_equal(sw_obs_render_gauges(&out, &g), SW_OK);
    /* Samples only (HELP texts are in the code and docs). */
    static const char *const expect[] = {
        "# TYPE spillway_local_queue_depth gauge",
        "spillway_local_queue_depth{backend=\"edge\"} 3",
        "spillway_local_in_flight{backend=\"edge\"} 2",
        "spillway_local_slots{backend=\"edge\"} 4",
        "spillway_local_estimated_wait_seconds{backend=\"edge\"} 1.5",
        "spillway_learned_prefill_seconds_per_token{backend=\"edge\"} 0.0005",
        "spillway_prefill_tokens_per_second{backend=\"edge\",source=\"server\"} 2000",
        "spillway_learned_decode_tokens_per_second{backend=\"edge\"} 40",
        "spillway_breaker_state{backend=\"edge\"} 0",
        "spillway_breaker_state{backend=\"cloud\"} 2",
        "spillway_backend_up{backend=\"edge\",health=\"up\"} 1",
        "spillway_backend_up{backend=\"cloud\",health=\"down\"} 0",
        "spillway_bucket_requests_available{backend=\"cloud\"} 58",
        "spillway_bucket_tokens_available{backend=\"cloud\"} 90000",
        "spillway_ttft_budget_seconds 0.8",
        "spillway_cloud_spend_usd 1.25",
        "spillway_cloud_spend_cap_usd 10",
        "spillway_spill_ratio 0.75",
        "spillway_emergency 1",
        "# TYPE spillway_decision_log_write_errors_total counter",
        "spillway_decision_log_write_errors_total 3",
        "# TYPE spillway_event_loop_lag_seconds gauge",
        "spillway_event_loop_lag_seconds 0.25",
        "spillway_idle_connections_closed_total 7",
    };
    const char *p = out.ptr;
    for (size_t i = 0; i < sizeof expect / sizeof expect[0]; i++) {
        const char *q = strstr(p, expect[i]);
        if (!q)
            fail_msg("missing or out of order: %s\n%s", expect[i], out.ptr);
        p = q;
    }
    assert_null(strstr(out.ptr, "spillway_local_queue_depth{backend=\"cloud\"}"));
    assert_null(strstr(out.ptr, "spillway_local_slots{backend=\"cloud\"}"));
    assert_null(strstr(out.ptr, "bucket_requests_available{backend=\"edge\"}"));
    sw_buf_free(&out);
}

/* The scans off the event loop: counters, after the other gauges. */
static void test_scan_counters(void **state)
{
    (void)state;
    const struct sw_obs_gauges g = {.pii_scans_offloaded = 5, .pii_scans_dropped = 2,
                                    .pii_cache_hits = 9, .pii_cache_misses = 4,
                                    .pii_cache_evicted = 1, .pii_cache_bytes = 640,
                                    .pii_cache_entries = 3, .pii_cache_max_bytes = 16777216,
                                    .parse_cache_hits = 148, .parse_cache_misses = 3,
                                    .parse_cache_evicted = 2, .parse_cache_bytes = 1048576,
                                    .parse_cache_entries = 151,
                                    .parse_cache_max_bytes = 33554432};
    struct sw_buf out;
    sw_buf_init(&out, 1 << 16);
    assert_int_equal(sw_obs_render_gauges(&out, &g), SW_OK);
    static const char *const expect[] = {
        "spillway_idle_connections_closed_total 0",
        "# TYPE spillway_pii_scans_offloaded_total counter",
        "spillway_pii_scans_offloaded_total 5",
        "# TYPE spillway_pii_scans_dropped_total counter",
        "spillway_pii_scans_dropped_total 2",
        "# TYPE spillway_pii_scan_cache_hits_total counter",
        "spillway_pii_scan_cache_hits_total 9",
        "spillway_pii_scan_cache_misses_total 4",
        "spillway_pii_scan_cache_evicted_total 1",
        "# TYPE spillway_pii_scan_cache_bytes gauge",
        "spillway_pii_scan_cache_bytes 640",
        "spillway_pii_scan_cache_entries 3",
        "spillway_pii_scan_cache_max_bytes 16777216",
        "# TYPE spillway_parse_cache_hits_total counter",
        "spillway_parse_cache_hits_total 148",
        "spillway_parse_cache_misses_total 3",
        "spillway_parse_cache_evicted_total 2",
        "# TYPE spillway_parse_cache_bytes gauge",
        "spillway_parse_cache_bytes 1048576",
        "spillway_parse_cache_entries 151",
        "spillway_parse_cache_max_bytes 33554432",
    };
    const char *p = out.ptr;
    for (size_t i = 0; i < sizeof expect / sizeof expect[0]; i++) {
        const char *q = strstr(p, expect[i]);
        if (!q)
            fail_msg("missing or out of order: %s\n%s", expect[i], out.ptr);
        p = q;
    }
    sw_buf_free(&out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_account),
        cmocka_unit_test(test_gauges),
        cmocka_unit_test(test_scan_counters),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
