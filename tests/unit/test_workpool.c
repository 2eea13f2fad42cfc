/* common/workpool: every job runs once on a worker and comes back once on
 * the loop's thread; a cancelled job is not run if no worker took it and is
 * handed back cancelled either way; freeing the pool joins its workers and
 * hands back what is left; workers block signals. Every wait is on a
 * condition, bounded. */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include <event2/event.h>

#include "common/workpool.h"

struct job {
    int runs, dones;
    enum sw_work_end end;
    bool done_on_loop;
    bool signals_blocked;
    int *left;
    struct event_base *base;
    pthread_t loop;
};

static void run(void *ud)
{
    struct job *j = ud;
    j->runs++;
    sigset_t set;
    pthread_sigmask(SIG_BLOCK, NULL, &set);
    j->signals_blocked = sigismember(&set, SIGTERM) && sigismember(&set, SIGINT) &&
                         sigismember(&set, SIGHUP);
}

static void done(void *ud, enum sw_work_end end)
{
    struct job *j = ud;
    j->dones++;
    j->end = end;
    j->done_on_loop = pthread_equal(pthread_self(), j->loop);
    if (--*j->left == 0 && j->base)
        event_base_loopbreak(j->base);
}

/* The threads of this process (/proc/self/status), -1 when unreadable. */
static int threads_now(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return -1;
    char line[256];
    int n = -1;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "Threads:", 8)) {
            char *end;
            n = (int)strtol(line + 8, &end, 10);
            break;
        }
    fclose(f);
    return n;
}

/* The process's threads before any pool was made (read first in main). */
static int threads_at_start;

/* Waits (bounded: 5 s) until the process has `want` threads: a joined
 * thread leaves the kernel's list just after pthread_join returns. */
static int threads_settle(int want)
{
    int n = threads_now();
    for (int i = 0; i < 500 && n != want; i++) {
        usleep(10000);
        n = threads_now();
    }
    return n;
}

/* Runs the loop until every job is back (loopbreak) or, as a bound, 10 s. */
static void dispatch(struct event_base *base)
{
    struct timeval tv = {10, 0};
    event_base_loopexit(base, &tv);
    event_base_dispatch(base);
}

static void test_new_bounds(void **state)
{
    (void)state;
    struct event_base *base = event_base_new();
    assert_null(sw_workpool_new(base, 0));
    assert_null(sw_workpool_new(base, SW_WORKPOOL_MAX_THREADS + 1));
    struct sw_workpool *p = sw_workpool_new(base, SW_WORKPOOL_MAX_THREADS);
    assert_non_null(p);
    assert_int_equal(sw_workpool_pending(p), 0);
    assert_int_equal(sw_workpool_pending(NULL), 0);
    sw_workpool_free(p);
    sw_workpool_free(NULL);
    event_base_free(base);
}

/* Every job runs once (signals blocked) and comes back once, on the loop;
 * nothing comes back from inside submit. */
static void test_runs_and_hands_back(void **state)
{
    (void)state;
    struct event_base *base = event_base_new();
    struct sw_workpool *p = sw_workpool_new(base, 2);
    assert_non_null(p);
    enum { N = 50 };
    struct job jobs[N] = {0};
    int left = N;
    for (int i = 0; i < N; i++) {
        jobs[i] = (struct job){.left = &left, .base = base, .loop = pthread_self()};
        assert_non_null(sw_workpool_submit(p, run, done, &jobs[i]));
    }
    assert_int_equal(sw_workpool_pending(p), N);
    assert_int_equal(left, N);          /* nothing handed back before the loop runs */
    dispatch(base);
    assert_int_equal(left, 0);
    for (int i = 0; i < N; i++) {
        assert_int_equal(jobs[i].runs, 1);
        assert_int_equal(jobs[i].dones, 1);
        assert_int_equal(jobs[i].end, SW_WORK_RAN);
        assert_true(jobs[i].done_on_loop);
        assert_true(jobs[i].signals_blocked);
    }
    assert_int_equal(sw_workpool_pending(p), 0);
    sw_workpool_free(p);
    event_base_free(base);
}

/* A job that holds its worker until released, to cancel it while it runs. */
struct gate {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool started, open;
    struct job job;
};

static void gated_run(void *ud)
{
    struct gate *g = ud;
    pthread_mutex_lock(&g->mu);
    g->started = true;
    pthread_cond_broadcast(&g->cv);
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 10;                 /* a bound: the test opens it at once */
    while (!g->open)
        if (pthread_cond_timedwait(&g->cv, &g->mu, &until) != 0)
            break;
    pthread_mutex_unlock(&g->mu);
    run(&g->job);
}

