#include "dialect/responses_req.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/err.h"
#include "common/jmemo.h"
#include "dialect/req_util.h"

/* Responses requests as chat requests (responses_req.h). Every function
 * that can fail fills *err and returns SW_EINVAL or SW_ENOMEM (via the
 * BAD / NOPE macros of req_util.h and their `fail` label). */

static int rc_of(const struct sw_request_error *err)
{
    return err->status == 500 ? SW_ENOMEM : SW_EINVAL;
}

/* Appends v (taken) to the array a; SW_ENOMEM with *err set on failure. */
static int push(json_t *a, json_t *v, struct sw_request_error *err)
{
    if (!v || json_array_append_new(a, v))
        return sw_dialect_oom(err);
    return SW_OK;
}

static bool is(const char *a, const char *b)
{
    return a && !strcmp(a, b);
}

/* ---- Content parts ---- */

/* input_image as a chat image_url part; NULL with *err set. */
static json_t *image_part(const json_t *part, const char *p, struct sw_request_error *err)
{
    char q[176];
    const char *url = json_string_value(json_object_get(part, "image_url"));
    if (!url) {
        snprintf(q, sizeof q, "%s.%s", p, json_object_get(part, "file_id") ? "file_id" : "image_url");
        if (json_is_string(json_object_get(part, "file_id")))
            NOPE(q, "%s: an image given by file id cannot be translated (a URL or a data: URL "
                    "can).", q);
        BAD(q, "%s: an input_image needs an image_url string.", q);
    }
    json_t *iu = json_pack("{s:s}", "url", url);
    json_t *d = json_object_get(part, "detail");
    if (iu && json_is_string(d) && !is(json_string_value(d), "original"))
        json_object_set(iu, "detail", d);
    else if (iu && json_is_string(d)) {
        snprintf(q, sizeof q, "%s.detail", p);
        json_decref(iu);
        NOPE(q, "%s: detail 'original' has no chat-completions form (auto, low and high do).", q);
    }
    json_t *o = iu ? json_pack("{s:s, s:o}", "type", "image_url", "image_url", iu) : NULL;
    if (!o)
        sw_dialect_oom(err);
    return o;
fail:
    return NULL;
}

/* input_file as a chat file part (file_data with filename, or file_id). */
static json_t *file_part(const json_t *part, const char *p, struct sw_request_error *err)
{
    char q[176];
    if (json_object_get(part, "file_url")) {
        snprintf(q, sizeof q, "%s.file_url", p);
        NOPE(q, "%s: a file given by URL cannot be translated (file_data or file_id can).", q);
    }
    json_t *f = json_object();
    if (!f)
        goto nomem;
    static const char *const keys[] = {"file_data", "file_id", "filename"};
    for (size_t i = 0; i < 3; i++) {
        json_t *v = json_object_get(part, keys[i]);
        if (v && !json_is_null(v) && !json_is_string(v)) {
            json_decref(f);
            snprintf(q, sizeof q, "%s.%s", p, keys[i]);
            BAD(q, "%s: expected a string.", q);
        }
        if (json_is_string(v))
            json_object_set(f, keys[i], v);
    }
    if (!json_object_get(f, "file_data") && !json_object_get(f, "file_id")) {
        json_decref(f);
        BAD(p, "%s: an input_file needs file_data or file_id.", p);
    }
    json_t *o = json_pack("{s:s, s:o}", "type", "file", "file", f);
    if (o)
        return o;
nomem:
    sw_dialect_oom(err);
fail:
    return NULL;
}

/* One part of a message's content (path p) as a chat part. System and
 * developer messages take text only (as in chat). */
static json_t *chat_part(const json_t *part, const char *p, bool text_only,
                         struct sw_request_error *err)
{
    char q[176];
    const char *t = sw_dialect_type_of(part);
    if (!json_is_object(part))
        BAD(p, "%s: expected a content part object.", p);
    if (is(t, "input_text") || is(t, "output_text") || is(t, "refusal")) {
        const char *key = is(t, "refusal") ? "refusal" : "text";
        json_t *tx = json_object_get(part, key);
        snprintf(q, sizeof q, "%s.%s", p, key);
        if (!json_is_string(tx))
            BAD(q, "%s: expected a string.", q);
        json_t *o = SW_DIALECT_OBJECT({"type", sw_dialect_str(key)}, {key, json_incref(tx)});
        if (!o)
            sw_dialect_oom(err);
        return o;
    }
    snprintf(q, sizeof q, "%s.type", p);
    if (text_only && (is(t, "input_image") || is(t, "input_file")))
        NOPE(q, "%s: a system or developer message can carry only text in chat completions.", q);
    if (is(t, "input_image"))
        return image_part(part, p, err);
    if (is(t, "input_file"))
        return file_part(part, p, err);
    NOPE(q, "%s: a '%s' part cannot be translated to chat completions.", q,
         t[0] ? t : "(missing)");
fail:
    return NULL;
}

