#include "dialect/responses_up.h"

#include <stdio.h>
#include <string.h>

#include "common/buf.h"
#include "common/err.h"
#include "common/jfast.h"

static bool is(const char *a, const char *b)
{
    return a && !strcmp(a, b);
}

static long count(const json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    return json_is_integer(v) && json_integer_value(v) >= 0 ? (long)json_integer_value(v) : -1;
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && !memcmp(s + n - k, suffix, k);
}

/* ---- Passed through ---- */

static bool lifecycle(const char *t)
{
    return is(t, "response.created") || is(t, "response.in_progress") ||
           is(t, "response.queued") || is(t, "response.completed") ||
           is(t, "response.incomplete") || is(t, "response.failed");
}

int sw_resp_native_event(const char *data, size_t len, const char *model,
                         struct sw_native_event *ev)
{
    memset(ev, 0, sizeof *ev);
    ev->usage_in = ev->usage_out = -1;
    ev->type = "";
    if (len == 6 && !memcmp(data, "[DONE]", 6))
        return 0;
    json_error_t jerr;
    json_t *t = sw_json_load(data, len, 0, &jerr);
    const char *type = json_string_value(json_object_get(t, "type"));
    if (!type) {
        json_decref(t);
        return -1;
    }
    ev->tree = t;
    ev->type = type;
    json_t *r = json_object_get(t, "response");
    if (lifecycle(type) && json_is_object(r) && model)
        json_object_set_new(r, "model", json_string(model));
    if (is(type, "error") || is(type, "response.failed")) {
        ev->error = true;
        return 0;
    }
    ev->preamble = is(type, "response.created") || is(type, "response.in_progress") ||
                   is(type, "response.queued") || is(type, "response.output_item.added") ||
                   is(type, "response.content_part.added");
    ev->content = ends_with(type, ".delta");
    if (is(type, "response.completed") || is(type, "response.incomplete")) {
        json_t *u = json_object_get(r, "usage");
        ev->usage_in = count(u, "input_tokens");
        ev->usage_out = count(u, "output_tokens");
        ev->stop = true;
    }
    return 0;
}

int sw_resp_native_answer(const json_t *body, long *in, long *out)
{
    if (!json_is_object(body) || !json_is_array(json_object_get(body, "output")))
        return -1;
    json_t *u = json_object_get(body, "usage");
    *in = count(u, "input_tokens");
    *out = count(u, "output_tokens");
    return 0;
}

/* ---- Responses -> chat ---- */

/* The usage object of a response in chat's names (a new tree). */
static json_t *chat_usage(const json_t *u)
{
    long in = count(u, "input_tokens"), out = count(u, "output_tokens");
    long cached = count(json_object_get(u, "input_tokens_details"), "cached_tokens");
    long reasoning = count(json_object_get(u, "output_tokens_details"), "reasoning_tokens");
    in = in < 0 ? 0 : in;
    out = out < 0 ? 0 : out;
    return json_pack("{s:I, s:I, s:I, s:{s:I}, s:{s:I}}", "prompt_tokens", (json_int_t)in,
                     "completion_tokens", (json_int_t)out, "total_tokens",
                     (json_int_t)(in + out), "prompt_tokens_details", "cached_tokens",
                     (json_int_t)(cached < 0 ? 0 : cached), "completion_tokens_details",
                     "reasoning_tokens", (json_int_t)(reasoning < 0 ? 0 : reasoning));
}

static const char *finish_of(const json_t *resp, bool calls)
{
    if (is(json_string_value(json_object_get(resp, "status")), "incomplete"))
        return is(json_string_value(json_object_get(json_object_get(resp, "incomplete_details"),
                                                    "reason")),
                  "content_filter")
                   ? "content_filter"
                   : "length";
    return calls ? "tool_calls" : "stop";
}

/* Appends the text of the parts of `parts` whose type is `type` (a
 * refusal part's is its "refusal", the others' their "text"). */
static int join_parts(const json_t *parts, const char *type, struct sw_buf *b, bool *any)
{
    size_t i;
    json_t *p;
    const char *key = is(type, "refusal") ? "refusal" : "text";
    json_array_foreach(parts, i, p) {
        json_t *tx = json_object_get(p, key);
        if (!is(json_string_value(json_object_get(p, "type")), type) || !json_is_string(tx))
            continue;
        *any = true;
        if (sw_buf_append(b, json_string_value(tx), json_string_length(tx)))
            return SW_ENOMEM;
    }
    return SW_OK;
}

static int set_text(json_t *msg, const char *key, struct sw_buf *b, bool any)
{
    if (!any)
        return SW_OK;
    return json_object_set_new(msg, key, json_stringn(b->ptr ? b->ptr : "", b->len)) ? SW_ENOMEM
                                                                                      : SW_OK;
}

