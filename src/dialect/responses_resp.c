#include "dialect/responses_resp.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/jdump.h"
#include "common/json.h"

static bool is(const char *a, const char *b)
{
    return a && !strcmp(a, b);
}

/* ---- Shared pieces ---- */

void sw_resp_item_id(const char *id, const char *kind, int n, char *out, size_t size)
{
    const char *base = id ? id : "";
    if (!strncmp(base, "resp_", 5))
        base += 5;
    snprintf(out, size, "%s_%s_%d", kind, base, n);
}

/* A request value (borrowed) or, when absent or null, the default (taken). */
static json_t *echo(const json_t *req, const char *key, json_t *dflt)
{
    json_t *v = json_object_get(req, key);
    if (v && !json_is_null(v)) {
        json_decref(dflt);
        return json_incref(v);
    }
    return dflt ? dflt : json_null();
}

/* The request's tools as the Responses object lists them: every field the
 * schema requires present (description, parameters and strict null when
 * the request left them out). A tool that has them all is the request's
 * own value (shared, not changed): an agent's tools come with every turn. */
static json_t *echo_tools(const json_t *req)
{
    static const char *const keys[] = {"description", "parameters", "strict"};
    json_t *list = json_array();
    size_t i;
    json_t *t;
    json_array_foreach(json_object_get(req, "tools"), i, t) {
        bool function = is(json_string_value(json_object_get(t, "type")), "function"), whole = true;
        for (size_t k = 0; function && k < 3; k++)
            whole = whole && json_object_get(t, keys[k]);
        json_t *c = whole ? json_incref(t) : json_deep_copy(t);
        if (!c)
            continue;
        for (size_t k = 0; !whole && k < 3; k++)
            if (!json_object_get(c, keys[k]))
                json_object_set_new(c, keys[k], json_null());
        json_array_append_new(list, c);
    }
    return list;
}

json_t *sw_responses_shell(const json_t *req, const struct sw_resp_meta *meta, const char *status)
{
    json_t *reasoning = json_object_get(req, "reasoning");
    json_t *text = json_pack("{s:o}", "format",
                             echo(json_object_get(req, "text"), "format",
                                  json_pack("{s:s}", "type", "text")));
    json_t *vb = json_object_get(json_object_get(req, "text"), "verbosity");
    if (text && json_is_string(vb))
        json_object_set(text, "verbosity", vb);
    json_t *r = json_pack(
        "{s:s, s:s, s:I, s:s, s:n, s:n, s:o, s:o, s:s, s:[], s:o, s:o, s:{s:o, s:n}, s:o, "
        "s:o, s:o, s:o, s:o, s:o, s:s, s:o, s:b}",
        "id", meta->id ? meta->id : "", "object", "response", "created_at",
        (json_int_t)meta->created_at, "status", status, "error", "incomplete_details",
        "instructions", echo(req, "instructions", NULL), "max_output_tokens",
        echo(req, "max_output_tokens", NULL), "model", meta->model ? meta->model : "", "output",
        "parallel_tool_calls", echo(req, "parallel_tool_calls", json_true()),
        "previous_response_id", echo(req, "previous_response_id", NULL), "reasoning", "effort",
        echo(reasoning, "effort", NULL), "summary", "store", echo(req, "store", json_true()),
        "temperature", echo(req, "temperature", json_real(1.0)), "text", text ? text : json_null(),
        "tool_choice", echo(req, "tool_choice", json_string("auto")), "tools", echo_tools(req),
        "top_p", echo(req, "top_p", json_real(1.0)), "truncation", "disabled",
        "metadata", echo(req, "metadata", json_object()), "background", 0);
    /* string fields the schema does not let be null: present only when given */
    static const char *const given[] = {"user", "safety_identifier", "prompt_cache_key"};
    for (size_t i = 0; r && i < sizeof given / sizeof *given; i++)
        if (json_is_string(json_object_get(req, given[i])))
            json_object_set(r, given[i], json_object_get(req, given[i]));
    return r;
}

static long num(const json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    return json_is_integer(v) && json_integer_value(v) >= 0 ? (long)json_integer_value(v) : 0;
}

