/* Prefix affinity in the live state (src/state/live.c): a local answer
 * puts its prefix in that backend's table; a snapshot for the next turn
 * shows prefix_tokens on that backend only, and cached_tokens once the
 * server reported hits (that share of the prefix, by box state: alone or
 * beside requests that came matched, or beside work that may hold the
 * slot keeping the prefix); a request that
 * would wait on a multi-slot box is estimated uncached; a full table shows
 * how long ago it served the entry it drops next; a request extending the
 * prompt of one running on a box follows it (estimated at its slot's
 * release); affinity off or a
 * cloud: nothing; a reload keeps the tables, a new bound empties them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/err.h"
#include "config/config.h"
#include "state/live.h"

#define T0 1000000
#define WALL0 1700000000000LL

static const char *const yaml_fmt =
    "listen: \"127.0.0.1:0\"\n"
    "backends:\n"
    "  - {name: e1, tier: local, url: \"http://127.0.0.1:9001\", model: m, slots: 2}\n"
    "  - {name: e2, tier: local, url: \"http://127.0.0.1:9002\", model: m, slots: 1}\n"
    "  - {name: c1, tier: cloud, url: \"http://127.0.0.1:9003\", model: c}\n"
    "models:\n"
    "  - {name: chat, backends: [e1, e2, c1]}\n"
    "routing:\n"
    "  affinity: {enabled: %s, ttl_s: 10, max_entries: %d}\n";

static struct sw_config *load(const char *enabled, int max)
{
    char yaml[1024];
    snprintf(yaml, sizeof yaml, yaml_fmt, enabled, max);
    struct sw_config *cfg = NULL;
    struct sw_config_errors errs;
    int err = sw_config_parse("t.yaml", yaml, strlen(yaml), NULL, NULL, &cfg, &errs);
    sw_config_errors_free(&errs);
    assert_int_equal(err, SW_OK);
    return cfg;
}

static struct sw_prefix turn(int k)
{
    struct sw_prefix p = {0};
    for (int j = 0; j < k; j++) {
        p.hash[j] = 0xabc0 + (uint64_t)j;
        p.tokens[j] = 1000 * (j + 1);
    }
    p.n = (size_t)k;
    return p;
}

static void view(struct sw_live *l, const struct sw_prefix *p, int64_t now,
                 struct sw_live_snapshot *snap)
{
    sw_live_snapshot(l, sw_config_find_model(l->cfg, "chat"), now, snap);
    sw_live_prefix_view(l, p, now, snap);
}

static void test_served_then_matched(void **state)
{
    (void)state;
    struct sw_config *cfg = load("true", 16);
    struct sw_live_shared *g = sw_live_shared_new(cfg, T0, WALL0);
    struct sw_live *l = sw_live_new(cfg, g, NULL, NULL, T0);
    assert_non_null(l);
    struct sw_prefix t1 = turn(2), t2 = turn(4);
    struct sw_live_snapshot s;
    view(l, &t2, T0, &s);
    assert_int_equal(s.backends[0].prefix_tokens, 0);
    /* e2 served turn 1; a cloud answer puts nothing */
    sw_live_prefix_served(l, 1, &t1, T0);
    sw_live_prefix_served(l, 2, &t2, T0);
    view(l, &t2, T0 + 1, &s);
    assert_int_equal(s.backends[0].prefix_tokens, 0);
    assert_int_equal(s.backends[1].prefix_tokens, 2000);
    assert_int_equal(s.backends[2].prefix_tokens, 0);
    /* no hit reported yet: the full prompt */
    assert_true(s.backends[1].cached_tokens == 0);
    assert_int_equal(sw_live_affinity_entries(l), 2);
    /* e2 reports the hit; no report (-1) and no prediction teach nothing */
    sw_live_on_cache(l, 1, 2000, -1, false);
    sw_live_on_cache(l, 1, 0, 500, false);
    assert_true(sw_live_cache_hit(l, 1, false) == 0);
    sw_live_on_cache(l, 1, 2000, 2400, false);     /* clamped at 1 */
    assert_true(sw_live_cache_hit(l, 1, false) == 1);
    view(l, &t2, T0 + 2, &s);
    assert_true(s.backends[1].cached_tokens == 2000);
    /* a box that reports misses: the expected cached tokens, that share of
     * the prefix */
    sw_live_on_cache(l, 1, 2000, 0, false);
    sw_live_on_cache(l, 1, 2000, 0, false);
    double hit = sw_live_cache_hit(l, 1, false);
    assert_true(hit > 0.48 && hit < 0.5);
    view(l, &t2, T0 + 3, &s);
    assert_int_equal(s.backends[1].prefix_tokens, 2000);
    assert_true(s.backends[1].cached_tokens == 2000 * hit);
    /* all misses: none */
    for (int k = 0; k < 200; k++)
        sw_live_on_cache(l, 1, 2000, 0, false);
    view(l, &t2, T0 + 4, &s);
    assert_true(s.backends[1].cached_tokens < 1e-6);
    /* past the TTL: gone */
    view(l, &t2, T0 + 10001, &s);
    assert_int_equal(s.backends[1].prefix_tokens, 0);
    sw_live_unref(l);
    sw_live_shared_free(g);
    sw_config_unref(cfg);
}

