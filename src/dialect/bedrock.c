#include "dialect/bedrock.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/err.h"
#include "common/json.h"
#include "dialect/req_util.h"

/* ---- OpenAI request -> Converse ---- */

/* An image_url part (a data: URL in base64) as a Converse image block. */
static json_t *image_block(const json_t *part, const char *path, struct sw_request_error *err)
{
    const char *url = sw_dialect_image_url(part);
    static const char *const formats[] = {"png", "jpeg", "gif", "webp"};
    char p[160];
    snprintf(p, sizeof p, "%s.image_url", path);
    if (!url || strncmp(url, "data:image/", 11))
        NOPE(p, "%s: Bedrock's Converse API takes images as bytes only: give a data: URL "
                "(base64 PNG, JPEG, GIF or WebP).", p);
    char mt[32];
    const char *data = NULL;
    const char *fmt = NULL;
    if (sw_dialect_data_url(url, mt, sizeof mt, &data) > 0) {
        for (size_t i = 0; i < 4; i++)
            if (!strcmp(mt + 6, formats[i]))
                fmt = formats[i];
        if (!strcmp(mt + 6, "jpg"))
            fmt = "jpeg";
    }
    if (!fmt)
        NOPE(p, "%s: Bedrock's Converse API takes base64 PNG, JPEG, GIF or WebP images only.", p);
    json_t *b = json_pack("{s:{s:s, s:{s:s}}}", "image", "format", fmt, "source", "bytes", data);
    if (!b)
        sw_dialect_oom(err);
    return b;
fail:
    return NULL;
}

/* Content (a string or parts) as Converse blocks appended to `blocks`;
 * empty texts left out (Converse refuses blank text blocks). */
static int content_blocks(json_t *blocks, const json_t *c, const char *path, bool images,
                          struct sw_request_error *err)
{
    if (json_is_null(c) || !c)
        return SW_OK;
    if (json_is_string(c)) {
        if (!json_string_length(c))
            return SW_OK;
        return json_array_append_new(blocks, json_pack("{s:O}", "text", c))
                   ? sw_dialect_oom(err)
                   : SW_OK;
    }
    size_t i;
    json_t *part;
    json_array_foreach(c, i, part) {
        char p[160];
        snprintf(p, sizeof p, "%s[%zu]", path, i);
        const char *t = sw_dialect_type_of(part);
        json_t *b = NULL;
        if (!strcmp(t, "text")) {
            json_t *text = json_object_get(part, "text");
            if (!json_is_string(text) || !json_string_length(text))
                continue;
            b = json_pack("{s:O}", "text", text);
        } else if (!strcmp(t, "image_url") && images) {
            b = image_block(part, p, err);
            if (!b)
                return err->status ? SW_EINVAL : SW_ENOMEM;
        } else {
            NOPE(p, "%s: a '%s' part has no counterpart in Bedrock's Converse API.", p, t);
        }
        if (!b || json_array_append_new(blocks, b))
            return sw_dialect_oom(err);
    }
    return SW_OK;
fail:
    return SW_EINVAL;
}

/* The content array of the last message when it has `role`, else of a new one. */
static json_t *open_message(json_t *msgs, const char *role)
{
    size_t n = json_array_size(msgs);
    json_t *last = n ? json_array_get(msgs, n - 1) : NULL;
    const char *lr = json_string_value(json_object_get(last, "role"));
    if (lr && !strcmp(lr, role))
        return json_object_get(last, "content");
    json_t *blocks = json_array();
    json_t *m = blocks ? json_pack("{s:s, s:o}", "role", role, "content", blocks) : NULL;
    return m && !json_array_append_new(msgs, m) ? blocks : NULL;
}

static int assistant_message(json_t *msgs, const json_t *m, const char *p,
                             struct sw_request_error *err)
{
    char pc[128];
    snprintf(pc, sizeof pc, "%s.content", p);
    json_t *blocks = open_message(msgs, "assistant");
    if (!blocks)
        return sw_dialect_oom(err);
    int rc = content_blocks(blocks, json_object_get(m, "content"), pc, false, err);
    if (rc)
        return rc;
    size_t j;
    json_t *call;
    json_array_foreach(json_object_get(m, "tool_calls"), j, call) {
        char pa[160];
        snprintf(pa, sizeof pa, "%s.tool_calls[%zu].function.arguments", p, j);
        json_t *fn = json_object_get(call, "function");
        const char *args = json_string_value(json_object_get(fn, "arguments"));
        const char *id = json_string_value(json_object_get(call, "id"));
        const char *name = json_string_value(json_object_get(fn, "name"));
        json_error_t je;
        json_t *input = args ? json_loads(args, JSON_REJECT_DUPLICATES, &je) : NULL;
        if (!json_is_object(input)) {
            json_decref(input);
            BAD(pa, "%s: must be a JSON object to be translated to a toolUse input.", pa);
        }
        json_t *b = json_pack("{s:{s:s, s:s, s:o}}", "toolUse", "toolUseId", id ? id : "",
                              "name", name ? name : "", "input", input);
        if (!b || json_array_append_new(blocks, b))
            return sw_dialect_oom(err);
    }
    return SW_OK;
fail:
    return SW_EINVAL;
}

