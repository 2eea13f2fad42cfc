/* OpenAI chat <-> AWS Bedrock Converse (dialect/bedrock.c), table-driven:
 * requests, whole answers, stream events, the event-stream message as an
 * event's data, exception statuses. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "common/err.h"
#include "dialect/bedrock.h"

static json_t *J(const char *s)
{
    json_error_t e;
    json_t *j = json_loads(s, 0, &e);
    if (!j)
        fail_msg("bad JSON in test: %s: %s", e.text, s);
    return j;
}

static void same(const json_t *got, const char *want)
{
    json_t *w = J(want);
    if (!json_equal(got, w)) {
        char *g = json_dumps(got, JSON_COMPACT | JSON_SORT_KEYS);
        char *x = json_dumps(w, JSON_COMPACT | JSON_SORT_KEYS);
        fail_msg("got  %s\nwant %s", g, x);
    }
    json_decref(w);
}

static const struct {
    const char *in, *out;
} requests[] = {
    {"{\"model\":\"m\",\"messages\":[{\"role\":\"system\",\"content\":\"be brief\"},"
     "{\"role\":\"user\",\"content\":\"hi\"},{\"role\":\"user\",\"content\":[{\"type\":\"text\","
     "\"text\":\"there\"},{\"type\":\"text\",\"text\":\"\"}]}],\"max_completion_tokens\":9,"
     "\"temperature\":0.5,\"top_p\":0.9,\"stop\":\"END\",\"stream\":true,\"user\":\"u\"}",
     "{\"system\":[{\"text\":\"be brief\"}],\"messages\":[{\"role\":\"user\",\"content\":"
     "[{\"text\":\"hi\"},{\"text\":\"there\"}]}],\"inferenceConfig\":{\"maxTokens\":9,"
     "\"temperature\":0.5,\"topP\":0.9,\"stopSequences\":[\"END\"]}}"},
    {"{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"find\"},{\"role\":"
     "\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"call_1\",\"type\":\"function\","
     "\"function\":{\"name\":\"lookup\",\"arguments\":\"{\\\"q\\\":1}\"}}]},{\"role\":\"tool\","
     "\"tool_call_id\":\"call_1\",\"content\":\"42\"},{\"role\":\"user\",\"content\":\"and?\"}],"
     "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"lookup\",\"description\":\"d\","
     "\"parameters\":{\"type\":\"object\"}}}],\"tool_choice\":\"required\",\"max_tokens\":5}",
     "{\"messages\":[{\"role\":\"user\",\"content\":[{\"text\":\"find\"}]},{\"role\":\"assistant\","
     "\"content\":[{\"toolUse\":{\"toolUseId\":\"call_1\",\"name\":\"lookup\",\"input\":{\"q\":1}}}]},"
     "{\"role\":\"user\",\"content\":[{\"toolResult\":{\"toolUseId\":\"call_1\",\"content\":"
     "[{\"text\":\"42\"}]}},{\"text\":\"and?\"}]}],\"inferenceConfig\":{\"maxTokens\":5},"
     "\"toolConfig\":{\"tools\":[{\"toolSpec\":{\"name\":\"lookup\",\"description\":\"d\","
     "\"inputSchema\":{\"json\":{\"type\":\"object\"}}}}],\"toolChoice\":{\"any\":{}}}}"},
    {"{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\","
     "\"image_url\":{\"url\":\"data:image/jpeg;base64,AAAA\"}}]}],\"tools\":[{\"type\":"
     "\"function\",\"function\":{\"name\":\"f\"}}],\"tool_choice\":{\"type\":\"function\","
     "\"function\":{\"name\":\"f\"}},\"stop\":[\"a\",\"b\"]}",
     "{\"messages\":[{\"role\":\"user\",\"content\":[{\"image\":{\"format\":\"jpeg\",\"source\":"
     "{\"bytes\":\"AAAA\"}}}]}],\"inferenceConfig\":{\"stopSequences\":[\"a\",\"b\"]},"
     "\"toolConfig\":{\"tools\":[{\"toolSpec\":{\"name\":\"f\",\"inputSchema\":{\"json\":"
     "{\"type\":\"object\"}}}}],\"toolChoice\":{\"tool\":{\"name\":\"f\"}}}}"},
};

static void test_requests(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof requests / sizeof requests[0]; i++) {
        json_t *in = J(requests[i].in), *out = NULL;
        struct sw_request_error err = {0};
        assert_int_equal(sw_bedrock_req_from_openai(in, 100, &out, &err), SW_OK);
        same(out, requests[i].out);
        json_decref(out);
        json_decref(in);
    }
}

static const struct {
    const char *in, *param;
} refused[] = {
    {"{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"logprobs\":true}", "logprobs"},
    {"{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"n\":2}", "n"},
    {"{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"response_format\":{\"type\":\"json_object\"}}", "response_format"},
    {"{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\"}}],\"tool_choice\":\"none\"}", "tool_choice"},
    {"{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\",\"image_url\":{\"url\":\"https://x/a.png\"}}]}]}", "messages[0].content[0].image_url"},
    {"{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\",\"image_url\":{\"url\":\"data:image/bmp;base64,AA\"}}]}]}", "messages[0].content[0].image_url"},
    {"{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"input_audio\",\"input_audio\":{}}]}]}", "messages[0].content[0]"},
    {"{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"tools\":[{\"type\":\"custom\",\"custom\":{\"name\":\"f\"}}]}", "tools[0].type"},
    {"{\"model\":\"m\",\"messages\":[{\"role\":\"system\",\"content\":\"only a system prompt\"}]}", "messages"},
};

static void test_refusals(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        json_t *in = J(refused[i].in), *out = NULL;
        struct sw_request_error err = {0};
        assert_int_equal(sw_bedrock_req_from_openai(in, 100, &out, &err), SW_EINVAL);
        assert_null(out);
        assert_int_equal(err.status, 400);
        assert_string_equal(err.param, refused[i].param);
        json_decref(in);
    }
}

static void test_answers(void **state)
{
    (void)state;
    json_t *a = J("{\"output\":{\"message\":{\"role\":\"assistant\",\"content\":[{\"text\":\"he\"},"
                  "{\"text\":\"llo\"},{\"toolUse\":{\"toolUseId\":\"t1\",\"name\":\"f\",\"input\":"
                  "{\"a\":1}}}]}},\"stopReason\":\"tool_use\",\"usage\":{\"inputTokens\":7,"
                  "\"outputTokens\":3,\"totalTokens\":10}}");
    json_t *o = sw_bedrock_resp_to_openai(a, "pub", 5);
    same(o, "{\"id\":\"chatcmpl-bedrock-5\",\"object\":\"chat.completion\",\"created\":5,\"model\":"
            "\"pub\",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":"
            "\"hello\",\"refusal\":null,\"tool_calls\":[{\"id\":\"t1\",\"type\":\"function\","
            "\"function\":{\"name\":\"f\",\"arguments\":\"{\\\"a\\\":1}\"}}]},\"logprobs\":null,"
            "\"finish_reason\":\"tool_calls\"}],\"usage\":{\"prompt_tokens\":7,"
            "\"completion_tokens\":3,\"total_tokens\":10}}");
    json_decref(o);
    json_decref(a);
    json_t *bad = J("{\"message\":\"x\"}");
    assert_null(sw_bedrock_resp_to_openai(bad, "pub", 5));
    json_decref(bad);
    static const char *const stops[][2] = {{"end_turn", "stop"}, {"stop_sequence", "stop"},
        {"max_tokens", "length"}, {"model_context_window_exceeded", "length"},
        {"tool_use", "tool_calls"}, {"guardrail_intervened", "content_filter"},
        {"content_filtered", "content_filter"}, {"other", "stop"}};
    for (size_t i = 0; i < sizeof stops / sizeof stops[0]; i++)
        assert_string_equal(sw_bedrock_finish_reason(stops[i][0]), stops[i][1]);
}

static int ev(struct sw_bedrock_to_oai *s, const char *data, json_t *chunks)
{
    const char *msg = NULL;
    return sw_bedrock_to_oai_event(s, data, strlen(data), chunks, &msg);
}

static void test_stream(void **state)
{
    (void)state;
    struct sw_bedrock_to_oai s;
    sw_bedrock_to_oai_init(&s, "pub", 9);
    json_t *c = json_array();
    assert_int_equal(ev(&s, "{\"messageStart\":{\"role\":\"assistant\"}}", c), 0);
    assert_false(s.content);
    assert_int_equal(ev(&s, "{\"contentBlockDelta\":{\"contentBlockIndex\":0,\"delta\":{\"text\":\"hi\"}}}", c), 0);
    assert_true(s.content);
    assert_int_equal(ev(&s, "{\"contentBlockStop\":{\"contentBlockIndex\":0}}", c), 0);
    assert_int_equal(ev(&s, "{\"contentBlockStart\":{\"contentBlockIndex\":1,\"start\":{\"toolUse\":{\"toolUseId\":\"t\",\"name\":\"f\"}}}}", c), 0);
    assert_int_equal(ev(&s, "{\"contentBlockDelta\":{\"contentBlockIndex\":1,\"delta\":{\"toolUse\":{\"input\":\"{\\\"a\\\"\"}}}}", c), 0);
    assert_int_equal(ev(&s, "{\"contentBlockDelta\":{\"contentBlockIndex\":1,\"delta\":{\"reasoningContent\":{\"text\":\"hmm\"}}}}", c), 0);
    assert_int_equal(ev(&s, "{\"messageStop\":{\"stopReason\":\"tool_use\"}}", c), 0);
    assert_false(s.done);
    assert_int_equal(ev(&s, "{\"metadata\":{\"usage\":{\"inputTokens\":4,\"outputTokens\":2}}}", c), 0);
    assert_true(s.done);
    assert_int_equal(json_array_size(c), 6);
    same(json_object_get(json_array_get(json_object_get(json_array_get(c, 0), "choices"), 0), "delta"),
         "{\"role\":\"assistant\",\"content\":\"\"}");
    same(json_object_get(json_array_get(json_object_get(json_array_get(c, 2), "choices"), 0), "delta"),
         "{\"tool_calls\":[{\"index\":0,\"id\":\"t\",\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"\"}}]}");
    same(json_object_get(json_array_get(json_object_get(json_array_get(c, 3), "choices"), 0), "delta"),
         "{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"a\\\"\"}}]}");
    assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(
                            json_array_get(c, 4), "choices"), 0), "finish_reason")), "tool_calls");
    same(json_object_get(json_array_get(c, 5), "usage"),
         "{\"prompt_tokens\":4,\"completion_tokens\":2,\"total_tokens\":6}");
    json_decref(c);
    /* an exception, and events that are not valid */
    sw_bedrock_to_oai_init(&s, "pub", 9);
    c = json_array();
    assert_int_equal(ev(&s, "{\"throttlingException\":{\"message\":\"slow down\"}}", c), -1);
    assert_string_equal(s.error_type, "throttlingException");
    assert_int_equal(ev(&s, "not json", c), -1);
    assert_int_equal(ev(&s, "{\"a\":{},\"b\":{}}", c), -1);
    assert_int_equal(ev(&s, "{\"contentBlockDelta\":{\"contentBlockIndex\":3,\"delta\":{\"toolUse\":{\"input\":\"x\"}}}}", c), -1);
    assert_int_equal(ev(&s, "{\"contentBlockStart\":{\"contentBlockIndex\":99,\"start\":{\"toolUse\":{}}}}", c), -1);
    assert_int_equal(json_array_size(c), 0);
    json_decref(c);
}

