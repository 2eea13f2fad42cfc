#include "dialect/anth_req.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/err.h"
#include "dialect/anth_resp.h"
#include "dialect/req_util.h"

/* OpenAI chat requests as Anthropic Messages requests (anth_req.h). */

/* An OpenAI image_url part as an Anthropic image block. */
static json_t *image_block(const json_t *part, const char *path, struct sw_request_error *err)
{
    const char *url = sw_dialect_image_url(part);
    char p[160];
    snprintf(p, sizeof p, "%s.image_url", path);
    if (!url)
        BAD(p, "%s: expected a url.", p);
    if (!strncmp(url, "data:", 5)) {
        char mt[128];
        const char *data;
        int d = sw_dialect_data_url(url, mt, sizeof mt, &data);
        if (d == 0)
            BAD(p, "%s: a data: URL can be translated only in base64.", p);
        if (d < 0)
            BAD(p, "%s: the data: URL has no media type.", p);
        json_t *b = json_pack("{s:s, s:{s:s, s:s, s:s}}", "type", "image", "source", "type",
                              "base64", "media_type", mt, "data", data);
        if (!b)
            sw_dialect_oom(err);
        return b;
    }
    json_t *b = json_pack("{s:s, s:{s:s, s:s}}", "type", "image", "source", "type", "url", "url",
                          url);
    if (!b)
        sw_dialect_oom(err);
    return b;
fail:
    return NULL;
}

/* OpenAI content (string or parts) as Anthropic blocks appended to `blocks`;
 * text only unless images is set. */
static int content_blocks(json_t *blocks, const json_t *c, const char *path, bool images,
                          struct sw_request_error *err)
{
    if (json_is_null(c) || !c)
        return SW_OK;
    if (json_is_string(c)) {
        if (!json_string_length(c))
            return SW_OK;
        if (json_array_append_new(blocks, json_pack("{s:s, s:O}", "type", "text", "text", c)))
            return sw_dialect_oom(err);
        return SW_OK;
    }
    size_t i;
    json_t *part;
    json_array_foreach(c, i, part) {
        char p[160];
        snprintf(p, sizeof p, "%s[%zu]", path, i);
        const char *t = sw_dialect_type_of(part);
        json_t *b = NULL;
        if (!strcmp(t, "text") || !strcmp(t, "refusal")) {
            json_t *tx = json_object_get(part, !strcmp(t, "text") ? "text" : "refusal");
            b = json_pack("{s:s, s:O}", "type", "text", "text", tx ? tx : json_string(""));
        } else if (!strcmp(t, "image_url") && images) {
            b = image_block(part, p, err);
            if (!b)
                return err->status == 500 ? SW_ENOMEM : SW_EINVAL;
        } else {
            char pt[176];
            snprintf(pt, sizeof pt, "%s.type", p);
            sw_request_error_set(err, 400, "invalid_request_error", "invalid_value", pt,
                                 "%s: a '%s' part cannot be translated to Anthropic's Messages "
                                 "API here.", pt, t);
            return SW_EINVAL;
        }
        if (!b || json_array_append_new(blocks, b))
            return sw_dialect_oom(err);
    }
    return SW_OK;
}

/* The last message of `msgs` when it has `role`, else a new one appended. */
static json_t *open_message(json_t *msgs, const char *role)
{
    size_t n = json_array_size(msgs);
    json_t *last = n ? json_array_get(msgs, n - 1) : NULL;
    if (last && !strcmp(json_string_value(json_object_get(last, "role")), role))
        return json_object_get(last, "content");
    json_t *blocks = json_array();
    json_t *m = blocks ? json_pack("{s:s, s:o}", "role", role, "content", blocks) : NULL;
    if (!m || json_array_append_new(msgs, m))
        return NULL;
    return blocks;
}

/* The return of a helper that failed with *err set. */
static int failed(const struct sw_request_error *err)
{
    return err->status == 500 ? SW_ENOMEM : SW_EINVAL;
}

/* A system or developer message's text, joined to the system prompt. */
static int system_text(struct sw_buf *sys, const json_t *c, const char *pc,
                       struct sw_request_error *err)
{
    long bad;
    char *s = sw_dialect_joined_text(c, &bad);
    if (!s)
        BAD(pc, "%s: a system message can be translated only as text.", pc);
    int e = (sys->len && sw_buf_append(sys, "\n\n", 2)) || sw_buf_append_str(sys, s);
    free(s);
    if (e)
        return sw_dialect_oom(err);
    return SW_OK;
fail:
    return SW_EINVAL;
}

