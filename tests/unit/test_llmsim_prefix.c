/* llmsim's per-slot prefix cache (tools/llmsim/model.h, prefix.h): a prompt
 * whose leading blocks a free slot processed before prefills only the
 * rest; each slot keeps its latest prompts (LRU), and a prompt no slot holds
 * takes the least recently used free slot; the request bodies of
 * every dialect hash their leading blocks. Fake clock throughout. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include <jansson.h>

#include "model.h"
#include "prefix.h"

static struct sw_llmsim_prefix chain(uint64_t base, int n, int per)
{
    struct sw_llmsim_prefix p = {0};
    for (int k = 0; k < n; k++) {
        p.hash[k] = base + (uint64_t)k;
        p.tokens[k] = (k + 1) * per;
    }
    p.n = n;
    return p;
}

/* Runs g alone on m from t: its cached tokens; released when done. */
static int run(struct sw_llmsim_model *m, struct sw_llmsim_gen *g, int64_t t, int64_t *first_us)
{
    assert_int_equal(sw_llmsim_submit(m, g, t), SW_LLMSIM_STARTED);
    *first_us = sw_llmsim_token_due_us(m, g, 0) - t;
    sw_llmsim_release(m, g, t + 1);
    return g->cached_tokens;
}

static void test_slot_cache(void **state)
{
    (void)state;
    struct sw_llmsim_params p = {.slots = 2, .prefill_ms_per_token = 1, .decode_tps = 0,
                                 .max_output_tokens = 8, .prefix_cache = 2};
    struct sw_llmsim_model m;
    sw_llmsim_model_init(&m, &p);
    struct sw_llmsim_gen g = {.prompt_tokens = 300, .output_tokens = 4};
    g.prefix = chain(100, 3, 100);
    int64_t first;
    assert_int_equal(run(&m, &g, 0, &first), 0);
    assert_int_equal(first, 300000);            /* the whole prompt */
    assert_int_equal(g.slot, 1);                /* none used yet: the highest, as llama.cpp */
    /* the next turn: the first three blocks again, two more */
    struct sw_llmsim_gen g2 = {.prompt_tokens = 500, .output_tokens = 4};
    g2.prefix = chain(100, 5, 100);
    assert_int_equal(run(&m, &g2, 1000000, &first), 300);
    assert_int_equal(first, 200000);            /* only the uncached suffix */
    assert_int_equal(g2.slot, g.slot);
    /* the same prompt again: all but the last token */
    struct sw_llmsim_gen g3 = g2;
    g3.state = SW_LLMSIM_GEN_IDLE;
    assert_int_equal(run(&m, &g3, 2000000, &first), 499);
    /* prompts no slot holds take the least recently used free slot: the
     * unused one, then each in turn; two through g's slot evict its
     * prompts (2 per slot) */
    for (int i = 0; i < 4; i++) {
        struct sw_llmsim_gen o = {.prompt_tokens = 200, .output_tokens = 1};
        o.prefix = chain(1000 * (uint64_t)(i + 1), 2, 100);
        run(&m, &o, 3000000 + 100000 * i, &first);
        assert_int_equal(o.slot, i % 2 ? g.slot : 1 - g.slot);
    }
    struct sw_llmsim_gen g4 = {.prompt_tokens = 500, .output_tokens = 4};
    g4.prefix = chain(100, 5, 100);
    assert_int_equal(run(&m, &g4, 4000000, &first), 0);
    sw_llmsim_model_free(&m);
}

/* A slot is chosen for what it holds only when that is more than a tenth of
 * the prompt (llama.cpp's --slot-prompt-similarity 0.1); below, the least
 * recently used free slot, which may hold a little of the prompt too. */
static void test_similarity_threshold(void **state)
{
    (void)state;
    struct sw_llmsim_params p = {.slots = 2, .prefill_ms_per_token = 1, .decode_tps = 0,
                                 .max_output_tokens = 8, .prefix_cache = 1};
    struct sw_llmsim_model m;
    sw_llmsim_model_init(&m, &p);
    struct sw_llmsim_gen a = {.prompt_tokens = 100, .output_tokens = 1};
    a.prefix = chain(7, 1, 100);
    int64_t first;
    run(&m, &a, 0, &first);                     /* slot 1 */
    struct sw_llmsim_gen b = {.prompt_tokens = 100, .output_tokens = 1};
    b.prefix = chain(50, 1, 100);
    run(&m, &b, 10, &first);                    /* slot 0, used later */
    assert_int_equal(b.slot, 0);
    /* shares 100 of 1000 tokens with a's slot (10 %): not similar enough;
     * the least recent is a's slot anyway, so it gets those 100 */
    struct sw_llmsim_gen c = {.prompt_tokens = 1000, .output_tokens = 1};
    c.prefix = chain(7, 1, 100);
    c.prefix.hash[1] = 999, c.prefix.tokens[1] = 1000, c.prefix.n = 2;
    assert_int_equal(run(&m, &c, 20, &first), 100);
    assert_int_equal(c.slot, a.slot);
    /* 100 of 900 (11 %) with the slot c left, the more recent one: similar
     * enough, taken over the least recently used */
    struct sw_llmsim_gen d = {.prompt_tokens = 900, .output_tokens = 1};
    d.prefix = chain(7, 1, 100);
    d.prefix.hash[1] = 998, d.prefix.tokens[1] = 900, d.prefix.n = 2;
    assert_int_equal(run(&m, &d, 30, &first), 100);
    assert_int_equal(d.slot, c.slot);
    sw_llmsim_model_free(&m);
}

