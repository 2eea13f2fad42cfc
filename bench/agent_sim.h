/* Router quality on a multi-turn agent scenario (docs/routing.md, "Prefix
 * affinity"): conversations of many turns, each turn's prompt the previous
 * one plus new tool output, sent to two local boxes that keep a prefix
 * cache per slot and a cloud, through the gateway's real code (a parsed
 * config, sw_live with its affinity table and learned cache hits,
 * sw_claim, sw_live_snapshot + sw_live_prefix_view, sw_route_decide, the
 * relay's 25 ms re-check of a queued request), on a simulated clock.
 *
 * The boxes are llmsim's model with --prefix-cache: a generation takes the
 * free slot whose cache holds the longest prefix of its prompt if that is
 * more than a tenth of it, else the free slot used least recently, as
 * llama.cpp's server does (a slot keeps its latest `cache_per_slot`
 * prompts, least recently used dropped), and prefills only the rest; it reports the cached tokens as the servers
 * do. The cloud answers its first byte after a fixed delay.
 *
 * Turns arrive open-loop (each conversation's turns at fixed intervals
 * from its start), so the gateway's runs and the oracle see the same
 * arrivals; closed_loop instead sends each turn a gap after the previous
 * answer ended (the cloud's at its first token plus the answer at the
 * boxes' speed), as an agent that waits for each answer does, so no turn
 * ever overlaps the one before. The oracle knows the caches and every service time: in arrival
 * order it puts each turn on the local slot where its true first token is
 * soonest (FIFO behind what it kept, with the prefixes the turns it kept
 * there left), if that is within the budget, else on the cloud.
 * Deterministic for a given seed. */
#ifndef SW_BENCH_AGENT_SIM_H
#define SW_BENCH_AGENT_SIM_H

#include <stdbool.h>
#include <stdint.h>

struct ag_params {
    unsigned seed;
    bool affinity;              /* routing.affinity.enabled */
    int boxes;                  /* local boxes (1..4) */
    int slots;                  /* per box */
    int cache_per_slot;         /* prompts each slot's cache keeps */
    double prefill_ms_per_token;
    double decode_tps;
    long system_tokens;         /* each conversation's system prompt and tools */
    long turn_min, turn_max;    /* tokens each turn adds (tool output, the user's step) */
    long out_min, out_max;      /* output tokens per turn */
    int turns;                  /* per conversation */
    double gap_ms;              /* mean interval between a conversation's turns (at least
                                   half of it, the rest exponential) */
    double conv_rate_per_s;     /* conversations starting per second (Poisson) */
    double duration_s;          /* conversations start within this */
    long budget_ms;             /* routing.ttft_budget_ms */
    long degrade_ms;            /* routing.latency.degrade_ms: above the first token of a
                                   long prompt's full prefill, which agents send by design */
    double cloud_ttft_ms;
    bool closed_loop;           /* each turn sent a gap after the previous one's answer
                                   ended (a sequential agent), not at fixed times; the
                                   oracle then is the open-loop one's (not comparable) */
    bool trace;                 /* one line per spilled or late turn on stderr */
};

void ag_params_default(struct ag_params *p);

struct ag_result {
    long n;                     /* turns */
    long gw_cloud, or_cloud;
    long gw_ok, or_ok;          /* first token within the budget */
    long gw_failed;
    long gw_affinity;           /* served with reason affinity */
    long gw_moved;              /* queued turns that moved to another local (sw_route_move_local) */
    long gw_cached_turns;       /* local turns that found a prefix cached */
    double gw_local_later_p50_ms;   /* local TTFT p50 of turns after the first */
    double or_local_later_p50_ms;
    long gw_local_later, or_local_later;
};

int ag_run(const struct ag_params *p, struct ag_result *out);

static inline double ag_pct(long a, long n)
{
    return n > 0 ? 100.0 * (double)a / (double)n : 0;
}

#endif
