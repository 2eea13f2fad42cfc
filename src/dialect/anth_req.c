#include "dialect/anth_req.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/err.h"
#include "common/jdump.h"
#include "common/jmemo.h"
#include "dialect/req_util.h"

/* ---- Anthropic -> OpenAI ---- */

/* An Anthropic image block as an OpenAI image_url part; NULL with *err set. */
static json_t *image_part(const json_t *blk, const char *path, struct sw_request_error *err)
{
    char p[128];
    json_t *src = json_object_get(blk, "source");
    const char *st = json_string_value(json_object_get(src, "type"));
    if (!json_is_object(src) || !st) {
        snprintf(p, sizeof p, "%s.source", path);
        BAD(p, "%s: an image block needs a source object with a type.", p);
    }
    if (!strcmp(st, "base64")) {
        const char *mt = json_string_value(json_object_get(src, "media_type"));
        const char *data = json_string_value(json_object_get(src, "data"));
        if (!mt || !data) {
            snprintf(p, sizeof p, "%s.source", path);
            BAD(p, "%s: a base64 image needs media_type and data strings.", p);
        }
        struct sw_buf u;
        sw_buf_init(&u, (size_t)1 << 31);
        if (sw_buf_appendf(&u, "data:%s;base64,", mt) || sw_buf_append_str(&u, data)) {
            sw_buf_free(&u);
            sw_dialect_oom(err);
            return NULL;
        }
        json_t *part = json_pack("{s:s, s:{s:s}}", "type", "image_url", "image_url", "url", u.ptr);
        sw_buf_free(&u);
        if (!part)
            sw_dialect_oom(err);
        return part;
    }
    if (!strcmp(st, "url")) {
        const char *url = json_string_value(json_object_get(src, "url"));
        if (!url) {
            snprintf(p, sizeof p, "%s.source.url", path);
            BAD(p, "%s: a url image needs a url string.", p);
        }
        json_t *part = json_pack("{s:s, s:{s:s}}", "type", "image_url", "image_url", "url", url);
        if (!part)
            sw_dialect_oom(err);
        return part;
    }
    snprintf(p, sizeof p, "%s.source.type", path);
    NOPE(p, "%s: image source type '%s' cannot be translated (base64 and url can).", p, st);
fail:
    return NULL;
}

/* One tool_result block as an OpenAI tool message. */
static json_t *tool_message(const json_t *blk, const char *path, struct sw_request_error *err)
{
    char p[128];
    json_t *id = json_object_get(blk, "tool_use_id");
    if (!json_is_string(id)) {
        snprintf(p, sizeof p, "%s.tool_use_id", path);
        BAD(p, "%s: a tool_result block needs a tool_use_id string.", p);
    }
    json_t *c = json_object_get(blk, "content");
    bool is_error = json_is_true(json_object_get(blk, "is_error"));
    json_t *content = NULL;
    if (json_is_string(c) && !is_error) {
        content = json_incref(c); /* the client's text as it is: shared, not copied */
    } else {
        long bad;
        char *text = c ? sw_dialect_joined_text(c, &bad) : strdup("");
        if (!text) {
            if (bad >= 0)
                snprintf(p, sizeof p, "%s.content[%ld]", path, bad);
            else
                snprintf(p, sizeof p, "%s.content", path);
            NOPE(p, "%s: tool results can be translated only as text (a string or text "
                    "blocks).", p);
        }
        struct sw_buf b;
        sw_buf_init(&b, (size_t)1 << 31);
        /* valid UTF-8: the parsed texts and ASCII between them */
        if (!sw_buf_append_str(&b, is_error ? "Error: " : "") && !sw_buf_append_str(&b, text))
            content = json_stringn_nocheck(b.ptr ? b.ptr : "", b.len);
        sw_buf_free(&b);
        free(text);
    }
    json_t *m = SW_DIALECT_OBJECT({"role", sw_dialect_str("tool")},
                                  {"tool_call_id", json_incref(id)}, {"content", content});
    if (!m)
        sw_dialect_oom(err);
    return m;
fail:
    return NULL;
}

/* What the blocks of one Anthropic message become: the OpenAI messages so
 * far (tool results go straight in), a user message's parts, an assistant
 * message's text and tool calls. */
struct msg_acc {
    json_t *msgs, *parts, *calls;
    struct sw_buf text;
    bool user, assistant;
};

/* A text (a string or text blocks, joined with "\n") as a JSON string: a
 * string itself shared, not copied. NULL where sw_dialect_joined_text
 * returns NULL (*bad as it sets it), or with *oom when the string could
 * not be made. */
static json_t *joined_value(const json_t *v, long *bad, bool *oom)
{
    *oom = false;
    *bad = -1;
    if (json_is_string(v))
        return json_incref((json_t *)v);
    char *s = sw_dialect_joined_text(v, bad);
    if (!s)
        return NULL;
    /* valid UTF-8: parsed texts and "\n" between them */
    json_t *j = json_stringn_nocheck(s, strlen(s));
    free(s);
    *oom = !j;
    return j;
}

/* The return of a block helper that failed with *err set. */
static int failed(const struct sw_request_error *err)
{
    return err->status == 500 ? SW_ENOMEM : SW_EINVAL;
}

static int text_block(struct msg_acc *a, const json_t *blk, const char *pb,
                      struct sw_request_error *err)
{
    json_t *tx = json_object_get(blk, "text");
    if (!json_is_string(tx)) {
        char pt[176];
        snprintf(pt, sizeof pt, "%s.text", pb);
        BAD(pt, "%s: expected a string.", pt);
    }
    if (a->assistant) {
        if ((a->text.len && sw_buf_append(&a->text, "\n", 1)) ||
            sw_buf_append_str(&a->text, json_string_value(tx)))
            return sw_dialect_oom(err);
    } else if (json_array_append_new(a->parts,
                                     SW_DIALECT_OBJECT({"type", sw_dialect_str("text")},
                                                       {"text", json_incref(tx)}))) {
        return sw_dialect_oom(err);
    }
    return SW_OK;
fail:
    return failed(err);
}

