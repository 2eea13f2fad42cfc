/* Router quality on a multi-turn agent scenario: see agent_sim.h. */
#include "agent_sim.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "route/affinity.h"
#include "route/route.h"
#include "state/claim.h"
#include "state/live.h"

#define T0_MS 1000000
#define WALL0_MS 1700000000000LL
#define QUEUE_CHECK_MS 25.0
#define TIMEOUT_MS 60000
#define MAX_BOXES 4
#define MAX_SLOTS 16
#define MAX_CACHE 16

void ag_params_default(struct ag_params *p)
{
    *p = (struct ag_params){
        .seed = 1,
        .affinity = true,
        .boxes = 2,
        .slots = 2,
        .cache_per_slot = 1,
        .prefill_ms_per_token = 0.4,
        .decode_tps = 40,
        .system_tokens = 2000,
        .turn_min = 100,
        .turn_max = 400,
        .out_min = 24,
        .out_max = 96,
        .turns = 12,
        .gap_ms = 6000,
        .conv_rate_per_s = 0.05,
        .duration_s = 600,
        .budget_ms = 2500,
        .degrade_ms = 8000,
        .cloud_ttft_ms = 600,
    };
}

/* ---- Trace ---- */

struct turn {
    long conv;
    int k;                      /* 1.. */
    double t_arr;
    long prompt, out;
    struct sw_prefix prefix;
    /* gateway */
    struct sw_claim claim;
    enum { T_NEW, T_QUEUED, T_RUNNING, T_DONE } state;
    size_t be;                  /* config index it runs on */
    int box, slot;
    long predicted, cached;
    bool busy;                  /* work that may hold its slot ran on its box (sw_live_cache_busy) */
    uint32_t left;              /* exclude bits of the locals whose queue it moved out of */
    double gap;                 /* after the previous turn (closed loop: after its end) */
    long next;                  /* the conversation's next turn, -1: none */
    double first_ms, decode_ms;
    double or_ttft;             /* the oracle's local TTFT, -1: its cloud */
};

static double expo(unsigned short xs[3], double mean)
{
    return -mean * log(1.0 - erand48(xs));
}

static long uniform(unsigned short xs[3], long lo, long hi)
{
    return lo + (long)(erand48(xs) * (double)(hi - lo + 1));
}

static uint64_t mix(uint64_t conv, uint64_t j)
{
    uint64_t z = conv * 0x9e3779b97f4a7c15ull + j * 0xbf58476d1ce4e5b9ull + 1;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    return z ^ (z >> 31);
}

/* The prefix identity of turn k of a conversation whose turns sent
 * prompts[1..k] after a system block of sys tokens: block 0, then one
 * boundary per turn (what that turn sent), first and latest kept. */
static void prefix_of(long conv, int k, long sys, const long *prompts, struct sw_prefix *p)
{
    p->n = 0;
    p->hash[p->n] = mix((uint64_t)conv, 0);
    p->tokens[p->n++] = sys;
    int from = k - (SW_PREFIX_MAX - 1) + 1;
    if (from < 1)
        from = 1;
    for (int j = from; j <= k; j++) {
        p->hash[p->n] = mix((uint64_t)conv, (uint64_t)j);
        p->tokens[p->n++] = prompts[j];
    }
}

/* ---- The boxes: slots with a prefix cache ---- */

struct centry {
    long conv;
    int k;
    long tokens;
    double ready_at;            /* the oracle's: held once its generation ended */
};

struct slot {
    bool busy;
    double used_at;             /* when its latest turn left it (-1: never used) */
    double free_at;             /* the oracle's */
    int n;
    struct centry e[MAX_CACHE]; /* most recent first */
};

struct box {
    struct slot s[MAX_SLOTS];
};

/* Tokens of turn (conv, k, prompt) slot s holds at time t. */
static long slot_match(const struct slot *s, long conv, int k, long prompt, double t)
{
    long best = 0;
    for (int i = 0; i < s->n; i++) {
        const struct centry *e = &s->e[i];
        if (e->conv != conv || e->k > k || e->ready_at > t)
            continue;
        long held = e->k == k ? prompt - 1 : e->tokens;
        if (held > best)
            best = held;
    }
    return best < prompt ? best : prompt - 1;
}

