/* The gateway's local queue: slots, FIFO order, queue_max, cancel, positions. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "state/localq.h"

static int grants[16];
static int n_grants;

struct tw {
    struct sw_localq_waiter w; /* first member: the callback casts back */
    int id;
};

static void on_grant(struct sw_localq_waiter *w)
{
    grants[n_grants++] = ((struct tw *)w)->id;
}

static void test_slots_then_fifo(void **state)
{
    (void)state;
    struct sw_localq q;
    sw_localq_init(&q, 2, 3);
    struct tw w[6];
    for (int i = 0; i < 6; i++)
        w[i] = (struct tw){.w = {.on_grant = on_grant}, .id = i};
    n_grants = 0;
    assert_int_equal(sw_localq_acquire(&q, &w[0].w), SW_LOCALQ_GRANTED);
    assert_int_equal(sw_localq_acquire(&q, &w[1].w), SW_LOCALQ_GRANTED);
    assert_int_equal(sw_localq_acquire(&q, &w[2].w), SW_LOCALQ_QUEUED);
    assert_int_equal(sw_localq_acquire(&q, &w[3].w), SW_LOCALQ_QUEUED);
    assert_int_equal(sw_localq_acquire(&q, &w[4].w), SW_LOCALQ_QUEUED);
    assert_int_equal(sw_localq_acquire(&q, &w[5].w), SW_LOCALQ_FULL);
    assert_int_equal(q.full_total, 1);
    assert_int_equal(q.in_flight, 2);
    assert_int_equal(q.queued, 3);
    assert_int_equal(sw_localq_position(&q, &w[2].w), 0);
    assert_int_equal(sw_localq_position(&q, &w[4].w), 2);

    sw_localq_cancel(&q, &w[3].w); /* moved to the cloud */
    assert_int_equal(q.queued, 2);
    assert_int_equal(sw_localq_position(&q, &w[4].w), 1);
    sw_localq_cancel(&q, &w[3].w); /* twice is harmless */
    assert_int_equal(q.queued, 2);

    sw_localq_release(&q);
    assert_int_equal(n_grants, 1);
    assert_int_equal(grants[0], 2);
    sw_localq_release(&q);
    assert_int_equal(grants[1], 4);
    assert_int_equal(q.in_flight, 2);
    assert_int_equal(q.queued, 0);
    sw_localq_release(&q);
    sw_localq_release(&q);
    assert_int_equal(q.in_flight, 0);
    sw_localq_release(&q); /* never below zero */
    assert_int_equal(q.in_flight, 0);
    assert_int_equal(q.granted_total, 4);
    sw_localq_free(&q);
}

/* Batch waiters wait in their own lane: every interactive waiter, however
 * late, is granted before any batch one; batch keeps FIFO among itself;
 * queue_max bounds both lanes together; positions count the interactive
 * lane first. */
static void test_batch_lane(void **state)
{
    (void)state;
    struct sw_localq q;
    sw_localq_init(&q, 1, 5);
    struct tw w[7];
    for (int i = 0; i < 7; i++)
        w[i] = (struct tw){.w = {.on_grant = on_grant, .batch = i == 1 || i == 2}, .id = i};
    n_grants = 0;
    assert_int_equal(sw_localq_acquire(&q, &w[0].w), SW_LOCALQ_GRANTED);
    assert_int_equal(sw_localq_acquire(&q, &w[1].w), SW_LOCALQ_QUEUED);   /* batch */
    assert_int_equal(sw_localq_acquire(&q, &w[2].w), SW_LOCALQ_QUEUED);   /* batch */
    assert_int_equal(sw_localq_acquire(&q, &w[3].w), SW_LOCALQ_QUEUED);   /* interactive */
    assert_int_equal(sw_localq_position(&q, &w[3].w), 0);
    assert_int_equal(sw_localq_position(&q, &w[1].w), 1);
    assert_int_equal(sw_localq_position(&q, &w[2].w), 2);
    assert_int_equal(sw_localq_acquire(&q, &w[4].w), SW_LOCALQ_QUEUED);   /* interactive */
    assert_int_equal(sw_localq_position(&q, &w[2].w), 3);
    assert_int_equal(sw_localq_acquire(&q, &w[5].w), SW_LOCALQ_QUEUED);   /* 5 waiting */
    assert_int_equal(sw_localq_acquire(&q, &w[6].w), SW_LOCALQ_FULL);
    assert_int_equal(q.queued, 5);
    assert_int_equal(q.queued_batch, 2);
    sw_localq_cancel(&q, &w[2].w);     /* a batch waiter gives up */
    assert_int_equal(q.queued_batch, 1);
    for (int k = 0; k < 4; k++)
        sw_localq_release(&q);
    assert_int_equal(n_grants, 4);
    assert_int_equal(grants[0], 3);
    assert_int_equal(grants[1], 4);
    assert_int_equal(grants[2], 5);
    assert_int_equal(grants[3], 1);
    assert_int_equal(q.queued, 0);
    assert_int_equal(q.queued_batch, 0);
    /* An idle queue grants batch at once like anything else. */
    sw_localq_release(&q);
    w[2].w.queued = false;
    assert_int_equal(sw_localq_acquire(&q, &w[2].w), SW_LOCALQ_GRANTED);
    sw_localq_free(&q);
}

