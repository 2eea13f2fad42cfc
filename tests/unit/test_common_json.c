/* common/json.h: the one JSON string escape (the decision log, the relay's
 * model names, the simulator) and the one type name. jansson's json_dumps
 * is the oracle for the default form; the decision log's form is checked
 * byte for byte against its rules. */
#include <jansson.h>
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
#include "common/json.h"
#include "common/utf8.h"

#define LOG_FORM (SW_JSON_ESC_ALL_CTL | SW_JSON_ESC_FIX_UTF8)

/* sw_json_escape of s[0..n) into a fresh buffer; the caller frees it. */
static char *esc(const char *s, size_t n, unsigned flags, int *err)
{
    struct sw_buf b;
    sw_buf_init(&b, 1 << 20);
    *err = sw_json_escape(&b, s, n, flags);
    if (*err) {
        sw_buf_free(&b);
        return NULL;
    }
    if (!b.ptr)
        return strdup("");
    return b.ptr;
}

/* What json_dumps writes for s[0..n), without the quotes (NULL: refused). */
static char *jansson(const char *s, size_t n)
{
    json_t *j = json_stringn(s, n);
    char *d = j ? json_dumps(j, JSON_ENCODE_ANY) : NULL;
    json_decref(j);
    if (!d)
        return NULL;
    size_t len = strlen(d);
    memmove(d, d + 1, len - 2);
    d[len - 2] = '\0';
    return d;
}

static void expect(const char *s, size_t n, unsigned flags, const char *want)
{
    int err;
    char *got = esc(s, n, flags, &err);
    assert_int_equal(err, SW_OK);
    assert_string_equal(got, want);
    /* the raw form writes the same bytes, within the bound */
    char *w = malloc(SW_JSON_ESCAPED_MAX(n) + 1);
    size_t k = sw_json_escape_into(w, s, n, flags);
    assert_true(k <= SW_JSON_ESCAPED_MAX(n));
    assert_int_equal(k, strlen(want));
    assert_memory_equal(w, want, k);
    free(w);
    free(got);
}

