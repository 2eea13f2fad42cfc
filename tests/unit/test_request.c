/* Unit tests of request parsing and validation (src/request/request.c).
 * Bodies are written with ' for " to stay readable; Q() converts them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/err.h"
#include "common/jfast.h"
#include "common/jmemo.h"
#include "common/jscan.h"
#include "request/request.h"

/* Table rows leave trailing fields to their zero default. */
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

/* Copies s with every ' turned into " (to buf, static, one at a time). */
static const char *q(const char *s)
{
    static char buf[8192];
    size_t n = strlen(s);
    assert_true(n < sizeof(buf));
    for (size_t i = 0; i <= n; i++)
        buf[i] = s[i] == '\'' ? '"' : s[i];
    return buf;
}

#define MSGS "'messages':[{'role':'user','content':'hi'}]"
/* Seventeen members no check reads. */
#define WIDE "'x1':1,'x2':1,'x3':1,'x4':1,'x5':1,'x6':1,'x7':1,'x8':1,'x9':1,'x10':1," \
             "'x11':1,'x12':1,'x13':1,'x14':1,'x15':1,'x16':1,'x17':1"

/* ---- Bad bodies ---- */

struct bad_case {
    const char *body;           /* ' stands for " */
    const char *code;
    const char *param;          /* "" for null */
    const char *message;
    int raw;                    /* body used as is (no ' conversion) */
};

