/* Active health checks and warm-up of local backends (see docs/routing.md:
 * cold endpoints and latency). Every routing.health_interval_ms each local backend with a health_path
 * gets a GET: 200 is up, 503 ("Loading model", llama.cpp) is cold, no answer
 * is down; the round trip feeds the latency view. A cold backend gets one
 * small warm-up request in the background so it loads while the traffic it
 * cannot take yet goes to the cloud; keep_warm_ms sends such a ping
 * periodically so an idle model is not unloaded. */
#ifndef SW_UPSTREAM_HEALTH_H
#define SW_UPSTREAM_HEALTH_H

#include <event2/event.h>

#include "config/config.h"
#include "state/live.h"
#include "upstream/curlev.h"

struct sw_healthcheck;

/* Starts checking at once. Borrows base, cev, cfg and live. NULL on error. */
struct sw_healthcheck *sw_healthcheck_new(struct event_base *base, struct sw_curlev *cev,
                                struct sw_config *cfg, struct sw_live *live);
void sw_healthcheck_free(struct sw_healthcheck *h);

#endif
