/* obs/tracectx.h: traceparent and tracestate by the W3C Trace Context
 * rules, table-driven, and the sampling decision (ratio on the trace id,
 * parent-based). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "obs/tracectx.h"

#define TID "0af7651916cd43dd8448eb211c80319c"
#define PID "b7ad6b7169203331"

static void test_traceparent(void **state)
{
    (void)state;
    static const struct {
        const char *in;
        bool ok;
        unsigned flags;
    } rows[] = {
        {"00-" TID "-" PID "-01", true, 1},
        {"00-" TID "-" PID "-00", true, 0},
        {"00-" TID "-" PID "-09", true, 9},         /* unknown flags kept, sampled read */
        {" \t00-" TID "-" PID "-01\t ", true, 1},   /* optional whitespace around */
        {"cc-" TID "-" PID "-01", true, 1},         /* a later version: its first fields */
        {"cc-" TID "-" PID "-01-what-the-future-holds", true, 1},
        {"cc-" TID "-" PID "-01x", false, 0},       /* a later version: 56th must be '-' */
        {"00-" TID "-" PID "-01-", false, 0},       /* version 00 is exactly 55 */
        {"ff-" TID "-" PID "-01", false, 0},        /* version ff is invalid */
        {"0g-" TID "-" PID "-01", false, 0},
        {"00-0AF7651916CD43DD8448EB211C80319C-" PID "-01", false, 0}, /* upper case */
        {"00-" TID "-B7AD6B7169203331-01", false, 0},
        {"00-" TID "-" PID "-0A", false, 0},
        {"00-00000000000000000000000000000000-" PID "-01", false, 0}, /* zero trace id */
        {"00-" TID "-0000000000000000-01", false, 0},                 /* zero parent */
        {"00_" TID "-" PID "-01", false, 0},
        {"00-" TID "_" PID "-01", false, 0},
        {"00-" TID "-" PID "_01", false, 0},
        {"00-" TID "-" PID "-1", false, 0},
        {"00-0af7651916cd43dd8448eb211c80319-" PID "-01", false, 0},  /* short id */
        {"00-" TID "-b7ad6b716920333-01", false, 0},
        {"", false, 0},
        {"00", false, 0},
        {"00-" TID "-" PID "-0\x01", false, 0},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        struct sw_traceparent t;
        memset(&t, 0x5a, sizeof t);
        bool ok = sw_traceparent_parse(rows[i].in, strlen(rows[i].in), &t);
        if (ok != rows[i].ok)
            fail_msg("row %zu (%s): got %d", i, rows[i].in, ok);
        if (!ok)
            continue;
        assert_int_equal(t.flags, rows[i].flags);
        char hex[33];
        sw_trace_hex(t.trace_id, 16, hex);
        assert_string_equal(hex, TID);
        sw_trace_hex(t.parent_id, 8, hex);
        assert_string_equal(hex, PID);
    }
}

static void test_format(void **state)
{
    (void)state;
    struct sw_traceparent t;
    assert_true(sw_traceparent_parse("00-" TID "-" PID "-01", 55, &t));
    char out[SW_TRACEPARENT_LEN + 1];
    sw_traceparent_format(t.trace_id, t.parent_id, 0, out);
    assert_string_equal(out, "00-" TID "-" PID "-00");
    sw_traceparent_format(t.trace_id, t.parent_id, SW_TRACE_FLAG_SAMPLED, out);
    assert_string_equal(out, "00-" TID "-" PID "-01");
}

static void rep(char *out, char c, size_t n)
{
    memset(out, c, n);
    out[n] = '\0';
}

static void test_tracestate(void **state)
{
    (void)state;
    static const struct {
        const char *in;
        bool ok;
        const char *out;
    } rows[] = {
        {"rojo=00f067aa0ba902b7,congo=t61rcWkgMzE", true, "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"},
        {"  a=1 ,\tb=2  ", true, "a=1,b=2"},
        {"a=1,,b=2,", true, "a=1,b=2"},             /* empty members dropped */
        {"", true, ""},
        {" , ", true, ""},
        {"t@sys=1", true, "t@sys=1"},
        {"0t@sys=1", true, "0t@sys=1"},             /* a tenant may start with a digit */
        {"a-b_c*d/e=x y", true, "a-b_c*d/e=x y"},   /* inner space in a value */
        {"a=!\"#$%&'()*+-./09:;<>?@AZ[\\]^_`az{|}~", true, "a=!\"#$%&'()*+-./09:;<>?@AZ[\\]^_`az{|}~"},
        {"A=1", false, ""},                         /* upper-case key */
        {"1a=1", false, ""},                        /* a simple key starts with a letter */
        {"a=1,a=2", false, ""},                     /* repeated key */
        {"a", false, ""},
        {"=1", false, ""},
        {"a=", false, ""},                          /* empty value */
        {"a=1 2 ", true, "a=1 2"},                  /* trailing OWS is not the value's */
        {"a=x=y", false, ""},
        {"a=\x7f", false, ""},
        {"a=\xc3\xa9", false, ""},                  /* non-ASCII */
        {"t@=1", false, ""},
        {"@s=1", false, ""},
        {"t@S=1", false, ""},
        {"t@1s=1", false, ""},                      /* a system starts with a letter */
        {"a=1,b", false, ""},                       /* one bad member drops them all */
    };
    char out[SW_TRACESTATE_MAX + 1];
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        bool ok = sw_tracestate_parse(rows[i].in, strlen(rows[i].in), out, sizeof out);
        if (ok != rows[i].ok || strcmp(out, rows[i].out))
            fail_msg("row %zu (%s): got %d \"%s\"", i, rows[i].in, ok, out);
    }
}

