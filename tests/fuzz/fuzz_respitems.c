/* libFuzzer driver for the conversation state's JSON (src/state/respitems.c,
 * and the input-item pages of src/state/respstore.c). The input is a JSON
 * document read as a Responses body: its `input` made into the items a
 * record stores (after prior items taken from its `prior` field), the
 * body made whole with them, the stored record read back as a Response
 * object and as prior items, and pages of its input items in both orders.
 * Invariants: every stored item of an object input has a string id and a
 * type; a body made whole has the prior items first; an object read back
 * has an output array; pages are list objects of at most `limit` items,
 * walking them with `after` visits every item once. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "state/respitems.h"
#include "state/respstore.h"

#include "check.h"

/* Walks every page of items (limit 3) in one order; returns the items seen. */
static size_t walk_pages(const json_t *items, bool asc, size_t n)
{
    char after[SW_RESPSTORE_MAX_ID + 1] = "";
    size_t seen = 0;
    for (size_t guard = 0; guard <= n + 1; guard++) {
        struct sw_resp_page_query q = {.limit = 3, .asc = asc, .after = after[0] ? after : NULL};
        char *out = NULL;
        size_t out_len = 0;
        int err = sw_resp_input_page(items, &q, &out, &out_len);
        if (err) {
            CHECK(err == SW_EINVAL || err == SW_ENOMEM); /* an `after` that names no item */
            return n;
        }
        json_error_t je;
        json_t *page = json_loadb(out, out_len, 0, &je);
        free(out);
        CHECK(json_is_object(page));
        json_t *data = json_object_get(page, "data");
        CHECK(json_is_array(data) && json_array_size(data) <= 3);
        seen += json_array_size(data);
        const char *last = json_string_value(json_object_get(page, "last_id"));
        bool more = json_is_true(json_object_get(page, "has_more"));
        if (!more || !last || strlen(last) > SW_RESPSTORE_MAX_ID) {
            json_decref(page);
            return more ? n : seen;
        }
        memcpy(after, last, strlen(last) + 1);
        json_decref(page);
    }
    CHECK(!"pages never end");
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_error_t je;
    json_t *body = json_loadb((const char *)data, size, 0, &je);
    if (!json_is_object(body)) {
        json_decref(body);
        return 0;
    }
    json_t *prior = json_object_get(body, "prior");
    json_t *input = json_object_get(body, "input");
    json_t *items = sw_resp_input_items(json_is_array(prior) ? prior : NULL, NULL, input,
                                        "resp_fuzz");
    if (!json_is_string(input) && !json_is_array(input)) {
        CHECK(!items);
        json_decref(body);
        return 0;
    }
    if (!items) { /* out of memory only */
        json_decref(body);
        return 0;
    }
    size_t n_prior = json_is_array(prior) ? json_array_size(prior) : 0;
    size_t n_in = json_is_string(input) ? 1 : json_array_size(input);
    CHECK(json_array_size(items) == n_prior + n_in);
    for (size_t i = n_prior; i < json_array_size(items); i++) {
        json_t *it = json_array_get(items, i);
        if (json_is_object(it)) {
            CHECK(json_is_string(json_object_get(it, "id")));
        }
    }

    /* the body made whole: the prior items first, then its input */
    if (json_is_array(prior)) {
        json_t *whole = json_deep_copy(body);
        if (whole && sw_resp_expand_input(whole, prior) == SW_OK) {
            json_t *in = json_object_get(whole, "input");
            CHECK(json_is_array(in) && json_array_size(in) == n_prior + n_in);
        }
        json_decref(whole);
    }

    /* a record of it (the input as it came, with its prior items when it
     * has them, as a save stores it), read back */
    char *in_s = json_is_array(prior) ? json_dumps(items, JSON_COMPACT)
                                      : json_dumps(input, JSON_COMPACT | JSON_ENCODE_ANY);
    char *meta = NULL, *output = NULL;
    size_t meta_len = 0, output_len = 0;
    json_t *resp = json_pack("{s:s, s:O}", "id", "resp_fuzz", "output", items);
    int err = resp ? sw_resp_split(resp, &meta, &meta_len, &output, &output_len) : SW_ENOMEM;
    if (in_s && !err) {
        const struct sw_resp_record r = {.id = "resp_fuzz", .input = in_s,
                                         .input_len = strlen(in_s), .output = output,
                                         .output_len = output_len, .meta = meta,
                                         .meta_len = meta_len};
        char *obj = NULL;
        size_t obj_len = 0;
        if (sw_resp_record_object(&r, &obj, &obj_len) == SW_OK) {
            json_t *o = json_loadb(obj, obj_len, 0, &je);
            CHECK(json_is_object(o) && json_is_array(json_object_get(o, "output")));
            json_decref(o);
        }
        free(obj);
        json_t *p = sw_resp_prior_items(&r);
        CHECK(!p || json_array_size(p) <= 2 * json_array_size(items));
        json_decref(p);
        json_t *back = sw_resp_record_input(&r);
        if (back) { /* NULL on allocation failure only */
            size_t n = json_array_size(back);
            CHECK(n == json_array_size(items));
            CHECK(walk_pages(back, true, n) == n && walk_pages(back, false, n) == n);
        }
        json_decref(back);
    }
    free(in_s);
    free(meta);
    free(output);
    json_decref(resp);
    json_decref(items);
    json_decref(body);
    return 0;
}
