/* The gateway's own queue in front of one local endpoint (DESIGN.md: "The
 * local queue is the gateway's"). At most `slots` requests run at once; the
 * rest wait here, FIFO, up to queue_max. Because the queue is ours, its depth
 * is exact and a waiting request can be moved to the cloud before it ever
 * started locally. Pure: no clock, no I/O; waiters are intrusive. */
#ifndef SW_STATE_LOCALQ_H
#define SW_STATE_LOCALQ_H

#include <stdbool.h>
#include <stdint.h>

struct sw_localq_waiter {
    struct sw_localq_waiter *prev, *next;
    /* Called when a slot is granted to this waiter (it now holds the slot). */
    void (*on_grant)(struct sw_localq_waiter *w);
    bool queued;
};

struct sw_localq {
    long slots;                 /* concurrent requests allowed upstream */
    long queue_max;             /* waiters allowed; 0: none may wait */
    long in_flight;             /* slots held */
    long queued;                /* waiters */
    struct sw_localq_waiter *head, *tail;
    uint64_t granted_total;     /* slots granted, at once or after waiting */
    uint64_t full_total;        /* acquisitions refused: queue full */
};

void sw_localq_init(struct sw_localq *q, long slots, long queue_max);

enum sw_localq_result { SW_LOCALQ_GRANTED, SW_LOCALQ_QUEUED, SW_LOCALQ_FULL };

/* Takes a slot now, or queues w (on_grant fires later), or refuses. */
enum sw_localq_result sw_localq_acquire(struct sw_localq *q, struct sw_localq_waiter *w);

/* Gives a slot back; the first waiter, if any, gets it (its on_grant runs
 * before this returns). */
void sw_localq_release(struct sw_localq *q);

/* Grants free slots to waiters (after slots were raised by a reload). */
void sw_localq_release_spare(struct sw_localq *q);

/* Removes a waiter that gave up (moved to the cloud, deadline, client gone). */
void sw_localq_cancel(struct sw_localq *q, struct sw_localq_waiter *w);

/* 0-based position of a queued waiter (requests ahead of it in the queue). */
long sw_localq_position(const struct sw_localq *q, const struct sw_localq_waiter *w);

#endif
