/* The snapshot's view (src/state/live.c sw_live_snapshot) against the view
 * recomputed from the live state field by field the plain way, after every
 * event of random sequences (takes and settles of local slots and queues,
 * answers, failures, health checks, warm-ups, load polls, probes, shared
 * state syncs, time passing): every field the router reads is identical, and
 * so is every decision sw_route_decide makes on the two views. A real sw_live
 * on a parsed config; the clock is a plain number. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "config/config.h"
#include "state/claim.h"
#include "state/live.h"

/* Two small local backends (one with a load signal), two clouds (one with
 * limits, a price and a region); breakers open after 2 failures for 1 s;
 * a short latency window that degrades and recovers within a sequence. */
static const char yaml[] =
    "listen: \"127.0.0.1:0\"\n"
    "backends:\n"
    "  - {name: e1, tier: local, url: \"http://127.0.0.1:9001\", model: m, slots: 2,"
    " queue_max: 3, max_context_tokens: 4096}\n"
    "  - {name: e2, tier: local, url: \"http://127.0.0.1:9002\", model: m, slots: 3, queue_max: 2,\n"
    "     load: {source: llamacpp, poll_ms: 100}}\n"
    "  - name: c1\n"
    "    tier: cloud\n"
    "    url: \"http://127.0.0.1:9003\"\n"
    "    model: c\n"
    "    region: eu-west\n"
    "    rpm: 20\n"
    "    tpm: 20000\n"
    "    price: {input_usd_per_mtok: 10, output_usd_per_mtok: 20}\n"
    "  - {name: c2, tier: cloud, url: \"http://127.0.0.1:9004\", model: f}\n"
    "models:\n"
    "  - {name: chat, backends: [e1, e2, c1, c2]}\n"
    "routing:\n"
    "  ttft_budget_ms: 800\n"
    "  overdue_factor: 2\n"
    "  overdue_floor_ms: 1500\n"
    "  breaker: {failures: 2, window_ms: 60000, cooldown_ms: 1000}\n"
    "  latency: {window_ms: 3000, degrade_ms: 300, recover_ms: 200, dwell_ms: 500}\n";

#define OVERDUE_FACTOR 2.0       /* routing.overdue_* above */
#define OVERDUE_FLOOR_MS 1500.0
#define T0 1000000
#define WALL0 1700000000000LL
#define N_CLAIMS 24

struct fx {
    struct sw_live_shared *g;
    struct sw_live *live;
    const struct sw_config_model *model;
    struct sw_claim claims[N_CLAIMS];
    uint64_t rng;
    int64_t now;
};

static void on_grant(struct sw_claim *c)
{
    (void)c;
}

static int setup(void **state)
{
    struct sw_config *cfg = NULL;
    struct sw_config_errors errs;
    int err = sw_config_parse("view.yaml", yaml, strlen(yaml), NULL, NULL, &cfg, &errs);
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
    f->model = sw_config_find_model(f->live->cfg, "chat");
    f->now = T0;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    f->g->rstate = NULL;
    for (size_t i = 0; i < N_CLAIMS; i++)
        sw_claim_settle(f->live, &f->claims[i], SW_CLAIM_NEUTRAL, 0, 0, -1, 0, 0, 0, -1, f->now);
    sw_live_unref(f->live);
    sw_live_shared_free(f->g);
    test_free(f);
    return 0;
}

static uint32_t rnd(struct fx *f, uint32_t n)
{
    f->rng = f->rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)(f->rng >> 33) % n;
}

/* ---- The view the plain way ---- */

/* Overdue: held past overdue_factor x (prefill + the average output, at
 * most max_tokens, at decode_tps) + overdue_floor_ms. */
