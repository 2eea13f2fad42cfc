/* A zero-allocation JSON scanner for the hot path: checks that a text is
 * one well-formed JSON object and finds where the values of a few top-level
 * keys are, so the relay can rewrite `model` and read `usage` by splicing
 * bytes instead of building and re-serialising a whole tree (jansson stays
 * for everything that needs the tree: validation of requests, masking).
 *
 * Syntax is checked as RFC 8259 has it: strings (escapes, no raw control
 * characters, valid UTF-8), numbers, literals, nesting up to
 * SW_JSCAN_MAX_DEPTH. Keys are matched byte for byte against their text
 * between the quotes (a key written with escapes does not match). */
#ifndef SW_COMMON_JSCAN_H
#define SW_COMMON_JSCAN_H

#include <stdbool.h>
#include <stddef.h>

#define SW_JSCAN_MAX_DEPTH 64

/* Where a value is in the text: [off, off + len). len 0: the key is absent. */
struct sw_jspan {
    size_t off, len;
};

/* Scans len bytes of text. For each of the n keys, spans[i] gets the value
 * of the first top-level member named keys[i], and members[i] (when members
 * is not NULL) the whole member from the key's opening quote to the value's
 * end. Returns true when the text is one well-formed JSON object
 * (whitespace around it allowed) in which none of the keys occurs twice. */
bool sw_jscan_object(const char *text, size_t len, const char *const *keys,
                     struct sw_jspan *spans, struct sw_jspan *members, size_t n);

/* The same spans for a text already known to be well-formed JSON (a request
 * body its parser accepted): the syntax is not checked again, so little more
 * than the quotes and brackets are looked at. Returns false when the text is
 * not an object or a key occurs twice; on a text that is not well-formed
 * JSON the spans are meaningless (never read out of bounds). */
bool sw_jscan_members(const char *text, size_t len, const char *const *keys,
                      struct sw_jspan *spans, struct sw_jspan *members, size_t n);

/* The span of a member together with the comma that separates it from its
 * neighbour, so that cutting it leaves a well-formed object. */
struct sw_jspan sw_jscan_cut(const char *text, size_t len, struct sw_jspan member);

/* Whether a value span is an empty array ("[]", spaces allowed inside). */
bool sw_jscan_empty_array(const char *text, struct sw_jspan span);

/* The value of a JSON integer span (digits, optional '-'), or -1 when it is
 * not a non-negative integer that fits in a long. */
long sw_jscan_long(const char *text, struct sw_jspan span);

/* The raw steps sw_jscan_members takes over a text known to be
 * well-formed, for a caller that walks one itself. On any text they stay
 * within [p, end); on one that is not well-formed their answers are
 * meaningless. Past the closing quote of a string whose content starts at
 * p (NULL: none); past the whitespace at p; past the value starting at p
 * (NULL: the text ends first). */
const unsigned char *sw_jscan_skip_string(const unsigned char *p, const unsigned char *end);
const unsigned char *sw_jscan_skip_ws(const unsigned char *p, const unsigned char *end);
const unsigned char *sw_jscan_skip_value(const unsigned char *p, const unsigned char *end);

#endif
