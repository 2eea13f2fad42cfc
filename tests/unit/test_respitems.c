/* The conversation state's JSON (state/respitems.c): the stored Response
 * object read back, the prior items of a continued request, the input items
 * a record stores, a finished response split into meta and output; and the
 * store's counters in /metrics (obs/obs.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/buf.h"
#include "common/err.h"
#include "obs/obs.h"
#include "state/respitems.h"

static json_t *parse(const char *s)
{
    json_error_t je;
    json_t *v = json_loads(s, 0, &je);
    assert_non_null(v);
    return v;
}

/* a and b (JSON texts) are the same value. */
static void assert_json(const char *got, const char *want)
{
    json_t *g = parse(got), *w = parse(want);
    if (!json_equal(g, w))
        fail_msg("got %s\nwant %s", got, want);
    json_decref(g);
    json_decref(w);
}

static void assert_json_value(const json_t *got, const char *want)
{
    char *s = json_dumps(got, JSON_COMPACT);
    assert_non_null(s);
    assert_json(s, want);
    free(s);
}

static void test_record_object(void **state)
{
    (void)state;
    const char meta[] = "{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"completed\"}";
    const char output[] = "[{\"type\":\"message\",\"id\":\"msg_1_0\"}]";
    struct sw_resp_record r = {.id = "resp_1", .created_at_s = 7, .meta = meta,
                               .meta_len = strlen(meta), .output = output,
                               .output_len = strlen(output), .input = "[]", .input_len = 2};
    char *out;
    size_t len;
    assert_int_equal(sw_resp_record_object(&r, &out, &len), SW_OK);
    assert_int_equal(len, strlen(out));
    assert_json(out, "{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"completed\","
                     "\"output\":[{\"type\":\"message\",\"id\":\"msg_1_0\"}]}");
    free(out);
    /* no meta: the least object there is */
    r.meta = NULL;
    r.meta_len = 0;
    assert_int_equal(sw_resp_record_object(&r, &out, &len), SW_OK);
    assert_json(out, "{\"id\":\"resp_1\",\"object\":\"response\",\"created_at\":7,"
                     "\"output\":[{\"type\":\"message\",\"id\":\"msg_1_0\"}]}");
    free(out);
    /* JSON that does not read back */
    r.output = "[{";
    r.output_len = 2;
    assert_int_equal(sw_resp_record_object(&r, &out, &len), SW_EINVAL);
    assert_null(out);
}

static void test_prior_items(void **state)
{
    (void)state;
    const char in[] = "[{\"type\":\"message\",\"role\":\"user\",\"content\":\"hi\",\"id\":\"a\"}]";
    const char out[] = "[{\"type\":\"reasoning\",\"id\":\"rs\"},"
                       "{\"type\":\"message\",\"role\":\"assistant\",\"id\":\"b\"},"
                       "{\"type\":\"function_call\",\"id\":\"c\"}]";
    struct sw_resp_record r = {.id = "resp_1", .input = in, .input_len = strlen(in),
                               .output = out, .output_len = strlen(out)};
    json_t *p = sw_resp_prior_items(&r);
    assert_non_null(p);
    assert_json_value(p, "[{\"type\":\"message\",\"role\":\"user\",\"content\":[{\"type\":"
                         "\"input_text\",\"text\":\"hi\"}],\"id\":\"a\",\"status\":\"completed\"},"
                         "{\"type\":\"message\",\"role\":\"assistant\",\"id\":\"b\"},"
                         "{\"type\":\"function_call\",\"id\":\"c\"}]");
    json_decref(p);
    r.input = "{}";
    r.input_len = 2;
    assert_null(sw_resp_prior_items(&r));
}

