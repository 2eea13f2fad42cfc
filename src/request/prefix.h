/* The prefix identity of a chat-form request (route/affinity.h): block 0 is
 * "tools" (or "functions") and the leading system and developer messages,
 * then one block per message; hash k is SHA-256 over hash k-1 and block k's
 * compact JSON (keys sorted), its first 8 bytes kept. Every API surface is
 * parsed into the chat form first (Anthropic Messages, Responses), so one
 * function covers them all. Token counts at each boundary are
 * prompt_tokens_est in proportion to the bytes up to it. Nothing of the
 * content is kept or logged. Pure: no I/O, no clock. */
#ifndef SW_REQUEST_PREFIX_H
#define SW_REQUEST_PREFIX_H

#include <jansson.h>

#include "route/affinity.h"

/* Fills *out from body (borrowed: the chat-form body). A body without
 * messages, or a hashing failure, gives n 0 (no identity: no affinity). */
void sw_request_prefix(const json_t *body, long prompt_tokens_est, struct sw_prefix *out);

#endif