static const struct bad_case bad[] = {
    /* JSON itself */
    { "", "invalid_json", "",
      "We could not parse the JSON body of your request: the body is empty; expected a "
      "JSON object." },
    { "{", "invalid_json", "",
      "We could not parse the JSON body of your request: string or '}' expected near end "
      "of file at line 1 column 1." },
    { "{\"model\":\"a\",}", "invalid_json", "",
      "We could not parse the JSON body of your request: string or '}' expected near '}' "
      "at line 1 column 14.", 1 },
    { "{'model':'a','model':'b'," MSGS "}", "invalid_json", "",
      "We could not parse the JSON body of your request: duplicate object key near "
      "'\"model\"' at line 1 column 20." },
    { "{'model':'a\\u0000'," MSGS "}", "invalid_json", "",
      "We could not parse the JSON body of your request: \\u0000 is not allowed in strings "
      "at line 1 column 18." },
    { "{\"model\":\"\xff\"}", "invalid_json", "",
      "We could not parse the JSON body of your request: unable to decode byte 0xff near "
      "'\"' at line 1 column 10.", 1 },
    { "{'model':'m'," MSGS "} trailing", "invalid_json", "",
      "We could not parse the JSON body of your request: end of file expected near "
      "'trailing' at line 1 column 66." },
    { "[]", "invalid_type", "",
      "Invalid type for the request body: expected an object, but got an array instead." },
    { "'hello'", "invalid_type", "",
      "Invalid type for the request body: expected an object, but got a string instead." },

    /* model */
    { "{" MSGS "}", "missing_required_parameter", "model",
      "Missing required parameter: 'model'." },
    { "{'model':5," MSGS "}", "invalid_type", "model",
      "Invalid type for 'model': expected a string, but got an integer instead." },
    { "{'model':null," MSGS "}", "invalid_type", "model",
      "Invalid type for 'model': expected a string, but got null instead." },
    { "{'model':''," MSGS "}", "invalid_value", "model",
      "Invalid value for 'model': expected a non-empty string, the name of a model." },

    /* messages */
    { "{'model':'m'}", "missing_required_parameter", "messages",
      "Missing required parameter: 'messages'." },
    { "{'model':'m','messages':{}}", "invalid_type", "messages",
      "Invalid type for 'messages': expected an array, but got an object instead." },
    { "{'model':'m','messages':[]}", "invalid_value", "messages",
      "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an "
      "empty array instead." },
    { "{'model':'m','messages':['hi']}", "invalid_type", "messages[0]",
      "Invalid type for 'messages[0]': expected an object, but got a string instead." },
    { "{'model':'m','messages':[{'content':'x'}]}", "missing_required_parameter",
      "messages[0].role", "Missing required parameter: 'messages[0].role'." },
    { "{'model':'m','messages':[{'role':7,'content':'x'}]}", "invalid_type",
      "messages[0].role",
      "Invalid type for 'messages[0].role': expected a string, but got an integer instead." },
    { "{'model':'m','messages':[{'role':'system','content':'s'},{'role':'user','content':'u'},"
      "{'role':'robot','content':'r'}]}", "invalid_value", "messages[2].role",
      "Invalid value for 'messages[2].role': 'robot'. Supported values are: 'system', "
      "'developer', 'user', 'assistant', 'tool', 'function'." },
    { "{'model':'m','messages':[{'role':'" "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyz"
      "','content':'r'}]}", "invalid_value", "messages[0].role",
      "Invalid value for 'messages[0].role': 'abcdefghijklmnopqrstuvwxyzabcdefghijklmn...'. "
      "Supported values are: 'system', 'developer', 'user', 'assistant', 'tool', "
      "'function'." },
    { "{'model':'m','messages':[{'role':'user','name':1,'content':'x'}]}", "invalid_type",
      "messages[0].name",
      "Invalid type for 'messages[0].name': expected a string, but got an integer instead." },

    /* content */
    { "{'model':'m','messages':[{'role':'user'}]}", "missing_required_parameter",
      "messages[0].content", "Missing required parameter: 'messages[0].content'." },
    { "{'model':'m','messages':[{'role':'user','content':null}]}", "invalid_type",
      "messages[0].content",
      "Invalid type for 'messages[0].content': expected one of a string or an array of "
      "objects, but got null instead. null is allowed only for an assistant message with "
      "'tool_calls' or 'function_call'." },
    { "{'model':'m','messages':[{'role':'assistant','content':null}]}", "invalid_type",
      "messages[0].content",
      "Invalid type for 'messages[0].content': expected one of a string or an array of "
      "objects, but got null instead. null is allowed only for an assistant message with "
      "'tool_calls' or 'function_call'." },
    { "{'model':'m','messages':[{'role':'assistant'}]}", "missing_required_parameter",
      "messages[0].content", "Missing required parameter: 'messages[0].content'." },
    { "{'model':'m','messages':[{'role':'user','content':5}]}", "invalid_type",
      "messages[0].content",
      "Invalid type for 'messages[0].content': expected one of a string or an array of "
      "objects, but got an integer instead." },
    { "{'model':'m','messages':[{'role':'user','content':[]}]}", "invalid_value",
      "messages[0].content",
      "Invalid 'messages[0].content': empty array. Expected an array with minimum length 1, "
      "but got an empty array instead." },
    { "{'model':'m','messages':[{'role':'user','content':['x']}]}", "invalid_type",
      "messages[0].content[0]",
      "Invalid type for 'messages[0].content[0]': expected an object, but got a string "
      "instead." },
    { "{'model':'m','messages':[{'role':'user','content':[{'text':'x'}]}]}",
      "missing_required_parameter", "messages[0].content[0].type",
      "Missing required parameter: 'messages[0].content[0].type'." },
    { "{'model':'m','messages':[{'role':'user','content':[{'type':'text','text':'a'},"
      "{'type':'video'}]}]}", "invalid_value", "messages[0].content[1].type",
      "Invalid value for 'messages[0].content[1].type': 'video'. Supported values are: "
      "'text', 'image_url', 'input_audio', 'file'." },
    { "{'model':'m','messages':[{'role':'system','content':[{'type':'image_url',"
      "'image_url':{'url':'http://x/a.png'}}]}]}", "invalid_value",
      "messages[0].content[0].type",
      "Invalid value for 'messages[0].content[0].type': 'image_url'. Supported values are: "
      "'text'." },
    { "{'model':'m','messages':[{'role':'assistant','content':[{'type':'image_url',"
      "'image_url':{'url':'u'}}]}]}", "invalid_value", "messages[0].content[0].type",
      "Invalid value for 'messages[0].content[0].type': 'image_url'. Supported values are: "
      "'text', 'refusal'." },
    { "{'model':'m','messages':[{'role':'user','content':[{'type':'text'}]}]}",
      "missing_required_parameter", "messages[0].content[0].text",
      "Missing required parameter: 'messages[0].content[0].text'." },
    { "{'model':'m','messages':[{'role':'user','content':[{'type':'text','text':['a']}]}]}",
      "invalid_type", "messages[0].content[0].text",
      "Invalid type for 'messages[0].content[0].text': expected a string, but got an array "
      "instead." },
    { "{'model':'m','messages':[{'role':'user','content':[{'type':'image_url'}]}]}",
      "missing_required_parameter", "messages[0].content[0].image_url",
      "Missing required parameter: 'messages[0].content[0].image_url'." },
    { "{'model':'m','messages':[{'role':'user','content':[{'type':'image_url',"
      "'image_url':'http://x/a.png'}]}]}", "invalid_type", "messages[0].content[0].image_url",
      "Invalid type for 'messages[0].content[0].image_url': expected an object, but got a "
      "string instead." },
    { "{'model':'m','messages':[{'role':'user','content':[{'type':'image_url',"
      "'image_url':{'detail':'low'}}]}]}", "missing_required_parameter",
      "messages[0].content[0].image_url.url",
      "Missing required parameter: 'messages[0].content[0].image_url.url'." },
    { "{'model':'m','messages':[{'role':'user','content':[{'type':'input_audio',"
      "'input_audio':{'data':'AAAA'}}]}]}", "missing_required_parameter",
      "messages[0].content[0].input_audio.format",
      "Missing required parameter: 'messages[0].content[0].input_audio.format'." },
    { "{'model':'m','messages':[{'role':'user','content':[{'type':'file','file':'f'}]}]}",
      "invalid_type", "messages[0].content[0].file",
      "Invalid type for 'messages[0].content[0].file': expected an object, but got a string "
      "instead." },

    /* tool, function and assistant calls */
    { "{'model':'m','messages':[{'role':'user','content':'q'},{'role':'tool','content':'42'}]}",
      "missing_required_parameter", "messages[1].tool_call_id",
      "Missing required parameter: 'messages[1].tool_call_id'." },
    { "{'model':'m','messages':[{'role':'tool','tool_call_id':1,'content':'42'}]}",
      "invalid_type", "messages[0].tool_call_id",
      "Invalid type for 'messages[0].tool_call_id': expected a string, but got an integer "
      "instead." },
    { "{'model':'m','messages':[{'role':'function','content':'42'}]}",
      "missing_required_parameter", "messages[0].name",
      "Missing required parameter: 'messages[0].name'." },
    { "{'model':'m','messages':[{'role':'assistant','content':null,'tool_calls':[]}]}",
      "invalid_value", "messages[0].tool_calls",
      "Invalid 'messages[0].tool_calls': empty array. Expected an array with minimum length "
      "1, but got an empty array instead." },
    { "{'model':'m','messages':[{'role':'assistant','tool_calls':{}}]}",
      "invalid_type", "messages[0].tool_calls",
      "Invalid type for 'messages[0].tool_calls': expected an array, but got an object "
      "instead." },
    { "{'model':'m','messages':[{'role':'assistant','tool_calls':[{'id':'c','type':'function',"
      "'function':{'name':'f'}}]}]}", "missing_required_parameter",
      "messages[0].tool_calls[0].function.arguments",
      "Missing required parameter: 'messages[0].tool_calls[0].function.arguments'." },
    { "{'model':'m','messages':[{'role':'assistant','tool_calls':[{'id':'c','type':'code',"
      "'function':{'name':'f','arguments':'{}'}}]}]}", "invalid_value",
      "messages[0].tool_calls[0].type",
      "Invalid value for 'messages[0].tool_calls[0].type': 'code'. Supported values are: "
      "'function'." },
    { "{'model':'m','messages':[{'role':'assistant','tool_calls':[{'type':'function',"
      "'function':{'name':'f','arguments':'{}'}}]}]}", "missing_required_parameter",
      "messages[0].tool_calls[0].id",
      "Missing required parameter: 'messages[0].tool_calls[0].id'." },
    { "{'model':'m','messages':[{'role':'assistant','function_call':'f'}]}", "invalid_type",
      "messages[0].function_call",
      "Invalid type for 'messages[0].function_call': expected an object, but got a string "
      "instead." },

    /* stream */
    { "{'model':'m'," MSGS ",'stream':'yes'}", "invalid_type", "stream",
      "Invalid type for 'stream': expected a boolean, but got a string instead." },
    { "{'model':'m'," MSGS ",'stream_options':{'include_usage':true}}", "invalid_value",
      "stream_options",
      "Invalid value for 'stream_options': it is only allowed when 'stream' is true." },
    { "{'model':'m'," MSGS ",'stream':false,'stream_options':{'include_usage':true}}",
      "invalid_value", "stream_options",
      "Invalid value for 'stream_options': it is only allowed when 'stream' is true." },
    { "{'model':'m'," MSGS ",'stream':true,'stream_options':true}", "invalid_type",
      "stream_options",
      "Invalid type for 'stream_options': expected an object, but got a boolean instead." },
    { "{'model':'m'," MSGS ",'stream':true,'stream_options':{'include_usage':'yes'}}",
      "invalid_type", "stream_options.include_usage",
      "Invalid type for 'stream_options.include_usage': expected a boolean, but got a string "
      "instead." },

    /* numbers */
    { "{'model':'m'," MSGS ",'max_tokens':0}", "invalid_value", "max_tokens",
      "Invalid 'max_tokens': integer below minimum value. Expected a value >= 1, but got 0 "
      "instead." },
    { "{'model':'m'," MSGS ",'max_tokens':1.5}", "invalid_type", "max_tokens",
      "Invalid type for 'max_tokens': expected an integer, but got a decimal instead." },
    { "{'model':'m'," MSGS ",'max_tokens':'100'}", "invalid_type", "max_tokens",
      "Invalid type for 'max_tokens': expected an integer, but got a string instead." },
    { "{'model':'m'," MSGS ",'max_completion_tokens':-3}", "invalid_value",
      "max_completion_tokens",
      "Invalid 'max_completion_tokens': integer below minimum value. Expected a value >= 1, "
      "but got -3 instead." },
    { "{'model':'m'," MSGS ",'temperature':2.5}", "invalid_value", "temperature",
      "Invalid 'temperature': number above maximum value. Expected a value <= 2, but got 2.5 "
      "instead." },
    { "{'model':'m'," MSGS ",'temperature':-0.1}", "invalid_value", "temperature",
      "Invalid 'temperature': number below minimum value. Expected a value >= 0, but got "
      "-0.1 instead." },
    { "{'model':'m'," MSGS ",'temperature':'hot'}", "invalid_type", "temperature",
      "Invalid type for 'temperature': expected a number, but got a string instead." },
    /* a body and a message of more members than validation indexes at once */
    { "{'model':'m'," MSGS "," WIDE ",'temperature':'hot'}", "invalid_type", "temperature",
      "Invalid type for 'temperature': expected a number, but got a string instead." },
    { "{'model':'m','messages':[{'role':'user'," WIDE ",'name':1,'content':'x'}]}",
      "invalid_type", "messages[0].name",
      "Invalid type for 'messages[0].name': expected a string, but got an integer instead." },
    { "{'model':'m'," MSGS ",'top_p':2}", "invalid_value", "top_p",
      "Invalid 'top_p': number above maximum value. Expected a value <= 1, but got 2 "
      "instead." },
    { "{'model':'m'," MSGS ",'n':2}", "invalid_value", "n",
      "Invalid value for 'n': 2. Spillway relays a single choice per request; set 'n' to 1 "
      "or leave it out." },
    { "{'model':'m'," MSGS ",'n':0}", "invalid_value", "n",
      "Invalid 'n': integer below minimum value. Expected a value >= 1, but got 0 instead." },
    /* token counts are bounded, so no sum of them can wrap downstream */
    { "{'model':'m'," MSGS ",'max_tokens':9223372036854775807}", "invalid_value", "max_tokens",
      "Invalid 'max_tokens': integer above maximum value. Expected a value <= 10000000, but "
      "got 9223372036854775807 instead." },
    { "{'model':'m'," MSGS ",'max_tokens':10000001}", "invalid_value", "max_tokens",
      "Invalid 'max_tokens': integer above maximum value. Expected a value <= 10000000, but "
      "got 10000001 instead." },
    { "{'model':'m'," MSGS ",'max_completion_tokens':9223372036854775807,'max_tokens':5}",
      "invalid_value", "max_completion_tokens",
      "Invalid 'max_completion_tokens': integer above maximum value. Expected a value <= "
      "10000000, but got 9223372036854775807 instead." },
    { "{'model':'m'," MSGS ",'max_completion_tokens':5,'max_tokens':9223372036854775807}",
      "invalid_value", "max_tokens",
      "Invalid 'max_tokens': integer above maximum value. Expected a value <= 10000000, but "
      "got 9223372036854775807 instead." },

    /* tools */
    { "{'model':'m'," MSGS ",'tools':{}}", "invalid_type", "tools",
      "Invalid type for 'tools': expected an array, but got an object instead." },
    { "{'model':'m'," MSGS ",'tools':[]}", "invalid_value", "tools",
      "Invalid 'tools': empty array. Expected an array with minimum length 1, but got an "
      "empty array instead." },
    { "{'model':'m'," MSGS ",'tools':[1]}", "invalid_type", "tools[0]",
      "Invalid type for 'tools[0]': expected an object, but got an integer instead." },
    { "{'model':'m'," MSGS ",'tools':[{'function':{'name':'f'}}]}",
      "missing_required_parameter", "tools[0].type",
      "Missing required parameter: 'tools[0].type'." },
    { "{'model':'m'," MSGS ",'tools':[{'type':'retrieval'}]}", "invalid_value",
      "tools[0].type",
      "Invalid value for 'tools[0].type': 'retrieval'. Supported values are: 'function'." },
    { "{'model':'m'," MSGS ",'tools':[{'type':'function','function':{'name':'a'}},"
      "{'type':'function'}]}", "missing_required_parameter", "tools[1].function",
      "Missing required parameter: 'tools[1].function'." },
    { "{'model':'m'," MSGS ",'tools':[{'type':'function','function':{'parameters':{}}}]}",
      "missing_required_parameter", "tools[0].function.name",
      "Missing required parameter: 'tools[0].function.name'." },
    { "{'model':'m'," MSGS ",'functions':[{'description':'d'}]}",
      "missing_required_parameter", "functions[0].name",
      "Missing required parameter: 'functions[0].name'." },

    /* metadata */
    { "{'model':'m'," MSGS ",'metadata':[]}", "invalid_type", "metadata",
      "Invalid type for 'metadata': expected an object, but got an array instead." },
    { "{'model':'m'," MSGS ",'metadata':{'allow_cloud':'n'}}", "invalid_value",
      "metadata.allow_cloud",
      "Invalid value for 'metadata.allow_cloud': 'n'. Supported values are: true, false, "
      "or the strings true/false, 1/0, yes/no, on/off." },
    { "{'model':'m'," MSGS ",'metadata':{'allow_cloud':'false;'}}", "invalid_value",
      "metadata.allow_cloud",
      "Invalid value for 'metadata.allow_cloud': 'false;'. Supported values are: true, false, "
      "or the strings true/false, 1/0, yes/no, on/off." },
    { "{'model':'m'," MSGS ",'metadata':{'allow_cloud':''}}", "invalid_value",
      "metadata.allow_cloud",
      "Invalid value for 'metadata.allow_cloud': ''. Supported values are: true, false, "
      "or the strings true/false, 1/0, yes/no, on/off." },
    { "{'model':'m'," MSGS ",'metadata':{'allow_cloud':1}}", "invalid_type",
      "metadata.allow_cloud",
      "Invalid type for 'metadata.allow_cloud': expected a boolean or one of the strings "
      "true/false, 1/0, yes/no, on/off, but got an integer instead." },
    /* null is not "unset": a privacy flag is given or absent */
    { "{'model':'m'," MSGS ",'metadata':{'allow_cloud':null}}", "invalid_type",
      "metadata.allow_cloud",
      "Invalid type for 'metadata.allow_cloud': expected a boolean or one of the strings "
      "true/false, 1/0, yes/no, on/off, but got null instead." },
    { "{'model':'m'," MSGS ",'metadata':{'allow_cloud':[false]}}", "invalid_type",
      "metadata.allow_cloud",
      "Invalid type for 'metadata.allow_cloud': expected a boolean or one of the strings "
      "true/false, 1/0, yes/no, on/off, but got an array instead." },
    /* near-miss spellings of allow_cloud */
    { "{'model':'m'," MSGS ",'metadata':{'Allow_Cloud':'false'}}", "invalid_value",
      "metadata.Allow_Cloud",
      "Unknown metadata key 'metadata.Allow_Cloud': the privacy flag is spelled "
      "'metadata.allow_cloud' (lower case, with an underscore)." },
    { "{'model':'m'," MSGS ",'metadata':{'allow-cloud':'false'}}", "invalid_value",
      "metadata.allow-cloud",
      "Unknown metadata key 'metadata.allow-cloud': the privacy flag is spelled "
      "'metadata.allow_cloud' (lower case, with an underscore)." },
    { "{'model':'m'," MSGS ",'metadata':{'allow_cloud ':'false'}}", "invalid_value",
      "metadata.allow_cloud ",
      "Unknown metadata key 'metadata.allow_cloud ': the privacy flag is spelled "
      "'metadata.allow_cloud' (lower case, with an underscore)." },
    { "{'model':'m'," MSGS ",'metadata':{'team':'x','allowCloud':false}}", "invalid_value",
      "metadata.allowCloud",
      "Unknown metadata key 'metadata.allowCloud': the privacy flag is spelled "
      "'metadata.allow_cloud' (lower case, with an underscore)." },
    { "{'model':'m'," MSGS ",'metadata':{'user':5}}", "invalid_type", "metadata.user",
      "Invalid type for 'metadata.user': expected a string, but got an integer instead." },
};