static void test_tracestate_bounds(void **state)
{
    (void)state;
    char in[4096], k[300], v[300], out[SW_TRACESTATE_MAX + 1];
    /* keys: simple up to 256, tenant up to 241, system up to 14 */
    rep(k, 'k', 256);
    snprintf(in, sizeof in, "%s=1", k);
    assert_true(sw_tracestate_parse(in, strlen(in), out, sizeof out));
    rep(k, 'k', 257);
    snprintf(in, sizeof in, "%s=1", k);
    assert_false(sw_tracestate_parse(in, strlen(in), out, sizeof out));
    rep(k, 't', 241);
    rep(v, 's', 14);
    snprintf(in, sizeof in, "%s@%s=1", k, v);
    assert_true(sw_tracestate_parse(in, strlen(in), out, sizeof out));
    rep(v, 's', 15);
    snprintf(in, sizeof in, "%s@%s=1", k, v);
    assert_false(sw_tracestate_parse(in, strlen(in), out, sizeof out));
    rep(k, 't', 242);
    snprintf(in, sizeof in, "%s@s=1", k);
    assert_false(sw_tracestate_parse(in, strlen(in), out, sizeof out));
    /* values up to 256 */
    rep(v, 'v', 256);
    snprintf(in, sizeof in, "a=%s", v);
    assert_true(sw_tracestate_parse(in, strlen(in), out, sizeof out));
    rep(v, 'v', 257);
    snprintf(in, sizeof in, "a=%s", v);
    assert_false(sw_tracestate_parse(in, strlen(in), out, sizeof out));
    /* 32 members, not 33 */
    size_t n = 0;
    for (int i = 0; i < 32; i++)
        n += (size_t)snprintf(in + n, sizeof in - n, "%sk%d=v", i ? "," : "", i);
    assert_true(sw_tracestate_parse(in, n, out, sizeof out));
    assert_string_equal(out, in);
    snprintf(in + n, sizeof in - n, ",k32=v");
    assert_false(sw_tracestate_parse(in, strlen(in), out, sizeof out));
    assert_string_equal(out, "");
    /* the whole value at most SW_TRACESTATE_MAX bytes */
    rep(v, 'v', 250);
    snprintf(in, sizeof in, "a=%s,b=%s", v, v); /* 505 */
    assert_true(sw_tracestate_parse(in, strlen(in), out, sizeof out));
    snprintf(in, sizeof in, "a=%s,b=%s,c=123", v, v); /* 511 */
    assert_true(sw_tracestate_parse(in, strlen(in), out, sizeof out));
    snprintf(in, sizeof in, "a=%s,b=%s,c=1234", v, v); /* 512 */
    assert_true(sw_tracestate_parse(in, strlen(in), out, sizeof out));
    snprintf(in, sizeof in, "a=%s,b=%s,c=12345", v, v); /* 513 */
    assert_false(sw_tracestate_parse(in, strlen(in), out, sizeof out));
}

/* xorshift64*: ids for the sampling counts (deterministic). */
static uint64_t next(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ull;
}

static void test_sampling(void **state)
{
    (void)state;
    uint8_t id[16] = {0};
    id[15] = 1;
    assert_false(sw_trace_sampled(id, 0, false, 0));
    assert_true(sw_trace_sampled(id, 1, false, 0));
    /* parent-based: the parent's flag decides, whatever the ratio */
    assert_true(sw_trace_sampled(id, 0, true, SW_TRACE_FLAG_SAMPLED));
    assert_false(sw_trace_sampled(id, 1, true, 0));
    assert_true(sw_trace_sampled(id, 0, true, 0x09));
    /* the ratio reads the last 7 bytes: the first 9 do not matter */
    uint8_t hi[16];
    memset(hi, 0xff, 9);
    memset(hi + 9, 0, 7);
    assert_true(sw_trace_sampled(hi, 0.001, false, 0));
    memset(hi + 9, 0xff, 7);
    assert_false(sw_trace_sampled(hi, 0.999, false, 0));
    static const double ratios[] = {0.01, 0.1, 0.25, 0.5, 0.9};
    uint64_t s = 88172645463325252ull;
    for (size_t r = 0; r < sizeof ratios / sizeof ratios[0]; r++) {
        const int n = 100000;
        int kept = 0;
        for (int i = 0; i < n; i++) {
            uint64_t a = next(&s), b = next(&s);
            memcpy(id, &a, 8);
            memcpy(id + 8, &b, 8);
            kept += sw_trace_sampled(id, ratios[r], false, 0);
        }
        /* within 5 standard deviations of n * ratio */
        double want = n * ratios[r], sd = __builtin_sqrt(n * ratios[r] * (1 - ratios[r]));
        if (kept < want - 5 * sd || kept > want + 5 * sd)
            fail_msg("ratio %g: kept %d of %d", ratios[r], kept, n);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_traceparent),
        cmocka_unit_test(test_format),
        cmocka_unit_test(test_tracestate),
        cmocka_unit_test(test_tracestate_bounds),
        cmocka_unit_test(test_sampling),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
