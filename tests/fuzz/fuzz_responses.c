/* libFuzzer driver for the Responses <-> chat-completions translation
 * (src/dialect/responses_*.c). The input is read three ways:
 *  - as a Responses request body (sw_responses_request_parse): it parses or
 *    is refused with a 400 naming something (500 out of memory); a parsed
 *    body's translation is a valid chat request (sw_request_parse takes its
 *    json_dumps text and reads the same tree and fields from it as the
 *    validation of the translation as a tree did; the text kept is that text);
 *  - as a whole chat answer: when it translates, the Responses object has
 *    an output array and a usage object;
 *  - line by line as chat chunks through the stream translator, then
 *    finished: every event it sends is "event: T\ndata: <JSON object of
 *    type T>\n\n", their sequence numbers count from 0 without a gap, and
 *    the last is a terminal event (completed, incomplete, failed);
 *  - as a Responses backend's answer (src/dialect/responses_up.c): when it
 *    reads as a chat completion, that has one choice with a message; and
 *    line by line as its stream's events, passed through (a tree and a
 *    type, or nothing) and read as chat chunks, which the stream
 *    translator above turns into well-formed, numbered events again. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/err.h"
#include "dialect/responses_req.h"
#include "dialect/responses_resp.h"
#include "dialect/responses_up.h"
#include "request/request.h"

#include "built.h"
#include "check.h"

/* Every event in out is well formed and numbered; returns the last type. */
static void check_events(const struct sw_buf *out, char *last, size_t lastlen)
{
    const char *p = out->ptr, *end = out->ptr + out->len;
    long seq = 0;
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
        const char *type = json_string_value(json_object_get(j, "type"));
        CHECK(type && (size_t)(nl - p - 7) == strlen(type) && !strncmp(p + 7, type, strlen(type)));
        CHECK(json_integer_value(json_object_get(j, "sequence_number")) == seq);
        seq++;
        snprintf(last, lastlen, "%s", type);
        json_decref(j);
        p = stop + 2;
    }
}

static void requests(const uint8_t *data, size_t size)
{
    struct sw_chat_request req;
    struct sw_request_error err;
    int rc = sw_responses_request_parse((const char *)data, size, NULL, &req, &err);
    if (rc != SW_OK) {
        CHECK(rc == SW_EINVAL || rc == SW_ENOMEM);
        CHECK(err.status == 400 || err.status == 500);
        CHECK(err.message[0]);
        CHECK(!req.body && !req.native);
        return;
    }
    CHECK(json_is_object(req.native) && json_is_object(req.body));
    CHECK(!req.untranslatable || !strcmp(req.untranslatable->code, "untranslatable"));
    check_built(&req);
    sw_request_free(&req);
}

static const struct sw_resp_meta META = {"resp_f", "m", 1, 2};

static void answers(const uint8_t *data, size_t size)
{
    json_error_t je;
    json_t *in = json_loadb((const char *)data, size, 0, &je);
    if (!in)
        return;
    json_t *r = sw_responses_from_chat(in, in, &META);
    if (r) {
        CHECK(json_is_array(json_object_get(r, "output")));
        CHECK(json_array_size(json_object_get(r, "output")) >= 1);
        CHECK(json_is_object(json_object_get(r, "usage")));
    }
    json_decref(r);
    json_decref(in);
}

static void streams(const uint8_t *data, size_t size)
{
    struct sw_resp_stream s;
    struct sw_buf out;
    sw_buf_init(&out, 1 << 26);
    CHECK(sw_resp_stream_init(&s, NULL, &META) == SW_OK);
    const char *p = (const char *)data, *end = p + size;
    int rc = SW_OK;
    while (p < end && !rc) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        json_error_t je;
        json_t *c = json_loadb(p, n, 0, &je);
        if (c)
            rc = sw_resp_stream_chunk(&s, c, &out);
        CHECK(rc == SW_OK || rc == SW_ETOOBIG || rc == SW_ENOMEM);
        json_decref(c);
        p += n + (nl != NULL);
    }
    if (rc)
        rc = sw_resp_stream_fail(&s, NULL, "failed", &out);
    else
        rc = sw_resp_stream_finish(&s, 3, &out);
    CHECK(rc == SW_OK || rc == SW_ENOMEM);
    char last[64] = "";
    check_events(&out, last, sizeof last);
    if (rc == SW_OK)
        CHECK(!strcmp(last, "response.completed") || !strcmp(last, "response.incomplete") ||
              !strcmp(last, "response.failed"));
    sw_resp_stream_free(&s);
    sw_buf_free(&out);
}

static void backend_answers(const uint8_t *data, size_t size)
{
    json_error_t je;
    json_t *in = json_loadb((const char *)data, size, 0, &je);
    if (!in)
        return;
    long i = 0, o = 0;
    if (sw_resp_native_answer(in, &i, &o) == 0)
        CHECK(i >= -1 && o >= -1);
    json_t *c = sw_responses_to_chat(in, "m", 1);
    if (c) {
        json_t *ch = json_object_get(c, "choices");
        CHECK(json_array_size(ch) == 1);
        CHECK(json_is_object(json_object_get(json_array_get(ch, 0), "message")));
        json_t *r = sw_responses_from_chat(c, NULL, &META);
        CHECK(r);
        json_decref(r);
    }
    json_decref(c);
    json_decref(in);
}

static void backend_streams(const uint8_t *data, size_t size)
{
    struct sw_resp_to_oai up;
    struct sw_resp_stream s;
    struct sw_buf out;
    sw_resp_to_oai_init(&up, "m", 1);
    sw_buf_init(&out, 1 << 26);
    CHECK(sw_resp_stream_init(&s, NULL, &META) == SW_OK);
    json_t *chunks = json_array();
    CHECK(chunks);
    const char *p = (const char *)data, *end = p + size;
    int rc = SW_OK;
    while (p < end && !rc && !up.done) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        struct sw_native_event ev;
        if (sw_resp_native_event(p, n, "pub", &ev) == 0) {
            CHECK(ev.type && (!ev.tree || json_is_object(ev.tree)));
            CHECK(!(ev.error && ev.stop));
            json_decref(ev.tree);
        }
        const char *msg = NULL;
        if (sw_resp_to_oai_event(&up, p, n, chunks, &msg) != 0) {
            CHECK(msg && msg[0]);
            rc = SW_EPROTO;
        }
        size_t k;
        json_t *c;
        json_array_foreach(chunks, k, c) {
            int e = sw_resp_stream_chunk(&s, c, &out);
            CHECK(e == SW_OK || e == SW_ETOOBIG || e == SW_ENOMEM);
            if (e && !rc)
                rc = e;
        }
        json_array_clear(chunks);
        p += n + (nl != NULL);
    }
    rc = rc ? sw_resp_stream_fail(&s, NULL, "failed", &out) : sw_resp_stream_finish(&s, 3, &out);
    CHECK(rc == SW_OK || rc == SW_ENOMEM);
    char last[64] = "";
    check_events(&out, last, sizeof last);
    json_decref(chunks);
    sw_resp_stream_free(&s);
    sw_buf_free(&out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    requests(data, size);
    answers(data, size);
    streams(data, size);
    backend_answers(data, size);
    backend_streams(data, size);
    return 0;
}