/* The chat message of a response's output items (a new tree), or NULL. */
static json_t *chat_message(const json_t *output, bool *calls)
{
    struct sw_buf text, refusal, reasoning;
    sw_buf_init(&text, SW_RESP_MAX_TEXT);
    sw_buf_init(&refusal, SW_RESP_MAX_TEXT);
    sw_buf_init(&reasoning, SW_RESP_MAX_TEXT);
    bool any_text = false, any_refusal = false, any_reasoning = false;
    json_t *msg = json_pack("{s:s, s:n}", "role", "assistant", "content"), *tc = json_array();
    int err = msg && tc ? SW_OK : SW_ENOMEM;
    size_t i;
    json_t *item;
    json_array_foreach(output, i, item) {
        const char *type = json_string_value(json_object_get(item, "type"));
        json_t *content = json_object_get(item, "content");
        if (!err && is(type, "message")) {
            err = join_parts(content, "output_text", &text, &any_text);
            if (!err)
                err = join_parts(content, "refusal", &refusal, &any_refusal);
        } else if (!err && is(type, "reasoning")) {
            bool had = any_reasoning;
            err = join_parts(content, "reasoning_text", &reasoning, &any_reasoning);
            if (!err && any_reasoning == had)
                err = join_parts(json_object_get(item, "summary"), "summary_text", &reasoning,
                                 &any_reasoning);
        } else if (!err && is(type, "function_call")) {
            json_t *args = json_object_get(item, "arguments");
            json_t *call = json_pack("{s:O?, s:s, s:{s:O?, s:o}}", "id",
                                     json_object_get(item, "call_id"), "type", "function",
                                     "function", "name", json_object_get(item, "name"),
                                     "arguments",
                                     json_is_string(args) ? json_incref(args) : json_string(""));
            err = !call || json_array_append_new(tc, call) ? SW_ENOMEM : SW_OK;
        }
    }
    if (!err)
        err = set_text(msg, "content", &text, any_text);
    if (!err)
        err = set_text(msg, "refusal", &refusal, any_refusal);
    if (!err)
        err = set_text(msg, "reasoning_content", &reasoning, any_reasoning);
    *calls = !err && json_array_size(tc) > 0;
    if (!err && *calls && json_object_set(msg, "tool_calls", tc))
        err = SW_ENOMEM;
    json_decref(tc);
    sw_buf_free(&text);
    sw_buf_free(&refusal);
    sw_buf_free(&reasoning);
    if (err) {
        json_decref(msg);
        return NULL;
    }
    return msg;
}

json_t *sw_responses_to_chat(const json_t *resp, const char *model, long long created)
{
    json_t *output = json_object_get(resp, "output");
    if (!json_is_object(resp) || !json_is_array(output))
        return NULL;
    bool calls = false;
    json_t *msg = chat_message(output, &calls);
    if (!msg)
        return NULL;
    json_t *id = json_object_get(resp, "id");
    json_t *o = json_pack("{s:O?, s:s, s:I, s:s, s:[{s:i, s:o, s:s, s:n}]}", "id", id, "object",
                          "chat.completion", "created", (json_int_t)created, "model",
                          model ? model : "", "choices", "index", 0, "message", msg,
                          "finish_reason", finish_of(resp, calls), "logprobs");
    if (o && json_is_object(json_object_get(resp, "usage")))
        json_object_set_new(o, "usage", chat_usage(json_object_get(resp, "usage")));
    return o;
}

/* ---- Responses stream -> chat chunks ---- */

void sw_resp_to_oai_init(struct sw_resp_to_oai *s, const char *model, long long created)
{
    memset(s, 0, sizeof *s);
    snprintf(s->id, sizeof s->id, "chatcmpl-resp");
    snprintf(s->model, sizeof s->model, "%s", model ? model : "");
    s->created = created;
    for (int i = 0; i < SW_RESP_MAX_ITEMS; i++)
        s->call_of[i] = -1;
}

/* A chunk with `delta` (taken) and finish_reason (NULL: null), appended. */
static int add_chunk(struct sw_resp_to_oai *s, json_t *chunks, json_t *delta, const char *finish)
{
    json_t *c = delta ? json_pack("{s:s, s:s, s:I, s:s, s:[{s:i, s:o, s:s?, s:n}]}", "id", s->id,
                                  "object", "chat.completion.chunk", "created",
                                  (json_int_t)s->created, "model", s->model, "choices", "index",
                                  0, "delta", delta, "finish_reason", finish, "logprobs")
                      : NULL;
    return !c || json_array_append_new(chunks, c) ? SW_ENOMEM : SW_OK;
}

