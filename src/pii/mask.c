/* Masking and unmasking of texts, and the walkers over the OpenAI request and
 * response shapes. See pii.h. */
#include "pii/mask.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/err.h"
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

static int append_json_escaped(struct sw_buf *out, const char *v, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)v[i];
        if (ch >= 0x20 && ch != '"' && ch != '\\')
            continue;
        int rc = sw_buf_append(out, v + run, i - run);
        if (rc)
            return rc;
        char esc[6] = {'\\', 0};
        size_t el = 2;
        switch (ch) {
        case '"': esc[1] = '"'; break;
        case '\\': esc[1] = '\\'; break;
        case '\n': esc[1] = 'n'; break;
        case '\r': esc[1] = 'r'; break;
        case '\t': esc[1] = 't'; break;
        case '\b': esc[1] = 'b'; break;
        case '\f': esc[1] = 'f'; break;
        default:
            esc[1] = 'u';
            esc[2] = '0';
            esc[3] = '0';
            esc[4] = hex[ch >> 4];
            esc[5] = hex[ch & 15];
            el = 6;
        }
        rc = sw_buf_append(out, esc, el);
        if (rc)
            return rc;
        run = i + 1;
    }
    return sw_buf_append(out, v + run, n - run);
}

/* Length of the placeholder starting at text[i] == '[' (']' included), or 0. */
static size_t ph_len_at(const char *t, size_t len, size_t i)
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
        size_t pl = ph_len_at(text, len, i), vl;
        const char *v = pl ? sw_pii_map_get(m, text + i, pl, &vl) : NULL;
        if (!v) {
            i++;
            continue;
        }
        int rc = sw_buf_append(out, text + pos, i - pos);
        if (!rc)
            rc = json_escape ? append_json_escaped(out, v, vl) : sw_buf_append(out, v, vl);
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

/* ---- Request walkers ---- */

/* Every string value of the body is a text field, at any depth, except the
 * structural fields below (matched by their whole JSON path, "*" standing for
 * any array index): enum values, ids and names the protocol needs verbatim.
 * A field not listed here, known or not, is scanned. docs/privacy.md mirrors
 * this list. */
static const char *const skip_paths[] = {
    "model",
    "messages.*.role",
    "messages.*.tool_call_id",
    "messages.*.tool_calls.*.id",
    "messages.*.tool_calls.*.type",
    "messages.*.tool_calls.*.function.name",
    "messages.*.function_call.name",
    "messages.*.content.*.type",
    "messages.*.content.*.image_url.detail",
    "messages.*.content.*.input_audio.format",
    "messages.*.content.*.file.file_id",
    "messages.*.audio.id",
    "tools.*.type",
    "tools.*.function.name",
    "functions.*.name",
    "tool_choice",
    "tool_choice.type",
    "tool_choice.function.name",
    "function_call",
    "function_call.name",
    "response_format.type",
    "reasoning_effort",
    "service_tier",
    "modalities.*",
    "audio.voice",
    "audio.format",
};

/* Strings that are JSON text: masked as JSON so they stay valid JSON. */
static const char *const json_text_paths[] = {
    "messages.*.tool_calls.*.function.arguments",
    "messages.*.function_call.arguments",
};

/* Binary payloads of content parts, which no text scanner can read: an image
 * given as a data: URL, audio, a file's bytes. */
static const char *const binary_paths[] = {
    "messages.*.content.*.input_audio.data",
    "messages.*.content.*.file.file_data",
};
/* Image URLs: binary when a data: URL; an http(s) URL is text. */
static const char *const image_url_paths[] = {
    "messages.*.content.*.image_url.url",
    "messages.*.content.*.image_url",          /* the URL given as a bare string */
};

/* Deepest nesting walked; a deeper body fails (the caller fails closed). */
#define WALK_MAX_DEPTH 256

enum field_kind { FIELD_TEXT, FIELD_JSON_TEXT, FIELD_SKIP, FIELD_BINARY };

/* Called for each text field (json_text: JSON text), each binary payload
 * (str is the payload) and each object key. */
struct walk_fns {
    int (*text)(void *ud, json_t *str, int json_text);
    int (*binary)(void *ud, json_t *str);
    int (*key)(void *ud, const char *key, size_t len);
};

