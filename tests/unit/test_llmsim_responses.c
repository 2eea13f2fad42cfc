/* Unit tests of llmsim's Responses API (tools/llmsim/responses.c): the
 * request's facts (prompt tokens, echo source, max tokens, forced tool),
 * the whole answer, the event stream token by token, and the faults that
 * break one event or the whole body. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "chat.h"
#include "common/err.h"
#include "render.h"
#include "responses.h"

static json_t *load(const char *s)
{
    json_error_t e;
    json_t *j = json_loads(s, 0, &e);
    if (!j)
        fail_msg("bad test JSON (%s): %s", e.text, s);
    return j;
}

static void test_parse(void **state)
{
    (void)state;
    json_t *j = load("{\"model\":\"m1\",\"instructions\":\"abcd\",\"max_output_tokens\":7,\"stream\":true,"
                     "\"input\":[{\"role\":\"user\",\"content\":\"first\"},"
                     "{\"type\":\"message\",\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\",\"text\":\"ok\"}]},"
                     "{\"type\":\"function_call\",\"call_id\":\"c\",\"name\":\"f\",\"arguments\":\"{}\"},"
                     "{\"type\":\"function_call_output\",\"call_id\":\"c\",\"output\":\"12\"},"
                     "{\"role\":\"user\",\"content\":[{\"type\":\"input_text\",\"text\":\"hello\"},"
                     "{\"type\":\"input_image\",\"image_url\":\"x\"}]}]}");
    struct sw_llmsim_chat c;
    char err[256];
    assert_int_equal(sw_llmsim_responses_parse(j, &c, err, sizeof err), SW_OK);
    assert_true(c.stream && c.include_usage);
    assert_int_equal(c.max_tokens, 7);
    assert_string_equal(c.model, "m1");
    assert_int_equal(c.n_messages, 6);
    assert_int_equal(c.text_bytes, 4 + 5 + 2 + 2 + 2 + 5);
    assert_int_equal(c.prompt_tokens, 5 + 24); /* ceil(20 / 4) + 4 * 6 */
    assert_string_equal(c.last_user.ptr, "hello");
    assert_false(c.wants_json);
    sw_llmsim_chat_free(&c);
    json_decref(j);
    /* a string input, a forced tool */
    j = load("{\"input\":\"abc\",\"tool_choice\":{\"type\":\"function\",\"name\":\"get\"}}");
    assert_int_equal(sw_llmsim_responses_parse(j, &c, err, sizeof err), SW_OK);
    assert_int_equal(c.n_messages, 1);
    assert_string_equal(c.forced_tool, "get");
    assert_true(c.wants_json);
    assert_int_equal(c.max_tokens, -1);
    sw_llmsim_chat_free(&c);
    json_decref(j);
    /* a scripted call: forced while no output follows the user message, then the output */
    j = load("{\"tools\":[{\"type\":\"function\",\"name\":\"sh\"}],\"input\":\"llmsim:call sh {\\\"x\\\":1}\"}");
    assert_int_equal(sw_llmsim_responses_parse(j, &c, err, sizeof err), SW_OK);
    assert_string_equal(c.forced_tool, "sh");
    assert_true(c.scripted);
    assert_string_equal(c.last_user.ptr, "{\"x\":1}");
    sw_llmsim_chat_free(&c);
    json_decref(j);
    j = load("{\"tools\":[{\"type\":\"function\",\"name\":\"sh\"}],\"input\":["
             "{\"role\":\"user\",\"content\":[{\"type\":\"input_text\",\"text\":\"llmsim:call sh {}\"}]},"
             "{\"type\":\"function_call\",\"call_id\":\"c\",\"name\":\"sh\",\"arguments\":\"{}\"},"
             "{\"type\":\"function_call_output\",\"call_id\":\"c\",\"output\":\"result 7\"}]}");
    assert_int_equal(sw_llmsim_responses_parse(j, &c, err, sizeof err), SW_OK);
    assert_string_equal(c.forced_tool, "");
    assert_string_equal(c.last_user.ptr, "result 7");
    sw_llmsim_chat_free(&c);
    json_decref(j);
    /* refused */
    static const char *const bad[] = {
        "[]", "{\"model\":1,\"input\":\"x\"}", "{}", "{\"input\":[]}", "{\"input\":[1]}",
        "{\"input\":[{\"content\":\"x\"}]}", "{\"input\":\"x\",\"max_output_tokens\":0}",
        "{\"input\":\"x\",\"stream\":\"yes\"}"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        j = load(bad[i]);
        err[0] = '\0';
        assert_int_equal(sw_llmsim_responses_parse(j, &c, err, sizeof err), SW_EINVAL);
        assert_true(err[0] != '\0');
        sw_llmsim_chat_free(&c);
        json_decref(j);
    }
}

