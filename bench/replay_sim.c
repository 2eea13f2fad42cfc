/* Offline replay of the spill decision against an oracle: see replay_sim.h. */
#include "replay_sim.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "route/route.h"
#include "state/claim.h"
#include "state/live.h"

#define T0_MS 1000000           /* the gateway's clock at the start of the trace */
#define WALL0_MS 1700000000000LL
#define QUEUE_CHECK_MS 25.0     /* the relay's re-check of a queued request */
#define TIMEOUT_MS 30000        /* routing.request_timeout_ms */

void rp_params_default(struct rp_params *p, bool varied)
{
    *p = (struct rp_params){
        .seed = 1,
        .varied = varied,
        .slots = 4,
        .prefill_ms_per_token = 0.5,
        .decode_tps = 30,
        .slow_factor = varied ? 2.0 : 1.0,
        .slow_from = 0.4,
        .slow_to = 0.7,
        .base_load = 0.6,
        .spike_load = 3.0,
        .phase_s = {600, 300, 600},
        .budget_ms = 1000,
        .cloud_ttft_ms = 400,
    };
}

/* ---- Trace ---- */

struct req {
    double t_arr;               /* ms since the trace start */
    long prompt, max_tokens, out;
    int phase;
    /* gateway */
    struct sw_claim claim;
    enum { R_NEW, R_QUEUED, R_RUNNING, R_DONE } state;
    uint32_t left;              /* exclude bits of the locals whose queue it moved out of */
    double t_start, first_ms, decode_ms, t_end;
};

static double expo(unsigned short xs[3], double mean)
{
    return -mean * log(1.0 - erand48(xs));
}

/* Prompt tokens, max_tokens and the true output length of one request. */
static void draw_size(unsigned short xs[3], bool varied, long *prompt, long *max_tokens, long *out)
{
    if (!varied) {
        *prompt = 400;
        *max_tokens = 128;
        *out = 128;
        return;
    }
    static const long maxes[] = {32, 64, 128, 256, 512};
    double pr = 50 + expo(xs, 500);
    *prompt = (long)(pr < 4000 ? pr : 4000);
    *max_tokens = maxes[(int)(erand48(xs) * 5) % 5];
    /* Most answers stop before max_tokens: uniform in [max/4, max]. */
    *out = *max_tokens / 4 + (long)(erand48(xs) * (double)(*max_tokens - *max_tokens / 4 + 1));
    if (*out > *max_tokens)
        *out = *max_tokens;
    if (*out < 1)
        *out = 1;
}

/* ---- The local box (llmsim's performance model) ---- */

struct box {
    const struct rp_params *p;
    double slow_from_ms, slow_to_ms;
};

static double box_factor(const struct box *b, double t)
{
    return t >= b->slow_from_ms && t < b->slow_to_ms ? b->p->slow_factor : 1.0;
}

/* A generation starting at t: prefill, one token period to the first byte,
 * a period per further token. */
static void box_times(const struct box *b, double t, long prompt, long out, double *first_ms,
                      double *total_ms)
{
    double f = box_factor(b, t);
    double prefill = (double)prompt * b->p->prefill_ms_per_token * f;
    double period = 1000.0 / b->p->decode_tps * f;
    *first_ms = prefill + period;
    *total_ms = prefill + (double)out * period;
}

/* ---- Events ---- */

enum ev_kind { EV_ARRIVE, EV_DONE, EV_QCHECK };

struct event {
    double t;
    uint64_t seq;               /* ties: first scheduled first */
    enum ev_kind kind;
    long r;
};

struct sim {
    const struct rp_params *p;
    struct box box;
    struct req *reqs;
    long n;
    struct event *heap;
    size_t nheap, capheap;
    uint64_t seq;
    double now;
    struct sw_live *live;
    const struct sw_config_model *model;
    size_t local_be;            /* config index of the local backend */
    size_t cloud_be;            /* config index of the cloud backend */
    struct rp_result *res;
};

static struct sim *g_sim;       /* for the slot-grant callback */