static void check_error_json(const struct sw_request_error *err)
{
    char *s = sw_request_error_json(err);
    json_error_t je;
    json_t *root, *e;

    assert_non_null(s);
    root = json_loads(s, 0, &je);
    assert_non_null(root);
    e = json_object_get(root, "error");
    assert_true(json_is_object(e));
    assert_string_equal(json_string_value(json_object_get(e, "message")), err->message);
    assert_string_equal(json_string_value(json_object_get(e, "type")), err->type);
    if (err->param[0])
        assert_string_equal(json_string_value(json_object_get(e, "param")), err->param);
    else
        assert_true(json_is_null(json_object_get(e, "param")));
    if (err->code[0])
        assert_string_equal(json_string_value(json_object_get(e, "code")), err->code);
    else
        assert_true(json_is_null(json_object_get(e, "code")));
    json_decref(root);
    free(s);
}

static void test_request_bad(void **state)
{
    int failures = 0;
    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        const struct bad_case *tc = &bad[i];
        const char *body = tc->raw ? tc->body : q(tc->body);
        struct sw_chat_request req;
        struct sw_request_error err;
        int rc;

        memset(&err, 0x5a, sizeof(err));
        rc = sw_request_parse(body, strlen(body), &req, &err);
        if (rc != SW_EINVAL || strcmp(err.code, tc->code) != 0
            || strcmp(err.param, tc->param) != 0 || strcmp(err.message, tc->message) != 0) {
            print_error("case %zu %s\n  got  rc %d code '%s' param '%s'\n  message '%s'\n",
                        i, body, rc, err.code, err.param, err.message);
            failures++;
            if (rc == SW_OK)
                sw_request_free(&req);
            continue;
        }
        assert_int_equal(rc, SW_EINVAL);
        assert_null(req.body);
        assert_int_equal(err.status, 400);
        assert_string_equal(err.type, "invalid_request_error");
        assert_string_equal(err.code, tc->code);
        assert_string_equal(err.param, tc->param);
        assert_string_equal(err.message, tc->message);
        check_error_json(&err);
        sw_request_free(&req);      /* harmless on a failed parse */
    }
    assert_int_equal(failures, 0);
}

/* ---- Good bodies ---- */

struct good_case {
    const char *body;
    long tokens;
    size_t n_messages;
    long max_tokens;
    int stream, include_usage, has_tools, has_images, allow_cloud;
};

/* Every request's estimate ends with the 3 priming tokens
 * (SW_REQUEST_PRIMING_TOKENS), after 4 per message. */
