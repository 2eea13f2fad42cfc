/* libFuzzer driver for the W3C trace context parsers (obs/tracectx.h) and
 * the span encoders (obs/span.h). The first byte chooses what the rest is:
 * a traceparent, a tracestate, or both (split at the first newline).
 * - a traceparent that parses formats back to the same version-00 header
 *   (lower-case, no spaces), which parses to the same ids and flags;
 * - a tracestate's normalised form is itself valid, parses to itself, holds
 *   at most 32 members and SW_TRACESTATE_MAX bytes, and only bytes of the
 *   input;
 * - a span carrying the input as a name, a string attribute and its
 *   tracestate encodes to JSON that jansson reads as an object, and to
 *   protobuf whose length-delimited fields nest exactly. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/err.h"
#include "obs/span.h"
#include "obs/tracectx.h"

#include "check.h"

static void check_traceparent(const char *s, size_t n)
{
    struct sw_traceparent t;
    if (!sw_traceparent_parse(s, n, &t))
        return;
    CHECK(!sw_trace_id_zero(t.trace_id, SW_TRACE_ID_LEN));
    CHECK(!sw_trace_id_zero(t.parent_id, SW_SPAN_ID_LEN));
    char out[SW_TRACEPARENT_LEN + 1];
    sw_traceparent_format(t.trace_id, t.parent_id, t.flags, out);
    CHECK(strlen(out) == SW_TRACEPARENT_LEN);
    struct sw_traceparent u;
    CHECK(sw_traceparent_parse(out, SW_TRACEPARENT_LEN, &u));
    CHECK(!memcmp(&t, &u, sizeof t));
    /* the ids and flags are the input's own digits */
    size_t a = 0;
    while (a < n && (s[a] == ' ' || s[a] == '\t'))
        a++;
    CHECK(!memcmp(out + 3, s + a + 3, SW_TRACEPARENT_LEN - 3));
}

static void check_tracestate(const char *s, size_t n, char *out, size_t cap)
{
    bool ok = sw_tracestate_parse(s, n, out, cap);
    size_t len = strlen(out);
    CHECK(len <= SW_TRACESTATE_MAX);
    if (!ok) {
        CHECK(len == 0);
        return;
    }
    size_t members = len ? 1 : 0;
    for (size_t i = 0; i < len; i++) {
        CHECK(out[i] != ' ' || (i > 0 && out[i - 1] != ',' && i + 1 < len && out[i + 1] != ','));
        CHECK(memchr(s, out[i], n));
        members += out[i] == ',';
    }
    CHECK(members <= SW_TRACESTATE_MAX_MEMBERS);
    char again[SW_TRACESTATE_MAX + 1];
    CHECK(sw_tracestate_parse(out, len, again, sizeof again));
    CHECK(!strcmp(again, out));
}

/* The messages of a Span as trace.proto and common.proto define them: which
 * length-delimited field of each is a message, and of which kind. */
enum msg { M_SPAN, M_KV, M_ANY, M_ARRAY, M_EVENT, M_STATUS, M_NONE };

static enum msg sub(enum msg m, unsigned field)
{
    switch (m) {
    case M_SPAN: return field == 9 ? M_KV : field == 11 ? M_EVENT : field == 15 ? M_STATUS : M_NONE;
    case M_KV: return field == 2 ? M_ANY : M_NONE;
    case M_ANY: return field == 5 ? M_ARRAY : M_NONE;
    case M_ARRAY: return field == 1 ? M_ANY : M_NONE;
    case M_EVENT: return field == 3 ? M_KV : M_NONE;
    default: return M_NONE;
    }
}

static uint64_t varint(const uint8_t *p, size_t n, size_t *i)
{
    uint64_t v = 0;
    for (int sh = 0;; sh += 7) {
        CHECK(*i < n && sh < 64);
        v |= (uint64_t)(p[*i] & 0x7f) << sh;
        if (!(p[(*i)++] & 0x80))
            return v;
    }
}

/* Walks protobuf bytes of message m: every field well formed, each nested
 * message walked in turn, nothing left over. */
static void walk(const uint8_t *p, size_t n, enum msg m)
{
    size_t i = 0;
    while (i < n) {
        uint64_t tag = varint(p, n, &i);
        unsigned field = (unsigned)(tag >> 3), wt = (unsigned)(tag & 7);
        CHECK(field > 0);
        if (wt == 0) {
            (void)varint(p, n, &i);
        } else if (wt == 1) {
            CHECK(n - i >= 8);
            i += 8;
        } else if (wt == 5) {
            CHECK(n - i >= 4);
            i += 4;
        } else {
            CHECK(wt == 2);
            uint64_t len = varint(p, n, &i);
            CHECK(len <= n - i);
            if (sub(m, field) != M_NONE)
                walk(p + i, (size_t)len, sub(m, field));
            i += (size_t)len;
        }
    }
    CHECK(i == n);
}

static void check_span(const char *s, size_t n, const char *state)
{
    char text[SW_SPAN_MAX_STR + 1];
    size_t tn = n < SW_SPAN_MAX_STR ? n : SW_SPAN_MAX_STR;
    memcpy(text, s, tn);
    text[tn] = '\0';
    static struct sw_span sp;
    memset(&sp, 0, sizeof sp);
    memset(sp.trace_id, 0xab, sizeof sp.trace_id);
    memset(sp.span_id, 0xcd, sizeof sp.span_id);
    sp.trace_state = state;
    sp.name = text;
    sp.kind = SW_SPAN_SERVER;
    sp.start_ns = 1;
    sp.end_ns = 2;
    sw_attrs_str(&sp.attrs, "k", text);
    sw_attrs_str(&sp.attrs, text, "v");
    sw_attrs_int(&sp.attrs, "i", (int64_t)n - 100);
    sw_attrs_double(&sp.attrs, "d", (double)n / 3);
    const char *arr[] = {text, state};
    sw_attrs_strs(&sp.attrs, "a", arr, 2);
    struct sw_span_event *e = sw_span_event(&sp, text, 3);
    sw_event_str(e, "why", text);
    sp.status = SW_SPAN_ERROR;
    sp.status_msg = text;
    struct sw_buf b;
    sw_buf_init(&b, 1 << 20);
    CHECK(sw_span_encode(&sp, SW_OTLP_JSON, &b) == SW_OK);
    json_error_t err;
    json_t *j = json_loadb(b.ptr, b.len, 0, &err);
    CHECK(json_is_object(j));
    CHECK(!strcmp(json_string_value(json_object_get(j, "traceId")),
                  "abababababababababababababababab"));
    json_decref(j);
    sw_buf_reset(&b);
    CHECK(sw_span_encode(&sp, SW_OTLP_PROTOBUF, &b) == SW_OK);
    walk((const uint8_t *)b.ptr, b.len, M_SPAN);
    sw_buf_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const char *s = (const char *)data + 1;
    size_t n = size - 1;
    char state[SW_TRACESTATE_MAX + 1];
    state[0] = '\0';
    switch (data[0] % 3) {
    case 0:
        check_traceparent(s, n);
        break;
    case 1:
        check_tracestate(s, n, state, sizeof state);
        break;
    default: {
        const char *nl = memchr(s, '\n', n);
        size_t a = nl ? (size_t)(nl - s) : n;
        check_traceparent(s, a);
        if (nl)
            check_tracestate(nl + 1, n - a - 1, state, sizeof state);
        break;
    }
    }
    check_span(s, n, state);
    return 0;
}
