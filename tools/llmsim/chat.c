#include "chat.h"

#include <stdio.h>
#include <string.h>

#include "common/err.h"
#include "model.h"

/* ---- Request ---- */

/* Pieces of a text as a byte-level BPE tokenizer with GPT-style
 * pre-tokenization splits it, without merges across pieces: a run of ASCII
 * letters (with the space before it) is one piece per 8 letters begun, a
 * run of digits one per 3 digits begun, every other ASCII character (a
 * space before one included) and every non-ASCII code point one piece.
 * Never more than the text's bytes; far more than bytes / 4 for digits
 * between punctuation or CJK text, as real tokenizers count them. */
size_t sw_llmsim_text_pieces(const char *s, size_t n)
{
    size_t pieces = 0, i = 0;
    while (i < n) {
        unsigned char ch = (unsigned char)s[i];
        if (ch == ' ' && i + 1 < n && (unsigned char)s[i + 1] < 0x80 && s[i + 1] != ' ')
            ch = (unsigned char)s[++i];      /* the space joins the next piece */
        size_t run = 0;
        if ((ch | 0x20) >= 'a' && (ch | 0x20) <= 'z') {
            while (i < n && ((s[i] | 0x20) >= 'a' && (s[i] | 0x20) <= 'z'))
                i++, run++;
            pieces += (run + 7) / 8;
        } else if (ch >= '0' && ch <= '9') {
            while (i < n && s[i] >= '0' && s[i] <= '9')
                i++, run++;
            pieces += (run + 2) / 3;
        } else {
            i++;
            while (ch >= 0x80 && i < n && ((unsigned char)s[i] & 0xC0) == 0x80)
                i++;        /* the rest of the code point */
            pieces++;
        }
    }
    return pieces;
}

/* Text of a content value: a string, or an array of blocks whose "text"
 * fields count (images and other blocks do not). Adds its bytes and
 * pieces (sw_llmsim_text_pieces); appends it to out when given. */
static int content_text(json_t *content, size_t *bytes, size_t *pieces, struct sw_buf *out)
{
    int err = SW_OK;
    if (json_is_string(content)) {
        *bytes += json_string_length(content);
        if (pieces)
            *pieces += sw_llmsim_text_pieces(json_string_value(content), json_string_length(content));
        if (out)
            err = sw_buf_append(out, json_string_value(content), json_string_length(content));
        return err;
    }
    if (!json_is_array(content))
        return SW_OK;
    size_t i;
    json_t *part;
    json_array_foreach(content, i, part) {
        json_t *text = json_object_get(part, "text");
        if (!json_is_string(text))
            continue;
        *bytes += json_string_length(text);
        if (pieces)
            *pieces += sw_llmsim_text_pieces(json_string_value(text), json_string_length(text));
        if (out) {
            err = sw_buf_append(out, json_string_value(text), json_string_length(text));
            if (err)
                return err;
        }
    }
    return SW_OK;
}

static int fail(char *err, size_t errlen, const char *msg)
{
    snprintf(err, errlen, "%s", msg);
    return SW_EINVAL;
}

int sw_llmsim_chat_parse_head(json_t *root, struct sw_llmsim_chat *c, char *err, size_t errlen)
{
    memset(c, 0, sizeof *c);
    c->max_tokens = -1;
    sw_buf_init(&c->last_user, SW_LLMSIM_ECHO_MAX);
    if (!json_is_object(root))
        return fail(err, errlen, "the request body must be a JSON object");

    json_t *v = json_object_get(root, "model");
    if (v && !json_is_string(v))
        return fail(err, errlen, "model: must be a string");
    if (v)
        snprintf(c->model, sizeof c->model, "%s", json_string_value(v));

    v = json_object_get(root, "stream");
    if (v && !json_is_boolean(v) && !json_is_null(v))
        return fail(err, errlen, "stream: must be a boolean");
    c->stream = json_is_true(v);
    return SW_OK;
}

