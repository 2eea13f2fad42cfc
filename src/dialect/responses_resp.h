/* Chat-completions answers -> OpenAI Responses answers, whole and streamed.
 * Pure: no I/O, no clock, no randomness: the response id and the times are
 * the caller's, and every item id is derived from the response id.
 *
 * Mappings (docs/internals/responses.md has the table): message.content ->
 * a "message" output item with one output_text part; message.refusal -> a
 * refusal part of it; message.reasoning_content (or .reasoning, as vLLM and
 * llama.cpp send a reasoning model's thinking) -> a "reasoning" item with
 * one reasoning_text part, before the message; tool_calls -> one
 * "function_call" item each (call_id = the tool call's id). finish_reason
 * length -> status "incomplete" with incomplete_details.reason
 * "max_output_tokens", content_filter -> "incomplete" / "content_filter",
 * anything else -> "completed". usage prompt_tokens / completion_tokens /
 * total_tokens -> input_tokens / output_tokens / total_tokens, with
 * input_tokens_details.cached_tokens and output_tokens_details.
 * reasoning_tokens (0 when the backend gives none).
 *
 * The request's parameters are echoed as the Responses object carries them
 * (instructions, max_output_tokens, tools, tool_choice, text, temperature,
 * top_p, parallel_tool_calls, reasoning, metadata, previous_response_id,
 * store, user), with OpenAI's defaults where the request gave none. */
#ifndef SW_DIALECT_RESPONSES_RESP_H
#define SW_DIALECT_RESPONSES_RESP_H

#include <jansson.h>
#include <stdbool.h>

#include "common/buf.h"

#define SW_RESP_MAX_ITEMS 96            /* output items of one streamed answer */
#define SW_RESP_MAX_TOOLS 64            /* tool calls of one streamed answer */
#define SW_RESP_MAX_TEXT (32u << 20)    /* bytes of one streamed part or arguments */

/* What the caller decides about one answer. */
struct sw_resp_meta {
    const char *id;             /* the response id, "resp_..." (item ids derive from it) */
    const char *model;          /* the model name the client gets */
    long long created_at;       /* unix seconds */
    long long completed_at;     /* unix seconds; 0: not given (the field is left out) */
};

/* The id of output item n of response `id`: "<kind>_" + id without its
 * "resp_" prefix + "_" + n (kind "msg", "fc", "rs"). */
void sw_resp_item_id(const char *id, const char *kind, int n, char *out, size_t size);

/* A chat.completion (`answer`, borrowed) as a Responses object. `request` is
 * the client's Responses body (borrowed, may be NULL) whose parameters are
 * echoed. Returns a new tree, or NULL when `answer` is not a chat completion
 * (the caller treats it as a malformed answer) or memory ran out. */
json_t *sw_responses_from_chat(const json_t *answer, const json_t *request,
                               const struct sw_resp_meta *meta);

/* The Responses object of a request before any output (status
 * "in_progress", output [], no usage): what response.created carries.
 * New tree or NULL. */
json_t *sw_responses_shell(const json_t *request, const struct sw_resp_meta *meta,
                           const char *status);

/* ---- Chat chunks -> Responses events ---- */

struct sw_resp_tool {
    int out;                    /* its output_index */
    char call_id[256];
    char name[256];
    struct sw_buf args;         /* the arguments so far */
    bool open;                  /* added, not yet done */
};

/* The state of one translated stream. Feed it every chat chunk in order,
 * then finish it (or fail it); each call appends the Responses events it
 * makes ("event: TYPE\ndata: {...}\n\n", sequence_number increasing by one
 * from 0) to an output buffer. Free it with sw_resp_stream_free. */
struct sw_resp_stream {
    char id[96];
    char model[128];
    long long created_at;
    json_t *request;            /* owned reference to the client's body (echoed) */
    long seq;                   /* the next sequence_number */
    bool started;               /* response.created and response.in_progress sent */
    bool finished;              /* a terminal event sent: nothing more is sent */
    int next_out;               /* the next output_index */
    /* the open message or reasoning item: at most one at a time */
    int item_out;               /* its output_index, -1: none */
    bool item_reasoning;        /* a reasoning item, else a message */
    int part;                   /* the open part: 0 none, 1 output_text, 2 refusal,
                                 * 3 reasoning_text */
    int part_index;             /* its content_index */
    struct sw_buf text;         /* its text so far */
    json_t *parts;              /* the item's finished parts */
    struct sw_resp_tool tool[SW_RESP_MAX_TOOLS]; /* by the chunk's tool call index */
    json_t *done[SW_RESP_MAX_ITEMS]; /* finished items by output_index */
    char finish_reason[32];
    long input_tokens, output_tokens, cached_tokens, reasoning_tokens;
    bool usage_seen;
    int id_out;                 /* the output_index whose item id is in id_of, -1: none */
    char id_kind[4];            /* its kind ("msg", "rs", "fc") */
    char id_of[160];            /* its id (sw_resp_item_id, made once per item) */
    json_t *final;              /* owned: the finished response that response.completed or
                                 * response.incomplete carried; NULL before (or failed) */
};

/* Prepares *s. `request` (borrowed; a reference is kept) may be NULL.
 * Returns SW_OK or SW_ENOMEM. */
int sw_resp_stream_init(struct sw_resp_stream *s, const json_t *request,
                        const struct sw_resp_meta *meta);
void sw_resp_stream_free(struct sw_resp_stream *s);
/* response.created and response.in_progress, if not sent yet (the first
 * chunk sends them too). */
int sw_resp_stream_start(struct sw_resp_stream *s, struct sw_buf *out);
/* One chat.completion.chunk (borrowed tree). Returns SW_OK, SW_ENOMEM, or
 * SW_ETOOBIG (more items, tool calls or text than the bounds above: fail
 * the stream). A chunk after the end is ignored. */
int sw_resp_stream_chunk(struct sw_resp_stream *s, const json_t *chunk, struct sw_buf *out);
/* The end of the chat stream ([DONE]): closes what is open (the .done
 * events, output_item.done) and sends response.completed, or
 * response.incomplete for finish_reason length / content_filter, with the
 * output and the usage; s->final is then that response. completed_at 0:
 * left out. */
int sw_resp_stream_finish(struct sw_resp_stream *s, long long completed_at, struct sw_buf *out);
/* A failure after the first byte: response.failed, its response carrying
 * status "failed", error {code, message} (code NULL: "server_error") and
 * the items finished so far. Ends the stream. */
int sw_resp_stream_fail(struct sw_resp_stream *s, const char *code, const char *message,
                        struct sw_buf *out);
/* An `error` event (type, code, message, param null): for a failure the
 * client must see as an error rather than as a failed response. Ends the
 * stream. */
int sw_resp_stream_error(struct sw_resp_stream *s, const char *code, const char *message,
                         struct sw_buf *out);

#endif
