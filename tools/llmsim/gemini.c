#include "gemini.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/json.h"
#include "model.h"

/* ---- Routes ---- */

/* The model and method after "models/" (p points there). */
static int model_method(const char *p, char *model, size_t cap, bool *stream)
{
    const char *colon = strchr(p, ':');
    if (!colon || colon == p || (size_t)(colon - p) >= cap || memchr(p, '/', (size_t)(colon - p)))
        return -1;
    memcpy(model, p, (size_t)(colon - p));
    model[colon - p] = '\0';
    if (!strcmp(colon + 1, "generateContent"))
        *stream = false;
    else if (!strcmp(colon + 1, "streamGenerateContent"))
        *stream = true;
    else
        return -1;
    return 0;
}

int sw_llmsim_gem_route(const char *path, char *model, size_t cap, bool *stream, bool *vertex)
{
    static const char *const versions[] = {"/v1beta/", "/v1/", "/v1alpha/", "/v1beta1/"};
    for (size_t i = 0; i < sizeof versions / sizeof versions[0]; i++) {
        size_t n = strlen(versions[i]);
        if (strncmp(path, versions[i], n))
            continue;
        const char *p = path + n;
        if (!strncmp(p, "models/", 7)) {
            *vertex = false;
            return model_method(p + 7, model, cap, stream);
        }
        if (strncmp(p, "projects/", 9))
            return -1;
        const char *loc = strstr(p, "/locations/");
        const char *pub = loc ? strstr(loc + 11, "/publishers/google/models/") : NULL;
        if (!loc || !pub || loc == p + 9 || pub == loc + 11)
            return -1;
        *vertex = true;
        return model_method(pub + 26, model, cap, stream);
    }
    return -1;
}

int sw_llmsim_vertex_anthropic_route(const char *path, char *model, size_t cap, bool *stream)
{
    if (strncmp(path, "/v1/projects/", 13))
        return -1;
    const char *loc = strstr(path + 13, "/locations/");
    const char *pub = loc ? strstr(loc + 11, "/publishers/anthropic/models/") : NULL;
    if (!loc || !pub || loc == path + 13 || pub == loc + 11)
        return -1;
    const char *p = pub + 29, *colon = strchr(p, ':');
    if (!colon || colon == p || (size_t)(colon - p) >= cap || memchr(p, '/', (size_t)(colon - p)))
        return -1;
    if (!strcmp(colon + 1, "rawPredict"))
        *stream = false;
    else if (!strcmp(colon + 1, "streamRawPredict"))
        *stream = true;
    else
        return -1;
    memcpy(model, p, (size_t)(colon - p));
    model[colon - p] = '\0';
    return 0;
}

/* ---- Requests ---- */

static int fail(char *err, size_t errlen, const char *msg)
{
    snprintf(err, errlen, "%s", msg);
    return SW_EINVAL;
}

/* The text of one content's parts into out (when given), counted in *bytes
 * and *pieces; *fresp: the last functionResponse's response. */
static int parts_text(const json_t *parts, struct sw_buf *out, size_t *bytes, size_t *pieces,
                      const json_t **fresp, char *err, size_t errlen)
{
    size_t i;
    json_t *p;
    if (!json_is_array(parts))
        return fail(err, errlen, "contents[].parts: must be an array");
    json_array_foreach(parts, i, p) {
        json_t *t = json_object_get(p, "text");
        if (!json_is_object(p))
            return fail(err, errlen, "contents[].parts[]: must be an object");
        if (json_is_string(t)) {
            const char *s = json_string_value(t);
            size_t n = json_string_length(t);
            *bytes += n;
            *pieces += sw_llmsim_text_pieces(s, n);
            if (out && sw_buf_append(out, s, n))
                return fail(err, errlen, "contents: the text is too long to echo");
        } else if (json_is_object(json_object_get(p, "functionResponse"))) {
            *fresp = json_object_get(json_object_get(p, "functionResponse"), "response");
        } else if (!json_is_object(json_object_get(p, "functionCall")) &&
                   !json_is_object(json_object_get(p, "inlineData")) &&
                   !json_is_object(json_object_get(p, "fileData"))) {
            return fail(err, errlen, "contents[].parts[]: a part needs text, inlineData, "
                                     "fileData, functionCall or functionResponse");
        }
    }
    return SW_OK;
}

/* toolConfig ANY naming one function: that tool is forced. */
static void forced_tool(const json_t *root, struct sw_llmsim_chat *c)
{
    json_t *fcc = json_object_get(json_object_get(root, "toolConfig"), "functionCallingConfig");
    const char *mode = json_string_value(json_object_get(fcc, "mode"));
    json_t *names = json_object_get(fcc, "allowedFunctionNames");
    const char *one = json_array_size(names) == 1 ? json_string_value(json_array_get(names, 0))
                                                  : NULL;
    if (mode && !strcmp(mode, "ANY") && one && strlen(one) < sizeof c->forced_tool)
        snprintf(c->forced_tool, sizeof c->forced_tool, "%s", one);
}

