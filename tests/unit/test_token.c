/* Token sources (upstream/token.h) of the command kind, on a real event
 * loop: a request waits on the first refresh and is called back, the token
 * is cached, refreshed ahead of its expiry without making anyone wait, a
 * failed refresh reaches every waiter and fails the next requests at once
 * for a while, a command past its time is killed, a cancelled waiter is
 * not called, and backends with the same credentials share one source.
 * Each loop run is bounded (a timer ends it). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <event2/event.h>

#include "common/clock.h"
#include "config/config.h"
#include "upstream/token.h"

static struct event_base *base;

struct waiter {
    struct sw_token_wait w;
    int calls;
    char token[64];
    char why[200];
};

static void on_done(struct sw_token_wait *w, const char *token, const char *why)
{
    struct waiter *x = (struct waiter *)w;
    x->calls++;
    snprintf(x->token, sizeof x->token, "%s", token ? token : "");
    snprintf(x->why, sizeof x->why, "%s", why ? why : "");
    event_base_loopbreak(base);
}

/* Runs the loop until a waiter is called, at most 5 s. */
static void run(void)
{
    struct timeval tv = {5, 0};
    event_base_loopexit(base, &tv);
    event_base_dispatch(base);
}

static struct sw_config *cfg_for(const char *command, long timeout_ms)
{
    char text[1024];
    snprintf(text, sizeof text,
             "backends:\n  - { name: v, tier: cloud, url: \"https://x\", model: m, dialect: vertex,"
             " vertex: { project: p, location: l, token_command: '%s', token_command_timeout_ms: %ld } }\n"
             "models:\n  - { name: chat, backends: [v] }\n", command, timeout_ms);
    struct sw_config *cfg = NULL;
    struct sw_config_errors errs;
    memset(&errs, 0, sizeof errs);
    sw_config_parse("t.yaml", text, strlen(text), NULL, NULL, &cfg, &errs);
    for (size_t i = 0; i < errs.n; i++)
        print_message("%s\n", errs.msgs[i]);
    sw_config_errors_free(&errs);
    assert_non_null(cfg);
    return cfg;
}

static int setup(void **state)
{
    (void)state;
    base = event_base_new();
    return base ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    sw_token_registry_free();
    event_base_free(base);
    return 0;
}

static void test_wait_cache_ahead(void **state)
{
    (void)state;
    struct sw_config *cfg = cfg_for("printf \"{\\\"access_token\\\":\\\"t-$$\\\",\\\"expires_in\\\":40}\"", 5000);
    struct sw_token_source *ts = sw_token_source_for(base, NULL, &cfg->backends[0]);
    assert_non_null(ts);
    /* the same credentials: the same source */
    assert_ptr_equal(sw_token_source_for(base, NULL, &cfg->backends[0]), ts);
    struct waiter a = {.w.done = on_done}, b = {.w.done = on_done};
    char *tok = NULL;
    const char *why = NULL;
    int64_t now = sw_now_ms();
    assert_int_equal(sw_token_get(ts, now, &a.w, &tok, &why), 1);
    assert_int_equal(sw_token_get(ts, now, &b.w, &tok, &why), 1);
    run();
    if (!b.calls)
        run();
    assert_int_equal(a.calls, 1);
    assert_int_equal(b.calls, 1);
    assert_string_equal(a.token, b.token);
    assert_int_equal(strncmp(a.token, "t-", 2), 0);
    struct sw_token_stats st;
    sw_token_stats(ts, &st);
    assert_int_equal(st.refreshes, 1);
    assert_int_equal(st.waits, 2);
    /* cached: at once, no refresh */
    assert_int_equal(sw_token_get(ts, sw_now_ms(), &a.w, &tok, &why), 0);
    assert_string_equal(tok, a.token);
    free(tok);
    sw_token_stats(ts, &st);
    assert_int_equal(st.refreshes, 1);
    /* in the last quarter of its life (10 s of 40): the current token is
     * answered and a refresh starts behind it */
    assert_int_equal(sw_token_get(ts, sw_now_ms() + 31000, &a.w, &tok, &why), 0);
    assert_string_equal(tok, a.token);
    free(tok);
    sw_token_stats(ts, &st);
    assert_int_equal(st.refreshes, 2);
    assert_int_equal(st.waits, 2);
    /* the refresh ends on the loop: a later get sees the new token */
    for (int i = 0; i < 500; i++) {
        struct timeval tv = {0, 10000};
        event_base_loopexit(base, &tv);
        event_base_dispatch(base);
        assert_int_equal(sw_token_get(ts, sw_now_ms(), &a.w, &tok, &why), 0);
        bool fresh = strcmp(tok, a.token) != 0;
        free(tok);
        if (fresh)
            break;
        assert_true(i < 499);
    }
    sw_config_unref(cfg);
}

