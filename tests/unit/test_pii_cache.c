/* The scan-verdict cache (src/pii/cache.c): a hit gives the spans a fresh
 * scan gives; a text changed by one byte anywhere is a miss and is scanned;
 * another engine (a reload, pii.allow lists) never sees this one's verdicts;
 * the bound holds and the least recently used go first; an entry holds no
 * byte of the text; masking a repeated message gives the same placeholder
 * within a request; scans on several threads share it. */
#include <pthread.h>
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
#include "common/err.h"
#include "common/jfast.h"
#include "common/jmemo.h"
#include "pii/cache.h"
#include "pii/pii.h"

static struct sw_pii_engine *FRESH;     /* no cache: the reference */

static int setup(void **state)
{
    (void)state;
    char err[256];
    return sw_pii_engine_new(NULL, 0, &FRESH, err, sizeof err);
}

static int teardown(void **state)
{
    (void)state;
    sw_pii_engine_free(FRESH);
    return 0;
}

static struct sw_pii_engine *cached_engine(struct sw_pii_cache *c)
{
    char err[256];
    struct sw_pii_engine *e = NULL;
    assert_int_equal(sw_pii_engine_new(NULL, 0, &e, err, sizeof err), SW_OK);
    sw_pii_engine_set_cache(e, c);
    return e;
}

struct spans {
    struct sw_pii_span v[64];
    size_t n;
};

static int on_span(void *ud, const struct sw_pii_span *sp)
{
    struct spans *s = ud;
    assert_true(s->n < 64);
    s->v[s->n++] = *sp;
    return SW_OK;
}

static struct spans scan(const struct sw_pii_engine *e, const char *t, size_t len, int json)
{
    struct spans s = {.n = 0};
    int rc = (json ? sw_pii_scan_json_text : sw_pii_scan_text)(e, t, len, on_span, &s);
    assert_int_equal(rc, SW_OK);
    return s;
}

static void assert_same(const struct spans *a, const struct spans *b)
{
    assert_int_equal(a->n, b->n);
    for (size_t i = 0; i < a->n; i++) {
        assert_int_equal(a->v[i].start, b->v[i].start);
        assert_int_equal(a->v[i].len, b->v[i].len);
        assert_int_equal(a->v[i].type, b->v[i].type);
    }
}

static struct sw_pii_cache_stats stats(const struct sw_pii_cache *c)
{
    struct sw_pii_cache_stats st;
    sw_pii_cache_get_stats(c, &st);
    return st;
}

/* A message of an agent's conversation: prose, code, a tool result, and PII. */
static const char TEXT[] =
    "You are a coding agent. The user asked to fix the failing build.\n"
    "```c\nstatic int add(int a, int b) { return a + b; }\n```\n"
    "Tool result (git log): commit 3f2a1b by Jane Roe <jane.roe@example.com>, "
    "call her on +31 6 1234 5678 or wire to NL91ABNA0417164300; card 4111 1111 1111 1111.\n"
    "The server at 192.168.10.24 answered 500; token sk-proj-AbCdEf0123456789GhIjKlMnOp is stale.\n";

static void test_hit_same_spans(void **state)
{
    (void)state;
    struct sw_pii_cache *c = sw_pii_cache_new(1 << 20);
    struct sw_pii_engine *e = cached_engine(c);
    size_t len = sizeof TEXT - 1;
    assert_true(len >= SW_PII_CACHE_MIN_TEXT);
    struct spans ref = scan(FRESH, TEXT, len, 0);
    assert_true(ref.n >= 5);
    struct spans first = scan(e, TEXT, len, 0);
    assert_int_equal(stats(c).misses, 1);
    assert_int_equal(stats(c).hits, 0);
    struct spans second = scan(e, TEXT, len, 0);
    assert_int_equal(stats(c).hits, 1);
    assert_same(&first, &ref);
    assert_same(&second, &ref);
    /* the same bytes as JSON text are another verdict */
    struct spans jref = scan(FRESH, TEXT, len, 1);
    struct spans j1 = scan(e, TEXT, len, 1);
    assert_int_equal(stats(c).misses, 2);
    struct spans j2 = scan(e, TEXT, len, 1);
    assert_int_equal(stats(c).hits, 2);
    assert_same(&j1, &jref);
    assert_same(&j2, &jref);
    /* a short text does not use the cache */
    scan(e, TEXT, 100, 0);
    scan(e, TEXT, 100, 0);
    assert_int_equal(stats(c).hits + stats(c).misses, 4);
    sw_pii_engine_free(e);
    sw_pii_cache_free(c);
}

