/* The parse memo (common/jmemo): a body whose array elements were parsed
 * before builds the same tree json_loadb builds, takes those elements from
 * the memo, never takes an element that differs by one byte (even when the
 * hashes collide), rejects what json_loadb rejects, counts the bounds as the
 * whole body has them, and stays under its byte bound. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "common/buf.h"
#include "common/jfast.h"
#include "common/jmemo.h"

#define REQ (JSON_REJECT_DUPLICATES | JSON_DECODE_ANY)
#define BIG_VALUES 100000
#define BIG_DEPTH 64

static uint64_t rng = 88172645463325252ull;

static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* What people paste into a conversation: prose, code, escapes, accents. */
static const char *const words[] = {
    "the", "build", "fails", "on", "line", "42:", "\\\"unused\\\"", "variable", "\\n",
    "int main(void) {", "return 0;", "}", "caf\\u00e9", "na\xc3\xafve", "\xe6\x97\xa5\xe6\x9c\xac",
    "\\\\path\\\\to", "\\t", "ok", "why?", "100%", "{\\\"k\\\": [1, 2]}",
};

struct body {
    char *s;
    size_t len, cap;
};

static void put(struct body *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        b->cap = 2 * (b->len + n + 1);
        b->s = realloc(b->s, b->cap);
        assert_non_null(b->s);
    }
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = '\0';
}

static void puts_(struct body *b, const char *s)
{
    put(b, s, strlen(s));
}

/* Message i of a conversation seeded by seed: the same bytes every time. */
static void message(struct body *b, unsigned seed, int i)
{
    uint64_t keep = rng;
    rng = 0x9e3779b97f4a7c15ull * (seed * 1000u + (unsigned)i + 1);
    char head[96];
    snprintf(head, sizeof head, "{\"role\":\"%s\",\"content\":\"", i % 2 ? "assistant" : "user");
    puts_(b, head);
    int n = 60 + (int)(next() % 200);
    for (int w = 0; w < n; w++) {
        puts_(b, words[next() % (sizeof words / sizeof *words)]);
        puts_(b, " ");
    }
    puts_(b, "\"");
    if (i % 3 == 2)
        puts_(b, ",\"tool_calls\":[{\"id\":\"c1\",\"type\":\"function\",\"function\":"
                 "{\"name\":\"run\",\"arguments\":\"{\\\"cmd\\\":\\\"make test\\\"}\"}}]");
    puts_(b, "}");
    rng = keep;
}

/* The body of turn t: messages 0..t-1, then the other members. */
static struct body conversation(unsigned seed, int t)
{
    struct body b = {0};
    puts_(&b, "{\"model\":\"m\",\"messages\":[");
    for (int i = 0; i < t; i++) {
        if (i)
            puts_(&b, ", ");
        message(&b, seed, i);
    }
    puts_(&b, "],\"stream\":false,\"max_tokens\":512}");
    return b;
}

/* sw_json_load_bounded takes what json_loadb takes, as the same tree, and
 * nothing it rejects; expect: it must take it. */
static void same_as_jansson(const char *s, size_t len, int expect)
{
    bool oom = false;
    json_t *f = sw_json_load_bounded(s, len, REQ, BIG_VALUES, BIG_DEPTH, &oom);
    json_t *j = json_loadb(s, len, REQ, NULL);
    assert_false(oom);
    if (expect)
        assert_non_null(f);
    if (f) {
        assert_non_null(j);
        assert_true(json_equal(f, j));
        char *a = json_dumps(f, JSON_COMPACT | JSON_REAL_PRECISION(17));
        char *b = json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(17));
        assert_string_equal(a, b);
        free(a);
        free(b);
    }
    json_decref(f);
    json_decref(j);
}

static uint64_t hits(void)
{
    struct sw_jmemo_stats st;
    sw_jmemo_get_stats(&st);
    return st.hits;
}

static int setup(void **state)
{
    (void)state;
    sw_jmemo_set_hash(NULL);
    sw_jmemo_set_max(64u << 20);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    sw_jmemo_set_max(0);
    return 0;
}

/* Each turn resends the earlier ones: all of them come from the memo, the
 * tree is json_loadb's. */
static void test_turns(void **state)
{
    (void)state;
    for (int t = 30; t <= 40; t++) {
        struct body b = conversation(1, t);
        uint64_t before = hits();
        same_as_jansson(b.s, b.len, 1);
        if (t > 30)
            assert_int_equal(hits() - before, t - 1);
        free(b.s);
    }
    /* the same body again: every message a hit */
    struct body b = conversation(1, 40);
    uint64_t before = hits();
    same_as_jansson(b.s, b.len, 1);
    assert_int_equal(hits() - before, 40);
    free(b.s);
}

