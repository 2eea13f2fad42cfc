/* Learned output lengths relative to max_tokens: see outlen.h. */
#include "route/outlen.h"

#include <math.h>

void sw_outlen_init(struct sw_outlen *o)
{
    *o = (struct sw_outlen){0};
}

int sw_outlen_observe(struct sw_outlen *o, long output_tokens, long max_tokens)
{
    if (output_tokens < 1 || max_tokens < 1)
        return 0;
    /* bin i holds (i / BINS, (i + 1) / BINS]: ceil(ratio x BINS) - 1, in
     * integers (no rounding at the edges); longer than the limit: the top. */
    long bin = output_tokens >= max_tokens
                   ? SW_OUTLEN_BINS - 1
                   : (long)(((long double)output_tokens * SW_OUTLEN_BINS + max_tokens - 1) /
                            max_tokens) - 1;
    if (bin < 0)
        bin = 0;
    if (bin > SW_OUTLEN_BINS - 1)
        bin = SW_OUTLEN_BINS - 1;
    struct sw_outlen_dist *d = &o->dist;
    uint32_t slot = o->head % SW_OUTLEN_WINDOW;
    if (d->n >= SW_OUTLEN_WINDOW)
        d->count[o->ring[slot]]--;     /* the oldest sample leaves the window */
    else
        d->n++;
    o->ring[slot] = (uint8_t)bin;
    d->count[bin]++;
    o->head = (slot + 1) % SW_OUTLEN_WINDOW;
    return 1;
}

double sw_outlen_bound(const struct sw_outlen_dist *d, double q, double progress)
{
    if (!(q > 0 && q <= 1))
        q = 1;
    if (!(progress > 0))
        progress = 0;   /* NaN too */
    if (d->n < SW_OUTLEN_MIN_SAMPLES || progress >= 1)
        return 1;
    /* Bins whose upper edge is above progress: the answers that ran longer
     * (the bin holding progress counts whole: rounded up). */
    int first = (int)floor(progress * SW_OUTLEN_BINS);
    if (first > SW_OUTLEN_BINS - 1)
        first = SW_OUTLEN_BINS - 1;
    unsigned tail = 0;
    for (int i = first; i < SW_OUTLEN_BINS; i++)
        tail += d->count[i];
    if (tail < SW_OUTLEN_MIN_TAIL)
        return 1;
    double want = q * (double)tail, seen = 0;
    for (int i = first; i < SW_OUTLEN_BINS; i++) {
        seen += d->count[i];
        if (seen >= want && d->count[i] > 0)
            return (double)(i + 1) / SW_OUTLEN_BINS;
    }
    return 1;
}
