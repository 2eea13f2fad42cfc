/* Unit tests of the decision log (src/obs/declog.c): a formatted line parses
 * as JSON with exactly the documented fields (so nothing else, such as
 * prompt text, can slip in), strings stay valid JSON whatever the bytes,
 * the ISO-8601 time, the ring and the writer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "common/err.h"
#include "obs/declog.h"

static const char *const entry_keys[] = {
    "time",      "request_id", "model",    "key_name",    "decision",  "status",
    "backend",   "tier",       "region",   "reason",   "code",        "attempts",  "ttft_ms",
    "duration_ms", "tokens_in", "tokens_out", "cost_usd", "stream",    "pii",
    "pii_outcome", "api",
};
static const char *const attempt_keys[] = {"backend", "reason", "outcome",
                                           "status",  "error",  "ttft_ms"};

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* obj has exactly these keys, in this order. */
static void assert_keys(json_t *obj, const char *const *keys, size_t n)
{
    assert_true(json_is_object(obj));
    assert_int_equal(json_object_size(obj), n);
    size_t i = 0;
    const char *k;
    json_t *v;
    json_object_foreach(obj, k, v) {
        (void)v;
        assert_string_equal(k, keys[i]);
        i++;
    }
}

static json_t *parse(const char *line)
{
    json_error_t err;
    json_t *j = json_loads(line, JSON_DECODE_ANY, &err);
    if (!j)
        fail_msg("not JSON (%s): %s", err.text, line);
    return j;
}

static void test_served_entry(void **state)
{
    (void)state;
    const struct sw_declog_attempt attempts[] = {
        {"edge", "baseline", SW_ATTEMPT_FAILED, 503, "status", -1},
        {"openai", "fallback", SW_ATTEMPT_OK, 200, NULL, 412.5},
    };
    const struct sw_declog_pii pii[] = {{"email", 2}, {"iban", 1}};
    const struct sw_declog_entry e = {
        .request_id = "req-7f3a",
        .time_ms = 1764486062123,
        .model = "chat",
        .key_name = "team-a",
        .decision = SW_DECLOG_SERVED,
        .status = 200,
        .backend = "openai",
        .tier = "cloud",
        .region = "eu-west",
        .reason = "fallback",
        .attempts = attempts,
        .n_attempts = 2,
        .ttft_ms = 640.1234,
        .duration_ms = 2210.25,
        .tokens_in = 812,
        .tokens_out = 97,
        .cost_usd = 0.0012345,
        .stream = true,
        .pii = pii,
        .n_pii = 2,
        .pii_outcome = "masked_cloud",
    };
    char *line = sw_declog_format(&e);
    assert_non_null(line);
    assert_null(strchr(line, '\n'));
    assert_string_equal(
        line,
        "{\"time\":\"2025-11-30T07:01:02.123Z\",\"request_id\":\"req-7f3a\",\"model\":\"chat\","
        "\"key_name\":\"team-a\",\"decision\":\"served\",\"status\":200,\"backend\":\"openai\","
        "\"tier\":\"cloud\",\"region\":\"eu-west\",\"reason\":\"fallback\",\"code\":null,\"attempts\":["
        "{\"backend\":\"edge\",\"reason\":\"baseline\",\"outcome\":\"failed\",\"status\":503,"
        "\"error\":\"status\",\"ttft_ms\":null},"
        "{\"backend\":\"openai\",\"reason\":\"fallback\",\"outcome\":\"ok\",\"status\":200,"
        "\"error\":null,\"ttft_ms\":412.5}],"
        "\"ttft_ms\":640.123,\"duration_ms\":2210.25,\"tokens_in\":812,\"tokens_out\":97,"
        "\"cost_usd\":0.0012345,\"stream\":true,\"pii\":{\"email\":2,\"iban\":1},"
        "\"pii_outcome\":\"masked_cloud\",\"api\":\"openai\"}");

    json_t *j = parse(line);
    assert_keys(j, entry_keys, N(entry_keys));
    json_t *a = json_object_get(j, "attempts");
    assert_int_equal(json_array_size(a), 2);
    for (size_t i = 0; i < 2; i++)
        assert_keys(json_array_get(a, i), attempt_keys, N(attempt_keys));
    assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "pii"), "email")), 2);
    assert_true(json_is_true(json_object_get(j, "stream")));
    json_decref(j);
    free(line);
}