static bool ev_less(const struct event *a, const struct event *b)
{
    return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static void push(struct sim *s, double t, enum ev_kind k, long r)
{
    if (s->nheap == s->capheap) {
        s->capheap = s->capheap ? 2 * s->capheap : 1024;
        s->heap = realloc(s->heap, s->capheap * sizeof *s->heap);
        if (!s->heap)
            abort();
    }
    size_t i = s->nheap++;
    s->heap[i] = (struct event){t, s->seq++, k, r};
    while (i > 0 && ev_less(&s->heap[i], &s->heap[(i - 1) / 2])) {
        struct event tmp = s->heap[i];
        s->heap[i] = s->heap[(i - 1) / 2];
        s->heap[(i - 1) / 2] = tmp;
        i = (i - 1) / 2;
    }
}

static struct event pop(struct sim *s)
{
    struct event top = s->heap[0];
    s->heap[0] = s->heap[--s->nheap];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < s->nheap && ev_less(&s->heap[l], &s->heap[m]))
            m = l;
        if (r < s->nheap && ev_less(&s->heap[r], &s->heap[m]))
            m = r;
        if (m == i)
            break;
        struct event tmp = s->heap[i];
        s->heap[i] = s->heap[m];
        s->heap[m] = tmp;
        i = m;
    }
    return top;
}

static int64_t now_ms(const struct sim *s)
{
    return T0_MS + (int64_t)floor(s->now);
}

/* ---- Gateway ---- */

static void facts_of(const struct req *q, struct sw_route_facts *f)
{
    memset(f, 0, sizeof *f);
    f->prompt_tokens_est = q->prompt;
    f->max_tokens = q->max_tokens;
    f->max_tokens_given = true;     /* every request of the trace names its max_tokens */
    f->allows_cloud = true;
    f->deadline_ms = T0_MS + (int64_t)floor(q->t_arr) + TIMEOUT_MS;
    f->exclude = q->left;
}

static void to_cloud(struct sim *s, struct req *q, long *why)
{
    struct rp_phase *ph = &s->res->ph[q->phase];
    /* The gateway measures the cloud's first byte (its latency window; the
     * queue check compares it with the budget). */
    sw_live_on_success(s->live, s->cloud_be, now_ms(s), q->prompt, s->p->cloud_ttft_ms, 0,
                       q->out);
    ph->gw_cloud++;
    (*why)++;
    if (s->now - q->t_arr + s->p->cloud_ttft_ms <= (double)s->p->budget_ms)
        ph->gw_ok++;
    q->state = R_DONE;
}

static void start_local(struct sim *s, struct req *q)
{
    q->state = R_RUNNING;
    q->t_start = s->now;
    double total;
    box_times(&s->box, s->now, q->prompt, q->out, &q->first_ms, &total);
    q->decode_ms = total - q->first_ms;
    q->t_end = s->now + total;
    if (s->now + q->first_ms - q->t_arr <= (double)s->p->budget_ms)
        s->res->ph[q->phase].gw_ok++;
    push(s, q->t_end, EV_DONE, q - s->reqs);
}

static void on_grant(struct sw_claim *c)
{
    struct req *q = (struct req *)((char *)c - offsetof(struct req, claim));
    start_local(g_sim, q);
}

static void arrive(struct sim *s, struct req *q)
{
    struct sw_live_snapshot snap;
    struct sw_route_facts f;
    struct sw_route_plan plan;
    int64_t now = now_ms(s);
    struct rp_phase *ph = &s->res->ph[q->phase];

    facts_of(q, &f);
    sw_live_snapshot(s->live, s->model, now, &snap);
    sw_route_decide(&f, &snap.view, &snap.policy, now, &plan);
    for (size_t k = 0; k < plan.n; k++) {
        const struct sw_route_attempt *a = &plan.attempts[k];
        if (snap.backends[a->backend].tier == SW_TIER_CLOUD) {
            to_cloud(s, q, a->reason == SW_REASON_LATENCY ? &ph->gw_degraded : &ph->gw_at_arrival);
            return;
        }
        q->claim.on_grant = on_grant;
        switch (sw_claim_take(s->live, snap.map[a->backend], &f, now, &q->claim)) {
        case SW_CLAIM_GRANTED:
            start_local(s, q);
            return;
        case SW_CLAIM_QUEUED:
            q->state = R_QUEUED;
            push(s, s->now + QUEUE_CHECK_MS, EV_QCHECK, q - s->reqs);
            return;
        default:
            break;      /* the next attempt */
        }
    }
    ph->gw_failed++;
    q->state = R_DONE;
}

/* The relay's check of a queued request (on_queue_check): past the deadline
 * it fails; when the router would send it to a cloud without this local and
 * sw_route_leave_queue says so (its estimated first token breaks the budget,
 * or the cloud's would not make it after one more check), it leaves the
 * queue. */
