/* The traces of a relayed request (docs/operations.md "Traces"): its W3C
 * trace context (the client's traceparent continued, or a new trace), the
 * traceparent each attempt sends upstream, and, when the trace is sampled,
 * one SERVER span for the request and one CLIENT span per attempt with the
 * OpenTelemetry GenAI attributes and Spillway's, handed to the exporter
 * (upstream/otlp.h) when the request ends.
 *
 * What a span carries is names from the configuration, numbers, closed sets
 * and ids: never prompt or answer text, never a PII value (counts per type
 * only), never a key (only its configured name). */
#ifndef SW_RELAY_TRACE_H
#define SW_RELAY_TRACE_H

#include <stdbool.h>
#include <stdint.h>

#include "common/buf.h"
#include "obs/declog.h"

#include "relay/trace_state.h"

struct proxy;

/* At the request's start: reads traceparent/tracestate, draws the ids,
 * decides sampling, sets the X-Trace-Id response header. */
void sw_relay_trace_start(struct proxy *p);

/* A new attempt is planned: its span id, estimate and breaker state. */
void sw_relay_trace_attempt(struct proxy *p);

/* Appends "traceparent: ...\r\n" (and tracestate) for the current attempt. */
int sw_relay_trace_headers(const struct proxy *p, struct sw_buf *hdrs);

/* The current attempt ended and was logged as p->att[i]. */
void sw_relay_trace_attempt_end(struct proxy *p, size_t i, int64_t now_ms);

/* An event of the request's span (names and classes: static strings). */
void sw_relay_trace_event(struct proxy *p, const char *name, const char *backend,
                          const char *what, long value);

/* Upstream answer bytes: notes the finish reasons (a closed set of names). */
void sw_relay_trace_scan(struct proxy *p, const char *bytes, size_t len);

/* The request ended (e: its decision-log entry): builds and submits the
 * spans when sampled. */
void sw_relay_trace_end(const struct proxy *p, const struct sw_declog_entry *e, int64_t now_ms);

#endif