static json_t *usage_json(long in, long out, long cached, long reasoning)
{
    return json_pack("{s:I, s:{s:I, s:i}, s:I, s:{s:I}, s:I}", "input_tokens", (json_int_t)in,
                     "input_tokens_details", "cached_tokens", (json_int_t)cached,
                     "cache_write_tokens", 0, "output_tokens", (json_int_t)out,
                     "output_tokens_details", "reasoning_tokens", (json_int_t)reasoning,
                     "total_tokens", (json_int_t)(in + out));
}

/* Status and incomplete_details for a finish_reason, set on r. */
static void set_status(json_t *r, const char *finish)
{
    const char *reason = is(finish, "length")           ? "max_output_tokens"
                         : is(finish, "content_filter") ? "content_filter"
                                                        : NULL;
    json_object_set_new(r, "status", json_string(reason ? "incomplete" : "completed"));
    json_object_set_new(r, "incomplete_details",
                        reason ? json_pack("{s:s}", "reason", reason) : json_null());
}

static json_t *text_part(const char *text, size_t len)
{
    return json_pack("{s:s, s:s%, s:[], s:[]}", "type", "output_text", "text", text, len,
                     "annotations", "logprobs");
}

static json_t *message_item(const char *id, const char *status, json_t *parts)
{
    return json_pack("{s:s, s:s, s:s, s:s, s:o}", "id", id, "type", "message", "status", status,
                     "role", "assistant", "content", parts ? parts : json_array());
}

static json_t *reasoning_item(const char *id, const char *status, json_t *parts)
{
    return json_pack("{s:s, s:s, s:[], s:o, s:s}", "id", id, "type", "reasoning", "summary",
                     "content", parts ? parts : json_array(), "status", status);
}

static json_t *call_item(const char *id, const char *status, const char *call_id,
                         const char *name, const char *args, size_t len)
{
    return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s%}", "id", id, "type", "function_call",
                     "status", status, "call_id", call_id, "name", name, "arguments", args, len);
}

/* ---- Whole answers ---- */

/* The output items of a chat message (borrowed) appended to `output`. */
static int output_items(json_t *output, const json_t *msg, const char *rid, const char *status)
{
    char id[160];
    json_t *rc = json_object_get(msg, "reasoning_content");
    if (!json_is_string(rc))
        rc = json_object_get(msg, "reasoning");
    if (json_is_string(rc) && json_string_length(rc)) {
        sw_resp_item_id(rid, "rs", (int)json_array_size(output), id, sizeof id);
        json_t *parts = json_pack("[{s:s, s:O}]", "type", "reasoning_text", "text", rc);
        if (json_array_append_new(output, reasoning_item(id, "completed", parts)))
            return SW_ENOMEM;
    }
    json_t *c = json_object_get(msg, "content"), *refusal = json_object_get(msg, "refusal");
    json_t *parts = json_array();
    if (!parts)
        return SW_ENOMEM;
    if (json_is_string(c) && json_string_length(c))
        json_array_append_new(parts, text_part(json_string_value(c), json_string_length(c)));
    if (json_is_string(refusal) && json_string_length(refusal))
        json_array_append_new(parts, json_pack("{s:s, s:O}", "type", "refusal", "refusal", refusal));
    json_t *calls = json_object_get(msg, "tool_calls");
    if (json_array_size(parts) || !json_array_size(calls)) {
        if (!json_array_size(parts))
            json_array_append_new(parts, text_part("", 0));
        sw_resp_item_id(rid, "msg", (int)json_array_size(output), id, sizeof id);
        if (json_array_append_new(output, message_item(id, status, parts)))
            return SW_ENOMEM;
    } else {
        json_decref(parts);
    }
    size_t i;
    json_t *call;
    json_array_foreach(calls, i, call) {
        json_t *fn = json_object_get(call, "function");
        const char *cid = json_string_value(json_object_get(call, "id"));
        const char *name = json_string_value(json_object_get(fn, "name"));
        json_t *args = json_object_get(fn, "arguments");
        sw_resp_item_id(rid, "fc", (int)json_array_size(output), id, sizeof id);
        if (json_array_append_new(output,
                                  call_item(id, "completed", cid ? cid : id, name ? name : "",
                                            json_is_string(args) ? json_string_value(args) : "{}",
                                            json_is_string(args) ? json_string_length(args) : 2)))
            return SW_ENOMEM;
    }
    return SW_OK;
}

