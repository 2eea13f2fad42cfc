/* The prefill warm-up's request body and what it reads from the answer
 * (upstream/prefillprobe.h). */
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "upstream/prefillprobe.h"

/* Chat (and Anthropic) bodies ask for one token, Responses for its minimum;
 * the prompt starts with the nonce and is several hundred tokens of text. */
static void test_body(void **state)
{
    (void)state;
    char *a = sw_prefill_probe_body(SW_DIALECT_OPENAI, "m\"x", 17);
    char *b = sw_prefill_probe_body(SW_DIALECT_OPENAI, "m\"x", 18);
    assert_non_null(a);
    assert_non_null(b);
    assert_string_not_equal(a, b);
    json_t *j = json_loads(a, 0, NULL);
    assert_non_null(j);
    assert_string_equal(json_string_value(json_object_get(j, "model")), "m\"x");
    assert_int_equal(json_integer_value(json_object_get(j, "max_tokens")), 1);
    const char *text = json_string_value(
        json_object_get(json_array_get(json_object_get(j, "messages"), 0), "content"));
    assert_non_null(text);
    assert_int_equal(strncmp(text, "Note 17. ", 9), 0);
    assert_true(strlen(text) > 1600 && strlen(text) < 8192);
    json_decref(j);
    free(a);
    free(b);
    char *r = sw_prefill_probe_body(SW_DIALECT_RESPONSES, "m", 1);
    j = json_loads(r, 0, NULL);
    assert_int_equal(json_integer_value(json_object_get(j, "max_output_tokens")), 16);
    assert_true(json_is_string(json_object_get(j, "input")));
    assert_true(json_is_false(json_object_get(j, "store")));
    json_decref(j);
    free(r);
    char *an = sw_prefill_probe_body(SW_DIALECT_ANTHROPIC, "m", 1);
    j = json_loads(an, 0, NULL);
    assert_int_equal(json_integer_value(json_object_get(j, "max_tokens")), 1);
    json_decref(j);
    free(an);
}

static void test_read(void **state)
{
    (void)state;
    struct sw_prefill_probe_answer a;
    static const char chat[] = "{\"usage\":{\"prompt_tokens\":540,\"completion_tokens\":1},"
                               "\"timings\":{\"prompt_n\":538,\"prompt_ms\":270.5}}";
    sw_prefill_probe_read(SW_DIALECT_OPENAI, chat, strlen(chat), &a);
    assert_int_equal(a.prompt_tokens, 540);
    assert_int_equal(a.output_tokens, 1);
    assert_int_equal(a.timed_tokens, 538);
    assert_true(a.timed_ms == 270.5);
    static const char resp[] = "{\"usage\":{\"input_tokens\":530,\"output_tokens\":16}}";
    sw_prefill_probe_read(SW_DIALECT_RESPONSES, resp, strlen(resp), &a);
    assert_int_equal(a.prompt_tokens, 530);
    assert_int_equal(a.output_tokens, 16);
    assert_int_equal(a.timed_tokens, -1);
    /* the wrong dialect's names, garbage, a cut answer, nothing: nothing said */
    sw_prefill_probe_read(SW_DIALECT_OPENAI, resp, strlen(resp), &a);
    assert_int_equal(a.prompt_tokens, -1);
    static const char bad[] = "{\"usage\":{\"prompt_tokens\":-3,\"completion_tokens\":\"1\"},"
                              "\"timings\":{\"prompt_n\":5,\"prompt_ms\":-1}}";
    sw_prefill_probe_read(SW_DIALECT_OPENAI, bad, strlen(bad), &a);
    assert_int_equal(a.prompt_tokens, -1);
    assert_int_equal(a.output_tokens, -1);
    assert_int_equal(a.timed_tokens, -1);
    sw_prefill_probe_read(SW_DIALECT_OPENAI, chat, 20, &a);
    assert_int_equal(a.prompt_tokens, -1);
    sw_prefill_probe_read(SW_DIALECT_OPENAI, NULL, 0, &a);
    assert_int_equal(a.prompt_tokens, -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_body),
        cmocka_unit_test(test_read),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
