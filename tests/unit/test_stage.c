/* Unit tests of the stage interface (src/relay/stage.c) and of the stages
 * that need no event loop state: the order hooks run in, where a run stops,
 * a pending hook resumed, the loop's decision on each result before and
 * after the first byte, the spliced fast path's byte edits, the contract
 * collector, and a translated stream through the dialect stages. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <event2/buffer.h>

#include "common/err.h"
#include "contract/collect.h"
#include "relay/splice.h"
#include "relay/st_dialect.h"
#include "relay/stage.h"

/* ---- A recording stage ---- */

struct rec {
    const char *name;
    enum sw_stage_rc rc[4]; /* what each hook returns */
    bool add_chunk_at_end;
};
static char g_log[512];

static enum sw_stage_rc rec_hook(struct sw_stage *st, const char *hook, enum sw_stage_hook h)
{
    struct rec *r = st->ctx;
    size_t n = strlen(g_log);
    snprintf(g_log + n, sizeof g_log - n, "%s.%s ", r->name, hook);
    return r->rc[h];
}
static enum sw_stage_rc rec_request(struct sw_stage *st, struct sw_stage_io *io)
{
    (void)io;
    return rec_hook(st, "req", SW_STAGE_REQUEST);
}
static enum sw_stage_rc rec_event(struct sw_stage *st, struct sw_stage_io *io)
{
    enum sw_stage_rc rc = rec_hook(st, "ev", SW_STAGE_EVENT);
    struct rec *r = st->ctx;
    if (r->name[0] == 'z' && io->chunks) /* the last stage consumes the chunks */
        json_array_clear(io->chunks);
    return rc;
}
static enum sw_stage_rc rec_answer(struct sw_stage *st, struct sw_stage_io *io)
{
    (void)io;
    return rec_hook(st, "ans", SW_STAGE_ANSWER);
}
static enum sw_stage_rc rec_end(struct sw_stage *st, struct sw_stage_io *io)
{
    struct rec *r = st->ctx;
    if (r->add_chunk_at_end)
        json_array_append_new(io->chunks, json_object());
    return rec_hook(st, "end", SW_STAGE_END);
}
static void rec_reset(struct sw_stage *st)
{
    rec_hook(st, "reset", 0);
}
static const struct sw_stage_ops rec_ops = {"rec", rec_request, rec_event, rec_answer, rec_end,
                                            rec_reset};

static void setup3(struct rec r[3], struct sw_stage s[3])
{
    static const char *names[] = {"a", "b", "z"};
    memset(r, 0, 3 * sizeof *r);
    for (int i = 0; i < 3; i++) {
        r[i].name = names[i];
        s[i] = (struct sw_stage){&rec_ops, &r[i]};
    }
    g_log[0] = '\0';
}

static void test_order(void **state)
{
    (void)state;
    struct rec r[3];
    struct sw_stage s[3];
    struct sw_stage_io io = {0};
    setup3(r, s);
    assert_int_equal(sw_stage_run(s, 3, SW_STAGE_REQUEST, &io), SW_STAGE_OK);
    assert_string_equal(g_log, "z.req b.req a.req ");
    g_log[0] = '\0';
    assert_int_equal(sw_stage_run(s, 3, SW_STAGE_EVENT, &io), SW_STAGE_OK);
    assert_int_equal(sw_stage_run(s, 3, SW_STAGE_ANSWER, &io), SW_STAGE_OK);
    assert_string_equal(g_log, "a.ev b.ev z.ev a.ans b.ans z.ans ");
    g_log[0] = '\0';
    sw_stage_reset(s, 3);
    assert_string_equal(g_log, "a.reset b.reset z.reset ");
}

static void test_stops_at_first_result(void **state)
{
    (void)state;
    struct rec r[3];
    struct sw_stage s[3];
    struct sw_stage_io io = {0};
    setup3(r, s);
    r[1].rc[SW_STAGE_EVENT] = SW_STAGE_FAILOVER;
    assert_int_equal(sw_stage_run(s, 3, SW_STAGE_EVENT, &io), SW_STAGE_FAILOVER);
    assert_int_equal(io.at, 1);
    assert_string_equal(g_log, "a.ev b.ev ");
    g_log[0] = '\0';
    r[1].rc[SW_STAGE_REQUEST] = SW_STAGE_REFUSE;
    assert_int_equal(sw_stage_run(s, 3, SW_STAGE_REQUEST, &io), SW_STAGE_REFUSE);
    assert_int_equal(io.at, 1);
    assert_string_equal(g_log, "z.req b.req ");
}