static int tool_use_block(struct msg_acc *a, const json_t *blk, const char *pb,
                          struct sw_request_error *err)
{
    json_t *id = json_object_get(blk, "id");
    json_t *name = json_object_get(blk, "name");
    json_t *input = json_object_get(blk, "input");
    if (!json_is_string(id) || !json_is_string(name) || !json_is_object(input))
        BAD(pb, "%s: a tool_use block needs id and name strings and an input object.", pb);
    char *args = sw_json_dumps(input, JSON_COMPACT);
    json_t *fn = SW_DIALECT_OBJECT({"name", json_incref(name)},
                                   {"arguments", args ? sw_dialect_str(args) : NULL});
    json_t *call = SW_DIALECT_OBJECT({"id", json_incref(id)},
                                     {"type", sw_dialect_str("function")}, {"function", fn});
    free(args);
    if (!call || json_array_append_new(a->calls, call))
        return sw_dialect_oom(err);
    return SW_OK;
fail:
    return failed(err);
}

/* Content block pb of the message: text, image and tool_result (user),
 * tool_use (assistant); anything else is refused. */
static int add_block(struct msg_acc *a, const json_t *blk, const char *pb,
                     struct sw_request_error *err)
{
    const char *t = sw_dialect_type_of(blk);
    if (!json_is_object(blk))
        BAD(pb, "%s: expected a content block object.", pb);
    if (!strcmp(t, "text"))
        return text_block(a, blk, pb, err);
    if (!strcmp(t, "image") && a->user) {
        json_t *part = image_part(blk, pb, err);
        if (!part)
            goto fail;
        if (json_array_append_new(a->parts, part))
            return sw_dialect_oom(err);
        return SW_OK;
    }
    if (!strcmp(t, "tool_result") && a->user) {
        if (json_array_size(a->parts) > 0)
            NOPE(pb, "%s: tool_result blocks must come before the other blocks of a user "
                    "message to be translated.", pb);
        json_t *tm = tool_message(blk, pb, err);
        if (!tm)
            goto fail;
        if (json_array_append_new(a->msgs, tm))
            return sw_dialect_oom(err);
        return SW_OK;
    }
    if (!strcmp(t, "tool_use") && a->assistant)
        return tool_use_block(a, blk, pb, err);
    char pt[176];
    snprintf(pt, sizeof pt, "%s.type", pb);
    NOPE(pt, "%s: a '%s' block in a%s message cannot be translated to the OpenAI "
            "chat format.", pt, t[0] ? t : "(missing)", a->user ? " user" : "n assistant");
fail:
    return failed(err);
}

/* The message the blocks made: an assistant's text and tool calls, or a
 * user's parts (none when the blocks were all tool results). */
static int flush_message(struct msg_acc *a, struct sw_request_error *err)
{
    if (a->assistant) {
        json_t *o = SW_DIALECT_OBJECT({"role", sw_dialect_str("assistant")});
        if (!o)
            return sw_dialect_oom(err);
        json_object_set_new(o, "content", a->text.len || !json_array_size(a->calls)
                                              ? json_stringn_nocheck(a->text.ptr ? a->text.ptr
                                                                                 : "",
                                                                     a->text.len)
                                              : json_null());
        if (json_array_size(a->calls))
            json_object_set(o, "tool_calls", a->calls);
        if (json_array_append_new(a->msgs, o))
            return sw_dialect_oom(err);
    } else if (json_array_size(a->parts)) {
        json_t *o = SW_DIALECT_OBJECT({"role", sw_dialect_str("user")},
                                      {"content", json_incref(a->parts)});
        if (!o || json_array_append_new(a->msgs, o))
            return sw_dialect_oom(err);
    }
    return SW_OK;
}

/* A system message inside `messages` (text: a string or text blocks) as an
 * OpenAI system message at the same place. */
static int system_in_place(json_t *msgs, const json_t *content, const char *pc,
                           struct sw_request_error *err)
{
    long bad = -1;
    bool oom = false;
    json_t *s = content ? joined_value(content, &bad, &oom) : NULL;
    if (!s && oom)
        return sw_dialect_oom(err);
    if (!s) {
        char p[160];
        if (content && bad >= 0)
            snprintf(p, sizeof p, "%s[%ld]", pc, bad);
        else
            snprintf(p, sizeof p, "%s", pc);
        BAD(p, "%s: a system message holds text (a string or text blocks).", p);
    }
    json_t *m = SW_DIALECT_OBJECT({"role", sw_dialect_str("system")}, {"content", s});
    if (!m || json_array_append_new(msgs, m))
        return sw_dialect_oom(err);
    return SW_OK;
fail:
    return SW_EINVAL;
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && !memcmp(s + n - m, suffix, m);
}

/* The class of a content block's type (a closed set: a client's own type
 * name is "other"). */
static unsigned block_class(const char *t)
{
    if (!strcmp(t, "thinking") || !strcmp(t, "redacted_thinking"))
        return SW_ANTH_FIELD_THINKING_BLOCK;
    if (!strcmp(t, "document"))
        return SW_ANTH_FIELD_DOCUMENT_BLOCK;
    if (!strcmp(t, "search_result"))
        return SW_ANTH_FIELD_SEARCH_RESULT_BLOCK;
    if (!strcmp(t, "image"))
        return SW_ANTH_FIELD_IMAGE_BLOCK;
    if (!strcmp(t, "tool_result"))
        return SW_ANTH_FIELD_TOOL_RESULT_BLOCK;
    if (ends_with(t, "_tool_use") || ends_with(t, "_tool_result") ||
        !strcmp(t, "container_upload"))
        return SW_ANTH_FIELD_SERVER_TOOL_BLOCK;
    return SW_ANTH_FIELD_OTHER;
}