static void test_rejected_entry(void **state)
{
    (void)state;
    const struct sw_declog_attempt attempts[] = {
        {"openai", "overflow", SW_ATTEMPT_SKIPPED, 0, "rate_tpm", -1},
        {"edge", "fallback", SW_ATTEMPT_CLIENT_GONE, 0, "canceled", -1},
    };
    const struct sw_declog_entry e = {
        .request_id = "r1",
        .time_ms = 0,
        .decision = SW_DECLOG_REJECTED,
        .status = 429,
        .code = "budget_exhausted",
        .attempts = attempts,
        .n_attempts = 2,
        .ttft_ms = -1,
        .duration_ms = 1.5,
        .tokens_in = -1,
        .tokens_out = -1,
    };
    char *line = sw_declog_format(&e);
    json_t *j = parse(line);
    assert_keys(j, entry_keys, N(entry_keys));
    assert_string_equal(json_string_value(json_object_get(j, "time")), "1970-01-01T00:00:00.000Z");
    assert_string_equal(json_string_value(json_object_get(j, "decision")), "rejected");
    assert_string_equal(json_string_value(json_object_get(j, "code")), "budget_exhausted");
    assert_int_equal(json_integer_value(json_object_get(j, "status")), 429);
    static const char *const nulls[] = {"model",  "key_name", "backend",   "tier", "region",
                                        "reason", "ttft_ms",  "tokens_in", "tokens_out",
                                        "pii_outcome"};
    for (size_t i = 0; i < N(nulls); i++)
        assert_true(json_is_null(json_object_get(j, nulls[i])));
    assert_int_equal(json_object_size(json_object_get(j, "pii")), 0);
    json_t *a = json_object_get(j, "attempts");
    assert_string_equal(json_string_value(json_object_get(json_array_get(a, 0), "outcome")),
                        "skipped");
    assert_string_equal(json_string_value(json_object_get(json_array_get(a, 1), "outcome")),
                        "client_gone");
    assert_true(json_is_null(json_object_get(json_array_get(a, 0), "status")));
    assert_true(json_is_false(json_object_get(j, "stream")));
    json_decref(j);
    free(line);
}

/* api is always written (a chat line without one says "openai"); contract,
 * last, only when set: lines without a contract keep exactly the documented
 * fields. */
static void test_api_and_contract(void **state)
{
    (void)state;
    struct sw_declog_entry e = {
        .request_id = "r2",
        .decision = SW_DECLOG_SERVED,
        .status = 200,
        .ttft_ms = -1,
        .tokens_in = 3,
        .tokens_out = 0,
        .api = "embeddings",
        .contract = "violation",
    };
    char *line = sw_declog_format(&e);
    json_t *j = parse(line);
    assert_string_equal(json_string_value(json_object_get(j, "api")), "embeddings");
    assert_string_equal(json_string_value(json_object_get(j, "contract")), "violation");
    assert_non_null(strstr(line, "\"pii_outcome\":null,\"api\":\"embeddings\",\"contract\":\"violation\"}"));
    json_decref(j);
    free(line);
    /* the fields a translation left out, named after the contract */
    static const char *const dropped[] = {"context_management", "thinking_block"};
    e.dropped = dropped;
    e.n_dropped = 2;
    line = sw_declog_format(&e);
    assert_non_null(strstr(line, "\"contract\":\"violation\",\"dropped\":[\"context_management\",\"thinking_block\"]}"));
    free(line);
    e.n_dropped = 0;
    e.api = e.contract = NULL;
    line = sw_declog_format(&e);
    j = parse(line);
    assert_keys(j, entry_keys, N(entry_keys));
    assert_string_equal(json_string_value(json_object_get(j, "api")), "openai");
    assert_null(json_object_get(j, "contract"));
    json_decref(j);
    free(line);
}

