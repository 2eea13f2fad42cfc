/* Unmasking of Anthropic Messages answers in their own shape, whole and
 * streamed; see pii.h. A streamed block keeps its own held-back tail (at
 * most SW_PII_MAX_PLACEHOLDER - 1 bytes, as stream.c does per field), so the
 * text of each block is exactly the whole-text unmask of its deltas. */
#include "pii/pii.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "pii/mask.h"

#define MAX_BLOCKS 64
#define HELD_MAX 64
#define MAX_DEPTH 256

/* ---- Whole blocks ---- */

/* Every string value of a tool's input, at any depth. */
static int unmask_values(const struct sw_pii_map *m, json_t *v, int depth, struct sw_buf *buf)
{
    if (depth > MAX_DEPTH)
        return SW_EINVAL;
    if (json_is_string(v))
        return sw_pii_unmask_string(m, v, 0, buf);
    size_t i;
    const char *k;
    json_t *x;
    int rc;
    if (json_is_array(v))
        json_array_foreach(v, i, x)
            if ((rc = unmask_values(m, x, depth + 1, buf)))
                return rc;
    if (json_is_object(v))
        json_object_foreach(v, k, x)
            if ((rc = unmask_values(m, x, depth + 1, buf)))
                return rc;
    return SW_OK;
}

/* One content block: a text block's text, a thinking block's thinking, a
 * tool call's input; signatures and redacted data are the provider's own. */
static int unmask_block(const struct sw_pii_map *m, json_t *block, struct sw_buf *buf)
{
    const char *type = json_string_value(json_object_get(block, "type"));
    if (!type)
        return SW_OK;
    if (!strcmp(type, "text"))
        return sw_pii_unmask_string(m, json_object_get(block, "text"), 0, buf);
    if (!strcmp(type, "thinking"))
        return sw_pii_unmask_string(m, json_object_get(block, "thinking"), 0, buf);
    if (!strcmp(type, "tool_use") || !strcmp(type, "server_tool_use"))
        return unmask_values(m, json_object_get(block, "input"), 0, buf);
    return SW_OK;
}

static int unmask_content(const struct sw_pii_map *m, json_t *content, struct sw_buf *buf)
{
    size_t i;
    json_t *b;
    int rc;
    json_array_foreach(content, i, b)
        if ((rc = unmask_block(m, b, buf)))
            return rc;
    return SW_OK;
}

int sw_pii_unmask_message(const struct sw_pii_map *m, json_t *message)
{
    if (sw_pii_map_size(m) == 0 || !json_is_object(message))
        return SW_OK;
    struct sw_buf buf;
    sw_buf_init(&buf, SW_PII_MAX_TEXT);
    int rc = unmask_content(m, json_object_get(message, "content"), &buf);
    if (buf.ptr)
        explicit_bzero(buf.ptr, buf.cap);
    sw_buf_free(&buf);
    return rc;
}

/* ---- Streamed events ---- */

struct block {
    bool used;
    json_int_t index;
    const char *delta_type;     /* of the held text: "text_delta", ... (a literal) */
    const char *field;          /* its field: "text", "thinking", "partial_json" */
    struct sw_buf held;
};

struct sw_pii_nstream {
    const struct sw_pii_map *m;
    struct block b[MAX_BLOCKS];
    struct sw_buf tmp, out;
};

