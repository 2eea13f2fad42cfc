/* The front: libevent's HTTP server speaking the OpenAI API.
 *
 *   POST /v1/chat/completions   relayed (streaming and not)
 *   GET  /v1/models             the public model names
 *   GET  /healthz               200 while serving, 503 while draining
 *
 * It authenticates client keys, enforces the limits (body, headers,
 * connections, slow clients), validates the request, derives the plan of
 * attempts and hands the request to the relay. Every error is in OpenAI's
 * shape with the right status, and every answer carries X-Spillway-Backend,
 * X-Spillway-Tier, X-Spillway-Reason and X-Request-Id. */
#ifndef SW_FRONT_FRONT_H
#define SW_FRONT_FRONT_H

#include <event2/event.h>

#include "config/config.h"
#include "front/hooks.h"
#include "obs/obs.h"
#include "state/live.h"
#include "upstream/curlev.h"

struct sw_front;

/* Binds cfg->listen_host:listen_port and starts serving on base. Takes a
 * reference on cfg and on live. Logs "spillway: listening on HOST:PORT". NULL on error
 * (logged). */
struct sw_front *sw_front_new(struct event_base *base, struct sw_config *cfg,
                              struct sw_curlev *cev, struct sw_live *live,
                              struct sw_obs_sinks *obs);

/* Serves new requests with cfg and live from now on (references taken; the
 * old ones are released, and requests in flight keep theirs). Applies the new
 * limits; a changed listen address needs a restart (logged). */
void sw_front_swap(struct sw_front *f, struct sw_config *cfg, struct sw_live *live);

/* What the admin API asks of the daemon (front/hooks.h). */
void sw_front_set_hooks(struct sw_front *f, const struct sw_front_hooks *hooks);

/* Stops accepting connections; requests already in flight go on. Calls
 * on_drained(ud) once none is left (at once if none is in flight). */
void sw_front_drain(struct sw_front *f, void (*on_drained)(void *ud), void *ud);

/* Requests being relayed right now. */
long sw_front_in_flight(const struct sw_front *f);

void sw_front_free(struct sw_front *f);

#endif
