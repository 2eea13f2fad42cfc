/* obs/span.h: a span's OTLP JSON (ids as hex, enums as integers, 64-bit
 * integers as strings) and protobuf encodings (read back here with a small
 * reader of the wire format; the integration test decodes them with the
 * official definitions), the bounds, and the export request around them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include <jansson.h>

#include "common/err.h"
#include "obs/span.h"

static struct sw_span sp;

static void fill(struct sw_span *s)
{
    memset(s, 0, sizeof *s);
    for (int i = 0; i < 16; i++)
        s->trace_id[i] = (uint8_t)(0xa0 + i);
    for (int i = 0; i < 8; i++)
        s->span_id[i] = (uint8_t)(0x10 + i), s->parent_id[i] = (uint8_t)(0x20 + i);
    s->has_parent = true;
    s->trace_state = "k=v";
    s->flags = 0x301;
    s->name = "chat model";
    s->kind = SW_SPAN_SERVER;
    s->start_ns = 1796000000123000000;
    s->end_ns = 1796000000456000000;
    sw_attrs_str(&s->attrs, "s", "text");
    sw_attrs_int(&s->attrs, "i", -42);
    sw_attrs_int(&s->attrs, "big", INT64_MAX);
    sw_attrs_double(&s->attrs, "d", 1.5);
    sw_attrs_bool(&s->attrs, "b", true);
    static const char *const arr[] = {"stop", "length"};
    sw_attrs_strs(&s->attrs, "a", arr, 2);
    struct sw_span_event *e = sw_span_event(s, "failover", 1796000000200000000);
    sw_event_str(e, "spillway.backend", "edge");
    sw_event_int(e, "n", 7);
    s->status = SW_SPAN_ERROR;
    s->status_msg = "status";
}

static json_t *encode_json(const struct sw_span *s)
{
    struct sw_buf b;
    sw_buf_init(&b, 1 << 20);
    assert_int_equal(sw_span_encode(s, SW_OTLP_JSON, &b), SW_OK);
    json_error_t err;
    json_t *j = json_loadb(b.ptr, b.len, 0, &err);
    if (!j)
        fail_msg("not JSON: %s: %s", err.text, b.ptr);
    sw_buf_free(&b);
    return j;
}

static json_t *attr(json_t *list, const char *key)
{
    size_t i;
    json_t *kv;
    json_array_foreach(list, i, kv) if (!strcmp(json_string_value(json_object_get(kv, "key")), key))
        return json_object_get(kv, "value");
    return NULL;
}

static void test_json(void **state)
{
    (void)state;
    fill(&sp);
    json_t *j = encode_json(&sp);
    assert_string_equal(json_string_value(json_object_get(j, "traceId")),
                        "a0a1a2a3a4a5a6a7a8a9aaabacadaeaf");
    assert_string_equal(json_string_value(json_object_get(j, "spanId")), "1011121314151617");
    assert_string_equal(json_string_value(json_object_get(j, "parentSpanId")), "2021222324252627");
    assert_string_equal(json_string_value(json_object_get(j, "traceState")), "k=v");
    assert_int_equal(json_integer_value(json_object_get(j, "flags")), 0x301);
    assert_int_equal(json_integer_value(json_object_get(j, "kind")), 2);
    assert_string_equal(json_string_value(json_object_get(j, "startTimeUnixNano")),
                        "1796000000123000000");
    assert_string_equal(json_string_value(json_object_get(j, "endTimeUnixNano")),
                        "1796000000456000000");
    json_t *as = json_object_get(j, "attributes");
    assert_int_equal(json_array_size(as), 6);
    assert_string_equal(json_string_value(json_object_get(attr(as, "s"), "stringValue")), "text");
    assert_string_equal(json_string_value(json_object_get(attr(as, "i"), "intValue")), "-42");
    assert_string_equal(json_string_value(json_object_get(attr(as, "big"), "intValue")),
                        "9223372036854775807");
    assert_true(json_real_value(json_object_get(attr(as, "d"), "doubleValue")) == 1.5);
    assert_true(json_is_true(json_object_get(attr(as, "b"), "boolValue")));
    json_t *vals = json_object_get(json_object_get(attr(as, "a"), "arrayValue"), "values");
    assert_int_equal(json_array_size(vals), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(vals, 1), "stringValue")),
                        "length");
    json_t *ev = json_array_get(json_object_get(j, "events"), 0);
    assert_string_equal(json_string_value(json_object_get(ev, "name")), "failover");
    assert_string_equal(json_string_value(json_object_get(ev, "timeUnixNano")),
                        "1796000000200000000");
    assert_string_equal(
        json_string_value(json_object_get(attr(json_object_get(ev, "attributes"), "spillway.backend"),
                                          "stringValue")),
        "edge");
    json_t *st = json_object_get(j, "status");
    assert_int_equal(json_integer_value(json_object_get(st, "code")), 2);
    assert_string_equal(json_string_value(json_object_get(st, "message")), "status");
    assert_null(json_object_get(j, "droppedAttributesCount"));
    json_decref(j);
    /* a root span has no parentSpanId; no tracestate, no traceState */
    sp.has_parent = false;
    sp.trace_state = NULL;
    j = encode_json(&sp);
    assert_null(json_object_get(j, "parentSpanId"));
    assert_null(json_object_get(j, "traceState"));
    json_decref(j);
}

