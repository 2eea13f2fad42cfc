/* The embeddings request parser: what it accepts, the facts it derives
 * (token estimate, token inputs), and a 400 naming the field for the rest. */
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "common/err.h"
#include "request/embed.h"

static void test_embed_good(void **state)
{
    (void)state;
    static const struct {
        const char *body;
        long tokens;
        bool token_inputs;
    } cases[] = {
        {"{\"model\":\"m\",\"input\":\"hello\"}", 2, false},
        {"{\"model\":\"m\",\"input\":[\"abcd\",\"abcde\"],\"dimensions\":8,\"encoding_format\":\"base64\"}", 3, false},
        {"{\"model\":\"m\",\"input\":[1,2,3],\"user\":\"u\",\"encoding_format\":null}", 3, true},
        {"{\"model\":\"m\",\"input\":[[1,2],[3]],\"extra\":{\"passed\":true}}", 3, true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        struct sw_chat_request r;
        struct sw_request_error e;
        if (sw_embed_parse(cases[i].body, strlen(cases[i].body), &r, &e) != SW_OK)
            fail_msg("case %zu: %s", i, e.message);
        assert_int_equal(r.api, SW_API_EMBEDDINGS);
        assert_string_equal(r.model, "m");
        assert_false(r.stream);
        assert_int_equal(r.prompt_tokens_est, cases[i].tokens);
        assert_int_equal(r.token_inputs, cases[i].token_inputs);
        sw_request_free(&r);
    }
}

/* metadata.allow_cloud keeps an embedding local as it keeps a chat. */
static void test_embed_allow_cloud(void **state)
{
    (void)state;
    static const struct {
        const char *metadata;
        int allow_cloud;
    } cases[] = {
        {"", -1},
        {",\"metadata\":null", -1},
        {",\"metadata\":{}", -1},
        {",\"metadata\":{\"allow_cloud\":false}", 0},
        {",\"metadata\":{\"allow_cloud\":\"off\"}", 0},
        {",\"metadata\":{\"team\":\"a\",\"allow_cloud\":\" No \"}", 0},
        {",\"metadata\":{\"allow_cloud\":true}", 1},
        {",\"metadata\":{\"allow_cloud\":\"1\"}", 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char body[160];
        snprintf(body, sizeof body, "{\"model\":\"m\",\"input\":\"x\"%s}", cases[i].metadata);
        struct sw_chat_request r;
        struct sw_request_error e;
        if (sw_embed_parse(body, strlen(body), &r, &e) != SW_OK)
            fail_msg("case %zu: %s", i, e.message);
        assert_int_equal(r.allow_cloud, cases[i].allow_cloud);
        sw_request_free(&r);
    }
}

static void test_embed_bad(void **state)
{
    (void)state;
    static const struct {
        const char *body, *code, *param;
    } cases[] = {
        {"{\"model\":\"m\",\"input\":\"\"}", "invalid_value", "input"},
        {"{\"model\":\"m\",\"input\":[]}", "invalid_value", "input"},
        {"{\"model\":\"m\",\"input\":[\"a\",\"\"]}", "invalid_value", "input[1]"},
        {"{\"model\":\"m\",\"input\":[\"a\",1]}", "invalid_type", "input[1]"},
        {"{\"model\":\"m\",\"input\":[1,\"a\"]}", "invalid_type", "input[1]"},
        {"{\"model\":\"m\",\"input\":[[1],[]]}", "invalid_value", "input[1]"},
        {"{\"model\":\"m\",\"input\":[[1],2]}", "invalid_type", "input[1]"},
        {"{\"model\":\"m\",\"input\":[2147483648]}", "invalid_type", "input[0]"},
        {"{\"model\":\"m\",\"input\":[[1],[2,-1]]}", "invalid_type", "input[1][1]"},
        {"{\"model\":\"m\",\"input\":[true]}", "invalid_type", "input[0]"},
        {"{\"model\":\"m\",\"input\":5}", "invalid_type", "input"},
        {"{\"model\":\"m\"}", "missing_required_parameter", "input"},
        {"{\"input\":\"x\"}", "missing_required_parameter", "model"},
        {"{\"model\":\"\",\"input\":\"x\"}", "invalid_type", "model"},
        {"{\"model\":\"m\",\"input\":\"x\",\"dimensions\":0}", "invalid_value", "dimensions"},
        {"{\"model\":\"m\",\"input\":\"x\",\"dimensions\":\"8\"}", "invalid_type", "dimensions"},
        {"{\"model\":\"m\",\"input\":\"x\",\"encoding_format\":\"int8\"}", "invalid_value", "encoding_format"},
        {"{\"model\":\"m\",\"input\":\"x\",\"user\":1}", "invalid_type", "user"},
        {"[]", "invalid_type", ""},
        {"{\"model\":\"m\",", "invalid_json", ""},
        {"{\"model\":\"m\",\"model\":\"n\",\"input\":\"x\"}", "invalid_json", ""},
        /* metadata as on chat: allow_cloud a flag (null refused), no near-miss names */
        {"{\"model\":\"m\",\"input\":\"x\",\"metadata\":{\"allow_cloud\":null}}", "invalid_type", "metadata.allow_cloud"},
        {"{\"model\":\"m\",\"input\":\"x\",\"metadata\":{\"allow_cloud\":\"nope\"}}", "invalid_value", "metadata.allow_cloud"},
        {"{\"model\":\"m\",\"input\":\"x\",\"metadata\":{\"allow_cloud\":0}}", "invalid_type", "metadata.allow_cloud"},
        {"{\"model\":\"m\",\"input\":\"x\",\"metadata\":{\"Allow_Cloud\":false}}", "invalid_value", "metadata.Allow_Cloud"},
        {"{\"model\":\"m\",\"input\":\"x\",\"metadata\":{\"allow-cloud\":\"false\"}}", "invalid_value", "metadata.allow-cloud"},
        {"{\"model\":\"m\",\"input\":\"x\",\"metadata\":{\"team\":3}}", "invalid_type", "metadata.team"},
        {"{\"model\":\"m\",\"input\":\"x\",\"metadata\":[]}", "invalid_type", "metadata"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        struct sw_chat_request r;
        struct sw_request_error e;
        assert_int_equal(sw_embed_parse(cases[i].body, strlen(cases[i].body), &r, &e), SW_EINVAL);
        assert_null(r.body);
        assert_int_equal(e.status, 400);
        if (strcmp(e.code, cases[i].code) || strcmp(e.param, cases[i].param))
            fail_msg("case %zu: %s %s: %s", i, e.code, e.param, e.message);
        char *json = sw_request_error_json(&e);
        assert_non_null(json);
        free(json);
    }
    /* More items than allowed. */
    json_t *in = json_array();
    for (int i = 0; i <= SW_EMBED_MAX_INPUTS; i++)
        json_array_append_new(in, json_string("x"));
    json_t *b = json_pack("{s:s, s:o}", "model", "m", "input", in);
    char *s = json_dumps(b, JSON_COMPACT);
    struct sw_chat_request r;
    struct sw_request_error e;
    assert_int_equal(sw_embed_parse(s, strlen(s), &r, &e), SW_EINVAL);
    assert_string_equal(e.param, "input");
    assert_non_null(strstr(e.message, "2048"));
    free(s);
    json_decref(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_embed_good),
        cmocka_unit_test(test_embed_bad),
        cmocka_unit_test(test_embed_allow_cloud),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