static void test_failure(void **state)
{
    (void)state;
    struct sw_config *cfg = cfg_for("exit 3", 5000);
    struct sw_token_source *ts = sw_token_source_for(base, NULL, &cfg->backends[0]);
    struct waiter a = {.w.done = on_done};
    char *tok = NULL;
    const char *why = NULL;
    assert_int_equal(sw_token_get(ts, sw_now_ms(), &a.w, &tok, &why), 1);
    run();
    assert_int_equal(a.calls, 1);
    assert_string_equal(a.token, "");
    assert_non_null(strstr(a.why, "non-zero exit"));
    /* within the retry pause: refused at once, same reason, no new run */
    assert_int_equal(sw_token_get(ts, sw_now_ms(), &a.w, &tok, &why), -1);
    assert_non_null(strstr(why, "non-zero exit"));
    struct sw_token_stats st;
    sw_token_stats(ts, &st);
    assert_int_equal(st.refreshes, 1);
    assert_int_equal(st.failures, 1);
    /* after it: tried again */
    assert_int_equal(sw_token_get(ts, sw_now_ms() + SW_TOKEN_RETRY_MS, &a.w, &tok, &why), 1);
    run();
    assert_int_equal(a.calls, 2);
    sw_config_unref(cfg);
}

static void test_timeout_and_cancel(void **state)
{
    (void)state;
    struct sw_config *cfg = cfg_for("sleep 5", 150);
    struct sw_token_source *ts = sw_token_source_for(base, NULL, &cfg->backends[0]);
    struct waiter a = {.w.done = on_done}, gone = {.w.done = on_done};
    char *tok = NULL;
    const char *why = NULL;
    assert_int_equal(sw_token_get(ts, sw_now_ms(), &gone.w, &tok, &why), 1);
    assert_int_equal(sw_token_get(ts, sw_now_ms(), &a.w, &tok, &why), 1);
    sw_token_cancel(ts, &gone.w);
    assert_false(gone.w.linked);
    run();
    assert_int_equal(a.calls, 1);
    assert_non_null(strstr(a.why, "ran out of time"));
    assert_int_equal(gone.calls, 0);
    sw_config_unref(cfg);
}

static void test_bare_token_and_none(void **state)
{
    (void)state;
    struct sw_config *cfg = cfg_for("echo plain-token-1", 5000);
    struct sw_token_source *ts = sw_token_source_for(base, NULL, &cfg->backends[0]);
    struct waiter a = {.w.done = on_done};
    char *tok = NULL;
    const char *why = NULL;
    assert_int_equal(sw_token_get(ts, sw_now_ms(), &a.w, &tok, &why), 1);
    run();
    assert_string_equal(a.token, "plain-token-1");
    /* kept SW_TOKEN_COMMAND_TTL_S: still valid just before, refreshed ahead */
    assert_int_equal(sw_token_get(ts, sw_now_ms() + (SW_TOKEN_COMMAND_TTL_S - 1) * 1000LL, &a.w, &tok, &why), 0);
    free(tok);
    sw_config_unref(cfg);
    /* a backend that authenticates otherwise has no source */
    struct sw_config *plain = NULL;
    struct sw_config_errors errs;
    memset(&errs, 0, sizeof errs);
    static const char text[] = "backends:\n  - { name: g, tier: cloud, url: \"https://x\", model: m,"
                               " dialect: gemini, api_key: k }\nmodels:\n  - { name: c, backends: [g] }\n";
    sw_config_parse("t.yaml", text, sizeof text - 1, NULL, NULL, &plain, &errs);
    sw_config_errors_free(&errs);
    assert_non_null(plain);
    assert_null(sw_token_source_for(base, NULL, &plain->backends[0]));
    sw_config_unref(plain);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wait_cache_ahead), cmocka_unit_test(test_failure),
        cmocka_unit_test(test_timeout_and_cancel), cmocka_unit_test(test_bare_token_and_none),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
