/* generateContent answers and alt=sse events as OpenAI answers and chunks
 * (dialect/gemini.h). */
#include "dialect/gemini.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/err.h"

/* ---- Gemini -> OpenAI ---- */

const char *sw_gem_finish_reason(const char *fr, bool tools)
{
    static const char *const filtered[] = {"SAFETY", "RECITATION", "BLOCKLIST",
                                           "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY",
                                           "IMAGE_PROHIBITED_CONTENT"};
    if (!fr)
        return tools ? "tool_calls" : "stop";
    if (!strcmp(fr, "MAX_TOKENS"))
        return "length";
    for (size_t i = 0; i < sizeof filtered / sizeof filtered[0]; i++)
        if (!strcmp(fr, filtered[i]))
            return "content_filter";
    return tools ? "tool_calls" : "stop";
}

/* A tool call's id: the functionCall's own, else one made from the index. */
static json_t *call_id(const json_t *fc, int index)
{
    const char *id = json_string_value(json_object_get(fc, "id"));
    if (id && id[0])
        return json_string(id);
    char made[32];
    snprintf(made, sizeof made, "call_%d", index);
    return json_string(made);
}

/* One functionCall as an OpenAI tool call (with "index" for a chunk's). */
static json_t *tool_call(const json_t *fc, int index, bool chunk)
{
    const json_t *args = json_object_get(fc, "args");
    char *a = json_is_object(args) ? json_dumps(args, JSON_COMPACT) : strdup("{}");
    const char *name = json_string_value(json_object_get(fc, "name"));
    json_t *c = a ? json_pack("{s:o, s:s, s:{s:s, s:s}}", "id", call_id(fc, index), "type",
                              "function", "function", "name", name ? name : "", "arguments", a)
                  : NULL;
    free(a);
    if (c && chunk)
        json_object_set_new(c, "index", json_integer(index));
    return c;
}

/* The usage of usageMetadata: *in, *out; -1 where absent. */
static void usage_of(const json_t *um, long *in, long *out)
{
    json_t *p = json_object_get(um, "promptTokenCount");
    json_t *c = json_object_get(um, "candidatesTokenCount");
    json_t *t = json_object_get(um, "thoughtsTokenCount");
    *in = json_is_integer(p) && json_integer_value(p) >= 0 ? (long)json_integer_value(p) : -1;
    *out = json_is_integer(c) && json_integer_value(c) >= 0 ? (long)json_integer_value(c) : -1;
    if (json_is_integer(t) && json_integer_value(t) > 0)
        *out = (*out < 0 ? 0 : *out) + (long)json_integer_value(t);
    if (*out < 0 && *in >= 0 && json_is_object(um))
        *out = 0;
}

static json_t *usage_json(long in, long out)
{
    in = in < 0 ? 0 : in;
    out = out < 0 ? 0 : out;
    return json_pack("{s:I, s:I, s:I}", "prompt_tokens", (json_int_t)in, "completion_tokens",
                     (json_int_t)out, "total_tokens", (json_int_t)(in + out));
}

/* The text and the calls of a candidate's parts (thought parts left out). */
static int parts_of(const json_t *parts, struct sw_buf *text, json_t *calls, int first_index)
{
    size_t i;
    json_t *p;
    json_array_foreach(parts, i, p) {
        json_t *tx = json_object_get(p, "text"), *fc = json_object_get(p, "functionCall");
        if (json_is_true(json_object_get(p, "thought")))
            continue;
        if (json_is_string(tx) && sw_buf_append(text, json_string_value(tx), json_string_length(tx)))
            return SW_ENOMEM;
        if (json_is_object(fc) &&
            json_array_append_new(calls, tool_call(fc, first_index + (int)json_array_size(calls),
                                                   false)))
            return SW_ENOMEM;
    }
    return SW_OK;
}

json_t *sw_gem_resp_to_openai(const json_t *in, const char *model, long long created)
{
    json_t *cands = json_object_get(in, "candidates");
    json_t *pf = json_object_get(in, "promptFeedback");
    if (!json_is_object(in) || (!json_is_array(cands) && !json_is_object(pf)))
        return NULL;
    json_t *cand = json_array_get(cands, 0);
    struct sw_buf text;
    sw_buf_init(&text, (size_t)1 << 30);
    json_t *calls = json_array();
    if (!calls || parts_of(json_object_get(json_object_get(cand, "content"), "parts"), &text,
                           calls, 0)) {
        json_decref(calls);
        sw_buf_free(&text);
        return NULL;
    }
    const char *fr = json_string_value(json_object_get(cand, "finishReason"));
    bool tools = json_array_size(calls) > 0;
    const char *finish = cand ? sw_gem_finish_reason(fr, tools) : "content_filter";
    json_t *msg = json_pack("{s:s, s:s?}", "role", "assistant", "content",
                            text.len || !tools ? (text.ptr ? text.ptr : "") : NULL);
    sw_buf_free(&text);
    if (msg && tools)
        json_object_set(msg, "tool_calls", calls);
    json_decref(calls);
    long uin, uout;
    usage_of(json_object_get(in, "usageMetadata"), &uin, &uout);
    const char *rid = json_string_value(json_object_get(in, "responseId"));
    char id[128];
    snprintf(id, sizeof id, "chatcmpl-%.100s", rid ? rid : "gemini");
    json_t *o = msg ? json_pack("{s:s, s:s, s:I, s:s, s:[{s:i, s:o, s:s}], s:o}", "id", id,
                                "object", "chat.completion", "created", (json_int_t)created,
                                "model", model ? model : "", "choices", "index", 0, "message",
                                msg, "finish_reason", finish, "usage", usage_json(uin, uout))
                    : NULL;
    return o;
}