/* "messages[i]" and then field, and "[j]" unless j < 0, into out (128
 * bytes), without printf: a block's path is written for every block. */
static const char *msg_path(char *out, size_t i, const char *field, long j)
{
    /* at most 9 + 20 + 1 + 8 + 22 bytes: the fields are ".role" and ".content" */
    char *o = out + sw_str_copy(out, 16, "messages[");
    o += sw_fmt_u64(o, i, 10, 1);
    *o++ = ']';
    o += sw_str_copy(o, 16, field);
    if (j >= 0) {
        *o++ = '[';
        o += sw_fmt_u64(o, (uint64_t)j, 10, 1);
        *o++ = ']';
    }
    *o = '\0';
    return out;
}

/* What a translation left out, noted (the first refusal kept). */
static void note_skipped(struct sw_anth_skipped *skipped, uint32_t fields,
                         const struct sw_request_error *err)
{
    skipped->fields |= fields;
    if (!skipped->any) {
        skipped->any = true;
        skipped->first = *err;
    }
}

/* The key of a message's translation kept with it (sw_jmemo_derived_put):
 * what add_message writes, which depends on the message alone; a system
 * message's under a key of its own (the Anthropic body then has one to
 * move, sw_anth_native_system). A translation that left blocks out is
 * kept under a key that says which:
 * SKIPPED_TAG in the top byte, the blocks' classes (bits 1 << enum
 * sw_anth_field, below SW_ANTH_FIELD_N <= 32) and the first one's index. */
#define DERIVED_KEY 0x616e746832636831ull   /* "anth2ch1" */
#define DERIVED_SYSTEM_KEY 0x616e746832737931ull    /* "anth2sy1": a system message's */
#define SKIPPED_TAG 0xa5ull
#define SKIPPED_KEY(fields, j) (SKIPPED_TAG << 56 | (uint64_t)(fields) << 24 | ((j) & 0xffffff))

/* The blocks one message's translation left out. */
struct msg_skips {
    uint32_t fields;
    long first;                     /* the first one's index, -1: none */
    struct sw_request_error err;    /* its refusal */
};

/* Appends the OpenAI messages for Anthropic message i to `msgs`. sk: when
 * not NULL, a block the chat form cannot carry is left out and noted there
 * (the message as if it were removed: of only such blocks, an empty
 * content); else it refuses the message. */
static int add_message(json_t *msgs, const json_t *m, size_t i, struct msg_skips *sk,
                       struct sw_request_error *err)
{
    char p[128], pb[128]; /* a path in an error (p), a block's (pb) */
    struct msg_acc a = {.msgs = msgs};
    sw_buf_init(&a.text, (size_t)1 << 31);
    int rc = SW_OK;
    if (!json_is_object(m))
        BAD(msg_path(p, i, "", -1), "%s: expected an object.", p);
    const char *role = json_string_value(json_object_get(m, "role"));
    if (!role)
        BAD(msg_path(p, i, ".role", -1), "%s: a role is required (user or assistant).", p);
    a.user = !strcmp(role, "user");
    a.assistant = !strcmp(role, "assistant");
    json_t *content = json_object_get(m, "content");
    if (!strcmp(role, "system"))
        return system_in_place(msgs, content, msg_path(p, i, ".content", -1), err);
    if (!a.user && !a.assistant)
        BAD(msg_path(p, i, ".role", -1), "%s: '%s' is not a role of the Messages API (user, "
                                     "assistant, or system for an instruction inside the "
                                     "conversation).", p, role);
    if (json_is_string(content)) {
        json_t *o = SW_DIALECT_OBJECT({"role", json_incref(json_object_get(m, "role"))},
                                      {"content", json_incref(content)});
        if (!o || json_array_append_new(msgs, o))
            return sw_dialect_oom(err);
        return SW_OK;
    }
    if (!json_is_array(content) || json_array_size(content) == 0)
        BAD(msg_path(p, i, ".content", -1), "%s: expected a string or a non-empty array of content "
                                        "blocks.", p);

    a.parts = json_array();
    a.calls = json_array();
    if (!a.parts || !a.calls) {
        rc = sw_dialect_oom(err);
        goto out;
    }
    size_t j, kept = 0;
    json_t *blk;
    json_array_foreach(content, j, blk) {
        rc = add_block(&a, blk, msg_path(pb, i, ".content", j), err);
        if (rc == SW_EINVAL && sk && !strcmp(err->code, "untranslatable")) {
            if (sk->first < 0) {
                sk->first = (long)j;
                sk->err = *err;
            }
            sk->fields |= 1u << block_class(sw_dialect_type_of(blk));
            rc = SW_OK;
            continue;
        }
        if (rc != SW_OK)
            goto out;
        kept++;
    }
    if (!kept) { /* as a message whose blocks were all removed */
        json_t *o = SW_DIALECT_OBJECT({"role", json_incref(json_object_get(m, "role"))},
                                      {"content", sw_dialect_str("")});
        rc = o && !json_array_append_new(msgs, o) ? SW_OK : sw_dialect_oom(err);
        goto out;
    }
    rc = flush_message(&a, err);
out:
    json_decref(a.parts);
    json_decref(a.calls);
    sw_buf_free(&a.text);
    return rc;
fail:
    rc = failed(err);
    goto out;
}

/* The refusal of block j of message i written again: a translation kept
 * with the message left it out, and a held message never changes, so the
 * block refuses as it did. */
static void refusal_again(const json_t *m, size_t i, size_t j, struct sw_request_error *err)
{
    char pb[128];
    struct msg_acc a = {.parts = json_array(), .calls = json_array()};
    a.user = !strcmp(json_string_value(json_object_get(m, "role")), "user");
    a.assistant = !a.user;
    sw_buf_init(&a.text, (size_t)1 << 31);
    if (!a.parts || !a.calls ||
        add_block(&a, json_array_get(json_object_get(m, "content"), j),
                  msg_path(pb, i, ".content", (long)j), err) == SW_OK)
        sw_dialect_oom(err); /* nothing else can make it pass */
    json_decref(a.parts);
    json_decref(a.calls);
    sw_buf_free(&a.text);
}

