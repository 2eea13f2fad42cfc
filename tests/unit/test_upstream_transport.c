/* The upstream attempt over its transport ops (src/upstream/upstream.h,
 * transport.h): a fake transport shows what the generic layer does (start
 * with the attempt's fields, cleanup on a failed start, abort before
 * release, the body freed once, resume passed on, the pause answer passed
 * through unchanged), and the choice between the two real transports by URL. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <event2/event.h>

#include "common/err.h"
#include "config/config.h"
#include "upstream/curlev.h"
#include "upstream/transport.h"
#include "upstream/upstream.h"

static struct {
    int start, abort, resume, release;
    int start_err;
    size_t data_ret;     /* what on_data answered the fake's first bytes */
    char order[16];      /* a: abort, r: release, in call order */
    size_t n_order;
} fk;

static int fake_start(struct sw_upstream *u, const struct sw_config_backend *be, const char *path,
                      const char *headers, long timeout_ms, const char *trace_id)
{
    (void)be, (void)headers, (void)timeout_ms;
    fk.start++;
    assert_string_equal(path, "/v1/chat/completions");
    assert_string_equal(trace_id, "req-1");
    assert_int_equal(u->retry_after_s, -1);
    assert_int_equal(u->status, 0);
    if (fk.start_err) {
        u->aux = malloc(8); /* what a transport may hold when it fails half-way */
        return fk.start_err;
    }
    u->handle = &fk;
    u->running = true;
    u->status = 200;
    fk.data_ret = u->cbs.on_data(u->ud, u->body, u->body_len);
    return SW_OK;
}

static void fake_abort(struct sw_upstream *u)
{
    fk.abort++;
    fk.order[fk.n_order++] = 'a';
    u->running = false;
    u->handle = NULL;
}

static void fake_resume(struct sw_upstream *u)
{
    (void)u;
    fk.resume++;
}

static void fake_release(struct sw_upstream *u)
{
    fk.release++;
    fk.order[fk.n_order++] = 'r';
    free(u->aux);
    u->aux = NULL;
}

static const struct sw_upstream_transport fake = {
    .name = "fake",
    .start = fake_start,
    .abort = fake_abort,
    .resume = fake_resume,
    .release = fake_release,
};

static size_t paused_data(void *ud, const char *bytes, size_t len)
{
    (void)ud, (void)bytes, (void)len;
    return SW_UPSTREAM_PAUSE;
}

static void on_done(void *ud, int err)
{
    (void)ud, (void)err;
    fail_msg("on_done is not called for an aborted attempt");
}

static char *body(void)
{
    char *b = malloc(3);
    memcpy(b, "{}", 3);
    return b;
}

static const struct sw_config_backend be = {.name = "b", .url = "http://127.0.0.1:9"};
static const struct sw_upstream_cbs cbs = {paused_data, on_done};

static void test_fake_lifecycle(void **state)
{
    (void)state;
    memset(&fk, 0, sizeof fk);
    struct sw_upstream u;
    int ud;
    assert_int_equal(sw_upstream_start_on(&u, &fake, NULL, &be, "/v1/chat/completions", NULL,
                                          body(), 2, NULL, 0, 1000, "req-1", &cbs, &ud),
                     SW_OK);
    assert_ptr_equal(u.t, &fake);
    assert_ptr_equal(u.ud, &ud);
    assert_int_equal(fk.start, 1);
    assert_true(fk.data_ret == SW_UPSTREAM_PAUSE); /* the relay's answer, unchanged */
    sw_upstream_resume(&u);
    assert_int_equal(fk.resume, 1);
    sw_upstream_cleanup(&u);
    assert_int_equal(fk.abort, 1);
    assert_int_equal(fk.release, 1);
    assert_memory_equal(fk.order, "ar", 2); /* abort first: the backend frees its slot */
    assert_null(u.body);
    sw_upstream_cleanup(&u); /* twice is harmless */
    assert_int_equal(fk.release, 2);
}

static void test_fake_start_fails(void **state)
{
    (void)state;
    memset(&fk, 0, sizeof fk);
    fk.start_err = SW_ENOMEM;
    struct sw_upstream u;
    assert_int_equal(sw_upstream_start_on(&u, &fake, NULL, &be, "/v1/chat/completions", NULL,
                                          body(), 2, NULL, 0, 1000, "req-1", &cbs, NULL),
                     SW_ENOMEM);
    /* cleaned up: what the transport held and the body are freed */
    assert_int_equal(fk.release, 1);
    assert_null(u.aux);
    assert_null(u.body);
}

static void test_not_started(void **state)
{
    (void)state;
    struct sw_upstream u;
    memset(&u, 0, sizeof u);
    sw_upstream_abort(&u);
    sw_upstream_resume(&u);
    sw_upstream_cleanup(&u);
    assert_null(u.t);
}

static void test_transport_by_url(void **state)
{
    (void)state;
    struct event_base *base = event_base_new();
    struct sw_curlev *cev = sw_curlev_new(base, 8);
    assert_non_null(cev);
    static const struct {
        const char *url;
        const struct sw_upstream_transport *t;
    } cases[] = {
        {"http://127.0.0.1:9001", &sw_transport_h1},
        {"http://localhost:8080/prefix", &sw_transport_h1},
        {"http://[::1]:8080", &sw_transport_h1},
        {"https://127.0.0.1:9001", &sw_transport_curl},
        {"https://api.example.com", &sw_transport_curl},
        {"http://inference.internal:8000", &sw_transport_curl},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const struct sw_upstream_transport *t = sw_transport_for(cev, cases[i].url);
        if (t != cases[i].t)
            fail_msg("%s: %s, want %s", cases[i].url, t->name, cases[i].t->name);
        /* asked again: the pool remembers the URL, same answer */
        assert_ptr_equal(sw_transport_for(cev, cases[i].url), t);
    }
    sw_curlev_free(cev);
    event_base_free(base);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fake_lifecycle),
        cmocka_unit_test(test_fake_start_fails),
        cmocka_unit_test(test_not_started),
        cmocka_unit_test(test_transport_by_url),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
