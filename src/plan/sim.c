/* The planner's event loop (sim.h). One request's life mirrors the relay's
 * (src/relay/relay.c): snapshot + decide, claim the first attempt (a local
 * slot, a place in the gateway's queue, or a cloud's bucket and spend), fall
 * through to the next attempt when a claim is refused, leave the local queue
 * for the cloud when the estimated start breaks the budget, settle on
 * completion (which teaches the learned rates and hands the slot on).
 * A local box caches prompts per slot as llmsim --prefix-cache 1 and
 * llama.cpp do: a turn of a conversation takes the free slot that holds the
 * conversation's latest prompt and prefills only what it adds (a request no
 * slot holds takes the least recently used free slot); with
 * routing.affinity the gateway's table and learned hit steer it there. */
#include "plan/sim.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "route/affinity.h"
#include "route/route.h"
#include "state/claim.h"
#include "state/live.h"

#define QUEUE_CHECK_MS 25.0     /* the relay's poll of a queued request (QUEUE_CHECK_US) */
#define REFUSED_CHECK_MS 1000.0 /* the cloud would not take it (cap, breaker): look again later */
#define PROBE_PROMPT_TOKENS 16  /* a latency probe's prompt */

enum ev_kind { EV_DONE, EV_CHECK, EV_TICK };

struct sreq;

struct ev {
    double t;
    uint64_t seq;
    struct sreq *r;
    uint32_t gen;
    uint8_t kind;
};

struct sreq {
    struct sw_claim claim;      /* first: on_grant casts back */
    struct sreq *next_free;
    struct sim *sim;
    uint32_t gen;               /* bumped when a scheduled check becomes stale */
    double arr, enq;            /* arrival; when it entered the local queue */
    double ttft_from_dispatch, decode_ms;
    struct sw_route_facts facts;
    bool queued;
    bool whole;                 /* not streamed: settling teaches no speeds */
    uint64_t conv;              /* its conversation (0: none) */
    long slot;                  /* the local slot it runs in (-1: none) */
    long cached;                /* prompt tokens its slot held */
    long predicted;             /* the prefix the affinity table matched there */
    bool cache_busy;            /* sw_live_cache_busy when it was planned */
};

/* One local slot's prefix cache: the latest prompt it processed. */
struct pslot {
    bool busy;
    double used_at;             /* when its latest request left it (-1: never used) */
    uint64_t conv;              /* 0: nothing of a conversation */
    long tokens;
};

struct sim {
    struct sw_live *live;
    const struct sw_config_model *model;
    struct sw_plan_result *res;
    double now;
    double last_done;           /* when the latest answer ended */
    bool has_cloud;
    bool locals;                /* more than one local: a queued request may move */
    long deadline_ms;
    double prefill[SW_ROUTE_MAX_BACKENDS * 8];
    double period[SW_ROUTE_MAX_BACKENDS * 8];
    size_t nb;
    struct ev *heap;
    size_t hn, hcap;
    uint64_t seq;
    struct sreq *free_list;
    struct sreq **blocks;
    size_t n_blocks;
    uint32_t *hist;
    struct pslot *slot[SW_ROUTE_MAX_BACKENDS * 8];  /* local backends' slots (owned) */
    bool oom;
};

/* ---- Binary heap of events, earliest first (ties: scheduling order) ---- */

static bool ev_before(const struct ev *a, const struct ev *b)
{
    return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static void push(struct sim *s, double t, uint8_t kind, struct sreq *r)
{
    if (s->hn == s->hcap) {
        size_t nc = s->hcap ? s->hcap * 2 : 1024;
        struct ev *nh = realloc(s->heap, nc * sizeof *nh);
        if (!nh) {
            s->oom = true;
            return;
        }
        s->heap = nh;
        s->hcap = nc;
    }
    struct ev e = {.t = t, .seq = s->seq++, .r = r, .gen = r ? r->gen : 0, .kind = kind};
    size_t i = s->hn++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!ev_before(&e, &s->heap[p]))
            break;
        s->heap[i] = s->heap[p];
        i = p;
    }
    s->heap[i] = e;
}

