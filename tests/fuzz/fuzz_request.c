/* libFuzzer driver for sw_request_parse: any input either parses into a
 * consistent request or yields an error that renders as valid OpenAI JSON.
 * An accepted request is the input itself (decoded with duplicate keys
 * refused, never edited) and keeps the promises of request.h, checked here
 * independently: model a non-empty string; messages a non-empty array of
 * objects with a known role, content a string or a non-empty array, or
 * null/absent only for an assistant call (tool_calls, function_call, audio)
 * or a function message; tool messages carry tool_call_id, function
 * messages a name; stream_options only with stream: true; n at most 1;
 * metadata values strings (allow_cloud also a boolean); and the derived
 * facts (stream, include_usage, max_tokens, n_messages, has_tools,
 * has_images, allow_cloud, prompt_tokens_est) are what the body says; the
 * spend bound prompt_tokens_max is at least the estimate. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ctype.h>
#include <jansson.h>

#include "common/err.h"
#include "request/prefix.h"
#include "request/request.h"

#include "check.h"


static void check_error(const struct sw_request_error *err)
{
    char *s = sw_request_error_json(err);
    json_t *root, *e;

    CHECK(err->status == 400 || err->status == 500);
    CHECK(err->message[0] != '\0');
    CHECK(memchr(err->message, '\0', sizeof(err->message)) != NULL);
    CHECK(memchr(err->param, '\0', sizeof(err->param)) != NULL);
    CHECK(s != NULL);
    root = json_loads(s, 0, NULL);
    CHECK(root != NULL);
    e = json_object_get(root, "error");
    CHECK(json_is_string(json_object_get(e, "message")));
    CHECK(strcmp(json_string_value(json_object_get(e, "message")), err->message) == 0);
    CHECK(err->param[0] ? json_is_string(json_object_get(e, "param"))
                        : json_is_null(json_object_get(e, "param")));
    json_decref(root);
    free(s);
}

static json_t *opt(const json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    return json_is_null(v) ? NULL : v;
}

static long tok(size_t bytes)
{
    return (long)((bytes + 3) / 4);
}

static long compact_len(const json_t *v)
{
    return tok(json_dumpb(v, NULL, 0, JSON_COMPACT));
}

static void check_accepted(const uint8_t *data, size_t size, const struct sw_chat_request *req)
{
    static const char *roles[] = {"system", "developer", "user", "assistant", "tool", "function"};
    json_t *in = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY,
                            NULL);
    const json_t *b = req->body;
    json_t *msgs = json_object_get(b, "messages"), *m, *v;
    long est = SW_REQUEST_PRIMING_TOKENS;   /* once per request */
    bool images = false;
    size_t i, k;

    CHECK(in && json_equal(in, b));             /* no duplicate keys; not edited */
    json_decref(in);
    CHECK(json_is_object(b));
    CHECK(json_is_string(json_object_get(b, "model")));
    CHECK(req->model == json_string_value(json_object_get(b, "model")) && req->model[0]);
    CHECK(json_is_array(msgs) && json_array_size(msgs) == req->n_messages && req->n_messages > 0);
    json_array_foreach(msgs, i, m) {
        CHECK(json_is_object(m));
        const char *role = json_string_value(json_object_get(m, "role"));
        CHECK(role);
        size_t r = 0;
        while (r < 6 && strcmp(role, roles[r]))
            r++;
        CHECK(r < 6);
        bool assistant = r == 3, call = false;
        if (r == 4)
            CHECK(json_is_string(json_object_get(m, "tool_call_id")));
        if (r == 5)
            CHECK(json_is_string(json_object_get(m, "name")));
        if (assistant && (v = opt(m, "tool_calls"))) {
            json_t *tc;
            CHECK(json_is_array(v));
            json_array_foreach(v, k, tc) {
                json_t *a = json_object_get(json_object_get(tc, "function"), "arguments");
                CHECK(json_is_string(a));
                est += tok(json_string_length(a));
            }
            call = true;
        }
        if (assistant && (v = opt(m, "function_call"))) {
            json_t *a = json_object_get(v, "arguments");
            CHECK(json_is_string(a));
            est += tok(json_string_length(a));
            call = true;
        }
        if (assistant && opt(m, "audio"))
            call = true;
        json_t *content = opt(m, "content");
        if (!content) {
            CHECK(call || (r == 5 && json_object_get(m, "content")));
        } else if (json_is_string(content)) {
            est += tok(json_string_length(content));
        } else {
            json_t *part;
            CHECK(json_is_array(content) && json_array_size(content) > 0);
            json_array_foreach(content, k, part) {
                const char *type = json_string_value(json_object_get(part, "type"));
                CHECK(type);
                if (!strcmp(type, "text"))
                    est += tok(json_string_length(json_object_get(part, "text")));
                else if (!strcmp(type, "refusal"))
                    est += tok(json_string_length(json_object_get(part, "refusal")));
                else if (!strcmp(type, "image_url")) {
                    /* media parts count by the documented estimate */
                    const char *detail = json_string_value(
                        json_object_get(json_object_get(part, "image_url"), "detail"));
                    est += detail && !strcmp(detail, "low") ? SW_REQUEST_IMAGE_LOW_TOKENS
                                                            : SW_REQUEST_IMAGE_TOKENS;
                    images = true;
                } else if (!strcmp(type, "input_audio") || !strcmp(type, "file")) {
                    json_t *data = !strcmp(type, "file")
                                       ? json_object_get(json_object_get(part, "file"), "file_data")
                                       : json_object_get(json_object_get(part, "input_audio"), "data");
                    long t = json_is_string(data) ? tok(json_string_length(data)) : 0;
                    est += t > SW_REQUEST_MEDIA_MIN_TOKENS ? t : SW_REQUEST_MEDIA_MIN_TOKENS;
                    images = true;
                }
            }
        }
        est += SW_REQUEST_MESSAGE_TOKENS;
    }
    bool tools = false;
    json_t *defs[2] = {opt(b, "tools"), opt(b, "functions")}, *d;
    for (int t = 0; t < 2; t++)
        if (defs[t]) {
            CHECK(json_is_array(defs[t]) && json_array_size(defs[t]) > 0);
            json_array_foreach(defs[t], k, d)
                est += compact_len(d);
            tools = true;
        }
    CHECK(req->prompt_tokens_est == est);
    /* the spend bound: never below the estimate, nor below the text's bytes
     * (media aside: without media parts, every body byte but the template) */
    CHECK(req->prompt_tokens_max >= req->prompt_tokens_est);
    CHECK(images || req->prompt_tokens_max == (long)size + 4 * (long)req->n_messages +
                                                 SW_REQUEST_PRIMING_TOKENS);
    CHECK(req->has_tools == tools);
    CHECK(req->has_images == images);
    CHECK(req->stream == json_is_true(json_object_get(b, "stream")));
    if (opt(b, "stream_options"))
        CHECK(req->stream);
    CHECK(req->include_usage ==
          json_is_true(json_object_get(opt(b, "stream_options"), "include_usage")));
    json_t *mct = opt(b, "max_completion_tokens"), *mt = opt(b, "max_tokens");
    long want = mct && json_integer_value(mct) ? (long)json_integer_value(mct)
                : mt                           ? (long)json_integer_value(mt)
                                               : 0;
    CHECK(req->max_tokens == want);
    if ((v = opt(b, "n")))
        CHECK(json_is_integer(v) && json_integer_value(v) <= 1);
    json_t *md = opt(b, "metadata");
    int allow = -1;
    if (md) {
        const char *key;
        CHECK(json_is_object(md));
        json_object_foreach(md, key, v) {
            if (strcmp(key, "allow_cloud")) {
                CHECK(json_is_string(v));
                continue;
            }
            /* a boolean, or a flag word in any case with blanks around it */
            char w[8] = "";
            const char *sv = json_string_value(v);
            size_t n = sv ? json_string_length(v) : 0, k = 0;
            while (n && (*sv == ' ' || *sv == '\t'))
                sv++, n--;
            while (n && (sv[n - 1] == ' ' || sv[n - 1] == '\t'))
                n--;
            for (; sv && k < n && k < sizeof w - 1; k++)
                w[k] = (char)tolower((unsigned char)sv[k]);
            w[k] = 0;
            bool word = sv && n == k;
            if (json_is_true(v) || (word && (!strcmp(w, "true") || !strcmp(w, "1") ||
                                             !strcmp(w, "yes") || !strcmp(w, "on"))))
                allow = 1;
            else if (json_is_false(v) || (word && (!strcmp(w, "false") || !strcmp(w, "0") ||
                                                   !strcmp(w, "no") || !strcmp(w, "off"))))
                allow = 0;
            else
                CHECK(json_is_null(v));
        }
    }
    CHECK(req->allow_cloud == allow);
}

