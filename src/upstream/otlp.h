/* The OTLP/HTTP trace exporter (telemetry.otlp, docs/operations.md
 * "Traces"): spans, encoded when they end (obs/span.h), wait in a bounded
 * queue and go to the collector in batches, POSTed from the event loop (on
 * the gateway's own HTTP/1.1 client for a plain-http collector at a numeric
 * address or localhost, as for local backends; on the shared curl multi
 * handle otherwise), so an export never blocks a request. When the
 * queue is full a new span is dropped and counted; an export that fails with
 * a transport error, a timeout, 429, 502, 503 or 504 is retried with
 * exponential backoff (Retry-After honoured, capped), at most
 * SW_OTLP_TRIES times, then its spans are dropped and counted. Memory is
 * bounded by queue_max spans plus one batch in flight. TLS verifies the
 * collector's certificate (ca_file or the system store).
 *
 * It also owns the ids of the process's spans: drawn from the kernel's
 * CSPRNG (getrandom), in blocks. */
#ifndef SW_UPSTREAM_OTLP_H
#define SW_UPSTREAM_OTLP_H

#include <event2/event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "config/config.h"
#include "obs/span.h"

#define SW_OTLP_TRIES 5             /* tries of one batch before its spans are dropped */
#define SW_OTLP_BACKOFF_MIN_MS 200
#define SW_OTLP_BACKOFF_MAX_MS 30000
#define SW_OTLP_SPAN_MAX (64 * 1024) /* bytes of one encoded span; a larger one is dropped */

struct sw_curlev;
struct sw_otlp;

/* An exporter for c (copied; c->endpoint must be set). instance_id: the
 * resource's service.instance.id (copied); replica (may be NULL): the
 * replica's id on a shared Redis, as spillway.replica.id. NULL when out of
 * memory. */
struct sw_otlp *sw_otlp_new(struct event_base *base, struct sw_curlev *cev,
                            const struct sw_config_otlp *c, const char *instance_id,
                            const char *replica);

/* A reloaded configuration: endpoint, headers, protocol, batching, sampling
 * take effect for the next export; the queue and its spans are kept (spans
 * already encoded in the other protocol are dropped and counted). */
int sw_otlp_configure(struct sw_otlp *o, const struct sw_config_otlp *c);

/* Aborts an export in flight and frees everything (queued spans are lost). */
void sw_otlp_free(struct sw_otlp *o);

double sw_otlp_sample_ratio(const struct sw_otlp *o);

/* n random bytes from the CSPRNG, never all zero. */
void sw_otlp_random(struct sw_otlp *o, uint8_t *out, size_t n);

/* Encodes s (borrowed for the call) and queues it; dropped and counted when
 * the queue is full or the span cannot be encoded. Never blocks. */
void sw_otlp_submit(struct sw_otlp *o, const struct sw_span *s);

struct sw_otlp_stats {
    uint64_t spans_exported;        /* accepted by the collector */
    uint64_t dropped_queue_full;    /* not queued: the queue was full */
    uint64_t dropped_export;        /* queued, then dropped: the collector refused them or
                                       every try failed */
    uint64_t dropped_encode;        /* could not be encoded (too large, out of memory) */
    uint64_t exports_ok, exports_failed, exports_retried;
    size_t queued, queue_max;
};
void sw_otlp_stats(const struct sw_otlp *o, struct sw_otlp_stats *st);

/* Appends the spillway_otel_* series of GET /metrics (docs/operations.md). */
int sw_otlp_render_metrics(const struct sw_otlp *o, struct sw_buf *out);

#endif
