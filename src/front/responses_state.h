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

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/jscan.h"
#include "config/config.h"
#include "front/internal.h"
#include "request/request.h"
#include "state/respstore.h"

/* Whether path is one of the URLs above ("/v1/responses/" and more). */
bool sw_front_resp_path(const char *path);

/* Before the body: answers 405 for a method the URL does not take and
 * returns false; true otherwise (the key is the caller's check). */
bool sw_front_resp_method_ok(struct sw_http_req *req);

/* Answers the request; key is the client's (NULL: auth off). */
void sw_front_resp_state(struct sw_front *f, struct sw_http_req *req,
                         const struct sw_config_key *key);

/* ---- previous_response_id ----
 *
 * POST /v1/responses continuing a stored response: the record is fetched
 * (in the client key's scope) before the body is parsed, then the request
 * goes on with its items as the parse's `prior`. A sensitive record makes
 * the request sensitive: a conversation never becomes cloud-eligible by
 * being continued. */

struct sw_resp_prior {
    int err;                    /* SW_OK: found; else sw_front_resp_prior_error answers it */
    char id[SW_RESPSTORE_MAX_ID + 1];
    bool sensitive;             /* the stored conversation held sensitive data */
    json_t *items;              /* its input and output items (sw_resp_prior_items), owned
                                   by the caller of resume: borrow them */
    int64_t start_ms;           /* when the request came in */
};

/* Goes on with a request whose prior was fetched (or failed: prior->err). */
typedef void (*sw_front_resp_resume_fn)(struct sw_front *f, struct sw_http_req *req,
                                        const struct sw_resp_prior *prior);

/* When body (len bytes, borrowed) names a previous_response_id, fetches it
 * in the scope of key (NULL: auth off) and returns true: resume is called
 * once, on the loop (at once for the memory store, later for Redis), unless
 * the client left meanwhile; until then the request counts in flight (a
 * drain waits for it) and must not be touched. False when there is nothing
 * to fetch (no such field, or a body the parser will refuse): go on now,
 * with *input the place of the body's top-level `input` value (len 0: none,
 * or the body is not well-formed and the parse will say so). */
bool sw_front_resp_prior(struct sw_front *f, struct sw_http_req *req,
                         const struct sw_config_key *key, const char *body, size_t len,
                         int64_t start_ms, sw_front_resp_resume_fn resume,
                         struct sw_jspan *input);

/* The refusal of a prior that could not be had: 404
 * previous_response_not_found (unknown, expired, deleted or another key's),
 * 400 invalid_type (not a string), 503 store_unavailable (Redis), 500. */
void sw_front_resp_prior_error(const struct sw_resp_prior *prior, struct sw_request_error *e);

/* Makes chat (parsed with prior->items) whole for the backends of the
 * Responses API and for the stored record: the client's body gets the prior
 * items before its own input (state/respitems.h). SW_OK or SW_ENOMEM. */
int sw_front_resp_continue(const struct sw_resp_prior *prior, struct sw_chat_request *chat);

#endif
