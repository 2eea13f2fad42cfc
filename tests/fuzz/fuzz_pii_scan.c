/* libFuzzer driver for the PII scanner and masker. For any input: spans are
 * in order, inside the text and do not overlap; masking then unmasking with
 * the same map gives the input back (placeholder-shaped text already in the
 * input is reserved first, as sw_pii_mask_request does); the masked text
 * never contains a detected span verbatim where a placeholder stands; the
 * JSON-text masker and the request masker do not crash, and keep valid JSON
 * arguments valid. */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "common/buf.h"
#include "common/err.h"
#include "pii/map.h"
#include "pii/pii.h"

#define CHECK(cond) do { if (!(cond)) __builtin_trap(); } while (0)

static struct sw_pii_engine *E;

struct chk {
    size_t len, last_end;
    int n;
};

static int on_span(void *ud, const struct sw_pii_span *sp)
{
    struct chk *c = ud;
    CHECK(sp->len > 0);
    CHECK(sp->start >= c->last_end);
    CHECK(sp->start + sp->len <= c->len);
    CHECK(sp->type >= 0 && sp->type < sw_pii_type_count(E));
    c->last_end = sp->start + sp->len;
    c->n++;
    return SW_OK;
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
    struct chk c = {.len = size};
    CHECK(sw_pii_scan_text(E, t, size, on_span, &c) == SW_OK);

    struct sw_pii_map *m = sw_pii_map_new();
    struct sw_buf masked, back;
    sw_buf_init(&masked, 1 << 24);
    sw_buf_init(&back, 1 << 24);
    reserve_all(m, t, size);
    int rc = sw_pii_mask_text(E, m, t, size, &masked, NULL);
    CHECK(rc == SW_OK || rc == SW_ETOOBIG);
    if (rc == SW_OK) {
        CHECK(sw_pii_unmask_text(m, masked.ptr ? masked.ptr : "", masked.len, 0, &back) == SW_OK);
        CHECK(back.len == size && (size == 0 || !memcmp(back.ptr, t, size)));
        CHECK(c.n == 0 || sw_pii_map_size(m) > 0);
    }
    sw_buf_reset(&masked);
    sw_pii_map_free(m);

    /* as JSON text (tool-call arguments) */
    m = sw_pii_map_new();
    rc = sw_pii_mask_json_text(E, m, t, size, &masked, NULL);
    CHECK(rc == SW_OK || rc == SW_ETOOBIG);
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
        CHECK(counts.total == 2u * (uint32_t)c.n || counts.total >= (uint32_t)c.n);
        m = sw_pii_map_new();
        rc = sw_pii_mask_request(E, m, body, &counts);
        CHECK(rc == SW_OK || rc == SW_ETOOBIG || rc == SW_EINVAL);
        if (rc == SW_OK) {
            /* arguments that were JSON are still JSON */
            json_t *a = json_loadb(t, size, JSON_DECODE_ANY, NULL);
            if (a) {
                json_t *tc = json_array_get(json_object_get(json_array_get(
                    json_object_get(body, "messages"), 1), "tool_calls"), 0);
                json_t *args = json_object_get(json_object_get(tc, "function"), "arguments");
                json_t *b = json_loadb(json_string_value(args), json_string_length(args),
                                       JSON_DECODE_ANY, NULL);
                CHECK(b);
                json_decref(b);
                json_decref(a);
            }
        }
        sw_pii_map_free(m);
        json_decref(body);
        json_decref(s);
    }
    sw_buf_free(&masked);
    sw_buf_free(&back);
    return 0;
}