/* A message changed by one byte is parsed as it is now. */
static void one_byte(void)
{
    struct body b = conversation(2, 30);
    same_as_jansson(b.s, b.len, 1);
    /* a letter in message 7's content becomes another */
    char *m = b.s;
    for (int i = 0; i < 8; i++)
        m = strstr(m + 1, "\"content\":\"");
    assert_non_null(m);
    char *x = strchr(m + 11, 't');
    assert_non_null(x);
    *x = 'T';
    uint64_t before = hits();
    same_as_jansson(b.s, b.len, 1);
    assert_int_equal(hits() - before, 29);
    free(b.s);
}

static void test_one_byte(void **state)
{
    (void)state;
    one_byte();
}

static uint64_t same_hash(const void *p, size_t len)
{
    (void)p;
    (void)len;
    return 7;
}

/* With every element's hash the same, only the bytes tell them apart. */
static void test_one_byte_colliding(void **state)
{
    (void)state;
    sw_jmemo_set_hash(same_hash);
    one_byte();
    struct body b = conversation(3, 30);
    same_as_jansson(b.s, b.len, 1);
    free(b.s);
    sw_jmemo_set_hash(NULL);
}

/* Bodies around elements the memo holds, broken in the ways a hit could
 * hide: rejected as json_loadb rejects them, taken as it takes them. */
static void test_broken(void **state)
{
    (void)state;
    struct body m = {0};
    message(&m, 4, 5);
    struct body prime = {0};
    puts_(&prime, "{\"messages\":[");
    for (int i = 0; i < 30; i++) {
        if (i)
            puts_(&prime, ",");
        put(&prime, m.s, m.len);
    }
    puts_(&prime, "]}");
    uint64_t before = hits();
    same_as_jansson(prime.s, prime.len, 1);
    assert_true(hits() == before); /* 30 times the same bytes: all parsed */

    const char *const frames[][3] = {
        {"{\"messages\":[", " ", "]}"},           /* no comma between two hits */
        {"{\"messages\":[", ",", "]"},            /* unclosed object */
        {"{\"messages\":[", ",", "]}x"},          /* garbage after */
        {"{\"messages\":[", ",", "],}"},          /* trailing comma */
        {"{\"messages\":[", ",,", "]}"},
        {"{\"messages\":[\"", ",", "\"]}"},       /* inside a string */
        {"{\"messages\":", ",", "}"},             /* not in an array */
        {"{\"messages\":[[", ",", "]]}"},         /* one level deeper */
        {"{\"messages\":[", ",", "],\"messages\":[]}"}, /* a duplicate key */
        {"[", ",", "]"},                          /* a root array */
        {"{\"a\":1,\"messages\":[", ",", "]}"},   /* well-formed */
    };
    for (size_t f = 0; f < sizeof frames / sizeof *frames; f++) {
        struct body b = {0};
        puts_(&b, frames[f][0]);
        for (int i = 0; i < 30; i++) {
            if (i)
                puts_(&b, frames[f][1]);
            put(&b, m.s, m.len);
        }
        puts_(&b, frames[f][2]);
        same_as_jansson(b.s, b.len, 0);
        free(b.s);
    }
    free(m.s);
    free(prime.s);
}

/* Random bytes of a body whose messages the memo holds changed to what
 * JSON reads as structure: the answer is always json_loadb's. */
static void test_mutations(void **state)
{
    (void)state;
    struct body b = conversation(5, 30);
    same_as_jansson(b.s, b.len, 1);
    static const char set[] = "{}[],:\"\\ 0a-";
    for (int r = 0; r < 3000; r++) {
        char *c = malloc(b.len);
        assert_non_null(c);
        memcpy(c, b.s, b.len);
        int n = 1 + (int)(next() % 3);
        for (int k = 0; k < n; k++)
            c[next() % b.len] = set[next() % (sizeof set - 1)];
        same_as_jansson(c, b.len, 0);
        free(c);
        /* the memo still answers the original */
        if (r % 500 == 0)
            same_as_jansson(b.s, b.len, 1);
    }
    free(b.s);
}

/* Whether the bounded loader takes s with these bounds. */
static bool takes(const struct body *b, size_t values, size_t depth)
{
    bool oom;
    json_t *j = sw_json_load_bounded(b->s, b->len, REQ, values, depth, &oom);
    json_decref(j);
    return j != NULL;
}

