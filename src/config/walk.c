#include "config/walk.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/err.h"

#define MSG_MAX 2048     /* bytes of one formatted message */
#define SHOW_MAX 60      /* bytes of a value quoted in a message */
#define TEXT_MAX 4096
#define NAME_MAX_LEN 64
#define VARNAME_MAX 128

void sw_walk_init(struct sw_walk *w, const char *file, yaml_document_t *doc,
                  sw_walk_getenv_fn getenv_fn, void *ud, void *user)
{
    memset(w, 0, sizeof(*w));
    w->file = file;
    w->doc = doc;
    w->getenv_fn = getenv_fn;
    w->getenv_ud = ud;
    w->user = user;
}

/* ---- Messages ---- */

static void add_msg(struct sw_walk *w, size_t line, size_t col, const char *path,
                    const char *fmt, va_list ap)
{
    if (w->n_msgs >= SW_WALK_MAX_ERRORS) {
        w->dropped++;
        return;
    }
    if (w->n_msgs == w->cap_msgs) {
        size_t cap = w->cap_msgs ? w->cap_msgs * 2 : 8;
        struct sw_walk_msg *m = realloc(w->msgs, cap * sizeof(*m));
        if (!m) {
            w->oom = true;
            return;
        }
        w->msgs = m;
        w->cap_msgs = cap;
    }
    char body[MSG_MAX];
    vsnprintf(body, sizeof(body), fmt, ap);
    char text[MSG_MAX + SW_WALK_MAX_PATH + 256];
    if (path && *path)
        snprintf(text, sizeof(text), "%s:%zu:%zu: %s: %s", w->file, line, col, path, body);
    else
        snprintf(text, sizeof(text), "%s:%zu:%zu: %s", w->file, line, col, body);
    char *dup = strdup(text);
    if (!dup) {
        w->oom = true;
        return;
    }
    w->msgs[w->n_msgs] = (struct sw_walk_msg){line, col, w->n_msgs, dup};
    w->n_msgs++;
}

void sw_walk_error_at(struct sw_walk *w, size_t line, size_t col, const char *path,
                      const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    add_msg(w, line, col, path, fmt, ap);
    va_end(ap);
}

void sw_walk_error(struct sw_walk *w, const yaml_node_t *node, const char *path,
                   const char *fmt, ...)
{
    size_t line = node ? node->start_mark.line + 1 : 1;
    size_t col = node ? node->start_mark.column + 1 : 1;
    va_list ap;
    va_start(ap, fmt);
    add_msg(w, line, col, path, fmt, ap);
    va_end(ap);
}

