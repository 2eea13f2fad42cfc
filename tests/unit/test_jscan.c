/* The hot-path JSON scanner: it must accept exactly what a JSON parser
 * accepts as an object (jansson is the oracle), find the top-level members
 * asked for and no nested ones, and cut members so the rest stays valid. */
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "common/jscan.h"

static bool jansson_object(const char *text, size_t len)
{
    json_error_t e;
    json_t *v = json_loadb(text, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &e);
    bool ok = json_is_object(v);
    json_decref(v);
    return ok;
}

static void test_agrees_with_jansson(void **state)
{
    (void)state;
    static const char *const cases[] = {
        "{}", " { } ", "{\"a\":1}", "{\"a\":[1,2,{\"b\":null}],\"c\":\"x\"}",
        "{\"s\":\"\\\"quoted\\\" \\\\ \\/ \\b\\f\\n\\r\\t \\u00e9 \\ud83d\\ude00\"}",
        "{\"n\":-0.5e+10,\"m\":0,\"k\":1E-2,\"t\":true,\"f\":false}",
        "{\"utf8\":\"h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80\"}",
        /* not objects, or malformed */
        "", "[]", "1", "\"s\"", "{", "}", "{\"a\"}", "{\"a\":}", "{\"a\":1,}", "{,}",
        "{\"a\":01}", "{\"a\":1.}", "{\"a\":.5}", "{\"a\":+1}", "{\"a\":1e}", "{\"a\":-}",
        "{\"a\":tru}", "{\"a\":nul}", "{\"a\":\"\\x\"}", "{\"a\":\"\\u12\"}",
        "{\"a\":\"\\ud800\"}", "{\"a\":\"\\udc00\"}", "{\"a\":\"raw\ttab\"}",
        "{\"a\":\"\xc0\xaf\"}", "{\"a\":\"\xed\xa0\x80\"}", "{\"a\":\"\xf5\x80\x80\x80\"}",
        "{\"a\":\"\xe2\x82\"}", "{\"a\":1} x", "{\"a\":1}{}", "{'a':1}", "{a:1}",
        "{\"a\":[1 2]}", "{\"a\":[1,]}", "{\"a\" 1}", "{\"a\":\"unterminated}",
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *c = cases[i];
        struct sw_jspan sp;
        bool mine = sw_jscan_object(c, strlen(c), (const char *const[]){"a"}, &sp, NULL, 1);
        if (mine != jansson_object(c, strlen(c)))
            fail_msg("case %zu <%s>: jscan says %d, jansson the opposite", i, c, mine);
    }
}

static void test_depth_limit(void **state)
{
    (void)state;
    char buf[512];
    for (int depth = SW_JSCAN_MAX_DEPTH - 2; depth <= SW_JSCAN_MAX_DEPTH + 2; depth++) {
        size_t n = 0;
        buf[n++] = '{';
        buf[n++] = '"', buf[n++] = 'a', buf[n++] = '"', buf[n++] = ':';
        for (int i = 1; i < depth; i++)
            buf[n++] = '[';
        for (int i = 1; i < depth; i++)
            buf[n++] = ']';
        buf[n++] = '}';
        struct sw_jspan sp;
        bool ok = sw_jscan_object(buf, n, NULL, &sp, NULL, 0);
        assert_int_equal(ok, depth <= SW_JSCAN_MAX_DEPTH);
    }
}

