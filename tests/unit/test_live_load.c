/* Unit tests of the live state's load signal (src/state/live.c: freshness,
 * staleness by age and by a failing poll, outside load from the server's
 * counts, the larger of two samples, saturation) and of the worst-case spend
 * reservation of a claim (src/state/claim.c) under a cap. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "state/claim.h"
#include "state/live.h"

static const char yaml[] =
    "listen: \"127.0.0.1:0\"\n"
    "backends:\n"
    "  - {name: edge, tier: local, url: \"http://127.0.0.1:9001\", model: m, slots: 4,\n"
    "     load: {source: llamacpp, poll_ms: 100}}\n"
    "  - {name: plain, tier: local, url: \"http://127.0.0.1:9002\", model: m, slots: 4}\n"
    "  - {name: cloud, tier: cloud, url: \"http://127.0.0.1:9003\", model: c,\n"
    "     max_output_tokens: 1000, price: {input_usd_per_mtok: 10, output_usd_per_mtok: 20}}\n"
    "models:\n"
    "  - {name: chat, backends: [edge, plain, cloud]}\n"
    "routing:\n"
    "  spend: {cap_usd: 100}\n";

enum { EDGE, PLAIN, CLOUD };
#define T0 1000000

struct fx {
    struct sw_live_shared *g;
    struct sw_live *live;
};

static int setup(void **state)
{
    struct sw_config *cfg = NULL;
    struct sw_config_errors errs;
    int err = sw_config_parse("load.yaml", yaml, strlen(yaml), NULL, NULL, &cfg, &errs);
    for (size_t i = 0; i < errs.n; i++)
        print_error("config: %s\n", errs.msgs[i]);
    sw_config_errors_free(&errs);
    if (err)
        return -1;
    struct fx *f = test_calloc(1, sizeof *f);
    f->g = sw_live_shared_new(cfg, T0, 1700000000000LL);
    f->live = f->g ? sw_live_new(cfg, f->g, NULL, NULL, T0) : NULL;
    sw_config_unref(cfg);
    if (!f->live)
        return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    sw_live_unref(f->live);
    sw_live_shared_free(f->g);
    test_free(f);
    return 0;
}

static void test_freshness(void **state)
{
    struct sw_live *l = ((struct fx *)*state)->live;
    /* No sample yet: stale, no outside load. A backend without a source is
     * never "stale" (it has no signal to lose). */
    assert_true(sw_live_load_stale(l, EDGE, T0));
    assert_false(sw_live_load_stale(l, PLAIN, T0));
    assert_true(sw_live_outside_load(l, EDGE, T0) == 0);

    sw_live_on_load(l, EDGE, T0, 3, 2, false, 0, NULL);
    assert_false(sw_live_load_stale(l, EDGE, T0));
    assert_true(sw_live_outside_load(l, EDGE, T0) == 5);
    /* 4 polls (400 ms) old still counts; a millisecond more does not. */
    assert_true(sw_live_outside_load(l, EDGE, T0 + 400) == 5);
    assert_false(sw_live_load_stale(l, EDGE, T0 + 400));
    assert_true(sw_live_outside_load(l, EDGE, T0 + 401) == 0);
    assert_true(sw_live_load_stale(l, EDGE, T0 + 401));

    /* A failing poll makes it stale at once, whatever the age. */
    sw_live_on_load(l, EDGE, T0 + 500, 3, 2, false, 0, NULL);
    sw_live_on_load(l, EDGE, T0 + 510, 0, 0, false, 0, "GET /metrics answered 500");
    assert_true(sw_live_load_stale(l, EDGE, T0 + 510));
    assert_true(sw_live_outside_load(l, EDGE, T0 + 510) == 0);
    assert_string_equal(l->b[EDGE]->load.error, "GET /metrics answered 500");

    /* The view carries it: the estimate sees the outside work. */
    sw_live_on_load(l, EDGE, T0 + 600, 4, 0, false, 0, NULL);
    struct sw_live_snapshot snap;
    sw_live_snapshot(l, &l->cfg->models[0], T0 + 600, &snap);
    assert_true(snap.backends[0].outside_load == 4);
    assert_true(snap.backends[1].outside_load == 0);
    assert_true(snap.backends[2].max_output_tokens == 1000);
}