static void slot_keep(struct slot *s, int cap, long conv, int k, long tokens, double ready_at)
{
    int n = s->n < cap ? s->n : cap - 1;
    memmove(&s->e[1], &s->e[0], (size_t)n * sizeof s->e[0]);
    s->e[0] = (struct centry){conv, k, tokens, ready_at};
    if (s->n < cap)
        s->n++;
}

/* ---- Events ---- */

enum ev_kind { EV_ARRIVE, EV_DONE, EV_QCHECK, EV_HEALTH };

struct event {
    double t;
    uint64_t seq;
    enum ev_kind kind;
    long r;
};

struct sim {
    const struct ag_params *p;
    struct turn *turns;
    long n;
    struct event *heap;
    size_t nheap, capheap;
    uint64_t seq;
    double now;
    struct box box[MAX_BOXES];
    struct sw_live *live;
    const struct sw_config_model *model;
    size_t cloud_be;
    size_t box_be[MAX_BOXES];   /* config index of each box */
    struct ag_result *res;
    double *later;              /* local TTFTs of turns after the first */
    long n_later;
    unsigned short hx[3];       /* health-check round trips */
    long pending;              /* turns not finished (closed loop: the health checks run while any are) */
    double t_end;               /* the last arrival: health checks stop after it */
};

static struct sim *g_sim;

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

static void facts_of(const struct turn *q, struct sw_route_facts *f)
{
    memset(f, 0, sizeof *f);
    f->prompt_tokens_est = q->prompt;
    f->max_tokens = q->out;
    f->max_tokens_given = true;
    f->allows_cloud = true;
    f->deadline_ms = T0_MS + (int64_t)floor(q->t_arr) + TIMEOUT_MS;
    f->exclude = q->left;
}

/* A turn's answer ended at `at`: in a closed loop its conversation's next
 * turn is sent a gap later. */
static void finished(struct sim *s, const struct turn *q, double at)
{
    s->pending--;
    if (!s->p->closed_loop || q->next < 0)
        return;
    struct turn *n = &s->turns[q->next];
    n->t_arr = at + n->gap;
    push(s, n->t_arr, EV_ARRIVE, q->next);
}

static void to_cloud(struct sim *s, struct turn *q)
{
    sw_live_on_success(s->live, s->cloud_be, now_ms(s), q->prompt, s->p->cloud_ttft_ms, 0, q->out);
    s->res->gw_cloud++;
    if (s->now - q->t_arr + s->p->cloud_ttft_ms <= (double)s->p->budget_ms)
        s->res->gw_ok++;
    q->state = T_DONE;
    finished(s, q, s->now + s->p->cloud_ttft_ms + (double)(q->out - 1) * 1000.0 / s->p->decode_tps);
}

static int box_of(const struct sim *s, size_t be)
{
    for (int b = 0; b < s->p->boxes; b++)
        if (s->box_be[b] == be)
            return b;
    return -1;
}

/* What the boxes hold of turn q now: the tokens the best free slot would
 * give it, and the most any slot (busy or not) holds. */
static void truth(const struct sim *s, const struct turn *q, int b, long *free_m, long *any_m)
{
    *free_m = *any_m = 0;
    for (int i = 0; i < s->p->slots; i++) {
        long m = slot_match(&s->box[b].s[i], q->conv, q->k, q->prompt, 1e300);
        if (m > *any_m)
            *any_m = m;
        if (!s->box[b].s[i].busy && m > *free_m)
            *free_m = m;
    }
}