static void test_default_form(void **state)
{
    (void)state;
    expect("", 0, 0, "");
    expect("plain text / 0x7f:\x7f", 19, 0, "plain text / 0x7f:\x7f");
    expect("\"q\" \\", 5, 0, "\\\"q\\\" \\\\");
    expect("\b\f\n\r\t", 5, 0, "\\b\\f\\n\\r\\t");
    expect("\x01\x1f\x0b", 3, 0, "\\u0001\\u001F\\u000B");
    expect("a\0b", 3, 0, "a\\u0000b");
    expect("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", 14, 0, "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
    /* without a UTF-8 flag, bytes >= 0x80 pass as they are */
    expect("\xff\xc0\xaf", 3, 0, "\xff\xc0\xaf");
}

static void test_log_form(void **state)
{
    (void)state;
    expect("\n\t\r\b\f", 5, LOG_FORM, "\\u000a\\u0009\\u000d\\u0008\\u000c");
    expect("\x1f\x01", 2, LOG_FORM, "\\u001f\\u0001");
    expect("\"\\", 2, LOG_FORM, "\\\"\\\\");
    expect("\xc3\xa9\xe2\x82\xac", 5, LOG_FORM, "\xc3\xa9\xe2\x82\xac");
    /* one U+FFFD for a bad byte and the continuation bytes right after it */
    expect("a\xff" "b", 3, LOG_FORM, "a\\ufffdb");
    expect("\x80\x80\x80", 3, LOG_FORM, "\\ufffd");
    expect("\xc0\xaf", 2, LOG_FORM, "\\ufffd");                    /* overlong '/' */
    expect("\xe0\x80\xaf", 3, LOG_FORM, "\\ufffd");                /* overlong, 3 bytes */
    expect("\xf0\x80\x80\xaf", 4, LOG_FORM, "\\ufffd");            /* overlong, 4 bytes */
    expect("\xed\xa0\x80\xed\xb0\x80", 6, LOG_FORM, "\\ufffd\\ufffd"); /* surrogate halves */
    expect("\xf4\x90\x80\x80", 4, LOG_FORM, "\\ufffd");            /* past U+10FFFF */
    expect("x\xe2\x82", 3, LOG_FORM, "x\\ufffd");                  /* cut at the end */
    expect("\xe2\x28\xa1", 3, LOG_FORM, "\\ufffd(\\ufffd");        /* a continuation missing */
    expect("\xc3" "\xc3\xa9", 3, LOG_FORM, "\\ufffd\xc3\xa9");
}

/* Under SW_JSON_ESC_CHECK_UTF8 invalid UTF-8 fails and leaves the buffer
 * as it was; the raw form says SIZE_MAX. */
static void test_check(void **state)
{
    (void)state;
    static const char *const bad[] = {"\xff", "\xc0\xaf", "\xed\xa0\x80", "ok\xe2\x82",
                                      "\x80", "\xf4\x90\x80\x80", "\xf5\x80\x80\x80"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct sw_buf b;
        sw_buf_init(&b, 1024);
        assert_int_equal(sw_buf_append_str(&b, "\"kept\""), SW_OK);
        assert_int_equal(sw_json_escape(&b, bad[i], strlen(bad[i]), SW_JSON_ESC_CHECK_UTF8),
                         SW_EINVAL);
        assert_string_equal(b.ptr, "\"kept\"");
        assert_int_equal(b.len, 6);
        /* wins over FIX */
        assert_int_equal(sw_json_escape(&b, bad[i], strlen(bad[i]),
                                        SW_JSON_ESC_CHECK_UTF8 | SW_JSON_ESC_FIX_UTF8),
                         SW_EINVAL);
        sw_buf_free(&b);
        char w[64];
        assert_int_equal(sw_json_escape_into(w, bad[i], strlen(bad[i]), SW_JSON_ESC_CHECK_UTF8),
                         SIZE_MAX);
    }
}

static void test_bounds(void **state)
{
    (void)state;
    struct sw_buf b;
    sw_buf_init(&b, 8);
    assert_int_equal(sw_buf_append_str(&b, "ab"), SW_OK);
    assert_int_equal(sw_json_escape(&b, "\x01\x02", 2, 0), SW_ETOOBIG); /* 12 bytes > 6 left */
    assert_string_equal(b.ptr, "ab");
    assert_int_equal(sw_json_escape(&b, "\x01", 1, 0), SW_OK);
    assert_string_equal(b.ptr, "ab\\u0001");
    sw_buf_free(&b);
    /* the bound is reached: six bytes for each of n control bytes */
    char in[64], w[SW_JSON_ESCAPED_MAX(64)];
    memset(in, 0x1f, sizeof in);
    assert_int_equal(sw_json_escape_into(w, in, sizeof in, 0), SW_JSON_ESCAPED_MAX(64));
}

/* Random strings of escapes, quotes, valid and invalid UTF-8: the default
 * form with CHECK is what jansson writes (or fails where jansson refuses);
 * the log form is always valid UTF-8 that parses back, and the same as the
 * input where that was valid and had no control bytes. */
static void test_random(void **state)
{
    (void)state;
    static const char *const pieces[] = {
        "a", "Z", " ", "/", "\"", "\\", "\x7f", "\n", "\t", "\r", "\b", "\f", "\x01", "\x1f",
        "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80", "\xef\xbf\xbf", "\xf4\x8f\xbf\xbf",
        "\xe2\x80\xa8", /* the valid ones end here */
        "\xff", "\x80", "\xc3", "\xe2\x82", "\xed\xa0\x80", "\xc0\xaf", "\xf4\x90\x80\x80",
    };
    const size_t n_valid = 20, n_all = sizeof pieces / sizeof pieces[0];
    srand(6);
    for (int round = 0; round < 20000; round++) {
        char in[128];
        size_t n = 0;
        int k = rand() % 12;
        bool valid_only = round % 2;
        for (int i = 0; i < k; i++) {
            const char *p = pieces[(size_t)rand() % (valid_only ? n_valid : n_all)];
            memcpy(in + n, p, strlen(p));
            n += strlen(p);
        }
        int err;
        char *mine = esc(in, n, SW_JSON_ESC_CHECK_UTF8, &err), *ref = jansson(in, n);
        if (!ref) {
            assert_int_equal(err, SW_EINVAL);
        } else {
            assert_int_equal(err, SW_OK);
            if (strcmp(mine, ref))
                fail_msg("round %d: \"%s\", jansson \"%s\"", round, mine, ref);
        }
        free(mine);
        free(ref);

        char *log = esc(in, n, LOG_FORM, &err);
        assert_int_equal(err, SW_OK);
        assert_true(sw_utf8_valid(log, strlen(log)));
        for (const char *c = log; *c; c++)
            assert_true((unsigned char)*c >= 0x20);
        struct sw_buf q;
        sw_buf_init(&q, 1 << 20);
        assert_int_equal(sw_buf_append(&q, "\"", 1), SW_OK);
        assert_int_equal(sw_buf_append_str(&q, log), SW_OK);
        assert_int_equal(sw_buf_append(&q, "\"", 1), SW_OK);
        json_error_t je;
        json_t *back = json_loadb(q.ptr, q.len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
        assert_non_null(back);
        if (sw_utf8_valid(in, n)) {
            assert_int_equal(json_string_length(back), n);
            assert_memory_equal(json_string_value(back), in, n);
        }
        json_decref(back);
        sw_buf_free(&q);
        free(log);
    }
}

/* sw_str_copy copies what snprintf(out, cap, "%s", s) would. */
static void test_str_copy(void **state)
{
    (void)state;
    const char *in[] = {"", "a", "abcdefg", "abcdefgh", "abcdefghijklmnop"};
    for (size_t i = 0; i < sizeof in / sizeof in[0]; i++)
        for (size_t cap = 1; cap <= 10; cap++) {
            char got[16], want[16];
            memset(got, '#', sizeof got);
            memset(want, '#', sizeof want);
            size_t n = sw_str_copy(got, cap, in[i]);
            snprintf(want, cap, "%s", in[i]);
            assert_memory_equal(got, want, sizeof got);
            assert_int_equal(n, strlen(want));
        }
}

static void test_type_name(void **state)
{
    (void)state;
    json_t *v[] = {json_object(), json_array(), json_string("s"), json_integer(1),
                   json_real(1.5), json_true(), json_false(), json_null()};
    static const char *const want[] = {"an object", "an array", "a string", "an integer",
                                       "a decimal", "a boolean", "a boolean", "null"};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        assert_string_equal(sw_json_type_name(v[i]), want[i]);
        json_decref(v[i]);
    }
    assert_string_equal(sw_json_type_name(NULL), "a value");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default_form),
        cmocka_unit_test(test_log_form),
        cmocka_unit_test(test_check),
        cmocka_unit_test(test_bounds),
        cmocka_unit_test(test_random),
        cmocka_unit_test(test_str_copy),
        cmocka_unit_test(test_type_name),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
