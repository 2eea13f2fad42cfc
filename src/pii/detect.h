/* Internals of detect.c shared with the masking code. */
#ifndef SW_PII_DETECT_H
#define SW_PII_DETECT_H

#include "pii/pii.h"

/* Upper-case tag of a type for placeholders ("EMAIL", custom name upper-cased);
 * "PII" for an out-of-range type. */
const char *sw_pii_type_tag(const struct sw_pii_engine *e, int type);

/* The i-th built-in pattern (for the engine benchmark), NULL past the end. */
const char *sw_pii_builtin_regex(size_t i, int *caseless);

#endif
