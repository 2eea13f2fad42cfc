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

#include "common/jfast.h"
#include "common/jmemo.h"
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
    /* nested too: a content part's keys, and a tool schema with more
     * members than are sorted on the stack */
    struct sw_prefix parts = of("{\"messages\":[{\"role\":\"user\",\"content\":["
                                "{\"type\":\"text\",\"text\":\"fix the build\"}]}]}", 40);
    struct sw_prefix parts2 = of("{\"messages\":[{\"content\":[{\"text\":\"fix the build\","
                                 "\"type\":\"text\"}],\"role\":\"user\"}]}", 40);
    assert_true(parts.hash[0] == parts2.hash[0]);
    char fwd[2048], rev[2048];
    size_t fo = 0, ro = 0;
    fo += (size_t)snprintf(fwd, sizeof fwd, "{\"tools\":[{\"type\":\"function\",\"function\":"
                           "{\"name\":\"edit\",\"parameters\":{\"type\":\"object\",\"properties\":{");
    ro += (size_t)snprintf(rev, sizeof rev, "%.*s", (int)fo, fwd);
    for (int k = 0; k < 24; k++) {
        fo += (size_t)snprintf(fwd + fo, sizeof fwd - fo, "%s\"arg%02d\":{\"type\":\"string\"}",
                               k ? "," : "", k);
        ro += (size_t)snprintf(rev + ro, sizeof rev - ro, "%s\"arg%02d\":{\"type\":\"string\"}",
                               k ? "," : "", 23 - k);
    }
    snprintf(fwd + fo, sizeof fwd - fo, "}}}}],\"messages\":[" SYS "," U1 "]}");
    snprintf(rev + ro, sizeof rev - ro, "}}}}],\"messages\":[" SYS "," U1 "]}");
    struct sw_prefix f = of(fwd, 300), r = of(rev, 300);
    assert_int_equal(f.n, 2);
    assert_memory_equal(f.hash, r.hash, sizeof f.hash[0] * 2);
    assert_true(f.hash[0] != t1.hash[0]);
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

static void test_distinct_values(void **state)
{
    (void)state;
    /* texts that only run together the same, and values of another type
     * with the same text, are other prefixes */
    struct sw_prefix a = of("{\"messages\":[{\"role\":\"user\",\"content\":["
                            "{\"type\":\"text\",\"text\":\"ab\"},{\"type\":\"text\",\"text\":\"c\"}]}]}", 10);
    struct sw_prefix b = of("{\"messages\":[{\"role\":\"user\",\"content\":["
                            "{\"type\":\"text\",\"text\":\"a\"},{\"type\":\"text\",\"text\":\"bc\"}]}]}", 10);
    assert_int_equal(a.n, 1);
    assert_true(a.hash[0] != b.hash[0]);
    struct sw_prefix num = of("{\"messages\":[{\"role\":\"tool\",\"content\":1}]}", 10);
    struct sw_prefix str = of("{\"messages\":[{\"role\":\"tool\",\"content\":\"1\"}]}", 10);
    struct sw_prefix real = of("{\"messages\":[{\"role\":\"tool\",\"content\":1.0}]}", 10);
    struct sw_prefix arr = of("{\"messages\":[{\"role\":\"tool\",\"content\":[\"1\"]}]}", 10);
    assert_true(num.hash[0] != str.hash[0] && num.hash[0] != real.hash[0]);
    assert_true(str.hash[0] != real.hash[0] && arr.hash[0] != str.hash[0]);
    /* where the blocks end matters: a user turn is not part of the system block */
    struct sw_prefix one = of("{\"messages\":[" SYS "," U1 "," A1 "]}", 30);
    struct sw_prefix two = of("{\"messages\":[" SYS "," U1 "]}", 20);
    assert_true(one.hash[1] == two.hash[1] && one.hash[2] != two.hash[1]);
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
    /* each kept boundary of the shorter one is the longer one's, one back */
    for (size_t k = 2; k < SW_PREFIX_MAX; k++)
        assert_true(q.hash[k] == p.hash[k - 1]);
    assert_true(q.hash[1] != p.hash[1]);
}

/* A long conversation as a client sends it, message 7's text varied by one
 * byte when edit is set. */
static char *long_body(int edit)
{
    static char b[64 << 10];
    size_t n = (size_t)snprintf(b, sizeof b, "{\"model\":\"m\",\"messages\":[" SYS);
    for (int i = 0; i < 120; i++)
        n += (size_t)snprintf(b + n, sizeof b - n,
                              ",{\"role\":\"%s\",\"content\":\"turn %d: the build log says "
                              "the test step timed out after %d seconds, see above\"}",
                              i % 2 ? "assistant" : "user", i, edit && i == 7 ? 61 : 60);
    snprintf(b + n, sizeof b - n, "]," TOOLS "}");
    return b;
}

static struct sw_prefix parsed(const char *s, long tokens)
{
    bool oom;
    json_t *body = sw_json_load_bounded(s, strlen(s), JSON_REJECT_DUPLICATES, 100000, 64, &oom);
    assert_non_null(body);
    struct sw_prefix p;
    sw_request_prefix(body, tokens, &p);
    json_decref(body);
    return p;
}

/* With the parse memo the identity is the one without it: the digest an
 * element's note holds is the digest of its walk; a one-byte change still
 * changes every boundary from its message on. */
static void test_memo_notes(void **state)
{
    (void)state;
    const char *s = long_body(0);
    assert_true(strlen(s) >= SW_JMEMO_MIN_BODY);
    struct sw_prefix off = of(s, 3000);
    sw_jmemo_set_max(16u << 20);
    struct sw_prefix first = parsed(s, 3000), again = parsed(s, 3000);
    struct sw_jmemo_stats st;
    sw_jmemo_get_stats(&st);
    assert_true(st.hits > 0);
    assert_memory_equal(&off, &first, sizeof off);
    assert_memory_equal(&off, &again, sizeof off);
    struct sw_prefix edit = parsed(long_body(1), 3000), edit_off;
    sw_jmemo_set_max(0);
    edit_off = of(long_body(1), 3000);
    assert_memory_equal(&edit, &edit_off, sizeof edit);
    size_t changed = 0;
    for (size_t k = 0; k < off.n; k++)
        changed += edit.hash[k] != off.hash[k];
    assert_true(changed > 0 && changed < off.n);
    assert_true(edit.hash[off.n - 1] != off.hash[off.n - 1]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chain),
        cmocka_unit_test(test_blocks),
        cmocka_unit_test(test_distinct_values),
        cmocka_unit_test(test_long_conversation),
        cmocka_unit_test(test_memo_notes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
