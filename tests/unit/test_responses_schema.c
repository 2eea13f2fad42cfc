/* What the Responses translation sends (src/dialect/responses_resp.c),
 * validated against the schemas of the official OpenAI OpenAPI spec: the
 * Response object and every streamed event, with Spillway's own JSON
 * Schema validator (src/contract/schema.c; ajv is not among the test
 * packages). tests/spec/openai_responses.json holds the schemas, extracted
 * from the spec at SPEC_COMMIT by tests/spec/extract_responses.py. */
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
#include "contract/schema.h"
#include "dialect/responses_req.h"
#include "dialect/responses_resp.h"
#include "relay/sse.h"

#define SPEC_FILE "tests/spec/openai_responses.json"
#define SPEC_COMMIT "f85dbe223d40e1a31cba812ab2d755c7e98a92a3" /* github.com/openai/openai-openapi */

static json_t *spec;

static int setup(void **state)
{
    (void)state;
    json_error_t e;
    spec = json_load_file(SPEC_FILE, 0, &e);
    if (!spec) {
        fprintf(stderr, "%s: %s (run from the repository root)\n", SPEC_FILE, e.text);
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    json_decref(spec);
    return 0;
}

static char *J(const char *s)
{
    char *o = strdup(s);
    for (char *p = o; *p; p++)
        if (*p == '\'')
            *p = '"';
    return o;
}

static json_t *load(const char *s)
{
    char *t = J(s);
    json_error_t e;
    json_t *j = json_loads(t, 0, &e);
    if (!j)
        fail_msg("bad test JSON (%s): %s", e.text, t);
    free(t);
    return j;
}

/* Validates instance against the spec's schema `name`: the schema is
 * {"$ref": "#/components/schemas/<name>"} next to the spec's components,
 * so every reference resolves as in the spec. */
static enum sw_schema_result check(const char *name, const json_t *instance,
                                   struct sw_schema_error *err)
{
    char ref[160];
    snprintf(ref, sizeof ref, "#/components/schemas/%s", name);
    json_t *s = json_pack("{s:s, s:O}", "$ref", ref, "components", json_object_get(spec, "components"));
    enum sw_schema_result r = sw_schema_validate(s, instance, err);
    json_decref(s);
    return r;
}

static void assert_valid(const char *name, const json_t *instance)
{
    struct sw_schema_error err = {{0}, {0}};
    enum sw_schema_result r = check(name, instance, &err);
    if (r != SW_SCHEMA_OK) {
        char *d = json_dumps(instance, JSON_COMPACT);
        fail_msg("not a valid %s (%d) at '%s': %s\n  %s", name, (int)r, err.path, err.reason, d);
    }
}

static void test_spec_file(void **state)
{
    (void)state;
    assert_string_equal(json_string_value(json_object_get(spec, "commit")), SPEC_COMMIT);
    json_t *schemas = json_object_get(json_object_get(spec, "components"), "schemas");
    assert_non_null(json_object_get(schemas, "Response"));
    assert_non_null(json_object_get(schemas, "ResponseStreamEvent"));
}

/* The validator really applies the spec: broken objects are refused. */
static void test_validator_bites(void **state)
{
    (void)state;
    static const struct sw_resp_meta meta = {"resp_x", "m", 1, 0};
    json_t *ans = load("{'choices':[{'message':{'role':'assistant','content':'hi'},'finish_reason':'stop'}]}");
    json_t *r = sw_responses_from_chat(ans, NULL, &meta);
    assert_valid("Response", r);
    struct sw_schema_error err;
    json_t *bad = json_deep_copy(r);
    json_object_del(bad, "output");
    assert_int_equal(check("Response", bad, &err), SW_SCHEMA_INVALID);
    json_decref(bad);
    bad = json_deep_copy(r);
    json_object_set_new(bad, "status", json_string("done"));
    assert_int_equal(check("Response", bad, &err), SW_SCHEMA_INVALID);
    json_decref(bad);
    bad = json_deep_copy(r);
    json_object_del(json_array_get(json_object_get(json_array_get(json_object_get(bad, "output"), 0),
                                                   "content"), 0), "annotations");
    assert_int_equal(check("Response", bad, &err), SW_SCHEMA_INVALID);
    json_decref(bad);
    json_t *ev = load("{'type':'response.output_text.delta','sequence_number':1,'item_id':'m','output_index':0,"
                      "'content_index':0,'delta':'x'}"); /* logprobs missing */
    assert_int_equal(check("ResponseStreamEvent", ev, &err), SW_SCHEMA_INVALID);
    json_object_set_new(ev, "logprobs", json_array());
    assert_int_equal(check("ResponseStreamEvent", ev, &err), SW_SCHEMA_OK);
    json_decref(ev);
    json_decref(r);
    json_decref(ans);
}

static const char *const answers[] = {
    "{'choices':[{'message':{'role':'assistant','content':'Hello','refusal':null},'finish_reason':'stop'}],"
    "'usage':{'prompt_tokens':5,'completion_tokens':2,'total_tokens':7}}",
    "{'choices':[{'message':{'role':'assistant','reasoning_content':'think','content':'a','refusal':'r',"
    "'tool_calls':[{'id':'c1','type':'function','function':{'name':'f','arguments':'{}'}}]},'finish_reason':'length'}]}",
    "{'choices':[{'message':{'role':'assistant','content':null,'tool_calls':[{'id':'c1','type':'function',"
    "'function':{'name':'f','arguments':'{}'}}]},'finish_reason':'tool_calls'}]}",
    "{'choices':[{'message':{'role':'assistant','content':''},'finish_reason':'content_filter'}]}",
};

/* Requests whose parameters the answer echoes. */
static const char *const requests[] = {
    NULL,
    "{'model':'m','input':'x','instructions':'i','max_output_tokens':9,'metadata':{'a':'b'},'store':false,"
    "'tools':[{'type':'function','name':'f','parameters':{'type':'object'}},{'type':'function','name':'g',"
    "'description':'d','parameters':{},'strict':true}],'tool_choice':{'type':'function','name':'f'},"
    "'text':{'format':{'type':'json_schema','name':'n','schema':{'type':'object'},'strict':true},'verbosity':'low'},"
    "'temperature':0.2,'top_p':0.5,'reasoning':{'effort':'low'},'parallel_tool_calls':false,'user':'u',"
    "'previous_response_id':'resp_0'}",
    "{'model':'m','input':'x','tool_choice':'required','text':{'format':{'type':'json_object'}}}",
};

static void test_answers_valid(void **state)
{
    (void)state;
    static const struct sw_resp_meta meta = {"resp_x", "pub", 1700000000, 1700000001};
    for (size_t a = 0; a < sizeof answers / sizeof *answers; a++) {
        for (size_t q = 0; q < sizeof requests / sizeof *requests; q++) {
            json_t *ans = load(answers[a]), *req = requests[q] ? load(requests[q]) : NULL;
            json_t *r = sw_responses_from_chat(ans, req, &meta);
            assert_non_null(r);
            assert_valid("Response", r);
            json_decref(r);
            json_decref(ans);
            json_decref(req);
        }
    }
}

/* ---- Streams ---- */

struct ctx {
    const char *stream_schema;
    int n;
};

static const char *event_schema(const char *type)
{
    static const char *const map[][2] = {
        {"response.created", "ResponseCreatedEvent"},
        {"response.in_progress", "ResponseInProgressEvent"},
        {"response.output_item.added", "ResponseOutputItemAddedEvent"},
        {"response.content_part.added", "ResponseContentPartAddedEvent"},
        {"response.output_text.delta", "ResponseTextDeltaEvent"},
        {"response.output_text.done", "ResponseTextDoneEvent"},
        {"response.refusal.delta", "ResponseRefusalDeltaEvent"},
        {"response.refusal.done", "ResponseRefusalDoneEvent"},
        {"response.reasoning_text.delta", "ResponseReasoningTextDeltaEvent"},
        {"response.reasoning_text.done", "ResponseReasoningTextDoneEvent"},
        {"response.content_part.done", "ResponseContentPartDoneEvent"},
        {"response.function_call_arguments.delta", "ResponseFunctionCallArgumentsDeltaEvent"},
        {"response.function_call_arguments.done", "ResponseFunctionCallArgumentsDoneEvent"},
        {"response.output_item.done", "ResponseOutputItemDoneEvent"},
        {"response.completed", "ResponseCompletedEvent"},
        {"response.incomplete", "ResponseIncompleteEvent"},
        {"response.failed", "ResponseFailedEvent"},
        {"error", "ResponseErrorEvent"},
    };
    for (size_t i = 0; i < sizeof map / sizeof *map; i++)
        if (!strcmp(map[i][0], type))
            return map[i][1];
    return NULL;
}

static int on_event(void *ud, const char *event, const char *data, size_t len)
{
    struct ctx *c = ud;
    json_error_t e;
    json_t *d = json_loadb(data, len, 0, &e);
    assert_non_null(d);
    const char *name = event_schema(event);
    if (!name)
        fail_msg("an event the test does not know: %s", event);
    assert_valid(name, d);
    assert_valid("ResponseStreamEvent", d);
    json_decref(d);
    c->n++;
    return SW_OK;
}

static int validate_events(const struct sw_buf *b)
{
    struct ctx c = {NULL, 0};
    struct sw_sse p;
    sw_sse_init(&p, 1 << 24, on_event, &c);
    assert_int_equal(sw_sse_feed(&p, b->ptr, b->len), SW_OK);
    sw_sse_free(&p);
    return c.n;
}

#define CH(delta, fin) "{'choices':[{'index':0,'delta':" delta ",'finish_reason':" fin "}]}"

/* Chunk sequences (JSON arrays); the last element's "end" says how the
 * stream ends: finish, fail or error. */
static const struct {
    const char *chunks;
    const char *end;
} streams[] = {
    {"[" CH("{'role':'assistant','content':''}", "null") "," CH("{'content':'Hi'}", "null") ","
     CH("{}", "'stop'") ",{'choices':[],'usage':{'prompt_tokens':1,'completion_tokens':1}}]", "finish"},
    {"[" CH("{'content':'ok'}", "null") ","
     CH("{'tool_calls':[{'index':0,'id':'c1','function':{'name':'f','arguments':'{\\'a\\''}}]}", "null") ","
     CH("{'tool_calls':[{'index':0,'function':{'arguments':':1}'}}]}", "null") ","
     CH("{'tool_calls':[{'index':1,'id':'c2','function':{'name':'g','arguments':'{}'}}]}", "null") ","
     CH("{}", "'tool_calls'") "]", "finish"},
    {"[" CH("{'reasoning_content':'hm'}", "null") "," CH("{'content':'a'}", "null") ","
     CH("{'refusal':'no'}", "null") "," CH("{}", "'length'") "]", "finish"},
    {"[" CH("{'role':'assistant'}", "'stop'") "]", "finish"},
    {"[" CH("{'content':'a'}", "null") "," CH("{'tool_calls':[{'index':0,'id':'c','function':{'name':'f'}}]}", "null") "]",
     "fail"},
    {"[]", "fail"},
    {"[" CH("{'content':'a'}", "null") "]", "error"},
};

static void test_streams_valid(void **state)
{
    (void)state;
    static const struct sw_resp_meta meta = {"resp_s", "pub", 1700000000, 0};
    for (size_t q = 0; q < sizeof requests / sizeof *requests; q++) {
        for (size_t i = 0; i < sizeof streams / sizeof *streams; i++) {
            json_t *req = requests[q] ? load(requests[q]) : NULL, *a = load(streams[i].chunks);
            struct sw_resp_stream s;
            struct sw_buf out;
            sw_buf_init(&out, 1 << 24);
            assert_int_equal(sw_resp_stream_init(&s, req, &meta), SW_OK);
            if (!strcmp(streams[i].end, "error")) {
                assert_int_equal(sw_resp_stream_start(&s, &out), SW_OK);
            }
            size_t k;
            json_t *c;
            json_array_foreach(a, k, c) assert_int_equal(sw_resp_stream_chunk(&s, c, &out), SW_OK);
            if (!strcmp(streams[i].end, "finish"))
                assert_int_equal(sw_resp_stream_finish(&s, 1700000003, &out), SW_OK);
            else if (!strcmp(streams[i].end, "fail"))
                assert_int_equal(sw_resp_stream_fail(&s, NULL, "upstream failed", &out), SW_OK);
            else
                assert_int_equal(sw_resp_stream_error(&s, "server_error", "upstream failed", &out), SW_OK);
            assert_true(validate_events(&out) >= 3);
            sw_resp_stream_free(&s);
            sw_buf_free(&out);
            json_decref(a);
            json_decref(req);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spec_file),
        cmocka_unit_test(test_validator_bites),
        cmocka_unit_test(test_answers_valid),
        cmocka_unit_test(test_streams_valid),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