struct sw_pii_nstream *sw_pii_nstream_new(const struct sw_pii_map *m)
{
    struct sw_pii_nstream *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->m = m;
    for (int i = 0; i < MAX_BLOCKS; i++)
        sw_buf_init(&s->b[i].held, HELD_MAX);
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

void sw_pii_nstream_free(struct sw_pii_nstream *s)
{
    if (!s)
        return;
    for (int i = 0; i < MAX_BLOCKS; i++)
        wipe(&s->b[i].held);
    wipe(&s->tmp);
    wipe(&s->out);
    free(s);
}

static struct block *block_for(struct sw_pii_nstream *s, json_int_t index, bool create)
{
    for (int i = 0; i < MAX_BLOCKS; i++)
        if (s->b[i].used && s->b[i].index == index)
            return &s->b[i];
    if (!create)
        return NULL;
    for (int i = 0; i < MAX_BLOCKS; i++)
        if (!s->b[i].used) {
            s->b[i].used = true;
            s->b[i].index = index;
            s->b[i].delta_type = s->b[i].field = NULL;
            sw_buf_reset(&s->b[i].held);
            return &s->b[i];
        }
    return NULL;
}

/* held + the delta's text, unmasked up to what must still be held. */
static int feed(struct sw_pii_nstream *s, struct block *b, json_t *str, int json_text)
{
    const char *t = json_string_value(str);
    size_t len = json_string_length(str);
    int rc;
    if (b->held.len == 0 && !memchr(t, '[', len))
        return SW_OK;
    sw_buf_reset(&s->tmp);
    if ((rc = sw_buf_append(&s->tmp, b->held.ptr ? b->held.ptr : "", b->held.len)) ||
        (rc = sw_buf_append(&s->tmp, t, len)))
        return rc;
    size_t cut = sw_pii_hold_from(s->m, s->tmp.ptr, s->tmp.len);
    sw_buf_reset(&s->out);
    if ((rc = sw_pii_unmask_text(s->m, s->tmp.ptr, cut, json_text, &s->out)))
        return rc;
    sw_buf_reset(&b->held);
    if ((rc = sw_buf_append(&b->held, s->tmp.ptr + cut, s->tmp.len - cut)))
        return rc;
    return json_string_setn(str, s->out.ptr ? s->out.ptr : "", s->out.len) ? SW_ENOMEM : SW_OK;
}

static int on_delta(struct sw_pii_nstream *s, json_int_t index, json_t *delta)
{
    static const struct { const char *type, *field; int json_text; } kinds[] = {
        {"text_delta", "text", 0},
        {"thinking_delta", "thinking", 0},
        {"input_json_delta", "partial_json", 1},
    };
    const char *type = json_string_value(json_object_get(delta, "type"));
    for (size_t k = 0; type && k < sizeof kinds / sizeof kinds[0]; k++) {
        if (strcmp(type, kinds[k].type))
            continue;
        json_t *str = json_object_get(delta, kinds[k].field);
        if (!json_is_string(str))
            return SW_OK;
        struct block *b = block_for(s, index, true);
        if (!b)
            return SW_EINVAL;
        if (b->held.len && b->field && strcmp(b->field, kinds[k].field))
            return SW_EINVAL;   /* one block, one kind of delta */
        b->delta_type = kinds[k].type;
        b->field = kinds[k].field;
        return feed(s, b, str, kinds[k].json_text);
    }
    return SW_OK;
}

/* The delta event that carries what block b still holds. */
static json_t *held_event(struct block *b)
{
    json_t *ev = json_pack("{s:s, s:I, s:{s:s, s:s%}}", "type", "content_block_delta", "index",
                           b->index, "delta", "type", b->delta_type, b->field, b->held.ptr,
                           b->held.len);
    explicit_bzero(b->held.ptr, b->held.cap);
    sw_buf_reset(&b->held);
    return ev;
}

int sw_pii_nstream_event(struct sw_pii_nstream *s, json_t *ev, json_t **before)
{
    *before = NULL;
    if (!json_is_object(ev))
        return SW_EINVAL;
    if (sw_pii_map_size(s->m) == 0)
        return SW_OK;
    const char *type = json_string_value(json_object_get(ev, "type"));
    json_t *ix = json_object_get(ev, "index");
    json_int_t index = json_is_integer(ix) ? json_integer_value(ix) : 0;
    if (!type)
        return SW_OK;
    struct sw_buf buf;
    int rc = SW_OK;
    if (!strcmp(type, "message_start")) {
        sw_buf_init(&buf, SW_PII_MAX_TEXT);
        rc = unmask_content(s->m, json_object_get(json_object_get(ev, "message"), "content"), &buf);
        wipe(&buf);
    } else if (!strcmp(type, "content_block_start")) {
        struct block *b = block_for(s, index, false);
        if (b) {    /* an index used again: a new block */
            sw_buf_reset(&b->held);
            b->used = false;
        }
        sw_buf_init(&buf, SW_PII_MAX_TEXT);
        rc = unmask_block(s->m, json_object_get(ev, "content_block"), &buf);
        wipe(&buf);
    } else if (!strcmp(type, "content_block_delta")) {
        rc = on_delta(s, index, json_object_get(ev, "delta"));
    } else if (!strcmp(type, "content_block_stop")) {
        struct block *b = block_for(s, index, false);
        if (b && b->held.len && !(*before = held_event(b)))
            rc = SW_ENOMEM;
        if (b)
            b->used = false;
    }
    return rc;
}
