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
    int seen_line;              /* a line was completed (a leading BOM is stripped before) */
    int err;                    /* sticky: the first non-OK result of sw_sse_feed */
    sw_sse_event_fn cb;
    void *ud;
};

/* Prepares *p. `max_event_bytes` bounds, at every moment, the bytes of the
 * line being read plus the data already accumulated for the current event
 * (the field names, "data:" prefixes and the '\n' joins included); a comment
 * line counts too. Allocates nothing until bytes are fed. */
void sw_sse_init(struct sw_sse *p, size_t max_event_bytes, sw_sse_event_fn cb, void *ud);
/* Feeds len bytes, in any split: feeding a stream in one call, in two, or a
 * byte at a time gives the same events and the same result. Lines end with
 * "\n", "\r\n" or "\r"; ':' starts a comment; "id" and "retry" and unknown
 * fields are ignored; a leading UTF-8 BOM is stripped; a blank line
 * dispatches the event if a data field was seen. Bytes are passed through as
 * they are (no UTF-8 validation; data may contain NUL bytes, see len).
 * Returns SW_OK, SW_ETOOBIG, SW_ENOMEM, or the callback's non-zero result.
 * A non-OK result is sticky: the rest of this feed is not parsed and every
 * later call returns the same value without parsing. */
int sw_sse_feed(struct sw_sse *p, const char *bytes, size_t len);
/* True when bytes were fed that do not yet form a complete event: a partial
 * line, data lines or an event name not yet followed by the blank line. A
 * stream that ends while this is true was truncated. Comments and blank lines
 * alone leave nothing pending. */
int sw_sse_pending(const struct sw_sse *p);
/* Frees the buffers; *p may be initialized again. */
void sw_sse_free(struct sw_sse *p);

#endif