static void start_local(struct sim *s, struct turn *q)
{
    const struct ag_params *p = s->p;
    struct box *bx = &s->box[q->box];
    /* As llmsim and llama.cpp: the free slot holding the longest prefix of
     * the prompt, if more than a tenth of it; else the least recently used. */
    int best = -1, lru = -1;
    long most = 0, lru_held = 0;
    for (int i = 0; i < p->slots; i++) {
        if (bx->s[i].busy)
            continue;
        long m = slot_match(&bx->s[i], q->conv, q->k, q->prompt, 1e300);
        if (m > most && 10 * m > q->prompt) {
            most = m;
            best = i;
        }
        if (lru < 0 || bx->s[i].used_at <= bx->s[lru].used_at) {
            lru = i;
            lru_held = m;
        }
    }
    if (best < 0) {
        best = lru;
        most = lru_held;
    }
    if (best < 0)
        abort();    /* the claim granted a slot: one is free */
    bx->s[best].busy = true;
    q->slot = best;
    q->cached = most > 0 ? most : 0;
    q->state = T_RUNNING;
    double period = 1000.0 / p->decode_tps;
    double prefill = (double)(q->prompt - q->cached) * p->prefill_ms_per_token;
    q->first_ms = prefill + period;
    q->decode_ms = (double)(q->out - 1) * period;
    double ttft = s->now + q->first_ms - q->t_arr;
    if (ttft <= (double)p->budget_ms)
        s->res->gw_ok++;
    else if (p->trace)
        fprintf(stderr, "%s late t=%.0f conv=%ld k=%d prompt=%ld box%d ttft=%.0f waited=%.0f "
                "predicted=%ld cached=%ld busy=%d follow=%d\n", p->affinity ? "on" : "off", s->now, q->conv, q->k, q->prompt, q->box,
                ttft, s->now - q->t_arr, q->predicted, q->cached, q->busy, q->claim.follow);
    if (q->cached > 0)
        s->res->gw_cached_turns++;
    else if (p->trace && q->k > 1) {
        long fm[MAX_BOXES], am[MAX_BOXES];
        for (int b = 0; b < p->boxes; b++)
            truth(s, q, b, &fm[b], &am[b]);
        fprintf(stderr, "%s miss t=%.0f conv=%ld k=%d prompt=%ld box%d waited=%.0f predicted=%ld "
                "here_any=%ld other_free=%ld other_any=%ld\n", p->affinity ? "on" : "off", s->now,
                q->conv, q->k, q->prompt, q->box, s->now - q->t_arr, q->predicted, am[q->box],
                fm[1 - q->box], am[1 - q->box]);
    }
    if (q->k > 1)
        s->later[s->n_later++] = ttft;
    push(s, s->now + q->first_ms + q->decode_ms, EV_DONE, q - s->turns);
}

static void on_grant(struct sw_claim *c)
{
    struct turn *q = (struct turn *)((char *)c - offsetof(struct turn, claim));
    start_local(g_sim, q);
}

static void trace_turn(const struct sim *s, const struct turn *q, const char *what,
                       const struct sw_live_snapshot *snap, const struct sw_route_plan *plan)
{
    if (!s->p->trace)
        return;
    fprintf(stderr, "%s %s t=%.0f conv=%ld k=%d prompt=%ld", s->p->affinity ? "on" : "off", what,
            s->now, q->conv, q->k, q->prompt);
    for (size_t k = 0; snap && k < snap->view.n; k++) {
        const struct sw_route_backend_view *v = &snap->backends[k];
        if (v->tier != SW_TIER_LOCAL)
            continue;
        int b = box_of(s, snap->map[k]);
        long fm, am;
        truth(s, q, b, &fm, &am);
        int own = 0;
        for (long r = 0; r < s->n; r++)
            own += s->turns[r].state == T_RUNNING && s->turns[r].box == b &&
                   s->turns[r].conv == q->conv;
        fprintf(stderr, " | box%d inf=%ld q=%ld pfx=%ld cached=%.0f est=%.0f true_free=%ld true_any=%ld own=%d",
                b, v->in_flight, v->queued, v->prefix_tokens, v->cached_tokens,
                plan ? plan->est_ttft_ms[k] : -1, fm, am, own);
    }
    if (plan && plan->n > 0)
        fprintf(stderr, " | reason=%s", sw_reason_name(plan->attempts[0].reason));
    fprintf(stderr, " | oracle=%.0f", q->or_ttft);
    fprintf(stderr, "\n");
}

