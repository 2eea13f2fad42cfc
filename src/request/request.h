/* The chat-completions request: parse and validate an OpenAI
 * `POST /v1/chat/completions` body into a struct, and derive the facts the
 * router needs (estimated prompt tokens, requested max tokens, needs, flags).
 * Pure: no I/O, no clock.
 *
 * Parsing. The body is decoded with JSON_REJECT_DUPLICATES: a key given twice
 * in one object is "invalid_json". Parsers disagree on which duplicate wins
 * (jansson and most JS/Python take the last, some Go and C parsers the
 * first), so accepting them would let the value Spillway validated and routed
 * on differ from the one a backend acts on. NUL characters (\u0000) in strings
 * are refused too (jansson's default), so every string in the body is a C
 * string. Any JSON value is decoded so a non-object body gets a precise
 * "invalid_type" error instead of a syntax error.
 *
 * Validation follows OpenAI's wording: `param` is the JSON path of the field
 * ("messages[2].content[0].image_url.url") and the message says what is wrong
 * there; codes are "invalid_json", "json_too_complex" (see Limits),
 * "missing_required_parameter", "invalid_type" and "invalid_value". Optional top-level parameters given as
 * null count as absent (as OpenAI treats them). Fields not listed below are
 * passed through untouched (backends have their own extensions). Checked:
 * model (non-empty string), messages (non-empty array of objects; role one of
 * system, developer, user, assistant, tool, function; content per role: a
 * string, a non-empty array of parts whose type the role accepts, or null /
 * absent only for an assistant message with tool_calls, function_call or
 * audio; tool messages need tool_call_id, function messages need name;
 * assistant tool_calls), stream, stream_options (only with stream: true),
 * max_tokens and max_completion_tokens (1..SW_REQUEST_MAX_TOKENS, so no sum
 * of token counts can overflow), temperature, top_p, n (1 only: Spillway
 * relays one choice), tools, functions, metadata (string values, except
 * allow_cloud which may also be a boolean; as a string it is a flag in the
 * words of sw_request_flag, anything else, null included, is a 400 naming
 * it, and so is a key that is a near-miss of allow_cloud).
 *
 * Limits. Before a tree is built, the body's shape is checked: more than
 * SW_REQUEST_MAX_JSON_VALUES values in the whole body, or arrays and objects
 * nested more than SW_REQUEST_MAX_JSON_DEPTH deep, is a 400
 * "json_too_complex" (param null), whatever the fields are, so the memory and
 * time a body costs are bounded by these limits and not only by its size. A
 * body the fast loader proves within them (sw_json_load_bounded) is built in
 * the same pass; any other gets the separate check (sw_request_json_shape).
 *
 * The body is never edited here: metadata.allow_cloud stays in it; the relay
 * strips what an upstream would refuse. */
#ifndef SW_REQUEST_REQUEST_H
#define SW_REQUEST_REQUEST_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/jdump.h"

#define SW_REQUEST_MAX_TOKENS 10000000L     /* max_tokens, max_completion_tokens: 1..this */
#define SW_REQUEST_MAX_JSON_VALUES 100000   /* values in a body (object keys not counted) */
#define SW_REQUEST_MAX_JSON_DEPTH 64        /* arrays and objects nested in a body */

/* Which endpoint a request came in on. */
enum sw_api {
    SW_API_CHAT = 0,            /* POST /v1/chat/completions */
    SW_API_EMBEDDINGS,          /* POST /v1/embeddings (request/embed.h) */
    SW_API_MESSAGES,            /* POST /v1/messages: Anthropic's API, parsed into the chat
                                   form (dialect/anth_req.h); never stored in a request */
    SW_API_RESPONSES,           /* POST /v1/responses: OpenAI's Responses API, parsed into the
                                   chat form (dialect/responses_req.h); never stored in a
                                   request either (req->dialect says the client's API) */
};
struct sw_request_error;

