/* Unit tests of the llmsim performance model with a fake clock: slots, FIFO
 * queue, queue bound, prefill and decode timing, cold start, output length,
 * the prompt-token estimate. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "model.h"

static struct sw_llmsim_params params(int slots)
{
    return (struct sw_llmsim_params){.slots = slots, .decode_tps = 50, .max_output_tokens = 10,
                                     .seed = 7};
}

static void test_prompt_tokens(void **state)
{
    (void)state;
    assert_int_equal(sw_llmsim_prompt_tokens(0, 0), 0);
    assert_int_equal(sw_llmsim_prompt_tokens(1, 1), 5);  /* ceil(1/4) + 4 */
    assert_int_equal(sw_llmsim_prompt_tokens(4, 1), 5);
    assert_int_equal(sw_llmsim_prompt_tokens(5, 2), 10); /* ceil(5/4) + 8 */
    assert_int_equal(sw_llmsim_prompt_tokens(400, 3), 112);
}

/* Outside load holds slots: with 3 of 4 taken, one generation runs and the
 * next waits; when the outside load shrinks the waiter starts. */
static void test_outside_load_holds_slots(void **state)
{
    (void)state;
    struct sw_llmsim_params p = params(4);
    struct sw_llmsim_model m;
    sw_llmsim_model_init(&m, &p);
    sw_llmsim_set_outside(&m, 3, 5);
    assert_int_equal(m.outside, 3);
    assert_int_equal(m.outside_waiting, 5);
    struct sw_llmsim_gen a = {.prompt_tokens = 1, .output_tokens = 1};
    struct sw_llmsim_gen b = a;
    assert_int_equal(sw_llmsim_submit(&m, &a, 0), SW_LLMSIM_STARTED);
    assert_int_equal(sw_llmsim_submit(&m, &b, 0), SW_LLMSIM_QUEUED);
    assert_null(sw_llmsim_start_next(&m, 1));
    sw_llmsim_set_outside(&m, 2, 0);
    assert_ptr_equal(sw_llmsim_start_next(&m, 2), &b);
    assert_int_equal(b.state, SW_LLMSIM_GEN_ACTIVE);
    assert_null(sw_llmsim_start_next(&m, 2));
    sw_llmsim_set_outside(&m, 99, -1);          /* clamped: one slot always remains */
    assert_int_equal(m.outside, 3);
    assert_int_equal(m.outside_waiting, 0);
}

static void test_slots_and_fifo(void **state)
{
    (void)state;
    struct sw_llmsim_model m;
    struct sw_llmsim_params p = params(2);
    sw_llmsim_model_init(&m, &p);
    struct sw_llmsim_gen g[5] = {0};
    assert_int_equal(sw_llmsim_submit(&m, &g[0], 0), SW_LLMSIM_STARTED);
    assert_int_equal(sw_llmsim_submit(&m, &g[1], 10), SW_LLMSIM_STARTED);
    assert_int_equal(sw_llmsim_submit(&m, &g[2], 20), SW_LLMSIM_QUEUED);
    assert_int_equal(sw_llmsim_submit(&m, &g[3], 30), SW_LLMSIM_QUEUED);
    assert_int_equal(sw_llmsim_submit(&m, &g[4], 40), SW_LLMSIM_QUEUED);
    assert_int_equal(m.in_flight, 2);
    assert_int_equal(m.queued, 3);
    /* FIFO: releasing a slot starts the oldest waiter at the release time */
    assert_ptr_equal(sw_llmsim_release(&m, &g[1], 1000), &g[2]);
    assert_int_equal(g[2].state, SW_LLMSIM_GEN_ACTIVE);
    assert_int_equal(g[2].start_us, 1000);
    assert_int_equal(g[2].ready_us, 1000);
    /* a waiter that leaves (client abort while queued) frees no slot */
    assert_null(sw_llmsim_release(&m, &g[3], 1100));
    assert_int_equal(m.queued, 1);
    assert_int_equal(g[3].state, SW_LLMSIM_GEN_IDLE);
    /* the next slot goes to g[4], skipping the one that left */
    assert_ptr_equal(sw_llmsim_release(&m, &g[0], 1200), &g[4]);
    assert_int_equal(m.queued, 0);
    assert_null(sw_llmsim_release(&m, &g[2], 1300));
    assert_null(sw_llmsim_release(&m, &g[4], 1400));
    assert_int_equal(m.in_flight, 0);
    /* releasing twice is harmless */
    assert_null(sw_llmsim_release(&m, &g[4], 1500));
    assert_int_equal(m.in_flight, 0);
}

