/* W3C Trace Context (https://www.w3.org/TR/trace-context/): the
 * `traceparent` and `tracestate` headers, parsed with the specification's
 * validation rules and formatted for the next hop, and the sampling decision
 * of a new trace (a ratio on the trace id's random part) or of a continued
 * one (the parent's sampled flag).
 *
 * Pure: no clock, no I/O, no randomness (the caller passes ids drawn from a
 * CSPRNG). docs/operations.md "Traces" tells the rules as an operator sees them. */
#ifndef SW_OBS_TRACECTX_H
#define SW_OBS_TRACECTX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SW_TRACE_ID_LEN 16          /* bytes of a trace id */
#define SW_SPAN_ID_LEN 8            /* bytes of a span id */
#define SW_TRACEPARENT_LEN 55       /* "00-" 32 hex "-" 16 hex "-" 2 hex */
#define SW_TRACESTATE_MAX 512       /* a longer tracestate is not propagated */
#define SW_TRACESTATE_MAX_MEMBERS 32
#define SW_TRACE_FLAG_SAMPLED 0x01

/* One traceparent: the caller's trace and span (its parent-id field). */
struct sw_traceparent {
    uint8_t trace_id[SW_TRACE_ID_LEN];
    uint8_t parent_id[SW_SPAN_ID_LEN];
    uint8_t flags;                  /* trace-flags as sent (only SAMPLED is read) */
};

/* Parses a traceparent header value (s, len bytes, not NUL-terminated). A
 * value is valid when: the version is two lower-case hex digits other than
 * "ff"; version 00 has exactly 55 characters; a later version has at least
 * 55, and a 56th is "-"; trace-id is 32 and parent-id 16 lower-case hex
 * digits, neither all zeros; trace-flags is two lower-case hex digits.
 * Surrounding spaces and tabs are ignored. true with *out filled, or false
 * (the header is then ignored: a new trace starts). */
bool sw_traceparent_parse(const char *s, size_t len, struct sw_traceparent *out);

/* Writes "00-<trace>-<span>-<flags>" and a NUL into out (room for
 * SW_TRACEPARENT_LEN + 1). */
void sw_traceparent_format(const uint8_t trace_id[SW_TRACE_ID_LEN],
                           const uint8_t span_id[SW_SPAN_ID_LEN], uint8_t flags, char *out);

/* Checks a tracestate value (s, len bytes; several headers joined with ","
 * are one value) and writes its normalised form (members joined by ",",
 * no optional whitespace, empty members left out) and a NUL into out (cap
 * bytes, at least SW_TRACESTATE_MAX + 1). A member is key "=" value: key a
 * simple key (a lower-case letter, then up to 255 of a-z 0-9 _ - * /) or
 * tenant "@" system (tenant: a-z or 0-9, then up to 240 of those; system: a
 * lower-case letter, then up to 13); value 1 to 256 printable ASCII
 * characters but "," and "=", not ending in a space. The whole value is
 * dropped (*out is "", false) when a member is invalid, a key repeats, there
 * are more than 32 members, or the result is over SW_TRACESTATE_MAX bytes.
 * Returns true when out holds a value to propagate (possibly ""). */
bool sw_tracestate_parse(const char *s, size_t len, char *out, size_t cap);

/* Lower-case hex of n bytes, and a NUL, into out (room for 2n + 1). */
void sw_trace_hex(const uint8_t *b, size_t n, char *out);

/* True when every byte of b[0..n) is zero (an invalid id). */
bool sw_trace_id_zero(const uint8_t *b, size_t n);

/* Whether a trace is recorded. With a parent (has_parent): its sampled flag
 * decides. Without: the trace id's last 7 bytes (its random part, read as
 * a 56-bit big-endian number r) against ratio: r < ratio * 2^56, so 1.0
 * keeps every trace, 0 none, and every replica decides the same for one id. */
bool sw_trace_sampled(const uint8_t trace_id[SW_TRACE_ID_LEN], double ratio, bool has_parent,
                      uint8_t parent_flags);

#endif
