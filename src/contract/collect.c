#include "contract/collect.h"

#include <string.h>
#include <stdlib.h>

void sw_contract_collect_init(struct sw_contract_collect *c, const char *tool, size_t max_bytes)
{
    sw_buf_free(&c->text);
    sw_buf_init(&c->text, max_bytes);
    c->tool = tool;
    c->overflow = false;
    c->block = -1;
    c->called = false;
}

void sw_contract_collect_free(struct sw_contract_collect *c)
{
    sw_buf_free(&c->text);
}

static void append(struct sw_contract_collect *c, const json_t *s)
{
    if (json_is_string(s) && sw_buf_append(&c->text, json_string_value(s), json_string_length(s)))
        c->overflow = true;
}

void sw_contract_collect_chunk(struct sw_contract_collect *c, const json_t *chunk)
{
    const json_t *delta =
        json_object_get(json_array_get(json_object_get(chunk, "choices"), 0), "delta");
    const json_t *s = json_object_get(delta, "content");
    if (c->tool)
        s = json_object_get(json_object_get(json_array_get(json_object_get(delta, "tool_calls"), 0),
                                            "function"),
                            "arguments");
    append(c, s);
}

void sw_contract_collect_native(struct sw_contract_collect *c, const char *type, const json_t *ev)
{
    const json_t *idx = json_object_get(ev, "index");
    if (!c->tool) {
        /* no forced tool (output_config.format): the text blocks are judged */
        const json_t *d = json_object_get(ev, "delta");
        const char *dt = json_string_value(json_object_get(d, "type"));
        c->called = true;
        if (!strcmp(type, "content_block_delta") && dt && !strcmp(dt, "text_delta"))
            append(c, json_object_get(d, "text"));
        return;
    }
    if (!strcmp(type, "content_block_start") && c->block < 0 && json_is_integer(idx)) {
        const json_t *cb = json_object_get(ev, "content_block");
        const char *t = json_string_value(json_object_get(cb, "type"));
        const char *n = json_string_value(json_object_get(cb, "name"));
        if (t && n && !strcmp(t, "tool_use") && !strcmp(n, c->tool)) {
            c->block = (int)json_integer_value(idx);
            c->called = true;
        }
    } else if (!strcmp(type, "content_block_delta") && c->block >= 0 && json_is_integer(idx) &&
               json_integer_value(idx) == c->block) {
        const json_t *d = json_object_get(ev, "delta");
        const char *dt = json_string_value(json_object_get(d, "type"));
        if (dt && !strcmp(dt, "input_json_delta"))
            append(c, json_object_get(d, "partial_json"));
    } else if (!strcmp(type, "content_block_stop") && json_is_integer(idx) &&
               json_integer_value(idx) == c->block) {
        c->block = -2; /* done: a later block of the same name is not judged */
    }
}

const char *sw_contract_collected(const struct sw_contract_collect *c, size_t *len)
{
    *len = c->text.len;
    return c->overflow ? NULL : c->text.ptr ? c->text.ptr : "";
}

const char *sw_contract_collected_native(const struct sw_contract_collect *c, size_t *len)
{
    if (!c->tool)
        return sw_contract_collected(c, len);
    *len = !c->called ? 0 : c->text.len ? c->text.len : 2;
    if (!c->called || c->overflow)
        return NULL;
    return c->text.len ? c->text.ptr : "{}";
}

const char *sw_contract_answer_text(const json_t *answer, const char *tool, size_t *len)
{
    const json_t *msg =
        json_object_get(json_array_get(json_object_get(answer, "choices"), 0), "message");
    const json_t *c = json_object_get(msg, "content");
    if (tool) {
        size_t i;
        const json_t *tc;
        c = NULL;
        json_array_foreach(json_object_get(msg, "tool_calls"), i, tc) {
            const json_t *fn = json_object_get(tc, "function");
            const char *n = json_string_value(json_object_get(fn, "name"));
            if (n && !strcmp(n, tool)) {
                c = json_object_get(fn, "arguments");
                break;
            }
        }
    }
    *len = json_is_string(c) ? json_string_length(c) : 0;
    return json_string_value(c);
}

char *sw_contract_native_answer_text(const json_t *answer, const char *tool)
{
    size_t i;
    const json_t *blk;
    if (!tool) {
        /* no forced tool (output_config.format): the text blocks, joined */
        struct sw_buf b;
        sw_buf_init(&b, (size_t)1 << 30);
        json_array_foreach(json_object_get(answer, "content"), i, blk) {
            const char *t = json_string_value(json_object_get(blk, "type"));
            const json_t *tx = json_object_get(blk, "text");
            if (t && !strcmp(t, "text") && json_is_string(tx) &&
                sw_buf_append(&b, json_string_value(tx), json_string_length(tx))) {
                sw_buf_free(&b);
                return NULL;
            }
        }
        char *s = strndup(b.ptr ? b.ptr : "", b.len);
        sw_buf_free(&b);
        return s;
    }
    json_array_foreach(json_object_get(answer, "content"), i, blk) {
        const char *t = json_string_value(json_object_get(blk, "type"));
        const char *n = json_string_value(json_object_get(blk, "name"));
        if (t && n && !strcmp(t, "tool_use") && !strcmp(n, tool))
            return json_dumps(json_object_get(blk, "input"), JSON_COMPACT | JSON_ENCODE_ANY);
    }
    return NULL;
}