/* Chunks an end hook adds pass through the later stages' event hooks
 * before their end hooks: what an unmasker held goes out before the end. */
static void test_end_flushes_through_later_events(void **state)
{
    (void)state;
    struct rec r[3];
    struct sw_stage s[3];
    struct sw_stage_io io = {0};
    io.chunks = json_array();
    setup3(r, s);
    r[0].add_chunk_at_end = true;
    assert_int_equal(sw_stage_run(s, 3, SW_STAGE_END, &io), SW_STAGE_OK);
    assert_string_equal(g_log, "a.end b.ev z.ev b.end z.end ");
    assert_int_equal(json_array_size(io.chunks), 0);
    json_decref(io.chunks);
}

static int resumed;
static void on_resume(struct sw_stage_io *io, enum sw_stage_rc rc)
{
    (void)io;
    resumed = (int)rc + 1;
}

/* A hook that finishes later: the run stops there, and resuming continues
 * with the stages after it in the hook's order (or returns the failure). */
static void test_pending_resume(void **state)
{
    (void)state;
    struct rec r[3];
    struct sw_stage s[3];
    struct sw_stage_io io = {.resume = on_resume};
    setup3(r, s);
    r[1].rc[SW_STAGE_REQUEST] = SW_STAGE_PENDING;
    assert_int_equal(sw_stage_run(s, 3, SW_STAGE_REQUEST, &io), SW_STAGE_PENDING);
    assert_int_equal(io.at, 1);
    assert_int_equal(sw_stage_action(SW_STAGE_PENDING, false), SW_ACT_WAIT);
    io.resume(&io, SW_STAGE_OK);
    assert_int_equal(resumed, 1);
    g_log[0] = '\0';
    assert_int_equal(sw_stage_resume(s, 3, SW_STAGE_REQUEST, &io, SW_STAGE_OK), SW_STAGE_OK);
    assert_string_equal(g_log, "a.req ");
    g_log[0] = '\0';
    assert_int_equal(sw_stage_resume(s, 3, SW_STAGE_REQUEST, &io, SW_STAGE_FAILOVER),
                     SW_STAGE_FAILOVER);
    assert_string_equal(g_log, "");
    /* response hooks resume upwards */
    r[1].rc[SW_STAGE_ANSWER] = SW_STAGE_PENDING;
    assert_int_equal(sw_stage_run(s, 3, SW_STAGE_ANSWER, &io), SW_STAGE_PENDING);
    g_log[0] = '\0';
    assert_int_equal(sw_stage_resume(s, 3, SW_STAGE_ANSWER, &io, SW_STAGE_OK), SW_STAGE_OK);
    assert_string_equal(g_log, "z.ans ");
}

/* The loop's decision: fail over only before the first byte; after it an
 * error event ends the stream; a refusal is the client's error. */