static void test_busy_slot(void **state)
{
    (void)state;
    /* the slot that holds the prefix is busy: another slot, no hit */
    struct sw_llmsim_params p = {.slots = 2, .prefill_ms_per_token = 1, .decode_tps = 10,
                                 .max_output_tokens = 8, .prefix_cache = 1};
    struct sw_llmsim_model m;
    sw_llmsim_model_init(&m, &p);
    struct sw_llmsim_gen a = {.prompt_tokens = 100, .output_tokens = 1};
    a.prefix = chain(7, 1, 100);
    int64_t first;
    run(&m, &a, 0, &first);
    struct sw_llmsim_gen hold = {.prompt_tokens = 200, .output_tokens = 1};
    hold.prefix = chain(7, 2, 100);
    assert_int_equal(sw_llmsim_submit(&m, &hold, 10), SW_LLMSIM_STARTED);
    assert_int_equal(hold.cached_tokens, 100);
    struct sw_llmsim_gen b = {.prompt_tokens = 200, .output_tokens = 1};
    b.prefix = chain(7, 2, 100);
    assert_int_equal(sw_llmsim_submit(&m, &b, 20), SW_LLMSIM_STARTED);
    assert_int_equal(b.cached_tokens, 0);
    assert_true(b.slot != hold.slot);
    sw_llmsim_release(&m, &hold, 30);
    sw_llmsim_release(&m, &b, 30);
    sw_llmsim_model_free(&m);
    /* no prefix cache: never a hit, nothing allocated */
    p.prefix_cache = 0;
    sw_llmsim_model_init(&m, &p);
    assert_null(m.slot);
    struct sw_llmsim_gen c = a;
    c.state = SW_LLMSIM_GEN_IDLE;
    run(&m, &c, 0, &first);
    assert_int_equal(run(&m, &c, 100, &first), 0);
    sw_llmsim_model_free(&m);
}

static void test_shared(void **state)
{
    (void)state;
    struct sw_llmsim_prefix held = chain(1, 4, 50), q = chain(1, 6, 50);
    assert_int_equal(sw_llmsim_prefix_shared(&held, &q, 300), 200);
    q.hash[2] = 99;     /* diverged at block 2: held's later boundaries differ too */
    q.hash[3] = 98;
    assert_int_equal(sw_llmsim_prefix_shared(&held, &q, 300), 100);
    assert_int_equal(sw_llmsim_prefix_shared(&held, &held, 200), 199);
    struct sw_llmsim_prefix none = {0};
    assert_int_equal(sw_llmsim_prefix_shared(&none, &q, 300), 0);
}

static struct sw_llmsim_prefix body(const char *json, int tokens)
{
    json_error_t e;
    json_t *root = json_loads(json, 0, &e);
    assert_non_null(root);
    struct sw_llmsim_prefix p;
    sw_llmsim_prefix_of(root, tokens, &p);
    json_decref(root);
    return p;
}

static void test_bodies(void **state)
{
    (void)state;
    /* OpenAI: the next turn extends the last */
    struct sw_llmsim_prefix a = body("{\"messages\":[{\"role\":\"system\",\"content\":\"s\"},"
                                     "{\"role\":\"user\",\"content\":\"u1\"}]}", 20);
    struct sw_llmsim_prefix b = body("{\"messages\":[{\"role\":\"system\",\"content\":\"s\"},"
                                     "{\"role\":\"user\",\"content\":\"u1\"},"
                                     "{\"role\":\"assistant\",\"content\":\"a1\"},"
                                     "{\"role\":\"user\",\"content\":\"u2\"}]}", 40);
    assert_int_equal(a.n, 2);
    assert_int_equal(b.n, 4);
    assert_true(a.hash[1] == b.hash[1]);
    assert_int_equal(b.tokens[3], 40);
    /* Anthropic: the system prompt is block 0 */
    struct sw_llmsim_prefix c = body("{\"system\":\"s\",\"messages\":[{\"role\":\"user\","
                                     "\"content\":\"u1\"}]}", 20);
    assert_int_equal(c.n, 2);
    /* Responses: instructions and input items */
    struct sw_llmsim_prefix d = body("{\"instructions\":\"s\",\"input\":[{\"role\":\"user\","
                                     "\"content\":\"u1\"}]}", 20);
    assert_int_equal(d.n, 2);
    struct sw_llmsim_prefix e = body("{\"input\":\"just text\"}", 20);
    assert_int_equal(e.n, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_slot_cache),
        cmocka_unit_test(test_similarity_threshold),
        cmocka_unit_test(test_busy_slot),
        cmocka_unit_test(test_shared),
        cmocka_unit_test(test_bodies),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
