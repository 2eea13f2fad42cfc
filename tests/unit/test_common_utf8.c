/* common/utf8.h: the one UTF-8 validator (the JSON scanner, the decision
 * log, the request errors and the JSON escape all use it). jansson, which
 * checks every string it is given, is the oracle; the old code-point
 * decoder of the request errors is a second one. */
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "common/utf8.h"

/* The decoder the request errors had: decode the code point, then reject
 * overlong forms, surrogates and anything past U+10FFFF. */
static size_t ref_seq(const unsigned char *s, size_t n)
{
    unsigned c = s[0], cp;
    size_t len;
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF) {
        len = 2;
        cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        cp = c & 0x07;
    } else {
        return 0;
    }
    if (len > n)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || cp > 0x10FFFF ||
        (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return len;
}

static bool jansson_valid(const char *s, size_t n)
{
    json_t *j = json_stringn(s, n);
    json_decref(j);
    return j != NULL;
}

static void test_table(void **state)
{
    (void)state;
    static const struct {
        const char *s;
        size_t n, want;
    } rows[] = {
        {"a", 1, 1}, {"\0", 1, 1}, {"\x7f", 1, 1},
        /* two bytes: C2..DF; C0, C1 only ever start an overlong form */
        {"\xc2\x80", 2, 2}, {"\xdf\xbf", 2, 2}, {"\xc3\xa9", 2, 2},
        {"\xc0\x80", 2, 0}, {"\xc0\xaf", 2, 0}, {"\xc1\xbf", 2, 0},
        /* three bytes: E0 needs A0.., ED stops at 9F (U+D800.. are surrogates) */
        {"\xe0\xa0\x80", 3, 3}, {"\xe0\x80\x80", 3, 0}, {"\xe0\x9f\xbf", 3, 0},
        {"\xe2\x82\xac", 3, 3}, {"\xed\x9f\xbf", 3, 3}, {"\xed\xa0\x80", 3, 0},
        {"\xed\xbf\xbf", 3, 0}, {"\xee\x80\x80", 3, 3}, {"\xef\xbf\xbf", 3, 3},
        /* four bytes: F0 needs 90.., F4 stops at 8F (U+10FFFF), F5.. never */
        {"\xf0\x90\x80\x80", 4, 4}, {"\xf0\x80\x80\x80", 4, 0}, {"\xf0\x8f\xbf\xbf", 4, 0},
        {"\xf0\x9f\x98\x80", 4, 4}, {"\xf4\x8f\xbf\xbf", 4, 4}, {"\xf4\x90\x80\x80", 4, 0},
        {"\xf5\x80\x80\x80", 4, 0}, {"\xf8\x88\x80\x80\x80", 5, 0}, {"\xff", 1, 0},
        {"\xfe", 1, 0},
        /* stray continuation bytes */
        {"\x80", 1, 0}, {"\xbf", 1, 0},
        /* cut by the end of the bytes readable */
        {"\xc3", 1, 0}, {"\xe2\x82", 2, 0}, {"\xf0\x9f\x98", 3, 0}, {"\xe2\x82\xac", 2, 0},
        /* a continuation byte missing in the middle */
        {"\xc3\x28", 2, 0}, {"\xe2\x28\xa1", 3, 0}, {"\xe2\x82\x28", 3, 0},
        {"\xf0\x9f\x28\x80", 4, 0}, {"\xf0\x9f\x98\x28", 4, 0},
        /* only the sequence at s counts */
        {"\xc3\xa9\xff", 3, 2}, {"a\xff", 2, 1},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        const unsigned char *s = (const unsigned char *)rows[i].s;
        size_t got = sw_utf8_seq(s, rows[i].n);
        if (got != rows[i].want)
            fail_msg("row %zu: %zu, expected %zu", i, got, rows[i].want);
        assert_int_equal(ref_seq(s, rows[i].n), rows[i].want);
    }
}

/* Every lead byte with every second and third byte, and every fourth byte
 * from a set of edges: the same verdict as the old decoder and jansson. */
