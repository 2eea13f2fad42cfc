/* Helpers shared by the request translators (anth_req.c, oai_req.c,
 * bedrock.c, gemini_req.c).
 * Internal to src/dialect. */
#ifndef SW_DIALECT_REQ_UTIL_H
#define SW_DIALECT_REQ_UTIL_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "request/request.h"

/* JSON paths of offending fields are cut to fit their buffers on purpose
 * (the error's param holds 128 bytes anyway). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wformat-truncation"
#endif

/* A 400 naming `param`; jumps to the function's `fail` label. */
#define BAD(param, ...)                                                                \
    do {                                                                               \
        sw_request_error_set(err, 400, "invalid_request_error", "invalid_value", param, \
                             __VA_ARGS__);                                             \
        goto fail;                                                                     \
    } while (0)

/* A field that is valid Anthropic but has no OpenAI form. */
#define NOPE(param, ...)                                                                  \
    do {                                                                                  \
        sw_request_error_set(err, 400, "invalid_request_error", "untranslatable", param, \
                             __VA_ARGS__);                                                \
        goto fail;                                                                        \
    } while (0)

/* What an element of a body's top-level array becomes in another API's
 * form: the values `build` appends to `to`; ctx: what else it is given
 * (where the element is, for an error's path). */
typedef int (*sw_dialect_build_fn)(json_t *to, const json_t *el, const void *ctx,
                                   struct sw_request_error *err);

/* Appends to `to` what el becomes: the values derived from it under key
 * before, when the parse memo holds it (common/jmemo.h: an agent's
 * resent message is translated once), else what build appends, then kept
 * with it. A translation that build writes must depend on el alone and be
 * left unchanged after (later values may not edit it): shared values are
 * read by every request that resends el. */
int sw_dialect_derived(json_t *to, const json_t *el, uint64_t key, sw_dialect_build_fn build,
                       const void *ctx, struct sw_request_error *err);

/* Whether err refuses the element at path p ("input[3]", "tools[0]") for
 * its type (it goes whole or not at all), not something inside it. */
bool sw_dialect_type_refused(const struct sw_request_error *err, const char *p);

/* For an edit of a body that may share its values with others (the parse
 * memo's, never changed): the member `key` of obj, or element i of arr,
 * replaced by a shallow copy of its own (obj and arr the caller's own). The
 * copy, or NULL (none there, out of memory). Copying only the path to what
 * is edited leaves the rest shared, and what the memo keeps with it
 * (translations, verdicts) still found. */
json_t *sw_dialect_own_member(json_t *obj, const char *key);
json_t *sw_dialect_own_element(json_t *arr, size_t i);

/* A member of an object being built: its key (a constant) and its value. */
struct sw_member {
    const char *key;
    json_t *v;
};
/* An object of the n members m[i], each value taken: a translation's hot
 * path (json_pack parses its format, copies and checks every string it is
 * given). NULL when a value is NULL or memory runs out; every value is
 * released then. SW_DIALECT_OBJECT({"role", v}, {"content", c}) counts them. */
json_t *sw_dialect_object(const struct sw_member *m, size_t n);
#define SW_DIALECT_OBJECT(...)                                                       \
    sw_dialect_object((const struct sw_member[]){__VA_ARGS__},                     \
                      sizeof((const struct sw_member[]){__VA_ARGS__}) / sizeof(struct sw_member))
/* A JSON string of s, which is valid UTF-8 without NUL (a constant, a text
 * of a parsed body, what sw_json_dumps wrote of one): not checked again. */
json_t *sw_dialect_str(const char *s);

/* Fills *err with a 500 out of memory; returns SW_ENOMEM. */
int sw_dialect_oom(struct sw_request_error *err);
bool sw_dialect_is_num(const json_t *v);
/* Text of a string or of an array of text blocks, joined with "\n"; NULL
 * (and *bad set to the offending index, or -1 for the type) otherwise.
 * Malloc'ed. */
char *sw_dialect_joined_text(const json_t *v, long *bad);
/* The "type" of a block or part, "" when it has none. */
const char *sw_dialect_type_of(const json_t *blk);
/* The url of an OpenAI image_url part (a string, or an object with "url");
 * NULL when it has none. */
const char *sw_dialect_image_url(const json_t *part);
/* A base64 data: URL ("data:<media type>;base64,<data>"): 1 with its media
 * type copied to mt (cap bytes) and *data at the payload; 0 when url is no
 * data: URL or not base64; -1 when its media type is empty or does not fit. */
int sw_dialect_data_url(const char *url, char *mt, size_t cap, const char **data);
/* A 400 (untranslatable) for the first member of `in` that is neither null
 * nor one of known[0..n): it has no counterpart in `api` (the chosen
 * backend's API, e.g. "Bedrock's Converse API") and is refused rather than
 * dropped. SW_OK when every member is known. */
int sw_dialect_known_members(const json_t *in, const char *const *known, size_t n,
                             const char *api, struct sw_request_error *err);

#endif
