/* Unit tests of the token buckets (src/route/bucket.c) on a fake clock.
 * Refill is integer arithmetic (levels x 60000), so levels are compared with
 * ==: 60 rpm = 1 request per 1000 ms, 6000 tpm = 1 token per 10 ms. */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "route/bucket.h"

enum op { TAKE, CAN, REFUND, SETTLE, CANCEL, END };

struct step {
    enum op op;
    int64_t t_ms;
    long a, b;                  /* TAKE/CAN/REFUND/CANCEL: tokens; SETTLE: est, actual */
    int ok;                     /* TAKE/CAN: expected answer */
    double rpm, tpm;            /* levels after the step, as sw_bucket_*_available at t */
};

struct scenario {
    const char *name;
    long rpm_limit, tpm_limit;  /* per minute; <= 0 unlimited */
    struct step steps[16];
};

static const struct scenario scenarios[] = {
    {"starts full; takes both; refills continuously", 60, 6000,
     {{TAKE, 0, 1000, 0, 1, 59, 5000},
      {TAKE, 0, 5000, 0, 1, 58, 0},
      {CAN, 0, 1, 0, 0, 58, 0},          /* tokens exhausted */
      {CAN, 10, 1, 0, 1, 58.01, 1},      /* 10 ms: 1 token, 1/100 request */
      {CAN, 500, 50, 0, 1, 58.5, 50},
      {TAKE, 500, 51, 0, 0, 58.5, 50},   /* refused: nothing taken */
      {TAKE, 500, 50, 0, 1, 57.5, 0},
      {CAN, 60500, 6000, 0, 1, 60, 6000}, /* a minute later: capped at capacity */
      {END, 0, 0, 0, 0, 0, 0}}},
    {"request bucket alone refuses", 2, 6000,
     {{TAKE, 0, 1, 0, 1, 1, 5999},
      {TAKE, 0, 1, 0, 1, 0, 5998},
      {TAKE, 0, 1, 0, 0, 0, 5998},
      {TAKE, 15000, 1, 0, 0, 0.5, 6000},     /* 15 s of 2 rpm */
      {TAKE, 30000, 1, 0, 1, 0, 5999},
      {END, 0, 0, 0, 0, 0, 0}}},
    {"settle: fewer tokens used gives back, more takes more, clamped", 60, 6000,
     {{TAKE, 0, 4000, 0, 1, 59, 2000},
      {SETTLE, 0, 4000, 1000, 0, 59, 5000},   /* used 1000 of 4000 */
      {TAKE, 0, 5000, 0, 1, 58, 0},
      {SETTLE, 0, 5000, 9000, 0, 58, 0},      /* used 4000 more: debt of 4000 (reads 0) */
      {CAN, 40000, 1, 0, 0, 60, 0},           /* 40 s refilled the 4000 debt only */
      {CAN, 40010, 1, 0, 1, 60, 1},
      {SETTLE, 40010, 0, 100000, 0, 60, 0},   /* absurd: clamped to -6000 */
      {CAN, 100000, 1, 0, 0, 60, 0},          /* 59.99 s: -1 */
      {CAN, 100010, 1, 0, 0, 60, 0},          /* 0 */
      {CAN, 100020, 1, 0, 1, 60, 1},
      {REFUND, 100020, 1000000, 0, 0, 60, 6000}, /* clamped to capacity */
      {END, 0, 0, 0, 0, 0, 0}}},
    {"cancel gives back the request and its tokens", 60, 6000,
     {{TAKE, 0, 3000, 0, 1, 59, 3000},
      {CANCEL, 0, 3000, 0, 0, 60, 6000},
      {CANCEL, 0, 3000, 0, 0, 60, 6000},      /* never above capacity */
      {END, 0, 0, 0, 0, 0, 0}}},
    {"unlimited tokens: only requests count; level -1", 60, 0,
     {{TAKE, 0, 1000000000, 0, 1, 59, -1},
      {SETTLE, 0, 0, 5, 0, 59, -1},
      {END, 0, 0, 0, 0, 0, 0}}},
    {"unlimited both: always admits", 0, -5,
     {{TAKE, 0, 1000000000, 0, 1, -1, -1},
      {TAKE, 0, 1000000000, 0, 1, -1, -1},
      {END, 0, 0, 0, 0, 0, 0}}},
    {"more tokens than the capacity never admit", 60, 6000,
     {{CAN, 0, 6001, 0, 0, 60, 6000},
      {CAN, 1000000, 6001, 0, 0, 60, 6000},
      {CAN, 1000000, 6000, 0, 1, 60, 6000},
      {END, 0, 0, 0, 0, 0, 0}}},
    {"clock going backwards refills nothing", 60, 6000,
     {{TAKE, 1000, 6000, 0, 1, 59, 0},
      {CAN, 500, 1, 0, 0, 59, 0},
      {CAN, 1010, 1, 0, 1, 59.01, 1},
      {END, 0, 0, 0, 0, 0, 0}}},
};