/* An assistant message: its content blocks, then each tool call as a
 * tool_use block (arguments that are not a JSON object are refused). */
static int assistant_message(json_t *msgs, const json_t *m, const char *p, const char *pc,
                             struct sw_request_error *err)
{
    if (json_object_get(m, "function_call") && !json_is_null(json_object_get(m, "function_call"))) {
        char pf[112];
        snprintf(pf, sizeof pf, "%s.function_call", p);
        BAD(pf, "%s: legacy function calls cannot be translated; use tool_calls.", pf);
    }
    json_t *blocks = open_message(msgs, "assistant");
    if (!blocks)
        return sw_dialect_oom(err);
    if (content_blocks(blocks, json_object_get(m, "content"), pc, false, err))
        return failed(err);
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
            BAD(pa, "%s: must be a JSON object to be translated to a tool_use input.", pa);
        }
        json_t *b = json_pack("{s:s, s:s, s:s, s:o}", "type", "tool_use", "id", id ? id : "",
                              "name", name ? name : "", "input", input);
        if (!b || json_array_append_new(blocks, b))
            return sw_dialect_oom(err);
    }
    if (json_array_size(blocks) == 0 &&
        json_array_append_new(blocks, json_pack("{s:s, s:s}", "type", "text", "text", "")))
        return sw_dialect_oom(err);
    return SW_OK;
fail:
    return SW_EINVAL;
}

/* A tool message as a tool_result block. Tool results lead their user
 * message: after other user blocks they start a message of their own. */
static int tool_result(json_t *msgs, const json_t *m, const char *pc, struct sw_request_error *err)
{
    json_t *blocks = open_message(msgs, "user");
    size_t nb = json_array_size(blocks);
    if (nb && strcmp(sw_dialect_type_of(json_array_get(blocks, nb - 1)), "tool_result")) {
        json_t *fresh = json_array();
        json_t *nm = fresh ? json_pack("{s:s, s:o}", "role", "user", "content", fresh) : NULL;
        blocks = nm && !json_array_append_new(msgs, nm) ? fresh : NULL;
    }
    const char *id = json_string_value(json_object_get(m, "tool_call_id"));
    long bad;
    char *s = sw_dialect_joined_text(json_object_get(m, "content"), &bad);
    if (!s)
        BAD(pc, "%s: a tool message can be translated only as text.", pc);
    json_t *b = blocks ? json_pack("{s:s, s:s, s:s}", "type", "tool_result", "tool_use_id",
                                   id ? id : "", "content", s)
                       : NULL;
    free(s);
    if (!b || json_array_append_new(blocks, b))
        return sw_dialect_oom(err);
    return SW_OK;
fail:
    return SW_EINVAL;
}

/* OpenAI message i, by role: to the system prompt or to `msgs`. */
static int message_from_openai(json_t *msgs, struct sw_buf *sys, const json_t *m, size_t i,
                               struct sw_request_error *err)
{
    char p[96];
    snprintf(p, sizeof p, "messages[%zu]", i);
    const char *role = json_string_value(json_object_get(m, "role"));
    json_t *c = json_object_get(m, "content");
    char pc[112];
    snprintf(pc, sizeof pc, "%s.content", p);
    if (!role)
        role = "";
    if (!strcmp(role, "system") || !strcmp(role, "developer"))
        return system_text(sys, c, pc, err);
    if (!strcmp(role, "user")) {
        json_t *blocks = open_message(msgs, "user");
        if (!blocks)
            return sw_dialect_oom(err);
        return content_blocks(blocks, c, pc, true, err) ? failed(err) : SW_OK;
    }
    if (!strcmp(role, "assistant"))
        return assistant_message(msgs, m, p, pc, err);
    if (!strcmp(role, "tool"))
        return tool_result(msgs, m, pc, err);
    char pr[112];
    snprintf(pr, sizeof pr, "%s.role", p);
    BAD(pr, "%s: '%s' messages cannot be translated to Anthropic's Messages API.", pr, role);
fail:
    return SW_EINVAL;
}

