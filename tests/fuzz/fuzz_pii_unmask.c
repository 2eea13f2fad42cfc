/* libFuzzer driver for the unmasker: for any text, the whole-text unmask
 * replaces exactly the placeholders the map issued by their values (JSON-
 * escaped for tool-call arguments) and leaves everything else, reserved
 * placeholders included, as it is; and for any split into up to four chunks,
 * the streaming unmasker (content or tool-call arguments) gives exactly what
 * the whole-text unmask gives, and holds back nothing after finish. The first byte chooses the field and the JSON escaping, the next
 * three the split points; the rest is the text (made valid UTF-8 without NUL
 * by mapping bytes to ASCII when it is not). */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/err.h"
#include "pii/map.h"
#include "pii/pii.h"

#include "check.h"


static struct sw_pii_map *M;

/* The placeholders the map issued and their values, for the reference. */
#define NVALS 6
static struct {
    const char *ph, *v;
    size_t pl, vl;
} Issued[NVALS];

static void build_map(void)
{
    static const struct { int type; const char *tag, *v; } vals[] = {
        {SW_PII_EMAIL, "EMAIL", "a@example.com"},
        {SW_PII_EMAIL, "EMAIL", "b\"q@example.com"},
        {SW_PII_PHONE, "PHONE", "06-12345678"},
        {SW_PII_SECRET, "SECRET", "u:p\\\"x\n\x01"},
        {SW_PII_IBAN, "IBAN", "NL91 ABNA 0417 1643 00"},
        {SW_PII_CUSTOM_BASE, "EMPLOYEE_ID", "EMP-123456 \xc3\xa9\xe2\x82\xac"},
    };
    const char *ph;
    size_t pl;
    M = sw_pii_map_new();
    CHECK(sw_pii_map_reserve(M, "[EMAIL_3]", 9) == SW_OK);
    CHECK(sizeof vals / sizeof vals[0] == NVALS);
    for (size_t i = 0; i < NVALS; i++) {
        CHECK(sw_pii_map_put(M, vals[i].type, vals[i].tag, vals[i].v, strlen(vals[i].v), &ph,
                             &pl) == SW_OK);
        CHECK(strncmp(ph, "[EMAIL_3]", pl) != 0);       /* reserved: never issued */
        Issued[i].ph = ph;
        Issued[i].pl = pl;
        Issued[i].v = vals[i].v;
        Issued[i].vl = strlen(vals[i].v);
    }
}

/* The reference unmask: left to right, every issued placeholder replaced by
 * its value (escaped as the inside of a JSON string when args: '"', '\\'
 * and the short escapes, other control bytes as \u00xx), anything else
 * (reserved or unknown placeholders included) copied. */
static void reference(const char *t, size_t len, int args, struct sw_buf *out)
{
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < len;) {
        size_t k = 0;
        while (k < NVALS && (len - i < Issued[k].pl || memcmp(t + i, Issued[k].ph, Issued[k].pl)))
            k++;
        if (k == NVALS) {
            CHECK(sw_buf_append(out, t + i, 1) == SW_OK);
            i++;
            continue;
        }
        for (size_t j = 0; j < Issued[k].vl; j++) {
            unsigned char ch = (unsigned char)Issued[k].v[j];
            const char *short_esc = strchr("\"\\\n\r\t\b\f", ch);
            char e[7];
            if (!args || (ch >= 0x20 && ch != '"' && ch != '\\'))
                CHECK(sw_buf_append(out, (char *)&ch, 1) == SW_OK);
            else if (ch && short_esc)
                CHECK(sw_buf_appendf(out, "\\%c", "\"\\nrtbf"[short_esc - "\"\\\n\r\t\b\f"]) == SW_OK);
            else {
                snprintf(e, sizeof e, "\\u00%c%c", hex[ch >> 4], hex[ch & 15]);
                CHECK(sw_buf_append(out, e, 6) == SW_OK);
            }
        }
        i += Issued[k].pl;
    }
}

static json_t *chunk(int args, const char *s, size_t n)
{
    json_t *str = json_stringn(s, n);
    CHECK(str);
    if (args)
        return json_pack("{s:s, s:[{s:i, s:{s:[{s:i, s:{s:o}}]}, s:n}]}", "id", "x", "choices",
                         "index", 0, "delta", "tool_calls", "index", 3, "function", "arguments",
                         str, "finish_reason");
    return json_pack("{s:s, s:[{s:i, s:{s:o}, s:n}]}", "id", "x", "choices", "index", 0, "delta",
                     "content", str, "finish_reason");
}

static const char *field(json_t *ch, int args)
{
    json_t *d = json_object_get(json_array_get(json_object_get(ch, "choices"), 0), "delta");
    if (args)
        d = json_object_get(json_array_get(json_object_get(d, "tool_calls"), 0), "function");
    json_t *s = json_object_get(d, args ? "arguments" : "content");
    return json_string_value(s);
}

/* The Anthropic stream of the same text (pii/nstream.c): one block at
 * index 2, text or thinking deltas (input_json_delta for args), the held
 * tail flushed before its stop, equals the whole-text unmask. */