static void test_bounds(void **state)
{
    (void)state;
    memset(&sp, 0, sizeof sp);
    sp.name = "n";
    for (int i = 0; i < SW_SPAN_MAX_ATTRS + 5; i++)
        sw_attrs_int(&sp.attrs, "k", i);
    assert_int_equal(sp.attrs.n, SW_SPAN_MAX_ATTRS);
    assert_int_equal(sp.attrs.dropped, 5);
    for (int i = 0; i < SW_SPAN_MAX_EVENTS + 2; i++)
        sw_span_event(&sp, "e", i);
    assert_int_equal(sp.dropped_events, 2);
    /* NULL strings and non-finite doubles add nothing */
    struct sw_attrs as = {.n = 0};
    sw_attrs_str(&as, "k", NULL);
    sw_attrs_str(&as, NULL, "v");
    sw_attrs_double(&as, "d", 1.0 / 0.0);
    sw_attrs_double(&as, "d", __builtin_nan(""));
    assert_int_equal(as.n, 0);
    json_t *j = encode_json(&sp);
    assert_int_equal(json_integer_value(json_object_get(j, "droppedAttributesCount")), 5);
    assert_int_equal(json_integer_value(json_object_get(j, "droppedEventsCount")), 2);
    json_decref(j);
    /* strings: cut at SW_SPAN_MAX_STR bytes, at a character boundary, made
     * valid UTF-8, control characters escaped */
    memset(&sp, 0, sizeof sp);
    char longs[600];
    memset(longs, 'x', sizeof longs);
    memcpy(longs + 254, "\xc3\xa9", 2); /* é across the cut at 256? no: 254..255 */
    memcpy(longs + 255, "\xe2\x82\xac", 3); /* € starts at 255: cut before it */
    longs[599] = '\0';
    sp.name = longs;
    sw_attrs_str(&sp.attrs, "bad", "a\xff" "b\n");
    j = encode_json(&sp);
    const char *name = json_string_value(json_object_get(j, "name"));
    assert_non_null(name);
    assert_int_equal(strlen(name), 255);
    assert_string_equal(
        json_string_value(json_object_get(attr(json_object_get(j, "attributes"), "bad"), "stringValue")),
        "a?b\n");
    json_decref(j);
    /* the eight-byte scan hands every byte that needs care to the escaper,
     * wherever it falls in a word */
    static const char *const tricky[] = {"01234567\"x", "0123456789\\abcdef", "abcdefg\x01h",
                                         "abcdefgh\x7f", "abcdefghijklmno\t", "\"", "x\xc3\xa9yyyyyyyy"};
    static const char *const want[] = {"01234567\"x", "0123456789\\abcdef", "abcdefg\x01h",
                                       "abcdefgh\x7f", "abcdefghijklmno\t", "\"", "x\xc3\xa9yyyyyyyy"};
    for (size_t i = 0; i < sizeof tricky / sizeof tricky[0]; i++) {
        memset(&sp, 0, sizeof sp);
        sp.name = tricky[i];
        j = encode_json(&sp);
        assert_string_equal(json_string_value(json_object_get(j, "name")), want[i]);
        json_decref(j);
    }
}

