#include "obs/span.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/err.h"
#include "common/json.h"
#include "common/utf8.h"

/* ---- Building ---- */

static struct sw_attr *attr_slot(struct sw_attrs *as, const char *key)
{
    if (!key)
        return NULL;
    size_t cap = as->cap ? as->cap : SW_SPAN_MAX_ATTRS;
    if (as->n >= cap) {
        as->dropped++;
        return NULL;
    }
    struct sw_attr *a = &as->a[as->n++];
    memset(a, 0, sizeof *a);
    a->key = key;
    return a;
}

void sw_attrs_str(struct sw_attrs *as, const char *key, const char *v)
{
    struct sw_attr *a = v ? attr_slot(as, key) : NULL;
    if (a)
        a->type = SW_ATTR_STR, a->v.s = v;
}

void sw_attrs_int(struct sw_attrs *as, const char *key, int64_t v)
{
    struct sw_attr *a = attr_slot(as, key);
    if (a)
        a->type = SW_ATTR_INT, a->v.i = v;
}

void sw_attrs_double(struct sw_attrs *as, const char *key, double v)
{
    struct sw_attr *a = isfinite(v) ? attr_slot(as, key) : NULL;
    if (a)
        a->type = SW_ATTR_DOUBLE, a->v.d = v;
}

void sw_attrs_bool(struct sw_attrs *as, const char *key, bool v)
{
    struct sw_attr *a = attr_slot(as, key);
    if (a)
        a->type = SW_ATTR_BOOL, a->v.b = v;
}

void sw_attrs_strs(struct sw_attrs *as, const char *key, const char *const *v, size_t n)
{
    struct sw_attr *a = v ? attr_slot(as, key) : NULL;
    if (a)
        a->type = SW_ATTR_STRS, a->strs = v, a->n_strs = n > SW_SPAN_MAX_STRS ? SW_SPAN_MAX_STRS : n;
}

struct sw_span_event *sw_span_event(struct sw_span *s, const char *name, int64_t time_ns)
{
    if (s->n_events >= SW_SPAN_MAX_EVENTS) {
        s->dropped_events++;
        return NULL;
    }
    struct sw_span_event *e = &s->events[s->n_events++];
    e->name = name;
    e->time_ns = time_ns;
    e->n = 0;
    e->dropped = 0;
    return e;
}

static struct sw_attr *event_slot(struct sw_span_event *e, const char *key)
{
    if (!e || !key)
        return NULL;
    if (e->n >= SW_SPAN_EVENT_MAX_ATTRS) {
        e->dropped++;
        return NULL;
    }
    struct sw_attr *a = &e->a[e->n++];
    memset(a, 0, sizeof *a);
    a->key = key;
    return a;
}

void sw_event_str(struct sw_span_event *e, const char *key, const char *v)
{
    struct sw_attr *a = v ? event_slot(e, key) : NULL;
    if (a)
        a->type = SW_ATTR_STR, a->v.s = v;
}

void sw_event_int(struct sw_span_event *e, const char *key, int64_t v)
{
    struct sw_attr *a = event_slot(e, key);
    if (a)
        a->type = SW_ATTR_INT, a->v.i = v;
}

void sw_event_double(struct sw_span_event *e, const char *key, double v)
{
    struct sw_attr *a = isfinite(v) ? event_slot(e, key) : NULL;
    if (a)
        a->type = SW_ATTR_DOUBLE, a->v.d = v;
}

/* s cut to SW_SPAN_MAX_STR bytes at a UTF-8 boundary and made valid UTF-8,
 * into tmp (room for SW_SPAN_MAX_STR + 1); its length. */
static size_t clip(const char *s, char *tmp)
{
    size_t n = strnlen(s, SW_SPAN_MAX_STR);
    memcpy(tmp, s, n);
    n = sw_utf8_trim(tmp, n);
    sw_utf8_sanitize(tmp, n);
    tmp[n] = '\0';
    return n;
}

