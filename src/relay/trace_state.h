/* What the trace of a relayed request holds (relay/trace.h builds and
 * reads it): data only, apart so struct proxy can hold it. */
#ifndef SW_RELAY_TRACE_STATE_H
#define SW_RELAY_TRACE_STATE_H

#include <stdbool.h>
#include <stdint.h>

#include "obs/declog.h"
#include "obs/tracectx.h"

#define SW_RELAY_TRACE_EVENTS 16
#define SW_RELAY_TRACE_FINISH 4     /* finish reasons kept */

/* One ended attempt, indexed like the decision log's attempts. */
struct sw_relay_trace_attempt {
    uint8_t span_id[SW_SPAN_ID_LEN];
    int64_t claim_ms;               /* taken up (claim asked), monotonic */
    int64_t sent_ms;                /* dispatched, 0: never */
    int64_t first_byte_ms;          /* 0: none */
    int64_t end_ms;
    double est_ttft_ms;             /* the router's estimate; < 0: none */
    int breaker;                    /* enum sw_breaker_state when it was planned */
    bool masked;
};

/* A span event of the request's span; strings are static or the config's. */
struct sw_relay_trace_event {
    const char *name;               /* "queue_leave", "ttft_abandon", "failover", "contract" */
    int64_t at_ms;                  /* monotonic */
    const char *backend;            /* NULL: none */
    const char *what;               /* a class or verdict; NULL: none */
    long value;                     /* < 0: none */
};

struct sw_relay_trace {
    bool on;                        /* telemetry.otlp is set */
    bool sampled;
    bool has_parent;                /* continues the client's trace */
    uint8_t trace_id[SW_TRACE_ID_LEN];
    uint8_t span_id[SW_SPAN_ID_LEN];    /* the request's (SERVER) span */
    uint8_t parent_id[SW_SPAN_ID_LEN];  /* the client's span */
    char state[SW_TRACESTATE_MAX + 1];  /* the client's tracestate, checked */
    char trace_hex[2 * SW_TRACE_ID_LEN + 1];
    const char *method;             /* static */
    char path[128];
    char finish[SW_RELAY_TRACE_FINISH][16];
    unsigned n_finish;
    struct sw_relay_trace_attempt att[SW_DECLOG_MAX_ATTEMPTS];
    struct sw_relay_trace_event ev[SW_RELAY_TRACE_EVENTS];
    unsigned n_ev;
};

#endif