/* The lists above as a tree of path segments, built once: the walk keeps
 * the node its path has reached (one step per level, among a node's few
 * children), so a string value is classified by one lookup, with no string
 * built or split per value. */
#define N_OF(a) (sizeof(a) / sizeof((a)[0]))
enum { END_NONE, END_SKIP, END_JSON, END_BIN, END_IMG };
#define PATH_NODES 96

struct pnode {
    const char *seg;            /* NULL: "*", any array index */
    size_t len;
    int end;                    /* END_*: a listed path ends here */
    int child, next;            /* first child, next sibling; -1 none */
};
static struct pnode pnodes[PATH_NODES];
static int n_pnodes;
static pthread_once_t pnodes_once = PTHREAD_ONCE_INIT;

static int pnode_child(int n, const char *k, size_t klen)
{
    for (int c = pnodes[n].child; c >= 0; c = pnodes[c].next)
        if (pnodes[c].seg ? (k && klen == pnodes[c].len && k[0] == pnodes[c].seg[0] &&
                             !memcmp(k, pnodes[c].seg, klen))
                          : !k)
            return c;
    return -1;
}

static void pnodes_add(const char *path, int end)
{
    int n = 0;
    for (const char *p = path;;) {
        const char *dot = strchr(p, '.');
        size_t len = dot ? (size_t)(dot - p) : strlen(p);
        bool any = len == 1 && p[0] == '*';
        int c = pnode_child(n, any ? NULL : p, len);
        if (c < 0) {
            if (n_pnodes == PATH_NODES)
                abort();        /* fixed lists (53 nodes): never at run time */
            c = n_pnodes++;
            pnodes[c] = (struct pnode){any ? NULL : p, len, END_NONE, -1, pnodes[n].child};
            pnodes[n].child = c;
        }
        n = c;
        if (!dot)
            break;
        p = dot + 1;
    }
    pnodes[n].end = end;
}

static void pnodes_init(void)
{
    pnodes[0] = (struct pnode){NULL, 0, END_NONE, -1, -1};     /* the root */
    n_pnodes = 1;
    for (size_t i = 0; i < N_OF(skip_paths); i++)
        pnodes_add(skip_paths[i], END_SKIP);
    for (size_t i = 0; i < N_OF(json_text_paths); i++)
        pnodes_add(json_text_paths[i], END_JSON);
    for (size_t i = 0; i < N_OF(binary_paths); i++)
        pnodes_add(binary_paths[i], END_BIN);
    for (size_t i = 0; i < N_OF(image_url_paths); i++)
        pnodes_add(image_url_paths[i], END_IMG);
}

struct walk {
    const struct walk_fns *fns;
    void *ud;
    size_t depth;
    int node[WALK_MAX_DEPTH + 1];   /* per depth: the tree node its path reached, -1 none */
};

/* One level down, under key k (NULL: an array index). */
static void descend(struct walk *w, const char *k, size_t klen)
{
    int n = w->node[w->depth];
    w->node[++w->depth] = n < 0 ? -1 : pnode_child(n, k, klen);
}

static enum field_kind classify(const struct walk *w, const json_t *str)
{
    int n = w->node[w->depth];
    switch (n < 0 ? END_NONE : pnodes[n].end) {
    case END_SKIP: return FIELD_SKIP;
    case END_JSON: return FIELD_JSON_TEXT;
    case END_BIN: return FIELD_BINARY;
    case END_IMG:
        if (json_string_length(str) >= 5 && !strncasecmp(json_string_value(str), "data:", 5))
            return FIELD_BINARY;
        return FIELD_TEXT;
    default: return FIELD_TEXT;
    }
}

