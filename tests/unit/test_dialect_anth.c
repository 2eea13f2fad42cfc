/* Unit tests of the Anthropic <-> OpenAI translation (src/dialect/): table
 * driven, each case an input JSON and the exact JSON expected (or the
 * error's param and code). Streams are fed event by event and the whole
 * output compared. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/buf.h"
#include "common/err.h"
#include "common/jmemo.h"
#include "dialect/anth_native.h"
#include "dialect/anth_req.h"
#include "dialect/anth_resp.h"
#include "pii/pii.h"
#include "upstream/dialect.h"
#include "text_whole.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

static json_t *load(const char *s)
{
    json_error_t e;
    json_t *j = json_loads(s, 0, &e);
    if (!j)
        fail_msg("bad test JSON (%s): %s", e.text, s);
    return j;
}

static void assert_json_eq(const json_t *got, const char *want, const char *name)
{
    json_t *w = load(want);
    if (!json_equal(got, w)) {
        char *g = json_dumps(got, JSON_COMPACT | JSON_SORT_KEYS);
        char *ws = json_dumps(w, JSON_COMPACT | JSON_SORT_KEYS);
        print_error("case %s:\n  got:  %s\n  want: %s\n", name, g, ws);
        free(g);
        free(ws);
        json_decref(w);
        fail();
    }
    json_decref(w);
}

/* ---- Requests ---- */

struct req_case {
    const char *name;
    const char *in;
    const char *out;        /* NULL: an error is expected */
    const char *param;      /* the error's param */
    const char *code;
};

static const struct req_case to_openai[] = {
    {"system string, stop, sampling", 
     "{\"model\":\"m\",\"max_tokens\":9,\"system\":\"be brief\",\"stop_sequences\":[\"X\"],\"temperature\":0.2,\"top_p\":0.9,\"stream\":true,"
     "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}",
     "{\"model\":\"m\",\"max_tokens\":9,\"stop\":[\"X\"],\"temperature\":0.2,\"top_p\":0.9,\"stream\":true,"
     "\"messages\":[{\"role\":\"system\",\"content\":\"be brief\"},{\"role\":\"user\",\"content\":\"hi\"}]}", NULL, NULL},
    {"system blocks joined", 
     "{\"model\":\"m\",\"max_tokens\":1,\"system\":[{\"type\":\"text\",\"text\":\"a\",\"cache_control\":{\"type\":\"ephemeral\"}},{\"type\":\"text\",\"text\":\"b\"}],"
     "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}",
     "{\"model\":\"m\",\"max_tokens\":1,\"messages\":[{\"role\":\"system\",\"content\":\"a\\nb\"},{\"role\":\"user\",\"content\":\"hi\"}]}", NULL, NULL},
    {"images base64 and url", 
     "{\"model\":\"m\",\"max_tokens\":1,\"messages\":[{\"role\":\"user\",\"content\":["
     "{\"type\":\"image\",\"source\":{\"type\":\"base64\",\"media_type\":\"image/png\",\"data\":\"QUJD\"}},"
     "{\"type\":\"image\",\"source\":{\"type\":\"url\",\"url\":\"https://x/y.png\"}},{\"type\":\"text\",\"text\":\"what?\"}]}]}",
     "{\"model\":\"m\",\"max_tokens\":1,\"messages\":[{\"role\":\"user\",\"content\":["
     "{\"type\":\"image_url\",\"image_url\":{\"url\":\"data:image/png;base64,QUJD\"}},"
     "{\"type\":\"image_url\",\"image_url\":{\"url\":\"https://x/y.png\"}},{\"type\":\"text\",\"text\":\"what?\"}]}]}", NULL, NULL},
    {"tool_use and tool_result (is_error)", 
     "{\"model\":\"m\",\"max_tokens\":1,\"messages\":[{\"role\":\"user\",\"content\":\"go\"},"
     "{\"role\":\"assistant\",\"content\":[{\"type\":\"tool_use\",\"id\":\"t1\",\"name\":\"f\",\"input\":{\"a\":1}},{\"type\":\"tool_use\",\"id\":\"t2\",\"name\":\"g\",\"input\":{}}]},"
     "{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"t1\",\"content\":[{\"type\":\"text\",\"text\":\"ok\"}]},"
     "{\"type\":\"tool_result\",\"tool_use_id\":\"t2\",\"content\":\"boom\",\"is_error\":true}]}]}",
     "{\"model\":\"m\",\"max_tokens\":1,\"messages\":[{\"role\":\"user\",\"content\":\"go\"},"
     "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"t1\",\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"{\\\"a\\\":1}\"}},"
     "{\"id\":\"t2\",\"type\":\"function\",\"function\":{\"name\":\"g\",\"arguments\":\"{}\"}}]},"
     "{\"role\":\"tool\",\"tool_call_id\":\"t1\",\"content\":\"ok\"},{\"role\":\"tool\",\"tool_call_id\":\"t2\",\"content\":\"Error: boom\"}]}", NULL, NULL},
    {"tools, tool_choice tool, no parallel, metadata", 
     "{\"model\":\"m\",\"max_tokens\":1,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
     "\"tools\":[{\"name\":\"f\",\"description\":\"d\",\"input_schema\":{\"type\":\"object\"}}],"
     "\"tool_choice\":{\"type\":\"tool\",\"name\":\"f\",\"disable_parallel_tool_use\":true},"
     "\"metadata\":{\"user_id\":\"u\",\"allow_cloud\":false}}",
     "{\"model\":\"m\",\"max_tokens\":1,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
     "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"description\":\"d\",\"parameters\":{\"type\":\"object\"}}}],"
     "\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"f\"}},\"parallel_tool_calls\":false,"
     "\"user\":\"u\",\"metadata\":{\"allow_cloud\":false}}", NULL, NULL},
    {"tool_choice any", "{\"model\":\"m\",\"max_tokens\":1,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"tool_choice\":{\"type\":\"any\"}}",
     "{\"model\":\"m\",\"max_tokens\":1,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"tool_choice\":\"required\"}", NULL, NULL},
    {"thinking disabled accepted", "{\"model\":\"m\",\"max_tokens\":1,\"thinking\":{\"type\":\"disabled\"},\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}",
     "{\"model\":\"m\",\"max_tokens\":1,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", NULL, NULL},
    {"system messages inside messages stay in place",
     "{\"model\":\"m\",\"max_tokens\":1,\"system\":\"top\",\"messages\":[{\"role\":\"system\",\"content\":\"lead\"},{\"role\":\"user\",\"content\":\"x\"},"
     "{\"role\":\"system\",\"content\":[{\"type\":\"text\",\"text\":\"a\"},{\"type\":\"text\",\"text\":\"b\",\"cache_control\":{\"type\":\"ephemeral\"}}]},{\"role\":\"user\",\"content\":\"y\"}]}",
     "{\"model\":\"m\",\"max_tokens\":1,\"messages\":[{\"role\":\"system\",\"content\":\"top\"},{\"role\":\"system\",\"content\":\"lead\"},{\"role\":\"user\",\"content\":\"x\"},"
     "{\"role\":\"system\",\"content\":\"a\\nb\"},{\"role\":\"user\",\"content\":\"y\"}]}", NULL, NULL},
    {"thinking enabled, small budget: reasoning_effort low",
     "{\"model\":\"m\",\"max_tokens\":1,\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":1024},\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}",
     "{\"model\":\"m\",\"max_tokens\":1,\"reasoning_effort\":\"low\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", NULL, NULL},
    {"thinking enabled, medium budget",
     "{\"model\":\"m\",\"max_tokens\":1,\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":8000},\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}",
     "{\"model\":\"m\",\"max_tokens\":1,\"reasoning_effort\":\"medium\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", NULL, NULL},
    {"thinking enabled, large budget",
     "{\"model\":\"m\",\"max_tokens\":1,\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":16384},\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}",
     "{\"model\":\"m\",\"max_tokens\":1,\"reasoning_effort\":\"high\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", NULL, NULL},
    {"thinking adaptive, output_config.effort wins",
     "{\"model\":\"m\",\"max_tokens\":1,\"thinking\":{\"type\":\"adaptive\"},\"output_config\":{\"effort\":\"low\"},\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}",
     "{\"model\":\"m\",\"max_tokens\":1,\"reasoning_effort\":\"low\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", NULL, NULL},
    {"thinking adaptive alone: medium",
     "{\"model\":\"m\",\"max_tokens\":1,\"thinking\":{\"type\":\"adaptive\"},\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}",
     "{\"model\":\"m\",\"max_tokens\":1,\"reasoning_effort\":\"medium\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", NULL, NULL},
    {"output_config.effort max as high",
     "{\"model\":\"m\",\"max_tokens\":1,\"output_config\":{\"effort\":\"max\"},\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}",
     "{\"model\":\"m\",\"max_tokens\":1,\"reasoning_effort\":\"high\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", NULL, NULL},
    {"output_config.format json_schema as response_format",
     "{\"model\":\"m\",\"max_tokens\":1,\"output_config\":{\"format\":{\"type\":\"json_schema\",\"schema\":{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}}}}},\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}",
     "{\"model\":\"m\",\"max_tokens\":1,\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"output\",\"schema\":{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}}}}},\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", NULL, NULL},
    /* errors */
    {"missing max_tokens", "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", NULL, "max_tokens", "invalid_value"},
    {"max_tokens 0", "{\"model\":\"m\",\"max_tokens\":0,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", NULL, "max_tokens", "invalid_value"},
    {"system message with an image", "{\"model\":\"m\",\"max_tokens\":1,\"messages\":[{\"role\":\"system\",\"content\":[{\"type\":\"image\"}]}]}", NULL, "messages[0].content[0]", "invalid_value"},
    {"developer role", "{\"model\":\"m\",\"max_tokens\":1,\"messages\":[{\"role\":\"developer\",\"content\":\"x\"}]}", NULL, "messages[0].role", "invalid_value"},
    {"thinking of no type", "{\"model\":\"m\",\"max_tokens\":1,\"thinking\":{\"type\":\"sometimes\"},\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", NULL, "thinking.type", "invalid_value"},
    {"thinking without a budget", "{\"model\":\"m\",\"max_tokens\":1,\"thinking\":{\"type\":\"enabled\"},\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", NULL, "thinking.budget_tokens", "invalid_value"},
    {"output_config.effort unknown", "{\"model\":\"m\",\"max_tokens\":1,\"output_config\":{\"effort\":\"huge\"},\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", NULL, "output_config.effort", "invalid_value"},
    {"output_config.format of another type", "{\"model\":\"m\",\"max_tokens\":1,\"output_config\":{\"format\":{\"type\":\"grammar\"}},\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", NULL, "output_config.format.type", "untranslatable"},
    {"output_config.format without a schema", "{\"model\":\"m\",\"max_tokens\":1,\"output_config\":{\"format\":{\"type\":\"json_schema\"}},\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", NULL, "output_config.format.schema", "invalid_value"},
    {"output_config other key", "{\"model\":\"m\",\"max_tokens\":1,\"output_config\":{\"task_budget\":3},\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", NULL, "output_config.task_budget", "untranslatable"},
    {"context_management", "{\"model\":\"m\",\"max_tokens\":1,\"context_management\":{\"edits\":[]},\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", NULL, "context_management", "untranslatable"},
    {"thinking block in history", "{\"model\":\"m\",\"max_tokens\":1,\"messages\":[{\"role\":\"user\",\"content\":\"x\"},{\"role\":\"assistant\",\"content\":[{\"type\":\"thinking\",\"thinking\":\"t\",\"signature\":\"s\"}]}]}", NULL, "messages[1].content[0].type", "untranslatable"},
    {"empty messages", "{\"model\":\"m\",\"max_tokens\":1,\"messages\":[]}", NULL, "messages", "invalid_value"},
    {"temperature above 1", "{\"model\":\"m\",\"max_tokens\":1,\"temperature\":1.5,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", NULL, "temperature", "invalid_value"},
    {"document block", "{\"model\":\"m\",\"max_tokens\":1,\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"document\"}]}]}", NULL, "messages[0].content[0].type", "untranslatable"},
    {"server tool", "{\"model\":\"m\",\"max_tokens\":1,\"tools\":[{\"type\":\"web_search_20250305\",\"name\":\"w\"}],\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", NULL, "tools[0].type", "untranslatable"},
    {"unknown field", "{\"model\":\"m\",\"max_tokens\":1,\"top_k\":5,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", NULL, "top_k", "untranslatable"},
    {"image in tool_result", "{\"model\":\"m\",\"max_tokens\":1,\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"t\",\"content\":[{\"type\":\"image\"}]}]}]}", NULL, "messages[0].content[0].content[0]", "untranslatable"},
    {"tool_use input not an object", "{\"model\":\"m\",\"max_tokens\":1,\"messages\":[{\"role\":\"assistant\",\"content\":[{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"f\",\"input\":[]}]}]}", NULL, "messages[0].content[0]", "invalid_value"},
};

