/* The AWS event-stream framing (common/evstream.c): what the encoder makes
 * the decoder reads back in any split; every corruption, length out of
 * bounds and over-long message is an error at the same byte whatever the
 * split. The official codec's frames are checked in it/aws_refs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "common/err.h"
#include "common/evstream.h"

struct seen {
    int n;
    char types[8][32];
    char payloads[8][64];
    int stop_at;                /* the callback's result is SW_EINVAL on this message (1-based) */
};

static int on_msg(void *ud, const struct sw_evs_message *m)
{
    struct seen *s = ud;
    if (s->n < 8) {
        snprintf(s->types[s->n], sizeof s->types[0], "%.*s", (int)m->event_type.len,
                 m->event_type.ptr ? m->event_type.ptr : "");
        snprintf(s->payloads[s->n], sizeof s->payloads[0], "%.*s", (int)m->payload.len,
                 m->payload.ptr);
    }
    s->n++;
    return s->n == s->stop_at ? SW_EINVAL : SW_OK;
}

static void three(struct sw_buf *b)
{
    const char *n[] = {":message-type", ":event-type", ":content-type"};
    const char *v1[] = {"event", "messageStart", "application/json"};
    const char *v2[] = {"event", "contentBlockDelta", "application/json"};
    const char *v3[] = {"event", "metadata", "application/json"};
    assert_int_equal(sw_evs_encode(b, n, v1, 3, "{\"role\":\"assistant\"}", 20), SW_OK);
    assert_int_equal(sw_evs_encode(b, n, v2, 3, "{\"delta\":{\"text\":\"hi\"}}", 23), SW_OK);
    assert_int_equal(sw_evs_encode(b, n, v3, 3, "", 0), SW_OK);
}

/* Feeds b in pieces: first `cut` bytes, then the rest `step` at a time. */
static int feed(const struct sw_buf *b, size_t cut, size_t step, struct seen *s, size_t max)
{
    struct sw_evs d;
    sw_evs_init(&d, max, on_msg, s);
    int err = sw_evs_feed(&d, b->ptr, cut);
    for (size_t off = cut; !err && off < b->len; off += step)
        err = sw_evs_feed(&d, b->ptr + off, off + step <= b->len ? step : b->len - off);
    if (!err && sw_evs_pending(&d))
        err = -1;
    sw_evs_free(&d);
    return err;
}

static void test_crc32(void **state)
{
    (void)state;
    /* the standard check value of CRC-32/ISO-HDLC */
    assert_int_equal(sw_evs_crc32(0, "123456789", 9), 0xCBF43926u);
    assert_int_equal(sw_evs_crc32(sw_evs_crc32(0, "1234", 4), "56789", 5), 0xCBF43926u);
    assert_int_equal(sw_evs_crc32(0, "", 0), 0);
}

static void test_round_trip_every_split(void **state)
{
    (void)state;
    struct sw_buf b;
    sw_buf_init(&b, 1 << 20);
    three(&b);
    for (size_t cut = 0; cut <= b.len; cut++) {
        for (size_t step = 1; step <= 7; step += 6) {
            struct seen s = {0};
            assert_int_equal(feed(&b, cut, step, &s, 4096), SW_OK);
            assert_int_equal(s.n, 3);
            assert_string_equal(s.types[0], "messageStart");
            assert_string_equal(s.types[1], "contentBlockDelta");
            assert_string_equal(s.payloads[1], "{\"delta\":{\"text\":\"hi\"}}");
            assert_string_equal(s.payloads[2], "");
        }
    }
    sw_buf_free(&b);
}

static void test_corruption_at_every_byte(void **state)
{
    (void)state;
    struct sw_buf b;
    sw_buf_init(&b, 1 << 20);
    three(&b);
    for (size_t i = 0; i < b.len; i++) {
        b.ptr[i] ^= 0x01;
        struct seen whole = {0}, bytes = {0};
        int e1 = feed(&b, b.len, 1, &whole, 4096);
        int e2 = feed(&b, 0, 1, &bytes, 4096);
        assert_int_not_equal(e1, SW_OK);
        assert_int_equal(e1, e2);
        assert_int_equal(whole.n, bytes.n); /* the messages before the broken one, no more */
        b.ptr[i] ^= 0x01;
    }
    sw_buf_free(&b);
}