json_t *sw_responses_from_chat(const json_t *answer, const json_t *request,
                               const struct sw_resp_meta *meta)
{
    json_t *choice = json_array_get(json_object_get(answer, "choices"), 0);
    json_t *msg = json_object_get(choice, "message");
    if (!json_is_object(answer) || !json_is_object(msg))
        return NULL;
    json_t *r = sw_responses_shell(request, meta, "completed");
    if (!r)
        return NULL;
    const char *finish = json_string_value(json_object_get(choice, "finish_reason"));
    set_status(r, finish);
    const char *status = json_string_value(json_object_get(r, "status"));
    if (output_items(json_object_get(r, "output"), msg, meta->id, status)) {
        json_decref(r);
        return NULL;
    }
    json_t *u = json_object_get(answer, "usage");
    json_object_set_new(r, "usage",
                        usage_json(num(u, "prompt_tokens"), num(u, "completion_tokens"),
                                   num(json_object_get(u, "prompt_tokens_details"), "cached_tokens"),
                                   num(json_object_get(u, "completion_tokens_details"),
                                       "reasoning_tokens")));
    if (meta->completed_at > 0 && !strcmp(status, "completed"))
        json_object_set_new(r, "completed_at", json_integer((json_int_t)meta->completed_at));
    return r;
}

/* ---- Streams: events ---- */

int sw_resp_stream_init(struct sw_resp_stream *s, const json_t *request,
                        const struct sw_resp_meta *meta)
{
    memset(s, 0, sizeof *s);
    snprintf(s->id, sizeof s->id, "%s", meta->id ? meta->id : "");
    snprintf(s->model, sizeof s->model, "%s", meta->model ? meta->model : "");
    s->created_at = meta->created_at;
    s->request = request ? json_incref((json_t *)request) : NULL;
    s->item_out = -1;
    s->id_out = -1;
    sw_buf_init(&s->text, SW_RESP_MAX_TEXT);
    for (int i = 0; i < SW_RESP_MAX_TOOLS; i++)
        sw_buf_init(&s->tool[i].args, SW_RESP_MAX_TEXT);
    s->parts = json_array();
    return s->parts ? SW_OK : SW_ENOMEM;
}

void sw_resp_stream_free(struct sw_resp_stream *s)
{
    json_decref(s->request);
    json_decref(s->parts);
    sw_buf_free(&s->text);
    for (int i = 0; i < SW_RESP_MAX_TOOLS; i++)
        sw_buf_free(&s->tool[i].args);
    for (int i = 0; i < SW_RESP_MAX_ITEMS; i++)
        json_decref(s->done[i]);
    json_decref(s->final);
    memset(s, 0, sizeof *s);
    s->item_out = -1;
    s->id_out = -1;
}

/* The end of writing one event that began at out->len == was: on success
 * the next event's sequence number, on failure out cut back to was (an
 * event is written whole or not at all). */
static int event_end(struct sw_resp_stream *s, struct sw_buf *out, size_t was, int err)
{
    if (err && out->ptr) {
        out->len = was;
        out->ptr[was] = '\0';
    }
    if (!err)
        s->seq++;
    return err == SW_EINVAL ? SW_ENOMEM : err;
}

/* Appends the event `type` with the fields of ev (taken) after its type and
 * sequence_number. */
static int emit(struct sw_resp_stream *s, struct sw_buf *out, const char *type, json_t *ev)
{
    json_t *e = ev ? json_pack("{s:s, s:I}", "type", type, "sequence_number", (json_int_t)s->seq)
                   : NULL;
    if (!e || json_object_update(e, ev)) {
        json_decref(ev);
        json_decref(e);
        return SW_ENOMEM;
    }
    json_decref(ev);
    size_t was = out->len;
    int err = sw_buf_append_str(out, "event: ");
    if (!err)
        err = sw_buf_append_str(out, type);
    if (!err)
        err = sw_buf_append(out, "\ndata: ", 7);
    if (!err)
        err = sw_json_dump_buf(e, JSON_COMPACT, out);
    if (!err)
        err = sw_buf_append(out, "\n\n", 2);
    json_decref(e);
    return event_end(s, out, was, err);
}

