/* Unit tests of the Responses <-> chat-completions translation
 * (src/dialect/responses_req.c, responses_resp.c): requests table driven
 * (each case a Responses body and the exact chat body expected, or the
 * error's param and code), whole answers, and streams fed chunk by chunk,
 * split at every byte of the chat SSE stream. The events' validity against
 * the official schemas is test_responses_schema.c's. JSON in the tables is
 * written with ' for " (see J). */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/buf.h"
#include "common/err.h"
#include "common/jmemo.h"
#include "dialect/responses_req.h"
#include "dialect/responses_resp.h"
#include "relay/sse.h"
#include "request/request.h"
#include "text_whole.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* The JSON text s with every ' replaced by " (malloc'ed). */
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
    const char *prior;      /* items before the input, or NULL */
    const char *out;        /* NULL: an error is expected */
    const char *param;
    const char *code;
};

static const struct req_case req_cases[] = {
    {"string input, instructions, scalars",
     "{'model':'m','input':'hi','instructions':'be brief','max_output_tokens':50,'temperature':0.5,"
     "'top_p':0.9,'metadata':{'k':'v'},'user':'u1','store':false,'previous_response_id':null,"
     "'truncation':'disabled','background':false,'include':['reasoning.encrypted_content']}",
     NULL,
     "{'model':'m','messages':[{'role':'system','content':'be brief'},{'role':'user','content':'hi'}],"
     "'max_completion_tokens':50,'temperature':0.5,'top_p':0.9,'metadata':{'k':'v'},'user':'u1'}",
     NULL, NULL},
    {"messages of every role, parts",
     "{'model':'m','input':[{'role':'developer','content':'dev'},"
     "{'type':'message','role':'system','content':[{'type':'input_text','text':'sys'}]},"
     "{'role':'user','content':[{'type':'input_text','text':'look'},"
     "{'type':'input_image','image_url':'https://x/i.png','detail':'low'},"
     "{'type':'input_file','file_data':'data:application/pdf;base64,QUJD','filename':'a.pdf'},"
     "{'type':'input_file','file_id':'file-1'}]},"
     "{'role':'assistant','content':'sure'}]}",
     NULL,
     "{'model':'m','messages':[{'role':'developer','content':'dev'},"
     "{'role':'system','content':[{'type':'text','text':'sys'}]},"
     "{'role':'user','content':[{'type':'text','text':'look'},"
     "{'type':'image_url','image_url':{'url':'https://x/i.png','detail':'low'}},"
     "{'type':'file','file':{'file_data':'data:application/pdf;base64,QUJD','filename':'a.pdf'}},"
     "{'type':'file','file':{'file_id':'file-1'}}]},"
     "{'role':'assistant','content':'sure'}]}",
     NULL, NULL},
    {"tool round trip: output message, calls merged, outputs",
     "{'model':'m','input':[{'role':'user','content':'weather?'},"
     "{'type':'message','id':'msg_1','role':'assistant','status':'completed',"
     "'content':[{'type':'output_text','text':'Let me ','annotations':[]},{'type':'output_text','text':'check.'}]},"
     "{'type':'function_call','id':'fc_1','call_id':'c1','name':'get','arguments':'{\\'city\\':\\'Oslo\\'}','status':'completed'},"
     "{'type':'function_call','call_id':'c2','name':'get','arguments':'{}'},"
     "{'type':'function_call_output','call_id':'c1','output':'12C'},"
     "{'type':'function_call_output','call_id':'c2','output':[{'type':'input_text','text':'a'},{'type':'input_text','text':'b'}]}],"
     "'tools':[{'type':'function','name':'get','description':'d','parameters':{'type':'object'},'strict':true}],"
     "'tool_choice':{'type':'function','name':'get'},'parallel_tool_calls':false}",
     NULL,
     "{'model':'m','messages':[{'role':'user','content':'weather?'},"
     "{'role':'assistant','content':'Let me check.','tool_calls':["
     "{'id':'c1','type':'function','function':{'name':'get','arguments':'{\\'city\\':\\'Oslo\\'}'}},"
     "{'id':'c2','type':'function','function':{'name':'get','arguments':'{}'}}]},"
     "{'role':'tool','tool_call_id':'c1','content':'12C'},{'role':'tool','tool_call_id':'c2','content':'ab'}],"
     "'tools':[{'type':'function','function':{'name':'get','description':'d','parameters':{'type':'object'},'strict':true}}],"
     "'tool_choice':{'type':'function','function':{'name':'get'}},'parallel_tool_calls':false}",
     NULL, NULL},
    {"function_call after a user message opens an assistant message",
     "{'model':'m','input':[{'role':'user','content':'go'},"
     "{'type':'function_call','call_id':'c1','name':'f','arguments':'{}'}],'tool_choice':'required'}",
     NULL,
     "{'model':'m','messages':[{'role':'user','content':'go'},{'role':'assistant','content':null,"
     "'tool_calls':[{'id':'c1','type':'function','function':{'name':'f','arguments':'{}'}}]}],"
     "'tool_choice':'required'}",
     NULL, NULL},
    {"assistant refusal keeps the parts form",
     "{'model':'m','input':[{'type':'message','role':'assistant','content':[{'type':'refusal','refusal':'no'}]},"
     "{'role':'user','content':'please'}]}",
     NULL,
     "{'model':'m','messages':[{'role':'assistant','content':[{'type':'refusal','refusal':'no'}]},"
     "{'role':'user','content':'please'}]}",
     NULL, NULL},
    {"text.format json_schema, verbosity",
     "{'model':'m','input':'x','text':{'format':{'type':'json_schema','name':'pt','description':'a point',"
     "'schema':{'type':'object','properties':{'x':{'type':'number'}},'required':['x']},'strict':true},'verbosity':'low'}}",
     NULL,
     "{'model':'m','messages':[{'role':'user','content':'x'}],'verbosity':'low','response_format':{'type':'json_schema',"
     "'json_schema':{'name':'pt','description':'a point','schema':{'type':'object','properties':{'x':{'type':'number'}},"
     "'required':['x']},'strict':true}}}",
     NULL, NULL},
    {"text.format json_object",
     "{'model':'m','input':'x','text':{'format':{'type':'json_object'}}}", NULL,
     "{'model':'m','messages':[{'role':'user','content':'x'}],'response_format':{'type':'json_object'}}", NULL,
     NULL},
    {"text.format text",
     "{'model':'m','input':'x','text':{'format':{'type':'text'}}}", NULL,
     "{'model':'m','messages':[{'role':'user','content':'x'}],'response_format':{'type':'text'}}", NULL, NULL},
    {"reasoning effort, summary auto",
     "{'model':'m','input':'x','reasoning':{'effort':'high','summary':'auto'}}", NULL,
     "{'model':'m','messages':[{'role':'user','content':'x'}],'reasoning_effort':'high'}", NULL, NULL},
    {"stream asks for usage",
     "{'model':'m','input':'x','stream':true,'stream_options':{'include_obfuscation':false}}", NULL,
     "{'model':'m','messages':[{'role':'user','content':'x'}],'stream':true,'stream_options':{'include_usage':true}}",
     NULL, NULL},
    {"prior items come first",
     "{'model':'m','instructions':'i','input':[{'role':'user','content':'and now?'}]}",
     "[{'role':'user','content':'first'},{'type':'message','role':'assistant','content':[{'type':'output_text','text':'one'}]}]",
     "{'model':'m','messages':[{'role':'system','content':'i'},{'role':'user','content':'first'},"
     "{'role':'assistant','content':'one'},{'role':'user','content':'and now?'}]}",
     NULL, NULL},
    /* refused: valid Responses that chat cannot carry */
    {"hosted tool", "{'model':'m','input':'x','tools':[{'type':'function','name':'f'},{'type':'web_search'}]}",
     NULL, NULL, "tools[1].type", "untranslatable"},
    {"hosted tool choice", "{'model':'m','input':'x','tool_choice':{'type':'web_search_preview'}}", NULL,
     NULL, "tool_choice.type", "untranslatable"},
    {"allowed_tools choice", "{'model':'m','input':'x','tool_choice':{'type':'allowed_tools','mode':'auto','tools':[]}}",
     NULL, NULL, "tool_choice.type", "untranslatable"},
    {"item reference", "{'model':'m','input':[{'type':'item_reference','id':'msg_1'}]}", NULL, NULL,
     "input[0].type", "untranslatable"},
    {"reasoning item: left out (chat takes no past reasoning as input)",
     "{'model':'m','input':[{'role':'user','content':'x'},{'type':'reasoning','id':'rs_1','summary':[],"
     "'encrypted_content':'gAAA'},{'role':'user','content':'y'}]}",
     NULL, "{'model':'m','messages':[{'role':'user','content':'x'},{'role':'user','content':'y'}]}",
     NULL, NULL},
    {"client_metadata: the client's ids for the server, not carried",
     "{'model':'m','input':'x','client_metadata':{'session_id':'s1','turn':'t1'}}", NULL,
     "{'model':'m','messages':[{'role':'user','content':'x'}]}", NULL, NULL},
    {"client_metadata not an object", "{'model':'m','input':'x','client_metadata':'s1'}", NULL, NULL,
     "client_metadata", "invalid_value"},
    {"only a reasoning item", "{'model':'m','input':[{'type':'reasoning','id':'rs_1','summary':[]}]}",
     NULL, NULL, "input", "invalid_value"},
    {"image by file id",
     "{'model':'m','input':[{'role':'user','content':[{'type':'input_image','file_id':'file-1','detail':'auto'}]}]}",
     NULL, NULL, "input[0].content[0].file_id", "untranslatable"},
    {"image detail original",
     "{'model':'m','input':[{'role':'user','content':[{'type':'input_image','image_url':'https://x','detail':'original'}]}]}",
     NULL, NULL, "input[0].content[0].detail", "untranslatable"},
    {"file by url",
     "{'model':'m','input':[{'role':'user','content':[{'type':'input_file','file_url':'https://x/a.pdf'}]}]}",
     NULL, NULL, "input[0].content[0].file_url", "untranslatable"},
    {"image in a system message",
     "{'model':'m','input':[{'role':'system','content':[{'type':'input_image','image_url':'https://x'}]}]}",
     NULL, NULL, "input[0].content[0].type", "untranslatable"},
    {"tool output with an image",
     "{'model':'m','input':[{'type':'function_call_output','call_id':'c','output':[{'type':'input_image','image_url':'https://x'}]}]}",
     NULL, NULL, "input[0].output[0]", "untranslatable"},
    {"reasoning summary", "{'model':'m','input':'x','reasoning':{'summary':'detailed'}}", NULL, NULL,
     "reasoning.summary", "untranslatable"},
    {"text format grammar", "{'model':'m','input':'x','text':{'format':{'type':'grammar'}}}", NULL, NULL,
     "text.format.type", "untranslatable"},
    {"prompt template", "{'model':'m','input':'x','prompt':{'id':'p'}}", NULL, NULL, "prompt",
     "untranslatable"},
    {"truncation auto", "{'model':'m','input':'x','truncation':'auto'}", NULL, NULL, "truncation",
     "untranslatable"},
    {"background", "{'model':'m','input':'x','background':true}", NULL, NULL, "background", "untranslatable"},
    {"include logprobs", "{'model':'m','input':'x','include':['message.output_text.logprobs']}", NULL, NULL,
     "include[0]", "untranslatable"},
    {"a prior item that cannot be carried",
     "{'model':'m','input':'x'}", "[{'type':'web_search_call','id':'ws_1'}]", NULL, "previous_response_id",
     "untranslatable"},
    /* refused: not valid Responses */
    {"no input", "{'model':'m'}", NULL, NULL, "input", "invalid_value"},
    {"no model", "{'input':'x'}", NULL, NULL, "model", "invalid_value"},
    {"bad role", "{'model':'m','input':[{'role':'tool','content':'x'}]}", NULL, NULL, "input[0].role",
     "invalid_value"},
    {"empty content", "{'model':'m','input':[{'role':'user','content':[]}]}", NULL, NULL, "input[0].content",
     "invalid_value"},
    {"function_call without call_id", "{'model':'m','input':[{'type':'function_call','name':'f','arguments':'{}'}]}",
     NULL, NULL, "input[0]", "invalid_value"},
    {"max_output_tokens 0", "{'model':'m','input':'x','max_output_tokens':0}", NULL, NULL,
     "max_output_tokens", "invalid_value"},
    {"stream_options without stream", "{'model':'m','input':'x','stream_options':{}}", NULL, NULL,
     "stream_options", "invalid_value"},
    {"json_schema without schema", "{'model':'m','input':'x','text':{'format':{'type':'json_schema','name':'n'}}}",
     NULL, NULL, "text.format.schema", "invalid_value"},
    {"tool_choice word", "{'model':'m','input':'x','tool_choice':'any'}", NULL, NULL, "tool_choice",
     "invalid_value"},
};

