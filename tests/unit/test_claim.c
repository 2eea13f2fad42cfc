/* Claiming and settling what an attempt holds (src/state/claim.c): every take
 * result, and every way a settle gives the bucket, the spend reservation,
 * the breaker's probe and the local slot back. A real sw_live on a parsed
 * config; the clock is a plain number. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/err.h"
#include "config/config.h"
#include "state/claim.h"
#include "state/live.h"

/* edge: 1 slot, 1 waiting place. cloud: 2 requests and 1000 tokens a
 * minute, priced. free: cloud without limits or price. Two qualifying
 * failures open a breaker for 1 s. */
static const char yaml[] =
    "listen: \"127.0.0.1:0\"\n"
    "backends:\n"
    "  - {name: edge, tier: local, url: \"http://127.0.0.1:9001\", model: m, slots: 1, queue_max: 1}\n"
    "  - name: cloud\n"
    "    tier: cloud\n"
    "    url: \"http://127.0.0.1:9002\"\n"
    "    model: c\n"
    "    rpm: 2\n"
    "    tpm: 1000\n"
    "    price: {input_usd_per_mtok: 10, output_usd_per_mtok: 20}\n"
    "  - {name: free, tier: cloud, url: \"http://127.0.0.1:9003\", model: f}\n"
    "  - {name: wide, tier: local, url: \"http://127.0.0.1:9004\", model: w, slots: 4}\n"
    "models:\n"
    "  - {name: chat, backends: [edge, cloud, free]}\n"
    "  - {name: wide, backends: [wide]}\n"
    "routing:\n"
    "  breaker: {failures: 2, window_ms: 60000, cooldown_ms: 1000}\n";

enum { EDGE, CLOUD, FREE, WIDE };

#define T0 1000000
#define WALL0 1700000000000LL

/* 100 prompt tokens + 200 max: 300 tokens, 0.001 + 0.004 USD estimated. */
static const struct sw_route_facts facts = {.prompt_tokens_est = 100, .max_tokens = 200};
#define EST_USD 0.005

struct fx {
    struct sw_live_shared *g;
    struct sw_live *live;
};

static int grants;
static struct sw_claim *granted;

static void on_grant(struct sw_claim *c)
{
    grants++;
    granted = c;
}