/* Appends s[0..n) to out as a JSON string (quotes included). */
static int put_string(struct sw_buf *out, const char *str, size_t n)
{
    int err = sw_buf_append(out, "\"", 1);
    if (!err)
        err = sw_json_escape(out, str, n, SW_JSON_ESC_CHECK_UTF8);
    return err ? err : sw_buf_append(out, "\"", 1);
}

static int put_int(struct sw_buf *out, const char *key, long long v)
{
    int err = sw_buf_append_str(out, key);
    return err ? err : sw_json_put_int(out, v);
}

/* A delta event written as text, the bytes emit writes for
 * {item_id, output_index[, content_index], delta[, logprobs: []]}: a
 * delta event is most of a stream, and building a tree for each costs more
 * than the rest of the event's path. content_index < 0: none. */
static int emit_delta(struct sw_resp_stream *s, struct sw_buf *out, const char *type,
                      const char *item_id, int out_index, int content_index, const char *delta,
                      size_t len, bool logprobs)
{
    size_t was = out->len;
    int err = sw_buf_append_str(out, "event: ");
    if (!err)
        err = sw_buf_append_str(out, type);
    if (!err)
        err = sw_buf_append_str(out, "\ndata: {\"type\":");
    if (!err)
        err = put_string(out, type, strlen(type));
    if (!err)
        err = put_int(out, ",\"sequence_number\":", s->seq);
    if (!err)
        err = sw_buf_append_str(out, ",\"item_id\":");
    if (!err)
        err = put_string(out, item_id, strlen(item_id));
    if (!err)
        err = put_int(out, ",\"output_index\":", out_index);
    if (!err && content_index >= 0)
        err = put_int(out, ",\"content_index\":", content_index);
    if (!err)
        err = sw_buf_append_str(out, ",\"delta\":");
    if (!err)
        err = put_string(out, delta, len);
    if (!err)
        err = sw_buf_append_str(out, logprobs ? ",\"logprobs\":[]}\n\n" : "}\n\n");
    return event_end(s, out, was, err);
}

static json_t *shell(struct sw_resp_stream *s, const char *status)
{
    struct sw_resp_meta m = {s->id, s->model, s->created_at, 0};
    return sw_responses_shell(s->request, &m, status);
}

int sw_resp_stream_start(struct sw_resp_stream *s, struct sw_buf *out)
{
    if (s->started)
        return SW_OK;
    s->started = true;
    int err = emit(s, out, "response.created", json_pack("{s:o}", "response", shell(s, "in_progress")));
    if (!err)
        err = emit(s, out, "response.in_progress",
                   json_pack("{s:o}", "response", shell(s, "in_progress")));
    return err;
}

/* The id of item out_index (kind "msg", "rs" or "fc"), made once per item:
 * every delta event names it. */
static void item_id_of(struct sw_resp_stream *s, int out_index, const char *kind, char *id,
                       size_t size)
{
    if (s->id_out != out_index || strcmp(s->id_kind, kind)) {
        sw_resp_item_id(s->id, kind, out_index, s->id_of, sizeof s->id_of);
        snprintf(s->id_kind, sizeof s->id_kind, "%s", kind);
        s->id_out = out_index;
    }
    size_t n = strlen(s->id_of);
    n = n < size ? n : size - 1;
    memcpy(id, s->id_of, n);
    id[n] = '\0';
}

/* ---- Streams: the message or reasoning item ---- */

static const char *part_kind(int part)
{
    return part == 2 ? "refusal" : part == 3 ? "reasoning_text" : "output_text";
}

static json_t *part_json(int part, const char *text, size_t len)
{
    if (part == 1)
        return text_part(text, len);
    return json_pack("{s:s, s:s%}", "type", part_kind(part), part == 2 ? "refusal" : "text", text,
                     len);
}

