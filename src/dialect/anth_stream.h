/* An Anthropic client's own stream and answer from an Anthropic backend,
 * passed through (no translation): each event read for what the relay needs
 * (its type, usage, an error's type) with `model` rewritten; and the
 * "preamble" rule for any Anthropic stream. Pure: no I/O, no clock. */
#ifndef SW_DIALECT_ANTH_STREAM_H
#define SW_DIALECT_ANTH_STREAM_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "dialect/native.h"

/* message_start, content_block_start and ping carry no token: a stream that
 * sent only these has not started answering (what they made is held, so an
 * error event after them still fails over). */
bool sw_anth_preamble_type(const char *type, size_t len);
/* The same for an event's raw data: true when it is an object whose "type"
 * is one of those. */
bool sw_anth_preamble_event(const char *data, size_t len);

/* The prompt tokens an Anthropic usage object bills: input_tokens plus the
 * tokens written to and read from the prompt cache, which input_tokens
 * leaves out; -1 without input_tokens. */
long sw_anth_input_tokens(const json_t *usage);

/* Reads one event's data (model rewritten in message_start; preamble per
 * sw_anth_preamble_type). Returns 0, or -1 when it is not a JSON object
 * with a string "type" (nothing to free then). */
int sw_anth_native_event(const char *data, size_t len, const char *model,
                         struct sw_native_event *ev);

/* A whole passed-through answer (borrowed): its usage in *in and *out (-1:
 * absent); -1 when it is not an answer (no content array or usage object). */
int sw_anth_native_answer(const json_t *body, long *in, long *out);

#endif