/* Every byte position changed once: each is a miss, scanned, and gives what
 * a fresh scan of the changed text gives. */
static void test_one_byte_anywhere(void **state)
{
    (void)state;
    struct sw_pii_cache *c = sw_pii_cache_new(8 << 20);
    struct sw_pii_engine *e = cached_engine(c);
    size_t len = sizeof TEXT - 1;
    char t[sizeof TEXT];
    scan(e, TEXT, len, 0);
    for (size_t i = 0; i < len; i++) {
        memcpy(t, TEXT, sizeof TEXT);
        t[i] = t[i] == 'x' ? 'y' : 'x';
        uint64_t misses = stats(c).misses;
        struct spans got = scan(e, t, len, 0);
        assert_int_equal(stats(c).misses, misses + 1);
        struct spans ref = scan(FRESH, t, len, 0);
        assert_same(&got, &ref);
    }
    /* a clean text cached, then the byte that makes it an address */
    char clean[400];
    memset(clean, 'a', sizeof clean);
    memcpy(clean + 100, " write to alice#example.com today ", 34);
    assert_int_equal(scan(e, clean, sizeof clean, 0).n, 0);
    assert_int_equal(scan(e, clean, sizeof clean, 0).n, 0);
    clean[100 + 15] = '@';
    struct spans found = scan(e, clean, sizeof clean, 0);
    assert_int_equal(found.n, 1);
    assert_int_equal(found.v[0].type, SW_PII_EMAIL);
    sw_pii_engine_free(e);
    sw_pii_cache_free(c);
}

/* A new engine (a reload builds one) and an engine with pii.allow lists have
 * generations of their own: they never get this engine's verdicts. */
static void test_other_engine_misses(void **state)
{
    (void)state;
    struct sw_pii_cache *c = sw_pii_cache_new(1 << 20);
    struct sw_pii_engine *e = cached_engine(c);
    size_t len = sizeof TEXT - 1;
    scan(e, TEXT, len, 0);
    scan(e, TEXT, len, 0);
    assert_int_equal(stats(c).hits, 1);

    char err[256];
    static const char *const values[] = {"jane.roe@example.com"};
    struct sw_pii_engine *safe = NULL;
    assert_int_equal(sw_pii_engine_allowing(e, values, 1, NULL, 0, &safe, err, sizeof err), SW_OK);
    assert_ptr_equal(sw_pii_engine_cache(safe), c);
    assert_true(sw_pii_engine_gen(safe) != sw_pii_engine_gen(e));
    struct sw_pii_engine *safe_ref = NULL;
    assert_int_equal(sw_pii_engine_allowing(FRESH, values, 1, NULL, 0, &safe_ref, err, sizeof err),
                     SW_OK);
    struct spans a = scan(safe, TEXT, len, 0);
    assert_int_equal(stats(c).hits, 1);     /* a miss */
    struct spans b = scan(safe_ref, TEXT, len, 0);
    assert_same(&a, &b);
    bool allowed = false;
    for (size_t i = 0; i < a.n; i++)
        allowed |= a.v[i].type == SW_PII_ALLOWED;
    assert_true(allowed);
    struct spans a2 = scan(safe, TEXT, len, 0);
    assert_int_equal(stats(c).hits, 2);
    assert_same(&a2, &b);

    /* the reload's engine: same config, its own generation */
    struct sw_pii_engine *e2 = cached_engine(c);
    assert_true(sw_pii_engine_gen(e2) != sw_pii_engine_gen(e));
    uint64_t misses = stats(c).misses;
    scan(e2, TEXT, len, 0);
    assert_int_equal(stats(c).misses, misses + 1);
    /* phone regions change what an engine detects: a new generation */
    uint64_t g = sw_pii_engine_gen(e2);
    static const char *const nl[] = {"NL"};
    assert_int_equal(sw_pii_engine_set_phone_regions(e2, nl, 1, err, sizeof err), SW_OK);
    assert_true(sw_pii_engine_gen(e2) != g);

    /* the reload clears */
    assert_true(stats(c).entries > 0);
    sw_pii_cache_clear(c);
    assert_int_equal(stats(c).entries, 0);
    assert_int_equal(stats(c).bytes, 0);
    misses = stats(c).misses;
    scan(e, TEXT, len, 0);
    assert_int_equal(stats(c).misses, misses + 1);
    sw_pii_engine_free(safe_ref);
    sw_pii_engine_free(safe);
    sw_pii_engine_free(e2);
    sw_pii_engine_free(e);
    sw_pii_cache_free(c);
}

