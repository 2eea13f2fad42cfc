/* Masking and unmasking of texts, and the walker over the OpenAI response
 * shape (the request walkers are in walk.c). See pii.h. */
#include "pii/mask.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/err.h"
#include "common/json.h"
#include "pii/detect.h"
#include "pii/map.h"

/* Largest JSON text re-encoded while masking one string (the body is bounded
 * by the front long before this). */
#define TEXT_MAX SW_PII_MAX_TEXT

/* ---- Plain text ---- */

struct mask_ctx {
    const struct sw_pii_engine *e;
    struct sw_pii_map *m;
    const char *text;
    size_t pos;                 /* copied up to here */
    struct sw_buf *out;
    struct sw_pii_counts *counts;
    int json;                   /* text is JSON text (tool-call arguments) */
    size_t jpos;                /* JSON string state known up to here */
    int in_str;
    struct sw_buf val;          /* decoded value */
};

/* Advances the in-string state of JSON text up to `to`. */
static void json_state(struct mask_ctx *c, size_t to)
{
    for (size_t i = c->jpos; i < to; i++) {
        char ch = c->text[i];
        if (c->in_str) {
            if (ch == '\\')
                i++;
            else if (ch == '"')
                c->in_str = 0;
        } else if (ch == '"') {
            c->in_str = 1;
        }
    }
    if (to > c->jpos)
        c->jpos = to;
}

static int hex4(const char *s, size_t n, unsigned *v)
{
    *v = 0;
    if (n < 4)
        return -1;
    for (int i = 0; i < 4; i++) {
        char ch = s[i];
        int d = ch >= '0' && ch <= '9' ? ch - '0' : (ch | 0x20) >= 'a' && (ch | 0x20) <= 'f' ? (ch | 0x20) - 'a' + 10 : -1;
        if (d < 0)
            return -1;
        *v = *v * 16 + (unsigned)d;
    }
    return 0;
}

/* The value a span inside a JSON string stands for: its escapes decoded, so
 * the map holds the same bytes as for the same value in a plain content
 * string (and unmasking re-escapes it for JSON). A malformed escape is kept
 * as it is. */
static int json_unescape(struct sw_buf *out, const char *s, size_t n)
{
    sw_buf_reset(out);
    for (size_t i = 0; i < n; i++) {
        int rc;
        if (s[i] != '\\' || i + 1 >= n) {
            if ((rc = sw_buf_append(out, s + i, 1)))
                return rc;
            continue;
        }
        char ch = s[++i], o;
        unsigned u, lo;
        switch (ch) {
        case 'n': o = '\n'; break;
        case 't': o = '\t'; break;
        case 'r': o = '\r'; break;
        case 'b': o = '\b'; break;
        case 'f': o = '\f'; break;
        case 'u':
            if (hex4(s + i + 1, n - i - 1, &u)) {
                if ((rc = sw_buf_append(out, s + i - 1, 2)))
                    return rc;
                continue;
            }
            i += 4;
            if (u >= 0xd800 && u < 0xdc00 && i + 6 < n + 0 && s[i + 1] == '\\' && s[i + 2] == 'u' &&
                !hex4(s + i + 3, n - i - 3, &lo) && lo >= 0xdc00 && lo < 0xe000) {
                u = 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00);
                i += 6;
            }
            {
                char b[4];
                size_t bl;
                if (u < 0x80) { b[0] = (char)u; bl = 1; }
                else if (u < 0x800) { b[0] = (char)(0xc0 | u >> 6); b[1] = (char)(0x80 | (u & 63)); bl = 2; }
                else if (u < 0x10000) { b[0] = (char)(0xe0 | u >> 12); b[1] = (char)(0x80 | ((u >> 6) & 63)); b[2] = (char)(0x80 | (u & 63)); bl = 3; }
                else { b[0] = (char)(0xf0 | u >> 18); b[1] = (char)(0x80 | ((u >> 12) & 63)); b[2] = (char)(0x80 | ((u >> 6) & 63)); b[3] = (char)(0x80 | (u & 63)); bl = 4; }
                if ((rc = sw_buf_append(out, b, bl)))
                    return rc;
            }
            continue;
        default: o = ch; break;     /* \" \\ \/ and anything else: the character */
        }
        if ((rc = sw_buf_append(out, &o, 1)))
            return rc;
    }
    return SW_OK;
}

