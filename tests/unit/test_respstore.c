/* The response store in memory (state/respstore.c) on an injected clock:
 * round trip with the sensitive flag, scopes, delete, both bounds with the
 * oldest evicted first, the TTL, limits changed at run time, input-item
 * pages; and the responses: section of the config. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/err.h"
#include "config/config.h"
#include "state/respitems.h"
#include "state/resplist.h"
#include "state/respstore.h"

static int64_t clock_ms;
static int64_t fake_now(void *ud)
{
    (void)ud;
    return clock_ms;
}

/* What the last callback said. */
static struct {
    int err;
    int calls;
    bool sensitive;
    int64_t created;
    char scope[SW_RESPSTORE_MAX_SCOPE + 1];
    char input[32768], output[4096], meta[256];
    bool has_meta;
} got;

static void on_done(int err, void *ud)
{
    (void)ud;
    got.err = err;
    got.calls++;
}

static void on_get(int err, const struct sw_resp_record *r, void *ud)
{
    (void)ud;
    got.err = err;
    got.calls++;
    if (err) {
        assert_null(r);
        return;
    }
    got.sensitive = r->sensitive;
    got.created = r->created_at_s;
    snprintf(got.scope, sizeof got.scope, "%s", r->scope);
    snprintf(got.input, sizeof got.input, "%.*s", (int)r->input_len, r->input);
    snprintf(got.output, sizeof got.output, "%.*s", (int)r->output_len, r->output);
    got.has_meta = r->meta != NULL;
    snprintf(got.meta, sizeof got.meta, "%.*s", (int)r->meta_len, r->meta ? r->meta : "");
}

static char list_json[4096];
static void on_list(int err, const char *json, size_t len, void *ud)
{
    (void)ud;
    got.err = err;
    got.calls++;
    snprintf(list_json, sizeof list_json, "%.*s", (int)len, json ? json : "");
}

static int put(struct sw_respstore *s, const char *id, const char *scope, bool sensitive,
               const char *input)
{
    const char *out = "[{\"type\":\"message\",\"id\":\"o1\"}]";
    struct sw_resp_record r = {.id = id, .scope = scope, .sensitive = sensitive,
                               .created_at_s = 1700000000, .input = input,
                               .input_len = strlen(input), .output = out,
                               .output_len = strlen(out)};
    got.calls = 0;
    sw_respstore_put(s, &r, on_done, NULL);
    assert_int_equal(got.calls, 1); /* the memory store answers before returning */
    return got.err;
}

static int get(struct sw_respstore *s, const char *id, const char *scope)
{
    got.calls = 0;
    sw_respstore_get(s, id, scope, on_get, NULL);
    assert_int_equal(got.calls, 1);
    return got.err;
}

static int del(struct sw_respstore *s, const char *id, const char *scope)
{
    got.calls = 0;
    sw_respstore_delete(s, id, scope, on_done, NULL);
    assert_int_equal(got.calls, 1);
    return got.err;
}

static struct sw_respstore *mem(long entries, long bytes, long ttl_s)
{
    clock_ms = 1000;
    struct sw_respstore_limits l = {entries, bytes, ttl_s};
    struct sw_respstore *s = sw_respstore_memory_new(&l, fake_now, NULL);
    assert_non_null(s);
    return s;
}

static void test_round_trip(void **state)
{
    (void)state;
    struct sw_respstore *s = mem(10, 1 << 20, 60);
    const char *in = "[{\"type\":\"message\",\"role\":\"user\",\"content\":\"hi\"}]";
    assert_int_equal(put(s, "resp_1", "app", true, in), SW_OK);
    assert_int_equal(put(s, "resp_2", "app", false, "[]"), SW_OK);
    assert_int_equal(get(s, "resp_1", "app"), SW_OK);
    assert_true(got.sensitive); /* a sensitive conversation stays sensitive */
    assert_int_equal(got.created, 1700000000);
    assert_string_equal(got.scope, "app");
    assert_string_equal(got.input, in);
    assert_string_equal(got.output, "[{\"type\":\"message\",\"id\":\"o1\"}]");
    assert_false(got.has_meta);
    assert_int_equal(get(s, "resp_2", "app"), SW_OK);
    assert_false(got.sensitive);

    /* meta, and an empty scope (auth off) */
    const char *meta = "{\"model\":\"chat\",\"status\":\"completed\"}";
    struct sw_resp_record r = {.id = "resp_3", .sensitive = true, .input = "[]", .input_len = 2,
                               .output = "[]", .output_len = 2, .meta = meta,
                               .meta_len = strlen(meta)};
    sw_respstore_put(s, &r, on_done, NULL);
    assert_int_equal(got.err, SW_OK);
    assert_int_equal(get(s, "resp_3", NULL), SW_OK);
    assert_true(got.has_meta);
    assert_string_equal(got.meta, meta);
    assert_string_equal(got.scope, "");

    /* a replaced record takes the new flag: the caller keeps it sticky */
    assert_int_equal(put(s, "resp_1", "app", false, "[]"), SW_OK);
    assert_int_equal(get(s, "resp_1", "app"), SW_OK);
    assert_false(got.sensitive);
    struct sw_respstore_stats st;
    sw_respstore_stats(s, &st);
    assert_int_equal(st.entries, 3);
    sw_respstore_free(s);
}

