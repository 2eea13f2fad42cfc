/* jansson's allocator (common/jalloc.c): small blocks come back from a
 * per-thread cache, bounded per size class; every block stays a malloc
 * block, so what jansson hands out (json_dumps) is released with free();
 * jansson trees built and freed through it stay intact. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "common/jalloc.h"

/* A freed small block is handed out again for any request of its class. */
static void test_jalloc_reuse(void **state)
{
    (void)state;
    size_t before = sw_jalloc_cached();
    char *a = sw_jalloc_malloc(40);
    assert_non_null(a);
    memset(a, 'x', 40);
    sw_jalloc_free(a);
    assert_int_equal(sw_jalloc_cached(), before + 1);
    char *b = sw_jalloc_malloc(25);     /* same class as 40 (25..40) */
    assert_ptr_equal(a, b);
    assert_int_equal(sw_jalloc_cached(), before);
    memset(b, 'y', 40);                 /* the whole class is usable */
    sw_jalloc_free(b);
    void *z = sw_jalloc_malloc(0);
    assert_non_null(z);
    sw_jalloc_free(z);
    sw_jalloc_free(NULL);
}

/* At most SW_JALLOC_KEEP blocks per class are kept; a large block is not
 * one of them (test_jalloc_big). */
static void test_jalloc_bounded(void **state)
{
    (void)state;
    enum { N = SW_JALLOC_KEEP + 50 };
    void **v = malloc(N * sizeof *v);
    assert_non_null(v);
    for (int i = 0; i < N; i++)
        assert_non_null(v[i] = sw_jalloc_malloc(200));
    size_t before = sw_jalloc_cached();
    for (int i = 0; i < N; i++)
        sw_jalloc_free(v[i]);
    assert_true(sw_jalloc_cached() - before <= SW_JALLOC_KEEP);
    assert_true(sw_jalloc_cached() - before >= SW_JALLOC_KEEP - 50);
    before = sw_jalloc_cached();
    char *big = sw_jalloc_malloc(SW_JALLOC_MAX_SMALL + 100);
    assert_non_null(big);
    memset(big, 1, SW_JALLOC_MAX_SMALL + 100);
    sw_jalloc_free(big);
    assert_int_equal(sw_jalloc_cached(), before);
    free(v);
}

/* Trees built and freed through the allocator: the same text comes back,
 * and json_dumps's string (allocated through it) is released with free(). */
static void test_jalloc_jansson(void **state)
{
    (void)state;
    int installed = sw_jalloc_install();
    const char *text = "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hello there\"}],"
                       "\"max_tokens\":64,\"temperature\":0.5,\"stream\":false}";
    for (int i = 0; i < 200; i++) {
        json_error_t err;
        json_t *j = json_loads(text, 0, &err);
        assert_non_null(j);
        json_object_set_new(j, "n", json_integer(i));
        char *s = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
        assert_non_null(s);
        assert_non_null(strstr(s, "\"content\":\"hello there\""));
        free(s);
        json_decref(j);
    }
    if (installed)
        assert_true(sw_jalloc_cached() > 0);
}

/* A freed large block is handed out again for a request of its class, up
 * to the size it was asked with; past SW_JALLOC_MAX_BIG nothing is kept;
 * all the kept blocks together stay within SW_JALLOC_KEEP_BYTES. */
static void test_jalloc_big(void **state)
{
    (void)state;
    size_t before = sw_jalloc_cached_bytes();
    char *a = sw_jalloc_malloc(3000);
    assert_non_null(a);
    memset(a, 'x', 3000);
    sw_jalloc_free(a);
    assert_true(sw_jalloc_cached_bytes() >= before + 3000);
    char *b = sw_jalloc_malloc(4000);   /* the same power-of-two class (up to 4088) */
    assert_ptr_equal(a, b);
    memset(b, 'y', 4088);
    assert_int_equal(sw_jalloc_cached_bytes(), before);
    sw_jalloc_free(b);
    char *huge = sw_jalloc_malloc(SW_JALLOC_MAX_BIG + 1);
    assert_non_null(huge);
    memset(huge, 1, SW_JALLOC_MAX_BIG + 1);
    size_t mid = sw_jalloc_cached_bytes();
    sw_jalloc_free(huge);
    assert_int_equal(sw_jalloc_cached_bytes(), mid);

    enum { N = 2 * SW_JALLOC_KEEP_BYTES / SW_JALLOC_MAX_BIG };
    void **v = malloc(N * sizeof *v);
    assert_non_null(v);
    for (int i = 0; i < N; i++)
        assert_non_null(v[i] = sw_jalloc_malloc(SW_JALLOC_MAX_BIG));
    for (int i = 0; i < N; i++)
        sw_jalloc_free(v[i]);
    assert_true(sw_jalloc_cached_bytes() <= SW_JALLOC_KEEP_BYTES);
    assert_true(sw_jalloc_cached_bytes() > SW_JALLOC_KEEP_BYTES - SW_JALLOC_MAX_BIG);
    for (int i = 0; i < N; i++)         /* everything kept is handed out again */
        assert_non_null(v[i] = sw_jalloc_malloc(SW_JALLOC_MAX_BIG));
    for (int i = 0; i < N; i++)
        free(v[i]);                     /* plain malloc blocks */
    free(v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_jalloc_reuse),
        cmocka_unit_test(test_jalloc_bounded),
        cmocka_unit_test(test_jalloc_jansson),
        cmocka_unit_test(test_jalloc_big),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
