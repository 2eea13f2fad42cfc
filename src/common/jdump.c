#include "common/jdump.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/jmemo.h"
#include "common/json.h"

/* The dump is json_dumps's (see the header): too deep, an invalid key. */
#define TOO_DEEP (-100)

/* Strings up to this many bytes are escaped straight into reserved room
 * (six bytes per input byte at worst); longer ones in steps. */
#define DIRECT_MAX 4096

/* sw_buf_append, inline while the bytes fit what is allocated (and the bound). */
static inline int put(struct sw_buf *b, const char *s, size_t n)
{
    if (b->ptr && b->len + n < b->cap && b->len + n <= b->max) {
        memcpy(b->ptr + b->len, s, n);
        b->len += n;
        b->ptr[b->len] = '\0';
        return SW_OK;
    }
    return sw_buf_append(b, s, n);
}

static int dump_string(const char *s, size_t n, struct sw_buf *b)
{
    int err = n <= DIRECT_MAX ? sw_buf_reserve(b, SW_JSON_ESCAPED_MAX(n) + 2) : SW_ETOOBIG;
    if (err == SW_ENOMEM)
        return err;
    if (!err) {
        char *w = b->ptr + b->len;
        *w = '"';
        size_t k = sw_json_escape_into(w + 1, s, n, SW_JSON_ESC_CHECK_UTF8);
        if (k == SIZE_MAX)
            return SW_EINVAL;
        w[k + 1] = '"';
        b->len += k + 2;
        b->ptr[b->len] = '\0';
        return SW_OK;
    }
    /* long: DIRECT_MAX bytes at a time into reserved room, each step ending
     * on a character's first byte; once the worst case of a step is past
     * the buffer's bound, the rest appended as it is escaped */
    size_t was = b->len;
    err = put(b, "\"", 1);
    size_t i = 0;
    while (!err && i < n) {
        size_t w = n - i;
        if (w > DIRECT_MAX) {
            w = DIRECT_MAX;
            for (int back = 0; back < 3 && ((unsigned char)s[i + w] & 0xC0) == 0x80; back++)
                w--;
        }
        err = sw_buf_reserve(b, SW_JSON_ESCAPED_MAX(w) + 1);
        if (err == SW_ETOOBIG) {
            err = sw_json_escape(b, s + i, n - i, SW_JSON_ESC_CHECK_UTF8);
            break;
        }
        if (err)
            break;
        size_t k = sw_json_escape_into(b->ptr + b->len, s + i, w, SW_JSON_ESC_CHECK_UTF8);
        if (k == SIZE_MAX) {
            err = SW_EINVAL;
            break;
        }
        b->len += k;
        i += w;
    }
    if (!err)
        err = put(b, "\"", 1);
    if (err && b->ptr) {
        b->len = was;
        b->ptr[was] = '\0';
    }
    return err;
}

/* jansson's jsonp_dtostr: "%.17g", the decimal point as '.', ".0" when
 * neither '.' nor 'e' is there, then no '+' and no leading zeros in the
 * exponent. */
static int dump_real(double d, struct sw_buf *b)
{
    char s[64];
    int r = snprintf(s, sizeof s, "%.17g", d);
    if (r < 0 || (size_t)r >= sizeof s - 3)
        return SW_EINVAL;
    size_t len = (size_t)r;
    for (size_t i = 0; i < len; i++)
        if (s[i] == ',')
            s[i] = '.';
    if (!memchr(s, '.', len) && !memchr(s, 'e', len)) {
        memcpy(s + len, ".0", 3);
        len += 2;
    }
    char *e = memchr(s, 'e', len);
    if (e) {
        char *start = e + 1, *end = e + 2;
        if (*start == '-')
            start++;
        while (*end == '0')
            end++;
        if (end != start) {
            memmove(start, end, len - (size_t)(end - s) + 1);
            len -= (size_t)(end - start);
        }
    }
    return put(b, s, len);
}

int sw_json_put_int(struct sw_buf *b, long long v)
{
    char s[24];
    size_t n = 0;
    uint64_t u = (uint64_t)v;
    if (v < 0) {
        s[n++] = '-';
        u = 0 - u;
    }
    n += sw_fmt_u64(s + n, u, 10, 0);
    return put(b, s, n);
}

static int dump(const json_t *v, struct sw_buf *b, int depth, struct sw_json_pieces *pc);

/* The key of an element's compact text kept with it by the parse memo. */
#define TEXT_NOTE 0x6a64756d70310aull   /* "jdump1" */

/* The kept text (ref: its reference) as a piece going before what b holds. */
static int add_piece(struct sw_json_pieces *pc, const struct sw_buf *b, const void *data,
                     size_t len, void *ref)
{
    if (pc->n == pc->cap) {
        size_t cap = pc->cap ? 2 * pc->cap : 64;
        struct sw_json_piece *v = realloc(pc->v, cap * sizeof *v);
        if (!v) {
            sw_jmemo_note_unref(ref);
            return SW_ENOMEM;
        }
        pc->v = v;
        pc->cap = cap;
    }
    pc->v[pc->n++] = (struct sw_json_piece){b->len, data, len, ref};
    pc->bytes += len;
    return SW_OK;
}

