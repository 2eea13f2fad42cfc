#include "state/live.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/satmath.h"

struct sw_live_shared *sw_live_shared_new(const struct sw_config *cfg, int64_t now_ms,
                                          int64_t wall_ms)
{
    struct sw_live_shared *g = calloc(1, sizeof *g);
    if (!g)
        return NULL;
    const struct sw_config_routing *r = &cfg->routing;
    g->wall_offset_ms = wall_ms - now_ms;
    sw_spend_init(&g->spend,
                  r->spend.window == SW_SPEND_DAY ? SW_SPEND_DAY_MS : SW_SPEND_HOUR_MS, wall_ms);
    g->emergency = r->emergency;
    if (g->emergency)
        snprintf(g->emergency_reason, sizeof g->emergency_reason, "declared in the configuration");
    g->spend_cap_usd = -1;
    g->store = sw_store_memory();
    g->affinity_on = r->affinity.enabled;
    return g;
}

void sw_live_shared_free(struct sw_live_shared *g)
{
    if (!g)
        return;
    sw_respstore_free(g->resp);
    free(g);
}

struct sw_respstore_limits sw_live_resp_limits(const struct sw_config *cfg)
{
    const struct sw_config_responses *r = &cfg->responses;
    return (struct sw_respstore_limits){.max_entries = r->store_max_entries,
                                        .max_bytes = r->store_max_bytes,
                                        .ttl_s = r->store_ttl_s};
}

/* The limits a backend's state takes from the config, on creation and on
 * every reload (the state itself carries over). */
static void apply_limits(struct sw_live_backend *b, const struct sw_config_backend *be,
                         const struct sw_config_routing *r)
{
    b->breaker.threshold = (int)r->breaker.failures;
    b->breaker.window_ms = r->breaker.window_ms;
    b->breaker.cooldown_ms = r->breaker.cooldown_ms;
    b->bucket.rpm_limit = be->rpm;
    b->bucket.tpm_limit = be->tpm;
    b->latwin.window_ms = r->latency.window_ms;
    b->latwin.degrade_ms = (double)r->latency.degrade_ms;
    b->latwin.recover_ms = (double)r->latency.recover_ms;
    b->latwin.dwell_ms = r->latency.dwell_ms;
    sw_prefill_set_config(&b->prefill, be->prefill_ms_per_token);
    /* A local backend's affinity table, bounded like its server's cache; new
     * bounds empty it (its entries stay right otherwise). Without memory:
     * no table, no affinity for it. */
    if (be->tier == SW_TIER_LOCAL && r->affinity.enabled) {
        if (b->aff.max != (size_t)r->affinity.max_entries)
            sw_affinity_reset(&b->aff, (size_t)r->affinity.max_entries, r->affinity.ttl_s * 1000);
        b->aff.ttl_ms = r->affinity.ttl_s * 1000;
    }
    b->q.slots = be->tier == SW_TIER_LOCAL ? be->slots : 1000000;
    b->q.queue_max = be->tier == SW_TIER_LOCAL ? be->queue_max : 0;
    /* Room for every slot holder (local: at most slots, plus those still
     * running past a reload that lowered slots). */
    size_t want = be->tier == SW_TIER_LOCAL ? (size_t)be->slots : 0;
    if (want < b->n_busy)
        want = b->n_busy;
    if (want > b->cap_busy) {
        struct sw_live_busy *nb = realloc(b->busy, want * sizeof *nb);
        if (nb) {
            b->busy = nb;
            b->cap_busy = want;
        }
    }
}

#define TAIL_BUCKET(h) ((size_t)((h) & 63))

void sw_live_busy_add(struct sw_live_backend *b, const struct sw_live_busy *r)
{
    if (b->n_busy < b->cap_busy) {
        if (r->at)
            *r->at = b->n_busy;
        b->busy[b->n_busy++] = *r;
        b->n_unmatched += r->unmatched;
        if (r->tail_tokens > 0)
            b->tails[TAIL_BUCKET(r->tail_hash)]++;
    }
}

static bool same_busy(const struct sw_live_busy *x, const struct sw_live_busy *r)
{
    return x->since_ms == r->since_ms && x->prompt_tokens == r->prompt_tokens &&
           x->max_tokens == r->max_tokens && x->tail_hash == r->tail_hash &&
           x->tail_tokens == r->tail_tokens;
}

