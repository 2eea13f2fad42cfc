#include "dialect/anth_resp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"

/* ---- Reasons and errors ---- */

const char *sw_anth_finish_reason(const char *stop_reason)
{
    if (!stop_reason)
        return "stop";
    if (!strcmp(stop_reason, "max_tokens"))
        return "length";
    if (!strcmp(stop_reason, "tool_use"))
        return "tool_calls";
    if (!strcmp(stop_reason, "refusal"))
        return "content_filter";
    return "stop"; /* end_turn, stop_sequence, pause_turn */
}

const char *sw_anth_stop_reason(const char *finish_reason)
{
    if (!finish_reason)
        return "end_turn";
    if (!strcmp(finish_reason, "length"))
        return "max_tokens";
    if (!strcmp(finish_reason, "tool_calls") || !strcmp(finish_reason, "function_call"))
        return "tool_use";
    if (!strcmp(finish_reason, "content_filter"))
        return "refusal";
    return "end_turn";
}

const char *sw_anth_error_type(int status)
{
    switch (status) {
    case 400: return "invalid_request_error";
    case 401: return "authentication_error";
    case 403: return "permission_error";
    case 404: return "not_found_error";
    case 413: return "request_too_large";
    case 429: return "rate_limit_error";
    case 503:
    case 529: return "overloaded_error";
    case 504: return "timeout_error";
    default: return status >= 500 ? "api_error" : "invalid_request_error";
    }
}

char *sw_anth_error_json(int status, const char *message)
{
    json_t *e = json_pack("{s:s, s:{s:s, s:s}}", "type", "error", "error", "type",
                          sw_anth_error_type(status), "message", message ? message : "");
    char *s = e ? json_dumps(e, JSON_COMPACT) : NULL;
    json_decref(e);
    return s;
}

/* ---- Whole answers ---- */

static long usage_of(const json_t *usage, const char *key)
{
    json_t *v = json_object_get(usage, key);
    return json_is_integer(v) && json_integer_value(v) >= 0 ? (long)json_integer_value(v) : 0;
}