static int tool_result(json_t *msgs, const json_t *m, const char *p, struct sw_request_error *err)
{
    char pc[128];
    snprintf(pc, sizeof pc, "%s.content", p);
    long bad;
    char *s = sw_dialect_joined_text(json_object_get(m, "content"), &bad);
    if (!s)
        BAD(pc, "%s: a tool message can be translated only as text.", pc);
    const char *id = json_string_value(json_object_get(m, "tool_call_id"));
    json_t *blocks = open_message(msgs, "user");
    json_t *b = blocks ? json_pack("{s:{s:s, s:[{s:s}]}}", "toolResult", "toolUseId",
                                   id ? id : "", "content", "text", s)
                       : NULL;
    free(s);
    if (!b || json_array_append_new(blocks, b))
        return sw_dialect_oom(err);
    return SW_OK;
fail:
    return SW_EINVAL;
}

static int system_block(json_t *system, const json_t *c, const char *pc,
                        struct sw_request_error *err)
{
    long bad;
    char *s = sw_dialect_joined_text(c, &bad);
    if (!s)
        BAD(pc, "%s: a system message can be translated only as text.", pc);
    int rc = *s && json_array_append_new(system, json_pack("{s:s}", "text", s)) ? SW_ENOMEM
                                                                                : SW_OK;
    free(s);
    return rc ? sw_dialect_oom(err) : SW_OK;
fail:
    return SW_EINVAL;
}

static int messages_from_openai(json_t *o, const json_t *in, struct sw_request_error *err)
{
    json_t *msgs = json_array(), *system = json_array();
    if (!msgs || !system || json_object_set_new(o, "messages", msgs)) {
        json_decref(system);
        return sw_dialect_oom(err);
    }
    size_t i;
    json_t *m;
    int rc = SW_OK;
    json_array_foreach(json_object_get(in, "messages"), i, m) {
        char p[96];
        snprintf(p, sizeof p, "messages[%zu]", i);
        const char *role = json_string_value(json_object_get(m, "role"));
        if (!role)
            role = "";
        if (!strcmp(role, "system") || !strcmp(role, "developer")) {
            char pc[128];
            snprintf(pc, sizeof pc, "%s.content", p);
            rc = system_block(system, json_object_get(m, "content"), pc, err);
        } else if (!strcmp(role, "user")) {
            char pc[128];
            snprintf(pc, sizeof pc, "%s.content", p);
            json_t *blocks = open_message(msgs, "user");
            rc = blocks ? content_blocks(blocks, json_object_get(m, "content"), pc, true, err)
                        : sw_dialect_oom(err);
        } else if (!strcmp(role, "assistant")) {
            rc = assistant_message(msgs, m, p, err);
        } else if (!strcmp(role, "tool")) {
            rc = tool_result(msgs, m, p, err);
        } else {
            char pr[112];
            snprintf(pr, sizeof pr, "%s.role", p);
            sw_request_error_set(err, 400, "invalid_request_error", "untranslatable", pr,
                                 "%s: '%s' messages have no counterpart in Bedrock's Converse "
                                 "API.", pr, role);
            rc = SW_EINVAL;
        }
        if (rc)
            break;
    }
    if (!rc && json_array_size(system) && json_object_set(o, "system", system))
        rc = sw_dialect_oom(err);
    json_decref(system);
    return rc;
}

/* Top-level fields: those Converse carries, nulls, and a few that change
 * nothing of the answer (user, parallel_tool_calls, stream_options); the
 * rest refused by name. */