static void distinct(char *t, size_t len, unsigned i)
{
    memset(t, 'q', len);
    snprintf(t, len, "message %u of the conversation, no personal data ", i);
    t[strlen(t)] = 'q';
}

static void test_bound_and_eviction(void **state)
{
    (void)state;
    struct sw_pii_cache *c = sw_pii_cache_new(2048);
    struct sw_pii_engine *e = cached_engine(c);
    char t[300];
    for (unsigned i = 0; i < 200; i++) {
        distinct(t, sizeof t, i);
        scan(e, t, sizeof t, 0);
        assert_true(stats(c).bytes <= 2048);
    }
    struct sw_pii_cache_stats st = stats(c);
    assert_true(st.entries > 1);
    assert_true(st.evicted >= 200 - st.entries);
    /* the most recent is kept, the first is gone */
    distinct(t, sizeof t, 199);
    uint64_t hits = st.hits;
    scan(e, t, sizeof t, 0);
    assert_int_equal(stats(c).hits, hits + 1);
    distinct(t, sizeof t, 0);
    scan(e, t, sizeof t, 0);
    assert_int_equal(stats(c).hits, hits + 1);
    /* a lower bound evicts at once; 0 stores nothing */
    sw_pii_cache_set_max(c, 0);
    assert_int_equal(stats(c).entries, 0);
    scan(e, t, sizeof t, 0);
    scan(e, t, sizeof t, 0);
    assert_int_equal(stats(c).hits, hits + 1);
    assert_int_equal(stats(c).entries, 0);
    sw_pii_engine_free(e);
    sw_pii_cache_free(c);
}

struct find {
    const char *needle;
    size_t len;
    int found;
    size_t entries;
    size_t bytes;
};

static void find_in(void *ud, const void *entry, size_t bytes)
{
    struct find *f = ud;
    f->entries++;
    f->bytes = bytes;
    if (memmem(entry, bytes, f->needle, f->len))
        f->found++;
}

/* An entry is its key (a digest), links and spans: its size does not grow
 * with the text, and no value's bytes are in it. */
static void test_no_values_stored(void **state)
{
    (void)state;
    struct sw_pii_cache *c = sw_pii_cache_new(1 << 20);
    struct sw_pii_engine *e = cached_engine(c);
    size_t len = sizeof TEXT - 1;
    size_t n = scan(e, TEXT, len, 0).n;
    static const char *const values[] = {"jane.roe", "example.com", "1234 5678", "NL91ABNA",
                                         "4111", "192.168", "sk-proj", "coding agent"};
    for (size_t i = 0; i < sizeof values / sizeof *values; i++) {
        struct find f = {values[i], strlen(values[i]), 0, 0, 0};
        sw_pii_cache_each(c, find_in, &f);
        assert_int_equal(f.entries, 1);
        assert_int_equal(f.found, 0);
    }
    struct find f = {"\x01\x02\x03", 3, 0, 0, 0};
    sw_pii_cache_each(c, find_in, &f);
    size_t one = f.bytes;
    assert_true(one < 160 + n * 12);
    /* a text four times as long with the same spans: an entry of the same size */
    sw_pii_cache_clear(c);
    char big[4 * sizeof TEXT];
    memcpy(big, TEXT, len);
    memset(big + len, ' ', sizeof big - len);
    assert_int_equal(scan(e, big, sizeof big, 0).n, n);
    f.entries = 0;
    sw_pii_cache_each(c, find_in, &f);
    assert_int_equal(f.bytes, one);
    assert_int_equal(stats(c).bytes, one);
    sw_pii_engine_free(e);
    sw_pii_cache_free(c);
}

