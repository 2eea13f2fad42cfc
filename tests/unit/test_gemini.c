/* Google's generateContent <-> OpenAI chat (dialect/gemini.h) and the
 * gemini and vertex rows of the dialect table: paths, headers, the body's
 * configured additions, whole answers and stream events. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "common/buf.h"
#include "common/err.h"
#include "config/config.h"
#include "dialect/gemini.h"
#include "upstream/dialect.h"

static json_t *load(const char *s)
{
    json_t *o = json_loads(s, 0, NULL);
    assert_non_null(o);
    return o;
}

/* The Gemini body of an OpenAI request (text), compared with want (text). */
static void req_is(const char *oai, const char *want)
{
    json_t *in = load(oai), *w = load(want);
    struct sw_request_error err;
    memset(&err, 0, sizeof err);
    json_t *out = sw_gem_req_from_openai(in, 0, &err);
    if (!out)
        print_message("refused: %s (%s)\n", err.message, err.param);
    assert_non_null(out);
    if (!json_equal(out, w)) {
        char *s = json_dumps(out, JSON_SORT_KEYS);
        print_message("got  %s\n", s);
        free(s);
    }
    assert_true(json_equal(out, w));
    json_decref(in);
    json_decref(w);
    json_decref(out);
}

/* An OpenAI request Gemini cannot carry: the code and the field named. */
static void req_refused(const char *oai, const char *code, const char *param)
{
    json_t *in = load(oai);
    struct sw_request_error err;
    memset(&err, 0, sizeof err);
    assert_null(sw_gem_req_from_openai(in, 0, &err));
    assert_int_equal(err.status, 400);
    assert_string_equal(err.code, code);
    assert_string_equal(err.param, param);
    json_decref(in);
}

static void test_request(void **state)
{
    (void)state;
    req_is("{\"model\":\"m\",\"messages\":[{\"role\":\"system\",\"content\":\"a\"},"
           "{\"role\":\"developer\",\"content\":[{\"type\":\"text\",\"text\":\"b\"}]},"
           "{\"role\":\"user\",\"content\":\"hi\"},{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"there\"},"
           "{\"type\":\"image_url\",\"image_url\":{\"url\":\"data:image/png;base64,AAAA\"}}]}],"
           "\"max_completion_tokens\":9,\"temperature\":0.5,\"top_p\":0.9,\"stop\":\"x\",\"seed\":3}",
           "{\"systemInstruction\":{\"parts\":[{\"text\":\"a\\n\\nb\"}]},"
           "\"contents\":[{\"role\":\"user\",\"parts\":[{\"text\":\"hi\"},{\"text\":\"there\"},"
           "{\"inlineData\":{\"mimeType\":\"image/png\",\"data\":\"AAAA\"}}]}],"
           "\"generationConfig\":{\"maxOutputTokens\":9,\"temperature\":0.5,\"topP\":0.9,"
           "\"stopSequences\":[\"x\"],\"seed\":3}}");
    /* tools, a call and its result (named after the call), tool_choice */
    req_is("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"go\"},"
           "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"c1\",\"type\":\"function\","
           "\"function\":{\"name\":\"f\",\"arguments\":\"{\\\"q\\\":1}\"}}]},"
           "{\"role\":\"tool\",\"tool_call_id\":\"c1\",\"content\":\"plain\"}],"
           "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"description\":\"d\","
           "\"parameters\":{\"type\":\"object\",\"properties\":{\"q\":{\"type\":\"integer\"}},"
           "\"additionalProperties\":false,\"$schema\":\"x\"}}}],"
           "\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"f\"}}}",
           "{\"contents\":[{\"role\":\"user\",\"parts\":[{\"text\":\"go\"}]},"
           "{\"role\":\"model\",\"parts\":[{\"functionCall\":{\"name\":\"f\",\"args\":{\"q\":1},\"id\":\"c1\"}}]},"
           "{\"role\":\"user\",\"parts\":[{\"functionResponse\":{\"name\":\"f\",\"id\":\"c1\","
           "\"response\":{\"content\":\"plain\"}}}]}],\"generationConfig\":{},"
           "\"tools\":[{\"functionDeclarations\":[{\"name\":\"f\",\"description\":\"d\",\"parameters\":"
           "{\"type\":\"OBJECT\",\"properties\":{\"q\":{\"type\":\"INTEGER\"}}}}]}],"
           "\"toolConfig\":{\"functionCallingConfig\":{\"mode\":\"ANY\",\"allowedFunctionNames\":[\"f\"]}}}");
    /* the output contract */
    req_is("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"j\"}],\"response_format\":"
           "{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"n\",\"schema\":{\"type\":\"object\","
           "\"properties\":{\"a\":{\"type\":[\"string\",\"null\"],\"enum\":[\"x\"]},\"l\":{\"type\":\"array\","
           "\"items\":{\"type\":\"number\"}}}}}}}",
           "{\"contents\":[{\"role\":\"user\",\"parts\":[{\"text\":\"j\"}]}],\"generationConfig\":"
           "{\"responseMimeType\":\"application/json\",\"responseSchema\":{\"type\":\"OBJECT\",\"properties\":"
           "{\"a\":{\"type\":\"STRING\",\"nullable\":true,\"enum\":[\"x\"]},\"l\":{\"type\":\"ARRAY\","
           "\"items\":{\"type\":\"NUMBER\"}}}}}}");
    req_is("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"j\"}],\"tools\":[{\"type\":\"function\","
           "\"function\":{\"name\":\"f\"}}],\"tool_choice\":\"none\",\"response_format\":{\"type\":\"json_object\"}}",
           "{\"contents\":[{\"role\":\"user\",\"parts\":[{\"text\":\"j\"}]}],\"generationConfig\":"
           "{\"responseMimeType\":\"application/json\"},\"tools\":[{\"functionDeclarations\":[{\"name\":\"f\"}]}],"
           "\"toolConfig\":{\"functionCallingConfig\":{\"mode\":\"NONE\"}}}");
}