static int messages_from_openai(json_t *o, const json_t *in, struct sw_request_error *err)
{
    json_t *msgs = json_array();
    struct sw_buf sys;
    sw_buf_init(&sys, (size_t)1 << 31);
    if (!msgs)
        return sw_dialect_oom(err);
    json_object_set_new(o, "messages", msgs);
    size_t i;
    json_t *m;
    int rc;
    json_array_foreach(json_object_get(in, "messages"), i, m) {
        if ((rc = message_from_openai(msgs, &sys, m, i, err)))
            goto fail_rc;
    }
    /* User messages with nothing to say (empty text) have no Anthropic form. */
    for (size_t k = json_array_size(msgs); k-- > 0;)
        if (json_array_size(json_object_get(json_array_get(msgs, k), "content")) == 0)
            json_array_remove(msgs, k);
    if (json_array_size(msgs) == 0)
        BAD("messages", "messages: no message with content; Anthropic's Messages API needs at "
                        "least one.");
    if (sys.len && json_object_set_new(o, "system", json_string(sys.ptr)))
        goto nomem;
    sw_buf_free(&sys);
    return SW_OK;
nomem:
    sw_buf_free(&sys);
    return sw_dialect_oom(err);
fail_rc:
    sw_buf_free(&sys);
    return rc;
fail:
    sw_buf_free(&sys);
    return SW_EINVAL;
}

/* Every non-null top-level field known (an unknown one is refused, not
 * dropped); response_format only as a json_schema or json_object without
 * tools (its schema in *rf_schema, a new reference; json_object's is
 * {"type":"object"}; else NULL); no metadata. */
static int check_top_level(const json_t *in, json_t **rf_schema, struct sw_request_error *err)
{
    static const char *const known[] = {
        "model", "messages", "max_tokens", "max_completion_tokens", "stop", "temperature",
        "top_p", "tools", "tool_choice", "parallel_tool_calls", "user", "stream",
        "stream_options", "n", "metadata", "response_format"};
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)in, k, v) {
        bool ok = json_is_null(v);
        for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
            ok |= !strcmp(k, known[i]);
        if (!ok) {
            char p[128];
            snprintf(p, sizeof p, "%.100s", k);
            NOPE(p, "%s: this field has no counterpart in Anthropic's Messages API (the backend "
                    "chosen speaks it) and is refused rather than dropped.", p);
        }
    }
    /* response_format json_schema without tools of its own, streamed or not:
     * a forced tool whose input_schema is the schema (Anthropic's way to ask
     * for a shape); the answer's tool input becomes the content again. */
    json_t *rf = json_object_get(in, "response_format");
    *rf_schema = NULL;
    if (rf && !json_is_null(rf)) {
        const char *rft = json_string_value(json_object_get(rf, "type"));
        json_t *schema = json_object_get(json_object_get(rf, "json_schema"), "schema");
        bool object = rft && !strcmp(rft, "json_object");
        if (rft && !strcmp(rft, "text"))
            return SW_OK;
        if (!rft || (!object && (strcmp(rft, "json_schema") || !json_is_object(schema))) ||
            json_object_get(in, "tools") || json_object_get(in, "tool_choice"))
            BAD("response_format",
                "response_format: only text, json_object or a json_schema with an object "
                "schema, without tools, can be translated for Anthropic's Messages API (as a "
                "forced tool).");
        *rf_schema = object ? json_pack("{s:s}", "type", "object") : json_incref(schema);
        if (!*rf_schema)
            return sw_dialect_oom(err);
    }
    json_t *md = json_object_get(in, "metadata");
    if (json_is_object(md) && json_object_size(md))
        NOPE("metadata", "metadata: has no counterpart in Anthropic's Messages API.");
    return SW_OK;
fail:
    return SW_EINVAL;
}

/* max_tokens (max_completion_tokens first, else the default), stop,
 * temperature (0 to 1), top_p, stream, user. */
static int sampling_from_openai(json_t *o, const json_t *in, long default_max_tokens,
                                struct sw_request_error *err)
{
    json_t *mt = json_object_get(in, "max_completion_tokens");
    if (!json_is_integer(mt))
        mt = json_object_get(in, "max_tokens");
    json_object_set_new(o, "max_tokens", json_integer(json_is_integer(mt) ? json_integer_value(mt)
                                                                         : default_max_tokens));
    json_t *stop = json_object_get(in, "stop");
    if (json_is_string(stop))
        json_object_set_new(o, "stop_sequences", json_pack("[O]", stop));
    else if (json_is_array(stop) && json_array_size(stop))
        json_object_set(o, "stop_sequences", stop);
    json_t *temp = json_object_get(in, "temperature");
    if (sw_dialect_is_num(temp)) {
        if (json_number_value(temp) > 1)
            BAD("temperature", "temperature: Anthropic's Messages API takes 0 to 1; %g cannot "
                               "be translated.", json_number_value(temp));
        json_object_set(o, "temperature", temp);
    }
    if (sw_dialect_is_num(json_object_get(in, "top_p")))
        json_object_set(o, "top_p", json_object_get(in, "top_p"));
    if (json_is_true(json_object_get(in, "stream")))
        json_object_set_new(o, "stream", json_true());
    json_t *user = json_object_get(in, "user");
    if (json_is_string(user))
        json_object_set_new(o, "metadata", json_pack("{s:O}", "user_id", user));
    return SW_OK;
fail:
    return SW_EINVAL;
}