int sw_llmsim_chat_parse(json_t *root, enum sw_llmsim_dialect d, struct sw_llmsim_chat *c,
                         char *err, size_t errlen)
{
    int rc = sw_llmsim_chat_parse_head(root, c, err, errlen);
    if (rc)
        return rc;
    json_t *v;

    v = json_object_get(root, "max_completion_tokens");
    if (!v || json_is_null(v))
        v = json_object_get(root, "max_tokens");
    if (v && !json_is_null(v)) {
        if (!json_is_integer(v) || json_integer_value(v) < 1 ||
            json_integer_value(v) > 10000000)
            return fail(err, errlen, "max_tokens: must be an integer in [1, 10000000]");
        c->max_tokens = (int)json_integer_value(v);
    } else if (d == SW_LLMSIM_ANTHROPIC) {
        return fail(err, errlen, "max_tokens: Field required");
    }

    const char *rft = json_string_value(json_object_get(json_object_get(root, "response_format"), "type"));
    c->wants_json = rft && (!strcmp(rft, "json_schema") || !strcmp(rft, "json_object"));
    json_t *tc = json_object_get(root, "tool_choice");
    const char *tct = json_string_value(json_object_get(tc, "type"));
    const char *tool = NULL;
    if (tct && d == SW_LLMSIM_OPENAI && !strcmp(tct, "function"))
        tool = json_string_value(json_object_get(json_object_get(tc, "function"), "name"));
    else if (tct && d == SW_LLMSIM_ANTHROPIC && !strcmp(tct, "tool"))
        tool = json_string_value(json_object_get(tc, "name"));
    if (tool && strlen(tool) < sizeof c->forced_tool) {
        snprintf(c->forced_tool, sizeof c->forced_tool, "%s", tool);
        c->wants_json = true;
    }
    const char *tht = json_string_value(json_object_get(json_object_get(root, "thinking"), "type"));
    c->thinking = d == SW_LLMSIM_ANTHROPIC && tht &&
                  (!strcmp(tht, "enabled") || !strcmp(tht, "adaptive"));
    json_t *so = json_object_get(root, "stream_options");
    if (so && json_is_object(so))
        c->include_usage = json_is_true(json_object_get(so, "include_usage"));

    json_t *msgs = json_object_get(root, "messages");
    if (!json_is_array(msgs))
        return fail(err, errlen, "messages: Field required (an array of messages)");
    if (json_array_size(msgs) == 0)
        return fail(err, errlen, "messages: must contain at least one message");

    if (d == SW_LLMSIM_ANTHROPIC) {
        json_t *sys = json_object_get(root, "system");
        if (sys && !json_is_null(sys)) {
            if (!json_is_string(sys) && !json_is_array(sys))
                return fail(err, errlen, "system: must be a string or an array of blocks");
            content_text(sys, &c->text_bytes, &c->text_pieces, NULL);
            c->n_messages++;
        }
    }

    size_t i;
    json_t *m;
    json_t *last_user = NULL, *tool_out = NULL;
    json_array_foreach(msgs, i, m) {
        json_t *role = json_object_get(m, "role");
        if (!json_is_object(m) || !json_is_string(role))
            return fail(err, errlen, "messages: each message must be an object with a role");
        json_t *content = json_object_get(m, "content");
        if (d == SW_LLMSIM_ANTHROPIC && !json_is_string(content) && !json_is_array(content))
            return fail(err, errlen, "messages: content must be a string or an array of blocks");
        content_text(content, &c->text_bytes, &c->text_pieces, NULL);
        c->n_messages++;
        if (!strcmp(json_string_value(role), "user"))
            last_user = content, tool_out = NULL;
        else if (!strcmp(json_string_value(role), "tool"))
            tool_out = content;
    }
    c->prompt_tokens = sw_llmsim_prompt_tokens(c->text_bytes, c->n_messages);
    size_t pt = c->text_pieces + 4 * (size_t)c->n_messages;
    c->prompt_tokens_pieces = pt > 0x7fffffff ? 0x7fffffff : (int)pt;
    if (last_user) {
        size_t ignored = 0;
        if (content_text(last_user, &ignored, NULL, &c->last_user) == SW_ETOOBIG)
            return fail(err, errlen, "messages: the last user message is too long to echo");
    }
    json_t *tools = json_object_get(root, "tools");
    if (d == SW_LLMSIM_OPENAI &&
        sw_llmsim_chat_script(c, json_is_array(tools) && json_array_size(tools), tool_out))
        return fail(err, errlen, "messages: the tool output is too long to echo");
    return SW_OK;
}

