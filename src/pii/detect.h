/* Internals of detect.c shared with the masking code. */
#ifndef SW_PII_DETECT_H
#define SW_PII_DETECT_H

#include "pii/pii.h"

/* Upper-case tag of a type for placeholders ("EMAIL", custom name upper-cased);
 * "PII" for an out-of-range type. */
const char *sw_pii_type_tag(const struct sw_pii_engine *e, int type);

/* The i-th built-in pattern (for the engine benchmark), NULL past the end. */
const char *sw_pii_builtin_regex(size_t i, int *caseless);

/* Tests: every candidate (pattern index, start, end) of the whole-text
 * built-ins in t, in the order found. mode 0: as a scan finds them (the
 * AVX2 pre-pass's probes where the CPU has AVX2, else the literal
 * database), 1: from the patterns' own regexes compiled with the leftmost
 * start of match (compiled on first use, not thread-safe), 2: from the
 * literal database. */
int sw_pii_text_candidates(struct sw_pii_engine *e, const char *t, size_t len, int mode,
                           void (*cb)(void *ud, unsigned pat, size_t s, size_t end), void *ud);

/* Tests: whether scans may use the AVX2 pre-pass (on only where the CPU
 * has AVX2); off, they take the SSE2 pass and the literal database. */
void sw_pii_engine_set_avx2(struct sw_pii_engine *e, int on);

#endif