static void test_finds_top_level_members_only(void **state)
{
    (void)state;
    const char *t = "{\"choices\":[{\"model\":\"inner\"}], \"usage\" : {\"prompt_tokens\":12,"
                    "\"completion_tokens\":7}, \"model\":\"m\\\"1\", \"x\":{\"model\":2}}";
    static const char *const keys[] = {"model", "choices", "usage", "absent"};
    struct sw_jspan v[4], m[4];
    assert_true(sw_jscan_object(t, strlen(t), keys, v, m, 4));
    assert_int_equal(v[0].len, 6);
    assert_memory_equal(t + v[0].off, "\"m\\\"1\"", 6);
    assert_memory_equal(t + m[0].off, "\"model\":\"m\\\"1\"", m[0].len);
    assert_int_equal(t[v[1].off], '[');
    assert_int_equal(v[3].len, 0);
    static const char *const ukeys[] = {"prompt_tokens", "completion_tokens"};
    struct sw_jspan u[2];
    assert_true(sw_jscan_object(t + v[2].off, v[2].len, ukeys, u, NULL, 2));
    assert_int_equal(sw_jscan_long(t + v[2].off, u[0]), 12);
    assert_int_equal(sw_jscan_long(t + v[2].off, u[1]), 7);
    assert_int_equal(sw_jscan_long("-3", (struct sw_jspan){0, 2}), -1);
    assert_int_equal(sw_jscan_long("1.5", (struct sw_jspan){0, 3}), -1);
}

/* Cutting any member leaves a valid object without it. */
static void test_cut_keeps_the_object_valid(void **state)
{
    (void)state;
    static const char *const texts[] = {
        "{\"usage\":null}", "{\"usage\":null,\"a\":1}", "{\"a\":1,\"usage\":null}",
        "{\"a\":1, \"usage\" : null , \"b\":2}", "{ \"usage\":null , \"b\":[1] }",
    };
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        const char *t = texts[i];
        size_t len = strlen(t);
        struct sw_jspan v, m;
        assert_true(sw_jscan_object(t, len, (const char *const[]){"usage"}, &v, &m, 1));
        struct sw_jspan cut = sw_jscan_cut(t, len, m);
        char out[128];
        memcpy(out, t, cut.off);
        memcpy(out + cut.off, t + cut.off + cut.len, len - cut.off - cut.len);
        size_t olen = len - cut.len;
        out[olen] = '\0';
        assert_true(jansson_object(out, olen));
        assert_null(strstr(out, "usage"));
        assert_true(sw_jscan_object(out, olen, (const char *const[]){"usage"}, &v, NULL, 1));
        assert_int_equal(v.len, 0);
    }
    assert_true(sw_jscan_empty_array("[ ]", (struct sw_jspan){0, 3}));
    assert_false(sw_jscan_empty_array("[1]", (struct sw_jspan){0, 3}));
}

/* Strings are skipped eight plain bytes at a time: a byte that ends the
 * run (quote, escape, control character, invalid or valid UTF-8) at any
 * offset of a long string is still judged as jansson judges it. */
static void test_special_byte_at_every_offset(void **state)
{
    (void)state;
    static const char *const specials[] = {"\\\"", "\\\\", "\x01", "\x1f", "\xc3\xa9",
                                           "\xff", "\xc3", "\x7f", "\"", "\\u0041"};
    for (size_t k = 0; k < sizeof specials / sizeof specials[0]; k++)
        for (size_t at = 0; at < 24; at++) {
            char buf[128];
            int n = snprintf(buf, sizeof buf, "{\"a\":\"%.*s%s%.*s\",\"b\":1}", (int)at,
                             "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", specials[k], (int)(24 - at),
                             "yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy");
            struct sw_jspan sp;
            bool mine = sw_jscan_object(buf, (size_t)n, (const char *const[]){"b"}, &sp, NULL, 1);
            if (mine != jansson_object(buf, (size_t)n))
                fail_msg("special %zu at %zu <%s>: jscan says %d", k, at, buf, mine);
            if (mine)
                assert_memory_equal(buf + sp.off, "1", 1);
        }
}

/* On well-formed text, locating members without checking the syntax finds
 * exactly what the checking scan finds; a key given twice is refused. */
