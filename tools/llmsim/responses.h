/* The OpenAI Responses API as llmsim serves it (POST /v1/responses, in the
 * openai dialect, as vLLM serves it next to chat completions): the request
 * read into the same struct sw_llmsim_chat as a chat request, and the
 * answer rendered by translating the simulator's own chat answer with the
 * gateway's translator (src/dialect/responses_resp.h), whole or as the
 * typed event stream. Pure (jansson only). */
#ifndef SW_LLMSIM_RESPONSES_H
#define SW_LLMSIM_RESPONSES_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "chat.h"
#include "common/buf.h"
#include "faults.h"
#include "render.h"

/* Validates root (borrowed) as a Responses request and fills *c: model,
 * stream, max_output_tokens, text.format json_schema / json_object (wants
 * JSON), tool_choice {type: function, name} (forced tool); the messages are
 * the instructions and the input (a string: one user message; items: each
 * message, function_call and function_call_output one), their text the
 * string contents, input_text / output_text / refusal parts and tool
 * outputs; the last user message's text is the echo source. On SW_EINVAL
 * writes the reason to err. Call sw_llmsim_chat_free either way. */
int sw_llmsim_responses_parse(json_t *root, struct sw_llmsim_chat *c, char *err, size_t errlen);

/* The whole answer (a Responses object) for `req` (borrowed, echoed):
 * `text` as the message, or, with r->tool set, as the forced tool's
 * arguments. `malformed` (either kind) cuts the JSON short. */
int sw_llmsim_responses_message(struct sw_buf *b, const struct sw_llmsim_reply *r, const json_t *req,
                                const char *text, size_t len, int output_tokens, bool length,
                                enum sw_llmsim_malformed malformed);

/* A streamed answer: response.created and response.in_progress, then one
 * delta event per token (output_text, or the forced tool's arguments),
 * then the .done events and response.completed (response.incomplete when
 * cut by max tokens) with the usage. A mid-stream error is response.failed
 * (server_error). `malformed` breaks the token's delta event as the chat
 * stream's is broken (sse: over two lines; json: never closed). */
struct sw_llmsim_rstream;
struct sw_llmsim_rstream *sw_llmsim_rstream_new(const struct sw_llmsim_reply *r, const json_t *req);
void sw_llmsim_rstream_free(struct sw_llmsim_rstream *s);
int sw_llmsim_rstream_start(struct sw_llmsim_rstream *s, struct sw_buf *b);
int sw_llmsim_rstream_token(struct sw_llmsim_rstream *s, struct sw_buf *b, struct sw_str text,
                            enum sw_llmsim_malformed malformed);
int sw_llmsim_rstream_end(struct sw_llmsim_rstream *s, struct sw_buf *b, int output_tokens,
                          bool length);
int sw_llmsim_rstream_error(struct sw_llmsim_rstream *s, struct sw_buf *b);

#endif
