/* The verdicts of one walk's texts by the string each was read from, for a
 * second walk right after it over a tree that shares those strings: the
 * translation of the same request, built from it (sw_pii_scan_pair). A
 * string met again, in the same mode, is the same bytes (the same json_t,
 * and neither tree changes between the two walks): its spans are replayed
 * instead of being looked for again (no digest, no lock, no scan). Only the
 * spans are held (offsets, lengths, types), never text, and only for the
 * two walks. Used by walk.c. Pure: no I/O, no clock. */
#ifndef SW_PII_MEMO_H
#define SW_PII_MEMO_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pii/pii.h"

struct sw_pii_memo_ent {
    const json_t *str;          /* NULL: a free slot */
    uint32_t first, n;          /* its spans: sp[first .. first + n) */
    bool json;                  /* read as JSON text */
};

struct sw_pii_memo {
    struct sw_pii_memo_ent *tab;
    size_t cap, used;           /* cap: a power of two, or 0 */
    struct sw_pii_span *sp;
    size_t n_sp, cap_sp;
    bool full;                  /* memory ran out: nothing more is recorded */
};

/* An empty memo (nothing allocated until something is recorded). */
void sw_pii_memo_init(struct sw_pii_memo *m);
void sw_pii_memo_free(struct sw_pii_memo *m);

/* Appends one span of the text being recorded; false when memory ran out
 * (the memo is then full: the text is not recorded). */
bool sw_pii_memo_span(struct sw_pii_memo *m, const struct sw_pii_span *sp);

/* Records that str (read as JSON text when json) holds the spans
 * sp[first .. m->n_sp), appended by sw_pii_memo_span since first. Nothing
 * when the memo is full or memory runs out. */
void sw_pii_memo_put(struct sw_pii_memo *m, const json_t *str, bool json, size_t first);

/* The entry for str read in mode json, or NULL. */
const struct sw_pii_memo_ent *sw_pii_memo_get(const struct sw_pii_memo *m, const json_t *str,
                                              bool json);

#endif
