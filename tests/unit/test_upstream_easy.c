/* sw_curlev_easy: the one curl easy handle for a request to a backend
 * (relay transfers, start-up check, health poll, load poll). */
#include <arpa/inet.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
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
}

/* A timeout of 0 is not "no limit": against a backend that accepts the
 * connection and never answers, the transfer ends with a timeout (the alarm
 * fails the test if it would wait forever). */
static void test_zero_timeout_bounds(void **state)
{
    (void)state;
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(ls >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    assert_int_equal(bind(ls, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(ls, 4), 0);
    assert_int_equal(getsockname(ls, (struct sockaddr *)&a, &al), 0);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", ntohs(a.sin_port));
    struct sw_config_backend be = {.url = url, .connect_timeout_ms = 2000, .tls_verify = true};
    CURL *e = sw_curlev_easy(&be, "/health", 0);
    assert_non_null(e);
    alarm(20);
    assert_int_equal(curl_easy_perform(e), CURLE_OPERATION_TIMEDOUT);
    alarm(0);
    curl_easy_cleanup(e);
    close(ls);
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
        cmocka_unit_test(test_zero_timeout_bounds),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    curl_global_cleanup();
    return rc;
}
