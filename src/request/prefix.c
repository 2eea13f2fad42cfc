/* The prefix identity of a request; see prefix.h. */
#include "request/prefix.h"

#include <openssl/evp.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define BLOCK_STACK 4096

struct chain {
    EVP_MD_CTX *ctx;
    const EVP_MD *md;
    unsigned char prev[32];
    bool ok;
};

/* Feeds v's compact JSON into the running block. */
static void feed(struct chain *c, const json_t *v, size_t *bytes)
{
    const size_t flags = JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY;
    char stack[BLOCK_STACK];
    char *buf = stack;
    /* one dump into the stack buffer; only a larger value is dumped again */
    size_t need = json_dumpb(v, stack, sizeof stack, flags), got = need;
    if (need == 0)
        return;
    if (need > sizeof stack) {
        if (!(buf = malloc(need))) {
            c->ok = false;
            return;
        }
        got = json_dumpb(v, buf, need, flags);
    }
    if (got != need || !EVP_DigestUpdate(c->ctx, buf, got))
        c->ok = false;
    *bytes += got;
    if (buf != stack)
        free(buf);
}

static bool block_begin(struct chain *c)
{
    return EVP_DigestInit_ex(c->ctx, c->md, NULL) && EVP_DigestUpdate(c->ctx, c->prev, 32);
}

static uint64_t block_end(struct chain *c)
{
    unsigned int len = 0;
    if (!EVP_DigestFinal_ex(c->ctx, c->prev, &len) || len != 32)
        c->ok = false;
    uint64_t h;
    memcpy(&h, c->prev, sizeof h);
    return h;
}

/* Keeps boundary (h, bytes): the first, then the latest SW_PREFIX_MAX - 1. */
static void keep(struct sw_prefix *out, uint64_t h, long bytes)
{
    if (out->n == SW_PREFIX_MAX) {
        memmove(&out->hash[1], &out->hash[2], (SW_PREFIX_MAX - 2) * sizeof out->hash[0]);
        memmove(&out->tokens[1], &out->tokens[2], (SW_PREFIX_MAX - 2) * sizeof out->tokens[0]);
        out->n--;
    }
    out->hash[out->n] = h;
    out->tokens[out->n] = bytes;
    out->n++;
}

static bool leading(const json_t *m)
{
    const char *role = json_string_value(json_object_get(m, "role"));
    return role && (!strcmp(role, "system") || !strcmp(role, "developer"));
}

void sw_request_prefix(const json_t *body, long prompt_tokens_est, struct sw_prefix *out)
{
    out->n = 0;
    const json_t *msgs = json_object_get(body, "messages");
    size_t n = json_array_size(msgs);
    if (n == 0)
        return;
    struct chain c = {.ctx = EVP_MD_CTX_new(), .md = EVP_sha256(), .ok = true};
    memset(c.prev, 0, sizeof c.prev);
    if (!c.ctx || !c.md || !block_begin(&c)) {
        EVP_MD_CTX_free(c.ctx);
        return;
    }
    size_t bytes = 0, i = 0;
    const json_t *tools = json_object_get(body, "tools");
    if (!tools)
        tools = json_object_get(body, "functions");
    if (tools)
        feed(&c, tools, &bytes);
    for (; i < n && leading(json_array_get(msgs, i)); i++)
        feed(&c, json_array_get(msgs, i), &bytes);
    if (i == 0)     /* no system block: block 0 is the first message */
        feed(&c, json_array_get(msgs, i++), &bytes);
    keep(out, block_end(&c), (long)bytes);
    for (; i < n && c.ok; i++) {
        if (!block_begin(&c)) {
            c.ok = false;
            break;
        }
        feed(&c, json_array_get(msgs, i), &bytes);
        keep(out, block_end(&c), (long)bytes);
    }
    EVP_MD_CTX_free(c.ctx);
    if (!c.ok || bytes == 0) {
        out->n = 0;
        return;
    }
    /* bytes to tokens: the request's estimate in proportion */
    double per = prompt_tokens_est > 0 ? (double)prompt_tokens_est / (double)bytes : 0.25;
    for (size_t k = 0; k < out->n; k++)
        out->tokens[k] = (long)((double)out->tokens[k] * per);
}
