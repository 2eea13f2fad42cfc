/* The dashboard's time series: a bounded ring of one-second samples.
 *
 * Once a second the daemon hands sw_series_record the cumulative counters
 * that GET /metrics shows (requests by tier, spilled requests, rejections by
 * code, the TTFT histogram summed by tier) and the gauges of the moment
 * (per-backend in flight / queued / slots / breaker, cloud spend and cap, the
 * TTFT budget, the emergency flag). The ring stores per-second deltas of the
 * counters, the TTFT p50/p99 of the requests whose first token came in that
 * second, and the gauges as they were.
 *
 * Memory is fixed: SW_SERIES_SLOTS samples (one hour) of
 * sizeof(struct sw_series_sample) bytes plus the name tables, allocated once
 * (sw_series_memory() says how much: under 1 MiB). At most
 * SW_SERIES_MAX_BACKENDS backend names and SW_SERIES_MAX_CODES rejection
 * codes are kept; further codes are counted under "other", further backends
 * are not sampled.
 *
 * A slot belongs to one second: a second without a record (the loop was
 * blocked, or it was more than an hour ago) reads as a gap (NULL), and the
 * counts of a gap go to the next second recorded.
 *
 * Pure: the caller passes the time (monotonic seconds); no clock, no I/O. */
#ifndef SW_OBS_SERIES_H
#define SW_OBS_SERIES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SW_SERIES_SLOTS 3600
#define SW_SERIES_MAX_BACKENDS 16
#define SW_SERIES_MAX_CODES 16
#define SW_SERIES_MAX_BOUNDS 16
#define SW_SERIES_NAME_LEN 64

enum sw_series_tier { SW_SERIES_LOCAL, SW_SERIES_CLOUD, SW_SERIES_TIERS };

struct sw_series_backend_in {
    const char *name;
    bool local;
    double in_flight, queued, slots;    /* slots 0: no limit */
    int breaker;                        /* 0 closed, 1 half-open, 2 open */
};

struct sw_series_code_in {
    const char *code;
    double total;                       /* cumulative */
};

/* One second's reading: cumulative counters and the gauges of the moment. */
struct sw_series_input {
    double requests[SW_SERIES_TIERS];   /* served, cumulative */
    double spilled;                     /* cumulative */
    const double *ttft_bounds;          /* histogram bucket bounds, seconds, ascending */
    size_t n_bounds;                    /* <= SW_SERIES_MAX_BOUNDS */
    /* Cumulative observations per bucket, summed over the tier's backends;
     * index n_bounds: above the highest bound. */
    uint64_t ttft[SW_SERIES_TIERS][SW_SERIES_MAX_BOUNDS + 1];
    const struct sw_series_code_in *codes;
    size_t n_codes;
    const struct sw_series_backend_in *backends;
    size_t n_backends;
    double spend_usd, spend_cap_usd, ttft_budget_ms;
    bool emergency;
};

struct sw_series_backend {
    uint16_t in_flight, queued, slots;  /* saturated at 65535 */
    uint8_t breaker;
    uint8_t present;                    /* the backend existed that second */
};

struct sw_series_sample {
    int64_t t;                          /* the second it holds; other slots read as gaps */
    uint32_t requests[SW_SERIES_TIERS];
    uint32_t spilled;
    float ttft_p50_ms[SW_SERIES_TIERS]; /* NaN: no first token that second */
    float ttft_p99_ms[SW_SERIES_TIERS];
    float ttft_budget_ms;
    double spend_usd, spend_cap_usd;
    uint8_t emergency;
    uint16_t rejections[SW_SERIES_MAX_CODES];
    struct sw_series_backend backends[SW_SERIES_MAX_BACKENDS];
};

struct sw_series;

/* NULL on allocation failure. */
struct sw_series *sw_series_new(void);
void sw_series_free(struct sw_series *s);
/* Bytes held by a series (constant). */
size_t sw_series_memory(void);

/* Records the reading taken at now_s (monotonic seconds, never decreasing).
 * Several readings in one second add their counts to that second and keep
 * the last gauges. */
void sw_series_record(struct sw_series *s, int64_t now_s, const struct sw_series_input *in);

/* The sample of second t, or NULL (a gap, not recorded, or overwritten). */
const struct sw_series_sample *sw_series_at(const struct sw_series *s, int64_t t);
/* The last second recorded, -1 if none. */
int64_t sw_series_last(const struct sw_series *s);

/* Names of backend index i (sample.backends[i]) and rejection code i
 * (sample.rejections[i]); NULL past the end. */
const char *sw_series_backend_name(const struct sw_series *s, size_t i);
bool sw_series_backend_local(const struct sw_series *s, size_t i);
const char *sw_series_code_name(const struct sw_series *s, size_t i);

/* The q-quantile (0..1) of a histogram, as Prometheus' histogram_quantile:
 * linear within the bucket, the highest bound if it falls above it. counts:
 * n_bounds + 1 observations per bucket (not cumulative). Milliseconds; NaN
 * when there are no observations. */
double sw_series_quantile_ms(const double *bounds, const uint64_t *counts, size_t n_bounds,
                             double q);

#endif