/* Appends message i's translation: the one kept with it when the parse
 * memo holds it, else add_message's, then kept. skipped NULL: a block the
 * chat form cannot carry refuses the message, also when the translation
 * kept with it left one out. */
static int message_to_openai(json_t *msgs, const json_t *m, size_t i,
                             struct sw_anth_skipped *skipped, struct sw_request_error *err)
{
    uint64_t key = 0;
    json_t *d = sw_jmemo_derived_get_any(m, &key);
    struct msg_skips sk = {.first = -1};
    int rc;
    bool system = key == DERIVED_SYSTEM_KEY;
    if (d && (key == DERIVED_KEY || system || key >> 56 == SKIPPED_TAG)) {
        if (key >> 56 == SKIPPED_TAG) {
            sk.fields = (uint32_t)(key >> 24);
            sk.first = (long)(key & 0xffffff);
            if (!skipped || !skipped->any) /* its words are needed */
                refusal_again(m, i, (size_t)sk.first, &sk.err);
        }
        if (sk.first >= 0 && !skipped) {
            *err = sk.err;
            rc = SW_EINVAL;
        } else {
            rc = json_array_extend(msgs, d) ? sw_dialect_oom(err) : SW_OK;
        }
        json_decref(d);
    } else {
        json_decref(d);
        size_t from = json_array_size(msgs);
        rc = add_message(msgs, m, i, skipped ? &sk : NULL, err);
        system = !rc && !strcmp(json_string_value(json_object_get(m, "role")), "system");
        if (!rc)
            sw_jmemo_derived_put(m, system          ? DERIVED_SYSTEM_KEY
                                    : sk.first < 0 ? DERIVED_KEY
                                                   : SKIPPED_KEY(sk.fields, (uint64_t)sk.first),
                                 msgs, from);
    }
    if (!rc && skipped)
        skipped->system_msgs |= system;
    if (!rc && sk.first >= 0)
        note_skipped(skipped, sk.fields, &sk.err);
    return rc;
}

/* Appends the chat form of tool definition *(const size_t *)index to list
 * (sw_dialect_build_fn). */
static int add_tool(json_t *list, const json_t *t, const void *index, struct sw_request_error *err)
{
    size_t i = *(const size_t *)index;
    char p[64];
    snprintf(p, sizeof p, "tools[%zu]", i);
    if (!json_is_object(t))
        BAD(p, "%s: expected an object.", p);
    json_t *type = json_object_get(t, "type");
    if (type && !json_is_null(type) &&
        !(json_is_string(type) && !strcmp(json_string_value(type), "custom"))) {
        snprintf(p, sizeof p, "tools[%zu].type", i);
        NOPE(p, "%s: server and client tools of type '%s' cannot be translated; only "
               "custom tools (name, description, input_schema) can.",
            p, json_is_string(type) ? json_string_value(type) : "?");
    }
    const char *name = json_string_value(json_object_get(t, "name"));
    json_t *schema = json_object_get(t, "input_schema");
    if (!name) {
        snprintf(p, sizeof p, "tools[%zu].name", i);
        BAD(p, "%s: a tool needs a name string.", p);
    }
    if (!json_is_object(schema)) {
        snprintf(p, sizeof p, "tools[%zu].input_schema", i);
        BAD(p, "%s: a tool needs an input_schema object.", p);
    }
    json_t *fn = json_pack("{s:s, s:O}", "name", name, "parameters", schema);
    json_t *desc = json_object_get(t, "description");
    if (fn && json_is_string(desc))
        json_object_set(fn, "description", desc);
    json_t *o = fn ? json_pack("{s:s, s:o}", "type", "function", "function", fn) : NULL;
    if (!o || json_array_append_new(list, o))
        return sw_dialect_oom(err);
    return SW_OK;
fail:
    return SW_EINVAL;
}

/* The key of a tool definition's chat form kept with it by the parse memo
 * (an agent sends its tools with every turn). */
#define TOOL_KEY 0x616e746832746c31ull      /* "anth2tl1" */

/* The tools; skipped: when not NULL, a tool of a type the chat form has no
 * tool for (a server tool) is left out and noted there, as a block is. */
static int tools_to_openai(json_t *out, const json_t *tools, struct sw_anth_skipped *skipped,
                           struct sw_request_error *err)
{
    if (!json_is_array(tools))
        BAD("tools", "tools: expected an array of tool definitions.");
    json_t *list = json_array();
    if (!list)
        return sw_dialect_oom(err);
    json_object_set_new(out, "tools", list);
    size_t i;
    json_t *t;
    json_array_foreach(tools, i, t) {
        int rc = sw_dialect_derived(list, t, TOOL_KEY, add_tool, &i, err);
        if (rc == SW_EINVAL && skipped) {
            char p[64];
            snprintf(p, sizeof p, "tools[%zu]", i);
            if (sw_dialect_type_refused(err, p)) {
                note_skipped(skipped, 1u << SW_ANTH_FIELD_SERVER_TOOL, err);
                continue;
            }
        }
        if (rc)
            return rc;
    }
    return SW_OK;
fail:
    return SW_EINVAL;
}

