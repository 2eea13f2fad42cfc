/* Google's generateContent API (the Gemini API and Vertex AI) <-> OpenAI
 * chat completions, the gateway's internal form. Pure: no I/O, no clock
 * (the caller passes `created`).
 *
 * Requests: system and developer messages as systemInstruction; user and
 * assistant messages as contents of role user and model (consecutive ones
 * of a role joined, as Gemini wants turns to alternate); text parts as
 * text, data: image URLs as inlineData; assistant tool_calls as
 * functionCall parts (arguments a JSON object), tool messages as
 * functionResponse parts named after the call they answer; tools as
 * functionDeclarations, tool_choice as toolConfig.functionCallingConfig;
 * max tokens, temperature, top_p, stop, seed, penalties and
 * response_format (json_object: responseMimeType application/json;
 * json_schema: and responseSchema, the schema in Gemini's OpenAPI subset)
 * in generationConfig. What has no form there (n > 1, logprobs, audio,
 * image URLs that are not data: URLs, ...) is refused naming the field.
 *
 * Answers: the first candidate's text parts as content (thought parts left
 * out), functionCall parts as tool_calls; finishReason STOP as stop (or
 * tool_calls when it called a function), MAX_TOKENS as length, the safety
 * reasons (SAFETY, RECITATION, BLOCKLIST, PROHIBITED_CONTENT, SPII,
 * IMAGE_SAFETY) as content_filter, and a prompt that promptFeedback blocked
 * as an empty answer with finish_reason content_filter; usageMetadata as
 * usage (promptTokenCount; candidatesTokenCount plus thoughtsTokenCount). */
#ifndef SW_DIALECT_GEMINI_H
#define SW_DIALECT_GEMINI_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "request/request.h"

/* The harm categories a configured threshold is sent for. */
extern const char *const sw_gem_harm_categories[];

/* An OpenAI chat request (`in`, borrowed, valid per sw_request_parse) as a
 * generateContent body: a new tree, or NULL with *err filled (400
 * invalid_value or untranslatable naming the field, 500 out of memory).
 * max_tokens: max_completion_tokens, else max_tokens, else
 * default_max_tokens (when > 0). */
json_t *sw_gem_req_from_openai(const json_t *in, long default_max_tokens,
                               struct sw_request_error *err);

/* A JSON Schema (borrowed) as Gemini's schema (OpenAPI subset): type names
 * upper-cased, a ["T","null"] type as T with nullable, keywords it does
 * not know left out. A new tree; NULL when out of memory. */
json_t *sw_gem_schema(const json_t *schema);

/* safetySettings for threshold (every category of sw_gem_harm_categories);
 * a new tree, NULL when out of memory. */
json_t *sw_gem_safety_settings(const char *threshold);

/* finish_reason for a finishReason (NULL: stop); never NULL. tools: the
 * candidate called a function. */
const char *sw_gem_finish_reason(const char *finish_reason, bool tools);

/* A whole GenerateContentResponse (borrowed) as an OpenAI answer; NULL when
 * it is not one (no candidates and no promptFeedback). */
json_t *sw_gem_resp_to_openai(const json_t *in, const char *model, long long created);

/* ---- A streamGenerateContent?alt=sse stream -> OpenAI chunks ---- */

struct sw_gem_to_oai {
    char id[96];
    char model[128];
    long long created;
    long in, out;               /* the latest usageMetadata, -1 none */
    int n_tools;                /* tool calls so far (their index) */
    bool role_sent;
    bool tools;                 /* a functionCall was streamed */
    bool done;                  /* a finishReason (or a blocked prompt) was seen */
    char error_type[32];        /* an error event's status ("RESOURCE_EXHAUSTED"), "" none */
};

void sw_gem_to_oai_init(struct sw_gem_to_oai *s, const char *model, long long created);
/* One event's data (a GenerateContentResponse, or {"error":{...}}): the
 * chunks it makes appended to `chunks` (an array); the finishing one adds
 * a usage-only chunk and sets done. 0, or -1 for an error event or data
 * that is not a response (*msg a short static description). */
int sw_gem_to_oai_event(struct sw_gem_to_oai *s, const char *data, size_t len, json_t *chunks,
                        const char **msg);

/* An error body of Google's shape ({"error":{code,message,status}}): its
 * status word into out (cut to fit, "" when absent or not a word). */
void sw_gem_error_status(const json_t *body, char *out, size_t n);

#endif