static struct ev pop(struct sim *s)
{
    struct ev top = s->heap[0], last = s->heap[--s->hn];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= s->hn)
            break;
        if (c + 1 < s->hn && ev_before(&s->heap[c + 1], &s->heap[c]))
            c++;
        if (!ev_before(&s->heap[c], &last))
            break;
        s->heap[i] = s->heap[c];
        i = c;
    }
    if (s->hn)
        s->heap[i] = last;
    return top;
}

/* ---- Requests ---- */

static struct sreq *req_new(struct sim *s)
{
    if (!s->free_list) {
        enum { BLOCK = 4096 };
        struct sreq **nb = realloc(s->blocks, (s->n_blocks + 1) * sizeof *nb);
        struct sreq *blk = nb ? calloc(BLOCK, sizeof *blk) : NULL;
        if (nb)
            s->blocks = nb;
        if (!blk) {
            s->oom = true;
            return NULL;
        }
        s->blocks[s->n_blocks++] = blk;
        for (size_t i = 0; i < BLOCK; i++) {
            blk[i].next_free = s->free_list;
            s->free_list = &blk[i];
        }
    }
    struct sreq *r = s->free_list;
    s->free_list = r->next_free;
    uint32_t gen = r->gen;
    memset(r, 0, sizeof *r);
    r->gen = gen + 1;
    r->sim = s;
    return r;
}

static void req_free(struct sim *s, struct sreq *r)
{
    r->gen++;
    r->next_free = s->free_list;
    s->free_list = r;
}

static struct sw_plan_hour *hour_at(struct sim *s, double t)
{
    size_t h = (size_t)(t / 3600000.0);
    if (h >= s->res->n_hours)
        h = s->res->n_hours - 1;
    return &s->res->hours[h];
}

static void reject(struct sim *s, struct sreq *r)
{
    s->res->rejected++;
    hour_at(s, r->arr)->rejected++;
    req_free(s, r);
}

static void plan_next(struct sim *s, struct sreq *r);

/* The identity of r's prompt: one boundary per conversation, so a turn
 * matches its conversation's previous prompt (route/affinity.h). */
static void prefix_of(const struct sreq *r, struct sw_prefix *p)
{
    p->n = r->conv ? 1 : 0;
    p->hash[0] = r->conv;
    p->tokens[0] = r->facts.prompt_tokens_est;
}

/* The free slot of local backend be for r, as llmsim and llama.cpp's server
 * pick one: the slot holding the longest prefix of r when that is more than
 * a tenth of its prompt (ties: the lowest index), else the one used least
 * recently (never used first; ties: the highest index); taken, r->cached
 * what it holds of r. */
static void take_slot(struct sim *s, struct sreq *r, size_t be)
{
    struct pslot *sl = s->slot[be];
    long n = s->live->cfg->backends[be].slots, best = -1, most = 0, lru = -1, lru_held = 0;
    long prompt = r->facts.prompt_tokens_est;
    for (long i = 0; sl && i < n; i++) {
        if (sl[i].busy)
            continue;
        long m = r->conv && sl[i].conv == r->conv ? sl[i].tokens : 0;
        if (m >= prompt)
            m = prompt - 1;
        if (m > most && 10 * m > prompt) {
            most = m;
            best = i;
        }
        if (lru < 0 || sl[i].used_at <= sl[lru].used_at) {
            lru = i;
            lru_held = m;
        }
    }
    if (best < 0) {
        best = lru;
        most = lru_held;
    }
    r->slot = best;
    r->cached = most > 0 ? most : 0;
    if (best >= 0)
        sl[best].busy = true;
}

/* r's slot is free again and holds r's prompt. */
static void leave_slot(struct sim *s, struct sreq *r)
{
    if (r->slot < 0 || !s->slot[r->claim.be])
        return;
    struct pslot *sl = &s->slot[r->claim.be][r->slot];
    *sl = (struct pslot){.conv = r->conv, .tokens = r->facts.prompt_tokens_est, .used_at = s->now};
    r->slot = -1;
}

