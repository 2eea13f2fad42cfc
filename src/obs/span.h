/* A span as OpenTelemetry models it (trace, span and parent ids, name,
 * kind, times, attributes, events, status), and its two OTLP encodings:
 * the protobuf of opentelemetry/proto/trace/v1/trace.proto and the OTLP
 * JSON mapping of it (ids as lower-case hex, enums as integers, 64-bit
 * integers as decimal strings). A span is encoded once, when it ends; an
 * export request wraps already-encoded spans (sw_otlp_request), so the
 * exporter's queue holds bytes, never pointers into a request.
 *
 * A span borrows every string it holds until it is encoded. A string is
 * cut at SW_SPAN_MAX_STR bytes (at a UTF-8 boundary) and made valid UTF-8.
 * What goes into a span is the caller's rule: Spillway's spans carry names,
 * numbers and closed sets only (docs/operations.md "Traces").
 *
 * Pure: no clock, no I/O. */
#ifndef SW_OBS_SPAN_H
#define SW_OBS_SPAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "obs/tracectx.h"

#define SW_SPAN_MAX_ATTRS 40        /* per span; more are counted as dropped */
#define SW_SPAN_MAX_EVENTS 16       /* per span; more are counted as dropped */
#define SW_SPAN_EVENT_MAX_ATTRS 6
#define SW_SPAN_MAX_STR 256         /* bytes of one string value or key */
#define SW_SPAN_MAX_STRS 16         /* strings of one array attribute */

enum sw_span_kind { SW_SPAN_INTERNAL = 1, SW_SPAN_SERVER = 2, SW_SPAN_CLIENT = 3 };
enum sw_span_status { SW_SPAN_UNSET = 0, SW_SPAN_OK = 1, SW_SPAN_ERROR = 2 };
enum sw_span_encoding { SW_OTLP_JSON, SW_OTLP_PROTOBUF };

enum sw_attr_type { SW_ATTR_STR, SW_ATTR_INT, SW_ATTR_DOUBLE, SW_ATTR_BOOL, SW_ATTR_STRS };

struct sw_attr {
    const char *key;                /* borrowed */
    enum sw_attr_type type;
    uint16_t klen;                  /* a literal key's length (0: the key is checked when encoded) */
    bool vtrusted;                  /* a string value from a closed set of names (SW_ATTR_NAME) */
    union {
        const char *s;              /* borrowed */
        int64_t i;
        double d;
        bool b;
    } v;
    const char *const *strs;        /* SW_ATTR_STRS: borrowed, n_strs of them */
    size_t n_strs;
};

struct sw_attrs {
    struct sw_attr a[SW_SPAN_MAX_ATTRS];
    size_t n, cap;                  /* cap: 0 means SW_SPAN_MAX_ATTRS */
    uint32_t dropped;
};

struct sw_span_event {
    const char *name;               /* borrowed */
    int64_t time_ns;                /* wall clock, ns since the epoch */
    struct sw_attr a[SW_SPAN_EVENT_MAX_ATTRS];
    size_t n;
    uint32_t dropped;
};

struct sw_span {
    uint8_t trace_id[SW_TRACE_ID_LEN];
    const char *trace_hex;          /* borrowed; NULL, or trace_id's lower-case hex (the
                                       JSON encoding copies it instead of converting) */
    uint8_t span_id[SW_SPAN_ID_LEN];
    uint8_t parent_id[SW_SPAN_ID_LEN];
    bool has_parent;
    const char *trace_state;        /* borrowed; NULL or "": none */
    uint32_t flags;                 /* W3C trace flags (bit 0: sampled); remote parent bits */
    const char *name;               /* borrowed */
    enum sw_span_kind kind;
    int64_t start_ns, end_ns;       /* wall clock, ns since the epoch */
    enum sw_span_status status;
    const char *status_msg;         /* borrowed; NULL: none (only with SW_SPAN_ERROR) */
    struct sw_attrs attrs;
    struct sw_span_event events[SW_SPAN_MAX_EVENTS];
    size_t n_events;
    uint32_t dropped_events;
};

/* Attribute setters: a NULL string (or key) adds nothing; past the bound the
 * attribute is counted in dropped. A non-finite double adds nothing. */
void sw_attrs_str(struct sw_attrs *as, const char *key, const char *v);
void sw_attrs_int(struct sw_attrs *as, const char *key, int64_t v);
void sw_attrs_double(struct sw_attrs *as, const char *key, double v);
void sw_attrs_bool(struct sw_attrs *as, const char *key, bool v);
void sw_attrs_strs(struct sw_attrs *as, const char *key, const char *const *v, size_t n);

/* The same for a key that is a string literal of printable ASCII but '"'
 * and '\\' (every key Spillway names), given as SW_K("key"): its length is
 * the literal's and the encoders copy it as it is, unchecked. sw_attrs_name:
 * the value, too, is such a name (a closed set's, returned by a *_name
 * function), copied unchecked. */
