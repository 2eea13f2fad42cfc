/* Learned service rates of one local endpoint (the wait
 * estimate comes from rates learned from real traffic, not constants).
 * Pure: no clock (the caller measures durations), no allocation.
 *
 * Three exponentially weighted moving averages, each updated as
 * avg += alpha * (sample - avg):
 *
 *   prefill_ms_per_token  (ttft_ms - rtt_ms - 1000 / decode_tps) / prompt_tokens:
 *                         the first token's own decode step taken out, at the
 *                         decode speed learned so far (this sample's included)
 *   decode_tps            (output_tokens - 1) / (decode_ms / 1000): tokens
 *                         after the first over the time from the first token
 *                         to the last, i.e. per slot under the load it ran in
 *   output_tokens         tokens generated per completed request
 *
 * Until its first accepted sample each average holds its prior (the
 * SW_EWMA_PRIOR_* values); the first sample replaces the prior outright, so a
 * new endpoint is learned after one request rather than after 1/alpha.
 *
 * Guards: a sample whose duration is zero or negative, or too small to mean
 * anything, is ignored, per average: prefill needs prompt_tokens >=
 * min_prefill_tokens (on tiny prompts the fixed per-request overhead
 * dominates and would inflate ms/token) and ttft_ms > 0 (an rtt_ms not below
 * ttft_ms is not this request's and counts as 0); decode needs
 * output_tokens >= 2 and decode_ms > 0 (a non-streamed answer has no
 * first-to-last interval: pass 0); output needs output_tokens >= 1 (report
 * completed requests only; a cancelled one would bias it down). Accepted
 * samples are clamped to [SW_EWMA_MIN_*, SW_EWMA_MAX_*] so one absurd value
 * (a stall, a clock hiccup) cannot wreck the estimate. */
#ifndef SW_ROUTE_EWMA_H
#define SW_ROUTE_EWMA_H

#include <stdint.h>

#define SW_EWMA_DEFAULT_ALPHA          0.2
#define SW_EWMA_DEFAULT_MIN_PREFILL_TOKENS 32

#define SW_EWMA_PRIOR_PREFILL_MS_PER_TOKEN 1.0     /* ~1000 prompt tokens/s */
#define SW_EWMA_PRIOR_DECODE_TPS           20.0
#define SW_EWMA_PRIOR_OUTPUT_TOKENS        256.0

#define SW_EWMA_MIN_PREFILL_MS_PER_TOKEN   0.001
#define SW_EWMA_MAX_PREFILL_MS_PER_TOKEN   1000.0
#define SW_EWMA_MIN_DECODE_TPS             0.1
#define SW_EWMA_MAX_DECODE_TPS             10000.0
#define SW_EWMA_MIN_OUTPUT_TOKENS          1.0
#define SW_EWMA_MAX_OUTPUT_TOKENS          1000000.0

/* sw_ewma_observe's result: which averages took the sample. */
#define SW_EWMA_PREFILL 1u
#define SW_EWMA_DECODE  2u
#define SW_EWMA_OUTPUT  4u

struct sw_ewma {
    double alpha;                   /* weight of a new sample, (0, 1] */
    long min_prefill_tokens;        /* prompts shorter than this teach no prefill rate */
    double prefill_ms_per_token;    /* view: prefill_ms_per_token */
    double decode_tps;              /* view: decode_tps (per slot) */
    double output_tokens;           /* view: avg_output_tokens */
    uint64_t n_prefill;             /* samples accepted, per average */
    uint64_t n_decode;
    uint64_t n_output;
};

/* Priors, no samples. alpha outside (0, 1] (or NaN) selects
 * SW_EWMA_DEFAULT_ALPHA. min_prefill_tokens is set to its default and may be
 * changed after init. */
void sw_ewma_init(struct sw_ewma *e, double alpha);

/* Feeds one completed request. prompt_tokens: prompt tokens (as counted by
 * the backend's usage if known, else the estimate); ttft_ms: from sending the
 * request to the endpoint (after Spillway's own queue) to its first token;
 * rtt_ms: the endpoint's network round trip (latest health-check RTT, 0 on
 * loopback); decode_ms: first token to last token; output_tokens: tokens
 * generated. Returns the SW_EWMA_* bits of the averages that took a sample. */
unsigned sw_ewma_observe(struct sw_ewma *e, long prompt_tokens, double ttft_ms, double rtt_ms,
                         double decode_ms, long output_tokens);

#endif