static void gated_done(void *ud, enum sw_work_end end)
{
    struct gate *g = ud;
    done(&g->job, end);
}

/* Cancelled while queued: never run, handed back cancelled (not from inside
 * cancel); cancelled while running: it finishes, handed back cancelled. */
static void test_cancel(void **state)
{
    (void)state;
    struct event_base *base = event_base_new();
    struct sw_workpool *p = sw_workpool_new(base, 1);
    assert_non_null(p);
    int left = 3;
    struct gate g = {.job = {.left = &left, .base = base, .loop = pthread_self()}};
    pthread_mutex_init(&g.mu, NULL);
    pthread_cond_init(&g.cv, NULL);
    struct sw_work *running = sw_workpool_submit(p, gated_run, gated_done, &g);
    struct job queued = {.left = &left, .base = base, .loop = pthread_self()};
    struct job kept = queued;
    struct sw_work *wq = sw_workpool_submit(p, run, done, &queued);
    assert_non_null(sw_workpool_submit(p, run, done, &kept));

    /* The one worker holds the gated job; the others wait behind it. */
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 10;
    pthread_mutex_lock(&g.mu);
    while (!g.started)
        assert_int_equal(pthread_cond_timedwait(&g.cv, &g.mu, &until), 0);
    pthread_mutex_unlock(&g.mu);
    sw_workpool_cancel(p, wq);
    sw_workpool_cancel(p, running);
    assert_int_equal(left, 3);          /* nothing handed back from inside cancel */
    pthread_mutex_lock(&g.mu);
    g.open = true;
    pthread_cond_broadcast(&g.cv);
    pthread_mutex_unlock(&g.mu);

    dispatch(base);
    assert_int_equal(left, 0);
    assert_int_equal(queued.runs, 0);
    assert_int_equal(queued.dones, 1);
    assert_int_equal(queued.end, SW_WORK_CANCELLED);
    assert_int_equal(g.job.runs, 1);
    assert_int_equal(g.job.dones, 1);
    assert_int_equal(g.job.end, SW_WORK_CANCELLED);
    assert_int_equal(kept.runs, 1);
    assert_int_equal(kept.end, SW_WORK_RAN);
    assert_true(queued.done_on_loop && g.job.done_on_loop && kept.done_on_loop);
    assert_int_equal(sw_workpool_pending(p), 0);
    sw_workpool_free(p);
    event_base_free(base);
    pthread_cond_destroy(&g.cv);
    pthread_mutex_destroy(&g.mu);
}

/* Freed with jobs queued and some cancelled, the loop never run: the
 * workers are joined (the process has its threads of before), each job comes
 * back once, from the free; the cancelled as cancelled; of the rest, those a
 * worker took ran and those none took did not. */
static void test_free_hands_back_all(void **state)
{
    (void)state;
    struct event_base *base = event_base_new();
    /* an earlier test's joined workers may not have left the kernel's list yet */
    int before = threads_settle(threads_at_start);
    assert_int_equal(before, threads_at_start);
    struct sw_workpool *p = sw_workpool_new(base, 3);
    assert_int_equal(threads_now(), before + 3);
    enum { N = 20 };
    struct job jobs[N] = {0};
    int left = N;
    for (int i = 0; i < N; i++) {
        jobs[i] = (struct job){.left = &left, .loop = pthread_self()};
        struct sw_work *w = sw_workpool_submit(p, run, done, &jobs[i]);
        if (i % 2)
            sw_workpool_cancel(p, w);
    }
    sw_workpool_free(p);
    assert_int_equal(threads_settle(before), before);   /* every worker joined */
    assert_int_equal(left, 0);
    for (int i = 0; i < N; i++) {
        assert_int_equal(jobs[i].dones, 1);
        assert_true(jobs[i].done_on_loop);
        if (i % 2)
            assert_int_equal(jobs[i].end, SW_WORK_CANCELLED);
        else
            assert_int_equal(jobs[i].runs, jobs[i].end == SW_WORK_RAN ? 1 : 0);
        assert_true(jobs[i].runs <= 1);
    }
    event_base_free(base);
}

int main(void)
{
    threads_at_start = threads_now();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_new_bounds),
        cmocka_unit_test(test_runs_and_hands_back),
        cmocka_unit_test(test_cancel),
        cmocka_unit_test(test_free_hands_back_all),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