/* By the position its holder keeps (one look, however many hold slots),
 * else by its values. */
struct sw_live_busy *sw_live_busy_find(struct sw_live_backend *b, const struct sw_live_busy *r)
{
    if (r->at && *r->at < b->n_busy && b->busy[*r->at].at == r->at && same_busy(&b->busy[*r->at], r))
        return &b->busy[*r->at];
    for (size_t i = 0; i < b->n_busy; i++)
        if (same_busy(&b->busy[i], r))
            return &b->busy[i];
    return NULL;
}

void sw_live_busy_remove(struct sw_live_backend *b, const struct sw_live_busy *r)
{
    struct sw_live_busy *x = sw_live_busy_find(b, r);
    if (x) {
        b->n_unmatched -= x->unmatched;
        if (x->tail_tokens > 0)
            b->tails[TAIL_BUCKET(x->tail_hash)]--;
        *x = b->busy[--b->n_busy];
        if (x < b->busy + b->n_busy && x->at)   /* the last record moved into x's place */
            *x->at = (size_t)(x - b->busy);
    }
}

struct sw_live_busy *sw_live_busy_extended(struct sw_live_backend *b, const struct sw_prefix *p)
{
    struct sw_live_busy *best = NULL;
    size_t n = p && p->n < SW_PREFIX_MAX ? p->n : p ? SW_PREFIX_MAX : 0, j = 0;
    while (j < n && !b->tails[TAIL_BUCKET(p->hash[j])])
        j++;
    if (j == n)
        return NULL;    /* no running request's tail can be one of p's boundaries */
    for (size_t i = 0; i < b->n_busy; i++) {
        struct sw_live_busy *x = &b->busy[i];
        if (x->tail_tokens <= 0 || (best && x->tail_tokens <= best->tail_tokens))
            continue;
        for (size_t k = 0; k < n; k++)
            if (p->hash[k] == x->tail_hash) {  /* tokens are each request's estimate */
                best = x;
                break;
            }
    }
    return best;
}

/* The view's busy_left_ms: the up to SW_ROUTE_BUSY_MAX slot holders that
 * free their slots soonest, soonest first, and n_overdue: the holders past
 * their overdue threshold (routing.overdue_*), which free none and are left
 * out of the rest; none unless every holder is recorded. Needs the view's
 * learned rates and output lengths. */
static void fill_busy(const struct sw_live_backend *b, const struct sw_config_routing *r,
                      int64_t now_ms, struct sw_route_backend_view *v)
{
    if (b->tier != SW_TIER_LOCAL || b->q.in_flight <= 0 || (long)b->n_busy != b->q.in_flight)
        return;
    struct sw_route_holder h[SW_ROUTE_BUSY_MAX];
    size_t n = 0, running = 0;
    for (size_t i = 0; i < b->n_busy; i++) {
        const struct sw_live_busy *x = &b->busy[i];
        double elapsed = (double)(now_ms - x->since_ms);
        if (sw_route_overdue(elapsed, sw_route_expected_hold_ms(v, x->prompt_tokens, x->max_tokens),
                             r->overdue_factor, (double)r->overdue_floor_ms)) {
            v->n_overdue++;
            continue;
        }
        running++;
        if (n < SW_ROUTE_BUSY_MAX)
            h[n++] = (struct sw_route_holder){x->prompt_tokens, x->max_tokens,
                                              x->max_tokens_given, elapsed};
        double left = sw_route_busy_left_ms(v, x->prompt_tokens, x->max_tokens, elapsed);
        long k = v->n_busy < SW_ROUTE_BUSY_MAX ? v->n_busy++ : SW_ROUTE_BUSY_MAX;
        while (k > 0 && v->busy_left_ms[k - 1] > left) {
            if (k < SW_ROUTE_BUSY_MAX)
                v->busy_left_ms[k] = v->busy_left_ms[k - 1];
            k--;
        }
        if (k < SW_ROUTE_BUSY_MAX)
            v->busy_left_ms[k] = left;
    }
    /* The first release: when one of them has ended with the chance
     * SW_ROUTE_FIRST_RELEASE_Q, from where answers learned to stop. */
    if (n < running)
        return; /* more than the sweep takes: keep the soonest bounds */
    double first = sw_route_first_release_ms(v, h, n, SW_ROUTE_FIRST_RELEASE_Q);
    if (v->n_busy > 0 && first < v->busy_left_ms[0])
        v->first_release_ms = first;
}

