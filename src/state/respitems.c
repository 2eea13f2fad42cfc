/* The conversation state's JSON: see respitems.h. Pure. */
#include "state/respitems.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/jdump.h"
#include "common/jfast.h"

static json_t *load(const char *s, size_t len)
{
    if (!s || !len)
        return NULL;
    json_error_t je;
    return sw_json_load(s, len, 0, &je);
}

static int dump(const json_t *v, char **out, size_t *len)
{
    char *s = sw_json_dumps(v, JSON_COMPACT);
    if (!s)
        return SW_ENOMEM;
    *out = s;
    *len = strlen(s);
    return SW_OK;
}

int sw_resp_record_object(const struct sw_resp_record *r, char **out, size_t *len)
{
    *out = NULL;
    *len = 0;
    json_t *o = load(r->meta, r->meta_len);
    json_t *output = load(r->output, r->output_len);
    int err = SW_EINVAL;
    if (!o)
        o = json_pack("{s:s, s:s, s:I}", "id", r->id, "object", "response", "created_at",
                      (json_int_t)r->created_at_s);
    if (json_is_object(o) && json_is_array(output)) {
        err = json_object_set(o, "output", output) ? SW_ENOMEM : SW_OK;
        if (!err)
            err = dump(o, out, len);
    }
    json_decref(o);
    json_decref(output);
    return err;
}

static bool is(const char *a, const char *b)
{
    return a && !strcmp(a, b);
}

json_t *sw_resp_record_input(const struct sw_resp_record *r)
{
    json_error_t je;
    json_t *raw = r->input && r->input_len
                      ? sw_json_load(r->input, r->input_len, JSON_DECODE_ANY, &je)
                      : NULL;
    json_t *items = raw ? sw_resp_input_items(NULL, NULL, raw, r->id) : NULL;
    json_decref(raw);
    return items;
}

json_t *sw_resp_prior_items(const struct sw_resp_record *r)
{
    json_t *in = r->input_len ? sw_resp_record_input(r) : NULL;
    json_t *out = load(r->output, r->output_len);
    json_t *all = NULL;
    if ((in || !r->input_len) && (!out || json_is_array(out)))
        all = in ? json_incref(in) : json_array();
    size_t i;
    json_t *it;
    json_array_foreach(out, i, it) {
        if (!all)
            break;
        if (is(json_string_value(json_object_get(it, "type")), "reasoning"))
            continue;
        if (json_array_append(all, it)) {
            json_decref(all);
            all = NULL;
        }
    }
    json_decref(in);
    json_decref(out);
    return all;
}

/* The id prefix OpenAI gives an item of this type. */
static const char *id_prefix(const char *type)
{
    return !type || is(type, "message") ? "msg"
           : is(type, "function_call")  ? "fc"
           : is(type, "function_call_output") ? "fco"
                                              : "item";
}

/* A copy of item n of this request's input, as a stored item. */
static json_t *stored_item(const json_t *it, const char *hex, size_t n)
{
    if (!json_is_object(it))
        return json_incref((json_t *)it); /* the parser refused it already; kept as sent */
    json_t *c = json_copy((json_t *)it);
    if (!c)
        return NULL;
    const char *type = json_string_value(json_object_get(c, "type"));
    bool message = !json_object_get(c, "type") || is(type, "message");
    int bad = 0;
    if (message) {
        bad |= json_object_set_new(c, "type", json_string("message"));
        json_t *content = json_object_get(c, "content");
        if (json_is_string(content)) {
            bool assistant = is(json_string_value(json_object_get(c, "role")), "assistant");
            json_t *part = assistant ? json_pack("{s:s, s:O, s:[]}", "type", "output_text",
                                                 "text", content, "annotations")
                                     : json_pack("{s:s, s:O}", "type", "input_text", "text",
                                                 content);
            bad |= json_object_set_new(c, "content", json_pack("[o]", part));
        }
        if (!json_object_get(c, "status"))
            bad |= json_object_set_new(c, "status", json_string("completed"));
    }
    if (!json_is_string(json_object_get(c, "id"))) {
        char id[SW_RESPSTORE_MAX_ID + 32];
        snprintf(id, sizeof id, "%s_%s_in%zu", id_prefix(message ? NULL : type), hex, n);
        bad |= json_object_set_new(c, "id", json_string(id));
    }
    if (bad) {
        json_decref(c);
        return NULL;
    }
    return c;
}

/* Gives every object item of all a distinct id of at most SW_RESPSTORE_MAX_ID
 * bytes: one already taken earlier in the list, empty, too long or missing
 * gets "<prefix>_<hex>_at<i>" (i its place), so a page cursor (`after`) names
 * one item. Items changed are copied first (the prior ones are shared). */
static int unique_ids(json_t *all, const char *hex)
{
    json_t *seen = json_object();
    if (!seen)
        return SW_ENOMEM;
    size_t i;
    json_t *it;
    int err = SW_OK;
    json_array_foreach(all, i, it) {
        if (!json_is_object(it))
            continue;
        const char *id = json_string_value(json_object_get(it, "id"));
        if (!id || !*id || strlen(id) > SW_RESPSTORE_MAX_ID || json_object_get(seen, id)) {
            json_t *c = json_copy(it);
            char nid[SW_RESPSTORE_MAX_ID + 32];
            const char *type = json_string_value(json_object_get(it, "type"));
            snprintf(nid, sizeof nid, "%s_%s_at%zu", id_prefix(type), hex, i);
            for (unsigned k = 1; json_object_get(seen, nid); k++) /* a client took it first */
                snprintf(nid, sizeof nid, "%s_%s_at%zu_%u", id_prefix(type), hex, i, k);
            if (!c || json_object_set_new(c, "id", json_string(nid)) ||
                json_array_set_new(all, i, c)) {
                err = SW_ENOMEM;
                break;
            }
            it = c;
            id = json_string_value(json_object_get(c, "id"));
        }
        if (!id || json_object_set_new(seen, id, json_true())) {
            err = SW_ENOMEM;
            break;
        }
    }
    json_decref(seen);
    return err;
}

