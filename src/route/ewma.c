/* Learned service rates: see ewma.h. */
#include "route/ewma.h"

#include <math.h>

static double clamp(double v, double lo, double hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

static void update(double *avg, uint64_t *n, double alpha, double sample)
{
    *avg = (*n == 0) ? sample : *avg + alpha * (sample - *avg);
    (*n)++;
}

void sw_ewma_init(struct sw_ewma *e, double alpha)
{
    *e = (struct sw_ewma){0};
    e->alpha = (alpha > 0 && alpha <= 1) ? alpha : SW_EWMA_DEFAULT_ALPHA;
    e->min_prefill_tokens = SW_EWMA_DEFAULT_MIN_PREFILL_TOKENS;
    e->prefill_ms_per_token = SW_EWMA_PRIOR_PREFILL_MS_PER_TOKEN;
    e->decode_tps = SW_EWMA_PRIOR_DECODE_TPS;
    e->output_tokens = SW_EWMA_PRIOR_OUTPUT_TOKENS;
}

unsigned sw_ewma_observe(struct sw_ewma *e, long prompt_tokens, double ttft_ms, double rtt_ms,
                         double decode_ms, long output_tokens)
{
    unsigned took = 0;
    long min_prefill = e->min_prefill_tokens > 1 ? e->min_prefill_tokens : 1;

    if (!(rtt_ms > 0)) /* negative, NaN */
        rtt_ms = 0;
    if (output_tokens >= 2 && isfinite(decode_ms) && decode_ms > 0) {
        double v = (double)(output_tokens - 1) * 1000.0 / decode_ms;
        update(&e->decode_tps, &e->n_decode, e->alpha,
               clamp(v, SW_EWMA_MIN_DECODE_TPS, SW_EWMA_MAX_DECODE_TPS));
        took |= SW_EWMA_DECODE;
    }
    /* isfinite() also rejects NaN and infinities coming from a broken timer.
     * The first token's own decode step (one period at the learned speed) is
     * not prefill: without taking it out, short prompts would teach a rate
     * that overestimates every long prompt. A first token no later than the
     * health check's round trip says that round trip is not this request's
     * (a slow /health, a loaded check): the sample is taken without it, the
     * time to the first token still bounding the prefill. */
    if (!(rtt_ms < ttft_ms))
        rtt_ms = 0;
    if (prompt_tokens >= min_prefill && isfinite(ttft_ms) && ttft_ms > 0) {
        double v = (ttft_ms - rtt_ms - 1000.0 / e->decode_tps) / (double)prompt_tokens;
        update(&e->prefill_ms_per_token, &e->n_prefill, e->alpha,
               clamp(v, SW_EWMA_MIN_PREFILL_MS_PER_TOKEN, SW_EWMA_MAX_PREFILL_MS_PER_TOKEN));
        took |= SW_EWMA_PREFILL;
    }
    if (output_tokens >= 1) {
        update(&e->output_tokens, &e->n_output, e->alpha,
               clamp((double)output_tokens, SW_EWMA_MIN_OUTPUT_TOKENS, SW_EWMA_MAX_OUTPUT_TOKENS));
        took |= SW_EWMA_OUTPUT;
    }
    return took;
}
