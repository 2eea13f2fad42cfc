#include "state/localq.h"

#include <stdlib.h>

void sw_localq_init(struct sw_localq *q, long slots, long queue_max)
{
    *q = (struct sw_localq){.slots = slots, .queue_max = queue_max};
}

void sw_localq_free(struct sw_localq *q)
{
    free(q->fw);
    q->fw = NULL;
    q->fw_cap = 0;
}

/* ---- Position index: a Fenwick tree over tickets ---- */

static void fw_add(struct sw_localq *q, uint64_t ticket, int32_t d)
{
    if (!q->fw || ticket < q->base_ticket || ticket - q->base_ticket >= q->fw_cap)
        return;
    for (size_t i = (size_t)(ticket - q->base_ticket) + 1; i <= q->fw_cap; i += i & (~i + 1)) {
        q->fw[i - 1] += d;
        q->work++;
    }
}

/* Waiters with a ticket below `ticket`. */
static long fw_before(const struct sw_localq *q, uint64_t ticket, uint64_t *work)
{
    long n = 0;
    for (size_t i = (size_t)(ticket - q->base_ticket); i > 0; i -= i & (~i + 1)) {
        n += q->fw[i - 1];
        (*work)++;
    }
    return n;
}

/* Renumbers the waiters 0..queued-1 into a tree with room for at least as
 * many arrivals again. Runs when the tickets outgrow the tree, which takes
 * at least fw_cap / 2 arrivals since the last run: O(1) amortized per arrival
 * on top of the O(log n) updates. On allocation failure the index is dropped
 * and positions are counted by walking the list. */
static void reindex(struct sw_localq *q)
{
    size_t need = (size_t)q->queued + 1, cap = 64;
    while (cap < 2 * need)
        cap *= 2;
    if (cap != q->fw_cap) {
        int32_t *fw = realloc(q->fw, cap * sizeof *fw);
        if (!fw) {
            sw_localq_free(q);
            return;
        }
        q->fw = fw;
        q->fw_cap = cap;
    }
    for (size_t i = 0; i < cap; i++)
        q->fw[i] = 0;
    q->work += cap;
    /* Linear build: each node adds itself to its parent. */
    uint64_t t = 0;
    for (struct sw_localq_waiter *it = q->head; it; it = it->next) {
        it->ticket = t;
        q->fw[t++] = 1;
        q->work++;
    }
    for (size_t i = 1; i <= cap; i++) {
        size_t parent = i + (i & (~i + 1));
        if (parent <= cap)
            q->fw[parent - 1] += q->fw[i - 1];
    }
    q->work += cap;
    q->base_ticket = 0;
    q->next_ticket = t;
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
    if (w->batch) {
        w->next = NULL;
        w->prev = q->btail;
        if (q->btail)
            q->btail->next = w;
        else
            q->bhead = w;
        q->btail = w;
        w->queued = true;
        q->queued++;
        q->queued_batch++;
        return SW_LOCALQ_QUEUED;
    }
    if (!q->fw || q->next_ticket - q->base_ticket >= q->fw_cap)
        reindex(q);
    w->next = NULL;
    w->prev = q->tail;
    if (q->tail)
        q->tail->next = w;
    else
        q->head = w;
    q->tail = w;
    w->queued = true;
    w->ticket = q->next_ticket++;
    fw_add(q, w->ticket, 1);
    q->queued++;
    return SW_LOCALQ_QUEUED;
}

static void unlink_batch(struct sw_localq *q, struct sw_localq_waiter *w)
{
    if (w->prev)
        w->prev->next = w->next;
    else
        q->bhead = w->next;
    if (w->next)
        w->next->prev = w->prev;
    else
        q->btail = w->prev;
    w->prev = w->next = NULL;
    w->queued = false;
    q->queued--;
    q->queued_batch--;
}

static void unlink_waiter(struct sw_localq *q, struct sw_localq_waiter *w)
{
    if (w->batch) {
        unlink_batch(q, w);
        return;
    }
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
    fw_add(q, w->ticket, -1);
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
    /* A grant's callback may release a slot again (its request cannot use
     * it); that nested call only frees the slot and this loop hands it on,
     * so the stack stays flat however many waiters give their slot back. */
    if (q->granting)
        return;
    q->granting = true;
    while ((q->head || q->bhead) && q->in_flight < q->slots) {
        struct sw_localq_waiter *w = q->head ? q->head : q->bhead;
        unlink_waiter(q, w);
        q->in_flight++;
        q->granted_total++;
        w->on_grant(w);
    }
    q->granting = false;
}

void sw_localq_cancel(struct sw_localq *q, struct sw_localq_waiter *w)
{
    if (w->queued)
        unlink_waiter(q, w);
}

long sw_localq_position(const struct sw_localq *q, const struct sw_localq_waiter *w)
{
    uint64_t *work = &((struct sw_localq *)q)->work;
    if (!w->queued)
        return 0;
    if (w->batch) {
        long pos = q->queued - q->queued_batch;
        for (const struct sw_localq_waiter *it = q->bhead; it && it != w; it = it->next) {
            pos++;
            (*work)++;
        }
        return pos;
    }
    if (q->fw)
        return fw_before(q, w->ticket, work);
    long pos = 0;
    for (const struct sw_localq_waiter *it = q->head; it && it != w; it = it->next) {
        pos++;
        (*work)++;
    }
    return pos;
}