static const struct good_case good[] = {
    /* "Hello, world": 12 bytes -> 3, + 4 */
    { "{'model':'m','messages':[{'role':'user','content':'Hello, world'}]}",
      10, 1, 0, 0, 0, 0, 0, -1 },
    /* 14 bytes -> 4, 2 -> 1, + 2 * 4 */
    { "{'model':'m','messages':[{'role':'system','content':'You are terse.'},"
      "{'role':'user','content':'Hi'}]}", 16, 2, 0, 0, 0, 0, 0, -1 },
    /* "héllo" is 6 bytes, written raw or escaped: 2 + 4 */
    { "{'model':'m','messages':[{'role':'user','content':'h\xc3\xa9llo'}]}",
      9, 1, 0, 0, 0, 0, 0, -1 },
    { "{'model':'m','messages':[{'role':'user','content':'h\\u00e9llo'}]}",
      9, 1, 0, 0, 0, 0, 0, -1 },
    /* empty content: 0 + 4 */
    { "{'model':'m','messages':[{'role':'developer','content':''}]}",
      7, 1, 0, 0, 0, 0, 0, -1 },
    /* text parts 5 -> 2 and 8 -> 2; a low-detail image 85: 4 + 4 + 85 */
    { "{'model':'m','messages':[{'role':'user','content':[{'type':'text','text':'abcde'},"
      "{'type':'image_url','image_url':{'url':'data:image/png;base64,AAAA','detail':'low'}},"
      "{'type':'text','text':'12345678'}]}]}", 8 + SW_REQUEST_IMAGE_LOW_TOKENS + 3, 1, 0, 0, 0, 0, 1,
      -1 },
    /* any other detail: the largest high-detail image */
    { "{'model':'m','messages':[{'role':'user','content':[{'type':'image_url',"
      "'image_url':{'url':'http://x/a.png'}}]}]}", 4 + SW_REQUEST_IMAGE_TOKENS + 3, 1, 0, 0, 0, 0, 1,
      -1 },
    /* small inline audio and a file by id: the media minimum */
    { "{'model':'m','messages':[{'role':'user','content':[{'type':'input_audio',"
      "'input_audio':{'data':'AAAA','format':'wav'}}]}]}", 4 + SW_REQUEST_MEDIA_MIN_TOKENS + 3, 1, 0,
      0, 0, 0, 1, -1 },
    { "{'model':'m','messages':[{'role':'user','content':[{'type':'file',"
      "'file':{'file_id':'file-1'}}]}]}", 4 + SW_REQUEST_MEDIA_MIN_TOKENS + 3, 1, 0, 0, 0, 0, 1, -1 },
    /* 'q' 1 + 4; arguments {"a":1} 7 -> 2, + 4; tool result '42' 1 + 4 */
    { "{'model':'m','messages':[{'role':'user','content':'q'},{'role':'assistant',"
      "'content':null,'tool_calls':[{'id':'c1','type':'function','function':{'name':'f',"
      "'arguments':'{\\'a\\':1}'}}]},{'role':'tool','tool_call_id':'c1','content':'42'}]}",
      19, 3, 0, 0, 0, 0, 0, -1 },
    /* assistant without content but with a legacy function_call: arguments '{}' 1 + 4;
     * function result with null content: 4 */
    { "{'model':'m','messages':[{'role':'assistant','function_call':{'name':'f',"
      "'arguments':'{}'}},{'role':'function','name':'f','content':null}]}",
      12, 2, 0, 0, 0, 0, 0, -1 },
    /* assistant text and refusal parts: 'ok' 1, 'no' 1, + 4 */
    { "{'model':'m','messages':[{'role':'assistant','content':[{'type':'text','text':'ok'},"
      "{'type':'refusal','refusal':'no'}]}]}", 9, 1, 0, 0, 0, 0, 0, -1 },
    /* a tool definition: its compact JSON is 84 bytes -> 21; 'hi' 1 + 4 */
    { "{'model':'m'," MSGS ",'tools':[{'type':'function','function':{'name':'get_weather',"
      "'parameters':{'type':'object'}}}]}", 29, 1, 0, 0, 0, 1, 0, -1 },
    /* the same definition pretty-printed estimates the same */
    { "{'model':'m'," MSGS ",'tools':[ { 'type' : 'function' , 'function' : { 'name' : "
      "'get_weather', 'parameters': {'type': 'object'} } } ]}", 29, 1, 0, 0, 0, 1, 0, -1 },
    /* legacy functions: 48 bytes -> 12; + 5 */
    { "{'model':'m'," MSGS ",'functions':[{'name':'lookup','description':'Look up a word'}]}",
      20, 1, 0, 0, 0, 1, 0, -1 },
    /* stream flags */
    { "{'model':'m'," MSGS ",'stream':true}", 8, 1, 0, 1, 0, 0, 0, -1 },
    { "{'model':'m'," MSGS ",'stream':true,'stream_options':{'include_usage':true}}",
      8, 1, 0, 1, 1, 0, 0, -1 },
    { "{'model':'m'," MSGS ",'stream':true,'stream_options':{'include_usage':false}}",
      8, 1, 0, 1, 0, 0, 0, -1 },
    { "{'model':'m'," MSGS ",'stream':true,'stream_options':{}}", 8, 1, 0, 1, 0, 0, 0, -1 },
    { "{'model':'m'," MSGS ",'stream':false}", 8, 1, 0, 0, 0, 0, 0, -1 },
    /* max tokens: max_completion_tokens wins over max_tokens */
    { "{'model':'m'," MSGS ",'max_tokens':100}", 8, 1, 100, 0, 0, 0, 0, -1 },
    { "{'model':'m'," MSGS "," WIDE ",'max_tokens':100,'stream':true,"
      "'metadata':{'allow_cloud':false}}", 8, 1, 100, 1, 0, 0, 0, 0 },
    { "{'model':'m'," MSGS ",'max_completion_tokens':50,'max_tokens':100}",
      8, 1, 50, 0, 0, 0, 0, -1 },
    { "{'model':'m'," MSGS ",'max_tokens':100,'max_completion_tokens':50}",
      8, 1, 50, 0, 0, 0, 0, -1 },
    /* the largest accepted */
    { "{'model':'m'," MSGS ",'max_tokens':10000000}", 8, 1, 10000000, 0, 0, 0, 0, -1 },
    { "{'model':'m'," MSGS ",'max_completion_tokens':10000000}",
      8, 1, 10000000, 0, 0, 0, 0, -1 },
    /* boundaries and nulls (null optional parameters are absent) */
    { "{'model':'m'," MSGS ",'temperature':0,'top_p':1,'n':1}", 8, 1, 0, 0, 0, 0, 0, -1 },
    { "{'model':'m'," MSGS ",'temperature':2.0,'top_p':0.0}", 8, 1, 0, 0, 0, 0, 0, -1 },
    { "{'model':'m'," MSGS ",'temperature':null,'top_p':null,'n':null,'stream':null,"
      "'stream_options':null,'max_tokens':null,'tools':null,'metadata':null}",
      8, 1, 0, 0, 0, 0, 0, -1 },
    /* allow_cloud */
    { "{'model':'m'," MSGS ",'metadata':{'allow_cloud':true}}", 8, 1, 0, 0, 0, 0, 0, 1 },
    { "{'model':'m'," MSGS ",'metadata':{'allow_cloud':false}}", 8, 1, 0, 0, 0, 0, 0, 0 },
    { "{'model':'m'," MSGS ",'metadata':{'allow_cloud':' No '}}", 8, 1, 0, 0, 0, 0, 0, 0 },
    { "{'model':'m'," MSGS ",'metadata':{'allow_cloud':'off'}}", 8, 1, 0, 0, 0, 0, 0, 0 },
    { "{'model':'m'," MSGS ",'metadata':{'allow_cloud':'0'}}", 8, 1, 0, 0, 0, 0, 0, 0 },
    { "{'model':'m'," MSGS ",'metadata':{'allow_cloud':'YES'}}", 8, 1, 0, 0, 0, 0, 0, 1 },
    { "{'model':'m'," MSGS ",'metadata':{'allow_cloud':'on'}}", 8, 1, 0, 0, 0, 0, 0, 1 },
    { "{'model':'m'," MSGS ",'metadata':{'allow_cloud':'true'}}", 8, 1, 0, 0, 0, 0, 0, 1 },
    { "{'model':'m'," MSGS ",'metadata':{'team':'x','allow_cloud':'false'}}",
      8, 1, 0, 0, 0, 0, 0, 0 },
    { "{'model':'m'," MSGS ",'metadata':{'team':'x'}}", 8, 1, 0, 0, 0, 0, 0, -1 },
    /* unknown fields pass */
    { "{'model':'m'," MSGS ",'cache_prompt':true,'seed':7,'response_format':{'type':'text'}}",
      8, 1, 0, 0, 0, 0, 0, -1 },
};

static void test_request_good(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        const struct good_case *tc = &good[i];
        const char *body = q(tc->body);
        struct sw_chat_request req;
        struct sw_request_error err;
        int rc;

        memset(&err, 0, sizeof(err));
        rc = sw_request_parse(body, strlen(body), &req, &err);
        if (rc != SW_OK)
            print_error("case %zu %s\n  got %d '%s' '%s'\n", i, body, rc, err.param,
                        err.message);
        assert_int_equal(rc, SW_OK);
        if (req.prompt_tokens_est != tc->tokens)
            print_error("case %zu %s\n  tokens %ld\n", i, body, req.prompt_tokens_est);
        assert_non_null(req.body);
        assert_string_equal(req.model, "m");
        assert_int_equal(req.prompt_tokens_est, tc->tokens);
        assert_int_equal(req.n_messages, tc->n_messages);
        assert_int_equal(req.max_tokens, tc->max_tokens);
        assert_int_equal(req.stream, tc->stream);
        assert_int_equal(req.include_usage, tc->include_usage);
        assert_int_equal(req.has_tools, tc->has_tools);
        assert_int_equal(req.has_images, tc->has_images);
        assert_int_equal(req.allow_cloud, tc->allow_cloud);
        sw_request_free(&req);
        assert_null(req.body);
        sw_request_free(&req);      /* idempotent */
    }
}

