/* Unit tests of llmsim's request parsing, answer text (lorem, echo with the
 * UTF-8-safe 4-byte rule), wire rendering (every event parses, or is broken
 * on purpose) and flag parsing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "chat.h"
#include "common/err.h"
#include "common/json.h"
#include "opts.h"
#include "render.h"

static json_t *load(const char *s)
{
    json_error_t e;
    json_t *j = json_loads(s, 0, &e);
    assert_non_null(j);
    return j;
}

static void test_parse_openai(void **state)
{
    (void)state;
    json_t *j = load("{\"model\":\"m1\",\"stream\":true,\"stream_options\":{\"include_usage\":true},"
                     "\"max_tokens\":7,\"messages\":[{\"role\":\"system\",\"content\":\"abcd\"},"
                     "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"hello\"},"
                     "{\"type\":\"image_url\",\"image_url\":{\"url\":\"x\"}}]}]}");
    struct sw_llmsim_chat c;
    char err[256];
    assert_int_equal(sw_llmsim_chat_parse(j, SW_LLMSIM_OPENAI, &c, err, sizeof err), SW_OK);
    assert_true(c.stream);
    assert_true(c.include_usage);
    assert_int_equal(c.max_tokens, 7);
    assert_string_equal(c.model, "m1");
    assert_int_equal(c.n_messages, 2);
    assert_int_equal(c.text_bytes, 9);
    assert_int_equal(c.prompt_tokens, 3 + 8); /* ceil(9/4) + 4*2 */
    assert_string_equal(c.last_user.ptr, "hello");
    sw_llmsim_chat_free(&c);
    json_decref(j);
    /* max_completion_tokens wins over max_tokens */
    j = load("{\"max_completion_tokens\":3,\"max_tokens\":9,\"messages\":[{\"role\":\"user\","
             "\"content\":\"x\"}]}");
    assert_int_equal(sw_llmsim_chat_parse(j, SW_LLMSIM_OPENAI, &c, err, sizeof err), SW_OK);
    assert_int_equal(c.max_tokens, 3);
    assert_false(c.stream);
    sw_llmsim_chat_free(&c);
    json_decref(j);
}

/* "llmsim:call NAME ARGS" as the last user message of a request with tools
 * forces NAME with ARGS as the echo; once a tool output follows it, the echo
 * is that output; without tools, or without the prefix, nothing changes. */
static void test_parse_script(void **state)
{
    (void)state;
    static const char *const tools = "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"sh\"}}]";
    struct sw_llmsim_chat c;
    char err[256], body[1024];
    snprintf(body, sizeof body, "{%s,\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":"
             "\"llmsim:call sh  {\\\"cmd\\\":\\\"ls\\\"}\"}]}", tools);
    json_t *j = load(body);
    assert_int_equal(sw_llmsim_chat_parse(j, SW_LLMSIM_OPENAI, &c, err, sizeof err), SW_OK);
    assert_string_equal(c.forced_tool, "sh");
    assert_true(c.scripted && c.wants_json);
    assert_string_equal(c.last_user.ptr, "{\"cmd\":\"ls\"}");
    assert_int_equal(c.last_user.len, 12);
    sw_llmsim_chat_free(&c);
    json_decref(j);
    /* the tool's output follows: it is the echo, no call */
    snprintf(body, sizeof body, "{%s,\"messages\":[{\"role\":\"user\",\"content\":\"llmsim:call sh {}\"},"
             "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"c\",\"type\":\"function\","
             "\"function\":{\"name\":\"sh\",\"arguments\":\"{}\"}}]},"
             "{\"role\":\"tool\",\"tool_call_id\":\"c\",\"content\":[{\"type\":\"text\",\"text\":\"out\"}]}]}",
             tools);
    j = load(body);
    assert_int_equal(sw_llmsim_chat_parse(j, SW_LLMSIM_OPENAI, &c, err, sizeof err), SW_OK);
    assert_string_equal(c.forced_tool, "");
    assert_false(c.scripted);
    assert_string_equal(c.last_user.ptr, "out");
    sw_llmsim_chat_free(&c);
    json_decref(j);
    /* no tools offered, or no name: the text is echoed as it is */
    static const char *const plain[] = {
        "{\"messages\":[{\"role\":\"user\",\"content\":\"llmsim:call sh {}\"}]}",
        "{\"tools\":[{}],\"messages\":[{\"role\":\"user\",\"content\":\"llmsim:call \"}]}",
        "{\"tools\":[{}],\"messages\":[{\"role\":\"user\",\"content\":\"llmsim:cal sh\"}]}"};
    for (size_t i = 0; i < sizeof plain / sizeof *plain; i++) {
        j = load(plain[i]);
        assert_int_equal(sw_llmsim_chat_parse(j, SW_LLMSIM_OPENAI, &c, err, sizeof err), SW_OK);
        assert_string_equal(c.forced_tool, "");
        assert_false(c.scripted);
        assert_true(!strncmp(c.last_user.ptr, "llmsim:ca", 9));
        sw_llmsim_chat_free(&c);
        json_decref(j);
    }
}