/* The view's fields that only the config sets; every other one zero, as a
 * backend without data has them (rate limits: -1, none). */
static void template_view(const struct sw_config_backend *be, struct sw_route_backend_view *v)
{
    *v = (struct sw_route_backend_view){
        .name = be->name,
        .tier = be->tier,
        .region = be->region,
        .slots = be->tier == SW_TIER_LOCAL ? be->slots : 0,
        .max_context_tokens = be->max_context_tokens,
        .supports_tools = be->supports_tools,
        .supports_images = be->supports_images,
        .rpm_available = -1,
        .tpm_available = -1,
        .input_usd_per_mtok = be->input_usd_per_mtok,
        .output_usd_per_mtok = be->output_usd_per_mtok,
        .max_output_tokens = be->tier == SW_TIER_CLOUD ? be->max_output_tokens : 0,
    };
}

static struct sw_live_backend *backend_new(const struct sw_config_backend *be,
                                           const struct sw_config_routing *r, int64_t now_ms)
{
    struct sw_live_backend *b = calloc(1, sizeof *b);
    if (!b)
        return NULL;
    b->name = strdup(be->name);
    b->url = strdup(be->url);
    if (!b->name || !b->url) {
        free(b->name);
        free(b->url);
        free(b);
        return NULL;
    }
    b->tier = be->tier;
    b->affinity_id = sw_affinity_backend_id(be->name);
    sw_breaker_init(&b->breaker, (int)r->breaker.failures, r->breaker.window_ms,
                    r->breaker.cooldown_ms);
    sw_bucket_init(&b->bucket, be->rpm, be->tpm, now_ms);
    sw_latwin_init(&b->latwin, r->latency.window_ms, (double)r->latency.degrade_ms,
                   (double)r->latency.recover_ms, r->latency.dwell_ms);
    sw_ewma_init(&b->ewma, SW_EWMA_DEFAULT_ALPHA);
    sw_prefill_init(&b->prefill, be->prefill_ms_per_token);
    sw_outlen_init(&b->outlen);
    sw_localq_init(&b->q, 0, 0);
    apply_limits(b, be, r);
    b->health = SW_HEALTH_UP;
    b->load_ms = SW_LIVE_PRIOR_LOAD_MS;
    return b;
}

static void backend_unref(struct sw_live_backend *b)
{
    if (b && --b->refs == 0) {
        sw_localq_free(&b->q);
        sw_affinity_free(&b->aff);
        free(b->busy);
        free(b->name);
        free(b->url);
        free(b);
    }
}

struct sw_live *sw_live_new(struct sw_config *cfg, struct sw_live_shared *g,
                            const struct sw_live *prev, struct sw_pii_engine *pii,
                            int64_t now_ms)
{
    struct sw_live *l = calloc(1, sizeof *l);
    if (l)
        l->b = calloc(cfg->n_backends ? cfg->n_backends : 1, sizeof *l->b);
    if (!l || !l->b) {
        if (l)
            free(l->b);
        free(l);
        sw_pii_engine_free(pii);
        return NULL;
    }
    l->tmpl = calloc(cfg->n_backends ? cfg->n_backends : 1, sizeof *l->tmpl);
    l->tflags = calloc(cfg->n_backends ? cfg->n_backends : 1, 1);
    if (!l->tmpl || !l->tflags) {
        free(l->tmpl);
        free(l->tflags);
        free(l->b);
        free(l);
        sw_pii_engine_free(pii);
        return NULL;
    }
    l->refs = 1;
    l->cfg = sw_config_ref(cfg);
    l->g = g;
    l->pii = pii;
    char err[256] = "";
    if (sw_piiallow_build(&l->pii_allow, cfg, pii, err, sizeof err)) {
        l->pii = NULL;
        l->n = 0;
        sw_live_unref(l);
        sw_pii_engine_free(pii);
        return NULL;
    }
    const struct sw_config_routing *r = &cfg->routing;
    for (size_t i = 0; i < cfg->n_backends; i++) {
        const struct sw_config_backend *be = &cfg->backends[i];
        struct sw_live_backend *b = NULL;
        for (size_t k = 0; prev && k < prev->n && !b; k++) {
            struct sw_live_backend *o = prev->b[k];
            if (!strcmp(o->name, be->name) && !strcmp(o->url, be->url) && o->tier == be->tier)
                b = o;
        }
        if (b)
            apply_limits(b, be, r);
        else
            b = backend_new(be, r, now_ms);
        if (!b) {
            sw_live_unref(l);
            return NULL;
        }
        b->refs++;
        l->b[l->n++] = b;
        template_view(be, &l->tmpl[i]);
        l->tflags[i] = (uint8_t)((be->rpm ? SW_LIVE_T_RPM : 0) | (be->tpm ? SW_LIVE_T_TPM : 0) |
                                 (be->tier != SW_TIER_LOCAL ? SW_LIVE_T_CLOUD : 0) |
                                 (be->load.source != 0 ? SW_LIVE_T_LOAD : 0));
        b->grant_ms = now_ms;
        sw_localq_release_spare(&b->q); /* raised slots start waiters now */
    }
    g->spend.window_ms = r->spend.window == SW_SPEND_DAY ? SW_SPEND_DAY_MS : SW_SPEND_HOUR_MS;
    g->affinity_on = r->affinity.enabled;
    if (g->resp) {
        const struct sw_respstore_limits lim = sw_live_resp_limits(cfg);
        sw_respstore_set_limits(g->resp, &lim);
    }
    return l;
}

