/* Router quality on the multi-turn agent scenario (agent_sim.h): prints,
 * with prefix affinity on and off, the cloud share against the oracle's,
 * the share of turns whose first token came within the TTFT budget, and
 * the local TTFT p50 of the turns after each conversation's first.
 * Built by the Makefile ($(BUILD)/bench/agent_replay).
 *
 *   agent_replay [SEED | FIRST..LAST] [SCALE]
 *     SCALE multiplies the duration conversations start in (600 s at 1).
 *     A range of seeds prints one line per seed and the means over them.
 *   AGENT_TRACE=1 prints every turn that went to the cloud or was late to
 *   stderr, with what the router saw of each box and what the boxes held.
 *   AGENT_CLOSED=1: each turn sent AGENT_GAP (mean) after the previous
 *   answer ended, as a sequential agent sends them; the oracle's columns
 *   are then the open-loop trace's and are left out. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent_sim.h"

static void overrides(struct ag_params *p)
{
    /* Exploration: AGENT_<PARAM>=value overrides a default. */
    const char *e;
    if ((e = getenv("AGENT_PREFILL")))
        p->prefill_ms_per_token = strtod(e, NULL);
    if ((e = getenv("AGENT_BUDGET")))
        p->budget_ms = strtol(e, NULL, 10);
    if ((e = getenv("AGENT_RATE")))
        p->conv_rate_per_s = strtod(e, NULL);
    if ((e = getenv("AGENT_SLOTS")))
        p->slots = (int)strtol(e, NULL, 10);
    if ((e = getenv("AGENT_CACHE")))
        p->cache_per_slot = (int)strtol(e, NULL, 10);
    if ((e = getenv("AGENT_GAP")))
        p->gap_ms = strtod(e, NULL);
    if ((e = getenv("AGENT_SYSTEM")))
        p->system_tokens = strtol(e, NULL, 10);
    if ((e = getenv("AGENT_OUT_MAX")))
        p->out_max = strtol(e, NULL, 10);
    if ((e = getenv("AGENT_OUT_MIN")))
        p->out_min = strtol(e, NULL, 10);
    if ((e = getenv("AGENT_TURN_MIN")))
        p->turn_min = strtol(e, NULL, 10);
    if ((e = getenv("AGENT_TURN_MAX")))
        p->turn_max = strtol(e, NULL, 10);
    if ((e = getenv("AGENT_TURNS")))
        p->turns = (int)strtol(e, NULL, 10);
    p->trace = (e = getenv("AGENT_TRACE")) && *e && strcmp(e, "0");
    p->closed_loop = (e = getenv("AGENT_CLOSED")) && *e && strcmp(e, "0");
}

struct mean {
    double cloud, or_cloud, ok, p50;
    int n;
};

int main(int argc, char **argv)
{
    const char *seeds = argc > 1 ? argv[1] : "1";
    unsigned first = (unsigned)strtoul(seeds, NULL, 10), last = first;
    const char *dots = strstr(seeds, "..");
    if (dots)
        last = (unsigned)strtoul(dots + 2, NULL, 10);
    double scale = argc > 2 ? strtod(argv[2], NULL) : 1.0;
    if (!(scale > 0) || last < first) {
        fprintf(stderr, "usage: agent_replay [SEED | FIRST..LAST] [SCALE]\n");
        return 2;
    }
    struct ag_params p;
    ag_params_default(&p);
    p.duration_s *= scale;
    overrides(&p);
    printf("agent scenario, seed%s %s: %d boxes x %d slots (%d prompts cached per slot), "
           "%.2f ms/prompt token, %.0f tokens/s; %d turns per conversation, system %ld tokens, "
           "+%ld..%ld per turn; budget %ld ms; cloud %.0f ms%s\n",
           dots ? "s" : "", seeds, p.boxes, p.slots, p.cache_per_slot, p.prefill_ms_per_token,
           p.decode_tps, p.turns, p.system_tokens, p.turn_min, p.turn_max, p.budget_ms,
           p.cloud_ttft_ms, p.closed_loop ? "; closed loop (each turn after the answer before)" : "");
    printf("%-4s %-8s %6s %9s %9s %10s %10s %10s %10s %9s %6s %7s\n", "seed", "affinity",
           "turns", "gw_cloud%", "or_cloud%", "gw_in_bud%", "or_in_bud%", "later_p50", "or_p50",
           "affinity", "moved", "failed");
    struct mean m[2] = {{0}};
    for (unsigned seed = first; seed <= last; seed++) {
        p.seed = seed;
        for (int on = 1; on >= 0; on--) {
            struct ag_result r;
            p.affinity = on;
            if (ag_run(&p, &r))
                return 1;
            printf("%-4u %-8s %6ld %9.2f %9.2f %10.2f %10.2f %10.0f %10.0f %9ld %6ld %7ld\n",
                   seed, on ? "on" : "off", r.n, ag_pct(r.gw_cloud, r.n),
                   ag_pct(r.or_cloud, r.n), ag_pct(r.gw_ok, r.n), ag_pct(r.or_ok, r.n),
                   r.gw_local_later_p50_ms, r.or_local_later_p50_ms, r.gw_affinity, r.gw_moved,
                   r.gw_failed);
            m[on].cloud += ag_pct(r.gw_cloud, r.n);
            m[on].or_cloud += ag_pct(r.or_cloud, r.n);
            m[on].ok += ag_pct(r.gw_ok, r.n);
            m[on].p50 += r.gw_local_later_p50_ms;
            m[on].n++;
        }
    }
    if (last > first) {
        for (int on = 1; on >= 0; on--)
            if (p.closed_loop)
                printf("mean %s: cloud %.2f %%, within budget %.2f %%, later turns' local p50 "
                       "%.0f ms\n", on ? "on" : "off", m[on].cloud / m[on].n, m[on].ok / m[on].n,
                       m[on].p50 / m[on].n);
            else
                printf("mean %s: cloud %.2f %% (oracle %.2f %%), within budget %.2f %%, later "
                       "turns' local p50 %.0f ms\n", on ? "on" : "off", m[on].cloud / m[on].n,
                       m[on].or_cloud / m[on].n, m[on].ok / m[on].n, m[on].p50 / m[on].n);
        double on = m[1].cloud / m[1].n, off = m[0].cloud / m[0].n;
        if (p.closed_loop)
            printf("cloud share %.1f %% lower with affinity; later p50 %.2f x lower (or_ "
                   "columns: the open-loop trace's oracle, not this one's)\n",
                   off > 0 ? 100 * (1 - on / off) : 0, m[1].p50 > 0 ? m[0].p50 / m[1].p50 : 0);
        else
            printf("cloud share %.1f %% lower with affinity (target >= 30), %.2f points above "
                   "the oracle (target <= 2); later p50 %.2f x lower (target >= 2)\n",
                   off > 0 ? 100 * (1 - on / off) : 0, on - m[1].or_cloud / m[1].n,
                   m[1].p50 > 0 ? m[0].p50 / m[1].p50 : 0);
    }
    return 0;
}
