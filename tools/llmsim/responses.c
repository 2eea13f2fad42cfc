#include "responses.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "dialect/responses_resp.h"
#include "model.h"

/* ---- Request ---- */

static int fail(char *err, size_t errlen, const char *msg)
{
    snprintf(err, errlen, "%s", msg);
    return SW_EINVAL;
}

/* Adds the text of s to the counts (and to out when given). */
static int count(struct sw_llmsim_chat *c, const json_t *s, struct sw_buf *out)
{
    if (!json_is_string(s))
        return SW_OK;
    c->text_bytes += json_string_length(s);
    c->text_pieces += sw_llmsim_text_pieces(json_string_value(s), json_string_length(s));
    return out ? sw_buf_append(out, json_string_value(s), json_string_length(s)) : SW_OK;
}

/* A message's content (a string or parts) or a tool output; the last user
 * message's text is kept for echo. */
static int count_content(struct sw_llmsim_chat *c, const json_t *content, bool user)
{
    if (user)
        sw_buf_reset(&c->last_user);
    struct sw_buf *out = user ? &c->last_user : NULL;
    if (json_is_string(content))
        return count(c, content, out);
    size_t i;
    json_t *part;
    json_array_foreach(content, i, part) {
        json_t *t = json_object_get(part, "text");
        int err = count(c, t ? t : json_object_get(part, "refusal"), out);
        if (err)
            return err;
    }
    return SW_OK;
}

static int parse_input(json_t *input, struct sw_llmsim_chat *c, const json_t **tool_out,
                       char *err, size_t errlen)
{
    *tool_out = NULL;
    if (json_is_string(input)) {
        c->n_messages++;
        return count_content(c, input, true);
    }
    if (!json_is_array(input))
        return fail(err, errlen, "input: Field required (a string or an array of items)");
    size_t i;
    json_t *it;
    json_array_foreach(input, i, it) {
        if (!json_is_object(it))
            return fail(err, errlen, "input: each item must be an object");
        const char *type = json_string_value(json_object_get(it, "type"));
        const char *role = json_string_value(json_object_get(it, "role"));
        int e = SW_OK;
        if (!type || !strcmp(type, "message")) {
            if (!role)
                return fail(err, errlen, "input: a message needs a role");
            bool user = !strcmp(role, "user");
            e = count_content(c, json_object_get(it, "content"), user);
            if (user)
                *tool_out = NULL;
        } else if (!strcmp(type, "function_call")) {
            e = count(c, json_object_get(it, "arguments"), NULL);
        } else if (!strcmp(type, "function_call_output")) {
            e = count_content(c, json_object_get(it, "output"), false);
            *tool_out = json_object_get(it, "output");
        }
        if (e == SW_ETOOBIG)
            return fail(err, errlen, "input: the last user message is too long to echo");
        c->n_messages++;
    }
    if (!c->n_messages)
        return fail(err, errlen, "input: must contain at least one item");
    return SW_OK;
}

int sw_llmsim_responses_parse(json_t *root, struct sw_llmsim_chat *c, char *err, size_t errlen)
{
    int rc = sw_llmsim_chat_parse_head(root, c, err, errlen);
    if (rc)
        return rc;
    json_t *v;
    c->include_usage = c->stream; /* a Responses stream always ends with the usage */
    v = json_object_get(root, "max_output_tokens");
    if (v && !json_is_null(v)) {
        if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > 10000000)
            return fail(err, errlen, "max_output_tokens: must be an integer in [1, 10000000]");
        c->max_tokens = (int)json_integer_value(v);
    }
    const char *ft = json_string_value(
        json_object_get(json_object_get(json_object_get(root, "text"), "format"), "type"));
    c->wants_json = ft && (!strcmp(ft, "json_schema") || !strcmp(ft, "json_object"));
    json_t *tc = json_object_get(root, "tool_choice");
    const char *tct = json_string_value(json_object_get(tc, "type"));
    const char *tool = json_string_value(json_object_get(tc, "name"));
    if (tct && !strcmp(tct, "function") && tool && strlen(tool) < sizeof c->forced_tool) {
        snprintf(c->forced_tool, sizeof c->forced_tool, "%s", tool);
        c->wants_json = true;
    }
    json_t *ins = json_object_get(root, "instructions");
    if (json_is_string(ins)) {
        count(c, ins, NULL);
        c->n_messages++;
    }
    const json_t *tool_out;
    int e = parse_input(json_object_get(root, "input"), c, &tool_out, err, errlen);
    if (e)
        return e;
    json_t *tools = json_object_get(root, "tools");
    if (sw_llmsim_chat_script(c, json_is_array(tools) && json_array_size(tools), tool_out))
        return fail(err, errlen, "input: the tool output is too long to echo");
    c->prompt_tokens = sw_llmsim_prompt_tokens(c->text_bytes, c->n_messages);
    size_t pt = c->text_pieces + 4 * (size_t)c->n_messages;
    c->prompt_tokens_pieces = pt > 0x7fffffff ? 0x7fffffff : (int)pt;
    return SW_OK;
}