/* What a request no box holds a prefix of would displace: the age of the
 * least recently served entry of a full table, SW_ROUTE_DROP_NONE while it
 * has room; nothing on a cloud or with affinity off. */
static void test_drop_age(void **state)
{
    (void)state;
    struct sw_config *cfg = load("true", 2);
    struct sw_live_shared *g = sw_live_shared_new(cfg, T0, WALL0);
    struct sw_live *l = sw_live_new(cfg, g, NULL, NULL, T0);
    assert_non_null(l);
    struct sw_prefix a = turn(2), other = turn(1);
    other.hash[0] = 0x5eed;
    struct sw_live_snapshot s;
    view(l, &other, T0, &s);
    assert_true(s.backends[0].drop_age_ms == SW_ROUTE_DROP_NONE);
    sw_live_prefix_served(l, 0, &a, T0);         /* block 0 and the prompt: full */
    view(l, &other, T0 + 500, &s);
    assert_true(s.backends[0].drop_age_ms == 500);
    assert_true(s.backends[1].drop_age_ms == SW_ROUTE_DROP_NONE);
    assert_true(s.backends[2].drop_age_ms == 0);
    sw_live_unref(l);
    sw_live_shared_free(g);
    sw_config_unref(cfg);
    cfg = load("false", 2);
    g = sw_live_shared_new(cfg, T0, WALL0);
    l = sw_live_new(cfg, g, NULL, NULL, T0);
    sw_live_prefix_served(l, 0, &a, T0);
    view(l, &other, T0 + 500, &s);
    assert_true(s.backends[0].drop_age_ms == 0 && s.backends[1].drop_age_ms == 0);
    sw_live_unref(l);
    sw_live_shared_free(g);
    sw_config_unref(cfg);
}

static void test_busy_and_waiting(void **state)
{
    (void)state;
    struct sw_config *cfg = load("true", 16);
    struct sw_live_shared *g = sw_live_shared_new(cfg, T0, WALL0);
    struct sw_live *l = sw_live_new(cfg, g, NULL, NULL, T0);
    struct sw_prefix t1 = turn(2), t2 = turn(3);
    sw_live_prefix_served(l, 0, &t1, T0);
    sw_live_on_cache(l, 0, 2000, 2000, false);     /* alone on the box: a hit */
    sw_live_on_cache(l, 0, 2000, 0, true);         /* beside other work: a miss */
    struct sw_live_snapshot s;
    view(l, &t2, T0 + 1, &s);
    assert_true(s.backends[0].cached_tokens == 2000);
    /* one request running in e1's other slot that this replica does not
     * know of: the busy share (a miss) */
    l->b[0]->q.in_flight = 1;
    view(l, &t2, T0 + 2, &s);
    assert_false(sw_live_cache_busy(l, 1, &s.backends[1]));
    assert_true(sw_live_cache_busy(l, 0, &s.backends[0]));
    assert_true(s.backends[0].cached_tokens == 0);
    /* it is one of ours that came matched: it runs in the slot holding its
     * own prefix, so this one finds its slot free (the idle share) */
    struct sw_live_busy r = {T0, 3000, 64, true, false, 0, 0, NULL, NULL};
    sw_live_busy_add(l->b[0], &r);
    view(l, &t2, T0 + 2, &s);
    assert_false(sw_live_cache_busy(l, 0, &s.backends[0]));
    assert_true(s.backends[0].cached_tokens == 2000);
    /* one that came unmatched may hold that slot: the busy share */
    sw_live_busy_remove(l->b[0], &r);
    r.unmatched = true;
    sw_live_busy_add(l->b[0], &r);
    view(l, &t2, T0 + 2, &s);
    assert_true(sw_live_cache_busy(l, 0, &s.backends[0]));
    assert_true(s.backends[0].cached_tokens == 0);
    /* outside load reported by the server: the busy share */
    sw_live_busy_remove(l->b[0], &r);
    r.unmatched = false;
    sw_live_busy_add(l->b[0], &r);
    s.backends[0].outside_load = 1;
    assert_true(sw_live_cache_busy(l, 0, &s.backends[0]));
    sw_live_busy_remove(l->b[0], &r);
    /* both slots busy: it would wait, uncached whatever the share */
    sw_live_on_cache(l, 0, 2000, 2000, true);
    sw_live_on_cache(l, 0, 2000, 2000, true);
    sw_live_on_cache(l, 0, 2000, 2000, true);
    sw_live_on_cache(l, 0, 2000, 2000, true);
    sw_live_on_cache(l, 0, 2000, 2000, true);  /* that state's share rises */
    view(l, &t2, T0 + 3, &s);
    assert_true(s.backends[0].cached_tokens > 0);
    l->b[0]->q.in_flight = 2;
    view(l, &t2, T0 + 4, &s);
    assert_int_equal(s.backends[0].prefix_tokens, 2000);
    assert_true(s.backends[0].cached_tokens == 0);
    /* a one-slot box: waiting for its only slot, the cache still counts */
    sw_live_prefix_served(l, 1, &t1, T0 + 5);
    sw_live_on_cache(l, 1, 2000, 2000, false);
    l->b[1]->q.in_flight = 1;
    view(l, &t2, T0 + 6, &s);
    assert_true(s.backends[1].cached_tokens == 2000);
    l->b[0]->q.in_flight = 0;
    l->b[1]->q.in_flight = 0;
    sw_live_unref(l);
    sw_live_shared_free(g);
    sw_config_unref(cfg);
}

