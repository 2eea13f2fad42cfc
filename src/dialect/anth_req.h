/* Anthropic Messages requests <-> OpenAI chat-completions requests, the
 * gateway's internal form. Pure: no I/O, no clock.
 *
 * Both directions work on decoded JSON trees and build a new tree; the input
 * is only read. What has no counterpart on the other side is refused with a
 * 400 whose `param` names the field (JSON path of the input), never dropped
 * in silence. docs/api.md has the field-by-field table; the rules below are
 * that table's. */
#ifndef SW_DIALECT_ANTH_REQ_H
#define SW_DIALECT_ANTH_REQ_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "request/request.h"

/* The anthropic-version a backend gets when neither config nor client set one. */
#define SW_ANTH_DEFAULT_VERSION "2023-06-01"

/* An Anthropic Messages body (`in`, borrowed) as an OpenAI chat request.
 * Validates Anthropic's shape as it goes: model (string), max_tokens (integer
 * >= 1; when require_max_tokens is false an absent one is left absent, as
 * count_tokens allows), messages (non-empty array of user/assistant messages,
 * content a string or an array of blocks; a system message inside them, a
 * string or text blocks, stays a system message in place), system (string
 * or text blocks),
 * stop_sequences, temperature, top_p, stream, tools, tool_choice, metadata
 * (user_id; Spillway's allow_cloud kept as metadata.allow_cloud), thinking
 * and output_config.effort (as reasoning_effort), output_config.format (a
 * json_schema, as response_format). Unknown top-level fields and
 * context_management are refused as untranslatable.
 * On success *out is a new tree (caller decrefs) and SW_OK is returned;
 * otherwise *err is filled (400 invalid_request_error, or 500 out of memory)
 * and SW_EINVAL / SW_ENOMEM is returned. */
int sw_anth_req_to_openai(const json_t *in, int require_max_tokens, json_t **out,
                          struct sw_request_error *err);

/* The content blocks and tools a translation left out; and whether it met
 * a message of role system (sw_anth_native_system has one to move). */
struct sw_anth_skipped {
    uint32_t fields;                /* bits 1 << enum sw_anth_field of their classes */
    bool any;
    struct sw_request_error first;  /* the first one's refusal, as the strict translation
                                     * gives it */
    bool system_msgs;
};

/* sw_anth_req_to_openai, but a content block of a message the chat form
 * cannot carry (a thinking block, a server tool's, ...) is left out of the
 * translation and noted in *skipped instead of refusing the body: the
 * translation of the message without it, as if it had been removed. A
 * message of only such blocks becomes one with empty content. Everything
 * else is refused as sw_anth_req_to_openai refuses it. */
int sw_anth_req_to_openai_skipping(const json_t *in, int require_max_tokens, json_t **out,
                                   struct sw_anth_skipped *skipped,
                                   struct sw_request_error *err);

/* An OpenAI chat request (`in`, borrowed, already valid per sw_request_parse)
 * as an Anthropic Messages body. max_tokens: max_completion_tokens, else
 * max_tokens, else default_max_tokens. system and developer messages become
 * the top-level system (joined with a blank line); tool messages become
 * tool_result blocks of a user message; assistant tool_calls become tool_use
 * blocks (their arguments must be a JSON object). Same contract as above. */
int sw_anth_req_from_openai(const json_t *in, long default_max_tokens, json_t **out,
                            struct sw_request_error *err);

/* Parses len bytes of an Anthropic Messages body (borrowed) into *req for
 * routing: req->body is the OpenAI translation (validated and estimated by
 * sw_request_parse), req->native the decoded body itself, req->dialect 1.
 * Fields that are valid Anthropic but have no OpenAI form (code
 * "untranslatable": thinking, document blocks, server tools, ...) are left
 * out of req->body and the first is kept in req->untranslatable (the
 * classes of all in req->untranslatable_fields), so the request can still
 * go whole to a backend that speaks Anthropic. Any other
 * problem is a 400 in *err. Returns SW_OK, SW_EINVAL or SW_ENOMEM. */
int sw_anth_request_parse(const char *body, size_t len, int require_max_tokens,
                          struct sw_chat_request *req, struct sw_request_error *err);

/* What the translation left out, as a closed set of names (the decision
 * log's `dropped`, spillway_translation_dropped_total's label): bit
 * 1 << field of sw_chat_request.untranslatable_fields. */
enum sw_anth_field {
    SW_ANTH_FIELD_OTHER,                /* a field or block type of no class below */
    SW_ANTH_FIELD_CONTEXT_MANAGEMENT,
    SW_ANTH_FIELD_OUTPUT_CONFIG,        /* a key other than effort and format */
    SW_ANTH_FIELD_MCP_SERVERS,
    SW_ANTH_FIELD_CONTAINER,
    SW_ANTH_FIELD_SERVICE_TIER,
    SW_ANTH_FIELD_TOP_K,
    SW_ANTH_FIELD_SERVER_TOOL,          /* a tool of a type (web search, bash, ...) */
    SW_ANTH_FIELD_METADATA,             /* a key other than user_id */
    SW_ANTH_FIELD_SYSTEM_BLOCK,         /* a system block that is not text */
    SW_ANTH_FIELD_THINKING_BLOCK,       /* thinking, redacted_thinking */
    SW_ANTH_FIELD_DOCUMENT_BLOCK,
    SW_ANTH_FIELD_SEARCH_RESULT_BLOCK,
    SW_ANTH_FIELD_SERVER_TOOL_BLOCK,    /* server_tool_use, *_tool_result, container_upload */
    SW_ANTH_FIELD_IMAGE_BLOCK,          /* an image source other than base64 and url */
    SW_ANTH_FIELD_TOOL_RESULT_BLOCK,    /* a tool result that is not text */
    /* an OpenAI request's top-level fields toward an Anthropic backend */
    SW_ANTH_FIELD_REASONING_EFFORT,
    SW_ANTH_FIELD_SEED,
    SW_ANTH_FIELD_PENALTIES,            /* frequency_penalty, presence_penalty */
    SW_ANTH_FIELD_LOGPROBS,             /* logprobs, top_logprobs, logit_bias */
    SW_ANTH_FIELD_VERBOSITY,
    SW_ANTH_FIELD_STORE,                /* store, prompt_cache_key, safety_identifier */
    SW_ANTH_FIELD_N
};

/* The name of a field class ("other" out of range). Static storage. */
const char *sw_anth_field_name(unsigned field);

/* The names of the classes in bits, comma-separated, into buf (len bytes,
 * cut to fit, always terminated when len > 0). */
void sw_anth_field_list(uint32_t bits, char *buf, size_t len);

/* The class of the field an "untranslatable" error's param (a JSON path)
 * names in the Anthropic body it came from (borrowed). */
unsigned sw_anth_field_class(const json_t *body, const char *param);

/* The same for a top-level field of an OpenAI request that an Anthropic
 * backend cannot carry (sw_anth_req_from_openai's "untranslatable"). */
unsigned sw_anth_openai_field_class(const char *param);

#endif