static void test_waiters_keep_order_over_newcomers(void **state)
{
    (void)state;
    struct sw_localq q;
    sw_localq_init(&q, 1, 8);
    struct tw a = {.w = {.on_grant = on_grant}, .id = 1}, b = {.w = {.on_grant = on_grant}, .id = 2},
              c = {.w = {.on_grant = on_grant}, .id = 3};
    n_grants = 0;
    assert_int_equal(sw_localq_acquire(&q, &a.w), SW_LOCALQ_GRANTED);
    assert_int_equal(sw_localq_acquire(&q, &b.w), SW_LOCALQ_QUEUED);
    /* A slot frees and b gets it before c, who arrives later, can jump in. */
    sw_localq_release(&q);
    assert_int_equal(grants[0], 2);
    assert_int_equal(sw_localq_acquire(&q, &c.w), SW_LOCALQ_QUEUED);
    sw_localq_free(&q);
}

static void test_zero_queue(void **state)
{
    (void)state;
    struct sw_localq q;
    sw_localq_init(&q, 1, 0);
    struct tw a = {.w = {.on_grant = on_grant}, .id = 1}, b = {.w = {.on_grant = on_grant}, .id = 2};
    assert_int_equal(sw_localq_acquire(&q, &a.w), SW_LOCALQ_GRANTED);
    assert_int_equal(sw_localq_acquire(&q, &b.w), SW_LOCALQ_FULL);
    sw_localq_free(&q);
}

/* ---- 100,000 waiters: flat stack, cost that grows with n log n ---- */

#define BIG 100000

struct bw {
    struct sw_localq_waiter w; /* first member */
    long id;
};

static struct sw_localq *big_q;
static long big_next;           /* the id the next grant must carry (FIFO) */
static long big_order_errors;
static int depth, max_depth;

/* A waiter whose deadline passed while it waited: it gets the slot, cannot
 * use it and gives it straight back (dispatch -> attempt end -> release). */
static void on_grant_expired(struct sw_localq_waiter *w)
{
    depth++;
    if (depth > max_depth)
        max_depth = depth;
    if (((struct bw *)w)->id != big_next)
        big_order_errors++;
    big_next++;
    sw_localq_release(big_q);
    depth--;
}

static void test_expired_waiters_do_not_grow_the_stack(void **state)
{
    (void)state;
    struct sw_localq q;
    struct bw *w = calloc(BIG, sizeof *w);
    assert_non_null(w);
    sw_localq_init(&q, 1, BIG);
    big_q = &q;
    big_next = 0;
    big_order_errors = 0;
    depth = max_depth = 0;
    struct bw holder = {.w = {.on_grant = on_grant_expired}, .id = -1};
    assert_int_equal(sw_localq_acquire(&q, &holder.w), SW_LOCALQ_GRANTED);
    for (long i = 0; i < BIG; i++) {
        w[i] = (struct bw){.w = {.on_grant = on_grant_expired}, .id = i};
        assert_int_equal(sw_localq_acquire(&q, &w[i].w), SW_LOCALQ_QUEUED);
    }
    /* The running request ends: every waiter in turn gets the slot and gives
     * it back, all from this one call, one callback frame deep. */
    sw_localq_release(&q);
    assert_int_equal(big_next, BIG);
    assert_int_equal(big_order_errors, 0);
    assert_int_equal(max_depth, 1);
    assert_int_equal(q.queued, 0);
    assert_int_equal(q.in_flight, 0);
    assert_int_equal(q.granted_total, BIG + 1);
    sw_localq_free(&q);
    free(w);
}