static int setup(void **state)
{
    struct sw_config *cfg = NULL;
    struct sw_config_errors errs;
    int err = sw_config_parse("claim.yaml", yaml, strlen(yaml), NULL, NULL, &cfg, &errs);
    for (size_t i = 0; i < errs.n; i++)
        print_error("config: %s\n", errs.msgs[i]);
    sw_config_errors_free(&errs);
    if (err)
        return -1;
    struct fx *f = test_calloc(1, sizeof *f);
    f->g = sw_live_shared_new(cfg, T0, WALL0);
    f->live = f->g ? sw_live_new(cfg, f->g, NULL, NULL, T0) : NULL;
    sw_config_unref(cfg);
    if (!f->live)
        return -1;
    grants = 0;
    granted = NULL;
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

static struct sw_claim fresh(void)
{
    return (struct sw_claim){.on_grant = on_grant};
}

static struct sw_live_backend *lb(struct fx *f, size_t i)
{
    return f->live->b[i];
}

static double spend(struct fx *f)
{
    return sw_live_spend_usd(f->live, T0);
}

/* Settles with no verdict, no tokens, no first byte. */
static double neutral(struct fx *f, struct sw_claim *c)
{
    return sw_claim_settle(f->live, c, SW_CLAIM_NEUTRAL, 0, 0, -1, 0, 0, 0, -1, T0);
}

/* Settles as a qualifying failure (503) at now_ms. */
static void fail503(struct fx *f, struct sw_claim *c, int64_t now_ms)
{
    sw_claim_settle(f->live, c, SW_CLAIM_FAILED, 0, 0, -1, 0, 503, 0, -1, now_ms);
}

/* Opens backend i's breaker with two failed attempts; returns when it is open. */
static void trip(struct fx *f, size_t i, int64_t now_ms)
{
    for (int k = 0; k < 2; k++) {
        struct sw_claim c = fresh();
        assert_int_equal(sw_claim_take(f->live, i, &facts, now_ms, &c), SW_CLAIM_GRANTED);
        sw_claim_mark_sent(&c);
        fail503(f, &c, now_ms);
    }
    assert_int_equal(sw_breaker_state(&lb(f, i)->breaker, now_ms), SW_BREAKER_OPEN);
}

/* ---- Local slot and queue ---- */

/* The view of the edge backend for model chat at now_ms. */
static struct sw_route_backend_view edge_view(struct fx *f, int64_t now_ms)
{
    struct sw_live_snapshot snap;
    sw_live_snapshot(f->live, sw_config_find_model(f->live->cfg, "chat"), now_ms, &snap);
    assert_int_equal(snap.map[0], EDGE);
    return snap.backends[0];
}

/* The router's view knows when the request holding a slot got it and how big
 * it is (what it may still hold), from the take or the grant that gave it the
 * slot, until it settles. */
static void test_slot_holders_in_the_view(void **state)
{
    struct fx *f = *state;
    struct sw_claim a = fresh(), b = fresh();
    struct sw_route_facts big = {.prompt_tokens_est = 400, .max_tokens = 50};
    struct sw_route_backend_view v = edge_view(f, T0);
    assert_int_equal(v.n_busy, 0);

    assert_int_equal(sw_claim_take(f->live, EDGE, &facts, T0, &a), SW_CLAIM_GRANTED);
    v = edge_view(f, T0 + 300);
    assert_int_equal(v.n_busy, 1);
    assert_float_equal(v.busy_left_ms[0], sw_route_busy_left_ms(&v, 100, 200, 300), 1e-9);
    assert_true(v.busy_left_ms[0] > 0);

    /* Queued: not running, not in the view. */
    assert_int_equal(sw_claim_take(f->live, EDGE, &big, T0 + 100, &b), SW_CLAIM_QUEUED);
    assert_int_equal(edge_view(f, T0 + 300).n_busy, 1);
    /* a ends at T0 + 1000: b gets the slot then, and the view counts from there. */
    sw_claim_mark_sent(&a);
    sw_claim_settle(f->live, &a, SW_CLAIM_OK, 100, 200, 300, 5000, 200, 0, -1, T0 + 1000);
    assert_int_equal(grants, 1);
    v = edge_view(f, T0 + 1200);
    assert_int_equal(v.n_busy, 1);
    assert_float_equal(v.busy_left_ms[0], sw_route_busy_left_ms(&v, 400, 50, 200), 1e-9);
    neutral(f, &b);
    assert_int_equal(edge_view(f, T0 + 1200).n_busy, 0);
}

/* Holders of identical requests (same size, same millisecond) each find
 * their own record, however records move as others end. */
static void test_holder_positions(void **state)
{
    struct fx *f = *state;
    struct sw_claim c[3] = {fresh(), fresh(), fresh()};
    for (int i = 0; i < 3; i++)
        assert_int_equal(sw_claim_take(f->live, WIDE, &facts, T0, &c[i]), SW_CLAIM_GRANTED);
    struct sw_live_backend *b = lb(f, WIDE);
    assert_int_equal(b->n_busy, 3);
    neutral(f, &c[0]);     /* the last record moves into the first's place */
    assert_int_equal(b->n_busy, 2);
    for (int i = 1; i < 3; i++) {
        assert_true(c[i].busy_at < b->n_busy);
        assert_ptr_equal(b->busy[c[i].busy_at].at, &c[i].busy_at);
    }
    neutral(f, &c[2]);
    assert_int_equal(b->n_busy, 1);
    assert_ptr_equal(b->busy[0].at, &c[1].busy_at);
    neutral(f, &c[1]);
    assert_int_equal(b->n_busy, 0);
    assert_int_equal(b->n_unmatched, 0);
}

static void test_local_slot_released_exactly_once(void **state)
{
    struct fx *f = *state;
    struct sw_localq *q = &lb(f, EDGE)->q;
    struct sw_claim a = fresh(), b = fresh();
    assert_int_equal(sw_claim_take(f->live, EDGE, &facts, T0, &a), SW_CLAIM_GRANTED);
    assert_true(a.held);
    assert_true(a.holding_slot);
    assert_int_equal(q->in_flight, 1);
    assert_int_equal(sw_claim_take(f->live, EDGE, &facts, T0, &b), SW_CLAIM_QUEUED);
    assert_true(b.held);
    assert_false(b.holding_slot);
    assert_int_equal(sw_claim_queue_position(f->live, &b), 0);

    /* a's slot goes to b, before settle returns. */
    sw_claim_mark_sent(&a);
    sw_claim_settle(f->live, &a, SW_CLAIM_OK, 10, 5, 50, 100, 200, 0, -1, T0);
    assert_int_equal(grants, 1);
    assert_ptr_equal(granted, &b);
    assert_true(b.holding_slot);
    assert_int_equal(q->in_flight, 1);
    assert_int_equal(q->queued, 0);

    /* Settling a again releases nothing: b keeps the only slot. */
    assert_true(neutral(f, &a) == 0);
    assert_int_equal(q->in_flight, 1);

    neutral(f, &b);
    assert_int_equal(q->in_flight, 0);
    neutral(f, &b);
    assert_int_equal(q->in_flight, 0);
    assert_int_equal(grants, 1);
}

/* A prefix identity of n boundaries: hash k + 1, 100 (k + 1) tokens. */
static struct sw_prefix chain(size_t n)
{
    struct sw_prefix p = {.n = n};
    for (size_t k = 0; k < n; k++) {
        p.hash[k] = k + 1;
        p.tokens[k] = 100 * (long)(k + 1);
    }
    return p;
}

/* Following a running request (docs/routing.md, "Following a running
 * turn"): a request whose prefix extends a's whole prompt parks on a's slot
 * and is handed it when a ends, before a waiter that came after it; the
 * waiter counts it ahead of itself. */
static void test_follower_takes_the_slot_it_follows(void **state)
{
    struct fx *f = *state;
    struct sw_localq *q = &lb(f, EDGE)->q;
    struct sw_prefix pa = chain(2), pb = chain(3);
    struct sw_claim a = fresh(), b = fresh(), c = fresh();
    a.prefix = &pa;
    assert_int_equal(sw_claim_take(f->live, EDGE, &facts, T0, &a), SW_CLAIM_GRANTED);
    assert_ptr_equal(sw_live_busy_extended(lb(f, EDGE), &pb)->follower, NULL);
    b.prefix = &pb;
    b.follow = true;
    assert_int_equal(sw_claim_take(f->live, EDGE, &facts, T0 + 10, &b), SW_CLAIM_QUEUED);
    assert_true(b.parked && b.held && !b.holding_slot);
    assert_int_equal(q->queued, 0);
    assert_int_equal(edge_view(f, T0 + 10).queued, 1);
    assert_int_equal(sw_claim_queue_position(f->live, &b), 0);
    assert_int_equal(sw_claim_take(f->live, EDGE, &facts, T0 + 20, &c), SW_CLAIM_QUEUED);
    assert_int_equal(sw_claim_queue_position(f->live, &c), 1);

    sw_claim_mark_sent(&a);
    sw_claim_settle(f->live, &a, SW_CLAIM_OK, 100, 200, 50, 100, 200, 0, -1, T0 + 500);
    assert_int_equal(grants, 1);
    assert_ptr_equal(granted, &b);
    assert_true(b.holding_slot && !b.parked);
    assert_int_equal(q->in_flight, 1);
    assert_int_equal(q->queued, 1);
    struct sw_route_backend_view v = edge_view(f, T0 + 600);
    assert_int_equal(v.n_busy, 1);
    assert_float_equal(v.busy_left_ms[0], sw_route_busy_left_ms(&v, 100, 200, 100), 1e-9);

    neutral(f, &b);
    assert_int_equal(grants, 2);
    assert_ptr_equal(granted, &c);
    neutral(f, &c);
    assert_int_equal(q->in_flight, 0);
}

/* A follower that gives up leaves its slot to the queue; a request follows
 * only while nobody waits (it would skip them) and only one follows a
 * request; one that extends nothing running queues as usual. */
static void test_follow_only_when_it_skips_nobody(void **state)
{
    struct fx *f = *state;
    struct sw_localq *q = &lb(f, EDGE)->q;
    struct sw_prefix pa = chain(2), pb = chain(3), other = chain(3);
    other.hash[1] = 99;     /* shares block 0 only: does not extend a's prompt */
    struct sw_claim a = fresh(), b = fresh(), c = fresh();
    a.prefix = &pa;
    assert_int_equal(sw_claim_take(f->live, EDGE, &facts, T0, &a), SW_CLAIM_GRANTED);
    b.prefix = &pb;
    b.follow = true;
    assert_int_equal(sw_claim_take(f->live, EDGE, &facts, T0, &b), SW_CLAIM_QUEUED);
    assert_true(b.parked);
    neutral(f, &b);
    assert_false(b.parked || b.held);
    assert_int_equal(edge_view(f, T0).queued, 0);

    c.prefix = &other;
    c.follow = true;
    assert_int_equal(sw_claim_take(f->live, EDGE, &facts, T0, &c), SW_CLAIM_QUEUED);
    assert_false(c.parked);
    assert_int_equal(q->queued, 1);
    /* somebody waits: b queues behind (here: no room), it does not park */
    assert_int_equal(sw_claim_take(f->live, EDGE, &facts, T0, &b), SW_CLAIM_QUEUE_FULL);
    assert_false(b.parked);
    neutral(f, &a);
    assert_int_equal(grants, 1);
    assert_ptr_equal(granted, &c);
    neutral(f, &c);
    assert_int_equal(q->in_flight, 0);
}

static void test_queue_full_and_leaving_the_queue(void **state)
{
    struct fx *f = *state;
    struct sw_localq *q = &lb(f, EDGE)->q;
    struct sw_claim a = fresh(), b = fresh(), c = fresh();
    assert_int_equal(sw_claim_take(f->live, EDGE, &facts, T0, &a), SW_CLAIM_GRANTED);
    assert_int_equal(sw_claim_take(f->live, EDGE, &facts, T0, &b), SW_CLAIM_QUEUED);
    assert_int_equal(sw_claim_take(f->live, EDGE, &facts, T0, &c), SW_CLAIM_QUEUE_FULL);
    assert_false(c.held);
    assert_int_equal(q->queued, 1);

    /* b leaves the queue (deadline, cloud, client gone): it held no slot. */
    neutral(f, &b);
    assert_false(b.held);
    assert_int_equal(q->queued, 0);
    assert_int_equal(q->in_flight, 1);

    /* c was refused: settling it gives back nothing (a keeps its slot). */
    neutral(f, &c);
    assert_int_equal(q->in_flight, 1);

    /* Nobody waits now: a's release grants nothing. */
    neutral(f, &a);
    assert_int_equal(q->in_flight, 0);
    assert_int_equal(grants, 0);
}

static void test_take_settles_a_claim_still_held(void **state)
{
    struct fx *f = *state;
    struct sw_claim a = fresh();
    assert_int_equal(sw_claim_take(f->live, EDGE, &facts, T0, &a), SW_CLAIM_GRANTED);
    /* Were the first slot not given back, the single slot would be busy. */
    assert_int_equal(sw_claim_take(f->live, EDGE, &facts, T0, &a), SW_CLAIM_GRANTED);
    assert_int_equal(lb(f, EDGE)->q.in_flight, 1);
    neutral(f, &a);
    assert_int_equal(lb(f, EDGE)->q.in_flight, 0);
}

/* ---- Breaker ---- */

static void test_breaker_open_holds_nothing(void **state)
{
    struct fx *f = *state;
    trip(f, EDGE, T0);
    struct sw_claim c = fresh();
    assert_int_equal(sw_claim_take(f->live, EDGE, &facts, T0, &c), SW_CLAIM_BREAKER_OPEN);
    assert_false(c.held);
    assert_int_equal(lb(f, EDGE)->q.in_flight, 0);
    assert_int_equal(lb(f, EDGE)->q.queued, 0);
}

/* A panic claim passes an open breaker; its answer closes the breaker at
 * once, a failure restarts the cooldown, a neutral end frees the panic slot. */
static void test_panic_claim(void **state)
{
    struct fx *f = *state;
    struct sw_breaker *br = &lb(f, FREE)->breaker;
    trip(f, FREE, T0);
    struct sw_claim c = fresh();
    assert_int_equal(sw_claim_take(f->live, FREE, &facts, T0 + 1, &c), SW_CLAIM_BREAKER_OPEN);
    c.allow_panic = true;
    assert_int_equal(sw_claim_take(f->live, FREE, &facts, T0 + 1, &c), SW_CLAIM_GRANTED);
    assert_true(c.panic);
    assert_false(c.probe);
    assert_int_equal(br->panic_out, 1);

    /* Neutral (client gone): only the panic slot is freed. */
    neutral(f, &c);
    assert_int_equal(br->panic_out, 0);
    assert_int_equal(sw_breaker_state(br, T0 + 1), SW_BREAKER_OPEN);

    /* A failure: the cooldown (1 s) restarts from its end. */
    assert_int_equal(sw_claim_take(f->live, FREE, &facts, T0 + 500, &c), SW_CLAIM_GRANTED);
    sw_claim_mark_sent(&c);
    fail503(f, &c, T0 + 500);
    assert_int_equal(sw_breaker_open_until(br, T0 + 500), T0 + 1500);

    /* An answer closes it at once, and allow_panic is kept by take. */
    assert_true(c.allow_panic);
    assert_int_equal(sw_claim_take(f->live, FREE, &facts, T0 + 600, &c), SW_CLAIM_GRANTED);
    assert_true(c.panic);
    sw_claim_mark_sent(&c);
    sw_claim_settle(f->live, &c, SW_CLAIM_OK, 10, 5, 40, 10, 200, 0, -1, T0 + 700);
    assert_int_equal(sw_breaker_state(br, T0 + 700), SW_BREAKER_CLOSED);
    assert_int_equal(br->panic_out, 0);

    /* On a closed breaker a panic-allowed claim is an ordinary one. */
    assert_int_equal(sw_claim_take(f->live, FREE, &facts, T0 + 800, &c), SW_CLAIM_GRANTED);
    assert_false(c.panic);
    neutral(f, &c);
}

static void test_probe_released_on_neutral(void **state)
{
    struct fx *f = *state;
    trip(f, FREE, T0);
    int64_t later = T0 + 1000;
    struct sw_claim probe = fresh(), other = fresh();
    assert_int_equal(sw_claim_take(f->live, FREE, &facts, later, &probe), SW_CLAIM_GRANTED);
    assert_true(probe.probe);
    assert_int_equal(sw_claim_take(f->live, FREE, &facts, later, &other), SW_CLAIM_BREAKER_OPEN);

    /* Never sent (or client gone): the backend was not judged, the probe is free again. */
    sw_claim_settle(f->live, &probe, SW_CLAIM_NEUTRAL, 0, 0, -1, 0, 0, 0, -1, later);
    assert_true(sw_breaker_probe_free(&lb(f, FREE)->breaker, later));
    assert_int_equal(sw_claim_take(f->live, FREE, &facts, later, &other), SW_CLAIM_GRANTED);
    assert_true(other.probe);

    /* Its success closes the breaker. */
    sw_claim_mark_sent(&other);
    sw_claim_settle(f->live, &other, SW_CLAIM_OK, 10, 5, 40, 10, 200, 0, -1, later);
    assert_int_equal(sw_breaker_state(&lb(f, FREE)->breaker, later), SW_BREAKER_CLOSED);
}

/* The gateway's own limit (no descriptor for the connection) is no verdict
 * on the backend: a probe that failed so is free again, the breaker stays
 * as it was, and a closed one's backend stays up. */
static void test_local_limit_judges_nothing(void **state)
{
    struct fx *f = *state;
    struct sw_claim c = fresh();
    assert_int_equal(sw_claim_take(f->live, FREE, &facts, T0, &c), SW_CLAIM_GRANTED);
    sw_claim_settle(f->live, &c, SW_CLAIM_FAILED, 0, 0, -1, 0, 0, SW_ELOCAL, -1, T0);
    assert_int_equal(lb(f, FREE)->health, SW_HEALTH_UP);
    assert_int_equal(sw_breaker_state(&lb(f, FREE)->breaker, T0), SW_BREAKER_CLOSED);

    trip(f, FREE, T0);
    int64_t later = T0 + 1000;
    struct sw_claim probe = fresh(), other = fresh();
    assert_int_equal(sw_claim_take(f->live, FREE, &facts, later, &probe), SW_CLAIM_GRANTED);
    assert_true(probe.probe);
    sw_claim_mark_sent(&probe);
    sw_claim_settle(f->live, &probe, SW_CLAIM_FAILED, 0, 0, -1, 0, 0, SW_ELOCAL, -1, later);
    assert_int_equal(sw_breaker_state(&lb(f, FREE)->breaker, later), SW_BREAKER_HALF_OPEN);
    assert_true(sw_breaker_probe_free(&lb(f, FREE)->breaker, later));
    assert_int_equal(sw_claim_take(f->live, FREE, &facts, later, &other), SW_CLAIM_GRANTED);
    assert_true(other.probe);
    neutral(f, &other);
}

static void test_neutral_of_a_non_probe_keeps_the_probe(void **state)
{
    struct fx *f = *state;
    struct sw_claim old = fresh(), probe = fresh(), other = fresh();
    /* Admitted while closed, still in flight when the breaker opens. */
    assert_int_equal(sw_claim_take(f->live, FREE, &facts, T0, &old), SW_CLAIM_GRANTED);
    assert_false(old.probe);
    trip(f, FREE, T0);
    int64_t later = T0 + 1000;
    assert_int_equal(sw_claim_take(f->live, FREE, &facts, later, &probe), SW_CLAIM_GRANTED);
    assert_true(probe.probe);

    sw_claim_settle(f->live, &old, SW_CLAIM_NEUTRAL, 0, 0, -1, 0, 0, 0, -1, later);
    /* Still one probe at a time. */
    assert_false(sw_breaker_probe_free(&lb(f, FREE)->breaker, later));
    assert_int_equal(sw_claim_take(f->live, FREE, &facts, later, &other), SW_CLAIM_BREAKER_OPEN);

    /* The probe's failure opens the breaker again. */
    sw_claim_mark_sent(&probe);
    fail503(f, &probe, later);
    assert_int_equal(sw_breaker_state(&lb(f, FREE)->breaker, later), SW_BREAKER_OPEN);
}

static void test_refused_take_releases_the_probe(void **state)
{
    struct fx *f = *state;
    /* The slot and the waiting place are taken while the breaker is closed. */
    struct sw_claim a = fresh(), b = fresh(), c = fresh();
    assert_int_equal(sw_claim_take(f->live, EDGE, &facts, T0, &a), SW_CLAIM_GRANTED);
    assert_int_equal(sw_claim_take(f->live, EDGE, &facts, T0, &b), SW_CLAIM_QUEUED);
    for (int k = 0; k < 2; k++)
        sw_live_on_failure(f->live, EDGE, T0, 503, 0, -1);
    int64_t later = T0 + 1000;
    assert_true(sw_breaker_probe_free(&lb(f, EDGE)->breaker, later));
    /* The breaker admits c as its probe, the queue refuses it: the probe is
     * given back with everything else. */
    assert_int_equal(sw_claim_take(f->live, EDGE, &facts, later, &c), SW_CLAIM_QUEUE_FULL);
    assert_false(c.held);
    assert_false(c.probe);
    assert_true(sw_breaker_probe_free(&lb(f, EDGE)->breaker, later));
    neutral(f, &a);
    assert_ptr_equal(granted, &b);
    neutral(f, &b);
    assert_int_equal(lb(f, EDGE)->q.in_flight, 0);
}

static void test_failure_feeds_the_breaker(void **state)
{
    struct fx *f = *state;
    /* One qualifying failure does not open it; a 400 (the request's fault)
     * does not count; the second qualifying failure does. */
    struct sw_claim c = fresh();
    assert_int_equal(sw_claim_take(f->live, FREE, &facts, T0, &c), SW_CLAIM_GRANTED);
    fail503(f, &c, T0);
    fail503(f, &c, T0); /* settled twice: still one failure */
    assert_int_equal(sw_breaker_state(&lb(f, FREE)->breaker, T0), SW_BREAKER_CLOSED);
    assert_int_equal(sw_claim_take(f->live, FREE, &facts, T0, &c), SW_CLAIM_GRANTED);
    sw_claim_settle(f->live, &c, SW_CLAIM_FAILED, 0, 0, -1, 0, 400, 0, -1, T0);
    assert_int_equal(sw_breaker_state(&lb(f, FREE)->breaker, T0), SW_BREAKER_CLOSED);
    assert_int_equal(sw_claim_take(f->live, FREE, &facts, T0, &c), SW_CLAIM_GRANTED);
    sw_claim_settle(f->live, &c, SW_CLAIM_FAILED, 0, 0, -1, 0, 0, SW_ECONNECT, -1, T0);
    assert_int_equal(sw_breaker_state(&lb(f, FREE)->breaker, T0), SW_BREAKER_OPEN);
    assert_int_equal(lb(f, FREE)->health, SW_HEALTH_DOWN);
}

/* ---- Token bucket ---- */

static void test_rate_limited_holds_nothing(void **state)
{
    struct fx *f = *state;
    struct sw_bucket *bk = &lb(f, CLOUD)->bucket;
    struct sw_claim a = fresh(), b = fresh(), c = fresh();
    assert_int_equal(sw_claim_take(f->live, CLOUD, &facts, T0, &a), SW_CLAIM_GRANTED);
    assert_int_equal(a.bucket_tokens, 300);
    assert_int_equal(sw_claim_take(f->live, CLOUD, &facts, T0, &b), SW_CLAIM_GRANTED);
    double reserved = spend(f);
    assert_true(reserved > 2 * EST_USD - 1e-12 && reserved < 2 * EST_USD + 1e-12);
    assert_int_equal(sw_claim_take(f->live, CLOUD, &facts, T0, &c), SW_CLAIM_RATE_LIMITED);
    assert_false(c.held);
    assert_false(c.spend_held);
    assert_true(spend(f) == reserved); /* no reservation for the refused one */
    assert_true(sw_bucket_rpm_available(bk, T0) == 0);
    assert_true(sw_bucket_tpm_available(bk, T0) == 400);
    neutral(f, &a);
    neutral(f, &b);
}

static void test_rate_limited_releases_the_probe(void **state)
{
    struct fx *f = *state;
    struct sw_claim a = fresh(), b = fresh(), c = fresh();
    /* The minute's two requests went out while the breaker was closed. */
    assert_int_equal(sw_claim_take(f->live, CLOUD, &facts, T0, &a), SW_CLAIM_GRANTED);
    assert_int_equal(sw_claim_take(f->live, CLOUD, &facts, T0, &b), SW_CLAIM_GRANTED);
    for (int k = 0; k < 2; k++)
        sw_live_on_failure(f->live, CLOUD, T0, 503, 0, -1);
    int64_t later = T0 + 1000; /* half-open; the bucket has refilled 1/30 request */
    assert_true(sw_breaker_probe_free(&lb(f, CLOUD)->breaker, later));
    assert_int_equal(sw_claim_take(f->live, CLOUD, &facts, later, &c), SW_CLAIM_RATE_LIMITED);
    assert_false(c.held);
    assert_true(sw_breaker_probe_free(&lb(f, CLOUD)->breaker, later));
    neutral(f, &a);
    neutral(f, &b);
}

static void test_bucket_refunded_when_never_sent(void **state)
{
    struct fx *f = *state;
    struct sw_bucket *bk = &lb(f, CLOUD)->bucket;
    struct sw_claim c = fresh();
    assert_int_equal(sw_claim_take(f->live, CLOUD, &facts, T0, &c), SW_CLAIM_GRANTED);
    assert_true(sw_bucket_rpm_available(bk, T0) == 1);
    assert_true(sw_bucket_tpm_available(bk, T0) == 700);
    /* Not sent (masking failed, deadline passed before dispatch): all back,
     * whatever usage the caller passes. */
    sw_claim_settle(f->live, &c, SW_CLAIM_NEUTRAL, 100, 0, -1, 0, 0, 0, -1, T0);
    assert_true(sw_bucket_rpm_available(bk, T0) == 2);
    assert_true(sw_bucket_tpm_available(bk, T0) == 1000);
}

static void test_bucket_settled_on_usage_when_sent(void **state)
{
    struct fx *f = *state;
    struct sw_bucket *bk = &lb(f, CLOUD)->bucket;
    struct sw_claim c = fresh();
    assert_int_equal(sw_claim_take(f->live, CLOUD, &facts, T0, &c), SW_CLAIM_GRANTED);
    sw_claim_mark_sent(&c);
    /* Failed after it was sent: the provider counted the request and its prompt. */
    sw_claim_settle(f->live, &c, SW_CLAIM_FAILED, 100, 0, -1, 0, 502, 0, -1, T0);
    assert_true(sw_bucket_rpm_available(bk, T0) == 1);
    assert_true(sw_bucket_tpm_available(bk, T0) == 900);
    /* Twice: the bucket is settled once. */
    sw_claim_settle(f->live, &c, SW_CLAIM_FAILED, 100, 0, -1, 0, 502, 0, -1, T0);
    assert_true(sw_bucket_tpm_available(bk, T0) == 900);
}

/* ---- Spend ---- */

static void test_spend_released_when_nothing_produced(void **state)
{
    struct fx *f = *state;
    struct sw_claim c = fresh();
    assert_int_equal(sw_claim_take(f->live, CLOUD, &facts, T0, &c), SW_CLAIM_GRANTED);
    assert_true(c.spend_held);
    assert_true(spend(f) > EST_USD - 1e-12 && spend(f) < EST_USD + 1e-12);
    sw_claim_mark_sent(&c);
    /* Sent, but failed before the first byte: no tokens, no bill. */
    double usd = sw_claim_settle(f->live, &c, SW_CLAIM_FAILED, 100, 0, -1, 0, 503, 0, -1, T0);
    assert_true(usd == 0);
    assert_true(spend(f) == 0);
    assert_int_equal(f->g->spend.n_outstanding, 0);
}

static void test_spend_settled_when_tokens_produced(void **state)
{
    struct fx *f = *state;
    struct sw_claim c = fresh();
    assert_int_equal(sw_claim_take(f->live, CLOUD, &facts, T0, &c), SW_CLAIM_GRANTED);
    sw_claim_mark_sent(&c);
    /* The stream broke after tokens came: they are billed (100 in, 10 out). */
    double usd = sw_claim_settle(f->live, &c, SW_CLAIM_FAILED, 100, 10, 30, 0, 0, SW_EPROTO, -1, T0);
    assert_true(usd > 0.0012 - 1e-12 && usd < 0.0012 + 1e-12);
    assert_true(spend(f) > 0.0012 - 1e-12 && spend(f) < 0.0012 + 1e-12);
    assert_int_equal(f->g->spend.n_outstanding, 0);
    /* Settling again bills nothing more. */
    assert_true(sw_claim_settle(f->live, &c, SW_CLAIM_OK, 100, 10, 30, 0, 200, 0, -1, T0) == 0);
    assert_true(spend(f) > 0.0012 - 1e-12 && spend(f) < 0.0012 + 1e-12);

    /* An answer: billed on its usage, not the estimate. */
    assert_int_equal(sw_claim_take(f->live, CLOUD, &facts, T0, &c), SW_CLAIM_GRANTED);
    sw_claim_mark_sent(&c);
    usd = sw_claim_settle(f->live, &c, SW_CLAIM_OK, 200, 50, 30, 100, 200, 0, -1, T0);
    assert_true(usd > 0.003 - 1e-12 && usd < 0.003 + 1e-12);
}

/* The spend is reserved at the prompt's upper bound and the token bucket
 * takes the estimate; a backend that reports no usage is billed at least
 * the reservation. */
static void test_spend_reserved_at_bound(void **state)
{
    struct fx *f = *state;
    struct sw_claim c = fresh();
    struct sw_route_facts big = facts;
    big.prompt_tokens_max = 400;    /* 0.004 + 0.004 USD */
    assert_int_equal(sw_claim_take(f->live, CLOUD, &big, T0, &c), SW_CLAIM_GRANTED);
    assert_true(spend(f) > 0.008 - 1e-12 && spend(f) < 0.008 + 1e-12);
    assert_int_equal(c.bucket_tokens, 300);
    sw_claim_mark_sent(&c);
    /* Honest usage below the bound: billed as used. */
    double usd = sw_claim_settle(f->live, &c, SW_CLAIM_OK, 350, 100, 30, 100, 200, 0, -1, T0);
    assert_true(usd > 0.0055 - 1e-12 && usd < 0.0055 + 1e-12);

    assert_int_equal(sw_claim_take(f->live, CLOUD, &big, T0, &c), SW_CLAIM_GRANTED);
    sw_claim_mark_sent(&c);
    c.usage_unreported = true;
    usd = sw_claim_settle(f->live, &c, SW_CLAIM_OK, 100, 10, 30, 100, 200, 0, -1, T0);
    assert_true(usd > 0.008 - 1e-12 && usd < 0.008 + 1e-12);
}

static void test_spend_full_holds_nothing(void **state)
{
    struct fx *f = *state;
    struct sw_bucket *bk = &lb(f, CLOUD)->bucket;
    sw_spend_handle h;
    for (int i = 0; i < SW_SPEND_MAX_RESERVATIONS; i++)
        assert_int_equal(sw_spend_reserve(&f->g->spend, WALL0, 0.0, &h), SW_OK);
    struct sw_claim c = fresh();
    assert_int_equal(sw_claim_take(f->live, CLOUD, &facts, T0, &c), SW_CLAIM_SPEND_FULL);
    assert_false(c.held);
    assert_false(c.spend_held);
    /* The bucket take before it was given back. */
    assert_true(sw_bucket_rpm_available(bk, T0) == 2);
    assert_true(sw_bucket_tpm_available(bk, T0) == 1000);
    /* Free of charge needs no reservation: the unpriced cloud still goes. */
    assert_int_equal(sw_claim_take(f->live, FREE, &facts, T0, &c), SW_CLAIM_GRANTED);
    assert_false(c.spend_held);
    neutral(f, &c);
}

/* ---- Learned rates ---- */

static void test_success_teaches_the_latency_window(void **state)
{
    struct fx *f = *state;
    struct sw_claim c = fresh();
    assert_int_equal(sw_claim_take(f->live, EDGE, &facts, T0, &c), SW_CLAIM_GRANTED);
    sw_claim_mark_sent(&c);
    sw_claim_settle(f->live, &c, SW_CLAIM_OK, 100, 20, 250, 400, 200, 0, -1, T0);
    assert_true(sw_latwin_avg(&lb(f, EDGE)->latwin, T0) == 250);
    assert_true(lb(f, EDGE)->ewma.output_tokens > 0);
    /* A neutral end teaches nothing. */
    assert_int_equal(sw_claim_take(f->live, EDGE, &facts, T0, &c), SW_CLAIM_GRANTED);
    sw_claim_settle(f->live, &c, SW_CLAIM_NEUTRAL, 100, 20, 900, 400, 0, 0, -1, T0);
    assert_true(sw_latwin_avg(&lb(f, EDGE)->latwin, T0) == 250);
}

/* A non-streamed answer's first byte comes with its last: it teaches the
 * output length, not the prefill or decode speed, and is no TTFT sample for
 * the latency window; it is still billed. A streamed one teaches all. */
static void test_whole_answer_teaches_no_speed(void **state)
{
    struct fx *f = *state;
    struct sw_ewma *e = &lb(f, EDGE)->ewma;
    struct sw_claim c = fresh();
    assert_int_equal(sw_claim_take(f->live, EDGE, &facts, T0, &c), SW_CLAIM_GRANTED);
    sw_claim_mark_sent(&c);
    c.whole_answer = true;
    sw_claim_settle(f->live, &c, SW_CLAIM_OK, 100, 50, 5000, 30, 200, 0, -1, T0);
    assert_int_equal(e->n_prefill, 0);
    assert_int_equal(e->n_decode, 0);
    assert_int_equal(e->n_output, 1);
    assert_true(e->output_tokens == 50);
    assert_true(sw_latwin_avg(&lb(f, EDGE)->latwin, T0) == 0);
    /* Billed all the same (the cloud's usage). */
    c = fresh();
    assert_int_equal(sw_claim_take(f->live, CLOUD, &facts, T0, &c), SW_CLAIM_GRANTED);
    sw_claim_mark_sent(&c);
    c.whole_answer = true;
    assert_true(sw_claim_settle(f->live, &c, SW_CLAIM_OK, 100, 50, 5000, 0, 200, 0, -1, T0) > 0);
    /* Streamed: the first byte is the first token. */
    c = fresh();
    assert_int_equal(sw_claim_take(f->live, EDGE, &facts, T0, &c), SW_CLAIM_GRANTED);
    sw_claim_mark_sent(&c);
    sw_claim_settle(f->live, &c, SW_CLAIM_OK, 100, 50, 300, 2450, 200, 0, -1, T0);
    assert_int_equal(e->n_prefill, 1);
    assert_int_equal(e->n_decode, 1);
    assert_true(sw_latwin_avg(&lb(f, EDGE)->latwin, T0) == 300);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_holder_positions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_local_slot_released_exactly_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_queue_full_and_leaving_the_queue, setup, teardown),
        cmocka_unit_test_setup_teardown(test_follower_takes_the_slot_it_follows, setup, teardown),
        cmocka_unit_test_setup_teardown(test_follow_only_when_it_skips_nobody, setup, teardown),
        cmocka_unit_test_setup_teardown(test_take_settles_a_claim_still_held, setup, teardown),
        cmocka_unit_test_setup_teardown(test_breaker_open_holds_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_probe_released_on_neutral, setup, teardown),
        cmocka_unit_test_setup_teardown(test_neutral_of_a_non_probe_keeps_the_probe, setup, teardown),
        cmocka_unit_test_setup_teardown(test_local_limit_judges_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refused_take_releases_the_probe, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failure_feeds_the_breaker, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rate_limited_holds_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rate_limited_releases_the_probe, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bucket_refunded_when_never_sent, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bucket_settled_on_usage_when_sent, setup, teardown),
        cmocka_unit_test_setup_teardown(test_spend_reserved_at_bound, setup, teardown),
        cmocka_unit_test_setup_teardown(test_spend_released_when_nothing_produced, setup, teardown),
        cmocka_unit_test_setup_teardown(test_spend_settled_when_tokens_produced, setup, teardown),
        cmocka_unit_test_setup_teardown(test_spend_full_holds_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_success_teaches_the_latency_window, setup, teardown),
        cmocka_unit_test_setup_teardown(test_panic_claim, setup, teardown),
        cmocka_unit_test_setup_teardown(test_slot_holders_in_the_view, setup, teardown),
        cmocka_unit_test_setup_teardown(test_whole_answer_teaches_no_speed, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