static void test_request_refused(void **state)
{
    (void)state;
    req_refused("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"logprobs\":true}",
                "untranslatable", "logprobs");
    req_refused("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"n\":2}",
                "untranslatable", "n");
    req_refused("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\","
                "\"image_url\":{\"url\":\"https://x/y.png\"}}]}]}",
                "untranslatable", "messages[0].content[0].image_url");
    req_refused("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"},{\"role\":\"tool\","
                "\"tool_call_id\":\"nope\",\"content\":\"r\"}]}",
                "invalid_value", "messages[1].tool_call_id");
    req_refused("{\"model\":\"m\",\"messages\":[{\"role\":\"assistant\",\"tool_calls\":[{\"id\":\"c\","
                "\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"[1]\"}}]}]}",
                "invalid_value", "messages[0].tool_calls[0].function.arguments");
    req_refused("{\"model\":\"m\",\"messages\":[{\"role\":\"system\",\"content\":\"only\"}]}",
                "invalid_value", "messages");
}

static json_t *answer(const char *gem)
{
    json_t *in = load(gem);
    json_t *o = sw_gem_resp_to_openai(in, "pub", 7);
    json_decref(in);
    assert_non_null(o);
    return o;
}

static const char *choice_s(json_t *o, const char *key)
{
    return json_string_value(json_object_get(json_array_get(json_object_get(o, "choices"), 0), key));
}

