/* AWS Bedrock's Converse API <-> OpenAI chat completions, the gateway's
 * internal form. Pure: no I/O, no clock.
 *
 * A request: system and developer messages as `system` text blocks; user
 * text and images (data: URLs in base64: png, jpeg, gif, webp) as content
 * blocks; assistant text and tool_calls (toolUse, their arguments a JSON
 * object); tool messages as toolResult blocks of a user message; messages of
 * one role in a row joined (Converse alternates roles); tools as
 * toolConfig.tools[].toolSpec, tool_choice auto/required/a function as
 * toolChoice auto/any/tool; max_completion_tokens (else max_tokens),
 * temperature, top_p and stop as inferenceConfig. A field Converse has no
 * form for (n > 1, response_format, logprobs, seed, penalties, image URLs
 * that are not data: URLs, tool_choice none, ...) is refused as untranslatable
 * with its name, never dropped in silence. The model goes in the path, not
 * the body.
 *
 * A ConverseStream message: the relay turns each event-stream message into
 * one event's data, {"<event or exception type>": <payload>} (see
 * sw_bedrock_frame_json), which sw_bedrock_to_oai_event reads. */
#ifndef SW_DIALECT_BEDROCK_H
#define SW_DIALECT_BEDROCK_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/buf.h"
#include "common/evstream.h"
#include "request/request.h"

/* An OpenAI chat request (borrowed, valid per sw_request_parse) as a
 * Converse body. SW_OK with *out a new tree, or SW_EINVAL / SW_ENOMEM with
 * *err filled (400 "untranslatable" naming the field, or 500). */
int sw_bedrock_req_from_openai(const json_t *in, long default_max_tokens, json_t **out,
                               struct sw_request_error *err);

/* A Converse stopReason as an OpenAI finish_reason: end_turn and
 * stop_sequence stop, max_tokens and model_context_window_exceeded length,
 * tool_use tool_calls, guardrail_intervened and content_filtered
 * content_filter; anything else stop. */
const char *sw_bedrock_finish_reason(const char *stop_reason);

/* A whole Converse answer (borrowed) as an OpenAI chat.completion; NULL
 * when it is not one (no output.message.content array). */
json_t *sw_bedrock_resp_to_openai(const json_t *answer, const char *model, long long created);

/* ---- ConverseStream -> OpenAI chunks ---- */

struct sw_bedrock_to_oai {
    char model[128];
    long long created;
    int tool_index[64];         /* content block index -> tool call index, -1: not a tool */
    int n_tools;
    bool content;               /* a token (text or tool call) was made */
    bool stopped;               /* messageStop seen */
    bool done;                  /* metadata seen after messageStop: the end */
    char finish[32];            /* the finish reason of messageStop */
    char error_type[32];        /* an exception's type ("" none): throttlingException ... */
};

void sw_bedrock_to_oai_init(struct sw_bedrock_to_oai *s, const char *model, long long created);
/* One event's data (as sw_bedrock_frame_json makes it), its chunks appended
 * to `chunks`. messageStart the role, contentBlockStart a tool call's id and
 * name, contentBlockDelta text or a tool call's arguments, messageStop the
 * finish reason, metadata the usage (a chunk without choices) and the end.
 * 0, or -1 for an exception (s->error_type its type) or an event not valid
 * (*msg a short static description). Reasoning content is not carried. */
int sw_bedrock_to_oai_event(struct sw_bedrock_to_oai *s, const char *data, size_t len,
                            json_t *chunks, const char **msg);

/* One event-stream message as one event's data: {"<:event-type>": payload}
 * for an event, {"<:exception-type>": payload} for an exception (its name
 * ends in "Exception"), {"internalServerException": {"message": "<:error-code>:
 * <:error-message>"}} for an error message. The payload must be JSON (an
 * empty one is {}). SW_OK, SW_EPROTO (a message of no known type, a payload
 * that is not a JSON object) or SW_ENOMEM / SW_ETOOBIG. */
int sw_bedrock_frame_json(const struct sw_evs_message *m, struct sw_buf *out);

/* The status Bedrock answers an exception with, by its type (the
 * x-amzn-ErrorType header or a stream exception's name, either case of the
 * first letter): ThrottlingException and ModelNotReadyException 429,
 * ValidationException 400, AccessDeniedException 403,
 * ResourceNotFoundException 404, ModelTimeoutException 408,
 * ServiceQuotaExceededException 400, ModelErrorException 424,
 * ServiceUnavailableException 503, InternalServerException and
 * ModelStreamErrorException 500; 0 when unknown. */
int sw_bedrock_exception_status(const char *type);

#endif
