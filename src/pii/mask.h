/* Internals of mask.c shared with the streaming unmasker. */
#ifndef SW_PII_MASK_H
#define SW_PII_MASK_H

#include <jansson.h>
#include <stddef.h>

#include "common/buf.h"
#include "pii/pii.h"

/* Where a streamed text must stop being emitted: the offset of a trailing
 * '[' followed only by placeholder characters and short enough to still
 * become a placeholder; len when nothing needs holding (always with an empty
 * map). */
size_t sw_pii_hold_from(const struct sw_pii_map *m, const char *t, size_t len);
/* Unmasks a JSON string value in place using buf as scratch. */
int sw_pii_unmask_string(const struct sw_pii_map *m, json_t *str, int json_text,
                         struct sw_buf *buf);

/* Length of the placeholder starting at t[i] == '[' (']' included), or 0. */
size_t sw_pii_ph_len_at(const char *t, size_t len, size_t i);

#endif