static void test_answer(void **state)
{
    (void)state;
    json_t *o = answer("{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"thinking\",\"thought\":true},"
                       "{\"text\":\"he\"},{\"text\":\"llo\"}],\"role\":\"model\"},\"finishReason\":\"STOP\"}],"
                       "\"usageMetadata\":{\"promptTokenCount\":4,\"candidatesTokenCount\":2,"
                       "\"thoughtsTokenCount\":3},\"responseId\":\"r1\"}");
    json_t *msg = json_object_get(json_array_get(json_object_get(o, "choices"), 0), "message");
    assert_string_equal(json_string_value(json_object_get(msg, "content")), "hello");
    assert_string_equal(choice_s(o, "finish_reason"), "stop");
    assert_string_equal(json_string_value(json_object_get(o, "id")), "chatcmpl-r1");
    assert_string_equal(json_string_value(json_object_get(o, "model")), "pub");
    json_t *u = json_object_get(o, "usage");
    assert_int_equal(json_integer_value(json_object_get(u, "prompt_tokens")), 4);
    assert_int_equal(json_integer_value(json_object_get(u, "completion_tokens")), 5);
    json_decref(o);

    o = answer("{\"candidates\":[{\"content\":{\"parts\":[{\"functionCall\":{\"name\":\"f\",\"args\":{\"a\":1}}},"
               "{\"functionCall\":{\"name\":\"g\",\"args\":{},\"id\":\"own\"}}]},\"finishReason\":\"STOP\"}]}");
    msg = json_object_get(json_array_get(json_object_get(o, "choices"), 0), "message");
    assert_true(json_is_null(json_object_get(msg, "content")));
    json_t *calls = json_object_get(msg, "tool_calls");
    assert_int_equal(json_array_size(calls), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(calls, 0), "id")), "call_0");
    assert_string_equal(json_string_value(json_object_get(json_array_get(calls, 1), "id")), "own");
    assert_string_equal(json_string_value(json_object_get(json_object_get(json_array_get(calls, 0), "function"),
                                                          "arguments")), "{\"a\":1}");
    assert_string_equal(choice_s(o, "finish_reason"), "tool_calls");
    json_decref(o);

    static const char *const filtered[] = {"SAFETY", "RECITATION", "PROHIBITED_CONTENT", "BLOCKLIST", "SPII"};
    for (size_t i = 0; i < 5; i++) {
        char b[160];
        snprintf(b, sizeof b, "{\"candidates\":[{\"finishReason\":\"%s\"}]}", filtered[i]);
        o = answer(b);
        assert_string_equal(choice_s(o, "finish_reason"), "content_filter");
        json_decref(o);
    }
    o = answer("{\"promptFeedback\":{\"blockReason\":\"SAFETY\"},\"usageMetadata\":{\"promptTokenCount\":3}}");
    assert_string_equal(choice_s(o, "finish_reason"), "content_filter");
    json_decref(o);
    o = answer("{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"x\"}]},\"finishReason\":\"MAX_TOKENS\"}]}");
    assert_string_equal(choice_s(o, "finish_reason"), "length");
    json_decref(o);
    json_t *not = load("{\"choices\":[]}");
    assert_null(sw_gem_resp_to_openai(not, "m", 1));
    json_decref(not);
}

static void test_stream(void **state)
{
    (void)state;
    struct sw_gem_to_oai s;
    sw_gem_to_oai_init(&s, "pub", 5);
    json_t *chunks = json_array();
    const char *msg = NULL;
    static const char c1[] = "{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"he\"}],\"role\":\"model\"}}],"
                             "\"usageMetadata\":{\"promptTokenCount\":4},\"responseId\":\"r9\"}";
    assert_int_equal(sw_gem_to_oai_event(&s, c1, sizeof c1 - 1, chunks, &msg), 0);
    assert_int_equal(json_array_size(chunks), 2); /* the role, the text */
    assert_string_equal(json_string_value(json_object_get(json_array_get(chunks, 0), "id")), "chatcmpl-r9");
    static const char c2[] = "{\"candidates\":[{\"content\":{\"parts\":[{\"functionCall\":{\"name\":\"f\","
                             "\"args\":{\"q\":\"v\"}}}]}}]}";
    assert_int_equal(sw_gem_to_oai_event(&s, c2, sizeof c2 - 1, chunks, &msg), 0);
    json_t *tc = json_array_get(json_object_get(json_object_get(json_array_get(json_object_get(
                 json_array_get(chunks, 2), "choices"), 0), "delta"), "tool_calls"), 0);
    assert_int_equal(json_integer_value(json_object_get(tc, "index")), 0);
    assert_false(s.done);
    static const char c3[] = "{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"\"}]},\"finishReason\":\"STOP\"}],"
                             "\"usageMetadata\":{\"promptTokenCount\":4,\"candidatesTokenCount\":6}}";
    assert_int_equal(sw_gem_to_oai_event(&s, c3, sizeof c3 - 1, chunks, &msg), 0);
    assert_true(s.done);
    size_t n = json_array_size(chunks);
    json_t *fin = json_array_get(json_object_get(json_array_get(chunks, n - 2), "choices"), 0);
    assert_string_equal(json_string_value(json_object_get(fin, "finish_reason")), "tool_calls");
    json_t *u = json_object_get(json_array_get(chunks, n - 1), "usage");
    assert_int_equal(json_integer_value(json_object_get(u, "prompt_tokens")), 4);
    assert_int_equal(json_integer_value(json_object_get(u, "completion_tokens")), 6);
    json_array_clear(chunks);

    sw_gem_to_oai_init(&s, "pub", 5);
    static const char e[] = "{\"error\":{\"code\":429,\"message\":\"slow\",\"status\":\"RESOURCE_EXHAUSTED\"}}";
    assert_int_equal(sw_gem_to_oai_event(&s, e, sizeof e - 1, chunks, &msg), -1);
    assert_string_equal(s.error_type, "RESOURCE_EXHAUSTED");
    assert_int_equal(sw_gem_to_oai_event(&s, "{nope", 5, chunks, &msg), -1);
    assert_int_equal(sw_gem_to_oai_event(&s, "{\"x\":1}", 7, chunks, &msg), -1);
    static const char blk[] = "{\"promptFeedback\":{\"blockReason\":\"PROHIBITED_CONTENT\"}}";
    assert_int_equal(sw_gem_to_oai_event(&s, blk, sizeof blk - 1, chunks, &msg), 0);
    assert_true(s.done);
    fin = json_array_get(json_object_get(json_array_get(chunks, json_array_size(chunks) - 2), "choices"), 0);
    assert_string_equal(json_string_value(json_object_get(fin, "finish_reason")), "content_filter");
    json_decref(chunks);
}

