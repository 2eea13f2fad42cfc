/* llmsim's routing under --prefix and as Azure OpenAI (--azure-key). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "azure.h"
#include "opts.h"

static void test_prefix(void **state)
{
    (void)state;
    char out[SW_LLMSIM_PATH_MAX];
    assert_int_equal(sw_llmsim_prefix_route("/v1beta/openai", "/v1beta/openai/chat/completions",
                                            out, sizeof out), 0);
    assert_string_equal(out, "/v1/chat/completions");
    assert_int_equal(sw_llmsim_prefix_route("/v1beta/openai", "/v1beta/openai/models", out,
                                            sizeof out), 0);
    assert_string_equal(out, "/v1/models");
    /* the unprefixed API is not served: a join that dropped the path shows */
    assert_int_equal(sw_llmsim_prefix_route("/v1beta/openai", "/v1/chat/completions", out,
                                            sizeof out), -1);
    assert_int_equal(sw_llmsim_prefix_route("/v1beta/openai",
                                            "/v1beta/openai/v1/chat/completions", out, sizeof out), 0);
    assert_string_equal(out, "/v1/v1/chat/completions"); /* no route: 404 */
    /* llmsim's own paths stay */
    assert_int_equal(sw_llmsim_prefix_route("/p", "/admin/received", out, sizeof out), 0);
    assert_string_equal(out, "/admin/received");
    assert_int_equal(sw_llmsim_prefix_route("/p", "/pchat", out, sizeof out), 0);
    assert_string_equal(out, "/pchat");
}

static void test_azure_route(void **state)
{
    (void)state;
    char out[SW_LLMSIM_PATH_MAX];
    const char *code, *msg;
    assert_int_equal(sw_llmsim_azure_route("/openai/deployments/gpt/chat/completions",
                                           "api-version=2024-10-21", "gpt", out, sizeof out,
                                           &code, &msg), 0);
    assert_string_equal(out, "/v1/chat/completions");
    assert_int_equal(sw_llmsim_azure_route("/openai/deployments/gpt/embeddings",
                                           "x=1&api-version=2024-10-21", "gpt", out, sizeof out,
                                           &code, &msg), 0);
    assert_string_equal(out, "/v1/embeddings");
    assert_int_equal(sw_llmsim_azure_route("/openai/v1/chat/completions", NULL, "gpt", out,
                                           sizeof out, &code, &msg), 0);
    assert_string_equal(out, "/v1/chat/completions");
    assert_int_equal(sw_llmsim_azure_route("/openai/models", "api-version=1", "gpt", out,
                                           sizeof out, &code, &msg), 0);
    assert_string_equal(out, "/v1/models");
    /* no api-version: 400; another deployment: 404 DeploymentNotFound */
    assert_int_equal(sw_llmsim_azure_route("/openai/deployments/gpt/chat/completions", "",
                                           "gpt", out, sizeof out, &code, &msg), 400);
    assert_string_equal(msg, "Missing API version");
    assert_int_equal(sw_llmsim_azure_route("/openai/deployments/gpt/chat/completions",
                                           "api-version=", "gpt", out, sizeof out, &code, &msg),
                     400);
    assert_int_equal(sw_llmsim_azure_route("/openai/deployments/other/chat/completions",
                                           "api-version=1", "gpt", out, sizeof out, &code, &msg),
                     404);
    assert_string_equal(code, "DeploymentNotFound");
    assert_int_equal(sw_llmsim_azure_route("/openai/deployments/gptx/chat/completions",
                                           "api-version=1", "gpt", out, sizeof out, &code, &msg),
                     404);
    /* OpenAI's own paths are not Azure's */
    assert_int_equal(sw_llmsim_azure_route("/v1/chat/completions", NULL, "gpt", out, sizeof out,
                                           &code, &msg), 404);
    assert_int_equal(sw_llmsim_azure_route("/health", NULL, "gpt", out, sizeof out, &code, &msg),
                     0);
    assert_string_equal(out, "/health");
}

static void test_azure_auth_and_errors(void **state)
{
    (void)state;
    assert_true(sw_llmsim_azure_auth_ok("k", NULL, "k"));
    assert_false(sw_llmsim_azure_auth_ok("x", "Bearer k", "k")); /* a wrong api-key wins */
    assert_true(sw_llmsim_azure_auth_ok(NULL, "Bearer k", "k"));
    assert_false(sw_llmsim_azure_auth_ok(NULL, "Bearer kk", "k"));
    assert_false(sw_llmsim_azure_auth_ok(NULL, NULL, "k"));
    char *e = sw_llmsim_azure_error(400, "content_filter", "filtered");
    assert_non_null(e);
    assert_non_null(strstr(e, "\"code\":\"content_filter\""));
    assert_non_null(strstr(e, "\"innererror\":{\"code\":\"ResponsibleAIPolicyViolation\""));
    free(e);
    e = sw_llmsim_azure_error(401, "401", "Access denied");
    assert_string_equal(e, "{\"error\":{\"code\":\"401\",\"message\":\"Access denied\"}}");
    free(e);
}

static void test_opts(void **state)
{
    (void)state;
    struct sw_llmsim_opts o;
    char err[200];
    char *ok[] = {"llmsim", "--prefix", "/v1beta/openai", "--azure-key", "k",
                  "--azure-deployment", "d", NULL};
    assert_int_equal(sw_llmsim_opts_parse(7, ok, &o, err, sizeof err), SW_LLMSIM_OPTS_RUN);
    assert_string_equal(o.prefix, "/v1beta/openai");
    assert_string_equal(o.azure_key, "k");
    assert_string_equal(o.azure_deployment, "d");
    char *bad1[] = {"llmsim", "--prefix", "v1", NULL};
    assert_int_equal(sw_llmsim_opts_parse(3, bad1, &o, err, sizeof err), SW_LLMSIM_OPTS_ERROR);
    char *bad2[] = {"llmsim", "--prefix", "/p/", NULL};
    assert_int_equal(sw_llmsim_opts_parse(3, bad2, &o, err, sizeof err), SW_LLMSIM_OPTS_ERROR);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_prefix),
        cmocka_unit_test(test_azure_route),
        cmocka_unit_test(test_azure_auth_and_errors),
        cmocka_unit_test(test_opts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