static const struct req_case from_openai[] = {
    {"system and developer to top-level, default max_tokens, stop string", 
     "{\"model\":\"m\",\"stop\":\"END\",\"user\":\"u\",\"stream\":true,\"stream_options\":{\"include_usage\":true},\"messages\":[{\"role\":\"system\",\"content\":\"a\"},{\"role\":\"developer\",\"content\":[{\"type\":\"text\",\"text\":\"b\"}]},{\"role\":\"user\",\"content\":\"hi\"}]}",
     "{\"model\":\"m\",\"max_tokens\":77,\"system\":\"a\\n\\nb\",\"stop_sequences\":[\"END\"],\"stream\":true,\"metadata\":{\"user_id\":\"u\"},"
     "\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"hi\"}]}]}", NULL, NULL},
    {"max_completion_tokens wins, images", 
     "{\"model\":\"m\",\"max_tokens\":5,\"max_completion_tokens\":6,\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\",\"image_url\":{\"url\":\"data:image/jpeg;base64,QQ==\"}},{\"type\":\"image_url\",\"image_url\":{\"url\":\"https://x/i.png\"}}]}]}",
     "{\"model\":\"m\",\"max_tokens\":6,\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image\",\"source\":{\"type\":\"base64\",\"media_type\":\"image/jpeg\",\"data\":\"QQ==\"}},"
     "{\"type\":\"image\",\"source\":{\"type\":\"url\",\"url\":\"https://x/i.png\"}}]}]}", NULL, NULL},
    {"tool calls and consecutive tool results merged", 
     "{\"model\":\"m\",\"max_tokens\":1,\"parallel_tool_calls\":false,\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"f\"}},"
     "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"description\":\"d\",\"parameters\":{\"type\":\"object\"}}},{\"type\":\"function\",\"function\":{\"name\":\"g\"}}],"
     "\"messages\":[{\"role\":\"user\",\"content\":\"go\"},{\"role\":\"assistant\",\"content\":\"ok\",\"tool_calls\":[{\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"{\\\"a\\\":1}\"}},"
     "{\"id\":\"c2\",\"type\":\"function\",\"function\":{\"name\":\"g\",\"arguments\":\"{}\"}}]},"
     "{\"role\":\"tool\",\"tool_call_id\":\"c1\",\"content\":\"r1\"},{\"role\":\"tool\",\"tool_call_id\":\"c2\",\"content\":\"r2\"},{\"role\":\"user\",\"content\":\"next\"}]}",
     "{\"model\":\"m\",\"max_tokens\":1,\"tool_choice\":{\"type\":\"tool\",\"name\":\"f\",\"disable_parallel_tool_use\":true},"
     "\"tools\":[{\"name\":\"f\",\"description\":\"d\",\"input_schema\":{\"type\":\"object\"}},{\"name\":\"g\",\"input_schema\":{\"type\":\"object\"}}],"
     "\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"go\"}]},"
     "{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"ok\"},{\"type\":\"tool_use\",\"id\":\"c1\",\"name\":\"f\",\"input\":{\"a\":1}},{\"type\":\"tool_use\",\"id\":\"c2\",\"name\":\"g\",\"input\":{}}]},"
     "{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"c1\",\"content\":\"r1\"},{\"type\":\"tool_result\",\"tool_use_id\":\"c2\",\"content\":\"r2\"},{\"type\":\"text\",\"text\":\"next\"}]}]}", NULL, NULL},
    {"a tool result after user text starts its own user message",
     "{\"model\":\"m\",\"max_tokens\":1,\"messages\":[{\"role\":\"user\",\"content\":\"a\"},{\"role\":\"tool\",\"tool_call_id\":\"c\",\"content\":\"r\"}]}",
     "{\"model\":\"m\",\"max_tokens\":1,\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"a\"}]},"
     "{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"c\",\"content\":\"r\"}]}]}", NULL, NULL},
    {"response_format json_object as a forced tool of any object",
     "{\"model\":\"m\",\"max_tokens\":1,\"response_format\":{\"type\":\"json_object\"},\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}",
     "{\"model\":\"m\",\"max_tokens\":1,\"tools\":[{\"name\":\"json_answer\",\"description\":\"Answer with this tool's input.\",\"input_schema\":{\"type\":\"object\"}}],"
     "\"tool_choice\":{\"type\":\"tool\",\"name\":\"json_answer\"},\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"x\"}]}]}", NULL, NULL},
    {"response_format text: nothing to ask",
     "{\"model\":\"m\",\"max_tokens\":1,\"response_format\":{\"type\":\"text\"},\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}",
     "{\"model\":\"m\",\"max_tokens\":1,\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"x\"}]}]}", NULL, NULL},
    {"tool_choice none", "{\"model\":\"m\",\"max_tokens\":1,\"tool_choice\":\"none\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}",
     "{\"model\":\"m\",\"max_tokens\":1,\"tool_choice\":{\"type\":\"none\"},\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"x\"}]}]}", NULL, NULL},
    /* errors */
    {"seed", "{\"model\":\"m\",\"seed\":1,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", NULL, "seed", "untranslatable"},
    {"reasoning_effort", "{\"model\":\"m\",\"reasoning_effort\":\"low\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", NULL, "reasoning_effort", "untranslatable"},
    {"metadata", "{\"model\":\"m\",\"metadata\":{\"a\":\"b\"},\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", NULL, "metadata", "untranslatable"},
    {"response_format json_object with tools", "{\"model\":\"m\",\"response_format\":{\"type\":\"json_object\"},\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\"}}],\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", NULL, "response_format", "invalid_value"},
    {"response_format of no type", "{\"model\":\"m\",\"response_format\":{\"type\":\"yaml\"},\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", NULL, "response_format", "invalid_value"},
    {"temperature 1.5", "{\"model\":\"m\",\"temperature\":1.5,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", NULL, "temperature", "invalid_value"},
    {"arguments not an object", "{\"model\":\"m\",\"messages\":[{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"c\",\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"[1]\"}}]}]}", NULL, "messages[0].tool_calls[0].function.arguments", "invalid_value"},
    {"audio part", "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"input_audio\",\"input_audio\":{\"data\":\"x\",\"format\":\"wav\"}}]}]}", NULL, "messages[0].content[0].type", "invalid_value"},
    {"only system", "{\"model\":\"m\",\"messages\":[{\"role\":\"system\",\"content\":\"x\"}]}", NULL, "messages", "invalid_value"},
    {"function role", "{\"model\":\"m\",\"messages\":[{\"role\":\"function\",\"name\":\"f\",\"content\":\"x\"}]}", NULL, "messages[0].role", "invalid_value"},
};

static void run_req_cases(const struct req_case *cases, size_t n, int dir)
{
    for (size_t i = 0; i < n; i++) {
        const struct req_case *c = &cases[i];
        json_t *in = load(c->in), *out = NULL;
        struct sw_request_error err = {0};
        int rc = dir ? sw_anth_req_from_openai(in, 77, &out, &err)
                     : sw_anth_req_to_openai(in, 1, &out, &err);
        if (c->out) {
            if (rc != SW_OK)
                fail_msg("case %s: error %s at %s: %s", c->name, err.code, err.param, err.message);
            assert_json_eq(out, c->out, c->name);
        } else {
            if (rc != SW_EINVAL)
                fail_msg("case %s: expected an error, got %d", c->name, rc);
            if (strcmp(err.param, c->param) || strcmp(err.code, c->code))
                fail_msg("case %s: got %s at '%s' (%s), want %s at '%s'", c->name, err.code,
                         err.param, err.message, c->code, c->param);
            assert_int_equal(err.status, 400);
            assert_null(out);
        }
        json_decref(out);
        json_decref(in);
    }
}

static void test_req_to_openai(void **state)
{
    (void)state;
    run_req_cases(to_openai, N(to_openai), 0);
}

static void test_req_from_openai(void **state)
{
    (void)state;
    run_req_cases(from_openai, N(from_openai), 1);
}

/* The whole-body parse: untranslatable fields are left out of the internal
 * form and the first is remembered; invalid ones are refused. */
static void test_request_parse(void **state)
{
    (void)state;
    static const char body[] =
        "{\"model\":\"m\",\"max_tokens\":5,\"context_management\":{\"edits\":[]},"
        "\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"document\",\"source\":{}},{\"type\":\"text\",\"text\":\"abcd\"}]}]}";
    struct sw_chat_request req;
    struct sw_request_error err;
    assert_int_equal(sw_anth_request_parse(body, strlen(body), 1, &req, &err), SW_OK);
    assert_int_equal(req.dialect, 1);
    assert_non_null(req.native);
    assert_non_null(req.untranslatable);
    assert_string_equal(req.untranslatable->param, "context_management");
    assert_int_equal(req.untranslatable_fields, (1u << SW_ANTH_FIELD_CONTEXT_MANAGEMENT) |
                                                    (1u << SW_ANTH_FIELD_DOCUMENT_BLOCK));
    assert_json_eq(req.body, "{\"model\":\"m\",\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"abcd\"}]}]}", "pruned");
    assert_int_equal(req.max_tokens, 5);
    /* the translation's text starts with its model: the relay splices there */
    assert_int_equal(req.text_model_len, 3);
    assert_memory_equal(req.text + req.text_model_off, "\"m\"", 3);
    assert_int_equal(req.prompt_tokens_est, 1 + 4 + 3);
    /* the body may go whole (with the document): its bytes bound the prompt */
    assert_int_equal(req.prompt_tokens_max, (long)strlen(body) + 4 + 3);
    sw_request_free(&req);

    static const char *const bad[][2] = {
        {"{\"model\":", "invalid_json"},
        {"[1]", "invalid_value"},
        {"{\"model\":\"m\",\"model\":\"n\",\"max_tokens\":1,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", "invalid_json"},
        {"{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", "invalid_value"},
    };
    for (size_t i = 0; i < N(bad); i++) {
        assert_int_equal(sw_anth_request_parse(bad[i][0], strlen(bad[i][0]), 1, &req, &err), SW_EINVAL);
        assert_string_equal(err.code, bad[i][1]);
        assert_null(req.body);
    }
    /* metadata.allow_cloud: read as on chat (null refused, never unset);
     * a near-miss of its name refused, never pruned as untranslatable */
    static const char *const md[][3] = {
        {"{\"allow_cloud\":false}", "", "0"},
        {"{\"allow_cloud\":\"yes\"}", "", "1"},
        {"{\"allow_cloud\":null}", "metadata.allow_cloud", "invalid_type"},
        {"{\"allow_cloud\":1}", "metadata.allow_cloud", "invalid_type"},
        {"{\"Allow_Cloud\":false}", "metadata.Allow_Cloud", "invalid_value"},
        {"{\"user_id\":\"u\",\"allow-cloud\":\"false\"}", "metadata.allow-cloud", "invalid_value"},
        {"{\"allow_cloud \":false}", "metadata.allow_cloud ", "invalid_value"},
        {"{\"allowCloud\":false}", "metadata.allowCloud", "invalid_value"},
    };
    for (size_t i = 0; i < N(md); i++) {
        char b[256];
        snprintf(b, sizeof b, "{\"model\":\"m\",\"max_tokens\":1,\"metadata\":%s,"
                 "\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", md[i][0]);
        int rc = sw_anth_request_parse(b, strlen(b), 1, &req, &err);
        if (!md[i][1][0]) {
            assert_int_equal(rc, SW_OK);
            assert_int_equal(req.allow_cloud, md[i][2][0] - '0');
            assert_null(req.untranslatable);
            sw_request_free(&req);
            continue;
        }
        if (rc != SW_EINVAL || strcmp(err.param, md[i][1]) || strcmp(err.code, md[i][2]))
            fail_msg("metadata %s: rc %d %s %s", md[i][0], rc, err.code, err.param);
        assert_non_null(strstr(err.message, md[i][1]));
        assert_null(req.body);
    }
    /* count_tokens: max_tokens may be absent */
    static const char ct[] = "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}";
    assert_int_equal(sw_anth_request_parse(ct, strlen(ct), 0, &req, &err), SW_OK);
    assert_null(req.untranslatable);
    assert_true(req.prompt_tokens_max >= req.prompt_tokens_est);
    sw_request_free(&req);
}

/* ---- Whole answers ---- */

static void test_answers(void **state)
{
    (void)state;
    json_t *a = load("{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"up\","
                     "\"content\":[{\"type\":\"text\",\"text\":\"hel\"},{\"type\":\"text\",\"text\":\"lo\"},"
                     "{\"type\":\"tool_use\",\"id\":\"t1\",\"name\":\"f\",\"input\":{\"a\":1}}],"
                     "\"stop_reason\":\"tool_use\",\"stop_sequence\":null,\"usage\":{\"input_tokens\":7,\"output_tokens\":3}}");
    json_t *o = sw_anth_resp_to_openai(a, "pub", 123);
    assert_json_eq(o, "{\"id\":\"msg_1\",\"object\":\"chat.completion\",\"created\":123,\"model\":\"pub\","
                      "\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":\"hello\",\"refusal\":null,"
                      "\"tool_calls\":[{\"id\":\"t1\",\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"{\\\"a\\\":1}\"}}]},"
                      "\"logprobs\":null,\"finish_reason\":\"tool_calls\"}],\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":3,\"total_tokens\":10}}",
                   "anthropic -> openai");
    json_t *back = sw_anth_resp_from_openai(o, "pub");
    assert_json_eq(back, "{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"pub\","
                         "\"content\":[{\"type\":\"text\",\"text\":\"hello\"},{\"type\":\"tool_use\",\"id\":\"t1\",\"name\":\"f\",\"input\":{\"a\":1}}],"
                         "\"stop_reason\":\"tool_use\",\"stop_sequence\":null,\"usage\":{\"input_tokens\":7,\"output_tokens\":3}}",
                   "openai -> anthropic");
    json_decref(a);
    json_decref(o);
    json_decref(back);
    json_t *bad = load("{\"type\":\"message\"}");
    assert_null(sw_anth_resp_to_openai(bad, "p", 0));
    assert_null(sw_anth_resp_from_openai(bad, "p"));
    json_decref(bad);

    static const char *const reasons[][2] = {{"end_turn", "stop"}, {"stop_sequence", "stop"},
                                             {"max_tokens", "length"}, {"tool_use", "tool_calls"},
                                             {"refusal", "content_filter"}};
    for (size_t i = 0; i < N(reasons); i++)
        assert_string_equal(sw_anth_finish_reason(reasons[i][0]), reasons[i][1]);
    assert_string_equal(sw_anth_stop_reason("length"), "max_tokens");
    assert_string_equal(sw_anth_stop_reason("tool_calls"), "tool_use");
    assert_string_equal(sw_anth_stop_reason("stop"), "end_turn");
    static const int st[] = {400, 401, 404, 429, 503, 529, 504, 500};
    static const char *const ty[] = {"invalid_request_error", "authentication_error", "not_found_error",
                                     "rate_limit_error", "overloaded_error", "overloaded_error",
                                     "timeout_error", "api_error"};
    for (size_t i = 0; i < N(st); i++)
        assert_string_equal(sw_anth_error_type(st[i]), ty[i]);
}

/* OpenAI's schema requires choices[].message.refusal and choices[].logprobs
 * (null when there is none): the translated answer and every streamed
 * choice carry both, as null, whatever the stop reason. */
static void test_answer_required_nulls(void **state)
{
    (void)state;
    static const char *const reasons[] = {"end_turn", "refusal", "max_tokens"};
    for (size_t i = 0; i < N(reasons); i++) {
        char in[256];
        snprintf(in, sizeof in,
                 "{\"id\":\"msg_2\",\"content\":[{\"type\":\"text\",\"text\":\"no\"}],"
                 "\"stop_reason\":\"%s\",\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}",
                 reasons[i]);
        json_t *a = load(in);
        json_t *o = sw_anth_resp_to_openai(a, "pub", 1);
        json_t *choice = json_array_get(json_object_get(o, "choices"), 0);
        json_t *msg = json_object_get(choice, "message");
        assert_true(json_is_null(json_object_get(msg, "refusal")));
        assert_true(json_is_null(json_object_get(choice, "logprobs")));
        assert_string_equal(json_string_value(json_object_get(msg, "content")), "no");
        json_decref(a);
        json_decref(o);
    }
    static const char *const events[] = {
        "{\"type\":\"message_start\",\"message\":{\"id\":\"msg_3\",\"usage\":{\"input_tokens\":1}}}",
        "{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}",
        "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"x\"}}",
        "{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"refusal\"},\"usage\":{\"output_tokens\":1}}",
    };
    struct sw_anth_to_oai s;
    sw_anth_to_oai_init(&s, "pub", 1);
    json_t *chunks = json_array();
    for (size_t i = 0; i < N(events); i++)
        assert_int_equal(sw_anth_to_oai_event(&s, events[i], strlen(events[i]), chunks, NULL), 0);
    assert_int_equal(json_array_size(chunks), 3);
    for (size_t i = 0; i < json_array_size(chunks); i++) {
        json_t *choice = json_array_get(json_object_get(json_array_get(chunks, i), "choices"), 0);
        json_t *lp = json_object_get(choice, "logprobs");
        assert_non_null(lp);
        assert_true(json_is_null(lp));
    }
    json_decref(chunks);
}

/* ---- Streams ---- */

static void test_stream_anth_to_oai(void **state)
{
    (void)state;
    static const char *const events[] = {
        "{\"type\":\"message_start\",\"message\":{\"id\":\"msg_9\",\"usage\":{\"input_tokens\":11,\"output_tokens\":1}}}",
        "{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}",
        "{\"type\":\"ping\"}",
        "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}",
        "{\"type\":\"content_block_stop\",\"index\":0}",
        "{\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t1\",\"name\":\"f\",\"input\":{}}}",
        "{\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"a\\\":\"}}",
        "{\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"1}\"}}",
        "{\"type\":\"content_block_stop\",\"index\":1}",
        "{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":5}}",
        "{\"type\":\"message_stop\"}",
    };
    struct sw_anth_to_oai s;
    sw_anth_to_oai_init(&s, "pub", 5);
    json_t *chunks = json_array();
    for (size_t i = 0; i < N(events); i++)
        assert_int_equal(sw_anth_to_oai_event(&s, events[i], strlen(events[i]), chunks, NULL), 0);
    assert_true(s.done);
