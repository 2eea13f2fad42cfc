/* Unit tests of the event loop's order of service (src/common/loop.c): a new
 * stream's first-byte work first, the rest of the upstream answers last. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/loop.h"

#define N_DEFAULT 64

struct trace {
    char order[4 * N_DEFAULT + 1]; /* 'F', 'D', 'B' in the order the callbacks ran */
    int n;
    struct event *first;       /* activated by the first default callback */
    int wake_fd;               /* >= 0: the first default callback writes a byte to it */
};

static struct trace tr;

static void on_first(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    (void)arg;
    char c;
    if (fd >= 0)
        assert_int_equal(read(fd, &c, 1), 1);
    tr.order[tr.n++] = 'F';
}

static void on_default(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    (void)arg;
    if (!memchr(tr.order, 'D', (size_t)tr.n)) {
        if (tr.first)
            event_active(tr.first, EV_TIMEOUT, 0);
        if (tr.wake_fd >= 0)
            assert_int_equal(write(tr.wake_fd, "x", 1), 1);
    }
    tr.order[tr.n++] = 'D';
}

static void on_bulk(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    (void)arg;
    tr.order[tr.n++] = 'B';
}

static struct event *ev_at(struct event_base *base, event_callback_fn cb, enum sw_loop_pri pri)
{
    struct event *ev = event_new(base, -1, 0, cb, NULL);
    assert_non_null(ev);
    assert_int_equal(sw_loop_pri(ev, pri), 0);
    return ev;
}

/* Ready together: a stream's first-byte work (a connect completing, the
 * answer's first read) first, then requests and accepts, then the rest of the
 * answers of streams already running. First-byte work made ready by a
 * request's callback goes before the other requests. */
static void test_first_then_default_then_bulk(void **state)
{
    (void)state;
    memset(&tr, 0, sizeof tr);
    tr.wake_fd = -1;
    struct event_base *base = sw_loop_new();
    assert_non_null(base);
    struct event *b[8], *d[N_DEFAULT];
    for (int i = 0; i < 8; i++) {
        b[i] = ev_at(base, on_bulk, SW_PRI_BULK);
        event_active(b[i], EV_TIMEOUT, 0);
    }
    for (int i = 0; i < N_DEFAULT; i++) {
        d[i] = ev_at(base, on_default, SW_PRI_DEFAULT);
        event_active(d[i], EV_TIMEOUT, 0);
    }
    struct event *f0 = ev_at(base, on_first, SW_PRI_FIRST);
    event_active(f0, EV_TIMEOUT, 0);
    tr.first = ev_at(base, on_first, SW_PRI_FIRST); /* activated by the first 'D' */
    assert_int_equal(event_base_dispatch(base), 1); /* no events left */
    char want[sizeof tr.order] = "FDF"; /* libevent runs a more urgent event
                                           activated by a callback right after it */
    memset(want + 3, 'D', N_DEFAULT - 1);
    memset(want + 2 + N_DEFAULT, 'B', 8);
    assert_int_equal(tr.n, N_DEFAULT + 10);
    tr.order[tr.n] = '\0';
    assert_string_equal(tr.order, want);
    for (int i = 0; i < 8; i++)
        event_free(b[i]);
    for (int i = 0; i < N_DEFAULT; i++)
        event_free(d[i]);
    event_free(f0);
    event_free(tr.first);
    event_base_free(base);
}

/* A socket becoming ready for first-byte work (an upstream connect
 * completing) while many requests are ready is served after at most
 * SW_LOOP_BATCH of them, not after all: the loop polls again. */
static void test_ready_socket_waits_one_batch(void **state)
{
    (void)state;
    memset(&tr, 0, sizeof tr);
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    tr.wake_fd = sv[1];
    struct event_base *base = sw_loop_new();
    assert_non_null(base);
    struct event *f = event_new(base, sv[0], EV_READ, on_first, NULL);
    assert_non_null(f);
    assert_int_equal(sw_loop_pri(f, SW_PRI_FIRST), 0);
    event_add(f, NULL);
    struct event *d[N_DEFAULT];
    for (int i = 0; i < N_DEFAULT; i++) {
        d[i] = ev_at(base, on_default, SW_PRI_DEFAULT);
        event_active(d[i], EV_TIMEOUT, 0);
    }
    assert_int_equal(event_base_dispatch(base), 1);
    assert_int_equal(tr.n, N_DEFAULT + 1);
    const char *at = memchr(tr.order, 'F', (size_t)tr.n);
    assert_non_null(at);
    assert_true(at - tr.order <= SW_LOOP_BATCH);
    for (int i = 0; i < N_DEFAULT; i++)
        event_free(d[i]);
    event_free(f);
    event_base_free(base);
    close(sv[0]);
    close(sv[1]);
}

/* A base made without sw_loop_new (the simulator's) has one priority: every
 * level maps to it. */
static void test_plain_base_clamps(void **state)
{
    (void)state;
    struct event_base *base = event_base_new();
    assert_non_null(base);
    struct event *ev = event_new(base, -1, 0, on_bulk, NULL);
    assert_int_equal(sw_loop_pri(ev, SW_PRI_BULK), 0);
    assert_int_equal(event_get_priority(ev), 0);
    event_free(ev);
    event_base_free(base);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_first_then_default_then_bulk),
        cmocka_unit_test(test_ready_socket_waits_one_batch),
        cmocka_unit_test(test_plain_base_clamps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
