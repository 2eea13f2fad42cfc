/* Spillway's Prometheus metrics: a fixed table of counter and histogram
 * families (not a general client library) and the text exposition format.
 *
 * Each family keeps its series in a bounded table keyed by the label tuple.
 * When a family's table is full, further tuples go to one overflow series
 * whose every label is "other", and spillway_metrics_series_dropped_total
 * counts those updates, so a client inventing model names cannot grow memory.
 *
 * Gauges are not stored here: the daemon renders them at scrape time from its
 * live state with sw_metrics_gauge(). And sw_spill is the 60-second windowed
 * spill ratio behind spillway_spill_ratio.
 *
 * Pure: no clock reads, no I/O. Not thread-safe (one event loop). */
#ifndef SW_OBS_METRICS_H
#define SW_OBS_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

/* The families; labels are passed to sw_metrics_inc/observe in this order. */
enum sw_metric {
    SW_M_REQUESTS,          /* spillway_requests_total{model,backend,tier,reason} */
    SW_M_ERRORS,            /* spillway_errors_total{class} */
    SW_M_REJECTIONS,        /* spillway_rejections_total{code} */
    SW_M_TTFT,              /* spillway_ttft_seconds{backend} (histogram) */
    SW_M_DURATION,          /* spillway_request_duration_seconds{backend} (histogram) */
    SW_M_TOKENS,            /* spillway_tokens_total{backend,direction="in"|"out"} */
    SW_M_CLOUD_COST,        /* spillway_cloud_cost_usd_total{backend} */
    SW_M_SPILLED,           /* spillway_spilled_requests_total{model} */
    SW_M_PII,               /* spillway_pii_entities_total{type,outcome} */
    SW_M_CONFIG_RELOADS,    /* spillway_config_reloads_total{result="ok"|"failed"} */
    SW_M_EMERGENCY,         /* spillway_emergency_declarations_total{state="declared"|"cleared"} */
    SW_M_PANIC,             /* spillway_panic_attempts_total{backend} */
    SW_M_EMBEDDINGS,        /* spillway_embeddings_requests_total{model,backend,tier} */
    SW_M_CONTRACT,          /* spillway_contract_violations_total{backend,model} */
    SW_M_PRIORITY,          /* spillway_priority_requests_total{priority,tier,reason} */
    SW_M_DROPPED,           /* spillway_translation_dropped_total{field} */
    SW_M_REFUSED,           /* spillway_http_refused_total{status,path_class} */
    SW_M_QUEUE_MOVES,       /* spillway_queue_moves_total{backend} */
    SW_M__COUNT
};

#define SW_METRICS_MAX_LABELS 4
/* Longer label values are cut (at a UTF-8 character boundary). */
#define SW_METRICS_MAX_VALUE_LEN 128
#define SW_METRICS_MAX_BUCKETS 16

struct sw_metrics;

/* A registry with every family of enum sw_metric, holding no series except
 * the fixed-label ones (config reloads ok/failed, emergency declared/cleared),
 * which start at 0. NULL on allocation failure. Free with sw_metrics_free. */
struct sw_metrics *sw_metrics_new(void);
void sw_metrics_free(struct sw_metrics *m);

/* The family's metric name, e.g. "spillway_requests_total"; NULL if out of range. */
const char *sw_metrics_name(enum sw_metric fam);
/* Number of labels of the family (labels arrays must have that many). */
size_t sw_metrics_label_count(enum sw_metric fam);

/* Adds v (>= 0, finite; anything else is ignored) to a counter family's
 * series. labels: the family's label values in order (borrowed, copied on
 * first use; a NULL value renders as ""). A histogram family is ignored. */
void sw_metrics_inc(struct sw_metrics *m, enum sw_metric fam, const char *const *labels,
                    double v);
/* Records one observation in a histogram family (NaN ignored). */
void sw_metrics_observe(struct sw_metrics *m, enum sw_metric fam, const char *const *labels,
                        double seconds);
/* Creates the series at 0 if it does not exist yet (so a per-backend series
 * shows before the first request and rate() has a start). */
void sw_metrics_touch(struct sw_metrics *m, enum sw_metric fam, const char *const *labels);

/* Current value of a counter series (0 if absent); for tests and the daemon. */
double sw_metrics_value(const struct sw_metrics *m, enum sw_metric fam,
                        const char *const *labels);