static int check_top_level(const json_t *in, struct sw_request_error *err)
{
    static const char *const known[] = {
        "model", "messages", "max_tokens", "max_completion_tokens", "stop", "temperature",
        "top_p", "tools", "tool_choice", "parallel_tool_calls", "user", "stream",
        "stream_options", "n"};
    if (sw_dialect_known_members(in, known, sizeof known / sizeof known[0],
                                 "Bedrock's Converse API", err))
        return SW_EINVAL;
    json_t *n = json_object_get(in, "n");
    if (json_is_integer(n) && json_integer_value(n) != 1)
        NOPE("n", "n: Bedrock's Converse API makes one choice per request.");
    return SW_OK;
fail:
    return SW_EINVAL;
}

static int inference_config(json_t *o, const json_t *in, long default_max_tokens,
                            struct sw_request_error *err)
{
    (void)default_max_tokens; /* Converse has a default of its own per model */
    json_t *ic = json_object();
    if (!ic || json_object_set_new(o, "inferenceConfig", ic))
        return sw_dialect_oom(err);
    json_t *mt = json_object_get(in, "max_completion_tokens");
    if (!json_is_integer(mt))
        mt = json_object_get(in, "max_tokens");
    if (json_is_integer(mt))
        json_object_set(ic, "maxTokens", mt);
    json_t *t = json_object_get(in, "temperature"), *tp = json_object_get(in, "top_p");
    if (sw_dialect_is_num(t))
        json_object_set(ic, "temperature", t);
    if (sw_dialect_is_num(tp))
        json_object_set(ic, "topP", tp);
    json_t *stop = json_object_get(in, "stop");
    if (json_is_string(stop))
        json_object_set_new(ic, "stopSequences", json_pack("[O]", stop));
    else if (json_is_array(stop) && json_array_size(stop))
        json_object_set(ic, "stopSequences", stop);
    if (!json_object_size(ic))
        json_object_del(o, "inferenceConfig");
    return SW_OK;
}

static int tool_config(json_t *o, const json_t *in, struct sw_request_error *err)
{
    json_t *tools = json_object_get(in, "tools"), *tc = json_object_get(in, "tool_choice");
    if (!json_is_array(tools) || !json_array_size(tools))
        return SW_OK;
    json_t *specs = json_array();
    json_t *cfg = specs ? json_pack("{s:o}", "tools", specs) : NULL;
    if (!cfg || json_object_set_new(o, "toolConfig", cfg))
        return sw_dialect_oom(err);
    size_t i;
    json_t *t;
    json_array_foreach(tools, i, t) {
        json_t *fn = json_object_get(t, "function");
        if (strcmp(sw_dialect_type_of(t), "function") || !json_is_object(fn)) {
            char p[64];
            snprintf(p, sizeof p, "tools[%zu].type", i);
            NOPE(p, "%s: only function tools have a counterpart in Bedrock's Converse API.", p);
        }
        json_t *params = json_object_get(fn, "parameters");
        json_t *schema = json_is_object(params) ? json_incref(params)
                                                : json_pack("{s:s}", "type", "object");
        json_t *spec = schema ? json_pack("{s:{s:O, s:{s:o}}}", "toolSpec", "name",
                                          json_object_get(fn, "name"), "inputSchema", "json",
                                          schema)
                              : NULL;
        json_t *desc = json_object_get(fn, "description");
        if (spec && json_is_string(desc) && json_string_length(desc))
            json_object_set(json_object_get(spec, "toolSpec"), "description", desc);
        if (!spec || json_array_append_new(specs, spec))
            return sw_dialect_oom(err);
    }
    if (!tc || json_is_null(tc))
        return SW_OK;
    const char *s = json_string_value(tc);
    json_t *choice = NULL;
    if (s && !strcmp(s, "auto"))
        choice = json_pack("{s:{}}", "auto");
    else if (s && !strcmp(s, "required"))
        choice = json_pack("{s:{}}", "any");
    else if (json_is_object(tc) && !strcmp(sw_dialect_type_of(tc), "function"))
        choice = json_pack("{s:{s:O}}", "tool", "name",
                           json_object_get(json_object_get(tc, "function"), "name"));
    else
        NOPE("tool_choice", "tool_choice: Bedrock's Converse API takes auto, required or one "
                            "function (not none).");
    if (!choice || json_object_set_new(cfg, "toolChoice", choice))
        return sw_dialect_oom(err);
    return SW_OK;
fail:
    return SW_EINVAL;
}

