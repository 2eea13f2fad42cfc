/* The prefix-affinity table (route/affinity.h): longest match per backend,
 * TTL, LRU eviction at the bound, and the two boundaries a served request
 * leaves. A fake clock (now_ms) throughout. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "common/err.h"
#include "route/affinity.h"

/* A chain of n boundaries: hash base + k, 100 tokens per block. */
static struct sw_prefix chain(uint64_t base, size_t n)
{
    struct sw_prefix p = {0};
    for (size_t k = 0; k < n; k++) {
        p.hash[k] = base + k;
        p.tokens[k] = (long)(k + 1) * 100;
    }
    p.n = n;
    return p;
}

static void test_longest_match(void **state)
{
    (void)state;
    struct sw_affinity t;
    assert_int_equal(sw_affinity_init(&t, 64, 60000), SW_OK);
    uint64_t a = sw_affinity_backend_id("L1"), b = sw_affinity_backend_id("L2");
    assert_true(a != b);
    assert_true(a == sw_affinity_backend_id("L1"));
    struct sw_prefix turn1 = chain(1000, 3), turn2 = chain(1000, 5);
    assert_int_equal(sw_affinity_match(&t, &turn2, a, 0), 0);     /* empty */
    sw_affinity_put_prefix(&t, &turn1, a, 0);    /* block 0 and the whole turn */
    assert_int_equal(sw_affinity_size(&t), 2);
    /* the next turn extends the first: its third boundary is held by L1 */
    assert_int_equal(sw_affinity_match(&t, &turn2, a, 10), 300);
    assert_int_equal(sw_affinity_match(&t, &turn2, b, 10), 0);    /* per backend */
    /* L2 holds only block 0 (another conversation with the same system prompt) */
    struct sw_prefix other = chain(1000, 1);
    sw_affinity_put_prefix(&t, &other, b, 20);
    assert_int_equal(sw_affinity_match(&t, &turn2, b, 30), 100);
    /* a diverged history (block 1 differs) matches block 0 only */
    struct sw_prefix fork = chain(1000, 4);
    fork.hash[1] = 77, fork.hash[2] = 78, fork.hash[3] = 79;
    assert_int_equal(sw_affinity_match(&t, &fork, a, 30), 100);
    /* the held tokens never exceed the request's at that boundary */
    sw_affinity_put(&t, 5000, a, 999999, 30);
    struct sw_prefix small = {.hash = {5000}, .tokens = {40}, .n = 1};
    assert_int_equal(sw_affinity_match(&t, &small, a, 31), 40);
    /* no identity: nothing */
    struct sw_prefix none = {0};
    assert_int_equal(sw_affinity_match(&t, &none, a, 31), 0);
    sw_affinity_free(&t);
}

static void test_ttl(void **state)
{
    (void)state;
    struct sw_affinity t;
    assert_int_equal(sw_affinity_init(&t, 16, 1000), SW_OK);
    uint64_t a = sw_affinity_backend_id("L1");
    struct sw_prefix p = chain(1, 2);
    sw_affinity_put_prefix(&t, &p, a, 0);
    assert_int_equal(sw_affinity_match(&t, &p, a, 1000), 200);    /* at the TTL: still held */
    /* the match did not refresh it: only a put does (the box served it again) */
    assert_int_equal(sw_affinity_match(&t, &p, a, 1001), 0);
    assert_int_equal(sw_affinity_size(&t), 0);                     /* dropped on the way */
    assert_true(t.expired == 2);
    sw_affinity_put_prefix(&t, &p, a, 2000);
    sw_affinity_put_prefix(&t, &p, a, 2900);                       /* refreshed */
    assert_int_equal(sw_affinity_match(&t, &p, a, 3800), 200);
    /* ttl <= 0: forever */
    assert_int_equal(sw_affinity_reset(&t, 16, 0), SW_OK);
    sw_affinity_put_prefix(&t, &p, a, 0);
    assert_int_equal(sw_affinity_match(&t, &p, a, INT64_MAX / 2), 200);
    sw_affinity_free(&t);
}

static void test_eviction(void **state)
{
    (void)state;
    struct sw_affinity t;
    assert_int_equal(sw_affinity_init(&t, 4, 0), SW_OK);
    assert_int_equal(sw_affinity_oldest_ms(&t), -1);
    uint64_t a = sw_affinity_backend_id("L1");
    for (uint64_t h = 1; h <= 4; h++)
        sw_affinity_put(&t, h, a, (long)h, (int64_t)h);
    assert_int_equal(sw_affinity_size(&t), 4);
    /* a look-up leaves the order alone; serving hash 1 again makes it most
     * recent: hash 2 is now the least recent */
    struct sw_prefix one = {.hash = {1}, .tokens = {10}, .n = 1};
    struct sw_prefix two0 = {.hash = {2}, .tokens = {10}, .n = 1};
    assert_int_equal(sw_affinity_match(&t, &two0, a, 5), 2);
    sw_affinity_put(&t, 1, a, 1, 5);
    sw_affinity_put(&t, 5, a, 5, 6);
    assert_int_equal(sw_affinity_size(&t), 4);
    assert_true(t.evicted == 1);
    assert_int_equal(sw_affinity_oldest_ms(&t), 3);   /* hash 3, the next to go */
    struct sw_prefix two = {.hash = {2}, .tokens = {10}, .n = 1};
    assert_int_equal(sw_affinity_match(&t, &two, a, 7), 0);       /* evicted */
    assert_int_equal(sw_affinity_match(&t, &one, a, 7), 1);
    for (uint64_t h = 3; h <= 5; h++) {
        struct sw_prefix q = {.hash = {h}, .tokens = {10}, .n = 1};
        assert_int_equal(sw_affinity_match(&t, &q, a, 7), (long)h);
    }
    /* many more than the bound, with collisions: the table stays bounded
     * and the latest entries are found */
    for (uint64_t h = 100; h < 10100; h++)
        sw_affinity_put(&t, h * 16, a, 1, 8);
    assert_int_equal(sw_affinity_size(&t), 4);
    struct sw_prefix last = {.hash = {10099 * 16}, .tokens = {10}, .n = 1};
    assert_int_equal(sw_affinity_match(&t, &last, a, 9), 1);
    /* a bound of 0 is one entry */
    assert_int_equal(sw_affinity_reset(&t, 0, 0), SW_OK);
    sw_affinity_put(&t, 1, a, 1, 0);
    sw_affinity_put(&t, 2, a, 2, 0);
    assert_int_equal(sw_affinity_size(&t), 1);
    assert_int_equal(sw_affinity_match(&t, &two, a, 1), 2);
    sw_affinity_free(&t);
    /* a freed (or never initialised) table holds nothing */
    sw_affinity_put(&t, 1, a, 1, 0);
    assert_int_equal(sw_affinity_match(&t, &one, a, 0), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_longest_match),
        cmocka_unit_test(test_ttl),
        cmocka_unit_test(test_eviction),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