static void run(const struct scenario *sc)
{
    struct sw_bucket b;
    sw_bucket_init(&b, sc->rpm_limit, sc->tpm_limit, 0);
    for (size_t i = 0; sc->steps[i].op != END; i++) {
        const struct step *st = &sc->steps[i];
        int got = -1;
        switch (st->op) {
        case TAKE: got = sw_bucket_take(&b, st->t_ms, st->a); break;
        case CAN: got = sw_bucket_can_admit(&b, st->t_ms, st->a); break;
        case REFUND: sw_bucket_refund(&b, st->t_ms, st->a); break;
        case SETTLE: sw_bucket_settle(&b, st->t_ms, st->a, st->b); break;
        case CANCEL: sw_bucket_cancel(&b, st->t_ms, st->a); break;
        case END: break;
        }
        double rpm = sw_bucket_rpm_available(&b, st->t_ms);
        double tpm = sw_bucket_tpm_available(&b, st->t_ms);
        bool ok_ok = !(st->op == TAKE || st->op == CAN) || got == st->ok;
        /* Exact: levels are integers / 60000, correctly rounded like the
         * decimal literals above. */
        if (!ok_ok || rpm != st->rpm || tpm != st->tpm) {
            print_error("%s: step %zu: ok %d want %d, rpm %.17g want %.17g, tpm %.17g want %.17g\n",
                        sc->name, i, got, st->ok, rpm, st->rpm, tpm, st->tpm);
            fail();
        }
    }
}

static void test_scenarios(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof scenarios / sizeof scenarios[0]; i++)
        run(&scenarios[i]);
}

static void test_exact_refill_arithmetic(void **state)
{
    (void)state;
    struct sw_bucket b;
    /* 600 rpm (1 per 100 ms) and 60000 tpm (1 per ms), drained at t = 0. */
    sw_bucket_init(&b, 600, 60000, 0);
    for (int i = 0; i < 600; i++)
        assert_true(sw_bucket_take(&b, 0, 100));
    assert_false(sw_bucket_take(&b, 0, 0));
    assert_true(sw_bucket_rpm_available(&b, 0) == 0);
    assert_true(sw_bucket_tpm_available(&b, 0) == 0);
    /* Refill in many small steps equals one big step: no drift (with
     * floating-point levels, 250 refills of 0.01 request miss 2.5). */
    for (int64_t t = 1; t <= 250; t++)
        (void)sw_bucket_can_admit(&b, t, 0);
    assert_true(sw_bucket_rpm_available(&b, 250) == 2.5);
    assert_true(sw_bucket_tpm_available(&b, 250) == 250);
    assert_int_equal(b.taken_total, 600);
    assert_int_equal(b.refused_total, 1);
    /* 7 rpm: 1 ms adds 7/60000 of a request; 60000 steps of 1 ms refill
     * exactly 7 requests, the 8th is not there. */
    sw_bucket_init(&b, 7, 0, 0);
    for (int i = 0; i < 7; i++)
        assert_true(sw_bucket_take(&b, 0, 0));
    for (int64_t t = 1; t < 60000; t++)
        assert_false(sw_bucket_rpm_available(&b, t) >= 7);
    assert_true(sw_bucket_rpm_available(&b, 60000) == 7);
    assert_true(sw_bucket_can_admit(&b, 60000, 0));
}