static void test_requests(void **state)
{
    (void)state;
    for (size_t i = 0; i < N(req_cases); i++) {
        const struct req_case *c = &req_cases[i];
        json_t *in = load(c->in), *prior = c->prior ? load(c->prior) : NULL, *out = NULL;
        struct sw_request_error err = {0};
        int rc = sw_responses_req_to_chat(in, prior, &out, &err);
        if (c->out) {
            if (rc)
                fail_msg("case %s: %s (%s)", c->name, err.message, err.param);
            assert_json_eq(out, c->out, c->name);
        } else {
            if (rc != SW_EINVAL || out)
                fail_msg("case %s: expected an error, got rc %d", c->name, rc);
            if (strcmp(err.param, c->param) || strcmp(err.code, c->code) || err.status != 400)
                fail_msg("case %s: got %d %s at '%s' (%s), want %s at '%s'", c->name, err.status,
                         err.code, err.param, err.message, c->code, c->param);
        }
        json_decref(out);
        json_decref(in);
        json_decref(prior);
    }
}

/* Every translation is a chat body sw_request_parse takes. */
static void test_requests_parse_as_chat(void **state)
{
    (void)state;
    for (size_t i = 0; i < N(req_cases); i++) {
        if (!req_cases[i].out)
            continue;
        char *text = J(req_cases[i].out);
        struct sw_chat_request req;
        struct sw_request_error err;
        int rc = sw_request_parse(text, strlen(text), &req, &err);
        if (rc)
            fail_msg("case %s: the chat body is refused: %s (%s)", req_cases[i].name, err.message,
                     err.param);
        sw_request_free(&req);
        free(text);
    }
}