static int tool_choice_to_openai(json_t *out, const json_t *tc, struct sw_request_error *err)
{
    const char *t = json_string_value(json_object_get(tc, "type"));
    if (!json_is_object(tc) || !t)
        BAD("tool_choice", "tool_choice: expected an object with a type (auto, any, tool, none).");
    json_t *v;
    if (!strcmp(t, "auto"))
        v = json_string("auto");
    else if (!strcmp(t, "any"))
        v = json_string("required");
    else if (!strcmp(t, "none"))
        v = json_string("none");
    else if (!strcmp(t, "tool")) {
        const char *name = json_string_value(json_object_get(tc, "name"));
        if (!name)
            BAD("tool_choice.name", "tool_choice.name: a tool choice of type tool needs a name.");
        v = json_pack("{s:s, s:{s:s}}", "type", "function", "function", "name", name);
    } else {
        BAD("tool_choice.type", "tool_choice.type: '%s' is not auto, any, tool or none.", t);
    }
    if (!v)
        return sw_dialect_oom(err);
    json_object_set_new(out, "tool_choice", v);
    json_t *dp = json_object_get(tc, "disable_parallel_tool_use");
    if (json_is_true(dp))
        json_object_set_new(out, "parallel_tool_calls", json_false());
    return SW_OK;
fail:
    return SW_EINVAL;
}

/* The top-level fields: each known (an unknown one is refused, not
 * dropped), model, max_tokens, messages, stream and thinking of the right
 * shape. */
static int check_top_level(const json_t *in, int require_max_tokens,
                           struct sw_request_error *err)
{
    if (!json_is_object(in))
        BAD(NULL, "The request body must be a JSON object.");
    static const char *const known[] = {
        "model", "messages", "max_tokens", "system", "stop_sequences", "temperature",
        "top_p", "stream", "tools", "tool_choice", "metadata", "thinking", "output_config"};
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)in, k, v) {
        bool ok = false;
        for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
            ok |= !strcmp(k, known[i]);
        if (!ok && !strcmp(k, "context_management"))
            NOPE("context_management", "context_management: context editing is done by "
                                       "Anthropic's API; a chat backend has no form for it.");
        if (!ok) {
            char p[128];
            snprintf(p, sizeof p, "%.100s", k);
            NOPE(p, "%s: this field cannot be translated by the gateway and is refused rather "
                   "than dropped.", p);
        }
    }
    json_t *model = json_object_get(in, "model");
    if (!json_is_string(model) || !json_string_length(model))
        BAD("model", "model: a non-empty string is required.");
    json_t *mt = json_object_get(in, "max_tokens");
    if (mt || require_max_tokens) {
        if (!json_is_integer(mt) || json_integer_value(mt) < 1 ||
            json_integer_value(mt) > SW_REQUEST_MAX_TOKENS)
            BAD("max_tokens", "max_tokens: an integer from 1 to %ld is required.",
                SW_REQUEST_MAX_TOKENS);
    }
    json_t *msgs_in = json_object_get(in, "messages");
    if (!json_is_array(msgs_in) || json_array_size(msgs_in) == 0)
        BAD("messages", "messages: a non-empty array of messages is required.");
    json_t *st = json_object_get(in, "stream");
    if (st && !json_is_boolean(st))
        BAD("stream", "stream: expected a boolean.");
    return SW_OK;
fail:
    return SW_EINVAL;
}

/* thinking as reasoning_effort: enabled by its budget (under 4096 tokens
 * low, under 16384 medium, else high), adaptive medium, disabled nothing. */
static int thinking_effort(const json_t *th, const char **effort, struct sw_request_error *err)
{
    const char *t = json_string_value(json_object_get(th, "type"));
    if (!json_is_object(th) || !t)
        BAD("thinking", "thinking: expected an object with a type (enabled, adaptive or "
                        "disabled).");
    if (!strcmp(t, "enabled")) {
        json_t *b = json_object_get(th, "budget_tokens");
        if (!json_is_integer(b) || json_integer_value(b) < 1 ||
            json_integer_value(b) > SW_REQUEST_MAX_TOKENS)
            BAD("thinking.budget_tokens", "thinking.budget_tokens: an integer from 1 to %ld "
                                          "is required.", SW_REQUEST_MAX_TOKENS);
        json_int_t n = json_integer_value(b);
        *effort = n < 4096 ? "low" : n < 16384 ? "medium" : "high";
    } else if (!strcmp(t, "adaptive")) {
        *effort = "medium";
    } else if (strcmp(t, "disabled")) {
        BAD("thinking.type", "thinking.type: expected enabled, adaptive or disabled.");
    }
    return SW_OK;
fail:
    return SW_EINVAL;
}

/* output_config.format (a JSON schema) as response_format json_schema. */
static int format_to_openai(json_t *o, const json_t *f, struct sw_request_error *err)
{
    const char *t = json_string_value(json_object_get(f, "type"));
    json_t *schema = json_object_get(f, "schema");
    if (!json_is_object(f) || !t)
        BAD("output_config.format", "output_config.format: expected an object with a type.");
    if (strcmp(t, "json_schema"))
        NOPE("output_config.format.type", "output_config.format.type: only json_schema can be "
                                          "translated.");
    if (!json_is_object(schema))
        BAD("output_config.format.schema", "output_config.format.schema: a JSON schema object "
                                           "is required.");
    json_t *rf = json_pack("{s:s, s:{s:s, s:O}}", "type", "json_schema", "json_schema", "name",
                           "output", "schema", schema);
    if (!rf || json_object_set_new(o, "response_format", rf))
        return sw_dialect_oom(err);
    return SW_OK;
fail:
    return SW_EINVAL;
}

/* thinking and output_config.effort (low, medium, high; max as high, and it
 * wins over thinking's) as reasoning_effort, the switch chat servers read;
 * output_config.format as response_format; any other output_config key is
 * untranslatable. */