/* The chat content of a message: the string itself, or its parts. An
 * assistant's text parts (output_text) are joined into one string, as every
 * chat backend takes it; a refusal part keeps the parts form. */
static json_t *chat_content(const json_t *c, const char *p, const char *role,
                            struct sw_request_error *err)
{
    if (json_is_string(c))
        return json_incref((json_t *)c);
    if (!json_is_array(c) || !json_array_size(c))
        BAD(p, "%s: expected a string or a non-empty array of content parts.", p);
    bool text_only = is(role, "system") || is(role, "developer") || is(role, "assistant");
    json_t *parts = json_array();
    if (!parts)
        goto nomem;
    size_t j;
    json_t *part;
    bool plain = is(role, "assistant");
    json_array_foreach(c, j, part) {
        char q[160];
        snprintf(q, sizeof q, "%s[%zu]", p, j);
        json_t *o = chat_part(part, q, text_only, err);
        if (!o || push(parts, o, err)) {
            json_decref(parts);
            return NULL;
        }
        plain &= is(sw_dialect_type_of(o), "text");
    }
    if (!plain)
        return parts;
    struct sw_buf b;
    sw_buf_init(&b, (size_t)1 << 31);
    json_array_foreach(parts, j, part) {
        if (sw_buf_append_str(&b, json_string_value(json_object_get(part, "text")))) {
            sw_buf_free(&b);
            json_decref(parts);
            goto nomem;
        }
    }
    json_decref(parts);
    /* parsed texts: valid UTF-8 */
    json_t *s = json_stringn_nocheck(b.ptr ? b.ptr : "", b.len);
    sw_buf_free(&b);
    if (!s)
        goto nomem;
    return s;
nomem:
    sw_dialect_oom(err);
fail:
    return NULL;
}

/* ---- Input items ---- */

/* A message item (type "message" or none, with a role). */
static int message_item(json_t *msgs, const json_t *it, const char *p, struct sw_request_error *err)
{
    char q[160];
    const char *role = json_string_value(json_object_get(it, "role"));
    snprintf(q, sizeof q, "%s.role", p);
    if (!role)
        BAD(q, "%s: a message needs a role (user, assistant, system or developer).", q);
    if (!is(role, "user") && !is(role, "assistant") && !is(role, "system") &&
        !is(role, "developer"))
        BAD(q, "%s: '%s' is not a role of the Responses API (user, assistant, system, "
               "developer).", q, role);
    snprintf(q, sizeof q, "%s.content", p);
    json_t *c = chat_content(json_object_get(it, "content"), q, role, err);
    if (!c)
        return rc_of(err);
    return push(msgs,
                SW_DIALECT_OBJECT({"role", json_incref(json_object_get(it, "role"))},
                                  {"content", c}),
                err);
fail:
    return SW_EINVAL;
}

/* A function_call item: a tool call of the assistant message before it when
 * that one is the assistant's (chat puts the calls of one turn in one
 * message), else of a new assistant message. */