static void arrive(struct sim *s, struct turn *q)
{
    struct sw_live_snapshot snap;
    struct sw_route_facts f;
    struct sw_route_plan plan;
    int64_t now = now_ms(s);
    facts_of(q, &f);
    sw_live_snapshot(s->live, s->model, now, &snap);
    sw_live_prefix_view(s->live, &q->prefix, now, &snap);
    sw_route_decide(&f, &snap.view, &snap.policy, now, &plan);
    for (size_t k = 0; k < plan.n; k++) {
        const struct sw_route_attempt *a = &plan.attempts[k];
        if (snap.backends[a->backend].tier == SW_TIER_CLOUD) {
            trace_turn(s, q, "cloud", &snap, &plan);
            to_cloud(s, q);
            return;
        }
        q->be = snap.map[a->backend];
        q->box = box_of(s, q->be);
        q->predicted = snap.backends[a->backend].prefix_tokens;
        q->busy = sw_live_cache_busy(s->live, q->be, &snap.backends[a->backend]);
        if (k == 0 && a->reason == SW_REASON_AFFINITY)
            s->res->gw_affinity++;
        q->claim.on_grant = on_grant;
        q->claim.prefix_matched = q->predicted > 0;
        q->claim.prefix = &q->prefix;
        q->claim.follow = snap.backends[a->backend].follow_left_ms > 0;
        struct sw_route_facts held = f;     /* as the relay: the slot held for the uncached part */
        held.prompt_tokens_est =
            (long)sw_route_uncached(&snap.backends[a->backend], (double)f.prompt_tokens_est);
        switch (sw_claim_take(s->live, q->be, &held, now, &q->claim)) {
        case SW_CLAIM_GRANTED:
            start_local(s, q);
            return;
        case SW_CLAIM_QUEUED:
            /* as the relay: a queued request teaches no hit, one that follows
             * a running request gets that one's slot */
            if (s->p->slots > 1 && !q->claim.parked)
                q->predicted = 0;
            q->state = T_QUEUED;
            push(s, s->now + QUEUE_CHECK_MS, EV_QCHECK, q - s->turns);
            return;
        default:
            break;
        }
    }
    s->res->gw_failed++;
    q->state = T_DONE;
    finished(s, q, s->now);
}

/* The relay's check of a queued request, as in bench/replay_sim.c. */
static void queue_check(struct sim *s, struct turn *q)
{
    if (q->state != T_QUEUED)
        return;
    int64_t now = now_ms(s);
    struct sw_route_facts f;
    facts_of(q, &f);
    if (now >= f.deadline_ms) {
        sw_claim_settle(s->live, &q->claim, SW_CLAIM_NEUTRAL, 0, 0, -1, 0, 0, 0, -1, now);
        s->res->gw_failed++;
        q->state = T_DONE;
        finished(s, q, s->now);
        return;
    }
    struct sw_live_snapshot snap;
    sw_live_snapshot(s->live, s->model, now, &snap);
    sw_live_prefix_view(s->live, &q->prefix, now, &snap);
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
            s->res->gw_moved++;
            q->left |= 1u << k;
            q->state = T_NEW;
            arrive(s, q);
            return;
        }
        if (plan.n > 0 && snap.backends[plan.attempts[0].backend].tier == SW_TIER_CLOUD) {
            struct sw_route_backend_view vb = v;
            vb.first_release_ms = 0;
            if (sw_route_leave_queue(elapsed, est, sw_route_est_ttft_ms(&vb, q->prompt),
                                     plan.est_ttft_ms[plan.attempts[0].backend], budget,
                                     QUEUE_CHECK_MS)) {
                sw_claim_settle(s->live, &q->claim, SW_CLAIM_NEUTRAL, 0, 0, -1, 0, 0, 0, -1, now);
                if (s->p->trace)
                    fprintf(stderr, "%s leave t=%.0f conv=%ld k=%d prompt=%ld waited=%.0f est=%.0f box%d oracle=%.0f\n",
                            s->p->affinity ? "on" : "off", s->now, q->conv, q->k, q->prompt, elapsed, est, q->box, q->or_ttft);
                to_cloud(s, q);
                return;
            }
        }
    }
    push(s, s->now + QUEUE_CHECK_MS, EV_QCHECK, q - s->turns);
}