static bool ref_overdue(const struct sw_route_backend_view *v, const struct sw_live_busy *r,
                        int64_t now_ms)
{
    double out = v->avg_output_tokens > 0 ? v->avg_output_tokens : SW_ROUTE_PRIOR_OUTPUT_TOKENS;
    if (r->max_tokens > 0 && (double)r->max_tokens < out)
        out = (double)r->max_tokens;
    double prefill = v->prefill_ms_per_token > 0 ? v->prefill_ms_per_token
                                                 : SW_ROUTE_PRIOR_PREFILL_MS_PER_TOKEN;
    double tps = v->decode_tps > 0 ? v->decode_tps : SW_ROUTE_PRIOR_DECODE_TPS;
    double hold = (double)(r->prompt_tokens > 0 ? r->prompt_tokens : 0) * prefill +
                  1000.0 * out / tps;
    return (double)(now_ms - r->since_ms) > OVERDUE_FACTOR * hold + OVERDUE_FLOOR_MS;
}

static void ref_busy(const struct sw_live_backend *b, int64_t now_ms,
                     struct sw_route_backend_view *v)
{
    if (b->tier != SW_TIER_LOCAL || b->q.in_flight <= 0 || (long)b->n_busy != b->q.in_flight)
        return;
    struct sw_live_busy run[64];
    size_t n_run = 0;
    for (size_t i = 0; i < b->n_busy; i++) {
        if (ref_overdue(v, &b->busy[i], now_ms))
            v->n_overdue++;
        else if (n_run < sizeof run / sizeof run[0])
            run[n_run++] = b->busy[i];
    }
    for (size_t i = 0; i < n_run; i++) {
        const struct sw_live_busy *r = &run[i];
        double left = sw_route_busy_left_ms(v, r->prompt_tokens, r->max_tokens,
                                            (double)(now_ms - r->since_ms));
        long k = v->n_busy < SW_ROUTE_BUSY_MAX ? v->n_busy++ : SW_ROUTE_BUSY_MAX;
        while (k > 0 && v->busy_left_ms[k - 1] > left) {
            if (k < SW_ROUTE_BUSY_MAX)
                v->busy_left_ms[k] = v->busy_left_ms[k - 1];
            k--;
        }
        if (k < SW_ROUTE_BUSY_MAX)
            v->busy_left_ms[k] = left;
    }
    struct sw_route_holder h[SW_ROUTE_BUSY_MAX];
    size_t n = n_run < SW_ROUTE_BUSY_MAX ? n_run : SW_ROUTE_BUSY_MAX;
    if (n < n_run)
        return;
    for (size_t i = 0; i < n; i++)
        h[i] = (struct sw_route_holder){run[i].prompt_tokens, run[i].max_tokens,
                                        run[i].max_tokens_given,
                                        (double)(now_ms - run[i].since_ms)};
    double first = sw_route_first_release_ms(v, h, n, SW_ROUTE_FIRST_RELEASE_Q);
    if (v->n_busy > 0 && first < v->busy_left_ms[0])
        v->first_release_ms = first;
}

