/* Unit tests of the SSE parser (src/relay/sse.c). Every case of the table is
 * run fed in one call, a byte at a time, and split in two at every offset;
 * all must give the same events, result and pending state. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "common/buf.h"
#include "common/err.h"
#include "relay/sse.h"

#define STOP 42

struct ev {
    const char *event;
    const char *data;
};

struct sse_case {
    const char *name;
    const char *input;
    size_t max;                 /* max_event_bytes; 0: 4096 */
    int stop_after;             /* the callback returns STOP after this many events; 0: never */
    int rc;
    int pending;
    struct ev events[8];        /* ends at the first {NULL, NULL} */
};

/* Events are recorded as "event\x1f<len>\x1fdata\x1e" so data with '\n' or
 * NUL compares exactly. */
struct rec {
    struct sw_buf log;
    int count;
    int stop_after;
};

static int on_event(void *ud, const char *event, const char *data, size_t len)
{
    struct rec *r = ud;
    assert_non_null(event);
    assert_non_null(data);
    assert_int_equal(data[len], '\0');
    assert_int_equal(sw_buf_appendf(&r->log, "%s\x1f%zu\x1f", event, len), SW_OK);
    assert_int_equal(sw_buf_append(&r->log, data, len), SW_OK);
    assert_int_equal(sw_buf_append(&r->log, "\x1e", 1), SW_OK);
    r->count++;
    if (r->stop_after && r->count >= r->stop_after)
        return STOP;
    return SW_OK;
}

static void expected_log(const struct sse_case *tc, struct sw_buf *out)
{
    for (const struct ev *e = tc->events; e->event || e->data; e++) {
        assert_int_equal(sw_buf_appendf(out, "%s\x1f%zu\x1f%s\x1e", e->event ? e->event : "",
                                        strlen(e->data), e->data), SW_OK);
    }
}

/* Feeds tc->input cut at the offsets in cuts[0..ncuts) (sorted). */
static void run_split(const struct sse_case *tc, const size_t *cuts, size_t ncuts,
                      const char *how)
{
    size_t len = strlen(tc->input);
    struct rec r = { .stop_after = tc->stop_after };
    struct sw_buf want;
    struct sw_sse p;
    size_t from = 0;
    int rc = SW_OK;

    sw_buf_init(&r.log, 1 << 20);
    sw_buf_init(&want, 1 << 20);
    expected_log(tc, &want);
    sw_sse_init(&p, tc->max ? tc->max : 4096, on_event, &r);
    for (size_t i = 0; i <= ncuts && rc == SW_OK; i++) {
        size_t to = i < ncuts ? cuts[i] : len;
        rc = sw_sse_feed(&p, tc->input + from, to - from);
        from = to;
    }
    if (rc != tc->rc || r.log.len != want.len
        || (want.len && memcmp(r.log.ptr, want.ptr, want.len) != 0))
        print_error("case '%s' fed %s: rc %d (want %d), events '%s' (want '%s')\n", tc->name,
                    how, rc, tc->rc, r.log.ptr ? r.log.ptr : "", want.ptr ? want.ptr : "");
    assert_int_equal(rc, tc->rc);
    assert_int_equal(r.log.len, want.len);
    if (want.len)
        assert_memory_equal(r.log.ptr, want.ptr, want.len);
    if (rc == SW_OK)
        assert_int_equal(!!sw_sse_pending(&p), tc->pending);
    else
        assert_int_equal(sw_sse_feed(&p, "data: x\n\n", 9), rc);     /* sticky */
    sw_sse_free(&p);
    sw_buf_free(&r.log);
    sw_buf_free(&want);
}

