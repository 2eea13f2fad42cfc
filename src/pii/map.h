/* The per-request map value <-> placeholder (struct sw_pii_map, see pii.h).
 * Two open-addressing indexes (by value, by placeholder) over one bounded
 * entry array; reserved placeholders (already present in the request text)
 * are entries without a value, so they are never issued nor restored. */
#ifndef SW_PII_MAP_H
#define SW_PII_MAP_H

#include <stddef.h>

#include "pii/pii.h"

/* Placeholder grammar: '[' [A-Z0-9_]{1,} ']' , at most SW_PII_MAX_PLACEHOLDER bytes. */
static inline int sw_pii_ph_char(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* The placeholder of value (copied) of type; the same value always gets the
 * same placeholder. *ph points into the map (valid until it is freed).
 * SW_ETOOBIG past the bounds, SW_ENOMEM. */
int sw_pii_map_put(struct sw_pii_map *m, int type, const char *tag, const char *value,
                   size_t vlen, const char **ph, size_t *phlen);
/* Marks a placeholder-shaped text found in the input as never to be issued. */
int sw_pii_map_reserve(struct sw_pii_map *m, const char *ph, size_t phlen);
/* The value of an issued placeholder, or NULL (unknown or reserved). */
const char *sw_pii_map_get(const struct sw_pii_map *m, const char *ph, size_t phlen,
                           size_t *vlen);

#endif
