#include "dialect/anth_stream.h"

#include <stdio.h>
#include <string.h>

#include "common/jscan.h"
#include "common/satmath.h"

bool sw_anth_preamble_type(const char *t, size_t n)
{
    return (n == 13 && !memcmp(t, "message_start", 13)) ||
           (n == 19 && !memcmp(t, "content_block_start", 19)) || (n == 4 && !memcmp(t, "ping", 4));
}

bool sw_anth_preamble_event(const char *data, size_t len)
{
    static const char *const keys[] = {"type"};
    struct sw_jspan v[1];
    return sw_jscan_object(data, len, keys, v, NULL, 1) && v[0].len >= 2 &&
           data[v[0].off] == '"' && sw_anth_preamble_type(data + v[0].off + 1, v[0].len - 2);
}

long sw_anth_input_tokens(const json_t *usage)
{
    json_t *in = json_object_get(usage, "input_tokens");
    if (!json_is_integer(in) || json_integer_value(in) < 0)
        return -1;
    long t = (long)json_integer_value(in);
    static const char *const cache[] = {"cache_creation_input_tokens", "cache_read_input_tokens"};
    for (size_t i = 0; i < 2; i++) {
        json_t *c = json_object_get(usage, cache[i]);
        if (json_is_integer(c) && json_integer_value(c) > 0)
            t = sw_sat_add_long(t, (long)json_integer_value(c));
    }
    return t;
}

static long out_tokens(const json_t *usage)
{
    json_t *out = json_object_get(usage, "output_tokens");
    return json_is_integer(out) && json_integer_value(out) >= 0 ? (long)json_integer_value(out)
                                                                 : -1;
}

int sw_anth_native_event(const char *data, size_t len, const char *model,
                         struct sw_native_event *ev)
{
    memset(ev, 0, sizeof *ev);
    ev->usage_in = ev->usage_out = -1;
    json_error_t jerr;
    json_t *t = json_loadb(data, len, 0, &jerr);
    const char *type = json_string_value(json_object_get(t, "type"));
    if (!type) {
        json_decref(t);
        return -1;
    }
    ev->tree = t;
    ev->type = type;
    ev->preamble = sw_anth_preamble_type(type, strlen(type));
    if (!strcmp(type, "error")) {
        ev->error = true;
        const char *et = json_string_value(json_object_get(json_object_get(t, "error"), "type"));
        size_t etn = et ? strlen(et) : 0;
        if (etn && etn < sizeof ev->error_type && strspn(et, "abcdefghijklmnopqrstuvwxyz_") == etn)
            snprintf(ev->error_type, sizeof ev->error_type, "%s", et);
        return 0;
    }
    json_t *usage = NULL;
    if (!strcmp(type, "message_start")) {
        json_t *m = json_object_get(t, "message");
        if (json_is_object(m))
            json_object_set_new(m, "model", json_string(model));
        usage = json_object_get(m, "usage");
    } else if (!strcmp(type, "message_delta")) {
        usage = json_object_get(t, "usage");
    } else if (!strcmp(type, "content_block_delta")) {
        ev->content = true;
    }
    long in = sw_anth_input_tokens(usage);
    if (in > 0)
        ev->usage_in = in;
    ev->usage_out = out_tokens(usage);
    ev->stop = !strcmp(type, "message_stop");
    return 0;
}

int sw_anth_native_answer(const json_t *body, long *in, long *out)
{
    json_t *usage = json_object_get(body, "usage");
    if (!json_is_array(json_object_get(body, "content")) || !json_is_object(usage))
        return -1;
    *in = sw_anth_input_tokens(usage);
    *out = out_tokens(usage);
    return 0;
}