int sw_llmsim_gem_parse(json_t *root, struct sw_llmsim_chat *c, char *err, size_t errlen)
{
    memset(c, 0, sizeof *c);
    c->max_tokens = -1;
    sw_buf_init(&c->last_user, SW_LLMSIM_ECHO_MAX);
    if (!json_is_object(root))
        return fail(err, errlen, "the request body must be a JSON object");
    json_t *contents = json_object_get(root, "contents");
    if (!json_is_array(contents) || !json_array_size(contents))
        return fail(err, errlen, "contents is not specified");
    size_t bytes = 0, pieces = 0, i;
    json_t *ct;
    const json_t *fresp = NULL;
    json_t *si = json_object_get(root, "systemInstruction");
    if (si && parts_text(json_object_get(si, "parts"), NULL, &bytes, &pieces, &fresp, err, errlen))
        return SW_EINVAL;
    c->n_messages = si ? 1 : 0;
    json_array_foreach(contents, i, ct) {
        const char *role = json_string_value(json_object_get(ct, "role"));
        if (role && strcmp(role, "user") && strcmp(role, "model") && strcmp(role, "function"))
            return fail(err, errlen, "contents[].role: must be user or model");
        bool user = !role || strcmp(role, "model");
        const json_t *fr = NULL;
        size_t had = bytes;
        struct sw_buf text;
        sw_buf_init(&text, SW_LLMSIM_ECHO_MAX);
        int perr = parts_text(json_object_get(ct, "parts"), user ? &text : NULL, &bytes, &pieces,
                              &fr, err, errlen);
        /* a user turn of function responses only answers the call: the
         * user's words before it stay the echo source */
        if (!perr && user && (bytes > had || !fr)) {
            sw_buf_free(&c->last_user);
            c->last_user = text;
        } else {
            sw_buf_free(&text);
        }
        if (perr)
            return SW_EINVAL;
        fresp = user ? fr : NULL;
        c->n_messages++;
    }
    c->text_bytes = bytes;
    c->text_pieces = pieces;
    c->prompt_tokens = sw_llmsim_prompt_tokens(bytes, c->n_messages);
    c->prompt_tokens_pieces = (int)pieces + 4 * c->n_messages;
    json_t *gc = json_object_get(root, "generationConfig");
    json_t *mt = json_object_get(gc, "maxOutputTokens");
    if (mt && (!json_is_integer(mt) || json_integer_value(mt) < 1))
        return fail(err, errlen, "generationConfig.maxOutputTokens: must be a positive integer");
    if (mt)
        c->max_tokens = (int)(json_integer_value(mt) > 1000000 ? 1000000 : json_integer_value(mt));
    const char *mime = json_string_value(json_object_get(gc, "responseMimeType"));
    c->wants_json = mime && !strcmp(mime, "application/json");
    forced_tool(root, c);
    if (c->forced_tool[0])
        c->wants_json = true;
    json_t *tools = json_object_get(root, "tools");
    char *out = fresp ? json_dumps(fresp, JSON_COMPACT) : NULL;
    json_t *tool_out = out ? json_string(out) : NULL;
    free(out);
    int rc = sw_llmsim_chat_script(c, json_array_size(tools) > 0, tool_out);
    json_decref(tool_out);
    if (rc)
        return fail(err, errlen, "contents: the tool output is too long to echo");
    return SW_OK;
}

/* ---- Answers ---- */

static int str(struct sw_buf *b, const char *s)
{
    return sw_buf_append(b, s, strlen(s));
}

static int usage(struct sw_buf *b, int prompt, int output)
{
    return sw_buf_appendf(b,
                          "\"usageMetadata\":{\"promptTokenCount\":%d,\"candidatesTokenCount\":%d,"
                          "\"totalTokenCount\":%d,\"promptTokensDetails\":[{\"modality\":\"TEXT\","
                          "\"tokenCount\":%d}]}",
                          prompt, output, prompt + output, prompt);
}

static int tail(struct sw_buf *b, const struct sw_llmsim_reply *r)
{
    int err = str(b, ",\"modelVersion\":\"");
    if (!err)
        err = sw_json_escape(b, r->model, strlen(r->model), 0);
    if (!err)
        err = sw_buf_appendf(b, "\",\"responseId\":\"%s\"}", r->id);
    return err;
}

/* A functionCall part: the args the echo text parses to (an object), else
 * {"text": ...}. */
static int call_part(struct sw_buf *b, const struct sw_llmsim_reply *r)
{
    json_t *args = json_loadb(r->tool_args ? r->tool_args : "", r->tool_args_len, 0, NULL);
    if (!json_is_object(args)) {
        json_decref(args);
        args = json_pack("{s:s%}", "text", r->tool_args ? r->tool_args : "", r->tool_args_len);
    }
    json_t *p = json_pack("{s:{s:s, s:o}}", "functionCall", "name", r->tool, "args", args);
    char *s = p ? json_dumps(p, JSON_COMPACT) : NULL;
    json_decref(p);
    int err = s ? str(b, s) : SW_ENOMEM;
    free(s);
    return err;
}

static const char *finish_word(const struct sw_llmsim_reply *r, bool length)
{
    return r->block == 1 ? "SAFETY" : length ? "MAX_TOKENS" : "STOP";
}

