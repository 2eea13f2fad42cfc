/* JSON helpers every module shares: a string's escaped form and the name of
 * a value's type in error messages. */
#ifndef SW_COMMON_JSON_H
#define SW_COMMON_JSON_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

struct json_t;

/* How sw_json_escape writes a string. With no flag: what jansson's
 * json_dumps writes, byte for byte, for valid UTF-8: '"' and '\' after a
 * backslash, \b \f \n \r \t, the other control bytes as \u00XX (upper-case
 * hex), everything else (0x7f and non-ASCII bytes included) as it is. */
enum {
    /* Every control byte as \u00xx in lower-case hex, \n and \t included
     * (the decision log's form). */
    SW_JSON_ESC_ALL_CTL = 1 << 0,
    /* A byte that does not start a valid UTF-8 sequence (common/utf8.h)
     * becomes \ufffd, together with the continuation bytes right after it:
     * the result is valid UTF-8 whatever the input. */
    SW_JSON_ESC_FIX_UTF8 = 1 << 1,
    /* Such a byte fails the call instead (what json_string does). Wins
     * over SW_JSON_ESC_FIX_UTF8. */
    SW_JSON_ESC_CHECK_UTF8 = 1 << 2,
};

/* The most bytes the escaped form of n bytes takes (each byte is at most
 * one six-byte escape). */
#define SW_JSON_ESCAPED_MAX(n) ((n) * 6)

/* Writes s[0..n), escaped as `flags` say, without quotes and without a
 * NUL, at w, which has room for SW_JSON_ESCAPED_MAX(n) bytes. Returns how
 * many bytes it wrote, SIZE_MAX when SW_JSON_ESC_CHECK_UTF8 found invalid
 * UTF-8 (what was written before is then garbage). */
size_t sw_json_escape_into(char *w, const char *s, size_t n, unsigned flags);

/* Appends s[0..n) escaped to out (no quotes). SW_OK, SW_EINVAL (invalid
 * UTF-8 under SW_JSON_ESC_CHECK_UTF8), SW_ETOOBIG or SW_ENOMEM; on an error
 * out is as it was. */
int sw_json_escape(struct sw_buf *out, const char *s, size_t n, unsigned flags);

/* The type of v as error messages name it: "an object", "an array",
 * "a string", "an integer", "a decimal" (a JSON real), "a boolean",
 * "null"; "a value" for NULL. Never NULL. */
const char *sw_json_type_name(const struct json_t *v);

#endif