#define CH(delta, fin) "{\"id\":\"msg_9\",\"object\":\"chat.completion.chunk\",\"created\":5,\"model\":\"pub\",\"choices\":[{\"index\":0,\"delta\":" delta ",\"logprobs\":null,\"finish_reason\":" fin "}]}"
    assert_json_eq(chunks,
                   "[" CH("{\"role\":\"assistant\",\"content\":\"\"}", "null") ","
                   CH("{\"content\":\"Hi\"}", "null") ","
                   CH("{\"tool_calls\":[{\"index\":0,\"id\":\"t1\",\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"\"}}]}", "null") ","
                   CH("{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"a\\\":\"}}]}", "null") ","
                   CH("{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"1}\"}}]}", "null") ","
                   CH("{}", "\"tool_calls\"") ","
                   "{\"id\":\"msg_9\",\"object\":\"chat.completion.chunk\",\"created\":5,\"model\":\"pub\",\"choices\":[],"
                   "\"usage\":{\"prompt_tokens\":11,\"completion_tokens\":5,\"total_tokens\":16}}]",
                   "anthropic stream");
#undef CH
    json_decref(chunks);
    /* An error event, garbage, a delta for no tool: refused. */
    static const char *const bad[] = {
        "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"x\"}}",
        "not json",
        "{\"type\":\"content_block_delta\",\"index\":7,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\"}}",
    };
    for (size_t i = 0; i < N(bad); i++) {
        sw_anth_to_oai_init(&s, "pub", 5);
        chunks = json_array();
        const char *msg = NULL;
        assert_int_equal(sw_anth_to_oai_event(&s, bad[i], strlen(bad[i]), chunks, &msg), -1);
        assert_non_null(msg);
        json_decref(chunks);
    }
}

