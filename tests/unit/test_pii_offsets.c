/* Unit tests of the pattern engine under the detectors: a value is found
 * wherever it sits in a text, at every byte offset and with every length of
 * what follows it, for the built-in types and a custom regex. (The AVX-512
 * scan of Debian 12's vectorscan misses short patterns that start at offset
 * 64 or later; src/pii/hsx.h says how Spillway avoids it.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/err.h"
#include "pii/pii.h"

struct found { int type; size_t start, len, n; };

static int on_span(void *ud, const struct sw_pii_span *sp)
{
    struct found *f = ud;
    if (f->n++ == 0) {
        f->type = sp->type;
        f->start = sp->start;
        f->len = sp->len;
    }
    return 0;
}

/* value at offsets 0..199 of a text of prose, followed by 0..80 bytes of
 * prose: found once, exactly. */
static void check_everywhere(const struct sw_pii_engine *e, const char *value, int type)
{
    static const char prose[] =
        "the quarterly report was sent on time and everyone agreed it looked fine "
        "although the figures for the north region still need a second look from "
        "finance before the board meets again next month to decide on the budget ";
    char t[512];
    size_t vl = strlen(value), misses = 0, tries = 0;
    for (size_t pre = 0; pre < 200; pre++)
        for (size_t post = 0; post <= 80; post += 5) {
            memcpy(t, prose, pre);
            if (pre)
                t[pre - 1] = ' ';
            memcpy(t + pre, value, vl);
            t[pre + vl] = ' ';
            memcpy(t + pre + vl + 1, prose, post);
            size_t n = pre + vl + 1 + post;
            struct found f = {0};
            assert_int_equal(sw_pii_scan_text(e, t, n, on_span, &f), SW_OK);
            tries++;
            if (f.n != 1 || f.type != type || f.start != pre || f.len != vl) {
                if (misses++ < 3)
                    fprintf(stderr, "'%s' at %zu, %zu after: %zu found, first %zu+%zu type %d\n",
                            value, pre, post, f.n, f.start, f.len, f.type);
            }
        }
    if (misses)
        fail_msg("'%s' missed or wrong in %zu of %zu placements", value, misses, tries);
}

static void test_builtin_types_at_every_offset(void **state)
{
    (void)state;
    struct sw_pii_engine *e;
    char err[256];
    assert_int_equal(sw_pii_engine_new(NULL, 0, &e, err, sizeof err), SW_OK);
    check_everywhere(e, "jan.devries@ziggo.nl", SW_PII_EMAIL);
    check_everywhere(e, "536-22-8147", SW_PII_SSN);
    check_everywhere(e, "+31 6 4127 9035", SW_PII_PHONE);
    check_everywhere(e, "4539 1488 0343 6467", SW_PII_CARD);
    check_everywhere(e, "NL91 ABNA 0417 1643 00", SW_PII_IBAN);
    check_everywhere(e, "192.168.14.201", SW_PII_IPV4);
    check_everywhere(e, "AKIAQYLPMN5HHHFPZAM2", SW_PII_SECRET);
    sw_pii_engine_free(e);
}

static void test_custom_regex_at_every_offset(void **state)
{
    (void)state;
    struct sw_pii_engine *e;
    char err[256];
    const struct sw_pii_custom c[] = {{"employee_id", "E[0-9]{6}", NULL}};
    assert_int_equal(sw_pii_engine_new(c, 1, &e, err, sizeof err), SW_OK);
    check_everywhere(e, "E204718", SW_PII_CUSTOM_BASE);
    sw_pii_engine_free(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_builtin_types_at_every_offset),
        cmocka_unit_test(test_custom_regex_at_every_offset),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
