/* Unit tests of the learned service rates (src/route/ewma.c): priors, the
 * first sample replacing the prior, the update rule, guards, clamps and
 * convergence after a change of regime. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "route/ewma.h"

#define P SW_EWMA_PREFILL
#define D SW_EWMA_DECODE
#define O SW_EWMA_OUTPUT

static void test_priors(void **state)
{
    (void)state;
    struct sw_ewma e;
    static const double bad_alpha[] = {0, -0.5, 1.5, NAN};
    for (size_t i = 0; i < sizeof bad_alpha / sizeof bad_alpha[0]; i++) {
        sw_ewma_init(&e, bad_alpha[i]);
        assert_true(e.alpha == SW_EWMA_DEFAULT_ALPHA);
    }
    sw_ewma_init(&e, 1.0);
    assert_true(e.alpha == 1.0);
    sw_ewma_init(&e, 0.25);
    assert_true(e.prefill_ms_per_token == SW_EWMA_PRIOR_PREFILL_MS_PER_TOKEN);
    assert_true(e.decode_tps == SW_EWMA_PRIOR_DECODE_TPS);
    assert_true(e.output_tokens == SW_EWMA_PRIOR_OUTPUT_TOKENS);
    assert_int_equal(e.n_prefill + e.n_decode + e.n_output, 0);
}

/* One observation: the bits taken and the three averages afterwards, from a
 * fresh state with alpha 0.25 (so the first sample replaces the prior). */
struct obs_case {
    const char *name;
    long prompt;
    double ttft, rtt, decode;
    long out;
    unsigned took;
    double prefill, tps, outavg;
};

#define PRI_P SW_EWMA_PRIOR_PREFILL_MS_PER_TOKEN
#define PRI_D SW_EWMA_PRIOR_DECODE_TPS
#define PRI_O SW_EWMA_PRIOR_OUTPUT_TOKENS

static const struct obs_case obs_cases[] = {
    /* prefill: (530 - rtt 10 - one period at the 50 tokens/s just learned) / 1000 */
    {"everything", 1000, 530, 10, 2000, 101, P | D | O, 0.5, 50, 101},
    /* an rtt not below the ttft is not the request's: taken as 0, and 10 ms
     * is less than the first token's step (20 ms at 50 tokens/s) */
    {"rtt larger than ttft: counted as 0", 1000, 10, 20, 2000, 101, D | P | O,
     SW_EWMA_MIN_PREFILL_MS_PER_TOKEN, 50, 101},
    {"ttft equal to rtt: counted as 0", 1000, 10, 10, 2000, 101, D | P | O,
     SW_EWMA_MIN_PREFILL_MS_PER_TOKEN, 50, 101},
    {"slow health check: the ttft alone", 1000, 520, 900, 2000, 101, D | P | O, 0.5, 50, 101},
    {"zero ttft: no prefill", 1000, 0, 0, 0, 0, 0, PRI_P, PRI_D, PRI_O},
    /* no decode sample: the period is the prior's (20 tokens/s: 50 ms) */
    {"negative rtt counts as 0", 1000, 550, -50, 0, 0, P, 0.5, PRI_D, PRI_O},
    {"short prompt: no prefill", 31, 500, 0, 0, 0, 0, PRI_P, PRI_D, PRI_O},
    {"min prompt: prefill", 32, 114, 0, 0, 0, P, 2, PRI_D, PRI_O},
    {"first token alone: the fastest prefill", 100, 50, 0, 0, 0, P,
     SW_EWMA_MIN_PREFILL_MS_PER_TOKEN, PRI_D, PRI_O},
    {"zero prompt", 0, 500, 0, 0, 0, 0, PRI_P, PRI_D, PRI_O},
    {"negative prompt", -100, 500, 0, 0, 0, 0, PRI_P, PRI_D, PRI_O},
    {"NaN ttft", 1000, NAN, 0, 0, 0, 0, PRI_P, PRI_D, PRI_O},
    {"infinite ttft", 1000, INFINITY, 0, 0, 0, 0, PRI_P, PRI_D, PRI_O},
    {"one output token: no decode rate", 0, 0, 0, 500, 1, O, PRI_P, PRI_D, 1},
    {"zero decode time (non-streamed)", 0, 0, 0, 0, 50, O, PRI_P, PRI_D, 50},
    {"negative decode time", 0, 0, 0, -5, 50, O, PRI_P, PRI_D, 50},
    {"zero output", 0, 0, 0, 1000, 0, 0, PRI_P, PRI_D, PRI_O},
    {"absurdly fast decode is clamped", 0, 0, 0, 0.001, 1000001, D | O, PRI_P,
     SW_EWMA_MAX_DECODE_TPS, SW_EWMA_MAX_OUTPUT_TOKENS},
    {"absurdly slow decode is clamped", 0, 0, 0, 1e9, 2, D | O, PRI_P, SW_EWMA_MIN_DECODE_TPS, 2},
    {"absurdly slow prefill is clamped", 100, 1e9, 0, 0, 0, P, SW_EWMA_MAX_PREFILL_MS_PER_TOKEN,
     PRI_D, PRI_O},
    {"absurdly fast prefill is clamped", 1000000000, 1, 0, 0, 0, P,
     SW_EWMA_MIN_PREFILL_MS_PER_TOKEN, PRI_D, PRI_O},
};