static void ref_view(struct sw_live *l, size_t i, int64_t now_ms, struct sw_route_backend_view *v)
{
    const struct sw_config_backend *be = &l->cfg->backends[i];
    struct sw_live_backend *b = l->b[i];
    memset(v, 0, sizeof *v);
    v->name = be->name;
    v->tier = be->tier;
    v->region = be->region;
    v->health = b->health;
    if (v->health == SW_HEALTH_UP && sw_latwin_degraded(&b->latwin, now_ms))
        v->health = SW_HEALTH_DEGRADED;
    v->breaker = sw_breaker_state(&b->breaker, now_ms);
    v->probe_free = sw_breaker_probe_free(&b->breaker, now_ms);
    v->panic_free = sw_breaker_panic_free(&b->breaker, now_ms);
    v->breaker_failed_ms = sw_breaker_last_failure(&b->breaker);
    v->slots = be->tier == SW_TIER_LOCAL ? be->slots : 0;
    v->in_flight = b->q.in_flight;
    v->queued = b->q.queued;
    if (l->g->rstate && !l->g->remote_degraded && be->tier == SW_TIER_LOCAL) {
        v->in_flight += b->remote_in_flight;   /* the other replicas' leases */
        v->queued += b->remote_queued;
    }
    v->queue_max = b->q.queue_max;
    v->prefill_ms_per_token = b->ewma.prefill_ms_per_token;
    v->decode_tps = b->ewma.decode_tps;
    v->avg_output_tokens = b->ewma.output_tokens;
    v->ttft_avg_ms = sw_latwin_avg(&b->latwin, now_ms);
    v->rtt_ms = b->rtt_ms;
    if (be->tier == SW_TIER_LOCAL)
        v->out_ratio = b->outlen.dist;
    ref_busy(b, now_ms, v);
    if (b->health == SW_HEALTH_COLD) {
        v->warm_eta_ms = b->load_ms;
    } else if (b->health == SW_HEALTH_WARMING) {
        double elapsed = (double)(now_ms - b->warming_since_ms);
        v->warm_eta_ms = b->load_ms > elapsed ? b->load_ms - elapsed : 0;
    }
    v->max_context_tokens = be->max_context_tokens;
    v->supports_tools = be->supports_tools;
    v->supports_images = be->supports_images;
    v->rpm_available = be->rpm ? sw_bucket_rpm_available(&b->bucket, now_ms) : -1;
    v->tpm_available = be->tpm ? sw_bucket_tpm_available(&b->bucket, now_ms) : -1;
    v->input_usd_per_mtok = be->input_usd_per_mtok;
    v->output_usd_per_mtok = be->output_usd_per_mtok;
    v->max_output_tokens = be->tier == SW_TIER_CLOUD ? be->max_output_tokens : 0;
    if (be->tier == SW_TIER_LOCAL)
        v->outside_load = sw_live_outside_load(l, i, now_ms);
}

#define SAME(field) assert_memory_equal(&a->field, &r->field, sizeof a->field)

/* Every field the router reads; the slot holders (and what only they are
 * computed from) when the request would wait, the only time they are read. */
static void same_view(const struct sw_route_backend_view *a, const struct sw_route_backend_view *r)
{
    SAME(name);
    SAME(tier);
    SAME(health);
    SAME(breaker);
    SAME(probe_free);
    SAME(slots);
    SAME(in_flight);
    SAME(queued);
    SAME(queue_max);
    SAME(prefill_ms_per_token);
    SAME(decode_tps);
    SAME(avg_output_tokens);
    SAME(ttft_avg_ms);
    SAME(rtt_ms);
    SAME(warm_eta_ms);
    SAME(max_context_tokens);
    SAME(supports_tools);
    SAME(supports_images);
    SAME(rpm_available);
    SAME(tpm_available);
    SAME(input_usd_per_mtok);
    SAME(output_usd_per_mtok);
    SAME(avg_prompt_tokens);
    SAME(degrade_only);
    SAME(region);
    SAME(panic_free);
    SAME(breaker_failed_ms);
    SAME(outside_load);
    SAME(max_output_tokens);
    if (r->slots > 0 && sw_route_ahead(r) > 0) {
        SAME(n_busy);
        SAME(n_overdue);
        assert_memory_equal(a->busy_left_ms, r->busy_left_ms,
                            (size_t)r->n_busy * sizeof r->busy_left_ms[0]);
        SAME(first_release_ms);
        SAME(out_ratio);
    } else {
        assert_int_equal(a->n_busy, 0);
        assert_int_equal(a->n_overdue, 0);
        assert_true(a->first_release_ms == 0);
    }
}

