/* Router quality on the multi-turn agent scenario (bench/agent_sim.c): two
 * local boxes with a prefix cache and a cloud, conversations of 12 turns,
 * replayed through the gateway's real config, live state (its affinity
 * tables and learned cache hits), claims and router, next to an oracle that
 * knows the caches. Means over seeds 1..40: with prefix affinity the first
 * token comes within the TTFT budget for >= 99 % of the turns, the cloud
 * share is within 2 points of the oracle's and at least 30 % (relative)
 * below the share with affinity off, and the later turns' local first
 * token p50 is at least 2 x lower than with affinity off. docs/routing.md, "Prefix
 * affinity". */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "../../bench/agent_sim.c"

static void test_agent_scenario(void **state)
{
    (void)state;
    double on_cloud = 0, or_cloud = 0, off_cloud = 0, on_ok = 0, on_p50 = 0, off_p50 = 0;
    const int seeds = 40;
    for (int seed = 1; seed <= seeds; seed++) {
        struct ag_params p;
        struct ag_result on, off;
        ag_params_default(&p);
        p.seed = (unsigned)seed;
        assert_int_equal(ag_run(&p, &on), 0);
        p.affinity = false;
        assert_int_equal(ag_run(&p, &off), 0);
        print_message("seed %d: turns %ld  cloud %5.2f %% (oracle %5.2f %%, off %5.2f %%)  within "
                      "budget %6.2f %% (off %6.2f %%)  later local p50 %4.0f ms (off %4.0f ms)  "
                      "affinity %ld\n", seed, on.n, ag_pct(on.gw_cloud, on.n),
                      ag_pct(on.or_cloud, on.n), ag_pct(off.gw_cloud, off.n),
                      ag_pct(on.gw_ok, on.n), ag_pct(off.gw_ok, off.n), on.gw_local_later_p50_ms,
                      off.gw_local_later_p50_ms, on.gw_affinity);
        assert_true(on.n > 100);
        assert_int_equal(on.gw_failed, 0);
        assert_int_equal(on.or_ok, on.n);       /* the oracle is never late */
        assert_true(on.gw_affinity > 0);        /* the reason is used */
        assert_int_equal(off.gw_affinity, 0);
        on_cloud += ag_pct(on.gw_cloud, on.n) / seeds;
        or_cloud += ag_pct(on.or_cloud, on.n) / seeds;
        off_cloud += ag_pct(off.gw_cloud, off.n) / seeds;
        on_ok += ag_pct(on.gw_ok, on.n) / seeds;
        on_p50 += on.gw_local_later_p50_ms / seeds;
        off_p50 += off.gw_local_later_p50_ms / seeds;
    }
    print_message("mean: cloud %.2f %% (oracle %.2f %%, off %.2f %%: %.0f %% lower), within "
                  "budget %.2f %%, later local p50 %.0f ms (off %.0f ms)\n", on_cloud, or_cloud,
                  off_cloud, 100 * (1 - on_cloud / off_cloud), on_ok, on_p50, off_p50);
    if (on_ok < 99)
        fail_msg("%.2f %% within the budget, want >= 99 %%", on_ok);
    if (on_cloud > or_cloud + 2)
        fail_msg("cloud %.2f %%, oracle %.2f %%: want within 2 points", on_cloud, or_cloud);
    if (on_cloud > 0.7 * off_cloud)
        fail_msg("cloud %.2f %% with affinity, %.2f %% without: want >= 30 %% lower", on_cloud,
                 off_cloud);
    if (2 * on_p50 > off_p50)
        fail_msg("later local p50 %.0f ms with affinity, %.0f ms without: want >= 2 x lower",
                 on_p50, off_p50);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_agent_scenario),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