struct sw_live *sw_live_ref(struct sw_live *l)
{
    l->refs++;
    return l;
}

const struct sw_pii_engine *sw_live_pii(const struct sw_live *l, const struct sw_config_key *key,
                                        const struct sw_config_model *model)
{
    return sw_piiallow_for(&l->pii_allow, l->cfg, key, model);
}

void sw_live_unref(struct sw_live *l)
{
    if (!l || --l->refs > 0)
        return;
    for (size_t i = 0; i < l->n; i++)
        backend_unref(l->b[i]);
    sw_piiallow_free(&l->pii_allow);
    sw_pii_engine_free(l->pii);
    sw_config_unref(l->cfg);
    free(l->b);
    free(l->tmpl);
    free(l->tflags);
    free(l);
}

/* The template's run of config fields (max_context_tokens .. region), copied
 * as one block; the other config fields one by one, between the fields of the
 * state. The slot holders, out_ratio and first_release_ms are set only for a
 * request that would wait (route.h). */
#define VIEW_CFG_FROM offsetof(struct sw_route_backend_view, max_context_tokens)
#define VIEW_CFG_TO (offsetof(struct sw_route_backend_view, region) + sizeof(const char *))

/* remote: the other replicas' leases and queues count (state.redis, reachable). */
static inline __attribute__((always_inline)) void
fill_view(struct sw_live *l, size_t i, int64_t now_ms, bool remote, struct sw_route_backend_view *v)
{
    struct sw_live_backend *b = l->b[i];
    unsigned fl = l->tflags[i];
    bool degraded;
    const struct sw_route_backend_view *t = &l->tmpl[i];
    memcpy((char *)v + VIEW_CFG_FROM, (const char *)t + VIEW_CFG_FROM,
           VIEW_CFG_TO - VIEW_CFG_FROM);
    v->name = t->name;
    v->tier = t->tier;
    v->slots = t->slots;
    v->max_output_tokens = t->max_output_tokens;
    v->warm_eta_ms = 0;
    v->outside_load = 0;
    v->n_busy = 0;
    v->n_overdue = 0;
    v->first_release_ms = 0;
    v->prefix_tokens = 0;
    v->cached_tokens = 0;
    v->follow_left_ms = 0;
    v->drop_age_ms = 0;
    v->health = b->health;
    v->ttft_avg_ms = sw_latwin_view(&b->latwin, now_ms, b->health == SW_HEALTH_UP, &degraded);
    if (degraded)
        v->health = SW_HEALTH_DEGRADED;
    v->breaker = sw_breaker_view(&b->breaker, now_ms, &v->probe_free, &v->panic_free);
    v->breaker_failed_ms = sw_breaker_last_failure(&b->breaker);
    v->in_flight = b->q.in_flight;
    /* a request parked to follow a running one takes that slot when it
     * frees: it is ahead of any request that comes now */
    v->queued = b->q.queued + b->n_parked;
    v->queue_max = b->q.queue_max;
    v->prefill_ms_per_token = sw_prefill_ms_per_token(&b->prefill, &b->ewma, NULL);
    v->decode_tps = b->ewma.decode_tps;
    v->avg_output_tokens = b->ewma.output_tokens;
    v->rtt_ms = b->rtt_ms;
    /* A local backend without buckets or a load signal, up (maybe degraded),
     * in a single replica: nothing more to read but its slot holders. */
    if (fl || remote || b->health != SW_HEALTH_UP) {
        if (b->health == SW_HEALTH_COLD) {
            v->warm_eta_ms = b->load_ms;
        } else if (b->health == SW_HEALTH_WARMING) {
            double elapsed = (double)(now_ms - b->warming_since_ms);
            v->warm_eta_ms = b->load_ms > elapsed ? b->load_ms - elapsed : 0;
        }
        if (fl & SW_LIVE_T_RPM)
            v->rpm_available = sw_bucket_rpm_available(&b->bucket, now_ms);
        if (fl & SW_LIVE_T_TPM)
            v->tpm_available = sw_bucket_tpm_available(&b->bucket, now_ms);
        if (fl & SW_LIVE_T_CLOUD)
            return;
        if (remote) {
            /* every replica's slot holders and queue: this one's as they
             * are now, the others' as the last sync read them */
            if (b->remote_in_flight > 0)
                v->in_flight = sw_sat_add_long(v->in_flight, b->remote_in_flight);
            v->queued += b->remote_queued;
        }
        if (fl & SW_LIVE_T_LOAD)
            v->outside_load = sw_live_outside_load(l, i, now_ms);
    }
    /* The slot holders matter only to a request that would wait for one. */
    if (sw_route_waits(v)) {
        v->out_ratio = b->outlen.dist;
        fill_busy(b, &l->cfg->routing, now_ms, v);
    }
}