static void test_input_items(void **state)
{
    (void)state;
    /* a string: one user message with an input_text part, an id from the response's */
    json_t *s = json_string("hello");
    json_t *items = sw_resp_input_items(NULL, NULL, s, "resp_ab12");
    assert_non_null(items);
    assert_json_value(items, "[{\"type\":\"message\",\"role\":\"user\",\"status\":\"completed\","
                             "\"id\":\"msg_ab12_in0\",\"content\":[{\"type\":\"input_text\","
                             "\"text\":\"hello\"}]}]");
    json_decref(items);
    json_decref(s);

    /* prior input and output first; items keep their own ids and parts */
    json_t *pin = parse("[{\"type\":\"message\",\"role\":\"user\",\"id\":\"msg_old_in0\","
                        "\"content\":[{\"type\":\"input_text\",\"text\":\"one\"}]}]");
    json_t *pout = parse("[{\"type\":\"message\",\"role\":\"assistant\",\"id\":\"msg_old_0\","
                         "\"status\":\"completed\",\"content\":[{\"type\":\"output_text\","
                         "\"text\":\"two\",\"annotations\":[]}]}]");
    json_t *in = parse("[{\"role\":\"assistant\",\"content\":\"said\"},"
                       "{\"type\":\"function_call_output\",\"call_id\":\"c1\",\"output\":\"42\"},"
                       "{\"type\":\"function_call\",\"call_id\":\"c2\",\"name\":\"f\","
                       "\"arguments\":\"{}\",\"id\":\"mine\"},"
                       "{\"role\":\"developer\",\"content\":[{\"type\":\"input_text\","
                       "\"text\":\"x\"}],\"status\":\"incomplete\"}]");
    items = sw_resp_input_items(pin, pout, in, "resp_77");
    assert_non_null(items);
    assert_int_equal(json_array_size(items), 6);
    assert_json_value(json_array_get(items, 0), "{\"type\":\"message\",\"role\":\"user\","
                      "\"id\":\"msg_old_in0\",\"content\":[{\"type\":\"input_text\","
                      "\"text\":\"one\"}]}");
    assert_string_equal(json_string_value(json_object_get(json_array_get(items, 1), "id")),
                        "msg_old_0");
    assert_json_value(json_array_get(items, 2),
                      "{\"type\":\"message\",\"role\":\"assistant\",\"status\":\"completed\","
                      "\"id\":\"msg_77_in0\",\"content\":[{\"type\":\"output_text\","
                      "\"text\":\"said\",\"annotations\":[]}]}");
    assert_json_value(json_array_get(items, 3),
                      "{\"type\":\"function_call_output\",\"call_id\":\"c1\",\"output\":\"42\","
                      "\"id\":\"fco_77_in1\"}");
    assert_string_equal(json_string_value(json_object_get(json_array_get(items, 4), "id")),
                        "mine");
    assert_json_value(json_array_get(items, 5),
                      "{\"type\":\"message\",\"role\":\"developer\",\"status\":\"incomplete\","
                      "\"id\":\"msg_77_in3\",\"content\":[{\"type\":\"input_text\","
                      "\"text\":\"x\"}]}");
    /* the inputs are only read */
    assert_null(json_object_get(json_array_get(in, 0), "id"));
    json_decref(items);
    json_decref(in);
    json_decref(pin);
    json_decref(pout);

    json_t *bad = json_integer(3);
    assert_null(sw_resp_input_items(NULL, NULL, bad, "resp_1"));
    json_decref(bad);

    /* ids are distinct: an output item sent back as input keeps its place
     * with a new id, so a page cursor names one item; the prior is shared,
     * not changed */
    pout = parse("[{\"type\":\"message\",\"role\":\"assistant\",\"id\":\"msg_x_0\","
                 "\"content\":[]}]");
    char longid[300];
    memset(longid, 'z', sizeof longid - 1);
    longid[sizeof longid - 1] = '\0';
    in = json_pack("[{s:s, s:s, s:s, s:[]}, {s:s, s:s, s:s}]", "type", "message", "role",
                   "assistant", "id", "msg_x_0", "content", "role", "user", "content", "hi",
                   "id", longid);
    items = sw_resp_input_items(NULL, pout, in, "resp_9");
    assert_non_null(items);
    assert_int_equal(json_array_size(items), 3);
    assert_string_equal(json_string_value(json_object_get(json_array_get(items, 0), "id")),
                        "msg_x_0");
    assert_string_equal(json_string_value(json_object_get(json_array_get(items, 1), "id")),
                        "msg_9_at1");
    assert_string_equal(json_string_value(json_object_get(json_array_get(items, 2), "id")),
                        "msg_9_at2");
    assert_string_equal(json_string_value(json_object_get(json_array_get(pout, 0), "id")),
                        "msg_x_0");
    assert_string_equal(json_string_value(json_object_get(json_array_get(in, 0), "id")),
                        "msg_x_0");
    json_decref(items);
    json_decref(in);
    json_decref(pout);
}

static void test_split(void **state)
{
    (void)state;
    json_t *r = parse("{\"id\":\"resp_1\",\"object\":\"response\",\"output\":[{\"type\":"
                      "\"message\"}],\"usage\":{\"input_tokens\":3}}");
    char *meta, *out;
    size_t ml, ol;
    assert_int_equal(sw_resp_split(r, &meta, &ml, &out, &ol), SW_OK);
    assert_int_equal(ml, strlen(meta));
    assert_int_equal(ol, strlen(out));
    assert_json(meta, "{\"id\":\"resp_1\",\"object\":\"response\",\"usage\":{\"input_tokens\":3}}");
    assert_json(out, "[{\"type\":\"message\"}]");
    /* the response is only read */
    assert_non_null(json_object_get(r, "output"));
    /* and the record reads back as the object */
    struct sw_resp_record rec = {.id = "resp_1", .meta = meta, .meta_len = ml, .output = out,
                                 .output_len = ol};
    char *obj;
    size_t len;
    assert_int_equal(sw_resp_record_object(&rec, &obj, &len), SW_OK);
    char *want = json_dumps(r, JSON_COMPACT);
    assert_json(obj, want);
    free(want);
    free(obj);
    free(meta);
    free(out);
    json_decref(r);
    json_t *no = parse("{\"id\":\"resp_1\"}");
    assert_int_equal(sw_resp_split(no, &meta, &ml, &out, &ol), SW_EINVAL);
    assert_null(meta);
    assert_null(out);
    json_decref(no);
}