/* ---- A reader of the protobuf wire format ---- */

static uint64_t varint(const uint8_t *p, size_t n, size_t *i)
{
    uint64_t v = 0;
    for (int sh = 0; *i < n; sh += 7) {
        v |= (uint64_t)(p[*i] & 0x7f) << sh;
        if (!(p[(*i)++] & 0x80))
            return v;
    }
    fail_msg("varint past the end");
    return 0;
}

/* The k-th (0-based) field `field` of the message p[0..n): its wire type,
 * and its bytes (LEN) or value (VARINT, I64, I32). false: not there. */
static bool field_at(const uint8_t *p, size_t n, unsigned field, int k, const uint8_t **out,
                     size_t *len, uint64_t *val)
{
    size_t i = 0;
    while (i < n) {
        uint64_t tag = varint(p, n, &i);
        unsigned f = (unsigned)(tag >> 3), wt = (unsigned)(tag & 7);
        uint64_t v = 0;
        const uint8_t *b = NULL;
        size_t l = 0;
        if (wt == 0) {
            v = varint(p, n, &i);
        } else if (wt == 1) {
            assert_true(n - i >= 8);
            for (int s = 0; s < 8; s++)
                v |= (uint64_t)p[i + s] << (8 * s);
            i += 8;
        } else if (wt == 5) {
            assert_true(n - i >= 4);
            for (int s = 0; s < 4; s++)
                v |= (uint64_t)p[i + s] << (8 * s);
            i += 4;
        } else {
            assert_int_equal(wt, 2);
            l = (size_t)varint(p, n, &i);
            assert_true(l <= n - i);
            b = p + i;
            i += l;
        }
        if (f == field && k-- == 0) {
            if (out)
                *out = b, *len = l;
            if (val)
                *val = v;
            return true;
        }
    }
    assert_int_equal(i, n);
    return false;
}