static void same_plan(const struct sw_route_plan *a, const struct sw_route_plan *r)
{
    assert_int_equal(a->n, r->n);
    for (size_t k = 0; k < r->n; k++) {
        assert_int_equal(a->attempts[k].backend, r->attempts[k].backend);
        assert_int_equal(a->attempts[k].reason, r->attempts[k].reason);
        assert_int_equal(a->attempts[k].masked, r->attempts[k].masked);
        assert_int_equal(a->attempts[k].panic, r->attempts[k].panic);
    }
    assert_int_equal(a->status, r->status);
    assert_ptr_equal(a->code, r->code);
    assert_string_equal(a->message, r->message);
    assert_int_equal(a->retry_after_s, r->retry_after_s);
    assert_int_equal(a->n_backends, r->n_backends);
    assert_memory_equal(a->excluded, r->excluded, r->n_backends * sizeof r->excluded[0]);
    assert_memory_equal(a->est_ttft_ms, r->est_ttft_ms, r->n_backends * sizeof r->est_ttft_ms[0]);
}

static struct sw_route_facts random_facts(struct fx *f)
{
    static const char *eu[] = {"eu-west"};
    struct sw_route_facts x = {
        .prompt_tokens_est = (long)rnd(f, 3000),
        .max_tokens = rnd(f, 4) ? (long)rnd(f, 1500) + 1 : 0,
        .allows_cloud = rnd(f, 5) != 0,
        .sensitive = rnd(f, 6) == 0,
        .latency_critical = rnd(f, 4) == 0,
        .deadline_ms = rnd(f, 3) ? 0 : f->now + (int64_t)rnd(f, 20000),
        .exclude = rnd(f, 5) ? 0 : 1u << rnd(f, 4),
        .max_tokens_given = rnd(f, 2) != 0,
        .priority = rnd(f, 6) ? SW_PRIORITY_INTERACTIVE : SW_PRIORITY_BATCH,
        .ttft_budget_cap_ms = rnd(f, 4) ? 0 : (long)rnd(f, 3000) + 1,
    };
    if (x.sensitive && rnd(f, 2)) {
        x.regions[0] = eu[0];
        x.n_regions = 1;
    }
    return x;
}

/* How often the sequences reached the states worth comparing. */
static struct {
    long waits, overdue, first_release, degraded, half_open, open, cold, warming, outside, overflow;
} seen;

static void count(const struct sw_route_backend_view *v)
{
    seen.waits += v->n_busy > 0;
    seen.overdue += v->n_overdue > 0;
    seen.first_release += v->first_release_ms > 0;
    seen.degraded += v->health == SW_HEALTH_DEGRADED;
    seen.half_open += v->breaker == SW_BREAKER_HALF_OPEN;
    seen.open += v->breaker == SW_BREAKER_OPEN;
    seen.cold += v->health == SW_HEALTH_COLD;
    seen.warming += v->health == SW_HEALTH_WARMING;
    seen.outside += v->outside_load > 0;
}

/* The snapshot and the plain view at the same instant, and the decisions on
 * both for a few random requests. */
static void check(struct fx *f)
{
    struct sw_live_snapshot snap;
    sw_live_snapshot(f->live, f->model, f->now, &snap);
    assert_int_equal(snap.view.n, f->model->n_backends);
    struct sw_route_backend_view ref[SW_ROUTE_MAX_BACKENDS];
    for (size_t k = 0; k < snap.view.n; k++) {
        ref_view(f->live, snap.map[k], f->now, &ref[k]);
        same_view(&snap.backends[k], &ref[k]);
        count(&snap.backends[k]);
    }
    struct sw_route_view rv = snap.view;
    rv.backends = ref;
    for (int n = 0; n < 4; n++) {
        struct sw_route_facts x = random_facts(f);
        struct sw_route_plan a, r;
        sw_route_decide(&x, &snap.view, &snap.policy, f->now, &a);
        sw_route_decide(&x, &rv, &snap.policy, f->now, &r);
        same_plan(&a, &r);
        seen.overflow += a.n > 0 && a.attempts[0].reason == SW_REASON_OVERFLOW;
    }
}