/* ---- OTLP JSON ---- */

static int json_str(struct sw_buf *out, const char *s)
{
    char tmp[SW_SPAN_MAX_STR + 1];
    size_t n = clip(s, tmp);
    int err = sw_buf_append(out, "\"", 1);
    if (!err)
        err = sw_json_escape(out, tmp, n, SW_JSON_ESC_ALL_CTL);
    if (!err)
        err = sw_buf_append(out, "\"", 1);
    return err;
}

static int json_value(struct sw_buf *out, const struct sw_attr *a)
{
    int err = 0;
    switch (a->type) {
    case SW_ATTR_STR:
        err = sw_buf_append_str(out, "{\"stringValue\":");
        if (!err)
            err = json_str(out, a->v.s);
        break;
    case SW_ATTR_INT:
        err = sw_buf_appendf(out, "{\"intValue\":\"%lld\"", (long long)a->v.i);
        break;
    case SW_ATTR_DOUBLE:
        err = sw_buf_appendf(out, "{\"doubleValue\":%.17g", a->v.d);
        break;
    case SW_ATTR_BOOL:
        err = sw_buf_appendf(out, "{\"boolValue\":%s", a->v.b ? "true" : "false");
        break;
    case SW_ATTR_STRS:
        err = sw_buf_append_str(out, "{\"arrayValue\":{\"values\":[");
        for (size_t i = 0; !err && i < a->n_strs; i++) {
            err = sw_buf_append_str(out, i ? ",{\"stringValue\":" : "{\"stringValue\":");
            if (!err)
                err = json_str(out, a->strs[i] ? a->strs[i] : "");
            if (!err)
                err = sw_buf_append(out, "}", 1);
        }
        if (!err)
            err = sw_buf_append_str(out, "]}");
        break;
    }
    return err ? err : sw_buf_append(out, "}", 1);
}

static int json_attrs(struct sw_buf *out, const struct sw_attr *a, size_t n)
{
    int err = sw_buf_append_str(out, "\"attributes\":[");
    for (size_t i = 0; !err && i < n; i++) {
        err = sw_buf_append_str(out, i ? ",{\"key\":" : "{\"key\":");
        if (!err)
            err = json_str(out, a[i].key);
        if (!err)
            err = sw_buf_append_str(out, ",\"value\":");
        if (!err)
            err = json_value(out, &a[i]);
        if (!err)
            err = sw_buf_append(out, "}", 1);
    }
    return err ? err : sw_buf_append(out, "]", 1);
}