/* A sample counts while younger than SW_LIVE_LOAD_STALE_POLLS polls and no
 * poll failed since. */
static bool load_fresh(const struct sw_live *l, size_t i, int64_t now_ms)
{
    const struct sw_config_backend *be = &l->cfg->backends[i];
    const struct sw_live_backend *b = l->b[i];
    return be->load.source != 0 && b->load.at_ms > 0 && !b->load.error[0] &&
           now_ms - b->load.at_ms <= SW_LIVE_LOAD_STALE_POLLS * be->load.poll_ms;
}

bool sw_live_load_stale(const struct sw_live *l, size_t i, int64_t now_ms)
{
    return l->cfg->backends[i].load.source != 0 && !load_fresh(l, i, now_ms);
}

double sw_live_outside_load(const struct sw_live *l, size_t i, int64_t now_ms)
{
    const struct sw_config_backend *be = &l->cfg->backends[i];
    const struct sw_live_backend *b = l->b[i];
    if (!load_fresh(l, i, now_ms))
        return 0;
    if (b->load.saturated)
        return be->slots > 0 ? (double)be->slots : 1;
    return b->load.outside;
}

void sw_live_on_load(struct sw_live *l, size_t i, int64_t now_ms, double processing,
                     double waiting, bool saturated, long own, const char *error)
{
    struct sw_live_backend *b = l->b[i];
    if (error) {
        snprintf(b->load.error, sizeof b->load.error, "%s", error);
        b->load.prev_outside = 0;   /* no older sample vouches for the next one */
        return;
    }
    b->load.error[0] = '\0';
    b->load.processing = processing;
    b->load.waiting = waiting;
    b->load.saturated = saturated;
    b->load.own = own;
    /* The larger of the last two samples: a request of Spillway's still on
     * its way when the server counted is not taken for a slot freed. */
    double outside = processing + waiting - (double)own;
    outside = outside > 0 ? outside : 0;
    bool prev = b->load.at_ms > 0 && now_ms - b->load.at_ms <=
                                         SW_LIVE_LOAD_STALE_POLLS * l->cfg->backends[i].load.poll_ms;
    b->load.outside = prev && b->load.prev_outside > outside ? b->load.prev_outside : outside;
    b->load.prev_outside = outside;
    b->load.at_ms = now_ms;
}

void sw_live_on_prefill(struct sw_live *l, size_t i, const struct sw_prefill_report *r)
{
    sw_prefill_report(&l->b[i]->prefill, r);
}

