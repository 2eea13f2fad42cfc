/* Test helper: the gateway's AWS modules on inputs from stdin, so a node
 * test can hold them against the official references (it/aws_refs):
 *
 *   aws_drive sign  < JSON array of {method, host, path, region, service,
 *                     body, now_s, access_key_id, secret_access_key,
 *                     session_token?, headers?: {name: value}}
 *                   > JSON array of {authorization, amz_date, payload_hash,
 *                     signed_headers, signature, token?} (or {error})
 *   aws_drive evs   < JSON array of hex strings, each a stream of messages
 *                   > JSON array of {messages: [{headers: [{name, type, value}],
 *                     payload (hex)}], error?, splits_agree}: the stream fed
 *                     whole, then split in two at every byte, then a byte at
 *                     a time; splits_agree says every feeding gave the same
 *                     messages and result
 *
 * Values of header types: bool true/false, byte/short/int/long/timestamp a
 * decimal string, strings as text, byte arrays and uuids in hex. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/err.h"
#include "common/evstream.h"
#include "common/sigv4.h"

static const char *str(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

static json_t *sign_one(const json_t *c)
{
    const char *names[SW_SIGV4_MAX_HEADERS], *values[SW_SIGV4_MAX_HEADERS];
    size_t n = 0;
    const char *k;
    json_t *v;
    json_object_foreach(json_object_get(c, "headers"), k, v) {
        if (n < SW_SIGV4_MAX_HEADERS)
            names[n] = k, values[n++] = json_string_value(v);
    }
    const char *body = str(c, "body") ? str(c, "body") : "";
    struct sw_sigv4_req r = {str(c, "method"), str(c, "host"), str(c, "path"), str(c, "region"),
                             str(c, "service"), body, strlen(body),
                             (long long)json_integer_value(json_object_get(c, "now_s")),
                             names, values, n};
    struct sw_sigv4_creds cr = {str(c, "access_key_id"), str(c, "secret_access_key"),
                                str(c, "session_token")};
    struct sw_sigv4_out o;
    struct sw_buf h;
    sw_buf_init(&h, 64 * 1024);
    int err = sw_sigv4_sign(&r, &cr, &o, &h);
    json_t *out;
    if (err) {
        out = json_pack("{s:s}", "error", sw_err_str(err));
    } else {
        const char *a = strstr(h.ptr, "Authorization: ");
        char auth[1024] = "";
        if (a) {
            a += 15;
            size_t l = strcspn(a, "\r");
            snprintf(auth, sizeof auth, "%.*s", (int)l, a);
        }
        out = json_pack("{s:s, s:s, s:s, s:s, s:s}", "authorization", auth, "amz_date",
                        o.amz_date, "payload_hash", o.payload_hash, "signed_headers",
                        o.signed_headers, "signature", o.signature);
    }
    sw_buf_free(&h);
    return out;
}

/* ---- Event stream ---- */

static void hexs(struct sw_buf *b, const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        sw_buf_appendf(b, "%02x", (unsigned char)p[i]);
}

static int on_message(void *ud, const struct sw_evs_message *m)
{
    json_t *list = ud, *hs = json_array();
    static const char *const types[] = {"boolean", "boolean", "byte", "short", "integer",
                                        "long", "binary", "string", "timestamp", "uuid"};
    for (size_t i = 0; i < m->n_headers; i++) {
        const struct sw_evs_header *h = &m->headers[i];
        struct sw_buf b;
        sw_buf_init(&b, 1 << 20);
        json_t *val;
        if (h->type == SW_EVS_TRUE || h->type == SW_EVS_FALSE) {
            val = json_boolean(h->type == SW_EVS_TRUE);
        } else if (h->type == SW_EVS_STRING) {
            val = json_stringn(h->value.ptr, h->value.len);
        } else if (h->type == SW_EVS_BYTES || h->type == SW_EVS_UUID) {
            hexs(&b, h->value.ptr, h->value.len);
            val = json_string(b.ptr ? b.ptr : "");
        } else {
            sw_buf_appendf(&b, "%lld", (long long)h->num);
            val = json_string(b.ptr);
        }
        sw_buf_free(&b);
        json_array_append_new(hs, json_pack("{s:s%, s:s, s:o}", "name", h->name.ptr, h->name.len,
                                            "type", types[h->type], "value", val));
    }
    struct sw_buf p;
    sw_buf_init(&p, 1 << 24);
    hexs(&p, m->payload.ptr, m->payload.len);
    json_array_append_new(list, json_pack("{s:o, s:s}", "headers", hs, "payload",
                                          p.ptr ? p.ptr : ""));
    sw_buf_free(&p);
    return SW_OK;
}

/* The stream fed in pieces of `step` bytes after a first piece of `first`. */
static json_t *feed(const char *bytes, size_t n, size_t first, size_t step, const char **why)
{
    json_t *list = json_array();
    struct sw_evs d;
    sw_evs_init(&d, 1 << 20, on_message, list);
    int err = SW_OK;
    size_t off = 0;
    while (!err && off < n) {
        size_t k = off == 0 ? first : step;
        if (k > n - off)
            k = n - off;
        err = sw_evs_feed(&d, bytes + off, k);
        off += k;
    }
    if (!err && sw_evs_pending(&d))
        err = SW_EPROTO, d.why = "stream ended inside a message";
    *why = err ? (d.why ? d.why : sw_err_str(err)) : NULL;
    sw_evs_free(&d);
    return list;
}

static json_t *evs_one(const char *hex)
{
    size_t n = strlen(hex) / 2;
    char *b = malloc(n + 1);
    for (size_t i = 0; i < n; i++) {
        unsigned v = 0;
        sscanf(hex + 2 * i, "%2x", &v);
        b[i] = (char)v;
    }
    const char *why;
    json_t *whole = feed(b, n, n ? n : 1, n ? n : 1, &why);
    const char *why0 = why;
    bool agree = true;
    for (size_t cut = 1; cut < n && agree; cut++) {
        json_t *x = feed(b, n, cut, n, &why);
        agree = json_equal(x, whole) && (why == why0 || (why && why0 && !strcmp(why, why0)));
        json_decref(x);
    }
    json_t *x = feed(b, n, 1, 1, &why);
    agree = agree && json_equal(x, whole) && (why == why0 || (why && why0 && !strcmp(why, why0)));
    json_decref(x);
    free(b);
    json_t *o = json_pack("{s:o, s:b}", "messages", whole, "splits_agree", agree);
    if (why0)
        json_object_set_new(o, "error", json_string(why0));
    return o;
}

int main(int argc, char **argv)
{
    if (argc != 2 || (strcmp(argv[1], "sign") && strcmp(argv[1], "evs"))) {
        fprintf(stderr, "usage: aws_drive sign|evs < cases.json\n");
        return 2;
    }
    json_error_t e;
    json_t *in = json_loadf(stdin, 0, &e);
    if (!json_is_array(in)) {
        fprintf(stderr, "aws_drive: stdin is not a JSON array: %s\n", e.text);
        return 2;
    }
    json_t *out = json_array();
    size_t i;
    json_t *c;
    json_array_foreach(in, i, c) {
        json_array_append_new(out, !strcmp(argv[1], "sign") ? sign_one(c)
                                                              : evs_one(json_string_value(c)));
    }
    char *s = json_dumps(out, JSON_COMPACT);
    puts(s);
    free(s);
    json_decref(out);
    json_decref(in);
    return 0;
}
