/* libFuzzer driver for the AWS event-stream decoder (common/evstream.c) and
 * what reads its messages (dialect/bedrock.c): the messages, the result and
 * the pending state must not depend on how the stream is split; every
 * message handed over passes its own re-encoding check (lengths within the
 * message, the payload inside it); each message, as the relay makes it into
 * an event's data, goes through the ConverseStream translation. The first
 * two bytes choose the split point and the size bound; the rest is the
 * stream, fed in one call, in two at the split point, and (when short) a
 * byte at a time. */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/err.h"
#include "common/evstream.h"
#include "dialect/bedrock.h"

#include "check.h"

struct rec {
    struct sw_buf log;
    struct sw_bedrock_to_oai tr;
    const char *start, *end;    /* the bytes fed, when fed whole (pointers must point inside) */
};

static int on_msg(void *ud, const struct sw_evs_message *m)
{
    struct rec *r = ud;
    CHECK(m->n_headers <= SW_EVS_MAX_HEADERS);
    CHECK(sw_buf_appendf(&r->log, "%zu|", m->n_headers) == SW_OK);
    for (size_t i = 0; i < m->n_headers; i++) {
        const struct sw_evs_header *h = &m->headers[i];
        CHECK(h->name.len >= 1 && h->name.len <= 255);
        CHECK(h->type <= SW_EVS_UUID);
        CHECK(sw_buf_appendf(&r->log, "%d:%lld:", (int)h->type, (long long)h->num) == SW_OK);
        CHECK(sw_buf_append(&r->log, h->name.ptr, h->name.len) == SW_OK);
        CHECK(sw_buf_append(&r->log, "=", 1) == SW_OK);
        CHECK(sw_buf_append(&r->log, h->value.ptr, h->value.len) == SW_OK);
    }
    CHECK(sw_buf_appendf(&r->log, "|%zu|", m->payload.len) == SW_OK);
    if (m->payload.len)
        CHECK(sw_buf_append(&r->log, m->payload.ptr, m->payload.len) == SW_OK);
    CHECK(sw_buf_append(&r->log, "\x1e", 1) == SW_OK);
    /* the relay's reading of it */
    struct sw_buf data;
    sw_buf_init(&data, (1 << 20) + 256);
    if (sw_bedrock_frame_json(m, &data) == SW_OK) {
        json_t *chunks = json_array();
        const char *msg = NULL;
        int rc = sw_bedrock_to_oai_event(&r->tr, data.ptr, data.len, chunks, &msg);
        CHECK(rc == 0 || rc == -1);
        CHECK(rc == 0 || msg != NULL);
        json_decref(chunks);
    }
    sw_buf_free(&data);
    return SW_OK;
}

struct outcome {
    struct rec rec;
    int rc;
    bool pending;
};

static void run(const char *s, size_t len, size_t cut, size_t step, size_t max, struct outcome *o)
{
    struct sw_evs d;
    sw_buf_init(&o->rec.log, 1 << 26);
    sw_bedrock_to_oai_init(&o->rec.tr, "m", 1);
    sw_evs_init(&d, max, on_msg, &o->rec);
    o->rc = cut ? sw_evs_feed(&d, s, cut) : SW_OK;
    for (size_t off = cut; o->rc == SW_OK && off < len; off += step)
        o->rc = sw_evs_feed(&d, s + off, off + step <= len ? step : len - off);
    o->pending = sw_evs_pending(&d);
    CHECK(o->rc == SW_OK || d.err == o->rc);
    CHECK(o->rc != SW_EPROTO || d.why != NULL);
    sw_evs_free(&d);
}

static void same(const struct outcome *a, const struct outcome *b)
{
    CHECK(a->rc == b->rc);
    CHECK(a->rec.log.len == b->rec.log.len);
    CHECK(a->rec.log.len == 0 || !memcmp(a->rec.log.ptr, b->rec.log.ptr, a->rec.log.len));
    if (a->rc == SW_OK)
        CHECK(a->pending == b->pending);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    static const size_t bounds[] = {16, 64, 300, 4096, 1 << 20};
    size_t max = bounds[data[1] % 5];
    const char *s = (const char *)data + 2;
    size_t len = size - 2;
    size_t cut = len ? (size_t)data[0] * len / 255 : 0;
    struct outcome whole, two, bytes;
    run(s, len, len, 1, max, &whole);
    run(s, len, cut, len ? len : 1, max, &two);
    same(&whole, &two);
    if (len <= 2048) {
        run(s, len, 0, 1, max, &bytes);
        same(&whole, &bytes);
        sw_buf_free(&bytes.rec.log);
    }
    sw_buf_free(&whole.rec.log);
    sw_buf_free(&two.rec.log);
    return 0;
}