static const struct sse_case cases[] = {
    { "openai chunks",
      "data: {\"choices\":[{\"delta\":{\"content\":\"Hel\"}}]}\n\n"
      "data: {\"choices\":[{\"delta\":{\"content\":\"lo\"}}]}\n\n"
      "data: [DONE]\n\n",
      .events = { { "", "{\"choices\":[{\"delta\":{\"content\":\"Hel\"}}]}" },
                  { "", "{\"choices\":[{\"delta\":{\"content\":\"lo\"}}]}" },
                  { "", "[DONE]" } } },
    { "anthropic events",
      "event: message_start\ndata: {\"type\":\"message_start\"}\n\n"
      "event: ping\ndata: {\"type\": \"ping\"}\n\n"
      "event: content_block_delta\n"
      "data: {\"type\":\"content_block_delta\",\"delta\":{\"text\":\"Hi\"}}\n\n"
      "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
      .events = { { "message_start", "{\"type\":\"message_start\"}" },
                  { "ping", "{\"type\": \"ping\"}" },
                  { "content_block_delta",
                    "{\"type\":\"content_block_delta\",\"delta\":{\"text\":\"Hi\"}}" },
                  { "message_stop", "{\"type\":\"message_stop\"}" } } },
    { "event name resets after dispatch",
      "event: a\ndata: 1\n\ndata: 2\n\n",
      .events = { { "a", "1" }, { "", "2" } } },
    { "comments are ignored",
      ": keep-alive\n\n:\ndata: x\n: inside an event\n\n: OPENROUTER PROCESSING\n\n",
      .events = { { "", "x" } } },
    { "crlf",
      "event: e\r\ndata: a\r\ndata: b\r\n\r\n",
      .events = { { "e", "a\nb" } } },
    { "cr only",
      "data: a\rdata: b\r\rdata: c\r\r",
      .events = { { "", "a\nb" }, { "", "c" } } },
    { "mixed terminators",
      "data: 1\r\n\ndata: 2\n\r\ndata: 3\r\r\n",
      .events = { { "", "1" }, { "", "2" }, { "", "3" } } },
    { "cr then lf is one terminator, lf then cr two",
      "data: a\n\rdata: b\r\n\r\n",
      .events = { { "", "a" }, { "", "b" } } },
    { "multi-line data",
      "data: line one\ndata: line two\ndata:\ndata: four\n\n",
      .events = { { "", "line one\nline two\n\nfour" } } },
    { "only one space stripped",
      "data:  two spaces\ndata:none\n\n",
      .events = { { "", " two spaces\nnone" } } },
    { "no colon: field with empty value",
      "data\n\ndata\ndata\n\n",
      .events = { { "", "" }, { "", "\n" } } },
    { "empty data dispatches, no data does not",
      "event: x\n\ndata:\n\nevent: y\nid: 7\nretry: 100\n\n",
      .events = { { "", "" } } },
    { "id, retry and unknown fields ignored",
      "id: 1\nretry: 10\nfoo: bar\ndata: d\nDATA: no\n\n",
      .events = { { "", "d" } } },
    { "colon in value kept",
      "data: {\"a\": \"b:c\"}\n\n",
      .events = { { "", "{\"a\": \"b:c\"}" } } },
    { "leading bom stripped",
      "\xEF\xBB\xBF" "data: x\n\n\xEF\xBB\xBF" "data: y\n\n",
      .events = { { "", "x" } } },
    { "event name truncated to 63 bytes",
      "event: 0123456789012345678901234567890123456789012345678901234567890123456789\n"
      "data: x\n\n",
      .events = { { "012345678901234567890123456789012345678901234567890123456789012", "x" } } },
    { "no trailing blank line: pending",
      "data: {\"partial\":true}\n", .pending = 1 },
    { "partial line: pending",
      "data: {\"choi", .pending = 1 },
    { "event name only: pending",
      "event: message_stop\n", .pending = 1 },
    { "complete stream: nothing pending",
      "data: x\n\n: bye\n\n\n",
      .events = { { "", "x" } } },
    { "trailing cr: nothing pending",
      "data: x\r\r" ,
      .events = { { "", "x" } } },
    { "oversize line",
      "data: 0123456789012345678901234567890123456789\n\n", .max = 32, .rc = SW_ETOOBIG },
    { "oversize accumulated data",
      "data: x\n\ndata: 0123456789\ndata: 0123456789\ndata: 0123456789\n\n", .max = 32,
      .rc = SW_ETOOBIG, .events = { { "", "x" } } },
    { "oversize comment",
      ": 0123456789012345678901234567890123456789\n", .max = 32, .rc = SW_ETOOBIG },
    { "exactly at the limit",
      "data: 01234567890123456789012345\n\n", .max = 32,
      .events = { { "", "01234567890123456789012345" } } },
    { "callback stop",
      "data: 1\n\ndata: 2\n\ndata: 3\n\n", .stop_after = 2, .rc = STOP,
      .events = { { "", "1" }, { "", "2" } } },
};

