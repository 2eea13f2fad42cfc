/* A fast JSON loader for request bodies: parses with simdjson (SIMD, its DOM
 * API) and builds the same jansson tree json_loadb would, so everything that
 * reads the tree is unchanged.
 *
 * Same semantics as json_loadb(s, len, flags, err): accepts what it accepts,
 * rejects what it rejects, the same values with the same types (integers
 * that fit int64 are integers, the rest of the numbers reals). When simdjson
 * rejects the text, or meets what jansson rejects and simdjson takes (an
 * integer beyond int64, a \u0000, a duplicate key), or a flag other than
 * JSON_REJECT_DUPLICATES / JSON_DECODE_ANY, json_loadb
 * runs instead: its error (text, line, column, code) or its tree is the
 * answer, so bad input gets jansson's exact message. */
#ifndef SW_COMMON_JFAST_H
#define SW_COMMON_JFAST_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Parses len bytes of s (not necessarily NUL-terminated; borrowed). flags:
 * json_loadb's. Returns a new reference, or NULL with *err filled as
 * json_loadb fills it (err may be NULL). */
json_t *sw_json_load(const char *s, size_t len, size_t flags, json_error_t *err);

/* sw_json_load without the fallback, for tests and the differential fuzzer:
 * the tree the fast path builds, or NULL when it declines (json_loadb's
 * turn) or runs out of memory. */
json_t *sw_json_load_fast_only(const char *s, size_t len, size_t flags);

/* The fast path alone, and only when the text holds at most max_values
 * (> 0) values nested at most max_depth (> 0) deep: simdjson refuses a
 * deeper text, and a text with more than max_values structural characters
 * (every value starts at one) is declined, both before anything is built.
 * A text up to 512 KiB is parsed in memory kept per thread, a larger one in
 * memory freed when it is parsed. NULL when it declines for
 * any reason (invalid, past a bound): then the caller checks the shape and
 * sw_json_load decides; or out of memory (*oom). A request body skips its
 * separate shape pass this way. */
json_t *sw_json_load_bounded(const char *s, size_t len, size_t flags, size_t max_values,
                             size_t max_depth, bool *oom);

#ifdef __cplusplus
}
#endif

#endif