static int function_call_item(json_t *msgs, const json_t *it, const char *p,
                              struct sw_request_error *err)
{
    json_t *cid = json_object_get(it, "call_id"), *name = json_object_get(it, "name"),
           *args = json_object_get(it, "arguments");
    if (!json_is_string(cid) || !json_is_string(name) || !json_is_string(args))
        BAD(p, "%s: a function_call item needs call_id, name and arguments strings.", p);
    json_t *ns = json_object_get(it, "namespace");
    if (ns && !json_is_null(ns)) {
        char q[160];
        snprintf(q, sizeof q, "%s.namespace", p);
        NOPE(q, "%s: namespaced function calls cannot be translated.", q);
    }
    size_t at = json_array_size(msgs) - 1;
    json_t *last = json_array_get(msgs, at);
    if (last && last->refcount > 1 && is(json_string_value(json_object_get(last, "role")), "assistant")) {
        /* shared (kept as an earlier item's translation): the calls go on a copy */
        json_t *c = json_copy(last), *tc = json_object_get(last, "tool_calls");
        if (!c || (tc && json_object_set_new(c, "tool_calls", json_copy(tc))) ||
            json_array_set_new(msgs, at, c))
            return sw_dialect_oom(err);
        last = c;
    }
    if (!is(json_string_value(json_object_get(last, "role")), "assistant")) {
        last = SW_DIALECT_OBJECT({"role", sw_dialect_str("assistant")}, {"content", json_null()});
        if (push(msgs, last, err))
            return SW_ENOMEM;
    }
    json_t *calls = json_object_get(last, "tool_calls");
    if (!calls) {
        calls = json_array();
        if (!calls || json_object_set_new(last, "tool_calls", calls))
            return sw_dialect_oom(err);
    }
    /* the client's strings shared, not copied */
    json_t *fn = SW_DIALECT_OBJECT({"name", json_incref(name)}, {"arguments", json_incref(args)});
    return push(calls,
                SW_DIALECT_OBJECT({"id", json_incref(cid)}, {"type", sw_dialect_str("function")},
                                  {"function", fn}),
                err);
fail:
    return SW_EINVAL;
}

/* A function_call_output item as a tool message: its output a string, or
 * text parts joined. */
static int call_output_item(json_t *msgs, const json_t *it, const char *p,
                            struct sw_request_error *err)
{
    char q[176];
    json_t *cid = json_object_get(it, "call_id");
    json_t *out = json_object_get(it, "output");
    if (!json_is_string(cid)) {
        snprintf(q, sizeof q, "%s.call_id", p);
        BAD(q, "%s: a function_call_output item needs a call_id string.", q);
    }
    if (!json_is_string(out) && !json_is_array(out)) {
        snprintf(q, sizeof q, "%s.output", p);
        BAD(q, "%s: expected a string or an array of content parts.", q);
    }
    struct sw_buf b;
    sw_buf_init(&b, (size_t)1 << 31);
    json_t *content;
    if (json_is_string(out)) {
        content = json_incref(out); /* the client's text as it is: shared, not copied */
    } else {
        size_t j;
        json_t *part;
        json_array_foreach(out, j, part) {
            json_t *tx = json_object_get(part, "text");
            if (!is(sw_dialect_type_of(part), "input_text") || !json_is_string(tx)) {
                sw_buf_free(&b);
                snprintf(q, sizeof q, "%s.output[%zu]", p, j);
                NOPE(q, "%s: a tool output can be translated only as text (input_text "
                        "parts).", q);
            }
            if (sw_buf_append_str(&b, json_string_value(tx)))
                goto nomem;
        }
        /* parsed texts joined: valid UTF-8 */
        content = json_stringn_nocheck(b.ptr ? b.ptr : "", b.len);
        sw_buf_free(&b);
    }
    return push(msgs,
                SW_DIALECT_OBJECT({"role", sw_dialect_str("tool")},
                                  {"tool_call_id", json_incref(cid)}, {"content", content}),
                err);
nomem:
    sw_buf_free(&b);
    return sw_dialect_oom(err);
fail:
    return SW_EINVAL;
}

/* One input item at path p. */
static int add_item(json_t *msgs, const json_t *it, const char *p, struct sw_request_error *err)
{
    if (!json_is_object(it))
        BAD(p, "%s: expected an input item object.", p);
    json_t *tj = json_object_get(it, "type");
    const char *t = json_string_value(tj);
    if (!tj || is(t, "message"))
        return message_item(msgs, it, p, err);
    if (is(t, "function_call"))
        return function_call_item(msgs, it, p, err);
    if (is(t, "function_call_output"))
        return call_output_item(msgs, it, p, err);
    if (is(t, "reasoning"))
        return SW_OK; /* a model's past reasoning: chat takes none as input, and a model
                       * that reasons does not read its earlier turns' (OpenAI drops them) */
    char q[160];
    snprintf(q, sizeof q, "%s.type", p);
    if (!t)
        BAD(q, "%s: expected a string.", q);
    NOPE(q, "%s: a '%s' item cannot be translated to chat completions (messages, "
            "function_call and function_call_output can).", q, t);
fail:
    return SW_EINVAL;
}

/* The keys of an item's translation kept with it (sw_dialect_derived): a
 * function_call's when it starts an assistant message of its own. */