struct sw_chat_request {
    json_t *body;               /* owned: the parsed body, forwarded upstream after edits */
    const char *model;          /* borrowed from body: the public model name asked for;
                                 * dangles once body's "model" is replaced or removed */
    bool stream;                /* "stream": true */
    bool include_usage;         /* "stream_options": {"include_usage": true} */
    long max_tokens;            /* max_completion_tokens or max_tokens; 0 when absent */
    long prompt_tokens_est;     /* estimate, see sw_request_estimate_tokens */
    long prompt_tokens_max;     /* upper bound, see sw_request_bound_tokens: the spend
                                   reservation's prompt (>= prompt_tokens_est) */
    size_t n_messages;
    bool has_tools;             /* non-empty "tools" (or legacy "functions") */
    bool has_images;            /* any content part of type image_url / input_audio / file */
    int allow_cloud;            /* metadata.allow_cloud: -1 absent, 0 false, 1 true */
    enum sw_api api;            /* the endpoint; SW_API_CHAT from sw_request_parse */
    bool token_inputs;          /* embeddings: input given as token ids (cannot be scanned) */
    /* Requests that came in another API (dialect/anth_req.h): `body` is their
     * translation, `native` the client's own body (owned; NULL for OpenAI
     * clients), sent as it is to a backend that speaks the client's API. */
    int dialect;                /* enum sw_dialect of the client's API: 0 OpenAI */
    json_t *native;
    struct sw_request_error *untranslatable;    /* owned; NULL: `body` carries all of
                                                 * `native`; else the first field it could
                                                 * not (a 400 for a backend that needs it) */
    uint32_t untranslatable_fields;     /* bits 1 << enum sw_anth_field of what `body`
                                         * left out (Anthropic clients; 0 otherwise) */
    bool native_system;         /* `native` has a message of role system (Anthropic) */
    char *text;                 /* owned, or NULL: `body` as the gateway wrote it when it
                                 * built it (json_dumps(body, JSON_COMPACT)'s bytes, text_len
                                 * of them), the bytes the relay splices an attempt's body
                                 * from instead of writing the tree again */
    size_t text_len;
    /* The texts of resent elements the parse memo keeps, shared and not
     * copied into text: the bytes are text's text_len with the pieces put
     * in (owned: their references) */
    struct sw_json_pieces text_pieces;
    /* Where text holds the value of `model` ([text_model_off, + len); len 0:
     * not read off when it was written) and whether it has top-level
     * `metadata` and `stream_options`: what the relay splices an attempt's
     * body by, without reading text again. */
    size_t text_model_off, text_model_len;
    bool text_metadata, text_stream_options;
    /* A Responses request's `input` as the client's body carries it: its
     * value's place in those bytes ([input_off, input_off + input_len));
     * input_len 0 when unknown or when the front made the input whole from
     * a stored response's items. */
    size_t input_off, input_len;
};

/* A word as clients may write one of a header's or metadata's few values:
 * any case, surrounding spaces and tabs ignored. Returns the index of the
 * word in words[0..n) that s[0..len) is, or -1 for anything else. */
int sw_request_word(const char *s, size_t len, const char *const *words, size_t n);

/* A yes/no flag as clients may write it (headers, metadata): true/false,
 * 1/0, yes/no, on/off, as sw_request_word reads them.
 * Returns 1, 0, or -1 for anything else (empty, "n", "false;"). */
int sw_request_flag(const char *s, size_t len);

/* Whether s[0..len) is canon once both are folded: ASCII letters in lower
 * case, '_', '-', spaces and tabs dropped ("X_Spillway_Allow_Cloud",
 * "allow-cloud ", "allowCloud"). The one rule every privacy input (header
 * names, metadata keys) is matched with. Pure. */
bool sw_request_name_folds(const char *s, size_t len, const char *canon);

/* A near-miss of canon: folds to it (sw_request_name_folds) but is not
 * spelled as canon is (any_case: compared without case, as header names
 * are; else exactly, as JSON keys are). Such a name is refused, never
 * ignored. */
bool sw_request_name_near_miss(const char *s, size_t len, const char *canon, bool any_case);

/* An error for the client, rendered in OpenAI's shape by the front:
 * {"error":{"message":..., "type":..., "param":..., "code":...}}. */
struct sw_request_error {
    int status;                 /* HTTP status, 400 for every parse/validation error */
    char type[32];              /* "invalid_request_error" */
    char code[48];              /* stable code, e.g. "invalid_json", "missing_required_parameter" */
    char param[128];            /* JSON path of the offending field, e.g. "messages[2].role"; "" if none */
    char message[1024];         /* says what and where */
};

/* Parses len bytes of body (borrowed; need not be NUL-terminated). On success
 * fills *req (free with sw_request_free) and returns SW_OK; otherwise fills
 * *err, leaves *req empty (body NULL; sw_request_free on it is harmless), returns
 * SW_EINVAL (status 400), or SW_ENOMEM (status 500, type "server_error"). */
int sw_request_parse(const char *body, size_t len, struct sw_chat_request *req,
                     struct sw_request_error *err);
void sw_request_free(struct sw_chat_request *req);

/* sw_request_parse of a body the gateway built (another API's translation):
 * root (taken, freed on failure) is validated as the parse of its compact
 * text would be, the same bounds on its values and depth included, without
 * parsing that text. The text is written once (its length is the bound's
 * byte count) and kept as req->text: what an attempt's body is spliced from,
 * the bytes of the tree the front scans. root's strings must be valid UTF-8
 * without NUL (what every parsed body's are). text_hint: about how long
 * the text will be (the client's body's length), room reserved at once. */
int sw_request_parse_built(json_t *root, size_t text_hint, struct sw_chat_request *req,
                           struct sw_request_error *err);

/* req->text with its pieces put in: the whole text (malloc'd, NUL after its
 * *len bytes), NULL when there is none or out of memory. For tests and
 * tools; the relay sends the pieces where they are. */
char *sw_request_text_whole(const struct sw_chat_request *req, size_t *len);

/* Reads body's "metadata" (borrowed) into req->allow_cloud as chat does:
 * an object of string values, allow_cloud a boolean or a flag string, a
 * near-miss of allow_cloud refused. SW_OK, or SW_EINVAL with *err filled
 * (400 naming the field). For every surface that takes metadata. */
