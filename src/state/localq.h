/* The gateway's own queue in front of one local endpoint (DESIGN.md: "The
 * local queue is the gateway's"). At most `slots` requests run at once; the
 * rest wait here, FIFO, up to queue_max. Because the queue is ours, its depth
 * is exact and a waiting request can be moved to the cloud before it ever
 * started locally. Pure: no clock, no I/O; waiters are intrusive.
 *
 * Cost with n waiters: acquire, cancel and position are O(log n) (amortized:
 * a Fenwick tree counts the waiters by ticket, and is re-indexed from the
 * list once the tickets outgrow it); granting is iterative, so a slot that
 * an on_grant callback gives straight back (a waiter whose deadline passed)
 * neither recurses nor grows the stack with the number of such waiters.
 *
 * Priority: waiters marked batch wait in a lane of their own. A slot goes to
 * the first interactive waiter; the batch lane is served FIFO only when no
 * interactive request waits, so an interactive request never waits behind a
 * batch one (queue_max bounds both lanes together). A batch waiter's
 * position counts every interactive waiter plus the batch waiters before it
 * (a list walk: O(batch waiters ahead)). */
#ifndef SW_STATE_LOCALQ_H
#define SW_STATE_LOCALQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sw_localq_waiter {
    struct sw_localq_waiter *prev, *next;
    /* Called when a slot is granted to this waiter (it now holds the slot).
     * It may release slots, cancel or queue waiters: grants that result run
     * after it returns, from the loop that called it. */
    void (*on_grant)(struct sw_localq_waiter *w);
    bool queued;
    uint64_t ticket;            /* order of arrival (internal) */
    bool batch;                 /* set by the caller before acquire: a batch request waits
                                   in the batch lane, behind every interactive waiter */
};

struct sw_localq {
    long slots;                 /* concurrent requests allowed upstream */
    long queue_max;             /* waiters allowed; 0: none may wait */
    long in_flight;             /* slots held */
    long queued;                /* waiters, both lanes */
    struct sw_localq_waiter *head, *tail;   /* the interactive lane */
    struct sw_localq_waiter *bhead, *btail; /* the batch lane: granted only when the
                                               interactive lane is empty */
    long queued_batch;          /* waiters in the batch lane */
    uint64_t granted_total;     /* slots granted, at once or after waiting */
    uint64_t full_total;        /* acquisitions refused: queue full */

    /* internal: position index and the granting loop */
    uint64_t next_ticket;       /* ticket of the next waiter */
    uint64_t base_ticket;       /* the ticket at index 0 of fw */
    int32_t *fw;                /* Fenwick tree: 1 per queued waiter, by ticket - base_ticket */
    size_t fw_cap;
    bool granting;              /* inside the grant loop: a nested release only counts */
    uint64_t work;              /* test hook: steps taken by position, index upkeep and
                                   list walks (the cost, counted instead of timed) */
};

void sw_localq_init(struct sw_localq *q, long slots, long queue_max);

/* Frees the position index (the waiters are the caller's). */
void sw_localq_free(struct sw_localq *q);

enum sw_localq_result { SW_LOCALQ_GRANTED, SW_LOCALQ_QUEUED, SW_LOCALQ_FULL };

/* Takes a slot now, or queues w (on_grant fires later), or refuses. */
enum sw_localq_result sw_localq_acquire(struct sw_localq *q, struct sw_localq_waiter *w);

/* Gives a slot back; the first waiter, if any, gets it (its on_grant runs
 * before this returns, unless this is called from within an on_grant: then
 * the outer grant loop hands the slot on). */
void sw_localq_release(struct sw_localq *q);

/* Grants free slots to waiters (after slots were raised by a reload). */
void sw_localq_release_spare(struct sw_localq *q);

/* Removes a waiter that gave up (moved to the cloud, deadline, client gone). */
void sw_localq_cancel(struct sw_localq *q, struct sw_localq_waiter *w);

/* 0-based position of a queued waiter (requests ahead of it in the queue). */
long sw_localq_position(const struct sw_localq *q, const struct sw_localq_waiter *w);

#endif