#define DERIVED_KEY 0x72657332636831ull     /* "res2ch1" */
#define DERIVED_CALL_KEY 0x72657332636332ull  /* "res2cc2" */

static int build_item(json_t *msgs, const json_t *it, const void *path,
                      struct sw_request_error *err)
{
    return add_item(msgs, it, path, err);
}

/* Whether the last message is the assistant's (a function_call joins it). */
static bool after_assistant(const json_t *msgs)
{
    json_t *last = json_array_get(msgs, json_array_size(msgs) - 1);
    return is(json_string_value(json_object_get(last, "role")), "assistant");
}

/* add_item, its translation kept with the item for a message and a call's
 * output (each depends on the item alone), and for a function_call after
 * anything but an assistant message (it starts one of its own); one that
 * joins the assistant message before it is translated each time. */
static int kept_item(json_t *msgs, const json_t *it, const char *p, struct sw_request_error *err)
{
    const char *t = json_string_value(json_object_get(it, "type"));
    if (!json_is_object(it))
        return add_item(msgs, it, p, err);
    if (is(t, "message") || is(t, "function_call_output") || !json_object_get(it, "type"))
        return sw_dialect_derived(msgs, it, DERIVED_KEY, build_item, p, err);
    if (is(t, "function_call") && !after_assistant(msgs))
        return sw_dialect_derived(msgs, it, DERIVED_CALL_KEY, build_item, p, err);
    return add_item(msgs, it, p, err);
}

/* kept_item for an item whose translation is kept and applies here (a
 * function_call's only where it starts an assistant message): true, the
 * translation appended (*rc), without the item's type looked up (an
 * agent's resent items; the key says which kind it was kept as). */
static bool kept_hit(json_t *msgs, const json_t *it, int *rc, struct sw_request_error *err)
{
    uint64_t key;
    json_t *d = sw_jmemo_derived_get_any(it, &key);
    bool use = d && (key == DERIVED_KEY || (key == DERIVED_CALL_KEY && !after_assistant(msgs)));
    if (use)
        *rc = json_array_extend(msgs, d) ? sw_dialect_oom(err) : SW_OK;
    json_decref(d);
    return use;
}

/* The items and tools a translation left out (skipping), the first one's
 * refusal. */
struct skipped {
    bool any;
    struct sw_request_error first;
};

static void note_skipped(struct skipped *sk, const struct sw_request_error *err)
{
    if (!sk->any) {
        sk->any = true;
        sk->first = *err;
    }
}

/* The items of `items` (a string: one user message) under the path prefix
 * `name`; a prior conversation's items are all named `name` itself. sk:
 * when not NULL, an item of a type chat has no form for is left out and
 * noted there, as if it were removed (an agent's history may hold one per
 * turn), instead of refusing the body. */
static int add_input(json_t *msgs, const json_t *items, const char *name, bool indexed,
                     struct skipped *sk, struct sw_request_error *err)
{
    if (json_is_string(items))
        return push(msgs, SW_DIALECT_OBJECT({"role", sw_dialect_str("user")},
                                            {"content", json_incref((json_t *)items)}),
                    err);
    if (!json_is_array(items))
        BAD(name, "%s: expected a string or an array of input items.", name);
    size_t i;
    json_t *it;
    json_array_foreach(items, i, it) {
        int rc;
        if (kept_hit(msgs, it, &rc, err)) {
            if (rc)
                return rc;
            continue;
        }
        char p[64];
        if (indexed)
            snprintf(p, sizeof p, "%s[%zu]", name, i);
        else
            snprintf(p, sizeof p, "%s", name);
        rc = kept_item(msgs, it, p, err);
        if (rc == SW_EINVAL && sk && indexed && sw_dialect_type_refused(err, p)) {
            note_skipped(sk, err);
            continue;
        }
        if (rc && !indexed && err->status != 500) {
            /* the stored item's own path means nothing to the client */
            snprintf(err->param, sizeof err->param, "%s", name);
        }
        if (rc)
            return rc;
    }
    return SW_OK;
fail:
    return SW_EINVAL;
}

/* ---- Tools, tool choice, text, reasoning ---- */

/* Appends the chat form of tool *(const size_t *)index to list
 * (sw_dialect_build_fn). */