static void queue_check(struct sim *s, struct req *q)
{
    if (q->state != R_QUEUED)
        return;
    int64_t now = now_ms(s);
    struct sw_route_facts f;
    facts_of(q, &f);
    if (now >= f.deadline_ms) {
        sw_claim_settle(s->live, &q->claim, SW_CLAIM_NEUTRAL, 0, 0, -1, 0, 0, 0, -1, now);
        s->res->ph[q->phase].gw_failed++;
        q->state = R_DONE;
        return;
    }
    struct sw_live_snapshot snap;
    sw_live_snapshot(s->live, s->model, now, &snap);
    for (size_t k = 0; k < snap.view.n; k++) {
        if (snap.map[k] != q->claim.be)
            continue;
        struct sw_route_backend_view v = snap.backends[k];
        v.queued = sw_claim_queue_position(s->live, &q->claim);
        double elapsed = s->now - q->t_arr;
        double est = sw_route_est_ttft_ms(&v, q->prompt);
        long budget = sw_route_budget_ms(&f, &snap.policy);
        struct sw_route_facts fx = f;
        struct sw_route_plan plan;
        fx.exclude |= 1u << k;
        sw_route_decide(&fx, &snap.view, &snap.policy, now, &plan);
        /* the relay's move to another local that starts it at once */
        if (sw_route_moves_to(&snap.view, &plan, (double)(now - q->claim.taken_ms), est,
                              QUEUE_CHECK_MS)) {
            sw_claim_settle(s->live, &q->claim, SW_CLAIM_NEUTRAL, 0, 0, -1, 0, 0, 0, -1, now);
            q->left |= 1u << k;
            q->state = R_NEW;
            arrive(s, q);
            return;
        }
        if (plan.n > 0 && snap.backends[plan.attempts[0].backend].tier == SW_TIER_CLOUD) {
            struct sw_route_backend_view vb = v;
            vb.first_release_ms = 0;    /* every running request at its bound */
            if (sw_route_leave_queue(elapsed, est, sw_route_est_ttft_ms(&vb, q->prompt),
                                     plan.est_ttft_ms[plan.attempts[0].backend], budget,
                                     QUEUE_CHECK_MS)) {
                sw_claim_settle(s->live, &q->claim, SW_CLAIM_NEUTRAL, 0, 0, -1, 0, 0, 0, -1,
                                now);
                to_cloud(s, q, &s->res->ph[q->phase].gw_left_queue);
                return;
            }
        }
    }
    push(s, s->now + QUEUE_CHECK_MS, EV_QCHECK, q - s->reqs);
}

static void done(struct sim *s, struct req *q)
{
    q->state = R_DONE;
    /* What the relay reports: prompt and output usage, first byte after
     * sending, first to last byte. Releasing the slot may start a waiter. */
    sw_claim_settle(s->live, &q->claim, SW_CLAIM_OK, q->prompt, q->out, q->first_ms,
                    q->decode_ms, 200, 0, -1, now_ms(s));
}

/* ---- Oracle ---- */

static void oracle(const struct sim *s, struct rp_result *res)
{
    const struct rp_params *p = s->p;
    double *free_at = calloc((size_t)p->slots, sizeof *free_at);
    if (!free_at)
        abort();
    for (long i = 0; i < s->n; i++) {
        const struct req *q = &s->reqs[i];
        struct rp_phase *ph = &res->ph[q->phase];
        int m = 0;
        for (int k = 1; k < p->slots; k++)
            if (free_at[k] < free_at[m])
                m = k;
        double start = q->t_arr > free_at[m] ? q->t_arr : free_at[m];
        double first, total;
        box_times(&s->box, start, q->prompt, q->out, &first, &total);
        if (start - q->t_arr + first <= (double)p->budget_ms) {
            free_at[m] = start + total;
            ph->or_ok++;
        } else {
            ph->or_cloud++;
            if (p->cloud_ttft_ms <= (double)p->budget_ms)
                ph->or_ok++;
        }
    }
    free(free_at);
}

/* ---- Run ---- */