/* ---- The stream ---- */

void sw_gem_to_oai_init(struct sw_gem_to_oai *s, const char *model, long long created)
{
    memset(s, 0, sizeof *s);
    snprintf(s->model, sizeof s->model, "%s", model ? model : "");
    snprintf(s->id, sizeof s->id, "chatcmpl-gemini");
    s->created = created;
    s->in = s->out = -1;
}

static json_t *chunk_of(const struct sw_gem_to_oai *s, json_t *delta, const char *finish)
{
    return json_pack("{s:s, s:s, s:I, s:s, s:[{s:i, s:o, s:s?}]}", "id", s->id, "object",
                     "chat.completion.chunk", "created", (json_int_t)s->created, "model",
                     s->model, "choices", "index", 0, "delta", delta, "finish_reason", finish);
}

void sw_gem_error_status(const json_t *body, char *out, size_t n)
{
    const char *st = json_string_value(json_object_get(json_object_get(body, "error"), "status"));
    size_t len = st ? strlen(st) : 0;
    if (n)
        out[0] = '\0';
    if (len && len < n && strspn(st, "ABCDEFGHIJKLMNOPQRSTUVWXYZ_") == len)
        memcpy(out, st, len + 1);
}

/* The finish: its chunk, then the usage-only one; the stream is done. */
static int finish(struct sw_gem_to_oai *s, const char *fr, bool blocked, json_t *chunks)
{
    const char *f = blocked ? "content_filter" : sw_gem_finish_reason(fr, s->tools);
    json_t *u = json_pack("{s:s, s:s, s:I, s:s, s:[], s:o}", "id", s->id, "object",
                          "chat.completion.chunk", "created", (json_int_t)s->created, "model",
                          s->model, "choices", "usage", usage_json(s->in, s->out));
    s->done = true;
    if (json_array_append_new(chunks, chunk_of(s, json_object(), f)) ||
        json_array_append_new(chunks, u))
        return -1;
    return 0;
}

int sw_gem_to_oai_event(struct sw_gem_to_oai *s, const char *data, size_t len, json_t *chunks,
                        const char **msg)
{
    json_t *o = json_loadb(data, len, 0, NULL);
    json_t *cands = json_object_get(o, "candidates"), *pf = json_object_get(o, "promptFeedback");
    int rc = -1;
    *msg = "malformed JSON in stream event";
    if (json_is_object(json_object_get(o, "error"))) {
        sw_gem_error_status(o, s->error_type, sizeof s->error_type);
        *msg = "error event";
        goto out;
    }
    if (!json_is_object(o) || (!json_is_array(cands) && !json_is_object(pf) &&
                               !json_is_object(json_object_get(o, "usageMetadata"))))
        goto out;
    const char *rid = json_string_value(json_object_get(o, "responseId"));
    if (rid && !s->role_sent)
        snprintf(s->id, sizeof s->id, "chatcmpl-%.80s", rid);
    long in, out;
    usage_of(json_object_get(o, "usageMetadata"), &in, &out);
    if (in >= 0)
        s->in = in;
    if (out >= 0)
        s->out = out;
    *msg = "out of memory";
    if (!s->role_sent) {
        s->role_sent = true;
        if (json_array_append_new(chunks, chunk_of(s, json_pack("{s:s, s:s}", "role", "assistant",
                                                                "content", ""), NULL)))
            goto out;
    }
    json_t *cand = json_array_get(cands, 0);
    struct sw_buf text;
    sw_buf_init(&text, (size_t)1 << 30);
    json_t *calls = json_array();
    int perr = !calls || parts_of(json_object_get(json_object_get(cand, "content"), "parts"),
                                  &text, calls, s->n_tools);
    json_t *delta = NULL;
    if (!perr && text.len)
        delta = json_pack("{s:s}", "content", text.ptr);
    if (!perr && json_array_size(calls)) {
        /* the calls of a chunk get their index (parts_of makes whole calls) */
        size_t i;
        json_t *c;
        json_array_foreach(calls, i, c) json_object_set_new(c, "index", json_integer(s->n_tools + (int)i));
        s->n_tools += (int)json_array_size(calls);
        s->tools = true;
        if (!delta)
            delta = json_object();
        if (delta)
            json_object_set(delta, "tool_calls", calls);
    }
    sw_buf_free(&text);
    json_decref(calls);
    if (perr || (delta && json_array_append_new(chunks, chunk_of(s, delta, NULL))))
        goto out;
    const char *fr = json_string_value(json_object_get(cand, "finishReason"));
    bool blocked = !cand && json_is_string(json_object_get(pf, "blockReason"));
    if ((fr || blocked) && finish(s, fr, blocked, chunks))
        goto out;
    rc = 0;
out:
    json_decref(o);
    return rc;
}