static void test_members_agree_on_wellformed_text(void **state)
{
    (void)state;
    static const char *const texts[] = {
        "{}", " { } ",
        "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"a \\\"}\\\" b\"}]}",
        "{ \"messages\" : [ {\"content\":\"[{\\\\\"}], \"model\" : \"x\\\\\" ,\"n\":-1.5e3,"
        "\"metadata\":{\"model\":\"inner\"},\"stream_options\":null }",
        "{\"stream\":true,\"model\":\"h\xc3\xa9\",\"t\":[[],{},\"}\"],\"f\":false}",
    };
    static const char *const keys[] = {"model", "metadata", "stream_options"};
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        const char *t = texts[i];
        size_t len = strlen(t);
        assert_true(jansson_object(t, len));
        struct sw_jspan a[3], am[3], b[3], bm[3];
        assert_true(sw_jscan_object(t, len, keys, a, am, 3));
        if (!sw_jscan_members(t, len, keys, b, bm, 3))
            fail_msg("text %zu: not located", i);
        assert_memory_equal(a, b, sizeof a);
        assert_memory_equal(am, bm, sizeof am);
    }
    const char *dup = "{\"model\":\"a\",\"x\":{},\"model\":\"b\"}";
    struct sw_jspan v;
    assert_false(sw_jscan_members(dup, strlen(dup), keys, &v, NULL, 1));
    assert_false(sw_jscan_members("[1]", 3, keys, &v, NULL, 1));
    assert_false(sw_jscan_members("{\"model\":\"open", 15, keys, &v, NULL, 1));
}

/* A member whose name the client wrote with escapes is the member the
 * parse reads: found by both scans, and with the plain name beside it the
 * name occurs twice (the text is refused, as a duplicate is). Escapes that
 * decode to something else, or to a byte outside ASCII, are another name. */
static void test_escaped_names(void **state)
{
    (void)state;
    static const char *const keys[] = {"model", "metadata", "previous_response_id"};
    static const struct {
        const char *text;
        bool ok;            /* located */
        int key;            /* the key found (-1: none) */
        const char *value;
    } cases[] = {
        {"{\"m\\u006fdel\":\"x\"}", true, 0, "\"x\""},
        {"{\"\\u006d\\u006F\\u0064\\u0065\\u006c\":1}", true, 0, "1"},
        {"{\"met\\u0061data\":{\"allow_cloud\":true}}", true, 1, "{\"allow_cloud\":true}"},
        {"{\"input\":[],\"previous\\u005fresponse_id\":\"resp_1\"}", true, 2, "\"resp_1\""},
        {"{\"model\":\"a\",\"m\\u006fdel\":\"b\"}", false, -1, NULL},
        {"{\"m\\u006fdels\":1}", true, -1, NULL},
        {"{\"m\\u00f6del\":1}", true, -1, NULL},
        {"{\"mo\\/del\":1}", true, -1, NULL},
        {"{\"m\\\\odel\":1}", true, -1, NULL},
        {"{\"model\\n\":1}", true, -1, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *t = cases[i].text;
        size_t len = strlen(t);
        assert_true(jansson_object(t, len) == cases[i].ok);  /* without duplicates */
        struct sw_jspan a[3], b[3];
        bool checked = sw_jscan_object(t, len, keys, a, NULL, 3),
             located = sw_jscan_members(t, len, keys, b, NULL, 3);
        if (checked != cases[i].ok || located != cases[i].ok)
            fail_msg("case %zu: %d %d, want %d", i, checked, located, cases[i].ok);
        if (!cases[i].ok)
            continue;
        assert_memory_equal(a, b, sizeof a);
        for (int k = 0; k < 3; k++) {
            if (k != cases[i].key) {
                assert_int_equal(a[k].len, 0);
                continue;
            }
            assert_int_equal(a[k].len, strlen(cases[i].value));
            assert_memory_equal(t + a[k].off, cases[i].value, a[k].len);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_agrees_with_jansson),
        cmocka_unit_test(test_depth_limit),
        cmocka_unit_test(test_finds_top_level_members_only),
        cmocka_unit_test(test_cut_keeps_the_object_valid),
        cmocka_unit_test(test_special_byte_at_every_offset),
        cmocka_unit_test(test_members_agree_on_wellformed_text),
        cmocka_unit_test(test_escaped_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