/* The prefix identity (request/prefix.h) of an accepted body: one boundary
 * per block (block 0, then one per message after it) up to SW_PREFIX_MAX,
 * token counts rising to no more than the estimate, the same hashes
 * computed twice. */
static void check_prefix(const struct sw_chat_request *req)
{
    struct sw_prefix a, b;
    sw_request_prefix(req->body, req->prompt_tokens_est, &a);
    sw_request_prefix(req->body, req->prompt_tokens_est, &b);
    const json_t *msgs = json_object_get(req->body, "messages");
    size_t n = json_array_size(msgs), lead = 0;
    for (; lead < n; lead++) {
        const char *role = json_string_value(json_object_get(json_array_get(msgs, lead), "role"));
        if (!role || (strcmp(role, "system") && strcmp(role, "developer")))
            break;
    }
    size_t blocks = n == 0 ? 0 : 1 + n - (lead ? lead : 1);
    CHECK(a.n == (blocks < SW_PREFIX_MAX ? blocks : SW_PREFIX_MAX));
    CHECK(a.n == b.n);
    for (size_t k = 0; k < a.n; k++) {
        CHECK(a.hash[k] == b.hash[k]);
        CHECK(a.tokens[k] >= 0);
        CHECK(k == 0 || a.tokens[k] >= a.tokens[k - 1]);
        CHECK(a.tokens[k] <= req->prompt_tokens_est);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct sw_chat_request req;
    struct sw_request_error err;
    int rc = sw_request_parse((const char *)data, size, &req, &err);

    if (rc == SW_OK) {
        CHECK(req.body != NULL);
        CHECK(req.max_tokens >= 0);
        CHECK(!req.include_usage || req.stream);
        check_accepted(data, size, &req);
        check_prefix(&req);
    } else {
        CHECK(rc == SW_EINVAL || rc == SW_ENOMEM);
        CHECK(req.body == NULL);
        check_error(&err);
    }
    sw_request_free(&req);
    return 0;
}
