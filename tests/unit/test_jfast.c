/* sw_json_load (simdjson building a jansson tree) gives what json_loadb
 * gives: the same tree, or the same error, on the edge cases of JSON numbers,
 * strings and objects; and it takes the fast path for ordinary bodies. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "common/jfast.h"

#define REQ (JSON_REJECT_DUPLICATES | JSON_DECODE_ANY)

static char *dump(const json_t *j)
{
    char *s = json_dumps(j, JSON_ENCODE_ANY | JSON_COMPACT | JSON_REAL_PRECISION(17));
    assert_non_null(s);
    return s;
}

/* Both loaders accept text with flags and build the same tree (same types,
 * same key order); fast: the fast path alone builds it. */
static void accepts(const char *text, size_t len, size_t flags, int fast)
{
    json_error_t ej, ef;
    json_t *j = json_loadb(text, len, flags, &ej);
    json_t *f = sw_json_load(text, len, flags, &ef);
    json_t *fo = sw_json_load_fast_only(text, len, flags);

    if (!j)
        fail_msg("jansson rejects %s: %s", text, ej.text);
    if (!f)
        fail_msg("sw_json_load rejects %s: %s", text, ef.text);
    assert_true(json_equal(j, f));
    char *dj = dump(j), *df = dump(f);
    assert_string_equal(dj, df);
    assert_string_equal(ef.text, "");
    if (fast) {
        if (!fo)
            fail_msg("the fast path declines %s", text);
        char *dfo = dump(fo);
        assert_string_equal(dj, dfo);
        free(dfo);
    }
    free(dj);
    free(df);
    json_decref(j);
    json_decref(f);
    json_decref(fo);
}

#define ACCEPTS(text, fast) accepts(text, sizeof(text) - 1, REQ, fast)

/* Both reject text with the same error; the fast path never accepts it. */
static void rejects(const char *text, size_t len, size_t flags)
{
    json_error_t ej, ef;
    json_t *j = json_loadb(text, len, flags, &ej);
    json_t *f = sw_json_load(text, len, flags, &ef);
    json_t *fo = sw_json_load_fast_only(text, len, flags);

    assert_null(j);
    if (f) {
        char *d = dump(f);
        fail_msg("sw_json_load accepts %s as %s; jansson: %s", text, d, ej.text);
    }
    assert_null(fo);
    assert_string_equal(ef.text, ej.text);
    assert_int_equal(ef.line, ej.line);
    assert_int_equal(ef.column, ej.column);
    assert_int_equal(ef.position, ej.position);
    assert_int_equal(json_error_code(&ef), json_error_code(&ej));
}

#define REJECTS(text) rejects(text, sizeof(text) - 1, REQ)

static void test_jfast_request_body(void **state)
{
    (void)state;
    ACCEPTS("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
            "\"stream\":false,\"temperature\":0.7,\"max_tokens\":64,\"tools\":[],"
            "\"metadata\":{\"allow_cloud\":\"true\"},\"stop\":null,\"n\":1}", 1);
    ACCEPTS(" \t\r\n{\"z\":1,\"a\":2,\"m\":3} \n", 1);      /* key order kept */
    ACCEPTS("[]", 1);
    ACCEPTS("{}", 1);
    ACCEPTS("\"top-level string\"", 1);
    ACCEPTS("true", 1);
    ACCEPTS("null", 1);
}

static void test_jfast_duplicates(void **state)
{
    (void)state;
    REJECTS("{\"a\":1,\"a\":2}");
    REJECTS("{\"m\":{\"x\":[1],\"y\":2,\"x\":3}}");
    REJECTS("{\"\\u0061\":1,\"a\":2}");        /* the same key once decoded */
    /* Without JSON_REJECT_DUPLICATES the last value wins, in the first place. */
    const char dup[] = "{\"a\":1,\"b\":2,\"a\":3}";
    accepts(dup, sizeof dup - 1, JSON_DECODE_ANY, 1);
}

static void test_jfast_nul(void **state)
{
    (void)state;
    REJECTS("[\"a\\u0000b\"]");
    REJECTS("{\"k\\u0000\":1}");
    REJECTS("{\"k\":\"\\u0000\"}");
    /* A raw NUL byte is not JSON. */
    rejects("[\"a\0b\"]", 7, REQ);
    rejects("[1]\0", 4, REQ);
}

