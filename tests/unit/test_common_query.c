/* common/query.h: one parameter of a query string into a bounded buffer
 * (/admin/decisions?n=, /admin/series?window=, the simulator's ?n=). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "common/err.h"
#include "common/query.h"

static void test_table(void **state)
{
    (void)state;
    static const struct {
        const char *q, *name;
        int err;
        const char *want;
    } rows[] = {
        {"n=5", "n", SW_OK, "5"},
        {"a=1&n=5", "n", SW_OK, "5"},
        {"n=5&a=1", "n", SW_OK, "5"},
        {"N=5", "n", SW_OK, "5"},                 /* names compare without case */
        {"window=60", "WINDOW", SW_OK, "60"},
        {"n=1&n=2", "n", SW_OK, "1"},             /* the first one counts */
        {"nn=5", "n", SW_ENOTFOUND, ""},
        {"n5", "n", SW_ENOTFOUND, ""},
        {"n", "n", SW_ENOTFOUND, ""},             /* no '=': no parameter */
        {"n&n=3", "n", SW_OK, "3"},
        {"xn=1&n=2", "n", SW_OK, "2"},
        {"&&n=7&", "n", SW_OK, "7"},
        {"n=", "n", SW_OK, ""},
        {"n=2=3", "n", SW_OK, "2=3"},             /* the first '=' splits */
        {"n=%35", "n", SW_OK, "5"},               /* percent-decoded */
        {"n=%4a%4B", "n", SW_OK, "JK"},
        {"n=a+b", "n", SW_OK, "a b"},             /* '+' is a space */
        {"n=%2B1", "n", SW_OK, "+1"},
        {"n=%zz", "n", SW_OK, "%zz"},             /* not an escape: as it is */
        {"n=%4", "n", SW_OK, "%4"},
        {"n=%", "n", SW_OK, "%"},
        {"n=1%", "n", SW_OK, "1%"},
        {"%6e=5", "n", SW_ENOTFOUND, ""},         /* the name is not decoded */
        {"", "n", SW_ENOTFOUND, ""},
        {NULL, "n", SW_ENOTFOUND, ""},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        char out[16] = "junk";
        int err = sw_query_param(rows[i].q, rows[i].name, out, sizeof out);
        if (err != rows[i].err || strcmp(out, rows[i].want))
            fail_msg("row %zu (%s): %d \"%s\", expected %d \"%s\"", i,
                     rows[i].q ? rows[i].q : "NULL", err, out, rows[i].err, rows[i].want);
    }
}

/* The value must fit with its NUL; a longer one is refused, never cut. */
static void test_bounds(void **state)
{
    (void)state;
    char out[4] = "xyz";
    assert_int_equal(sw_query_param("n=123", "n", out, sizeof out), SW_OK);
    assert_string_equal(out, "123");
    assert_int_equal(sw_query_param("n=1234", "n", out, sizeof out), SW_ETOOBIG);
    assert_string_equal(out, "");
    /* decoded length counts: %31%32%33 is three bytes */
    assert_int_equal(sw_query_param("n=%31%32%33", "n", out, sizeof out), SW_OK);
    assert_string_equal(out, "123");
    assert_int_equal(sw_query_param("n=%31%32%33%34", "n", out, sizeof out), SW_ETOOBIG);
    assert_int_equal(sw_query_param("n=1", "n", out, 0), SW_ETOOBIG);
    char one[1] = "";
    assert_int_equal(sw_query_param("n=", "n", one, sizeof one), SW_OK);
    assert_int_equal(sw_query_param("n=1", "n", one, sizeof one), SW_ETOOBIG);
    /* a long query string: only the buffer is bounded, not the input */
    char q[5000];
    memset(q, 'a', sizeof q);
    memcpy(q, "x=", 2);
    memcpy(q + sizeof q - 6, "&n=42", 6);
    assert_int_equal(sw_query_param(q, "n", out, sizeof out), SW_OK);
    assert_string_equal(out, "42");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_bounds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