static int json_span(const struct sw_span *s, struct sw_buf *out)
{
    char tid[2 * SW_TRACE_ID_LEN + 1], sid[2 * SW_SPAN_ID_LEN + 1], pid[2 * SW_SPAN_ID_LEN + 1];
    sw_trace_hex(s->trace_id, SW_TRACE_ID_LEN, tid);
    sw_trace_hex(s->span_id, SW_SPAN_ID_LEN, sid);
    int err = sw_buf_appendf(out, "{\"traceId\":\"%s\",\"spanId\":\"%s\"", tid, sid);
    if (!err && s->has_parent) {
        sw_trace_hex(s->parent_id, SW_SPAN_ID_LEN, pid);
        err = sw_buf_appendf(out, ",\"parentSpanId\":\"%s\"", pid);
    }
    if (!err && s->trace_state && *s->trace_state) {
        err = sw_buf_append_str(out, ",\"traceState\":");
        if (!err)
            err = json_str(out, s->trace_state);
    }
    if (!err)
        err = sw_buf_appendf(out, ",\"flags\":%u,\"name\":", (unsigned)s->flags);
    if (!err)
        err = json_str(out, s->name ? s->name : "");
    if (!err)
        err = sw_buf_appendf(out,
                             ",\"kind\":%d,\"startTimeUnixNano\":\"%lld\","
                             "\"endTimeUnixNano\":\"%lld\",",
                             (int)s->kind, (long long)s->start_ns, (long long)s->end_ns);
    if (!err)
        err = json_attrs(out, s->attrs.a, s->attrs.n);
    if (!err && s->attrs.dropped)
        err = sw_buf_appendf(out, ",\"droppedAttributesCount\":%u", (unsigned)s->attrs.dropped);
    if (!err)
        err = sw_buf_append_str(out, ",\"events\":[");
    for (size_t i = 0; !err && i < s->n_events; i++) {
        const struct sw_span_event *e = &s->events[i];
        err = sw_buf_appendf(out, "%s{\"timeUnixNano\":\"%lld\",\"name\":", i ? "," : "",
                             (long long)e->time_ns);
        if (!err)
            err = json_str(out, e->name ? e->name : "");
        if (!err)
            err = sw_buf_append(out, ",", 1);
        if (!err)
            err = json_attrs(out, e->a, e->n);
        if (!err && e->dropped)
            err = sw_buf_appendf(out, ",\"droppedAttributesCount\":%u", (unsigned)e->dropped);
        if (!err)
            err = sw_buf_append(out, "}", 1);
    }
    if (!err)
        err = sw_buf_append(out, "]", 1);
    if (!err && s->dropped_events)
        err = sw_buf_appendf(out, ",\"droppedEventsCount\":%u", (unsigned)s->dropped_events);
    if (!err)
        err = sw_buf_appendf(out, ",\"status\":{\"code\":%d", (int)s->status);
    if (!err && s->status == SW_SPAN_ERROR && s->status_msg) {
        err = sw_buf_append_str(out, ",\"message\":");
        if (!err)
            err = json_str(out, s->status_msg);
    }
    return err ? err : sw_buf_append_str(out, "}}");
}

/* ---- OTLP protobuf ---- */

enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_I32 = 5 };

static int pb_varint(struct sw_buf *out, uint64_t v)
{
    unsigned char b[10];
    size_t n = 0;
    do {
        b[n] = (unsigned char)(v & 0x7f);
        v >>= 7;
        if (v)
            b[n] |= 0x80;
        n++;
    } while (v);
    return sw_buf_append(out, b, n);
}

static int pb_tag(struct sw_buf *out, unsigned field, unsigned wt)
{
    return pb_varint(out, (uint64_t)field << 3 | wt);
}

static int pb_fixed64(struct sw_buf *out, unsigned field, uint64_t v)
{
    unsigned char b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (unsigned char)(v >> (8 * i));
    int err = pb_tag(out, field, WT_I64);
    return err ? err : sw_buf_append(out, b, 8);
}

static int pb_fixed32(struct sw_buf *out, unsigned field, uint32_t v)
{
    unsigned char b[4];
    for (int i = 0; i < 4; i++)
        b[i] = (unsigned char)(v >> (8 * i));
    int err = pb_tag(out, field, WT_I32);
    return err ? err : sw_buf_append(out, b, 4);
}

static int pb_bytes(struct sw_buf *out, unsigned field, const void *p, size_t n)
{
    int err = pb_tag(out, field, WT_LEN);
    if (!err)
        err = pb_varint(out, n);
    return err ? err : sw_buf_append(out, p, n);
}

static int pb_string(struct sw_buf *out, unsigned field, const char *s)
{
    char tmp[SW_SPAN_MAX_STR + 1];
    size_t n = clip(s, tmp);
    return pb_bytes(out, field, tmp, n);
}

/* A nested message: its tag and a one-byte length now (pb_open), the
 * length fixed once its content is written (pb_close moves the content when
 * the length needs more bytes). */
static int pb_open(struct sw_buf *out, unsigned field, size_t *mark)
{
    int err = pb_tag(out, field, WT_LEN);
    if (!err)
        err = sw_buf_append(out, "", 1);
    *mark = out->len;
    return err;
}

