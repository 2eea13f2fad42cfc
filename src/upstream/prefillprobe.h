/* The prefill warm-up: where a local server reports no prefill figures of
 * its own and backends[].prefill_tps gives none, one small timed request
 * (a fixed prompt of about 500 tokens, one output token) measures the rate
 * the router assumes (route/prefill.h, source "warmup"; docs/routing.md,
 * "The prefill rate"). Only for local backends with
 * backends[].prefill_warmup: true.
 *
 * Sent once at start and again each time the backend comes back up (from
 * cold or warming: it loaded its model again; from down: after two health
 * intervals or more, not one missed check), on the event loop, one at a time per backend and
 * only while the box is up and idle (nothing of Spillway's in flight or
 * queued there); a backend whose load signal can carry prefill figures
 * (llama.cpp, vLLM /metrics) is given two poll periods for the server to
 * report first. Its time is bounded (SW_PREFILL_PROBE_TIMEOUT_MS, and the
 * request timeout), its answer read up to SW_PREFILL_PROBE_BODY_MAX bytes;
 * a failed one is logged and not retried until the backend comes back. A
 * reload keeps what was measured (the live state outlives it) and sends
 * nothing new. */
#ifndef SW_UPSTREAM_PREFILLPROBE_H
#define SW_UPSTREAM_PREFILLPROBE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "state/live.h"
#include "upstream/curlev.h"

#define SW_PREFILL_PROBE_TIMEOUT_MS 60000L
#define SW_PREFILL_PROBE_BODY_MAX   (64 * 1024)

struct sw_prefill_probes;

/* The probes of cfg's local backends that have prefill_warmup (borrows cev,
 * cfg and live, which must outlive it). NULL on allocation failure. */
struct sw_prefill_probes *sw_prefill_probes_new(struct sw_curlev *cev, struct sw_config *cfg,
                                                struct sw_live *live);
/* Looks at backend i (the health check's tick): sends its probe when due.
 * health_known: a health check has answered since start (or the backend has
 * no health_path), so an UP health is the server's own word, not the
 * assumption before the first check (a model still loading would be timed). */
void sw_prefill_probes_tick(struct sw_prefill_probes *pp, size_t i, int64_t now_ms,
                            bool health_known);
/* Aborts what is in flight and frees. */
void sw_prefill_probes_free(struct sw_prefill_probes *pp);

/* The body of the probe for dialect d and model, its prompt starting with
 * nonce (a new string, caller frees; NULL on allocation failure). */
char *sw_prefill_probe_body(enum sw_dialect d, const char *model, uint64_t nonce);
/* What a probe's answer in dialect d says: the prompt and output token
 * counts (usage.prompt_tokens / completion_tokens, or input_tokens /
 * output_tokens) and, where the server timed its own prefill (llama.cpp's
 * timings.prompt_n and timings.prompt_ms), those; -1 for what it does not
 * say. Bounded by the answer's length; anything not JSON says nothing. */
struct sw_prefill_probe_answer {
    long prompt_tokens, output_tokens;
    long timed_tokens;          /* timings.prompt_n */
    double timed_ms;            /* timings.prompt_ms */
};
void sw_prefill_probe_read(enum sw_dialect d, const char *body, size_t len,
                           struct sw_prefill_probe_answer *out);

#endif
