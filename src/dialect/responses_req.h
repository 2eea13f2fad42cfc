/* OpenAI Responses requests (POST /v1/responses) -> chat-completions
 * requests, the gateway's internal form. Pure: no I/O, no clock.
 *
 * The translation reads a decoded body and builds a new tree; the input is
 * only read. What the chat form cannot carry is refused with a 400 whose
 * `param` names the field (the JSON path in the Responses body) and whose
 * code is "untranslatable", never dropped in silence; a value that is not
 * valid Responses is a 400 "invalid_value". docs/internals/responses.md has
 * the field-by-field table; the rules below are that table's.
 *
 * Conversation state is the caller's: `store` is read by nobody here, and a
 * `previous_response_id` is resolved by the caller into the stored items,
 * passed as `prior` and put before the request's own input. */
#ifndef SW_DIALECT_RESPONSES_REQ_H
#define SW_DIALECT_RESPONSES_REQ_H

#include <jansson.h>

#include "request/request.h"

/* A Responses body (`in`, borrowed) as a chat request. `prior` (borrowed,
 * may be NULL) is an array of Responses items (a stored response's input
 * and output items, oldest first) that precede in's input; an item of it
 * that cannot be carried is refused naming "previous_response_id".
 * Carried: model; input (a string, or items: messages of role user, system,
 * developer or assistant with a string or input_text / input_image /
 * input_file / input_audio / output_text / refusal parts, function_call,
 * function_call_output; reasoning items are left out: a model's past
 * reasoning is no input to it); instructions (a first system message); tools of
 * type function; tool_choice (none, auto, required, {type: function, name});
 * text.format (text, json_object, json_schema -> response_format) and
 * text.verbosity; max_output_tokens (-> max_completion_tokens); temperature;
 * top_p; reasoning.effort (-> reasoning_effort; summary "auto" or absent);
 * metadata; parallel_tool_calls; user, safety_identifier, prompt_cache_key,
 * service_tier; stream (with stream_options.include_usage, which the
 * streamed events' usage needs); stream_options.include_obfuscation (no
 * padding is added: the field is optional). Read by the caller and not
 * translated: store, previous_response_id. Accepted as no-ops with their
 * default meaning: truncation "disabled", background false, include
 * "reasoning.encrypted_content" (a chat backend makes no reasoning items);
 * client_metadata (an object: the client's ids for the server, never
 * model input) is not carried.
 * On success *out is a new tree (caller decrefs) and SW_OK is returned;
 * otherwise *err is filled and SW_EINVAL (400) or SW_ENOMEM (500) returned. */
int sw_responses_req_to_chat(const json_t *in, const json_t *prior, json_t **out,
                             struct sw_request_error *err);

/* Parses len bytes of a Responses body (borrowed) into *req for routing:
 * req->body is the chat translation (validated and estimated by
 * sw_request_parse), req->native the decoded body itself (owned). Fields
 * that are valid Responses but have no chat form (code "untranslatable":
 * hosted tools, reasoning items, item references, ...) are left out of
 * req->body and the first is kept in req->untranslatable, so the request
 * can still go whole to a backend that speaks the Responses API. Input
 * items of such a type are left out as the translation meets them, however
 * many; other fields one at a time, up to 64. The caller
 * sets req->dialect and req->api. Returns SW_OK, SW_EINVAL or SW_ENOMEM. */
int sw_responses_request_parse(const char *body, size_t len, const json_t *prior,
                               struct sw_chat_request *req, struct sw_request_error *err);

#endif