static void test_wait_ms(void **state)
{
    (void)state;
    struct sw_bucket b;
    sw_bucket_init(&b, 60, 6000, 0);
    assert_int_equal(sw_bucket_wait_ms(&b, 0, 6000), 0);
    assert_int_equal(sw_bucket_wait_ms(&b, 0, 6001), -1);
    assert_true(sw_bucket_take(&b, 0, 6000));
    assert_int_equal(sw_bucket_wait_ms(&b, 0, 100), 1000);   /* 100 tokens at 1 per 10 ms */
    assert_int_equal(sw_bucket_wait_ms(&b, 400, 100), 600);
    assert_int_equal(sw_bucket_wait_ms(&b, 1000, 100), 0);
    /* the request bucket is the slower one */
    sw_bucket_init(&b, 1, 6000, 0);
    assert_true(sw_bucket_take(&b, 0, 0));
    assert_int_equal(sw_bucket_wait_ms(&b, 0, 10), 60000);
    assert_int_equal(sw_bucket_wait_ms(&b, 59999, 10), 1);
    assert_true(sw_bucket_can_admit(&b, 60000, 10));
    /* unlimited */
    sw_bucket_init(&b, 0, 0, 0);
    assert_int_equal(sw_bucket_wait_ms(&b, 0, 1L << 40), 0);
}

/* Token counts from a client are huge at worst, never wrapped: LONG_MAX is
 * refused by the largest bucket (nothing taken), the largest request the
 * parser accepts (max_tokens 10000000 plus its prompt) is taken whole, and
 * settling or cancelling with extreme counts keeps the level within
 * [-capacity, capacity]. */
static void test_huge_tokens(void **state)
{
    (void)state;
    struct sw_bucket b;
    const double full = (double)SW_BUCKET_MAX_LIMIT;

    sw_bucket_init(&b, 60, SW_BUCKET_MAX_LIMIT, 0);
    assert_false(sw_bucket_can_admit(&b, 0, LONG_MAX));
    assert_false(sw_bucket_take(&b, 0, LONG_MAX));
    assert_false(sw_bucket_take(&b, 0, LONG_MAX - 1));
    assert_int_equal(b.refused_total, 2);
    assert_true(sw_bucket_tpm_available(&b, 0) == full);
    assert_true(sw_bucket_rpm_available(&b, 0) == 60);
    assert_int_equal(sw_bucket_wait_ms(&b, 0, LONG_MAX), -1);

    assert_true(sw_bucket_take(&b, 0, 10000000 + 500));
    assert_true(sw_bucket_tpm_available(&b, 0) == full - 10000500);
    /* used "LONG_MAX" tokens: the debt is clamped at -capacity, which two
     * minutes refill */
    sw_bucket_settle(&b, 0, 10000500, LONG_MAX);
    assert_true(sw_bucket_tpm_available(&b, 0) == 0);
    assert_false(sw_bucket_can_admit(&b, 60000, 1));    /* back to 0 after one minute */
    assert_true(sw_bucket_can_admit(&b, 120000, SW_BUCKET_MAX_LIMIT));
    /* estimated LONG_MAX, used none: gives back at most the capacity */
    assert_true(sw_bucket_take(&b, 120000, 1));
    sw_bucket_settle(&b, 120000, LONG_MAX, LONG_MIN);
    assert_true(sw_bucket_tpm_available(&b, 120000) == full);
    sw_bucket_cancel(&b, 120000, LONG_MAX);
    assert_true(sw_bucket_tpm_available(&b, 120000) == full);
    sw_bucket_refund(&b, 120000, LONG_MIN);
    assert_true(sw_bucket_tpm_available(&b, 120000) == 0);

    /* a small bucket too */
    sw_bucket_init(&b, 60, 6000, 0);
    assert_false(sw_bucket_take(&b, 0, LONG_MAX));
    assert_true(sw_bucket_tpm_available(&b, 0) == 6000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scenarios),
        cmocka_unit_test(test_exact_refill_arithmetic),
        cmocka_unit_test(test_wait_ms),
        cmocka_unit_test(test_huge_tokens),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