int sw_llmsim_chat_script(struct sw_llmsim_chat *c, bool has_tools, const json_t *tool_out)
{
    const size_t pre = sizeof SW_LLMSIM_SCRIPT_PREFIX - 1;
    struct sw_buf *u = &c->last_user;
    if (!has_tools || u->len < pre || memcmp(u->ptr, SW_LLMSIM_SCRIPT_PREFIX, pre))
        return SW_OK;
    if (tool_out) {
        size_t ignored = 0;
        sw_buf_reset(u);
        return content_text((json_t *)tool_out, &ignored, NULL, u);
    }
    size_t name = pre, end = pre;
    while (end < u->len && u->ptr[end] != ' ')
        end++;
    if (end == name || end - name >= sizeof c->forced_tool)
        return SW_OK;
    memcpy(c->forced_tool, u->ptr + name, end - name);
    c->forced_tool[end - name] = 0;
    c->scripted = true;
    c->wants_json = true;
    while (end < u->len && u->ptr[end] == ' ')
        end++;
    memmove(u->ptr, u->ptr + end, u->len - end);
    u->len -= end;
    u->ptr[u->len] = 0;
    return SW_OK;
}

void sw_llmsim_chat_free(struct sw_llmsim_chat *c)
{
    sw_buf_free(&c->last_user);
}

/* ---- Answer text ---- */

/* With a leading space; the first token of an answer drops it. */
static const char *const lorem_words[] = {
    " lorem", " ipsum", " dolor", " sit", " amet", " consectetur", " adipiscing", " elit",
    " sed", " do", " eiusmod", " tempor", " incididunt", " ut", " labore", " et", " dolore",
    " magna", " aliqua", " enim", " ad", " minim", " veniam", " quis", " nostrud",
    " exercitation", " ullamco", " laboris", " nisi", " aliquip", " ex", " ea", " commodo",
    " consequat", " duis", " aute", " irure", " in", " reprehenderit", " voluptate",
    " velit", " esse", " cillum", " fugiat", " nulla", " pariatur", " excepteur", " sint",
    " occaecat", " cupidatat", " non", " proident", " sunt", " culpa", " qui", " officia",
    " deserunt", " mollit", " anim", " id", " est", " laborum",
};

void sw_llmsim_text_lorem(struct sw_llmsim_text *t, uint64_t seed)
{
    *t = (struct sw_llmsim_text){.mode = SW_LLMSIM_REPLY_LOREM, .rng = seed};
}

void sw_llmsim_text_echo(struct sw_llmsim_text *t, const char *src, size_t len)
{
    *t = (struct sw_llmsim_text){.mode = SW_LLMSIM_REPLY_ECHO, .src = src, .len = len};
}

static size_t echo_end(const char *s, size_t len, size_t pos)
{
    size_t end = pos + 4 < len ? pos + 4 : len;
    while (end < len && ((unsigned char)s[end] & 0xC0) == 0x80)
        end++;
    return end;
}

struct sw_str sw_llmsim_text_next(struct sw_llmsim_text *t)
{
    struct sw_str r = {"", 0};
    if (t->mode == SW_LLMSIM_REPLY_LOREM) {
        size_t n = sizeof lorem_words / sizeof lorem_words[0];
        const char *w = lorem_words[sw_llmsim_rand(&t->rng) % n];
        if (t->k == 0)
            w++;
        r.ptr = w;
        r.len = strlen(w);
    } else if (t->pos < t->len) {
        size_t end = echo_end(t->src, t->len, t->pos);
        r.ptr = t->src + t->pos;
        r.len = end - t->pos;
        t->pos = end;
    }
    t->k++;
    return r;
}

int sw_llmsim_echo_tokens(const char *s, size_t len)
{
    int n = 0;
    for (size_t pos = 0; pos < len; pos = echo_end(s, len, pos))
        n++;
    return n;
}