static void test_protobuf(void **state)
{
    (void)state;
    fill(&sp);
    char longv[300];
    memset(longv, 'L', 200);
    longv[200] = '\0';
    sw_attrs_str(&sp.attrs, "long", longv); /* a KeyValue over 127 bytes: two-byte length */
    struct sw_buf b;
    sw_buf_init(&b, 1 << 20);
    assert_int_equal(sw_span_encode(&sp, SW_OTLP_PROTOBUF, &b), SW_OK);
    const uint8_t *p = (const uint8_t *)b.ptr, *f;
    size_t n = b.len, l;
    uint64_t v;
    assert_true(field_at(p, n, 1, 0, &f, &l, NULL));
    assert_int_equal(l, 16);
    assert_int_equal(f[0], 0xa0);
    assert_true(field_at(p, n, 2, 0, &f, &l, NULL));
    assert_int_equal(l, 8);
    assert_true(field_at(p, n, 4, 0, &f, &l, NULL));
    assert_int_equal(f[7], 0x27);
    assert_true(field_at(p, n, 3, 0, &f, &l, NULL));
    assert_memory_equal(f, "k=v", 3);
    assert_true(field_at(p, n, 5, 0, &f, &l, NULL));
    assert_int_equal(l, 10);
    assert_true(field_at(p, n, 6, 0, NULL, NULL, &v));
    assert_int_equal(v, 2);
    assert_true(field_at(p, n, 7, 0, NULL, NULL, &v));
    assert_true(v == 1796000000123000000ull);
    assert_true(field_at(p, n, 16, 0, NULL, NULL, &v));
    assert_int_equal(v, 0x301);
    /* attributes: KeyValue{key=1, value=2 AnyValue{...}} */
    const uint8_t *kv, *any, *x;
    size_t kvl, anyl, xl;
    assert_true(field_at(p, n, 9, 1, &kv, &kvl, NULL)); /* "i" */
    assert_true(field_at(kv, kvl, 2, 0, &any, &anyl, NULL));
    assert_true(field_at(any, anyl, 3, 0, NULL, NULL, &v));
    assert_true((int64_t)v == -42);
    assert_true(field_at(p, n, 9, 3, &kv, &kvl, NULL)); /* "d" */
    assert_true(field_at(kv, kvl, 2, 0, &any, &anyl, NULL));
    assert_true(field_at(any, anyl, 4, 0, NULL, NULL, &v));
    double d;
    memcpy(&d, &v, sizeof d);
    assert_true(d == 1.5);
    assert_true(field_at(p, n, 9, 5, &kv, &kvl, NULL)); /* "a": ArrayValue{values=1...} */
    assert_true(field_at(kv, kvl, 2, 0, &any, &anyl, NULL));
    assert_true(field_at(any, anyl, 5, 0, &x, &xl, NULL));
    assert_true(field_at(x, xl, 1, 1, &any, &anyl, NULL));
    assert_true(field_at(any, anyl, 1, 0, &f, &l, NULL));
    assert_memory_equal(f, "length", 6);
    assert_true(field_at(p, n, 9, 6, &kv, &kvl, NULL)); /* "long" */
    assert_true(kvl > 200);
    assert_true(field_at(kv, kvl, 2, 0, &any, &anyl, NULL));
    assert_true(field_at(any, anyl, 1, 0, &f, &l, NULL));
    assert_int_equal(l, 200);
    /* events: Event{time=1, name=2, attributes=3}; status: {message=2, code=3} */
    assert_true(field_at(p, n, 11, 0, &x, &xl, NULL));
    assert_true(field_at(x, xl, 2, 0, &f, &l, NULL));
    assert_memory_equal(f, "failover", 8);
    assert_true(field_at(x, xl, 1, 0, NULL, NULL, &v));
    assert_true(v == 1796000000200000000ull);
    assert_true(field_at(p, n, 15, 0, &x, &xl, NULL));
    assert_true(field_at(x, xl, 3, 0, NULL, NULL, &v));
    assert_int_equal(v, 2);
    sw_buf_free(&b);
}

static void test_request(void **state)
{
    (void)state;
    struct sw_attrs res = {.n = 0};
    sw_attrs_str(&res, "service.name", "spillway");
    fill(&sp);
    struct sw_buf one, two, req;
    sw_buf_init(&one, 1 << 20);
    sw_buf_init(&two, 1 << 20);
    sw_buf_init(&req, 1 << 20);
    assert_int_equal(sw_span_encode(&sp, SW_OTLP_JSON, &one), SW_OK);
    sp.kind = SW_SPAN_CLIENT;
    assert_int_equal(sw_span_encode(&sp, SW_OTLP_JSON, &two), SW_OK);
    struct sw_str spans[] = {{one.ptr, one.len}, {two.ptr, two.len}};
    assert_int_equal(sw_otlp_request(&res, "spillway", "1.2.3", spans, 2, SW_OTLP_JSON, &req), SW_OK);
    json_error_t err;
    json_t *j = json_loadb(req.ptr, req.len, 0, &err);
    assert_non_null(j);
    json_t *rs = json_array_get(json_object_get(j, "resourceSpans"), 0);
    assert_string_equal(
        json_string_value(json_object_get(
            attr(json_object_get(json_object_get(rs, "resource"), "attributes"), "service.name"),
            "stringValue")),
        "spillway");
    json_t *ss = json_array_get(json_object_get(rs, "scopeSpans"), 0);
    assert_string_equal(json_string_value(json_object_get(json_object_get(ss, "scope"), "version")),
                        "1.2.3");
    assert_int_equal(json_array_size(json_object_get(ss, "spans")), 2);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(json_object_get(ss, "spans"), 1), "kind")), 3);
    json_decref(j);
    /* protobuf: request{1: ResourceSpans{1: Resource, 2: ScopeSpans{1: scope, 2: span, 2: span}}} */
    sw_buf_reset(&one);
    sw_buf_reset(&two);
    sw_buf_reset(&req);
    /* spans large enough that every enclosing length takes two bytes or more */
    for (int i = 0; i < 30; i++)
        sw_attrs_str(&sp.attrs, "pad", "0123456789012345678901234567890123456789");
    assert_int_equal(sw_span_encode(&sp, SW_OTLP_PROTOBUF, &one), SW_OK);
    assert_int_equal(sw_span_encode(&sp, SW_OTLP_PROTOBUF, &two), SW_OK);
    assert_true(one.len > 1000);
    struct sw_str pspans[] = {{one.ptr, one.len}, {two.ptr, two.len}};
    assert_int_equal(sw_otlp_request(&res, "spillway", "1.2.3", pspans, 2, SW_OTLP_PROTOBUF, &req), SW_OK);
    const uint8_t *p = (const uint8_t *)req.ptr, *r, *s, *x;
    size_t rl, sl, xl;
    assert_true(field_at(p, req.len, 1, 0, &r, &rl, NULL));
    assert_false(field_at(p, req.len, 1, 1, NULL, NULL, NULL));
    assert_true(field_at(r, rl, 2, 0, &s, &sl, NULL));
    assert_true(field_at(s, sl, 2, 1, &x, &xl, NULL));
    assert_int_equal(xl, two.len);
    assert_memory_equal(x, two.ptr, xl);
    assert_true(field_at(s, sl, 1, 0, &x, &xl, NULL)); /* scope {name, version} */
    const uint8_t *f;
    size_t l;
    assert_true(field_at(x, xl, 2, 0, &f, &l, NULL));
    assert_memory_equal(f, "1.2.3", 5);
    sw_buf_free(&one);
    sw_buf_free(&two);
    sw_buf_free(&req);
}