static int add_tool(json_t *list, const json_t *t, const void *index, struct sw_request_error *err)
{
    size_t i = *(const size_t *)index;
    char p[64];
    snprintf(p, sizeof p, "tools[%zu].type", i);
    const char *type = sw_dialect_type_of(t);
    if (!json_is_object(t))
        BAD(p, "%s: expected a tool object.", p);
    if (!is(type, "function"))
        NOPE(p, "%s: a '%s' tool cannot be translated to chat completions (function tools "
                "can).", p, type[0] ? type : "(missing)");
    json_t *name = json_object_get(t, "name");
    if (!json_is_string(name)) {
        snprintf(p, sizeof p, "tools[%zu].name", i);
        BAD(p, "%s: a function tool needs a name string.", p);
    }
    json_t *fn = json_pack("{s:O}", "name", name);
    static const char *const keys[] = {"description", "parameters", "strict"};
    for (size_t k = 0; fn && k < 3; k++) {
        json_t *v = json_object_get(t, keys[k]);
        if (v && !json_is_null(v))
            json_object_set(fn, keys[k], v);
    }
    if (!fn || push(list, json_pack("{s:s, s:o}", "type", "function", "function", fn), err))
        return sw_dialect_oom(err);
    return SW_OK;
fail:
    return SW_EINVAL;
}

/* The key of a tool's chat form kept with it by the parse memo (an agent
 * sends its tools with every turn). */
#define TOOL_KEY 0x72657332746f6f6cull      /* "res2tool" */

/* The tools; sk: when not NULL, a tool of a type chat has no form for (a
 * hosted one, a custom one) is left out and noted there, as an item is. */
static int tools_to_chat(json_t *o, const json_t *tools, struct skipped *sk,
                         struct sw_request_error *err)
{
    if (!json_is_array(tools))
        BAD("tools", "tools: expected an array of tools.");
    json_t *list = json_array();
    if (!list || json_object_set_new(o, "tools", list))
        return sw_dialect_oom(err);
    size_t i;
    json_t *t;
    json_array_foreach(tools, i, t) {
        int rc = sw_dialect_derived(list, t, TOOL_KEY, add_tool, &i, err);
        if (rc == SW_EINVAL && sk) {
            char p[64];
            snprintf(p, sizeof p, "tools[%zu]", i);
            if (sw_dialect_type_refused(err, p)) {
                note_skipped(sk, err);
                continue;
            }
        }
        if (rc)
            return rc;
    }
    if (!json_array_size(list)) /* no tools: chat says so by leaving the field out */
        json_object_del(o, "tools");
    return SW_OK;
fail:
    return SW_EINVAL;
}

static int tool_choice_to_chat(json_t *o, const json_t *tc, struct sw_request_error *err)
{
    const char *s = json_string_value(tc);
    json_t *v = NULL;
    if (s) {
        if (!is(s, "none") && !is(s, "auto") && !is(s, "required"))
            BAD("tool_choice", "tool_choice: '%s' is not none, auto or required.", s);
        v = json_incref((json_t *)tc);
    } else if (json_is_object(tc)) {
        const char *t = sw_dialect_type_of(tc);
        const char *name = json_string_value(json_object_get(tc, "name"));
        if (!is(t, "function"))
            NOPE("tool_choice.type", "tool_choice.type: '%s' cannot be translated (none, auto, "
                                     "required and {type: function} can).", t[0] ? t : "(missing)");
        if (!name)
            BAD("tool_choice.name", "tool_choice.name: a function tool choice needs a name.");
        v = json_pack("{s:s, s:{s:s}}", "type", "function", "function", "name", name);
    } else {
        BAD("tool_choice", "tool_choice: expected a string or an object.");
    }
    if (!v || json_object_set_new(o, "tool_choice", v))
        return sw_dialect_oom(err);
    return SW_OK;
fail:
    return SW_EINVAL;
}