static void test_request_parse(void **state)
{
    (void)state;
    struct sw_chat_request req;
    struct sw_request_error err;
    /* all of it carried */
    char *b = J("{'model':'m','input':'hi','stream':true,'max_output_tokens':7}");
    assert_int_equal(sw_responses_request_parse(b, strlen(b), NULL, &req, &err), SW_OK);
    assert_true(req.stream && req.include_usage);
    assert_int_equal(req.max_tokens, 7);
    /* the translation's text starts with its model: the relay splices there */
    assert_int_equal(req.text_model_len, 3);
    assert_memory_equal(req.text + req.text_model_off, "\"m\"", 3);
    assert_null(req.untranslatable);
    assert_non_null(req.native);
    assert_string_equal(json_string_value(json_object_get(req.native, "input")), "hi");
    sw_request_free(&req);
    free(b);
    /* a hosted tool and an item reference: left out of the chat form, the first noted */
    b = J("{'model':'m','input':[{'type':'item_reference','id':'r'},{'role':'user','content':'hi'}],"
          "'tools':[{'type':'web_search'},{'type':'function','name':'f'}]}");
    assert_int_equal(sw_responses_request_parse(b, strlen(b), NULL, &req, &err), SW_OK);
    assert_non_null(req.untranslatable);
    assert_string_equal(req.untranslatable->param, "input[0].type");
    assert_string_equal(req.untranslatable->code, "untranslatable");
    assert_json_eq(req.body, "{'model':'m','messages':[{'role':'user','content':'hi'}],"
                             "'tools':[{'type':'function','function':{'name':'f'}}]}", "pruned");
    assert_true(req.has_tools);
    assert_int_equal(json_array_size(json_object_get(req.native, "tools")), 2);
    sw_request_free(&req);
    free(b);
    /* a part that cannot be carried goes, and its message with it when it was the only one */
    b = J("{'model':'m','input':[{'role':'user','content':[{'type':'input_image','file_id':'f','detail':'auto'}]},"
          "{'role':'user','content':'x'}]}");
    assert_int_equal(sw_responses_request_parse(b, strlen(b), NULL, &req, &err), SW_OK);
    assert_string_equal(req.untranslatable->param, "input[0].content[0].file_id");
    assert_int_equal(req.n_messages, 1);
    sw_request_free(&req);
    free(b);
    /* invalid stays invalid; nothing carriable at all names the first reason */
    b = J("{'model':'m','input':'x','temperature':'hot'}");
    assert_int_equal(sw_responses_request_parse(b, strlen(b), NULL, &req, &err), SW_EINVAL);
    assert_string_equal(err.param, "temperature");
    free(b);
    b = J("{'model':'m','input':[{'type':'item_reference','id':'x'}]}");
    assert_int_equal(sw_responses_request_parse(b, strlen(b), NULL, &req, &err), SW_EINVAL);
    assert_string_equal(err.param, "input[0].type");
    assert_string_equal(err.code, "untranslatable");
    free(b);
    b = J("{'model':'m','input':'x','model':'n'}");
    assert_int_equal(sw_responses_request_parse(b, strlen(b), NULL, &req, &err), SW_EINVAL);
    assert_string_equal(err.code, "invalid_json");
    free(b);
}

/* ---- Whole answers ---- */

static const struct sw_resp_meta META = {"resp_abc", "pub-model", 1700000000, 1700000005};

static void test_answer_text(void **state)
{
    (void)state;
    json_t *req = load("{'model':'m','input':'x','instructions':'i','max_output_tokens':9,"
                       "'metadata':{'a':'b'},'tools':[{'type':'function','name':'f'}],'store':false}");
    json_t *ans = load("{'id':'chatcmpl-1','object':'chat.completion','created':1,'model':'up','choices':[{'index':0,"
                       "'message':{'role':'assistant','content':'Hello','refusal':null},'finish_reason':'stop'}],"
                       "'usage':{'prompt_tokens':5,'completion_tokens':2,'total_tokens':7,"
                       "'prompt_tokens_details':{'cached_tokens':3},'completion_tokens_details':{'reasoning_tokens':1}}}");
    json_t *r = sw_responses_from_chat(ans, req, &META);
    assert_non_null(r);
    assert_json_eq(r,
                   "{'id':'resp_abc','object':'response','created_at':1700000000,'completed_at':1700000005,"
                   "'status':'completed','error':null,'incomplete_details':null,'instructions':'i',"
                   "'max_output_tokens':9,'model':'pub-model','output':[{'id':'msg_abc_0','type':'message',"
                   "'status':'completed','role':'assistant','content':[{'type':'output_text','text':'Hello',"
                   "'annotations':[],'logprobs':[]}]}],'parallel_tool_calls':true,'previous_response_id':null,"
                   "'reasoning':{'effort':null,'summary':null},'store':false,'temperature':1.0,"
                   "'text':{'format':{'type':'text'}},'tool_choice':'auto','tools':[{'type':'function','name':'f',"
                   "'description':null,'parameters':null,'strict':null}],'top_p':1.0,'truncation':'disabled',"
                   "'usage':{'input_tokens':5,'input_tokens_details':{'cached_tokens':3,'cache_write_tokens':0},"
                   "'output_tokens':2,'output_tokens_details':{'reasoning_tokens':1},'total_tokens':7},"
                   "'metadata':{'a':'b'},'background':false}",
                   "text answer");
    json_decref(r);
    json_decref(ans);
    json_decref(req);
}

