/* Learned output lengths of one local endpoint, relative to the limit the
 * requests set: how far into its max_tokens an answer usually stops.
 * Pure: no clock, no allocation.
 *
 * Each completed request that named max_tokens gives one sample, the ratio
 * output_tokens / max_tokens, clamped to (0, 1] (an answer longer than its
 * limit counts as 1). The learner keeps the latest SW_OUTLEN_WINDOW samples
 * (a ring, so the distribution follows a change of traffic) as counts in
 * SW_OUTLEN_BINS equal bins of (0, 1]; the counts (struct sw_outlen_dist) are
 * what the router's view carries.
 *
 * sw_outlen_bound answers: given that a running request has produced
 * `progress` of its max_tokens so far, at most what fraction of max_tokens
 * will it produce, with confidence q? It is the q-quantile of the samples
 * above `progress` (bin upper edges, so rounded up), and 1 (the limit itself)
 * while there are fewer than SW_OUTLEN_MIN_SAMPLES samples in all, or fewer
 * than SW_OUTLEN_MIN_TAIL above `progress`. A request that ran past where
 * most stop is thus bounded by the answers that ran as long, and by its
 * max_tokens once few did. */
#ifndef SW_ROUTE_OUTLEN_H
#define SW_ROUTE_OUTLEN_H

#include <stdint.h>

#define SW_OUTLEN_BINS        20
#define SW_OUTLEN_WINDOW      256
#define SW_OUTLEN_MIN_SAMPLES 32
#define SW_OUTLEN_MIN_TAIL    8

/* The distribution as counts per bin; bin i holds ratios in
 * (i / BINS, (i + 1) / BINS]. n is their sum. All zero: no data. */
struct sw_outlen_dist {
    uint16_t count[SW_OUTLEN_BINS];
    uint16_t n;
};

struct sw_outlen {
    struct sw_outlen_dist dist;
    uint8_t ring[SW_OUTLEN_WINDOW];     /* bin of each sample in the window */
    uint32_t head;                      /* next ring slot to write */
};

void sw_outlen_init(struct sw_outlen *o);

/* One completed request: output_tokens generated of max_tokens asked for.
 * Ignored (returns 0) unless both are >= 1; returns 1 when taken. */
int sw_outlen_observe(struct sw_outlen *o, long output_tokens, long max_tokens);

/* The q-quantile (q in (0, 1]; outside: 1) of the ratios above progress
 * (clamped to [0, 1)), as a bin's upper edge: > progress, <= 1. 1 without
 * enough data (see above). */
double sw_outlen_bound(const struct sw_outlen_dist *d, double q, double progress);

#endif