int sw_bedrock_req_from_openai(const json_t *in, long default_max_tokens, json_t **out,
                               struct sw_request_error *err)
{
    *out = NULL;
    int rc = check_top_level(in, err);
    json_t *o = rc ? NULL : json_object();
    if (!rc && !o)
        rc = sw_dialect_oom(err);
    if (!rc)
        rc = messages_from_openai(o, in, err);
    if (!rc)
        rc = inference_config(o, in, default_max_tokens, err);
    if (!rc)
        rc = tool_config(o, in, err);
    if (!rc && !json_array_size(json_object_get(o, "messages"))) {
        sw_request_error_set(err, 400, "invalid_request_error", "invalid_value", "messages",
                             "messages: Bedrock's Converse API needs at least one user or "
                             "assistant message.");
        rc = SW_EINVAL;
    }
    if (rc) {
        json_decref(o);
        return rc;
    }
    *out = o;
    return SW_OK;
}

/* ---- Converse answer -> OpenAI ---- */

const char *sw_bedrock_finish_reason(const char *sr)
{
    if (!sr)
        return "stop";
    if (!strcmp(sr, "max_tokens") || !strcmp(sr, "model_context_window_exceeded"))
        return "length";
    if (!strcmp(sr, "tool_use"))
        return "tool_calls";
    if (!strcmp(sr, "guardrail_intervened") || !strcmp(sr, "content_filtered"))
        return "content_filter";
    return "stop";
}

static long usage_of(const json_t *u, const char *k)
{
    json_t *v = json_object_get(u, k);
    return json_is_integer(v) && json_integer_value(v) >= 0 ? (long)json_integer_value(v) : 0;
}

json_t *sw_bedrock_resp_to_openai(const json_t *answer, const char *model, long long created)
{
    json_t *content = json_object_get(json_object_get(json_object_get(answer, "output"),
                                                      "message"), "content");
    if (!json_is_array(content))
        return NULL;
    struct sw_buf text;
    sw_buf_init(&text, 64 << 20);
    json_t *calls = json_array();
    size_t i;
    json_t *b;
    int err = calls ? SW_OK : SW_ENOMEM;
    json_array_foreach(content, i, b) {
        json_t *t = json_object_get(b, "text"), *tu = json_object_get(b, "toolUse");
        if (json_is_string(t))
            err = err ? err : sw_buf_append(&text, json_string_value(t), json_string_length(t));
        if (json_is_object(tu) && !err) {
            char *args = json_dumps(json_object_get(tu, "input") ? json_object_get(tu, "input")
                                                                   : json_object(),
                                    JSON_COMPACT | JSON_ENCODE_ANY);
            const char *id = json_string_value(json_object_get(tu, "toolUseId"));
            const char *name = json_string_value(json_object_get(tu, "name"));
            json_t *c = args ? json_pack("{s:s, s:s, s:{s:s, s:s}}", "id", id ? id : "", "type",
                                         "function", "function", "name", name ? name : "",
                                         "arguments", args)
                             : NULL;
            free(args);
            if (!c || json_array_append_new(calls, c))
                err = SW_ENOMEM;
        }
    }
    json_t *u = json_object_get(answer, "usage");
    long pin = usage_of(u, "inputTokens"), pout = usage_of(u, "outputTokens");
    json_t *msg = err ? NULL
                      : json_pack("{s:s, s:s%, s:n}", "role", "assistant", "content",
                                  text.ptr ? text.ptr : "", text.len, "refusal");
    sw_buf_free(&text);
    if (msg && json_array_size(calls))
        json_object_set(msg, "tool_calls", calls);
    json_decref(calls);
    char id[64];
    snprintf(id, sizeof id, "chatcmpl-bedrock-%lld", created);
    const char *sr = json_string_value(json_object_get(answer, "stopReason"));
    return msg ? json_pack("{s:s, s:s, s:I, s:s, s:[{s:i, s:o, s:n, s:s}], "
                           "s:{s:i, s:i, s:i}}",
                           "id", id, "object", "chat.completion", "created", (json_int_t)created,
                           "model", model ? model : "", "choices", "index", 0, "message", msg,
                           "logprobs", "finish_reason", sw_bedrock_finish_reason(sr), "usage",
                           "prompt_tokens", (int)pin, "completion_tokens", (int)pout,
                           "total_tokens", (int)(pin + pout))
               : NULL;
}

/* ---- ConverseStream -> OpenAI chunks ---- */

