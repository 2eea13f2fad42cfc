/* Unit tests of the access log's formatter (src/obs/access.c): the JSON
 * line's fields, nulls, escaping and cut; Apache's combined format with its
 * date, '-' for none and unsafe bytes replaced; and the sink writing whole
 * lines to a file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/err.h"
#include "obs/access.h"

/* 2026-12-03T07:05:09.250Z */
#define T 1796281509250LL

static void test_json(void **state)
{
    (void)state;
    struct sw_buf b;
    sw_buf_init(&b, 1 << 16);
    struct sw_access_entry e = {T, "rid-1", "127.0.0.1", "POST", "/v1/chat/completions", 200,
                                120, 900, 12.34, "edge", "baseline", "app"};
    assert_int_equal(sw_access_format(&b, &e, SW_ACCESS_JSON), SW_OK);
    assert_int_equal(sw_buf_append(&b, "", 1), SW_OK);
    assert_string_equal(b.ptr,
                        "{\"time\":\"2026-12-03T07:05:09.250Z\",\"request_id\":\"rid-1\","
                        "\"client\":\"127.0.0.1\",\"method\":\"POST\",\"path\":\"/v1/chat/"
                        "completions\",\"status\":200,\"bytes_in\":120,\"bytes_out\":900,"
                        "\"duration_ms\":12.3,\"backend\":\"edge\",\"reason\":\"baseline\","
                        "\"key\":\"app\"}");
    sw_buf_reset(&b);
    struct sw_access_entry none = {T, NULL, "", "GET", "/a\"b\n", 404, 0, 10, -1, NULL, NULL,
                                   NULL};
    assert_int_equal(sw_access_format(&b, &none, SW_ACCESS_JSON), SW_OK);
    assert_int_equal(sw_buf_append(&b, "", 1), SW_OK);
    assert_non_null(strstr(b.ptr, "\"request_id\":null,\"client\":\"\""));
    assert_non_null(strstr(b.ptr, "\"path\":\"/a\\\"b\\u000a\""));
    assert_non_null(strstr(b.ptr, "\"duration_ms\":0.0,\"backend\":null,\"reason\":null,"
                                  "\"key\":null}"));
    /* A long path is cut. */
    char longp[2000];
    memset(longp, 'a', sizeof longp - 1);
    longp[sizeof longp - 1] = '\0';
    none.path = longp;
    sw_buf_reset(&b);
    assert_int_equal(sw_access_format(&b, &none, SW_ACCESS_JSON), SW_OK);
    assert_true(b.len > SW_ACCESS_MAX_FIELD && b.len < SW_ACCESS_MAX_FIELD + 300);
    sw_buf_free(&b);
}

static void test_combined(void **state)
{
    (void)state;
    struct sw_buf b;
    sw_buf_init(&b, 1 << 16);
    struct sw_access_entry e = {T, "rid-1", "::1", "POST", "/v1/messages", 200, 5, 900, 7.25,
                                "cloud", "overflow", "app"};
    assert_int_equal(sw_access_format(&b, &e, SW_ACCESS_COMBINED), SW_OK);
    assert_int_equal(sw_buf_append(&b, "", 1), SW_OK);
    assert_string_equal(b.ptr, "::1 - app [03/Dec/2026:07:05:09 +0000] \"POST /v1/messages "
                               "HTTP/1.1\" 200 900 \"-\" \"-\" rid=rid-1 in=5 dur_ms=7.2 "
                               "backend=cloud reason=overflow");
    sw_buf_reset(&b);
    struct sw_access_entry odd = {0, NULL, NULL, "GET", "/x y\"z\\", 401, 0, 0, 0, NULL, NULL,
                                  NULL};
    assert_int_equal(sw_access_format(&b, &odd, SW_ACCESS_COMBINED), SW_OK);
    assert_int_equal(sw_buf_append(&b, "", 1), SW_OK);
    assert_string_equal(b.ptr, "- - - [01/Jan/1970:00:00:00 +0000] \"GET /x?y?z? HTTP/1.1\" "
                               "401 0 \"-\" \"-\" rid=- in=0 dur_ms=0.0 backend=- reason=-");
    /* 2000-02-29 and 2024-12-31: the calendar. */
    sw_buf_reset(&b);
    odd.time_ms = 951782400000LL;
    assert_int_equal(sw_access_format(&b, &odd, SW_ACCESS_COMBINED), SW_OK);
    assert_int_equal(sw_buf_append(&b, "", 1), SW_OK);
    assert_non_null(strstr(b.ptr, "[29/Feb/2000:00:00:00 +0000]"));
    sw_buf_reset(&b);
    odd.time_ms = 1735689599000LL;
    assert_int_equal(sw_access_format(&b, &odd, SW_ACCESS_COMBINED), SW_OK);
    assert_int_equal(sw_buf_append(&b, "", 1), SW_OK);
    assert_non_null(strstr(b.ptr, "[31/Dec/2024:23:59:59 +0000]"));
    sw_buf_free(&b);
}

static void test_sink(void **state)
{
    (void)state;
    char path[] = "/tmp/sw-access-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    struct sw_access *a = sw_access_open(path, SW_ACCESS_JSON, NULL, NULL);
    assert_non_null(a);
    struct sw_access_entry e = {T, "r", "c", "GET", "/healthz", 200, 0, 10, 1, NULL, NULL, NULL};
    sw_access_write(a, &e);
    sw_access_write(a, &e);
    assert_int_equal(sw_access_lines(a), 2);
    sw_access_close(a);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[1024];
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        assert_non_null(strstr(line, "\"path\":\"/healthz\""));
        assert_true(line[strlen(line) - 1] == '\n');
        n++;
    }
    fclose(f);
    unlink(path);
    assert_int_equal(n, 2);
    assert_null(sw_access_open("/nonexistent-dir/x/access.log", SW_ACCESS_JSON, NULL, NULL));
    sw_access_write(NULL, &e);      /* off: nothing */
    sw_access_close(NULL);
}

/* A bounded label set: every path falls in one of five classes. */
static void test_path_class(void **state)
{
    (void)state;
    static const struct { const char *path, *cls; } cases[] = {
        {"/v1/models", "models"},        {"/v1/models/chat", "models"},
        {"/v1/modelsx", "api"},          {"/v1/chat/completions", "api"},
        {"/v1/v1/messages", "api"},      {"/v1", "api"},
        {"/v1x", "unknown"},             {"/admin", "admin"},
        {"/admin/state", "admin"},       {"/administrator", "unknown"},
        {"/healthz", "ops"},             {"/metrics", "ops"},
        {"/dashboard", "ops"},           {"/dashboard/app.js", "ops"},
        {"/metricsx", "unknown"},        {"/", "unknown"},
        {"", "unknown"},                 {"/chat/completions", "unknown"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        assert_string_equal(sw_access_path_class(cases[i].path), cases[i].cls);
    assert_string_equal(sw_access_path_class(NULL), "unknown");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json),
        cmocka_unit_test(test_combined),
        cmocka_unit_test(test_sink),
        cmocka_unit_test(test_path_class),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
