/* Unit tests of the circuit breaker (src/route/breaker.c). Each scenario is a
 * script of steps on a fake clock: an operation at time t, then the state the
 * breaker must be in (and, for allow, its answer). */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "common/err.h"
#include "route/breaker.h"

enum op { FAIL, OK, ALLOW, RELEASE, STATE, RESET, END };

#define C SW_BREAKER_CLOSED
#define O SW_BREAKER_OPEN
#define H SW_BREAKER_HALF_OPEN

struct step {
    enum op op;
    int64_t t_ms;
    int64_t arg;                /* FAIL: retry_after_ms */
    enum sw_breaker_state want; /* state after the step (sw_breaker_state at t) */
    int allow;                  /* ALLOW: expected answer (0/1) */
};

struct scenario {
    const char *name;
    int threshold;              /* 0: defaults (5, 60 s, 30 s) */
    int64_t window_ms;
    int64_t cooldown_ms;
    struct step steps[24];      /* ends at END */
    uint64_t opened, closed, probes;
};

static const struct scenario scenarios[] = {
    {"five failures in the window open it; cooldown; probe success closes", 0, 0, 0,
     {{FAIL, 0, 0, C, 0}, {FAIL, 1000, 0, C, 0}, {FAIL, 2000, 0, C, 0}, {FAIL, 3000, 0, C, 0},
      {ALLOW, 3500, 0, C, 1},
      {FAIL, 4000, 0, O, 0},
      {ALLOW, 4001, 0, O, 0},
      {STATE, 33999, 0, O, 0},          /* cooldown 30 s from 4000 */
      {STATE, 34000, 0, H, 0},
      {ALLOW, 34000, 0, H, 1},          /* the probe */
      {ALLOW, 34001, 0, H, 0},          /* single probe */
      {OK, 35000, 0, C, 0},
      {ALLOW, 35001, 0, C, 1},
      {FAIL, 35002, 0, C, 0},           /* ring was cleared on close: 1 of 5 */
      {END, 0, 0, C, 0}},
     1, 1, 1},
    {"probe failure opens again for a fresh cooldown", 0, 0, 0,
     {{FAIL, 0, 0, C, 0}, {FAIL, 0, 0, C, 0}, {FAIL, 0, 0, C, 0}, {FAIL, 0, 0, C, 0},
      {FAIL, 0, 0, O, 0},
      {ALLOW, 30000, 0, H, 1},
      {FAIL, 31000, 0, O, 0},
      {STATE, 60999, 0, O, 0},
      {STATE, 61000, 0, H, 0},
      {ALLOW, 61000, 0, H, 1},
      {OK, 61500, 0, C, 0},
      {END, 0, 0, C, 0}},
     2, 1, 2},
    {"failures spread wider than the window never open it", 0, 0, 0,
     {{FAIL, 0, 0, C, 0}, {FAIL, 15000, 0, C, 0}, {FAIL, 30000, 0, C, 0},
      {FAIL, 45000, 0, C, 0},
      {FAIL, 60000, 0, C, 0},           /* oldest is exactly window_ms old: out */
      {FAIL, 61000, 0, O, 0},           /* 15000..61000: five within 60 s */
      {END, 0, 0, C, 0}},
     1, 0, 0},
    {"successes in CLOSED do not erase the sliding count", 0, 0, 0,
     {{FAIL, 0, 0, C, 0}, {OK, 1, 0, C, 0}, {FAIL, 2, 0, C, 0}, {OK, 3, 0, C, 0},
      {FAIL, 4, 0, C, 0}, {OK, 5, 0, C, 0}, {FAIL, 6, 0, C, 0}, {OK, 7, 0, C, 0},
      {FAIL, 8, 0, O, 0},
      {END, 0, 0, C, 0}},
     1, 0, 0},
    {"Retry-After longer than the cooldown is honoured", 0, 0, 0,
     {{FAIL, 0, 0, C, 0}, {FAIL, 0, 0, C, 0}, {FAIL, 0, 0, C, 0}, {FAIL, 0, 0, C, 0},
      {FAIL, 1000, 120000, O, 0},
      {STATE, 31000, 0, O, 0},
      {STATE, 120999, 0, O, 0},
      {STATE, 121000, 0, H, 0},
      {END, 0, 0, C, 0}},
     1, 0, 0},
    {"Retry-After seen on an earlier failure counts when it opens", 0, 0, 0,
     {{FAIL, 0, 90000, C, 0}, {FAIL, 0, 0, C, 0}, {FAIL, 0, 0, C, 0}, {FAIL, 0, 0, C, 0},
      {FAIL, 5000, 0, O, 0},
      {STATE, 89999, 0, O, 0},
      {STATE, 90000, 0, H, 0},
      {END, 0, 0, C, 0}},
     1, 0, 0},
    {"Retry-After shorter than the cooldown: the cooldown wins", 0, 0, 0,
     {{FAIL, 0, 0, C, 0}, {FAIL, 0, 0, C, 0}, {FAIL, 0, 0, C, 0}, {FAIL, 0, 0, C, 0},
      {FAIL, 0, 1000, O, 0},
      {STATE, 29999, 0, O, 0},
      {STATE, 30000, 0, H, 0},
      {END, 0, 0, C, 0}},
     1, 0, 0},
    {"Retry-After is capped at 10 minutes", 0, 0, 0,
     {{FAIL, 0, 0, C, 0}, {FAIL, 0, 0, C, 0}, {FAIL, 0, 0, C, 0}, {FAIL, 0, 0, C, 0},
      {FAIL, 0, 86400000, O, 0},
      {STATE, 599999, 0, O, 0},
      {STATE, 600000, 0, H, 0},
      {END, 0, 0, C, 0}},
     1, 0, 0},
    {"Retry-After on the failing probe", 0, 0, 0,
     {{FAIL, 0, 0, C, 0}, {FAIL, 0, 0, C, 0}, {FAIL, 0, 0, C, 0}, {FAIL, 0, 0, C, 0},
      {FAIL, 0, 0, O, 0},
      {ALLOW, 30000, 0, H, 1},
      {FAIL, 30000, 45000, O, 0},
      {STATE, 74999, 0, O, 0},
      {STATE, 75000, 0, H, 0},
      {END, 0, 0, C, 0}},
     2, 0, 1},
    {"late outcomes while OPEN: failure ignored unless its Retry-After is longer", 0, 0, 0,
     {{FAIL, 0, 0, C, 0}, {FAIL, 0, 0, C, 0}, {FAIL, 0, 0, C, 0}, {FAIL, 0, 0, C, 0},
      {FAIL, 0, 0, O, 0},
      {FAIL, 10000, 0, O, 0},           /* no extension */
      {OK, 11000, 0, O, 0},             /* ignored */
      {STATE, 30000, 0, H, 0},
      {END, 0, 0, C, 0}},
     1, 0, 0},
    {"late failure with a longer Retry-After extends OPEN", 0, 0, 0,
     {{FAIL, 0, 0, C, 0}, {FAIL, 0, 0, C, 0}, {FAIL, 0, 0, C, 0}, {FAIL, 0, 0, C, 0},
      {FAIL, 0, 0, O, 0},
      {FAIL, 10000, 60000, O, 0},
      {STATE, 69999, 0, O, 0},
      {STATE, 70000, 0, H, 0},
      {END, 0, 0, C, 0}},
     1, 0, 0},
    {"released probe frees the slot for another", 0, 0, 0,
     {{FAIL, 0, 0, C, 0}, {FAIL, 0, 0, C, 0}, {FAIL, 0, 0, C, 0}, {FAIL, 0, 0, C, 0},
      {FAIL, 0, 0, O, 0},
      {ALLOW, 30000, 0, H, 1},
      {ALLOW, 30001, 0, H, 0},
      {RELEASE, 30002, 0, H, 0},
      {ALLOW, 30003, 0, H, 1},
      {ALLOW, 30004, 0, H, 0},
      {OK, 30005, 0, C, 0},
      {END, 0, 0, C, 0}},
     1, 1, 2},
    {"release outside HALF_OPEN is a no-op", 0, 0, 0,
     {{RELEASE, 0, 0, C, 0},
      {FAIL, 0, 0, C, 0}, {FAIL, 0, 0, C, 0}, {FAIL, 0, 0, C, 0}, {FAIL, 0, 0, C, 0},
      {FAIL, 0, 0, O, 0},
      {RELEASE, 1, 0, O, 0},
      {ALLOW, 2, 0, O, 0},
      {END, 0, 0, C, 0}},
     1, 0, 0},
    {"reset closes an open breaker and clears the ring", 0, 0, 0,
     {{FAIL, 0, 0, C, 0}, {FAIL, 0, 0, C, 0}, {FAIL, 0, 0, C, 0}, {FAIL, 0, 0, C, 0},
      {FAIL, 0, 0, O, 0},
      {RESET, 1, 0, C, 0},
      {ALLOW, 2, 0, C, 1},
      {FAIL, 3, 0, C, 0}, {FAIL, 3, 0, C, 0}, {FAIL, 3, 0, C, 0}, {FAIL, 3, 0, C, 0},
      {FAIL, 3, 0, O, 0},
      {END, 0, 0, C, 0}},
     2, 0, 0},
    {"threshold 1 trips on the first failure", 1, 1000, 500,
     {{FAIL, 0, 0, O, 0},
      {STATE, 499, 0, O, 0},
      {ALLOW, 500, 0, H, 1},
      {OK, 600, 0, C, 0},
      {FAIL, 700, 0, O, 0},
      {END, 0, 0, C, 0}},
     2, 1, 1},
    {"custom threshold and window", 3, 10000, 2000,
     {{FAIL, 0, 0, C, 0}, {FAIL, 5000, 0, C, 0},
      {FAIL, 10000, 0, C, 0},           /* 0 fell out: 5000, 10000 */
      {FAIL, 14999, 0, O, 0},           /* 5000..14999 within 10 s */
      {STATE, 16998, 0, O, 0},
      {STATE, 16999, 0, H, 0},
      {END, 0, 0, C, 0}},
     1, 0, 0},
    {"outcome of a non-probe request in HALF_OPEN counts as the probe's", 0, 0, 0,
     {{FAIL, 0, 0, C, 0}, {FAIL, 0, 0, C, 0}, {FAIL, 0, 0, C, 0}, {FAIL, 0, 0, C, 0},
      {FAIL, 0, 0, O, 0},
      {OK, 30000, 0, C, 0},             /* an old stream finished fine */
      {END, 0, 0, C, 0}},
     1, 1, 0},
};

