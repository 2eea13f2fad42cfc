/* The prefix identity of a request; see prefix.h. */
#include "request/prefix.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/jmemo.h"

#define XXH_STATIC_LINKING_ONLY     /* XXH3_state_t on the stack */
#include <xxhash.h>
#if defined(__x86_64__)
#include <xxh_x86dispatch.h>
#define hash_update XXH3_64bits_update_dispatch     /* AVX2 where the CPU has it */
#else
#define hash_update XXH3_64bits_update
#endif

#define STAGE 512           /* heads and short texts gathered for one update */
#define MEMBERS_STACK 16    /* an object's members sorted on the stack; more on the heap */
#define DEPTH_MAX 128       /* deeper than any body the parser accepts: no identity */

/* One hash state over the whole chain; the digest at a boundary covers
 * every block before it. */
struct walk {
    XXH3_state_t st;
    unsigned char stage[STAGE];
    size_t staged;
    size_t bytes;           /* compact JSON bytes so far, escapes not counted */
    bool ok;
};

struct member {
    const char *key;
    size_t len;
    const json_t *v;
};

static void flush(struct walk *w)
{
    if (w->staged)
        hash_update(&w->st, w->stage, w->staged);
    w->staged = 0;
}

static void put(struct walk *w, const void *p, size_t n)
{
    if (n > STAGE - w->staged) {
        flush(w);
        if (n >= STAGE) {
            hash_update(&w->st, p, n);
            return;
        }
    }
    memcpy(w->stage + w->staged, p, n);
    w->staged += n;
}

/* A value's head: its type and, for strings, arrays and objects, its
 * length, so the values fed one after another read back one way only. */
static void head(struct walk *w, char tag, uint64_t n)
{
    unsigned char h[9];
    h[0] = (unsigned char)tag;
    memcpy(h + 1, &n, sizeof n);
    put(w, h, sizeof h);
}

static void text(struct walk *w, char tag, const char *s, size_t len)
{
    head(w, tag, len);
    put(w, s, len);
}

/* An empty walk; false when the hash state could not be reset. */
static bool start(struct walk *w)
{
    w->staged = 0;
    w->bytes = 0;
    w->ok = XXH3_64bits_reset(&w->st) == XXH_OK;
    return w->ok;
}

static uint64_t digest(struct walk *w)
{
    flush(w);
    return XXH3_64bits_digest(&w->st);
}

static bool before(const struct member *a, const struct member *b)
{
    int c = memcmp(a->key, b->key, a->len < b->len ? a->len : b->len);
    return c < 0 || (c == 0 && a->len < b->len);
}

static void value(struct walk *w, const json_t *v, int depth);

/* Members in key order: the same object in any key order hashes the same. */
static void object(struct walk *w, const json_t *v, int depth)
{
    struct member stack[MEMBERS_STACK], *m = stack;
    size_t n = json_object_size(v), k = 0;
    if (n > MEMBERS_STACK && !(m = malloc(n * sizeof *m))) {
        w->ok = false;
        return;
    }
    for (void *it = json_object_iter((json_t *)v); it && k < n;
         it = json_object_iter_next((json_t *)v, it)) {
        struct member e = {json_object_iter_key(it), json_object_iter_key_len(it),
                           json_object_iter_value(it)};
        size_t j = k++;
        for (; j > 0 && before(&e, &m[j - 1]); j--)
            m[j] = m[j - 1];
        m[j] = e;
    }
    head(w, 'o', k);
    w->bytes += 2 + (k ? k - 1 : 0);
    for (size_t i = 0; i < k && w->ok; i++) {
        text(w, 'k', m[i].key, m[i].len);
        w->bytes += m[i].len + 3;
        value(w, m[i].v, depth + 1);
    }
    if (m != stack)
        free(m);
}

static size_t digits(json_int_t i)
{
    size_t d = i < 0 ? 2 : 1;
    for (; i <= -10 || i >= 10; i /= 10)
        d++;
    return d;
}

