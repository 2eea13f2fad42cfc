/* The front's state, shared by its two files: front.c (the OpenAI surface,
 * routing of URLs, draining) and admin.c (the operator's endpoints). */
#ifndef SW_FRONT_INTERNAL_H
#define SW_FRONT_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "config/config.h"
#include "front/front.h"
#include "http/server.h"
#include "obs/obs.h"
#include "obs/series.h"
#include "state/live.h"
#include "upstream/curlev.h"

#define SW_LAG_TICK_MS 100
#define SW_LAG_TICKS 10

struct sw_front {
    struct event_base *base;
    struct sw_http_server *http;
    struct sw_config *cfg;          /* referenced */
    struct sw_curlev *cev;
    struct sw_live *live;           /* referenced */
    struct sw_front_hooks hooks;
    struct sw_obs_sinks *obs;       /* borrowed */
    long in_flight;                 /* requests handed to the relay, not finished */
    struct event *drain_check;      /* re-checks until every answer left the process */
    bool draining;
    void (*on_drained)(void *ud);
    void *drained_ud;
    uint64_t next_id;
    int64_t started_s;
    /* Event-loop lag: a timer due every SW_LAG_TICK_MS records how late it
     * fired; the gauge is the worst of the last SW_LAG_TICKS ticks. */
    struct event *lag_timer;
    int64_t lag_last_ms;
    int64_t lag_ms[SW_LAG_TICKS];
    unsigned lag_i;
    /* The dashboard's one-hour ring of one-second samples, filled by a 1 s timer. */
    struct sw_series *series;
    struct event *series_timer;
};

/* The worst event-loop lag (ms) of the last second. */
double sw_front_loop_lag_ms(const struct sw_front *f);

#endif
