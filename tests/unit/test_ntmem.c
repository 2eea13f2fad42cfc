/* Streaming copies and wipes (common/ntmem.c): the same bytes as memcpy
 * and a zeroing, at every alignment and length around the sizes where the
 * streamed path starts, nothing written outside the region. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/ntmem.h"

#define PAD 64

static void check_region(const unsigned char *buf, size_t off, size_t n, size_t total,
                         const unsigned char *want)
{
    for (size_t i = 0; i < off; i++)
        assert_int_equal(buf[i], 0xA5);
    assert_memory_equal(buf + off, want, n);
    for (size_t i = off + n; i < total; i++)
        assert_int_equal(buf[i], 0xA5);
}

static void test_copy_and_wipe(void **state)
{
    (void)state;
    const size_t lens[] = {0, 1, 15, 16, 63, 64, 4095, 4096, 4097, 4160, 65537, 358 * 1024 + 7};
    size_t max = 358 * 1024 + 7 + 2 * PAD;
    unsigned char *buf = malloc(max), *src = malloc(max), *zero = calloc(1, max);
    assert_non_null(buf);
    assert_non_null(src);
    assert_non_null(zero);
    for (size_t i = 0; i < max; i++)
        src[i] = (unsigned char)(i * 131 + 7);
    for (size_t l = 0; l < sizeof lens / sizeof *lens; l++) {
        for (size_t off = 0; off < 17; off += 3) {
            size_t total = lens[l] + off + PAD;
            memset(buf, 0xA5, total);
            sw_nt_copy(buf + off, src + (off * 5) % 16, lens[l]);
            check_region(buf, off, lens[l], total, src + (off * 5) % 16);
            memset(buf, 0xA5, total);
            memset(buf + off, 0x3C, lens[l]);
            sw_nt_wipe(buf + off, lens[l]);
            check_region(buf, off, lens[l], total, zero);
        }
    }
    free(buf);
    free(src);
    free(zero);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_copy_and_wipe),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
