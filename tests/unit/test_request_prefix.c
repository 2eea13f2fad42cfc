/* The prefix identity of a request (request/prefix.h): block 0 is tools and
 * the leading system messages, every later message a block, each hash
 * covering every block before it; the same on every API surface once
 * parsed into the chat form; token counts rise to the request's estimate. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include <jansson.h>

#include "request/prefix.h"

static struct sw_prefix of(const char *json, long tokens)
{
    json_error_t e;
    json_t *body = json_loads(json, 0, &e);
    assert_non_null(body);
    struct sw_prefix p;
    sw_request_prefix(body, tokens, &p);
    json_decref(body);
    return p;
}

#define SYS "{\"role\":\"system\",\"content\":\"You are a coding agent.\"}"
#define U1 "{\"role\":\"user\",\"content\":\"fix the build\"}"
#define A1 "{\"role\":\"assistant\",\"content\":\"done\"}"
#define U2 "{\"role\":\"user\",\"content\":\"now the tests\"}"
#define TOOLS "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"run\"}}]"

static void test_chain(void **state)
{
    (void)state;
    struct sw_prefix t1 = of("{\"messages\":[" SYS "," U1 "]," TOOLS "}", 40);
    struct sw_prefix t2 = of("{\"messages\":[" SYS "," U1 "," A1 "," U2 "]," TOOLS "}", 80);
    assert_int_equal(t1.n, 2);      /* system + tools, then the user turn */
    assert_int_equal(t2.n, 4);
    /* the next turn shares every boundary of the last one */
    assert_true(t1.hash[0] == t2.hash[0]);
    assert_true(t1.hash[1] == t2.hash[1]);
    assert_true(t2.hash[2] != t2.hash[1] && t2.hash[3] != t2.hash[2]);
    /* tokens rise to the estimate */
    for (size_t k = 1; k < t2.n; k++)
        assert_true(t2.tokens[k] > t2.tokens[k - 1]);
    assert_int_equal(t2.tokens[t2.n - 1], 80);
    assert_true(t2.tokens[1] < 80);
    /* chained: a change in block 1 changes every later hash, not block 0 */
    struct sw_prefix edit = of("{\"messages\":[" SYS ",{\"role\":\"user\",\"content\":\"fix it\"},"
                               A1 "," U2 "]," TOOLS "}", 80);
    assert_true(edit.hash[0] == t2.hash[0]);
    for (size_t k = 1; k < 4; k++)
        assert_true(edit.hash[k] != t2.hash[k]);
    /* other tools: another block 0, so nothing matches */
    struct sw_prefix tools = of("{\"messages\":[" SYS "," U1 "],\"tools\":[]}", 40);
    assert_true(tools.hash[0] != t1.hash[0] && tools.hash[1] != t1.hash[1]);
    /* key order inside a message does not matter (keys are sorted) */
    struct sw_prefix order = of("{\"messages\":[" SYS ",{\"content\":\"fix the build\","
                                "\"role\":\"user\"}]," TOOLS "}", 40);
    assert_true(order.hash[1] == t1.hash[1]);
    /* the same request hashes the same */
    struct sw_prefix again = of("{\"messages\":[" SYS "," U1 "]," TOOLS "}", 40);
    assert_memory_equal(again.hash, t1.hash, sizeof t1.hash[0] * t1.n);
}

static void test_blocks(void **state)
{
    (void)state;
    /* no system message: block 0 is the first message */
    struct sw_prefix p = of("{\"messages\":[" U1 "," A1 "," U2 "]}", 30);
    assert_int_equal(p.n, 3);
    /* several leading system/developer messages are one block */
    p = of("{\"messages\":[" SYS ",{\"role\":\"developer\",\"content\":\"x\"}," U1 "]}", 30);
    assert_int_equal(p.n, 2);
    /* no messages, or not an object: no identity */
    p = of("{\"messages\":[]}", 10);
    assert_int_equal(p.n, 0);
    p = of("{\"input\":\"embed me\"}", 10);
    assert_int_equal(p.n, 0);
    p = of("[]", 10);
    assert_int_equal(p.n, 0);
}

static void test_long_conversation(void **state)
{
    (void)state;
    /* more blocks than SW_PREFIX_MAX: block 0 and the latest ones kept */
    char buf[16384];
    size_t o = 0;
    o += (size_t)snprintf(buf + o, sizeof buf - o, "{\"messages\":[" SYS);
    for (int i = 0; i < 80; i++)
        o += (size_t)snprintf(buf + o, sizeof buf - o, ",{\"role\":\"user\",\"content\":\"turn %d\"}", i);
    snprintf(buf + o, sizeof buf - o, "]}");
    struct sw_prefix p = of(buf, 1000);
    assert_int_equal(p.n, SW_PREFIX_MAX);
    assert_int_equal(p.tokens[SW_PREFIX_MAX - 1], 1000);
    /* the 79-turn request's whole prompt is a boundary of the 80-turn one */
    char shorter[16384];
    o = 0;
    o += (size_t)snprintf(shorter + o, sizeof shorter - o, "{\"messages\":[" SYS);
    for (int i = 0; i < 79; i++)
        o += (size_t)snprintf(shorter + o, sizeof shorter - o,
                              ",{\"role\":\"user\",\"content\":\"turn %d\"}", i);
    snprintf(shorter + o, sizeof shorter - o, "]}");
    struct sw_prefix q = of(shorter, 990);
    assert_true(q.hash[0] == p.hash[0]);
    assert_true(q.hash[q.n - 1] == p.hash[p.n - 2]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chain),
        cmocka_unit_test(test_blocks),
        cmocka_unit_test(test_long_conversation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