static void test_bounds(void **state)
{
    (void)state;
    struct sw_buf b;
    sw_buf_init(&b, 1 << 20);
    three(&b);
    struct seen s = {0};
    /* a message over the bound: refused at its prelude, in any split */
    assert_int_equal(feed(&b, 0, 1, &s, 40), SW_ETOOBIG);
    s = (struct seen){0};
    assert_int_equal(feed(&b, b.len, 1, &s, 40), SW_ETOOBIG);
    /* a stream cut inside a message is pending */
    struct sw_evs d;
    s = (struct seen){0};
    sw_evs_init(&d, 4096, on_msg, &s);
    assert_int_equal(sw_evs_feed(&d, b.ptr, b.len - 1), SW_OK);
    assert_true(sw_evs_pending(&d));
    assert_int_equal(s.n, 2);
    sw_evs_free(&d);
    /* the callback's result stops the feed and sticks */
    s = (struct seen){.stop_at = 2};
    sw_evs_init(&d, 4096, on_msg, &s);
    assert_int_equal(sw_evs_feed(&d, b.ptr, b.len), SW_EINVAL);
    assert_int_equal(sw_evs_feed(&d, b.ptr, b.len), SW_EINVAL);
    assert_int_equal(s.n, 2);
    sw_evs_free(&d);
    /* lengths that cannot be: total under 16, headers past the payload */
    unsigned char bad[16] = {0, 0, 0, 15, 0, 0, 0, 0};
    uint32_t c = sw_evs_crc32(0, bad, 8);
    bad[8] = (unsigned char)(c >> 24), bad[9] = (unsigned char)(c >> 16);
    bad[10] = (unsigned char)(c >> 8), bad[11] = (unsigned char)c;
    sw_evs_init(&d, 4096, on_msg, &s);
    assert_int_equal(sw_evs_feed(&d, (char *)bad, 16), SW_EPROTO);
    assert_non_null(d.why);
    sw_evs_free(&d);
    sw_buf_free(&b);
}

static void test_header_types(void **state)
{
    (void)state;
    /* one header of each fixed type, built by hand, in one message */
    unsigned char h[] = {
        1, 'a', 0,                              /* true */
        1, 'b', 1,                              /* false */
        1, 'c', 2, 0xff,                        /* byte -1 */
        1, 'd', 3, 0x80, 0x00,                  /* short -32768 */
        1, 'e', 4, 0x7f, 0xff, 0xff, 0xff,      /* int */
        1, 'f', 5, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe, /* long -2 */
        1, 'g', 6, 0, 2, 0xde, 0xad,            /* bytes */
        1, 'h', 8, 0, 0, 0, 0, 0, 0, 0x03, 0xe8, /* timestamp 1000 */
        1, 'i', 9, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16,
    };
    size_t total = 16 + sizeof h;
    unsigned char m[256];
    m[0] = 0, m[1] = 0, m[2] = 0, m[3] = (unsigned char)total;
    m[4] = 0, m[5] = 0, m[6] = 0, m[7] = (unsigned char)sizeof h;
    uint32_t c = sw_evs_crc32(0, m, 8);
    for (int k = 0; k < 4; k++)
        m[8 + k] = (unsigned char)(c >> (24 - 8 * k));
    memcpy(m + 12, h, sizeof h);
    c = sw_evs_crc32(0, m, total - 4);
    for (int k = 0; k < 4; k++)
        m[total - 4 + k] = (unsigned char)(c >> (24 - 8 * k));
    struct sw_evs_message msg;
    const char *why = NULL;
    assert_int_equal(sw_evs_decode((char *)m, total, &msg, &why), SW_OK);
    assert_int_equal(msg.n_headers, 9);
    assert_int_equal(msg.headers[0].num, 1);
    assert_int_equal(msg.headers[1].num, 0);
    assert_int_equal(msg.headers[2].num, -1);
    assert_int_equal(msg.headers[3].num, -32768);
    assert_int_equal(msg.headers[4].num, 0x7fffffff);
    assert_int_equal(msg.headers[5].num, -2);
    assert_int_equal(msg.headers[6].value.len, 2);
    assert_int_equal(msg.headers[7].num, 1000);
    assert_int_equal(msg.headers[8].value.len, 16);
    assert_int_equal(msg.payload.len, 0);
    assert_null(msg.message_type.ptr);
    /* a header type past uuid does not parse */
    m[12 + 2] = 10;
    c = sw_evs_crc32(0, m, total - 4);
    for (int k = 0; k < 4; k++)
        m[total - 4 + k] = (unsigned char)(c >> (24 - 8 * k));
    assert_int_equal(sw_evs_decode((char *)m, total, &msg, &why), SW_EPROTO);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_crc32),
        cmocka_unit_test(test_round_trip_every_split),
        cmocka_unit_test(test_corruption_at_every_byte),
        cmocka_unit_test(test_bounds),
        cmocka_unit_test(test_header_types),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
