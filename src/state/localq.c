#include "state/localq.h"

#include <stddef.h>

void sw_localq_init(struct sw_localq *q, long slots, long queue_max)
{
    *q = (struct sw_localq){.slots = slots, .queue_max = queue_max};
}

enum sw_localq_result sw_localq_acquire(struct sw_localq *q, struct sw_localq_waiter *w)
{
    if (q->in_flight < q->slots && q->queued == 0) {
        q->in_flight++;
        q->granted_total++;
        return SW_LOCALQ_GRANTED;
    }
    if (q->queued >= q->queue_max) {
        q->full_total++;
        return SW_LOCALQ_FULL;
    }
    w->next = NULL;
    w->prev = q->tail;
    if (q->tail)
        q->tail->next = w;
    else
        q->head = w;
    q->tail = w;
    w->queued = true;
    q->queued++;
    return SW_LOCALQ_QUEUED;
}

static void unlink_waiter(struct sw_localq *q, struct sw_localq_waiter *w)
{
    if (w->prev)
        w->prev->next = w->next;
    else
        q->head = w->next;
    if (w->next)
        w->next->prev = w->prev;
    else
        q->tail = w->prev;
    w->prev = w->next = NULL;
    w->queued = false;
    q->queued--;
}

void sw_localq_release(struct sw_localq *q)
{
    if (q->in_flight > 0)
        q->in_flight--;
    sw_localq_release_spare(q);
}

void sw_localq_release_spare(struct sw_localq *q)
{
    while (q->head && q->in_flight < q->slots) {
        struct sw_localq_waiter *w = q->head;
        unlink_waiter(q, w);
        q->in_flight++;
        q->granted_total++;
        w->on_grant(w);
    }
}

void sw_localq_cancel(struct sw_localq *q, struct sw_localq_waiter *w)
{
    if (w->queued)
        unlink_waiter(q, w);
}

long sw_localq_position(const struct sw_localq *q, const struct sw_localq_waiter *w)
{
    long pos = 0;
    for (const struct sw_localq_waiter *it = q->head; it && it != w; it = it->next)
        pos++;
    return pos;
}