static void test_answer_items(void **state)
{
    (void)state;
    /* reasoning, text, refusal and two calls; length: incomplete */
    json_t *ans = load("{'choices':[{'message':{'role':'assistant','reasoning_content':'think','content':'a',"
                       "'refusal':'r','tool_calls':[{'id':'c1','type':'function','function':{'name':'f','arguments':'{}'}},"
                       "{'id':'c2','type':'function','function':{'name':'g','arguments':'{\\'x\\':1}'}}]},"
                       "'finish_reason':'length'}],'usage':{'prompt_tokens':1,'completion_tokens':2}}");
    json_t *r = sw_responses_from_chat(ans, NULL, &META);
    assert_non_null(r);
    assert_string_equal(json_string_value(json_object_get(r, "status")), "incomplete");
    assert_null(json_object_get(r, "completed_at"));
    assert_json_eq(json_object_get(r, "incomplete_details"), "{'reason':'max_output_tokens'}", "length");
    assert_json_eq(json_object_get(r, "output"),
                   "[{'id':'rs_abc_0','type':'reasoning','summary':[],'content':[{'type':'reasoning_text','text':'think'}],"
                   "'status':'completed'},{'id':'msg_abc_1','type':'message','status':'incomplete','role':'assistant',"
                   "'content':[{'type':'output_text','text':'a','annotations':[],'logprobs':[]},{'type':'refusal','refusal':'r'}]},"
                   "{'id':'fc_abc_2','type':'function_call','status':'completed','call_id':'c1','name':'f','arguments':'{}'},"
                   "{'id':'fc_abc_3','type':'function_call','status':'completed','call_id':'c2','name':'g','arguments':'{\\'x\\':1}'}]",
                   "items");
    json_decref(r);
    json_decref(ans);
    /* calls alone: no message item; content_filter */
    ans = load("{'choices':[{'message':{'role':'assistant','content':null,'tool_calls':[{'id':'c1','type':'function',"
               "'function':{'name':'f','arguments':'{}'}}]},'finish_reason':'content_filter'}]}");
    r = sw_responses_from_chat(ans, NULL, &META);
    assert_int_equal(json_array_size(json_object_get(r, "output")), 1);
    assert_json_eq(json_object_get(r, "incomplete_details"), "{'reason':'content_filter'}", "filter");
    assert_json_eq(json_object_get(r, "usage"),
                   "{'input_tokens':0,'input_tokens_details':{'cached_tokens':0,'cache_write_tokens':0},"
                   "'output_tokens':0,'output_tokens_details':{'reasoning_tokens':0},'total_tokens':0}",
                   "no usage");
    json_decref(r);
    json_decref(ans);
    /* not a chat completion */
    ans = load("{'error':{'message':'x'}}");
    assert_null(sw_responses_from_chat(ans, NULL, &META));
    json_decref(ans);
}

/* ---- Streams ---- */

struct collected {
    json_t *events;             /* array of {event, data} */
};

static int on_event(void *ud, const char *event, const char *data, size_t len)
{
    struct collected *c = ud;
    json_error_t e;
    json_t *d = json_loadb(data, len, 0, &e);
    if (!d)
        fail_msg("an event that is not JSON: %.*s", (int)len, data);
    json_array_append_new(c->events, json_pack("{s:s, s:o}", "event", event, "data", d));
    return SW_OK;
}

/* Parses SSE bytes (the translator's output) into events, checking each
 * event's name is its data's type and the sequence numbers count from 0. */
static json_t *parse_events(const struct sw_buf *b)
{
    struct collected c = {json_array()};
    struct sw_sse p;
    sw_sse_init(&p, 1 << 24, on_event, &c);
    assert_int_equal(sw_sse_feed(&p, b->ptr ? b->ptr : "", b->len), SW_OK);
    assert_false(sw_sse_pending(&p));
    sw_sse_free(&p);
    size_t i;
    json_t *e;
    json_array_foreach(c.events, i, e) {
        json_t *d = json_object_get(e, "data");
        assert_string_equal(json_string_value(json_object_get(e, "event")),
                            json_string_value(json_object_get(d, "type")));
        assert_int_equal(json_integer_value(json_object_get(d, "sequence_number")), (json_int_t)i);
    }
    return c.events;
}

static void assert_types(const json_t *events, const char *const *want, size_t n)
{
    if (json_array_size(events) != n) {
        for (size_t i = 0; i < json_array_size(events); i++)
            print_error("  %s\n", json_string_value(json_object_get(json_array_get(events, i), "event")));
        fail_msg("%zu events, want %zu", json_array_size(events), n);
    }
    for (size_t i = 0; i < n; i++)
        assert_string_equal(json_string_value(json_object_get(json_array_get(events, i), "event")),
                            want[i]);
}

static const json_t *ev_data(const json_t *events, size_t i)
{
    return json_object_get(json_array_get(events, i), "data");
}

/* Feeds the chunks (a JSON array) then finishes. */
static void run_stream(const char *chunks, const json_t *req, struct sw_buf *out)
{
    json_t *a = load(chunks);
    struct sw_resp_stream s;
    assert_int_equal(sw_resp_stream_init(&s, req, &META), SW_OK);
    size_t i;
    json_t *c;
    json_array_foreach(a, i, c) assert_int_equal(sw_resp_stream_chunk(&s, c, out), SW_OK);
    assert_int_equal(sw_resp_stream_finish(&s, 1700000009, out), SW_OK);
    /* nothing after the end */
    size_t len = out->len;
    assert_int_equal(sw_resp_stream_chunk(&s, json_array_get(a, 0), out), SW_OK);
    assert_int_equal(sw_resp_stream_fail(&s, NULL, "late", out), SW_OK);
    assert_int_equal(out->len, len);
    sw_resp_stream_free(&s);
    json_decref(a);
}

#define CH(delta, fin) "{'id':'c','object':'chat.completion.chunk','choices':[{'index':0,'delta':" delta ",'finish_reason':" fin "}]}"
#define USAGE "{'id':'c','object':'chat.completion.chunk','choices':[],'usage':{'prompt_tokens':4,'completion_tokens':3,'total_tokens':7}}"

static void test_stream_text(void **state)
{
    (void)state;
    struct sw_buf out;
    sw_buf_init(&out, 1 << 24);
    run_stream("[" CH("{'role':'assistant','content':''}", "null") "," CH("{'content':'Hel'}", "null") ","
               CH("{'content':'lo'}", "null") "," CH("{}", "'stop'") "," USAGE "]",
               NULL, &out);
    json_t *ev = parse_events(&out);
    static const char *const want[] = {
        "response.created", "response.in_progress", "response.output_item.added",
        "response.content_part.added", "response.output_text.delta", "response.output_text.delta",
        "response.output_text.done", "response.content_part.done", "response.output_item.done",
        "response.completed"};
    assert_types(ev, want, N(want));
    assert_json_eq(json_object_get(ev_data(ev, 0), "response"),
                   "{'id':'resp_abc','object':'response','created_at':1700000000,'status':'in_progress','error':null,"
                   "'incomplete_details':null,'instructions':null,'max_output_tokens':null,'model':'pub-model','output':[],"
                   "'parallel_tool_calls':true,'previous_response_id':null,'reasoning':{'effort':null,'summary':null},"
                   "'store':true,'temperature':1.0,'text':{'format':{'type':'text'}},'tool_choice':'auto','tools':[],"
                   "'top_p':1.0,'truncation':'disabled','metadata':{},'background':false}",
                   "created");
    assert_json_eq(ev_data(ev, 2),
                   "{'type':'response.output_item.added','sequence_number':2,'output_index':0,'item':{'id':'msg_abc_0',"
                   "'type':'message','status':'in_progress','role':'assistant','content':[]}}", "added");
    assert_json_eq(ev_data(ev, 3),
                   "{'type':'response.content_part.added','sequence_number':3,'item_id':'msg_abc_0','output_index':0,"
                   "'content_index':0,'part':{'type':'output_text','text':'','annotations':[],'logprobs':[]}}", "part");
    assert_json_eq(ev_data(ev, 5),
                   "{'type':'response.output_text.delta','sequence_number':5,'item_id':'msg_abc_0','output_index':0,"
                   "'content_index':0,'delta':'lo','logprobs':[]}", "delta");
    assert_json_eq(ev_data(ev, 6),
                   "{'type':'response.output_text.done','sequence_number':6,'item_id':'msg_abc_0','output_index':0,"
                   "'content_index':0,'text':'Hello','logprobs':[]}", "done");
    json_t *r = json_object_get(ev_data(ev, 9), "response");
    assert_string_equal(json_string_value(json_object_get(r, "status")), "completed");
    assert_int_equal(json_integer_value(json_object_get(r, "completed_at")), 1700000009);
    assert_json_eq(json_object_get(r, "output"),
                   "[{'id':'msg_abc_0','type':'message','status':'completed','role':'assistant','content':"
                   "[{'type':'output_text','text':'Hello','annotations':[],'logprobs':[]}]}]", "output");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(r, "usage"), "total_tokens")), 7);
    json_decref(ev);
    sw_buf_free(&out);
}

