/* Differential libFuzzer driver for sw_json_dumps against jansson's
 * json_dumps: the input drives the building of a random jansson tree
 * (every type, reals from raw bits, strings and keys with any bytes:
 * invalid UTF-8 and NULs through the _nocheck setters, deep nesting past
 * SW_JSON_DUMP_DEPTH), then both writers dump it with JSON_COMPACT and
 * with JSON_COMPACT | JSON_ENCODE_ANY, the root and a child: the same
 * bytes, or both refuse. Also the first bytes as JSON text, loaded and
 * dumped by both. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/jdump.h"

#include "check.h"

struct in {
    const uint8_t *p;
    size_t n;
};

static unsigned byte(struct in *in)
{
    if (!in->n)
        return 0;
    in->n--;
    return *in->p++;
}

static size_t take(struct in *in, size_t want, const char **s)
{
    size_t k = want < in->n ? want : in->n;
    *s = (const char *)in->p;
    in->p += k;
    in->n -= k;
    return k;
}

static json_t *build(struct in *in, int depth)
{
    unsigned c = byte(in);
    const char *s;
    size_t k;
    switch (c % 10) {
    case 0: return json_null();
    case 1: return json_boolean(c & 16);
    case 2: {
        uint64_t u = 0;
        for (int i = 0; i < 8; i++)
            u = u << 8 | byte(in);
        return json_integer((json_int_t)u >> (c >> 4) * 4);
    }
    case 3: {
        uint64_t u = 0;
        for (int i = 0; i < 8; i++)
            u = u << 8 | byte(in);
        double d;
        memcpy(&d, &u, sizeof d);
        if (!isfinite(d))
            d = (double)(int64_t)u / 1e3;
        return json_real(d);
    }
    case 4:
    case 5:
        k = take(in, byte(in) % 40, &s);
        return c & 16 ? json_stringn_nocheck(s, k) : json_stringn(s, k);
    case 6:
    case 7: {
        json_t *a = json_array();
        unsigned n = depth > 300 ? 0 : byte(in) % 6;
        if (c & 32)
            n = 1;
        for (unsigned i = 0; i < n && in->n; i++)
            json_array_append_new(a, build(in, depth + 1));
        return a;
    }
    default: {
        json_t *o = json_object();
        unsigned n = depth > 300 ? 0 : byte(in) % 6;
        if (c & 32)
            n = 1;
        for (unsigned i = 0; i < n && in->n; i++) {
            k = take(in, byte(in) % 12, &s);
            json_t *v = build(in, depth + 1);
            if (c & 64)
                json_object_setn_new_nocheck(o, s, k, v);
            else if (json_object_setn_new(o, s, k, v))
                ; /* invalid key: v was taken and released */
        }
        return o;
    }
    }
}

static void same(const json_t *v, size_t flags)
{
    char *a = json_dumps(v, flags);
    char *b = sw_json_dumps(v, flags);
    CHECK((a == NULL) == (b == NULL));
    if (a)
        CHECK(strcmp(a, b) == 0);
    free(a);
    free(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct in in = {data, size};
    json_t *t = build(&in, 0);
    if (t) {
        same(t, JSON_COMPACT);
        same(t, JSON_COMPACT | JSON_ENCODE_ANY);
        if (json_is_array(t))
            same(json_array_get(t, 0), JSON_COMPACT | JSON_ENCODE_ANY);
        json_decref(t);
    }
    json_t *j = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL);
    if (j) {
        same(j, JSON_COMPACT);
        same(j, JSON_COMPACT | JSON_ENCODE_ANY);
        json_decref(j);
    }
    return 0;
}
