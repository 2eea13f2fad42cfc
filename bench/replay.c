/* Offline replay of the spill decision against an oracle (replay_sim.h):
 * prints, per phase, the cloud share of the gateway and of the oracle and
 * the share of requests whose first token came within the TTFT budget.
 * Built by the Makefile (make replay: $(BUILD)/bench/replay).
 *
 *   replay [uniform|varied|both] [SEED] [SCALE]
 *     SCALE multiplies the phase lengths (600 s / 300 s / 600 s at 1).
 *   REPLAY_KNOWS_OUTPUT=1 replay ...
 *     analysis: every request's max_tokens is its true output length, as if
 *     the gateway knew it (the oracle does): what is left of the gap then is
 *     not the output-length uncertainty. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "replay_sim.h"

static const char *const phase_names[RP_NPHASES] = {"baseline", "spike", "baseline-after"};

static int run(bool varied, unsigned seed, double scale)
{
    struct rp_params p;
    struct rp_result r;
    rp_params_default(&p, varied);
    p.seed = seed;
    p.knows_output = getenv("REPLAY_KNOWS_OUTPUT") && *getenv("REPLAY_KNOWS_OUTPUT") == '1';
    for (int k = 0; k < RP_NPHASES; k++)
        p.phase_s[k] *= scale;
    if (rp_run(&p, &r))
        return 1;
    printf("variant %s%s, seed %u: box %d slots, %.2f ms/prompt token, %.0f tokens/s per slot, "
           "capacity %.3f req/s; load %.1f / %.1f / %.1f x capacity; budget %ld ms; "
           "slowdown x%.1f in %.0f..%.0f %% of the spike\n",
           varied ? "varied" : "uniform", p.knows_output ? " (output lengths known)" : "", seed, p.slots, p.prefill_ms_per_token, p.decode_tps,
           r.capacity_rps, p.base_load, p.spike_load, p.base_load, p.budget_ms, p.slow_factor,
           p.slow_from * 100, p.slow_to * 100);
    printf("%-15s %6s %9s %9s %7s %9s %9s %8s %7s %8s %6s\n", "phase", "n", "gw_cloud%",
           "or_cloud%", "extra", "gw_in_bud%", "or_in_bud%", "@arrival", "queue", "degraded",
           "failed");
    for (int k = 0; k < RP_NPHASES; k++) {
        const struct rp_phase *ph = &r.ph[k];
        printf("%-15s %6ld %9.2f %9.2f %7.2f %9.2f %10.2f %8ld %7ld %8ld %6ld\n", phase_names[k],
               ph->n, rp_pct(ph->gw_cloud, ph->n), rp_pct(ph->or_cloud, ph->n),
               rp_pct(ph->gw_cloud, ph->n) - rp_pct(ph->or_cloud, ph->n),
               rp_pct(ph->gw_ok, ph->n), rp_pct(ph->or_ok, ph->n), ph->gw_at_arrival,
               ph->gw_left_queue, ph->gw_degraded, ph->gw_failed);
    }
    return 0;
}

int main(int argc, char **argv)
{
    const char *which = argc > 1 ? argv[1] : "both";
    unsigned seed = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 10) : 1;
    double scale = argc > 3 ? strtod(argv[3], NULL) : 1.0;
    if (!(scale > 0) || (strcmp(which, "uniform") && strcmp(which, "varied") &&
                         strcmp(which, "both"))) {
        fprintf(stderr, "usage: replay [uniform|varied|both] [SEED] [SCALE]\n");
        return 2;
    }
    int rc = 0;
    if (strcmp(which, "varied"))
        rc |= run(false, seed, scale);
    if (strcmp(which, "uniform"))
        rc |= run(true, seed, scale);
    return rc;
}
