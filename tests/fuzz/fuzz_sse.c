/* libFuzzer driver for the SSE parser: the events, the result and the
 * pending state must not depend on how the stream is split. The first bytes
 * of the input choose the split point, the size bound and when the callback
 * stops; the rest is the stream, fed in one call, in two at the split point,
 * and (when short) a byte at a time. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "common/buf.h"
#include "common/err.h"
#include "relay/sse.h"

#define CHECK(cond) do { if (!(cond)) __builtin_trap(); } while (0)
#define STOP 1000

struct rec {
    struct sw_buf log;
    unsigned count;
    unsigned stop_after;        /* 0: never */
};

static int on_event(void *ud, const char *event, const char *data, size_t len)
{
    struct rec *r = ud;
    CHECK(data[len] == '\0');
    CHECK(strlen(event) < 64);
    /* Recorded as "event\x1f<len>\x1fdata\x1e"; the log is large enough. */
    CHECK(sw_buf_appendf(&r->log, "%s\x1f%zu\x1f", event, len) == SW_OK);
    CHECK(sw_buf_append(&r->log, data, len) == SW_OK);
    CHECK(sw_buf_append(&r->log, "\x1e", 1) == SW_OK);
    r->count++;
    return r->stop_after && r->count >= r->stop_after ? STOP : SW_OK;
}

struct outcome {
    struct rec rec;
    int rc;
    int pending;
};

/* Feeds s[0..len) cut before each offset in cuts[0..ncuts). */
static void run(const char *s, size_t len, const size_t *cuts, size_t ncuts, size_t max,
                unsigned stop_after, struct outcome *o)
{
    struct sw_sse p;
    size_t from = 0;

    sw_buf_init(&o->rec.log, 1 << 24);
    o->rec.count = 0;
    o->rec.stop_after = stop_after;
    o->rc = SW_OK;
    sw_sse_init(&p, max, on_event, &o->rec);
    for (size_t i = 0; i <= ncuts && o->rc == SW_OK; i++) {
        size_t to = i < ncuts ? cuts[i] : len;
        o->rc = sw_sse_feed(&p, s + from, to - from);
        from = to;
    }
    o->pending = o->rc == SW_OK ? !!sw_sse_pending(&p) : -1;
    if (o->rc != SW_OK)
        CHECK(sw_sse_feed(&p, "data: x\n\n", 9) == o->rc);     /* sticky */
    sw_sse_free(&p);
}

static void same(const struct outcome *a, const struct outcome *b)
{
    CHECK(a->rc == b->rc);
    CHECK(a->pending == b->pending);
    CHECK(a->rec.count == b->rec.count);
    CHECK(a->rec.log.len == b->rec.log.len);
    CHECK(a->rec.log.len == 0 || memcmp(a->rec.log.ptr, b->rec.log.ptr, a->rec.log.len) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static size_t cuts[4096];
    struct outcome one, two, bytes;
    const char *s;
    size_t len, split, max;
    unsigned stop_after;

    if (size < 4)
        return 0;
    split = ((size_t)data[0] << 8 | data[1]);
    max = 8 + (size_t)data[2] * 8;              /* 8 .. 2048 */
    stop_after = data[3] % 8;
    s = (const char *)data + 4;
    len = size - 4;
    split %= len + 1;

    run(s, len, NULL, 0, max, stop_after, &one);
    run(s, len, &split, 1, max, stop_after, &two);
    same(&one, &two);
    if (len <= sizeof(cuts) / sizeof(cuts[0])) {
        for (size_t i = 1; i < len; i++)
            cuts[i - 1] = i;
        run(s, len, cuts, len ? len - 1 : 0, max, stop_after, &bytes);
        same(&one, &bytes);
        sw_buf_free(&bytes.rec.log);
    }
    sw_buf_free(&one.rec.log);
    sw_buf_free(&two.rec.log);
    return 0;
}
