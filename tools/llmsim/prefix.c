/* The prefix identity of a request body; see prefix.h. */
#include "prefix.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* FNV-1a over v's compact JSON (keys sorted), continuing from h. */
static uint64_t feed(uint64_t h, const json_t *v, size_t *bytes)
{
    if (!v)
        return h;
    char *s = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
    if (!s)
        return h;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        h = (h ^ *p) * 1099511628211ull;
    *bytes += strlen(s);
    free(s);
    return h;
}

static void keep(struct sw_llmsim_prefix *out, uint64_t h, size_t bytes)
{
    if (out->n == SW_LLMSIM_CHAIN_MAX) {
        memmove(&out->hash[1], &out->hash[2], (SW_LLMSIM_CHAIN_MAX - 2) * sizeof out->hash[0]);
        memmove(&out->tokens[1], &out->tokens[2],
                (SW_LLMSIM_CHAIN_MAX - 2) * sizeof out->tokens[0]);
        out->n--;
    }
    out->hash[out->n] = h;
    out->tokens[out->n] = bytes > 0x7fffffff ? 0x7fffffff : (int)bytes;
    out->n++;
}

static bool leading(const json_t *m)
{
    const char *role = json_string_value(json_object_get(m, "role"));
    return role && (!strcmp(role, "system") || !strcmp(role, "developer"));
}

void sw_llmsim_prefix_of(const json_t *root, int prompt_tokens, struct sw_llmsim_prefix *out)
{
    out->n = 0;
    const json_t *msgs = json_object_get(root, "messages");
    if (!msgs)
        msgs = json_object_get(root, "input");
    size_t n = json_is_array(msgs) ? json_array_size(msgs) : 0;
    if (n == 0)
        return;
    uint64_t h = 1469598103934665603ull;
    size_t bytes = 0, i = 0;
    h = feed(h, json_object_get(root, "system"), &bytes);
    h = feed(h, json_object_get(root, "instructions"), &bytes);
    h = feed(h, json_object_get(root, "tools"), &bytes);
    for (; i < n && leading(json_array_get(msgs, i)); i++)
        h = feed(h, json_array_get(msgs, i), &bytes);
    if (bytes == 0)
        h = feed(h, json_array_get(msgs, i++), &bytes);
    keep(out, h, bytes);
    for (; i < n; i++) {
        h = feed(h, json_array_get(msgs, i), &bytes);
        keep(out, h, bytes);
    }
    if (bytes == 0) {
        out->n = 0;
        return;
    }
    double per = prompt_tokens > 0 ? (double)prompt_tokens / (double)bytes : 0.25;
    for (int k = 0; k < out->n; k++)
        out->tokens[k] = (int)((double)out->tokens[k] * per);
}
