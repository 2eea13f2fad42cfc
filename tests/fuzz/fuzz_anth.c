/* libFuzzer driver for the Anthropic <-> OpenAI translation (src/dialect/).
 * The input is read three ways:
 *  - as an Anthropic request body (sw_anth_request_parse): it parses or is
 *    refused with a 400 naming something; a parsed body's translation is a
 *    valid OpenAI request (sw_request_parse takes its json_dumps text and
 *    reads the same tree and the same fields from it as the parse of the
 *    translation as a tree did), and the translation
 *    back to Anthropic either succeeds or is a 400; its system messages
 *    inside messages, as an Anthropic backend gets them, are where the
 *    mid-conversation-system beta allows them, or gone;
 *  - as a whole Anthropic answer: when it translates to an OpenAI answer,
 *    that one translates back;
 *  - line by line as Anthropic stream events: every chunk they make goes
 *    through the OpenAI -> Anthropic stream translator, whose every output
 *    event is "event: NAME\ndata: <a JSON object>\n\n". */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/err.h"
#include "dialect/anth_native.h"
#include "dialect/anth_req.h"
#include "dialect/anth_resp.h"
#include "request/request.h"

#include "built.h"
#include "check.h"

/* Every event in out[0..len) is well formed. */
static void check_events(const struct sw_buf *out)
{
    const char *p = out->ptr, *end = out->ptr + out->len;
    while (p && p < end) {
        CHECK(!strncmp(p, "event: ", 7));
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        CHECK(nl && nl + 7 <= end && !strncmp(nl + 1, "data: ", 6));
        const char *data = nl + 7;
        const char *stop = memmem(data, (size_t)(end - data), "\n\n", 2);
        CHECK(stop);
        json_error_t je;
        json_t *j = json_loadb(data, (size_t)(stop - data), 0, &je);
        CHECK(json_is_object(j));
        CHECK(json_is_string(json_object_get(j, "type")));
        json_decref(j);
        p = stop + 2;
    }
}

static void requests(const uint8_t *data, size_t size)
{
    struct sw_chat_request req;
    struct sw_request_error err;
    int rc = sw_anth_request_parse((const char *)data, size, (size & 1) != 0, &req, &err);
    if (rc != SW_OK) {
        CHECK(rc == SW_EINVAL || rc == SW_ENOMEM);
        CHECK(err.status == 400 || err.status == 500);
        CHECK(err.message[0]);
        CHECK(!req.body && !req.native);
        return;
    }
    CHECK(req.dialect == 1 && json_is_object(req.native) && json_is_object(req.body));
    check_built(&req);
    json_t *back = NULL;
    rc = sw_anth_req_from_openai(req.body, 100, &back, &err);
    CHECK(rc == SW_OK ? json_is_object(back) : (rc == SW_EINVAL && err.status == 400) || rc == SW_ENOMEM);
    if (back) {
        /* What went back to Anthropic translates forward again. */
        json_t *fwd = NULL;
        rc = sw_anth_req_to_openai(back, 1, &fwd, &err);
        if (rc)
            fprintf(stderr, "round trip refused: %s at %s: %s\n", err.code, err.param, err.message);
        CHECK(rc == SW_OK || rc == SW_ENOMEM);
        json_decref(fwd);
    }
    json_decref(back);
    /* Toward an Anthropic backend: without the beta no system message is
     * left inside messages; with it none before the first other message. */
    for (int beta = 0; beta < 2; beta++) {
        json_t *n = json_deep_copy(req.native);
        if (!n)
            continue;
        rc = sw_anth_native_prepare(n, beta ? "mid-conversation-system-2026-04-07" : NULL,
                                    req.native_system);
        CHECK(rc == SW_OK || rc == SW_ENOMEM);
        size_t i;
        json_t *m;
        bool leading = true;
        json_array_foreach(json_object_get(n, "messages"), i, m) {
            const char *role = json_string_value(json_object_get(m, "role"));
            bool sys = role && !strcmp(role, "system");
            CHECK(rc != SW_OK || !sys || (beta && !leading));
            leading &= sys;
        }
        json_decref(n);
    }
    sw_request_free(&req);
}

static void answers(const uint8_t *data, size_t size)
{
    json_error_t je;
    json_t *in = json_loadb((const char *)data, size, 0, &je);
    if (!in)
        return;
    json_t *o = sw_anth_resp_to_openai(in, "m", 1);
    if (o) {
        json_t *a = sw_anth_resp_from_openai(o, "m");
        CHECK(a);
        CHECK(json_is_array(json_object_get(a, "content")));
        json_decref(a);
    }
    json_decref(o);
    json_t *a = sw_anth_resp_from_openai(in, "m");
    json_decref(a);
    json_decref(in);
}

static void streams(const uint8_t *data, size_t size)
{
    struct sw_anth_to_oai a2o;
    struct sw_oai_to_anth o2a;
    sw_anth_to_oai_init(&a2o, "m", 1);
    a2o.format_tool = size && (data[0] & 1); /* a response_format sent as the format tool */
    sw_oai_to_anth_init(&o2a, "id", "m", 3);
    struct sw_buf out;
    sw_buf_init(&out, 1 << 26);
    const char *p = (const char *)data, *end = p + size;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        json_t *chunks = json_array();
        CHECK(chunks);
        const char *msg = NULL;
        if (sw_anth_to_oai_event(&a2o, p, n, chunks, &msg) != 0)
            CHECK(msg && msg[0]);
        size_t i;
        json_t *c;
        json_array_foreach(chunks, i, c) {
            CHECK(json_is_object(c));
            CHECK(sw_oai_to_anth_chunk(&o2a, c, &out) == SW_OK);
        }
        json_decref(chunks);
        p += n + (nl ? 1 : 0);
    }
    CHECK(sw_oai_to_anth_finish(&o2a, &out) == SW_OK);
    check_events(&out);
    sw_buf_free(&out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    requests(data, size);
    answers(data, size);
    streams(data, size);
    return 0;
}