static void run(const struct scenario *sc)
{
    struct sw_breaker b;
    assert_int_equal(sw_breaker_init(&b, sc->threshold, sc->window_ms, sc->cooldown_ms), SW_OK);
    assert_int_equal(sw_breaker_state(&b, 0), SW_BREAKER_CLOSED);
    for (size_t i = 0; sc->steps[i].op != END; i++) {
        const struct step *st = &sc->steps[i];
        int got = -1;
        switch (st->op) {
        case FAIL: sw_breaker_on_failure(&b, st->t_ms, st->arg); break;
        case OK: sw_breaker_on_success(&b, st->t_ms); break;
        case ALLOW: got = sw_breaker_allow(&b, st->t_ms); break;
        case RELEASE: sw_breaker_release_probe(&b); break;
        case RESET: sw_breaker_reset(&b); break;
        case STATE: case END: break;
        }
        enum sw_breaker_state s = sw_breaker_state(&b, st->t_ms);
        if (s != st->want || (st->op == ALLOW && got != st->allow)) {
            print_error("%s: step %zu (t=%lld): state %d want %d, allow %d want %d\n", sc->name,
                        i, (long long)st->t_ms, (int)s, (int)st->want, got, st->allow);
            fail();
        }
    }
    assert_int_equal(b.opened_total, sc->opened);
    assert_int_equal(b.closed_total, sc->closed);
    assert_int_equal(b.probes_total, sc->probes);
}