bool sw_live_on_prefill_warmup(struct sw_live *l, size_t i, double elapsed_ms, long prompt_tokens,
                               long output_tokens)
{
    struct sw_live_backend *b = l->b[i];
    double decode = b->ewma.n_decode > 0 ? b->ewma.decode_tps : 0;
    return sw_prefill_warmup(&b->prefill, elapsed_ms, b->rtt_ms, prompt_tokens, output_tokens,
                             decode);
}

void sw_live_snapshot(struct sw_live *l, const struct sw_config_model *model, int64_t now_ms,
                      struct sw_live_snapshot *out)
{
    const struct sw_config_routing *r = &l->cfg->routing;
    bool remote = l->g->rstate && !l->g->remote_degraded;
    size_t n = model->n_backends < SW_ROUTE_MAX_BACKENDS ? model->n_backends
                                                         : SW_ROUTE_MAX_BACKENDS;
    const size_t *mb = model->backends;
    for (size_t k = 0; k < n; k++) {
        size_t i = mb[k];
        out->map[k] = i;
        fill_view(l, i, now_ms, remote, &out->backends[k]);
    }
    long degrade = -1;
    if (r->spend.degrade_backend >= 0) {
        for (size_t k = 0; k < n; k++)
            if (out->map[k] == (size_t)r->spend.degrade_backend)
                degrade = (long)k;
        if (degrade < 0 && n < SW_ROUTE_MAX_BACKENDS) {
            out->map[n] = (size_t)r->spend.degrade_backend;
            fill_view(l, out->map[n], now_ms, remote, &out->backends[n]);
            out->backends[n].degrade_only = true; /* only for the cap's degrade policy */
            degrade = (long)n++;
        }
    }
    out->view = (struct sw_route_view){
        .backends = out->backends,
        .n = n,
        .spend_usd = sw_live_spend_usd(l, now_ms),
        .emergency = l->g->emergency,
    };
    out->policy = (struct sw_route_policy){
        .ttft_budget_ms = l->g->ttft_budget_ms ? l->g->ttft_budget_ms
                          : model->ttft_budget_ms ? model->ttft_budget_ms
                                                  : r->ttft_budget_ms,
        .spend_cap_usd = sw_live_spend_cap_usd(l),
        .on_cap = r->spend.on_cap == SW_ON_CAP_DEGRADE   ? SW_CAP_DEGRADE
                  : r->spend.on_cap == SW_ON_CAP_KEEP_LOCAL ? SW_CAP_KEEP_LOCAL
                                                            : SW_CAP_SHED,
        .degrade_backend = degrade,
        .masking_available = l->pii != NULL,
        .shed_retry_after_s = r->spend.shed_retry_after_s,
        .batch_ttft_budget_ms = r->batch_ttft_budget_ms,
    };
}

/* ---- Prefix affinity ---- */

/* Following a running turn (docs/routing.md): a request that extends the
 * whole prompt of one running on local backend i finds that prompt in its
 * slot once it ends, as a request that finds its prefix in an idle slot
 * does (the idle hit share), and a free slot holds none of it (the estimate
 * without following counts no cached tokens, with more than one slot). When
 * waiting for that slot, at that request's bound, and prefilling the rest
 * comes sooner than the estimate without it, the view says so
 * (follow_left_ms) and estimates that. Only while no request waits for i (a
 * slot handed over skips nobody who came first). */
static void follow_view(struct sw_live *l, size_t i, const struct sw_prefix *p, int64_t now_ms,
                        struct sw_route_backend_view *v)
{
    struct sw_live_backend *b = l->b[i];
    if (b->q.queued > 0 || v->queued > b->n_parked)    /* ours or another replica's */
        return;
    const struct sw_live_busy *x = sw_live_busy_extended(b, p);
    if (!x)
        return;
    /* its prefix is in the slot x holds: a free slot has none of it */
    if (v->slots > 1)
        v->cached_tokens = 0;
    double share = sw_live_cache_hit(l, i, false);
    if (!(share > 0))
        return;
    long prompt = p->tokens[(p->n < SW_PREFIX_MAX ? p->n : SW_PREFIX_MAX) - 1];
    double left = sw_route_busy_left_ms(v, x->prompt_tokens, x->max_tokens,
                                        (double)(now_ms - x->since_ms));
    struct sw_route_backend_view f = *v;
    f.prefix_tokens = x->tail_tokens > v->prefix_tokens ? x->tail_tokens : v->prefix_tokens;
    f.cached_tokens = (double)x->tail_tokens * share;
    f.follow_left_ms = left > 0 ? left : 1e-3;  /* > 0: following */
    if (sw_route_est_ttft_ms(&f, prompt) < sw_route_est_ttft_ms(v, prompt))
        *v = f;
}

