/* Incremental Server-Sent Events parser (WHATWG "event stream" rules):
 * feed it bytes as they arrive from an upstream, in any split, and it calls
 * back once per complete event with the event name and the joined data
 * lines. Pure, bounded: an event larger than `max_event_bytes` is an error
 * (SW_ETOOBIG), not an unbounded allocation. */
#ifndef SW_RELAY_SSE_H
#define SW_RELAY_SSE_H

#include <stddef.h>

#include "common/buf.h"

/* Called per event. `event` is "" when the stream gave no "event:" field;
 * `data` is the data lines joined by '\n' (NUL-terminated, len excludes it).
 * Return SW_OK to continue, anything else to stop feeding (returned by feed). */
typedef int (*sw_sse_event_fn)(void *ud, const char *event, const char *data, size_t len);

struct sw_sse {
    struct sw_buf line;         /* the current, incomplete line */
    struct sw_buf data;         /* data lines of the current event */
    char event[64];             /* the current event name (truncated to fit) */
    int has_data;               /* a data field was seen in this event */
    int last_cr;                /* the previous byte was '\r' (CRLF split across feeds) */
    sw_sse_event_fn cb;
    void *ud;
};

void sw_sse_init(struct sw_sse *p, size_t max_event_bytes, sw_sse_event_fn cb, void *ud);
/* Feeds len bytes. Returns SW_OK, SW_ETOOBIG, or the callback's non-zero result. */
int sw_sse_feed(struct sw_sse *p, const char *bytes, size_t len);
/* True when bytes were fed that do not yet form a complete event. */
int sw_sse_pending(const struct sw_sse *p);
void sw_sse_free(struct sw_sse *p);

#endif