/* ---- Whole answers ---- */

static void meta_of(const struct sw_llmsim_reply *r, struct sw_resp_meta *m)
{
    *m = (struct sw_resp_meta){r->id, r->model, r->created, 0};
}

int sw_llmsim_responses_message(struct sw_buf *b, const struct sw_llmsim_reply *r, const json_t *req,
                                const char *text, size_t len, int output_tokens, bool length,
                                enum sw_llmsim_malformed malformed)
{
    json_t *msg = r->tool[0]
                      ? json_pack("{s:s, s:n, s:[{s:s, s:s, s:{s:s, s:s%}}]}", "role", "assistant",
                                  "content", "tool_calls", "id", "call_sim1", "type", "function",
                                  "function", "name", r->tool, "arguments", text, len)
                      : json_pack("{s:s, s:s%}", "role", "assistant", "content", text, len);
    json_t *chat = msg ? json_pack("{s:[{s:i, s:o, s:s}], s:{s:i, s:i, s:i}}", "choices", "index", 0,
                                   "message", msg, "finish_reason",
                                   length ? "length" : r->tool[0] ? "tool_calls" : "stop", "usage",
                                   "prompt_tokens", r->prompt_tokens, "completion_tokens",
                                   output_tokens, "total_tokens", r->prompt_tokens + output_tokens)
                       : NULL;
    struct sw_resp_meta m;
    meta_of(r, &m);
    json_t *resp = chat ? sw_responses_from_chat(chat, req, &m) : NULL;
    json_decref(chat);
    char *s = resp ? json_dumps(resp, JSON_COMPACT) : NULL;
    json_decref(resp);
    if (!s)
        return SW_ENOMEM;
    size_t n = strlen(s);
    if (malformed) {
        /* cut right after the usage key: the object is never closed */
        char *u = strstr(s, "\"usage\":");
        n = u ? (size_t)(u - s) + 8 : n / 2;
    }
    int err = sw_buf_append(b, s, n);
    free(s);
    return err;
}

/* ---- Streams ---- */

struct sw_llmsim_rstream {
    struct sw_resp_stream s;
    char tool[128];
    bool tool_opened;
    int prompt_tokens;
};

struct sw_llmsim_rstream *sw_llmsim_rstream_new(const struct sw_llmsim_reply *r, const json_t *req)
{
    struct sw_llmsim_rstream *s = calloc(1, sizeof *s);
    struct sw_resp_meta m;
    meta_of(r, &m);
    if (s && sw_resp_stream_init(&s->s, req, &m)) {
        sw_resp_stream_free(&s->s);
        free(s);
        return NULL;
    }
    if (s) {
        snprintf(s->tool, sizeof s->tool, "%s", r->tool);
        s->prompt_tokens = r->prompt_tokens;
    }
    return s;
}

void sw_llmsim_rstream_free(struct sw_llmsim_rstream *s)
{
    if (!s)
        return;
    sw_resp_stream_free(&s->s);
    free(s);
}