static void test_strings_stay_valid(void **state)
{
    (void)state;
    char longid[600];
    memset(longid, 'x', sizeof longid - 1);
    longid[sizeof longid - 1] = '\0';
    longid[255] = (char)0xC3;       /* a two-byte character cut by the limit */
    longid[256] = (char)0xA9;
    const struct sw_declog_entry e = {
        .request_id = longid,
        .model = "a\"b\\c\n\t\x01 caf\xc3\xa9 \xff\xfe bad \xe2\x82",
        .key_name = "\xed\xa0\x80 surrogate",
        .ttft_ms = -1,
        .tokens_in = -1,
        .tokens_out = -1,
    };
    char *line = sw_declog_format(&e);
    json_t *j = parse(line);
    assert_string_equal(json_string_value(json_object_get(j, "model")),
                        "a\"b\\c\n\t\x01 caf\xc3\xa9 \xef\xbf\xbd\xef\xbf\xbd bad \xef\xbf\xbd");
    assert_string_equal(json_string_value(json_object_get(j, "key_name")),
                        "\xef\xbf\xbd surrogate");
    const char *id = json_string_value(json_object_get(j, "request_id"));
    assert_int_equal(strlen(id), 255 + 3);      /* 255 x, then U+FFFD for the cut character */
    json_decref(j);
    free(line);
}

static void test_time(void **state)
{
    (void)state;
    static const struct {
        int64_t ms;
        const char *iso;
    } rows[] = {
        {0, "1970-01-01T00:00:00.000Z"},
        {-1, "1969-12-31T23:59:59.999Z"},
        {1709208012345, "2024-02-29T12:00:12.345Z"},
        {1764486062123, "2025-11-30T07:01:02.123Z"},
        {4102444799999, "2099-12-31T23:59:59.999Z"},
    };
    for (size_t i = 0; i < N(rows); i++) {
        struct sw_buf b;
        sw_buf_init(&b, 64);
        assert_int_equal(sw_declog_append_time(&b, rows[i].ms), SW_OK);
        assert_string_equal(b.ptr, rows[i].iso);
        sw_buf_free(&b);
    }
}

static void test_ring(void **state)
{
    (void)state;
    struct sw_declog_ring *r = sw_declog_ring_new(3);
    struct sw_buf b;
    sw_buf_init(&b, 4096);
    assert_int_equal(sw_declog_ring_render(r, 20, &b), SW_OK);
    assert_string_equal(b.ptr, "{\"decisions\":[]}");
    char line[32];
    for (int i = 1; i <= 5; i++) {
        snprintf(line, sizeof line, "{\"n\":%d}", i);
        assert_int_equal(sw_declog_ring_push(r, line), SW_OK);
    }
    assert_int_equal(sw_declog_ring_count(r), 3);
    assert_string_equal(sw_declog_ring_get(r, 0), "{\"n\":5}");
    assert_string_equal(sw_declog_ring_get(r, 2), "{\"n\":3}");
    assert_null(sw_declog_ring_get(r, 3));
    sw_buf_reset(&b);
    assert_int_equal(sw_declog_ring_render(r, 2, &b), SW_OK);
    assert_string_equal(b.ptr, "{\"decisions\":[{\"n\":5},{\"n\":4}]}");
    sw_buf_reset(&b);
    assert_int_equal(sw_declog_ring_render(r, 100, &b), SW_OK);
    json_t *j = parse(b.ptr);
    assert_int_equal(json_array_size(json_object_get(j, "decisions")), 3);
    json_decref(j);
    sw_buf_free(&b);
    sw_declog_ring_free(r);
}

/* A decision log on a new empty file; path: a mkstemp template, filled in. */
static struct sw_declog *open_temp(char *path)
{
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    return sw_declog_open(path);
}

static void test_writer(void **state)
{
    (void)state;
    char path[] = "/tmp/sw-declog-XXXXXX";
    struct sw_declog *d = open_temp(path);
    assert_non_null(d);
    struct sw_declog_ring *r = sw_declog_ring_new(10);
    const struct sw_declog_entry e = {.request_id = "a", .ttft_ms = -1, .tokens_in = -1,
                                      .tokens_out = -1};
    assert_int_equal(sw_declog_record(d, r, &e), SW_OK);
    assert_int_equal(sw_declog_write(d, "{\"x\":2}"), SW_OK);
    /* After logrotate moved the file, reopen starts a new one. */
    char moved[64];
    snprintf(moved, sizeof moved, "%s.1", path);
    assert_int_equal(rename(path, moved), 0);
    assert_int_equal(sw_declog_reopen(d), SW_OK);
    assert_int_equal(sw_declog_write(d, "{\"x\":3}"), SW_OK);
    assert_int_equal(sw_declog_lines(d), 3);
    assert_int_equal(sw_declog_write_errors(d), 0);
    sw_declog_close(d);

    char buf[1024];
    FILE *f = fopen(moved, "r");
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    char *first = sw_declog_format(&e);
    char expect[1024];
    snprintf(expect, sizeof expect, "%s\n{\"x\":2}\n", first);
    assert_string_equal(buf, expect);
    assert_string_equal(sw_declog_ring_get(r, 0), first);
    free(first);
    f = fopen(path, "r");
    n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    assert_string_equal(buf, "{\"x\":3}\n");
    unlink(path);
    unlink(moved);
    sw_declog_ring_free(r);

    /* A full disk: counted, and the caller goes on. */
    d = sw_declog_open("/dev/full");
    assert_non_null(d);
    assert_int_equal(sw_declog_write(d, "{}"), SW_EIO);
    assert_int_equal(sw_declog_write(d, "{}"), SW_EIO);
    assert_int_equal(sw_declog_write_errors(d), 2);
    assert_int_equal(sw_declog_lines(d), 0);
    sw_declog_close(d);

    assert_null(sw_declog_open("/nonexistent-dir/x.log"));
}