static struct sw_config *parse(const char *text)
{
    struct sw_config *cfg = NULL;
    struct sw_config_errors errs;
    memset(&errs, 0, sizeof errs);
    sw_config_parse("t.yaml", text, strlen(text), NULL, NULL, &cfg, &errs);
    for (size_t i = 0; i < errs.n; i++)
        print_message("%s\n", errs.msgs[i]);
    sw_config_errors_free(&errs);
    return cfg;
}

/* The config errors of one backend (its keys after "name: b, tier: cloud, "). */
static bool config_refused(const char *backend, const char *what)
{
    char text[1024];
    snprintf(text, sizeof text, "backends:\n  - { name: b, tier: cloud, %s }\nmodels:\n"
             "  - { name: chat, backends: [b] }\n", backend);
    struct sw_config *cfg = NULL;
    struct sw_config_errors errs;
    memset(&errs, 0, sizeof errs);
    sw_config_parse("t.yaml", text, strlen(text), NULL, NULL, &cfg, &errs);
    bool found = false;
    for (size_t i = 0; i < errs.n; i++)
        found |= strstr(errs.msgs[i], what) != NULL;
    sw_config_errors_free(&errs);
    if (cfg)
        sw_config_unref(cfg);
    return found;
}

static void test_dialect_rows(void **state)
{
    (void)state;
    struct sw_config *cfg = parse(
        "backends:\n"
        "  - { name: g, tier: cloud, url: \"https://generativelanguage.googleapis.com\", model: gemini-2.0-flash,"
        " dialect: gemini, api_key: K, gemini: { safety_threshold: BLOCK_NONE } }\n"
        "  - { name: v, tier: cloud, url: \"https://europe-west4-aiplatform.googleapis.com\", model: gemini-2.0-flash,"
        " dialect: gemini, vertex: { project: p1, location: europe-west4, token_command: \"echo t\" } }\n"
        "models:\n  - { name: chat, backends: [g, v] }\n");
    assert_non_null(cfg);
    const struct sw_config_backend *g = &cfg->backends[0], *v = &cfg->backends[1];
    assert_int_equal(g->dialect, SW_DIALECT_GEMINI);
    assert_int_equal(v->dialect, SW_DIALECT_VERTEX); /* gemini with a vertex section */
    const struct sw_upstream_dialect *d = sw_upstream_dialect(SW_DIALECT_GEMINI);
    struct sw_buf b;
    sw_buf_init(&b, 4096);
    assert_int_equal(sw_upstream_path(g, SW_DIALECT_GEMINI, d->chat_path, &b), SW_OK);
    assert_string_equal(b.ptr, "/v1beta/models/gemini-2.0-flash:generateContent");
    sw_buf_reset(&b);
    assert_int_equal(sw_upstream_path(g, SW_DIALECT_GEMINI, d->stream_path, &b), SW_OK);
    assert_string_equal(b.ptr, "/v1beta/models/gemini-2.0-flash:streamGenerateContent?alt=sse");
    sw_buf_reset(&b);
    assert_int_equal(sw_upstream_path(v, SW_DIALECT_VERTEX, d->chat_path, &b), SW_OK);
    assert_string_equal(b.ptr, "/v1/projects/p1/locations/europe-west4/publishers/google/models/"
                               "gemini-2.0-flash:generateContent");
    sw_buf_reset(&b);
    assert_int_equal(d->headers(g, NULL, &b), SW_OK);
    assert_string_equal(b.ptr, "x-goog-api-key: K\r\n");
    sw_buf_reset(&b);
    struct sw_upstream_client_hdrs ch = {{NULL, NULL}, "ya29.tok"};
    assert_int_equal(sw_upstream_dialect(SW_DIALECT_VERTEX)->headers(v, &ch, &b), SW_OK);
    assert_string_equal(b.ptr, "Authorization: Bearer ya29.tok\r\n");
    sw_buf_free(&b);
    json_t *body = json_object();
    assert_int_equal(d->request_config(g, body), SW_OK);
    json_t *ss = json_object_get(body, "safetySettings");
    assert_int_equal(json_array_size(ss), 4);
    assert_string_equal(json_string_value(json_object_get(json_array_get(ss, 0), "threshold")), "BLOCK_NONE");
    json_decref(body);
    sw_config_unref(cfg);

    cfg = parse("backends:\n  - { name: c, tier: cloud, url: \"https://us-east5-aiplatform.googleapis.com\","
                " model: \"claude-sonnet-4@20250514\", dialect: vertex_anthropic,"
                " vertex: { project: p1, location: us-east5, token_command: \"echo t\" } }\n"
                "models:\n  - { name: chat, backends: [c] }\n");
    assert_non_null(cfg);
    const struct sw_upstream_dialect *va = sw_upstream_dialect(SW_DIALECT_VERTEX_ANTHROPIC);
    sw_buf_init(&b, 4096);
    assert_int_equal(sw_upstream_path(&cfg->backends[0], SW_DIALECT_VERTEX_ANTHROPIC, va->stream_path, &b), SW_OK);
    assert_string_equal(b.ptr, "/v1/projects/p1/locations/us-east5/publishers/anthropic/models/"
                               "claude-sonnet-4@20250514:streamRawPredict");
    sw_buf_reset(&b);
    assert_int_equal(va->headers(&cfg->backends[0], &ch, &b), SW_OK);
    assert_string_equal(b.ptr, "Authorization: Bearer ya29.tok\r\n");
    sw_buf_free(&b);
    body = json_pack("{s:s, s:i}", "model", "claude", "max_tokens", 5);
    assert_int_equal(va->request_config(&cfg->backends[0], body), SW_OK);
    assert_null(json_object_get(body, "model"));
    assert_string_equal(json_string_value(json_object_get(body, "anthropic_version")), "vertex-2023-10-16");
    json_decref(body);
    sw_config_unref(cfg);

    assert_true(config_refused("url: \"https://x\", model: m, dialect: gemini", "needs api_key"));
    assert_true(config_refused("url: \"https://x\", model: m, dialect: vertex, vertex: { project: p }",
                               "vertex.project and vertex.location"));
    assert_true(config_refused("url: \"https://x\", model: m, dialect: vertex, vertex: { project: p, location: l }",
                               "credentials_file"));
    assert_true(config_refused("url: \"https://x/v1beta\", model: m, dialect: gemini, api_key: k", "API's root"));
    assert_true(config_refused("url: \"https://x\", model: \"a/b\", dialect: gemini, api_key: k", "may hold only"));
    assert_true(config_refused("url: \"https://x\", model: m, api_key: k, gemini: { api_version: v1 }",
                               "for dialect gemini or vertex only"));
    assert_true(config_refused("url: \"https://x\", model: m, dialect: azure, azure: { tenant_id: t, client_id: c }",
                               "together"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_request), cmocka_unit_test(test_request_refused),
        cmocka_unit_test(test_answer),  cmocka_unit_test(test_stream),
        cmocka_unit_test(test_dialect_rows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
