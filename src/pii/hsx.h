/* vectorscan's block scan and compile, on the code path that reports every
 * match.
 *
 * Debian 12's vectorscan 5.4.9 is built as a fat runtime: hs_scan picks an
 * implementation by CPU at run time, and on CPUs with AVX-512 its AVX-512
 * scan misses short patterns ("E[0-9]{6}", "@[a-z]", "[0-9]{3}-[0-9]{2}")
 * that start 64 bytes or more into the text (tests/unit/test_pii_offsets
 * shows it). A missed match is a value that reaches the cloud, so where the
 * library exports its AVX2 scan and the CPU has AVX2, that one runs instead,
 * on databases compiled for the same CPU without its AVX-512 features.
 * Elsewhere (no AVX2, or a library without the fat runtime's exports) these
 * are hs_scan and the host's platform. Pure: no I/O. */
#ifndef SW_PII_HSX_H
#define SW_PII_HSX_H

#include <hs/hs.h>
#include <stdbool.h>

/* The fat runtime's AVX2 scan; NULL when the library has no such export. */
extern hs_error_t avx2_hs_scan(const hs_database_t *db, const char *data, unsigned length,
                               unsigned flags, hs_scratch_t *scratch,
                               match_event_handler on_event, void *context)
    __attribute__((weak));

static inline bool sw_hsx_avx2(void)
{
    return avx2_hs_scan && __builtin_cpu_supports("avx2");
}

/* The platform to compile for: the host's, without AVX-512 when the AVX2
 * scan is used. Returns p, or NULL (the host) when it cannot be read. */
static inline const hs_platform_info_t *sw_hsx_platform(hs_platform_info_t *p)
{
    if (hs_populate_platform(p) != HS_SUCCESS)
        return NULL;
    if (sw_hsx_avx2())
        p->cpu_features &= ~(unsigned long long)(HS_CPU_FEATURES_AVX512 | HS_CPU_FEATURES_AVX512VBMI);
    return p;
}

static inline hs_error_t sw_hsx_scan(const hs_database_t *db, const char *data, unsigned length,
                                     hs_scratch_t *scratch, match_event_handler on_event,
                                     void *context)
{
    if (sw_hsx_avx2())
        return avx2_hs_scan(db, data, length, 0, scratch, on_event, context);
    return hs_scan(db, data, length, 0, scratch, on_event, context);
}

#endif