/* text.format -> response_format; text.verbosity -> verbosity. */
static int text_to_chat(json_t *o, const json_t *text, struct sw_request_error *err)
{
    if (!json_is_object(text))
        BAD("text", "text: expected an object.");
    json_t *vb = json_object_get(text, "verbosity");
    if (vb && !json_is_null(vb))
        json_object_set(o, "verbosity", vb);
    json_t *f = json_object_get(text, "format");
    if (!f || json_is_null(f))
        return SW_OK;
    const char *t = sw_dialect_type_of(f);
    json_t *rf;
    if (is(t, "text") || is(t, "json_object")) {
        rf = json_pack("{s:s}", "type", t);
    } else if (is(t, "json_schema")) {
        json_t *name = json_object_get(f, "name"), *schema = json_object_get(f, "schema");
        if (!json_is_string(name))
            BAD("text.format.name", "text.format.name: a json_schema format needs a name.");
        if (!json_is_object(schema))
            BAD("text.format.schema", "text.format.schema: a json_schema format needs a schema "
                                      "object.");
        json_t *js = json_pack("{s:O, s:O}", "name", name, "schema", schema);
        static const char *const keys[] = {"description", "strict"};
        for (size_t k = 0; js && k < 2; k++) {
            json_t *v = json_object_get(f, keys[k]);
            if (v && !json_is_null(v))
                json_object_set(js, keys[k], v);
        }
        rf = js ? json_pack("{s:s, s:o}", "type", "json_schema", "json_schema", js) : NULL;
    } else {
        NOPE("text.format.type", "text.format.type: '%s' cannot be translated (text, "
                                 "json_object and json_schema can).", t[0] ? t : "(missing)");
    }
    if (!rf || json_object_set_new(o, "response_format", rf))
        return sw_dialect_oom(err);
    return SW_OK;
fail:
    return SW_EINVAL;
}

static int reasoning_to_chat(json_t *o, const json_t *r, struct sw_request_error *err)
{
    if (!json_is_object(r))
        BAD("reasoning", "reasoning: expected an object.");
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)r, k, v) {
        char p[128];
        snprintf(p, sizeof p, "reasoning.%.100s", k);
        if (json_is_null(v))
            continue;
        if (!strcmp(k, "effort")) {
            if (!json_is_string(v))
                BAD(p, "%s: expected a string.", p);
            json_object_set(o, "reasoning_effort", v);
        } else if (!strcmp(k, "summary") || !strcmp(k, "generate_summary")) {
            /* "auto" lets the model give no summary, which is what a chat backend gives */
            if (!is(json_string_value(v), "auto"))
                NOPE(p, "%s: a reasoning summary cannot be translated (only \"auto\" can).", p);
        } else {
            NOPE(p, "%s: this reasoning option cannot be translated.", p);
        }
    }
    return SW_OK;
fail:
    return SW_EINVAL;
}

/* ---- The body ---- */

/* Top-level fields: the known ones, each translated below or accepted with
 * its default meaning. */
static int check_fields(const json_t *in, struct sw_request_error *err)
{
    static const char *const known[] = {
        "model", "input", "instructions", "tools", "tool_choice", "text", "max_output_tokens",
        "temperature", "top_p", "reasoning", "metadata", "parallel_tool_calls", "stream",
        "stream_options", "store", "previous_response_id", "user", "safety_identifier",
        "prompt_cache_key", "service_tier", "truncation", "background", "include",
        "client_metadata"};
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)in, k, v) {
        bool ok = false;
        for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
            ok |= !strcmp(k, known[i]);
        char p[128];
        snprintf(p, sizeof p, "%.100s", k);
        if (!ok && !json_is_null(v))
            NOPE(p, "%s: this field cannot be translated to chat completions and is refused "
                    "rather than dropped.", p);
    }
    json_t *tr = json_object_get(in, "truncation");
    if (tr && !json_is_null(tr) && !is(json_string_value(tr), "disabled"))
        NOPE("truncation", "truncation: only \"disabled\" can be translated.");
    json_t *bg = json_object_get(in, "background");
    if (bg && !json_is_null(bg) && !json_is_false(bg))
        NOPE("background", "background: background responses cannot be translated.");
    json_t *inc = json_object_get(in, "include");
    size_t i;
    json_array_foreach(inc, i, v) {
        if (!is(json_string_value(v), "reasoning.encrypted_content")) {
            char p[64];
            snprintf(p, sizeof p, "include[%zu]", i);
            NOPE(p, "%s: this include cannot be translated (reasoning.encrypted_content can: a "
                    "chat backend makes no reasoning items).", p);
        }
    }
    if (inc && !json_is_null(inc) && !json_is_array(inc))
        BAD("include", "include: expected an array of strings.");
    /* the client's own ids for the server (Codex sends its session's): never
     * model input, so a chat backend has nothing to be told of them */
    json_t *cm = json_object_get(in, "client_metadata");
    if (cm && !json_is_null(cm) && !json_is_object(cm))
        BAD("client_metadata", "client_metadata: expected an object.");
    return SW_OK;
fail:
    return SW_EINVAL;
}

