/* The start-up check's verdict: what an operator is told about a backend
 * from the outcome of GET {url}/v1/models. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <curl/curl.h>
#include <string.h>

#include "upstream/startcheck.h"

static struct sw_config_backend be(enum sw_tier tier, char *url, char *model)
{
    return (struct sw_config_backend){.name = "b", .tier = tier, .url = url, .model = model};
}

static size_t len_of(const char *s)
{
    return s ? strlen(s) : 0;
}

#define VERDICT(b, rc, err, status, body)                                                  \
    sw_startcheck_verdict(&(b), (rc), (err), (status), (body), len_of(body), out, sizeof out)

static void test_verdicts(void **state)
{
    (void)state;
    char out[240];
    struct sw_config_backend local = be(SW_TIER_LOCAL, "http://127.0.0.1:8081", "llama");
    struct sw_config_backend cloud = be(SW_TIER_CLOUD, "https://gw.example/openai", "gpt-x");

    /* Listed: passes (""). */
    VERDICT(local, CURLE_OK, "", 200, "{\"object\":\"list\",\"data\":[{\"id\":\"llama\"}]}");
    assert_string_equal(out, "");
    /* Not an OpenAI list: nothing to compare with, passes. */
    VERDICT(local, CURLE_OK, "", 200, "ok");
    assert_string_equal(out, "");
    /* Unlisted: names the model and what is listed; a local gets the llama.cpp caveat. */
    VERDICT(local, CURLE_OK, "", 200, "{\"data\":[{\"id\":\"a\"},{\"id\":\"b\"}]}");
    assert_non_null(strstr(out, "model \"llama\" is not among the 2 model(s) GET /v1/models lists (a, b)"));
    assert_non_null(strstr(out, "llama.cpp"));
    VERDICT(cloud, CURLE_OK, "", 200, "{\"data\":[{\"id\":\"a\"}]}");
    assert_null(strstr(out, "llama.cpp"));
    /* Transport error: curl's message, the path with the url's prefix. */
    VERDICT(cloud, CURLE_COULDNT_CONNECT, "Failed to connect to gw.example port 443", 0, NULL);
    assert_string_equal(out, "GET /openai/v1/models: Failed to connect to gw.example port 443"
                             "; is the server running and listening at this backend's url?");
    VERDICT(local, CURLE_COULDNT_CONNECT, "", 0, NULL);
    assert_string_equal(out, "GET /v1/models: Couldn't connect to server"
                             "; is the server running and listening at this backend's url?");
    /* Error answers: status, the error's message, what to check. */
    VERDICT(cloud, CURLE_OK, "", 401, "{\"error\":{\"message\":\"Incorrect API key\"}}");
    assert_string_equal(out, "401 from GET /openai/v1/models: Incorrect API key; check the backend's api_key");
    VERDICT(local, CURLE_OK, "", 404, "Not\nFound");
    assert_non_null(strstr(out, "404 from GET /v1/models: Not Found; url must be the server's root"));
    VERDICT(local, CURLE_OK, "", 500, "");
    assert_string_equal(out, "500 from GET /v1/models: (no message)");
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_verdicts)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