static int on_mask_span(void *ud, const struct sw_pii_span *sp)
{
    struct mask_ctx *c = ud;
    if (sp->type == SW_PII_ALLOWED) {
        if (c->counts)
            c->counts->allowed++;
        return SW_OK;       /* left as it is: copied with the text after it */
    }
    const char *ph, *v = c->text + sp->start;
    size_t phlen, vlen = sp->len;
    int quote = 0;
    int rc = sw_buf_append(c->out, c->text + c->pos, sp->start - c->pos);
    if (rc)
        return rc;
    if (c->json) {
        json_state(c, sp->start);
        if (c->in_str) {
            if ((rc = json_unescape(&c->val, v, vlen)))
                return rc;
            v = c->val.ptr ? c->val.ptr : "";
            vlen = c->val.len;
        } else {
            quote = 1;      /* a bare number: the placeholder becomes a JSON string */
        }
        json_state(c, sp->start + sp->len);
    }
    rc = sw_pii_map_put(c->m, sp->type, sw_pii_type_tag(c->e, sp->type), v, vlen, &ph, &phlen);
    if (rc)
        return rc;
    if ((quote && (rc = sw_buf_append(c->out, "\"", 1))) || (rc = sw_buf_append(c->out, ph, phlen)) ||
        (quote && (rc = sw_buf_append(c->out, "\"", 1))))
        return rc;
    c->pos = sp->start + sp->len;
    if (c->counts && sp->type >= 0 && sp->type < SW_PII_MAX_TYPES) {
        c->counts->n[sp->type]++;
        c->counts->total++;
    }
    return SW_OK;
}

static int mask_text(const struct sw_pii_engine *e, struct sw_pii_map *m, const char *text,
                     size_t len, struct sw_buf *out, struct sw_pii_counts *counts, int json)
{
    struct mask_ctx c = {.e = e, .m = m, .text = text, .out = out, .counts = counts, .json = json};
    sw_buf_init(&c.val, SW_PII_MAP_MAX_BYTES);
    int rc = json ? sw_pii_scan_json_text(e, text, len, on_mask_span, &c)
                  : sw_pii_scan_text(e, text, len, on_mask_span, &c);
    if (c.val.ptr)
        explicit_bzero(c.val.ptr, c.val.cap);
    sw_buf_free(&c.val);
    if (rc)
        return rc;
    return sw_buf_append(out, text + c.pos, len - c.pos);
}

int sw_pii_mask_text(const struct sw_pii_engine *e, struct sw_pii_map *m, const char *text,
                     size_t len, struct sw_buf *out, struct sw_pii_counts *counts)
{
    return mask_text(e, m, text, len, out, counts, 0);
}

int sw_pii_mask_json_text(const struct sw_pii_engine *e, struct sw_pii_map *m, const char *text,
                          size_t len, struct sw_buf *out, struct sw_pii_counts *counts)
{
    return mask_text(e, m, text, len, out, counts, 1);
}

size_t sw_pii_ph_len_at(const char *t, size_t len, size_t i)
{
    size_t j = i + 1;
    while (j < len && j - i < SW_PII_MAX_PLACEHOLDER && sw_pii_ph_char((unsigned char)t[j]))
        j++;
    if (j < len && t[j] == ']' && j > i + 1 && j + 1 - i <= SW_PII_MAX_PLACEHOLDER)
        return j + 1 - i;
    return 0;
}

