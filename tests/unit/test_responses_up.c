/* Unit tests of a Responses backend read by the relay (src/dialect/
 * responses_up.c): passed-through events and answers (type, usage, model
 * rewritten, errors, preamble), Responses objects as chat completions, and
 * Responses streams as chat chunks, including the round trip through the
 * chat-to-Responses stream (responses_resp.c) that a masked attempt takes.
 * JSON in the tables is written with ' for " (see J). */
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
#include "dialect/responses_resp.h"
#include "dialect/responses_up.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

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

static void assert_json_eq(const json_t *got, const char *want, const char *name)
{
    json_t *w = load(want);
    if (!json_equal(got, w)) {
        char *g = got ? json_dumps(got, JSON_COMPACT | JSON_SORT_KEYS) : strdup("NULL");
        char *ws = json_dumps(w, JSON_COMPACT | JSON_SORT_KEYS);
        print_error("case %s:\n  got:  %s\n  want: %s\n", name, g, ws);
        free(g);
        free(ws);
        json_decref(w);
        fail();
    }
    json_decref(w);
}

/* ---- Passed through ---- */

static int native(const char *data, struct sw_native_event *ev)
{
    char *t = J(data);
    int rc = sw_resp_native_event(t, strlen(t), "public", ev);
    free(t);
    return rc;
}

static void test_native_events(void **state)
{
    (void)state;
    struct sw_native_event ev;
    assert_int_equal(native("{'type':'response.created','sequence_number':0,'response':"
                            "{'id':'resp_1','model':'upstream','output':[]}}", &ev), 0);
    assert_true(ev.preamble);
    assert_false(ev.content || ev.stop || ev.error);
    assert_string_equal(json_string_value(json_object_get(json_object_get(ev.tree, "response"),
                                                          "model")), "public");
    json_decref(ev.tree);

    assert_int_equal(native("{'type':'response.output_item.added','output_index':0,'item':{}}",
                            &ev), 0);
    assert_true(ev.preamble);
    json_decref(ev.tree);

    assert_int_equal(native("{'type':'response.output_text.delta','delta':'hi'}", &ev), 0);
    assert_true(ev.content);
    assert_false(ev.preamble);
    json_decref(ev.tree);

    assert_int_equal(native("{'type':'response.function_call_arguments.delta','delta':'{'}", &ev),
                     0);
    assert_true(ev.content);
    json_decref(ev.tree);

    assert_int_equal(native("{'type':'response.completed','response':{'model':'u','usage':"
                            "{'input_tokens':12,'output_tokens':5}}}", &ev), 0);
    assert_true(ev.stop);
    assert_int_equal(ev.usage_in, 12);
    assert_int_equal(ev.usage_out, 5);
    json_decref(ev.tree);

    assert_int_equal(native("{'type':'response.incomplete','response':{'usage':"
                            "{'input_tokens':1,'output_tokens':2}}}", &ev), 0);
    assert_true(ev.stop);
    json_decref(ev.tree);

    assert_int_equal(native("{'type':'response.failed','response':{'status':'failed'}}", &ev), 0);
    assert_true(ev.error);
    json_decref(ev.tree);
    assert_int_equal(native("{'type':'error','code':'x','message':'m'}", &ev), 0);
    assert_true(ev.error);
    json_decref(ev.tree);

    /* a terminator after the end: nothing to pass on */
    assert_int_equal(native("[DONE]", &ev), 0);
    assert_null(ev.tree);
    assert_false(ev.stop);
    assert_int_equal(native("not json", &ev), -1);
    assert_int_equal(native("{'no':'type'}", &ev), -1);
}

static void test_native_answer(void **state)
{
    (void)state;
    long in = 0, out = 0;
    json_t *a = load("{'output':[],'usage':{'input_tokens':3,'output_tokens':4}}");
    assert_int_equal(sw_resp_native_answer(a, &in, &out), 0);
    assert_int_equal(in, 3);
    assert_int_equal(out, 4);
    json_decref(a);
    a = load("{'output':[]}");
    assert_int_equal(sw_resp_native_answer(a, &in, &out), 0);
    assert_int_equal(in, -1);
    assert_int_equal(out, -1);
    json_decref(a);
    a = load("{'choices':[]}");
    assert_int_equal(sw_resp_native_answer(a, &in, &out), -1);
    json_decref(a);
}

/* ---- Responses objects as chat completions ---- */

