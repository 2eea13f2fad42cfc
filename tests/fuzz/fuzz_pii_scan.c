/* libFuzzer driver for the PII scanner and masker. For any input:
 *  - spans are in order, inside the text, of a known type, and do not overlap;
 *  - the masked text is the input with each detected span, and nothing else,
 *    replaced by a placeholder "[TAG_N]" that the map resolves to exactly the
 *    span's bytes (TAG the span type's tag where the value is first seen; the
 *    same value, the same placeholder): no detected span survives
 *    verbatim, and the masked text differs from the input whenever a span was
 *    found; re-scanning the masked text finds no placeholder as an entity;
 *  - masking then unmasking with the same map gives the input back
 *    (placeholder-shaped text already in the input is reserved first, as
 *    sw_pii_mask_request does, and is never issued);
 *  - the JSON-text masker detects on the decoded strings (escapes resolved):
 *    when the input is JSON, the masked text is JSON and scanning it again
 *    finds nothing;
 *  - the request scanner counts the content's spans and the arguments' JSON
 *    spans; the request masker masks the content exactly as the text masker
 *    did, keeps JSON arguments JSON, and refuses (SW_EINVAL) only a masked
 *    text that would not re-scan clean. */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/err.h"
#include "pii/detect.h"
#include "pii/map.h"
#include "pii/pii.h"

#include "check.h"


static struct sw_pii_engine *E;

struct spans {
    size_t len, last_end;
    size_t n, cap;
    struct sw_pii_span *sp;
};

static int on_span(void *ud, const struct sw_pii_span *sp)
{
    struct spans *c = ud;
    CHECK(sp->len > 0);
    CHECK(sp->start >= c->last_end);
    CHECK(sp->start + sp->len <= c->len);
    CHECK(sp->type >= 0 && sp->type < sw_pii_type_count(E));
    c->last_end = sp->start + sp->len;
    if (c->n == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 16;
        c->sp = realloc(c->sp, c->cap * sizeof *c->sp);
        CHECK(c->sp);
    }
    c->sp[c->n++] = *sp;
    return SW_OK;
}

static void scan(const char *t, size_t len, struct spans *c)
{
    *c = (struct spans){.len = len};
    CHECK(sw_pii_scan_text(E, t, len, on_span, c) == SW_OK);
}

static void reserve_all(struct sw_pii_map *m, const char *t, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if (t[i] != '[')
            continue;
        size_t j = i + 1;
        while (j < len && j - i < SW_PII_MAX_PLACEHOLDER && sw_pii_ph_char((unsigned char)t[j]))
            j++;
        if (j < len && t[j] == ']' && j > i + 1 && j + 1 - i <= SW_PII_MAX_PLACEHOLDER)
            CHECK(sw_pii_map_reserve(m, t + i, j + 1 - i) == SW_OK);
    }
}

/* Where check_masked found the placeholders in the masked text. */
struct region {
    size_t start, len;
};

/* The masked text out[0..olen) must be t[0..len) with each span, and nothing
 * else, replaced by a placeholder "[TAG_N]" (N a positive number) that m
 * resolves to the span's bytes. The same bytes get the same placeholder; the
 * first time a value is seen, TAG is the tag of the span's type (unless the
 * map was used before: fresh is 0). With json, a span outside a JSON string
 * has its placeholder quoted, and the value of a span inside a string is
 * stored with its escapes decoded: a span holding a backslash is then only
 * checked for a placeholder the map resolves, and the tags only until one. Returns the number of quoted placeholders; fills regs[0..n). */
