/* common/jdump.h: sw_json_dumps writes what json_dumps(JSON_COMPACT) writes,
 * byte for byte: every type, reals in jansson's form, escapes, key order,
 * refusals (a bare value without JSON_ENCODE_ANY, invalid UTF-8), the
 * hand-over to json_dumps (deep trees, an invalid key, other flags), and
 * an append that fails leaves the buffer as it was. */
#include <jansson.h>
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
#include "common/jdump.h"

/* Both writers on v (taken): the same bytes, or both NULL; returns whether
 * it was written. */
static bool same(json_t *v, size_t flags)
{
    char *a = json_dumps(v, flags), *b = sw_json_dumps(v, flags);
    assert_true((a == NULL) == (b == NULL));
    if (a)
        assert_string_equal(a, b);
    bool ok = a != NULL;
    free(a);
    free(b);
    json_decref(v);
    return ok;
}

static void test_values(void **state)
{
    (void)state;
    static const char *const texts[] = {
        "{}", "[]", "{\"a\":1,\"b\":[true,false,null],\"c\":{\"d\":\"e\"}}",
        "[0,-1,9223372036854775807,-9223372036854775808]",
        "[0.0,-0.0,1.0,0.1,1.5,1e300,1e-300,2.5e-5,123456789012345678.0,3.141592653589793]",
        "[\"\\\"q\\\\ \\b\\f\\n\\r\\t\\u0001\\u001f\\u007f / caf\\u00e9 \\ud83d\\ude00\"]",
        "{\"z\":1,\"a\":2,\"m\":3}", "{\"k\":\"v\\u0000w\"}", "[[[[[]]]]]",
    };
    for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) {
        json_t *v = json_loads(texts[i], JSON_ALLOW_NUL, NULL);
        assert_non_null(v);
        assert_true(same(json_incref(v), JSON_COMPACT));
        assert_true(same(v, JSON_COMPACT | JSON_ENCODE_ANY));
    }
    /* a bare value only with JSON_ENCODE_ANY */
    assert_false(same(json_string("s"), JSON_COMPACT));
    assert_true(same(json_string("s"), JSON_COMPACT | JSON_ENCODE_ANY));
    assert_true(same(json_real(-2.0), JSON_COMPACT | JSON_ENCODE_ANY));
    assert_true(same(json_integer(-42), JSON_COMPACT | JSON_ENCODE_ANY));
    /* other flags: json_dumps's answer */
    assert_true(same(json_loads("{\"b\":1,\"a\":[1]}", 0, NULL), JSON_INDENT(2) | JSON_SORT_KEYS));
}

static void test_invalid_utf8(void **state)
{
    (void)state;
    /* a value: refused by both */
    json_t *o = json_object();
    json_object_set_new(o, "k", json_stringn_nocheck("a\xff", 2));
    assert_false(same(o, JSON_COMPACT));
    /* a key: json_dumps writes part of it and goes on; so does sw_json_dumps */
    o = json_object();
    json_object_setn_new_nocheck(o, "\n\xc0z", 3, json_null());
    assert_true(same(o, JSON_COMPACT));
}

static void test_deep(void **state)
{
    (void)state;
    json_t *v = json_integer(1);
    for (int i = 0; i < SW_JSON_DUMP_DEPTH + 10; i++) {
        json_t *a = json_array();
        json_array_append_new(a, v);
        v = a;
    }
    assert_true(same(v, JSON_COMPACT));
}

static void test_buffer(void **state)
{
    (void)state;
    json_t *v = json_loads("{\"text\":\"0123456789\"}", 0, NULL);
    struct sw_buf b;
    sw_buf_init(&b, 16);
    assert_int_equal(sw_buf_append(&b, "ab", 2), SW_OK);
    assert_int_equal(sw_json_dump_buf(v, JSON_COMPACT, &b), SW_ETOOBIG);
    assert_int_equal(b.len, 2);
    assert_string_equal(b.ptr, "ab");
    sw_buf_free(&b);
    sw_buf_init(&b, 64);
    assert_int_equal(sw_buf_append(&b, "x", 1), SW_OK);
    assert_int_equal(sw_json_dump_buf(v, JSON_COMPACT, &b), SW_OK);
    assert_string_equal(b.ptr, "x{\"text\":\"0123456789\"}");
    sw_buf_free(&b);
    /* a long string goes in steps */
    char *big = malloc(10000);
    memset(big, 'a', 10000);
    big[5000] = '\n';
    json_t *o = json_object();
    json_object_set_new(o, "t", json_stringn(big, 10000));
    assert_true(same(o, JSON_COMPACT));
    free(big);
    json_decref(v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_values),
        cmocka_unit_test(test_invalid_utf8),
        cmocka_unit_test(test_deep),
        cmocka_unit_test(test_buffer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
