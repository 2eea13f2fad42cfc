/* The Responses API's stored responses, read back and deleted:
 *
 *   GET    /v1/responses/{id}               the stored Response object
 *   DELETE /v1/responses/{id}               {"id","object":"response","deleted":true}
 *   GET    /v1/responses/{id}/input_items   a page of its input items (limit, order, after)
 *
 * Authenticated like the API; a record belongs to the key that created it
 * (another key's is a 404, as an unknown or expired id). The store is the
 * live state's (state/respstore.h): in memory, or Redis, which answers later
 * on the loop; an unreachable Redis is a 503. docs/api.md describes them. */
#ifndef SW_FRONT_RESPONSES_STATE_H
#define SW_FRONT_RESPONSES_STATE_H

#include <stdbool.h>

#include "config/config.h"
#include "front/internal.h"

/* Whether path is one of the URLs above ("/v1/responses/" and more). */
bool sw_front_resp_path(const char *path);

/* Before the body: answers 405 for a method the URL does not take and
 * returns false; true otherwise (the key is the caller's check). */
bool sw_front_resp_method_ok(struct sw_http_req *req);

/* Answers the request; key is the client's (NULL: auth off). */
void sw_front_resp_state(struct sw_front *f, struct sw_http_req *req,
                         const struct sw_config_key *key);

#endif
