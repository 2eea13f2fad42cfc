/* The shared-state store through its interface (src/state/store.h): the
 * memory store a gateway without state.redis runs on answers every admit at
 * once and holds nothing; the Redis store installs itself in the shared
 * state, answers from its fallback while it cannot reach Redis (the spend
 * cap fails closed, local slots from the fallback share), and puts the
 * memory store back when freed. No Redis runs: the address refuses. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <event2/event.h>

#include "config/config.h"
#include "state/live.h"
#include "state/rstate.h"
#include "state/store.h"

/* edge: a local backend with 2 slots; cloud: rpm and tpm, priced. */
static const char yaml[] =
    "listen: \"127.0.0.1:0\"\n"
    "backends:\n"
    "  - {name: edge, tier: local, url: \"http://127.0.0.1:9001\", model: m, slots: 2}\n"
    "  - name: cloud\n"
    "    tier: cloud\n"
    "    url: \"http://127.0.0.1:9002\"\n"
    "    model: c\n"
    "    rpm: 2\n"
    "    tpm: 1000\n"
    "    price: {input_usd_per_mtok: 10, output_usd_per_mtok: 20}\n"
    "models:\n"
    "  - {name: chat, backends: [edge, cloud]}\n";

static const char yaml_redis[] =
    "listen: \"127.0.0.1:0\"\n"
    "backends:\n"
    "  - {name: edge, tier: local, url: \"http://127.0.0.1:9001\", model: m, slots: 2}\n"
    "  - {name: cloud, tier: cloud, url: \"http://127.0.0.1:9002\", model: c, rpm: 2}\n"
    "models:\n"
    "  - {name: chat, backends: [edge, cloud]}\n"
    "state: {redis: \"redis://127.0.0.1:1\", fallback_share: 0.5}\n";

enum { EDGE, CLOUD };
#define T0 1000000
#define WALL0 1700000000000LL

static int calls;

static void on_verdict(struct sw_store_hold *h, enum sw_store_verdict v)
{
    (void)h, (void)v;
    calls++;
}

static struct sw_config *parse(const char *text)
{
    struct sw_config *cfg = NULL;
    struct sw_config_errors errs;
    int err = sw_config_parse("store.yaml", text, strlen(text), NULL, NULL, &cfg, &errs);
    for (size_t i = 0; i < errs.n; i++)
        print_error("config: %s\n", errs.msgs[i]);
    sw_config_errors_free(&errs);
    return err ? NULL : cfg;
}

static void test_memory_answers_at_once(void **state)
{
    (void)state;
    struct sw_config *cfg = parse(yaml);
    assert_non_null(cfg);
    struct sw_live_shared *g = sw_live_shared_new(cfg, T0, WALL0);
    assert_non_null(g);
    struct sw_live *live = sw_live_new(cfg, g, NULL, NULL, T0);
    assert_non_null(live);
    const struct sw_store *s = &g->store;
    assert_ptr_equal(s->ops, &sw_store_memory_ops);
    assert_string_equal(s->ops->name, "memory");
    assert_false(s->ops->shared);
    assert_false(sw_store_degraded(s));
    assert_null(sw_store_degraded_reason(s));

    /* every shape of ask: a reservation, a probe, a bucket, a lease */
    static const struct {
        size_t be;
        double est_usd;
        bool probe;
        long tokens;
    } asks[] = {
        {EDGE, 0, false, 0}, {EDGE, 0, true, 0},  {CLOUD, 0.5, false, 300},
        {CLOUD, 0, true, 0}, {CLOUD, 1e9, true, 1L << 40},
    };
    calls = 0;
    for (size_t i = 0; i < sizeof asks / sizeof asks[0]; i++) {
        struct sw_store_hold h = {.cb = on_verdict};
        assert_int_equal(sw_store_admit(s, live, &h, asks[i].be, asks[i].est_usd, asks[i].probe,
                                        asks[i].tokens),
                         SW_STORE_OK);
        assert_null(h.op);
        assert_false(h.spend || h.lease || h.probe || h.bucket || h.fallback_lease);
        sw_store_release(s, live, &h, 0.25, true, 100);
        assert_false(h.spend || h.lease || h.probe || h.bucket || h.fallback_lease);
        assert_true(h.est_usd == 0);
        assert_int_equal(h.bucket_tokens, 0);
        sw_store_breaker_check(s, live, asks[i].be);
        sw_store_breaker_reset(s, live, asks[i].be);
    }
    sw_store_flags_changed(s);
    assert_int_equal(calls, 0); /* the verdict came back, never through the callback */
    /* nothing the store did reached the state every request reads */
    assert_int_equal(live->b[EDGE]->announced_open_until, 0);
    assert_int_equal(live->b[CLOUD]->announced_open_until, 0);

    sw_live_unref(live);
    sw_live_shared_free(g);
    sw_config_unref(cfg);
}

static void test_redis_installs_and_falls_back(void **state)
{
    (void)state;
    struct sw_config *cfg = parse(yaml_redis);
    assert_non_null(cfg);
    struct event_base *base = event_base_new();
    assert_non_null(base);
    struct sw_live_shared *g = sw_live_shared_new(cfg, T0, WALL0);
    struct sw_live *live = sw_live_new(cfg, g, NULL, NULL, T0);
    assert_non_null(live);
    struct sw_rstate *rs = sw_rstate_new(base, cfg, g);
    assert_non_null(rs);
    sw_rstate_set_live(rs, live);
    const struct sw_store *s = &g->store;
    assert_ptr_equal(s->ctx, rs);
    assert_string_equal(s->ops->name, "redis");
    assert_true(s->ops->shared);
    /* not connected yet: degraded */
    assert_true(sw_store_degraded(s));
    assert_string_equal(sw_store_degraded_reason(s), "redis");

    calls = 0;
    /* a spend reservation without a shared counter fails closed */
    struct sw_store_hold spend = {.cb = on_verdict};
    assert_int_equal(sw_store_admit(s, live, &spend, CLOUD, 0.01, false, 10), SW_STORE_SPEND_FULL);
    sw_store_release(s, live, &spend, 0, false, 0);
    /* a local backend's slots: half of 2 (fallback_share 0.5) while Redis is away */
    struct sw_store_hold a = {.cb = on_verdict}, b = {.cb = on_verdict};
    assert_int_equal(sw_store_admit(s, live, &a, EDGE, 0, false, 0), SW_STORE_OK);
    assert_true(a.fallback_lease);
    assert_int_equal(sw_store_admit(s, live, &b, EDGE, 0, false, 0), SW_STORE_NO_SLOT);
    sw_store_release(s, live, &a, 0, true, 0);
    assert_false(a.fallback_lease);
    assert_int_equal(sw_store_admit(s, live, &b, EDGE, 0, false, 0), SW_STORE_OK);
    sw_store_release(s, live, &b, 0, true, 0);
    /* announcements without a connection do nothing */
    sw_store_breaker_check(s, live, EDGE);
    sw_store_breaker_reset(s, live, EDGE);
    sw_store_flags_changed(s);
    assert_int_equal(calls, 0);

    sw_rstate_free(rs);
    assert_ptr_equal(g->store.ops, &sw_store_memory_ops);
    assert_null(g->rstate);
    sw_live_unref(live);
    sw_live_shared_free(g);
    sw_config_unref(cfg);
    event_base_free(base);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_memory_answers_at_once),
        cmocka_unit_test(test_redis_installs_and_falls_back),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