static void dispatch(struct sim *s, struct sreq *r)
{
    size_t be = r->claim.be;
    const struct sw_config_backend *cb = &s->live->cfg->backends[be];
    double prompt = (double)r->facts.prompt_tokens_est, out = (double)r->facts.max_tokens;
    r->slot = -1;
    r->cached = 0;
    if (cb->tier == SW_TIER_LOCAL)
        take_slot(s, r, be);
    double pre = (prompt - (double)r->cached) * s->prefill[be], per = s->period[be];
    sw_claim_mark_sent(&r->claim);
    r->queued = false;
    r->gen++;   /* any pending check is stale */
    r->ttft_from_dispatch = pre + per;
    r->decode_ms = (out - 1) * per;
    double ttft = s->now - r->arr + r->ttft_from_dispatch;
    struct sw_plan_result *res = s->res;
    struct sw_plan_hour *h = hour_at(s, r->arr);
    size_t b = ttft < SW_PLAN_TTFT_HIST_MS ? (size_t)ttft : SW_PLAN_TTFT_HIST_MS;
    s->hist[b]++;
    res->ttft_sum_ms += ttft;
    long budget = res->budget_ms;
    if (ttft <= (double)budget) {
        res->within++;
        h->within++;
    }
    res->tokens += prompt + out;
    if (cb->tier == SW_TIER_LOCAL) {
        res->local++;
        res->local_busy_ms += pre + out * per;
    } else {
        res->cloud++;
        h->cloud++;
    }
    push(s, s->now + pre + out * per, EV_DONE, r);
}

static void on_grant(struct sw_claim *c)
{
    struct sreq *r = (struct sreq *)c;
    dispatch(r->sim, r);
}

static long local_queued(const struct sim *s)
{
    long q = 0;
    for (size_t i = 0; i < s->live->n; i++)
        if (s->live->cfg->backends[i].tier == SW_TIER_LOCAL)
            q += s->live->b[i]->q.queued;
    return q;
}

/* When a queued request should be looked at next: the relay polls every
 * 25 ms from the moment it queued, and so does the simulation while the
 * request could move to a cloud. Every poll counts: the estimate does not
 * just grow with the wait. It stays flat while the slot holders run within
 * their bounds, jumps when one runs past its bound (it then still holds a
 * fraction of it), and changes when a slot changes hands or a completion
 * teaches new rates. A request that cannot move is looked at only at its
 * deadline; one the cloud refused (cap, breaker), a second later. */
static void schedule_check(struct sim *s, struct sreq *r, bool refused)
{
    double deadline = r->arr + (double)s->deadline_ms;
    double want;
    if ((!r->facts.allows_cloud || !s->has_cloud) && !s->locals)
        want = deadline;
    else if (refused)
        want = s->now + REFUSED_CHECK_MS;
    else
        want = s->now;  /* the next poll */
    double k = ceil((want - r->enq) / QUEUE_CHECK_MS);
    double t = r->enq + (k < 1 ? 1 : k) * QUEUE_CHECK_MS;
    if (t <= s->now)
        t = s->now + QUEUE_CHECK_MS;
    if (t > deadline)
        t = deadline;
    push(s, t, EV_CHECK, r);
}

static void on_check(struct sim *s, struct sreq *r)
{
    int64_t now = (int64_t)s->now;
    if (s->now >= r->arr + (double)s->deadline_ms) {
        sw_claim_settle(s->live, &r->claim, SW_CLAIM_NEUTRAL, 0, 0, -1, 0, 0, 0, -1, now);
        reject(s, r);
        return;
    }
    struct sw_live_snapshot snap;
    struct sw_prefix px;
    sw_live_snapshot(s->live, s->model, now, &snap);
    prefix_of(r, &px);
    sw_live_prefix_view(s->live, &px, now, &snap);
    long budget = sw_route_budget_ms(&r->facts, &snap.policy);
    bool refused = false, cloud_ok = r->facts.allows_cloud && s->has_cloud;
    for (size_t k = 0; k < snap.view.n && (cloud_ok || s->locals); k++) {
        if (snap.map[k] != r->claim.be)
            continue;
        struct sw_route_backend_view v = snap.backends[k];
        v.queued = sw_claim_queue_position(s->live, &r->claim);
        double elapsed = s->now - r->arr;
        double here = sw_route_est_ttft_ms(&v, r->facts.prompt_tokens_est);
        struct sw_route_facts f = r->facts;
        f.exclude |= 1u << k;
        struct sw_route_plan plan;
        sw_route_decide(&f, &snap.view, &snap.policy, now, &plan);
        /* The relay's rules: to another local that starts it at once, when
         * that is sooner or the wait has cost what moving costs
         * (sw_route_moves_to); to the cloud when the estimated start breaks
         * the budget, or at the last poll at which the cloud still makes it
         * unless the cautious bound says local will (sw_route_leave_queue). */
        uint64_t *why = NULL;
        if (s->locals && sw_route_moves_to(&snap.view, &plan, s->now - r->enq, here,
                                           QUEUE_CHECK_MS)) {
            why = &s->res->moved;
        } else if (cloud_ok && budget > 0) {
            bool cloud = plan.n > 0 && snap.backends[plan.attempts[0].backend].tier == SW_TIER_CLOUD;
            struct sw_route_backend_view bound = v;
            bound.first_release_ms = 0;
            if (cloud &&
                sw_route_leave_queue(elapsed, here,
                                     sw_route_est_ttft_ms(&bound, r->facts.prompt_tokens_est),
                                     plan.est_ttft_ms[plan.attempts[0].backend], budget,
                                     QUEUE_CHECK_MS))
                why = &s->res->spilled;
            else if (!cloud && elapsed + here > (double)budget)
                refused = true;     /* would leave, but the cloud takes nothing now */
        }
        if (why) {
            sw_claim_settle(s->live, &r->claim, SW_CLAIM_NEUTRAL, 0, 0, -1, 0, 0, 0, -1, now);
            r->queued = false;
            r->facts.exclude |= 1u << k;
            (*why)++;
            plan_next(s, r);
            return;
        }
    }
    schedule_check(s, r, refused);
}