static void test_new_request_does_not_jump_the_queue(void **state)
{
    (void)state;
    struct sw_llmsim_model m;
    struct sw_llmsim_params p = params(1);
    sw_llmsim_model_init(&m, &p);
    struct sw_llmsim_gen a = {0}, b = {0}, c = {0};
    sw_llmsim_submit(&m, &a, 0);
    sw_llmsim_submit(&m, &b, 1);
    assert_ptr_equal(sw_llmsim_release(&m, &a, 2), &b);
    assert_int_equal(sw_llmsim_submit(&m, &c, 3), SW_LLMSIM_QUEUED);
    assert_ptr_equal(sw_llmsim_release(&m, &b, 4), &c);
}

static void test_queue_max(void **state)
{
    (void)state;
    struct sw_llmsim_model m;
    struct sw_llmsim_params p = params(1);
    p.queue_max = 1;
    sw_llmsim_model_init(&m, &p);
    struct sw_llmsim_gen g[3] = {0};
    assert_int_equal(sw_llmsim_submit(&m, &g[0], 0), SW_LLMSIM_STARTED);
    assert_int_equal(sw_llmsim_submit(&m, &g[1], 0), SW_LLMSIM_QUEUED);
    assert_int_equal(sw_llmsim_submit(&m, &g[2], 0), SW_LLMSIM_REJECTED);
    assert_int_equal(g[2].state, SW_LLMSIM_GEN_IDLE);
    assert_int_equal(m.queued, 1);
}

static void test_prefill_and_decode_timing(void **state)
{
    (void)state;
    struct sw_llmsim_model m;
    struct sw_llmsim_params p = params(1);
    p.prefill_ms_per_token = 2.5;
    p.decode_tps = 50; /* 20 ms per token */
    sw_llmsim_model_init(&m, &p);
    struct sw_llmsim_gen g = {.prompt_tokens = 100, .output_tokens = 3};
    assert_int_equal(sw_llmsim_submit(&m, &g, 1000000), SW_LLMSIM_STARTED);
    assert_int_equal(sw_llmsim_prefill_us(&p, 100), 250000);
    assert_int_equal(sw_llmsim_period_us(&p), 20000);
    assert_int_equal(sw_llmsim_token_due_us(&m, &g, 1), 1000000 + 250000 + 20000);
    assert_int_equal(sw_llmsim_token_due_us(&m, &g, 3), 1000000 + 250000 + 60000);
    assert_int_equal(sw_llmsim_tokens_due(&m, &g, 1000000), 0);
    assert_int_equal(sw_llmsim_tokens_due(&m, &g, 1250000), 0);
    assert_int_equal(sw_llmsim_tokens_due(&m, &g, 1269999), 0);
    assert_int_equal(sw_llmsim_tokens_due(&m, &g, 1270000), 1);
    assert_int_equal(sw_llmsim_tokens_due(&m, &g, 1299999), 2);
    assert_int_equal(sw_llmsim_tokens_due(&m, &g, 1310000), 3);
    assert_int_equal(sw_llmsim_tokens_due(&m, &g, 9999999), 3);
}

static void test_queued_timing_starts_at_release(void **state)
{
    (void)state;
    struct sw_llmsim_model m;
    struct sw_llmsim_params p = params(1);
    p.decode_tps = 10; /* 100 ms per token */
    sw_llmsim_model_init(&m, &p);
    struct sw_llmsim_gen a = {.output_tokens = 2}, b = {.output_tokens = 2};
    sw_llmsim_submit(&m, &a, 0);
    sw_llmsim_submit(&m, &b, 0);
    assert_int_equal(sw_llmsim_token_due_us(&m, &a, 2), 200000);
    sw_llmsim_release(&m, &a, 200000);
    assert_int_equal(sw_llmsim_token_due_us(&m, &b, 1), 300000);
    assert_int_equal(sw_llmsim_token_due_us(&m, &b, 2), 400000);
}

static void test_instant_decode(void **state)
{
    (void)state;
    struct sw_llmsim_model m;
    struct sw_llmsim_params p = params(1);
    p.decode_tps = 0;
    p.prefill_ms_per_token = 1;
    sw_llmsim_model_init(&m, &p);
    struct sw_llmsim_gen g = {.prompt_tokens = 10, .output_tokens = 50};
    sw_llmsim_submit(&m, &g, 0);
    assert_int_equal(sw_llmsim_period_us(&p), 0);
    assert_int_equal(sw_llmsim_tokens_due(&m, &g, 9999), 0);
    assert_int_equal(sw_llmsim_tokens_due(&m, &g, 10000), 50);
    assert_int_equal(sw_llmsim_token_due_us(&m, &g, 50), 10000);
}