static int pb_close(struct sw_buf *out, size_t mark)
{
    size_t n = out->len - mark;
    if (n < 128) {
        out->ptr[mark - 1] = (char)n;
        return SW_OK;
    }
    unsigned char b[10];
    size_t k = 0;
    for (uint64_t v = n; v; v >>= 7)
        b[k++] = (unsigned char)((v & 0x7f) | (v >> 7 ? 0x80 : 0));
    static const char pad[9];
    int err = sw_buf_append(out, pad, k - 1);
    if (err)
        return err;
    memmove(out->ptr + mark - 1 + k, out->ptr + mark, n);
    memcpy(out->ptr + mark - 1, b, k);
    return SW_OK;
}

static int pb_anyvalue(struct sw_buf *out, unsigned field, const struct sw_attr *a)
{
    size_t m, m2;
    int err = pb_open(out, field, &m);
    if (err)
        return err;
    switch (a->type) {
    case SW_ATTR_STR:
        err = pb_string(out, 1, a->v.s);
        break;
    case SW_ATTR_BOOL:
        err = pb_tag(out, 2, WT_VARINT);
        if (!err)
            err = pb_varint(out, a->v.b ? 1 : 0);
        break;
    case SW_ATTR_INT:
        err = pb_tag(out, 3, WT_VARINT);
        if (!err)
            err = pb_varint(out, (uint64_t)a->v.i);
        break;
    case SW_ATTR_DOUBLE: {
        uint64_t bits;
        memcpy(&bits, &a->v.d, sizeof bits);
        err = pb_fixed64(out, 4, bits);
        break;
    }
    case SW_ATTR_STRS:
        err = pb_open(out, 5, &m2);
        for (size_t i = 0; !err && i < a->n_strs; i++) {
            struct sw_attr s = {.type = SW_ATTR_STR, .v.s = a->strs[i] ? a->strs[i] : ""};
            err = pb_anyvalue(out, 1, &s);
        }
        if (!err)
            err = pb_close(out, m2);
        break;
    }
    return err ? err : pb_close(out, m);
}

static int pb_attrs(struct sw_buf *out, unsigned field, const struct sw_attr *a, size_t n)
{
    int err = 0;
    for (size_t i = 0; !err && i < n; i++) {
        size_t m;
        err = pb_open(out, field, &m);
        if (!err)
            err = pb_string(out, 1, a[i].key);
        if (!err)
            err = pb_anyvalue(out, 2, &a[i]);
        if (!err)
            err = pb_close(out, m);
    }
    return err;
}

static int pb_uint(struct sw_buf *out, unsigned field, uint64_t v)
{
    int err = pb_tag(out, field, WT_VARINT);
    return err ? err : pb_varint(out, v);
}

static int pb_span(const struct sw_span *s, struct sw_buf *out)
{
    int err = pb_bytes(out, 1, s->trace_id, SW_TRACE_ID_LEN);
    if (!err)
        err = pb_bytes(out, 2, s->span_id, SW_SPAN_ID_LEN);
    if (!err && s->trace_state && *s->trace_state)
        err = pb_string(out, 3, s->trace_state);
    if (!err && s->has_parent)
        err = pb_bytes(out, 4, s->parent_id, SW_SPAN_ID_LEN);
    if (!err)
        err = pb_string(out, 5, s->name ? s->name : "");
    if (!err)
        err = pb_uint(out, 6, (uint64_t)s->kind);
    if (!err)
        err = pb_fixed64(out, 7, (uint64_t)s->start_ns);
    if (!err)
        err = pb_fixed64(out, 8, (uint64_t)s->end_ns);
    if (!err)
        err = pb_attrs(out, 9, s->attrs.a, s->attrs.n);
    if (!err && s->attrs.dropped)
        err = pb_uint(out, 10, s->attrs.dropped);
    for (size_t i = 0; !err && i < s->n_events; i++) {
        const struct sw_span_event *e = &s->events[i];
        size_t m;
        err = pb_open(out, 11, &m);
        if (!err)
            err = pb_fixed64(out, 1, (uint64_t)e->time_ns);
        if (!err)
            err = pb_string(out, 2, e->name ? e->name : "");
        if (!err)
            err = pb_attrs(out, 3, e->a, e->n);
        if (!err && e->dropped)
            err = pb_uint(out, 4, e->dropped);
        if (!err)
            err = pb_close(out, m);
    }
    if (!err && s->dropped_events)
        err = pb_uint(out, 12, s->dropped_events);
    size_t m;
    if (!err)
        err = pb_open(out, 15, &m);
    if (!err && s->status == SW_SPAN_ERROR && s->status_msg)
        err = pb_string(out, 2, s->status_msg);
    if (!err && s->status)
        err = pb_uint(out, 3, (uint64_t)s->status);
    if (!err)
        err = pb_close(out, m);
    if (!err)
        err = pb_fixed32(out, 16, s->flags);
    return err;
}