/* What the relay does with a local answer: the box's report teaches the
 * hit, the box holds the prefix now, the rates learn from what it
 * prefilled. */
static void done(struct sim *s, struct turn *q)
{
    int64_t now = now_ms(s);
    struct slot *sl = &s->box[q->box].s[q->slot];
    sl->busy = false;
    sl->used_at = s->now;
    slot_keep(sl, s->p->cache_per_slot, q->conv, q->k, q->prompt, 0);
    q->state = T_DONE;
    sw_live_on_cache(s->live, q->be, q->predicted, q->cached, q->busy);
    sw_live_prefix_served(s->live, q->be, &q->prefix, now);
    sw_claim_settle(s->live, &q->claim, SW_CLAIM_OK, q->prompt - q->cached, q->out, q->first_ms,
                    q->decode_ms, 200, 0, -1, now);
    finished(s, q, s->now);
}

/* The health checker: every 2 s each box answers with a round trip of 1 to
 * 3 ms, as loopback boxes do; alike boxes then tie by a hair, as they do
 * live, rather than always by the configured order. */
static void health(struct sim *s)
{
    for (int b = 0; b < s->p->boxes; b++)
        sw_live_on_health(s->live, s->box_be[b], now_ms(s), 200, 1.0 + 2.0 * erand48(s->hx));
    if (s->p->closed_loop ? s->pending > 0 : s->now < s->t_end)
        push(s, s->now + 2000, EV_HEALTH, 0);
}

/* ---- Oracle ---- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, long n)
{
    if (n <= 0)
        return 0;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void oracle(struct sim *s)
{
    const struct ag_params *p = s->p;
    struct box *bx = calloc((size_t)p->boxes, sizeof *bx);
    double *later = calloc((size_t)s->n + 1, sizeof *later);
    long n_later = 0;
    if (!bx || !later)
        abort();
    double period = 1000.0 / p->decode_tps;
    /* turns sorted by arrival: s->turns is in arrival order */
    for (long i = 0; i < s->n; i++) {
        struct turn *q = &s->turns[i];
        double best = 1e300, best_start = 0;
        int bb = -1, bs = -1;
        for (int b = 0; b < p->boxes; b++)
            for (int k = 0; k < p->slots; k++) {
                struct slot *sl = &bx[b].s[k];
                double start = q->t_arr > sl->free_at ? q->t_arr : sl->free_at;
                long cached = slot_match(sl, q->conv, q->k, q->prompt, start);
                double first = start - q->t_arr +
                               (double)(q->prompt - cached) * p->prefill_ms_per_token + period;
                if (first < best) {
                    best = first;
                    best_start = start;
                    bb = b;
                    bs = k;
                }
            }
        if (bb >= 0 && best <= (double)p->budget_ms) {
            struct slot *sl = &bx[bb].s[bs];
            double end = q->t_arr + best + (double)(q->out - 1) * period;
            (void)best_start;
            long oc = slot_match(sl, q->conv, q->k, q->prompt, best_start);
            sl->free_at = end;
            slot_keep(sl, p->cache_per_slot, q->conv, q->k, q->prompt, end);
            s->res->or_ok++;
            q->or_ttft = best;
            if (q->k > 1)
                later[n_later++] = best;
            if (p->trace && q->k > 1 && oc == 0)
                fprintf(stderr, "oracle miss conv=%ld k=%d\n", q->conv, q->k);
        } else {
            q->or_ttft = -1;
            s->res->or_cloud++;
            if (p->cloud_ttft_ms <= (double)p->budget_ms)
                s->res->or_ok++;
        }
    }
    s->res->or_local_later = n_later;
    s->res->or_local_later_p50_ms = median(later, n_later);
    free(later);
    free(bx);
}

