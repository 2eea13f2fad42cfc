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

/* Under a spend cap (the file's, or the key's budget) a cloud attempt
 * without max_tokens is reserved at the backend's max_output_tokens: that
 * limit goes upstream too (max_completion_tokens set in the client's body),
 * so the answer cannot cost more than was reserved; true then. Otherwise a
 * limit an earlier attempt set is removed. */
bool sw_relay_body_limit(struct proxy *p, const struct sw_config_backend *be);

/* A stream asks the upstream for its usage (stream_options.include_usage
 * set in the client's body): spend, buckets and learned rates need it.
 * p->client_wants_usage says whether the client gets the usage-only chunk
 * (it asked, or its API always carries the usage). */
void sw_relay_ask_for_usage(struct proxy *p);

/* The path and headers of the attempt's request to backend be, for the
 * body in p->a.io.text: the dialect's, with the client headers a backend of
 * the client's own API gets, the access token and the trace context.
 * SW_OK or an error. */
int sw_relay_target(const struct proxy *p, const struct sw_config_backend *be,
                    struct sw_buf *path, struct sw_buf *hdrs);

/* After the request hooks: io->text from io->body (the one serialisation),
 * io->body released. SW_OK or SW_ENOMEM. */
int sw_relay_body_text(struct sw_stage_io *io);

#endif
