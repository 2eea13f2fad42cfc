/* Load signals: what an inference server reports about the work it holds,
 * read from its own endpoints (docs/routing.md, "Load signals"). Parsers
 * only: pure, no I/O, no clock. The poller (loadpoll.c) fetches the text
 * and hands it here.
 *
 * Sources and what is read:
 *   llamacpp  GET /metrics  llamacpp:requests_processing, llamacpp:requests_deferred;
 *             GET /slots    (when /metrics is not enabled) slots with is_processing true
 *   vllm      GET /metrics  vllm:num_requests_running, vllm:num_requests_waiting
 *   sglang    GET /metrics  sglang:num_running_reqs, sglang:num_queue_reqs
 *   tgi       GET /metrics  tgi_batch_current_size (absent: 0), tgi_queue_size
 *   ollama    GET /api/ps   200: running models only (no counts: processing 0,
 *                           waiting 0); 503: the server's queue is full (saturated)
 * A metric given with several label sets (one per model, say) is summed.
 *
 * Prefill figures (sw_load_parse_prefill), from the same /metrics page:
 *   llamacpp  llamacpp:prompt_tokens_total, llamacpp:prompt_seconds_total
 *             (counters); without them llamacpp:prompt_tokens_seconds (gauge)
 *   vllm      vllm:request_prompt_tokens_sum, vllm:request_prefill_time_seconds_sum
 *             (histogram sums)
 * Other sources report none.
 *
 * Prefix-cache figures (sw_load_parse_cache), from the same page:
 *   vllm      vllm:prefix_cache_queries_total, vllm:prefix_cache_hits_total
 *             (counters, in prompt tokens; v0.8-0.10 also as
 *             vllm:gpu_prefix_cache_*_total); without them
 *             vllm:gpu_prefix_cache_hit_rate (gauge, older servers)
 * Other sources report theirs per answer (usage, timings), or none. */
#ifndef SW_UPSTREAM_LOADSIG_H
#define SW_UPSTREAM_LOADSIG_H

#include <stdbool.h>
#include <stddef.h>

#include "config/config.h"
#include "route/prefill.h"

/* enum sw_load_source and sw_load_source_name are the config's (config/config.h). */

/* The path polled first for a source ("/metrics", "/api/ps"); NULL for none. */
const char *sw_load_path(enum sw_load_source s);

struct sw_load_sample {
    double processing;          /* requests the server is generating for */
    double waiting;             /* requests queued inside the server */
    bool saturated;             /* the server refuses more work (Ollama's 503) */
};

/* The sum of every sample of metric `name` in Prometheus text exposition
 * format (comments and blank lines skipped; labels in braces, quoted label
 * values with \" \\ \n escapes; an optional timestamp after the value;
 * NaN, +Inf, -Inf accepted as values). Returns 0 and *out when at least one
 * finite sample was found; -1 when none was (absent, only NaN/Inf, or
 * malformed lines, which are skipped). */
int sw_prom_sum(const char *text, size_t len, const char *name, double *out);

/* Parses the answer of a poll of `path` for source s: status is the HTTP
 * status. Returns 0 with *out filled, or -1 with a short reason in err
 * (never the body's content beyond a metric name). */
int sw_load_parse(enum sw_load_source s, const char *path, int status, const char *body,
                  size_t len, struct sw_load_sample *out, char *err, size_t errlen);

/* llama.cpp's GET /slots: a JSON array of slots; counts those whose
 * "is_processing" is true (older servers: "state" != 0). -1 when the body is
 * not such an array. */
int sw_load_parse_slots(const char *body, size_t len, double *processing);

/* The prefill figures of a /metrics page of source s (see above) into out.
 * Returns 0 when some were found, -1 when the page has none (out then says
 * nothing: totals and gauge false). */
int sw_load_parse_prefill(enum sw_load_source s, const char *body, size_t len,
                          struct sw_prefill_report *out);

struct sw_cache_report {
    bool totals;                /* cumulative counters found */
    double queries_total;       /* prompt tokens looked up in the cache since the server started */
    double hits_total;          /* of them, found there */
    bool gauge;                 /* a hit-rate gauge found (used without counters) */
    double gauge_rate;          /* the server's own hit rate, 0..1 */
};

/* The prefix-cache figures of a /metrics page of source s (see above) into
 * out. Returns 0 when some were found, -1 when the page has none. */
int sw_load_parse_cache(enum sw_load_source s, const char *body, size_t len,
                        struct sw_cache_report *out);

/* The last counters a poller saw of one server. */
struct sw_cache_counters {
    bool have_prev;
    double prev_queries, prev_hits;
    bool have_gauge;
    double prev_gauge;
};

/* Fewest prompt tokens looked up between two samples for a hit rate. */
#define SW_CACHE_MIN_QUERIES 64

/* Takes one report: *rate is the hit rate since the last sample taken
 * (delta hits / delta queries, at most 1), or a changed gauge's value.
 * Returns false when there is nothing to teach: the first report (its
 * counters are the baseline), fewer than SW_CACHE_MIN_QUERIES looked up
 * since the last sample (the older baseline is kept, so slow traffic adds
 * up to an interval that teaches), a gauge unchanged (no traffic), or
 * figures that are not finite. A counter going back (a restart) starts a
 * new baseline. */
bool sw_cache_counters_take(struct sw_cache_counters *c, const struct sw_cache_report *r,
                            double *rate);

#endif
