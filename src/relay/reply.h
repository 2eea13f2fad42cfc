/* Answers to the client: the Spillway headers every answer carries and
 * errors in OpenAI's shape ({"error":{"message","type","param","code"}}). */
#ifndef SW_RELAY_REPLY_H
#define SW_RELAY_REPLY_H

#include <stdbool.h>
#include <stddef.h>

#include "http/server.h"

/* The route headers: which backend answered, its tier, its region (NULL:
 * "none", a cloud without one) and why it was chosen. "none" for answers no
 * backend produced. */
void sw_reply_route_headers(struct sw_http_req *req, const char *backend,
                            const char *tier, const char *region, const char *reason);

/* Sends a complete JSON answer (body is len bytes) with the given status. */
void sw_reply_json(struct sw_http_req *req, int status, const char *body, size_t len);

/* Whether the request came to Anthropic's API (/v1/messages..., or
 * /v1/models... with an anthropic-version header): its errors are then in
 * Anthropic's shape. */
bool sw_reply_is_anthropic(struct sw_http_req *req);

/* Sends an error in the shape of the API the client called: OpenAI's, or
 * for /v1/messages Anthropic's {"type":"error","error":{"type","message"}}
 * (type from the status, 503 answered as 529 overloaded_error). `code` and `param` may be NULL (rendered as
 * null). The message is printf-formatted and must never contain prompt text
 * or secrets. */
void sw_reply_error(struct sw_http_req *req, int status, const char *type,
                    const char *code, const char *param, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

#endif