/* The body is left intact: metadata.allow_cloud and unknown fields stay. */
static void test_request_body_intact(void **state)
{
    const char *body = q("{'model':'llama','messages':[{'role':'user','content':'x'}],"
                         "'metadata':{'allow_cloud':false},'cache_prompt':true}");
    struct sw_chat_request req;
    struct sw_request_error err;
    (void)state;

    assert_int_equal(sw_request_parse(body, strlen(body), &req, &err), SW_OK);
    assert_true(json_is_false(json_object_get(json_object_get(req.body, "metadata"),
                                              "allow_cloud")));
    assert_true(json_is_true(json_object_get(req.body, "cache_prompt")));
    assert_ptr_equal(req.model, json_string_value(json_object_get(req.body, "model")));
    sw_request_free(&req);
}

/* The spend bound: never below the estimate, never below the bytes of any
 * text sent (a byte-level BPE tokenizer's worst case), media at their rule. */
static void test_request_bound(void **state)
{
    struct sw_chat_request req;
    struct sw_request_error err;
    (void)state;
    const char *digits = q("{'model':'m','messages':[{'role':'user','content':'4,7,1,9,3,3,8,0,2,5'},"
                           "{'role':'assistant','content':'ok'}],"
                           "'response_format':{'type':'json_schema','json_schema':{'name':'reading',"
                           "'schema':{'type':'object'}}}}");
    size_t len = strlen(digits);
    assert_int_equal(sw_request_parse(digits, len, &req, &err), SW_OK);
    assert_true(req.prompt_tokens_max >= req.prompt_tokens_est);
    /* every byte of the body, plus 4 per message and the priming */
    assert_int_equal(req.prompt_tokens_max, (long)len + 2 * 4 + 3);
    sw_request_free(&req);

    /* A data: URL counts as the image rule, not its bytes. */
    char body[8192];
    char data[4001];
    memset(data, 'A', 4000);
    data[4000] = '\0';
    int n = snprintf(body, sizeof body,
                     "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":["
                     "{\"type\":\"image_url\",\"image_url\":{\"url\":\"data:image/png;base64,%s\"}}]}]}",
                     data);
    assert_true(n > 0 && (size_t)n < sizeof body);
    assert_int_equal(sw_request_parse(body, (size_t)n, &req, &err), SW_OK);
    size_t url = strlen("data:image/png;base64,") + 4000;
    assert_int_equal(req.prompt_tokens_max, (long)((size_t)n - url) + SW_REQUEST_IMAGE_TOKENS + 4 + 3);
    assert_true(req.prompt_tokens_max >= req.prompt_tokens_est);
    sw_request_free(&req);

    assert_int_equal(sw_request_bound_tokens((size_t)-1, 0, LONG_MAX, (size_t)-1), LONG_MAX);
    assert_int_equal(sw_request_bound_tokens(10, 20, 5, 0), 5 + 3);
}

/* The body need not be NUL-terminated: only len bytes are read. */
static void test_request_not_terminated(void **state)
{
    const char *text = q("{'model':'m','messages':[{'role':'user','content':'abcd'}]}XXXX");
    size_t len = strlen(text) - 4;
    char *body = malloc(len);
    struct sw_chat_request req;
    struct sw_request_error err;
    (void)state;

    assert_non_null(body);
    memcpy(body, text, len);
    assert_int_equal(sw_request_parse(body, len, &req, &err), SW_OK);
    assert_int_equal(req.prompt_tokens_est, 5 + 3);
    sw_request_free(&req);
    assert_int_equal(sw_request_parse(NULL, 0, &req, &err), SW_EINVAL);
    assert_string_equal(err.code, "invalid_json");
    free(body);
}

/* ---- Bounded cost of a body: values and depth ---- */

static void check_against_jansson(const char *text, size_t len);

static long jansson_allocs;

static void *counting_malloc(size_t n)
{
    jansson_allocs++;
    return malloc(n);
}

#define VALUES_MSG "The JSON body of your request is too complex: it holds more than 100000 " \
    "values (objects, arrays, strings, numbers, booleans and nulls), the limit."
#define DEPTH_MSG "The JSON body of your request is too complex: arrays and objects are " \
    "nested more than 64 levels deep, the limit."

/* Parses body (malloc'ed, len bytes); returns rc and counts jansson's
 * allocations in *allocs. */
static int parse_counting(const char *body, size_t len, struct sw_chat_request *req,
                          struct sw_request_error *err, long *allocs)
{
    json_set_alloc_funcs(counting_malloc, free);
    jansson_allocs = 0;
    int rc = sw_request_parse(body, len, req, err);
    *allocs = jansson_allocs;
    json_set_alloc_funcs(malloc, free);
    return rc;
}

static void expect_too_complex(const char *body, size_t len, const char *message)
{
    struct sw_chat_request req;
    struct sw_request_error err;
    long allocs;

    memset(&err, 0x5a, sizeof(err));
    assert_int_equal(parse_counting(body, len, &req, &err, &allocs), SW_EINVAL);
    assert_null(req.body);
    assert_int_equal(err.status, 400);
    assert_string_equal(err.type, "invalid_request_error");
    assert_string_equal(err.code, "json_too_complex");
    assert_string_equal(err.param, "");
    assert_string_equal(err.message, message);
    assert_int_equal(allocs, 0);        /* refused before jansson built anything */
    check_error_json(&err);
}

/* A valid request whose unknown field "x" is an array of n zeros (shape 0),
 * n nested arrays around a 0 (shape 1) or n nested objects {"a":...} around
 * a 0 (shape 2). The rest of the body holds 6 values (the object, model,
 * messages, the message, role, content) plus "x" itself, and is 1 level. */
static char *body_with_x(size_t n, int shape, size_t *len)
{
    const char *head = "{\"model\":\"m\",\"messages\":[{\"role\":\"user\","
                       "\"content\":\"hi\"}],\"x\":";
    size_t hl = strlen(head), cap = hl + 6 * n + 8, o = hl;
    char *b = malloc(cap);

    assert_non_null(b);
    memcpy(b, head, hl);
    if (shape == 2) {
        for (size_t i = 0; i < n; i++) {
            memcpy(b + o, "{\"a\":", 5);
            o += 5;
        }
        b[o++] = '0';
        for (size_t i = 0; i < n; i++)
            b[o++] = '}';
    } else if (shape == 1) {
        for (size_t i = 0; i < n; i++)
            b[o++] = '[';
        b[o++] = '0';
        for (size_t i = 0; i < n; i++)
            b[o++] = ']';
    } else {
        b[o++] = '[';
        for (size_t i = 0; i < n; i++) {
            b[o++] = '0';
            b[o++] = ',';
        }
        b[o - (n ? 1 : 0)] = ']';
        o += n ? 0 : 1;
    }
    b[o++] = '}';
    *len = o;
    return b;
}

static void expect_ok(const char *body, size_t len)
{
    struct sw_chat_request req;
    struct sw_request_error err;

    if (sw_request_parse(body, len, &req, &err) != SW_OK)
        print_error("%.*s...: %s\n", 60, body, err.message);
    assert_non_null(req.body);
    assert_int_equal(req.prompt_tokens_est, 5 + 3);
    sw_request_free(&req);
}

static void test_request_deep_nesting(void **state)
{
    char body[5000];
    size_t len;
    char *b;
    (void)state;

    /* far too deep (and invalid): refused on the depth, before decoding */
    memset(body, '[', sizeof(body));
    expect_too_complex(body, sizeof(body), DEPTH_MSG);
    /* deeper than jansson's own limit (2048) and valid: our limit, not jansson's error */
    b = body_with_x(3000, 1, &len);
    expect_too_complex(b, len, DEPTH_MSG);
    check_against_jansson(b, len);      /* jansson: "maximum parsing depth reached" */
    free(b);
    /* the bound itself: "x" is 1 level inside the body, so 63 more arrays reach 64 */
    b = body_with_x(63, 1, &len);
    expect_ok(b, len);
    free(b);
    b = body_with_x(64, 1, &len);
    expect_too_complex(b, len, DEPTH_MSG);
    free(b);
    /* objects count as levels too */
    b = body_with_x(63, 2, &len);
    expect_ok(b, len);
    free(b);
    b = body_with_x(64, 2, &len);
    expect_too_complex(b, len, DEPTH_MSG);
    free(b);
}

/* What jansson builds: every value once (object keys are not values), and
 * the deepest nesting of arrays and objects. */
static void tree_shape(json_t *v, size_t d, struct sw_json_shape *sh)
{
    const char *key;
    json_t *child;
    size_t i;

    sh->values++;
    if (!json_is_array(v) && !json_is_object(v))
        return;
    if (d + 1 > sh->depth)
        sh->depth = d + 1;
    if (json_is_array(v))
        json_array_foreach(v, i, child)
            tree_shape(child, d + 1, sh);
    else
        json_object_foreach(v, key, child)
            tree_shape(child, d + 1, sh);
}

/* The scan agrees with jansson on len bytes of text whenever jansson accepts
 * it, and is within its limits (64 deep) whenever jansson is. */
static void check_against_jansson(const char *text, size_t len)
{
    struct sw_json_shape scan = {0}, tree = {0};
    json_error_t je;
    json_t *root = json_loadb(text, len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &je);
    bool within = sw_request_json_shape(text, len, SIZE_MAX, 64, &scan);

    if (!root) {
        /* too deep for jansson (2048) is always too deep for the scan */
        if (json_error_code(&je) == json_error_stack_overflow)
            assert_false(within);
        return;
    }
    tree_shape(root, 0, &tree);
    json_decref(root);
    if (within && (scan.values != tree.values || scan.depth != tree.depth))
        print_error("%.*s\n  scan %zu values depth %zu, jansson %zu depth %zu\n", (int)len,
                    text, scan.values, scan.depth, tree.values, tree.depth);
    assert_int_equal(within, tree.depth <= 64);
    if (within) {
        assert_int_equal(scan.values, tree.values);
        assert_int_equal(scan.depth, tree.depth);
    }
}

/* Brackets, commas, colons, quotes and backslashes inside strings (and keys)
 * are text, not structure. */
static const char *const tricky[] = {
    "\"[[[[{{{{,,,,\"",
    "[\"a\\\"b[\", \"]\"]",
    "[\"\\\\\"]",
    "[\"\\\\\", [1]]",
    "[\"\\\\\\\"]\", {}]",
    "[\"\\\\\\\\\", [[2]], \"\\\\\\\\\\\"[[\"]",
    "{\"k[{\":\"v}]\",\"\\\\\":\"\\\\\\\"[[\",\"{\":{\"}\":[\",\"]}}",
    "[\"\\u005b\\u007b\\u0022\\u005c\", \"\\/\\b\\f\\n\\r\\t\"]",
    " { \"a\" : [ ] , \"b\" : { } , \"c\" : [ [ ] , { } ] } ",
    "[true,false,null,-1.5e3,0,\"\",[],{}]",
    "\"\\\\\"",
    "7",
    "[\"\xc3\xa9]\", \"\xe2\x82\xac,\"]",
};

static void test_request_json_shape(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(tricky) / sizeof(tricky[0]); i++)
        check_against_jansson(tricky[i], strlen(tricky[i]));

    /* exact counts by hand for one of them: [ "\\\"]", {} ] is 3 values, 2 deep */
    struct sw_json_shape sh;
    assert_true(sw_request_json_shape(tricky[4], strlen(tricky[4]), 3, 2, &sh));
    assert_int_equal(sh.values, 3);
    assert_int_equal(sh.depth, 2);
    assert_false(sw_request_json_shape(tricky[4], strlen(tricky[4]), 2, 2, &sh));
    assert_false(sw_request_json_shape(tricky[4], strlen(tricky[4]), 3, 1, &sh));
    assert_false(sw_request_json_shape(tricky[5], strlen(tricky[5]), 100, 2, &sh));
    assert_int_equal(sh.depth, 3);

    /* a request whose content is 150 KB of brackets, commas and escaped
     * quotes and backslashes (7 bytes each 5 characters): the limits do not
     * see inside strings */
    size_t n = 7 * 21429, o;
    char *body = malloc(n + 200);
    assert_non_null(body);
    o = (size_t)snprintf(body, 200, "%s", q("{'model':'m','messages':[{'role':'user','content':'"));
    for (size_t i = 0; i < n; i += 7)
        memcpy(body + o + i, i % 14 ? "[{,\\\\\\\"" : "]},\\\"\\\\", 7);
    o += n;
    o += (size_t)snprintf(body + o, 200, "%s", q("'}],'x':'\\\\'}"));
    check_against_jansson(body, o);
    struct sw_chat_request req;
    struct sw_request_error err;
    assert_int_equal(sw_request_parse(body, o, &req, &err), SW_OK);
    assert_int_equal(req.prompt_tokens_est, 4 + 3 + (long)(n / 7 * 5 + 3) / 4);
    sw_request_free(&req);
    free(body);
}