static void test_action_table(void **state)
{
    (void)state;
    static const struct {
        enum sw_stage_rc rc;
        bool started;
        enum sw_stage_action act;
    } t[] = {
        {SW_STAGE_OK, false, SW_ACT_GO_ON},
        {SW_STAGE_OK, true, SW_ACT_GO_ON},
        {SW_STAGE_PENDING, false, SW_ACT_WAIT},
        {SW_STAGE_PENDING, true, SW_ACT_WAIT},
        {SW_STAGE_FAILOVER, false, SW_ACT_NEXT_BACKEND},
        {SW_STAGE_FAILOVER, true, SW_ACT_END_STREAM},
        {SW_STAGE_REFUSE, false, SW_ACT_ANSWER_ERROR},
        {SW_STAGE_REFUSE, true, SW_ACT_END_STREAM},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        assert_int_equal(sw_stage_action(t[i].rc, t[i].started), t[i].act);
    struct sw_stage_io io = {0};
    assert_int_equal(sw_stage_fail(&io, SW_EPROTO, 502, "bad %s", "event"), SW_STAGE_FAILOVER);
    assert_int_equal(io.verdict.err, SW_EPROTO);
    assert_int_equal(io.verdict.status, 502);
    assert_string_equal(io.verdict.msg, "bad event");
}

/* ---- The spliced fast path ---- */

static enum sw_stage_rc splice_one(struct sw_splice_stage *sp, const char *data, bool started,
                                   struct sw_stage_io *io, char *out, size_t out_size)
{
    struct sw_stage st = {&sw_splice_ops, sp};
    struct evbuffer *b = evbuffer_new();
    io->data = data;
    io->len = strlen(data);
    io->started = started;
    io->done = false;
    io->out = b;
    enum sw_stage_rc rc = sw_stage_run(&st, 1, SW_STAGE_EVENT, io);
    if (rc == SW_STAGE_OK && io->done)
        rc = sw_stage_run(&st, 1, SW_STAGE_END, io);
    size_t n = evbuffer_get_length(b);
    assert_true(n < out_size);
    evbuffer_remove(b, out, n);
    out[n] = '\0';
    evbuffer_free(b);
    return rc;
}

static void test_splice_events(void **state)
{
    (void)state;
    struct sw_stage_usage u = {0};
    struct sw_splice_stage sp = {"\"pub\"", false, false};
    struct sw_stage_io io = {.usage = &u};
    char out[512];
    assert_int_equal(splice_one(&sp, "{\"model\":\"m\",\"choices\":[{\"delta\":{}}],\"usage\":null}",
                                false, &io, out, sizeof out), SW_STAGE_OK);
    assert_string_equal(out, "data: {\"model\":\"pub\",\"choices\":[{\"delta\":{}}]}\n\n");
    assert_int_equal(u.chunks, 1);
    /* the usage-only chunk the client did not ask for: read, dropped */
    assert_int_equal(splice_one(&sp, "{\"choices\":[],\"usage\":{\"prompt_tokens\":7,"
                                "\"completion_tokens\":3}}", false, &io, out, sizeof out),
                     SW_STAGE_OK);
    assert_string_equal(out, "");
    assert_int_equal(u.in, 7);
    assert_int_equal(u.out, 3);
    assert_int_equal(splice_one(&sp, "[DONE]", true, &io, out, sizeof out), SW_STAGE_OK);
    assert_true(io.done);
    assert_string_equal(out, "data: [DONE]\n\n");
    /* an error before the first token fails over; garbage is a broken answer */
    assert_int_equal(splice_one(&sp, "{\"error\":{}}", false, &io, out, sizeof out),
                     SW_STAGE_FAILOVER);
    assert_int_equal(io.verdict.err, SW_ESTATUS);
    assert_int_equal(splice_one(&sp, "{\"error\":{}}", true, &io, out, sizeof out), SW_STAGE_OK);
    assert_int_equal(splice_one(&sp, "{nope", true, &io, out, sizeof out), SW_STAGE_FAILOVER);
    assert_int_equal(io.verdict.err, SW_EPROTO);
}

static void test_splice_answer(void **state)
{
    (void)state;
    struct sw_stage_usage u = {0};
    struct sw_splice_stage sp = {"\"public-name\"", false, false};
    struct sw_stage st = {&sw_splice_ops, &sp};
    struct sw_buf b;
    sw_buf_init(&b, 4096);
    const char *in = "{\"id\":\"x\",\"model\":\"m\",\"choices\":[],\"usage\":{\"prompt_tokens\":2}}";
    sw_buf_append(&b, in, strlen(in));
    struct sw_stage_io io = {.usage = &u, .answer_text = &b};
    assert_int_equal(sw_stage_run(&st, 1, SW_STAGE_ANSWER, &io), SW_STAGE_OK);
    assert_memory_equal(io.reply, "{\"id\":\"x\",\"model\":\"public-name\",\"choices\":[],", 44);
    assert_int_equal(u.in, 2);
    sw_buf_reset(&b);
    sw_buf_append(&b, "{\"model\":\"m\"}", 13);
    io.up_status = 200;
    assert_int_equal(sw_stage_run(&st, 1, SW_STAGE_ANSWER, &io), SW_STAGE_FAILOVER);
    assert_string_equal(io.verdict.msg, "malformed JSON answer");
    assert_int_equal(io.verdict.status, 200);
    sw_buf_free(&b);
    char *q = sw_splice_quote("a\"b");
    assert_string_equal(q, "\"a\\\"b\"");
    free(q);
    /* json_dumps' bytes for a name short enough to escape on the stack and
     * for longer ones (escaped in a block of their own); NULL for bad UTF-8 */
    char longer[600];
    for (size_t i = 0; i < sizeof longer - 1; i++)
        longer[i] = (char)(i % 7 == 0 ? '\n' : i % 5 == 0 ? '"' : 'a' + (char)(i % 26));
    longer[sizeof longer - 1] = '\0';
    const char *names[] = {"", "llama-3.1-8b", "caf\xc3\xa9 \x01\t\\", longer + 560, longer + 500,
                           longer};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        json_t *j = json_string(names[i]);
        char *want = json_dumps(j, JSON_ENCODE_ANY | JSON_COMPACT);
        q = sw_splice_quote(names[i]);
        assert_non_null(q);
        assert_string_equal(q, want);
        free(q);
        free(want);
        json_decref(j);
    }
    assert_null(sw_splice_quote("bad \xc3"));
    memset(longer, 'x', sizeof longer - 1);
    longer[300] = (char)0xff;
    assert_null(sw_splice_quote(longer));
}