/* An OpenAI response_format sent as the forced format tool: its input
 * streams as content, its tool_use stop is finish_reason stop; another tool
 * stays a tool call. An error event's type is kept (a-z and _ only). */
static void test_stream_format_tool_and_error_type(void **state)
{
    (void)state;
    static const char *const events[] = {
        "{\"type\":\"message_start\",\"message\":{\"id\":\"msg_9\",\"usage\":{\"input_tokens\":11,\"output_tokens\":1}}}",
        "{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t1\",\"name\":\"json_answer\",\"input\":{}}}",
        "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"a\\\":\"}}",
        "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"1}\"}}",
        "{\"type\":\"content_block_stop\",\"index\":0}",
        "{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":5}}",
    };
    struct sw_anth_to_oai s;
    sw_anth_to_oai_init(&s, "pub", 5);
    s.format_tool = true;
    json_t *chunks = json_array();
    for (size_t i = 0; i < N(events); i++)
        assert_int_equal(sw_anth_to_oai_event(&s, events[i], strlen(events[i]), chunks, NULL), 0);
#define CH(delta, fin) "{\"id\":\"msg_9\",\"object\":\"chat.completion.chunk\",\"created\":5,\"model\":\"pub\",\"choices\":[{\"index\":0,\"delta\":" delta ",\"logprobs\":null,\"finish_reason\":" fin "}]}"
    assert_json_eq(chunks,
                   "[" CH("{\"role\":\"assistant\",\"content\":\"\"}", "null") ","
                   CH("{\"content\":\"{\\\"a\\\":\"}", "null") ","
                   CH("{\"content\":\"1}\"}", "null") ","
                   CH("{}", "\"stop\"") "]",
                   "format tool stream");
#undef CH
    json_decref(chunks);
    /* without format_tool the same block is a tool call */
    sw_anth_to_oai_init(&s, "pub", 5);
    chunks = json_array();
    assert_int_equal(sw_anth_to_oai_event(&s, events[1], strlen(events[1]), chunks, NULL), 0);
    assert_non_null(json_object_get(json_object_get(json_array_get(json_object_get(json_array_get(chunks, 0), "choices"), 0), "delta"), "tool_calls"));
    json_decref(chunks);
    static const char *const errs[][2] = {
        {"{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"x\"}}", "overloaded_error"},
        {"{\"type\":\"error\",\"error\":{\"type\":\"Bad\\nType\",\"message\":\"x\"}}", ""},
        {"{\"type\":\"error\"}", ""},
    };
    for (size_t i = 0; i < N(errs); i++) {
        sw_anth_to_oai_init(&s, "pub", 5);
        chunks = json_array();
        assert_int_equal(sw_anth_to_oai_event(&s, errs[i][0], strlen(errs[i][0]), chunks, NULL), -1);
        assert_string_equal(s.error_type, errs[i][1]);
        json_decref(chunks);
    }
    struct sw_oai_to_anth o;
    struct sw_buf out;
    sw_buf_init(&out, 4096);
    sw_oai_to_anth_init(&o, "r1", "pub", 3);
    assert_int_equal(sw_oai_to_anth_error_typed(&o, "overloaded_error", "m", &out), SW_OK);
    assert_non_null(strstr(out.ptr, "\"type\":\"overloaded_error\""));
    sw_buf_reset(&out);
    assert_int_equal(sw_oai_to_anth_error_typed(&o, "", "m", &out), SW_OK);
    assert_non_null(strstr(out.ptr, "\"type\":\"api_error\""));
    sw_buf_free(&out);
}

static void test_stream_oai_to_anth(void **state)
{
    (void)state;
    static const char *const chunks[] = {
        "{\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}",
        "{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"He\"}}]}",
        "{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"y\"}}]}",
        "{\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"\"}}]}}]}",
        "{\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{}\"}}]}}]}",
        "{\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}",
        "{\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":4}}",
    };
    struct sw_oai_to_anth s;
    sw_oai_to_anth_init(&s, "req-1", "pub", 3);
    struct sw_buf out;
    sw_buf_init(&out, 1 << 20);
    for (size_t i = 0; i < N(chunks); i++) {
        json_t *c = load(chunks[i]);
        assert_int_equal(sw_oai_to_anth_chunk(&s, c, &out), SW_OK);
        json_decref(c);
    }
    assert_int_equal(sw_oai_to_anth_finish(&s, &out), SW_OK);
    assert_int_equal(sw_oai_to_anth_finish(&s, &out), SW_OK); /* once only */
    static const char want[] =
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_req-1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"pub\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":3,\"output_tokens\":0}}}\n\n"
        "event: ping\ndata: {\"type\":\"ping\"}\n\n"
        "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"He\"}}\n\n"
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"y\"}}\n\n"
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
        "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"c1\",\"name\":\"f\",\"input\":{}}}\n\n"
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{}\"}}\n\n"
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n"
        "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\",\"stop_sequence\":null},\"usage\":{\"input_tokens\":9,\"output_tokens\":4}}\n\n"
        "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
    assert_int_equal(out.len, strlen(want));
    assert_memory_equal(out.ptr, want, out.len);

    sw_buf_reset(&out);
    sw_oai_to_anth_init(&s, "msg_x", "pub", 0);
    assert_int_equal(sw_oai_to_anth_error(&s, "boom", &out), SW_OK);
    static const char err_want[] =
        "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"api_error\",\"message\":\"boom\"}}\n\n";
    assert_int_equal(out.len, strlen(err_want));
    assert_memory_equal(out.ptr, err_want, out.len);
    sw_buf_free(&out);
}

