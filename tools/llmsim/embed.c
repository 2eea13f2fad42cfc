#include "embed.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"

static uint64_t fnv1a(const char *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)p[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void sw_llmsim_embed_vector(const char *bytes, size_t len, float *out, int n)
{
    uint64_t s = fnv1a(bytes, len);
    double norm = 0;
    for (int i = 0; i < n; i++) {
        double u = (double)(splitmix(&s) >> 11) / 9007199254740992.0; /* [0, 1) */
        out[i] = (float)(2 * u - 1);
        norm += (double)out[i] * out[i];
    }
    norm = sqrt(norm);
    for (int i = 0; i < n && norm > 0; i++)
        out[i] = (float)(out[i] / norm);
}

static int append_base64(struct sw_buf *b, const unsigned char *p, size_t n)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    int err = SW_OK;
    for (size_t i = 0; i < n && !err; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16;
        if (i + 1 < n)
            v |= (uint32_t)p[i + 1] << 8;
        if (i + 2 < n)
            v |= p[i + 2];
        char q[4] = {tab[(v >> 18) & 63], tab[(v >> 12) & 63], i + 1 < n ? tab[(v >> 6) & 63] : '=',
                     i + 2 < n ? tab[v & 63] : '='};
        err = sw_buf_append(b, q, 4);
    }
    return err;
}

/* One input's bytes for the hash: a string's text, a token array's JSON. */
static char *input_bytes(const json_t *v, size_t *len, int *tokens)
{
    if (json_is_string(v)) {
        *len = json_string_length(v);
        *tokens += (int)((*len + 3) / 4);
        char *c = malloc(*len + 1);
        if (c)
            memcpy(c, json_string_value(v), *len + 1);
        return c;
    }
    char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    *len = s ? strlen(s) : 0;
    *tokens += json_is_array(v) ? (int)json_array_size(v) : 1;
    return s;
}

static int render(struct sw_buf *b, const json_t *items, int dims, bool b64, const char *model,
                  int *tokens)
{
    float *vec = malloc(sizeof(float) * (size_t)dims);
    if (!vec)
        return SW_ENOMEM;
    int err = sw_buf_append_str(b, "{\"object\":\"list\",\"data\":[");
    size_t i;
    json_t *it;
    json_array_foreach(items, i, it) {
        size_t len;
        char *bytes = input_bytes(it, &len, tokens);
        if (!bytes) {
            err = SW_ENOMEM;
            break;
        }
        sw_llmsim_embed_vector(bytes, len, vec, dims);
        free(bytes);
        char head[96];
        snprintf(head, sizeof head, "%s{\"object\":\"embedding\",\"index\":%zu,\"embedding\":",
                 i ? "," : "", i);
        if (!err)
            err = sw_buf_append_str(b, head);
        if (b64) {
            unsigned char *raw = malloc(4 * (size_t)dims);
            if (!raw) {
                err = SW_ENOMEM;
                break;
            }
            for (int k = 0; k < dims; k++) {
                uint32_t u;
                memcpy(&u, &vec[k], 4);
                raw[4 * k] = (unsigned char)u;
                raw[4 * k + 1] = (unsigned char)(u >> 8);
                raw[4 * k + 2] = (unsigned char)(u >> 16);
                raw[4 * k + 3] = (unsigned char)(u >> 24);
            }
            if (!err)
                err = sw_buf_append(b, "\"", 1);
            if (!err)
                err = append_base64(b, raw, 4 * (size_t)dims);
            if (!err)
                err = sw_buf_append(b, "\"", 1);
            free(raw);
        } else {
            for (int k = 0; k < dims && !err; k++) {
                char num[32];
                int n = snprintf(num, sizeof num, "%s%.9g", k ? "," : "[", (double)vec[k]);
                err = sw_buf_append(b, num, (size_t)n);
            }
            if (!err)
                err = sw_buf_append(b, "]", 1);
        }
        if (!err)
            err = sw_buf_append(b, "}", 1);
        if (err)
            break;
    }
    free(vec);
    if (err)
        return err;
    json_t *m = json_string(model);
    char *mj = m ? json_dumps(m, JSON_ENCODE_ANY) : NULL;
    json_decref(m);
    if (!mj)
        return SW_ENOMEM;
    char tail[128];
    snprintf(tail, sizeof tail, "],\"usage\":{\"prompt_tokens\":%d,\"total_tokens\":%d},\"model\":",
             *tokens, *tokens);
    err = sw_buf_append_str(b, tail);
    if (!err)
        err = sw_buf_append_str(b, mj);
    if (!err)
        err = sw_buf_append(b, "}", 1);
    free(mj);
    return err;
}

static bool token_array(const json_t *v)
{
    if (!json_is_array(v) || json_array_size(v) == 0)
        return false;
    size_t i;
    json_t *t;
    json_array_foreach(v, i, t) if (!json_is_integer(t) || json_integer_value(t) < 0) return false;
    return true;
}

int sw_llmsim_embed(const json_t *root, const char *default_model, struct sw_buf *out,
                    int *prompt_tokens, char *err, size_t errlen)
{
    *prompt_tokens = 0;
    if (!json_is_object(root)) {
        snprintf(err, errlen, "the body must be a JSON object");
        return SW_EINVAL;
    }
    const json_t *in = json_object_get(root, "input");
    json_t *items = NULL;
    if (json_is_string(in) && json_string_length(in) > 0) {
        items = json_pack("[O]", in);
    } else if (token_array(in)) {
        items = json_pack("[O]", in);
    } else if (json_is_array(in) && json_array_size(in) > 0 &&
               json_array_size(in) <= SW_LLMSIM_EMBED_MAX_INPUTS) {
        size_t i;
        json_t *it;
        json_array_foreach(in, i, it) {
            if (!(json_is_string(it) && json_string_length(it) > 0) && !token_array(it)) {
                snprintf(err, errlen, "input[%zu]: must be a non-empty string or token array", i);
                return SW_EINVAL;
            }
        }
        items = json_incref((json_t *)in);
    } else {
        snprintf(err, errlen, "input: must be a non-empty string, token array, or array of "
                              "them (at most %d)", SW_LLMSIM_EMBED_MAX_INPUTS);
        return SW_EINVAL;
    }
    if (!items)
        return SW_ENOMEM;
    int dims = SW_LLMSIM_EMBED_DIMS;
    const json_t *d = json_object_get(root, "dimensions");
    if (d && !json_is_null(d)) {
        if (!json_is_integer(d) || json_integer_value(d) < 1 ||
            json_integer_value(d) > SW_LLMSIM_EMBED_MAX_DIMS) {
            json_decref(items);
            snprintf(err, errlen, "dimensions: must be an integer from 1 to %d",
                     SW_LLMSIM_EMBED_MAX_DIMS);
            return SW_EINVAL;
        }
        dims = (int)json_integer_value(d);
    }
    bool b64 = false;
    const json_t *ef = json_object_get(root, "encoding_format");
    if (ef && !json_is_null(ef)) {
        const char *s = json_string_value(ef);
        if (!s || (strcmp(s, "float") && strcmp(s, "base64"))) {
            json_decref(items);
            snprintf(err, errlen, "encoding_format: must be \"float\" or \"base64\"");
            return SW_EINVAL;
        }
        b64 = !strcmp(s, "base64");
    }
    const char *model = json_string_value(json_object_get(root, "model"));
    int rc = render(out, items, dims, b64, model && *model ? model : default_model, prompt_tokens);
    json_decref(items);
    if (rc)
        snprintf(err, errlen, "answer too large");
    return rc;
}
