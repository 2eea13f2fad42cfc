/* A small pool of worker threads for CPU-bound jobs the event loop must not
 * run itself (the PII scan or masking of a large body). A job is a function
 * and its context (run, ud) and a completion callback (done) that is called
 * back on the loop's own thread; it can be cancelled.
 *
 * The hand-back is a self-pipe: a worker queues the finished job under the
 * pool's mutex and writes one byte to a non-blocking pipe whose read end is a
 * persistent EV_READ event on the loop, so no libevent call is made from a
 * worker (the base needs no evthread locking). Workers block every signal:
 * signals are the loop's.
 *
 * Rules:
 *  - run(ud) runs on a worker and must touch only what the job owns (and
 *    thread-safe shared state such as an immutable PII engine). The loop
 *    leaves ud alone until done.
 *  - done(ud, end) is called exactly once per submitted job, on the loop
 *    thread, from a loop callback or from sw_workpool_free (never from inside
 *    sw_workpool_submit or sw_workpool_cancel). done owns ud from then on.
 *  - sw_workpool_cancel: a job no worker took yet is never run; one running
 *    finishes (its result is for done to drop). Either way done comes with
 *    SW_WORK_CANCELLED, so it is where ud is freed.
 *  - sw_workpool_free waits for the running jobs to finish (it joins every
 *    worker), then calls done for every job not yet handed back:
 *    SW_WORK_NOT_RUN for those no worker took. A done called from there must
 *    not submit to the pool. */
#ifndef SW_COMMON_WORKPOOL_H
#define SW_COMMON_WORKPOOL_H

#include <event2/event.h>
#include <stdbool.h>

struct sw_workpool;
struct sw_work;

/* How a job ended, as its done learns it. */
enum sw_work_end {
    SW_WORK_RAN,            /* run(ud) finished */
    SW_WORK_CANCELLED,      /* sw_workpool_cancel was called: run may or may not have run */
    SW_WORK_NOT_RUN,        /* the pool was freed before a worker took it */
};

/* `threads` workers (1..SW_WORKPOOL_MAX_THREADS), handing jobs back on base.
 * NULL on error (nothing started). */
#define SW_WORKPOOL_MAX_THREADS 16
struct sw_workpool *sw_workpool_new(struct event_base *base, int threads);

/* Queues a job (loop thread only). NULL when it cannot (out of memory):
 * nothing of it is called then. The handle is valid until done is called. */
struct sw_work *sw_workpool_submit(struct sw_workpool *p, void (*run)(void *ud),
                                   void (*done)(void *ud, enum sw_work_end end), void *ud);

/* Cancels a job whose done was not called yet (loop thread only). */
void sw_workpool_cancel(struct sw_workpool *p, struct sw_work *w);

/* Jobs ever submitted (0 for NULL). */
unsigned long long sw_workpool_submitted(const struct sw_workpool *p);

/* Jobs submitted and not yet handed back to done (0 for NULL). */
long sw_workpool_pending(const struct sw_workpool *p);

/* Joins the workers, then hands back what is left (see above). NULL: no-op. */
void sw_workpool_free(struct sw_workpool *p);

#endif
