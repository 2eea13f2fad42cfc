/* A backend that speaks OpenAI's Responses API, read by the relay: its
 * events and answers passed through to a Responses client (each event read
 * for what the relay needs, `model` rewritten), or turned into the relay's
 * chat-completions form when the answer must be read there (a masked
 * attempt is unmasked on chat chunks, then made a Responses answer again by
 * responses_resp.h). Pure: no I/O, no clock. docs/internals/responses.md. */
#ifndef SW_DIALECT_RESPONSES_UP_H
#define SW_DIALECT_RESPONSES_UP_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "dialect/native.h"
#include "dialect/responses_resp.h"

/* One event's data of a Responses stream passed through: `model` rewritten
 * in the response of the lifecycle events (response.created, .in_progress,
 * .queued, .completed, .incomplete, .failed); usage from response.completed
 * and .incomplete, which are the end (stop); `error` and response.failed
 * are errors; a `.delta` event is content; response.created, .in_progress,
 * .queued, output_item.added and content_part.added are the preamble. A
 * `[DONE]` (some servers send one after the end) is nothing (no tree): the
 * end is response.completed's.
 * Returns 0, or -1 when it is not a JSON object with a string "type". */
int sw_resp_native_event(const char *data, size_t len, const char *model,
                         struct sw_native_event *ev);

/* A whole Responses answer (borrowed): its usage in *in and *out (-1:
 * absent); -1 when it is not a response (no output array). */
int sw_resp_native_answer(const json_t *body, long *in, long *out);

/* ---- Responses -> chat completions ---- */

/* A Responses object (borrowed) as a chat.completion: message items'
 * output_text parts joined as the content, refusal parts as the refusal,
 * reasoning items' text (reasoning_text parts, else summary_text parts) as
 * reasoning_content, function_call items as tool_calls (id = call_id);
 * finish_reason "length" / "content_filter" for an incomplete response
 * (incomplete_details.reason), "tool_calls" when it called a tool, else
 * "stop"; the usage in chat's names. Other items (hosted tool calls) have
 * no chat form and are left out. NULL when it is not a response. */
json_t *sw_responses_to_chat(const json_t *resp, const char *model, long long created);

/* The state of one Responses stream read as chat chunks. */
struct sw_resp_to_oai {
    char id[96];                /* the chunks' id (the response's, once seen) */
    char model[128];
    long long created;
    int call_of[SW_RESP_MAX_ITEMS];     /* output_index -> tool call index, -1 none */
    int n_calls;
    bool done;
    char error_type[32];        /* "" */
};

void sw_resp_to_oai_init(struct sw_resp_to_oai *s, const char *model, long long created);

/* One event's data as chat chunks appended to `chunks` (an array): text,
 * refusal and reasoning deltas as content / refusal / reasoning_content
 * deltas, a function_call item added as a tool call's first delta (id,
 * name), its argument deltas as the call's arguments; response.completed
 * or .incomplete as the finish chunk and a usage chunk (s->done). 0, or -1
 * for an error event, response.failed, an event that is not JSON, or more
 * tool calls than SW_RESP_MAX_TOOLS (*msg a short static description). */
int sw_resp_to_oai_event(struct sw_resp_to_oai *s, const char *data, size_t len,
                         json_t *chunks, const char **msg);

#endif