static void plan_next(struct sim *s, struct sreq *r)
{
    int64_t now = (int64_t)s->now;
    for (int guard = 0; guard <= SW_ROUTE_MAX_BACKENDS; guard++) {
        struct sw_live_snapshot snap;
        struct sw_route_plan plan;
        struct sw_prefix px;
        sw_live_snapshot(s->live, s->model, now, &snap);
        prefix_of(r, &px);
        sw_live_prefix_view(s->live, &px, now, &snap);
        sw_route_decide(&r->facts, &snap.view, &snap.policy, now, &plan);
        if (plan.n == 0) {
            reject(s, r);
            return;
        }
        const struct sw_route_attempt *a = &plan.attempts[0];
        const struct sw_route_backend_view *v = &snap.backends[a->backend];
        r->claim.on_grant = on_grant;
        r->claim.allow_panic = a->panic;
        r->predicted = v->prefix_tokens;
        r->cache_busy = sw_live_cache_busy(s->live, snap.map[a->backend], v);
        r->claim.prefix_matched = r->predicted > 0;
        /* as the relay: the slot is held for what the cache is expected to miss */
        struct sw_route_facts held = r->facts;
        if (v->cached_tokens > 0)
            held.prompt_tokens_est = (long)sw_route_uncached(v, (double)held.prompt_tokens_est);
        enum sw_claim_result cr = sw_claim_take(s->live, snap.map[a->backend], &held, now,
                                                &r->claim);
        if (cr == SW_CLAIM_GRANTED) {
            if (s->live->cfg->backends[r->claim.be].tier == SW_TIER_CLOUD &&
                a->reason == SW_REASON_OVERFLOW && !(r->facts.exclude))
                s->res->spilled++;
            dispatch(s, r);
            return;
        }
        if (cr == SW_CLAIM_QUEUED) {
            if (v->slots > 1)   /* the slot it gets may not hold its prefix: no lesson */
                r->predicted = 0;
            r->queued = true;
            r->enq = s->now;
            /* the first check is the relay's first poll; the estimate decides there */
            schedule_check(s, r, false);
            return;
        }
        r->facts.exclude |= 1u << a->backend;  /* skipped: decide again without it */
    }
    reject(s, r);
}

static void on_tick(struct sim *s)
{
    int64_t now = (int64_t)s->now;
    for (size_t i = 0; i < s->live->n; i++) {
        struct sw_live_backend *b = s->live->b[i];
        if (s->live->cfg->backends[i].tier != SW_TIER_LOCAL ||
            !sw_latwin_degraded(&b->latwin, now))
            continue;
        /* The health checker's latency probe of a degraded backend (a one-token
         * request): it waits for a slot like any other. */
        double wait = b->q.in_flight >= b->q.slots ? sw_route_est_ttft_ms(&(struct sw_route_backend_view){
            .tier = SW_TIER_LOCAL, .slots = b->q.slots, .in_flight = b->q.in_flight,
            .queued = b->q.queued,
            .prefill_ms_per_token = sw_prefill_ms_per_token(&b->prefill, &b->ewma, NULL),
            .decode_tps = b->ewma.decode_tps, .avg_output_tokens = b->ewma.output_tokens}, 0) : 0;
        sw_live_on_probe(s->live, i, now, wait + PROBE_PROMPT_TOKENS * s->prefill[i] + s->period[i]);
    }
}