/* ---- Run ---- */

static struct sw_live *gateway(const struct ag_params *p, struct sw_live_shared **g,
                               struct sw_config **cfgp)
{
    char yaml[4096];
    size_t o = 0;
    o += (size_t)snprintf(yaml + o, sizeof yaml - o, "listen: \"127.0.0.1:0\"\nbackends:\n");
    for (int b = 0; b < p->boxes; b++)
        o += (size_t)snprintf(yaml + o, sizeof yaml - o,
                              "  - {name: box%d, tier: local, url: \"http://127.0.0.1:%d\", "
                              "model: m, slots: %d, queue_max: 100000}\n",
                              b, 9001 + b, p->slots);
    o += (size_t)snprintf(yaml + o, sizeof yaml - o,
                          "  - {name: cloud, tier: cloud, url: \"http://127.0.0.1:9100\", "
                          "model: c}\nmodels:\n  - {name: chat, backends: [");
    for (int b = 0; b < p->boxes; b++)
        o += (size_t)snprintf(yaml + o, sizeof yaml - o, "box%d, ", b);
    snprintf(yaml + o, sizeof yaml - o,
             "cloud]}\nrouting:\n  ttft_budget_ms: %ld\n  request_timeout_ms: %d\n"
             "  latency: {degrade_ms: %ld, recover_ms: %ld}\n"
             "  affinity: {enabled: %s, ttl_s: 600, max_entries: %d}\n",
             p->budget_ms, TIMEOUT_MS, p->degrade_ms, p->degrade_ms * 4 / 5,
             p->affinity ? "true" : "false", 2 * p->slots * p->cache_per_slot);
    struct sw_config *cfg = NULL;
    struct sw_config_errors errs;
    int err = sw_config_parse("agent.yaml", yaml, strlen(yaml), NULL, NULL, &cfg, &errs);
    for (size_t i = 0; i < errs.n; i++)
        fprintf(stderr, "agent: config: %s\n", errs.msgs[i]);
    sw_config_errors_free(&errs);
    if (err)
        return NULL;
    *g = sw_live_shared_new(cfg, T0_MS, WALL0_MS);
    struct sw_live *live = *g ? sw_live_new(cfg, *g, NULL, NULL, T0_MS) : NULL;
    *cfgp = cfg;
    return live;
}

static int by_arrival(const void *a, const void *b)
{
    const struct turn *x = a, *y = b;
    return x->t_arr < y->t_arr ? -1 : x->t_arr > y->t_arr;
}

/* The conversations: starts Poisson over the duration; turn k at start +
 * the sum of k-1 gaps; prompt k = prompt k-1 + its answer + new input. */
static long build_trace(const struct ag_params *p, struct turn **out)
{
    unsigned short xs[3] = {0x330e, (unsigned short)p->seed, (unsigned short)(p->seed >> 16)};
    size_t cap = 1024, n = 0;
    struct turn *t = calloc(cap, sizeof *t);
    long *prompts = calloc((size_t)p->turns + 1, sizeof *prompts);
    if (!t || !prompts)
        abort();
    long conv = 0;
    for (double start = expo(xs, 1000.0 / p->conv_rate_per_s); start < p->duration_s * 1000.0;
         start += expo(xs, 1000.0 / p->conv_rate_per_s), conv++) {
        double at = start, gap = 0;
        long prompt = p->system_tokens, last_out = 0;
        for (int k = 1; k <= p->turns; k++) {
            if (n == cap) {
                cap *= 2;
                t = realloc(t, cap * sizeof *t);
                if (!t)
                    abort();
            }
            prompt += last_out + uniform(xs, p->turn_min, p->turn_max);
            prompts[k] = prompt;
            struct turn *q = &t[n++];
            memset(q, 0, sizeof *q);
            q->conv = conv;
            q->k = k;
            q->t_arr = at;
            q->prompt = prompt;
            q->out = uniform(xs, p->out_min, p->out_max);
            last_out = q->out;
            prefix_of(conv, k, p->system_tokens, prompts, &q->prefix);
            q->gap = gap;
            gap = p->gap_ms / 2 + expo(xs, p->gap_ms / 2);
            at += gap;
        }
    }
    free(prompts);
    qsort(t, n, sizeof *t, by_arrival);
    /* each conversation's turns in order: turn k+1 arrives after turn k */
    long *last = malloc(((size_t)conv + 1) * sizeof *last);
    if (!last)
        abort();
    for (long c = 0; c <= conv; c++)
        last[c] = -1;
    for (size_t i = 0; i < n; i++) {
        t[i].next = -1;
        if (last[t[i].conv] >= 0)
            t[last[t[i].conv]].next = (long)i;
        last[t[i].conv] = (long)i;
    }
    free(last);
    *out = t;
    return (long)n;
}

