/* libFuzzer driver for the SSE parser: the events, the result and the
 * pending state must not depend on how the stream is split, and they are
 * the ones a plain reference reading of the rules in sse.h gives (whole
 * stream, line by line): all of them when the feed succeeds, the first N
 * when the callback stops after N, a prefix when the size bound is hit. The
 * first bytes of the input choose the split point, the size bound and when
 * the callback stops; the rest is the stream, fed in one call, in two at the
 * split point, and (when short) a byte at a time. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/err.h"
#include "relay/sse.h"

#include "check.h"

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

/* The reference: lines end at "\r\n", "\n" or "\r"; a leading BOM on the
 * first line is dropped; a blank line dispatches (when a data field was
 * seen: an event of the name, up to 63 bytes, and the data values joined by
 * '\n') and clears the event; ':' starts a comment; a field is the line up to
 * its first ':' and its value the rest, less one leading space; "data" adds
 * a line, "event" sets the name, other fields are ignored. An unterminated
 * last line is pending, as are data lines or a name not yet dispatched.
 * ends[i] is the log length after event i. */
struct ref {
    struct sw_buf log;
    size_t *ends;
    unsigned count;
    int pending;
};

static void reference(const char *s, size_t len, struct ref *r)
{
    struct sw_buf data;
    char event[64] = "";
    int has_data = 0, first = 1;
    size_t i = 0;

    sw_buf_init(&r->log, 1 << 24);
    sw_buf_init(&data, 1 << 24);
    r->ends = malloc((len + 1) * sizeof *r->ends);
    CHECK(r->ends);
    r->count = 0;
    while (i < len) {
        size_t e = i;
        while (e < len && s[e] != '\n' && s[e] != '\r')
            e++;
        if (e == len)
            break;              /* unterminated: pending */
        const char *l = s + i;
        size_t n = e - i;
        i = e + 1 + (s[e] == '\r' && e + 1 < len && s[e + 1] == '\n');
        if (first && n >= 3 && !memcmp(l, "\xEF\xBB\xBF", 3)) {
            l += 3;
            n -= 3;
        }
        first = 0;
        if (n == 0) {
            if (has_data) {
                size_t dl = data.len;
                CHECK(sw_buf_appendf(&r->log, "%s\x1f%zu\x1f", event, dl) == SW_OK);
                CHECK(sw_buf_append(&r->log, data.ptr ? data.ptr : "", dl) == SW_OK);
                CHECK(sw_buf_append(&r->log, "\x1e", 1) == SW_OK);
                r->ends[r->count++] = r->log.len;
            }
            sw_buf_reset(&data);
            has_data = 0;
            event[0] = '\0';
            continue;
        }
        if (l[0] == ':')
            continue;
        const char *colon = memchr(l, ':', n);
        size_t fl = colon ? (size_t)(colon - l) : n;
        const char *v = colon ? colon + 1 : l + n;
        size_t vl = (size_t)(l + n - v);
        if (vl && v[0] == ' ') {
            v++;
            vl--;
        }
        if (fl == 4 && !memcmp(l, "data", 4)) {
            if (has_data)
                CHECK(sw_buf_append(&data, "\n", 1) == SW_OK);
            CHECK(sw_buf_append(&data, v, vl) == SW_OK);
            has_data = 1;
        } else if (fl == 5 && !memcmp(l, "event", 5)) {
            size_t k = vl < 63 ? vl : 63;
            memcpy(event, v, k);
            event[k] = '\0';
        }
    }
    r->pending = i < len || has_data || event[0] != '\0';
    sw_buf_free(&data);
}

/* The parser fed in one call against the reference. */
static void check_reference(const struct outcome *o, const char *s, size_t len, unsigned stop_after)
{
    struct ref r;
    size_t upto;

    reference(s, len, &r);
    if (o->rc == SW_OK) {
        CHECK(o->rec.count == r.count && o->pending == r.pending);
        CHECK(!stop_after || r.count < stop_after);
        upto = r.log.len;
    } else if (o->rc == STOP) {
        CHECK(stop_after && o->rec.count == stop_after && r.count >= stop_after);
        upto = r.ends[stop_after - 1];
    } else {
        CHECK(o->rc == SW_ETOOBIG && o->rec.count <= r.count);
        upto = o->rec.count ? r.ends[o->rec.count - 1] : 0;
    }
    CHECK(o->rec.log.len == upto && (upto == 0 || !memcmp(o->rec.log.ptr, r.log.ptr, upto)));
    sw_buf_free(&r.log);
    free(r.ends);
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
    check_reference(&one, s, len, stop_after);
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