static struct sw_live *gateway(const struct rp_params *p, struct sw_live_shared **g,
                               struct sw_config **cfgp)
{
    char yaml[2048];
    /* The latency window flags the box degraded when its own first byte
     * (after the gateway's queue) averages over the budget. */
    snprintf(yaml, sizeof yaml,
             "listen: \"127.0.0.1:0\"\n"
             "backends:\n"
             "  - {name: box, tier: local, url: \"http://127.0.0.1:9001\", model: m, slots: %d,"
             " queue_max: 100000}\n"
             "  - {name: cloud, tier: cloud, url: \"http://127.0.0.1:9002\", model: c}\n"
             "models:\n"
             "  - {name: chat, backends: [box, cloud]}\n"
             "routing:\n"
             "  ttft_budget_ms: %ld\n"
             "  request_timeout_ms: %d\n"
             "  latency: {degrade_ms: %ld, recover_ms: %ld}\n",
             p->slots, p->budget_ms, TIMEOUT_MS, p->budget_ms, p->budget_ms * 4 / 5);
    struct sw_config *cfg = NULL;
    struct sw_config_errors errs;
    int err = sw_config_parse("replay.yaml", yaml, strlen(yaml), NULL, NULL, &cfg, &errs);
    for (size_t i = 0; i < errs.n; i++)
        fprintf(stderr, "replay: config: %s\n", errs.msgs[i]);
    sw_config_errors_free(&errs);
    if (err)
        return NULL;
    *g = sw_live_shared_new(cfg, T0_MS, WALL0_MS);
    struct sw_live *live = *g ? sw_live_new(cfg, *g, NULL, NULL, T0_MS) : NULL;
    *cfgp = cfg;
    return live;
}

int rp_run(const struct rp_params *p, struct rp_result *out)
{
    struct sim s = {.p = p};
    memset(out, 0, sizeof *out);
    s.res = out;

    /* The box's capacity for the mean request (no slowdown), from a large
     * sample of the size distribution on its own stream. */
    unsigned short xs[3] = {0x330e, (unsigned short)p->seed, (unsigned short)(p->seed >> 16)};
    unsigned short xz[3] = {0x1234, (unsigned short)~p->seed, 7};
    double svc = 0;
    for (int i = 0; i < 20000; i++) {
        long pr, mx, o;
        draw_size(xz, p->varied, &pr, &mx, &o);
        svc += (double)pr * p->prefill_ms_per_token + (double)o * 1000.0 / p->decode_tps;
    }
    svc /= 20000;
    out->capacity_rps = (double)p->slots * 1000.0 / svc;

    double t_phase[RP_NPHASES + 1] = {0};
    for (int k = 0; k < RP_NPHASES; k++)
        t_phase[k + 1] = t_phase[k] + p->phase_s[k] * 1000.0;
    s.box = (struct box){p, t_phase[1] + p->slow_from * (t_phase[2] - t_phase[1]),
                         t_phase[1] + p->slow_to * (t_phase[2] - t_phase[1])};

    size_t cap = 1024;
    s.reqs = calloc(cap, sizeof *s.reqs);
    for (int k = 0; k < RP_NPHASES && s.reqs; k++) {
        double rate = (k == RP_SPIKE ? p->spike_load : p->base_load) * out->capacity_rps / 1000.0;
        for (double t = t_phase[k] + expo(xs, 1.0 / rate); t < t_phase[k + 1];
             t += expo(xs, 1.0 / rate)) {
            if ((size_t)s.n == cap) {
                cap *= 2;
                struct req *nr = realloc(s.reqs, cap * sizeof *nr);
                if (!nr)
                    abort();
                s.reqs = nr;
            }
            struct req *q = &s.reqs[s.n++];
            memset(q, 0, sizeof *q);
            q->t_arr = t;
            q->phase = k;
            draw_size(xs, p->varied, &q->prompt, &q->max_tokens, &q->out);
            if (p->knows_output)
                q->max_tokens = q->out;
            out->ph[k].n++;
        }
    }
    if (!s.reqs)
        abort();

    oracle(&s, out);

    struct sw_live_shared *g = NULL;
    struct sw_config *cfg = NULL;
    s.live = gateway(p, &g, &cfg);
    if (!s.live) {
        fprintf(stderr, "replay: cannot build the gateway state\n");
        sw_live_shared_free(g);
        sw_config_unref(cfg);
        free(s.reqs);
        return -1;
    }
    s.model = sw_config_find_model(cfg, "chat");
    for (size_t i = 0; i < cfg->n_backends; i++)
        if (cfg->backends[i].tier == SW_TIER_CLOUD)
            s.cloud_be = i;
    g_sim = &s;
    for (long i = 0; i < s.n; i++)
        push(&s, s.reqs[i].t_arr, EV_ARRIVE, i);
    while (s.nheap > 0) {
        struct event e = pop(&s);
        s.now = e.t;
        struct req *q = &s.reqs[e.r];
        switch (e.kind) {
        case EV_ARRIVE: arrive(&s, q); break;
        case EV_QCHECK: queue_check(&s, q); break;
        case EV_DONE: done(&s, q); break;
        }
    }
    g_sim = NULL;
    sw_live_unref(s.live);
    sw_live_shared_free(g);
    sw_config_unref(cfg);
    free(s.heap);
    free(s.reqs);
    return 0;
}