/* One random event on the live state. */
static void event(struct fx *f)
{
    struct sw_live *l = f->live;
    size_t be = rnd(f, 4);
    struct sw_claim *c = &f->claims[rnd(f, N_CLAIMS)];
    switch (rnd(f, 13)) {
    case 0:
    case 1:
    case 2: { /* a request takes a slot (or a place in the queue) */
        if (c->held)
            break;
        struct sw_route_facts x = {.prompt_tokens_est = (long)rnd(f, 2000) + 1,
                                   .max_tokens = (long)rnd(f, 800) + 1,
                                   .max_tokens_given = rnd(f, 2) != 0};
        *c = (struct sw_claim){.on_grant = on_grant};
        if (sw_claim_take(l, be, &x, f->now, c) == SW_CLAIM_GRANTED)
            sw_claim_mark_sent(c);
        break;
    }
    case 3:
    case 4: { /* it ends: answered, failed or without a verdict */
        if (!c->held)
            break;
        sw_claim_mark_sent(c);
        switch (rnd(f, 4)) {
        case 0:
        case 1:
            sw_claim_settle(l, c, SW_CLAIM_OK, (long)rnd(f, 2000) + 1, (long)rnd(f, 800) + 1,
                            20 + rnd(f, 600), 100 + rnd(f, 5000), 200, 0, -1, f->now);
            break;
        case 2:
            sw_claim_settle(l, c, SW_CLAIM_FAILED, 0, 0, -1, 0, 503, 0, -1, f->now);
            break;
        default:
            sw_claim_settle(l, c, SW_CLAIM_NEUTRAL, 0, 0, -1, 0, 0, 0, -1, f->now);
            break;
        }
        break;
    }
    case 5: { /* a health check */
        static const int status[] = {200, 200, 200, 503, 500};
        sw_live_on_health(l, be, f->now, status[rnd(f, 5)], (double)rnd(f, 40));
        break;
    }
    case 6:
        sw_live_on_warmup(l, be, f->now);
        break;
    case 7: /* the load signal of e2 */
        sw_live_on_load(l, 1, f->now, (double)rnd(f, 5), (double)rnd(f, 4), rnd(f, 8) == 0,
                        (long)rnd(f, 3), rnd(f, 6) ? NULL : "poll failed");
        break;
    case 8:
        sw_live_on_probe(l, be, f->now, (double)rnd(f, 700));
        break;
    case 9: /* replicas: a sync of the shared state, or Redis lost and back */
        if (!f->g->rstate)
            break;
        if (rnd(f, 5) == 0) {
            f->g->remote_degraded = !f->g->remote_degraded;
        } else {
            l->b[be]->remote_in_flight = (long)rnd(f, 5);
            l->b[be]->remote_queued = (long)rnd(f, 4);
        }
        break;
    default: /* time passes */
        f->now += rnd(f, 3) ? rnd(f, 300) : rnd(f, 4000);
        break;
    }
}

static void test_snapshot_is_the_recomputed_view(void **state)
{
    struct fx *f = *state;
    f->rng = 1;
    memset(&seen, 0, sizeof seen);
    check(f);
    for (int i = 0; i < 20000; i++) {
        event(f);
        check(f);
    }
    print_message("views: %ld waiting with holders, %ld with overdue holders, %ld first releases, %ld degraded, "
                  "%ld half-open, %ld open, %ld cold, %ld warming, %ld outside load; "
                  "%ld overflow decisions\n", seen.waits, seen.overdue, seen.first_release, seen.degraded,
                  seen.half_open, seen.open, seen.cold, seen.warming, seen.outside,
                  seen.overflow);
    assert_true(seen.waits > 100 && seen.first_release > 10 && seen.degraded > 100);
    assert_true(seen.overdue > 10);
    assert_true(seen.half_open > 100 && seen.open > 100 && seen.cold > 100);
    assert_true(seen.warming > 100 && seen.outside > 100 && seen.overflow > 100);
}

/* Overdue slots in the snapshot of e1 (2 slots, the config's default rates
 * 1 ms per prompt token and 20 tokens/s: a holder of prompt 100 and
 * max_tokens 60 expects 100 + 3000 ms; overdue past 2 x 3100 + 1500 = 7700 ms): counted in n_overdue, left out of the
 * releases; both overdue, the wait of the one queued is unbounded. */