static size_t check_masked(struct sw_pii_map *m, const char *t, size_t len, const struct spans *c,
                           const char *out, size_t olen, int json, int fresh,
                           struct region *regs)
{
    size_t mpos = 0, prev = 0, quoted = 0;
    int escaped = 0;            /* a value so far was stored decoded */
    for (size_t k = 0; k < c->n; k++) {
        const struct sw_pii_span *sp = &c->sp[k];
        size_t gap = sp->start - prev;
        CHECK(olen - mpos >= gap && (gap == 0 || !memcmp(out + mpos, t + prev, gap)));
        mpos += gap;
        int quote = json && mpos < olen && out[mpos] == '"';
        mpos += (size_t)quote;
        const char *ph = out + mpos;
        size_t pl = 1;
        while (pl < olen - mpos && pl < SW_PII_MAX_PLACEHOLDER && sw_pii_ph_char((unsigned char)ph[pl]))
            pl++;
        CHECK(pl < olen - mpos && ph[0] == '[' && ph[pl] == ']');
        pl++;
        size_t d = pl - 2;
        while (ph[d] >= '0' && ph[d] <= '9')
            d--;
        CHECK(ph[d] == '_' && d < pl - 2 && ph[d + 1] != '0');
        int raw = !json || !memchr(t + sp->start, '\\', sp->len);    /* value == bytes */
        size_t same = k;
        for (size_t j = 0; raw && j < k && same == k; j++)
            if (c->sp[j].len == sp->len && !memcmp(t + c->sp[j].start, t + sp->start, sp->len))
                same = j;
        if (same < k) {
            CHECK(regs[same].len == pl && !memcmp(out + regs[same].start, ph, pl));
        } else if (fresh && raw && !escaped) {
            const char *tag = sw_pii_type_tag(E, sp->type);
            CHECK(d - 1 == strlen(tag) && !memcmp(ph + 1, tag, d - 1));
        }
        size_t vl;
        const char *v = sw_pii_map_get(m, ph, pl, &vl);
        CHECK(v);
        if (raw)
            CHECK(vl == sp->len && !memcmp(v, t + sp->start, vl));
        CHECK(pl != sp->len || memcmp(ph, t + sp->start, pl));     /* the value is gone */
        escaped |= !raw;
        regs[k] = (struct region){mpos, pl};
        mpos += pl;
        if (quote) {
            CHECK(mpos < olen && out[mpos] == '"');
            mpos++;
            quoted++;
        }
        prev = sp->start + sp->len;
    }
    CHECK(olen - mpos == len - prev && (len == prev || !memcmp(out + mpos, t + prev, len - prev)));
    return quoted;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!E) {
        char err[256];
        struct sw_pii_custom c[] = {{"employee_id", "EMP-[0-9]{6}", NULL},
                                    {"loyalty", "LC[0-9]{12}", "luhn"},
                                    {"acct", "[A-Z]{2}[0-9]{2}[A-Z0-9]{4,20}", "mod97"},
                                    {"member", "M#[0-9]{9}", "elfproef"}};
        CHECK(sw_pii_engine_new(c, 4, &E, err, sizeof err) == SW_OK);
    }
    const char *t = (const char *)data;
    struct spans c;
    scan(t, size, &c);
    struct region *regs = malloc((c.n + 1) * sizeof *regs);
    CHECK(regs);

    /* as plain text (content) */
    struct sw_pii_map *m = sw_pii_map_new();
    struct sw_buf masked, back, jmasked;
    sw_buf_init(&masked, 1 << 24);
    sw_buf_init(&back, 1 << 24);
    sw_buf_init(&jmasked, 1 << 24);
    reserve_all(m, t, size);
    int rc = sw_pii_mask_text(E, m, t, size, &masked, NULL);
    CHECK(rc == SW_OK || rc == SW_ETOOBIG);
    const char *mt = masked.ptr ? masked.ptr : "";
    if (rc == SW_OK) {
        check_masked(m, t, size, &c, mt, masked.len, 0, 1, regs);
        CHECK(c.n == 0 || masked.len != size || memcmp(mt, t, size));
        /* no placeholder is itself taken for an entity (a span may still run
         * into one: context detectors see new neighbours once a value is gone) */
        struct spans again;
        scan(mt, masked.len, &again);
        for (size_t i = 0, k = 0; i < again.n; i++) {
            const struct sw_pii_span *sp = &again.sp[i];
            while (k < c.n && regs[k].start + regs[k].len <= sp->start)
                k++;
            CHECK(k == c.n || sp->start < regs[k].start ||
                  sp->start + sp->len > regs[k].start + regs[k].len);
        }
        free(again.sp);
        CHECK(sw_pii_unmask_text(m, mt, masked.len, 0, &back) == SW_OK);
        CHECK(back.len == size && (size == 0 || !memcmp(back.ptr, t, size)));
    }
    sw_pii_map_free(m);

    /* as JSON text (tool-call arguments): detection on the decoded strings */
    json_t *a = json_loadb(t, size, JSON_DECODE_ANY, NULL);
    struct spans jc = {.len = size};
    CHECK(sw_pii_scan_json_text(E, t, size, on_span, &jc) == SW_OK);
    m = sw_pii_map_new();
    reserve_all(m, t, size); /* as sw_pii_mask_request does before masking */
    rc = sw_pii_mask_json_text(E, m, t, size, &jmasked, NULL);
    CHECK(rc == SW_OK || rc == SW_ETOOBIG);
    if (rc == SW_OK) {
        const char *jt = jmasked.ptr ? jmasked.ptr : "";
        CHECK(jc.n == 0 || jmasked.len != size || memcmp(jt, t, size));
        if (a) {
            /* JSON in, JSON out. One pass may leave something to find: a
             * value gone gives its neighbours new context; the request's
             * masker masks again until it scans clean (checked below). */
            json_t *b = json_loadb(jt, jmasked.len, JSON_DECODE_ANY, NULL);
            CHECK(b);
            json_decref(b);
        }
        /* unmasking restores the value of every string (JSON-escaped) */
        sw_buf_reset(&back);
        CHECK(sw_pii_unmask_text(m, jt, jmasked.len, 1, &back) == SW_OK);
    }
    sw_pii_map_free(m);

    /* as a request: content string and tool-call arguments */
    json_t *s = json_stringn(t, size);
    if (s) {
        json_t *body = json_pack("{s:s, s:[{s:s, s:O}, {s:s, s:n, s:[{s:s, s:s, s:{s:s, s:o}}]}]}",
                                 "model", "m", "messages", "role", "user", "content", s, "role",
                                 "assistant", "content", "tool_calls", "id", "c", "type",
                                 "function", "function", "name", "f", "arguments",
                                 json_stringn(t, size));   /* its own string: masked apart */
        CHECK(body);
        struct sw_pii_counts counts;
        CHECK(sw_pii_scan_request(E, body, &counts) == SW_OK);
        CHECK(counts.total == (uint32_t)(c.n + jc.n));
        m = sw_pii_map_new();
        rc = sw_pii_mask_request(E, m, body, &counts);
        CHECK(rc == SW_OK || rc == SW_ETOOBIG || rc == SW_EINVAL);
        json_t *msgs = json_object_get(body, "messages");
        json_t *content = json_object_get(json_array_get(msgs, 0), "content");
        json_t *tc = json_array_get(json_object_get(json_array_get(msgs, 1), "tool_calls"), 0);
        json_t *args = json_object_get(json_object_get(tc, "function"), "arguments");
        if (rc == SW_EINVAL) {
            /* only refused: JSON arguments whose masked text is not JSON, or
             * a masked text (content or arguments) that does not re-scan
             * clean (the walker never sends what the scanner would flag) */
            CHECK(c.n > 0);
            json_t *b = a ? json_loadb(jmasked.ptr ? jmasked.ptr : "", jmasked.len,
                                       JSON_DECODE_ANY, NULL) : NULL;
            struct spans again_c, again_j;
            scan(mt, masked.len, &again_c);
            scan(jmasked.ptr ? jmasked.ptr : "", jmasked.len, &again_j);
            CHECK((a && !b) || again_c.n > 0 || again_j.n > 0);
            free(again_c.sp);
            free(again_j.sp);
            json_decref(b);
        }
        if (rc == SW_OK) {
            if (counts.total <= (uint32_t)(c.n + jc.n)) {
                /* one pass: the content is masked as the text masker did
                 * (same reservations) */
                CHECK(json_string_length(content) == masked.len &&
                      !memcmp(json_string_value(content), mt, masked.len));
            } else {
                /* a further pass masked what the first one revealed: the
                 * content now scans clean */
                struct spans again;
                scan(json_string_value(content), json_string_length(content), &again);
                CHECK(again.n == 0);
                free(again.sp);
            }
            /* arguments that were JSON are still JSON */
            if (a) {
                json_t *b = json_loadb(json_string_value(args), json_string_length(args),
                                       JSON_DECODE_ANY, NULL);
                CHECK(b);
                json_decref(b);
            }
            /* what goes out scans clean */
            struct spans left = {.len = json_string_length(args)};
            CHECK(sw_pii_scan_json_text(E, json_string_value(args), json_string_length(args),
                                        on_span, &left) == SW_OK);
            CHECK(left.n == 0);
            free(left.sp);
            scan(json_string_value(content), json_string_length(content), &left);
            CHECK(left.n == 0);
            free(left.sp);
        }
        sw_pii_map_free(m);
        json_decref(body);
        json_decref(s);
    }
    free(jc.sp);
    json_decref(a);
    free(regs);
    free(c.sp);
    sw_buf_free(&masked);
    sw_buf_free(&jmasked);
    sw_buf_free(&back);
    return 0;
}