static const char safety_ratings[] =
    ",\"safetyRatings\":[{\"category\":\"HARM_CATEGORY_DANGEROUS_CONTENT\","
    "\"probability\":\"HIGH\",\"blocked\":true}]";

int sw_llmsim_gem_stream_start(struct sw_buf *b, const struct sw_llmsim_reply *r)
{
    if (!r->tool[0] || r->block)
        return SW_OK;
    int err = str(b, "data: {\"candidates\":[{\"content\":{\"parts\":[");
    if (!err)
        err = call_part(b, r);
    if (!err)
        err = str(b, "],\"role\":\"model\"},\"index\":0}],");
    if (!err)
        err = usage(b, r->prompt_tokens, 0);
    if (!err)
        err = tail(b, r);
    return err ? err : str(b, "\r\n\r\n");
}

int sw_llmsim_gem_stream_token(struct sw_buf *b, const struct sw_llmsim_reply *r,
                               struct sw_str text, enum sw_llmsim_malformed malformed)
{
    if (r->tool[0] || r->block)
        return SW_OK; /* the call went whole; a blocked answer has no text */
    int err = str(b, "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"");
    if (!err && malformed == SW_LLMSIM_MALFORMED_SSE)
        err = str(b, "\r\n");
    if (!err)
        err = sw_json_escape(b, text.ptr, text.len, 0);
    if (!err && malformed == SW_LLMSIM_MALFORMED_JSON)
        return str(b, "\",\r\n\r\n");
    if (!err)
        err = str(b, "\"}],\"role\":\"model\"},\"index\":0}],");
    if (!err)
        err = usage(b, r->prompt_tokens, 0);
    if (!err)
        err = tail(b, r);
    return err ? err : str(b, "\r\n\r\n");
}

int sw_llmsim_gem_stream_end(struct sw_buf *b, const struct sw_llmsim_reply *r, int output_tokens,
                             bool length)
{
    int err;
    if (r->block == 2) {
        err = str(b, "data: {\"promptFeedback\":{\"blockReason\":\"SAFETY\"},");
    } else {
        err = sw_buf_appendf(b, "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"\"}],"
                                "\"role\":\"model\"},\"finishReason\":\"%s\"%s,\"index\":0}],",
                             finish_word(r, length), r->block == 1 ? safety_ratings : "");
    }
    if (!err)
        err = usage(b, r->prompt_tokens, r->block ? 0 : output_tokens);
    if (!err)
        err = tail(b, r);
    return err ? err : str(b, "\r\n\r\n");
}

int sw_llmsim_gem_stream_error(struct sw_buf *b, const struct sw_llmsim_reply *r)
{
    (void)r;
    return str(b, "data: {\"error\":{\"code\":503,\"message\":\"The model is overloaded. "
                  "Please try again later.\",\"status\":\"UNAVAILABLE\"}}\r\n\r\n");
}

int sw_llmsim_gem_message(struct sw_buf *b, const struct sw_llmsim_reply *r, const char *text,
                          size_t len, int output_tokens, bool length,
                          enum sw_llmsim_malformed malformed)
{
    int err;
    if (r->block == 2) {
        err = str(b, "{\"promptFeedback\":{\"blockReason\":\"SAFETY\"},");
    } else if (r->block == 1) {
        err = sw_buf_appendf(b, "{\"candidates\":[{\"finishReason\":\"SAFETY\"%s,\"index\":0}],",
                             safety_ratings);
    } else {
        err = str(b, "{\"candidates\":[{\"content\":{\"parts\":[");
        if (!err && r->tool[0]) {
            err = call_part(b, r);
        } else if (!err) {
            err = str(b, "{\"text\":\"");
            if (!err)
                err = sw_json_escape(b, text, len, 0);
            if (!err && malformed)
                return str(b, "\"}],");
            if (!err)
                err = str(b, "\"}");
        }
        if (!err)
            err = sw_buf_appendf(b, "],\"role\":\"model\"},\"finishReason\":\"%s\",\"index\":0}],",
                                 finish_word(r, length));
    }
    if (!err)
        err = usage(b, r->prompt_tokens, r->block ? 0 : output_tokens);
    return err ? err : tail(b, r);
}

int sw_llmsim_gem_error(struct sw_buf *b, int status, const char *message)
{
    const char *word = status == 400   ? "INVALID_ARGUMENT"
                       : status == 401 ? "UNAUTHENTICATED"
                       : status == 403 ? "PERMISSION_DENIED"
                       : status == 404 ? "NOT_FOUND"
                       : status == 429 ? "RESOURCE_EXHAUSTED"
                       : status == 503 ? "UNAVAILABLE"
                       : status == 504 ? "DEADLINE_EXCEEDED"
                       : status >= 500 ? "INTERNAL"
                                       : "FAILED_PRECONDITION";
    int err = sw_buf_appendf(b, "{\"error\":{\"code\":%d,\"message\":\"", status);
    if (!err)
        err = sw_json_escape(b, message, strlen(message), 0);
    if (!err)
        err = sw_buf_appendf(b, "\",\"status\":\"%s\"}}", word);
    return err;
}