/* An element of a top-level array (a message, a tool), or of a root array
 * (a body's input items): the memo holds an agent's resent ones, and their
 * text once written is kept with them (and shared as a piece, with pc). */
static int dump_element(const json_t *v, struct sw_buf *b, int depth, struct sw_json_pieces *pc)
{
    if (!json_is_object(v) && !json_is_array(v))
        return dump(v, b, depth, pc);
    if (pc) {
        const void *data;
        size_t len;
        void *ref = sw_jmemo_note_ref(v, TEXT_NOTE, &data, &len);
        if (ref)
            return add_piece(pc, b, data, len, ref);
    } else if (sw_jmemo_note_append(v, TEXT_NOTE, b)) {
        return SW_OK;
    }
    size_t was = b->len;
    int err = dump(v, b, depth, pc);
    if (!err)
        sw_jmemo_note_put(v, TEXT_NOTE, b->ptr + was, b->len - was);
    return err;
}

static int dump(const json_t *v, struct sw_buf *b, int depth, struct sw_json_pieces *pc)
{
    int err = SW_OK;
    switch (json_typeof(v)) {
    case JSON_NULL: return put(b, "null", 4);
    case JSON_TRUE: return put(b, "true", 4);
    case JSON_FALSE: return put(b, "false", 5);
    case JSON_INTEGER: return sw_json_put_int(b, json_integer_value(v));
    case JSON_REAL: return dump_real(json_real_value(v), b);
    case JSON_STRING: return dump_string(json_string_value(v), json_string_length(v), b);
    case JSON_ARRAY: {
        if (depth >= SW_JSON_DUMP_DEPTH)
            return TOO_DEEP;
        size_t n = json_array_size(v);
        err = put(b, "[", 1);
        for (size_t i = 0; !err && i < n; i++) {
            if (i)
                err = put(b, ",", 1);
            if (!err)
                err = depth <= 1 ? dump_element(json_array_get(v, i), b, depth + 1, pc)
                                 : dump(json_array_get(v, i), b, depth + 1, pc);
        }
        return err ? err : put(b, "]", 1);
    }
    case JSON_OBJECT: {
        if (depth >= SW_JSON_DUMP_DEPTH)
            return TOO_DEEP;
        err = put(b, "{", 1);
        bool first = true;
        for (void *it = json_object_iter((json_t *)v); !err && it;
             it = json_object_iter_next((json_t *)v, it)) {
            if (!first)
                err = put(b, ",", 1);
            first = false;
            /* json_dumps writes an invalid key in part and goes on: its bytes, then */
            if (!err && dump_string(json_object_iter_key(it), json_object_iter_key_len(it), b))
                err = TOO_DEEP;
            if (!err)
                err = put(b, ":", 1);
            if (!err)
                err = dump(json_object_iter_value(it), b, depth + 1, pc);
        }
        return err ? err : put(b, "}", 1);
    }
    }
    return SW_EINVAL;
}

void sw_json_pieces_free(struct sw_json_pieces *pc)
{
    for (size_t i = 0; i < pc->n; i++)
        sw_jmemo_note_unref(pc->v[i].ref);
    free(pc->v);
    *pc = (struct sw_json_pieces){0};
}

static int dump_root(const json_t *v, size_t flags, struct sw_buf *out, struct sw_json_pieces *pc)
{
    size_t was = out->len;
    int err;
    if (!v)
        return SW_EINVAL;
    if ((flags & ~(size_t)(JSON_COMPACT | JSON_ENCODE_ANY)) != 0) {
        err = TOO_DEEP; /* a flag this writer does not do: json_dumps's turn */
    } else if (!(flags & JSON_ENCODE_ANY) && !json_is_object(v) && !json_is_array(v)) {
        return SW_EINVAL;
    } else {
        sw_jmemo_hold(); /* for the notes of its elements */
        err = dump(v, out, 0, pc);
        sw_jmemo_release();
    }
    if (err && pc)
        sw_json_pieces_free(pc);    /* the text is written whole, or not at all */
    if (err == TOO_DEEP) {
        if (out->ptr) {
            out->len = was;
            out->ptr[was] = '\0';
        }
        char *s = json_dumps(v, flags);
        err = s ? put(out, s, strlen(s)) : SW_EINVAL;
        free(s);
    }
    if (err && out->ptr) {
        out->len = was;
        out->ptr[was] = '\0';
    }
    return err;
}

int sw_json_dump_buf(const json_t *v, size_t flags, struct sw_buf *out)
{
    return dump_root(v, flags, out, NULL);
}

int sw_json_dump_pieces(const json_t *v, struct sw_buf *out, struct sw_json_pieces *pc)
{
    *pc = (struct sw_json_pieces){0};
    return dump_root(v, JSON_COMPACT, out, pc);
}

char *sw_json_dumps(const json_t *v, size_t flags)
{
    struct sw_buf b;
    sw_buf_init(&b, SIZE_MAX / 8);
    if (sw_buf_reserve(&b, 1024) || sw_json_dump_buf(v, flags, &b)) {
        sw_buf_free(&b);
        return NULL;
    }
    return b.ptr ? b.ptr : strdup("");
}