/* Following a running turn: a request whose prefix extends the whole
 * prompt of one running on e2 (its tail) is estimated at that slot's
 * release, finding that prompt there at the idle hit share; not while
 * another request waits for e2, nor before a hit share is learned. */
static void test_follow_a_running_turn(void **state)
{
    (void)state;
    struct sw_config *cfg = load("true", 16);
    struct sw_live_shared *g = sw_live_shared_new(cfg, T0, WALL0);
    struct sw_live *l = sw_live_new(cfg, g, NULL, NULL, T0);
    struct sw_prefix t3 = turn(3), t2 = turn(2);
    struct sw_live_busy r = {T0, 500, 64, true, false, t2.hash[1], t2.tokens[1], NULL, NULL};
    sw_live_busy_add(l->b[1], &r);
    l->b[1]->q.in_flight = 1;
    struct sw_live_snapshot s;
    view(l, &t3, T0 + 100, &s);
    assert_true(s.backends[1].follow_left_ms == 0);     /* no hit share yet */
    sw_live_on_cache(l, 1, 1000, 1000, false);
    view(l, &t3, T0 + 100, &s);
    const struct sw_route_backend_view *v = &s.backends[1];
    assert_float_equal(v->follow_left_ms, sw_route_busy_left_ms(v, 500, 64, 100), 1e-9);
    assert_int_equal(v->prefix_tokens, 2000);
    assert_true(v->cached_tokens == 2000);
    double follow = sw_route_est_ttft_ms(v, 3000);
    struct sw_route_backend_view w = *v;
    w.follow_left_ms = 0;
    w.cached_tokens = 0;
    assert_true(follow < sw_route_est_ttft_ms(&w, 3000));
    assert_true(s.backends[0].follow_left_ms == 0);     /* e1 runs nothing of it */
    /* a request for the other conversation (block 0 only in common) */
    struct sw_prefix other = turn(3);
    other.hash[1] = other.hash[2] = 7;
    view(l, &other, T0 + 100, &s);
    assert_true(s.backends[1].follow_left_ms == 0);
    /* somebody waits for e2: the slot is theirs */
    l->b[1]->q.queued = 1;
    view(l, &t3, T0 + 100, &s);
    assert_true(s.backends[1].follow_left_ms == 0);
    l->b[1]->q.queued = 0;
    l->b[1]->q.in_flight = 0;
    /* the running turn is found while it runs, and not once it ended (its
     * tail no longer counted), nor when only another one runs */
    assert_ptr_equal(sw_live_busy_extended(l->b[1], &t3), &l->b[1]->busy[0]);
    sw_live_busy_remove(l->b[1], &r);
    assert_null(sw_live_busy_extended(l->b[1], &t3));
    struct sw_live_busy o = {T0, 500, 64, true, false, 7, 2000, NULL, NULL};
    sw_live_busy_add(l->b[1], &o);
    assert_null(sw_live_busy_extended(l->b[1], &t3));
    assert_ptr_equal(sw_live_busy_extended(l->b[1], &other), &l->b[1]->busy[0]);
    sw_live_busy_remove(l->b[1], &o);
    assert_int_equal(l->b[1]->tails[7], 0);
    sw_live_unref(l);
    sw_live_shared_free(g);
    sw_config_unref(cfg);
}