static void test_scenarios(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof scenarios / sizeof scenarios[0]; i++)
        run(&scenarios[i]);
}

static void test_probe_free_and_rejected(void **state)
{
    (void)state;
    struct sw_breaker b;
    sw_breaker_init(&b, 2, 0, 1000);
    assert_false(sw_breaker_probe_free(&b, 0));
    sw_breaker_on_failure(&b, 0, 0);
    sw_breaker_on_failure(&b, 0, 0);
    assert_false(sw_breaker_probe_free(&b, 999));
    assert_false(sw_breaker_allow(&b, 999));
    assert_true(sw_breaker_probe_free(&b, 1000));
    assert_true(sw_breaker_allow(&b, 1000));
    assert_false(sw_breaker_probe_free(&b, 1000));
    assert_false(sw_breaker_allow(&b, 1001));
    assert_int_equal(b.rejected_total, 2);
    sw_breaker_release_probe(&b);
    assert_true(sw_breaker_probe_free(&b, 1002));
}

static void test_init_bounds(void **state)
{
    (void)state;
    struct sw_breaker b;
    assert_int_equal(sw_breaker_init(&b, 0, 0, 0), SW_OK);
    assert_int_equal(b.threshold, SW_BREAKER_DEFAULT_THRESHOLD);
    assert_int_equal(b.window_ms, SW_BREAKER_DEFAULT_WINDOW_MS);
    assert_int_equal(b.cooldown_ms, SW_BREAKER_DEFAULT_COOLDOWN_MS);
    assert_int_equal(sw_breaker_init(&b, SW_BREAKER_MAX_THRESHOLD, -1, -1), SW_OK);
    assert_int_equal(b.threshold, SW_BREAKER_MAX_THRESHOLD);
    assert_int_equal(sw_breaker_init(&b, SW_BREAKER_MAX_THRESHOLD + 1, 0, 0), SW_EINVAL);
    assert_int_equal(b.threshold, SW_BREAKER_DEFAULT_THRESHOLD);

    /* The largest ring fills and wraps without tripping early. */
    sw_breaker_init(&b, SW_BREAKER_MAX_THRESHOLD, 1000, 0);
    for (int i = 0; i < 10 * SW_BREAKER_MAX_THRESHOLD; i++) {
        sw_breaker_on_failure(&b, (int64_t)i * 20, 0); /* 50 per s: never 64 within 1 s */
        assert_int_equal(sw_breaker_state(&b, (int64_t)i * 20), SW_BREAKER_CLOSED);
    }
    for (int i = 0; i < SW_BREAKER_MAX_THRESHOLD - 1; i++)
        sw_breaker_on_failure(&b, 20000, 0);
    assert_int_equal(sw_breaker_state(&b, 20000), SW_BREAKER_CLOSED);
    sw_breaker_on_failure(&b, 20000, 0);
    assert_int_equal(sw_breaker_state(&b, 20000), SW_BREAKER_OPEN);
}

