/* OpenAI chat requests as generateContent bodies (dialect/gemini.h). */
#include "dialect/gemini.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/err.h"
#include "dialect/req_util.h"

const char *const sw_gem_harm_categories[] = {
    "HARM_CATEGORY_HARASSMENT", "HARM_CATEGORY_HATE_SPEECH", "HARM_CATEGORY_SEXUALLY_EXPLICIT",
    "HARM_CATEGORY_DANGEROUS_CONTENT", NULL};

/* The return of a helper that failed with *err set. */
static int failed(const struct sw_request_error *err)
{
    return err->status == 500 ? SW_ENOMEM : SW_EINVAL;
}

/* ---- Schemas ---- */

static json_t *schema_map(const json_t *props)
{
    json_t *o = json_object();
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)props, k, v) {
        json_t *c = sw_gem_schema(v);
        if (!c || json_object_set_new(o, k, c)) {
            json_decref(o);
            return NULL;
        }
    }
    return o;
}

static json_t *schema_list(const json_t *list)
{
    json_t *a = json_array();
    size_t i;
    json_t *v;
    json_array_foreach(list, i, v) {
        json_t *c = sw_gem_schema(v);
        if (!c || json_array_append_new(a, c)) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

/* A type name upper-cased (OBJECT, STRING ...); NULL when not a known one. */
static json_t *type_name(const char *t)
{
    static const char *const names[] = {"string", "number", "integer", "boolean", "array",
                                        "object"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(t, names[i])) {
            char up[16];
            size_t n = strlen(t);
            for (size_t j = 0; j <= n; j++)
                up[j] = (char)(t[j] >= 'a' && t[j] <= 'z' ? t[j] - 32 : t[j]);
            return json_string(up);
        }
    return NULL;
}

json_t *sw_gem_schema(const json_t *schema)
{
    static const char *const copied[] = {"description", "format", "enum", "required", "minItems",
                                         "maxItems", "minimum", "maximum", "nullable",
                                         "propertyOrdering", "title", "minLength", "maxLength",
                                         "pattern", "minProperties", "maxProperties", "default"};
    json_t *o = json_object();
    if (!o || !json_is_object(schema))
        return o;
    json_t *t = json_object_get(schema, "type");
    if (json_is_string(t)) {
        json_t *n = type_name(json_string_value(t));
        if (n)
            json_object_set_new(o, "type", n);
    } else if (json_is_array(t)) {
        size_t i;
        json_t *x;
        json_array_foreach(t, i, x) {
            const char *s = json_string_value(x);
            json_t *n = s && strcmp(s, "null") && !json_object_get(o, "type") ? type_name(s) : NULL;
            if (s && !strcmp(s, "null"))
                json_object_set_new(o, "nullable", json_true());
            else if (n)
                json_object_set_new(o, "type", n);
        }
    }
    for (size_t i = 0; i < sizeof copied / sizeof copied[0]; i++) {
        json_t *v = json_object_get(schema, copied[i]);
        if (v)
            json_object_set(o, copied[i], v);
    }
    json_t *props = json_object_get(schema, "properties"), *items = json_object_get(schema, "items");
    json_t *any = json_object_get(schema, "anyOf");
    if (json_is_object(props) && json_object_set_new(o, "properties", schema_map(props)))
        goto nomem;
    if (json_is_object(items) && json_object_set_new(o, "items", sw_gem_schema(items)))
        goto nomem;
    if (json_is_array(any) && json_object_set_new(o, "anyOf", schema_list(any)))
        goto nomem;
    return o;
nomem:
    json_decref(o);
    return NULL;
}

json_t *sw_gem_safety_settings(const char *threshold)
{
    json_t *a = json_array();
    for (size_t i = 0; a && sw_gem_harm_categories[i]; i++)
        if (json_array_append_new(a, json_pack("{s:s, s:s}", "category", sw_gem_harm_categories[i],
                                               "threshold", threshold))) {
            json_decref(a);
            return NULL;
        }
    return a;
}

/* ---- OpenAI -> Gemini: contents ---- */

/* The parts array of the last content when it has `role`, else of a new
 * content appended. NULL when out of memory. */
static json_t *open_content(json_t *contents, const char *role)
{
    size_t n = json_array_size(contents);
    json_t *last = n ? json_array_get(contents, n - 1) : NULL;
    if (last && !strcmp(json_string_value(json_object_get(last, "role")), role))
        return json_object_get(last, "parts");
    json_t *parts = json_array();
    json_t *c = parts ? json_pack("{s:s, s:o}", "role", role, "parts", parts) : NULL;
    if (!c || json_array_append_new(contents, c))
        return NULL;
    return parts;
}

/* A data: image URL as inlineData; another URL is refused. */
static json_t *image_part(const json_t *part, const char *p, struct sw_request_error *err)
{
    const char *url = sw_dialect_image_url(part);
    if (!url)
        BAD(p, "%s: expected a url.", p);
    char mt[128];
    const char *data;
    int d = sw_dialect_data_url(url, mt, sizeof mt, &data);
    if (d == 0)
        NOPE(p, "%s: Gemini takes images inline: only a base64 data: URL can be translated.", p);
    if (d < 0)
        BAD(p, "%s: the data: URL has no media type.", p);
    json_t *o = json_pack("{s:{s:s, s:s}}", "inlineData", "mimeType", mt, "data", data);
    if (!o)
        sw_dialect_oom(err);
    return o;
fail:
    return NULL;
}

/* OpenAI content (a string or parts) as Gemini parts appended to `parts`;
 * images only when images is set. */
static int content_parts(json_t *parts, const json_t *c, const char *pc, bool images,
                         struct sw_request_error *err)
{
    if (!c || json_is_null(c))
        return SW_OK;
    if (json_is_string(c)) {
        if (json_string_length(c) &&
            json_array_append_new(parts, json_pack("{s:O}", "text", c)))
            return sw_dialect_oom(err);
        return SW_OK;
    }
    size_t i;
    json_t *part;
    json_array_foreach(c, i, part) {
        char p[176];
        snprintf(p, sizeof p, "%s[%zu]", pc, i);
        const char *t = sw_dialect_type_of(part);
        json_t *g = NULL;
        if (!strcmp(t, "text") || !strcmp(t, "refusal")) {
            json_t *tx = json_object_get(part, t);
            g = json_pack("{s:s}", "text", json_is_string(tx) ? json_string_value(tx) : "");
        } else if (!strcmp(t, "image_url") && images) {
            char pi[192];
            snprintf(pi, sizeof pi, "%s.image_url", p);
            if (!(g = image_part(part, pi, err)))
                return failed(err);
        } else {
            char pt[192];
            snprintf(pt, sizeof pt, "%s.type", p);
            NOPE(pt, "%s: a '%s' part cannot be translated to Gemini here.", pt, t);
        }
        if (!g || json_array_append_new(parts, g))
            return sw_dialect_oom(err);
    }
    return SW_OK;
fail:
    return SW_EINVAL;
}

static int assistant_content(json_t *contents, const json_t *m, const char *p, const char *pc,
                             struct sw_request_error *err)
{
    json_t *parts = open_content(contents, "model");
    if (!parts)
        return sw_dialect_oom(err);
    if (content_parts(parts, json_object_get(m, "content"), pc, false, err))
        return failed(err);
    size_t j;
    json_t *call;
    json_array_foreach(json_object_get(m, "tool_calls"), j, call) {
        char pa[176];
        snprintf(pa, sizeof pa, "%s.tool_calls[%zu].function.arguments", p, j);
        json_t *fn = json_object_get(call, "function");
        const char *args = json_string_value(json_object_get(fn, "arguments"));
        const char *name = json_string_value(json_object_get(fn, "name"));
        const char *id = json_string_value(json_object_get(call, "id"));
        json_t *in = args ? json_loads(args, JSON_REJECT_DUPLICATES, NULL) : NULL;
        if (!json_is_object(in)) {
            json_decref(in);
            BAD(pa, "%s: must be a JSON object to be translated to a functionCall.", pa);
        }
        json_t *fc = json_pack("{s:s, s:o}", "name", name ? name : "", "args", in);
        if (fc && id)
            json_object_set_new(fc, "id", json_string(id));
        json_t *g = fc ? json_pack("{s:o}", "functionCall", fc) : NULL;
        if (!g || json_array_append_new(parts, g))
            return sw_dialect_oom(err);
    }
    if (json_array_size(parts) == 0 &&
        json_array_append_new(parts, json_pack("{s:s}", "text", "")))
        return sw_dialect_oom(err);
    return SW_OK;
fail:
    return SW_EINVAL;
}

/* The name of the function tool call `id` called, from the assistant
 * messages before message `upto`; NULL when none did. */
static const char *call_name(const json_t *msgs, size_t upto, const char *id)
{
    for (size_t i = upto; id && i-- > 0;) {
        size_t j;
        json_t *call;
        json_array_foreach(json_object_get(json_array_get(msgs, i), "tool_calls"), j, call) {
            const char *cid = json_string_value(json_object_get(call, "id"));
            if (cid && !strcmp(cid, id))
                return json_string_value(json_object_get(json_object_get(call, "function"), "name"));
        }
    }
    return NULL;
}

/* A tool message as a functionResponse part of a user content: its text as
 * the response object when it is one, else {"content": text}. */
static int tool_response(json_t *contents, const json_t *msgs, size_t i, const char *p,
                         const char *pc, struct sw_request_error *err)
{
    const json_t *m = json_array_get(msgs, i);
    const char *id = json_string_value(json_object_get(m, "tool_call_id"));
    const char *name = call_name(msgs, i, id);
    if (!name) {
        char pi[176];
        snprintf(pi, sizeof pi, "%s.tool_call_id", p);
        BAD(pi, "%s: answers no tool call of an earlier assistant message (Gemini names a "
                "function response after its function).", pi);
    }
    long bad;
    char *s = sw_dialect_joined_text(json_object_get(m, "content"), &bad);
    if (!s)
        BAD(pc, "%s: a tool message can be translated only as text.", pc);
    json_t *resp = json_loads(s, JSON_REJECT_DUPLICATES, NULL);
    if (!json_is_object(resp)) {
        json_decref(resp);
        resp = json_pack("{s:s}", "content", s);
    }
    free(s);
    json_t *parts = open_content(contents, "user");
    json_t *fr = resp ? json_pack("{s:s, s:o}", "name", name, "response", resp) : NULL;
    if (fr && id)
        json_object_set_new(fr, "id", json_string(id));
    json_t *g = fr ? json_pack("{s:o}", "functionResponse", fr) : NULL;
    if (!parts || !g || json_array_append_new(parts, g))
        return sw_dialect_oom(err);
    return SW_OK;
fail:
    return SW_EINVAL;
}

static int system_text(struct sw_buf *sys, const json_t *c, const char *pc,
                       struct sw_request_error *err)
{
    long bad;
    char *s = sw_dialect_joined_text(c, &bad);
    if (!s)
        BAD(pc, "%s: a system message can be translated only as text.", pc);
    int e = (sys->len && sw_buf_append(sys, "\n\n", 2)) || sw_buf_append_str(sys, s);
    free(s);
    return e ? sw_dialect_oom(err) : SW_OK;
fail:
    return SW_EINVAL;
}

static int message_to_gemini(json_t *contents, struct sw_buf *sys, const json_t *msgs, size_t i,
                             struct sw_request_error *err)
{
    const json_t *m = json_array_get(msgs, i);
    char p[96], pc[112];
    snprintf(p, sizeof p, "messages[%zu]", i);
    snprintf(pc, sizeof pc, "%s.content", p);
    const char *role = json_string_value(json_object_get(m, "role"));
    json_t *c = json_object_get(m, "content");
    if (!role)
        role = "";
    if (!strcmp(role, "system") || !strcmp(role, "developer"))
        return system_text(sys, c, pc, err);
    if (!strcmp(role, "user")) {
        json_t *parts = open_content(contents, "user");
        if (!parts)
            return sw_dialect_oom(err);
        return content_parts(parts, c, pc, true, err) ? failed(err) : SW_OK;
    }
    if (!strcmp(role, "assistant"))
        return assistant_content(contents, m, p, pc, err);
    if (!strcmp(role, "tool"))
        return tool_response(contents, msgs, i, p, pc, err);
    char pr[112];
    snprintf(pr, sizeof pr, "%s.role", p);
    BAD(pr, "%s: '%s' messages cannot be translated to Gemini.", pr, role);
fail:
    return SW_EINVAL;
}

static int contents_from_openai(json_t *o, const json_t *in, struct sw_request_error *err)
{
    json_t *contents = json_array();
    struct sw_buf sys;
    sw_buf_init(&sys, (size_t)1 << 31);
    if (!contents || json_object_set_new(o, "contents", contents))
        return sw_dialect_oom(err);
    const json_t *msgs = json_object_get(in, "messages");
    int rc = SW_OK;
    for (size_t i = 0; i < json_array_size(msgs) && !rc; i++)
        rc = message_to_gemini(contents, &sys, msgs, i, err);
    for (size_t k = json_array_size(contents); !rc && k-- > 0;)
        if (json_array_size(json_object_get(json_array_get(contents, k), "parts")) == 0)
            json_array_remove(contents, k);
    if (!rc && json_array_size(contents) == 0) {
        sw_request_error_set(err, 400, "invalid_request_error", "invalid_value", "messages",
                             "messages: no message with content; Gemini needs at least one.");
        rc = SW_EINVAL;
    }
    if (!rc && sys.len &&
        json_object_set_new(o, "systemInstruction", json_pack("{s:[{s:s}]}", "parts", "text",
                                                              sys.ptr)))
        rc = sw_dialect_oom(err);
    sw_buf_free(&sys);
    return rc;
}

/* ---- OpenAI -> Gemini: the rest ---- */

static int check_top_level(const json_t *in, struct sw_request_error *err)
{
    static const char *const known[] = {
        "model", "messages", "max_tokens", "max_completion_tokens", "stop", "temperature",
        "top_p", "tools", "tool_choice", "parallel_tool_calls", "user", "stream",
        "stream_options", "n", "metadata", "response_format", "seed", "presence_penalty",
        "frequency_penalty"};
    if (sw_dialect_known_members(in, known, sizeof known / sizeof known[0],
                                 "Gemini's generateContent API", err))
        return SW_EINVAL;
    json_t *n = json_object_get(in, "n");
    if (json_is_integer(n) && json_integer_value(n) != 1)
        NOPE("n", "n: Gemini is asked for one candidate here.");
    json_t *md = json_object_get(in, "metadata");
    if (json_is_object(md) && json_object_size(md))
        NOPE("metadata", "metadata: has no counterpart in Gemini's generateContent API.");
    return SW_OK;
fail:
    return SW_EINVAL;
}

/* generationConfig: output limit, sampling, stops, the answer's format. */
static int generation_config(json_t *o, const json_t *in, long default_max_tokens,
                             struct sw_request_error *err)
{
    json_t *gc = json_object();
    if (!gc || json_object_set_new(o, "generationConfig", gc))
        return sw_dialect_oom(err);
    json_t *mt = json_object_get(in, "max_completion_tokens");
    if (!json_is_integer(mt))
        mt = json_object_get(in, "max_tokens");
    if (json_is_integer(mt))
        json_object_set(gc, "maxOutputTokens", mt);
    else if (default_max_tokens > 0)
        json_object_set_new(gc, "maxOutputTokens", json_integer(default_max_tokens));
    static const char *const nums[][2] = {{"temperature", "temperature"}, {"top_p", "topP"},
                                          {"seed", "seed"}, {"presence_penalty", "presencePenalty"},
                                          {"frequency_penalty", "frequencyPenalty"}};
    for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++) {
        json_t *x = json_object_get(in, nums[i][0]);
        if (sw_dialect_is_num(x))
            json_object_set(gc, nums[i][1], x);
    }
    json_t *stop = json_object_get(in, "stop");
    if (json_is_string(stop))
        json_object_set_new(gc, "stopSequences", json_pack("[O]", stop));
    else if (json_is_array(stop) && json_array_size(stop))
        json_object_set(gc, "stopSequences", stop);
    json_t *rf = json_object_get(in, "response_format");
    const char *rft = json_string_value(json_object_get(rf, "type"));
    json_t *schema = json_object_get(json_object_get(rf, "json_schema"), "schema");
    if (rft && (!strcmp(rft, "json_object") || !strcmp(rft, "json_schema")))
        json_object_set_new(gc, "responseMimeType", json_string("application/json"));
    if (rft && !strcmp(rft, "json_schema") && json_is_object(schema)) {
        json_t *g = sw_gem_schema(schema);
        if (!g || json_object_set_new(gc, "responseSchema", g))
            return sw_dialect_oom(err);
    }
    return SW_OK;
}

static int tools_from_openai(json_t *o, const json_t *in, struct sw_request_error *err)
{
    json_t *tools = json_object_get(in, "tools");
    if (!json_is_array(tools) || !json_array_size(tools))
        return SW_OK;
    json_t *decls = json_array();
    if (!decls || json_object_set_new(o, "tools", json_pack("[{s:o}]", "functionDeclarations", decls)))
        return sw_dialect_oom(err);
    size_t i;
    json_t *t;
    json_array_foreach(tools, i, t) {
        json_t *fn = json_object_get(t, "function");
        if (strcmp(sw_dialect_type_of(t), "function") || !json_is_object(fn)) {
            char p[64];
            snprintf(p, sizeof p, "tools[%zu].type", i);
            NOPE(p, "%s: only function tools can be translated to Gemini.", p);
        }
        json_t *d = json_pack("{s:O}", "name", json_object_get(fn, "name"));
        json_t *params = json_object_get(fn, "parameters");
        if (d && json_is_string(json_object_get(fn, "description")))
            json_object_set(d, "description", json_object_get(fn, "description"));
        if (d && json_is_object(params) && json_object_size(params) &&
            json_object_set_new(d, "parameters", sw_gem_schema(params)))
            json_decref(d), d = NULL;
        if (!d || json_array_append_new(decls, d))
            return sw_dialect_oom(err);
    }
    json_t *tc = json_object_get(in, "tool_choice");
    const char *mode = NULL;
    const char *only = json_string_value(json_object_get(json_object_get(tc, "function"), "name"));
    if (json_is_string(tc))
        mode = !strcmp(json_string_value(tc), "required") ? "ANY"
               : !strcmp(json_string_value(tc), "none")   ? "NONE"
                                                          : "AUTO";
    else if (only)
        mode = "ANY";
    if (mode) {
        json_t *fcc = json_pack("{s:s}", "mode", mode);
        if (fcc && only)
            json_object_set_new(fcc, "allowedFunctionNames", json_pack("[s]", only));
        if (!fcc || json_object_set_new(o, "toolConfig", json_pack("{s:o}", "functionCallingConfig", fcc)))
            return sw_dialect_oom(err);
    }
    return SW_OK;
fail:
    return SW_EINVAL;
}

json_t *sw_gem_req_from_openai(const json_t *in, long default_max_tokens,
                               struct sw_request_error *err)
{
    json_t *o = json_object();
    if (!o) {
        sw_dialect_oom(err);
        return NULL;
    }
    if (check_top_level(in, err) || contents_from_openai(o, in, err) ||
        generation_config(o, in, default_max_tokens, err) || tools_from_openai(o, in, err)) {
        json_decref(o);
        return NULL;
    }
    return o;
}
