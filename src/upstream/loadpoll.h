/* The load-signal poller (docs/routing.md, "Load signals"): every
 * backends[].load.poll_ms each local backend with a load source gets one GET
 * of its load endpoint (at most one in flight; timeout: the poll interval,
 * at least 100 ms, at most 2 s), parsed by loadsig.c and stored with
 * sw_live_on_load; the prefill figures of a /metrics page
 * (sw_load_parse_prefill) with sw_live_on_prefill. Runs on the event loop through libcurl's multi interface
 * (sw_curlev), like the health checks. */
#ifndef SW_UPSTREAM_LOADPOLL_H
#define SW_UPSTREAM_LOADPOLL_H

#include <event2/event.h>

#include "config/config.h"
#include "state/live.h"
#include "upstream/curlev.h"

struct sw_loadpoll;

/* Starts polling at once. Borrows base, cev, cfg and live. NULL on
 * allocation failure; a config without load sources gives an idle poller. */
struct sw_loadpoll *sw_loadpoll_new(struct event_base *base, struct sw_curlev *cev,
                                    struct sw_config *cfg, struct sw_live *live);
void sw_loadpoll_free(struct sw_loadpoll *lp);

#endif