static void test_stream_tools(void **state)
{
    (void)state;
    struct sw_buf out;
    sw_buf_init(&out, 1 << 24);
    json_t *req = load("{'model':'m','input':'x','tools':[{'type':'function','name':'f','parameters':{}}]}");
    run_stream("[" CH("{'role':'assistant','content':'ok'}", "null") ","
               CH("{'tool_calls':[{'index':0,'id':'c1','type':'function','function':{'name':'f','arguments':''}}]}", "null") ","
               CH("{'tool_calls':[{'index':0,'function':{'arguments':'{\\'a\\''}}]}", "null") ","
               CH("{'tool_calls':[{'index':0,'function':{'arguments':':1}'}}]}", "null") ","
               CH("{'tool_calls':[{'index':1,'id':'c2','type':'function','function':{'name':'g','arguments':'{}'}}]}", "null") ","
               CH("{}", "'tool_calls'") "," USAGE "]",
               req, &out);
    json_t *ev = parse_events(&out);
    static const char *const want[] = {
        "response.created", "response.in_progress", "response.output_item.added",
        "response.content_part.added", "response.output_text.delta", "response.output_text.done",
        "response.content_part.done", "response.output_item.done", "response.output_item.added",
        "response.function_call_arguments.delta", "response.function_call_arguments.delta",
        "response.output_item.added", "response.function_call_arguments.delta",
        "response.function_call_arguments.done", "response.output_item.done",
        "response.function_call_arguments.done", "response.output_item.done", "response.completed"};
    assert_types(ev, want, N(want));
    assert_json_eq(ev_data(ev, 8),
                   "{'type':'response.output_item.added','sequence_number':8,'output_index':1,'item':{'id':'fc_abc_1',"
                   "'type':'function_call','status':'in_progress','call_id':'c1','name':'f','arguments':''}}", "fc added");
    assert_json_eq(ev_data(ev, 10),
                   "{'type':'response.function_call_arguments.delta','sequence_number':10,'item_id':'fc_abc_1',"
                   "'output_index':1,'delta':':1}'}", "fc delta");
    assert_json_eq(ev_data(ev, 13),
                   "{'type':'response.function_call_arguments.done','sequence_number':13,'item_id':'fc_abc_1',"
                   "'output_index':1,'name':'f','arguments':'{\\'a\\':1}'}", "fc done");
    json_t *r = json_object_get(ev_data(ev, 17), "response");
    assert_json_eq(json_object_get(r, "output"),
                   "[{'id':'msg_abc_0','type':'message','status':'completed','role':'assistant','content':"
                   "[{'type':'output_text','text':'ok','annotations':[],'logprobs':[]}]},"
                   "{'id':'fc_abc_1','type':'function_call','status':'completed','call_id':'c1','name':'f','arguments':'{\\'a\\':1}'},"
                   "{'id':'fc_abc_2','type':'function_call','status':'completed','call_id':'c2','name':'g','arguments':'{}'}]",
                   "output");
    assert_json_eq(json_object_get(r, "tools"),
                   "[{'type':'function','name':'f','parameters':{},'description':null,'strict':null}]", "tools");
    json_decref(ev);
    json_decref(req);
    sw_buf_free(&out);
}

static void test_stream_reasoning_refusal_length(void **state)
{
    (void)state;
    struct sw_buf out;
    sw_buf_init(&out, 1 << 24);
    run_stream("[" CH("{'role':'assistant','reasoning_content':'hm'}", "null") "," CH("{'content':'a'}", "null") ","
               CH("{'refusal':'no'}", "null") "," CH("{}", "'length'") "]",
               NULL, &out);
    json_t *ev = parse_events(&out);
    static const char *const want[] = {
        "response.created", "response.in_progress", "response.output_item.added",
        "response.reasoning_text.delta", "response.reasoning_text.done", "response.output_item.done",
        "response.output_item.added", "response.content_part.added", "response.output_text.delta",
        "response.output_text.done", "response.content_part.done", "response.content_part.added",
        "response.refusal.delta", "response.refusal.done", "response.content_part.done",
        "response.output_item.done", "response.incomplete"};
    assert_types(ev, want, N(want));
    assert_int_equal(json_integer_value(json_object_get(ev_data(ev, 12), "content_index")), 1);
    json_t *r = json_object_get(ev_data(ev, 16), "response");
    assert_string_equal(json_string_value(json_object_get(r, "status")), "incomplete");
    assert_null(json_object_get(r, "completed_at"));
    assert_json_eq(json_object_get(r, "output"),
                   "[{'id':'rs_abc_0','type':'reasoning','summary':[],'content':[{'type':'reasoning_text','text':'hm'}],"
                   "'status':'completed'},{'id':'msg_abc_1','type':'message','status':'incomplete','role':'assistant',"
                   "'content':[{'type':'output_text','text':'a','annotations':[],'logprobs':[]},{'type':'refusal','refusal':'no'}]}]",
                   "output");
    json_decref(ev);
    sw_buf_free(&out);
}