static void test_cold_start(void **state)
{
    (void)state;
    struct sw_llmsim_model m;
    struct sw_llmsim_params p = params(2);
    p.cold_start_ms = 500;
    sw_llmsim_model_init(&m, &p);
    assert_int_equal(sw_llmsim_load_state(&m, 0), SW_LLMSIM_COLD);
    assert_int_equal(sw_llmsim_load_state(&m, 10000000), SW_LLMSIM_COLD); /* no request, no load */
    struct sw_llmsim_gen a = {.output_tokens = 1}, b = {.output_tokens = 1};
    /* the first request starts the load and waits for it */
    sw_llmsim_submit(&m, &a, 10000000);
    assert_int_equal(sw_llmsim_load_state(&m, 10000000), SW_LLMSIM_LOADING);
    assert_int_equal(a.ready_us, 10500000);
    assert_int_equal(sw_llmsim_token_due_us(&m, &a, 1), 10520000);
    /* a second one during the load waits for the same load, not a new one */
    sw_llmsim_submit(&m, &b, 10200000);
    assert_int_equal(b.ready_us, 10500000);
    assert_int_equal(sw_llmsim_load_state(&m, 10499999), SW_LLMSIM_LOADING);
    assert_int_equal(sw_llmsim_load_state(&m, 10500000), SW_LLMSIM_LOADED);
    sw_llmsim_release(&m, &a, 10600000);
    sw_llmsim_release(&m, &b, 10600000);
    /* loaded: no wait */
    struct sw_llmsim_gen c = {.output_tokens = 1};
    sw_llmsim_submit(&m, &c, 11000000);
    assert_int_equal(c.ready_us, 11000000);
    sw_llmsim_release(&m, &c, 11100000);
    /* unload: cold again, the next request reloads */
    sw_llmsim_unload(&m);
    assert_int_equal(sw_llmsim_load_state(&m, 12000000), SW_LLMSIM_COLD);
    struct sw_llmsim_gen d = {.output_tokens = 1};
    sw_llmsim_submit(&m, &d, 12000000);
    assert_int_equal(d.ready_us, 12500000);
}

static void test_unload_without_cold_start_is_noop(void **state)
{
    (void)state;
    struct sw_llmsim_model m;
    struct sw_llmsim_params p = params(1);
    sw_llmsim_model_init(&m, &p);
    assert_int_equal(sw_llmsim_load_state(&m, 0), SW_LLMSIM_LOADED);
    sw_llmsim_unload(&m);
    assert_int_equal(sw_llmsim_load_state(&m, 0), SW_LLMSIM_LOADED);
}

static void test_output_len_seeded(void **state)
{
    (void)state;
    struct sw_llmsim_model a, b, c;
    struct sw_llmsim_params p = params(1);
    sw_llmsim_model_init(&a, &p);
    sw_llmsim_model_init(&b, &p);
    p.seed = 8;
    sw_llmsim_model_init(&c, &p);
    int differ = 0;
    for (int i = 0; i < 200; i++) {
        int x = sw_llmsim_output_len(&a, -1);
        assert_int_equal(x, sw_llmsim_output_len(&b, -1)); /* same seed, same draws */
        assert_in_range(x, 1, 10);
        differ |= x != sw_llmsim_output_len(&c, -1);
    }
    assert_true(differ);
    /* max_tokens wins and does not consume a draw */
    assert_int_equal(sw_llmsim_output_len(&a, 33), 33);
    assert_int_equal(sw_llmsim_output_len(&a, -1), sw_llmsim_output_len(&b, -1));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_prompt_tokens),
        cmocka_unit_test(test_slots_and_fifo),
        cmocka_unit_test(test_outside_load_holds_slots),
        cmocka_unit_test(test_new_request_does_not_jump_the_queue),
        cmocka_unit_test(test_queue_max),
        cmocka_unit_test(test_prefill_and_decode_timing),
        cmocka_unit_test(test_queued_timing_starts_at_release),
        cmocka_unit_test(test_instant_decode),
        cmocka_unit_test(test_cold_start),
        cmocka_unit_test(test_unload_without_cold_start_is_noop),
        cmocka_unit_test(test_output_len_seeded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
