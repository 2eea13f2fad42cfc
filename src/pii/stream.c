/* Streaming unmask of chat.completion.chunk objects; see pii.h. Each field
 * (content, refusal, each tool call's arguments, per choice) keeps its own
 * held-back tail: at most SW_PII_MAX_PLACEHOLDER - 1 bytes, a '[' followed by
 * placeholder characters. Because a placeholder contains no '[', only the
 * last '[' of a field can still be undecided, so the output of each field is
 * exactly the whole-text unmask of its concatenated input. */
#include "pii/pii.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "pii/mask.h"

#define MAX_CHOICES 8
#define MAX_TOOLS 128
#define HELD_MAX 64

struct choice {
    bool used;
    json_int_t index;
    struct sw_buf content, refusal;
    struct sw_buf tools[MAX_TOOLS];
};

struct sw_pii_stream {
    const struct sw_pii_map *m;
    struct choice *ch[MAX_CHOICES];
    json_t *last;               /* last chunk seen (reference) */
    struct sw_buf tmp, out;
};

struct sw_pii_stream *sw_pii_stream_new(const struct sw_pii_map *m)
{
    struct sw_pii_stream *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->m = m;
    sw_buf_init(&s->tmp, SW_PII_MAX_TEXT);
    sw_buf_init(&s->out, SW_PII_MAX_TEXT);
    return s;
}

static void wipe(struct sw_buf *b)
{
    if (b->ptr)
        explicit_bzero(b->ptr, b->cap);
    sw_buf_free(b);
}

void sw_pii_stream_free(struct sw_pii_stream *s)
{
    if (!s)
        return;
    for (int i = 0; i < MAX_CHOICES; i++) {
        struct choice *c = s->ch[i];
        if (!c)
            continue;
        sw_buf_free(&c->content);
        sw_buf_free(&c->refusal);
        for (int t = 0; t < MAX_TOOLS; t++)
            sw_buf_free(&c->tools[t]);
        free(c);
    }
    json_decref(s->last);
    wipe(&s->tmp);
    wipe(&s->out);
    free(s);
}

static struct choice *choice_for(struct sw_pii_stream *s, json_int_t index)
{
    for (int i = 0; i < MAX_CHOICES; i++)
        if (s->ch[i] && s->ch[i]->index == index)
            return s->ch[i];
    for (int i = 0; i < MAX_CHOICES; i++)
        if (!s->ch[i]) {
            struct choice *c = calloc(1, sizeof *c);
            if (!c)
                return NULL;
            c->used = true;
            c->index = index;
            sw_buf_init(&c->content, HELD_MAX);
            sw_buf_init(&c->refusal, HELD_MAX);
            for (int t = 0; t < MAX_TOOLS; t++)
                sw_buf_init(&c->tools[t], HELD_MAX);
            s->ch[i] = c;
            return c;
        }
    return NULL;
}

/* Rewrites one streamed string field: held + text, unmasked up to what must
 * still be held. */
static int feed(struct sw_pii_stream *s, struct sw_buf *held, json_t *str, int json_text)
{
    const char *t = json_string_value(str);
    size_t len = json_string_length(str);
    int rc;
    if (sw_pii_map_size(s->m) == 0 || (held->len == 0 && !memchr(t, '[', len)))
        return SW_OK;
    sw_buf_reset(&s->tmp);
    if ((rc = sw_buf_append(&s->tmp, held->ptr ? held->ptr : "", held->len)) ||
        (rc = sw_buf_append(&s->tmp, t, len)))
        return rc;
    size_t cut = sw_pii_hold_from(s->m, s->tmp.ptr, s->tmp.len);
    sw_buf_reset(&s->out);
    if ((rc = sw_pii_unmask_text(s->m, s->tmp.ptr, cut, json_text, &s->out)))
        return rc;
    sw_buf_reset(held);
    if ((rc = sw_buf_append(held, s->tmp.ptr + cut, s->tmp.len - cut)))
        return rc;
    if (json_string_setn(str, s->out.ptr ? s->out.ptr : "", s->out.len))
        return SW_ENOMEM;
    return SW_OK;
}

static int append_to(json_t *obj, const char *key, const struct sw_buf *held)
{
    json_t *cur = json_object_get(obj, key);
    if (json_is_string(cur)) {
        size_t l = json_string_length(cur);
        char *n = malloc(l + held->len + 1);
        if (!n)
            return SW_ENOMEM;
        memcpy(n, json_string_value(cur), l);
        memcpy(n + l, held->ptr, held->len);
        int r = json_string_setn(cur, n, l + held->len);
        free(n);
        return r ? SW_ENOMEM : SW_OK;
    }
    return json_object_set_new(obj, key, json_stringn(held->ptr, held->len)) ? SW_ENOMEM : SW_OK;
}

