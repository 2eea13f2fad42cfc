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
struct sw_http_req;
struct sw_live;
struct sw_otlp;

/* The trace of a request refused before routing (the front answers it):
 * its context read from the request's headers while they are there. */
struct sw_relay_trace_ctx {
    bool on;                        /* telemetry.otlp is set */
    bool sampled;
    bool has_parent;
    uint8_t trace_id[SW_TRACE_ID_LEN];
    uint8_t span_id[SW_SPAN_ID_LEN];
    uint8_t parent_id[SW_SPAN_ID_LEN];
    char state[SW_TRACESTATE_MAX + 1];
    char trace_hex[2 * SW_TRACE_ID_LEN + 1];
    const char *method;             /* static */
    char path[128];                 /* "": not a route of the API surface */
};

/* At the request's start: takes the context the front read (c), or reads
 * traceparent/tracestate, draws the ids and decides sampling (c NULL or
 * read without an exporter); sets the X-Trace-Id response header. */
void sw_relay_trace_start(struct proxy *p, const struct sw_relay_trace_ctx *c);

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

/* Reads req's trace context into *c (c->on false when o is NULL). route:
 * whether req's path is a route of the API surface (then url.path is set). */
void sw_relay_trace_ctx_read(struct sw_otlp *o, struct sw_http_req *req, bool route,
                             struct sw_relay_trace_ctx *c);

/* A refused request's SERVER span (e: its decision-log entry, or a partial
 * one for the HTTP server's own errors), submitted when sampled: status
 * code and error.type; the span status ERROR for a 5xx only (a 4xx is the
 * client's error, not the server's). */
void sw_relay_trace_refused(struct sw_otlp *o, const struct sw_live *live,
                            const struct sw_relay_trace_ctx *c,
                            const struct sw_declog_entry *e, int64_t start_ms,
                            int64_t now_ms);

#endif