static int reasoning_to_openai(json_t *o, const json_t *in, struct sw_request_error *err)
{
    const char *effort = NULL;
    json_t *th = json_object_get(in, "thinking");
    if (th && !json_is_null(th) && thinking_effort(th, &effort, err))
        return failed(err);
    json_t *oc = json_object_get(in, "output_config");
    if (oc && !json_is_null(oc)) {
        if (!json_is_object(oc))
            BAD("output_config", "output_config: expected an object.");
        const char *k;
        json_t *v;
        json_object_foreach(oc, k, v) {
            if (!strcmp(k, "effort")) {
                static const char *const efforts[] = {"low", "medium", "high", "max"};
                const char *e = json_string_value(v);
                size_t i = 0;
                while (e && i < 4 && strcmp(e, efforts[i]))
                    i++;
                if (!e || i == 4)
                    BAD("output_config.effort", "output_config.effort: expected low, medium, "
                                                "high or max.");
                effort = i == 3 ? "high" : efforts[i];
            } else if (!strcmp(k, "format")) {
                if (format_to_openai(o, v, err))
                    return failed(err);
            } else {
                char p[128];
                snprintf(p, sizeof p, "output_config.%.80s", k);
                NOPE(p, "%s: has no form in OpenAI's chat API.", p);
            }
        }
    }
    if (effort && json_object_set_new(o, "reasoning_effort", json_string(effort)))
        return sw_dialect_oom(err);
    return SW_OK;
fail:
    return SW_EINVAL;
}

/* The system prompt (a string or text blocks) as the first message. */
static int system_message(json_t *msgs, const json_t *sys, struct sw_request_error *err)
{
    long bad;
    bool oom;
    json_t *s = joined_value(sys, &bad, &oom);
    if (!s && oom)
        return sw_dialect_oom(err);
    if (!s) {
        char p[64];
        if (bad >= 0)
            snprintf(p, sizeof p, "system[%ld]", bad);
        else
            snprintf(p, sizeof p, "system");
        BAD(p, "%s: the system prompt must be a string or an array of text blocks.", p);
    }
    json_t *m = SW_DIALECT_OBJECT({"role", sw_dialect_str("system")}, {"content", s});
    if (!m || json_array_append_new(msgs, m))
        return sw_dialect_oom(err);
    return SW_OK;
fail:
    return SW_EINVAL;
}

/* stop_sequences as stop; temperature and top_p (0 to 1) as they are. */
static int sampling_to_openai(json_t *o, const json_t *in, struct sw_request_error *err)
{
    json_t *ss = json_object_get(in, "stop_sequences");
    if (ss && !json_is_null(ss)) {
        size_t j;
        json_t *s;
        if (!json_is_array(ss))
            BAD("stop_sequences", "stop_sequences: expected an array of strings.");
        json_array_foreach(ss, j, s) if (!json_is_string(s)) {
            char p[64];
            snprintf(p, sizeof p, "stop_sequences[%zu]", j);
            BAD(p, "%s: expected a string.", p);
        }
        if (json_array_size(ss))
            json_object_set(o, "stop", ss);
    }
    static const char *const nums[] = {"temperature", "top_p"};
    for (size_t n = 0; n < 2; n++) {
        json_t *x = json_object_get(in, nums[n]);
        if (!x || json_is_null(x))
            continue;
        if (!sw_dialect_is_num(x) || json_number_value(x) < 0 || json_number_value(x) > 1)
            BAD(nums[n], "%s: expected a number from 0 to 1.", nums[n]);
        json_object_set(o, nums[n], x);
    }
    return SW_OK;
fail:
    return SW_EINVAL;
}

/* metadata.user_id as user; Spillway's metadata.allow_cloud kept (a near
 * miss of its spelling refused); any other key refused. */
static int metadata_to_openai(json_t *o, const json_t *md, struct sw_request_error *err)
{
    if (!json_is_object(md))
        BAD("metadata", "metadata: expected an object.");
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)md, k, v) {
        if (!strcmp(k, "user_id")) {
            if (!json_is_string(v) && !json_is_null(v))
                BAD("metadata.user_id", "metadata.user_id: expected a string.");
            if (json_is_string(v))
                json_object_set(o, "user", v);
        } else if (sw_request_name_near_miss(k, strlen(k), "allow_cloud", false)) {
            char p[128];
            snprintf(p, sizeof p, "metadata.%.100s", k);
            BAD(p, "Unknown metadata key '%s': the privacy flag is spelled "
                   "'metadata.allow_cloud' (lower case, with an underscore).", p);
        } else if (!strcmp(k, "allow_cloud")) {
            json_t *omd = json_object_get(o, "metadata");
            if (!omd) {
                omd = json_object();
                json_object_set_new(o, "metadata", omd);
            }
            json_object_set(omd, "allow_cloud", v);
        } else {
            char p[128];
            snprintf(p, sizeof p, "metadata.%.100s", k);
            NOPE(p, "%s: only user_id (and Spillway's allow_cloud) can be translated.", p);
        }
    }
    return SW_OK;
fail:
    return SW_EINVAL;
}

int sw_anth_req_to_openai(const json_t *in, int require_max_tokens, json_t **out,
                          struct sw_request_error *err)
{
    return sw_anth_req_to_openai_skipping(in, require_max_tokens, out, NULL, err);
}