int sw_pii_unmask_text(const struct sw_pii_map *m, const char *text, size_t len,
                       int json_escape, struct sw_buf *out)
{
    size_t pos = 0, i = 0;
    if (sw_pii_map_size(m) == 0)
        return sw_buf_append(out, text, len);
    while (i < len) {
        const char *b = memchr(text + i, '[', len - i);
        if (!b)
            break;
        i = (size_t)(b - text);
        size_t pl = sw_pii_ph_len_at(text, len, i), vl;
        const char *v = pl ? sw_pii_map_get(m, text + i, pl, &vl) : NULL;
        if (!v) {
            i++;
            continue;
        }
        int rc = sw_buf_append(out, text + pos, i - pos);
        if (!rc)
            rc = json_escape ? sw_json_escape(out, v, vl, 0) : sw_buf_append(out, v, vl);
        if (rc)
            return rc;
        i += pl;
        pos = i;
    }
    return sw_buf_append(out, text + pos, len - pos);
}

size_t sw_pii_hold_from(const struct sw_pii_map *m, const char *t, size_t len)
{
    if (sw_pii_map_size(m) == 0 || len == 0)
        return len;
    const char *b = memrchr(t, '[', len);
    if (!b)
        return len;
    size_t k = (size_t)(b - t);
    if (len - k > SW_PII_MAX_PLACEHOLDER - 1)
        return len;
    for (size_t j = k + 1; j < len; j++)
        if (!sw_pii_ph_char((unsigned char)t[j]))
            return len;
    return k;
}

/* ---- Response ---- */

int sw_pii_unmask_string(const struct sw_pii_map *m, json_t *str, int json_text,
                         struct sw_buf *buf)
{
    const char *t = json_string_value(str);
    size_t len = json_string_length(str);
    if (!t || sw_pii_map_size(m) == 0 || !memchr(t, '[', len))
        return SW_OK;
    sw_buf_reset(buf);
    int rc = sw_pii_unmask_text(m, t, len, json_text, buf);
    if (rc)
        return rc;
    if (json_string_setn(str, buf->ptr ? buf->ptr : "", buf->len))
        return SW_ENOMEM;
    return SW_OK;
}

int sw_pii_unmask_response(const struct sw_pii_map *m, json_t *response)
{
    json_t *choices = json_object_get(response, "choices"), *ch, *part, *tc;
    size_t i, k;
    int rc = SW_OK;
    struct sw_buf buf;
    if (sw_pii_map_size(m) == 0 || !json_is_array(choices))
        return SW_OK;
    sw_buf_init(&buf, TEXT_MAX);
    json_array_foreach(choices, i, ch) {
        json_t *msg = json_object_get(ch, "message");
        json_t *content = json_object_get(msg, "content");
        if (json_is_string(content) && (rc = sw_pii_unmask_string(m, content, 0, &buf)))
            goto done;
        if (json_is_array(content))
            json_array_foreach(content, k, part) {
                json_t *text = json_object_get(part, "text");
                if (json_is_string(text) && (rc = sw_pii_unmask_string(m, text, 0, &buf)))
                    goto done;
            }
        json_t *refusal = json_object_get(msg, "refusal");
        if (json_is_string(refusal) && (rc = sw_pii_unmask_string(m, refusal, 0, &buf)))
            goto done;
        json_t *tcs = json_object_get(msg, "tool_calls");
        if (json_is_array(tcs))
            json_array_foreach(tcs, k, tc) {
                json_t *args = json_object_get(json_object_get(tc, "function"), "arguments");
                if (json_is_string(args) && (rc = sw_pii_unmask_string(m, args, 1, &buf)))
                    goto done;
            }
        json_t *fargs = json_object_get(json_object_get(msg, "function_call"), "arguments");
        if (json_is_string(fargs) && (rc = sw_pii_unmask_string(m, fargs, 1, &buf)))
            goto done;
    }
done:
    if (buf.ptr)
        explicit_bzero(buf.ptr, buf.cap);
    sw_buf_free(&buf);
    return rc;
}