static void native_stream(const char *t, int args, int thinking, const size_t *cuts, int n,
                          const struct sw_buf *whole)
{
    const char *dtype = args ? "input_json_delta" : thinking ? "thinking_delta" : "text_delta";
    const char *fname = args ? "partial_json" : thinking ? "thinking" : "text";
    struct sw_pii_nstream *s = sw_pii_nstream_new(M);
    CHECK(s);
    struct sw_buf out;
    sw_buf_init(&out, 1 << 22);
    json_t *before = NULL;
    json_t *start = json_pack("{s:s, s:i, s:{s:s, s:s}}", "type", "content_block_start", "index", 2,
                              "content_block", "type", thinking ? "thinking" : "text",
                              thinking ? "thinking" : "text", "");
    CHECK(start && sw_pii_nstream_event(s, start, &before) == SW_OK && !before);
    json_decref(start);
    size_t prev = 0;
    for (int i = 0; i <= n; i++) {
        json_t *ev = i < n ? json_pack("{s:s, s:i, s:{s:s, s:s%}}", "type", "content_block_delta",
                                       "index", 2, "delta", "type", dtype, fname, t + prev,
                                       cuts[i] - prev)
                           : json_pack("{s:s, s:i}", "type", "content_block_stop", "index", 2);
        CHECK(ev && sw_pii_nstream_event(s, ev, &before) == SW_OK);
        json_t *sent[2] = {before, i < n ? ev : NULL};   /* the held text goes first */
        for (int k = 0; k < 2; k++) {
            if (!sent[k])
                continue;
            const char *o = json_string_value(json_object_get(json_object_get(sent[k], "delta"), fname));
            CHECK(o);
            CHECK(sw_buf_append(&out, o, strlen(o)) == SW_OK);
        }
        json_decref(before);
        json_decref(ev);
        if (i < n)
            prev = cuts[i];
    }
    sw_pii_nstream_free(s);
    CHECK(out.len == whole->len && (whole->len == 0 || !memcmp(out.ptr, whole->ptr, whole->len)));
    sw_buf_free(&out);
}

/* The whole Anthropic message: a text or thinking block and a tool's input
 * string value each equal the whole-text unmask. */
static void native_message(const char *t, size_t len, int thinking, const struct sw_buf *whole)
{
    const char *f = thinking ? "thinking" : "text";
    json_t *m = json_pack("{s:[{s:s, s:s%}, {s:s, s:{s:[s%]}}]}", "content", "type", f, f, t, len,
                          "type", "tool_use", "input", "k", t, len);
    CHECK(m && sw_pii_unmask_message(M, m) == SW_OK);
    json_t *c = json_object_get(m, "content");
    const char *a = json_string_value(json_object_get(json_array_get(c, 0), f));
    const char *b = json_string_value(json_array_get(
        json_object_get(json_object_get(json_array_get(c, 1), "input"), "k"), 0));
    CHECK(a && b && strlen(a) == whole->len && strlen(b) == whole->len);
    CHECK(whole->len == 0 || (!memcmp(a, whole->ptr, whole->len) && !memcmp(b, whole->ptr, whole->len)));
    json_decref(m);
}

static int utf8_boundary(const char *t, size_t len, size_t i)
{
    return i == 0 || i >= len || ((unsigned char)t[i] & 0xc0) != 0x80;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!M)
        build_map();
    if (size < 4)
        return 0;
    int args = data[0] & 1;
    size_t len = size - 4;
    char *t = malloc(len + 1);
    memcpy(t, data + 4, len);
    t[len] = '\0';
    json_t *probe = json_stringn(t, len);
    if (!probe || memchr(t, '\0', len)) {
        for (size_t i = 0; i < len; i++)
            t[i] = (char)((t[i] & 0x7f) ? (t[i] & 0x7f) : ' ');
    }
    json_decref(probe);

    struct sw_buf whole, streamed;
    sw_buf_init(&whole, 1 << 22);
    sw_buf_init(&streamed, 1 << 22);
    CHECK(sw_pii_unmask_text(M, t, len, args, &whole) == SW_OK);
    struct sw_buf ref;
    sw_buf_init(&ref, 1 << 22);
    reference(t, len, args, &ref);
    CHECK(whole.len == ref.len && (ref.len == 0 || !memcmp(whole.ptr, ref.ptr, ref.len)));
    sw_buf_free(&ref);

    size_t cuts[4];
    int n = 0;
    for (int k = 1; k <= 3; k++) {
        size_t c = len ? data[k] % (len + 1) : 0;
        while (!utf8_boundary(t, len, c))
            c++;
        cuts[n++] = c;
    }
    /* sort */
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            if (cuts[j] < cuts[i]) {
                size_t x = cuts[i];
                cuts[i] = cuts[j];
                cuts[j] = x;
            }
    cuts[n++] = len;
    struct sw_pii_stream *s = sw_pii_stream_new(M);
    CHECK(s);
    size_t prev = 0;
    for (int i = 0; i < n; i++) {
        json_t *ch = chunk(args, t + prev, cuts[i] - prev);
        CHECK(sw_pii_stream_chunk(s, ch) == SW_OK);
        const char *o = field(ch, args);
        CHECK(o);
        CHECK(sw_buf_append(&streamed, o, strlen(o)) == SW_OK);
        json_decref(ch);
        prev = cuts[i];
    }
    json_t *fin = sw_pii_stream_finish(s);
    if (fin) {
        const char *o = field(fin, args);
        CHECK(o);
        CHECK(sw_buf_append(&streamed, o, strlen(o)) == SW_OK);
        json_decref(fin);
    }
    CHECK(sw_pii_stream_finish(s) == NULL);
    sw_pii_stream_free(s);
    CHECK(streamed.len == whole.len);
    CHECK(whole.len == 0 || !memcmp(streamed.ptr, whole.ptr, whole.len));
    native_stream(t, args, (data[0] >> 1) & 1, cuts, n, &whole);
    if (!args)
        native_message(t, len, (data[0] >> 1) & 1, &whole);
    sw_buf_free(&whole);
    sw_buf_free(&streamed);
    free(t);
    return 0;
}