static void test_overdue_slots(void **state)
{
    struct fx *f = *state;
    struct sw_route_facts x = {.prompt_tokens_est = 100, .max_tokens = 60,
                               .max_tokens_given = true};
    f->claims[0] = (struct sw_claim){.on_grant = on_grant};
    f->claims[1] = (struct sw_claim){.on_grant = on_grant};
    f->claims[2] = (struct sw_claim){.on_grant = on_grant};
    assert_int_equal(sw_claim_take(f->live, 0, &x, T0, &f->claims[0]), SW_CLAIM_GRANTED);
    assert_int_equal(sw_claim_take(f->live, 0, &x, T0 + 3000, &f->claims[1]), SW_CLAIM_GRANTED);
    assert_int_equal(sw_claim_take(f->live, 0, &x, T0 + 3000, &f->claims[2]), SW_CLAIM_QUEUED);
    static const struct {
        int64_t at_ms;          /* since the first holder took its slot */
        long n_overdue, n_busy;
        bool unbounded;
    } cases[] = {
        {4000, 0, 2, false},                    /* both within their estimate */
        {7700, 0, 2, false},                    /* the first at its threshold: still freeing */
        {7701, 1, 1, false},                    /* the first past it */
        {10700, 1, 1, false},                   /* the second at its threshold */
        {10701, 2, 0, true},                    /* both past: no slot frees */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct sw_live_snapshot snap;
        sw_live_snapshot(f->live, f->model, T0 + cases[i].at_ms, &snap);
        const struct sw_route_backend_view *v = &snap.backends[0];
        assert_string_equal(v->name, "e1");
        assert_int_equal(v->n_overdue, cases[i].n_overdue);
        assert_int_equal(v->n_busy, cases[i].n_busy);
        assert_int_equal(sw_route_est_ttft_ms(v, 100) >= 1e300, cases[i].unbounded);
        struct sw_route_backend_view ref;
        ref_view(f->live, snap.map[0], T0 + cases[i].at_ms, &ref);
        same_view(v, &ref);
    }
}

/* The same with the backends' states carried into a new config snapshot (a
 * reload), whose views start from its own copy of the config's fields. */
static void test_snapshot_after_reload(void **state)
{
    struct fx *f = *state;
    f->rng = 7;
    for (int i = 0; i < 3000; i++)
        event(f);
    for (size_t i = 0; i < N_CLAIMS; i++)
        sw_claim_settle(f->live, &f->claims[i], SW_CLAIM_NEUTRAL, 0, 0, -1, 0, 0, 0, -1, f->now);
    struct sw_live *next = sw_live_new(f->live->cfg, f->g, f->live, NULL, f->now);
    assert_non_null(next);
    sw_live_unref(f->live);
    f->live = next;
    f->model = sw_config_find_model(next->cfg, "chat");
    for (int i = 0; i < 5000; i++) {
        event(f);
        check(f);
    }
}

/* With shared state (state.redis): every replica's leases and queues count
 * while Redis answers, none while it is lost. The shared state's own code is
 * not involved: the test writes what a sync would have read. */
static void test_snapshot_with_replicas(void **state)
{
    static char shared;     /* stands for the connection: only its presence is read */
    struct fx *f = *state;
    f->rng = 11;
    f->g->rstate = (struct sw_rstate *)&shared;
    long remote = 0;
    for (int i = 0; i < 10000; i++) {
        event(f);
        check(f);
        remote += !f->g->remote_degraded && (f->live->b[0]->remote_queued > 0 ||
                                             f->live->b[1]->remote_queued > 0);
    }
    assert_true(remote > 1000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_snapshot_is_the_recomputed_view, setup, teardown),
        cmocka_unit_test_setup_teardown(test_snapshot_after_reload, setup, teardown),
        cmocka_unit_test_setup_teardown(test_snapshot_with_replicas, setup, teardown),
        cmocka_unit_test_setup_teardown(test_overdue_slots, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
