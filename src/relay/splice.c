#include "relay/splice.h"

#include <event2/buffer.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/json.h"

char *sw_splice_quote(const char *s)
{
    size_t n = strlen(s);
    /* escaped on the stack when short (a model name), else in a block of
     * the most it can take; the result at its size either way: a stream
     * keeps the public name's copy while it runs */
    char small[256];
    size_t room = SW_JSON_ESCAPED_MAX(n) + 3;
    char *w = room <= sizeof small ? small : malloc(room);
    if (!w)
        return NULL;
    size_t k = sw_json_escape_into(w + 1, s, n, SW_JSON_ESC_CHECK_UTF8);
    char *fit = k == SIZE_MAX ? NULL : malloc(k + 3);
    if (fit) {
        fit[0] = '"';
        memcpy(fit + 1, w + 1, k);
        fit[k + 1] = '"';
        fit[k + 2] = '\0';
    }
    if (w != small)
        free(w);
    return fit;
}

char *sw_splice_member(const char *text, size_t len, struct sw_jspan at, const char *key,
                       const char *with, size_t *out_len)
{
    size_t wl = strlen(with), kl = strlen(key);
    char *b = malloc(len + kl + wl + 8); /* the whole result, allocated once */
    if (!b)
        return NULL;
    char *o = b;
    if (at.len) {
        memcpy(o, text, at.off);
        o += at.off;
        memcpy(o, with, wl);
        o += wl;
        memcpy(o, text + at.off + at.len, len - at.off - at.len);
        o += len - at.off - at.len;
    } else {
        const char *brace = memchr(text, '{', len);
        size_t head = brace ? (size_t)(brace - text) + 1 : 0;
        memcpy(o, text, head);
        o += head;
        *o++ = '"';
        memcpy(o, key, kl);
        o += kl;
        *o++ = '"';
        *o++ = ':';
        memcpy(o, with, wl);
        o += wl;
        /* A member follows unless the object was empty. */
        size_t i = head;
        while (i < len && strchr(" \t\r\n", text[i]))
            i++;
        if (i < len && text[i] != '}')
            *o++ = ',';
        memcpy(o, text + head, len - head);
        o += len - head;
    }
    *o = '\0';
    *out_len = (size_t)(o - b);
    return b;
}

/* Reads prompt_tokens and completion_tokens of a usage object span; with
 * `checked` (the span is inside text sw_jscan_object accepted whole) its
 * syntax is not checked a second time. */
/* The integer member `key` of the object at span (checked: known well-formed);
 * -1 when absent or not a count. */
static long span_member_long(const char *text, struct sw_jspan span, const char *key, bool checked)
{
    const char *const keys[] = {key};
    struct sw_jspan v[1];
    if (!span.len || text[span.off] != '{' ||
        !(checked ? sw_jscan_members : sw_jscan_object)(text + span.off, span.len, keys, v, NULL, 1) ||
        !v[0].len)
        return -1;
    return sw_jscan_long(text + span.off, v[0]);
}

/* The prompt tokens a local server found in its prefix cache, from the
 * answer's or chunk's `timings` object (llama.cpp: cache_n). */
static void read_timings_span(struct sw_stage_usage *u, const char *text, struct sw_jspan span,
                              bool checked)
{
    long n = span_member_long(text, span, "cache_n", checked);
    if (n >= 0) {
        u->cached = n;
        u->cached_known = true;
    }
}

static void read_usage_span(struct sw_stage_usage *u, const char *text, struct sw_jspan span,
                            bool checked)
{
    static const char *const keys[] = {"prompt_tokens", "completion_tokens",
                                       "prompt_tokens_details"};
    struct sw_jspan us[3];
    if (!span.len || text[span.off] != '{')
        return;
    if (!(checked ? sw_jscan_members : sw_jscan_object)(text + span.off, span.len, keys, us, NULL, 3))
        return;
    long in = sw_jscan_long(text + span.off, us[0]), out = sw_jscan_long(text + span.off, us[1]);
    if (in >= 0)
        u->in = in;
    if (out >= 0)
        u->out = out;
    if (us[2].len) {
        struct sw_jspan d = {span.off + us[2].off, us[2].len};
        long cached = span_member_long(text, d, "cached_tokens", checked);
        if (cached >= 0) {
            u->cached = cached;
            u->cached_known = true;
        }
    }
}

/* Writes "data: " + data with edits[0..n) (in text order) + "\n\n" in one
 * reserved extent: the event's size is known, so one extent takes it
 * instead of an evbuffer_add per part. */
static int write_edited(struct evbuffer *out, const char *data, size_t len,
                        const struct sw_jspan *edit, const char *const *with, int n)
{
    size_t wlen[2], total = 6 + len + 2;
    for (int i = 0; i < n; i++) {
        wlen[i] = strlen(with[i]);
        total += wlen[i] - edit[i].len;
    }
    struct evbuffer_iovec vec;
    if (evbuffer_reserve_space(out, (ev_ssize_t)total, &vec, 1) != 1)
        return SW_ENOMEM;
    char *o = vec.iov_base;
    memcpy(o, "data: ", 6);
    o += 6;
    size_t at = 0;
    for (int i = 0; i < n; i++) {
        memcpy(o, data + at, edit[i].off - at);
        o += edit[i].off - at;
        memcpy(o, with[i], wlen[i]);
        o += wlen[i];
        at = edit[i].off + edit[i].len;
    }
    memcpy(o, data + at, len - at);
    o += len - at;
    memcpy(o, "\n\n", 2);
    vec.iov_len = total;
    evbuffer_commit_space(out, &vec, 1);
    return SW_OK;
}

