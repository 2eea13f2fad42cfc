/* JSON Schema validation (draft 7 semantics, plus prefixItems and $defs).
 * Keywords: type, enum, const, properties, required, additionalProperties,
 * patternProperties, items, additionalItems, prefixItems, minItems,
 * maxItems, minLength, maxLength (code points), pattern (PCRE2),
 * minimum, maximum, exclusiveMinimum, exclusiveMaximum, allOf, anyOf,
 * oneOf, not, $ref to a local JSON pointer ("#", "#/$defs/x",
 * "#/definitions/x"). As in draft 7, a schema with $ref is the referenced
 * schema only (its other keywords are ignored). Unknown keywords are ignored. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <math.h>
#include <pcre2.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "contract/schema.h"

struct ctx {
    const json_t *root;
    struct sw_schema_error *err;
    char path[128];
    size_t plen;
    int depth;
    long steps;
};

static enum sw_schema_result validate(struct ctx *c, const json_t *s, const json_t *i);

/* ---- Errors and the instance path ---- */

static enum sw_schema_result fail(struct ctx *c, enum sw_schema_result r, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static enum sw_schema_result fail(struct ctx *c, enum sw_schema_result r, const char *fmt, ...)
{
    if (c->err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->err->reason, sizeof c->err->reason, fmt, ap);
        va_end(ap);
        memcpy(c->err->path, c->path, c->plen);
        c->err->path[c->plen] = '\0';
    }
    return r;
}

/* Appends "/seg" (JSON pointer escaped, truncated at the buffer's end);
 * returns the old length for pop(). */
static size_t push_key(struct ctx *c, const char *seg)
{
    size_t old = c->plen, cap = sizeof c->path - 1;
    if (c->plen < cap)
        c->path[c->plen++] = '/';
    for (const char *p = seg; *p && c->plen < cap; p++) {
        if ((*p == '~' || *p == '/') && c->plen + 1 < cap) {
            c->path[c->plen++] = '~';
            c->path[c->plen++] = *p == '~' ? '0' : '1';
        } else if (*p != '~' && *p != '/') {
            c->path[c->plen++] = *p;
        }
    }
    return old;
}

static size_t push_index(struct ctx *c, size_t idx)
{
    char b[24];
    snprintf(b, sizeof b, "%zu", idx);
    return push_key(c, b);
}

static void pop(struct ctx *c, size_t old) { c->plen = old; }

/* ---- Values ---- */

static bool is_integral(const json_t *v)
{
    if (json_is_integer(v))
        return true;
    if (!json_is_real(v))
        return false;
    double d = json_real_value(v);
    return isfinite(d) && d == floor(d);
}

/* JSON Schema equality: numbers compare by value (1 == 1.0), objects by
 * members regardless of order, arrays element by element. */
static bool equal(const json_t *a, const json_t *b)
{
    if (json_is_number(a) && json_is_number(b)) {
        if (json_is_integer(a) && json_is_integer(b))
            return json_integer_value(a) == json_integer_value(b);
        return json_number_value(a) == json_number_value(b);
    }
    if (json_typeof(a) != json_typeof(b))
        return false;
    switch (json_typeof(a)) {
    case JSON_STRING:
        return json_string_length(a) == json_string_length(b) &&
               memcmp(json_string_value(a), json_string_value(b), json_string_length(a)) == 0;
    case JSON_ARRAY: {
        if (json_array_size(a) != json_array_size(b))
            return false;
        for (size_t k = 0; k < json_array_size(a); k++)
            if (!equal(json_array_get(a, k), json_array_get(b, k)))
                return false;
        return true;
    }
    case JSON_OBJECT: {
        if (json_object_size(a) != json_object_size(b))
            return false;
        const char *key;
        json_t *va;
        json_object_foreach((json_t *)a, key, va) {
            json_t *vb = json_object_get(b, key);
            if (!vb || !equal(va, vb))
                return false;
        }
        return true;
    }
    default:
        return true; /* true, false, null: same type is same value */
    }
}

static bool type_is(const json_t *i, const char *t)
{
    if (!strcmp(t, "object"))
        return json_is_object(i);
    if (!strcmp(t, "array"))
        return json_is_array(i);
    if (!strcmp(t, "string"))
        return json_is_string(i);
    if (!strcmp(t, "number"))
        return json_is_number(i);
    if (!strcmp(t, "integer"))
        return is_integral(i);
    if (!strcmp(t, "boolean"))
        return json_is_boolean(i);
    if (!strcmp(t, "null"))
        return json_is_null(i);
    return false;
}