/* The literal-key setters (SW_K) and trusted names encode the same bytes as
 * the checked setters, in both encodings; so does a trace id given as hex. */
static void test_literal_keys(void **state)
{
    (void)state;
    static struct sw_span k;
    for (int enc = SW_OTLP_JSON; enc <= SW_OTLP_PROTOBUF; enc++) {
        memset(&sp, 0, sizeof sp);
        memset(&k, 0, sizeof k);
        sp.name = k.name = "n";
        k.trace_hex = "00000000000000000000000000000000"; /* the hex of its (zero) trace id */
        sw_attrs_str(&sp.attrs, "gen_ai.request.model", "m-1");
        sw_attrs_str(&sp.attrs, "spillway.tier", "local");
        sw_attrs_int(&sp.attrs, "server.port", 8080);
        sw_attrs_double(&sp.attrs, "spillway.cost_usd", 0.25);
        sw_attrs_bool(&sp.attrs, "spillway.stream", true);
        sw_attrs_str(&sp.attrs, "error.type", "a\xff\"b");
        sw_attrs_str_k(&k.attrs, SW_K("gen_ai.request.model"), "m-1");
        sw_attrs_name_k(&k.attrs, SW_K("spillway.tier"), "local");
        sw_attrs_int_k(&k.attrs, SW_K("server.port"), 8080);
        sw_attrs_double_k(&k.attrs, SW_K("spillway.cost_usd"), 0.25);
        sw_attrs_bool_k(&k.attrs, SW_K("spillway.stream"), true);
        sw_attrs_str_k(&k.attrs, SW_K("error.type"), "a\xff\"b");
        sw_attrs_str_k(&k.attrs, SW_K("none"), NULL);
        struct sw_buf a, b;
        sw_buf_init(&a, 1 << 20);
        sw_buf_init(&b, 1 << 20);
        assert_int_equal(sw_span_encode(&sp, (enum sw_span_encoding)enc, &a), SW_OK);
        assert_int_equal(sw_span_encode(&k, (enum sw_span_encoding)enc, &b), SW_OK);
        assert_int_equal(a.len, b.len);
        assert_memory_equal(a.ptr, b.ptr, a.len);
        sw_buf_free(&a);
        sw_buf_free(&b);
    }
}

/* A request built from a frame (resource and scope encoded once) and spans
 * encoded already framed has the bytes of sw_otlp_request, in both
 * encodings, for small spans and for spans whose enclosing lengths take
 * several bytes; a span over its bound is refused and appends nothing. */