static const struct {
    const char *name, *resp, *want;
} answers[] = {
    {"text",
     "{'id':'resp_1','status':'completed','output':[{'type':'message','role':'assistant',"
     "'content':[{'type':'output_text','text':'hel','annotations':[]},{'type':'output_text',"
     "'text':'lo'}]}],'usage':{'input_tokens':7,'output_tokens':3,'total_tokens':10}}",
     "{'id':'resp_1','object':'chat.completion','created':100,'model':'m','choices':[{'index':0,"
     "'message':{'role':'assistant','content':'hello'},'finish_reason':'stop','logprobs':null}],"
     "'usage':{'prompt_tokens':7,'completion_tokens':3,'total_tokens':10,"
     "'prompt_tokens_details':{'cached_tokens':0},'completion_tokens_details':"
     "{'reasoning_tokens':0}}}"},
    {"tool call, reasoning, refusal",
     "{'id':'resp_2','status':'completed','output':[{'type':'reasoning','summary':"
     "[{'type':'summary_text','text':'think'}]},{'type':'message','content':[{'type':'refusal',"
     "'refusal':'no'}]},{'type':'function_call','call_id':'call_1','name':'f',"
     "'arguments':'{}'}],'usage':{'input_tokens':1,'output_tokens':2,'input_tokens_details':"
     "{'cached_tokens':1},'output_tokens_details':{'reasoning_tokens':1}}}",
     "{'id':'resp_2','object':'chat.completion','created':100,'model':'m','choices':[{'index':0,"
     "'message':{'role':'assistant','content':null,'refusal':'no','reasoning_content':'think',"
     "'tool_calls':[{'id':'call_1','type':'function','function':{'name':'f','arguments':'{}'}}]},"
     "'finish_reason':'tool_calls','logprobs':null}],'usage':{'prompt_tokens':1,"
     "'completion_tokens':2,'total_tokens':3,'prompt_tokens_details':{'cached_tokens':1},"
     "'completion_tokens_details':{'reasoning_tokens':1}}}"},
    {"incomplete, hosted items left out",
     "{'status':'incomplete','incomplete_details':{'reason':'max_output_tokens'},'output':"
     "[{'type':'web_search_call','id':'ws_1'},{'type':'message','content':[{'type':'output_text',"
     "'text':'cut'}]}]}",
     "{'id':null,'object':'chat.completion','created':100,'model':'m','choices':[{'index':0,"
     "'message':{'role':'assistant','content':'cut'},'finish_reason':'length','logprobs':null}]}"},
    {"content filter",
     "{'status':'incomplete','incomplete_details':{'reason':'content_filter'},'output':[]}",
     "{'id':null,'object':'chat.completion','created':100,'model':'m','choices':[{'index':0,"
     "'message':{'role':'assistant','content':null},'finish_reason':'content_filter',"
     "'logprobs':null}]}"},
};

static void test_answers(void **state)
{
    (void)state;
    for (size_t i = 0; i < N(answers); i++) {
        json_t *r = load(answers[i].resp);
        json_t *c = sw_responses_to_chat(r, "m", 100);
        assert_json_eq(c, answers[i].want, answers[i].name);
        json_decref(c);
        json_decref(r);
    }
    json_t *bad = load("{'choices':[]}");
    assert_null(sw_responses_to_chat(bad, "m", 1));
    json_decref(bad);
}

/* ---- Streams as chat chunks ---- */

static int feed(struct sw_resp_to_oai *s, const char *ev, json_t *chunks, const char **msg)
{
    char *t = J(ev);
    int rc = sw_resp_to_oai_event(s, t, strlen(t), chunks, msg);
    free(t);
    return rc;
}

static const char *const stream_events[] = {
    "{'type':'response.created','sequence_number':0,'response':{'id':'resp_9'}}",
    "{'type':'response.in_progress','sequence_number':1,'response':{'id':'resp_9'}}",
    "{'type':'response.output_item.added','output_index':0,'item':{'type':'message'}}",
    "{'type':'response.content_part.added','output_index':0,'content_index':0,'part':{}}",
    "{'type':'response.output_text.delta','output_index':0,'delta':'Hi [EMA'}",
    "{'type':'response.output_text.delta','output_index':0,'delta':'IL_1]'}",
    "{'type':'response.output_text.done','output_index':0,'text':'Hi [EMAIL_1]'}",
    "{'type':'response.output_item.done','output_index':0,'item':{}}",
    "{'type':'response.output_item.added','output_index':1,'item':{'type':'function_call',"
    "'call_id':'call_7','name':'send','arguments':''}}",
    "{'type':'response.function_call_arguments.delta','output_index':1,'delta':'{\\'to\\':'}",
    "{'type':'response.function_call_arguments.delta','output_index':1,'delta':'\\'x\\'}'}",
    "{'type':'response.function_call_arguments.done','output_index':1,'arguments':'{}'}",
    "{'type':'response.completed','response':{'id':'resp_9','status':'completed','usage':"
    "{'input_tokens':5,'output_tokens':6}}}",
};