void sw_live_prefix_view(struct sw_live *l, const struct sw_prefix *p, int64_t now_ms,
                         struct sw_live_snapshot *snap)
{
    struct sw_live_shared *g = l->g;
    if (!g->affinity_on || !p || p->n == 0)
        return;
    for (size_t k = 0; k < snap->view.n; k++) {
        struct sw_route_backend_view *v = &snap->backends[k];
        if (v->tier != SW_TIER_LOCAL)
            continue;
        size_t i = snap->map[k];
        long t = sw_affinity_match(&l->b[i]->aff, p, l->b[i]->affinity_id, now_ms);
        v->prefix_tokens = t;
        /* A request that would wait gets the slot that frees first, which on
         * a server caching per slot (llama.cpp) may not hold its prefix: it
         * is estimated at its full prompt (one slot: it is the one). */
        bool waits = v->slots > 1 && sw_route_waits(v);
        double share = sw_live_cache_hit(l, i, sw_live_cache_busy(l, i, v));
        v->cached_tokens = waits ? 0 : (double)t * share;
        follow_view(l, i, p, now_ms, v);
        const struct sw_affinity *a = &l->b[i]->aff;
        int64_t oldest = sw_affinity_oldest_ms(a);
        v->drop_age_ms = a->used < a->max || oldest < 0 || now_ms - oldest > (int64_t)1e12
                             ? SW_ROUTE_DROP_NONE
                             : (double)(now_ms - oldest);
    }
}

bool sw_live_prefix_wanted(const struct sw_live *l, const struct sw_config *cfg,
                           const struct sw_config_model *m)
{
    if (!l->g->affinity_on)
        return false;
    for (size_t i = 0; i < m->n_backends; i++)
        if (cfg->backends[m->backends[i]].tier == SW_TIER_LOCAL)
            return true;
    return false;
}

void sw_live_prefix_served(struct sw_live *l, size_t i, const struct sw_prefix *p,
                           int64_t now_ms)
{
    if (!l->g->affinity_on || !p || p->n == 0 || l->b[i]->tier != SW_TIER_LOCAL)
        return;
    sw_affinity_put_prefix(&l->b[i]->aff, p, l->b[i]->affinity_id, now_ms);
    sw_store_affinity_put(&l->g->store, l, i, p);
}

size_t sw_live_affinity_entries(const struct sw_live *l)
{
    size_t n = 0;
    for (size_t i = 0; l->g->affinity_on && i < l->n; i++)
        n += sw_affinity_size(&l->b[i]->aff);
    return n;
}

/* One sample of the hit share of state k (0 idle, 1 busy). */
static void take_cache_hit(struct sw_live_backend *b, int k, double share)
{
    b->cache_hit[k] = b->n_cache[k] == 0
                          ? share
                          : b->cache_hit[k] + SW_LIVE_CACHE_ALPHA * (share - b->cache_hit[k]);
    b->n_cache[k]++;
}

void sw_live_on_cache(struct sw_live *l, size_t i, long predicted, long reported, bool busy)
{
    struct sw_live_backend *b = l->b[i];
    if (reported >= 0)
        b->cache_per_answer = true;
    if (reported < 0 || predicted <= 0)
        return;
    double share = (double)reported / (double)predicted;
    take_cache_hit(b, busy, share > 1 ? 1 : share);
}

void sw_live_on_cache_rate(struct sw_live *l, size_t i, double rate)
{
    struct sw_live_backend *b = l->b[i];
    if (b->cache_per_answer || !(rate >= 0))
        return;
    rate = rate > 1 ? 1 : rate;
    take_cache_hit(b, 0, rate);
    take_cache_hit(b, 1, rate);
}

bool sw_live_cache_busy(const struct sw_live *l, size_t i, const struct sw_route_backend_view *v)
{
    const struct sw_live_backend *b = l->b[i];
    if (v->slots <= 1 || (v->in_flight <= 0 && !(v->outside_load > 0)))
        return false;
    return v->outside_load > 0 || v->in_flight > (long)b->n_busy || b->n_unmatched > 0;
}