static void test_sse_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const struct sse_case *tc = &cases[i];
        size_t len = strlen(tc->input);
        size_t cuts[2];

        run_split(tc, NULL, 0, "in one call");
        for (size_t at = 0; at <= len; at++) {
            cuts[0] = at;
            run_split(tc, cuts, 1, "in two");
        }
        for (size_t at = 1; at + 1 < len; at++) {
            cuts[0] = at;
            cuts[1] = at + 1;
            run_split(tc, cuts, 2, "in three");
        }
        size_t bytes[512];
        assert_true(len <= sizeof(bytes) / sizeof(bytes[0]) + 1);
        for (size_t k = 1; k < len; k++)
            bytes[k - 1] = k;
        run_split(tc, bytes, len ? len - 1 : 0, "a byte at a time");
    }
}

static void test_sse_nul(void **state)
{
    struct rec r = { 0 };
    struct sw_sse p;
    (void)state;

    sw_buf_init(&r.log, 1024);
    sw_sse_init(&p, 64, on_event, &r);
    assert_int_equal(sw_sse_feed(&p, "data: a\0b\n\n", 11), SW_OK);
    assert_int_equal(r.count, 1);
    assert_int_equal(r.log.len, 7);
    assert_memory_equal(r.log.ptr, "\x1f" "3\x1f" "a\0b\x1e", 7);
    sw_sse_free(&p);
    sw_buf_free(&r.log);
}

static void test_sse_pending_then_complete(void **state)
{
    struct rec r = { 0 };
    struct sw_sse p;
    (void)state;

    sw_buf_init(&r.log, 1024);
    sw_sse_init(&p, 1024, on_event, &r);
    assert_false(sw_sse_pending(&p));
    assert_int_equal(sw_sse_feed(&p, "data: x", 7), SW_OK);
    assert_true(sw_sse_pending(&p));
    assert_int_equal(sw_sse_feed(&p, "\r", 1), SW_OK);
    assert_true(sw_sse_pending(&p));
    assert_int_equal(sw_sse_feed(&p, "\n", 1), SW_OK);      /* the CRLF's LF: no blank line */
    assert_true(sw_sse_pending(&p));
    assert_int_equal(r.count, 0);
    assert_int_equal(sw_sse_feed(&p, "\n", 1), SW_OK);
    assert_false(sw_sse_pending(&p));
    assert_int_equal(r.count, 1);
    assert_int_equal(sw_sse_feed(&p, NULL, 0), SW_OK);
    sw_sse_free(&p);
    sw_buf_free(&r.log);
}

/* After sw_sse_free the parser can be initialized and used again. */
static void test_sse_reuse(void **state)
{
    struct rec r = { 0 };
    struct sw_sse p;
    (void)state;

    sw_buf_init(&r.log, 1024);
    sw_sse_init(&p, 8, on_event, &r);
    assert_int_equal(sw_sse_feed(&p, "data: too long\n\n", 16), SW_ETOOBIG);
    sw_sse_free(&p);
    sw_sse_init(&p, 64, on_event, &r);
    assert_int_equal(sw_sse_feed(&p, "data: ok\n\n", 10), SW_OK);
    assert_int_equal(r.count, 1);
    sw_sse_free(&p);
    sw_buf_free(&r.log);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sse_table),
        cmocka_unit_test(test_sse_nul),
        cmocka_unit_test(test_sse_pending_then_complete),
        cmocka_unit_test(test_sse_reuse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