static int walk_value(struct walk *w, json_t *v)
{
    int rc = SW_OK;
    if (json_is_string(v)) {
        switch (classify(w, v)) {
        case FIELD_SKIP: return SW_OK;
        case FIELD_BINARY: return w->fns->binary ? w->fns->binary(w->ud, v) : SW_OK;
        case FIELD_JSON_TEXT: return w->fns->text(w->ud, v, 1);
        case FIELD_TEXT: return w->fns->text(w->ud, v, 0);
        }
        return SW_OK;
    }
    if (!json_is_object(v) && !json_is_array(v))
        return SW_OK;
    if (w->depth >= WALK_MAX_DEPTH)
        return SW_ETOOBIG;
    if (json_is_object(v)) {
        const char *key;
        size_t klen;
        json_t *val;
        json_object_keylen_foreach(v, key, klen, val) {
            if (w->fns->key && (rc = w->fns->key(w->ud, key, klen)))
                return rc;
            descend(w, key, klen);
            rc = walk_value(w, val);
            w->depth--;
            if (rc)
                return rc;
        }
    } else {
        size_t i;
        json_t *val;
        json_array_foreach(v, i, val) {
            descend(w, NULL, 0);
            rc = walk_value(w, val);
            w->depth--;
            if (rc)
                return rc;
        }
    }
    return SW_OK;
}

static int walk_request(json_t *body, const struct walk_fns *fns, void *ud)
{
    /* on the stack (about 1 KB): as a heap block it was just over glibc's
     * per-thread cache limit, and its malloc took the slow path every time */
    struct walk w = {.fns = fns, .ud = ud, .depth = 0};
    pthread_once(&pnodes_once, pnodes_init);
    w.node[0] = 0;
    return walk_value(&w, body);
}

struct req_ctx {
    const struct sw_pii_engine *e;
    struct sw_pii_map *m;
    struct sw_pii_counts *counts;
    struct sw_buf buf;
};

static int on_count_span(void *ud, const struct sw_pii_span *sp)
{
    struct sw_pii_counts *c = ud;
    if (sp->type >= 0 && sp->type < SW_PII_MAX_TYPES) {
        c->n[sp->type]++;
        c->total++;
    }
    return SW_OK;
}

static int scan_field(void *ud, json_t *str, int json_text)
{
    struct req_ctx *c = ud;
    return (json_text ? sw_pii_scan_json_text : sw_pii_scan_text)(
        c->e, json_string_value(str), json_string_length(str), on_count_span, c->counts);
}

/* True when no built-in type can match the text: only lower-case ASCII
 * letters and '_' ("max_tokens", "content"). Every built-in needs a digit,
 * an upper-case letter, or one of "@:-+./ " (secret tokens with a lower-case
 * prefix, "sk_live_", "ghp_", "hf_", need digits or mixed case in their body).
 * Custom types can match anything, so an engine with any is asked. Most
 * object keys are such words, and a scan's fixed cost is most of a short
 * text's; test_request_plain_keys checks this premise against the engine. */
static bool needs_no_scan(const struct sw_pii_engine *e, const char *t, size_t len)
{
    if (sw_pii_type_count(e) != SW_PII_CUSTOM_BASE)
        return false;
    for (size_t i = 0; i < len; i++)
        if (!((t[i] >= 'a' && t[i] <= 'z') || t[i] == '_'))
            return false;
    return true;
}

static int scan_key(void *ud, const char *key, size_t len)
{
    struct req_ctx *c = ud;
    if (needs_no_scan(c->e, key, len))
        return SW_OK;
    return sw_pii_scan_text(c->e, key, len, on_count_span, c->counts);
}

static int count_binary(void *ud, json_t *str)
{
    struct req_ctx *c = ud;
    (void)str;
    c->counts->binary++;
    return SW_OK;
}

int sw_pii_scan_request(const struct sw_pii_engine *e, const json_t *body,
                        struct sw_pii_counts *counts)
{
    struct req_ctx c = {.e = e, .counts = counts};
    memset(counts, 0, sizeof *counts);
    if (!json_is_object(body))
        return SW_EINVAL;
    static const struct walk_fns fns = {scan_field, count_binary, scan_key};
    return walk_request((json_t *)body, &fns, &c);
}

static int reserve_field(void *ud, json_t *str, int json_text)
{
    struct req_ctx *c = ud;
    const char *t = json_string_value(str);
    size_t len = json_string_length(str);
    (void)json_text;
    for (const char *b = t; (b = memchr(b, '[', (size_t)(t + len - b)));) {
        size_t i = (size_t)(b - t), pl = ph_len_at(t, len, i);
        if (pl) {
            int rc = sw_pii_map_reserve(c->m, b, pl);
            if (rc)
                return rc;
        }
        b++;
    }
    return SW_OK;
}