static void test_qualifies(void **state)
{
    (void)state;
    static const struct {
        int status, err;
        bool want;
    } t[] = {
        {200, SW_OK, false}, {400, SW_OK, false}, {401, SW_OK, false}, {404, SW_OK, false},
        {413, SW_OK, false}, {429, SW_OK, true},  {500, SW_OK, false}, {501, SW_OK, false},
        {502, SW_OK, true},  {503, SW_OK, true},  {504, SW_OK, true},  {529, SW_OK, true},
        {0, SW_ECONNECT, true},
        {0, SW_ETIMEOUT, true}, {0, SW_ECANCELED, false}, {0, SW_EPROTO, false},
        {503, SW_ECANCELED, false}, /* a transport error wins over a status */
        {200, SW_ETIMEOUT, true},   /* stalled mid-answer */
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        if (sw_breaker_qualifies(t[i].status, t[i].err) != t[i].want) {
            print_error("qualifies(%d, %d) != %d\n", t[i].status, t[i].err, t[i].want);
            fail();
        }
    }
}

/* Panic requests: admitted past an open breaker, bounded, and their answer
 * closes it at once; a failure restarts the cooldown. */
static void open_at(struct sw_breaker *b, int64_t t)
{
    sw_breaker_init(b, 1, 60000, 30000);
    sw_breaker_on_failure(b, t, 0);
    assert_int_equal(sw_breaker_state(b, t), O);
}