static char *conversation(int turns, int twice)
{
    json_t *msgs = json_array();
    json_array_append_new(msgs, json_pack("{s:s,s:s}", "role", "system", "content", TEXT));
    for (int i = 0; i < turns; i++) {
        char u[512];
        snprintf(u, sizeof u, "%s turn %d: please look again, mail bob.smith@example.org", TEXT, i);
        for (int k = 0; k <= twice; k++)
            json_array_append_new(msgs, json_pack("{s:s,s:s}", "role", "user", "content", u));
        json_array_append_new(msgs, json_pack("{s:s,s:[{s:s,s:s}]}", "role", "assistant",
                                              "content", "type", "text", "text", TEXT));
    }
    json_t *b = json_pack("{s:s,s:o}", "model", "m", "messages", msgs);
    char *s = json_dumps(b, JSON_COMPACT);
    json_decref(b);
    return s;
}

/* Whole bodies: the counts with the cache are the counts without it; a
 * message repeated in one body masks to the same placeholders; each request
 * has its own map. */
static void test_body_and_mask(void **state)
{
    (void)state;
    struct sw_pii_cache *c = sw_pii_cache_new(1 << 20);
    struct sw_pii_engine *e = cached_engine(c);
    char *s = conversation(3, 1);
    json_t *body = json_loads(s, 0, NULL);
    assert_non_null(body);
    struct sw_pii_counts ref, got;
    assert_int_equal(sw_pii_scan_body(FRESH, SW_PII_SURFACE_CHAT, body, &ref, NULL, 0), SW_OK);
    for (int round = 0; round < 2; round++) {
        assert_int_equal(sw_pii_scan_body(e, SW_PII_SURFACE_CHAT, body, &got, NULL, 0), SW_OK);
        assert_memory_equal(&got, &ref, sizeof ref);
    }
    assert_true(stats(c).hits > stats(c).misses);

    char *masked[2];
    for (int r = 0; r < 2; r++) {
        json_t *b = json_loads(s, 0, NULL);
        struct sw_pii_map *m = sw_pii_map_new();
        assert_int_equal(sw_pii_mask_body(r ? e : FRESH, m, SW_PII_SURFACE_CHAT, b, NULL, NULL, 0),
                         SW_OK);
        json_t *msgs = json_object_get(b, "messages");
        const char *u1 = json_string_value(json_object_get(json_array_get(msgs, 1), "content"));
        const char *u2 = json_string_value(json_object_get(json_array_get(msgs, 2), "content"));
        assert_string_equal(u1, u2);
        assert_non_null(strstr(u1, "[EMAIL_2]"));       /* jane's is 1, bob's 2 */
        assert_null(strstr(u1, "bob.smith"));
        masked[r] = json_dumps(b, JSON_COMPACT);
        sw_pii_map_free(m);
        json_decref(b);
    }
    assert_string_equal(masked[0], masked[1]);
    free(masked[0]);
    free(masked[1]);
    json_decref(body);
    free(s);
    sw_pii_engine_free(e);
    sw_pii_cache_free(c);
}

static uint64_t lookups(const struct sw_pii_cache *c)
{
    return stats(c).hits + stats(c).misses;
}

static void same_counts(const struct sw_pii_engine *e, const struct sw_pii_engine *ref,
                        enum sw_pii_surface surface, const json_t *body)
{
    struct sw_pii_counts a, b;
    assert_int_equal(sw_pii_scan_body(e, surface, body, &a, NULL, 0), SW_OK);
    assert_int_equal(sw_pii_scan_body(ref, surface, body, &b, NULL, 0), SW_OK);
    assert_memory_equal(&a, &b, sizeof a);
}

/* A body whose messages the parse memo holds: the scan's verdict on each is
 * kept with it, and a later scan of them adds it without looking at one of
 * their texts; the counts are a fresh engine's. Another engine (a reload's,
 * an allow list's: another generation) or another surface does not take
 * them, and finds what it finds. */