/* The scalars: copied, renamed or checked. */
static int scalars_to_chat(json_t *o, const json_t *in, struct sw_request_error *err)
{
    json_t *mot = json_object_get(in, "max_output_tokens");
    if (mot && !json_is_null(mot)) {
        if (!json_is_integer(mot) || json_integer_value(mot) < 1 ||
            json_integer_value(mot) > SW_REQUEST_MAX_TOKENS)
            BAD("max_output_tokens", "max_output_tokens: an integer from 1 to %ld is required.",
                SW_REQUEST_MAX_TOKENS);
        json_object_set(o, "max_completion_tokens", mot);
    }
    static const char *const copy[] = {"temperature", "top_p", "metadata", "parallel_tool_calls",
                                       "user", "safety_identifier", "prompt_cache_key",
                                       "service_tier"};
    for (size_t i = 0; i < sizeof copy / sizeof copy[0]; i++) {
        json_t *v = json_object_get(in, copy[i]);
        if (v && !json_is_null(v))
            json_object_set(o, copy[i], v);
    }
    json_t *st = json_object_get(in, "stream");
    if (st && !json_is_null(st) && !json_is_boolean(st))
        BAD("stream", "stream: expected a boolean.");
    json_t *so = json_object_get(in, "stream_options");
    if (so && !json_is_null(so)) {
        if (!json_is_true(st))
            BAD("stream_options", "stream_options: only with stream: true.");
        const char *k;
        json_t *v;
        json_object_foreach(so, k, v) {
            char p[128];
            snprintf(p, sizeof p, "stream_options.%.90s", k);
            if (strcmp(k, "include_obfuscation"))
                NOPE(p, "%s: this stream option cannot be translated.", p);
        }
    }
    if (json_is_true(st)) {
        json_object_set_new(o, "stream", json_true());
        json_object_set_new(o, "stream_options", json_pack("{s:b}", "include_usage", 1));
    }
    return SW_OK;
fail:
    return SW_EINVAL;
}

static int to_chat(const json_t *in, const json_t *prior, json_t **out, struct skipped *sk,
                   struct sw_request_error *err)
{
    *out = NULL;
    json_t *o = NULL;
    if (!json_is_object(in))
        BAD(NULL, "The request body must be a JSON object.");
    if (check_fields(in, err))
        return SW_EINVAL;
    json_t *model = json_object_get(in, "model");
    if (!json_is_string(model) || !json_string_length(model))
        BAD("model", "model: a non-empty string is required.");
    json_t *input = json_object_get(in, "input");
    if (!input || json_is_null(input))
        BAD("input", "input: a string or an array of input items is required.");
    o = json_pack("{s:O, s:[]}", "model", model, "messages");
    if (!o)
        return sw_dialect_oom(err);
    json_t *msgs = json_object_get(o, "messages");
    json_t *ins = json_object_get(in, "instructions");
    if (ins && !json_is_null(ins) && !json_is_string(ins))
        BAD("instructions", "instructions: expected a string.");
    if (json_is_string(ins) && push(msgs, json_pack("{s:s, s:O}", "role", "system", "content", ins), err))
        goto fail_rc;
    if (prior && add_input(msgs, prior, "previous_response_id", false, NULL, err))
        goto fail_rc;
    if (add_input(msgs, input, "input", true, sk, err))
        goto fail_rc;
    if (!json_array_size(msgs))
        BAD("input", "input: nothing to send.");
    json_t *v = json_object_get(in, "tools");
    if (v && !json_is_null(v) && tools_to_chat(o, v, sk, err))
        goto fail_rc;
    v = json_object_get(in, "tool_choice");
    if (v && !json_is_null(v) && tool_choice_to_chat(o, v, err))
        goto fail_rc;
    v = json_object_get(in, "text");
    if (v && !json_is_null(v) && text_to_chat(o, v, err))
        goto fail_rc;
    v = json_object_get(in, "reasoning");
    if (v && !json_is_null(v) && reasoning_to_chat(o, v, err))
        goto fail_rc;
    if (scalars_to_chat(o, in, err))
        goto fail_rc;
    *out = o;
    return SW_OK;
fail_rc:
    json_decref(o);
    return rc_of(err);
fail:
    json_decref(o);
    return SW_EINVAL;
}

int sw_responses_req_to_chat(const json_t *in, const json_t *prior, json_t **out,
                             struct sw_request_error *err)
{
    return to_chat(in, prior, out, NULL, err);
}

/* ---- Parsing a Responses body ---- */