static void test_stream_empty_and_fail(void **state)
{
    (void)state;
    struct sw_buf out;
    sw_buf_init(&out, 1 << 24);
    run_stream("[" CH("{'role':'assistant'}", "'stop'") "]", NULL, &out);
    json_t *ev = parse_events(&out);
    static const char *const empty[] = {
        "response.created", "response.in_progress", "response.output_item.added",
        "response.content_part.added", "response.output_text.done", "response.content_part.done",
        "response.output_item.done", "response.completed"};
    assert_types(ev, empty, N(empty));
    json_decref(ev);
    sw_buf_reset(&out);

    /* a failure after some text: the text's item stays open, not in the output */
    struct sw_resp_stream s;
    assert_int_equal(sw_resp_stream_init(&s, NULL, &META), SW_OK);
    json_t *c = load(CH("{'content':'Hi'}", "null"));
    assert_int_equal(sw_resp_stream_chunk(&s, c, &out), SW_OK);
    assert_int_equal(sw_resp_stream_fail(&s, NULL, "upstream failed", &out), SW_OK);
    assert_int_equal(sw_resp_stream_finish(&s, 0, &out), SW_OK); /* ignored */
    sw_resp_stream_free(&s);
    ev = parse_events(&out);
    static const char *const failed[] = {"response.created", "response.in_progress",
                                         "response.output_item.added", "response.content_part.added",
                                         "response.output_text.delta", "response.failed"};
    assert_types(ev, failed, N(failed));
    json_t *r = json_object_get(ev_data(ev, 5), "response");
    assert_string_equal(json_string_value(json_object_get(r, "status")), "failed");
    assert_json_eq(json_object_get(r, "error"), "{'code':'server_error','message':'upstream failed'}", "error");
    json_decref(ev);
    sw_buf_reset(&out);

    /* the bare error event, before anything else */
    assert_int_equal(sw_resp_stream_init(&s, NULL, &META), SW_OK);
    assert_int_equal(sw_resp_stream_error(&s, "rate_limit_exceeded", "slow down", &out), SW_OK);
    sw_resp_stream_free(&s);
    ev = parse_events(&out);
    assert_json_eq(ev_data(ev, 0), "{'type':'error','sequence_number':0,'code':'rate_limit_exceeded',"
                                   "'message':'slow down','param':null}", "error event");
    json_decref(ev);
    json_decref(c);
    sw_buf_free(&out);
}

static void test_stream_bounds(void **state)
{
    (void)state;
    struct sw_buf out;
    sw_buf_init(&out, 1 << 24);
    struct sw_resp_stream s;
    assert_int_equal(sw_resp_stream_init(&s, NULL, &META), SW_OK);
    json_t *c = load(CH("{'tool_calls':[{'index':64,'id':'x','function':{'name':'f'}}]}", "null"));
    assert_int_equal(sw_resp_stream_chunk(&s, c, &out), SW_ETOOBIG);
    json_decref(c);
    sw_resp_stream_free(&s);
    sw_buf_free(&out);
}

/* ---- Streams split anywhere ---- */

struct feed {
    struct sw_resp_stream *s;
    struct sw_buf *out;
};

static int on_chat_event(void *ud, const char *event, const char *data, size_t len)
{
    struct feed *f = ud;
    (void)event;
    if (len == 6 && !memcmp(data, "[DONE]", 6))
        return sw_resp_stream_finish(f->s, 1700000009, f->out);
    json_error_t e;
    json_t *c = json_loadb(data, len, 0, &e);
    int err = c ? sw_resp_stream_chunk(f->s, c, f->out) : SW_EINVAL;
    json_decref(c);
    return err;
}

/* The chat SSE bytes `sse` fed to the translator in the pieces cut at the
 * offsets cuts[0..n) (increasing). */
static void translate_split(const char *sse, const size_t *cuts, size_t n, struct sw_buf *out)
{
    struct sw_resp_stream s;
    assert_int_equal(sw_resp_stream_init(&s, NULL, &META), SW_OK);
    struct feed f = {&s, out};
    struct sw_sse p;
    sw_sse_init(&p, 1 << 20, on_chat_event, &f);
    size_t at = 0, len = strlen(sse);
    for (size_t i = 0; i <= n; i++) {
        size_t end = i < n ? cuts[i] : len;
        assert_int_equal(sw_sse_feed(&p, sse + at, end - at), SW_OK);
        at = end;
    }
    assert_true(s.finished);
    sw_sse_free(&p);
    sw_resp_stream_free(&s);
}

static void test_stream_split_anywhere(void **state)
{
    (void)state;
    char *sse = J("data: {'choices':[{'index':0,'delta':{'role':'assistant','content':''}}]}\n\n"
                  "data: {'choices':[{'index':0,'delta':{'content':'Gr\\u00fc\\u00dfe, '}}]}\r\n\r\n"
                  "data: {'choices':[{'index':0,'delta':{'content':'world'}}]}\n\n"
                  ": a comment\n\n"
                  "data: {'choices':[{'index':0,'delta':{'tool_calls':[{'index':0,'id':'c1','function':{'name':'f','arguments':'{\\'q\\':'}}]}}]}\n\n"
                  "data: {'choices':[{'index':0,'delta':{'tool_calls':[{'index':0,'function':{'arguments':'1}'}}]}}]}\n\n"
                  "data: {'choices':[{'index':0,'delta':{},'finish_reason':'tool_calls'}]}\n\n"
                  "data: {'choices':[],'usage':{'prompt_tokens':3,'completion_tokens':5}}\n\n"
                  "data: [DONE]\n\n");
    struct sw_buf whole, part;
    sw_buf_init(&whole, 1 << 24);
    sw_buf_init(&part, 1 << 24);
    translate_split(sse, NULL, 0, &whole);
    size_t len = strlen(sse);
    for (size_t k = 1; k < len; k++) {
        sw_buf_reset(&part);
        translate_split(sse, &k, 1, &part);
        if (part.len != whole.len || memcmp(part.ptr, whole.ptr, whole.len))
            fail_msg("split at %zu gives other events", k);
    }
    /* and a byte at a time */
    size_t *cuts = malloc(len * sizeof *cuts);
    for (size_t k = 0; k + 1 < len; k++)
        cuts[k] = k + 1;
    sw_buf_reset(&part);
    translate_split(sse, cuts, len - 1, &part);
    assert_true(part.len == whole.len && !memcmp(part.ptr, whole.ptr, whole.len));
    free(cuts);
    json_t *ev = parse_events(&whole);
    json_t *r = json_object_get(ev_data(ev, json_array_size(ev) - 1), "response");
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(json_array_get(json_object_get(r, "output"), 0),
                                                           "content"), 0), "text")),
                        "Gr\xc3\xbc\xc3\x9f" "e, world");
    assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(r, "output"), 1),
                                                          "arguments")),
                        "{\"q\":1}");
    json_decref(ev);
    sw_buf_free(&whole);
    sw_buf_free(&part);
    free(sse);
}

/* The same answer cut into deltas of any size: the deltas differ, the
 * finished response does not. */
static void test_stream_delta_sizes(void **state)
{
    (void)state;
    const char *text = "The quick brown fox jumps over the lazy dog.";
    json_t *first = NULL;
    for (size_t size = 1; size <= strlen(text); size++) {
        struct sw_buf out;
        sw_buf_init(&out, 1 << 24);
        struct sw_resp_stream s;
        assert_int_equal(sw_resp_stream_init(&s, NULL, &META), SW_OK);
        for (size_t at = 0; at < strlen(text); at += size) {
            size_t n = strlen(text) - at < size ? strlen(text) - at : size;
            json_t *c = json_pack("{s:[{s:i, s:{s:s%}}]}", "choices", "index", 0, "delta", "content",
                                  text + at, n);
            assert_int_equal(sw_resp_stream_chunk(&s, c, &out), SW_OK);
            json_decref(c);
        }
        assert_int_equal(sw_resp_stream_finish(&s, 1, &out), SW_OK);
        sw_resp_stream_free(&s);
        json_t *ev = parse_events(&out);
        json_t *r = json_object_get(ev_data(ev, json_array_size(ev) - 1), "response");
        assert_int_equal(json_array_size(ev), 8 + (strlen(text) + size - 1) / size);
        if (!first)
            first = json_incref(r);
        else
            assert_true(json_equal(first, r));
        json_decref(ev);
        sw_buf_free(&out);
    }
    json_decref(first);
}