/* A key cannot be masked: renaming it changes what the body means (a tool
 * schema's property names, metadata keys). A key holding an entity fails the
 * whole mask, so the request is never sent where masking was needed. */
static int check_key(void *ud, const char *key, size_t len)
{
    struct req_ctx *c = ud;
    struct sw_pii_counts n = {{0}, 0, 0};
    if (needs_no_scan(c->e, key, len))
        return SW_OK;
    int rc = sw_pii_scan_text(c->e, key, len, on_count_span, &n);
    if (rc)
        return rc;
    return n.total ? SW_EINVAL : SW_OK;
}

static int mask_field(void *ud, json_t *str, int json_text)
{
    struct req_ctx *c = ud;
    const char *t = json_string_value(str);
    size_t len = json_string_length(str);
    uint32_t before = c->counts->total;
    sw_buf_reset(&c->buf);
    int rc = mask_text(c->e, c->m, t, len, &c->buf, c->counts, json_text);
    if (rc)
        return rc;
    if (c->counts->total == before)
        return SW_OK;
    /* The masked text must scan clean: masking can change what surrounds a
     * value (a number right after a masked one is no longer "a later group of
     * a longer number"), and what the scanner finds only then was never
     * masked. It is masked in further passes (same map; placeholders are
     * never detected); a text still not clean after them fails the mask
     * rather than go out with it. */
    for (int pass = 0;; pass++) {
        struct sw_pii_counts again = {{0}, 0, 0};
        /* scanned as it will be scanned: JSON text (arguments) as JSON text */
        if ((rc = (json_text ? sw_pii_scan_json_text : sw_pii_scan_text)(c->e, c->buf.ptr ? c->buf.ptr : "",
                                                                         c->buf.len, on_count_span, &again)))
            return rc;
        if (!again.total)
            break;
        if (pass == 3)
            return SW_EINVAL;
        struct sw_buf next;
        sw_buf_init(&next, c->buf.max);
        rc = mask_text(c->e, c->m, c->buf.ptr ? c->buf.ptr : "", c->buf.len, &next, c->counts,
                       json_text);
        if (rc) {
            sw_buf_free(&next);
            return rc;
        }
        sw_buf_free(&c->buf);
        c->buf = next;
    }
    if (json_text) {
        /* Arguments that were valid JSON must stay valid JSON. */
        json_t *a = json_loadb(t, len, JSON_DECODE_ANY, NULL);
        if (a) {
            json_decref(a);
            json_t *b = json_loadb(c->buf.ptr ? c->buf.ptr : "", c->buf.len, JSON_DECODE_ANY, NULL);
            if (!b)
                return SW_EINVAL;
            json_decref(b);
        }
    }
    if (json_string_setn(str, c->buf.ptr ? c->buf.ptr : "", c->buf.len))
        return SW_EINVAL;       /* not UTF-8 (a custom regex split a character) */
    return SW_OK;
}

int sw_pii_mask_request(const struct sw_pii_engine *e, struct sw_pii_map *m, json_t *body,
                        struct sw_pii_counts *counts)
{
    struct sw_pii_counts local;
    struct req_ctx c = {.e = e, .m = m, .counts = counts ? counts : &local};
    memset(c.counts, 0, sizeof *c.counts);
    if (!json_is_object(body) || !m)
        return SW_EINVAL;
    sw_buf_init(&c.buf, TEXT_MAX);
    /* Binary payloads are left as they are (counted): whether they may go
     * at all is the caller's decision (pii.binary_parts). */
    static const struct walk_fns reserve = {reserve_field, NULL, check_key};
    static const struct walk_fns mask = {mask_field, count_binary, NULL};
    int rc = walk_request(body, &reserve, &c);
    if (!rc)
        rc = walk_request(body, &mask, &c);
    if (c.buf.ptr)
        explicit_bzero(c.buf.ptr, c.buf.cap);
    sw_buf_free(&c.buf);
    return rc;
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