int sw_span_encode(const struct sw_span *s, enum sw_span_encoding enc, struct sw_buf *out)
{
    return enc == SW_OTLP_PROTOBUF ? pb_span(s, out) : json_span(s, out);
}

/* ---- Export request ---- */

static int json_request(const struct sw_attrs *res, const char *scope, const char *version,
                        const struct sw_str *spans, size_t n, struct sw_buf *out)
{
    int err = sw_buf_append_str(out, "{\"resourceSpans\":[{\"resource\":{");
    if (!err)
        err = json_attrs(out, res->a, res->n);
    if (!err)
        err = sw_buf_append_str(out, "},\"scopeSpans\":[{\"scope\":{\"name\":");
    if (!err)
        err = json_str(out, scope);
    if (!err)
        err = sw_buf_append_str(out, ",\"version\":");
    if (!err)
        err = json_str(out, version);
    if (!err)
        err = sw_buf_append_str(out, "},\"spans\":[");
    for (size_t i = 0; !err && i < n; i++) {
        if (i)
            err = sw_buf_append(out, ",", 1);
        if (!err)
            err = sw_buf_append(out, spans[i].ptr, spans[i].len);
    }
    return err ? err : sw_buf_append_str(out, "]}]}]}");
}

static int pb_request(const struct sw_attrs *res, const char *scope, const char *version,
                      const struct sw_str *spans, size_t n, struct sw_buf *out)
{
    size_t rs, r, ss, sc;
    int err = pb_open(out, 1, &rs); /* ExportTraceServiceRequest.resource_spans */
    if (!err)
        err = pb_open(out, 1, &r); /* ResourceSpans.resource */
    if (!err)
        err = pb_attrs(out, 1, res->a, res->n);
    if (!err)
        err = pb_close(out, r);
    if (!err)
        err = pb_open(out, 2, &ss); /* ResourceSpans.scope_spans */
    if (!err)
        err = pb_open(out, 1, &sc); /* ScopeSpans.scope */
    if (!err)
        err = pb_string(out, 1, scope);
    if (!err)
        err = pb_string(out, 2, version);
    if (!err)
        err = pb_close(out, sc);
    for (size_t i = 0; !err && i < n; i++)
        err = pb_bytes(out, 2, spans[i].ptr, spans[i].len); /* ScopeSpans.spans */
    if (!err)
        err = pb_close(out, ss);
    return err ? err : pb_close(out, rs);
}

int sw_otlp_request(const struct sw_attrs *resource, const char *scope_name,
                    const char *scope_version, const struct sw_str *spans, size_t n,
                    enum sw_span_encoding enc, struct sw_buf *out)
{
    return enc == SW_OTLP_PROTOBUF
               ? pb_request(resource, scope_name, scope_version, spans, n, out)
               : json_request(resource, scope_name, scope_version, spans, n, out);
}