/* A Codex-shaped conversation: per turn a user message, an assistant
 * message, two parallel function calls (the second joins the first's
 * assistant message; the first joins the assistant message before it every
 * other turn) and their outputs; `at` (when >= 0) is the turn whose first
 * output says `what`. */
static char *codex_body(int turns, int at, const char *what)
{
    json_t *items = json_array();
    for (int i = 0; i < turns; i++) {
        char u[400], c1[32], c2[32];
        snprintf(u, sizeof u, "Turn %d: the test in tests/unit/test_%d.c fails with "
                              "\"expected 3, got 4\"; look at it and fix the off-by-one.", i, i);
        snprintf(c1, sizeof c1, "call_%da", i);
        snprintf(c2, sizeof c2, "call_%db", i);
        json_array_append_new(items, json_pack("{s:s,s:[{s:s,s:s}]}", "role", "user", "content",
                                               "type", "input_text", "text", u));
        if (i % 2)
            json_array_append_new(items, json_pack("{s:s,s:s,s:[{s:s,s:s}]}", "type", "message",
                                                   "role", "assistant", "content", "type",
                                                   "output_text", "text", "Reading both files."));
        json_array_append_new(items, json_pack("{s:s,s:s,s:s,s:s}", "type", "function_call",
                                               "call_id", c1, "name", "shell", "arguments",
                                               "{\"cmd\":[\"cat\",\"src/a.c\"]}"));
        json_array_append_new(items, json_pack("{s:s,s:s,s:s,s:s}", "type", "function_call",
                                               "call_id", c2, "name", "shell", "arguments",
                                               "{\"cmd\":[\"cat\",\"src/b.c\"]}"));
        snprintf(u, sizeof u, "int f(int n) {\n\treturn n + 1; /* %s */\n}\n",
                 i == at ? what : "unchanged since the last commit");
        json_array_append_new(items, json_pack("{s:s,s:s,s:s}", "type", "function_call_output",
                                               "call_id", c1, "output", u));
        json_array_append_new(items, json_pack("{s:s,s:s,s:s}", "type", "function_call_output",
                                               "call_id", c2, "output", "int g(void);\n"));
    }
    json_t *b = json_pack("{s:s,s:s,s:o,s:i}", "model", "m", "instructions",
                          "You are a coding agent.", "input", items, "max_output_tokens", 512);
    char *s = json_dumps(b, JSON_COMPACT);
    json_decref(b);
    return s;
}

static void parse_codex(const char *s, struct sw_chat_request *req)
{
    struct sw_request_error err;
    assert_int_equal(sw_responses_request_parse(s, strlen(s), NULL, req, &err), SW_OK);
    assert_text_is_dump(req);
}

/* With the parse memo, a resent item's translation is kept with it, and a
 * call joined to a kept assistant message joins a copy: every turn's text
 * is the one without the memo, however often it is sent; an item changed
 * by one byte is translated again. */
static void test_translation_kept(void **state)
{
    (void)state;
    char *base = codex_body(30, -1, NULL), *changed = codex_body(30, 7, "unchanged since the last commiT");
    assert_true(strlen(base) >= SW_JMEMO_MIN_BODY);
    struct sw_chat_request ref[2], got;
    sw_jmemo_set_max(0);
    parse_codex(base, &ref[0]);
    parse_codex(changed, &ref[1]);
    sw_jmemo_set_max(64u << 20);
    for (int round = 0; round < 5; round++) {
        const struct sw_chat_request *want = &ref[round == 3];
        parse_codex(round == 3 ? changed : base, &got);
        assert_same_text(&got, want);
        sw_request_free(&got);
    }
    struct sw_jmemo_stats st;
    sw_jmemo_get_stats(&st);
    assert_true(st.hits > 0);
    sw_jmemo_set_max(0);
    sw_request_free(&ref[0]);
    sw_request_free(&ref[1]);
    free(base);
    free(changed);
}

/* An agent's input with a web_search_call item after each of n turns
 * (strip: the same without them), above the memo's minimum size. */
static char *searched_body(int n, bool strip)
{
    struct sw_buf b;
    sw_buf_init(&b, (size_t)1 << 30);
    assert_int_equal(sw_buf_append_str(&b, "{\"model\":\"m\",\"input\":["), 0);
    for (int i = 0; i < n; i++) {
        char it[512];
        snprintf(it, sizeof it,
                 "%s{\"role\":\"user\",\"content\":\"turn %d: look up the release notes of the "
                 "parser library and tell me what changed in its error messages\"},%s"
                 "{\"type\":\"message\",\"role\":\"assistant\",\"content\":[{\"type\":"
                 "\"output_text\",\"text\":\"answer %d\"}]}",
                 i ? "," : "", i,
                 strip ? "" : "{\"type\":\"web_search_call\",\"id\":\"ws_1\",\"status\":\"completed\"},",
                 i);
        assert_int_equal(sw_buf_append_str(&b, it), 0);
    }
    assert_int_equal(sw_buf_append_str(&b, "]}"), 0);
    return b.ptr;
}

/* Items of a type chat cannot carry, more than the 64 rounds of pruning
 * the other fields get: left out as the translation meets them, the body
 * still parses (a Responses backend gets it whole), its translation is the
 * body's without them and the first refusal names the first, memo off and
 * on; the strict translation still refuses the body. */
static void test_items_left_out(void **state)
{
    (void)state;
    char *body = searched_body(80, false), *stripped = searched_body(80, true);
    assert_true(strlen(body) >= SW_JMEMO_MIN_BODY);
    struct sw_chat_request ref, req;
    struct sw_request_error err;
    sw_jmemo_set_max(0);
    assert_int_equal(sw_responses_request_parse(stripped, strlen(stripped), NULL, &ref, &err), SW_OK);
    assert_null(ref.untranslatable);
    for (int pass = 0; pass < 3; pass++) {
        sw_jmemo_set_max(pass ? 64u << 20 : 0);
        assert_int_equal(sw_responses_request_parse(body, strlen(body), NULL, &req, &err), SW_OK);
        assert_non_null(req.untranslatable);
        assert_string_equal(req.untranslatable->code, "untranslatable");
        assert_string_equal(req.untranslatable->param, "input[1].type");
        assert_same_text(&req, &ref);
        json_t *out = NULL;
        assert_int_equal(sw_responses_req_to_chat(req.native, NULL, &out, &err), SW_EINVAL);
        assert_string_equal(err.param, "input[1].type");
        assert_null(out);
        sw_request_free(&req);
    }
    sw_request_free(&ref);
    sw_jmemo_set_max(0);
    free(body);
    free(stripped);
}

/* n function tools, each followed by a hosted one (left out when strip);
 * function tool `changed` (-1: none) says one byte more. */