void sw_bedrock_to_oai_init(struct sw_bedrock_to_oai *s, const char *model, long long created)
{
    memset(s, 0, sizeof *s);
    snprintf(s->model, sizeof s->model, "%s", model ? model : "");
    s->created = created;
    for (size_t i = 0; i < sizeof s->tool_index / sizeof s->tool_index[0]; i++)
        s->tool_index[i] = -1;
}

static int add_chunk(struct sw_bedrock_to_oai *s, json_t *chunks, json_t *delta,
                     const char *finish)
{
    char id[64];
    snprintf(id, sizeof id, "chatcmpl-bedrock-%lld", s->created);
    json_t *c = delta ? json_pack("{s:s, s:s, s:I, s:s, s:[{s:i, s:o, s:n, s:o}]}", "id", id,
                                  "object", "chat.completion.chunk", "created",
                                  (json_int_t)s->created, "model", s->model, "choices", "index",
                                  0, "delta", delta, "logprobs", "finish_reason",
                                  finish ? json_string(finish) : json_null())
                      : NULL;
    return c && !json_array_append_new(chunks, c) ? 0 : -1;
}

static int block_index(const json_t *ev)
{
    json_t *i = json_object_get(ev, "contentBlockIndex");
    return json_is_integer(i) && json_integer_value(i) >= 0 && json_integer_value(i) < 64
               ? (int)json_integer_value(i)
               : -1;
}

static int ev_block_start(struct sw_bedrock_to_oai *s, const json_t *ev, json_t *chunks,
                          const char **msg)
{
    json_t *tu = json_object_get(json_object_get(ev, "start"), "toolUse");
    int bi = block_index(ev);
    if (!json_is_object(tu))
        return 0;
    if (bi < 0) {
        *msg = "contentBlockStart without a valid contentBlockIndex";
        return -1;
    }
    s->tool_index[bi] = s->n_tools++;
    s->content = true;
    const char *id = json_string_value(json_object_get(tu, "toolUseId"));
    const char *name = json_string_value(json_object_get(tu, "name"));
    return add_chunk(s, chunks,
                     json_pack("{s:[{s:i, s:s, s:s, s:{s:s, s:s}}]}", "tool_calls", "index",
                               s->tool_index[bi], "id", id ? id : "", "type", "function",
                               "function", "name", name ? name : "", "arguments", ""),
                     NULL);
}

static int ev_block_delta(struct sw_bedrock_to_oai *s, const json_t *ev, json_t *chunks,
                          const char **msg)
{
    json_t *d = json_object_get(ev, "delta");
    json_t *t = json_object_get(d, "text"), *tu = json_object_get(d, "toolUse");
    if (json_is_string(t)) {
        s->content = true;
        return add_chunk(s, chunks, json_pack("{s:O}", "content", t), NULL);
    }
    if (json_is_object(tu)) {
        int bi = block_index(ev);
        json_t *in = json_object_get(tu, "input");
        if (bi < 0 || s->tool_index[bi] < 0 || !json_is_string(in)) {
            *msg = "toolUse delta outside a toolUse block";
            return -1;
        }
        return add_chunk(s, chunks,
                         json_pack("{s:[{s:i, s:{s:O}}]}", "tool_calls", "index",
                                   s->tool_index[bi], "function", "arguments", in),
                         NULL);
    }
    return 0; /* reasoningContent and others: not carried */
}

static int ev_metadata(struct sw_bedrock_to_oai *s, const json_t *ev, json_t *chunks)
{
    json_t *u = json_object_get(ev, "usage");
    long in = usage_of(u, "inputTokens"), out = usage_of(u, "outputTokens");
    char id[64];
    snprintf(id, sizeof id, "chatcmpl-bedrock-%lld", s->created);
    json_t *c = json_pack("{s:s, s:s, s:I, s:s, s:[], s:{s:i, s:i, s:i}}", "id", id, "object",
                          "chat.completion.chunk", "created", (json_int_t)s->created, "model",
                          s->model, "choices", "usage", "prompt_tokens", (int)in,
                          "completion_tokens", (int)out, "total_tokens", (int)(in + out));
    s->done = true;
    return c && !json_array_append_new(chunks, c) ? 0 : -1;
}

static bool is_exception(const char *k)
{
    size_t n = strlen(k);
    return n > 9 && !strcmp(k + n - 9, "Exception");
}