double sw_live_cache_hit(const struct sw_live *l, size_t i, bool busy)
{
    const struct sw_live_backend *b = l->b[i];
    int k = busy;
    return b->n_cache[k] > 0 && b->cache_hit[k] > 0 ? b->cache_hit[k] : 0;
}

/* Up again; a finished warm-up teaches how long loading takes. */
static void mark_up(struct sw_live_backend *b, int64_t now_ms)
{
    if (b->health == SW_HEALTH_WARMING)
        b->load_ms = (double)(now_ms - b->warming_since_ms);
    b->health = SW_HEALTH_UP;
    b->warming_since_ms = 0;
}

void sw_live_on_warmup(struct sw_live *l, size_t i, int64_t now_ms)
{
    struct sw_live_backend *b = l->b[i];
    if (b->health != SW_HEALTH_WARMING) {
        b->health = SW_HEALTH_WARMING;
        b->warming_since_ms = now_ms;
    }
}

void sw_live_on_success(struct sw_live *l, size_t i, int64_t now_ms, long prompt_tokens,
                        double ttft_ms, double decode_ms, long output_tokens)
{
    struct sw_live_backend *b = l->b[i];
    sw_breaker_on_success(&b->breaker, now_ms);
    b->last_error[0] = '\0';
    if (ttft_ms >= 0)
        sw_latwin_add(&b->latwin, now_ms, ttft_ms);
    sw_ewma_observe(&b->ewma, prompt_tokens, ttft_ms, b->rtt_ms, decode_ms, output_tokens);
    mark_up(b, now_ms);
}

void sw_live_on_failure(struct sw_live *l, size_t i, int64_t now_ms, int http_status,
                        int transport_err, long retry_after_s)
{
    struct sw_live_backend *b = l->b[i];
    if (sw_breaker_qualifies(http_status, transport_err))
        sw_breaker_on_failure(&b->breaker, now_ms, retry_after_s > 0 ? retry_after_s * 1000 : 0);
    else /* it answered: reachable, whatever it thought of this request */
        sw_breaker_on_success(&b->breaker, now_ms);
    if (transport_err == SW_ECONNECT)
        b->health = SW_HEALTH_DOWN;
    if (http_status)
        snprintf(b->last_error, sizeof b->last_error, "a request was answered %d", http_status);
    else if (transport_err)
        snprintf(b->last_error, sizeof b->last_error, "a request failed: %s", sw_err_str(transport_err));
}

void sw_live_set_error(struct sw_live *l, size_t i, const char *msg)
{
    snprintf(l->b[i]->last_error, sizeof l->b[i]->last_error, "%s", msg);
}

double sw_live_spend_usd(struct sw_live *l, int64_t now_ms)
{
    double local = sw_spend_total(&l->g->spend, sw_live_wall_ms(l, now_ms));
    if (!l->g->rstate)
        return local;
    double cap = sw_live_spend_cap_usd(l);
    if (l->g->remote_degraded && cap > 0)
        return local > cap ? local : cap; /* no shared counter: fails closed */
    return local > l->g->remote_spend_usd ? local : l->g->remote_spend_usd;
}

double sw_live_spend_cap_usd(const struct sw_live *l)
{
    return l->g->spend_cap_usd >= 0 ? l->g->spend_cap_usd : l->cfg->routing.spend.cap_usd;
}

void sw_live_on_probe(struct sw_live *l, size_t i, int64_t now_ms, double ttft_ms)
{
    sw_latwin_add(&l->b[i]->latwin, now_ms, ttft_ms);
}

void sw_live_on_health(struct sw_live *l, size_t i, int64_t now_ms, int status, double rtt_ms)
{
    struct sw_live_backend *b = l->b[i];
    if (status == 200) {
        mark_up(b, now_ms);
        b->rtt_ms = rtt_ms;
    } else if (status == 503) {
        if (b->health != SW_HEALTH_WARMING)
            b->health = SW_HEALTH_COLD;
        b->rtt_ms = rtt_ms;
    } else {
        /* The daemon's heartbeat is gone: that counts against the breaker
         * like a failed request, so a crash opens it without costing
         * requests; only a real request (the half-open probe) closes it. */
        b->health = SW_HEALTH_DOWN;
        sw_breaker_on_failure(&b->breaker, now_ms, 0);
    }
}
