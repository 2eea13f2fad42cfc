/* The gateway's local queue: slots, FIFO order, queue_max, cancel, positions. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
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
}

static void test_zero_queue(void **state)
{
    (void)state;
    struct sw_localq q;
    sw_localq_init(&q, 1, 0);
    struct tw a = {.w = {.on_grant = on_grant}, .id = 1}, b = {.w = {.on_grant = on_grant}, .id = 2};
    assert_int_equal(sw_localq_acquire(&q, &a.w), SW_LOCALQ_GRANTED);
    assert_int_equal(sw_localq_acquire(&q, &b.w), SW_LOCALQ_FULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_slots_then_fifo),
        cmocka_unit_test(test_waiters_keep_order_over_newcomers),
        cmocka_unit_test(test_zero_queue),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
