/* Anthropic Messages answers <-> OpenAI chat-completions answers, whole and
 * streamed. Pure: no I/O, no clock (the caller passes `created`).
 *
 * Mappings (docs/api.md has the table): stop_reason end_turn / stop_sequence
 * <-> finish_reason stop, max_tokens <-> length, tool_use <-> tool_calls,
 * refusal <-> content_filter; usage input_tokens / output_tokens <->
 * prompt_tokens / completion_tokens; text blocks <-> message content;
 * tool_use blocks (input object) <-> tool_calls (arguments JSON text).
 *
 * The stream translators are incremental state machines: feed them one
 * upstream event at a time and they append what the other dialect sends for
 * it (zero or more events) to an output buffer. */
#ifndef SW_DIALECT_ANTH_RESP_H
#define SW_DIALECT_ANTH_RESP_H

#include <jansson.h>
#include <stdbool.h>

#include "common/buf.h"

/* Whole answers. Both take `in` borrowed and return a new tree, or NULL when
 * `in` is not an answer of its dialect (the caller treats it as a malformed
 * answer). `model` is the name the client gets. */
json_t *sw_anth_resp_to_openai(const json_t *in, const char *model, long long created);
json_t *sw_anth_resp_from_openai(const json_t *in, const char *model);

/* The tool an OpenAI request's response_format json_schema becomes for an
 * Anthropic backend (forced, input_schema = the schema). */
#define SW_ANTH_FORMAT_TOOL "json_answer"
/* In a translated OpenAI answer (edited in place): the call of that tool
 * becomes message.content (its arguments) with finish_reason stop. */
void sw_anth_resp_format_tool_to_content(json_t *answer);

/* finish_reason for a stop_reason and back; never NULL. */
const char *sw_anth_finish_reason(const char *stop_reason);
const char *sw_anth_stop_reason(const char *finish_reason);

/* An error body in Anthropic's shape, {"type":"error","error":{"type","message"}},
 * for an HTTP status: 400 invalid_request_error, 401 authentication_error,
 * 403 permission_error, 404 not_found_error, 413 request_too_large,
 * 429 rate_limit_error, 503/529 overloaded_error, 504 timeout_error, other
 * 5xx api_error. Malloc'ed; NULL when out of memory. */
const char *sw_anth_error_type(int status);
char *sw_anth_error_json(int status, const char *message);

/* ---- Anthropic stream -> OpenAI chunks ---- */

struct sw_anth_to_oai {
    char id[96];
    char model[128];
    long long created;
    long input_tokens, output_tokens;
    int tool_index[64];         /* content block index -> tool call index, -1: not a tool */
    int n_tools;
    bool done;                  /* message_stop seen */
    bool format_tool;           /* the request's response_format went as the forced tool
                                 * SW_ANTH_FORMAT_TOOL: its input streams as content, its
                                 * stop (tool_use) as finish_reason stop; set after init */
    bool format_seen;           /* ... and the answer called it */
    char error_type[32];        /* an error event's error.type ("" none): overloaded_error ... */
};

/* Prepares *s; `model` is the name the chunks carry (truncated to fit). */
void sw_anth_to_oai_init(struct sw_anth_to_oai *s, const char *model, long long created);
/* One Anthropic event (`event` the SSE event name, may be ""; the type in
 * the data decides). Appends each resulting chunk as a JSON tree to `chunks`
 * (an array). message_stop appends a usage-only chunk and sets done.
 * Returns 0, or -1 when the event is an error event or not valid (then
 * *msg, if given, points at a short static description). */
int sw_anth_to_oai_event(struct sw_anth_to_oai *s, const char *data, size_t len, json_t *chunks,
                         const char **msg);

/* ---- OpenAI chunks -> Anthropic stream ---- */

struct sw_oai_to_anth {
    char id[96];
    char model[128];
    bool started;               /* message_start sent */
    int block;                  /* index of the open block, -1 none */
    bool block_is_text;
    int next_block;
    int tool_block[64];         /* tool call index -> its block index, -1 none */
    char stop_reason[32];
    long input_tokens, output_tokens;
    bool finished;
};

void sw_oai_to_anth_init(struct sw_oai_to_anth *s, const char *id, const char *model,
                         long input_tokens_est);
/* One OpenAI chunk (borrowed tree): appends the Anthropic events it makes
 * ("event: NAME\ndata: {...}\n\n") to out. Returns SW_OK or SW_ENOMEM. */
int sw_oai_to_anth_chunk(struct sw_oai_to_anth *s, const json_t *chunk, struct sw_buf *out);
/* The end of the stream ([DONE]): closes the open block, sends
 * message_delta (stop_reason, cumulative usage) and message_stop. */
int sw_oai_to_anth_finish(struct sw_oai_to_anth *s, struct sw_buf *out);
/* A failure after the first byte: an `error` event. */
int sw_oai_to_anth_error(struct sw_oai_to_anth *s, const char *message, struct sw_buf *out);
/* The same with Anthropic's error type (an upstream's own, such as
 * overloaded_error); NULL or "": api_error. */
int sw_oai_to_anth_error_typed(struct sw_oai_to_anth *s, const char *type, const char *message,
                               struct sw_buf *out);

#endif
