/* Router quality on the multi-turn agent scenario (agent_sim.h): prints,
 * with prefix affinity on and off, the cloud share against the oracle's,
 * the share of turns whose first token came within the TTFT budget, and
 * the local TTFT p50 of the turns after each conversation's first.
 * Built by the Makefile ($(BUILD)/bench/agent_replay).
 *
 *   agent_replay [SEED] [SCALE]
 *     SCALE multiplies the duration conversations start in (600 s at 1). */
#include <stdio.h>
#include <stdlib.h>

#include "agent_sim.h"

int main(int argc, char **argv)
{
    unsigned seed = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 1;
    double scale = argc > 2 ? strtod(argv[2], NULL) : 1.0;
    if (!(scale > 0)) {
        fprintf(stderr, "usage: agent_replay [SEED] [SCALE]\n");
        return 2;
    }
    struct ag_params p;
    ag_params_default(&p);
    p.seed = seed;
    p.duration_s *= scale;
    /* Exploration: AGENT_<PARAM>=value overrides a default. */
    const char *e;
    if ((e = getenv("AGENT_PREFILL")))
        p.prefill_ms_per_token = strtod(e, NULL);
    if ((e = getenv("AGENT_BUDGET")))
        p.budget_ms = strtol(e, NULL, 10);
    if ((e = getenv("AGENT_RATE")))
        p.conv_rate_per_s = strtod(e, NULL);
    if ((e = getenv("AGENT_SLOTS")))
        p.slots = (int)strtol(e, NULL, 10);
    if ((e = getenv("AGENT_CACHE")))
        p.cache_per_slot = (int)strtol(e, NULL, 10);
    if ((e = getenv("AGENT_GAP")))
        p.gap_ms = strtod(e, NULL);
    if ((e = getenv("AGENT_SYSTEM")))
        p.system_tokens = strtol(e, NULL, 10);
    if ((e = getenv("AGENT_OUT_MAX")))
        p.out_max = strtol(e, NULL, 10);
    if ((e = getenv("AGENT_OUT_MIN")))
        p.out_min = strtol(e, NULL, 10);
    if ((e = getenv("AGENT_TURN_MIN")))
        p.turn_min = strtol(e, NULL, 10);
    if ((e = getenv("AGENT_TURN_MAX")))
        p.turn_max = strtol(e, NULL, 10);
    if ((e = getenv("AGENT_TURNS")))
        p.turns = (int)strtol(e, NULL, 10);
    printf("agent scenario, seed %u: %d boxes x %d slots (%d prompts cached per slot), "
           "%.2f ms/prompt token, %.0f tokens/s; %d turns per conversation, system %ld tokens, "
           "+%ld..%ld per turn; budget %ld ms; cloud %.0f ms\n",
           seed, p.boxes, p.slots, p.cache_per_slot, p.prefill_ms_per_token, p.decode_tps,
           p.turns, p.system_tokens, p.turn_min, p.turn_max, p.budget_ms, p.cloud_ttft_ms);
    printf("%-12s %6s %9s %9s %10s %10s %10s %10s %9s %7s\n", "affinity", "turns", "gw_cloud%",
           "or_cloud%", "gw_in_bud%", "or_in_bud%", "later_p50", "or_p50", "affinity", "failed");
    for (int on = 1; on >= 0; on--) {
        struct ag_result r;
        p.affinity = on;
        if (ag_run(&p, &r))
            return 1;
        printf("%-12s %6ld %9.2f %9.2f %10.2f %10.2f %10.0f %10.0f %9ld %7ld\n", on ? "on" : "off",
               r.n, ag_pct(r.gw_cloud, r.n), ag_pct(r.or_cloud, r.n), ag_pct(r.gw_ok, r.n),
               ag_pct(r.or_ok, r.n), r.gw_local_later_p50_ms, r.or_local_later_p50_ms,
               r.gw_affinity, r.gw_failed);
    }
    return 0;
}