static void test_panic(void **state)
{
    (void)state;
    struct sw_breaker b;

    /* CLOSED: no panic (the normal path admits). */
    sw_breaker_init(&b, 1, 60000, 30000);
    assert_int_equal(sw_breaker_last_failure(&b), 0);
    assert_false(sw_breaker_panic_free(&b, 0));
    assert_false(sw_breaker_allow_panic(&b, 0));
    assert_int_equal(sw_breaker_open_until(&b, 0), 0);

    /* OPEN: bounded panic admissions; the open period is visible for ranking. */
    open_at(&b, 1000);
    assert_int_equal(sw_breaker_open_until(&b, 1000), 31000);
    assert_false(sw_breaker_allow(&b, 1001));
    for (int i = 0; i < SW_BREAKER_PANIC_MAX; i++)
        assert_true(sw_breaker_allow_panic(&b, 1001));
    assert_false(sw_breaker_panic_free(&b, 1001));
    assert_false(sw_breaker_allow_panic(&b, 1001));
    assert_int_equal(b.panic_total, SW_BREAKER_PANIC_MAX);
    sw_breaker_panic_end(&b, 1002, 1002, SW_BREAKER_NO_VERDICT);  /* frees one, no verdict */
    assert_int_equal(sw_breaker_state(&b, 1002), O);
    assert_true(sw_breaker_allow_panic(&b, 1002));

    /* An answer closes it at once, 29 s before the cooldown would have ended. */
    sw_breaker_panic_end(&b, 2000, 2000, SW_BREAKER_ANSWERED);
    assert_int_equal(sw_breaker_state(&b, 2000), C);
    assert_int_equal(b.closed_total, 1);
    assert_true(sw_breaker_allow(&b, 2000));
    /* The other panic requests still in flight end without reopening it. */
    assert_int_equal(sw_breaker_last_failure(&b), 1000);
    for (int i = 1; i < SW_BREAKER_PANIC_MAX; i++)
        sw_breaker_panic_end(&b, 2001, 2001, SW_BREAKER_ANSWERED);
    assert_int_equal(sw_breaker_state(&b, 2001), C);
    assert_int_equal(b.closed_total, 1);
    assert_int_equal(b.panic_out, 0);
    sw_breaker_panic_end(&b, 2002, 2002, SW_BREAKER_NO_VERDICT);   /* never below zero */
    assert_int_equal(b.panic_out, 0);

    /* A qualifying failure restarts the cooldown from now (never shortens it),
     * and every failure, even one ignored while OPEN, is the latest failure. */
    open_at(&b, 1000);
    assert_int_equal(sw_breaker_last_failure(&b), 1000);
    sw_breaker_on_failure(&b, 1500, 0);
    assert_int_equal(sw_breaker_last_failure(&b), 1500);
    assert_int_equal(sw_breaker_open_until(&b, 1500), 31000);
    assert_true(sw_breaker_allow_panic(&b, 5000));
    sw_breaker_panic_end(&b, 5000, 5000, SW_BREAKER_FAILED);
    assert_int_equal(sw_breaker_open_until(&b, 5000), 35000);
    assert_int_equal(sw_breaker_state(&b, 34999), O);
    assert_int_equal(sw_breaker_state(&b, 35000), H);
    sw_breaker_on_failure(&b, 35000, 0);   /* the probe fails: open until 65000 */
    assert_true(sw_breaker_allow_panic(&b, 36000));
    sw_breaker_panic_end(&b, 36000, 36000, SW_BREAKER_FAILED);
    assert_int_equal(sw_breaker_open_until(&b, 36000), 66000);
    sw_breaker_on_failure(&b, 36000, 100000); /* a longer Retry-After still extends it */
    assert_int_equal(sw_breaker_open_until(&b, 36000), 136000);
    assert_true(sw_breaker_allow_panic(&b, 37000));
    sw_breaker_panic_end(&b, 37000, 37000, SW_BREAKER_FAILED);
    assert_int_equal(sw_breaker_open_until(&b, 37000), 136000);

    /* HALF_OPEN with its probe out: panic still admits, the probe stays out. */
    open_at(&b, 0);
    assert_true(sw_breaker_allow(&b, 30000));         /* the probe */
    assert_false(sw_breaker_allow(&b, 30000));
    assert_int_equal(sw_breaker_open_until(&b, 30000), 0);
    assert_true(sw_breaker_allow_panic(&b, 30000));
    assert_false(sw_breaker_probe_free(&b, 30000));
    sw_breaker_panic_end(&b, 30100, 30100, SW_BREAKER_ANSWERED);
    assert_int_equal(sw_breaker_state(&b, 30100), C);

    /* An answer does not close it when another request failed on it since
     * the panic request was sent: it answers some and fails others. */
    open_at(&b, 0);
    assert_true(sw_breaker_allow_panic(&b, 100));
    sw_breaker_on_failure(&b, 150, 0);
    sw_breaker_panic_end(&b, 200, 100, SW_BREAKER_ANSWERED);
    assert_int_equal(sw_breaker_state(&b, 200), O);
    assert_int_equal(b.panic_out, 0);
    assert_true(sw_breaker_allow_panic(&b, 300));   /* sent after that failure: closes */
    sw_breaker_panic_end(&b, 400, 300, SW_BREAKER_ANSWERED);
    assert_int_equal(sw_breaker_state(&b, 400), C);

    /* Closed by a panic answer: on probation, one failure in the window
     * reopens it (threshold 3); once the window has passed it takes three. */
    sw_breaker_init(&b, 3, 10000, 30000);
    for (int i = 0; i < 3; i++)
        sw_breaker_on_failure(&b, 0, 0);
    assert_int_equal(sw_breaker_state(&b, 0), O);
    assert_true(sw_breaker_allow_panic(&b, 100));
    sw_breaker_panic_end(&b, 200, 100, SW_BREAKER_ANSWERED);
    assert_int_equal(sw_breaker_state(&b, 200), C);
    sw_breaker_on_failure(&b, 9000, 0);
    assert_int_equal(sw_breaker_state(&b, 9000), O);
    assert_true(sw_breaker_allow_panic(&b, 9100));
    sw_breaker_panic_end(&b, 9200, 9100, SW_BREAKER_ANSWERED);
    sw_breaker_on_failure(&b, 19300, 0);               /* probation over */
    sw_breaker_on_failure(&b, 19301, 0);
    assert_int_equal(sw_breaker_state(&b, 19301), C);
    sw_breaker_on_failure(&b, 19302, 0);
    assert_int_equal(sw_breaker_state(&b, 19302), O);

    /* reset keeps the in-flight panic count (those requests still end). */
    open_at(&b, 0);
    assert_true(sw_breaker_allow_panic(&b, 1));
    sw_breaker_reset(&b);
    assert_int_equal(b.panic_out, 1);
    sw_breaker_panic_end(&b, 2, 2, SW_BREAKER_FAILED);
    assert_int_equal(b.panic_out, 0);
    assert_int_equal(sw_breaker_state(&b, 2), C);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scenarios),
        cmocka_unit_test(test_probe_free_and_rejected),
        cmocka_unit_test(test_init_bounds),
        cmocka_unit_test(test_qualifies),
        cmocka_unit_test(test_panic),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