static struct sw_llmsim_reply reply(const char *tool)
{
    struct sw_llmsim_reply r = {.dialect = SW_LLMSIM_OPENAI, .created = 1700000000, .prompt_tokens = 9};
    snprintf(r.id, sizeof r.id, "resp_sim1");
    snprintf(r.model, sizeof r.model, "m");
    snprintf(r.tool, sizeof r.tool, "%s", tool);
    return r;
}

static void test_message(void **state)
{
    (void)state;
    struct sw_llmsim_reply r = reply("");
    json_t *req = load("{\"model\":\"m\",\"input\":\"x\",\"instructions\":\"i\"}");
    struct sw_buf b;
    sw_buf_init(&b, 1 << 20);
    assert_int_equal(sw_llmsim_responses_message(&b, &r, req, "hi there", 8, 2, false,
                                                 SW_LLMSIM_MALFORMED_NONE), SW_OK);
    json_t *o = load(b.ptr);
    assert_string_equal(json_string_value(json_object_get(o, "status")), "completed");
    assert_string_equal(json_string_value(json_object_get(o, "instructions")), "i");
    json_t *item = json_array_get(json_object_get(o, "output"), 0);
    assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(item, "content"), 0), "text")),
                        "hi there");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(o, "usage"), "total_tokens")), 11);
    json_decref(o);
    /* a forced tool: the text is its arguments; length: incomplete */
    r = reply("get");
    sw_buf_reset(&b);
    assert_int_equal(sw_llmsim_responses_message(&b, &r, req, "{\"a\":1}", 7, 2, true,
                                                 SW_LLMSIM_MALFORMED_NONE), SW_OK);
    o = load(b.ptr);
    item = json_array_get(json_object_get(o, "output"), 0);
    assert_string_equal(json_string_value(json_object_get(item, "type")), "function_call");
    assert_string_equal(json_string_value(json_object_get(item, "arguments")), "{\"a\":1}");
    assert_string_equal(json_string_value(json_object_get(o, "status")), "incomplete");
    json_decref(o);
    /* malformed: not JSON */
    sw_buf_reset(&b);
    assert_int_equal(sw_llmsim_responses_message(&b, &r, req, "x", 1, 1, false,
                                                 SW_LLMSIM_MALFORMED_JSON), SW_OK);
    json_error_t e;
    assert_null(json_loads(b.ptr, 0, &e));
    sw_buf_free(&b);
    json_decref(req);
}

/* The events of an SSE text (each "event: T\ndata: J\n\n"); NULL where an
 * event's data is not one line of JSON. */
static json_t *events(const char *s)
{
    json_t *a = json_array();
    const char *p = s;
    while (*p) {
        const char *end = strstr(p, "\n\n");
        assert_non_null(end);
        const char *d = strstr(p, "\ndata: ");
        json_error_t e;
        const char *eol = d && d < end ? strchr(d + 7, '\n') : NULL; /* one data line */
        json_t *j = eol ? json_loadb(d + 7, (size_t)(eol - d - 7), 0, &e) : NULL;
        json_array_append_new(a, j ? j : json_null());
        p = end + 2;
    }
    return a;
}