static void test_jfast_numbers(void **state)
{
    (void)state;
    ACCEPTS("[9223372036854775807,-9223372036854775808,0,1,-1]", 1);
    REJECTS("[9223372036854775808]");
    REJECTS("[-9223372036854775809]");
    REJECTS("[18446744073709551615]");
    REJECTS("[18446744073709551616]");
    REJECTS("[100000000000000000000000]");
    ACCEPTS("[-0]", 1);           /* the integer 0 */
    ACCEPTS("[-0.0]", 1);         /* the real -0.0 */
    ACCEPTS("[-0e0,-0E+2,-1e-400]", 1);
    ACCEPTS("[0.0,1.0,1e2,1E-2,-1.5e-3,2.5e+10]", 1);   /* reals, even when integral */
    ACCEPTS("[1e308,1.7976931348623157e308,4.9e-324,2.2250738585072014e-308]", 1);
    ACCEPTS("[0.1,0.2,0.30000000000000004,3.141592653589793238462643383279]", 1);
    ACCEPTS("[1e-400]", 1);
    ACCEPTS("[123456789012345678901234567890.5e-10]", 1);
    REJECTS("[1e400]");
    REJECTS("[-1e400]");
    REJECTS("[01]");
    REJECTS("[1.]");
    REJECTS("[.5]");
    REJECTS("[+1]");
    REJECTS("[1e]");
    REJECTS("[-]");
    REJECTS("[NaN]");
    REJECTS("[Infinity]");
}

static void test_jfast_strings(void **state)
{
    (void)state;
    ACCEPTS("[\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"]", 1);
    ACCEPTS("[\"\\u00e9\\u4e2d\\ud83d\\ude00\"]", 1);   /* a surrogate pair: U+1F600 */
    ACCEPTS("[\"\xc3\xa9\xe4\xb8\xad\xf0\x9f\x98\x80\"]", 1);
    ACCEPTS("{\"\xc3\xa9\":\"\\uFFFF\"}", 1);
    REJECTS("[\"\\ud800\"]");                  /* lone high surrogate */
    REJECTS("[\"\\ud800x\"]");
    REJECTS("[\"\\ud800\\u0041\"]");
    REJECTS("[\"\\udc00\"]");                  /* lone low surrogate */
    REJECTS("[\"\\udfff\\ud800\"]");
    REJECTS("[\"\xe9\"]");                     /* invalid UTF-8 */
    REJECTS("[\"\xc0\x80\"]");                 /* overlong */
    REJECTS("[\"\xed\xa0\x80\"]");             /* an encoded surrogate */
    REJECTS("[\"\xf4\x90\x80\x80\"]");         /* beyond U+10FFFF */
    REJECTS("{\"\xff\":1}");
    REJECTS("[\"a\x01\"]");                    /* raw control character */
    REJECTS("[\"a\tb\"]");
    REJECTS("[\"\\x41\"]");                    /* unknown escape */
    REJECTS("[\"\\u12\"]");
    REJECTS("[\"abc]");
}

static void test_jfast_syntax(void **state)
{
    (void)state;
    rejects("", 0, REQ);
    REJECTS("   ");
    REJECTS("{");
    REJECTS("{\"a\":1,}");
    REJECTS("[1,]");
    REJECTS("{\"a\" 1}");
    REJECTS("{a:1}");
    REJECTS("{\"a\":1}}");
    REJECTS("{\"a\":1} x");
    REJECTS("[1] [2]");
    REJECTS("tru");
    REJECTS("[nul]");
    /* Without JSON_DECODE_ANY only an object or an array is a text. */
    rejects("\"s\"", 3, 0);
    rejects("1", 1, 0);
    accepts("[1]", 3, 0, 1);
}

/* Nested 500 deep, within the request limit's reach; 3000 deep, beyond
 * jansson's own limit: both reject. */
static void test_jfast_depth(void **state)
{
    (void)state;
    char *s = malloc(16000);
    assert_non_null(s);
    for (int depth = 500; depth <= 3000; depth += 2500) {
        size_t n = 0;
        for (int i = 0; i < depth; i++)
            s[n++] = i % 2 ? '[' : '{', n += i % 2 ? 0 : (memcpy(s + n, "\"k\":", 4), 4);
        s[n++] = '1';
        for (int i = depth - 1; i >= 0; i--)
            s[n++] = i % 2 ? ']' : '}';
        s[n] = '\0';
        if (depth == 500)
            accepts(s, n, REQ, 1);
        else
            rejects(s, n, REQ);
    }
    free(s);
}