/* Ends the open part: its .done event (and content_part.done for a message). */
static int close_part(struct sw_resp_stream *s, struct sw_buf *out)
{
    if (!s->part)
        return SW_OK;
    char id[160];
    item_id_of(s, s->item_out, s->item_reasoning ? "rs" : "msg", id, sizeof id);
    const char *t = s->text.ptr ? s->text.ptr : "";
    int err;
    if (s->part == 3)
        err = emit(s, out, "response.reasoning_text.done",
                   json_pack("{s:s, s:i, s:i, s:s%}", "item_id", id, "output_index", s->item_out,
                             "content_index", s->part_index, "text", t, s->text.len));
    else if (s->part == 2)
        err = emit(s, out, "response.refusal.done",
                   json_pack("{s:s, s:i, s:i, s:s%}", "item_id", id, "output_index", s->item_out,
                             "content_index", s->part_index, "refusal", t, s->text.len));
    else
        err = emit(s, out, "response.output_text.done",
                   json_pack("{s:s, s:i, s:i, s:s%, s:[]}", "item_id", id, "output_index",
                             s->item_out, "content_index", s->part_index, "text", t, s->text.len,
                             "logprobs"));
    json_t *part = part_json(s->part, t, s->text.len);
    if (!err && !s->item_reasoning)
        err = emit(s, out, "response.content_part.done",
                   json_pack("{s:s, s:i, s:i, s:O}", "item_id", id, "output_index", s->item_out,
                             "content_index", s->part_index, "part", part));
    if (!err && json_array_append_new(s->parts, part))
        err = SW_ENOMEM;
    else if (err)
        json_decref(part);
    s->part = 0;
    s->part_index++;
    sw_buf_reset(&s->text);
    return err;
}

/* Ends the open message or reasoning item: output_item.done. */
static int close_item(struct sw_resp_stream *s, const char *status, struct sw_buf *out)
{
    if (s->item_out < 0)
        return SW_OK;
    int err = close_part(s, out);
    char id[160];
    item_id_of(s, s->item_out, s->item_reasoning ? "rs" : "msg", id, sizeof id);
    if (!err && !s->item_reasoning && !json_array_size(s->parts))
        err = json_array_append_new(s->parts, text_part("", 0)) ? SW_ENOMEM : SW_OK;
    json_t *parts = json_copy(s->parts); /* the item's own array: s->parts is reused */
    json_t *item = !parts             ? NULL
                   : s->item_reasoning ? reasoning_item(id, status, parts)
                                       : message_item(id, status, parts);
    if (!err)
        err = emit(s, out, "response.output_item.done",
                   json_pack("{s:i, s:O}", "output_index", s->item_out, "item", item));
    s->done[s->item_out] = item;
    s->item_out = -1;
    json_array_clear(s->parts);
    return err;
}

/* Opens a part of kind `part` in a message (or reasoning) item, closing
 * what else is open first. */
static int open_part(struct sw_resp_stream *s, int part, struct sw_buf *out)
{
    bool reasoning = part == 3;
    int err = SW_OK;
    if (s->item_out >= 0 && s->item_reasoning != reasoning)
        err = close_item(s, "completed", out);
    if (!err && s->item_out < 0) {
        if (s->next_out >= SW_RESP_MAX_ITEMS)
            return SW_ETOOBIG;
        s->item_out = s->next_out++;
        s->item_reasoning = reasoning;
        s->part_index = 0;
        char id[160];
        item_id_of(s, s->item_out, reasoning ? "rs" : "msg", id, sizeof id);
        json_t *item = reasoning ? reasoning_item(id, "in_progress", NULL)
                                 : message_item(id, "in_progress", NULL);
        err = emit(s, out, "response.output_item.added",
                   json_pack("{s:i, s:o}", "output_index", s->item_out, "item", item));
    }
    if (!err && s->part && s->part != part)
        err = close_part(s, out);
    if (err || s->part == part)
        return err;
    s->part = part;
    if (reasoning)
        return SW_OK; /* reasoning parts have no content_part events */
    char id[160];
    item_id_of(s, s->item_out, "msg", id, sizeof id);
    return emit(s, out, "response.content_part.added",
                json_pack("{s:s, s:i, s:i, s:o}", "item_id", id, "output_index", s->item_out,
                          "content_index", s->part_index, "part", part_json(part, "", 0)));
}