static void test_exhaustive(void **state)
{
    (void)state;
    static const unsigned char fourth[] = {0x00, 0x41, 0x7f, 0x80, 0x9f, 0xa0, 0xbf, 0xc0, 0xff};
    unsigned char b[4];
    for (unsigned c = 0x80; c < 0x100; c++) {
        for (unsigned d = 0; d < 0x100; d++) {
            for (unsigned e = 0; e < 0x100; e++) {
                for (size_t f = 0; f < sizeof fourth; f++) {
                    if (c < 0xF0 && f)
                        break;  /* three bytes decide: no need to vary the fourth */
                    b[0] = (unsigned char)c;
                    b[1] = (unsigned char)d;
                    b[2] = (unsigned char)e;
                    b[3] = fourth[f];
                    size_t got = sw_utf8_seq(b, 4), ref = ref_seq(b, 4);
                    if (got != ref)
                        fail_msg("%02x %02x %02x %02x: %zu, the decoder %zu", c, d, e, fourth[f],
                                 got, ref);
                    if (got && (d & 1) == 0 && (e & 3) == 0)
                        assert_true(jansson_valid((const char *)b, got));
                    if (!got && c >= 0xC2 && c <= 0xF4 && e == 0x80)
                        assert_false(jansson_valid((const char *)b, c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4));
                }
            }
        }
    }
}

/* Whole buffers of random bytes biased towards UTF-8: sw_utf8_valid says
 * what jansson says. */
static void test_valid_random(void **state)
{
    (void)state;
    static const char *const pieces[] = {
        "a", "\"", "\0", "\x7f", "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80", "\xef\xbf\xbf",
        "\xf4\x8f\xbf\xbf", "\x80", "\xc3", "\xe2\x82", "\xed\xa0\x80", "\xc0\xaf", "\xff",
        "\xf4\x90\x80\x80", "\xe0\x9f\xbf",
    };
    static const size_t plen[] = {1, 1, 1, 1, 2, 3, 4, 3, 4, 1, 1, 2, 3, 2, 1, 4, 3};
    srand(27);
    for (int round = 0; round < 20000; round++) {
        char buf[64];
        size_t n = 0;
        int k = rand() % 8;
        for (int i = 0; i < k; i++) {
            size_t p = (size_t)rand() % (round % 2 ? 9 : sizeof pieces / sizeof pieces[0]);
            memcpy(buf + n, pieces[p], plen[p]);
            n += plen[p];
        }
        if (sw_utf8_valid(buf, n) != jansson_valid(buf, n))
            fail_msg("round %d: sw_utf8_valid %d, jansson %d", round, sw_utf8_valid(buf, n),
                     jansson_valid(buf, n));
    }
    assert_true(sw_utf8_valid("", 0));
    assert_true(sw_utf8_valid("a\0b", 3));
}

static void test_trim(void **state)
{
    (void)state;
    static const struct {
        const char *s;
        size_t len, want;
    } rows[] = {
        {"", 0, 0}, {"abc", 3, 3}, {"ab\xc3", 3, 2}, {"ab\xc3\xa9", 4, 4}, {"a\xe2\x82", 3, 1},
        {"a\xe2", 2, 1}, {"a\xe2\x82\xac", 4, 4}, {"\xf0\x9f\x98", 3, 0},
        {"\xf0\x9f\x98\x80", 4, 4}, {"x\xf0\x9f", 3, 1},
        /* continuation bytes only: left alone (only the last four are looked at) */
        {"\x80\x80\x80\x80\x80", 5, 5},
        /* a last byte that cannot start a sequence goes as a cut one would */
        {"a\xff", 2, 1},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        size_t got = sw_utf8_trim(rows[i].s, rows[i].len);
        if (got != rows[i].want)
            fail_msg("row %zu: %zu, expected %zu", i, got, rows[i].want);
    }
}

static void test_sanitize(void **state)
{
    (void)state;
    char s[] = "a\xff" "b\xc0\xaf" "c\xed\xa0\x80" "d\xc3\xa9" "e\xf0\x9f\x98\x80" "\xe2\x82";
    size_t n = sizeof s - 1;
    sw_utf8_sanitize(s, n);
    assert_int_equal(strlen(s), n);
    assert_string_equal(s, "a?b??c???d\xc3\xa9" "e\xf0\x9f\x98\x80??");
    assert_true(sw_utf8_valid(s, n));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_exhaustive),
        cmocka_unit_test(test_valid_random),
        cmocka_unit_test(test_trim),
        cmocka_unit_test(test_sanitize),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