/* An event of an unmasked stream, edited as bytes: `model` rewritten, the
 * usage Spillway asked for on the client's behalf dropped, usage read. */
static enum sw_stage_rc splice_event(struct sw_stage *st, struct sw_stage_io *io)
{
    struct sw_splice_stage *sp = st->ctx;
    static const char *const keys[] = {"model", "choices", "usage", "error", "timings"};
    const char *data = io->data;
    size_t len = io->len;
    struct sw_jspan v[5], m[5];
    if (len == 6 && memcmp(data, "[DONE]", 6) == 0) {
        io->done = true;
        return SW_STAGE_OK;
    }
    if (!sw_jscan_object(data, len, keys, v, m, 5))
        return sw_stage_fail(io, SW_EPROTO, 0, "malformed JSON in stream event");
    if (v[4].len)
        read_timings_span(io->usage, data, v[4], true);
    if (v[3].len && !io->started)
        return sw_stage_fail(io, SW_ESTATUS, 0, "error event before the first token");
    bool choices = v[1].len && data[v[1].off] == '[';
    bool no_choices = choices && sw_jscan_empty_array(data, v[1]);
    struct sw_jspan cut = {0, 0};
    if (v[2].len && data[v[2].off] == '{') {
        read_usage_span(io->usage, data, v[2], false);
        if (!sp->client_wants_usage && no_choices)
            return SW_STAGE_OK; /* the usage-only chunk the client did not ask for */
    } else if (v[2].len == 4 && !memcmp(data + v[2].off, "null", 4) && !sp->client_wants_usage) {
        cut = sw_jscan_cut(data, len, m[2]);
    }
    if (choices && !no_choices)
        io->usage->chunks++;
    /* Up to two edits in text order: the model value and the cut usage. */
    struct sw_jspan edit[2];
    const char *with[2];
    int n = 0;
    /* The model is rewritten only when it differs from the public name. */
    if (v[0].len && data[v[0].off] == '"' && sp->public_model_json &&
        (v[0].len != strlen(sp->public_model_json) ||
         memcmp(data + v[0].off, sp->public_model_json, v[0].len) != 0)) {
        edit[n] = v[0];
        with[n++] = sp->public_model_json;
    }
    if (cut.len) {
        edit[n] = cut;
        with[n++] = "";
    }
    if (n == 2 && edit[1].off < edit[0].off) {
        struct sw_jspan t = edit[0];
        const char *w = with[0];
        edit[0] = edit[1], with[0] = with[1];
        edit[1] = t, with[1] = w;
    }
    if (write_edited(io->out, data, len, edit, with, n))
        return sw_stage_fail(io, SW_ENOMEM, 0, "out of memory");
    return SW_STAGE_OK;
}

static enum sw_stage_rc splice_end(struct sw_stage *st, struct sw_stage_io *io)
{
    (void)st;
    evbuffer_add(io->out, "data: [DONE]\n\n", 14);
    return SW_STAGE_OK;
}

/* The value at `at` (at.len > 0) of the text in b replaced by `with`, in
 * place. False when b cannot grow that much (its limit, or memory). */
static bool splice_in_place(struct sw_buf *b, struct sw_jspan at, const char *with)
{
    size_t wl = strlen(with), tail = b->len - at.off - at.len;
    if (wl > at.len && sw_buf_append(b, with, wl - at.len))
        return false;       /* grown by the difference; every byte is rewritten below */
    memmove(b->ptr + at.off + wl, b->ptr + at.off + at.len, tail);
    memcpy(b->ptr + at.off, with, wl);
    b->len = at.off + wl + tail;
    b->ptr[b->len] = '\0';
    return true;
}

/* A whole answer that needs no unmasking: checked and edited in place
 * (model rewritten, usage read) without building a tree. */
static enum sw_stage_rc splice_answer(struct sw_stage *st, struct sw_stage_io *io)
{
    struct sw_splice_stage *sp = st->ctx;
    /* An embeddings answer carries its vectors in "data", a chat answer its
     * choices in "choices": either must be there, an array. */
    const char *const keys[] = {"model", sp->embeddings ? "data" : "choices", "usage",
                                "timings"};
    struct sw_jspan v[4];
    struct sw_buf *b = io->answer_text;
    const char *text = b->ptr ? b->ptr : "";
    if (!sw_jscan_object(text, b->len, keys, v, NULL, 4) || !v[1].len || text[v[1].off] != '[')
        return sw_stage_fail(io, SW_EPROTO, io->up_status, "malformed JSON answer");
    read_usage_span(io->usage, text, v[2], true);
    if (v[3].len)
        read_timings_span(io->usage, text, v[3], true);
    if (!sp->public_model_json)
        return sw_stage_fail(io, SW_ENOMEM, 0, "out of memory");
    if (v[0].len && splice_in_place(b, v[0], sp->public_model_json)) {
        io->reply = b->ptr;
        io->reply_len = b->len;
        return SW_STAGE_OK;
    }
    size_t len;
    char *s = sw_splice_member(text, b->len, v[0], "model", sp->public_model_json, &len);
    if (!s)
        return sw_stage_fail(io, SW_ENOMEM, 0, "out of memory");
    io->reply = io->reply_owned = s;
    io->reply_len = len;
    return SW_STAGE_OK;
}

const struct sw_stage_ops sw_splice_ops = {
    .name = "splice",
    .event = splice_event,
    .answer = splice_answer,
    .end = splice_end,
};