static void test_parse_anthropic(void **state)
{
    (void)state;
    json_t *j = load("{\"model\":\"claude\",\"max_tokens\":5,\"system\":\"sys!\",\"messages\":["
                     "{\"role\":\"user\",\"content\":\"hi\"}]}");
    struct sw_llmsim_chat c;
    char err[256];
    assert_int_equal(sw_llmsim_chat_parse(j, SW_LLMSIM_ANTHROPIC, &c, err, sizeof err), SW_OK);
    assert_int_equal(c.n_messages, 2); /* the system prompt counts as one */
    assert_int_equal(c.text_bytes, 6);
    assert_int_equal(c.prompt_tokens, 2 + 8);
    sw_llmsim_chat_free(&c);
    json_decref(j);
}

static void test_parse_rejects(void **state)
{
    (void)state;
    static const struct {
        enum sw_llmsim_dialect d;
        const char *body;
        const char *msg;
    } bad[] = {
        {SW_LLMSIM_OPENAI, "[]", "JSON object"},
        {SW_LLMSIM_OPENAI, "{}", "messages"},
        {SW_LLMSIM_OPENAI, "{\"messages\":[]}", "at least one"},
        {SW_LLMSIM_OPENAI, "{\"messages\":[1]}", "role"},
        {SW_LLMSIM_OPENAI, "{\"messages\":[{\"role\":\"user\"}],\"max_tokens\":0}", "max_tokens"},
        {SW_LLMSIM_OPENAI, "{\"messages\":[{\"role\":\"user\"}],\"stream\":\"yes\"}", "stream"},
        {SW_LLMSIM_ANTHROPIC, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", "max_tokens"},
        {SW_LLMSIM_ANTHROPIC, "{\"max_tokens\":1,\"messages\":[{\"role\":\"user\"}]}", "content"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_t *j = load(bad[i].body);
        struct sw_llmsim_chat c;
        char err[256] = "";
        assert_int_equal(sw_llmsim_chat_parse(j, bad[i].d, &c, err, sizeof err), SW_EINVAL);
        assert_non_null(strstr(err, bad[i].msg));
        sw_llmsim_chat_free(&c);
        json_decref(j);
    }
}

static void test_echo_pieces_utf8(void **state)
{
    (void)state;
    const char *s = "abcdefghij"; /* abcd efgh ij */
    assert_int_equal(sw_llmsim_echo_tokens(s, strlen(s)), 3);
    struct sw_llmsim_text t;
    sw_llmsim_text_echo(&t, s, strlen(s));
    struct sw_str p = sw_llmsim_text_next(&t);
    assert_int_equal(p.len, 4);
    assert_memory_equal(p.ptr, "abcd", 4);
    sw_llmsim_text_next(&t);
    p = sw_llmsim_text_next(&t);
    assert_int_equal(p.len, 2);
    p = sw_llmsim_text_next(&t);
    assert_int_equal(p.len, 0); /* used up */
    /* "abc" + "é" (2 bytes) + "z": the cut at 4 would split é, so the piece grows to 5 */
    const char *u = "abc\xc3\xa9z";
    sw_llmsim_text_echo(&t, u, strlen(u));
    p = sw_llmsim_text_next(&t);
    assert_int_equal(p.len, 5);
    p = sw_llmsim_text_next(&t);
    assert_int_equal(p.len, 1);
    assert_int_equal(sw_llmsim_echo_tokens(u, strlen(u)), 2);
    /* a 4-byte character alone is one piece */
    assert_int_equal(sw_llmsim_echo_tokens("\xf0\x9f\x98\x80", 4), 1);
}

/* --tokenizer pieces: at most one piece per byte, many more than bytes / 4
 * for digits between commas and for CJK text, fewer for English words. */
static void test_text_pieces(void **state)
{
    (void)state;
    static const struct { const char *text; size_t pieces; } cases[] = {
        {"", 0},
        {"hello there", 2},
        {"4,7,1,9", 7},
        {"1234567", 3},
        {"会議の議事録", 6},
        {"a  b", 3},
        {"internationalization", 3},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t n = strlen(cases[i].text);
        size_t got = sw_llmsim_text_pieces(cases[i].text, n);
        assert_int_equal(got, cases[i].pieces);
        assert_true(got <= n);
    }
}

static void test_lorem_deterministic(void **state)
{
    (void)state;
    struct sw_llmsim_text a, b;
    sw_llmsim_text_lorem(&a, 99);
    sw_llmsim_text_lorem(&b, 99);
    for (int i = 0; i < 50; i++) {
        struct sw_str x = sw_llmsim_text_next(&a), y = sw_llmsim_text_next(&b);
        assert_int_equal(x.len, y.len);
        assert_memory_equal(x.ptr, y.ptr, x.len);
        assert_true(x.len > 0);
        assert_true(i == 0 ? x.ptr[0] != ' ' : x.ptr[0] == ' ');
    }
}

static void test_json_escape(void **state)
{
    (void)state;
    struct sw_buf b;
    sw_buf_init(&b, 1024);
    assert_int_equal(sw_json_escape(&b, "a\"b\\c\nd\x01\xc3\xa9", 10, 0), SW_OK);
    assert_string_equal(b.ptr, "a\\\"b\\\\c\\nd\\u0001\xc3\xa9");
    sw_buf_free(&b);
}

/* Splits an SSE stream into events and checks each data field parses (or not). */
static int count_events(const char *sse, int *bad_json)
{
    int n = 0;
    *bad_json = 0;
    const char *p = sse;
    while (*p) {
        const char *end = strstr(p, "\n\n");
        assert_non_null(end);
        const char *data = strstr(p, "data: ");
        assert_true(data && data < end);
        data += 6;
        const char *eol = strchr(data, '\n');
        if (strncmp(data, "[DONE]", 6)) {
            json_error_t e;
            json_t *j = json_loadb(data, (size_t)(eol - data), 0, &e);
            if (!j)
                (*bad_json)++;
            json_decref(j);
        }
        n++;
        p = end + 2;
    }
    return n;
}

static struct sw_llmsim_reply reply(enum sw_llmsim_dialect d)
{
    struct sw_llmsim_reply r = {.dialect = d, .id = "x1", .created = 5, .model = "m\"q",
                                .prompt_tokens = 9, .include_usage = true};
    return r;
}

static void test_render_openai_stream(void **state)
{
    (void)state;
    struct sw_llmsim_reply r = reply(SW_LLMSIM_OPENAI);
    struct sw_buf b;
    sw_buf_init(&b, 1 << 20);
    assert_int_equal(sw_llmsim_render_stream_start(&b, &r), SW_OK);
    struct sw_str t = {"tok\"en", 6};
    assert_int_equal(sw_llmsim_render_stream_token(&b, &r, t, SW_LLMSIM_MALFORMED_NONE), SW_OK);
    assert_int_equal(sw_llmsim_render_stream_end(&b, &r, 1, true), SW_OK);
    int bad;
    assert_int_equal(count_events(b.ptr, &bad), 5); /* role, token, finish, usage, [DONE] */
    assert_int_equal(bad, 0);
    assert_non_null(strstr(b.ptr, "\"finish_reason\":\"length\""));
    assert_non_null(strstr(b.ptr, "\"choices\":[],\"usage\":{\"prompt_tokens\":9,"
                                  "\"completion_tokens\":1,\"total_tokens\":10"));
    assert_non_null(strstr(b.ptr, "\"model\":\"m\\\"q\""));
    /* malformed json: the token event does not parse */
    sw_buf_reset(&b);
    sw_llmsim_render_stream_token(&b, &r, t, SW_LLMSIM_MALFORMED_JSON);
    assert_int_equal(count_events(b.ptr, &bad), 1);
    assert_int_equal(bad, 1);
    /* malformed sse: the data line stops mid-object, the rest is a line without "data:" */
    sw_buf_reset(&b);
    sw_llmsim_render_stream_token(&b, &r, t, SW_LLMSIM_MALFORMED_SSE);
    assert_int_equal(count_events(b.ptr, &bad), 1);
    assert_int_equal(bad, 1);
    assert_non_null(strstr(b.ptr, ",\n\"choices\""));
    sw_buf_free(&b);
}

/* A scripted call streamed in the openai dialect: the call in the role
 * chunk, its arguments one chunk per token, finish_reason tool_calls. */
static void test_render_openai_stream_tool(void **state)
{
    (void)state;
    struct sw_llmsim_reply r = reply(SW_LLMSIM_OPENAI);
    snprintf(r.tool, sizeof r.tool, "sh");
    struct sw_buf b;
    sw_buf_init(&b, 1 << 20);
    assert_int_equal(sw_llmsim_render_stream_start(&b, &r), SW_OK);
    struct sw_str t = {"{\"a\"", 4};
    assert_int_equal(sw_llmsim_render_stream_token(&b, &r, t, SW_LLMSIM_MALFORMED_NONE), SW_OK);
    assert_int_equal(sw_llmsim_render_stream_end(&b, &r, 1, false), SW_OK);
    int bad;
    assert_int_equal(count_events(b.ptr, &bad), 5);
    assert_int_equal(bad, 0);
    assert_non_null(strstr(b.ptr, "\"delta\":{\"role\":\"assistant\",\"content\":null,\"tool_calls\":"
                                  "[{\"index\":0,\"id\":\"call_sim1\",\"type\":\"function\","
                                  "\"function\":{\"name\":\"sh\",\"arguments\":\"\"}}]}"));
    assert_non_null(strstr(b.ptr, "\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":"
                                  "{\"arguments\":\"{\\\"a\\\"\"}}]}"));
    assert_non_null(strstr(b.ptr, "\"finish_reason\":\"tool_calls\""));
    assert_null(strstr(b.ptr, "\"content\":\"{"));
    sw_buf_free(&b);
}

static void test_render_anthropic_stream(void **state)
{
    (void)state;
    struct sw_llmsim_reply r = reply(SW_LLMSIM_ANTHROPIC);
    struct sw_buf b;
    sw_buf_init(&b, 1 << 20);
    sw_llmsim_render_stream_start(&b, &r);
    struct sw_str t = {"hi", 2};
    sw_llmsim_render_stream_token(&b, &r, t, SW_LLMSIM_MALFORMED_NONE);
    sw_llmsim_render_stream_end(&b, &r, 1, false);
    int bad;
    assert_int_equal(count_events(b.ptr, &bad), 7);
    assert_int_equal(bad, 0);
    const char *order[] = {"event: message_start\n", "event: content_block_start\n",
                           "event: ping\n", "event: content_block_delta\n",
                           "event: content_block_stop\n", "event: message_delta\n",
                           "event: message_stop\n"};
    const char *p = b.ptr;
    for (size_t i = 0; i < 7; i++) {
        const char *q = strstr(p, order[i]);
        assert_non_null(q);
        p = q + 1;
    }
    assert_non_null(strstr(b.ptr, "\"stop_reason\":\"end_turn\""));
    assert_non_null(strstr(b.ptr, "\"usage\":{\"output_tokens\":1}"));
    sw_buf_free(&b);
}

static void test_render_messages_and_errors(void **state)
{
    (void)state;
    struct sw_buf b;
    sw_buf_init(&b, 1 << 20);
    struct sw_llmsim_reply r = reply(SW_LLMSIM_OPENAI);
    assert_int_equal(sw_llmsim_render_message(&b, &r, "a\nb", 3, 2, false, 0), SW_OK);
    json_t *j = load(b.ptr);
    assert_string_equal(json_string_value(json_object_get(j, "object")), "chat.completion");
    json_t *ch = json_array_get(json_object_get(j, "choices"), 0);
    assert_string_equal(json_string_value(json_object_get(json_object_get(ch, "message"), "content")),
                        "a\nb");
    assert_string_equal(json_string_value(json_object_get(ch, "finish_reason")), "stop");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "usage"), "total_tokens")),
                     11);
    json_decref(j);

    sw_buf_reset(&b);
    r = reply(SW_LLMSIM_ANTHROPIC);
    sw_llmsim_render_message(&b, &r, "yo", 2, 1, true, 0);
    j = load(b.ptr);
    assert_string_equal(json_string_value(json_object_get(j, "type")), "message");
    assert_string_equal(json_string_value(json_object_get(j, "stop_reason")), "max_tokens");
    assert_true(json_is_null(json_object_get(j, "stop_sequence")));
    assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "usage"), "input_tokens")),
                     9);
    json_decref(j);

    sw_buf_reset(&b);
    sw_llmsim_render_message(&b, &r, "yo", 2, 1, true, SW_LLMSIM_MALFORMED_JSON);
    json_error_t e;
    assert_null(json_loads(b.ptr, 0, &e));

    static const struct {
        enum sw_llmsim_dialect d;
        int status;
        const char *limit;
        const char *want;
    } errs[] = {
        {SW_LLMSIM_OPENAI, 429, NULL, "\"type\":\"requests\",\"param\":null,\"code\":\"rate_limit_exceeded\""},
        {SW_LLMSIM_OPENAI, 429, "tokens", "\"type\":\"tokens\""},
        {SW_LLMSIM_OPENAI, 503, NULL, "\"type\":\"server_error\""},
        {SW_LLMSIM_ANTHROPIC, 429, NULL, "{\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\""},
        {SW_LLMSIM_ANTHROPIC, 529, NULL, "\"type\":\"overloaded_error\""},
        {SW_LLMSIM_ANTHROPIC, 500, NULL, "\"type\":\"api_error\""},
        {SW_LLMSIM_ANTHROPIC, 400, NULL, "\"type\":\"invalid_request_error\""},
    };
    for (size_t i = 0; i < sizeof errs / sizeof errs[0]; i++) {
        sw_buf_reset(&b);
        assert_int_equal(sw_llmsim_render_error(&b, errs[i].d, errs[i].status, "m\"sg", errs[i].limit),
                         SW_OK);
        j = load(b.ptr);
        json_decref(j);
        assert_non_null(strstr(b.ptr, errs[i].want));
    }
    sw_buf_free(&b);
}