/* One chat chunk {choices: [{index: 0, delta: d (taken), finish_reason}]} through the translator. */
static int feed(struct sw_llmsim_rstream *s, struct sw_buf *b, json_t *d, const char *finish)
{
    json_t *c = d ? json_pack("{s:[{s:i, s:o, s:o}]}", "choices", "index", 0, "delta", d,
                              "finish_reason", finish ? json_string(finish) : json_null())
                  : NULL;
    int err = c ? sw_resp_stream_chunk(&s->s, c, b) : SW_ENOMEM;
    json_decref(c);
    return err;
}

int sw_llmsim_rstream_start(struct sw_llmsim_rstream *s, struct sw_buf *b)
{
    int err = sw_resp_stream_start(&s->s, b);
    if (!err && s->tool[0] && !s->tool_opened) {
        s->tool_opened = true;
        err = feed(s, b,
                   json_pack("{s:[{s:i, s:s, s:s, s:{s:s, s:s}}]}", "tool_calls", "index", 0, "id",
                             "call_sim1", "type", "function", "function", "name", s->tool,
                             "arguments", ""),
                   NULL);
    }
    return err;
}

/* Breaks the last event of b (from `from` on) as the fault says. */
static int break_event(struct sw_buf *b, size_t from, enum sw_llmsim_malformed malformed)
{
    char *data = NULL;
    for (char *p = b->ptr + from; (p = strstr(p, "\ndata: ")); p++)
        data = p + 1;
    if (!data || b->len < 3)
        return SW_OK;
    if (malformed == SW_LLMSIM_MALFORMED_JSON) {
        b->ptr[b->len - 3] = ','; /* "...}\n\n" -> "...,\n\n": never closed */
        return SW_OK;
    }
    /* sse: a line break after the first field, so the rest has no "data: " prefix */
    char *comma = strchr(data, ',');
    if (!comma)
        return SW_OK;
    size_t at = (size_t)(comma - b->ptr) + 1, tail = b->len - at;
    char *rest = malloc(tail);
    if (!rest)
        return SW_ENOMEM;
    memcpy(rest, b->ptr + at, tail);
    b->len = at;
    int err = sw_buf_append(b, "\n", 1);
    if (!err)
        err = sw_buf_append(b, rest, tail);
    free(rest);
    return err;
}

int sw_llmsim_rstream_token(struct sw_llmsim_rstream *s, struct sw_buf *b, struct sw_str text,
                            enum sw_llmsim_malformed malformed)
{
    int err = sw_llmsim_rstream_start(s, b);
    size_t from = b->len;
    json_t *t = json_stringn(text.ptr, text.len);
    json_t *d = !t          ? NULL
                : s->tool[0] ? json_pack("{s:[{s:i, s:{s:o}}]}", "tool_calls", "index", 0,
                                         "function", "arguments", t)
                             : json_pack("{s:o}", "content", t);
    if (!err)
        err = feed(s, b, d, NULL);
    else
        json_decref(d);
    if (!err && malformed)
        err = break_event(b, from, malformed);
    return err;
}

int sw_llmsim_rstream_end(struct sw_llmsim_rstream *s, struct sw_buf *b, int output_tokens,
                          bool length)
{
    int err = sw_llmsim_rstream_start(s, b);
    if (!err)
        err = feed(s, b, json_object(), length ? "length" : s->tool[0] ? "tool_calls" : "stop");
    json_t *u = json_pack("{s:[], s:{s:i, s:i, s:i}}", "choices", "usage", "prompt_tokens",
                          s->prompt_tokens, "completion_tokens", output_tokens, "total_tokens",
                          s->prompt_tokens + output_tokens);
    if (!err)
        err = u ? sw_resp_stream_chunk(&s->s, u, b) : SW_ENOMEM;
    json_decref(u);
    if (!err)
        err = sw_resp_stream_finish(&s->s, 0, b);
    return err;
}

int sw_llmsim_rstream_error(struct sw_llmsim_rstream *s, struct sw_buf *b)
{
    int err = sw_llmsim_rstream_start(s, b);
    if (!err)
        err = sw_resp_stream_fail(&s->s, "server_error", "The server is overloaded.", b);
    return err;
}