static void test_frame(void **state)
{
    (void)state;
    struct sw_attrs res = {.n = 0};
    sw_attrs_str(&res, "service.name", "spillway");
    sw_attrs_str(&res, "service.instance.id", "0f0e-\xc3\xa9");
    for (int enc = SW_OTLP_JSON; enc <= SW_OTLP_PROTOBUF; enc++) {
        for (int pads = 0; pads <= 40; pads += 40) {
            fill(&sp);
            for (int i = 0; i < pads - 6; i++)
                sw_attrs_str(&sp.attrs, "pad", "0123456789012345678901234567890123456789");
            struct sw_buf one, two, framed, want, got;
            sw_buf_init(&one, 1 << 20);
            sw_buf_init(&two, 1 << 20);
            sw_buf_init(&framed, 1 << 20);
            sw_buf_init(&want, 1 << 20);
            sw_buf_init(&got, 1 << 20);
            assert_int_equal(sw_span_encode(&sp, (enum sw_span_encoding)enc, &one), SW_OK);
            assert_int_equal(sw_span_encode_framed(&sp, (enum sw_span_encoding)enc, 1 << 16, &framed), SW_OK);
            sp.kind = SW_SPAN_CLIENT;
            assert_int_equal(sw_span_encode(&sp, (enum sw_span_encoding)enc, &two), SW_OK);
            assert_int_equal(sw_span_encode_framed(&sp, (enum sw_span_encoding)enc, 1 << 16, &framed), SW_OK);
            size_t before = framed.len;
            assert_int_equal(sw_span_encode_framed(&sp, (enum sw_span_encoding)enc, one.len - 1, &framed),
                             SW_ETOOBIG);
            assert_int_equal(framed.len, before);
            struct sw_str spans[] = {{one.ptr, one.len}, {two.ptr, two.len}};
            assert_int_equal(sw_otlp_request(&res, "spillway", "1.2.3", spans, 2,
                                             (enum sw_span_encoding)enc, &want), SW_OK);
            struct sw_otlp_frame f;
            assert_int_equal(sw_otlp_frame_init(&f, &res, "spillway", "1.2.3", (enum sw_span_encoding)enc), SW_OK);
            assert_int_equal(sw_otlp_frame_request(&f, framed.ptr, framed.len, &got), SW_OK);
            assert_int_equal(got.len, want.len);
            assert_memory_equal(got.ptr, want.ptr, want.len);
            assert_int_equal(sw_otlp_frame_request(&f, framed.ptr, 0, &got), SW_EINVAL);
            /* the same request made in place, in a queue with room before its spans */
            struct sw_buf inplace;
            sw_buf_init(&inplace, 1 << 20);
            size_t gap = sw_otlp_frame_gap(&f), at = 0;
            assert_int_equal(sw_buf_reserve(&inplace, gap), SW_OK);
            memset(inplace.ptr, '?', gap);
            inplace.len = gap;
            assert_int_equal(sw_otlp_frame_wrap(&f, &inplace, gap, &at), SW_EINVAL);
            assert_int_equal(sw_buf_append(&inplace, framed.ptr, framed.len), SW_OK);
            assert_int_equal(sw_otlp_frame_wrap(&f, &inplace, gap - 1, &at), SW_EINVAL);
            assert_int_equal(sw_otlp_frame_wrap(&f, &inplace, gap, &at), SW_OK);
            assert_int_equal(inplace.len - at, want.len);
            assert_memory_equal(inplace.ptr + at, want.ptr, want.len);
            sw_buf_free(&inplace);
            sw_otlp_frame_free(&f);
            sw_buf_free(&one);
            sw_buf_free(&two);
            sw_buf_free(&framed);
            sw_buf_free(&want);
            sw_buf_free(&got);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json),
        cmocka_unit_test(test_bounds),
        cmocka_unit_test(test_protobuf),
        cmocka_unit_test(test_request),
        cmocka_unit_test(test_literal_keys),
        cmocka_unit_test(test_frame),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