int sw_anth_req_to_openai_skipping(const json_t *in, int require_max_tokens, json_t **out,
                                   struct sw_anth_skipped *skipped,
                                   struct sw_request_error *err)
{
    *out = NULL;
    int rc = check_top_level(in, require_max_tokens, err);
    if (rc)
        return rc;
    json_t *o = json_object();
    json_t *msgs = json_array();
    if (!o || !msgs) {
        json_decref(msgs);
        goto nomem;
    }
    json_object_set(o, "model", json_object_get(in, "model"));
    json_object_set_new(o, "messages", msgs);
    json_t *sys = json_object_get(in, "system");
    if (sys && !json_is_null(sys) && (rc = system_message(msgs, sys, err)))
        goto fail_rc;
    size_t i;
    json_t *m;
    json_array_foreach(json_object_get(in, "messages"), i, m) {
        if ((rc = message_to_openai(msgs, m, i, skipped, err)))
            goto fail_rc;
    }
    if (json_array_size(msgs) == 0)
        BAD("messages", "messages: nothing to send.");
    json_t *mt = json_object_get(in, "max_tokens");
    if (mt)
        json_object_set(o, "max_tokens", mt);
    if ((rc = sampling_to_openai(o, in, err)))
        goto fail_rc;
    if (json_is_true(json_object_get(in, "stream")))
        json_object_set_new(o, "stream", json_true());
    json_t *tools = json_object_get(in, "tools");
    if (tools && !json_is_null(tools) && tools_to_openai(o, tools, skipped, err))
        goto fail_err;
    json_t *tc = json_object_get(in, "tool_choice");
    if (tc && !json_is_null(tc) && tool_choice_to_openai(o, tc, err))
        goto fail_err;
    json_t *md = json_object_get(in, "metadata");
    if (md && !json_is_null(md) && (rc = metadata_to_openai(o, md, err)))
        goto fail_rc;
    if ((rc = reasoning_to_openai(o, in, err)))
        goto fail_rc;
    *out = o;
    return SW_OK;
nomem:
    json_decref(o);
    return sw_dialect_oom(err);
fail_err:
    json_decref(o);
    return err->status == 500 ? SW_ENOMEM : SW_EINVAL;
fail_rc:
    json_decref(o);
    return rc;
fail:
    json_decref(o);
    return SW_EINVAL;
}

/* ---- Fields the translation leaves out ---- */

static const char *const field_names[SW_ANTH_FIELD_N] = {
    [SW_ANTH_FIELD_OTHER] = "other",
    [SW_ANTH_FIELD_CONTEXT_MANAGEMENT] = "context_management",
    [SW_ANTH_FIELD_OUTPUT_CONFIG] = "output_config",
    [SW_ANTH_FIELD_MCP_SERVERS] = "mcp_servers",
    [SW_ANTH_FIELD_CONTAINER] = "container",
    [SW_ANTH_FIELD_SERVICE_TIER] = "service_tier",
    [SW_ANTH_FIELD_TOP_K] = "top_k",
    [SW_ANTH_FIELD_SERVER_TOOL] = "server_tool",
    [SW_ANTH_FIELD_METADATA] = "metadata",
    [SW_ANTH_FIELD_SYSTEM_BLOCK] = "system_block",
    [SW_ANTH_FIELD_THINKING_BLOCK] = "thinking_block",
    [SW_ANTH_FIELD_DOCUMENT_BLOCK] = "document_block",
    [SW_ANTH_FIELD_SEARCH_RESULT_BLOCK] = "search_result_block",
    [SW_ANTH_FIELD_SERVER_TOOL_BLOCK] = "server_tool_block",
    [SW_ANTH_FIELD_IMAGE_BLOCK] = "image_block",
    [SW_ANTH_FIELD_TOOL_RESULT_BLOCK] = "tool_result_block",
    [SW_ANTH_FIELD_REASONING_EFFORT] = "reasoning_effort",
    [SW_ANTH_FIELD_SEED] = "seed",
    [SW_ANTH_FIELD_PENALTIES] = "penalties",
    [SW_ANTH_FIELD_LOGPROBS] = "logprobs",
    [SW_ANTH_FIELD_VERBOSITY] = "verbosity",
    [SW_ANTH_FIELD_STORE] = "store",
};

unsigned sw_anth_openai_field_class(const char *param)
{
    static const struct {
        const char *key;
        unsigned field;
    } top[] = {
        {"reasoning_effort", SW_ANTH_FIELD_REASONING_EFFORT},
        {"seed", SW_ANTH_FIELD_SEED},
        {"frequency_penalty", SW_ANTH_FIELD_PENALTIES},
        {"presence_penalty", SW_ANTH_FIELD_PENALTIES},
        {"logprobs", SW_ANTH_FIELD_LOGPROBS},
        {"top_logprobs", SW_ANTH_FIELD_LOGPROBS},
        {"logit_bias", SW_ANTH_FIELD_LOGPROBS},
        {"verbosity", SW_ANTH_FIELD_VERBOSITY},
        {"store", SW_ANTH_FIELD_STORE},
        {"prompt_cache_key", SW_ANTH_FIELD_STORE},
        {"safety_identifier", SW_ANTH_FIELD_STORE},
        {"service_tier", SW_ANTH_FIELD_SERVICE_TIER},
        {"metadata", SW_ANTH_FIELD_METADATA},
    };
    for (size_t i = 0; i < sizeof top / sizeof top[0]; i++)
        if (!strcmp(param, top[i].key))
            return top[i].field;
    return SW_ANTH_FIELD_OTHER;
}

const char *sw_anth_field_name(unsigned field)
{
    return field < SW_ANTH_FIELD_N ? field_names[field] : field_names[SW_ANTH_FIELD_OTHER];
}

void sw_anth_field_list(uint32_t bits, char *buf, size_t len)
{
    size_t o = 0;
    if (!len)
        return;
    buf[0] = '\0';
    for (unsigned f = 0; f < SW_ANTH_FIELD_N && o + 1 < len; f++) {
        if (!(bits & (1u << f)))
            continue;
        int r = snprintf(buf + o, len - o, "%s%s", o ? "," : "", field_names[f]);
        if (r < 0)
            break;
        o += (size_t)r < len - o ? (size_t)r : len - o - 1;
    }
}

