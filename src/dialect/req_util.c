#include "dialect/req_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/err.h"
#include "common/jmemo.h"

int sw_dialect_oom(struct sw_request_error *err)
{
    sw_request_error_set(err, 500, "server_error", "out_of_memory", NULL, "Out of memory.");
    return SW_ENOMEM;
}

int sw_dialect_derived(json_t *to, const json_t *el, uint64_t key, sw_dialect_build_fn build,
                       const void *ctx, struct sw_request_error *err)
{
    json_t *d = sw_jmemo_derived_get(el, key);
    if (d) {
        int rc = json_array_extend(to, d) ? sw_dialect_oom(err) : SW_OK;
        json_decref(d);
        return rc;
    }
    size_t from = json_array_size(to);
    int rc = build(to, el, ctx, err);
    if (rc == SW_OK)
        sw_jmemo_derived_put(el, key, to, from);
    return rc;
}

bool sw_dialect_type_refused(const struct sw_request_error *err, const char *p)
{
    size_t n = strlen(p);
    return !strcmp(err->code, "untranslatable") && !strncmp(err->param, p, n) &&
           !strcmp(err->param + n, ".type");
}

json_t *sw_dialect_own_member(json_t *obj, const char *key)
{
    json_t *c = json_copy(json_object_get(obj, key));
    return c && !json_object_set_new(obj, key, c) ? c : NULL;
}

json_t *sw_dialect_own_element(json_t *arr, size_t i)
{
    json_t *c = json_copy(json_array_get(arr, i));
    return c && !json_array_set_new(arr, i, c) ? c : NULL;
}

json_t *sw_dialect_object(const struct sw_member *m, size_t n)
{
    json_t *o = json_object();
    bool ok = o != NULL;
    for (size_t i = 0; i < n; i++) {
        if (!ok || !m[i].v) {
            json_decref(m[i].v);
            ok = false;
        } else if (json_object_set_new_nocheck(o, m[i].key, m[i].v)) {
            ok = false; /* the value was released */
        }
    }
    if (!ok) {
        json_decref(o);
        return NULL;
    }
    return o;
}

json_t *sw_dialect_str(const char *s)
{
    return json_stringn_nocheck(s, strlen(s));
}

bool sw_dialect_is_num(const json_t *v)
{
    return json_is_integer(v) || json_is_real(v);
}

/* Text of a string or of an array of text blocks, joined with "\n"; NULL
 * (and *bad set to the offending index, or -1 for the type) otherwise. */
char *sw_dialect_joined_text(const json_t *v, long *bad)
{
    *bad = -1;
    if (json_is_string(v))
        return strdup(json_string_value(v));
    if (!json_is_array(v))
        return NULL;
    struct sw_buf b;
    sw_buf_init(&b, (size_t)1 << 30);
    size_t i;
    json_t *blk;
    json_array_foreach(v, i, blk) {
        json_t *t = json_object_get(blk, "text");
        if (!json_is_object(blk) || !json_is_string(json_object_get(blk, "type")) ||
            strcmp(json_string_value(json_object_get(blk, "type")), "text") || !json_is_string(t)) {
            *bad = (long)i;
            sw_buf_free(&b);
            return NULL;
        }
        if ((i && sw_buf_append(&b, "\n", 1)) || sw_buf_append_str(&b, json_string_value(t))) {
            sw_buf_free(&b);
            return NULL;
        }
    }
    if (!b.ptr)
        return strdup("");
    return b.ptr;
}

const char *sw_dialect_type_of(const json_t *blk)
{
    const char *t = json_string_value(json_object_get(blk, "type"));
    return t ? t : "";
}

int sw_dialect_known_members(const json_t *in, const char *const *known, size_t n,
                             const char *api, struct sw_request_error *err)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)in, k, v) {
        bool ok = json_is_null(v);
        for (size_t i = 0; i < n && !ok; i++)
            ok = !strcmp(k, known[i]);
        if (!ok) {
            char p[128];
            snprintf(p, sizeof p, "%.100s", k);
            NOPE(p, "%s: this field has no counterpart in %s (the backend chosen speaks it) "
                    "and is refused rather than dropped.", p, api);
        }
    }
    return SW_OK;
fail:
    return SW_EINVAL;
}

const char *sw_dialect_image_url(const json_t *part)
{
    json_t *iu = json_object_get(part, "image_url");
    return json_is_string(iu) ? json_string_value(iu)
                              : json_string_value(json_object_get(iu, "url"));
}

int sw_dialect_data_url(const char *url, char *mt, size_t cap, const char **data)
{
    const char *semi = strncmp(url, "data:", 5) ? NULL : strstr(url, ";base64,");
    if (!semi)
        return 0;
    size_t n = (size_t)(semi - url - 5);
    if (n == 0 || n >= cap)
        return -1;
    memcpy(mt, url + 5, n);
    mt[n] = '\0';
    *data = semi + 8;
    return 1;
}
