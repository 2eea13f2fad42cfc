/* The "account" step of a request's path (DESIGN.md, step 7), for the
 * metrics and the decision log: the glue the daemon calls so that both tell
 * the same story.
 *
 * - sw_obs_record: one finished request, served or rejected, wherever it
 *   ended (the front's refusals, the relay's outcomes): its decision-log line,
 *   and through sw_obs_account the counters and histograms of the registry
 *   and the spill window. It is the only way a finished request is counted;
 *   GET /admin/state reads its rejection and PII numbers from the same
 *   registry (sw_metrics_each), so /admin/state and /metrics cannot disagree.
 * - sw_obs_render_gauges: the gauges of GET /metrics, from plain numbers the
 *   daemon copies out of its live state at scrape time (so this module does
 *   not depend on how that state is kept).
 *
 * Pure: no clock, no I/O; the caller passes now. */
#ifndef SW_OBS_OBS_H
#define SW_OBS_OBS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "obs/access.h"
#include "obs/declog.h"
#include "obs/metrics.h"
#include "pii/pii.h"

struct sw_otlp;

/* Where the daemon's observations go: owned by the daemon, shared by the
 * front and the relay. */
struct sw_obs_sinks {
    struct sw_metrics *metrics;
    struct sw_declog *log;              /* the decision log (stdout or a file) */
    struct sw_declog_ring *ring;        /* the latest decisions, for /admin/decisions */
    struct sw_spill spill;              /* the spill ratio window */
    struct sw_access *access;           /* the access log; NULL: off */
    struct sw_otlp *otlp;               /* the trace exporter (upstream/otlp.h); NULL: off */
};

/* The account step of one finished request: counts it (sw_obs_account) and
 * writes its decision-log line, from the same entry. The daemon counts
 * requests through this call only. */
void sw_obs_record(struct sw_obs_sinks *s, const struct sw_declog_entry *e, bool spilled,
                   int64_t now_s);

/* Counts one finished request, from the same entry that goes to the decision
 * log:
 *  - served: spillway_requests_total{model,backend,tier,reason},
 *    spillway_tokens_total{backend,direction} (known counts),
 *    spillway_cloud_cost_usd_total{backend} (tier "cloud"),
 *    spillway_ttft_seconds and spillway_request_duration_seconds{backend},
 *    spillway_spilled_requests_total{model} when `spilled`, and the spill
 *    window (spill may be NULL);
 *  - rejected: spillway_rejections_total{code};
 *  - every attempt that failed: spillway_errors_total{class=<its error>},
 *    and "client_gone" for an attempt the client walked away from;
 *  - PII: spillway_pii_entities_total{type,outcome=pii_outcome}, outcome
 *    "found" when the entry has entities but no pii_outcome (a request
 *    refused or abandoned after the scan, not by the PII policy).
 * `spilled`: served by the cloud because local could not (the caller's
 * call: reasons overflow, latency, cold_start, capacity, breaker, fallback on
 * a model that has a local backend). now_s: monotonic seconds. */
void sw_obs_account(struct sw_metrics *m, struct sw_spill *spill,
                    const struct sw_declog_entry *e, bool spilled, int64_t now_s);

/* The PII counts of a request as the decision log lists them: one entry per
 * type found, named by the engine. out has room for SW_PII_MAX_TYPES. */
size_t sw_obs_pii_list(const struct sw_pii_engine *e, const struct sw_pii_counts *c,
                       struct sw_declog_pii *out);

/* One backend as the gauges show it; copy the numbers from the router's view
 * (the same ones GET /admin/state shows). */
struct sw_obs_backend {
    const char *name;
    bool local;                     /* tier: local gauges only for local backends */
    const char *health;             /* "up" | "degraded" | "cold" | "warming" | "down" */
    int breaker;                    /* 0 closed, 1 half-open, 2 open */
    double in_flight;               /* requests running on it now */
    double slots;                   /* local: its slots (0: unbounded) */
    double queued;                  /* local: waiting in Spillway's queue for it */
    double est_wait_ms;             /* local: estimated wait before a new request starts */
    double prefill_ms_per_token;    /* local: the rate in force (route/prefill.h) */
    double decode_tps;              /* local: learned, per slot */
    double rpm_available;           /* requests left in its bucket; < 0 or infinite: no limit */
    double tpm_available;           /* tokens left in its bucket; < 0 or infinite: no limit */
    bool load_signal;               /* local with a load source: the two below are shown */
    double outside_load;            /* work the server reports beyond Spillway's in flight */
    bool load_stale;                /* no fresh sample: the estimate ignores outside load */
    const char *prefill_source;     /* local: where prefill_ms_per_token comes from: "server",
                                       "learned", "warmup", "config" or "default" (NULL: "default") */
};

struct sw_obs_gauges {
    const struct sw_obs_backend *backends;
    size_t n_backends;
    double spend_usd;               /* cloud spend in the current window */
    double spend_cap_usd;           /* 0: no cap */
    double ttft_budget_ms;          /* the TTFT budget in force (runtime threshold or config) */
    double spill_ratio;             /* sw_spill_ratio(now) */
    bool emergency;
    uint64_t declog_write_errors;   /* sw_declog_write_errors */
    double loop_lag_ms;             /* worst event-loop lag of the last second */
    uint64_t idle_evicted;          /* idle client connections closed at the connection limit */
    int state_shared;               /* state.redis: 1 shared, 0 in memory */
    bool state_degraded;            /* state.redis configured and Redis unreachable or slow */
    uint64_t pii_scans_offloaded;   /* request bodies scanned for PII on a worker thread */
    uint64_t pii_scans_dropped;     /* of those, results dropped: the client left mid-scan */
    uint64_t pii_jobs_off_loop;     /* PII jobs run on a worker: those scans, and the relay's
                                       masking and egress checks of large bodies */
    uint64_t pii_cache_hits;        /* texts whose scan verdict came from the cache */
    uint64_t pii_cache_misses;      /* texts of at least 256 bytes scanned (then cached) */
    uint64_t pii_cache_evicted;     /* entries dropped to stay under limits.scan_cache_bytes */
    double pii_cache_bytes;         /* held now */
    double pii_cache_entries;
    double pii_cache_max_bytes;     /* limits.scan_cache_bytes */
    uint64_t parse_cache_hits;      /* body elements whose tree came from the parse memo */
    uint64_t parse_cache_misses;    /* elements of at least 64 bytes parsed (then kept) */
    uint64_t parse_cache_evicted;   /* entries dropped to stay under limits.parse_cache_bytes */
    double parse_cache_bytes;       /* held now (an estimate) */
    double parse_cache_entries;
    double parse_cache_max_bytes;   /* limits.parse_cache_bytes */
};

/* Appends every gauge of GET /metrics (docs/operations.md lists them) to out,
 * after sw_metrics_render. SW_OK or a buffer error. */
int sw_obs_render_gauges(struct sw_buf *out, const struct sw_obs_gauges *g);

/* The Responses API's store (state/respstore.h): counts only, never content. */
struct sw_obs_resp_store {
    const char *store;              /* "memory" | "redis" (the label) */
    uint64_t entries;               /* records held (memory; 0 with Redis) */
    uint64_t bytes;                 /* their bytes (memory; 0 with Redis) */
    uint64_t evicted;               /* dropped to make room, by this replica */
    uint64_t expired;               /* dropped at their TTL, by this replica */
    uint64_t refused;               /* puts refused: too large, invalid, store unreachable */
};

/* Appends the store's gauges and counters to out (after the others). */
int sw_obs_render_resp_store(struct sw_buf *out, const struct sw_obs_resp_store *r);

#endif