static char *hosted_tools_body(int n, bool strip, int changed)
{
    struct sw_buf b;
    sw_buf_init(&b, (size_t)1 << 30);
    assert_int_equal(sw_buf_append_str(&b, "{\"model\":\"m\",\"input\":\"go on\",\"tools\":["), 0);
    for (int i = 0; i < n; i++) {
        char t[512];
        snprintf(t, sizeof t,
                 "%s{\"type\":\"function\",\"name\":\"step_%d\",\"description\":\"Runs "
                 "step %d of the build%s and reports each failing test with its log\","
                 "\"parameters\":{\"type\":\"object\",\"properties\":{\"path\":{\"type\":"
                 "\"string\"}}}}%s",
                 i ? "," : "", i, i, i == changed ? "!" : "", strip ? "" : ",{\"type\":\"web_search\"}");
        assert_int_equal(sw_buf_append_str(&b, t), 0);
    }
    assert_int_equal(sw_buf_append_str(&b, "]}"), 0);
    return b.ptr;
}

static const json_t *chat_tool(const struct sw_chat_request *r, size_t i)
{
    return json_array_get(json_object_get(r->body, "tools"), i);
}

/* Hosted tools next to function tools, more than the 64 rounds of pruning
 * the other fields get: left out as the translation meets them (the body
 * parses, its translation is the body's without them, the first refusal
 * names the first), memo off and on. A function tool's translation is kept
 * with it: the next body that sends it shares it, and one that changed by
 * one byte gets its own. */
static void test_tools_kept_and_left_out(void **state)
{
    (void)state;
    char *body = hosted_tools_body(70, false, -1), *stripped = hosted_tools_body(70, true, -1),
         *changed = hosted_tools_body(70, false, 3);
    assert_true(strlen(body) >= SW_JMEMO_MIN_BODY);
    struct sw_chat_request ref, req[3], ch;
    struct sw_request_error err;
    sw_jmemo_set_max(0);
    assert_int_equal(sw_responses_request_parse(stripped, strlen(stripped), NULL, &ref, &err), SW_OK);
    assert_null(ref.untranslatable);
    for (int pass = 0; pass < 3; pass++) {
        sw_jmemo_set_max(pass ? 64u << 20 : 0);
        assert_int_equal(sw_responses_request_parse(body, strlen(body), NULL, &req[pass], &err), SW_OK);
        assert_non_null(req[pass].untranslatable);
        assert_string_equal(req[pass].untranslatable->param, "tools[1].type");
        assert_same_text(&req[pass], &ref);
        assert_int_equal(req[pass].prompt_tokens_est, req[0].prompt_tokens_est);
    }
    assert_ptr_equal(chat_tool(&req[1], 3), chat_tool(&req[2], 3));     /* shared */
    assert_ptr_not_equal(chat_tool(&req[0], 3), chat_tool(&req[1], 3));
    assert_int_equal(sw_responses_request_parse(changed, strlen(changed), NULL, &ch, &err), SW_OK);
    assert_ptr_equal(chat_tool(&ch, 2), chat_tool(&req[2], 2));
    assert_ptr_not_equal(chat_tool(&ch, 3), chat_tool(&req[2], 3));
    assert_non_null(memmem(ch.text, ch.text_len, "step 3 of the build!", 20));
    for (int pass = 0; pass < 3; pass++)
        sw_request_free(&req[pass]);
    sw_request_free(&ch);
    sw_request_free(&ref);
    sw_jmemo_set_max(0);
    free(body);
    free(stripped);
    free(changed);
}

/* 60 turns; turn 5's message has an image by file id, and the body asks
 * for truncation auto: two fields chat cannot carry, pruned in rounds. */
static char *pruned_body(void)
{
    struct sw_buf b;
    sw_buf_init(&b, (size_t)1 << 30);
    assert_int_equal(sw_buf_append_str(&b, "{\"model\":\"m\",\"truncation\":\"auto\",\"input\":["), 0);
    for (int i = 0; i < 60; i++) {
        char it[512];
        snprintf(it, sizeof it,
                 "%s{\"role\":\"user\",\"content\":[{\"type\":\"input_text\",\"text\":\"turn %d: "
                 "read the parser module and tell me what changed\"}%s]},{\"type\":\"message\","
                 "\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\",\"text\":\"answer %d\"}]}",
                 i ? "," : "", i,
                 i == 5 ? ",{\"type\":\"input_image\",\"file_id\":\"file_1\",\"detail\":\"auto\"}" : "",
                 i);
        assert_int_equal(sw_buf_append_str(&b, it), 0);
    }
    assert_int_equal(sw_buf_append_str(&b, "]}"), 0);
    return b.ptr;
}

/* A field that takes a round of pruning edits a copy of the path to it
 * only: the client's body (shared with the parse memo) keeps what was
 * pruned, and the next body that resends the other items shares their
 * translations. */
static void test_prune_copies_the_path(void **state)
{
    (void)state;
    char *body = pruned_body();
    assert_true(strlen(body) >= SW_JMEMO_MIN_BODY);
    sw_jmemo_set_max(64u << 20);
    struct sw_chat_request req[2];
    struct sw_request_error err;
    for (int k = 0; k < 2; k++) {
        assert_int_equal(sw_responses_request_parse(body, strlen(body), NULL, &req[k], &err), SW_OK);
        assert_non_null(req[k].untranslatable);
        const json_t *item = json_array_get(json_object_get(req[k].native, "input"), 10);
        assert_int_equal(json_array_size(json_object_get(item, "content")), 2);
        assert_non_null(json_object_get(req[k].native, "truncation"));
    }
    assert_ptr_equal(json_array_get(json_object_get(req[0].native, "input"), 10),
                     json_array_get(json_object_get(req[1].native, "input"), 10));
    const json_t *m0 = json_object_get(req[0].body, "messages"), *m1 = json_object_get(req[1].body, "messages");
    assert_ptr_equal(json_array_get(m0, 3), json_array_get(m1, 3));     /* kept translations */
    assert_same_text(&req[1], &req[0]);
    size_t n;
    char *whole = sw_request_text_whole(&req[1], &n);
    assert_null(memmem(whole, n, "file_1", 6));
    free(whole);
    assert_true(req[1].text_pieces.n > 0);  /* the kept texts are shared, not copied */
    sw_request_free(&req[0]);
    sw_request_free(&req[1]);
    sw_jmemo_set_max(0);
    free(body);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_requests),
        cmocka_unit_test(test_requests_parse_as_chat),
        cmocka_unit_test(test_request_parse),
        cmocka_unit_test(test_translation_kept),
        cmocka_unit_test(test_items_left_out),
        cmocka_unit_test(test_tools_kept_and_left_out),
        cmocka_unit_test(test_prune_copies_the_path),
        cmocka_unit_test(test_answer_text),
        cmocka_unit_test(test_answer_items),
        cmocka_unit_test(test_stream_text),
        cmocka_unit_test(test_stream_tools),
        cmocka_unit_test(test_stream_reasoning_refusal_length),
        cmocka_unit_test(test_stream_empty_and_fail),
        cmocka_unit_test(test_stream_bounds),
        cmocka_unit_test(test_stream_split_anywhere),
        cmocka_unit_test(test_stream_delta_sizes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