/* A text, refusal or reasoning delta. */
static int part_delta(struct sw_resp_stream *s, int part, const json_t *d, struct sw_buf *out)
{
    int err = open_part(s, part, out);
    if (!err)
        err = sw_buf_append(&s->text, json_string_value(d), json_string_length(d));
    if (err)
        return err;
    char id[160];
    item_id_of(s, s->item_out, part == 3 ? "rs" : "msg", id, sizeof id);
    const char *type = part == 3   ? "response.reasoning_text.delta"
                       : part == 2 ? "response.refusal.delta"
                                   : "response.output_text.delta";
    return emit_delta(s, out, type, id, s->item_out, s->part_index, json_string_value(d),
                      json_string_length(d), part == 1);
}

/* ---- Streams: tool calls ---- */

static int tool_delta(struct sw_resp_stream *s, const json_t *call, size_t i, struct sw_buf *out)
{
    json_t *ix = json_object_get(call, "index");
    long k = json_is_integer(ix) ? (long)json_integer_value(ix) : (long)i;
    if (k < 0 || k >= SW_RESP_MAX_TOOLS)
        return SW_ETOOBIG;
    struct sw_resp_tool *t = &s->tool[k];
    json_t *fn = json_object_get(call, "function");
    char id[160];
    int err = SW_OK;
    if (!t->open && !t->name[0]) {
        if (s->next_out >= SW_RESP_MAX_ITEMS)
            return SW_ETOOBIG;
        err = close_item(s, "completed", out);
        t->out = s->next_out++;
        t->open = true;
        const char *cid = json_string_value(json_object_get(call, "id"));
        const char *name = json_string_value(json_object_get(fn, "name"));
        item_id_of(s, t->out, "fc", id, sizeof id);
        if (!cid)
            cid = id;
        if (!name || !name[0])
            name = "?";
        if (strlen(cid) >= sizeof t->call_id || strlen(name) >= sizeof t->name)
            return SW_ETOOBIG; /* never a truncated id or name */
        memcpy(t->call_id, cid, strlen(cid) + 1);
        memcpy(t->name, name, strlen(name) + 1);
        if (!err)
            err = emit(s, out, "response.output_item.added",
                       json_pack("{s:i, s:o}", "output_index", t->out, "item",
                                 call_item(id, "in_progress", t->call_id, t->name, "", 0)));
    }
    json_t *args = json_object_get(fn, "arguments");
    if (err || !t->open || !json_is_string(args) || !json_string_length(args))
        return err;
    err = sw_buf_append(&t->args, json_string_value(args), json_string_length(args));
    item_id_of(s, t->out, "fc", id, sizeof id);
    if (!err)
        err = emit_delta(s, out, "response.function_call_arguments.delta", id, t->out, -1,
                         json_string_value(args), json_string_length(args), false);
    return err;
}

static int close_tool(struct sw_resp_stream *s, struct sw_resp_tool *t, struct sw_buf *out)
{
    char id[160];
    item_id_of(s, t->out, "fc", id, sizeof id);
    const char *a = t->args.ptr ? t->args.ptr : "";
    t->open = false;
    int err = emit(s, out, "response.function_call_arguments.done",
                   json_pack("{s:s, s:i, s:s, s:s%}", "item_id", id, "output_index", t->out,
                             "name", t->name, "arguments", a, t->args.len));
    json_t *item = call_item(id, "completed", t->call_id, t->name, a, t->args.len);
    if (!err)
        err = emit(s, out, "response.output_item.done",
                   json_pack("{s:i, s:O}", "output_index", t->out, "item", item));
    s->done[t->out] = item;
    return err;
}

/* ---- Streams: chunks and the end ---- */