static int output_index(const json_t *ev)
{
    json_t *v = json_object_get(ev, "output_index");
    long long i = json_is_integer(v) ? json_integer_value(v) : -1;
    return i >= 0 && i < SW_RESP_MAX_ITEMS ? (int)i : -1;
}

static int call_added(struct sw_resp_to_oai *s, const json_t *ev, json_t *chunks,
                      const char **msg)
{
    json_t *item = json_object_get(ev, "item");
    int out = output_index(ev);
    if (!is(json_string_value(json_object_get(item, "type")), "function_call"))
        return 0;
    if (out < 0 || s->n_calls >= SW_RESP_MAX_TOOLS) {
        *msg = "too many tool calls in stream";
        return -1;
    }
    int k = s->call_of[out] = s->n_calls++;
    json_t *args = json_object_get(item, "arguments");
    json_t *d = json_pack("{s:[{s:i, s:O?, s:s, s:{s:O?, s:o}}]}", "tool_calls", "index", k, "id",
                          json_object_get(item, "call_id"), "type", "function", "function",
                          "name", json_object_get(item, "name"), "arguments",
                          json_is_string(args) ? json_incref(args) : json_string(""));
    return add_chunk(s, chunks, d, NULL) ? -1 : 0;
}

static int call_delta(struct sw_resp_to_oai *s, const json_t *ev, json_t *chunks)
{
    int out = output_index(ev);
    json_t *delta = json_object_get(ev, "delta");
    if (out < 0 || s->call_of[out] < 0 || !json_is_string(delta))
        return 0;
    json_t *d = json_pack("{s:[{s:i, s:{s:O}}]}", "tool_calls", "index", s->call_of[out],
                          "function", "arguments", delta);
    return add_chunk(s, chunks, d, NULL) ? -1 : 0;
}

/* response.completed / .incomplete: the finish chunk, then the usage. */
static int finished(struct sw_resp_to_oai *s, const json_t *resp, json_t *chunks)
{
    s->done = true;
    if (add_chunk(s, chunks, json_object(), finish_of(resp, s->n_calls > 0)))
        return -1;
    json_t *u = json_object_get(resp, "usage");
    if (!json_is_object(u))
        return 0;
    json_t *c = json_pack("{s:s, s:s, s:I, s:s, s:[], s:o}", "id", s->id, "object",
                          "chat.completion.chunk", "created", (json_int_t)s->created, "model",
                          s->model, "choices", "usage", chat_usage(u));
    return !c || json_array_append_new(chunks, c) ? -1 : 0;
}

/* A text delta of kind `key` (content, refusal, reasoning_content). */
static int text_delta(struct sw_resp_to_oai *s, const json_t *ev, const char *key, json_t *chunks)
{
    json_t *delta = json_object_get(ev, "delta");
    if (!json_is_string(delta) || !json_string_length(delta))
        return 0;
    return add_chunk(s, chunks, json_pack("{s:O}", key, delta), NULL) ? -1 : 0;
}

int sw_resp_to_oai_event(struct sw_resp_to_oai *s, const char *data, size_t len,
                         json_t *chunks, const char **msg)
{
    *msg = "out of memory";
    if (len == 6 && !memcmp(data, "[DONE]", 6))
        return 0;
    json_error_t jerr;
    json_t *ev = sw_json_load(data, len, 0, &jerr);
    const char *type = json_string_value(json_object_get(ev, "type"));
    int rc = 0;
    if (!type) {
        *msg = "malformed JSON in stream event";
        rc = -1;
    } else if (is(type, "error") || is(type, "response.failed")) {
        *msg = "error event";
        rc = -1;
    } else if (is(type, "response.created")) {
        const char *id = json_string_value(json_object_get(json_object_get(ev, "response"), "id"));
        if (id)
            snprintf(s->id, sizeof s->id, "%s", id);
    } else if (is(type, "response.output_text.delta")) {
        rc = text_delta(s, ev, "content", chunks);
    } else if (is(type, "response.refusal.delta")) {
        rc = text_delta(s, ev, "refusal", chunks);
    } else if (is(type, "response.reasoning_text.delta") ||
               is(type, "response.reasoning_summary_text.delta")) {
        rc = text_delta(s, ev, "reasoning_content", chunks);
    } else if (is(type, "response.output_item.added")) {
        rc = call_added(s, ev, chunks, msg);
    } else if (is(type, "response.function_call_arguments.delta")) {
        rc = call_delta(s, ev, chunks);
    } else if (is(type, "response.completed") || is(type, "response.incomplete")) {
        rc = finished(s, json_object_get(ev, "response"), chunks);
    }
    json_decref(ev);
    return rc;
}