static void test_opts(void **state)
{
    (void)state;
    struct sw_llmsim_opts o;
    char err[256];
    char *def[] = {"llmsim", NULL};
    assert_int_equal(sw_llmsim_opts_parse(1, def, &o, err, sizeof err), SW_LLMSIM_OPTS_RUN);
    assert_int_equal(o.port, 8080);
    assert_int_equal(o.params.slots, 4);
    assert_true(o.params.decode_tps == 50);
    assert_string_equal(o.model, "sim-model");
    assert_int_equal(o.keep_received, 100);
    char *a[] = {"llmsim", "--port", "0", "--dialect", "anthropic", "--slots=2", "--hang",
                 "--malformed", "sse", "--error-rate", "0.5", "--reply", "echo", NULL};
    assert_int_equal(sw_llmsim_opts_parse(13, a, &o, err, sizeof err), SW_LLMSIM_OPTS_RUN);
    assert_int_equal(o.port, 0);
    assert_int_equal(o.dialect, SW_LLMSIM_ANTHROPIC);
    assert_int_equal(o.params.slots, 2);
    assert_true(o.faults.hang);
    assert_int_equal(o.faults.malformed, SW_LLMSIM_MALFORMED_SSE);
    assert_true(o.faults.error_rate == 0.5);
    assert_int_equal(o.reply, SW_LLMSIM_REPLY_ECHO);
    static const char *bad[][3] = {
        {"--bogus", NULL, "unknown flag"},   {"--slots", "0", "--slots"},
        {"--slots", "x", "--slots"},         {"--port", NULL, "needs a value"},
        {"--dialect", "grpc", "--dialect"},  {"--error-rate", "1.5", "--error-rate"},
        {"--decode-tps", "nan", "--decode-tps"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *v[] = {"llmsim", (char *)bad[i][0], (char *)bad[i][1], NULL};
        assert_int_equal(sw_llmsim_opts_parse(bad[i][1] ? 3 : 2, v, &o, err, sizeof err),
                         SW_LLMSIM_OPTS_ERROR);
        assert_non_null(strstr(err, bad[i][2]));
    }
    char *h[] = {"llmsim", "--help", NULL};
    assert_int_equal(sw_llmsim_opts_parse(2, h, &o, err, sizeof err), SW_LLMSIM_OPTS_HELP);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_openai),
        cmocka_unit_test(test_parse_script),
        cmocka_unit_test(test_parse_anthropic),
        cmocka_unit_test(test_parse_rejects),
        cmocka_unit_test(test_echo_pieces_utf8),
        cmocka_unit_test(test_text_pieces),
        cmocka_unit_test(test_lorem_deterministic),
        cmocka_unit_test(test_json_escape),
        cmocka_unit_test(test_render_openai_stream),
        cmocka_unit_test(test_render_openai_stream_tool),
        cmocka_unit_test(test_render_anthropic_stream),
        cmocka_unit_test(test_render_messages_and_errors),
        cmocka_unit_test(test_opts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