int sw_resp_stream_chunk(struct sw_resp_stream *s, const json_t *chunk, struct sw_buf *out)
{
    if (s->finished)
        return SW_OK;
    int err = sw_resp_stream_start(s, out);
    json_t *u = json_object_get(chunk, "usage");
    if (json_is_object(u)) {
        s->usage_seen = true;
        s->input_tokens = num(u, "prompt_tokens");
        s->output_tokens = num(u, "completion_tokens");
        s->cached_tokens = num(json_object_get(u, "prompt_tokens_details"), "cached_tokens");
        s->reasoning_tokens =
            num(json_object_get(u, "completion_tokens_details"), "reasoning_tokens");
    }
    json_t *choice = json_array_get(json_object_get(chunk, "choices"), 0);
    json_t *delta = json_object_get(choice, "delta");
    json_t *rc = json_object_get(delta, "reasoning_content");
    if (!json_is_string(rc))
        rc = json_object_get(delta, "reasoning");
    if (!err && json_is_string(rc) && json_string_length(rc))
        err = part_delta(s, 3, rc, out);
    json_t *c = json_object_get(delta, "content");
    if (!err && json_is_string(c) && json_string_length(c))
        err = part_delta(s, 1, c, out);
    json_t *rf = json_object_get(delta, "refusal");
    if (!err && json_is_string(rf) && json_string_length(rf))
        err = part_delta(s, 2, rf, out);
    size_t i;
    json_t *call;
    json_array_foreach(json_object_get(delta, "tool_calls"), i, call) {
        if (!err)
            err = tool_delta(s, call, i, out);
    }
    const char *fr = json_string_value(json_object_get(choice, "finish_reason"));
    if (fr)
        snprintf(s->finish_reason, sizeof s->finish_reason, "%s", fr);
    return err;
}

/* The response with the items finished so far, in output_index order. */
static json_t *final_response(struct sw_resp_stream *s, const char *status)
{
    json_t *r = shell(s, status);
    json_t *output = json_object_get(r, "output");
    for (int i = 0; r && i < s->next_out; i++)
        if (s->done[i])
            json_array_append(output, s->done[i]);
    if (r && s->usage_seen)
        json_object_set_new(r, "usage", usage_json(s->input_tokens, s->output_tokens,
                                                   s->cached_tokens, s->reasoning_tokens));
    return r;
}

int sw_resp_stream_finish(struct sw_resp_stream *s, long long completed_at, struct sw_buf *out)
{
    if (s->finished)
        return SW_OK;
    int err = sw_resp_stream_start(s, out);
    bool incomplete = is(s->finish_reason, "length") || is(s->finish_reason, "content_filter");
    const char *item_status = incomplete ? "incomplete" : "completed";
    /* what is open closes in output_index order */
    for (int i = 0; !err && i < s->next_out; i++) {
        if (i == s->item_out)
            err = close_item(s, item_status, out);
        for (int k = 0; !err && k < SW_RESP_MAX_TOOLS; k++)
            if (s->tool[k].open && s->tool[k].out == i)
                err = close_tool(s, &s->tool[k], out);
    }
    if (!err && s->next_out == 0) {
        /* an empty answer is still one (empty) message */
        err = open_part(s, 1, out);
        if (!err)
            err = close_item(s, item_status, out);
    }
    s->finished = true;
    if (err)
        return err;
    json_t *r = final_response(s, "completed");
    if (!r)
        return SW_ENOMEM;
    set_status(r, s->finish_reason);
    if (!incomplete && completed_at > 0)
        json_object_set_new(r, "completed_at", json_integer((json_int_t)completed_at));
    if (!s->usage_seen)
        json_object_set_new(r, "usage", usage_json(0, 0, 0, 0));
    s->final = json_incref(r);
    return emit(s, out, incomplete ? "response.incomplete" : "response.completed",
                json_pack("{s:o}", "response", r));
}

int sw_resp_stream_fail(struct sw_resp_stream *s, const char *code, const char *message,
                        struct sw_buf *out)
{
    if (s->finished)
        return SW_OK;
    int err = sw_resp_stream_start(s, out);
    s->finished = true;
    json_t *r = err ? NULL : final_response(s, "failed");
    if (err || !r)
        return err ? err : SW_ENOMEM;
    json_object_set_new(r, "error", json_pack("{s:s, s:s}", "code", code ? code : "server_error",
                                              "message", message ? message : ""));
    return emit(s, out, "response.failed", json_pack("{s:o}", "response", r));
}

int sw_resp_stream_error(struct sw_resp_stream *s, const char *code, const char *message,
                         struct sw_buf *out)
{
    if (s->finished)
        return SW_OK;
    s->finished = true;
    return emit(s, out, "error",
                json_pack("{s:s, s:s, s:n}", "code", code ? code : "server_error", "message",
                          message ? message : "", "param"));
}
