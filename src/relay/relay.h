/* The relay: runs one client request's attempts against its backends, in
 * order, within one deadline, and streams the answer back.
 *
 *  - Non-streaming answers are read whole (bounded by limits.max_response_bytes)
 *    and passed through with `model` rewritten to the public name.
 *  - Streaming answers are relayed event by event as bytes arrive, with
 *    `model` rewritten in every chunk; nothing is buffered whole. A client
 *    that reads slower than the upstream writes pauses the upstream transfer
 *    (bounded output buffer) instead of growing memory.
 *  - An attempt that fails before the first byte reached the client moves on
 *    to the next backend with the time left; after the first byte, a failure
 *    ends the stream with an SSE error event and `data: [DONE]`.
 *  - A client that disconnects aborts the upstream transfer at once, so a
 *    local server frees its slot.
 */
#ifndef SW_RELAY_RELAY_H
#define SW_RELAY_RELAY_H

#include <event2/event.h>
#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "http/server.h"
#include "obs/obs.h"
#include "request/facts.h"
#include "request/request.h"
#include "route/route.h"
#include "state/live.h"
#include "relay/env.h"

/* One request handed to the relay: the parsed request, its facts and what
 * the relay needs around them. All borrowed for the call only, except as
 * sw_relay_start says. */
struct sw_pii_engine;

struct sw_relay_trace_ctx; /* relay/trace.h */

struct sw_relay_request {
    const struct sw_relay_env *env;     /* copied */
    struct sw_http_req *req;            /* taken over */
    struct sw_config *cfg;              /* a reference is taken */
    struct sw_chat_request *chat;       /* its contents are taken (*chat is zeroed) */
    const struct sw_config_model *model;    /* borrowed from cfg */
    const struct sw_facts *facts;       /* copied: route facts, PII, start time (the
                                           sw_now_ms() clock, as facts->route.deadline_ms) */
    const char *request_id;             /* copied */
    const char *key_name;               /* borrowed from cfg; NULL: no key */
    const struct sw_config_key *key;    /* borrowed from cfg; NULL: no key (tenancy) */
    const struct sw_pii_engine *pii;    /* the request's (sw_live_pii), borrowed from env->live */
    const struct sw_relay_trace_ctx *trace; /* copied: its trace context as the front read
                                               it; NULL: read from req */
};

/* Takes over r->req: from here on the relay decides the route
 * (sw_route_decide on the live state), waits in a local queue if it must,
 * and sends the answer. */
void sw_relay_start(const struct sw_relay_request *r);

#endif