/* A body over the reused buffer's size takes the fast path too. */
static void test_jfast_large(void **state)
{
    (void)state;
    size_t n = 3u << 20;
    char *s = malloc(n + 64);   /* the last member and "null]" may pass n */
    assert_non_null(s);
    size_t k = 0;
    s[k++] = '[';
    while (k < n) {
        k += (size_t)snprintf(s + k, 32, "\"v%zu\\u00e9\",%zu.5,", k, k);
    }
    memcpy(s + k, "null]", 5);
    k += 5;
    accepts(s, k, REQ, 1);
    free(s);
}

/* The bounded fast path, below and above 512 KiB: a text within the bounds
 * gives json_loadb's tree; one with more structural characters than
 * max_values, or nested deeper than max_depth, is declined (not out of
 * memory), so the caller's shape check decides. */
static void bounded_case(size_t items)
{
    size_t cap = items * 24 + 64;
    char *s = malloc(cap);
    assert_non_null(s);
    size_t k = 0;
    s[k++] = '[';
    for (size_t i = 0; i < items; i++)
        k += (size_t)snprintf(s + k, cap - k, "%s\"t%zu text\"", i ? "," : "", i);
    s[k++] = ']';
    json_error_t e;
    json_t *ref = json_loadb(s, k, REQ, &e);
    assert_non_null(ref);
    bool oom = true;
    /* items strings, items - 1 commas, the brackets: 2 * items + 1 structurals */
    json_t *j = sw_json_load_bounded(s, k, REQ, 2 * items + 1, 64, &oom);
    assert_non_null(j);
    assert_false(oom);
    assert_true(json_equal(j, ref));
    json_decref(j);
    oom = true;
    assert_null(sw_json_load_bounded(s, k, REQ, 2 * items, 64, &oom));
    assert_false(oom);
    oom = true;
    assert_null(sw_json_load_bounded(s, k, REQ, 2 * items + 1, 0, &oom));
    assert_false(oom);
    json_decref(ref);
    free(s);

    char deep[] = "[[[[1]]]]";
    oom = true;
    assert_null(sw_json_load_bounded(deep, sizeof deep - 1, REQ, 100, 3, &oom));
    assert_false(oom);
    j = sw_json_load_bounded(deep, sizeof deep - 1, REQ, 100, 64, &oom);
    assert_non_null(j);
    json_decref(j);
}

static void test_jfast_bounded(void **state)
{
    (void)state;
    bounded_case(100);          /* about 1 KB: the per-thread parser */
    bounded_case(20000);        /* about 250 KB: the per-thread parser, grown */
    bounded_case(60000);        /* about 750 KB: a parser of its own */
}

static long countdown = -1;

static void *failing_malloc(size_t n)
{
    if (countdown >= 0 && countdown-- == 0)
        return NULL;
    return malloc(n);
}

/* A failed allocation is reported as jansson reports it: out of memory. */
static void test_jfast_out_of_memory(void **state)
{
    (void)state;
    const char text[] = "{\"a\":[1,\"x\",{\"b\":2.5}],\"c\":\"d\"}";
    json_error_t e;
    int saw_oom = 0;

    json_set_alloc_funcs(failing_malloc, free);
    for (long n = 0; n < 64; n++) {
        countdown = n;
        json_t *j = sw_json_load(text, sizeof text - 1, REQ, &e);
        countdown = -1;
        if (j) {
            json_decref(j);
            break;
        }
        assert_int_equal(json_error_code(&e), json_error_out_of_memory);
        saw_oom = 1;
    }
    json_set_alloc_funcs(malloc, free);
    assert_true(saw_oom);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_jfast_request_body),
        cmocka_unit_test(test_jfast_duplicates),
        cmocka_unit_test(test_jfast_nul),
        cmocka_unit_test(test_jfast_numbers),
        cmocka_unit_test(test_jfast_strings),
        cmocka_unit_test(test_jfast_syntax),
        cmocka_unit_test(test_jfast_depth),
        cmocka_unit_test(test_jfast_large),
        cmocka_unit_test(test_jfast_bounded),
        cmocka_unit_test(test_jfast_out_of_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