/* xorshift64*: a fixed seed makes every run the same. */
static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static unsigned rnd(unsigned n)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (unsigned)((rng_state * 2685821657736338717ULL) >> 33) % n;
}

struct gen {
    char buf[16384];
    size_t o;
};

static void put(struct gen *g, const char *s)
{
    size_t n = strlen(s);
    if (g->o + n < sizeof(g->buf)) {
        memcpy(g->buf + g->o, s, n);
        g->o += n;
    }
}

static void gen_ws(struct gen *g)
{
    static const char *const ws[] = { "", "", "", " ", "\n", "\t ", "\r\n" };
    put(g, ws[rnd(7)]);
}

static void gen_string(struct gen *g)
{
    static const char *const bits[] = {
        "[", "]", "{", "}", ",", ":", "\\\"", "\\\\", "a", " ", "\\u0022", "\\u005c",
        "\\n", "\\/", "\xc3\xa9", "\\\\\\\"", "x\\\\",
    };
    put(g, "\"");
    for (unsigned i = rnd(6); i > 0; i--)
        put(g, bits[rnd(sizeof(bits) / sizeof(bits[0]))]);
    put(g, "\"");
}

/* spine > 0: this value and its first child, and so on spine levels down,
 * are arrays or objects (to reach the depth limit). */
static void gen_value(struct gen *g, unsigned depth, unsigned spine)
{
    unsigned kind = spine ? 4 + 2 * rnd(2) : depth >= 80 ? rnd(4) : rnd(7);
    char key[16];

    gen_ws(g);
    switch (kind) {
    case 0: gen_string(g); break;
    case 1: put(g, rnd(2) ? "-12.5e1" : "0"); break;
    case 2: put(g, rnd(2) ? "true" : "null"); break;
    case 3: put(g, rnd(2) ? "[]" : "{ }"); break;
    case 4:
    case 5:
        put(g, "[");
        for (unsigned i = 0, n = 1 + rnd(kind == 4 ? 4 : 1); i < n; i++) {
            if (i)
                put(g, ",");
            gen_value(g, depth + 1, i == 0 && spine ? spine - 1 : 0);
        }
        gen_ws(g);
        put(g, "]");
        break;
    default:
        put(g, "{");
        for (unsigned i = 0, n = 1 + rnd(3); i < n; i++) {
            if (i)
                put(g, ",");
            gen_ws(g);
            if (rnd(3) == 0) {
                gen_string(g);          /* a tricky key; duplicates are refused */
            } else {
                snprintf(key, sizeof(key), "\"k%u\"", i);
                put(g, key);
            }
            gen_ws(g);
            put(g, ":");
            gen_value(g, depth + 1, i == 0 && spine ? spine - 1 : 0);
        }
        gen_ws(g);
        put(g, "}");
    }
    gen_ws(g);
}

/* Random JSON (strings full of structure characters, nesting around the
 * limit) and random corruptions of it: the scan matches jansson on all it
 * accepts and never crashes on the rest. */
static void test_request_json_shape_random(void **state)
{
    static struct gen g;
    size_t accepted = 0, deep = 0;
    (void)state;

    for (int iter = 0; iter < 5000; iter++) {
        g.o = 0;
        gen_value(&g, 0, rnd(3) == 0 ? 55 + rnd(20) : 0);
        if (g.o >= sizeof(g.buf) - 1)
            continue;               /* cut short by put(): not what was generated */
        json_t *root = json_loadb(g.buf, g.o, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, NULL);
        if (root) {
            struct sw_json_shape tree = {0};
            tree_shape(root, 0, &tree);
            accepted++;
            deep += tree.depth > 64;
            json_decref(root);
        }
        check_against_jansson(g.buf, g.o);
        /* corrupt: cut, overwrite or drop one byte */
        size_t at = g.o ? rnd((unsigned)g.o) : 0;
        switch (rnd(3)) {
        case 0: g.o = at; break;
        case 1: g.buf[at] = "[]{}\",\\: a0"[rnd(11)]; break;
        default:
            if (g.o) {
                memmove(g.buf + at, g.buf + at + 1, g.o - at - 1);
                g.o--;
            }
        }
        check_against_jansson(g.buf, g.o);
    }
    /* the generator did produce what it is meant to test */
    assert_true(accepted > 4000);
    assert_true(deep > 400);
}

static void test_request_many_values(void **state)
{
    size_t len;
    char *b;
    (void)state;

    /* 7 values besides the elements of "x" */
    b = body_with_x(SW_REQUEST_MAX_JSON_VALUES - 7, 0, &len);
    expect_ok(b, len);
    free(b);
    b = body_with_x(SW_REQUEST_MAX_JSON_VALUES - 6, 0, &len);
    expect_too_complex(b, len, VALUES_MSG);
    free(b);
    /* two million elements in an unknown field: refused without decoding */
    b = body_with_x(2000000, 0, &len);
    expect_too_complex(b, len, VALUES_MSG);
    free(b);
    /* empty containers are values too, and nothing more */
    char body[8192];
    size_t o = (size_t)snprintf(body, sizeof(body), "%s", q("{'model':'m'," MSGS ",'x':["));
    for (int i = 0; i < 1000; i++)
        o += (size_t)snprintf(body + o, sizeof(body) - o, "%s", i % 2 ? "[]," : "{},");
    body[o - 1] = ']';
    body[o++] = '}';
    struct sw_json_shape sh;
    assert_true(sw_request_json_shape(body, o, SIZE_MAX, SIZE_MAX, &sh));
    assert_int_equal(sh.values, 7 + 1000);
    assert_int_equal(sh.depth, 3);
    expect_ok(body, o);
}

