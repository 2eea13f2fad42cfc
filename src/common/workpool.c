#include "common/workpool.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

struct sw_work {
    void (*run)(void *ud);
    void (*done)(void *ud, enum sw_work_end end);
    void *ud;
    bool cancelled;         /* under the mutex */
    bool ran;               /* set by the worker before the job is queued back */
    struct sw_work *next;
};

struct sw_workpool {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct sw_work *todo, *todo_tail;   /* under mu */
    struct sw_work *fin, *fin_tail;     /* finished, to hand back; under mu */
    bool stop;                          /* under mu */
    pthread_t threads[SW_WORKPOOL_MAX_THREADS];
    int n_threads;
    int pipe_r, pipe_w;
    struct event *ready;
    long pending;                       /* loop thread only */
    unsigned long long submitted;       /* loop thread only */
};

static void push(struct sw_work **head, struct sw_work **tail, struct sw_work *w)
{
    w->next = NULL;
    if (*tail)
        (*tail)->next = w;
    else
        *head = w;
    *tail = w;
}

/* Wakes the loop; a full pipe already has a wake-up pending. */
static void wake(struct sw_workpool *p)
{
    char c = 1;
    ssize_t n;
    do
        n = write(p->pipe_w, &c, 1);
    while (n < 0 && errno == EINTR);
}

static void *worker(void *arg)
{
    struct sw_workpool *p = arg;
    for (;;) {
        pthread_mutex_lock(&p->mu);
        while (!p->stop && !p->todo)
            pthread_cond_wait(&p->cv, &p->mu);
        if (p->stop) {
            pthread_mutex_unlock(&p->mu);
            return NULL;
        }
        struct sw_work *w = p->todo;
        p->todo = w->next;
        if (!p->todo)
            p->todo_tail = NULL;
        bool run = !w->cancelled;
        pthread_mutex_unlock(&p->mu);
        if (run) {
            w->run(w->ud);
            w->ran = true;
        }
        pthread_mutex_lock(&p->mu);
        push(&p->fin, &p->fin_tail, w);
        pthread_mutex_unlock(&p->mu);
        wake(p);
    }
}

/* Hands every finished job back, in the order they finished. */
static void hand_back(struct sw_workpool *p)
{
    pthread_mutex_lock(&p->mu);
    struct sw_work *w = p->fin;
    p->fin = p->fin_tail = NULL;
    pthread_mutex_unlock(&p->mu);
    while (w) {
        struct sw_work *next = w->next;
        /* cancelled is only written on this thread: no lock needed to read it */
        enum sw_work_end end = w->cancelled ? SW_WORK_CANCELLED
                               : w->ran     ? SW_WORK_RAN
                                            : SW_WORK_NOT_RUN;
        p->pending--;
        w->done(w->ud, end);
        free(w);
        w = next;
    }
}

static void on_ready(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    char buf[256];
    while (read(fd, buf, sizeof buf) > 0)
        ;
    hand_back(arg);
}

struct sw_workpool *sw_workpool_new(struct event_base *base, int threads)
{
    if (threads < 1 || threads > SW_WORKPOOL_MAX_THREADS)
        return NULL;
    struct sw_workpool *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    int fds[2];
    if (pipe2(fds, O_NONBLOCK | O_CLOEXEC) != 0) {
        free(p);
        return NULL;
    }
    p->pipe_r = fds[0];
    p->pipe_w = fds[1];
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    p->ready = event_new(base, p->pipe_r, EV_READ | EV_PERSIST, on_ready, p);
    if (!p->ready || event_add(p->ready, NULL) != 0) {
        sw_workpool_free(p);
        return NULL;
    }
    /* The workers start with every signal blocked (they inherit the mask). */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    for (int i = 0; i < threads; i++) {
        if (pthread_create(&p->threads[i], NULL, worker, p) != 0)
            break;
        pthread_setname_np(p->threads[i], "sw-work"); /* top -H, perf: apart from the loop */
        p->n_threads++;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (p->n_threads < threads) {
        sw_workpool_free(p);
        return NULL;
    }
    return p;
}

struct sw_work *sw_workpool_submit(struct sw_workpool *p, void (*run)(void *ud),
                                   void (*done)(void *ud, enum sw_work_end end), void *ud)
{
    struct sw_work *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    w->run = run;
    w->done = done;
    w->ud = ud;
    p->pending++;
    p->submitted++;
    pthread_mutex_lock(&p->mu);
    push(&p->todo, &p->todo_tail, w);
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
    return w;
}

void sw_workpool_cancel(struct sw_workpool *p, struct sw_work *w)
{
    pthread_mutex_lock(&p->mu);
    w->cancelled = true;
    /* Not taken yet: straight to the finished list, so done comes soon. */
    struct sw_work **pp = &p->todo, *prev = NULL;
    while (*pp && *pp != w) {
        prev = *pp;
        pp = &(*pp)->next;
    }
    bool queued = *pp == w;
    if (queued) {
        *pp = w->next;
        if (p->todo_tail == w)
            p->todo_tail = prev;
        push(&p->fin, &p->fin_tail, w);
    }
    pthread_mutex_unlock(&p->mu);
    if (queued)
        wake(p);
}

unsigned long long sw_workpool_submitted(const struct sw_workpool *p)
{
    return p ? p->submitted : 0;
}

long sw_workpool_pending(const struct sw_workpool *p)
{
    return p ? p->pending : 0;
}

void sw_workpool_free(struct sw_workpool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->stop = true;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->n_threads; i++)
        pthread_join(p->threads[i], NULL);
    /* No worker left: what none took is handed back, not run. */
    while (p->todo) {
        struct sw_work *w = p->todo;
        p->todo = w->next;
        push(&p->fin, &p->fin_tail, w);
    }
    p->todo_tail = NULL;
    hand_back(p);
    if (p->ready)
        event_free(p->ready);
    close(p->pipe_r);
    close(p->pipe_w);
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
    free(p);
}
