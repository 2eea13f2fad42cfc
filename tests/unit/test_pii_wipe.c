/* The PII map is wiped before it is freed: every value buffer is all zero
 * bytes when it reaches free(), and no freed block still holds a value.
 * Linked with -Wl,--wrap=free (Makefile), so every free() call in the daemon's
 * code (libspillway.a) goes through __wrap_free below, which inspects the
 * block before handing it to the real free(). */
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
#include "pii/map.h"
#include "pii/pii.h"

#define N_VALUES 40   /* more than the first entry array (16): it grows twice */
#define MARKER "xq7SECRETzv"

void __real_free(void *p);

static struct {
    bool on;
    const void *value[N_VALUES];
    size_t vlen[N_VALUES];
    int freed_zero, freed_dirty;     /* tracked value buffers reaching free() */
    int blocks_with_marker;          /* any freed block still holding a value */
} w;

void __wrap_free(void *p)
{
    if (w.on && p) {
        for (int i = 0; i < N_VALUES; i++) {
            if (p != w.value[i])
                continue;
            bool zero = true;
            for (size_t k = 0; k < w.vlen[i]; k++)
                zero = zero && ((const unsigned char *)p)[k] == 0;
            if (zero)
                w.freed_zero++;
            else
                w.freed_dirty++;
        }
        size_t n = malloc_usable_size(p);
        if (memmem(p, n, MARKER, strlen(MARKER)))
            w.blocks_with_marker++;
    }
    __real_free(p);
}

static void test_map_wiped_before_free(void **state)
{
    (void)state;
    struct sw_pii_map *m = sw_pii_map_new();
    assert_non_null(m);
    char v[64];
    for (int i = 0; i < N_VALUES; i++) {
        int n = snprintf(v, sizeof v, "user%02d." MARKER "@example.com", i);
        const char *ph;
        size_t phl, vl;
        assert_int_equal(sw_pii_map_put(m, SW_PII_EMAIL, "EMAIL", v, (size_t)n, &ph, &phl), SW_OK);
        /* The map's own copy: sw_pii_map_get returns a pointer into it. */
        w.value[i] = sw_pii_map_get(m, ph, phl, &vl);
        assert_non_null(w.value[i]);
        assert_int_equal(vl, (size_t)n);
        assert_memory_equal(w.value[i], v, vl);
        w.vlen[i] = vl;
    }
    /* A growth of the entry array already happened (16 -> 32 -> 64): the
     * placeholders it held are wiped too; the values live in their own blocks. */
    w.on = true;
    sw_pii_map_free(m);
    w.on = false;
    assert_int_equal(w.freed_dirty, 0);
    assert_int_equal(w.freed_zero, N_VALUES);   /* every value buffer went through free() */
    assert_int_equal(w.blocks_with_marker, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_map_wiped_before_free),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
