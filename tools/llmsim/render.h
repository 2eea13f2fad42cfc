/* The wire format of answers, field by field as the real APIs send them:
 * OpenAI chat.completion / chat.completion.chunk SSE and error objects,
 * Anthropic message / SSE event sequence and error objects. Each function
 * appends to a bounded buffer (SW_ETOOBIG past its max). Pure. */
#ifndef SW_LLMSIM_RENDER_H
#define SW_LLMSIM_RENDER_H

#include <stdbool.h>
#include <stddef.h>

#include "chat.h"
#include "common/buf.h"
#include "faults.h"

/* What every piece of one answer repeats. */
struct sw_llmsim_reply {
    enum sw_llmsim_dialect dialect;
    char id[48];                 /* "chatcmpl-..." or "msg_..." */
    long long created;           /* unix seconds (OpenAI) */
    char model[SW_LLMSIM_MODEL_MAX]; /* echoed model id, raw */
    char tool[128];              /* a forced tool: the answer calls it (Anthropic streams it as a
                                  * tool_use block), "" = text */
    char thinking[2048];         /* Anthropic: the text of a thinking block before the answer's
                                  * text block (streamed in 7-byte thinking_delta pieces, then
                                  * a signature_delta), "" = none */
    int prompt_tokens;
    int cached_tokens;           /* of them, found in the slot's prefix cache */
    bool timings;                /* a prefix cache runs: OpenAI answers carry llama.cpp's
                                    "timings": {"cache_n", "prompt_n"} too */
    bool include_usage;          /* OpenAI: send the usage chunk */
    const char *tool_args;       /* Gemini: a forced tool's arguments, whole (borrowed) */
    size_t tool_args_len;
    int block;                   /* Gemini: 1 the answer is blocked (finishReason SAFETY),
                                  * 2 the prompt is (promptFeedback), 0 neither */
    char head[2048];             /* OpenAI chunk prefix, by sw_llmsim_reply_prepare */
    size_t head_len;
};

/* Fills r->head from the fields above (call once, before streaming): the
 * part every OpenAI chunk repeats, so a token costs copies, not printf. */
int sw_llmsim_reply_prepare(struct sw_llmsim_reply *r);

/* OpenAI: the role chunk. Anthropic: message_start, content_block_start, ping. */
int sw_llmsim_render_stream_start(struct sw_buf *b, const struct sw_llmsim_reply *r);
/* One token as one SSE event; `malformed` breaks this one event. */
int sw_llmsim_render_stream_token(struct sw_buf *b, const struct sw_llmsim_reply *r,
                                  struct sw_str text, enum sw_llmsim_malformed malformed);
/* OpenAI: the finish_reason chunk, the usage chunk if asked, [DONE].
 * Anthropic: content_block_stop, message_delta, message_stop. */
int sw_llmsim_render_stream_end(struct sw_buf *b, const struct sw_llmsim_reply *r,
                                int output_tokens, bool length);
/* A mid-stream error event: Anthropic `event: error` (overloaded_error),
 * OpenAI a `data: {"error": ...}` chunk; the stream ends after it. */
int sw_llmsim_render_stream_error(struct sw_buf *b, const struct sw_llmsim_reply *r);
/* The whole non-streaming body; `malformed` (either kind) cuts the JSON short. */
int sw_llmsim_render_message(struct sw_buf *b, const struct sw_llmsim_reply *r,
                             const char *text, size_t len, int output_tokens, bool length,
                             enum sw_llmsim_malformed malformed);
/* An error body in the dialect's shape for `status`. `limit` ("requests" or
 * "tokens") marks rpm/tpm 429s. */
int sw_llmsim_render_error(struct sw_buf *b, enum sw_llmsim_dialect d, int status,
                           const char *message, const char *limit);

#endif