/* Calls fn for every series of a counter family, in creation order, then
 * its overflow ("other") series if any: the label values (the family's count
 * of them) and the value, exactly what sw_metrics_render shows. */
void sw_metrics_each(const struct sw_metrics *m, enum sw_metric fam,
                     void (*fn)(void *ud, const char *const *labels, double v), void *ud);

/* The same for a histogram family: its bucket upper bounds (ascending, in
 * seconds; n_bounds of them), the observations per bucket (not cumulative;
 * n_bounds entries) and the total of observations (those above the highest
 * bound are total minus the sum of counts). */
void sw_metrics_each_hist(const struct sw_metrics *m, enum sw_metric fam,
                          void (*fn)(void *ud, const char *const *labels, const double *bounds,
                                     const uint64_t *counts, size_t n_bounds, uint64_t total),
                          void *ud);

/* Appends every family in the text exposition format (version 0.0.4), then
 * spillway_metrics_series_dropped_total{family}. Series appear in the order
 * they were created. SW_OK, or SW_ETOOBIG / SW_ENOMEM from the buffer. */
int sw_metrics_render(const struct sw_metrics *m, struct sw_buf *out);

/* ---- Gauges rendered at scrape time ----
 *
 * A scrape context remembers which gauge families it has written, so HELP
 * and TYPE appear exactly once per name. Calls for one name must follow each
 * other (the text format wants a family's samples together): going back to an
 * earlier name is refused with SW_EINVAL.
 *
 *   struct sw_metrics_scrape s;
 *   sw_metrics_scrape_init(&s, &buf);
 *   for each backend: sw_metrics_gauge(&s, "spillway_local_queue_depth", "...",
 *                                      (const char *[]){"backend"}, &name, 1, depth);
 */
#define SW_METRICS_MAX_GAUGES 64

struct sw_metrics_scrape {
    struct sw_buf *out;                         /* borrowed */
    const char *names[SW_METRICS_MAX_GAUGES];   /* borrowed: families written */
    size_t n_names;
};

void sw_metrics_scrape_init(struct sw_metrics_scrape *s, struct sw_buf *out);
/* Appends one gauge sample, preceded by "# HELP" and "# TYPE name gauge" the
 * first time name is seen. name and help must outlive the scrape (string
 * literals). n_labels <= SW_METRICS_MAX_LABELS; label values are escaped. */
int sw_metrics_gauge(struct sw_metrics_scrape *s, const char *name, const char *help,
                     const char *const *label_names, const char *const *label_values,
                     size_t n_labels, double v);
/* The same for a counter the daemon keeps elsewhere (TYPE counter). */
int sw_metrics_scrape_counter(struct sw_metrics_scrape *s, const char *name, const char *help,
                              const char *const *label_names, const char *const *label_values,
                              size_t n_labels, double v);

/* Appends v as Prometheus writes a float: shortest text that reads back
 * exactly, "+Inf", "-Inf", "NaN". */
int sw_metrics_append_number(struct sw_buf *out, double v);
/* Appends s escaped as a label value (\\, \", \n). */
int sw_metrics_append_label_value(struct sw_buf *out, const char *s);

/* ---- Spill ratio over the last 60 seconds ----
 *
 * One bucket per second in a ring; a bucket is reset when its second comes
 * round again. "spilled" is whatever the caller counts as spilled (served by
 * the cloud because local could not); the ratio is spilled / all requests
 * recorded in the window (now_s - 59 .. now_s), 0 when there were none. */
#define SW_SPILL_WINDOW_S 60

struct sw_spill {
    int64_t sec[SW_SPILL_WINDOW_S];     /* which second the bucket holds; -1 empty */
    uint32_t total[SW_SPILL_WINDOW_S];
    uint32_t spilled[SW_SPILL_WINDOW_S];
};

void sw_spill_init(struct sw_spill *s);
/* Records one finished request at now_s (monotonic seconds, never decreasing). */
void sw_spill_add(struct sw_spill *s, int64_t now_s, bool spilled);
double sw_spill_ratio(const struct sw_spill *s, int64_t now_s);
/* Counts in the window (either pointer may be NULL). */
void sw_spill_counts(const struct sw_spill *s, int64_t now_s, uint64_t *total,
                     uint64_t *spilled);

#endif