static void test_outside_arithmetic(void **state)
{
    struct sw_live *l = ((struct fx *)*state)->live;
    /* Spillway had 2 in flight when the poll went out: the server's 5 are 3
     * of others. Never below 0. */
    sw_live_on_load(l, EDGE, T0, 4, 1, false, 2, NULL);
    assert_true(sw_live_outside_load(l, EDGE, T0) == 3);
    /* A dip (one of ours still on its way) is not believed for one sample... */
    sw_live_on_load(l, EDGE, T0 + 100, 2, 0, false, 2, NULL);
    assert_true(sw_live_outside_load(l, EDGE, T0 + 100) == 3);
    /* ...but a second one is. */
    sw_live_on_load(l, EDGE, T0 + 200, 2, 0, false, 2, NULL);
    assert_true(sw_live_outside_load(l, EDGE, T0 + 200) == 0);
    /* A rise counts at once. */
    sw_live_on_load(l, EDGE, T0 + 300, 9, 0, false, 1, NULL);
    assert_true(sw_live_outside_load(l, EDGE, T0 + 300) == 8);
    /* Saturated (Ollama's 503): the slots count as taken. */
    sw_live_on_load(l, EDGE, T0 + 400, 0, 0, true, 0, NULL);
    assert_true(sw_live_outside_load(l, EDGE, T0 + 400) == 4);
}

/* Under the cap a claim on a cloud without max_tokens reserves
 * max_output_tokens; with max_tokens, what was asked for. */
static void test_worst_case_reservation(void **state)
{
    struct sw_live *l = ((struct fx *)*state)->live;
    struct sw_route_facts f = {.prompt_tokens_est = 100, .max_tokens = 256};
    struct sw_claim c = {0};
    assert_int_equal(sw_claim_take(l, CLOUD, &f, T0, &c), SW_CLAIM_GRANTED);
    /* 100 x $10 + 1000 x $20 per M */
    assert_true(sw_live_spend_usd(l, T0) > 0.021 - 1e-12 && sw_live_spend_usd(l, T0) < 0.021 + 1e-12);
    sw_claim_settle(l, &c, SW_CLAIM_NEUTRAL, 0, 0, -1, 0, 0, 0, -1, T0);
    assert_true(sw_live_spend_usd(l, T0) == 0);
    f.max_tokens_given = true;
    assert_int_equal(sw_claim_take(l, CLOUD, &f, T0, &c), SW_CLAIM_GRANTED);
    /* 100 x $10 + 256 x $20 per M */
    assert_true(sw_live_spend_usd(l, T0) > 0.00612 - 1e-12 && sw_live_spend_usd(l, T0) < 0.00612 + 1e-12);
    sw_claim_settle(l, &c, SW_CLAIM_NEUTRAL, 0, 0, -1, 0, 0, 0, -1, T0);
    /* No cap: the estimate as before. */
    l->g->spend_cap_usd = 0;
    f.max_tokens_given = false;
    assert_int_equal(sw_claim_take(l, CLOUD, &f, T0, &c), SW_CLAIM_GRANTED);
    assert_true(sw_live_spend_usd(l, T0) > 0.00612 - 1e-12 && sw_live_spend_usd(l, T0) < 0.00612 + 1e-12);
    sw_claim_settle(l, &c, SW_CLAIM_NEUTRAL, 0, 0, -1, 0, 0, 0, -1, T0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_freshness, setup, teardown),
        cmocka_unit_test_setup_teardown(test_outside_arithmetic, setup, teardown),
        cmocka_unit_test_setup_teardown(test_worst_case_reservation, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
