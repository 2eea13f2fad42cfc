/* The memory response store wipes a record before freeing it: whichever way
 * a record goes (delete, replacement, eviction by either bound, the TTL,
 * the store freed), no block reaching free() still holds stored content.
 * Linked with -Wl,--wrap=free (Makefile), as test_pii_wipe. */
#include <malloc.h>
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
#include "state/respstore.h"

#define MARKER "xq7STOREDzv"

void __real_free(void *p);

static struct {
    bool on;
    int blocks_with_marker;
    int blocks;
} w;

void __wrap_free(void *p)
{
    if (w.on && p) {
        w.blocks++;
        if (memmem(p, malloc_usable_size(p), MARKER, strlen(MARKER)))
            w.blocks_with_marker++;
    }
    __real_free(p);
}

static int64_t clock_ms;
static int64_t now(void *ud)
{
    (void)ud;
    return clock_ms;
}

static void on_done(int err, void *ud)
{
    *(int *)ud = err;
}

/* A record with the marker in every field; a big one (an agent's
 * conversation, wiped another way than a small one) has it at both ends of
 * a 64 KiB input as well. */
static void put_sized(struct sw_respstore *s, const char *id, bool big)
{
    static char in[65536];
    const char *small = "[{\"content\":\"" MARKER "\"}]", *out = "[\"" MARKER "\"]";
    size_t in_len = big ? sizeof in : strlen(small);
    if (big) {
        memset(in, 'x', sizeof in);
        memcpy(in, small, strlen(small) - 3);                   /* [{"content":"MARKER */
        memcpy(in + sizeof in - strlen(MARKER) - 3, MARKER "\"}]", strlen(MARKER) + 3);
    } else {
        memcpy(in, small, in_len);
    }
    struct sw_resp_record r = {.id = id, .scope = "k", .sensitive = true, .input = in,
                               .input_len = in_len, .output = out, .output_len = strlen(out),
                               .meta = "{\"m\":\"" MARKER "\"}", .meta_len = 19};
    int err = -1;
    sw_respstore_put(s, &r, on_done, &err);
    assert_int_equal(err, SW_OK);
}

static bool big_records;
static void put(struct sw_respstore *s, const char *id)
{
    put_sized(s, id, big_records);
}

static void test_wiped(void **state)
{
    big_records = *state != NULL;
    clock_ms = 0;
    w.blocks = w.blocks_with_marker = 0;
    struct sw_respstore *s =
        sw_respstore_memory_new(&(struct sw_respstore_limits){3, 1 << 20, 10}, now, NULL);
    assert_non_null(s);
    w.on = true;
    put(s, "a");
    put(s, "a");                /* replaced */
    put(s, "b");
    put(s, "c");
    put(s, "d");                /* a evicted (entries) */
    int err = -1;
    sw_respstore_delete(s, "b", "k", on_done, &err); /* deleted */
    assert_int_equal(err, SW_OK);
    /* room for one record: c evicted (bytes) */
    sw_respstore_set_limits(s, &(struct sw_respstore_limits){3, big_records ? 70000 : 200, 10});
    clock_ms = 10000;
    sw_respstore_delete(s, "zz", "k", on_done, &err); /* d expired on the way */
    assert_int_equal(err, SW_ENOTFOUND);
    put(s, "e");
    sw_respstore_free(s);       /* e freed with the store */
    w.on = false;
    assert_true(w.blocks >= 6);
    assert_int_equal(w.blocks_with_marker, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_prestate(test_wiped, NULL),
        cmocka_unit_test_prestate(test_wiped, (void *)"big"),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