/* The client headers an Anthropic backend may get, to their grammar. */
static void test_client_header_grammar(void **state)
{
    (void)state;
    static const struct { const char *v; bool ok; } versions[] = {
        {"2023-06-01", true}, {"2023-01-31", true}, {"2023-6-1", false}, {"2023-13-01", false},
        {"2023-06-00", false}, {"2023-06-01 ", false}, {" 2023-06-01", false}, {"", false},
        {"2023-06-01,2023-06-01", false}, {"2023-06-01; jan@example.nl", false}, {"latest", false},
    };
    for (size_t i = 0; i < sizeof versions / sizeof versions[0]; i++) {
        bool got = sw_upstream_anthropic_version_ok(versions[i].v, strlen(versions[i].v));
        if (got != versions[i].ok)
            print_error("anthropic-version \"%s\": %d\n", versions[i].v, got);
        assert_true(got == versions[i].ok);
    }
    char many[2048], longname[128];
    size_t u = 0;
    for (int i = 0; i < 17; i++)
        u += (size_t)snprintf(many + u, sizeof many - u, "%sf%d-2025-01-01", i ? "," : "", i);
    memset(longname, 'a', 60);
    memcpy(longname + 60, "-2025-01-01", 12);
    static const struct { const char *v; bool ok; } betas[] = {
        {"prompt-caching-2024-07-31", true},
        {"claude-code-20250219,oauth-2025-04-20,interleaved-thinking-2025-05-14", true},
        {"prompt-caching-2024-07-31, computer-use-2025-01-24", true},
        {" max-tokens-3-5-sonnet-2024-07-15 ", true},
        {"context-1m-2025-08-07", true},
        {"", false}, {",", false}, {"prompt-caching-2024-07-31,", false},
        {"prompt-caching", false}, {"test-beta-1", false}, {"Prompt-caching-2024-07-31", false},
        {"prompt--caching-2024-07-31", false}, {"-caching-2024-07-31", false},
        {"2024-07-31", false}, {"x-2024-13-31", false}, {"x-20241301", false},
        {"jan.devries@example.nl-2024-07-31", false}, {"call 0612345678-2024-07-31", false},
        {"prompt_caching-2024-07-31", false}, {"caf\xc3\xa9-2024-07-31", false},
    };
    for (size_t i = 0; i < sizeof betas / sizeof betas[0]; i++) {
        bool got = sw_upstream_anthropic_beta_ok(betas[i].v, strlen(betas[i].v));
        if (got != betas[i].ok)
            print_error("anthropic-beta \"%s\": %d\n", betas[i].v, got);
        assert_true(got == betas[i].ok);
    }
    /* bounds: 16 names, 64 bytes each */
    assert_false(sw_upstream_anthropic_beta_ok(many, strlen(many)));
    assert_true(sw_upstream_anthropic_beta_ok(many, (size_t)(strrchr(many, ',') - many)));
    assert_false(sw_upstream_anthropic_beta_ok(longname, strlen(longname)));
    assert_true(sw_upstream_anthropic_beta_ok(longname + 7, strlen(longname + 7)));
}


/* ---- Agent requests ---- */

/* What a coding agent sends (a system message inside messages, thinking,
 * context_management, output_config, a thinking block in its history): the
 * translation carries the system message in place and the effort, and
 * leaves out what a chat backend has no form for, every class named. */
static void test_agent_request_parse(void **state)
{
    (void)state;
    static const char body[] =
        "{\"model\":\"coder\",\"max_tokens\":32000,\"stream\":true,"
        "\"system\":[{\"type\":\"text\",\"text\":\"You are an agent.\",\"cache_control\":{\"type\":\"ephemeral\"}}],"
        "\"thinking\":{\"type\":\"adaptive\"},"
        "\"context_management\":{\"edits\":[{\"type\":\"clear_thinking_20251015\",\"keep\":\"all\"}]},"
        "\"output_config\":{\"effort\":\"high\"},"
        "\"metadata\":{\"user_id\":\"u1\"},"
        "\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"fix it\"}]},"
        "{\"role\":\"system\",\"content\":\"Agent types: ...\"},"
        "{\"role\":\"assistant\",\"content\":[{\"type\":\"thinking\",\"thinking\":\"hmm\",\"signature\":\"c2ln\"},"
        "{\"type\":\"tool_use\",\"id\":\"t1\",\"name\":\"Read\",\"input\":{\"path\":\"a.c\"}}]},"
        "{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"t1\",\"content\":\"int x;\"}]}]}";
    struct sw_chat_request req;
    struct sw_request_error err;
    assert_int_equal(sw_anth_request_parse(body, strlen(body), 1, &req, &err), SW_OK);
    assert_non_null(req.untranslatable);
    assert_string_equal(req.untranslatable->param, "context_management");
    assert_int_equal(req.untranslatable_fields, (1u << SW_ANTH_FIELD_CONTEXT_MANAGEMENT) |
                                                    (1u << SW_ANTH_FIELD_THINKING_BLOCK));
    assert_json_eq(req.body,
                   "{\"model\":\"coder\",\"max_tokens\":32000,\"stream\":true,\"user\":\"u1\",\"reasoning_effort\":\"high\","
                   "\"messages\":[{\"role\":\"system\",\"content\":\"You are an agent.\"},"
                   "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"fix it\"}]},"
                   "{\"role\":\"system\",\"content\":\"Agent types: ...\"},"
                   "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"t1\",\"type\":\"function\",\"function\":{\"name\":\"Read\",\"arguments\":\"{\\\"path\\\":\\\"a.c\\\"}\"}}]},"
                   "{\"role\":\"tool\",\"tool_call_id\":\"t1\",\"content\":\"int x;\"}]}",
                   "agent translation");
    /* the client's own body is kept whole for an Anthropic backend */
    assert_non_null(json_object_get(req.native, "context_management"));
    assert_non_null(json_object_get(req.native, "thinking"));
    sw_request_free(&req);

    /* an output_config key without a form is left out alone: effort and
     * format still carried */
    static const char oc[] =
        "{\"model\":\"m\",\"max_tokens\":5,\"output_config\":{\"effort\":\"low\",\"task_budget\":{\"total\":9},"
        "\"format\":{\"type\":\"json_schema\",\"schema\":{\"type\":\"object\"}}},"
        "\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}";
    assert_int_equal(sw_anth_request_parse(oc, strlen(oc), 1, &req, &err), SW_OK);
    assert_string_equal(req.untranslatable->param, "output_config.task_budget");
    assert_int_equal(req.untranslatable_fields, 1u << SW_ANTH_FIELD_OUTPUT_CONFIG);
    assert_json_eq(req.body,
                   "{\"model\":\"m\",\"max_tokens\":5,\"reasoning_effort\":\"low\",\"response_format\":{\"type\":\"json_schema\","
                   "\"json_schema\":{\"name\":\"output\",\"schema\":{\"type\":\"object\"}}},"
                   "\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", "output_config pruned");
    sw_request_free(&req);
}