json_t *sw_resp_input_items(const json_t *prior_input, const json_t *prior_output,
                            const json_t *input, const char *resp_id)
{
    if (!json_is_string(input) && !json_is_array(input))
        return NULL;
    const char *hex = resp_id && !strncmp(resp_id, "resp_", 5) ? resp_id + 5 : resp_id ? resp_id : "";
    char hexbuf[SW_RESPSTORE_MAX_ID - 24];
    snprintf(hexbuf, sizeof hexbuf, "%s", hex); /* generated ids stay within SW_RESPSTORE_MAX_ID */
    hex = hexbuf;
    json_t *all = json_array();
    const json_t *prior[] = {prior_input, prior_output};
    for (size_t k = 0; all && k < 2; k++)
        if (json_is_array(prior[k]) && json_array_extend(all, (json_t *)prior[k])) {
            json_decref(all);
            all = NULL;
        }
    if (!all)
        return NULL;
    if (json_is_string(input)) {
        json_t *m = json_pack("{s:s, s:O}", "role", "user", "content", input);
        json_t *it = m ? stored_item(m, hex, 0) : NULL;
        json_decref(m);
        if (!it || json_array_append_new(all, it)) {
            json_decref(all);
            return NULL;
        }
    } else {
        size_t i;
        json_t *v;
        json_array_foreach(input, i, v) {
            json_t *it = stored_item(v, hex, i);
            if (!it || json_array_append_new(all, it)) {
                json_decref(all);
                return NULL;
            }
        }
    }
    if (unique_ids(all, hex)) {
        json_decref(all);
        return NULL;
    }
    return all;
}

int sw_resp_expand_input(json_t *body, const json_t *prior)
{
    json_t *input = json_object_get(body, "input");
    if (!json_is_object(body) || !json_is_array(prior) ||
        (!json_is_string(input) && !json_is_array(input)))
        return SW_EINVAL;
    json_t *all = json_copy((json_t *)prior);
    if (!all)
        return SW_ENOMEM;
    int bad;
    if (json_is_string(input))
        bad = json_array_append_new(all, json_pack("{s:s, s:O}", "role", "user", "content", input));
    else
        bad = json_array_extend(all, input);
    if (bad) {
        json_decref(all);
        return SW_ENOMEM;
    }
    return json_object_set_new(body, "input", all) ? SW_ENOMEM : SW_OK; /* takes all */
}

int sw_resp_split(const json_t *response, char **meta, size_t *meta_len, char **output,
                  size_t *output_len)
{
    *meta = *output = NULL;
    *meta_len = *output_len = 0;
    json_t *out = json_object_get(response, "output");
    if (!json_is_object(response) || !json_is_array(out))
        return SW_EINVAL;
    json_t *m = json_copy((json_t *)response);
    if (!m)
        return SW_ENOMEM;
    json_object_del(m, "output");
    int err = dump(m, meta, meta_len);
    json_decref(m);
    if (!err)
        err = dump(out, output, output_len);
    if (err) {
        free(*meta);
        *meta = NULL;
        *meta_len = 0;
    }
    return err;
}

int sw_resp_input_page(const json_t *all, const struct sw_resp_page_query *q, char **out,
                       size_t *out_len)
{
    *out = NULL;
    *out_len = 0;
    if (!json_is_array(all))
        return SW_EINVAL;
    long n = (long)json_array_size(all);
    long limit = q->limit > 0 ? (q->limit > 100 ? 100 : q->limit) : 20;
    /* pos walks the items in the asked order: asc from 0, desc from n - 1 */
    long start = 0;
    if (q->after) {
        start = -1;
        for (long k = 0; k < n && start < 0; k++) {
            long i = q->asc ? k : n - 1 - k;
            const char *iid = json_string_value(json_object_get(json_array_get(all, (size_t)i), "id"));
            if (iid && !strcmp(iid, q->after))
                start = k + 1;
        }
        if (start < 0)
            return SW_EINVAL;
    }
    json_t *data = json_array();
    long end = start + limit < n ? start + limit : n;
    for (long k = start; k < end; k++)
        json_array_append(data, json_array_get(all, (size_t)(q->asc ? k : n - 1 - k)));
    size_t got = json_array_size(data);
    const char *first = got ? json_string_value(json_object_get(json_array_get(data, 0), "id")) : NULL;
    const char *last = got ? json_string_value(json_object_get(json_array_get(data, got - 1), "id")) : NULL;
    json_t *list = json_pack("{s:s, s:o, s:s?, s:s?, s:b}", "object", "list", "data", data,
                             "first_id", first, "last_id", last, "has_more", end < n);
    char *s = list ? sw_json_dumps(list, JSON_COMPACT) : NULL;
    json_decref(list);
    if (!s)
        return SW_ENOMEM;
    *out = s;
    *out_len = strlen(s);
    return SW_OK;
}