unsigned sw_anth_field_class(const json_t *body, const char *param)
{
    static const struct {
        const char *key;
        unsigned field;
    } top[] = {
        {"context_management", SW_ANTH_FIELD_CONTEXT_MANAGEMENT},
        {"output_config", SW_ANTH_FIELD_OUTPUT_CONFIG},
        {"mcp_servers", SW_ANTH_FIELD_MCP_SERVERS},
        {"container", SW_ANTH_FIELD_CONTAINER},
        {"service_tier", SW_ANTH_FIELD_SERVICE_TIER},
        {"top_k", SW_ANTH_FIELD_TOP_K},
        {"tools", SW_ANTH_FIELD_SERVER_TOOL},
        {"metadata", SW_ANTH_FIELD_METADATA},
        {"system", SW_ANTH_FIELD_SYSTEM_BLOCK},
    };
    size_t n = strcspn(param, ".[");
    for (size_t i = 0; i < sizeof top / sizeof top[0]; i++)
        if (strlen(top[i].key) == n && !memcmp(param, top[i].key, n))
            return top[i].field;
    if (n != 8 || memcmp(param, "messages", 8) || param[8] != '[')
        return SW_ANTH_FIELD_OTHER;
    char *end;
    unsigned long mi = strtoul(param + 9, &end, 10);
    if (strncmp(end, "].content[", 10))
        return SW_ANTH_FIELD_OTHER;
    unsigned long bi = strtoul(end + 10, NULL, 10);
    json_t *msg = json_array_get(json_object_get(body, "messages"), mi);
    return block_class(sw_dialect_type_of(json_array_get(json_object_get(msg, "content"), bi)));
}

/* ---- Parsing an Anthropic body ---- */

/* Removes from `root` (a shallow copy of the body: its values may be
 * shared) what `param` points into, at the level that can go without the
 * rest: a top-level field, a tool, a metadata key, a system block, or a
 * message's content block; what it edits on the way is copied first.
 * Returns false when nothing was removed (the path points nowhere
 * removable). */
static bool prune(json_t *root, const char *param)
{
    char key[128];
    size_t n = strcspn(param, ".[");
    if (n == 0 || n >= sizeof key)
        return false;
    memcpy(key, param, n);
    key[n] = '\0';
    const char *rest = param + n;
    if (!strcmp(key, "metadata") && rest[0] == '.')
        return json_object_del(sw_dialect_own_member(root, "metadata"), rest + 1) == 0;
    if (!strcmp(key, "output_config") && rest[0] == '.') {
        char sub[128];
        size_t m = strcspn(rest + 1, ".[");
        if (m == 0 || m >= sizeof sub)
            return false;
        memcpy(sub, rest + 1, m);
        sub[m] = '\0';
        json_t *oc = sw_dialect_own_member(root, "output_config");
        if (json_object_del(oc, sub))
            return false;
        if (json_object_size(oc) == 0)
            json_object_del(root, "output_config");
        return true;
    }
    if ((!strcmp(key, "tools") || !strcmp(key, "system")) && rest[0] == '[') {
        unsigned long i = strtoul(rest + 1, NULL, 10);
        return json_array_remove(sw_dialect_own_member(root, key), i) == 0;
    }
    if (!strcmp(key, "messages") && rest[0] == '[') {
        char *end;
        unsigned long i = strtoul(rest + 1, &end, 10);
        unsigned long j;
        if (strncmp(end, "].content[", 10) != 0)
            return false;
        j = strtoul(end + 10, NULL, 10);
        json_t *msg = sw_dialect_own_element(sw_dialect_own_member(root, "messages"), i);
        json_t *content = sw_dialect_own_member(msg, "content");
        if (json_array_remove(content, j))
            return false;
        if (json_array_size(content) == 0)
            json_object_set_new(msg, "content", json_string(""));
        return true;
    }
    return json_object_del(root, key) == 0;
}

int sw_anth_request_parse(const char *body, size_t len, int require_max_tokens,
                          struct sw_chat_request *req, struct sw_request_error *err)
{
    memset(req, 0, sizeof *req);
    req->allow_cloud = -1;
    int load_rc;
    json_t *in = sw_request_json_load(body, len, err, &load_rc);
    if (!in)
        return load_rc;
    /* Fields the internal form cannot carry are noted (the first one) and
     * left out of the translation; the request still routes, and a backend
     * that speaks Anthropic gets the body whole. */
    json_t *work = NULL, *oai = NULL;
    struct sw_request_error *first = NULL;
    uint32_t fields = 0;
    int rc = SW_OK;
    /* A message's blocks are left out as the translation meets them (a
     * coding agent's every turn may hold a thinking block); the rest, one
     * round per field. The first refusal is the first the translation met. */
    struct sw_anth_skipped skipped = {0};
    for (int round = 0; round < 64; round++) {
        rc = sw_anth_req_to_openai_skipping(work ? work : in, require_max_tokens, &oai,
                                            &skipped, err);
        if (rc != SW_EINVAL || strcmp(err->code, "untranslatable"))
            break;
        if (!first && !(first = malloc(sizeof *first))) {
            rc = SW_ENOMEM;
            break;
        }
        if (round == 0)
            *first = skipped.any ? skipped.first : *err;
        fields |= 1u << sw_anth_field_class(work ? work : in, err->param);
        if (!work && !(work = json_copy(in))) {
            rc = SW_ENOMEM;
            break;
        }
        if (!prune(work, err->param)) {
            *err = *first;
            break;
        }
    }
    json_decref(work);
    fields |= skipped.fields;
    if (rc == SW_OK && skipped.any && !first) {
        if ((first = malloc(sizeof *first)))
            *first = skipped.first;
        else
            rc = SW_ENOMEM;
    }
    if (rc == SW_OK) {
        /* validated as its compact text would parse; that text kept */
        rc = sw_request_parse_built(oai, len, req, err);
    }
    if (rc) {
        if (rc == SW_ENOMEM)
            sw_dialect_oom(err);
        free(first);
        json_decref(in);
        return rc;
    }
    req->dialect = 1;
    req->native = in;
    req->untranslatable = first;
    req->untranslatable_fields = fields;
    req->native_system = skipped.system_msgs;
    /* The translation holds every text of a translatable body, so its bound
     * holds; a body with fields left out can still go whole to an Anthropic
     * backend, and then its own bytes bound the prompt. */
    if (first) {
        long whole = sw_request_bound_tokens(len, 0, 0, req->n_messages);
        if (whole > req->prompt_tokens_max)
            req->prompt_tokens_max = whole;
    }
    return SW_OK;
}