static void test_scope_and_delete(void **state)
{
    (void)state;
    struct sw_respstore *s = mem(10, 1 << 20, 60);
    assert_int_equal(put(s, "resp_a", "team-a", true, "[]"), SW_OK);
    assert_int_equal(get(s, "resp_a", "team-b"), SW_ENOTFOUND); /* as if it did not exist */
    assert_int_equal(get(s, "resp_a", ""), SW_ENOTFOUND);
    assert_int_equal(del(s, "resp_a", "team-b"), SW_ENOTFOUND);
    assert_int_equal(get(s, "resp_a", "team-a"), SW_OK);
    assert_int_equal(del(s, "resp_a", "team-a"), SW_OK);
    assert_int_equal(get(s, "resp_a", "team-a"), SW_ENOTFOUND);
    assert_int_equal(del(s, "resp_a", "team-a"), SW_ENOTFOUND);
    assert_int_equal(get(s, "resp_none", "team-a"), SW_ENOTFOUND);
    assert_int_equal(get(s, NULL, "team-a"), SW_ENOTFOUND);
    char long_id[SW_RESPSTORE_MAX_ID + 2];
    memset(long_id, 'x', sizeof long_id - 1);
    long_id[sizeof long_id - 1] = '\0';
    assert_int_equal(get(s, long_id, "team-a"), SW_ENOTFOUND);
    assert_int_equal(put(s, long_id, "team-a", false, "[]"), SW_ETOOBIG);
    assert_int_equal(put(s, "", "team-a", false, "[]"), SW_EINVAL);
    struct sw_respstore_stats st;
    sw_respstore_stats(s, &st);
    assert_int_equal(st.entries, 0);
    assert_int_equal(st.bytes, 0);
    assert_int_equal(st.refused, 2);
    sw_respstore_free(s);
}

/* Another scope's put of an id never replaces the record (a backend that
 * reuses ids cannot drop another key's conversation); the same scope's does. */
static void test_other_scope_not_replaced(void **state)
{
    (void)state;
    struct sw_respstore *s = mem(10, 1 << 20, 60);
    assert_int_equal(put(s, "resp_a", "team-a", true, "[]"), SW_OK);
    assert_int_equal(put(s, "resp_a", "team-b", false, "[]"), SW_EINVAL);
    assert_int_equal(get(s, "resp_a", "team-a"), SW_OK);
    assert_true(got.sensitive);
    assert_int_equal(get(s, "resp_a", "team-b"), SW_ENOTFOUND);
    struct sw_respstore_stats st;
    sw_respstore_stats(s, &st);
    assert_int_equal(st.refused, 1);
    assert_int_equal(st.entries, 1);
    assert_int_equal(put(s, "resp_a", "team-a", false, "[]"), SW_OK);
    assert_int_equal(get(s, "resp_a", "team-a"), SW_OK);
    assert_false(got.sensitive);
    sw_respstore_free(s);
}