static void test_element_notes(void **state)
{
    (void)state;
    sw_jmemo_set_max(64u << 20);
    struct sw_pii_cache *c = sw_pii_cache_new(1 << 20);
    struct sw_pii_engine *e = cached_engine(c), *e2 = cached_engine(c);
    char *s = conversation(20, 0);
    size_t len = strlen(s);
    assert_true(len >= SW_JMEMO_MIN_BODY);
    bool oom;
    json_t *first = sw_json_load_bounded(s, len, JSON_REJECT_DUPLICATES, 100000, 64, &oom);
    json_t *body = sw_json_load_bounded(s, len, JSON_REJECT_DUPLICATES, 100000, 64, &oom);
    assert_non_null(first);
    assert_non_null(body);
    /* the second parse shares the first's messages */
    assert_ptr_equal(json_array_get(json_object_get(first, "messages"), 1),
                     json_array_get(json_object_get(body, "messages"), 1));
    same_counts(e, FRESH, SW_PII_SURFACE_CHAT, first);      /* learns */
    uint64_t seen = lookups(c);
    same_counts(e, FRESH, SW_PII_SURFACE_CHAT, body);
    assert_int_equal(lookups(c), seen);                     /* no text looked at */

    same_counts(e2, FRESH, SW_PII_SURFACE_CHAT, body);
    assert_true(lookups(c) > seen);
    seen = lookups(c);
    same_counts(e, FRESH, SW_PII_SURFACE_MESSAGES, body);
    assert_true(lookups(c) > seen);

    char err[256];
    static const char *const values[] = {"bob.smith@example.org"};
    struct sw_pii_engine *safe = NULL, *safe_ref = NULL;
    assert_int_equal(sw_pii_engine_allowing(e, values, 1, NULL, 0, &safe, err, sizeof err), SW_OK);
    assert_int_equal(sw_pii_engine_allowing(FRESH, values, 1, NULL, 0, &safe_ref, err, sizeof err),
                     SW_OK);
    same_counts(safe, safe_ref, SW_PII_SURFACE_CHAT, body);
    struct sw_pii_counts got;
    assert_int_equal(sw_pii_scan_body(safe, SW_PII_SURFACE_CHAT, body, &got, NULL, 0), SW_OK);
    assert_true(got.allowed > 0);

    /* not held (the memo off): walked text by text */
    sw_jmemo_set_max(0);
    seen = lookups(c);
    same_counts(e, FRESH, SW_PII_SURFACE_CHAT, body);
    assert_true(lookups(c) > seen);
    json_decref(first);
    json_decref(body);
    free(s);
    sw_pii_engine_free(safe_ref);
    sw_pii_engine_free(safe);
    sw_pii_engine_free(e2);
    sw_pii_engine_free(e);
    sw_pii_cache_free(c);
}

static json_t *load(const char *s)
{
    bool oom;
    json_t *v = sw_json_load_bounded(s, strlen(s), JSON_REJECT_DUPLICATES, 100000, 64, &oom);
    assert_non_null(v);
    return v;
}

/* More messages than one ask about known verdicts covers (64), one of them
 * new in the middle: the known ones are added, the new one is read, and the
 * counts are a fresh engine's. */
static void test_element_notes_many(void **state)
{
    (void)state;
    sw_jmemo_set_max(64u << 20);
    struct sw_pii_cache *c = sw_pii_cache_new(1 << 20);
    struct sw_pii_engine *e = cached_engine(c);
    char *s = conversation(80, 0);          /* 161 messages */
    json_t *first = load(s), *edit = json_loads(s, 0, NULL);     /* its own tree: edited */
    json_t *m = json_array_get(json_object_get(edit, "messages"), 100);
    char u[512];
    snprintf(u, sizeof u, "%s the new one: write to ann.lee@example.net", TEXT);
    json_object_set_new(m, "content", json_string(u));
    char *s2 = json_dumps(edit, JSON_COMPACT);
    json_t *body = load(s2);
    same_counts(e, FRESH, SW_PII_SURFACE_CHAT, first);      /* learns */
    uint64_t seen = lookups(c);
    same_counts(e, FRESH, SW_PII_SURFACE_CHAT, body);
    assert_true(lookups(c) > seen);                         /* the new message read */
    struct sw_pii_counts a, b;
    assert_int_equal(sw_pii_scan_body(e, SW_PII_SURFACE_CHAT, first, &a, NULL, 0), SW_OK);
    assert_int_equal(sw_pii_scan_body(e, SW_PII_SURFACE_CHAT, body, &b, NULL, 0), SW_OK);
    assert_int_equal(b.total, a.total + 1);     /* message 100 has one entity more */
    seen = lookups(c);
    same_counts(e, FRESH, SW_PII_SURFACE_CHAT, body);
    assert_int_equal(lookups(c), seen);                     /* all known now */
    json_decref(first);
    json_decref(edit);
    json_decref(body);
    free(s);
    free(s2);
    sw_pii_engine_free(e);
    sw_pii_cache_free(c);
    sw_jmemo_set_max(0);
}