int ag_run(const struct ag_params *p, struct ag_result *out)
{
    if (p->boxes < 1 || p->boxes > MAX_BOXES || p->slots < 1 || p->slots > MAX_SLOTS ||
        p->cache_per_slot < 1 || p->cache_per_slot > MAX_CACHE) {
        fprintf(stderr, "agent: boxes 1..%d, slots 1..%d, cache 1..%d\n", MAX_BOXES, MAX_SLOTS,
                MAX_CACHE);
        return -1;
    }
    struct sim s = {.p = p};
    for (int b = 0; b < MAX_BOXES; b++)
        for (int i = 0; i < MAX_SLOTS; i++)
            s.box[b].s[i].used_at = -1;
    memset(out, 0, sizeof *out);
    s.res = out;
    s.n = build_trace(p, &s.turns);
    out->n = s.n;
    s.later = calloc((size_t)s.n + 1, sizeof *s.later);
    if (!s.later)
        abort();
    oracle(&s);

    struct sw_live_shared *g = NULL;
    struct sw_config *cfg = NULL;
    s.live = gateway(p, &g, &cfg);
    if (!s.live) {
        fprintf(stderr, "agent: cannot build the gateway state\n");
        sw_live_shared_free(g);
        sw_config_unref(cfg);
        free(s.turns);
        free(s.later);
        return -1;
    }
    s.model = sw_config_find_model(cfg, "chat");
    for (size_t i = 0; i < cfg->n_backends; i++) {
        if (cfg->backends[i].tier == SW_TIER_CLOUD)
            s.cloud_be = i;
        else
            for (int b = 0; b < p->boxes; b++) {
                char name[16];
                snprintf(name, sizeof name, "box%d", b);
                if (!strcmp(cfg->backends[i].name, name))
                    s.box_be[b] = i;
            }
    }
    g_sim = &s;
    s.hx[0] = 0x4a1f, s.hx[1] = (unsigned short)p->seed, s.hx[2] = 3;
    s.t_end = s.n > 0 ? s.turns[s.n - 1].t_arr : 0;
    push(&s, 0, EV_HEALTH, 0);
    s.pending = s.n;
    for (long i = 0; i < s.n; i++)
        if (!p->closed_loop || s.turns[i].k == 1)
            push(&s, s.turns[i].t_arr, EV_ARRIVE, i);
    while (s.nheap > 0) {
        struct event e = pop(&s);
        s.now = e.t;
        struct turn *q = &s.turns[e.r];
        switch (e.kind) {
        case EV_ARRIVE: arrive(&s, q); break;
        case EV_QCHECK: queue_check(&s, q); break;
        case EV_DONE: done(&s, q); break;
        case EV_HEALTH: health(&s); break;
        }
    }
    g_sim = NULL;
    out->gw_local_later = s.n_later;
    out->gw_local_later_p50_ms = median(s.later, s.n_later);
    sw_live_unref(s.live);
    sw_live_shared_free(g);
    sw_config_unref(cfg);
    free(s.heap);
    free(s.turns);
    free(s.later);
    return 0;
}
