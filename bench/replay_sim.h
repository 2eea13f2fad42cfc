/* Offline replay of the spill decision against an oracle (docs/routing.md,
 * "Replay against an oracle").
 *
 * A Poisson arrival trace in three phases (baseline, spike, baseline) is fed
 * through the gateway's real state and router: a parsed config, sw_live (the
 * learned rates, latency windows, the gateway's local queue), sw_claim (slot
 * and queue), sw_live_snapshot and sw_route_decide, with the queued request's
 * re-check the relay does (every 25 ms: leave for the cloud once the
 * estimated first token breaks the TTFT budget). The local box is simulated
 * like llmsim's performance model (slots, prefill ms per prompt token, decode
 * tokens/s per slot, first byte after prefill + one token period), with an
 * optional slowdown during part of the spike.
 *
 * The oracle sees the same arrivals and knows every request's true service
 * time: it keeps a request local whenever its true first token (FIFO behind
 * what it already kept local) is within the budget, else sends it to the
 * cloud. The cloud answers its first byte after a fixed delay within the
 * budget. Deterministic for a given seed. */
#ifndef SW_BENCH_REPLAY_SIM_H
#define SW_BENCH_REPLAY_SIM_H

#include <stdbool.h>
#include <stdint.h>

enum { RP_BASE1, RP_SPIKE, RP_BASE2, RP_NPHASES };

struct rp_params {
    unsigned seed;
    bool varied;                /* varied prompts / max_tokens / output lengths */
    int slots;                  /* the local box */
    double prefill_ms_per_token;
    double decode_tps;          /* per slot */
    double slow_factor;         /* prefill and decode this many times slower ... */
    double slow_from, slow_to;  /* ... for generations starting in this fraction of the spike */
    double base_load, spike_load;   /* offered load as a multiple of the box's capacity */
    double phase_s[RP_NPHASES]; /* phase lengths, seconds */
    long budget_ms;             /* routing.ttft_budget_ms */
    double cloud_ttft_ms;       /* the cloud's first byte */
    bool knows_output;          /* analysis: requests declare their true output length as
                                   max_tokens (what the gateway would do if it knew it) */
};

/* The defaults of bench/replay (uniform variant). */
void rp_params_default(struct rp_params *p, bool varied);

struct rp_phase {
    long n;                     /* arrivals */
    long gw_cloud, or_cloud;    /* sent to the cloud: gateway, oracle */
    long gw_ok, or_ok;          /* first token within the budget */
    long gw_at_arrival;         /* gateway cloud at arrival (overflow / queue full) */
    long gw_left_queue;         /* gateway cloud after waiting in the local queue */
    long gw_degraded;           /* gateway cloud because local was degraded */
    long gw_failed;             /* gateway: no answer (deadline in the queue) */
};

struct rp_result {
    struct rp_phase ph[RP_NPHASES];
    double capacity_rps;        /* the box's capacity for the mean request */
};

/* Runs one replay; 0 on success, -1 (with a message on stderr) when the
 * gateway's state cannot be built. */
int rp_run(const struct rp_params *p, struct rp_result *out);

static inline double rp_pct(long a, long n)
{
    return n > 0 ? 100.0 * (double)a / (double)n : 0;
}

#endif
