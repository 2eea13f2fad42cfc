/* What the relay needs from the process around it (relay.h), apart so the
 * parts of the attempt loop can name it without the relay's entry point. */
#ifndef SW_RELAY_ENV_H
#define SW_RELAY_ENV_H

#include <event2/event.h>

#include "obs/obs.h"
#include "state/live.h"

struct sw_curlev; /* the upstream transports' pools (upstream/curlev.h) */
struct sw_workpool;

/* What the relay needs from the process around it. */
struct sw_relay_env {
    struct event_base *base;
    struct sw_curlev *cev;
    struct sw_live *live;       /* routing state: breakers, queues, buckets, spend */
    struct sw_obs_sinks *obs;   /* metrics and the decision log */
    struct sw_workpool *pool;   /* where a large body's PII hooks run; NULL: on the loop */
    /* Called once per relayed request when it is completely done (answered or
     * abandoned), so the front can count in-flight requests for draining. */
    void (*on_finish)(void *ud);
    void *ud;
};

#endif
