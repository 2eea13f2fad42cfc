/* Google's generateContent API as llmsim serves it (--gemini-key, or on
 * Vertex AI paths with a bearer its token endpoint issued, gauth.h): the
 * routes, the request read into the simulator's struct sw_llmsim_chat, and
 * the answers field by field as Google sends them (whole, the alt=sse
 * stream, the error shape {"error":{code,message,status}}). A prompt with
 * GEMINI_SAFETY_BLOCK is answered with finishReason SAFETY and no content;
 * one with GEMINI_PROMPT_BLOCK with promptFeedback.blockReason SAFETY and no
 * candidates. Pure (jansson only). */
#ifndef SW_LLMSIM_GEMINI_H
#define SW_LLMSIM_GEMINI_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "chat.h"
#include "common/buf.h"
#include "faults.h"
#include "render.h"

/* What a path names: 0 and the model, the method (stream or not) and
 * whether it is a Vertex AI path; -1: not a generateContent path.
 *   /{v1beta|v1|v1alpha}/models/{model}:{generateContent|streamGenerateContent}
 *   /{v1|v1beta1}/projects/{p}/locations/{l}/publishers/google/models/{model}:{...} */
int sw_llmsim_gem_route(const char *path, char *model, size_t cap, bool *stream, bool *vertex);

/* Anthropic's models on Vertex AI:
 * /v1/projects/{p}/locations/{l}/publishers/anthropic/models/{model}:{rawPredict|streamRawPredict}.
 * 0 and the model and method, or -1. */
int sw_llmsim_vertex_anthropic_route(const char *path, char *model, size_t cap, bool *stream);

/* Validates root (borrowed) as a generateContent body and fills *c:
 * contents (role user / model, parts text, inlineData, functionCall,
 * functionResponse), systemInstruction, generationConfig.maxOutputTokens,
 * responseMimeType application/json (wants JSON), toolConfig ANY with one
 * allowedFunctionNames (the forced tool), a scripted call (chat.h). On
 * SW_EINVAL writes the reason to err. Call sw_llmsim_chat_free either way. */
int sw_llmsim_gem_parse(json_t *root, struct sw_llmsim_chat *c, char *err, size_t errlen);

/* The answer's pieces (r->dialect SW_LLMSIM_GEMINI; r->tool: the answer is
 * that functionCall, r->tool_args its args, sent whole in the first
 * chunk). `block`: 1 finishReason SAFETY, 2 a blocked prompt, 0 none. */
int sw_llmsim_gem_stream_start(struct sw_buf *b, const struct sw_llmsim_reply *r);
int sw_llmsim_gem_stream_token(struct sw_buf *b, const struct sw_llmsim_reply *r,
                               struct sw_str text, enum sw_llmsim_malformed malformed);
int sw_llmsim_gem_stream_end(struct sw_buf *b, const struct sw_llmsim_reply *r, int output_tokens,
                             bool length);
int sw_llmsim_gem_stream_error(struct sw_buf *b, const struct sw_llmsim_reply *r);
int sw_llmsim_gem_message(struct sw_buf *b, const struct sw_llmsim_reply *r, const char *text,
                          size_t len, int output_tokens, bool length,
                          enum sw_llmsim_malformed malformed);
/* Google's error body; status words: 400 INVALID_ARGUMENT, 401 UNAUTHENTICATED,
 * 403 PERMISSION_DENIED, 404 NOT_FOUND, 429 RESOURCE_EXHAUSTED, 500 INTERNAL,
 * 503 UNAVAILABLE, 504 DEADLINE_EXCEEDED. */
int sw_llmsim_gem_error(struct sw_buf *b, int status, const char *message);

#endif
