/* The embeddings request: parse and validate an OpenAI `POST /v1/embeddings`
 * body into the same struct a chat request uses (sw_chat_request, api
 * SW_API_EMBEDDINGS, never streamed, no output tokens), so it is routed,
 * scanned, masked and accounted like chat. Pure: no I/O, no clock.
 *
 * Checked: model (non-empty string); input (a non-empty string, a non-empty
 * array of non-empty strings, a non-empty array of token ids, or a non-empty
 * array of non-empty token arrays; at most SW_EMBED_MAX_INPUTS items; token
 * ids are integers from 0 to 2^31-1); dimensions (integer 1..SW_EMBED_MAX_DIMENSIONS);
 * encoding_format ("float" or "base64"); user (string). Errors are 400s in
 * OpenAI's shape with `param` the field's path ("input[3]"). The estimate
 * of prompt tokens is sw_request_estimate_tokens over each string plus the
 * length of each token array. Other fields pass through untouched. */
#ifndef SW_REQUEST_EMBED_H
#define SW_REQUEST_EMBED_H

#include <stddef.h>

#include "request/request.h"

#define SW_EMBED_MAX_INPUTS 2048        /* items of an input array (OpenAI's limit) */
#define SW_EMBED_MAX_DIMENSIONS 65536

/* Like sw_request_parse, for an embeddings body: fills *req (free with
 * sw_request_free), sets req->api = SW_API_EMBEDDINGS and req->token_inputs
 * when the input is token ids (text the PII scanner cannot read). */
int sw_embed_parse(const char *body, size_t len, struct sw_chat_request *req,
                   struct sw_request_error *err);

#endif