/* ---- The contract collector ---- */

static void test_contract_collect(void **state)
{
    (void)state;
    struct sw_contract_collect c = {0};
    sw_contract_collect_init(&c, NULL, 8);
    json_t *ch = json_pack("{s:[{s:{s:s}}]}", "choices", "delta", "content", "{\"a\":");
    sw_contract_collect_chunk(&c, ch);
    size_t len;
    assert_string_equal(sw_contract_collected(&c, &len), "{\"a\":");
    sw_contract_collect_chunk(&c, ch); /* past the bound: judged as no JSON */
    assert_null(sw_contract_collected(&c, &len));
    json_decref(ch);
    /* an Anthropic stream: the forced tool's fragments; called with none is {} */
    sw_contract_collect_init(&c, "t", 64);
    json_t *start = json_pack("{s:i, s:{s:s, s:s}}", "index", 1, "content_block", "type",
                              "tool_use", "name", "t");
    sw_contract_collect_native(&c, "content_block_start", start);
    assert_string_equal(sw_contract_collected_native(&c, &len), "{}");
    assert_int_equal(len, 2);
    json_t *d = json_pack("{s:i, s:{s:s, s:s}}", "index", 1, "delta", "type", "input_json_delta",
                          "partial_json", "{\"x\":1}");
    sw_contract_collect_native(&c, "content_block_delta", d);
    assert_string_equal(sw_contract_collected_native(&c, &len), "{\"x\":1}");
    json_decref(start);
    json_decref(d);
    sw_contract_collect_free(&c);
    json_t *ans = json_pack("{s:[{s:{s:s}}]}", "choices", "message", "content", "[1]");
    assert_string_equal(sw_contract_answer_text(ans, NULL, &len), "[1]");
    assert_null(sw_contract_answer_text(ans, "t", &len));
    json_decref(ans);
}

/* ---- Dialect stages: an Anthropic stream to an OpenAI client ---- */