static int cmp_msg(const void *a, const void *b)
{
    const struct sw_walk_msg *x = a, *y = b;
    if (x->line != y->line)
        return x->line < y->line ? -1 : 1;
    if (x->col != y->col)
        return x->col < y->col ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

int sw_walk_finish(struct sw_walk *w, struct sw_config_errors *errs)
{
    errs->msgs = NULL;
    errs->n = 0;
    int err = w->oom ? SW_ENOMEM : SW_OK;
    size_t n = w->n_msgs + (w->dropped ? 1 : 0);
    if (n && !err) {
        errs->msgs = calloc(n, sizeof(char *));
        if (!errs->msgs)
            err = SW_ENOMEM;
    }
    if (w->n_msgs)
        qsort(w->msgs, w->n_msgs, sizeof(*w->msgs), cmp_msg);
    for (size_t i = 0; i < w->n_msgs; i++) {
        if (errs->msgs)
            errs->msgs[errs->n++] = w->msgs[i].text;
        else
            free(w->msgs[i].text);
    }
    if (w->dropped && errs->msgs) {
        char text[512];
        snprintf(text, sizeof(text), "%s: %zu more errors not shown", w->file, w->dropped);
        errs->msgs[errs->n] = strdup(text);
        if (errs->msgs[errs->n])
            errs->n++;
        else
            err = SW_ENOMEM;
    }
    free(w->msgs);
    w->msgs = NULL;
    w->n_msgs = w->cap_msgs = 0;
    if (!err && errs->n)
        err = SW_EINVAL;
    return err;
}

/* ---- Paths ---- */

/* Paths are short in practice; an absurdly deep one is cut, never overrun. */
void sw_walk_path_key(char *out, size_t cap, const char *path, const char *key)
{
    int n;
    if (path && *path)
        n = snprintf(out, cap, "%s.%s", path, key);
    else
        n = snprintf(out, cap, "%s", key);
    if (n < 0 && cap)
        out[0] = '\0';
}

void sw_walk_path_index(char *out, size_t cap, const char *path, size_t i)
{
    int n = snprintf(out, cap, "%s[%zu]", path, i);
    if (n < 0 && cap)
        out[0] = '\0';
}

/* ---- Scalars and ${NAME} substitution ---- */

static bool is_null_scalar(const yaml_node_t *n)
{
    if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return false;
    const char *v = (const char *)n->data.scalar.value;
    return !*v || !strcmp(v, "~") || !strcmp(v, "null") || !strcmp(v, "Null") ||
           !strcmp(v, "NULL");
}

static bool var_start(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
}

static bool var_char(char c)
{
    return var_start(c) || (c >= '0' && c <= '9');
}

int sw_walk_scalar(struct sw_walk *w, const yaml_node_t *node, const char *path,
                   struct sw_walk_scalar *out)
{
    memset(out, 0, sizeof(*out));
    out->raw = (const char *)node->data.scalar.value;
    out->raw_len = node->data.scalar.length;
    out->null = is_null_scalar(node);

    struct sw_buf b;
    sw_buf_init(&b, SW_WALK_MAX_SCALAR);
    int err = sw_buf_append(&b, "", 0);
    const char *s = out->raw;
    size_t n = out->raw_len, i = 0;
    while (!err && i < n) {
        if (s[i] == '$' && i + 2 < n && s[i + 1] == '$' && s[i + 2] == '{') {
            err = sw_buf_append(&b, "${", 2); /* $${ is a literal ${ */
            i += 3;
            continue;
        }
        if (!(s[i] == '$' && i + 1 < n && s[i + 1] == '{')) {
            size_t j = i + 1;
            while (j < n && s[j] != '$')
                j++;
            err = sw_buf_append(&b, s + i, j - i);
            i = j;
            continue;
        }
        size_t start = i + 2, end = start;
        while (end < n && s[end] != '}')
            end++;
        if (end == n) {
            sw_walk_error(w, node, path,
                          "unterminated \"${\" (write ${NAME}, or $${ for a literal \"${\")");
            err = SW_EINVAL;
            break;
        }
        size_t len = end - start;
        bool ok = len > 0 && len <= VARNAME_MAX && var_start(s[start]);
        for (size_t k = start; ok && k < end; k++)
            ok = var_char(s[k]);
        if (!ok) {
            sw_walk_error(w, node, path,
                          "\"${%.*s}\" is not a valid variable reference (${NAME}: letters, "
                          "digits and _, not starting with a digit; $${ for a literal \"${\")",
                          (int)(len > SHOW_MAX ? SHOW_MAX : len), s + start);
            err = SW_EINVAL;
            break;
        }
        char name[VARNAME_MAX + 1];
        memcpy(name, s + start, len);
        name[len] = '\0';
        const char *val = w->getenv_fn(name, w->getenv_ud);
        if (!val) {
            sw_walk_error(w, node, path, "environment variable %s is not set; export it in the environment "
                          "Spillway starts in (e.g. %s=... spillway -c FILE), or write the value "
                          "in place of \"${%s}\"", name, name, name);
            err = SW_EINVAL;
            break;
        }
        out->substituted = true;
        err = sw_buf_append(&b, val, strlen(val));
        i = end + 1;
    }
    if (err == SW_ETOOBIG) {
        sw_walk_error(w, node, path, "value is longer than %d bytes", SW_WALK_MAX_SCALAR);
        err = SW_EINVAL;
    }
    if (err == SW_ENOMEM)
        w->oom = true;
    if (err) {
        sw_buf_free(&b);
        return err;
    }
    out->v = b.ptr;
    out->len = b.len;
    return SW_OK;
}

static bool url_end(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '"' || c == '\'' || c == ',';
}

int sw_walk_redact_urls(const char *s, size_t n, struct sw_buf *out)
{
    int err = SW_OK;
    size_t i = 0;
    while (!err && i < n) {
        const char *m = n - i >= 3 ? memmem(s + i, n - i, "://", 3) : NULL;
        if (!m)
            return sw_buf_append(out, s + i, n - i);
        size_t start = (size_t)(m - s) + 3, end = start, q;
        while (end < n && !url_end(s[end]))
            end++;
        for (q = start; q < end && s[q] != '?' && s[q] != '#'; q++)
            ;
        size_t host = start;        /* after the last '@' before the query: the host */
        for (size_t k = start; k < q; k++)
            if (s[k] == '@')
                host = k + 1;
        err = sw_buf_append(out, s + i, start - i);
        if (!err && host > start)
            err = sw_buf_append(out, "***@", 4);
        if (!err)
            err = sw_buf_append(out, s + host, q - host);
        if (!err && q < end)
            err = sw_buf_append(out, s[q] == '?' ? "?***" : "#***", 4);
        i = end;
    }
    return err;
}

static void quote(const char *s, size_t n, char *out, size_t cap)
{
    struct sw_buf b, r;
    sw_buf_init(&r, 3 * n + 16);   /* each URL grows by at most 6 bytes */
    if (memmem(s, n, "://", 3)) {   /* a URL's credentials and query are never shown */
        if (sw_walk_redact_urls(s, n, &r)) {
            snprintf(out, cap, "\"...\"");
            sw_buf_free(&r);
            return;
        }
        s = r.ptr;
        n = r.len;
    }
    sw_buf_init(&b, cap > 1 ? cap - 1 : 0);
    size_t shown = n > SHOW_MAX ? SHOW_MAX : n;
    int err = sw_buf_append(&b, "\"", 1);
    for (size_t i = 0; !err && i < shown; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\')
            err = sw_buf_appendf(&b, "\\%c", c);
        else if (c < 0x20 || c == 0x7f)
            err = sw_buf_appendf(&b, "\\x%02x", c);
        else
            err = sw_buf_append(&b, &s[i], 1);
    }
    if (!err)
        err = sw_buf_append(&b, shown < n ? "\"..." : "\"", shown < n ? 4 : 1);
    snprintf(out, cap, "%s", b.ptr ? b.ptr : "\"...\"");
    sw_buf_free(&b);
    sw_buf_free(&r);
}

void sw_walk_show(const struct sw_walk_scalar *s, char *out, size_t cap)
{
    if (!s->substituted) {
        quote(s->v ? s->v : s->raw, s->v ? s->len : s->raw_len, out, cap);
        return;
    }
    char q[SHOW_MAX * 4 + 8];
    quote(s->raw, s->raw_len, q, sizeof(q));
    snprintf(out, cap, "%s (after substitution)", q);
}

void sw_walk_describe(struct sw_walk *w, const yaml_node_t *node, char *out, size_t cap)
{
    (void)w;
    if (node->type == YAML_MAPPING_NODE) {
        snprintf(out, cap, "a mapping");
    } else if (node->type == YAML_SEQUENCE_NODE) {
        snprintf(out, cap, "a list");
    } else if (is_null_scalar(node)) {
        snprintf(out, cap, "nothing (null)");
    } else {
        /* The raw text: this is only used before substitution succeeded. */
        quote((const char *)node->data.scalar.value, node->data.scalar.length, out, cap);
    }
}

/* ---- Typed values ---- */

static const char *type_what(const struct sw_walk_setting *s, char *buf, size_t cap)
{
    switch (s->type) {
    case SW_WALK_TEXT: return "a string";
    case SW_WALK_NAME: return "a name (1-64 characters from A-Z a-z 0-9 _ . -)";
    case SW_WALK_SECRET: return "a secret string";
    case SW_WALK_LONG:
        snprintf(buf, cap, "an integer %ld..%ld", s->min, s->max);
        return buf;
    case SW_WALK_DOUBLE:
        snprintf(buf, cap, "a number %g..%g", s->dmin, s->dmax);
        return buf;
    case SW_WALK_BOOL: return "true or false";
    case SW_WALK_ENUM: {
        size_t used = (size_t)snprintf(buf, cap, "one of ");
        for (size_t i = 0; s->names[i] && used < cap; i++)
            used += (size_t)snprintf(buf + used, cap - used, "%s%s", i ? ", " : "", s->names[i]);
        return buf;
    }
    case SW_WALK_MAP: return "a mapping";
    case SW_WALK_LIST: return "a list";
    case SW_WALK_CUSTOM: return s->hint ? s->hint : "a value";
    }
    return "a value";
}

static void wrong_type(struct sw_walk *w, const struct sw_walk_setting *s,
                       const yaml_node_t *node, const char *path)
{
    char what[256], got[SHOW_MAX * 4 + 32];
    sw_walk_describe(w, node, got, sizeof(got));
    sw_walk_error(w, node, path, "expected %s, got %s", type_what(s, what, sizeof(what)), got);
}

int sw_walk_string(struct sw_walk *w, const struct sw_walk_setting *s,
                   const yaml_node_t *node, const char *path, char **out)
{
    *out = NULL;
    if (node->type != YAML_SCALAR_NODE || is_null_scalar(node)) {
        wrong_type(w, s, node, path);
        return SW_EINVAL;
    }
    struct sw_walk_scalar v;
    int err = sw_walk_scalar(w, node, path, &v);
    if (err)
        return err;
    char shown[SHOW_MAX * 4 + 32];
    sw_walk_show(&v, shown, sizeof(shown));
    const char *after = v.substituted ? " (after substitution)" : "";
    char what[256];
    if (v.len == 0) {
        sw_walk_error(w, node, path, "is empty%s; expected %s", after,
                      type_what(s, what, sizeof(what)));
        err = SW_EINVAL;
    } else if (strlen(v.v) != v.len) {
        sw_walk_error(w, node, path, "contains a NUL byte");
        err = SW_EINVAL;
    } else if (s->type == SW_WALK_SECRET) {
        for (size_t i = 0; i < v.len && !err; i++) {
            unsigned char c = (unsigned char)v.v[i];
            if (c <= 0x20 || c == 0x7f) {
                sw_walk_error(w, node, path,
                              "contains whitespace or a control character%s (value not shown); "
                              "a secret is sent as one HTTP header token",
                              after);
                err = SW_EINVAL;
            }
        }
    } else if (s->type == SW_WALK_NAME) {
        bool ok = v.len <= NAME_MAX_LEN;
        for (size_t i = 0; ok && i < v.len; i++) {
            char c = v.v[i];
            ok = var_char(c) || c == '.' || c == '-';
        }
        if (!ok) {
            sw_walk_error(w, node, path,
                          "%s is not a valid name (1-64 characters from A-Z a-z 0-9 _ . -)",
                          shown);
            err = SW_EINVAL;
        }
    } else {
        bool ok = v.len <= TEXT_MAX;
        for (size_t i = 0; ok && i < v.len; i++) {
            unsigned char c = (unsigned char)v.v[i];
            ok = c >= 0x20 && c != 0x7f;
        }
        if (!ok) {
            sw_walk_error(w, node, path,
                          "%s must be at most %d bytes without control characters", shown,
                          TEXT_MAX);
            err = SW_EINVAL;
        }
    }
    if (err) {
        free(v.v);
        return err;
    }
    *out = v.v;
    return SW_OK;
}

long sw_walk_strings(struct sw_walk *w, const struct sw_walk_setting *item, const yaml_node_t *node,
                     const char *path, const char *want, sw_walk_item_fn each, void *ctx)
{
    if (node->type != YAML_SEQUENCE_NODE) {
        char got[256];
        sw_walk_describe(w, node, got, sizeof(got));
        sw_walk_error(w, node, path, "expected %s, got %s", want, got);
        return -1;
    }
    yaml_node_item_t *it = node->data.sequence.items.start;
    size_t n = (size_t)(node->data.sequence.items.top - it);
    for (size_t i = 0; i < n; i++) {
        yaml_node_t *el = yaml_document_get_node(w->doc, it[i]);
        char ipath[SW_WALK_MAX_PATH], *v = NULL;
        sw_walk_path_index(ipath, sizeof(ipath), path, i);
        if (el && !sw_walk_string(w, item, el, ipath, &v))
            each(w, el, ipath, i, v, ctx);
    }
    return (long)n;
}

/* Reads a scalar that must be a number, bool or enum: type-checks the node and
 * substitutes. On error it has reported; out->v must be freed on success. */
static int typed_scalar(struct sw_walk *w, const struct sw_walk_setting *s,
                        const yaml_node_t *node, const char *path, struct sw_walk_scalar *out)
{
    if (node->type != YAML_SCALAR_NODE || is_null_scalar(node)) {
        wrong_type(w, s, node, path);
        return SW_EINVAL;
    }
    return sw_walk_scalar(w, node, path, out);
}

static void parse_long(struct sw_walk *w, const struct sw_walk_setting *s,
                       const yaml_node_t *node, void *field, const char *path)
{
    struct sw_walk_scalar v;
    if (typed_scalar(w, s, node, path, &v))
        return;
    char shown[SHOW_MAX * 4 + 32], what[128];
    sw_walk_show(&v, shown, sizeof(shown));
    const char *p = v.v;
    bool ok = *p != '\0';
    size_t i = (*p == '-' || *p == '+') ? 1 : 0;
    ok = ok && p[i] != '\0';
    for (; ok && p[i]; i++)
        ok = p[i] >= '0' && p[i] <= '9';
    if (!ok) {
        sw_walk_error(w, node, path, "expected %s, got %s", type_what(s, what, sizeof(what)),
                      shown);
        goto done;
    }
    errno = 0;
    long long x = strtoll(p, NULL, 10);
    if (errno == ERANGE || x < s->min || x > s->max) {
        sw_walk_error(w, node, path, "%s is out of range (%ld..%ld)", shown, s->min, s->max);
        goto done;
    }
    *(long *)field = (long)x;
done:
    free(v.v);
}

static void parse_double(struct sw_walk *w, const struct sw_walk_setting *s,
                         const yaml_node_t *node, void *field, const char *path)
{
    struct sw_walk_scalar v;
    if (typed_scalar(w, s, node, path, &v))
        return;
    char shown[SHOW_MAX * 4 + 32], what[128];
    sw_walk_show(&v, shown, sizeof(shown));
    /* Decimal only: strtod would also take "inf", "nan" and hex floats. */
    bool ok = v.len > 0;
    for (size_t i = 0; ok && i < v.len; i++) {
        char c = v.v[i];
        ok = (c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || c == '-' || c == '+';
    }
    char *end = NULL;
    errno = 0;
    double x = ok ? strtod(v.v, &end) : 0;
    if (!ok || !end || *end || errno == ERANGE || !isfinite(x)) {
        sw_walk_error(w, node, path, "expected %s, got %s", type_what(s, what, sizeof(what)),
                      shown);
    } else if (x < s->dmin || x > s->dmax) {
        sw_walk_error(w, node, path, "%s is out of range (%g..%g)", shown, s->dmin, s->dmax);
    } else {
        *(double *)field = x;
    }
    free(v.v);
}

static void parse_bool(struct sw_walk *w, const struct sw_walk_setting *s,
                       const yaml_node_t *node, void *field, const char *path)
{
    struct sw_walk_scalar v;
    if (typed_scalar(w, s, node, path, &v))
        return;
    static const char *const yes[] = {"true", "True", "TRUE"};
    static const char *const no[] = {"false", "False", "FALSE"};
    static const char *const old[] = {"yes", "Yes", "YES", "no", "No", "NO", "on", "On", "ON",
                                      "off", "Off", "OFF", "y", "Y", "n", "N"};
    for (size_t i = 0; i < 3; i++) {
        if (!strcmp(v.v, yes[i]) || !strcmp(v.v, no[i])) {
            *(bool *)field = !strcmp(v.v, yes[i]);
            free(v.v);
            return;
        }
    }
    char shown[SHOW_MAX * 4 + 32];
    sw_walk_show(&v, shown, sizeof(shown));
    const char *why = "";
    for (size_t i = 0; i < sizeof(old) / sizeof(old[0]); i++)
        if (!strcmp(v.v, old[i]))
            why = " (yes/no/on/off are not booleans here; write true or false)";
    sw_walk_error(w, node, path, "expected true or false, got %s%s", shown, why);
    free(v.v);
}

static void parse_enum(struct sw_walk *w, const struct sw_walk_setting *s,
                       const yaml_node_t *node, void *field, const char *path)
{
    struct sw_walk_scalar v;
    if (typed_scalar(w, s, node, path, &v))
        return;
    for (int i = 0; s->names[i]; i++) {
        if (!strcmp(v.v, s->names[i])) {
            *(int *)field = i;
            free(v.v);
            return;
        }
    }
    char shown[SHOW_MAX * 4 + 32], what[256];
    sw_walk_show(&v, shown, sizeof(shown));
    sw_walk_error(w, node, path, "%s is not %s%s%s", shown, type_what(s, what, sizeof(what)),
                  s->fix ? "; " : "", s->fix ? s->fix : "");
    free(v.v);
}

static void parse_list(struct sw_walk *w, const struct sw_walk_setting *s,
                       const yaml_node_t *node, void *base, const char *path)
{
    if (node->type != YAML_SEQUENCE_NODE) {
        wrong_type(w, s, node, path);
        return;
    }
    yaml_node_item_t *it = node->data.sequence.items.start;
    size_t n = (size_t)(node->data.sequence.items.top - it);
    if (n == 0) {
        sw_walk_error(w, node, path, "is empty; %s", s->hint ? s->hint : "list at least one entry");
        return;
    }
    char *arr = calloc(n, s->sub->elem_size);
    if (!arr) {
        w->oom = true;
        return;
    }
    *(void **)((char *)base + s->off) = arr;
    *(size_t *)((char *)base + s->aux_off) = n;
    for (size_t i = 0; i < n; i++) {
        char ipath[SW_WALK_MAX_PATH];
        sw_walk_path_index(ipath, sizeof(ipath), path, i);
        yaml_node_t *item = yaml_document_get_node(w->doc, it[i]);
        sw_walk_defaults(s->sub, arr + i * s->sub->elem_size);
        sw_walk_map(w, s->sub, item, arr + i * s->sub->elem_size, ipath, i);
    }
}

static void walk_value(struct sw_walk *w, const struct sw_walk_setting *s,
                       const yaml_node_t *node, void *base, const char *path)
{
    void *field = (char *)base + s->off;
    switch (s->type) {
    case SW_WALK_TEXT:
    case SW_WALK_NAME:
    case SW_WALK_SECRET: {
        char *str = NULL;
        if (!sw_walk_string(w, s, node, path, &str)) {
            free(*(char **)field);
            *(char **)field = str;
        }
        break;
    }
    case SW_WALK_LONG: parse_long(w, s, node, field, path); break;
    case SW_WALK_DOUBLE: parse_double(w, s, node, field, path); break;
    case SW_WALK_BOOL: parse_bool(w, s, node, field, path); break;
    case SW_WALK_ENUM: parse_enum(w, s, node, field, path); break;
    case SW_WALK_MAP:
        if (node->type != YAML_MAPPING_NODE)
            wrong_type(w, s, node, path);
        else
            sw_walk_map(w, s->sub, node, field, path, 0);
        break;
    case SW_WALK_LIST: parse_list(w, s, node, base, path); break;
    case SW_WALK_CUSTOM: s->parse(w, s, node, base, path); break;
    }
}

/* ---- Mappings ---- */

void sw_walk_defaults(const struct sw_walk_section *sec, void *base)
{
    for (size_t i = 0; i < sec->n; i++) {
        const struct sw_walk_setting *s = &sec->settings[i];
        void *field = (char *)base + s->off;
        switch (s->type) {
        case SW_WALK_LONG: *(long *)field = s->def; break;
        case SW_WALK_DOUBLE: *(double *)field = s->ddef; break;
        case SW_WALK_BOOL: *(bool *)field = s->def != 0; break;
        case SW_WALK_ENUM: *(int *)field = (int)s->def; break;
        case SW_WALK_MAP: sw_walk_defaults(s->sub, field); break;
        default: break; /* strings, lists, custom: zero (NULL) from calloc */
        }
    }
}

/* Levenshtein distance, for "did you mean"; keys are short. */
static size_t distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 63 || lb > 63)
        return SIZE_MAX;
    size_t row[64];
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t best = diag + (a[i - 1] != b[j - 1]);
            if (row[j] + 1 < best)
                best = row[j] + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

static void unknown_key(struct sw_walk *w, const struct sw_walk_section *sec,
                        const yaml_node_t *key, const char *kpath)
{
    char allowed[1024];
    size_t used = 0;
    const char *best = NULL;
    size_t best_d = 3; /* suggest only close matches */
    const char *k = (const char *)key->data.scalar.value;
    for (size_t i = 0; i < sec->n && used < sizeof(allowed); i++) {
        used += (size_t)snprintf(allowed + used, sizeof(allowed) - used, "%s%s", i ? ", " : "",
                                 sec->settings[i].key);
        size_t d = distance(k, sec->settings[i].key);
        if (d < best_d && d < strlen(k)) {
            best_d = d;
            best = sec->settings[i].key;
        }
    }
    if (best)
        sw_walk_error(w, key, kpath, "unknown key; did you mean \"%s\"? (allowed: %s)", best,
                      allowed);
    else
        sw_walk_error(w, key, kpath, "unknown key (allowed: %s)", allowed);
}

/* True when cond ("key=value") holds among the section's values. */
static bool optional_here(const struct sw_walk_section *sec, const yaml_node_t *const *vals,
                          const char *cond)
{
    const char *eq = cond ? strchr(cond, '=') : NULL;
    if (!eq)
        return false;
    for (size_t i = 0; i < sec->n; i++) {
        const yaml_node_t *v = vals[i];
        if (strlen(sec->settings[i].key) == (size_t)(eq - cond) &&
            !strncmp(sec->settings[i].key, cond, (size_t)(eq - cond)) && v &&
            v->type == YAML_SCALAR_NODE && !strcmp((const char *)v->data.scalar.value, eq + 1))
            return true;
    }
    return false;
}


void sw_walk_map(struct sw_walk *w, const struct sw_walk_section *sec,
                 const yaml_node_t *node, void *base, const char *path, size_t index)
{
    const yaml_node_t *vals[SW_WALK_MAX_SETTINGS] = {0};
    const yaml_node_t *keys[SW_WALK_MAX_SETTINGS] = {0};
    char kpath[SW_WALK_MAX_PATH];

    assert(sec->n <= SW_WALK_MAX_SETTINGS);
    if (node->type != YAML_MAPPING_NODE) {
        char got[SHOW_MAX * 4 + 32];
        sw_walk_describe(w, node, got, sizeof(got));
        sw_walk_error(w, node, path, "expected a mapping (key: value lines), got %s", got);
        return;
    }
    for (yaml_node_pair_t *p = node->data.mapping.pairs.start;
         p < node->data.mapping.pairs.top; p++) {
        const yaml_node_t *k = yaml_document_get_node(w->doc, p->key);
        const yaml_node_t *v = yaml_document_get_node(w->doc, p->value);
        if (k->type != YAML_SCALAR_NODE) {
            sw_walk_error(w, k, path, "a key must be a plain string, not %s",
                          k->type == YAML_MAPPING_NODE ? "a mapping" : "a list");
            continue;
        }
        const char *name = (const char *)k->data.scalar.value;
        sw_walk_path_key(kpath, sizeof(kpath), path, name);
        size_t i = 0;
        while (i < sec->n && strcmp(sec->settings[i].key, name))
            i++;
        if (i == sec->n) {
            unknown_key(w, sec, k, kpath);
        } else if (vals[i]) {
            sw_walk_error(w, k, kpath, "duplicate key (first at line %zu)",
                          keys[i]->start_mark.line + 1);
        } else {
            keys[i] = k;
            vals[i] = v;
        }
    }
    for (size_t i = 0; i < sec->n; i++) {
        const struct sw_walk_setting *s = &sec->settings[i];
        sw_walk_path_key(kpath, sizeof(kpath), path, s->key);
        if (vals[i])
            walk_value(w, s, vals[i], base, kpath);
        else if (s->required && optional_here(sec, vals, s->optional_if))
            continue;
        else if (s->required && s->hint)
            sw_walk_error(w, node, kpath, "required key is missing (%s)", s->hint);
        else if (s->required)
            sw_walk_error(w, node, kpath, "required key is missing");
    }
    if (sec->check)
        sec->check(w, base, node, vals, path, index);
}

const yaml_node_t *sw_walk_val(const struct sw_walk_section *sec,
                               const yaml_node_t *const *vals, const char *key)
{
    for (size_t i = 0; i < sec->n; i++)
        if (!strcmp(sec->settings[i].key, key))
            return vals[i];
    return NULL;
}