int sw_bedrock_to_oai_event(struct sw_bedrock_to_oai *s, const char *data, size_t len,
                            json_t *chunks, const char **msg)
{
    json_t *o = json_loadb(data, len, 0, NULL);
    const char *k = json_is_object(o) && json_object_size(o) == 1 ? json_object_iter_key(
                                                                        json_object_iter(o))
                                                                  : NULL;
    json_t *ev = k ? json_object_get(o, k) : NULL;
    int rc = 0;
    *msg = "malformed ConverseStream event";
    if (!k || !json_is_object(ev)) {
        rc = -1;
    } else if (is_exception(k)) {
        snprintf(s->error_type, sizeof s->error_type, "%s", k);
        *msg = "exception in the ConverseStream";
        rc = -1;
    } else if (!strcmp(k, "messageStart")) {
        rc = add_chunk(s, chunks, json_pack("{s:s, s:s}", "role", "assistant", "content", ""),
                       NULL);
    } else if (!strcmp(k, "contentBlockStart")) {
        rc = ev_block_start(s, ev, chunks, msg);
    } else if (!strcmp(k, "contentBlockDelta")) {
        rc = ev_block_delta(s, ev, chunks, msg);
    } else if (!strcmp(k, "messageStop")) {
        const char *sr = json_string_value(json_object_get(ev, "stopReason"));
        s->stopped = true;
        snprintf(s->finish, sizeof s->finish, "%s", sw_bedrock_finish_reason(sr));
        rc = add_chunk(s, chunks, json_object(), s->finish);
    } else if (!strcmp(k, "metadata")) {
        rc = ev_metadata(s, ev, chunks);
    } /* contentBlockStop and events not known: nothing to carry */
    json_decref(o);
    return rc;
}

/* ---- Framing and errors ---- */

static bool str_is(struct sw_str s, const char *lit)
{
    return s.ptr && s.len == strlen(lit) && !memcmp(s.ptr, lit, s.len);
}

int sw_bedrock_frame_json(const struct sw_evs_message *m, struct sw_buf *out)
{
    struct sw_str name;
    if (str_is(m->message_type, "event"))
        name = m->event_type;
    else if (str_is(m->message_type, "exception"))
        name = m->exception_type;
    else if (str_is(m->message_type, "error")) {
        int err = sw_buf_append_str(out, "{\"internalServerException\":{\"message\":\"");
        if (!err)
            err = sw_json_escape(out, m->error_code.ptr ? m->error_code.ptr : "",
                                 m->error_code.len, 0);
        if (!err)
            err = sw_buf_append_str(out, ": ");
        if (!err)
            err = sw_json_escape(out, m->error_message.ptr ? m->error_message.ptr : "",
                                 m->error_message.len, 0);
        return err ? err : sw_buf_append_str(out, "\"}}");
    } else
        return SW_EPROTO;
    if (!name.ptr || !name.len || (str_is(m->message_type, "event") &&
                                   name.len > 9 && !memcmp(name.ptr + name.len - 9, "Exception", 9)))
        return SW_EPROTO;
    size_t i = 0;
    while (i < m->payload.len && (m->payload.ptr[i] == ' ' || m->payload.ptr[i] == '\n' ||
                                  m->payload.ptr[i] == '\r' || m->payload.ptr[i] == '\t'))
        i++;
    if (i < m->payload.len && m->payload.ptr[i] != '{')
        return SW_EPROTO;
    int err = sw_buf_append_str(out, "{\"");
    if (!err)
        err = sw_json_escape(out, name.ptr, name.len, 0);
    if (!err)
        err = sw_buf_append_str(out, "\":");
    if (!err)
        err = i < m->payload.len ? sw_buf_append(out, m->payload.ptr + i, m->payload.len - i)
                                 : sw_buf_append_str(out, "{}");
    return err ? err : sw_buf_append_str(out, "}");
}

int sw_bedrock_exception_status(const char *type)
{
    static const struct {
        const char *name;
        int status;
    } map[] = {
        {"ThrottlingException", 429}, {"ModelNotReadyException", 429},
        {"ValidationException", 400}, {"ServiceQuotaExceededException", 400},
        {"AccessDeniedException", 403}, {"UnrecognizedClientException", 403},
        {"ResourceNotFoundException", 404}, {"ModelTimeoutException", 408},
        {"ModelErrorException", 424}, {"ServiceUnavailableException", 503},
        {"InternalServerException", 500}, {"ModelStreamErrorException", 500},
    };
    if (!type || !*type)
        return 0;
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (!strcasecmp(type, map[i].name) ||
            (!strncasecmp(type, map[i].name, 1) && !strcmp(type + 1, map[i].name + 1)))
            return map[i].status;
    return 0;
}
