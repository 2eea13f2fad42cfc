/* The event loop's order of service. A new stream's path to its first byte
 * (upstream connect, request write, the answer's first read) goes first; then
 * reading and starting requests, accepting connections, timers and the admin
 * API; the rest of the upstream answers (events of streams already started)
 * last. A burst of new streams then waits for the streams ahead of it to
 * start, not for the events of the streams already running. */
#ifndef SW_COMMON_LOOP_H
#define SW_COMMON_LOOP_H

#include <event2/event.h>

enum sw_loop_pri {
    SW_PRI_FIRST = 0,   /* upstream connect and request write, the answer's first read */
    SW_PRI_DEFAULT = 1, /* everything else: accept, request reads, timers, admin, libcurl */
    SW_PRI_BULK = 2,    /* upstream answers after their first read */
    SW_PRI_N = 3,
};

/* At most this many callbacks of SW_PRI_DEFAULT or SW_PRI_BULK run before
 * the loop polls again: a connect completing or a first answer arriving
 * while hundreds of requests are ready waits for this many, not for all.
 * Each early return re-polls, and epoll reports again every level-triggered
 * descriptor still waiting (O(ready) per return): upstream reads are
 * edge-triggered for that reason, and the batch is not smaller. */
#define SW_LOOP_BATCH 32

/* Connections accepted per callback of the listening socket (nginx without
 * multi_accept takes one): a burst in the backlog is taken a batch at a
 * time, between the requests already accepted. */
#define SW_ACCEPT_BATCH 16

/* A base with the priorities above. NULL on failure. */
struct event_base *sw_loop_new(void);

/* Sets ev's priority, clamped to the base's number of priorities (a plain
 * event_base_new base has one). 0, or -1 if ev is active (unchanged then). */
int sw_loop_pri(struct event *ev, enum sw_loop_pri pri);

#endif