/* Function tools as Anthropic tools (input_schema: the parameters, an
 * object schema without them). */
static int tools_from_openai(json_t *o, const json_t *tools, struct sw_request_error *err)
{
    json_t *list = json_array();
    json_object_set_new(o, "tools", list);
    size_t i;
    json_t *t;
    json_array_foreach(tools, i, t) {
        json_t *fn = json_object_get(t, "function");
        if (strcmp(sw_dialect_type_of(t), "function") || !json_is_object(fn)) {
            char p[64];
            snprintf(p, sizeof p, "tools[%zu].type", i);
            BAD(p, "%s: only function tools can be translated.", p);
        }
        json_t *params = json_object_get(fn, "parameters");
        json_t *schema = json_is_object(params) ? json_incref(params)
                                                : json_pack("{s:s}", "type", "object");
        json_t *d = schema ? json_pack("{s:O, s:o}", "name", json_object_get(fn, "name"),
                                       "input_schema", schema)
                           : NULL;
        if (d && json_is_string(json_object_get(fn, "description")))
            json_object_set(d, "description", json_object_get(fn, "description"));
        if (!d || json_array_append_new(list, d))
            return sw_dialect_oom(err);
    }
    return SW_OK;
fail:
    return SW_EINVAL;
}

/* tool_choice (required: any; none; a function: that tool; else auto) and
 * parallel_tool_calls false as disable_parallel_tool_use. */
static int tool_choice_from_openai(json_t *o, const json_t *in, struct sw_request_error *err)
{
    json_t *tc = json_object_get(in, "tool_choice");
    json_t *choice = NULL;
    if (json_is_string(tc)) {
        const char *s = json_string_value(tc);
        const char *t = !strcmp(s, "required") ? "any" : !strcmp(s, "none") ? "none" : "auto";
        choice = json_pack("{s:s}", "type", t);
    } else if (json_is_object(tc)) {
        const char *name = json_string_value(json_object_get(json_object_get(tc, "function"), "name"));
        if (!name)
            BAD("tool_choice", "tool_choice: expected a function name.");
        choice = json_pack("{s:s, s:s}", "type", "tool", "name", name);
    }
    if (json_is_false(json_object_get(in, "parallel_tool_calls")) &&
        json_object_get(o, "tools")) {
        if (!choice)
            choice = json_pack("{s:s}", "type", "auto");
        if (choice)
            json_object_set_new(choice, "disable_parallel_tool_use", json_true());
    }
    if (choice)
        json_object_set_new(o, "tool_choice", choice);
    return SW_OK;
fail:
    return SW_EINVAL;
}

int sw_anth_req_from_openai(const json_t *in, long default_max_tokens, json_t **out,
                            struct sw_request_error *err)
{
    *out = NULL;
    json_t *o = json_object();
    if (!o)
        return sw_dialect_oom(err);
    json_t *rf_schema = NULL;
    int rc = check_top_level(in, &rf_schema, err);
    if (rc)
        goto fail;
    json_object_set(o, "model", json_object_get(in, "model"));
    if ((rc = messages_from_openai(o, in, err)) ||
        (rc = sampling_from_openai(o, in, default_max_tokens, err)))
        goto fail;
    json_t *tools = json_object_get(in, "tools");
    if (json_is_array(tools) && json_array_size(tools) && (rc = tools_from_openai(o, tools, err)))
        goto fail;
    if ((rc = tool_choice_from_openai(o, in, err)))
        goto fail;
    if (rf_schema) {
        json_object_set_new(o, "tools", json_pack("[{s:s, s:s, s:O}]", "name", SW_ANTH_FORMAT_TOOL,
                                                  "description", "Answer with this tool's input.",
                                                  "input_schema", rf_schema));
        json_object_set_new(o, "tool_choice", json_pack("{s:s, s:s}", "type", "tool", "name",
                                                        SW_ANTH_FORMAT_TOOL));
    }
    json_decref(rf_schema);
    *out = o;
    return SW_OK;
fail:
    json_decref(rf_schema);
    json_decref(o);
    return rc;
}