static int utf8_valid(const char *s)
{
    json_t *j = json_string(s);     /* jansson validates UTF-8 */
    json_decref(j);
    return j != NULL;
}

/* A long multi-byte metadata key: param and message are cut on character
 * boundaries and still render. */
static void test_request_long_param(void **state)
{
    char body[1024], key[401];
    struct sw_chat_request req;
    struct sw_request_error err;
    (void)state;

    for (size_t i = 0; i < 400; i += 2)
        memcpy(key + i, "\xc3\xa9", 2);
    key[400] = '\0';
    snprintf(body, sizeof(body), "%s%s%s",
             q("{'model':'m'," MSGS ",'metadata':{'x"), key, "\":1}}");
    assert_int_equal(sw_request_parse(body, strlen(body), &req, &err), SW_EINVAL);
    assert_string_equal(err.code, "invalid_type");
    assert_memory_equal(err.param, "metadata.x\xc3\xa9", 12);
    assert_int_equal(strlen(err.param), 126);       /* "metadata.x" + 58 'é', not half a 59th */
    assert_true(utf8_valid(err.param));
    char want[sizeof(err.message)];
    snprintf(want, sizeof(want),
             "Invalid type for '%s': expected a string, but got an integer instead.", err.param);
    assert_string_equal(err.message, want);
    check_error_json(&err);
}

static void test_request_tokens(void **state)
{
    (void)state;
    assert_int_equal(sw_request_estimate_tokens(0), 0);
    assert_int_equal(sw_request_estimate_tokens(1), 1);
    assert_int_equal(sw_request_estimate_tokens(4), 1);
    assert_int_equal(sw_request_estimate_tokens(5), 2);
    assert_int_equal(sw_request_estimate_tokens(400), 100);
    assert_true(sw_request_estimate_tokens(SIZE_MAX) > 0);
}

static void test_request_error_set(void **state)
{
    struct sw_request_error e;
    char long_param[300], long_text[sizeof(e.message) + 344];
    (void)state;

    /* NULL type/code/param are "" and render as null */
    sw_request_error_set(&e, 413, NULL, NULL, NULL, "Body over %d bytes.", 1024);
    assert_int_equal(e.status, 413);
    assert_string_equal(e.type, "");
    assert_string_equal(e.code, "");
    assert_string_equal(e.param, "");
    assert_string_equal(e.message, "Body over 1024 bytes.");
    check_error_json(&e);

    /* truncation never cuts a UTF-8 sequence: 'é' is 2 bytes */
    for (size_t i = 0; i + 2 < sizeof(long_text); i += 2)
        memcpy(long_text + i, "\xc3\xa9", 2);
    long_text[sizeof(long_text) - 2] = '\0';
    memset(long_param, 'p', sizeof(long_param));
    long_param[sizeof(long_param) - 1] = '\0';
    sw_request_error_set(&e, 400, "invalid_request_error", "invalid_value", long_param,
                         "xy%s", long_text);
    assert_int_equal(strlen(e.param), sizeof(e.param) - 1);
    assert_int_equal(strlen(e.message), sizeof(e.message) - 2);     /* "xy" + whole 2-byte chars */
    assert_true(utf8_valid(e.message));
    check_error_json(&e);

    /* invalid bytes become '?' */
    sw_request_error_set(&e, 400, "invalid_request_error", "c\xff", "p\xc3", "a\xc0\xafz\xed\xa0\x80");
    assert_string_equal(e.code, "c?");
    assert_string_equal(e.param, "p?");
    assert_string_equal(e.message, "a??z???");
    check_error_json(&e);

    /* a struct filled by hand, not terminated, still renders */
    memset(&e, 'A', sizeof(e));
    e.message[3] = '\xff';
    char *s = sw_request_error_json(&e);
    assert_non_null(s);
    json_t *root = json_loads(s, 0, NULL);
    assert_non_null(root);
    const char *m = json_string_value(json_object_get(json_object_get(root, "error"), "message"));
    assert_non_null(m);
    assert_int_equal(strlen(m), sizeof(e.message) - 1);
    assert_memory_equal(m, "AAA?AA", 6);
    json_decref(root);
    free(s);
}

/* ---- Allocation failures (curl's torture mode) ---- */

static long alloc_countdown = -1;       /* fail when it reaches 0; -1: never */
static long alloc_count;

static void *failing_malloc(size_t n)
{
    alloc_count++;
    if (alloc_countdown >= 0 && alloc_countdown-- == 0)
        return NULL;
    return malloc(n);
}

/* Fails jansson's Nth allocation for every N until the parse succeeds: each
 * run must end in SW_OK or a clean error, never a crash or a leak (valgrind,
 * ASan). After the load (sw_json_load), a failure is SW_ENOMEM (500). Inside it, jansson
 * sometimes reports a failed allocation as a syntax error (a failed string
 * copy in the lexer becomes "string or '}' expected"), which it gives us no
 * way to tell apart, so invalid_json is accepted there. */
static void test_request_alloc_failures(void **state)
{
    const char *body = q("{'model':'m','messages':[{'role':'user','content':[{'type':'text',"
                         "'text':'abcde'}]},{'role':'assistant','content':null,'tool_calls':"
                         "[{'id':'c','type':'function','function':{'name':'f','arguments':'{}'}}]}],"
                         "'tools':[{'type':'function','function':{'name':'f','parameters':"
                         "{'type':'object','properties':{'a':{'type':'string'}}}}}],"
                         "'metadata':{'allow_cloud':'true'}}");
    struct sw_chat_request req;
    struct sw_request_error err;
    long n;
    int rc = SW_ENOMEM;
    (void)state;

    json_set_alloc_funcs(failing_malloc, free);
    alloc_count = 0;
    json_decref(sw_json_load(body, strlen(body), JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, NULL));
    long in_load = alloc_count;
    for (n = 0; n < 10000 && rc != SW_OK; n++) {
        alloc_countdown = n;
        rc = sw_request_parse(body, strlen(body), &req, &err);
        alloc_countdown = -1;
        if (rc == SW_OK)
            break;
        assert_null(req.body);
        if (rc == SW_EINVAL && n < in_load) {
            assert_string_equal(err.code, "invalid_json");
            continue;
        }
        if (rc != SW_ENOMEM)
            print_error("allocation %ld failed: rc %d '%s'\n", n, rc, err.message);
        assert_int_equal(rc, SW_ENOMEM);
        assert_int_equal(err.status, 500);
        assert_string_equal(err.type, "server_error");
        alloc_countdown = 0;
        assert_null(sw_request_error_json(&err));       /* out of memory: NULL */
        alloc_countdown = -1;
    }
    assert_int_equal(rc, SW_OK);
    assert_true(n > in_load);      /* the validator's own allocations were failed too */
    assert_int_equal(req.prompt_tokens_est, 2 + 4 + 1 + 4 + 28 + 3);
    sw_request_free(&req);
    json_set_alloc_funcs(malloc, free);
}