static struct sw_evs_message msg(const char *mtype, const char *name, const char *payload)
{
    struct sw_evs_message m;
    memset(&m, 0, sizeof m);
    m.message_type = (struct sw_str){mtype, strlen(mtype)};
    if (!strcmp(mtype, "event"))
        m.event_type = (struct sw_str){name, strlen(name)};
    else if (!strcmp(mtype, "exception"))
        m.exception_type = (struct sw_str){name, strlen(name)};
    else {
        m.error_code = (struct sw_str){name, strlen(name)};
        m.error_message = (struct sw_str){"bad \"thing\"", 11};
    }
    m.payload = (struct sw_str){payload, strlen(payload)};
    return m;
}

static void test_frame_json(void **state)
{
    (void)state;
    static const struct {
        const char *mtype, *name, *payload, *want;
    } cases[] = {
        {"event", "messageStart", "{\"role\":\"assistant\"}", "{\"messageStart\":{\"role\":\"assistant\"}}"},
        {"event", "contentBlockStop", "", "{\"contentBlockStop\":{}}"},
        {"exception", "throttlingException", " {\"message\":\"m\"}", "{\"throttlingException\":{\"message\":\"m\"}}"},
        {"error", "InternalFailure", "", "{\"internalServerException\":{\"message\":\"InternalFailure: bad \\\"thing\\\"\"}}"},
        {"event", "x", "[1]", NULL},
        {"event", "sneakyException", "{}", NULL},
        {"weird", "x", "{}", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct sw_evs_message m = msg(cases[i].mtype, cases[i].name, cases[i].payload);
        struct sw_buf b;
        sw_buf_init(&b, 4096);
        int err = sw_bedrock_frame_json(&m, &b);
        if (!cases[i].want) {
            assert_int_equal(err, SW_EPROTO);
        } else {
            assert_int_equal(err, SW_OK);
            assert_string_equal(b.ptr, cases[i].want);
        }
        sw_buf_free(&b);
    }
}

static void test_exception_status(void **state)
{
    (void)state;
    assert_int_equal(sw_bedrock_exception_status("ThrottlingException"), 429);
    assert_int_equal(sw_bedrock_exception_status("throttlingException"), 429);
    assert_int_equal(sw_bedrock_exception_status("ModelNotReadyException"), 429);
    assert_int_equal(sw_bedrock_exception_status("serviceUnavailableException"), 503);
    assert_int_equal(sw_bedrock_exception_status("validationException"), 400);
    assert_int_equal(sw_bedrock_exception_status("modelStreamErrorException"), 500);
    assert_int_equal(sw_bedrock_exception_status("ModelErrorException"), 424);
    assert_int_equal(sw_bedrock_exception_status("nope"), 0);
    assert_int_equal(sw_bedrock_exception_status(NULL), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_requests),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_answers),
        cmocka_unit_test(test_stream),
        cmocka_unit_test(test_frame_json),
        cmocka_unit_test(test_exception_status),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