void sw_plan_speeds(const struct sw_config *cfg, size_t i, const struct sw_plan_learned *l,
                    double *prefill, double *tps)
{
    const struct sw_config_backend *b = &cfg->backends[i];
    bool local = b->tier == SW_TIER_LOCAL;
    *prefill = b->prefill_ms_per_token > 0 ? b->prefill_ms_per_token
               : local && l && l->prefill_ms_per_token > 0 ? l->prefill_ms_per_token
               : local ? SW_PLAN_DEFAULT_LOCAL_PREFILL_MS
                       : SW_PLAN_DEFAULT_CLOUD_PREFILL_MS;
    *tps = b->decode_tokens_per_s > 0 ? b->decode_tokens_per_s
           : local && l && l->decode_tokens_per_s > 0 ? l->decode_tokens_per_s
           : local ? SW_PLAN_DEFAULT_LOCAL_DECODE_TPS
                   : SW_PLAN_DEFAULT_CLOUD_DECODE_TPS;
}

long sw_plan_config_slots(const struct sw_config *cfg, const struct sw_config_model *model)
{
    long n = 0;
    for (size_t k = 0; k < model->n_backends; k++)
        if (cfg->backends[model->backends[k]].tier == SW_TIER_LOCAL)
            n += cfg->backends[model->backends[k]].slots;
    return n;
}

static double percentile(const uint32_t *hist, uint64_t n, double q)
{
    if (n == 0)
        return 0;
    uint64_t want = (uint64_t)ceil(q * (double)n), acc = 0;
    if (want == 0)
        want = 1;
    for (size_t i = 0; i <= SW_PLAN_TTFT_HIST_MS; i++) {
        acc += hist[i];
        if (acc >= want)
            return (double)i;   /* the whole milliseconds of that TTFT */
    }
    return SW_PLAN_TTFT_HIST_MS;
}

/* A simulated event: the health tick (and the next one), a queued
 * request's check, or an answer's end (settled as the relay settles it). */
static void sim_event(struct sim *s, struct ev e, double tick)
{
    s->now = e.t;
    if (e.kind == EV_TICK) {
        on_tick(s);
        push(s, s->now + tick, EV_TICK, NULL);
    } else if (e.gen == e.r->gen) {
        if (e.kind == EV_CHECK) {
            if (e.r->queued)
                on_check(s, e.r);
        } else {
            struct sreq *r = e.r;
            s->last_done = s->now;
            r->claim.whole_answer = r->whole;   /* as the relay: !stream */
            if (r->slot >= 0) {     /* as the relay: the box reports its cached tokens */
                struct sw_prefix px;
                prefix_of(r, &px);
                sw_live_on_cache(s->live, r->claim.be, r->predicted, r->cached, r->cache_busy);
                sw_live_prefix_served(s->live, r->claim.be, &px, (int64_t)s->now);
                leave_slot(s, r);
            }
            double usd = sw_claim_settle(s->live, &r->claim, SW_CLAIM_OK,
                                         r->facts.prompt_tokens_est - r->cached,
                                         r->facts.max_tokens,
                                         r->ttft_from_dispatch, r->decode_ms, 0, 0, -1,
                                         (int64_t)s->now);
            s->res->spend_usd += usd;
            hour_at(s, s->now)->spend_usd += usd;
            req_free(s, r);
        }
    }
}

/* Trace request q arrives at ta: counted, then planned. False out of memory. */
static bool sim_arrival(struct sim *s, const struct sw_plan_req *q, double ta)
{
    struct sreq *r = req_new(s);
    if (!r)
        return false;
    r->arr = ta;
    r->facts.prompt_tokens_est = q->prompt;
    r->facts.max_tokens = q->output;
    r->facts.max_tokens_given = true;   /* clients ask for what they get */
    r->whole = q->whole;
    r->conv = q->conv;
    r->slot = -1;
    r->facts.allows_cloud = q->allow_cloud;
    s->res->n++;
    struct sw_plan_hour *h = hour_at(s, ta);
    h->arrivals++;
    uint32_t qd = (uint32_t)local_queued(s);
    if (qd > h->queue_max)
        h->queue_max = qd;
    plan_next(s, r);
    return true;
}