static size_t code_points(const json_t *s)
{
    const unsigned char *p = (const unsigned char *)json_string_value(s);
    size_t n = 0, len = json_string_length(s);
    for (size_t k = 0; k < len; k++)
        n += (p[k] & 0xC0) != 0x80;
    return n;
}

/* 1 match, 0 no match, -1 the pattern does not compile or runs out of its
 * match budget. */
static int regex_search(const char *pattern, const char *subject, size_t len)
{
    int ec;
    PCRE2_SIZE eo;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED,
                                   PCRE2_UTF | PCRE2_UCP, &ec, &eo, NULL);
    if (!re)
        return -1;
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
    pcre2_match_context *mc = pcre2_match_context_create(NULL);
    int r = -1;
    if (md && mc) {
        pcre2_set_match_limit(mc, 100000);
        pcre2_set_depth_limit(mc, 10000);
        int rc = pcre2_match(re, (PCRE2_SPTR)subject, len, 0, 0, md, mc);
        r = rc >= 0 ? 1 : rc == PCRE2_ERROR_NOMATCH ? 0 : -1;
    }
    pcre2_match_context_free(mc);
    pcre2_match_data_free(md);
    pcre2_code_free(re);
    return r;
}

/* ---- $ref ---- */

static int hexval(char ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

/* Resolves a local reference ("#" or "#/a/b") against the root schema;
 * NULL when it is not local or names nothing. */
static const json_t *resolve(const json_t *root, const char *ref)
{
    if (ref[0] != '#')
        return NULL;
    const json_t *cur = root;
    const char *p = ref + 1;
    if (*p == '\0')
        return cur;
    if (*p != '/')
        return NULL;
    while (*p == '/' && cur) {
        char seg[256];
        size_t n = 0;
        for (p++; *p && *p != '/'; p++) {
            char ch = *p;
            if (ch == '%' && hexval(p[1]) >= 0 && hexval(p[2]) >= 0) {
                ch = (char)(hexval(p[1]) * 16 + hexval(p[2]));
                p += 2;
            } else if (ch == '~' && (p[1] == '0' || p[1] == '1')) {
                ch = p[1] == '0' ? '~' : '/';
                p++;
            }
            if (n + 1 >= sizeof seg)
                return NULL;
            seg[n++] = ch;
        }
        seg[n] = '\0';
        if (json_is_object(cur)) {
            cur = json_object_get(cur, seg);
        } else if (json_is_array(cur)) {
            char *end;
            unsigned long idx = strtoul(seg, &end, 10);
            cur = (n && *end == '\0') ? json_array_get(cur, idx) : NULL;
        } else {
            cur = NULL;
        }
    }
    return cur;
}

/* ---- Keywords by instance type ---- */

static enum sw_schema_result v_number(struct ctx *c, const json_t *s, const json_t *i)
{
    double x = json_number_value(i);
    const json_t *k;
    if ((k = json_object_get(s, "minimum")) && json_is_number(k) && x < json_number_value(k))
        return fail(c, SW_SCHEMA_INVALID, "minimum: below %g", json_number_value(k));
    if ((k = json_object_get(s, "maximum")) && json_is_number(k) && x > json_number_value(k))
        return fail(c, SW_SCHEMA_INVALID, "maximum: above %g", json_number_value(k));
    if ((k = json_object_get(s, "exclusiveMinimum")) && json_is_number(k) && x <= json_number_value(k))
        return fail(c, SW_SCHEMA_INVALID, "exclusiveMinimum: not above %g", json_number_value(k));
    if ((k = json_object_get(s, "exclusiveMaximum")) && json_is_number(k) && x >= json_number_value(k))
        return fail(c, SW_SCHEMA_INVALID, "exclusiveMaximum: not below %g", json_number_value(k));
    return SW_SCHEMA_OK;
}

static enum sw_schema_result v_string(struct ctx *c, const json_t *s, const json_t *i)
{
    const json_t *k;
    size_t n = code_points(i);
    if ((k = json_object_get(s, "minLength")) && json_is_number(k) && (double)n < json_number_value(k))
        return fail(c, SW_SCHEMA_INVALID, "minLength: shorter than %g", json_number_value(k));
    if ((k = json_object_get(s, "maxLength")) && json_is_number(k) && (double)n > json_number_value(k))
        return fail(c, SW_SCHEMA_INVALID, "maxLength: longer than %g", json_number_value(k));
    if ((k = json_object_get(s, "pattern"))) {
        if (!json_is_string(k))
            return fail(c, SW_SCHEMA_BAD_SCHEMA, "pattern: not a string");
        int m = regex_search(json_string_value(k), json_string_value(i), json_string_length(i));
        if (m < 0)
            return fail(c, SW_SCHEMA_BAD_SCHEMA, "pattern: does not compile or exceeds its match limit");
        if (m == 0)
            return fail(c, SW_SCHEMA_INVALID, "pattern: no match");
    }
    return SW_SCHEMA_OK;
}

static enum sw_schema_result v_array(struct ctx *c, const json_t *s, const json_t *i)
{
    const json_t *k;
    size_t n = json_array_size(i);
    if ((k = json_object_get(s, "minItems")) && json_is_number(k) && (double)n < json_number_value(k))
        return fail(c, SW_SCHEMA_INVALID, "minItems: fewer than %g", json_number_value(k));
    if ((k = json_object_get(s, "maxItems")) && json_is_number(k) && (double)n > json_number_value(k))
        return fail(c, SW_SCHEMA_INVALID, "maxItems: more than %g", json_number_value(k));

    /* Positional schemas (prefixItems, or draft 7's array form of items),
     * then one schema for the rest (items after prefixItems, or additionalItems). */
    const json_t *prefix = json_object_get(s, "prefixItems"), *rest;
    const json_t *items = json_object_get(s, "items");
    if (json_is_array(prefix)) {
        rest = items;
    } else if (json_is_array(items)) {
        prefix = items;
        rest = json_object_get(s, "additionalItems");
    } else {
        prefix = NULL;
        rest = items;
    }
    size_t np = prefix ? json_array_size(prefix) : 0;
    for (size_t x = 0; x < n; x++) {
        const json_t *sub = x < np ? json_array_get(prefix, x) : rest;
        if (!sub)
            break;
        size_t old = push_index(c, x);
        enum sw_schema_result r = validate(c, sub, json_array_get(i, x));
        pop(c, old);
        if (r)
            return r;
    }
    return SW_SCHEMA_OK;
}

static enum sw_schema_result v_object(struct ctx *c, const json_t *s, const json_t *i)
{
    const json_t *req = json_object_get(s, "required");
    if (json_is_array(req)) {
        for (size_t x = 0; x < json_array_size(req); x++) {
            const json_t *name = json_array_get(req, x);
            if (json_is_string(name) && !json_object_get(i, json_string_value(name)))
                return fail(c, SW_SCHEMA_INVALID, "required: missing property");
        }
    }
    const json_t *props = json_object_get(s, "properties");
    const json_t *pprops = json_object_get(s, "patternProperties");
    const json_t *addl = json_object_get(s, "additionalProperties");
    if (!json_is_object(props))
        props = NULL;
    if (!json_is_object(pprops))
        pprops = NULL;
    const char *key;
    json_t *val;
    json_object_foreach((json_t *)i, key, val) {
        bool matched = false;
        enum sw_schema_result r = SW_SCHEMA_OK;
        size_t old = push_key(c, key);
        const json_t *sub = props ? json_object_get(props, key) : NULL;
        if (sub) {
            matched = true;
            r = validate(c, sub, val);
        }
        if (!r && pprops) {
            const char *pat;
            json_t *psub;
            json_object_foreach((json_t *)pprops, pat, psub) {
                int m = regex_search(pat, key, strlen(key));
                if (m < 0) {
                    r = fail(c, SW_SCHEMA_BAD_SCHEMA, "patternProperties: a pattern does not compile");
                    break;
                }
                if (m) {
                    matched = true;
                    if ((r = validate(c, psub, val)))
                        break;
                }
            }
        }
        if (!r && !matched && addl)
            r = validate(c, addl, val);
        pop(c, old);
        if (r == SW_SCHEMA_INVALID && !matched && addl && json_is_false(addl))
            return fail(c, r, "additionalProperties: property not allowed");
        if (r)
            return r;
    }
    return SW_SCHEMA_OK;
}

/* ---- Combinators ---- */

static enum sw_schema_result v_combinators(struct ctx *c, const json_t *s, const json_t *i)
{
    const json_t *k;
    enum sw_schema_result r;
    if ((k = json_object_get(s, "allOf")) && json_is_array(k)) {
        for (size_t x = 0; x < json_array_size(k); x++)
            if ((r = validate(c, json_array_get(k, x), i)))
                return r;
    }
    if ((k = json_object_get(s, "anyOf")) && json_is_array(k)) {
        bool any = false;
        for (size_t x = 0; x < json_array_size(k) && !any; x++) {
            r = validate(c, json_array_get(k, x), i);
            if (r != SW_SCHEMA_OK && r != SW_SCHEMA_INVALID)
                return r;
            any = r == SW_SCHEMA_OK;
        }
        if (!any)
            return fail(c, SW_SCHEMA_INVALID, "anyOf: matches none");
    }
    if ((k = json_object_get(s, "oneOf")) && json_is_array(k)) {
        size_t hits = 0;
        for (size_t x = 0; x < json_array_size(k); x++) {
            r = validate(c, json_array_get(k, x), i);
            if (r != SW_SCHEMA_OK && r != SW_SCHEMA_INVALID)
                return r;
            hits += r == SW_SCHEMA_OK;
        }
        if (hits != 1)
            return fail(c, SW_SCHEMA_INVALID, "oneOf: matches %zu, not exactly one", hits);
    }
    if ((k = json_object_get(s, "not"))) {
        r = validate(c, k, i);
        if (r == SW_SCHEMA_OK)
            return fail(c, SW_SCHEMA_INVALID, "not: matches");
        if (r != SW_SCHEMA_INVALID)
            return r;
    }
    return SW_SCHEMA_OK;
}

/* ---- One schema ---- */

static enum sw_schema_result validate_here(struct ctx *c, const json_t *s, const json_t *i)
{
    if (json_is_true(s))
        return SW_SCHEMA_OK;
    if (json_is_false(s))
        return fail(c, SW_SCHEMA_INVALID, "false schema");
    if (!json_is_object(s))
        return fail(c, SW_SCHEMA_BAD_SCHEMA, "a schema must be an object or a boolean");

    const json_t *k = json_object_get(s, "$ref");
    if (k) {
        const json_t *target = json_is_string(k) ? resolve(c->root, json_string_value(k)) : NULL;
        if (!target)
            return fail(c, SW_SCHEMA_BAD_SCHEMA, "$ref: not a local reference to a schema");
        return validate(c, target, i);
    }

    if ((k = json_object_get(s, "type"))) {
        bool ok = false;
        if (json_is_string(k)) {
            ok = type_is(i, json_string_value(k));
        } else if (json_is_array(k)) {
            for (size_t x = 0; x < json_array_size(k) && !ok; x++) {
                const json_t *t = json_array_get(k, x);
                ok = json_is_string(t) && type_is(i, json_string_value(t));
            }
        } else {
            return fail(c, SW_SCHEMA_BAD_SCHEMA, "type: not a string or an array");
        }
        if (!ok)
            return fail(c, SW_SCHEMA_INVALID, "type: wrong type");
    }
    if ((k = json_object_get(s, "enum"))) {
        bool ok = false;
        if (!json_is_array(k))
            return fail(c, SW_SCHEMA_BAD_SCHEMA, "enum: not an array");
        for (size_t x = 0; x < json_array_size(k) && !ok; x++)
            ok = equal(json_array_get(k, x), i);
        if (!ok)
            return fail(c, SW_SCHEMA_INVALID, "enum: not one of the values");
    }
    if ((k = json_object_get(s, "const")) && !equal(k, i))
        return fail(c, SW_SCHEMA_INVALID, "const: not the value");

    enum sw_schema_result r = SW_SCHEMA_OK;
    if (json_is_number(i))
        r = v_number(c, s, i);
    else if (json_is_string(i))
        r = v_string(c, s, i);
    else if (json_is_array(i))
        r = v_array(c, s, i);
    else if (json_is_object(i))
        r = v_object(c, s, i);
    if (r)
        return r;
    return v_combinators(c, s, i);
}

static enum sw_schema_result validate(struct ctx *c, const json_t *s, const json_t *i)
{
    if (c->depth >= SW_SCHEMA_MAX_DEPTH)
        return fail(c, SW_SCHEMA_LIMIT, "schema nesting or $ref chain too deep");
    if (++c->steps > SW_SCHEMA_MAX_STEPS)
        return fail(c, SW_SCHEMA_LIMIT, "schema evaluation exceeds its step budget");
    c->depth++;
    enum sw_schema_result r = validate_here(c, s, i);
    c->depth--;
    return r;
}

enum sw_schema_result sw_schema_validate(const json_t *schema, const json_t *instance,
                                         struct sw_schema_error *err)
{
    struct ctx c = {.root = schema, .err = err};
    if (err)
        err->path[0] = err->reason[0] = '\0';
    if (!schema || !instance)
        return fail(&c, SW_SCHEMA_BAD_SCHEMA, "no schema or no instance");
    return validate(&c, schema, instance);
}