/* Removes from `root` (a shallow copy of the body: its values may be
 * shared) what `param` points at ("a", "a.b", "a[3]",
 * "input[2].content[1].type"): the field or element the path names, where
 * a trailing ".type" names its object and a path into a content part (or a
 * tool output part) names that part; what it edits on the way is copied
 * first. An input item whose content is left empty goes too. Returns false
 * when nothing was removed. */
static bool prune(json_t *root, const char *param)
{
    json_t *parent = NULL, *cur = root, *item = NULL, *part_of = NULL;
    const char *p = param;
    char key[128] = "", prev[128] = "";
    size_t idx = 0, part_idx = 0;
    bool last_is_index = false;
    while (*p) {
        if (*p == '.')
            p++;
        if (*p == '[') {
            char *end;
            idx = strtoul(p + 1, &end, 10);
            if (*end != ']' || !json_is_array(cur))
                return false;
            p = end + 1;
            bool in_input = cur == json_object_get(root, "input");
            if (!in_input && item && !part_of &&
                (!strcmp(prev, "content") || !strcmp(prev, "output"))) {
                part_of = cur;
                part_idx = idx;
            }
            parent = cur;
            cur = sw_dialect_own_element(cur, idx);
            if (in_input)
                item = cur;
            last_is_index = true;
        } else {
            size_t n = strcspn(p, ".[");
            if (n == 0 || n >= sizeof key || !json_is_object(cur))
                return false;
            memcpy(key, p, n);
            key[n] = '\0';
            p += n;
            if (!strcmp(key, "type") && !*p)
                break; /* the object whose type it is */
            memcpy(prev, key, n + 1);
            parent = cur;
            cur = sw_dialect_own_member(cur, key);
            last_is_index = false;
        }
        if (!cur)
            return false;
    }
    if (part_of) {
        parent = part_of;
        idx = part_idx;
        last_is_index = true;
    }
    if (!parent || (last_is_index ? json_array_remove(parent, idx) : json_object_del(parent, key)))
        return false;
    json_t *items = json_object_get(root, "input"), *c = json_object_get(item, "content");
    if (item && json_is_array(c) && !json_array_size(c)) {
        for (size_t i = 0; i < json_array_size(items); i++)
            if (json_array_get(items, i) == item)
                json_array_remove(items, i);
    }
    return true;
}

int sw_responses_request_parse(const char *body, size_t len, const json_t *prior,
                               struct sw_chat_request *req, struct sw_request_error *err)
{
    memset(req, 0, sizeof *req);
    req->allow_cloud = -1;
    int rc;
    json_t *in = sw_request_json_load(body, len, err, &rc);
    if (!in)
        return rc;
    json_t *work = NULL, *chat = NULL;
    struct sw_request_error *first = NULL;
    /* Items and tools of a type chat cannot carry are left out as the
     * translation meets them; the rest, one round per field. The first refusal is the
     * first the translation met. */
    struct skipped sk = {0};
    for (int round = 0; round < 64; round++) {
        rc = to_chat(work ? work : in, prior, &chat, &sk, err);
        if (rc != SW_EINVAL || strcmp(err->code, "untranslatable"))
            break;
        if (!first && !(first = malloc(sizeof *first))) {
            rc = SW_ENOMEM;
            break;
        }
        if (round == 0)
            *first = sk.any ? sk.first : *err;
        if ((!work && !(work = json_copy(in))) || !prune(work, err->param)) {
            rc = work ? SW_EINVAL : SW_ENOMEM;
            *err = *first;
            break;
        }
    }
    json_decref(work);
    if (rc == SW_OK && sk.any && !first) {
        if ((first = malloc(sizeof *first)))
            *first = sk.first;
        else
            rc = SW_ENOMEM;
    }
    if (rc == SW_OK) {
        /* validated as its compact text would parse; that text kept */
        rc = sw_request_parse_built(chat, len, req, err);
    } else if ((first || sk.any) && rc == SW_EINVAL && !strcmp(err->param, "input")) {
        *err = first ? *first : sk.first; /* nothing could be carried: the first reason stands */
    }
    if (rc) {
        if (rc == SW_ENOMEM)
            sw_dialect_oom(err);
        free(first);
        json_decref(in);
        return rc;
    }
    req->native = in;
    req->untranslatable = first;
    if (first) {
        long whole = sw_request_bound_tokens(len, 0, 0, req->n_messages);
        if (whole > req->prompt_tokens_max)
            req->prompt_tokens_max = whole;
    }
    return SW_OK;
}