/* Each backend's prefill time and decode period (llmsim's, from the
 * config or what the trace taught), and the policy the snapshot applies. */
static bool sim_speeds(struct sim *s, const struct sw_config *cfg, const struct sw_plan_trace *t,
                       char *err, size_t errlen)
{
    s->nb = cfg->n_backends;
    if (s->nb > sizeof s->prefill / sizeof s->prefill[0]) {
        snprintf(err, errlen, "too many backends");
        return false;
    }
    for (size_t i = 0; i < s->nb; i++) {
        double tps;
        sw_plan_speeds(cfg, i, &t->learned, &s->prefill[i], &tps);
        s->period[i] = round(1e6 / tps) / 1000.0;    /* llmsim rounds to the microsecond */
    }
    struct sw_live_snapshot snap;
    sw_live_snapshot(s->live, s->model, 0, &snap);
    s->res->budget_ms = snap.policy.ttft_budget_ms;
    s->res->cap_usd = snap.policy.spend_cap_usd;
    return true;
}

/* The local slots' prefix caches, tracked only for a trace with
 * conversations: without, no cache holds anything a request could use.
 * False out of memory. */
static bool sim_slots(struct sim *s, const struct sw_config *cfg, const struct sw_plan_trace *t)
{
    bool convs = false;
    for (size_t i = 0; i < t->n && !convs; i++)
        convs = t->r[i].conv != 0;
    for (size_t i = 0; convs && i < s->nb; i++) {
        if (cfg->backends[i].tier != SW_TIER_LOCAL || cfg->backends[i].slots <= 0)
            continue;
        if (!(s->slot[i] = calloc((size_t)cfg->backends[i].slots, sizeof *s->slot[i])))
            return false;
        for (long k = 0; k < cfg->backends[i].slots; k++)
            s->slot[i][k].used_at = -1;
    }
    return true;
}

int sw_plan_run(struct sw_config *cfg, const struct sw_config_model *model,
                const struct sw_plan_trace *t, const struct sw_plan_strategy *st,
                struct sw_plan_result *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "%s", st->name);
    size_t idx[SW_ROUTE_MAX_BACKENDS];
    struct sw_config_model m = *model;
    m.n_backends = 0;
    bool has_cloud = false;
    size_t n_locals = 0;
    for (size_t k = 0; k < model->n_backends && m.n_backends < SW_ROUTE_MAX_BACKENDS; k++) {
        enum sw_tier tier = cfg->backends[model->backends[k]].tier;
        if (!(st->tiers & (tier == SW_TIER_LOCAL ? SW_PLAN_LOCAL : SW_PLAN_CLOUD)))
            continue;
        has_cloud |= tier == SW_TIER_CLOUD;
        n_locals += tier == SW_TIER_LOCAL;
        idx[m.n_backends++] = model->backends[k];
    }
    m.backends = idx;
    if (m.n_backends == 0) {
        snprintf(err, errlen, "model \"%s\" has no %s backend for strategy %s", model->name,
                 st->tiers == SW_PLAN_LOCAL ? "local" : "cloud", st->name);
        return -1;
    }
    long *saved = calloc(cfg->n_backends, sizeof *saved);
    if (!saved)
        return -1;
    for (size_t i = 0; i < cfg->n_backends; i++) {
        saved[i] = cfg->backends[i].slots;
        if (st->slots > 0 && cfg->backends[i].tier == SW_TIER_LOCAL)
            cfg->backends[i].slots = st->slots;
    }
    struct sim s = {.model = &m, .res = out, .has_cloud = has_cloud, .locals = n_locals > 1};
    int rc = -1;
    s.deadline_ms = cfg->routing.request_timeout_ms;
    struct sw_live_shared *g = sw_live_shared_new(cfg, 0, t->start_epoch_ms);
    if (g) {
        s.live = sw_live_new(cfg, g, NULL, NULL, 0);
        if (st->budget_ms > 0)
            g->ttft_budget_ms = st->budget_ms;
        if (st->cap_usd >= 0)
            g->spend_cap_usd = st->cap_usd;
    }
    out->n_hours = (size_t)((t->duration_ms + 3599999) / 3600000);
    if (out->n_hours == 0)
        out->n_hours = 1;
    out->hours = calloc(out->n_hours, sizeof *out->hours);
    s.hist = calloc(SW_PLAN_TTFT_HIST_MS + 1, sizeof *s.hist);
    if (!s.live || !out->hours || !s.hist)
        goto done;
    if (!sim_speeds(&s, cfg, t, err, errlen))
        goto done;
    if (!sim_slots(&s, cfg, t))
        goto done;
    out->slots = sw_plan_config_slots(cfg, &m);
    out->duration_ms = (double)t->duration_ms;
    double tick = (double)(cfg->routing.health_interval_ms > 0 ? cfg->routing.health_interval_ms : 2000);
    push(&s, tick, EV_TICK, NULL);
    size_t next = 0;
    while (!s.oom && (next < t->n || s.hn > 1 || (s.hn == 1 && s.heap[0].kind != EV_TICK))) {
        double ta = next < t->n ? (double)t->r[next].t_ms : INFINITY;
        if (s.hn && s.heap[0].t <= ta) {
            sim_event(&s, pop(&s), tick);
            continue;
        }
        const struct sw_plan_req *q = &t->r[next++];
        s.now = ta;
        if (!sim_arrival(&s, q, ta))
            break;
    }
    if (s.oom) {
        snprintf(err, errlen, "out of memory");
        goto done;
    }
    if (s.last_done > out->duration_ms)
        out->duration_ms = s.last_done;   /* until the last answer ended */
    uint64_t served = out->local + out->cloud;
    out->ttft_p50 = percentile(s.hist, served, 0.50);
    out->ttft_p95 = percentile(s.hist, served, 0.95);
    out->ttft_p99 = percentile(s.hist, served, 0.99);
    rc = 0;