/* Messages 0 .. split - 1 of conversation a, then b's from split on. */
static struct body forked(unsigned a, unsigned b_seed, int split, int t)
{
    struct body b = {0};
    puts_(&b, "{\"model\":\"m\",\"messages\":[");
    for (int i = 0; i < t; i++) {
        if (i)
            puts_(&b, ",");
        message(&b, i < split ? a : b_seed, i);
    }
    puts_(&b, "]}");
    return b;
}

/* Two conversations that share their first messages (a system prompt),
 * sent in turn: the element that followed a message last time is not the
 * one that follows it now, and each body is still json_loadb's tree, with
 * every resent message a hit. */
static void test_forks(void **state)
{
    (void)state;
    for (int t = 30; t <= 36; t++)
        for (unsigned c = 0; c < 2; c++) {
            struct body b = forked(20, 21 + c, 5, t);
            uint64_t before = hits();
            same_as_jansson(b.s, b.len, 1);
            if (t > 30)
                assert_int_equal(hits() - before, t - 1);
            free(b.s);
        }
}

/* A hit counts as the values and nesting of its bytes: the bounds decide
 * as they do without the memo. */
static void test_bounds(void **state)
{
    (void)state;
    struct body b = {0};
    puts_(&b, "{\"messages\":[");
    for (int i = 0; i < 30; i++) {
        if (i)
            puts_(&b, ",");
        puts_(&b, "{\"role\":\"user\",\"content\":[[[[{\"x\":[1,2,3,\"");
        for (int k = 0; k < 60; k++)
            puts_(&b, "word ");
        puts_(&b, "\"]}]]]]}");
    }
    puts_(&b, "]}");
    size_t values[2] = {0}, depth[2] = {0};
    uint64_t before = hits();
    for (int memo = 0; memo < 2; memo++) {
        sw_jmemo_set_max(memo ? 64u << 20 : 0);
        assert_true(takes(&b, BIG_VALUES, BIG_DEPTH)); /* primes the memo */
        while (takes(&b, BIG_VALUES, BIG_DEPTH - depth[memo]))
            depth[memo]++;
        size_t lo = 1, hi = BIG_VALUES;        /* the least value bound it takes */
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (takes(&b, mid, BIG_DEPTH))
                hi = mid;
            else
                lo = mid + 1;
        }
        values[memo] = lo;
    }
    assert_true(hits() > before);
    assert_int_equal(depth[0], depth[1]);
    assert_int_equal(values[0], values[1]);
    free(b.s);
}

/* Past the bound the oldest entries go. */
static void test_bound(void **state)
{
    (void)state;
    sw_jmemo_set_max(256u << 10);
    for (unsigned seed = 10; seed < 40; seed++) {
        struct body b = conversation(seed, 30);
        same_as_jansson(b.s, b.len, 1);
        free(b.s);
        struct sw_jmemo_stats st;
        sw_jmemo_get_stats(&st);
        assert_true(st.bytes <= 256u << 10);
    }
    struct sw_jmemo_stats st;
    sw_jmemo_get_stats(&st);
    assert_true(st.evicted > 0);
    assert_true(st.entries > 0);
    sw_jmemo_set_max(0);
    sw_jmemo_get_stats(&st);
    assert_int_equal(st.entries, 0);
    assert_int_equal(st.bytes, 0);
    /* off: nothing is kept, the parse is the same */
    struct body b = conversation(1, 30);
    same_as_jansson(b.s, b.len, 1);
    sw_jmemo_get_stats(&st);
    assert_int_equal(st.entries, 0);
    free(b.s);
}

/* A value derived from a held one (a translation) is kept with it: found by
 * its key only, its elements held in turn (notes on them), replaced by a new
 * key, dropped with the value and counted in the bound; a value not held
 * keeps nothing, and a derived element cannot have a derived value of its
 * own. Enough entries to grow the tables while derived ones are held. */