static void test_max_entries_oldest_first(void **state)
{
    (void)state;
    struct sw_respstore *s = mem(3, 1 << 20, 60);
    const char *ids[] = {"r1", "r2", "r3", "r4"};
    for (size_t i = 0; i < 4; i++)
        assert_int_equal(put(s, ids[i], "k", false, "[]"), SW_OK);
    assert_int_equal(get(s, "r1", "k"), SW_ENOTFOUND);
    for (size_t i = 1; i < 4; i++)
        assert_int_equal(get(s, ids[i], "k"), SW_OK);
    /* put again: r2 becomes the newest, so r3 is the oldest now */
    assert_int_equal(put(s, "r2", "k", false, "[]"), SW_OK);
    assert_int_equal(put(s, "r5", "k", false, "[]"), SW_OK);
    assert_int_equal(get(s, "r3", "k"), SW_ENOTFOUND);
    assert_int_equal(get(s, "r2", "k"), SW_OK);
    assert_int_equal(get(s, "r4", "k"), SW_OK);
    assert_int_equal(get(s, "r5", "k"), SW_OK);
    struct sw_respstore_stats st;
    sw_respstore_stats(s, &st);
    assert_int_equal(st.entries, 3);
    assert_int_equal(st.evicted, 2);
    sw_respstore_free(s);
}

static void test_max_bytes(void **state)
{
    (void)state;
    char in[1001];
    memset(in, 'a', 1000);
    in[0] = '[';
    in[999] = ']';
    in[1000] = '\0';
    const char *out = "[{\"type\":\"message\",\"id\":\"o1\"}]";
    struct sw_resp_record r = {.id = "b1", .scope = "k", .input = in, .input_len = 1000,
                               .output = out, .output_len = strlen(out)};
    size_t one = sw_resp_record_bytes(&r);
    assert_true(one > 1000);
    /* room for two records of this size, not three */
    struct sw_respstore *s = mem(100, (long)(one * 2 + one / 2), 60);
    assert_int_equal(put(s, "b1", "k", false, in), SW_OK);
    assert_int_equal(put(s, "b2", "k", false, in), SW_OK);
    struct sw_respstore_stats st;
    sw_respstore_stats(s, &st);
    assert_int_equal(st.bytes, 2 * one);
    assert_int_equal(put(s, "b3", "k", true, in), SW_OK);
    assert_int_equal(get(s, "b1", "k"), SW_ENOTFOUND);
    assert_int_equal(get(s, "b2", "k"), SW_OK);
    assert_int_equal(get(s, "b3", "k"), SW_OK);
    assert_true(got.sensitive);
    /* a record larger than the whole store: refused, nothing evicted for it */
    char *huge = malloc(one * 3);
    assert_non_null(huge);
    memset(huge, ' ', one * 3);
    huge[0] = '[';
    huge[one * 3 - 1] = ']';
    struct sw_resp_record h = {.id = "big", .scope = "k", .input = huge, .input_len = one * 3,
                               .output = "[]", .output_len = 2};
    sw_respstore_put(s, &h, on_done, NULL);
    assert_int_equal(got.err, SW_ETOOBIG);
    free(huge);
    assert_int_equal(get(s, "b2", "k"), SW_OK);
    assert_int_equal(get(s, "b3", "k"), SW_OK);
    sw_respstore_stats(s, &st);
    assert_int_equal(st.entries, 2);
    assert_int_equal(st.evicted, 1);
    assert_int_equal(st.refused, 1);
    /* smaller limits at run time: the oldest go at once */
    sw_respstore_set_limits(s, &(struct sw_respstore_limits){100, (long)(one + 10), 60});
    assert_int_equal(get(s, "b2", "k"), SW_ENOTFOUND);
    assert_int_equal(get(s, "b3", "k"), SW_OK);
    sw_respstore_set_limits(s, &(struct sw_respstore_limits){1, 1 << 20, 60});
    assert_int_equal(put(s, "b4", "k", false, "[]"), SW_OK);
    assert_int_equal(get(s, "b3", "k"), SW_ENOTFOUND);
    sw_respstore_free(s);
}

/* A store at its bound evicts for every put: each record, larger or
 * smaller than the one it evicts (written over its memory when it fits),
 * reads back exactly. */
