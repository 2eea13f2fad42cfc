/* The front's state, shared by its two files: front.c (the OpenAI surface,
 * routing of URLs, draining) and admin.c (the operator's endpoints). */
#ifndef SW_FRONT_INTERNAL_H
#define SW_FRONT_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "config/config.h"
#include "front/hooks.h"
#include "front/ticks.h"
#include "http/server.h"
#include "obs/obs.h"
#include "obs/series.h"
#include "state/live.h"
#include "upstream/curlev.h"

struct sw_workpool;

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
    /* The event-loop lag ring and the 1 s timer that fills series. */
    struct sw_ticks ticks;
    /* The dashboard's one-hour ring of one-second samples (sw_admin_series_tick). */
    struct sw_series *series;
    /* Request bodies above 64 KiB are scanned for PII on these workers
     * (front.c); NULL with limits.scan_threads 0: every body is scanned on
     * the loop. */
    struct sw_workpool *scan_pool;
    long scan_threads;              /* as started (a change takes a restart) */
    uint64_t scans_offloaded;       /* bodies handed to the pool */
    uint64_t scans_dropped;         /* of those, clients gone before the scan came back */
};

/* A request the front counted in flight (f->in_flight++) has ended: a
 * drain waiting for it may finish. */
void sw_front_finished(struct sw_front *f);

#endif