static void test_dialect_translated_stream(void **state)
{
    (void)state;
    struct sw_dialect_stream us;
    struct sw_dialect_client cs;
    struct sw_stage_usage u = {0};
    struct sw_dialect_stage d = {
        .client = sw_upstream_dialect(SW_DIALECT_OPENAI),
        .id = "req-1",
        .public_model = "pub",
        .us = &us,
        .cs = &cs,
    };
    sw_buf_init(&d.aout, 1 << 20);
    sw_dialect_stage_attempt(&d, sw_upstream_dialect(SW_DIALECT_ANTHROPIC), false, false, false,
                             false, 1000);
    assert_true(us.preamble);
    struct sw_stage s[2] = {{&sw_dialect_up_ops, &d}, {&sw_dialect_client_ops, &d}};
    struct evbuffer *b = evbuffer_new();
    struct sw_stage_io io = {.usage = &u, .out = b, .chunks = json_array()};
    static const char *const evs[] = {
        "{\"type\":\"message_start\",\"message\":{\"id\":\"m1\",\"usage\":{\"input_tokens\":5}}}",
        "{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\","
        "\"text\":\"\"}}",
        "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\","
        "\"text\":\"hi\"}}",
    };
    for (size_t i = 0; i < 3; i++) {
        io.data = evs[i];
        io.len = strlen(evs[i]);
        assert_int_equal(sw_stage_run(s, 2, SW_STAGE_EVENT, &io), SW_STAGE_OK);
        assert_int_equal(us.preamble, i < 2);
    }
    size_t n = evbuffer_get_length(b);
    char out[2048];
    assert_true(n < sizeof out);
    evbuffer_remove(b, out, n);
    out[n] = '\0';
    assert_non_null(strstr(out, "\"content\":\"hi\""));
    assert_non_null(strstr(out, "\"model\":\"pub\""));
    /* an error event after the first byte fails the attempt: the loop ends
     * the stream; the upstream's own type is kept for the client's event */
    io.started = true;
    io.data = "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"x\"}}";
    io.len = strlen(io.data);
    assert_int_equal(sw_stage_run(s, 2, SW_STAGE_EVENT, &io), SW_STAGE_FAILOVER);
    assert_int_equal(io.verdict.err, SW_EPROTO);
    assert_string_equal(us.error_type, "overloaded_error");
    assert_int_equal(sw_dialect_stage_error(&d, true, "upstream_stream_failed", "gone", b), SW_OK);
    n = evbuffer_get_length(b);
    evbuffer_remove(b, out, n);
    out[n] = '\0';
    assert_string_equal(out, "data: {\"error\":{\"message\":\"gone\",\"type\":\"server_error\","
                             "\"param\":null,\"code\":\"upstream_stream_failed\"}}\n\n"
                             "data: [DONE]\n\n");
    json_decref(io.chunks);
    evbuffer_free(b);
    sw_dialect_stage_free(&d);
}

/* Which API a backend is spoken to in: the client's own when it speaks it,
 * else its first, but never the Responses API for another API's client. */
static void test_dialect_for(void **state)
{
    (void)state;
    const enum sw_dialect O = SW_DIALECT_OPENAI, A = SW_DIALECT_ANTHROPIC, R = SW_DIALECT_RESPONSES;
    const struct {
        enum sw_dialect first;
        unsigned set;
        enum sw_dialect client, want;
    } rows[] = {
        {O, 0, O, O}, {O, 0, A, O}, {O, 0, R, O},
        {A, 0, O, A}, {A, 0, R, A},
        {R, 0, R, R}, {R, 0, O, R}, /* refused by its request_body: cannot carry */
        {O, 1u << O | 1u << R, R, R}, {O, 1u << O | 1u << R, A, O},
        {R, 1u << R | 1u << O, O, O}, {R, 1u << R | 1u << O, A, O},
        {R, 1u << R | 1u << A, O, A}, {A, 1u << A | 1u << R, R, R},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        struct sw_config_backend be = {.dialect = rows[i].first, .dialects = rows[i].set};
        if (sw_upstream_dialect_for(&be, rows[i].client) != rows[i].want)
            fail_msg("row %zu", i);
    }
    assert_string_equal(sw_upstream_dialect(R)->api_name, "responses");
    assert_int_equal(sw_upstream_dialect(R)->pii_surface, SW_PII_SURFACE_RESPONSES);
    assert_true(sw_upstream_dialect(R)->always_usage && sw_upstream_dialect(A)->always_usage);
    assert_false(sw_upstream_dialect(O)->always_usage);
}

/* ---- Dialect stages: a Responses client ---- */

static int completed;
static const json_t *completed_with;

static void on_complete(void *ud, const json_t *answer)
{
    (void)ud;
    completed++;
    json_decref((json_t *)completed_with);
    completed_with = json_incref((json_t *)answer);
}

static char *drain(struct evbuffer *b)
{
    size_t n = evbuffer_get_length(b);
    char *out = malloc(n + 1);
    evbuffer_remove(b, out, n);
    out[n] = '\0';
    return out;
}

/* An OpenAI backend's chunks to a Responses client: the typed events, the
 * end at [DONE], the finished object handed on once. */