/* The class of each untranslatable field, a closed set of names. */
static void test_field_class(void **state)
{
    (void)state;
    json_t *b = load("{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"document\"},{\"type\":\"redacted_thinking\"},"
                     "{\"type\":\"web_search_tool_result\"},{\"type\":\"search_result\"},{\"type\":\"image\"},"
                     "{\"type\":\"tool_result\"},{\"type\":\"client secret text\"},{\"type\":\"container_upload\"},"
                     "{\"type\":\"server_tool_use\"}]}]}");
    static const struct {
        const char *param;
        const char *name;
    } cases[] = {
        {"context_management", "context_management"},
        {"output_config.task_budget", "output_config"},
        {"mcp_servers", "mcp_servers"},
        {"container", "container"},
        {"service_tier", "service_tier"},
        {"top_k", "top_k"},
        {"tools[3].type", "server_tool"},
        {"metadata.tenant", "metadata"},
        {"system[1]", "system_block"},
        {"a_client_field", "other"},
        {"messages[0].content[0].type", "document_block"},
        {"messages[0].content[1].type", "thinking_block"},
        {"messages[0].content[2].type", "server_tool_block"},
        {"messages[0].content[3].type", "search_result_block"},
        {"messages[0].content[4].source.type", "image_block"},
        {"messages[0].content[5].content[0]", "tool_result_block"},
        {"messages[0].content[6].type", "other"},
        {"messages[0].content[7].type", "server_tool_block"},
        {"messages[0].content[8].type", "server_tool_block"},
        {"messages[0].content[99].type", "other"},
        {"messages[5].content[0].type", "other"},
        {"messages", "other"},
    };
    for (size_t i = 0; i < N(cases); i++) {
        const char *got = sw_anth_field_name(sw_anth_field_class(b, cases[i].param));
        if (strcmp(got, cases[i].name))
            fail_msg("%s: got %s, want %s", cases[i].param, got, cases[i].name);
    }
    assert_string_equal(sw_anth_field_name(SW_ANTH_FIELD_N + 3), "other");
    /* an OpenAI request's top-level fields toward an Anthropic backend */
    static const char *const oai[][2] = {
        {"reasoning_effort", "reasoning_effort"}, {"seed", "seed"},
        {"frequency_penalty", "penalties"}, {"presence_penalty", "penalties"},
        {"logprobs", "logprobs"}, {"top_logprobs", "logprobs"}, {"logit_bias", "logprobs"},
        {"verbosity", "verbosity"}, {"store", "store"}, {"prompt_cache_key", "store"},
        {"service_tier", "service_tier"}, {"metadata", "metadata"}, {"my_field", "other"},
    };
    for (size_t i = 0; i < N(oai); i++)
        assert_string_equal(sw_anth_field_name(sw_anth_openai_field_class(oai[i][0])), oai[i][1]);
    /* the names of a set, in class order, cut to fit */
    char list[64];
    sw_anth_field_list((1u << SW_ANTH_FIELD_SEED) | (1u << SW_ANTH_FIELD_CONTEXT_MANAGEMENT), list,
                       sizeof list);
    assert_string_equal(list, "context_management,seed");
    sw_anth_field_list(0, list, sizeof list);
    assert_string_equal(list, "");
    sw_anth_field_list(~0u, list, 12);
    assert_string_equal(list, "other,conte");
    for (unsigned f = 0; f < SW_ANTH_FIELD_N; f++)
        assert_non_null(sw_anth_field_name(f));
    json_decref(b);
}

/* System messages inside messages toward an Anthropic backend: leading ones
 * always join the top-level system; later ones stay when the client's
 * anthropic-beta names mid-conversation-system, else join it too. */
static void test_native_system(void **state)
{
    (void)state;
    static const struct {
        const char *name, *in, *beta, *out;
    } cases[] = {
        {"none: unchanged",
         "{\"system\":\"s\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", NULL,
         "{\"system\":\"s\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}"},
        {"leading, top-level string",
         "{\"system\":\"s\",\"messages\":[{\"role\":\"system\",\"content\":\"lead\"},{\"role\":\"user\",\"content\":\"x\"}]}",
         "mid-conversation-system-2026-04-07",
         "{\"system\":[{\"type\":\"text\",\"text\":\"s\"},{\"type\":\"text\",\"text\":\"lead\"}],\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}"},
        {"later kept with the beta",
         "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"},{\"role\":\"system\",\"content\":\"mid\"}]}",
         "claude-code-20250219, mid-conversation-system-2026-04-07,effort-2025-11-24",
         "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"},{\"role\":\"system\",\"content\":\"mid\"}]}"},
        {"later hoisted without it, blocks kept whole",
         "{\"system\":[{\"type\":\"text\",\"text\":\"s\",\"cache_control\":{\"type\":\"ephemeral\"}}],\"messages\":[{\"role\":\"user\",\"content\":\"x\"},"
         "{\"role\":\"system\",\"content\":[{\"type\":\"text\",\"text\":\"m\",\"cache_control\":{\"type\":\"ephemeral\"}}]},{\"role\":\"user\",\"content\":\"y\"}]}",
         "claude-code-20250219",
         "{\"system\":[{\"type\":\"text\",\"text\":\"s\",\"cache_control\":{\"type\":\"ephemeral\"}},{\"type\":\"text\",\"text\":\"m\",\"cache_control\":{\"type\":\"ephemeral\"}}],"
         "\"messages\":[{\"role\":\"user\",\"content\":\"x\"},{\"role\":\"user\",\"content\":\"y\"}]}"},
        {"leading and later, no beta, no top-level system",
         "{\"messages\":[{\"role\":\"system\",\"content\":\"a\"},{\"role\":\"system\",\"content\":\"b\"},{\"role\":\"user\",\"content\":\"x\"},{\"role\":\"system\",\"content\":\"c\"}]}",
         NULL,
         "{\"system\":[{\"type\":\"text\",\"text\":\"a\"},{\"type\":\"text\",\"text\":\"b\"},{\"type\":\"text\",\"text\":\"c\"}],\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}"},
        {"a beta of a near name is not it",
         "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"},{\"role\":\"system\",\"content\":\"mid\"}]}",
         "conversation-system-2026-04-07",
         "{\"system\":[{\"type\":\"text\",\"text\":\"mid\"}],\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}"},
    };
    for (size_t i = 0; i < N(cases); i++) {
        json_t *b = load(cases[i].in);
        assert_int_equal(sw_anth_native_system(b, cases[i].beta), SW_OK);
        assert_json_eq(b, cases[i].out, cases[i].name);
        json_decref(b);
    }
}

/* Thinking on, and the last assistant message calls tools without a
 * thinking block first (a turn a translated backend answered): toward an
 * Anthropic backend thinking is off for the request, with the edits that
 * clear thinking; else the body is left as it is. */
static void test_native_thinking(void **state)
{
    (void)state;
#define TU "{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"Read\",\"input\":{}}"
#define TR "{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"t\",\"content\":\"x\"}]}"
#define CM "\"context_management\":{\"edits\":[{\"type\":\"clear_thinking_20251015\",\"keep\":\"all\"}%s]}"
    static const struct {
        const char *name, *in, *out;
        bool changed;
    } cases[] = {
        {"a local turn's tool call: thinking off, its edit gone",
         "{\"thinking\":{\"type\":\"adaptive\"}," CM ",\"messages\":[{\"role\":\"user\",\"content\":\"go\"},"
         "{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"reading\"}," TU "]}," TR "]}",
         "{\"thinking\":{\"type\":\"disabled\"},\"messages\":[{\"role\":\"user\",\"content\":\"go\"},"
         "{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"reading\"}," TU "]}," TR "]}", true},
        {"other edits kept",
         "{\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":2048},\"context_management\":{\"edits\":[{\"type\":\"clear_thinking_20251015\"},{\"type\":\"clear_tool_uses_20250919\"}]},"
         "\"messages\":[{\"role\":\"assistant\",\"content\":[" TU "]}," TR "]}",
         "{\"thinking\":{\"type\":\"disabled\"},\"context_management\":{\"edits\":[{\"type\":\"clear_tool_uses_20250919\"}]},"
         "\"messages\":[{\"role\":\"assistant\",\"content\":[" TU "]}," TR "]}", true},
        {"a cloud turn's thinking block first: unchanged",
         "{\"thinking\":{\"type\":\"adaptive\"},\"messages\":[{\"role\":\"assistant\",\"content\":[{\"type\":\"thinking\",\"thinking\":\"h\",\"signature\":\"s\"}," TU "]}," TR "]}",
         NULL, false},
        {"redacted thinking first: unchanged",
         "{\"thinking\":{\"type\":\"adaptive\"},\"messages\":[{\"role\":\"assistant\",\"content\":[{\"type\":\"redacted_thinking\",\"data\":\"x\"}," TU "]}," TR "]}",
         NULL, false},
        {"no tool call in the last assistant message: unchanged",
         "{\"thinking\":{\"type\":\"adaptive\"},\"messages\":[{\"role\":\"assistant\",\"content\":[" TU "]}," TR ","
         "{\"role\":\"assistant\",\"content\":\"done\"},{\"role\":\"user\",\"content\":\"next\"}]}",
         NULL, false},
        {"thinking off already: unchanged",
         "{\"thinking\":{\"type\":\"disabled\"},\"messages\":[{\"role\":\"assistant\",\"content\":[" TU "]}," TR "]}", NULL, false},
        {"no thinking: unchanged", "{\"messages\":[{\"role\":\"assistant\",\"content\":[" TU "]}," TR "]}", NULL, false},
    };
    for (size_t i = 0; i < N(cases); i++) {
        char in[1024], out[1024];
        snprintf(in, sizeof in, cases[i].in, "");
        snprintf(out, sizeof out, cases[i].out ? cases[i].out : cases[i].in, "");
        json_t *b = load(in);
        if (sw_anth_native_thinking(b) != cases[i].changed)
            fail_msg("%s: changed is not %d", cases[i].name, cases[i].changed);
        assert_json_eq(b, out, cases[i].name);
        json_decref(b);
    }
#undef TU
#undef TR
#undef CM
}

/* An agent's conversation in Anthropic's form: prose, a tool call and its
 * result per turn; `at` (when >= 0) is the turn whose result says `what`. */
static char *agent_body(int turns, int at, const char *what)
{
    json_t *msgs = json_array();
    for (int i = 0; i < turns; i++) {
        char u[600], id[32];
        snprintf(u, sizeof u, "Turn %d. The build of src/main.c fails on line %d with "
                              "\"unused variable\"; can you look again and fix it? caf\u00e9 "
                              "\u65e5\u672c", i, 40 + i);
        snprintf(id, sizeof id, "toolu_%03d", i);
        json_array_append_new(msgs, json_pack("{s:s,s:[{s:s,s:s}]}", "role", "user", "content",
                                              "type", "text", "text", u));
        json_array_append_new(
            msgs, json_pack("{s:s,s:[{s:s,s:s},{s:s,s:s,s:s,s:{s:s}}]}", "role", "assistant",
                            "content", "type", "text", "text", "Reading the file.", "type",
                            "tool_use", "id", id, "name", "Read", "input", "path", "src/main.c"));
        snprintf(u, sizeof u, "int main(void) {\n\tint x; /* %s */\n\treturn 0;\n}\n",
                 i == at ? what : "line unchanged");
        json_array_append_new(
            msgs, json_pack("{s:s,s:[{s:s,s:s,s:s}]}", "role", "user", "content", "type",
                            "tool_result", "tool_use_id", id, "content", u));
    }
    json_t *b = json_pack("{s:s,s:i,s:s,s:o}", "model", "m", "max_tokens", 512, "system",
                          "You are a coding agent.", "messages", msgs);
    char *s = json_dumps(b, JSON_COMPACT);
    json_decref(b);
    return s;
}