static void test_evict_every_put(void **state)
{
    (void)state;
    struct sw_respstore *s = mem(1, 1 << 20, 60);
    const size_t sizes[] = {20000, 19000, 19500, 20001, 30000, 100, 29900, 30000, 27000};
    char in[30001], id[16];
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        size_t n = sizes[i];
        memset(in, 'a' + (int)i, n);
        in[0] = '[';
        in[n - 1] = ']';
        in[n] = '\0';
        snprintf(id, sizeof id, "e%zu", i);
        assert_int_equal(put(s, id, "k", i % 2, in), SW_OK);
        assert_int_equal(get(s, id, "k"), SW_OK);
        assert_string_equal(got.input, in);
        assert_int_equal(got.sensitive, i % 2);
        const char *out = "[{\"type\":\"message\",\"id\":\"o1\"}]"; /* as put() */
        struct sw_resp_record r = {.id = id, .scope = "k", .input = in, .input_len = n,
                                   .output = out, .output_len = strlen(out)};
        struct sw_respstore_stats st;
        sw_respstore_stats(s, &st);
        assert_int_equal(st.entries, 1);
        assert_int_equal(st.bytes, sw_resp_record_bytes(&r));
        assert_int_equal(st.evicted, i);
    }
    sw_respstore_free(s);
}

static void test_ttl(void **state)
{
    (void)state;
    struct sw_respstore *s = mem(10, 1 << 20, 10);
    assert_int_equal(put(s, "t1", "k", true, "[]"), SW_OK); /* at 1000 */
    clock_ms = 6000;
    assert_int_equal(put(s, "t2", "k", false, "[]"), SW_OK);
    clock_ms = 10999;
    assert_int_equal(get(s, "t1", "k"), SW_OK);
    clock_ms = 11000; /* t1's ten seconds are up */
    assert_int_equal(get(s, "t1", "k"), SW_ENOTFOUND);
    assert_int_equal(get(s, "t2", "k"), SW_OK);
    /* a put again starts the record's life again */
    assert_int_equal(put(s, "t2", "k", false, "[]"), SW_OK);
    clock_ms = 20999;
    assert_int_equal(get(s, "t2", "k"), SW_OK);
    clock_ms = 21000;
    assert_int_equal(del(s, "t2", "k"), SW_ENOTFOUND);
    struct sw_respstore_stats st;
    sw_respstore_stats(s, &st);
    assert_int_equal(st.entries, 0);
    assert_int_equal(st.expired, 2);
    assert_int_equal(st.evicted, 0);
    sw_respstore_free(s);
}

static void test_many(void **state)
{
    (void)state;
    struct sw_respstore *s = mem(5000, 64 << 20, 60);
    char id[32];
    for (int i = 0; i < 6000; i++) {
        snprintf(id, sizeof id, "resp_%d", i);
        assert_int_equal(put(s, id, "k", i % 2, "[]"), SW_OK);
    }
    for (int i = 0; i < 6000; i++) {
        snprintf(id, sizeof id, "resp_%d", i);
        assert_int_equal(get(s, id, "k"), i < 1000 ? SW_ENOTFOUND : SW_OK);
        if (i >= 1000)
            assert_int_equal(got.sensitive, i % 2);
    }
    sw_respstore_free(s);
}

#define ITEMS "[{\"id\":\"m1\",\"type\":\"message\"},{\"id\":\"m2\",\"type\":\"message\"}," \
              "{\"id\":\"m3\",\"type\":\"message\"}]"