static void test_stream_to_chunks(void **state)
{
    (void)state;
    struct sw_resp_to_oai s;
    sw_resp_to_oai_init(&s, "m", 100);
    json_t *chunks = json_array();
    const char *msg;
    for (size_t i = 0; i < N(stream_events); i++)
        assert_int_equal(feed(&s, stream_events[i], chunks, &msg), 0);
    assert_true(s.done);
    /* text, text, call added, arguments x2, finish, usage */
    assert_int_equal(json_array_size(chunks), 7);
    json_t *d0 = json_object_get(json_array_get(json_object_get(json_array_get(chunks, 0),
                                                                "choices"), 0), "delta");
    assert_json_eq(d0, "{'content':'Hi [EMA'}", "first delta");
    assert_string_equal(json_string_value(json_object_get(json_array_get(chunks, 0), "id")),
                        "resp_9");
    json_t *d2 = json_object_get(json_array_get(json_object_get(json_array_get(chunks, 2),
                                                                "choices"), 0), "delta");
    assert_json_eq(d2, "{'tool_calls':[{'index':0,'id':'call_7','type':'function','function':"
                       "{'name':'send','arguments':''}}]}", "call added");
    json_t *c5 = json_array_get(json_object_get(json_array_get(chunks, 5), "choices"), 0);
    assert_string_equal(json_string_value(json_object_get(c5, "finish_reason")), "tool_calls");
    json_t *u = json_object_get(json_array_get(chunks, 6), "usage");
    assert_int_equal(json_integer_value(json_object_get(u, "prompt_tokens")), 5);
    assert_int_equal(json_integer_value(json_object_get(u, "completion_tokens")), 6);

    /* the chunks become a Responses stream again: the same text and call */
    struct sw_resp_stream rs;
    struct sw_resp_meta meta = {"resp_x", "m", 100, 0};
    assert_int_equal(sw_resp_stream_init(&rs, NULL, &meta), SW_OK);
    struct sw_buf out;
    sw_buf_init(&out, 1 << 20);
    size_t i;
    json_t *c;
    json_array_foreach(chunks, i, c)
        assert_int_equal(sw_resp_stream_chunk(&rs, c, &out), SW_OK);
    assert_int_equal(sw_resp_stream_finish(&rs, 101, &out), SW_OK);
    assert_non_null(rs.final);
    json_t *output = json_object_get(rs.final, "output");
    assert_int_equal(json_array_size(output), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(
                            json_array_get(output, 0), "content"), 0), "text")),
                        "Hi [EMAIL_1]");
    assert_string_equal(json_string_value(json_object_get(json_array_get(output, 1),
                                                          "arguments")), "{\"to\":\"x\"}");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(rs.final, "usage"),
                                                        "output_tokens")), 6);
    sw_resp_stream_free(&rs);
    sw_buf_free(&out);
    json_decref(chunks);
}

static void test_stream_errors(void **state)
{
    (void)state;
    struct sw_resp_to_oai s;
    const char *msg;
    json_t *chunks = json_array();
    sw_resp_to_oai_init(&s, "m", 1);
    assert_int_equal(feed(&s, "{'type':'error','code':'x','message':'y'}", chunks, &msg), -1);
    assert_int_equal(feed(&s, "{'type':'response.failed','response':{}}", chunks, &msg), -1);
    assert_int_equal(feed(&s, "nope", chunks, &msg), -1);
    assert_string_equal(msg, "malformed JSON in stream event");
    /* unknown events and a [DONE] make nothing */
    assert_int_equal(feed(&s, "{'type':'response.web_search_call.searching'}", chunks, &msg), 0);
    assert_int_equal(feed(&s, "[DONE]", chunks, &msg), 0);
    assert_int_equal(json_array_size(chunks), 0);
    /* at most SW_RESP_MAX_TOOLS calls */
    char ev[160];
    int rc = 0;
    for (int k = 0; k <= SW_RESP_MAX_TOOLS && !rc; k++) {
        snprintf(ev, sizeof ev, "{'type':'response.output_item.added','output_index':%d,'item':"
                                "{'type':'function_call','call_id':'c%d','name':'f'}}", k, k);
        rc = feed(&s, ev, chunks, &msg);
    }
    assert_int_equal(rc, -1);
    assert_int_equal(s.n_calls, SW_RESP_MAX_TOOLS);
    /* an output_index out of range is refused, not written */
    sw_resp_to_oai_init(&s, "m", 1);
    assert_int_equal(feed(&s, "{'type':'response.output_item.added','output_index':9999,'item':"
                              "{'type':'function_call'}}", chunks, &msg), -1);
    json_decref(chunks);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_native_events),
        cmocka_unit_test(test_native_answer),
        cmocka_unit_test(test_answers),
        cmocka_unit_test(test_stream_to_chunks),
        cmocka_unit_test(test_stream_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
