/* sw_curlev_easy: the one curl easy handle for a request to a backend
 * (relay transfers, start-up check, health poll, load poll). */
#include <curl/curl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "config/config.h"
#include "upstream/curlev.h"

static void test_url_and_bounds(void **state)
{
    (void)state;
    struct sw_config_backend be = {.url = "http://127.0.0.1:9", .connect_timeout_ms = 2000,
                                   .tls_verify = true};
    CURL *e = sw_curlev_easy(&be, "/v1/models", 500);
    assert_non_null(e);
    curl_easy_cleanup(e);
    /* the URL has a named maximum: past it, no handle */
    static char longpath[9000];
    memset(longpath, 'a', sizeof longpath - 1);
    longpath[0] = '/';
    assert_null(sw_curlev_easy(&be, longpath, 500));
    /* a timeout of 0 is not "no limit" */
    e = sw_curlev_easy(&be, "/health", 0);
    assert_non_null(e);
    curl_easy_cleanup(e);
}

/* Only http and https: a backend URL of another scheme is refused by curl
 * before anything is read. */
static void test_protocols(void **state)
{
    (void)state;
    struct sw_config_backend be = {.url = "file:///etc", .connect_timeout_ms = 100,
                                   .tls_verify = true};
    CURL *e = sw_curlev_easy(&be, "/hostname", 500);
    assert_non_null(e);
    assert_int_equal(curl_easy_perform(e), CURLE_UNSUPPORTED_PROTOCOL);
    curl_easy_cleanup(e);
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_url_and_bounds),
        cmocka_unit_test(test_protocols),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    curl_global_cleanup();
    return rc;
}
