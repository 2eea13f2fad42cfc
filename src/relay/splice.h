/* The spliced fast path: when no stage needs a tree (an OpenAI client, an
 * OpenAI backend, nothing to unmask, no contract; and every embeddings
 * answer), the answer and each stream event are edited as bytes (`model`
 * rewritten, the usage Spillway asked for on the client's behalf cut, usage
 * read) without building a jansson tree. The same byte helpers build a
 * spliced request body (relay/body.c). */
#ifndef SW_RELAY_SPLICE_H
#define SW_RELAY_SPLICE_H

#include <stdbool.h>
#include <stddef.h>

#include "common/jscan.h"
#include "relay/stage.h"

struct sw_splice_stage {
    const char *public_model_json;  /* the public model as a JSON string (borrowed); NULL:
                                     * out of memory */
    bool client_wants_usage;
    bool embeddings;                /* the answer carries "data", not "choices" */
};

/* event (one event edited into io->out), end ([DONE]), answer (edited in
 * place in io->answer_text: io->reply points into it, or at reply_owned). */
extern const struct sw_stage_ops sw_splice_ops;

/* `s` as a JSON string, quotes included, byte for byte as jansson's
 * json_dumps writes it, without building a jansson value. NULL when s is
 * not valid UTF-8 (json_string refuses it too) or out of memory; the caller
 * frees the result. */
char *sw_splice_quote(const char *s);

/* `text` with the value at `at` replaced by `with` (at.len 0: `with` is
 * inserted as a new first member `"key":with,`), malloc'ed, its length in
 * *out_len. NULL when out of memory. */
char *sw_splice_member(const char *text, size_t len, struct sw_jspan at, const char *key,
                       const char *with, size_t *out_len);

#endif