/* The few-word values of headers and metadata: any case, blanks around. */
/* The one folding every privacy input's name is matched with. */
static void test_request_name_fold(void **state)
{
    (void)state;
    static const struct {
        const char *name, *canon;
        int folds, near_any_case, near_exact;
    } rows[] = {
        {"X-Spillway-Allow-Cloud", "X-Spillway-Allow-Cloud", 1, 0, 0},
        {"x-spillway-allow-cloud", "X-Spillway-Allow-Cloud", 1, 0, 1},
        {"X_Spillway_Allow_Cloud", "X-Spillway-Allow-Cloud", 1, 1, 1},
        {"X-Spillway-Allow_Cloud", "X-Spillway-Allow-Cloud", 1, 1, 1},
        {"X-Spillway-AllowCloud", "X-Spillway-Allow-Cloud", 1, 1, 1},
        {"XSPILLWAYALLOWCLOUD", "X-Spillway-Allow-Cloud", 1, 1, 1},
        {"X-Spillway-Allow-Cloud ", "X-Spillway-Allow-Cloud", 1, 1, 1},
        {" X-Spillway-Allow-Cloud\t", "X-Spillway-Allow-Cloud", 1, 1, 1},
        {"X-Spillway-Sensitive_", "X-Spillway-Sensitive", 1, 1, 1},
        {"X-Spillway-Latency_Critical", "X-Spillway-Latency-Critical", 1, 1, 1},
        {"allow_cloud", "allow_cloud", 1, 0, 0},
        {"ALLOW_CLOUD", "allow_cloud", 1, 0, 1},
        {"Allow_Cloud", "allow_cloud", 1, 0, 1},
        {"allow-cloud", "allow_cloud", 1, 1, 1},
        {"allowCloud", "allow_cloud", 1, 1, 1},
        {"allow cloud", "allow_cloud", 1, 1, 1},
        {"__allow__cloud--", "allow_cloud", 1, 1, 1},
        /* not the same letters: other names, left to their own rules */
        {"allow_clouds", "allow_cloud", 0, 0, 0},
        {"allow_clou", "allow_cloud", 0, 0, 0},
        {"disallow_cloud", "allow_cloud", 0, 0, 0},
        {"X-Spillway-Allow", "X-Spillway-Allow-Cloud", 0, 0, 0},
        {"X-Spillway-Priority", "X-Spillway-Sensitive", 0, 0, 0},
        {"", "allow_cloud", 0, 0, 0},
        {"-_ ", "allow_cloud", 0, 0, 0},
        {"allow.cloud", "allow_cloud", 0, 0, 0},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        const char *n = rows[i].name;
        assert_int_equal(sw_request_name_folds(n, strlen(n), rows[i].canon), rows[i].folds);
        assert_int_equal(sw_request_name_near_miss(n, strlen(n), rows[i].canon, true),
                         rows[i].near_any_case);
        assert_int_equal(sw_request_name_near_miss(n, strlen(n), rows[i].canon, false),
                         rows[i].near_exact);
    }
    /* only len bytes are read */
    assert_true(sw_request_name_folds("allow_cloudXYZ", 11, "allow_cloud"));
    assert_false(sw_request_name_folds("allow_cloudXYZ", 12, "allow_cloud"));
}

/* A body the gateway built (a translation) notes where its text holds
 * `model`, and whether it has metadata and stream_options, as a scan of the
 * text finds them; a text that does not start with `model` notes none. */
static void test_request_built_marks(void **state)
{
    (void)state;
    const char *bodies[] = {
        "{\"model\":\"m\\\"x\\u00e9\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}",
        "{\"model\":\"claude\",\"messages\":[{\"role\":\"user\",\"content\":\"{\\\"model\\\":1}\"}],"
        "\"metadata\":{\"a\":\"b\"},\"stream\":true,\"stream_options\":{\"include_usage\":true}}",
        "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"model\":\"late\"}",
    };
    static const char *const keys[] = {"model", "metadata", "stream_options"};
    for (size_t i = 0; i < sizeof bodies / sizeof *bodies; i++) {
        json_t *root = json_loads(bodies[i], 0, NULL);
        assert_non_null(root);
        struct sw_chat_request req;
        struct sw_request_error err;
        assert_int_equal(sw_request_parse_built(root, strlen(bodies[i]), &req, &err), SW_OK);
        struct sw_jspan sp[3];
        assert_true(sw_jscan_object(req.text, req.text_len, keys, sp, NULL, 3));
        if (i == 2) {
            assert_int_equal(req.text_model_len, 0); /* not first: the relay scans */
        } else {
            assert_int_equal(req.text_model_off, sp[0].off);
            assert_int_equal(req.text_model_len, sp[0].len);
        }
        assert_int_equal(req.text_metadata, sp[1].len > 0);
        assert_int_equal(req.text_stream_options, sp[2].len > 0);
        sw_request_free(&req);
    }
}

static void test_request_word(void **state)
{
    (void)state;
    static const char *const words[] = {"interactive", "batch"};
    const size_t n = sizeof words / sizeof words[0];
#define W(s) sw_request_word(s, strlen(s), words, n)
    assert_int_equal(W("interactive"), 0);
    assert_int_equal(W(" \tBatch\t "), 1);
    assert_int_equal(W("INTERACTIVE"), 0);
    assert_int_equal(W(""), -1);
    assert_int_equal(W("  "), -1);
    assert_int_equal(W("batc"), -1);
    assert_int_equal(W("batchy"), -1);
    assert_int_equal(W("inter active"), -1);
#undef W
    assert_int_equal(sw_request_word("batch;x", 5, words, n), 1); /* only len bytes */
#define F(s) sw_request_flag(s, strlen(s))
    assert_int_equal(F("true"), 1);
    assert_int_equal(F(" YES "), 1);
    assert_int_equal(F("1"), 1);
    assert_int_equal(F("On"), 1);
    assert_int_equal(F("false"), 0);
    assert_int_equal(F("\tno"), 0);
    assert_int_equal(F("0"), 0);
    assert_int_equal(F("OFF"), 0);
    assert_int_equal(F(""), -1);
    assert_int_equal(F("n"), -1);
    assert_int_equal(F("false;"), -1);
    assert_int_equal(F("2"), -1);
#undef F
}

/* A body of t messages (text, image parts, a tool call and its result);
 * message `bad` (when >= 0) has a role no API has. */
static char *memo_body(int t, int wrong)
{
    json_t *msgs = json_array();
    for (int i = 0; i < t; i++) {
        char text[300];
        snprintf(text, sizeof text, "Message %d: the build of src/main.c fails on line %d; "
                                    "here is the screenshot and the log again.", i, i + 10);
        if (i % 4 == 1)
            json_array_append_new(
                msgs, json_pack("{s:s,s:[{s:s,s:s},{s:s,s:{s:s}}]}", "role", i == wrong ? "robot" : "user",
                                "content", "type", "text", "text", text, "type", "image_url",
                                "image_url", "url", "data:image/png;base64,iVBORw0KGgoAAAANSUhEUg"));
        else if (i % 4 == 2)
            json_array_append_new(
                msgs, json_pack("{s:s,s:n,s:[{s:s,s:s,s:{s:s,s:s}}]}", "role", "assistant", "content",
                                "tool_calls", "id", "call_1", "type", "function", "function", "name",
                                "run", "arguments", "{\"cmd\":\"make test 2>&1 | tail -50\"}"));
        else
            json_array_append_new(msgs, json_pack("{s:s,s:s,s:s}", "role", i % 4 ? "tool" : "user",
                                                  "tool_call_id", "call_1", "content", text));
    }
    json_t *b = json_pack("{s:s,s:o}", "model", "m", "messages", msgs);
    char *s = json_dumps(b, JSON_COMPACT);
    json_decref(b);
    return s;
}

/* With the parse memo, a resent message's check is kept with it: the
 * estimates and the media flags are the ones without it, and a bad message
 * is refused every time with the same error. */
static void test_request_memo_checks(void **state)
{
    (void)state;
    char *ok = memo_body(80, -1), *refused = memo_body(80, 41);
    assert_true(strlen(ok) >= SW_JMEMO_MIN_BODY);
    struct sw_chat_request ref, got;
    struct sw_request_error eref, egot;
    sw_jmemo_set_max(0);
    assert_int_equal(sw_request_parse(ok, strlen(ok), &ref, &eref), SW_OK);
    assert_int_equal(sw_request_parse(refused, strlen(refused), &got, &eref), SW_EINVAL);
    sw_jmemo_set_max(64u << 20);
    for (int round = 0; round < 3; round++) {
        assert_int_equal(sw_request_parse(ok, strlen(ok), &got, &egot), SW_OK);
        assert_int_equal(got.prompt_tokens_est, ref.prompt_tokens_est);
        assert_int_equal(got.prompt_tokens_max, ref.prompt_tokens_max);
        assert_int_equal(got.n_messages, ref.n_messages);
        assert_true(got.has_images);
        sw_request_free(&got);
        assert_int_equal(sw_request_parse(refused, strlen(refused), &got, &egot), SW_EINVAL);
        assert_string_equal(egot.param, eref.param);
        assert_string_equal(egot.message, eref.message);
    }
    sw_jmemo_set_max(0);
    sw_request_free(&ref);
    free(ok);
    free(refused);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_request_bad),
        cmocka_unit_test(test_request_good),
        cmocka_unit_test(test_request_body_intact),
        cmocka_unit_test(test_request_not_terminated),
        cmocka_unit_test(test_request_bound),
        cmocka_unit_test(test_request_deep_nesting),
        cmocka_unit_test(test_request_many_values),
        cmocka_unit_test(test_request_json_shape),
        cmocka_unit_test(test_request_json_shape_random),
        cmocka_unit_test(test_request_long_param),
        cmocka_unit_test(test_request_tokens),
        cmocka_unit_test(test_request_memo_checks),
        cmocka_unit_test(test_request_error_set),
        cmocka_unit_test(test_request_alloc_failures),
        cmocka_unit_test(test_request_built_marks),
        cmocka_unit_test(test_request_word),
        cmocka_unit_test(test_request_name_fold),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