done:
    if (rc && !err[0])
        snprintf(err, errlen, "out of memory");
    if (s.live)
        sw_live_unref(s.live);
    if (g)
        sw_live_shared_free(g);
    for (size_t i = 0; i < cfg->n_backends; i++)
        cfg->backends[i].slots = saved[i];
    free(saved);
    for (size_t i = 0; i < s.n_blocks; i++)
        free(s.blocks[i]);
    free(s.blocks);
    free(s.heap);
    free(s.hist);
    for (size_t i = 0; i < s.nb; i++)
        free(s.slot[i]);
    return rc;
}

void sw_plan_derive(const struct sw_config *cfg, const struct sw_config_model *model,
                    struct sw_plan_result *r)
{
    double n = r->n ? (double)r->n : 1;
    double hours = r->duration_ms / 3600000.0, days = hours / 24.0;
    if (hours <= 0)
        hours = days = 1e-9;
    r->within_share = (double)r->within / n;
    r->cloud_share = (double)r->cloud / n;
    r->rejected_share = (double)r->rejected / n;
    r->spill_per_hour_mean = (double)r->cloud / hours;
    r->spill_per_hour_max = 0;
    for (size_t i = 0; i < r->n_hours; i++)
        if (r->hours[i].cloud > r->spill_per_hour_max)
            r->spill_per_hour_max = r->hours[i].cloud;
    r->spend_per_day = r->spend_usd / days;
    r->spend_per_month = r->spend_per_day * SW_PLAN_DAYS_IN_MONTH;
    long conf = sw_plan_config_slots(cfg, model);
    double scale = conf > 0 ? (double)r->slots / (double)conf : 0;
    r->local_per_month = scale * (cfg->plan.local_usd_per_month +
                                  cfg->plan.local_usd_per_hour * SW_PLAN_HOURS_IN_MONTH);
    r->total_per_month = r->local_per_month + r->spend_per_month;
    double tokens_per_month = r->tokens / hours * SW_PLAN_HOURS_IN_MONTH;
    r->usd_per_mtok = tokens_per_month > 0 ? r->total_per_month / tokens_per_month * 1e6 : 0;
    r->utilisation = r->slots > 0 ? r->local_busy_ms / ((double)r->slots * r->duration_ms) : 0;
}

void sw_plan_result_free(struct sw_plan_result *r)
{
    free(r->hours);
    r->hours = NULL;
}
