/* Unit tests of llmsim fault injection with a fake clock: parsing of the
 * POST /admin/faults body, each fault's verdict, the rpm/tpm buckets and the
 * seeded error-rate draw. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/err.h"
#include "faults.h"

static struct sw_llmsim_fault_state state_with(const char *json)
{
    struct sw_llmsim_fault_state s = {.rng = 42};
    struct sw_llmsim_faults f;
    char err[256];
    assert_int_equal(sw_llmsim_faults_parse(json, strlen(json), &f, err, sizeof err), SW_OK);
    sw_llmsim_faults_set(&s, &f, 0);
    return s;
}

static void test_parse_full_and_replace(void **state)
{
    (void)state;
    const char *j = "{\"error_rate\":1.0,\"error_status\":503,\"retry_after_s\":2,\"latency_ms\":7,"
                    "\"hang\":false,\"close_after_chunks\":3,\"malformed\":\"sse\",\"exit\":false,"
                    "\"rpm\":5,\"tpm\":100}";
    struct sw_llmsim_faults f;
    char err[256];
    assert_int_equal(sw_llmsim_faults_parse(j, strlen(j), &f, err, sizeof err), SW_OK);
    assert_true(f.error_rate == 1.0);
    assert_int_equal(f.error_status, 503);
    assert_int_equal(f.retry_after_s, 2);
    assert_int_equal(f.latency_ms, 7);
    assert_int_equal(f.close_after_chunks, 3);
    assert_int_equal(f.malformed, SW_LLMSIM_MALFORMED_SSE);
    assert_int_equal(f.rpm, 5);
    assert_int_equal(f.tpm, 100);
    /* the object replaces the whole set: missing fields are off */
    assert_int_equal(sw_llmsim_faults_parse("{\"hang\":true}", 13, &f, err, sizeof err), SW_OK);
    assert_true(f.hang);
    assert_true(f.error_rate == 0);
    assert_int_equal(f.rpm, 0);
    assert_int_equal(f.malformed, SW_LLMSIM_MALFORMED_NONE);
    assert_int_equal(f.error_status, 500);
    assert_int_equal(f.retry_after_s, 1);
    /* round trip through JSON */
    json_t *o = sw_llmsim_faults_to_json(&f);
    assert_true(json_is_true(json_object_get(o, "hang")));
    assert_true(json_is_null(json_object_get(o, "malformed")));
    json_decref(o);
}

static void test_parse_errors(void **state)
{
    (void)state;
    static const struct {
        const char *body;
        const char *msg;
    } bad[] = {
        {"{", "invalid JSON"},
        {"[]", "must be a JSON object"},
        {"{\"error_rate\":2}", "error_rate"},
        {"{\"error_rate\":\"x\"}", "error_rate"},
        {"{\"error_status\":200}", "error_status"},
        {"{\"hang\":1}", "hang"},
        {"{\"malformed\":\"xml\"}", "malformed"},
        {"{\"rpm\":-1}", "rpm"},
        {"{\"bogus\":1}", "unknown field \"bogus\""},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct sw_llmsim_faults f;
        char err[256] = "";
        assert_int_equal(sw_llmsim_faults_parse(bad[i].body, strlen(bad[i].body), &f, err, sizeof err),
                         SW_EINVAL);
        assert_non_null(strstr(err, bad[i].msg));
    }
}

static void test_no_faults(void **state)
{
    (void)state;
    struct sw_llmsim_fault_state s = state_with("{}");
    struct sw_llmsim_verdict v;
    for (int i = 0; i < 100; i++) {
        sw_llmsim_faults_decide(&s, i, 10, &v);
        assert_int_equal(v.status, 0);
        assert_false(v.hang);
        assert_int_equal(v.latency_ms, 0);
    }
}

static void test_error_rate_all_and_retry_after(void **state)
{
    (void)state;
    struct sw_llmsim_fault_state s =
        state_with("{\"error_rate\":1,\"error_status\":429,\"retry_after_s\":3}");
    struct sw_llmsim_verdict v;
    sw_llmsim_faults_decide(&s, 0, 10, &v);
    assert_int_equal(v.status, 429);
    assert_int_equal(v.retry_after_s, 3);
    assert_null(v.limit);
    s = state_with("{\"error_rate\":1,\"error_status\":500}");
    sw_llmsim_faults_decide(&s, 0, 10, &v);
    assert_int_equal(v.status, 500);
    assert_int_equal(v.retry_after_s, -1); /* no Retry-After on a 500 */
    s = state_with("{\"error_rate\":1,\"error_status\":529}");
    sw_llmsim_faults_decide(&s, 0, 10, &v);
    assert_int_equal(v.status, 529);
}

static void test_error_rate_fraction_seeded(void **state)
{
    (void)state;
    struct sw_llmsim_fault_state a = state_with("{\"error_rate\":0.25,\"error_status\":502}");
    struct sw_llmsim_fault_state b = a;
    int errors = 0;
    for (int i = 0; i < 4000; i++) {
        struct sw_llmsim_verdict va, vb;
        sw_llmsim_faults_decide(&a, i, 1, &va);
        sw_llmsim_faults_decide(&b, i, 1, &vb);
        assert_int_equal(va.status, vb.status); /* reproducible */
        errors += va.status == 502;
    }
    assert_in_range(errors, 850, 1150);
}