#define SW_K(lit) ("" lit), (uint16_t)(sizeof(lit) - 1)
void sw_attrs_str_k(struct sw_attrs *as, const char *key, uint16_t klen, const char *v);
void sw_attrs_name_k(struct sw_attrs *as, const char *key, uint16_t klen, const char *v);
void sw_attrs_int_k(struct sw_attrs *as, const char *key, uint16_t klen, int64_t v);
void sw_attrs_double_k(struct sw_attrs *as, const char *key, uint16_t klen, double v);
void sw_attrs_bool_k(struct sw_attrs *as, const char *key, uint16_t klen, bool v);

/* A new event of span s (NULL past SW_SPAN_MAX_EVENTS: counted as dropped).
 * Attributes of an event: sw_event_str / sw_event_int / sw_event_double. */
struct sw_span_event *sw_span_event(struct sw_span *s, const char *name, int64_t time_ns);
void sw_event_str(struct sw_span_event *e, const char *key, const char *v);
void sw_event_int(struct sw_span_event *e, const char *key, int64_t v);
void sw_event_double(struct sw_span_event *e, const char *key, double v);

/* Appends the span in one encoding: a JSON object (SW_OTLP_JSON) or the
 * bytes of one Span message without its tag and length (SW_OTLP_PROTOBUF).
 * SW_OK, SW_ETOOBIG or SW_ENOMEM (out may then hold a partial span: the
 * caller resets it). */
int sw_span_encode(const struct sw_span *s, enum sw_span_encoding enc, struct sw_buf *out);

/* One ExportTraceServiceRequest into out: one ResourceSpans with the
 * resource's attributes, one ScopeSpans named scope_name/scope_version,
 * and the n spans already encoded in enc (spans[i]: the bytes of
 * sw_span_encode). SW_OK, SW_ETOOBIG or SW_ENOMEM. */
int sw_otlp_request(const struct sw_attrs *resource, const char *scope_name,
                    const char *scope_version, const struct sw_str *spans, size_t n,
                    enum sw_span_encoding enc, struct sw_buf *out);

/* ---- Export requests from parts ----
 * An exporter's resource and scope stay the same from one export to the
 * next: their bytes are encoded once (a frame), each span is encoded once
 * already framed for its place in a request's span list, and a request is
 * the frame, the spans' bytes back to back and a few bytes of framing
 * around them: the same bytes as sw_otlp_request. */

#define SW_OTLP_FRAME_MAX (256 * 1024)  /* bytes of a frame's resource or scope part */

struct sw_otlp_frame {
    enum sw_span_encoding enc;
    struct sw_buf res;              /* protobuf: ResourceSpans.resource (tag, length and
                                       message); JSON: the request up to its "spans":[ */
    struct sw_buf scope;            /* protobuf: ScopeSpans.scope; JSON: empty */
};

/* The frame of resource and scope_name/scope_version in enc (the strings
 * are read now, not kept). SW_OK, SW_ETOOBIG or SW_ENOMEM (f is then
 * empty; sw_otlp_frame_free is harmless on it). */
int sw_otlp_frame_init(struct sw_otlp_frame *f, const struct sw_attrs *resource,
                       const char *scope_name, const char *scope_version,
                       enum sw_span_encoding enc);
void sw_otlp_frame_free(struct sw_otlp_frame *f);

/* Encodes s as sw_span_encode does and appends it to out framed for a
 * request's span list: protobuf, the ScopeSpans.spans tag and length before
 * it; JSON, a comma. Appends nothing on failure: SW_ETOOBIG (the encoded
 * span is over max_len bytes, or out would pass its bound) or SW_ENOMEM. */
int sw_span_encode_framed(const struct sw_span *s, enum sw_span_encoding enc, size_t max_len,
                          struct sw_buf *out);

/* Appends one ExportTraceServiceRequest to out: f's resource and scope and
 * the spans in spans[0..len) (one or more, each from sw_span_encode_framed
 * in f's encoding, back to back). SW_OK, SW_EINVAL (no span), SW_ETOOBIG
 * or SW_ENOMEM (out then holds what was appended so far). */
int sw_otlp_frame_request(const struct sw_otlp_frame *f, const char *spans, size_t len,
                          struct sw_buf *out);

/* The room a queue of spans keeps before its first one so that
 * sw_otlp_frame_wrap can turn it into a request in place. */
size_t sw_otlp_frame_gap(const struct sw_otlp_frame *f);

/* b holds gap bytes (at least sw_otlp_frame_gap), then one or more spans
 * from sw_span_encode_framed in f's encoding: writes the request's opening
 * into the gap, ending where the spans begin, and appends its end, so that
 * b->ptr + *start holds the bytes of sw_otlp_frame_request, nothing copied
 * but the frame. SW_OK, SW_EINVAL (no span, or too small a gap),
 * SW_ETOOBIG or SW_ENOMEM (b past its bound). */
int sw_otlp_frame_wrap(const struct sw_otlp_frame *f, struct sw_buf *b, size_t gap,
                       size_t *start);

#endif