static void parse_anth(const char *s, struct sw_chat_request *req)
{
    struct sw_request_error err;
    assert_int_equal(sw_anth_request_parse(s, strlen(s), 1, req, &err), SW_OK);
    assert_text_is_dump(req);
}

static void pair_counts(const struct sw_pii_engine *e, const struct sw_chat_request *req,
                        struct sw_pii_counts out[2])
{
    int built_rc;
    assert_int_equal(sw_pii_scan_pair(e, SW_PII_SURFACE_MESSAGES, req->native, &out[0], NULL, 0,
                                      SW_PII_SURFACE_CHAT, req->body, &out[1], &built_rc),
                     SW_OK);
    assert_int_equal(built_rc, SW_OK);
}

/* With the parse memo, a resent message's translation is kept with it: the
 * next turn's translation shares it, and its text (the kept texts shared as
 * pieces, not copied) and its scan are what they are without the memo; a
 * message changed by one byte is translated (and scanned) again. */
static void test_translation_kept(void **state)
{
    (void)state;
    char perr[128];
    struct sw_pii_engine *e;
    assert_int_equal(sw_pii_engine_new(NULL, 0, &e, perr, sizeof perr), SW_OK);
    char *base = agent_body(30, -1, NULL), *planted = agent_body(30, 4, "mail bob.smith@example.org");
    assert_true(strlen(base) >= SW_JMEMO_MIN_BODY);
    struct sw_chat_request ref[2], got[3];
    struct sw_pii_counts rc[2][2], gc[3][2];
    sw_jmemo_set_max(0);                        /* the reference: no memo */
    parse_anth(base, &ref[0]);
    parse_anth(planted, &ref[1]);
    pair_counts(e, &ref[0], rc[0]);
    pair_counts(e, &ref[1], rc[1]);
    assert_int_equal(rc[0][1].total, 0);
    assert_true(rc[1][1].total > 0);

    sw_jmemo_set_max(64u << 20);
    parse_anth(base, &got[0]);
    parse_anth(base, &got[1]);
    parse_anth(planted, &got[2]);
    json_t *m0 = json_object_get(got[0].body, "messages"), *m1 = json_object_get(got[1].body, "messages"),
           *m2 = json_object_get(got[2].body, "messages");
    assert_ptr_equal(json_array_get(m0, 3), json_array_get(m1, 3));     /* shared */
    assert_ptr_equal(json_array_get(m0, 3), json_array_get(m2, 3));
    /* turn 4's tool result changed: the tool message is new (the system
     * message, then three messages a turn, the result a tool message) */
    assert_ptr_not_equal(json_array_get(m0, 1 + 3 * 4 + 2), json_array_get(m2, 1 + 3 * 4 + 2));
    /* the first text is written whole; a resent message's text after that
     * is a piece: the resent body's own bytes are the few between them */
    assert_int_equal(got[0].text_pieces.n, 0);
    assert_true(got[1].text_pieces.n >= json_array_size(m1) - 1);
    assert_true(got[1].text_len < got[1].text_pieces.bytes / 4);
    assert_true(got[2].text_pieces.n > 0 && got[2].text_pieces.n < got[1].text_pieces.n);
    for (int k = 0; k < 3; k++) {
        const struct sw_chat_request *want = &ref[k == 2];
        assert_same_text(&got[k], want);
        pair_counts(e, &got[k], gc[k]);
        assert_memory_equal(gc[k], rc[k == 2], sizeof gc[k]);
    }
    for (int k = 0; k < 3; k++)
        sw_request_free(&got[k]);
    sw_request_free(&ref[0]);
    sw_request_free(&ref[1]);
    sw_jmemo_set_max(0);
    free(base);
    free(planted);
    sw_pii_engine_free(e);
}

/* n assistant tool calls: eight values each, ten in the translation. */
static char *tool_calls_body(int n)
{
    struct sw_buf b;
    sw_buf_init(&b, (size_t)1 << 30);
    assert_int_equal(sw_buf_append_str(&b, "{\"model\":\"m\",\"max_tokens\":9,\"messages\":["), 0);
    for (int i = 0; i < n; i++) {
        char m[160];
        snprintf(m, sizeof m, "%s{\"role\":\"assistant\",\"content\":[{\"type\":\"tool_use\",\"id\":"
                              "\"toolu_%06d\",\"name\":\"Read\",\"input\":{}}]}", i ? "," : "", i);
        assert_int_equal(sw_buf_append_str(&b, m), 0);
    }
    assert_int_equal(sw_buf_append_str(&b, "]}"), 0);
    return b.ptr;
}

/* The translation's value bound counts held messages as the memo off does:
 * a body within its own bound whose translation is past it is refused the
 * second time too, and one whose translation is within it is taken. */
static void test_translation_bound(void **state)
{
    (void)state;
    char *over = tool_calls_body(11500), *under = tool_calls_body(9000);
    for (int memo = 0; memo < 2; memo++) {
        sw_jmemo_set_max(memo ? 256u << 20 : 0);
        for (int round = 0; round < 2; round++) {
            struct sw_chat_request req;
            struct sw_request_error err;
            assert_int_equal(sw_anth_request_parse(over, strlen(over), 1, &req, &err), SW_EINVAL);
            assert_string_equal(err.code, "json_too_complex");
            assert_int_equal(sw_anth_request_parse(under, strlen(under), 1, &req, &err), SW_OK);
            sw_request_free(&req);
        }
    }
    sw_jmemo_set_max(0);
    free(over);
    free(under);
}

/* A coding agent's conversation with a thinking block in each of n
 * assistant turns (and, if strip, the same without them), above the memo's
 * minimum body size. */
static char *thinking_body(int n, bool strip)
{
    struct sw_buf b;
    sw_buf_init(&b, (size_t)1 << 30);
    assert_int_equal(sw_buf_append_str(&b, "{\"model\":\"m\",\"max_tokens\":9,\"thinking\":"
                                           "{\"type\":\"enabled\",\"budget_tokens\":2048},"
                                           "\"messages\":["), 0);
    for (int i = 0; i < n; i++) {
        char m[640];
        snprintf(m, sizeof m,
                 "%s{\"role\":\"user\",\"content\":\"step %d: go on with the refactor of the "
                 "parser module, then run the tests again and tell me what failed\"},"
                 "{\"role\":\"assistant\",\"content\":[%s{\"type\":\"text\",\"text\":\"done %d\"}]}",
                 i ? "," : "", i,
                 strip ? "" : "{\"type\":\"thinking\",\"thinking\":\"look at the parser first\","
                              "\"signature\":\"EqQBCkgIARABGAIiQLx\"},",
                 i);
        assert_int_equal(sw_buf_append_str(&b, m), 0);
    }
    assert_int_equal(sw_buf_append_str(&b, ",{\"role\":\"user\",\"content\":\"and now?\"}]}"), 0);
    return b.ptr;
}

/* Thinking blocks in every assistant turn, more than the 64 rounds of
 * pruning the other fields get: left out as the translation meets them,
 * the body still parses (a backend that speaks Anthropic gets it whole),
 * the translation is the body's without them, and the first refusal and
 * the classes are what they are, with the memo on (twice: the second parse
 * takes every translation kept) and off. The strict translation of a body
 * whose messages' translations were kept with blocks left out still
 * refuses it, with the same refusal. */
static void test_thinking_blocks_left_out(void **state)
{
    (void)state;
    char *body = thinking_body(80, false), *stripped = thinking_body(80, true);
    assert_true(strlen(body) >= SW_JMEMO_MIN_BODY);
    struct sw_chat_request ref;
    struct sw_request_error err;
    sw_jmemo_set_max(0);
    assert_int_equal(sw_anth_request_parse(stripped, strlen(stripped), 1, &ref, &err), SW_OK);
    assert_null(ref.untranslatable);
    for (int pass = 0; pass < 3; pass++) {
        sw_jmemo_set_max(pass ? 64u << 20 : 0);
        struct sw_chat_request req;
        assert_int_equal(sw_anth_request_parse(body, strlen(body), 1, &req, &err), SW_OK);
        assert_non_null(req.untranslatable);
        assert_string_equal(req.untranslatable->code, "untranslatable");
        assert_string_equal(req.untranslatable->param, "messages[1].content[0].type");
        assert_non_null(strstr(req.untranslatable->message, "'thinking' block"));
        assert_int_equal(req.untranslatable_fields, 1u << SW_ANTH_FIELD_THINKING_BLOCK);
        assert_same_text(&req, &ref);
        /* the strict translation of the parsed body (its messages the memo's,
         * with their translations kept) */
        json_t *out = NULL;
        assert_int_equal(sw_anth_req_to_openai(req.native, 1, &out, &err), SW_EINVAL);
        assert_string_equal(err.code, "untranslatable");
        assert_string_equal(err.param, "messages[1].content[0].type");
        assert_string_equal(err.message, req.untranslatable->message);
        assert_null(out);
        sw_request_free(&req);
    }
    sw_request_free(&ref);
    sw_jmemo_set_max(0);
    free(body);
    free(stripped);
}