static void test_dialect_responses_client(void **state)
{
    (void)state;
    struct sw_dialect_stream us;
    struct sw_dialect_client cs;
    struct sw_stage_usage u = {0};
    json_t *req = json_pack("{s:s, s:s}", "model", "pub", "input", "hi");
    struct sw_dialect_stage d = {
        .client = sw_upstream_dialect(SW_DIALECT_RESPONSES), .id = "req-1", .public_model = "pub",
        .request = req, .response_id = "resp_abc", .on_complete = on_complete, .client_wants_usage = true,
        .us = &us, .cs = &cs,
    };
    completed = 0;
    sw_buf_init(&d.aout, 1 << 20);
    sw_dialect_stage_attempt(&d, sw_upstream_dialect(SW_DIALECT_OPENAI), false, false, false, false,
                             1000);
    struct sw_stage s[2] = {{&sw_dialect_up_ops, &d}, {&sw_dialect_client_ops, &d}};
    struct evbuffer *b = evbuffer_new();
    struct sw_stage_io io = {.usage = &u, .out = b, .chunks = json_array(), .created = 1001};
    static const char *const evs[] = {
        "{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hel\"}}]}",
        "{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"lo\"},\"finish_reason\":\"stop\"}]}",
        "{\"choices\":[],\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":2}}",
        "[DONE]",
    };
    for (size_t i = 0; i < 4; i++) {
        io.data = evs[i];
        io.len = strlen(evs[i]);
        io.done = false;
        assert_int_equal(sw_stage_run(s, 2, SW_STAGE_EVENT, &io), SW_STAGE_OK);
    }
    assert_true(io.done);
    assert_int_equal(completed, 0);
    assert_int_equal(sw_stage_run(s, 2, SW_STAGE_END, &io), SW_STAGE_OK);
    assert_int_equal(u.in, 4);
    assert_int_equal(u.out, 2);
    char *out = drain(b);
    assert_non_null(strstr(out, "event: response.created\n"));
    assert_non_null(strstr(out, "\"delta\":\"hel\""));
    assert_non_null(strstr(out, "event: response.completed\n"));
    assert_non_null(strstr(out, "\"id\":\"resp_abc\""));
    assert_non_null(strstr(out, "\"completed_at\":1001"));
    free(out);
    assert_int_equal(completed, 1);
    assert_string_equal(json_string_value(json_object_get(completed_with, "status")), "completed");
    assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(
                            json_array_get(json_object_get(completed_with, "output"), 0), "content"), 0),
                                                          "text")), "hello");
    /* a new attempt before the first byte starts the client's state over */
    sw_dialect_stage_attempt(&d, sw_upstream_dialect(SW_DIALECT_OPENAI), false, false, false, false,
                             1002);
    assert_int_equal(sw_dialect_stage_error(&d, true, "upstream_stream_failed", "gone", b), SW_OK);
    out = drain(b);
    assert_non_null(strstr(out, "event: response.created\n"));
    assert_non_null(strstr(out, "event: response.failed\n"));
    assert_non_null(strstr(out, "\"code\":\"server_error\""));
    assert_non_null(strstr(out, "\"message\":\"gone\""));
    free(out);
    json_decref((json_t *)completed_with);
    completed_with = NULL;
    json_decref(io.chunks);
    evbuffer_free(b);
    sw_dialect_stage_free(&d);
    json_decref(req);
}

/* A Responses backend's stream passed through to a Responses client: the
 * model rewritten, the usage read, the finished object handed on; a failure
 * after it went out is a response.failed numbered after the last event. */
