/* The prefill rate of one local endpoint: what the router assumes a prompt
 * token costs before the first token (docs/routing.md, "The prefill rate").
 *
 * Five sources, the first that has a value wins:
 *   server   the server's own prefill figures, read with its load signal
 *            (llama.cpp llamacpp:prompt_tokens_total / prompt_seconds_total,
 *            else llamacpp:prompt_tokens_seconds; vLLM
 *            vllm:request_prompt_tokens_sum / request_prefill_time_seconds_sum):
 *            its compute alone, with no queue, network or per-request
 *            overhead in it, whoever sent the traffic;
 *   learned  Spillway's own first-token times against prompt size (the
 *            moving average of route/ewma.h), once a sample was taken;
 *   warmup   one timed request of a known prompt size that the gateway sent
 *            itself (backends[].prefill_warmup, upstream/prefillprobe.h):
 *            the last one measured;
 *   config   backends[].prefill_tps (or prefill_ms_per_token): the
 *            operator's prior;
 *   default  SW_EWMA_PRIOR_PREFILL_MS_PER_TOKEN.
 * A server figure is a moving average over the intervals between two of
 * its reports in which it processed at least SW_PREFILL_MIN_TOKENS prompt
 * tokens (the first report counts its whole history); a counter that went
 * down (the server restarted) starts the deltas again. Pure: no clock, no
 * I/O, no allocation. */
#ifndef SW_ROUTE_PREFILL_H
#define SW_ROUTE_PREFILL_H

#include <stdbool.h>
#include <stdint.h>

#include "route/ewma.h"

/* An interval with fewer prompt tokens than this teaches no server rate. */
#define SW_PREFILL_MIN_TOKENS 32.0
/* Weight of a new server sample (the first replaces the default). */
#define SW_PREFILL_ALPHA      0.3

enum sw_prefill_source {
    SW_PREFILL_DEFAULT,
    SW_PREFILL_CONFIG,
    SW_PREFILL_LEARNED,
    SW_PREFILL_SERVER,
    SW_PREFILL_WARMUP,
};

/* "default", "config", "learned", "server", "warmup"; "unknown" past the enum. */
const char *sw_prefill_source_name(enum sw_prefill_source s);

/* What one poll of the server's metrics said about prefill. */
struct sw_prefill_report {
    bool totals;                /* cumulative counters found */
    double tokens_total;        /* prompt tokens processed since the server started */
    double seconds_total;       /* seconds spent processing them */
    bool gauge;                 /* a throughput gauge found (used without counters) */
    double gauge_tps;           /* prompt tokens/s over the server's own recent window */
};

struct sw_prefill {
    double config_ms_per_token;     /* backends[].prefill_tps as ms/token; 0: none */
    double server_ms_per_token;     /* moving average of the server's figures; 0: none */
    uint64_t n_server;              /* server samples taken */
    bool have_prev;                 /* prev_* hold the last report's counters */
    double prev_tokens, prev_seconds;
    bool server_reports;            /* a report carried prefill figures (taught or not) */
    double warmup_ms_per_token;     /* the last warm-up measurement; 0: none */
    uint64_t n_warmup;              /* warm-up measurements taken */
};

/* No server figure yet; config_ms_per_token <= 0 (or not finite): no prior. */
void sw_prefill_init(struct sw_prefill *p, double config_ms_per_token);

/* The operator's prior after a reload (server figures are kept). */
void sw_prefill_set_config(struct sw_prefill *p, double config_ms_per_token);

/* Takes one report. Returns true when it taught a server sample. Negative,
 * NaN or infinite figures are ignored; accepted samples are clamped to
 * [SW_EWMA_MIN_PREFILL_MS_PER_TOKEN, SW_EWMA_MAX_PREFILL_MS_PER_TOKEN]. */
bool sw_prefill_report(struct sw_prefill *p, const struct sw_prefill_report *r);

/* Takes one timed warm-up request: elapsed_ms from sending it to its whole
 * answer, rtt_ms the link's round trip, prompt_tokens the prompt's size
 * (the server's count when it gave one), output_tokens what it generated,
 * decode_tps its decode speed if known (<= 0: unknown, no decode time taken
 * out). The rate is (elapsed - rtt - output x 1000 / decode_tps) / prompt,
 * clamped like a server sample; it replaces the previous warm-up figure.
 * Returns false (nothing taught) for fewer than SW_PREFILL_MIN_TOKENS prompt
 * tokens, a non-positive remainder or figures that are not finite. */
bool sw_prefill_warmup(struct sw_prefill *p, double elapsed_ms, double rtt_ms, long prompt_tokens,
                       long output_tokens, double decode_tps);

/* The rate in force, ms per prompt token, with its source (src may be
 * NULL): server, else e's prefill average once it took a sample, else the
 * last warm-up measurement, else the config prior, else the default.
 * Always finite and > 0. */
double sw_prefill_ms_per_token(const struct sw_prefill *p, const struct sw_ewma *e,
                               enum sw_prefill_source *src);

#endif