static void test_expand(void **state)
{
    (void)state;
    json_t *prior = parse("[{\"type\":\"message\",\"role\":\"user\",\"id\":\"a\",\"content\":\"one\"}]");
    /* a string input becomes a user message after the prior items */
    json_t *body = parse("{\"model\":\"m\",\"input\":\"two\",\"previous_response_id\":\"resp_1\"}");
    assert_int_equal(sw_resp_expand_input(body, prior), SW_OK);
    assert_json_value(body, "{\"model\":\"m\",\"previous_response_id\":\"resp_1\",\"input\":["
                            "{\"type\":\"message\",\"role\":\"user\",\"id\":\"a\",\"content\":\"one\"},"
                            "{\"role\":\"user\",\"content\":\"two\"}]}");
    json_decref(body);
    /* items follow them as they are */
    body = parse("{\"input\":[{\"type\":\"function_call_output\",\"call_id\":\"c\",\"output\":\"x\"}]}");
    assert_int_equal(sw_resp_expand_input(body, prior), SW_OK);
    assert_int_equal(json_array_size(json_object_get(body, "input")), 2);
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(body, "input"), 1), "type")),
                        "function_call_output");
    json_decref(body);
    /* the prior array itself is not changed */
    assert_int_equal(json_array_size(prior), 1);
    /* what cannot be made whole */
    body = parse("{\"input\":3}");
    assert_int_equal(sw_resp_expand_input(body, prior), SW_EINVAL);
    json_decref(body);
    body = parse("{\"input\":\"x\"}");
    json_t *notarr = parse("{}");
    assert_int_equal(sw_resp_expand_input(body, notarr), SW_EINVAL);
    json_decref(notarr);
    json_decref(body);
    json_decref(prior);
}

static void test_metrics(void **state)
{
    (void)state;
    const struct sw_obs_resp_store r = {.store = "memory", .entries = 3, .bytes = 900,
                                        .evicted = 2, .expired = 1, .refused = 4};
    struct sw_buf out;
    sw_buf_init(&out, 1 << 16);
    assert_int_equal(sw_obs_render_resp_store(&out, &r), SW_OK);
    assert_int_equal(sw_buf_append(&out, "", 1), SW_OK);
    static const char *const expect[] = {
        "# TYPE spillway_responses_stored gauge",
        "spillway_responses_stored{store=\"memory\"} 3\n",
        "spillway_responses_stored_bytes{store=\"memory\"} 900\n",
        "# TYPE spillway_responses_evicted_total counter",
        "spillway_responses_evicted_total{store=\"memory\"} 2\n",
        "spillway_responses_expired_total{store=\"memory\"} 1\n",
        "spillway_responses_store_refused_total{store=\"memory\"} 4\n",
    };
    for (size_t i = 0; i < sizeof expect / sizeof expect[0]; i++)
        if (!strstr(out.ptr, expect[i]))
            fail_msg("missing %s in\n%s", expect[i], out.ptr);
    sw_buf_free(&out);
}

/* A record keeps the input as the request carried it and reads it back as
 * the items sw_resp_input_items makes; a record that kept the made items
 * reads back the same. */
static void test_record_input(void **state)
{
    (void)state;
    const char raw[] = "[{\"role\":\"user\",\"content\":\"fix the build\"},"
                       "{\"type\":\"function_call\",\"call_id\":\"c1\",\"name\":\"read\","
                       "\"arguments\":\"{}\"},{\"type\":\"function_call_output\",\"call_id\":"
                       "\"c1\",\"output\":\"int x;\",\"id\":\"dup\"},{\"role\":\"assistant\","
                       "\"content\":\"done\",\"id\":\"dup\"}]";
    json_t *in = json_loads(raw, 0, NULL);
    json_t *made = sw_resp_input_items(NULL, NULL, in, "resp_c0ffee");
    assert_non_null(made);
    char *made_text = json_dumps(made, JSON_COMPACT);
    struct sw_resp_record r = {.id = "resp_c0ffee", .input = raw, .input_len = strlen(raw)};
    json_t *a = sw_resp_record_input(&r);
    r.input = made_text;
    r.input_len = strlen(made_text);
    json_t *b = sw_resp_record_input(&r);
    assert_true(json_equal(a, made));
    assert_true(json_equal(b, made));
    json_decref(a);
    json_decref(b);
    /* a string: one user message */
    r.input = "\"hello\"";
    r.input_len = strlen(r.input);
    a = sw_resp_record_input(&r);
    assert_int_equal(json_array_size(a), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(a, 0), "role")), "user");
    json_decref(a);
    r.input = "{}";
    r.input_len = 2;
    assert_null(sw_resp_record_input(&r));
    free(made_text);
    json_decref(made);
    json_decref(in);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_record_object),
        cmocka_unit_test(test_prior_items),
        cmocka_unit_test(test_record_input),
        cmocka_unit_test(test_input_items),
        cmocka_unit_test(test_expand),
        cmocka_unit_test(test_split),
        cmocka_unit_test(test_metrics),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