static void test_stream(void **state)
{
    (void)state;
    struct sw_llmsim_reply r = reply("");
    struct sw_llmsim_rstream *s = sw_llmsim_rstream_new(&r, NULL);
    assert_non_null(s);
    struct sw_buf b;
    sw_buf_init(&b, 1 << 20);
    assert_int_equal(sw_llmsim_rstream_start(s, &b), SW_OK);
    assert_int_equal(sw_llmsim_rstream_token(s, &b, (struct sw_str){"ab", 2}, SW_LLMSIM_MALFORMED_NONE), SW_OK);
    assert_int_equal(sw_llmsim_rstream_token(s, &b, (struct sw_str){"cd", 2}, SW_LLMSIM_MALFORMED_NONE), SW_OK);
    assert_int_equal(sw_llmsim_rstream_end(s, &b, 2, false), SW_OK);
    json_t *ev = events(b.ptr);
    static const char *const want[] = {
        "response.created", "response.in_progress", "response.output_item.added",
        "response.content_part.added", "response.output_text.delta", "response.output_text.delta",
        "response.output_text.done", "response.content_part.done", "response.output_item.done",
        "response.completed"};
    assert_int_equal(json_array_size(ev), sizeof want / sizeof *want);
    for (size_t i = 0; i < json_array_size(ev); i++) {
        json_t *e = json_array_get(ev, i);
        assert_string_equal(json_string_value(json_object_get(e, "type")), want[i]);
        assert_int_equal(json_integer_value(json_object_get(e, "sequence_number")), (json_int_t)i);
    }
    json_t *u = json_object_get(json_object_get(json_array_get(ev, 9), "response"), "usage");
    assert_int_equal(json_integer_value(json_object_get(u, "input_tokens")), 9);
    assert_int_equal(json_integer_value(json_object_get(u, "output_tokens")), 2);
    json_decref(ev);
    sw_llmsim_rstream_free(s);

    /* a forced tool streams its arguments; an error ends in response.failed */
    r = reply("get");
    s = sw_llmsim_rstream_new(&r, NULL);
    sw_buf_reset(&b);
    assert_int_equal(sw_llmsim_rstream_start(s, &b), SW_OK);
    assert_int_equal(sw_llmsim_rstream_token(s, &b, (struct sw_str){"{}", 2}, SW_LLMSIM_MALFORMED_NONE), SW_OK);
    assert_int_equal(sw_llmsim_rstream_error(s, &b), SW_OK);
    ev = events(b.ptr);
    assert_int_equal(json_array_size(ev), 5);
    assert_string_equal(json_string_value(json_object_get(json_array_get(ev, 2), "type")), "response.output_item.added");
    assert_string_equal(json_string_value(json_object_get(json_array_get(ev, 3), "type")),
                        "response.function_call_arguments.delta");
    assert_string_equal(json_string_value(json_object_get(json_array_get(ev, 4), "type")), "response.failed");
    json_decref(ev);
    sw_llmsim_rstream_free(s);

    /* each malformed kind breaks exactly the token's event */
    for (int k = SW_LLMSIM_MALFORMED_JSON; k <= SW_LLMSIM_MALFORMED_SSE; k++) {
        r = reply("");
        s = sw_llmsim_rstream_new(&r, NULL);
        sw_buf_reset(&b);
        assert_int_equal(sw_llmsim_rstream_token(s, &b, (struct sw_str){"ab", 2}, SW_LLMSIM_MALFORMED_NONE), SW_OK);
        assert_int_equal(sw_llmsim_rstream_token(s, &b, (struct sw_str){"cd", 2}, (enum sw_llmsim_malformed)k), SW_OK);
        ev = events(b.ptr);
        assert_int_equal(json_array_size(ev), 6);
        for (size_t i = 0; i < 5; i++)
            assert_true(json_is_object(json_array_get(ev, i)));
        assert_true(json_is_null(json_array_get(ev, 5)));
        json_decref(ev);
        sw_llmsim_rstream_free(s);
    }
    sw_buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_message),
        cmocka_unit_test(test_stream),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