json_t *sw_anth_resp_to_openai(const json_t *in, const char *model, long long created)
{
    json_t *content = json_object_get(in, "content");
    if (!json_is_object(in) || !json_is_array(content))
        return NULL;
    const char *id = json_string_value(json_object_get(in, "id"));
    json_t *calls = json_array();
    size_t tlen = 0;
    size_t i;
    json_t *b;
    json_array_foreach(content, i, b) {
        json_t *t = json_object_get(b, "text");
        if (json_is_string(t))
            tlen += json_string_length(t) + 1;
    }
    char *text = malloc(tlen + 1);
    if (!calls || !text) {
        json_decref(calls);
        free(text);
        return NULL;
    }
    size_t at = 0;
    json_array_foreach(content, i, b) {
        const char *type = json_string_value(json_object_get(b, "type"));
        if (!type)
            continue;
        if (!strcmp(type, "text") && json_is_string(json_object_get(b, "text"))) {
            json_t *t = json_object_get(b, "text");
            memcpy(text + at, json_string_value(t), json_string_length(t));
            at += json_string_length(t);
        } else if (!strcmp(type, "tool_use")) {
            json_t *input = json_object_get(b, "input");
            char *args = input ? json_dumps(input, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
            const char *tid = json_string_value(json_object_get(b, "id"));
            const char *name = json_string_value(json_object_get(b, "name"));
            json_array_append_new(calls, json_pack("{s:s, s:s, s:{s:s, s:s}}", "id",
                                                   tid ? tid : "", "type", "function",
                                                   "function", "name", name ? name : "",
                                                   "arguments", args ? args : "{}"));
            free(args);
        }
    }
    text[at] = '\0';
    /* OpenAI's message carries refusal (null: a refusal's text stays in
     * content, as Anthropic sends it) and its choice logprobs (null: an
     * Anthropic backend gives none). */
    json_t *msg = json_pack("{s:s, s:n}", "role", "assistant", "refusal");
    json_object_set_new(msg, "content", at || !json_array_size(calls)
                                            ? json_stringn(text, at)
                                            : json_null());
    if (json_array_size(calls))
        json_object_set(msg, "tool_calls", calls);
    json_decref(calls);
    free(text);
    const char *sr = json_string_value(json_object_get(in, "stop_reason"));
    json_t *usage = json_object_get(in, "usage");
    long pin = usage_of(usage, "input_tokens"), pout = usage_of(usage, "output_tokens");
    return json_pack("{s:s, s:s, s:I, s:s, s:[{s:i, s:o, s:n, s:s}], s:{s:i, s:i, s:i}}", "id",
                     id ? id : "", "object", "chat.completion", "created", (json_int_t)created,
                     "model", model, "choices", "index", 0, "message", msg, "logprobs",
                     "finish_reason", sw_anth_finish_reason(sr), "usage", "prompt_tokens", (int)pin,
                     "completion_tokens", (int)pout, "total_tokens", (int)(pin + pout));
}

/* "msg_" + the OpenAI id, so Anthropic clients see the id shape they expect. */
static void message_id(const char *oid, char *out, size_t n)
{
    if (oid && !strncmp(oid, "msg_", 4))
        snprintf(out, n, "%s", oid);
    else
        snprintf(out, n, "msg_%s", oid && oid[0] ? oid : "spillway");
}

json_t *sw_anth_resp_from_openai(const json_t *in, const char *model)
{
    json_t *choice = json_array_get(json_object_get(in, "choices"), 0);
    json_t *msg = json_object_get(choice, "message");
    if (!json_is_object(in) || !json_is_object(msg))
        return NULL;
    json_t *blocks = json_array();
    if (!blocks)
        return NULL;
    json_t *c = json_object_get(msg, "content");
    if (json_is_string(c) && json_string_length(c))
        json_array_append_new(blocks, json_pack("{s:s, s:O}", "type", "text", "text", c));
    size_t i;
    json_t *call;
    json_array_foreach(json_object_get(msg, "tool_calls"), i, call) {
        json_t *fn = json_object_get(call, "function");
        const char *args = json_string_value(json_object_get(fn, "arguments"));
        json_error_t je;
        json_t *input = args && args[0] ? json_loads(args, 0, &je) : json_object();
        if (!json_is_object(input)) {
            /* Arguments that are not an object cannot be a tool_use input: keep
             * them whole under one key rather than lose them. */
            json_decref(input);
            input = json_pack("{s:s}", "_arguments", args ? args : "");
        }
        const char *tid = json_string_value(json_object_get(call, "id"));
        const char *name = json_string_value(json_object_get(fn, "name"));
        json_array_append_new(blocks, json_pack("{s:s, s:s, s:s, s:o}", "type", "tool_use", "id",
                                                tid ? tid : "", "name", name ? name : "",
                                                "input", input));
    }
    char id[128];
    message_id(json_string_value(json_object_get(in, "id")), id, sizeof id);
    json_t *usage = json_object_get(in, "usage");
    const char *fr = json_string_value(json_object_get(choice, "finish_reason"));
    return json_pack("{s:s, s:s, s:s, s:s, s:o, s:s, s:n, s:{s:i, s:i}}", "id", id, "type",
                     "message", "role", "assistant", "model", model, "content", blocks,
                     "stop_reason", sw_anth_stop_reason(fr), "stop_sequence", "usage",
                     "input_tokens", (int)usage_of(usage, "prompt_tokens"), "output_tokens",
                     (int)usage_of(usage, "completion_tokens"));
}

/* ---- Anthropic stream -> OpenAI chunks ---- */

void sw_anth_to_oai_init(struct sw_anth_to_oai *s, const char *model, long long created)
{
    memset(s, 0, sizeof *s);
    snprintf(s->model, sizeof s->model, "%s", model ? model : "");
    snprintf(s->id, sizeof s->id, "chatcmpl-spillway");
    s->created = created;
    for (size_t i = 0; i < sizeof s->tool_index / sizeof s->tool_index[0]; i++)
        s->tool_index[i] = -1;
}

/* A chunk with one choice whose delta is `delta` (taken) and finish reason;
 * logprobs null in every choice, as OpenAI sends it. */
static int add_chunk(struct sw_anth_to_oai *s, json_t *chunks, json_t *delta, const char *finish)
{
    json_t *c = delta ? json_pack("{s:s, s:s, s:I, s:s, s:[{s:i, s:o, s:n, s:o}]}", "id", s->id,
                                  "object", "chat.completion.chunk", "created",
                                  (json_int_t)s->created, "model", s->model, "choices", "index",
                                  0, "delta", delta, "logprobs", "finish_reason",
                                  finish ? json_string(finish) : json_null())
                      : NULL;
    if (!c || json_array_append_new(chunks, c))
        return -1;
    return 0;
}

/* One handler per Anthropic event type: 0, or -1 with *msg saying why. */

static int ev_message_start(struct sw_anth_to_oai *s, const json_t *ev, json_t *chunks)
{
    json_t *m = json_object_get(ev, "message");
    const char *id = json_string_value(json_object_get(m, "id"));
    if (id)
        snprintf(s->id, sizeof s->id, "%s", id);
    json_t *u = json_object_get(m, "usage");
    s->input_tokens = usage_of(u, "input_tokens");
    s->output_tokens = usage_of(u, "output_tokens");
    return add_chunk(s, chunks, json_pack("{s:s, s:s}", "role", "assistant", "content", ""),
                     NULL);
}

/* A tool_use block starts a tool call (the format tool's starts the content);
 * a text block with text starts the content. */
static int ev_block_start(struct sw_anth_to_oai *s, const json_t *ev, json_t *chunks,
                          const char **msg)
{
    json_t *cb = json_object_get(ev, "content_block");
    json_t *idx = json_object_get(ev, "index");
    const char *bt = json_string_value(json_object_get(cb, "type"));
    const char *name = json_string_value(json_object_get(cb, "name"));
    if (bt && !strcmp(bt, "tool_use") && s->format_tool && name &&
        !strcmp(name, SW_ANTH_FORMAT_TOOL) && json_is_integer(idx) &&
        json_integer_value(idx) >= 0 && json_integer_value(idx) < 64) {
        s->tool_index[json_integer_value(idx)] = -2; /* its input is the content */
        s->format_seen = true;
    } else if (bt && !strcmp(bt, "tool_use")) {
        if (!json_is_integer(idx) || json_integer_value(idx) < 0 ||
            json_integer_value(idx) >= 64 || s->n_tools >= 64) {
            *msg = "tool_use block index out of range";
            return -1;
        }
        int k = s->n_tools++;
        s->tool_index[json_integer_value(idx)] = k;
        const char *tid = json_string_value(json_object_get(cb, "id"));
        return add_chunk(s, chunks,
                         json_pack("{s:[{s:i, s:s, s:s, s:{s:s, s:s}}]}", "tool_calls",
                                   "index", k, "id", tid ? tid : "", "type", "function",
                                   "function", "name", name ? name : "", "arguments", ""),
                         NULL);
    } else if (bt && !strcmp(bt, "text")) {
        json_t *t = json_object_get(cb, "text");
        if (json_is_string(t) && json_string_length(t))
            return add_chunk(s, chunks, json_pack("{s:O}", "content", t), NULL);
    }
    return 0;
}

static int ev_block_delta(struct sw_anth_to_oai *s, const json_t *ev, json_t *chunks,
                          const char **msg)
{
    json_t *d = json_object_get(ev, "delta");
    const char *dt = json_string_value(json_object_get(d, "type"));
    json_t *idx = json_object_get(ev, "index");
    if (dt && !strcmp(dt, "text_delta") && json_is_string(json_object_get(d, "text")))
        return add_chunk(s, chunks, json_pack("{s:O}", "content", json_object_get(d, "text")),
                         NULL);
    if (dt && !strcmp(dt, "input_json_delta")) {
        json_t *pj = json_object_get(d, "partial_json");
        int k = json_is_integer(idx) && json_integer_value(idx) >= 0 &&
                        json_integer_value(idx) < 64
                    ? s->tool_index[json_integer_value(idx)]
                    : -1;
        if (k == -2 && json_is_string(pj))
            return add_chunk(s, chunks, json_pack("{s:O}", "content", pj), NULL);
        if (k < 0 || !json_is_string(pj)) {
            *msg = "input_json_delta outside a tool_use block";
            return -1;
        }
        return add_chunk(s, chunks,
                         json_pack("{s:[{s:i, s:{s:O}}]}", "tool_calls", "index", k,
                                   "function", "arguments", pj),
                         NULL);
    }
    /* thinking / signature / citations deltas have no chat-completions form;
     * requests that ask for thinking are refused up front. */
    return 0;
}

static int ev_message_delta(struct sw_anth_to_oai *s, const json_t *ev, json_t *chunks)
{
    json_t *u = json_object_get(ev, "usage");
    if (json_object_get(u, "output_tokens"))
        s->output_tokens = usage_of(u, "output_tokens");
    if (json_object_get(u, "input_tokens"))
        s->input_tokens = usage_of(u, "input_tokens");
    const char *sr = json_string_value(json_object_get(json_object_get(ev, "delta"), "stop_reason"));
    if (sr && s->format_seen && !strcmp(sr, "tool_use"))
        sr = "end_turn"; /* the format tool's call is the answer: finish_reason stop */
    if (sr)
        return add_chunk(s, chunks, json_object(), sw_anth_finish_reason(sr));
    return 0;
}

/* The last chunk: no choice, the usage. */
static int ev_message_stop(struct sw_anth_to_oai *s, json_t *chunks)
{
    json_t *c = json_pack("{s:s, s:s, s:I, s:s, s:[], s:{s:i, s:i, s:i}}", "id", s->id,
                          "object", "chat.completion.chunk", "created",
                          (json_int_t)s->created, "model", s->model, "choices", "usage",
                          "prompt_tokens", (int)s->input_tokens, "completion_tokens",
                          (int)s->output_tokens, "total_tokens",
                          (int)(s->input_tokens + s->output_tokens));
    s->done = true;
    return c && !json_array_append_new(chunks, c) ? 0 : -1;
}

static int ev_error(struct sw_anth_to_oai *s, const json_t *ev, const char **msg)
{
    const char *et = json_string_value(json_object_get(json_object_get(ev, "error"), "type"));
    /* kept only when it looks like one of Anthropic's types (error_type's size, a-z _) */
    size_t n = et ? strlen(et) : 0;
    bool ok = n > 0 && n < sizeof s->error_type && strspn(et, "abcdefghijklmnopqrstuvwxyz_") == n;
    snprintf(s->error_type, sizeof s->error_type, "%s", ok ? et : "");
    *msg = "error event from the upstream";
    return -1;
}

int sw_anth_to_oai_event(struct sw_anth_to_oai *s, const char *data, size_t len, json_t *chunks,
                         const char **msg)
{
    static const char *dummy;
    if (!msg)
        msg = &dummy;
    *msg = "malformed event";
    json_error_t je;
    json_t *ev = json_loadb(data, len, 0, &je);
    const char *type = json_string_value(json_object_get(ev, "type"));
    int rc = 0;
    if (!json_is_object(ev) || !type)
        rc = -1;
    else if (!strcmp(type, "message_start"))
        rc = ev_message_start(s, ev, chunks);
    else if (!strcmp(type, "content_block_start"))
        rc = ev_block_start(s, ev, chunks, msg);
    else if (!strcmp(type, "content_block_delta"))
        rc = ev_block_delta(s, ev, chunks, msg);
    else if (!strcmp(type, "message_delta"))
        rc = ev_message_delta(s, ev, chunks);
    else if (!strcmp(type, "message_stop"))
        rc = ev_message_stop(s, chunks);
    else if (!strcmp(type, "error"))
        rc = ev_error(s, ev, msg);
    /* ping, content_block_stop and unknown events: nothing to send */
    json_decref(ev);
    return rc;
}

/* ---- OpenAI chunks -> Anthropic stream ---- */

void sw_oai_to_anth_init(struct sw_oai_to_anth *s, const char *id, const char *model,
                         long input_tokens_est)
{
    memset(s, 0, sizeof *s);
    message_id(id, s->id, sizeof s->id);
    snprintf(s->model, sizeof s->model, "%s", model ? model : "");
    s->block = -1;
    s->input_tokens = input_tokens_est;
    for (size_t i = 0; i < sizeof s->tool_block / sizeof s->tool_block[0]; i++)
        s->tool_block[i] = -1;
}

/* Appends `event: name\ndata: <ev>\n\n`; takes ev. */
static int emit(struct sw_buf *out, const char *name, json_t *ev)
{
    char *d = ev ? json_dumps(ev, JSON_COMPACT) : NULL;
    json_decref(ev);
    int err = !d || sw_buf_appendf(out, "event: %s\ndata: %s\n\n", name, d);
    free(d);
    return err ? SW_ENOMEM : SW_OK;
}

static int ensure_started(struct sw_oai_to_anth *s, struct sw_buf *out)
{
    if (s->started)
        return SW_OK;
    s->started = true;
    int err = emit(out, "message_start",
                   json_pack("{s:s, s:{s:s, s:s, s:s, s:s, s:[], s:n, s:n, s:{s:i, s:i}}}",
                             "type", "message_start", "message", "id", s->id, "type", "message",
                             "role", "assistant", "model", s->model, "content", "stop_reason",
                             "stop_sequence", "usage", "input_tokens", (int)s->input_tokens,
                             "output_tokens", 0));
    if (!err)
        err = emit(out, "ping", json_pack("{s:s}", "type", "ping"));
    return err;
}

static int close_block(struct sw_oai_to_anth *s, struct sw_buf *out)
{
    if (s->block < 0)
        return SW_OK;
    int err = emit(out, "content_block_stop",
                   json_pack("{s:s, s:i}", "type", "content_block_stop", "index", s->block));
    s->block = -1;
    return err;
}

static int open_block(struct sw_oai_to_anth *s, json_t *block, bool text, struct sw_buf *out)
{
    int err = close_block(s, out);
    s->block = s->next_block++;
    s->block_is_text = text;
    if (!err)
        err = emit(out, "content_block_start",
                   block ? json_pack("{s:s, s:i, s:o}", "type", "content_block_start", "index",
                                     s->block, "content_block", block)
                         : NULL);
    return err;
}

int sw_oai_to_anth_chunk(struct sw_oai_to_anth *s, const json_t *chunk, struct sw_buf *out)
{
    int err = ensure_started(s, out);
    json_t *usage = json_object_get(chunk, "usage");
    if (json_is_object(usage)) {
        if (json_object_get(usage, "prompt_tokens"))
            s->input_tokens = usage_of(usage, "prompt_tokens");
        s->output_tokens = usage_of(usage, "completion_tokens");
    }
    json_t *choice = json_array_get(json_object_get(chunk, "choices"), 0);
    json_t *delta = json_object_get(choice, "delta");
    json_t *content = json_object_get(delta, "content");
    if (!err && json_is_string(content) && json_string_length(content)) {
        if (s->block < 0 || !s->block_is_text)
            err = open_block(s, json_pack("{s:s, s:s}", "type", "text", "text", ""), true, out);
        if (!err)
            err = emit(out, "content_block_delta",
                       json_pack("{s:s, s:i, s:{s:s, s:O}}", "type", "content_block_delta",
                                 "index", s->block, "delta", "type", "text_delta", "text",
                                 content));
    }
    size_t i;
    json_t *call;
    json_array_foreach(json_object_get(delta, "tool_calls"), i, call) {
        if (err)
            break;
        json_t *ix = json_object_get(call, "index");
        long k = json_is_integer(ix) ? (long)json_integer_value(ix) : (long)i;
        if (k < 0 || k >= 64)
            continue;
        json_t *fn = json_object_get(call, "function");
        const char *name = json_string_value(json_object_get(fn, "name"));
        if (s->tool_block[k] < 0 || (s->block != s->tool_block[k] && name)) {
            const char *tid = json_string_value(json_object_get(call, "id"));
            err = open_block(s, json_pack("{s:s, s:s, s:s, s:{}}", "type", "tool_use", "id",
                                          tid ? tid : "", "name", name ? name : "", "input"),
                             false, out);
            s->tool_block[k] = s->block;
        }
        const char *args = json_string_value(json_object_get(fn, "arguments"));
        if (!err && args && args[0] && s->block == s->tool_block[k])
            err = emit(out, "content_block_delta",
                       json_pack("{s:s, s:i, s:{s:s, s:s}}", "type", "content_block_delta",
                                 "index", s->block, "delta", "type", "input_json_delta",
                                 "partial_json", args));
    }
    const char *fr = json_string_value(json_object_get(choice, "finish_reason"));
    if (fr)
        snprintf(s->stop_reason, sizeof s->stop_reason, "%s", sw_anth_stop_reason(fr));
    return err;
}

int sw_oai_to_anth_finish(struct sw_oai_to_anth *s, struct sw_buf *out)
{
    if (s->finished)
        return SW_OK;
    s->finished = true;
    int err = ensure_started(s, out);
    if (!err)
        err = close_block(s, out);
    if (!err)
        err = emit(out, "message_delta",
                   json_pack("{s:s, s:{s:s, s:n}, s:{s:i, s:i}}", "type", "message_delta",
                             "delta", "stop_reason",
                             s->stop_reason[0] ? s->stop_reason : "end_turn", "stop_sequence",
                             "usage", "input_tokens", (int)s->input_tokens, "output_tokens",
                             (int)s->output_tokens));
    if (!err)
        err = emit(out, "message_stop", json_pack("{s:s}", "type", "message_stop"));
    return err;
}

int sw_oai_to_anth_error(struct sw_oai_to_anth *s, const char *message, struct sw_buf *out)
{
    return sw_oai_to_anth_error_typed(s, NULL, message, out);
}

int sw_oai_to_anth_error_typed(struct sw_oai_to_anth *s, const char *type, const char *message,
                               struct sw_buf *out)
{
    s->finished = true;
    return emit(out, "error",
                json_pack("{s:s, s:{s:s, s:s}}", "type", "error", "error", "type",
                          type && type[0] ? type : "api_error", "message",
                          message ? message : ""));
}

void sw_anth_resp_format_tool_to_content(json_t *answer)
{
    json_t *choice = json_array_get(json_object_get(answer, "choices"), 0);
    json_t *msg = json_object_get(choice, "message");
    json_t *calls = json_object_get(msg, "tool_calls");
    size_t i;
    json_t *tc;
    json_array_foreach(calls, i, tc) {
        json_t *fn = json_object_get(tc, "function");
        const char *n = json_string_value(json_object_get(fn, "name"));
        json_t *args = json_object_get(fn, "arguments");
        if (n && !strcmp(n, SW_ANTH_FORMAT_TOOL) && json_is_string(args)) {
            json_object_set(msg, "content", args);
            json_object_del(msg, "tool_calls");
            json_object_set_new(choice, "finish_reason", json_string("stop"));
            return;
        }
    }
}