static void test_derived(void **state)
{
    (void)state;
    struct body b = conversation(5, 400);
    bool oom = false;
    json_t *t = sw_json_load_bounded(b.s, b.len, REQ, BIG_VALUES, BIG_DEPTH, &oom);
    assert_non_null(t);
    json_t *msgs = json_object_get(t, "messages");
    struct sw_jmemo_stats st0, st;
    sw_jmemo_get_stats(&st0);
    json_t *out = json_array();
    for (size_t i = 0; i < json_array_size(msgs); i++) {
        json_t *m = json_array_get(msgs, i);
        size_t from = json_array_size(out);
        /* two values for some elements: the translation may split one */
        json_array_append_new(out, json_pack("{s:s, s:O}", "role", "x", "of", m));
        if (i % 3 == 0)
            json_array_append_new(out, json_pack("{s:I}", "n", (json_int_t)i));
        sw_jmemo_derived_put(m, 7, out, from);
        uint32_t note = (uint32_t)i;
        sw_jmemo_note_put(json_array_get(out, from), 9, &note, sizeof note);
    }
    sw_jmemo_get_stats(&st);
    assert_true(st.bytes > st0.bytes);
    assert_int_equal(st.entries, st0.entries);      /* derived ones are not entries */
    for (size_t i = 0; i < json_array_size(msgs); i++) {
        json_t *m = json_array_get(msgs, i);
        assert_null(sw_jmemo_derived_get(m, 8));
        json_t *d = sw_jmemo_derived_get(m, 7);
        assert_non_null(d);
        assert_int_equal(json_array_size(d), i % 3 == 0 ? 2 : 1);
        json_t *x = json_array_get(d, 0);
        assert_ptr_equal(json_object_get(x, "of"), m);
        uint32_t note = 0;
        assert_true(sw_jmemo_note_get(x, 9, &note, sizeof note));
        assert_int_equal(note, i);
        sw_jmemo_derived_put(x, 7, d, 0);           /* derived: nothing */
        assert_null(sw_jmemo_derived_get(x, 7));
        json_decref(d);
    }
    /* a new key takes the old one's place, and its notes go with it */
    json_t *m0 = json_array_get(msgs, 0), *x0 = json_array_get(out, 0);
    json_t *other = json_pack("[{s:s}]", "k", "v");
    sw_jmemo_derived_put(m0, 8, other, 0);
    assert_null(sw_jmemo_derived_get(m0, 7));
    json_t *d = sw_jmemo_derived_get(m0, 8);
    assert_ptr_equal(json_array_get(d, 0), json_array_get(other, 0));
    json_decref(d);
    uint32_t note;
    assert_false(sw_jmemo_note_get(x0, 9, &note, sizeof note));
    /* not held: nothing kept */
    json_t *loose = json_pack("{s:s}", "role", "user");
    sw_jmemo_derived_put(loose, 7, out, 0);
    assert_null(sw_jmemo_derived_get(loose, 7));
    /* dropped with the value: the bytes come back to nothing */
    sw_jmemo_clear();
    sw_jmemo_get_stats(&st);
    assert_int_equal(st.bytes, 0);
    assert_null(sw_jmemo_derived_get(m0, 8));
    assert_false(sw_jmemo_note_get(json_array_get(out, 3), 9, &note, sizeof note));
    json_decref(loose);
    json_decref(other);
    json_decref(out);
    json_decref(t);
    free(b.s);
}

/* A note of any length is appended whole to a buffer. */
static void test_note_append(void **state)
{
    (void)state;
    struct body b = conversation(6, 30);
    bool oom = false;
    json_t *t = sw_json_load_bounded(b.s, b.len, REQ, BIG_VALUES, BIG_DEPTH, &oom);
    assert_non_null(t);
    json_t *m = json_array_get(json_object_get(t, "messages"), 2);
    struct sw_buf out;
    sw_buf_init(&out, 1 << 20);
    assert_false(sw_jmemo_note_append(m, 3, &out));
    char text[5000];
    memset(text, 'q', sizeof text);
    sw_jmemo_note_put(m, 3, text, sizeof text);
    assert_int_equal(sw_buf_append(&out, "<", 1), 0);
    assert_true(sw_jmemo_note_append(m, 3, &out));
    assert_int_equal(out.len, 1 + sizeof text);
    assert_memory_equal(out.ptr + 1, text, sizeof text);
    struct sw_buf small;
    sw_buf_init(&small, 100);                     /* cannot take it: false, unchanged */
    assert_false(sw_jmemo_note_append(m, 3, &small));
    assert_int_equal(small.len, 0);
    sw_buf_free(&small);
    sw_buf_free(&out);
    json_decref(t);
    free(b.s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_turns, setup, teardown),
        cmocka_unit_test_setup_teardown(test_one_byte, setup, teardown),
        cmocka_unit_test_setup_teardown(test_one_byte_colliding, setup, teardown),
        cmocka_unit_test_setup_teardown(test_forks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_broken, setup, teardown),
        cmocka_unit_test_setup_teardown(test_mutations, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bounds, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bound, setup, teardown),
        cmocka_unit_test_setup_teardown(test_derived, setup, teardown),
        cmocka_unit_test_setup_teardown(test_note_append, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