static void test_latency_close_malformed_pass_through(void **state)
{
    (void)state;
    struct sw_llmsim_fault_state s =
        state_with("{\"latency_ms\":250,\"close_after_chunks\":4,\"malformed\":\"json\"}");
    struct sw_llmsim_verdict v;
    sw_llmsim_faults_decide(&s, 0, 10, &v);
    assert_int_equal(v.status, 0);
    assert_int_equal(v.latency_ms, 250);
    assert_int_equal(v.close_after_chunks, 4);
    assert_int_equal(v.malformed, SW_LLMSIM_MALFORMED_JSON);
    assert_int_equal(v.stream_error_after, -1); /* absent: off */
    s = state_with("{\"stream_error_after\":0}");
    sw_llmsim_faults_decide(&s, 0, 10, &v);
    assert_int_equal(v.stream_error_after, 0);
    s = state_with("{\"stream_error_after\":null}");
    sw_llmsim_faults_decide(&s, 0, 10, &v);
    assert_int_equal(v.stream_error_after, -1);
}

static void test_hang(void **state)
{
    (void)state;
    struct sw_llmsim_fault_state s = state_with("{\"hang\":true,\"error_rate\":1}");
    struct sw_llmsim_verdict v;
    sw_llmsim_faults_decide(&s, 0, 10, &v);
    assert_true(v.hang);
    assert_int_equal(v.status, 0);
}

static void test_exit_after(void **state)
{
    (void)state;
    struct sw_llmsim_fault_state s = state_with("{\"exit_after\":3}");
    assert_false(sw_llmsim_faults_arrive(&s));
    assert_false(sw_llmsim_faults_arrive(&s));
    assert_true(sw_llmsim_faults_arrive(&s));
    assert_false(sw_llmsim_faults_arrive(&s));
    s = state_with("{}");
    for (int i = 0; i < 10; i++)
        assert_false(sw_llmsim_faults_arrive(&s));
}

static void test_rpm(void **state)
{
    (void)state;
    struct sw_llmsim_fault_state s = state_with("{\"rpm\":2}");
    struct sw_llmsim_verdict v;
    sw_llmsim_faults_decide(&s, 0, 1, &v);
    assert_int_equal(v.status, 0);
    sw_llmsim_faults_decide(&s, 0, 1, &v);
    assert_int_equal(v.status, 0);
    sw_llmsim_faults_decide(&s, 0, 1, &v);
    assert_int_equal(v.status, 429);
    assert_string_equal(v.limit, "requests");
    assert_int_equal(v.retry_after_s, 30); /* one request refills in 60 s / 2 */
    /* 29 s later: still short; 30 s later: one more */
    sw_llmsim_faults_decide(&s, 29000000, 1, &v);
    assert_int_equal(v.status, 429);
    assert_int_equal(v.retry_after_s, 1);
    sw_llmsim_faults_decide(&s, 30000000, 1, &v);
    assert_int_equal(v.status, 0);
}

static void test_tpm(void **state)
{
    (void)state;
    struct sw_llmsim_fault_state s = state_with("{\"tpm\":100}");
    struct sw_llmsim_verdict v;
    sw_llmsim_faults_decide(&s, 0, 60, &v);
    assert_int_equal(v.status, 0);
    sw_llmsim_faults_decide(&s, 0, 60, &v);
    assert_int_equal(v.status, 429);
    assert_string_equal(v.limit, "tokens");
    assert_int_equal(v.retry_after_s, 12); /* 20 missing tokens at 100/min */
    sw_llmsim_faults_decide(&s, 0, 40, &v); /* the refused request took nothing */
    assert_int_equal(v.status, 0);
}

static void test_rpm_refusal_by_tpm_takes_no_request(void **state)
{
    (void)state;
    struct sw_llmsim_fault_state s = state_with("{\"rpm\":2,\"tpm\":10}");
    struct sw_llmsim_verdict v;
    sw_llmsim_faults_decide(&s, 0, 8, &v);
    assert_int_equal(v.status, 0);
    sw_llmsim_faults_decide(&s, 0, 50, &v); /* too many tokens: refused */
    assert_int_equal(v.status, 429);
    assert_string_equal(v.limit, "tokens");
    sw_llmsim_faults_decide(&s, 0, 1, &v); /* the second request of the minute is still there */
    assert_int_equal(v.status, 0);
    sw_llmsim_faults_decide(&s, 0, 1, &v);
    assert_int_equal(v.status, 429);
    assert_string_equal(v.limit, "requests");
}

static void test_set_refills_buckets(void **state)
{
    (void)state;
    struct sw_llmsim_fault_state s = state_with("{\"rpm\":1}");
    struct sw_llmsim_verdict v;
    sw_llmsim_faults_decide(&s, 0, 1, &v);
    sw_llmsim_faults_decide(&s, 0, 1, &v);
    assert_int_equal(v.status, 429);
    struct sw_llmsim_faults f = s.f;
    sw_llmsim_faults_set(&s, &f, 1);
    sw_llmsim_faults_decide(&s, 1, 1, &v);
    assert_int_equal(v.status, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_full_and_replace),
        cmocka_unit_test(test_parse_errors),
        cmocka_unit_test(test_no_faults),
        cmocka_unit_test(test_error_rate_all_and_retry_after),
        cmocka_unit_test(test_error_rate_fraction_seeded),
        cmocka_unit_test(test_latency_close_malformed_pass_through),
        cmocka_unit_test(test_hang),
        cmocka_unit_test(test_exit_after),
        cmocka_unit_test(test_rpm),
        cmocka_unit_test(test_tpm),
        cmocka_unit_test(test_rpm_refusal_by_tpm_takes_no_request),
        cmocka_unit_test(test_set_refills_buckets),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