/* A text part seen alone keeps no verdict of its own: next to another part
 * in a later body, a value split across the two is still found. */
static void test_lone_part_no_verdict(void **state)
{
    (void)state;
    sw_jmemo_set_max(64u << 20);
    struct sw_pii_engine *e = cached_engine(NULL);
    static const char prose[] = "Read the build log again and say which test failed first, "
                                "then propose the smallest change that fixes it.";
    json_t *msgs = json_array();
    for (int i = 0; i < 120; i++) {
        char t[256];
        snprintf(t, sizeof t, "%s (%d)", prose, i);
        json_array_append_new(msgs, json_pack("{s:s,s:s}", "role", i % 2 ? "assistant" : "user",
                                              "content", t));
    }
    static const char head[] = "You are a coding agent working in the user's repository; when "
                               "you are done, mail the summary to bob.smith@exa";
    json_t *alone = json_pack("{s:s,s:[{s:s,s:s}],s:O}", "model", "m", "system", "type", "text",
                              "text", head, "messages", msgs);
    json_t *split = json_pack("{s:s,s:[{s:s,s:s},{s:s,s:s}],s:o}", "model", "m", "system", "type",
                              "text", "text", head, "type", "text", "text", "mple.org by noon",
                              "messages", msgs);
    char *sa = json_dumps(alone, JSON_COMPACT), *ss = json_dumps(split, JSON_COMPACT);
    assert_true(strlen(sa) >= SW_JMEMO_MIN_BODY);
    json_t *a = load(sa), *b = load(ss);
    assert_ptr_equal(json_array_get(json_object_get(a, "system"), 0),
                     json_array_get(json_object_get(b, "system"), 0));     /* shared */
    same_counts(e, FRESH, SW_PII_SURFACE_MESSAGES, a);
    same_counts(e, FRESH, SW_PII_SURFACE_MESSAGES, b);
    struct sw_pii_counts got;
    assert_int_equal(sw_pii_scan_body(e, SW_PII_SURFACE_MESSAGES, b, &got, NULL, 0), SW_OK);
    assert_int_equal(got.total, 1);
    json_decref(a);
    json_decref(b);
    json_decref(alone);
    json_decref(split);
    free(sa);
    free(ss);
    sw_pii_engine_free(e);
    sw_jmemo_set_max(0);
}

struct worker {
    const struct sw_pii_engine *e;
    const char *body;
    const struct sw_pii_counts *ref;
    int bad;
};

static void *work(void *arg)
{
    struct worker *w = arg;
    for (int i = 0; i < 40; i++) {
        json_t *b = json_loads(w->body, 0, NULL);
        struct sw_pii_counts got;
        if (!b || sw_pii_scan_body(w->e, SW_PII_SURFACE_CHAT, b, &got, NULL, 0) ||
            memcmp(&got, w->ref, sizeof got))
            w->bad++;
        json_decref(b);
    }
    return NULL;
}

static void test_threads(void **state)
{
    (void)state;
    struct sw_pii_cache *c = sw_pii_cache_new(4096);     /* small: evictions while shared */
    struct sw_pii_engine *e = cached_engine(c);
    char *s = conversation(6, 0);
    json_t *body = json_loads(s, 0, NULL);
    struct sw_pii_counts ref;
    assert_int_equal(sw_pii_scan_body(FRESH, SW_PII_SURFACE_CHAT, body, &ref, NULL, 0), SW_OK);
    pthread_t t[4];
    struct worker w[4];
    for (int i = 0; i < 4; i++) {
        w[i] = (struct worker){e, s, &ref, 0};
        assert_int_equal(pthread_create(&t[i], NULL, work, &w[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(w[i].bad, 0);
    }
    assert_true(stats(c).bytes <= 4096);
    json_decref(body);
    free(s);
    sw_pii_engine_free(e);
    sw_pii_cache_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hit_same_spans),
        cmocka_unit_test(test_one_byte_anywhere),
        cmocka_unit_test(test_other_engine_misses),
        cmocka_unit_test(test_bound_and_eviction),
        cmocka_unit_test(test_no_values_stored),
        cmocka_unit_test(test_body_and_mask),
        cmocka_unit_test(test_threads),
        cmocka_unit_test(test_element_notes),
        cmocka_unit_test(test_element_notes_many),
        cmocka_unit_test(test_lone_part_no_verdict),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