static void test_server_rate(void **state)
{
    (void)state;
    struct sw_config *cfg = load("true", 16);
    struct sw_live_shared *g = sw_live_shared_new(cfg, T0, WALL0);
    struct sw_live *l = sw_live_new(cfg, g, NULL, NULL, T0);
    struct sw_prefix t1 = turn(2), t2 = turn(3);
    sw_live_prefix_served(l, 0, &t1, T0);
    /* answers without a figure (vLLM without prompt token details) ... */
    sw_live_on_cache(l, 0, 2000, -1, false);
    /* ... and its /metrics rate teaches both states */
    sw_live_on_cache_rate(l, 0, 0.9);
    assert_true(sw_live_cache_hit(l, 0, false) == 0.9);
    assert_true(sw_live_cache_hit(l, 0, true) == 0.9);
    struct sw_live_snapshot s;
    view(l, &t2, T0 + 1, &s);
    assert_true(s.backends[0].cached_tokens == 2000 * 0.9);
    /* a low rate (most prompts new): that lower share of the prefix */
    sw_live_on_cache_rate(l, 0, 0.2);
    view(l, &t2, T0 + 2, &s);
    assert_true(s.backends[0].cached_tokens == 2000 * sw_live_cache_hit(l, 0, false));
    assert_true(s.backends[0].cached_tokens < 2000 * 0.9);
    /* a server whose answers carry the figure: those teach, the rate does not */
    sw_live_prefix_served(l, 1, &t1, T0 + 3);
    sw_live_on_cache(l, 1, 2000, 2000, false);
    sw_live_on_cache_rate(l, 1, 0.1);
    assert_true(sw_live_cache_hit(l, 1, false) == 1);
    assert_true(sw_live_cache_hit(l, 1, true) == 0);
    sw_live_unref(l);
    sw_live_shared_free(g);
    sw_config_unref(cfg);
}

static void test_off_and_reload(void **state)
{
    (void)state;
    struct sw_config *off = load("false", 16);
    struct sw_live_shared *g = sw_live_shared_new(off, T0, WALL0);
    struct sw_live *l = sw_live_new(off, g, NULL, NULL, T0);
    struct sw_prefix t1 = turn(2), t2 = turn(3);
    sw_live_prefix_served(l, 0, &t1, T0);
    struct sw_live_snapshot s;
    view(l, &t2, T0 + 1, &s);
    assert_int_equal(s.backends[0].prefix_tokens, 0);
    assert_int_equal(sw_live_affinity_entries(l), 0);
    /* turned on by a reload: the backends' state carries over */
    struct sw_config *on = load("true", 16);
    struct sw_live *l2 = sw_live_new(on, g, l, NULL, T0 + 2);
    sw_live_unref(l);
    sw_live_prefix_served(l2, 0, &t1, T0 + 3);
    view(l2, &t2, T0 + 4, &s);
    assert_int_equal(s.backends[0].prefix_tokens, 2000);
    /* the same bounds: kept; a new bound: emptied */
    struct sw_config *same = load("true", 16);
    struct sw_live *l3 = sw_live_new(same, g, l2, NULL, T0 + 5);
    sw_live_unref(l2);
    view(l3, &t2, T0 + 6, &s);
    assert_int_equal(s.backends[0].prefix_tokens, 2000);
    struct sw_config *other = load("true", 8);
    struct sw_live *l4 = sw_live_new(other, g, l3, NULL, T0 + 7);
    sw_live_unref(l3);
    view(l4, &t2, T0 + 8, &s);
    assert_int_equal(s.backends[0].prefix_tokens, 0);
    /* no identity: nothing */
    struct sw_prefix none = {0};
    sw_live_prefix_served(l4, 0, &none, T0 + 9);
    view(l4, &none, T0 + 10, &s);
    assert_int_equal(s.backends[0].prefix_tokens, 0);
    sw_live_unref(l4);
    sw_live_shared_free(g);
    sw_config_unref(off);
    sw_config_unref(on);
    sw_config_unref(same);
    sw_config_unref(other);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_served_then_matched),
        cmocka_unit_test(test_drop_age),
        cmocka_unit_test(test_busy_and_waiting),
        cmocka_unit_test(test_follow_a_running_turn),
        cmocka_unit_test(test_server_rate),
        cmocka_unit_test(test_off_and_reload),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