/* Moves everything c holds into delta (created if missing). */
static int flush_into(struct choice *c, json_t *delta)
{
    int rc;
    if (c->content.len) {
        if ((rc = append_to(delta, "content", &c->content)))
            return rc;
        sw_buf_reset(&c->content);
    }
    if (c->refusal.len) {
        if ((rc = append_to(delta, "refusal", &c->refusal)))
            return rc;
        sw_buf_reset(&c->refusal);
    }
    for (int t = 0; t < MAX_TOOLS; t++) {
        if (!c->tools[t].len)
            continue;
        json_t *tcs = json_object_get(delta, "tool_calls"), *tc = NULL, *x;
        size_t k;
        if (!json_is_array(tcs)) {
            tcs = json_array();
            if (!tcs || json_object_set_new(delta, "tool_calls", tcs))
                return SW_ENOMEM;
        }
        json_array_foreach(tcs, k, x) {
            json_t *ix = json_object_get(x, "index");
            if ((json_is_integer(ix) && json_integer_value(ix) == t) || (!ix && (int)k == t)) {
                tc = x;
                break;
            }
        }
        if (!tc) {
            tc = json_pack("{s:I, s:{}}", "index", (json_int_t)t, "function");
            if (!tc || json_array_append_new(tcs, tc))
                return SW_ENOMEM;
        }
        json_t *f = json_object_get(tc, "function");
        if (!json_is_object(f)) {
            f = json_object();
            if (!f || json_object_set_new(tc, "function", f))
                return SW_ENOMEM;
        }
        if ((rc = append_to(f, "arguments", &c->tools[t])))
            return rc;
        sw_buf_reset(&c->tools[t]);
    }
    return SW_OK;
}

int sw_pii_stream_chunk(struct sw_pii_stream *s, json_t *chunk)
{
    json_t *choices = json_object_get(chunk, "choices"), *chv, *tc;
    size_t i, k;
    int rc;
    if (!json_is_object(chunk))
        return SW_EINVAL;
    json_incref(chunk);
    json_decref(s->last);
    s->last = chunk;
    if (!json_is_array(choices) || sw_pii_map_size(s->m) == 0)
        return SW_OK;
    json_array_foreach(choices, i, chv) {
        json_t *ix = json_object_get(chv, "index");
        json_int_t index = json_is_integer(ix) ? json_integer_value(ix) : (json_int_t)i;
        json_t *delta = json_object_get(chv, "delta");
        json_t *fin = json_object_get(chv, "finish_reason");
        bool finished = fin && !json_is_null(fin);
        struct choice *c = NULL;
        if (json_is_object(delta) || finished) {
            c = choice_for(s, index);
            if (!c)
                return SW_EINVAL;
        }
        if (json_is_object(delta)) {
            json_t *content = json_object_get(delta, "content");
            if (json_is_string(content) && (rc = feed(s, &c->content, content, 0)))
                return rc;
            json_t *refusal = json_object_get(delta, "refusal");
            if (json_is_string(refusal) && (rc = feed(s, &c->refusal, refusal, 0)))
                return rc;
            json_t *tcs = json_object_get(delta, "tool_calls");
            if (json_is_array(tcs))
                json_array_foreach(tcs, k, tc) {
                    json_t *tix = json_object_get(tc, "index");
                    json_int_t t = json_is_integer(tix) ? json_integer_value(tix) : (json_int_t)k;
                    if (t < 0 || t >= MAX_TOOLS)
                        return SW_EINVAL;
                    json_t *args = json_object_get(json_object_get(tc, "function"), "arguments");
                    if (json_is_string(args) && (rc = feed(s, &c->tools[t], args, 1)))
                        return rc;
                }
        }
        if (finished) {
            if (!json_is_object(delta)) {
                delta = json_object();
                if (!delta || json_object_set_new(chv, "delta", delta))
                    return SW_ENOMEM;
            }
            if ((rc = flush_into(c, delta)))
                return rc;
        }
    }
    return SW_OK;
}

static bool holds(const struct choice *c)
{
    if (c->content.len || c->refusal.len)
        return true;
    for (int t = 0; t < MAX_TOOLS; t++)
        if (c->tools[t].len)
            return true;
    return false;
}

json_t *sw_pii_stream_finish(struct sw_pii_stream *s)
{
    static const char *const copy[] = {"id", "object", "created", "model", "system_fingerprint",
                                       "service_tier", NULL};
    json_t *out = NULL, *choices = NULL;
    for (int i = 0; i < MAX_CHOICES; i++) {
        struct choice *c = s->ch[i];
        if (!c || !holds(c))
            continue;
        if (!out) {
            out = json_object();
            choices = json_array();
            if (!out || !choices || json_object_set_new(out, "choices", choices))
                goto fail;
            for (const char *const *k = copy; *k; k++) {
                json_t *v = json_object_get(s->last, *k);
                if (v && json_object_set(out, *k, v))
                    goto fail;
            }
            if (!json_object_get(out, "object") &&
                json_object_set_new(out, "object", json_string("chat.completion.chunk")))
                goto fail;
        }
        json_t *delta = json_object();
        json_t *chv = json_pack("{s:I, s:o, s:n}", "index", c->index, "delta", delta,
                                "finish_reason");
        if (!chv || json_array_append_new(choices, chv) || flush_into(c, delta))
            goto fail;
    }
    return out;
fail:
    json_decref(out);
    return NULL;
}