/* Feeds v (its type, lengths and bytes) and counts its compact JSON. */
static void value(struct walk *w, const json_t *v, int depth)
{
    if (depth > DEPTH_MAX) {
        w->ok = false;
        return;
    }
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        object(w, v, depth);
        break;
    case JSON_ARRAY: {
        size_t n = json_array_size(v);
        head(w, 'a', n);
        w->bytes += 2 + (n ? n - 1 : 0);
        for (size_t i = 0; i < n && w->ok; i++)
            value(w, json_array_get(v, i), depth + 1);
        break;
    }
    case JSON_STRING:
        text(w, 's', json_string_value(v), json_string_length(v));
        w->bytes += json_string_length(v) + 2;
        break;
    case JSON_INTEGER: {
        json_int_t i = json_integer_value(v);
        head(w, 'i', (uint64_t)i);
        w->bytes += digits(i);
        break;
    }
    case JSON_REAL: {
        double d = json_real_value(v);
        uint64_t bits;
        memcpy(&bits, &d, sizeof bits);
        head(w, 'r', bits);
        char b[32];
        int len = snprintf(b, sizeof b, "%.17g", d);
        w->bytes += len > 0 ? (size_t)len : 1;
        break;
    }
    case JSON_TRUE:
        head(w, 't', 0);
        w->bytes += 4;
        break;
    case JSON_FALSE:
        head(w, 'f', 0);
        w->bytes += 5;
        break;
    case JSON_NULL:
        head(w, 'n', 0);
        w->bytes += 4;
        break;
    }
}

/* A block's element (the tools, a message): its own digest and compact
 * bytes are what the chain is fed, kept as a note with a value the parse
 * memo holds (common/jmemo.h), so a message resent in a later turn is not
 * walked again. */
struct element_note {
    uint64_t digest;
    size_t bytes;
};
#define NOTE_KEY 0x70726566697831ull     /* "prefix1": what the note is, it depends on nothing else */

static void element(struct walk *w, const json_t *v)
{
    struct element_note n;
    if (!sw_jmemo_note_get(v, NOTE_KEY, &n, sizeof n)) {
        struct walk e;
        if (start(&e))
            value(&e, v, 0);
        if (!e.ok) {
            w->ok = false;
            return;
        }
        n = (struct element_note){digest(&e), e.bytes};
        sw_jmemo_note_put(v, NOTE_KEY, &n, sizeof n);
    }
    head(w, 'e', n.digest);
    w->bytes += n.bytes;
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
    struct walk w;
    if (!start(&w))
        return;
    size_t i = 0;
    sw_jmemo_hold();    /* each element's note is asked for */
    const json_t *tools = json_object_get(body, "tools");
    if (!tools)
        tools = json_object_get(body, "functions");
    for (size_t t = 0; t < json_array_size(tools); t++)   /* each tool its own element */
        element(&w, json_array_get(tools, t));
    for (; i < n && leading(json_array_get(msgs, i)); i++)
        element(&w, json_array_get(msgs, i));
    if (i == 0)     /* no system block: block 0 is the first message */
        element(&w, json_array_get(msgs, i++));
    out->hash[0] = digest(&w);
    out->tokens[0] = (long)w.bytes;
    out->n = 1;
    /* boundaries past block 0: only the last SW_PREFIX_MAX - 1 are kept,
     * so only theirs are digested */
    size_t skip = n - i > SW_PREFIX_MAX - 1 ? n - i - (SW_PREFIX_MAX - 1) : 0;
    for (size_t b = 0; i < n && w.ok; i++, b++) {
        element(&w, json_array_get(msgs, i));
        if (b < skip)
            continue;
        out->hash[out->n] = digest(&w);
        out->tokens[out->n] = (long)w.bytes;
        out->n++;
    }
    sw_jmemo_release();
    if (!w.ok || w.bytes == 0) {
        out->n = 0;
        return;
    }
    /* bytes to tokens: the request's estimate in proportion */
    double per = prompt_tokens_est > 0 ? (double)prompt_tokens_est / (double)w.bytes : 0.25;
    for (size_t k = 0; k < out->n; k++)
        out->tokens[k] = (long)((double)out->tokens[k] * per);
}
