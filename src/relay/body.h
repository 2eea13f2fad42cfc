/* The attempt's request body, built once per attempt: bytes spliced from
 * the client's own (model replaced, the usage request added) when nothing
 * else changes, else a tree the stages' request hooks may edit (masking,
 * translation into the backend's API), serialised once just before it is
 * sent. */
#ifndef SW_RELAY_BODY_H
#define SW_RELAY_BODY_H

#include <stdbool.h>

#include "relay/proxy.h"

/* Fills io->text (spliced) or io->body (a tree the attempt owns: a deep
 * copy when it is to be masked) for backend `be`. `own_api`: the request
 * goes in the client's own API; `limit`: max_completion_tokens was set for
 * a spend cap (the tree then carries it). SW_OK or SW_ENOMEM. */
int sw_relay_body(struct proxy *p, const struct sw_config_backend *be, bool own_api, bool limit,
                  struct sw_stage_io *io);

/* Removes metadata.allow_cloud (Spillway's own field; OpenAI accepts only
 * string metadata values, Anthropic none of its own) from a body. */
void sw_relay_strip_fields(json_t *body);

/* After the request hooks: io->text from io->body (the one serialisation),
 * io->body released. SW_OK or SW_ENOMEM. */
int sw_relay_body_text(struct sw_stage_io *io);

#endif