static void test_dialect_responses_native(void **state)
{
    (void)state;
    struct sw_dialect_stream us;
    struct sw_dialect_client cs;
    struct sw_stage_usage u = {0};
    struct sw_dialect_stage d = {
        .client = sw_upstream_dialect(SW_DIALECT_RESPONSES), .id = "req-2", .public_model = "pub",
        .on_complete = on_complete, .us = &us, .cs = &cs,
    };
    completed = 0;
    sw_buf_init(&d.aout, 1 << 20);
    sw_dialect_stage_attempt(&d, sw_upstream_dialect(SW_DIALECT_RESPONSES), true, true, false,
                             false, 1000);
    assert_true(us.preamble);
    struct sw_stage s[2] = {{&sw_dialect_up_ops, &d}, {&sw_dialect_client_ops, &d}};
    struct evbuffer *b = evbuffer_new();
    struct sw_stage_io io = {.usage = &u, .out = b, .chunks = json_array()};
    static const char *const evs[] = {
        "{\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_up\","
        "\"model\":\"up-model\",\"status\":\"in_progress\",\"output\":[]}}",
        "{\"type\":\"response.output_text.delta\",\"sequence_number\":1,\"delta\":\"hi\"}",
        "{\"type\":\"response.completed\",\"sequence_number\":2,\"response\":{\"id\":\"resp_up\","
        "\"model\":\"up-model\",\"status\":\"completed\",\"output\":[],\"usage\":{\"input_tokens\":3,"
        "\"output_tokens\":1}}}",
    };
    for (size_t i = 0; i < 3; i++) {
        io.data = evs[i];
        io.len = strlen(evs[i]);
        io.event = NULL;
        io.done = false;
        assert_int_equal(sw_stage_run(s, 2, SW_STAGE_EVENT, &io), SW_STAGE_OK);
        assert_int_equal(us.preamble, i < 1);
    }
    assert_true(io.done);
    assert_int_equal(sw_stage_run(s, 2, SW_STAGE_END, &io), SW_STAGE_OK);
    assert_int_equal(u.in, 3);
    assert_int_equal(u.out, 1);
    assert_int_equal(u.chunks, 1);
    char *out = drain(b);
    assert_null(strstr(out, "up-model"));
    assert_null(strstr(out, "resp_up")); /* the gateway names the object it stores */
    assert_non_null(strstr(out, "event: response.completed\ndata: "));
    free(out);
    assert_int_equal(completed, 1);
    assert_string_equal(json_string_value(json_object_get(completed_with, "id")), "req-2");
    assert_true(json_is_null(json_object_get(completed_with, "previous_response_id")));
    assert_string_equal(json_string_value(json_object_get(completed_with, "model")), "pub");

    /* another stream, cut after its first delta: response.failed, number 2 */
    sw_dialect_stage_attempt(&d, sw_upstream_dialect(SW_DIALECT_RESPONSES), true, true, false,
                             false, 1000);
    for (size_t i = 0; i < 2; i++) {
        io.data = evs[i];
        io.len = strlen(evs[i]);
        io.done = false;
        assert_int_equal(sw_stage_run(s, 2, SW_STAGE_EVENT, &io), SW_STAGE_OK);
    }
    free(drain(b));
    io.started = true;
    io.data = "{\"type\":\"response.failed\",\"sequence_number\":2,\"response\":{}}";
    io.len = strlen(io.data);
    assert_int_equal(sw_stage_run(s, 2, SW_STAGE_EVENT, &io), SW_STAGE_FAILOVER);
    assert_int_equal(sw_dialect_stage_error(&d, true, "upstream_stream_failed", "cut", b), SW_OK);
    out = drain(b);
    json_t *ev = json_loads(strstr(out, "data: ") + 6, JSON_DISABLE_EOF_CHECK, NULL);
    assert_non_null(ev);
    assert_string_equal(json_string_value(json_object_get(ev, "type")), "response.failed");
    assert_int_equal(json_integer_value(json_object_get(ev, "sequence_number")), 2);
    json_t *r = json_object_get(ev, "response");
    assert_string_equal(json_string_value(json_object_get(r, "id")), "req-2");
    assert_string_equal(json_string_value(json_object_get(r, "status")), "failed");
    assert_string_equal(json_string_value(json_object_get(json_object_get(r, "error"), "message")), "cut");
    json_decref(ev);
    free(out);
    assert_int_equal(completed, 1);
    json_decref((json_t *)completed_with);
    completed_with = NULL;
    json_decref(io.chunks);
    evbuffer_free(b);
    sw_dialect_stage_free(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_order),
        cmocka_unit_test(test_stops_at_first_result),
        cmocka_unit_test(test_end_flushes_through_later_events),
        cmocka_unit_test(test_pending_resume),
        cmocka_unit_test(test_action_table),
        cmocka_unit_test(test_splice_events),
        cmocka_unit_test(test_splice_answer),
        cmocka_unit_test(test_contract_collect),
        cmocka_unit_test(test_dialect_translated_stream),
        cmocka_unit_test(test_dialect_for),
        cmocka_unit_test(test_dialect_responses_client),
        cmocka_unit_test(test_dialect_responses_native),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