/* 80 turns, with a system message inside messages after the fifth when
 * `system`. */
static char *system_inside_body(bool system)
{
    struct sw_buf b;
    sw_buf_init(&b, (size_t)1 << 30);
    assert_int_equal(sw_buf_append_str(&b, "{\"model\":\"m\",\"max_tokens\":9,\"messages\":["), 0);
    for (int i = 0; i < 80; i++) {
        char m[512];
        snprintf(m, sizeof m,
                 "%s{\"role\":\"user\",\"content\":\"step %d: go on with the refactor of the "
                 "parser module, then run the tests again\"},{\"role\":\"assistant\","
                 "\"content\":\"done with step %d, and the tests pass again\"}%s",
                 i ? "," : "", i, i,
                 system && i == 4 ? ",{\"role\":\"system\",\"content\":\"From now on answer in "
                                    "French, and keep every answer under ten lines.\"}" : "");
        assert_int_equal(sw_buf_append_str(&b, m), 0);
    }
    assert_int_equal(sw_buf_append_str(&b, "]}"), 0);
    return b.ptr;
}

/* Whether messages hold a system message is noted by the translation, from
 * the message (memo off) or from the key its kept translation has: a body
 * without one is not walked for it, and one with it is. */
static void test_native_system_noted(void **state)
{
    (void)state;
    for (int with = 0; with < 2; with++) {
        char *body = system_inside_body(with);
        assert_true(strlen(body) >= SW_JMEMO_MIN_BODY);
        for (int pass = 0; pass < 3; pass++) {
            sw_jmemo_set_max(pass ? 64u << 20 : 0);
            struct sw_chat_request req;
            struct sw_request_error err;
            assert_int_equal(sw_anth_request_parse(body, strlen(body), 1, &req, &err), SW_OK);
            assert_int_equal(req.native_system, with);
            assert_int_equal(sw_anth_native_prepare(req.native, NULL, req.native_system), SW_OK);
            assert_int_equal(json_array_size(json_object_get(req.native, "messages")), 160);
            assert_int_equal(json_is_array(json_object_get(req.native, "system")), with);
            sw_request_free(&req);
        }
        free(body);
    }
    sw_jmemo_set_max(0);
}

/* A body as Claude Code sends it (context_management with thinking on) with
 * a metadata key chat has no form for: fields that take a round of pruning
 * each edit a copy of the path to them only. The client's body (shared with
 * the parse memo) keeps them, and the next body that resends the messages
 * shares their translations. */
static void test_prune_copies_the_path(void **state)
{
    (void)state;
    char *turns = thinking_body(80, true);
    const char head[] = "{\"context_management\":{\"edits\":[{\"type\":\"clear_thinking_20251015\"}]},"
                        "\"metadata\":{\"user_id\":\"u\",\"trace\":\"t\"},";
    char *body = malloc(strlen(head) + strlen(turns));
    assert_non_null(body);
    sprintf(body, "%s%s", head, turns + 1);
    assert_true(strlen(body) >= SW_JMEMO_MIN_BODY);
    sw_jmemo_set_max(64u << 20);
    struct sw_chat_request req[2];
    struct sw_request_error err;
    for (int k = 0; k < 2; k++) {
        assert_int_equal(sw_anth_request_parse(body, strlen(body), 1, &req[k], &err), SW_OK);
        assert_int_equal(req[k].untranslatable_fields,
                         1u << SW_ANTH_FIELD_CONTEXT_MANAGEMENT | 1u << SW_ANTH_FIELD_METADATA);
        assert_non_null(json_object_get(req[k].native, "context_management"));
        assert_non_null(json_object_get(json_object_get(req[k].native, "metadata"), "trace"));
    }
    const json_t *m0 = json_object_get(req[0].body, "messages"), *m1 = json_object_get(req[1].body, "messages");
    assert_ptr_equal(json_array_get(m0, 3), json_array_get(m1, 3));     /* kept translations */
    assert_same_text(&req[1], &req[0]);
    size_t n;
    char *whole = sw_request_text_whole(&req[1], &n);
    assert_null(memmem(whole, n, "clear_thinking", 14));
    free(whole);
    sw_request_free(&req[0]);
    sw_request_free(&req[1]);
    sw_jmemo_set_max(0);
    free(body);
    free(turns);
}

/* n custom tools, each followed by a server tool (left out when strip);
 * custom tool `changed` (-1: none) says one byte more. */
static char *server_tools_body(int n, bool strip, int changed)
{
    struct sw_buf b;
    sw_buf_init(&b, (size_t)1 << 30);
    assert_int_equal(sw_buf_append_str(&b, "{\"model\":\"m\",\"max_tokens\":9,\"messages\":"
                                           "[{\"role\":\"user\",\"content\":\"go on\"}],"
                                           "\"tools\":["), 0);
    for (int i = 0; i < n; i++) {
        char t[512];
        snprintf(t, sizeof t,
                 "%s{\"name\":\"step_%d\",\"description\":\"Runs step %d of the build%s and "
                 "reports each failing test with its log\",\"input_schema\":{\"type\":"
                 "\"object\",\"properties\":{\"path\":{\"type\":\"string\"}}}}%s",
                 i ? "," : "", i, i, i == changed ? "!" : "",
                 strip ? "" : ",{\"type\":\"web_search_20250305\",\"name\":\"web_search\"}");
        assert_int_equal(sw_buf_append_str(&b, t), 0);
    }
    assert_int_equal(sw_buf_append_str(&b, "]}"), 0);
    return b.ptr;
}

static const json_t *chat_tool(const struct sw_chat_request *r, size_t i)
{
    return json_array_get(json_object_get(r->body, "tools"), i);
}

/* Server tools next to custom tools, more than the 64 rounds of pruning the
 * other fields get: left out as the translation meets them (the body
 * parses, its translation is the body's without them, the first refusal
 * names the first), memo off and on. A custom tool's translation is kept
 * with it: the next body that sends it shares it, and one that changed by
 * one byte gets its own. */
static void test_tools_kept_and_left_out(void **state)
{
    (void)state;
    char *body = server_tools_body(70, false, -1), *stripped = server_tools_body(70, true, -1),
         *changed = server_tools_body(70, false, 3);
    assert_true(strlen(body) >= SW_JMEMO_MIN_BODY);
    struct sw_chat_request ref, req[3], ch;
    struct sw_request_error err;
    sw_jmemo_set_max(0);
    assert_int_equal(sw_anth_request_parse(stripped, strlen(stripped), 1, &ref, &err), SW_OK);
    assert_null(ref.untranslatable);
    for (int pass = 0; pass < 3; pass++) {
        sw_jmemo_set_max(pass ? 64u << 20 : 0);
        assert_int_equal(sw_anth_request_parse(body, strlen(body), 1, &req[pass], &err), SW_OK);
        assert_non_null(req[pass].untranslatable);
        assert_string_equal(req[pass].untranslatable->param, "tools[1].type");
        assert_int_equal(req[pass].untranslatable_fields, 1u << SW_ANTH_FIELD_SERVER_TOOL);
        assert_same_text(&req[pass], &ref);
        assert_int_equal(req[pass].prompt_tokens_est, req[0].prompt_tokens_est);
    }
    assert_ptr_equal(chat_tool(&req[1], 3), chat_tool(&req[2], 3));     /* shared */
    assert_ptr_not_equal(chat_tool(&req[0], 3), chat_tool(&req[1], 3));
    assert_int_equal(sw_anth_request_parse(changed, strlen(changed), 1, &ch, &err), SW_OK);
    assert_ptr_equal(chat_tool(&ch, 2), chat_tool(&req[2], 2));
    assert_ptr_not_equal(chat_tool(&ch, 3), chat_tool(&req[2], 3));
    size_t n;
    char *whole = sw_request_text_whole(&ch, &n);
    assert_non_null(memmem(whole, n, "step 3 of the build!", 20));
    free(whole);
    for (int pass = 0; pass < 3; pass++)
        sw_request_free(&req[pass]);
    sw_request_free(&ch);
    sw_request_free(&ref);
    sw_jmemo_set_max(0);
    free(body);
    free(stripped);
    free(changed);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_client_header_grammar),
        cmocka_unit_test(test_req_to_openai),
        cmocka_unit_test(test_agent_request_parse),
        cmocka_unit_test(test_translation_kept),
        cmocka_unit_test(test_translation_bound),
        cmocka_unit_test(test_field_class),
        cmocka_unit_test(test_native_system),
        cmocka_unit_test(test_native_thinking),
        cmocka_unit_test(test_req_from_openai),
        cmocka_unit_test(test_request_parse),
        cmocka_unit_test(test_answers),
        cmocka_unit_test(test_answer_required_nulls),
        cmocka_unit_test(test_stream_anth_to_oai),
        cmocka_unit_test(test_stream_format_tool_and_error_type),
        cmocka_unit_test(test_stream_oai_to_anth),
        cmocka_unit_test(test_thinking_blocks_left_out),
        cmocka_unit_test(test_tools_kept_and_left_out),
        cmocka_unit_test(test_native_system_noted),
        cmocka_unit_test(test_prune_copies_the_path),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