static int schedules;
static void count_schedule(void *ud)
{
    (void)ud;
    schedules++;
}

static size_t file_lines(const char *path)
{
    FILE *f = fopen(path, "r");
    size_t n = 0;
    for (int c; f && (c = fgetc(f)) != EOF;)
        n += c == '\n';
    if (f)
        fclose(f);
    return n;
}

/* Batched: lines wait for the owner's flush (asked for once per batch), a
 * full batch, a reopen or the close; none is lost or cut. */
static void test_batched_writer(void **state)
{
    (void)state;
    char path[] = "/tmp/sw-declog-XXXXXX";
    struct sw_declog *d = open_temp(path);
    assert_non_null(d);
    schedules = 0;
    sw_declog_batch(d, count_schedule, NULL);
    for (int i = 0; i < 3; i++)
        assert_int_equal(sw_declog_write(d, "{\"x\":1}"), SW_OK);
    assert_int_equal(schedules, 1);
    assert_int_equal(file_lines(path), 0);
    assert_int_equal(sw_declog_flush(d), SW_OK);
    assert_int_equal(file_lines(path), 3);
    assert_int_equal(sw_declog_lines(d), 3);

    /* A full batch goes out without waiting for the flush. */
    char line[1001];
    memset(line, 'a', sizeof line - 1);
    line[0] = '"';
    line[sizeof line - 2] = '"';
    line[sizeof line - 1] = '\0';
    size_t n = SW_DECLOG_BATCH_MAX / sizeof line + 2;
    for (size_t i = 0; i < n; i++)
        assert_int_equal(sw_declog_write(d, line), SW_OK);
    assert_true(file_lines(path) > 3);
    assert_int_equal(schedules, 3);

    /* Reopen writes what was logged before to the old file; close the rest. */
    char moved[64];
    snprintf(moved, sizeof moved, "%s.1", path);
    assert_int_equal(rename(path, moved), 0);
    assert_int_equal(sw_declog_reopen(d), SW_OK);
    assert_int_equal(file_lines(moved), 3 + n);
    assert_int_equal(sw_declog_write(d, "{\"x\":2}"), SW_OK);
    assert_int_equal(file_lines(path), 0);
    sw_declog_close(d);
    assert_int_equal(file_lines(path), 1);
    /* every line whole */
    FILE *f = fopen(moved, "r");
    char buf[2048];
    size_t whole = 0;
    while (fgets(buf, sizeof buf, f))
        whole += strcmp(buf, "{\"x\":1}\n") == 0 || (strlen(buf) == sizeof line && buf[0] == '"');
    fclose(f);
    assert_int_equal(whole, 3 + n);
    unlink(path);
    unlink(moved);

    /* A full disk: each batched line counted as lost at the flush. */
    d = sw_declog_open("/dev/full");
    sw_declog_batch(d, count_schedule, NULL);
    assert_int_equal(sw_declog_write(d, "{}"), SW_OK);
    assert_int_equal(sw_declog_write(d, "{}"), SW_OK);
    assert_int_equal(sw_declog_flush(d), SW_EIO);
    assert_int_equal(sw_declog_write_errors(d), 2);
    sw_declog_close(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_served_entry),  cmocka_unit_test(test_rejected_entry),
        cmocka_unit_test(test_strings_stay_valid), cmocka_unit_test(test_time),
        cmocka_unit_test(test_ring),          cmocka_unit_test(test_writer),
        cmocka_unit_test(test_batched_writer),
        cmocka_unit_test(test_api_and_contract),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