static void test_observe_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof obs_cases / sizeof obs_cases[0]; i++) {
        const struct obs_case *c = &obs_cases[i];
        struct sw_ewma e;
        sw_ewma_init(&e, 0.25);
        unsigned took = sw_ewma_observe(&e, c->prompt, c->ttft, c->rtt, c->decode, c->out);
        if (took != c->took || e.prefill_ms_per_token != c->prefill || e.decode_tps != c->tps ||
            e.output_tokens != c->outavg) {
            print_error("%s: took %u want %u; prefill %.17g want %.17g; tps %.17g want %.17g; "
                        "out %.17g want %.17g\n", c->name, took, c->took, e.prefill_ms_per_token,
                        c->prefill, e.decode_tps, c->tps, e.output_tokens, c->outavg);
            fail();
        }
        assert_int_equal(e.n_prefill, (took & P) ? 1 : 0);
        assert_int_equal(e.n_decode, (took & D) ? 1 : 0);
        assert_int_equal(e.n_output, (took & O) ? 1 : 0);
    }
}

static void test_update_rule(void **state)
{
    (void)state;
    struct sw_ewma e;
    sw_ewma_init(&e, 0.25);
    /* first: replaces; then avg += 0.25 * (x - avg), exact in binary */
    /* 10 tps (a 100 ms period, taken out of the TTFT), 1 ms/tok, 11 out */
    sw_ewma_observe(&e, 100, 200, 0, 1000, 11);
    assert_true(e.prefill_ms_per_token == 1 && e.decode_tps == 10 && e.output_tokens == 11);
    sw_ewma_observe(&e, 100, 600, 0, 0, 51);         /* 5 ms/tok, 51 out, no decode sample */
    assert_true(e.prefill_ms_per_token == 2);        /* 1 + 0.25 * 4 */
    assert_true(e.output_tokens == 21);              /* 11 + 0.25 * 40 */
    sw_ewma_observe(&e, 0, 0, 0, 250, 51);           /* 200 tps, 51 out */
    assert_true(e.decode_tps == 57.5);               /* 10 + 0.25 * 190 */
    assert_true(e.output_tokens == 28.5);            /* 21 + 0.25 * 30 */
    /* a rejected sample leaves the average alone */
    assert_int_equal(sw_ewma_observe(&e, 100, -1, 0, -1, 0), 0);
    assert_true(e.prefill_ms_per_token == 2 && e.decode_tps == 57.5 && e.output_tokens == 28.5);
    /* min_prefill_tokens may be lowered after init */
    e.min_prefill_tokens = 1;
    assert_int_equal(sw_ewma_observe(&e, 2, 12 + 1000.0 / 57.5, 0, 0, 0), P);
    assert_float_equal(e.prefill_ms_per_token, 3, 1e-9);  /* 2 + 0.25 * (6 - 2) */
}

static void test_convergence(void **state)
{
    (void)state;
    struct sw_ewma e;
    sw_ewma_init(&e, 0.2);
    /* steady regime: 0.8 ms/token, 40 tps, 300 tokens out (+/- jitter) */
    for (int i = 0; i < 200; i++) {
        double j = (i % 2) ? 1.1 : 0.9;
        sw_ewma_observe(&e, 1000, 5 + 800 * j, 5, 299 * 1000.0 / (40 * j), (long)(300 * j));
    }
    assert_true(fabs(e.prefill_ms_per_token - 0.8) < 0.1);
    assert_true(fabs(e.decode_tps - 40) < 5);
    assert_true(fabs(e.output_tokens - 300) < 35);
    /* the machine slows down 4x: within 30 samples the estimate is within 1%
     * of the new regime (0.8^30 ~ 0.1%), and never overshoots */
    int n = 0;
    while (n < 100 && fabs(e.decode_tps - 10) > 0.1) {
        sw_ewma_observe(&e, 1000, 3305, 5, 299 * 1000.0 / 10, 300);
        assert_true(e.decode_tps >= 10 && e.prefill_ms_per_token <= 3.2 + 1e-9);
        n++;
    }
    assert_true(n <= 30);
    assert_true(fabs(e.prefill_ms_per_token - 3.2) < 0.05);
    /* one absurd sample moves it by at most alpha * (clamp - avg) */
    double before = e.prefill_ms_per_token;
    sw_ewma_observe(&e, 1000, 1e12, 0, 0, 0);
    assert_true(e.prefill_ms_per_token <=
                before + 0.2 * (SW_EWMA_MAX_PREFILL_MS_PER_TOKEN - before) + 1e-9);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_priors),
        cmocka_unit_test(test_observe_table),
        cmocka_unit_test(test_update_rule),
        cmocka_unit_test(test_convergence),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