int sw_request_metadata(json_t *body, struct sw_chat_request *req, struct sw_request_error *err);

/* Estimated tokens of a text: ceil(bytes / 4), the usual rule of thumb for
 * English BPE tokenizers. The request estimate adds the chat template's
 * tokens that providers bill on top of the text: SW_REQUEST_MESSAGE_TOKENS
 * per message and SW_REQUEST_PRIMING_TOKENS once (the reply's priming).
 * prompt_tokens_est is the sum, each piece rounded up on its own, over: every
 * string message content, every "text" and "refusal" part's text, every
 * assistant tool call's (and function_call's) "arguments", and every entry
 * of "tools" and "functions" serialized as compact JSON (json_dumpb with
 * JSON_COMPACT); plus 4 per message, plus 3. Tool results are tool messages'
 * contents, so they are counted as contents. Every consumer (routing, the
 * spend reservation, local or shared, token buckets, count_tokens) uses
 * prompt_tokens_est as it is: the template tokens are counted here only. */
long sw_request_estimate_tokens(size_t text_bytes);

/* An upper bound of the prompt tokens a provider can bill for a request body
 * of body_bytes, for the spend reservation (which must not fall short of the
 * bill; routing and token buckets keep the realistic estimate above). A
 * byte-level BPE tokenizer emits at most one token per byte of the text it
 * is given, and every text a provider tokenizes (contents, names, tool
 * definitions, schemas) is a part of the body, whose bytes are never fewer
 * than its decoded text's. Media strings (body bytes media_bytes) count as
 * their media_tokens instead (the rule of SW_REQUEST_IMAGE_TOKENS below),
 * plus the template tokens: SW_REQUEST_MESSAGE_TOKENS per message and
 * SW_REQUEST_PRIMING_TOKENS. Saturates at LONG_MAX. */
long sw_request_bound_tokens(size_t body_bytes, size_t media_bytes, long media_tokens,
                             size_t n_messages);
#define SW_REQUEST_MESSAGE_TOKENS 4     /* OpenAI's per-message template; llmsim bills it too */
#define SW_REQUEST_PRIMING_TOKENS 3     /* OpenAI's reply priming, once per request */

/* Media parts count in prompt_tokens_est too (so a spend reservation covers
 * them): an image_url part SW_REQUEST_IMAGE_TOKENS (detail "low":
 * SW_REQUEST_IMAGE_LOW_TOKENS, OpenAI's count for a low-detail image); an
 * input_audio or file part ceil(bytes of its inline base64 data / 4), at
 * least SW_REQUEST_MEDIA_MIN_TOKENS. */
#define SW_REQUEST_IMAGE_TOKENS 1445        /* OpenAI's largest high-detail image: 85 + 8 tiles
                                               x 170 (768 x 2048 after scaling) */
#define SW_REQUEST_IMAGE_LOW_TOKENS 85
#define SW_REQUEST_MEDIA_MIN_TOKENS 1000

/* The shape of a JSON text, counted without decoding it. */
struct sw_json_shape {
    size_t values;              /* objects, arrays, strings, numbers, booleans, nulls;
                                   object keys are not values */
    size_t depth;               /* deepest nesting of arrays and objects (0: a scalar) */
};

/* Counts the values and the nesting depth of len bytes of JSON in one pass
 * (string contents are skipped, escapes honoured), stopping as soon as either
 * exceeds its max. Returns true when both are within their max. For valid
 * JSON the counts are exact (when the scan ran to the end); for invalid JSON
 * they are never below what a decoder builds before it finds the error.
 * *out (may be NULL) gets the counts as far as the scan went. */
bool sw_request_json_shape(const char *s, size_t len, size_t max_values, size_t max_depth,
                           struct sw_json_shape *out);

/* A client's JSON body decoded (the same for every API, so each answers a
 * bad body in the same words): its shape bounded first (json_too_complex),
 * then decoded rejecting duplicate keys (invalid_json, saying where). NULL
 * with *err set and *rc SW_EINVAL, or SW_ENOMEM (a 500) when memory ran out. */
json_t *sw_request_json_load(const char *body, size_t len, struct sw_request_error *err,
                             int *rc);

/* Fills *e. `type`, `code`, `param` may be NULL (stored as ""); the message
 * is printf-style. Every field is truncated to fit its array, never in the
 * middle of a UTF-8 sequence, and bytes that are not valid UTF-8 (a client's
 * bytes quoted in a message, say) are replaced by '?', so the result can
 * always be rendered by sw_request_error_json. */
void sw_request_error_set(struct sw_request_error *e, int status, const char *type,
                          const char *code, const char *param, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

/* Renders *err in OpenAI's shape:
 * {"error":{"message":...,"type":...,"param":...,"code":...}}, with param and
 * code null when empty. Returns a malloc'ed NUL-terminated string the caller
 * frees with free(), or NULL when out of memory. */
char *sw_request_error_json(const struct sw_request_error *err);

#endif
