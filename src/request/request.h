/* The chat-completions request: parse and validate an OpenAI
 * `POST /v1/chat/completions` body into a struct, and derive the facts the
 * router needs (estimated prompt tokens, requested max tokens, needs, flags).
 * Pure: no I/O, no clock. */
#ifndef SW_REQUEST_REQUEST_H
#define SW_REQUEST_REQUEST_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

struct sw_chat_request {
    json_t *body;               /* owned: the parsed body, forwarded upstream after edits */
    const char *model;          /* borrowed from body: the public model name asked for */
    bool stream;                /* "stream": true */
    bool include_usage;         /* "stream_options": {"include_usage": true} */
    long max_tokens;            /* max_completion_tokens or max_tokens; 0 when absent */
    long prompt_tokens_est;     /* estimate, see sw_request_estimate_tokens */
    size_t n_messages;
    bool has_tools;             /* non-empty "tools" (or legacy "functions") */
    bool has_images;            /* any content part of type image_url / input_audio / file */
    int allow_cloud;            /* metadata.allow_cloud: -1 absent, 0 false, 1 true */
};

/* An error for the client, rendered in OpenAI's shape by the front:
 * {"error":{"message":..., "type":..., "param":..., "code":...}}. */
struct sw_request_error {
    int status;                 /* HTTP status, 400 for every parse/validation error */
    char type[32];              /* "invalid_request_error" */
    char code[48];              /* stable code, e.g. "invalid_json", "missing_required_parameter" */
    char param[128];            /* JSON path of the offending field, e.g. "messages[2].role"; "" if none */
    char message[256];          /* says what and where */
};

/* Parses len bytes of body. On success fills *req (free with sw_request_free)
 * and returns SW_OK; otherwise fills *err and returns SW_EINVAL. */
int sw_request_parse(const char *body, size_t len, struct sw_chat_request *req,
                     struct sw_request_error *err);
void sw_request_free(struct sw_chat_request *req);

/* Estimated tokens of a text: ceil(bytes / 4), the usual rule of thumb for
 * English BPE tokenizers. The request estimate adds 4 tokens per message. */
long sw_request_estimate_tokens(size_t text_bytes);

#endif
