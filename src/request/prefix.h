/* The prefix identity of a chat-form request (route/affinity.h): block 0 is
 * the tools ("tools" or "functions", each tool an element) and the leading
 * system and developer messages,
 * then one block per message; hash k is the 64-bit XXH3 of the digests of
 * the elements of blocks 0..k fed into one hash state, digested only at the
 * boundaries kept. An element's digest is the XXH3 of its value (each value
 * with its type and length, an object's members in key order: the same
 * values in any key order hash the same), noted with a value the parse memo
 * holds, so a resent message is not walked again. Not a cryptographic hash: a
 * collision only sends a request to a box without its cache. Every API
 * surface is parsed into the chat form first (Anthropic Messages,
 * Responses), so one function covers them all. Token counts at each
 * boundary are prompt_tokens_est in proportion to the compact JSON bytes up
 * to it (escapes not counted). Nothing of the content is kept or logged.
 * Pure: no I/O, no clock. */
#ifndef SW_REQUEST_PREFIX_H
#define SW_REQUEST_PREFIX_H

#include <jansson.h>

#include "route/affinity.h"

/* Fills *out from body (borrowed: the chat-form body). A body without
 * messages, nested deeper than 128 or out of memory gives n 0 (no
 * identity: no affinity). */
void sw_request_prefix(const json_t *body, long prompt_tokens_est, struct sw_prefix *out);

#endif
