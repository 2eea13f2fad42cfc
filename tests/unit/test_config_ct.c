/* Keys are compared in constant time (the client keys of sw_config_find_key,
 * the admin key through sw_config_secret_equal). This file includes
 * src/config/config.c with its per-byte hook SW_SECRET_EQUAL_STEP defined to
 * count the bytes each compare examines: the count must be the configured
 * secret's length whatever the client sent (a mismatch in the first byte, in
 * the last, a shorter or longer key, the right key), and sw_config_find_key
 * must compare every key, also after a match.
 * What this proves: the loop has no early exit and its work depends only on
 * the secret's length (and the number of keys), at the source level. It does
 * not measure time: the compiler keeps the loop because `diff` is volatile,
 * and that is not checked here. */
static unsigned long steps;
#define SW_SECRET_EQUAL_STEP(i) ((void)(i), steps++)
#include "../../src/config/config.c"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#define SECRET "sk-admin-0123456789abcdef"

static unsigned long count_equal(const char *bearer, bool *eq)
{
    steps = 0;
    *eq = sw_config_secret_equal(SECRET, bearer);
    return steps;
}

static void test_secret_equal_examines_every_byte(void **state)
{
    (void)state;
    const unsigned long len = strlen(SECRET);
    static const char *const wrong[] = {
        "Xk-admin-0123456789abcdef",   /* first byte differs */
        "sk-admin-0123456789abcdeX",   /* last byte differs */
        "sk-admin-0123456789abcde",    /* one byte short */
        "sk-admin-0123456789abcdefX",  /* one byte long */
        "",                            /* nothing */
        "X",
        "sk-admin-0123456789abcdef-and-much-longer-than-the-secret",
    };
    bool eq;
    for (size_t i = 0; i < sizeof wrong / sizeof wrong[0]; i++) {
        assert_int_equal(count_equal(wrong[i], &eq), len);
        assert_false(eq);
    }
    assert_int_equal(count_equal(SECRET, &eq), len);
    assert_true(eq);
}

static void test_find_key_compares_every_key(void **state)
{
    (void)state;
    struct sw_config_key keys[3] = {
        {.name = "a", .key = "sk-aaaaaaaaaaaaaaaa"},
        {.name = "b", .key = "sk-bbbbbbbbbbbbbbbbbbbbbbbb"},
        {.name = "c", .key = "sk-cccc"},
    };
    struct sw_config cfg = {.keys = keys, .n_keys = 3};
    const unsigned long all = strlen(keys[0].key) + strlen(keys[1].key) + strlen(keys[2].key);
    static const char *const bearers[] = {"sk-aaaaaaaaaaaaaaaa", "Xk-aaaaaaaaaaaaaaaa",
                                          "sk-bbbbbbbbbbbbbbbbbbbbbbbb", "sk-cccc", "nope", ""};
    static const int expect[] = {0, -1, 1, 2, -1, -1};
    for (size_t i = 0; i < sizeof bearers / sizeof bearers[0]; i++) {
        steps = 0;
        const struct sw_config_key *k = sw_config_find_key(&cfg, bearers[i]);
        assert_int_equal(steps, all);   /* also when the first key matched */
        if (expect[i] < 0)
            assert_null(k);
        else
            assert_ptr_equal(k, &keys[expect[i]]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_secret_equal_examines_every_byte),
        cmocka_unit_test(test_find_key_compares_every_key),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