static void test_input_pages(void **state)
{
    (void)state;
    char *out;
    size_t len;
    struct sw_resp_page_query q = {0};
    json_t *items = json_loads(ITEMS, 0, NULL);
    assert_int_equal(sw_resp_input_page(items, &q, &out, &len), SW_OK);
    assert_string_equal(out, "{\"object\":\"list\",\"data\":[{\"id\":\"m3\",\"type\":\"message\"},"
                             "{\"id\":\"m2\",\"type\":\"message\"},{\"id\":\"m1\",\"type\":\"message\"}],"
                             "\"first_id\":\"m3\",\"last_id\":\"m1\",\"has_more\":false}");
    free(out);
    q = (struct sw_resp_page_query){.limit = 2, .asc = true};
    assert_int_equal(sw_resp_input_page(items, &q, &out, &len), SW_OK);
    assert_non_null(strstr(out, "\"first_id\":\"m1\",\"last_id\":\"m2\",\"has_more\":true"));
    free(out);
    q = (struct sw_resp_page_query){.limit = 2, .asc = true, .after = "m2"};
    assert_int_equal(sw_resp_input_page(items, &q, &out, &len), SW_OK);
    assert_non_null(strstr(out, "\"first_id\":\"m3\",\"last_id\":\"m3\",\"has_more\":false"));
    free(out);
    q = (struct sw_resp_page_query){.after = "m1"}; /* desc: nothing after the oldest */
    assert_int_equal(sw_resp_input_page(items, &q, &out, &len), SW_OK);
    assert_string_equal(out, "{\"object\":\"list\",\"data\":[],\"first_id\":null,\"last_id\":null,"
                             "\"has_more\":false}");
    free(out);
    q = (struct sw_resp_page_query){.after = "m9"};
    assert_int_equal(sw_resp_input_page(items, &q, &out, &len), SW_EINVAL);
    assert_null(out);
    json_t *obj = json_object();
    assert_int_equal(sw_resp_input_page(obj, &(struct sw_resp_page_query){0}, &out, &len),
                     SW_EINVAL);
    json_decref(obj);
    json_decref(items);

    /* through the store: the record's input, in its scope only */
    struct sw_respstore *s = mem(10, 1 << 20, 60);
    assert_int_equal(put(s, "resp_l", "k", false, ITEMS), SW_OK);
    got.calls = 0;
    sw_resp_list_input(s, "resp_l", "k", &(struct sw_resp_page_query){.limit = 1}, on_list,
                            NULL);
    assert_int_equal(got.calls, 1);
    assert_int_equal(got.err, SW_OK);
    assert_non_null(strstr(list_json, "\"data\":[{\"id\":\"m3\""));
    assert_non_null(strstr(list_json, "\"has_more\":true"));
    sw_resp_list_input(s, "resp_l", "other", &(struct sw_resp_page_query){0}, on_list, NULL);
    assert_int_equal(got.err, SW_ENOTFOUND);
    sw_resp_list_input(s, "resp_l", "k", &(struct sw_resp_page_query){.after = "zz"}, on_list,
                            NULL);
    assert_int_equal(got.err, SW_EINVAL);
    sw_respstore_free(s);
}

#define BASE                                                                       \
    "backends:\n"                                                                  \
    "  - { name: edge, tier: local, url: \"http://127.0.0.1:8081\", model: m }\n"  \
    "models:\n"                                                                    \
    "  - { name: m, backends: [edge] }\n"

static void test_config(void **state)
{
    (void)state;
    struct sw_config *cfg = NULL;
    struct sw_config_errors errs;
    assert_int_equal(sw_config_parse("t.yaml", BASE, strlen(BASE), NULL, NULL, &cfg, &errs), SW_OK);
    assert_int_equal(cfg->responses.store_max_entries, 10000);
    assert_int_equal(cfg->responses.store_max_bytes, 67108864);
    assert_int_equal(cfg->responses.store_ttl_s, 3600);
    sw_config_unref(cfg);
    sw_config_errors_free(&errs);
    const char *set = BASE "responses:\n  store_max_entries: 50\n  store_max_bytes: 1048576\n"
                           "  store_ttl_s: 120\n";
    assert_int_equal(sw_config_parse("t.yaml", set, strlen(set), NULL, NULL, &cfg, &errs), SW_OK);
    assert_int_equal(cfg->responses.store_max_entries, 50);
    assert_int_equal(cfg->responses.store_max_bytes, 1048576);
    assert_int_equal(cfg->responses.store_ttl_s, 120);
    sw_config_unref(cfg);
    sw_config_errors_free(&errs);
    const char *bad = BASE "responses:\n  store_max_entries: 0\n  store_ttl_s: 99999999\n"
                           "  store_max_bytes: 10\n  store: yes\n";
    assert_int_equal(sw_config_parse("t.yaml", bad, strlen(bad), NULL, NULL, &cfg, &errs),
                     SW_EINVAL);
    assert_int_equal(errs.n, 4);
    assert_non_null(strstr(errs.msgs[0], "responses.store_max_entries"));
    assert_non_null(strstr(errs.msgs[1], "responses.store_ttl_s"));
    assert_non_null(strstr(errs.msgs[2], "responses.store_max_bytes"));
    assert_non_null(strstr(errs.msgs[3], "store"));
    sw_config_errors_free(&errs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_scope_and_delete),
        cmocka_unit_test(test_other_scope_not_replaced),
        cmocka_unit_test(test_max_entries_oldest_first),
        cmocka_unit_test(test_max_bytes),
        cmocka_unit_test(test_evict_every_put),
        cmocka_unit_test(test_ttl),
        cmocka_unit_test(test_many),
        cmocka_unit_test(test_input_pages),
        cmocka_unit_test(test_config),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