static void on_grant_keep(struct sw_localq_waiter *w)
{
    (void)w;
}

static void test_positions_are_exact_and_cheap(void **state)
{
    (void)state;
    struct sw_localq q;
    struct bw *w = calloc(BIG, sizeof *w);
    assert_non_null(w);
    sw_localq_init(&q, 1, BIG);
    struct bw holder = {.w = {.on_grant = on_grant_keep}, .id = -1};
    assert_int_equal(sw_localq_acquire(&q, &holder.w), SW_LOCALQ_GRANTED);
    uint64_t ops = 1;
    for (long i = 0; i < BIG; i++) {
        w[i] = (struct bw){.w = {.on_grant = on_grant_keep}, .id = i};
        assert_int_equal(sw_localq_acquire(&q, &w[i].w), SW_LOCALQ_QUEUED);
        ops++;
    }
    /* Rounds as the relay's 25 ms check does them: every waiter asks its
     * position; between rounds some leave from the middle (deadline,
     * overflow to the cloud), some are granted from the head, and new ones
     * arrive at the tail (reusing the entries that left). */
    long first = 0; /* lowest id possibly still queued */
    for (int round = 0; round < 8; round++) {
        long expect = 0;
        for (long i = first; i < BIG; i++) {
            if (!w[i].w.queued)
                continue;
            long pos = sw_localq_position(&q, &w[i].w);
            ops++;
            if (pos != expect)
                fail_msg("round %d: waiter %ld at %ld, expected %ld", round, i, pos, expect);
            expect++;
        }
        assert_int_equal(expect, q.queued);
        for (long i = first + round; i < BIG; i += 7 + round) {
            sw_localq_cancel(&q, &w[i].w);
            ops++;
        }
        for (int k = 0; k < 4000; k++) {
            sw_localq_release(&q); /* the head takes the slot and keeps it */
            ops++;
        }
        while (first < BIG && !w[first].w.queued)
            first++;
    }
    /* O(log n) per operation: about 17 tree steps each at n = 100,000, plus
     * the amortized re-indexing; a walk of the list per position would be
     * tens of thousands of steps each. */
    if (q.work > 64 * ops)
        fail_msg("%llu steps for %llu operations", (unsigned long long)q.work,
                 (unsigned long long)ops);
    sw_localq_free(&q);
    free(w);
}

static void test_index_survives_churn(void **state)
{
    (void)state;
    /* Many more arrivals than the queue ever holds: the tickets outgrow the
     * index again and again, and positions stay exact. */
    struct sw_localq q;
    struct bw w[8];
    sw_localq_init(&q, 1, 8);
    struct bw holder = {.w = {.on_grant = on_grant_keep}, .id = -1};
    assert_int_equal(sw_localq_acquire(&q, &holder.w), SW_LOCALQ_GRANTED);
    for (int i = 0; i < 8; i++) {
        w[i] = (struct bw){.w = {.on_grant = on_grant_keep}, .id = i};
        assert_int_equal(sw_localq_acquire(&q, &w[i].w), SW_LOCALQ_QUEUED);
    }
    for (int n = 0; n < 10000; n++) {
        int i = n % 8;
        sw_localq_cancel(&q, &w[i].w); /* the oldest leaves, rejoins at the tail */
        assert_int_equal(sw_localq_acquire(&q, &w[i].w), SW_LOCALQ_QUEUED);
        assert_int_equal(sw_localq_position(&q, &w[i].w), 7);
        assert_int_equal(sw_localq_position(&q, &w[(i + 1) % 8].w), 0);
    }
    uint64_t ops = 4 * 10000 + 9;
    assert_true(q.work <= 64 * ops);
    sw_localq_free(&q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_slots_then_fifo),
        cmocka_unit_test(test_waiters_keep_order_over_newcomers),
        cmocka_unit_test(test_zero_queue),
        cmocka_unit_test(test_batch_lane),
        cmocka_unit_test(test_expired_waiters_do_not_grow_the_stack),
        cmocka_unit_test(test_positions_are_exact_and_cheap),
        cmocka_unit_test(test_index_survives_churn),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
