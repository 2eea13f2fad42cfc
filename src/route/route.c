/* The routing decision (docs/routing.md).
 *
 * decide() runs in three steps over at most SW_ROUTE_MAX_BACKENDS backends:
 *   1. eligibility: one exclusion code per backend (plan.excluded), the first
 *      hard constraint that applies;
 *   2. preference: the best local, unless a trigger (latency-critical, degraded,
 *      cold start, overflow) wants the cloud, and what to do when it cannot go;
 *   3. output: the ordered attempts, or a structured rejection.
 * docs/routing.md is the user-facing version of every rule here. Pure: the
 * clock is the caller's `now_ms`, nothing is allocated, nothing is global. */
#include "route/route.h"

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/satmath.h"

_Static_assert(SW_ROUTE_MAX_BACKENDS <= 32, "add() keeps one bit per backend");
_Static_assert(SW_HEALTH_UP == 0 && SW_BREAKER_CLOSED == 0, "eligibility tests both at once");

#define NO_DEADLINE 1e300

/* ---- Names ---- */

static const char *const reason_names[SW_REASON__COUNT] = {
    [SW_REASON_BASELINE] = "baseline",     [SW_REASON_OVERFLOW] = "overflow",
    [SW_REASON_LATENCY] = "latency",       [SW_REASON_PRIVACY] = "privacy",
    [SW_REASON_COST] = "cost",             [SW_REASON_BUDGET] = "budget",
    [SW_REASON_BREAKER] = "breaker",       [SW_REASON_COLD_START] = "cold_start",
    [SW_REASON_CAPACITY] = "capacity",     [SW_REASON_FALLBACK] = "fallback",
    [SW_REASON_EMERGENCY] = "emergency",   [SW_REASON_PANIC] = "panic",
    [SW_REASON_LONG_PROMPT] = "long_prompt", [SW_REASON_AFFINITY] = "affinity",
};

const char *sw_reason_name(enum sw_reason r)
{
    return (unsigned)r < SW_REASON__COUNT ? reason_names[r] : "unknown";
}

static const char *const excl_names[SW_EXCL__COUNT] = {
    [SW_EXCL_NONE] = "none",               [SW_EXCL_FAILED] = "failed",
    [SW_EXCL_PRIVACY] = "privacy",         [SW_EXCL_NO_MASKING] = "no_masking",
    [SW_EXCL_CONTEXT] = "context",         [SW_EXCL_TOOLS] = "tools",
    [SW_EXCL_IMAGES] = "images",           [SW_EXCL_DOWN] = "down",
    [SW_EXCL_BREAKER_OPEN] = "breaker_open", [SW_EXCL_PROBE_BUSY] = "probe_busy",
    [SW_EXCL_QUEUE_FULL] = "queue_full",   [SW_EXCL_BUDGET] = "budget",
    [SW_EXCL_RATE_RPM] = "rate_rpm",       [SW_EXCL_RATE_TPM] = "rate_tpm",
    [SW_EXCL_DEGRADE_ONLY] = "degrade_only",
};

const char *sw_route_excl_name(enum sw_route_excl e)
{
    return (unsigned)e < SW_EXCL__COUNT ? excl_names[e] : "unknown";
}

const char *sw_health_name(enum sw_health h)
{
    static const char *const names[] = {
        [SW_HEALTH_UP] = "up",     [SW_HEALTH_DEGRADED] = "degraded", [SW_HEALTH_COLD] = "cold",
        [SW_HEALTH_WARMING] = "warming", [SW_HEALTH_DOWN] = "down",
    };
    return (unsigned)h < sizeof names / sizeof names[0] ? names[h] : "unknown";
}

const char *sw_breaker_name(enum sw_breaker_state b)
{
    static const char *const names[] = {
        [SW_BREAKER_CLOSED] = "closed", [SW_BREAKER_OPEN] = "open",
        [SW_BREAKER_HALF_OPEN] = "half_open",
    };
    return (unsigned)b < sizeof names / sizeof names[0] ? names[b] : "unknown";
}

int sw_breaker_gauge(enum sw_breaker_state b)
{
    return b == SW_BREAKER_OPEN ? 2 : b == SW_BREAKER_HALF_OPEN ? 1 : 0;
}

enum sw_breaker_state sw_breaker_from_gauge(int gauge)
{
    return gauge == 2 ? SW_BREAKER_OPEN : gauge == 1 ? SW_BREAKER_HALF_OPEN : SW_BREAKER_CLOSED;
}

/* The estimate the router orders by: the wait plus warm-up for a cold or
 * warming backend; a degraded backend is at least as slow as its window says. */
static double est_effective(const struct sw_route_backend_view *b, double est)
{
    if (b->health == SW_HEALTH_COLD || b->health == SW_HEALTH_WARMING)
        est += sw_route_learned(b->warm_eta_ms, SW_ROUTE_PRIOR_WARM_MS);
    if (b->health == SW_HEALTH_DEGRADED && isfinite(b->ttft_avg_ms) && b->ttft_avg_ms > est)
        est = b->ttft_avg_ms;
    return est;
}

/* ---- Eligibility ---- */

/* What the request may do with the cloud. */
enum cloud_mode {
    CLOUD_OPEN,         /* allowed, unmasked */
    CLOUD_MASKED,       /* sensitive in a declared emergency: masked, only when local fails */
    CLOUD_BANNED        /* may not leave */
};

struct ctx {
    const struct sw_route_facts *f;
    const struct sw_route_view *v;
    const struct sw_route_policy *p;
    struct sw_route_plan *plan;
    size_t n;
    double left_ms;             /* to the deadline; NO_DEADLINE without one */
    long need_tokens;           /* prompt + max_tokens, saturated at LONG_MAX */
    enum cloud_mode mode;
    enum sw_route_excl banned_code; /* PRIVACY or NO_MASKING when mode is BANNED */
    size_t locals[SW_ROUTE_MAX_BACKENDS];   /* eligible locals, best first */
    size_t n_locals;
    size_t clouds[SW_ROUTE_MAX_BACKENDS];   /* eligible clouds, configured order */
    size_t n_clouds;
    bool resident;              /* sensitive, but the model has a cloud in an allowed region:
                                   only those clouds are open */
    uint32_t added;             /* backends add() put in the plan (a bit each) */
    bool needs_caps;            /* facts: needs tools or images */
    double est_raw[SW_ROUTE_MAX_BACKENDS];  /* sw_route_est_ttft_ms of each (no warm-up) */
    uint32_t would_cloud;       /* a bit per cloud eligible, or eligible but for privacy or
                                   the spend cap (latency-critical compares against these,
                                   so the reason can say why it stayed local) */
};

static double request_cost_usd(const struct sw_route_facts *f, const struct sw_route_backend_view *b,
                               double cap_usd)
{
    double in = (double)sw_route_spend_prompt_tokens(f);
    long reserve = sw_route_reserve_tokens(f, b, cap_usd);
    double out = reserve > 0 ? (double)reserve
                             : sw_route_learned(b->avg_output_tokens, SW_ROUTE_PRIOR_OUTPUT_TOKENS);
    return (in * sw_route_nonneg(b->input_usd_per_mtok) +
            out * sw_route_nonneg(b->output_usd_per_mtok)) / 1e6;
}

/* The cloud's token buckets; then the degrade reservation. */
static enum sw_route_excl rate_check(const struct ctx *c, const struct sw_route_backend_view *b)
{
    if (b->rpm_available >= 0 && b->rpm_available < 1)
        return SW_EXCL_RATE_RPM;
    if (b->tpm_available >= 0 && b->tpm_available < (double)c->need_tokens)
        return SW_EXCL_RATE_TPM;
    return b->degrade_only ? SW_EXCL_DEGRADE_ONLY : SW_EXCL_NONE;
}

/* Every check after privacy, in the documented order. */
static inline __attribute__((always_inline)) enum sw_route_excl
check_rest(const struct ctx *c, const struct sw_route_backend_view *b, bool up_closed)
{
    const struct sw_route_facts *f = c->f;

    if (b->max_context_tokens > 0 && c->need_tokens > b->max_context_tokens)
        return SW_EXCL_CONTEXT;
    if (c->needs_caps) {    /* tools or images */
        if (f->needs_tools && !b->supports_tools)
            return SW_EXCL_TOOLS;
        if (f->needs_images && !b->supports_images)
            return SW_EXCL_IMAGES;
    }
    if (!up_closed) {   /* up_closed: health up and breaker closed, known to pass these */
        if (b->health == SW_HEALTH_DOWN)
            return SW_EXCL_DOWN;
        if (b->breaker == SW_BREAKER_OPEN)
            return SW_EXCL_BREAKER_OPEN;
        if (b->breaker == SW_BREAKER_HALF_OPEN && !b->probe_free)
            return SW_EXCL_PROBE_BUSY;
    }
    if (b->tier == SW_TIER_LOCAL) {
        /* Full: no free slot and Spillway's queue at its bound. slots <= 0 is
         * unbounded concurrency, which never queues. */
        if (b->slots > 0 && b->in_flight >= b->slots && b->queued >= b->queue_max)
            return SW_EXCL_QUEUE_FULL;
    } else {
        /* The cap limits spending: a backend this request costs nothing on (no
         * price set) is never shed for it. */
        const struct sw_route_policy *p = c->p;
        if (f->tenant_budget_out && (b->input_usd_per_mtok > 0 || b->output_usd_per_mtok > 0))
            return SW_EXCL_BUDGET;
        double cost = p->spend_cap_usd > 0 ? request_cost_usd(f, b, p->spend_cap_usd) : 0;
        if (cost > 0 && c->v->spend_usd + cost > p->spend_cap_usd)
            return SW_EXCL_BUDGET;
        return rate_check(c, b);
    }
    if (b->degrade_only)
        return SW_EXCL_DEGRADE_ONLY;
    return SW_EXCL_NONE;
}

/* Whether a request sent to b now starts at once: up (not cold or warming)
 * with a free slot. */
static inline bool starts_now(const struct sw_route_backend_view *b, bool may_wait)
{
    /* Not may_wait (b->slots > 0 && sw_route_may_wait(b)): fewer in flight
     * and queued than slots (clamped at 0, so the raw sum is no larger) and
     * no outside load; the comparison below would hold. */
    return b->health == SW_HEALTH_UP &&
           (b->slots <= 0 || !may_wait ||
            (double)(b->in_flight + b->queued) + sw_route_nonneg(b->outside_load) <
                (double)b->slots);
}

/* The rank of an eligible local before its estimate: degraded and half-open
 * (probing) endpoints rank after healthy ones (2); then a free slot beats a
 * place in a queue (1), whatever the estimates say: the wait is a fluid
 * average, and when the requests holding every slot started together none
 * frees before they all end. */
static inline unsigned local_rank(const struct sw_route_backend_view *b, bool may_wait)
{
    return (b->health == SW_HEALTH_DEGRADED || b->breaker == SW_BREAKER_HALF_OPEN) * 2u +
           !starts_now(b, may_wait);
}

/* Whether cloud backend b is in one of the request's allowed regions. */
static bool in_regions(const struct sw_route_facts *f, const struct sw_route_backend_view *b)
{
    size_t n = f->n_regions < SW_CONFIG_MAX_REGIONS ? f->n_regions : SW_CONFIG_MAX_REGIONS;
    for (size_t i = 0; b->region && i < n; i++)
        if (f->regions[i] && !strcmp(f->regions[i], b->region))
            return true;
    return false;
}

static void eligibility(struct ctx *c)
{
    const struct sw_route_facts *f = c->f;
    struct sw_route_plan *plan = c->plan;
    const struct sw_route_backend_view *bs = c->v->backends;
    double prompt = f->prompt_tokens_est > 0 ? (double)f->prompt_tokens_est : 0;
    uint32_t exclude = f->exclude, would = 0;
    unsigned rank[SW_ROUTE_MAX_BACKENDS];   /* local_rank of each eligible local */
    size_t n_locals = 0, n_clouds = 0;

    for (size_t i = 0; i < c->n; i++) {
        const struct sw_route_backend_view *b = &bs[i];
        enum sw_route_excl e;
        bool may_wait = b->slots > 0 && sw_route_may_wait(b);
        /* The common backend: no warm-up, not degraded, no breaker rule. */
        bool up_closed = (b->health | b->breaker) == 0;    /* UP and CLOSED */
        double raw = sw_route_est_ttft(b, prompt, may_wait);
        double eff = up_closed ? raw : est_effective(b, raw);

        c->est_raw[i] = raw;
        plan->est_ttft_ms[i] = eff;
        if (exclude >> i & 1u) {    /* i < SW_ROUTE_MAX_BACKENDS <= 32 */
            e = SW_EXCL_FAILED;
        } else if (b->tier == SW_TIER_CLOUD && c->mode == CLOUD_BANNED) {
            e = c->banned_code;
            if (check_rest(c, b, up_closed) == SW_EXCL_NONE)
                would |= 1u << i;
        } else if (b->tier == SW_TIER_CLOUD && c->resident && !in_regions(f, b)) {
            e = SW_EXCL_PRIVACY;
        } else {
            e = check_rest(c, b, up_closed);
            if (e == SW_EXCL_BUDGET && rate_check(c, b) == SW_EXCL_NONE)
                would |= 1u << i;
        }
        plan->excluded[i] = e;
        if (e != SW_EXCL_NONE)
            continue;
        if (b->tier == SW_TIER_CLOUD) {
            would |= 1u << i;
            c->clouds[n_clouds++] = i;
        } else {
            /* Insertion sort by rank, then estimate; stable: ties keep the
             * configured order. */
            unsigned r = up_closed ? !starts_now(b, may_wait) : local_rank(b, may_wait);
            size_t k = n_locals++;
            while (k > 0) {
                size_t j = c->locals[k - 1];
                if (r != rank[j] ? r > rank[j] : !(eff < plan->est_ttft_ms[j]))
                    break;
                c->locals[k] = j;
                k--;
            }
            rank[i] = r;
            c->locals[k] = i;
        }
    }
    c->n_locals = n_locals;
    c->n_clouds = n_clouds;
    c->would_cloud = would;
}

/* ---- Output ---- */

static inline void add(struct ctx *c, size_t backend, enum sw_reason reason, bool masked)
{
    struct sw_route_plan *plan = c->plan;
    uint32_t bit = 1u << backend; /* backend < SW_ROUTE_MAX_BACKENDS <= 32 */
    if (c->added & bit) /* maybe in the plan (a rejection empties it): look */
        for (size_t i = 0; i < plan->n; i++)
            if (plan->attempts[i].backend == backend)
                return;
    c->added |= bit;
    plan->attempts[plan->n++] = (struct sw_route_attempt){ backend, reason, masked, false };
}

/* add() for each of list[0..n), with the plan's count kept in a local. */
static void add_list(struct ctx *c, const size_t *list, size_t n, enum sw_reason reason,
                     bool masked)
{
    struct sw_route_plan *plan = c->plan;
    size_t pn = plan->n;
    uint32_t added = c->added;
    struct sw_route_attempt a = { 0, reason, masked, false };
    for (const size_t *end = list + n; list < end; list++) {
        size_t backend = *list;
        uint32_t bit = 1u << backend;
        if (added & bit) {
            size_t i = 0;
            while (i < pn && plan->attempts[i].backend != backend)
                i++;
            if (i < pn)
                continue;
        }
        added |= bit;
        a.backend = backend;
        plan->attempts[pn++] = a;
    }
    plan->n = pn;
    c->added = added;
}

static void add_locals(struct ctx *c)
{
    add_list(c, c->locals, c->n_locals, SW_REASON_FALLBACK, false);
}

/* Clouds as fallbacks: masked ones carry emergency. */
static void add_clouds(struct ctx *c)
{
    bool masked = c->mode == CLOUD_MASKED;
    add_list(c, c->clouds, c->n_clouds, masked ? SW_REASON_EMERGENCY : SW_REASON_FALLBACK,
             masked);
}

static void primary_local(struct ctx *c, size_t b, enum sw_reason r)
{
    add(c, b, r, false);
    add_locals(c);
    add_clouds(c);
}

static void primary_cloud(struct ctx *c, size_t b, enum sw_reason r)
{
    bool masked = c->mode == CLOUD_MASKED;
    add(c, b, masked ? SW_REASON_EMERGENCY : r, masked);
    add_clouds(c);
    add_locals(c);
}

static void reject(struct sw_route_plan *plan, int status, const char *code, long retry_after_s,
                   const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static void reject(struct sw_route_plan *plan, int status, const char *code, long retry_after_s,
                   const char *fmt, ...)
{
    va_list ap;
    plan->n = 0;
    plan->status = status;
    plan->code = code;
    plan->retry_after_s = retry_after_s;
    va_start(ap, fmt);
    vsnprintf(plan->message, sizeof plan->message, fmt, ap);
    va_end(ap);
}

/* ---- Preference ---- */

/* What keeps the cloud out when no cloud is eligible. */
enum cloud_block { BLOCK_NONE, BLOCK_PRIVACY, BLOCK_BUDGET, BLOCK_BREAKER, BLOCK_FAILED, BLOCK_OTHER };

static enum cloud_block cloud_block(const struct ctx *c)
{
    bool any = false, budget = false, breaker = false, failed = false;

    if (c->n_clouds > 0)
        return BLOCK_NONE;
    for (size_t i = 0; i < c->n; i++) {
        if (c->v->backends[i].tier != SW_TIER_CLOUD)
            continue;
        any = true;
        switch (c->plan->excluded[i]) {
        case SW_EXCL_BUDGET: budget = true; break;
        case SW_EXCL_BREAKER_OPEN: case SW_EXCL_PROBE_BUSY: breaker = true; break;
        case SW_EXCL_FAILED: failed = true; break;
        default: break;
        }
    }
    if (any && c->mode == CLOUD_BANNED)
        return BLOCK_PRIVACY;
    if (budget)
        return BLOCK_BUDGET;
    if (breaker)
        return BLOCK_BREAKER;
    if (failed)
        return BLOCK_FAILED;
    return BLOCK_OTHER;
}

/* Why no local is eligible, as the reason a cloud primary carries:
 * overflow (a queue is full) > breaker > fallback (down / failed) > capacity.
 * Returns false when the model has no local backend (degrade-only ones aside). */
static bool local_absence(const struct ctx *c, enum sw_reason *r)
{
    bool any = false, full = false, breaker = false, failed = false;

    for (size_t i = 0; i < c->n; i++) {
        if (c->v->backends[i].tier != SW_TIER_LOCAL || c->v->backends[i].degrade_only)
            continue;
        any = true;
        switch (c->plan->excluded[i]) {
        case SW_EXCL_QUEUE_FULL: full = true; break;
        case SW_EXCL_BREAKER_OPEN: case SW_EXCL_PROBE_BUSY: breaker = true; break;
        case SW_EXCL_DOWN: case SW_EXCL_FAILED: failed = true; break;
        default: break;
        }
    }
    *r = full ? SW_REASON_OVERFLOW : breaker ? SW_REASON_BREAKER
       : failed ? SW_REASON_FALLBACK : SW_REASON_CAPACITY;
    return any;
}

/* A model without local backends: why this cloud rather than the first one
 * configured, from the first cloud passed over. */
static enum sw_reason cloud_deviation(const struct ctx *c, size_t chosen)
{
    for (size_t i = 0; i < chosen; i++) {
        if (c->v->backends[i].tier != SW_TIER_CLOUD)
            continue;
        switch (c->plan->excluded[i]) {
        case SW_EXCL_NONE: return SW_REASON_BASELINE;
        case SW_EXCL_BREAKER_OPEN: case SW_EXCL_PROBE_BUSY: return SW_REASON_BREAKER;
        case SW_EXCL_BUDGET: return SW_REASON_COST;
        case SW_EXCL_PRIVACY: return SW_REASON_PRIVACY;    /* outside the request's regions */
        case SW_EXCL_CONTEXT: case SW_EXCL_TOOLS: case SW_EXCL_IMAGES: return SW_REASON_CAPACITY;
        default: return SW_REASON_FALLBACK;
        }
    }
    return c->f->exclude ? SW_REASON_FALLBACK : SW_REASON_BASELINE;
}

/* The degrade target of the spend cap, when usable: a local backend that is
 * eligible or eligible but reserved (degrade_only). */
static bool degrade_target(const struct ctx *c, size_t *out)
{
    long d = c->p->degrade_backend;
    if (d < 0 || (size_t)d >= c->n || c->v->backends[d].tier != SW_TIER_LOCAL)
        return false;
    if (c->plan->excluded[d] != SW_EXCL_NONE && c->plan->excluded[d] != SW_EXCL_DEGRADE_ONLY)
        return false;
    *out = (size_t)d;
    return true;
}

static void describe_need(const struct ctx *c, enum sw_route_excl e, const struct sw_route_backend_view *b,
                          char *buf, size_t len)
{
    switch (e) {
    case SW_EXCL_CONTEXT:
        snprintf(buf, len, "it needs %ld tokens of context (prompt ~%ld + max_tokens %ld) but "
                 "'%s' declares %ld", c->need_tokens, c->f->prompt_tokens_est, c->f->max_tokens,
                 b->name ? b->name : "?", b->max_context_tokens);
        break;
    case SW_EXCL_TOOLS:
        snprintf(buf, len, "it needs tool calling, which '%s' does not support",
                 b->name ? b->name : "?");
        break;
    case SW_EXCL_IMAGES:
        snprintf(buf, len, "it needs image input, which '%s' does not support",
                 b->name ? b->name : "?");
        break;
    default:
        snprintf(buf, len, "no local backend serves this model");
        break;
    }
}

/* The first capability exclusion among locals (or any backend if `any_tier`). */
static void capability_need(const struct ctx *c, bool any_tier, char *buf, size_t len)
{
    for (size_t i = 0; i < c->n; i++) {
        enum sw_route_excl e = c->plan->excluded[i];
        const struct sw_route_backend_view *b = &c->v->backends[i];
        if (!any_tier && b->tier != SW_TIER_LOCAL)
            continue;
        if (e == SW_EXCL_CONTEXT || e == SW_EXCL_TOOLS || e == SW_EXCL_IMAGES) {
            describe_need(c, e, b, buf, len);
            return;
        }
    }
    describe_need(c, SW_EXCL_NONE, NULL, buf, len);
}

/* Retry-After for a full local queue: the estimated wait, 1..60 s. */
static long queue_retry_after(const struct ctx *c)
{
    double best = -1;
    for (size_t i = 0; i < c->n; i++)
        if (c->plan->excluded[i] == SW_EXCL_QUEUE_FULL &&
            (best < 0 || c->plan->est_ttft_ms[i] < best))
            best = c->plan->est_ttft_ms[i];
    if (!(best < 60000))  /* also an unbounded wait (an overdue slot) */
        return 60;
    long s = (long)ceil(best / 1000.0);
    return s < 1 ? 1 : s;
}

static bool all_capability_excluded(const struct ctx *c)
{
    bool any = false;
    for (size_t i = 0; i < c->n; i++) {
        enum sw_route_excl e = c->plan->excluded[i];
        if (c->v->backends[i].degrade_only)
            continue;
        any = true;
        if (e != SW_EXCL_CONTEXT && e != SW_EXCL_TOOLS && e != SW_EXCL_IMAGES)
            return false;
    }
    return any;
}

static long budget_retry_after(const struct ctx *c)
{
    return c->p->shed_retry_after_s > 0 ? c->p->shed_retry_after_s : -1;
}

/* No eligible local (case A): a cloud, the degrade target, or a rejection. */
static void no_local(struct ctx *c)
{
    enum sw_reason why;
    bool has_local = local_absence(c, &why);
    char need[200];

    if (c->n_clouds > 0) {
        /* Masked clouds only when local failed, never for capability. */
        if (c->mode == CLOUD_MASKED && has_local && why == SW_REASON_CAPACITY)
            goto refuse;
        primary_cloud(c, c->clouds[0], has_local ? why : cloud_deviation(c, c->clouds[0]));
        return;
    }
    size_t d;
    if (cloud_block(c) == BLOCK_BUDGET && c->p->on_cap == SW_CAP_DEGRADE && degrade_target(c, &d)) {
        primary_local(c, d, SW_REASON_BUDGET);
        return;
    }
refuse:
    if (c->mode != CLOUD_OPEN) {
        if ((has_local && why == SW_REASON_CAPACITY) || (!has_local && c->mode == CLOUD_BANNED)) {
            capability_need(c, false, need, sizeof need);
            reject(c->plan, 422, SW_ROUTE_CODE_CAPABILITY, -1,
                   "No local backend can serve this request and it may not be sent to the "
                   "cloud%s: %s.", c->mode == CLOUD_MASKED ? " (an emergency allows masked "
                   "cloud only when local fails, not for capability)" : "", need);
            return;
        }
        if (c->mode == CLOUD_BANNED && why == SW_REASON_OVERFLOW) {
            reject(c->plan, 503, SW_ROUTE_CODE_QUEUE_FULL, queue_retry_after(c),
                   "The local queue for this model is full and this request may not be sent "
                   "to the cloud; retry later.");
            return;
        }
        if (c->mode == CLOUD_BANNED) {
            reject(c->plan, 503, SW_ROUTE_CODE_PRIVACY, -1,
                   "This request may not leave the network and no local backend is available "
                   "(%s)%s.", why == SW_REASON_BREAKER ? "breaker open" : "down or failed",
                   c->banned_code == SW_EXCL_NO_MASKING
                       ? "; an emergency is declared but PII masking is not available" : "");
            return;
        }
        /* Masked: local failed and every cloud is blocked too: as for any request. */
    }
    if (cloud_block(c) == BLOCK_BUDGET) {
        reject(c->plan, 429, SW_ROUTE_CODE_BUDGET, budget_retry_after(c),
               c->f->tenant_budget_out
                   ? "The cloud budget of this key (or of its team) is spent and no local "
                     "backend can serve this request."
                   : "The cloud spend cap is reached and no local backend can serve this request.");
        return;
    }
    if (all_capability_excluded(c)) {
        capability_need(c, true, need, sizeof need);
        reject(c->plan, 422, SW_ROUTE_CODE_CAPABILITY, -1,
               "No backend of this model can serve this request: %s.", need);
        return;
    }
    if (has_local && why == SW_REASON_OVERFLOW) {
        reject(c->plan, 503, SW_ROUTE_CODE_QUEUE_FULL, queue_retry_after(c),
               "The local queue for this model is full and no cloud backend is available; "
               "retry later.");
        return;
    }
    reject(c->plan, 503, SW_ROUTE_CODE_ALL_FAILED, -1,
           "Every backend of this model failed or is unavailable (down, breaker open or "
           "rate-limited).");
}

/* Whether the model has a cloud backend in one of the request's regions. */
static bool resident_cloud(const struct sw_route_facts *f, const struct sw_route_view *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (v->backends[i].tier == SW_TIER_CLOUD && in_regions(f, &v->backends[i]))
            return true;
    return false;
}

/* ---- Panic ---- */

/* Whether b, excluded only by its breaker, could take a panic request: the
 * remaining checks pass with the breaker taken as closed. */
static bool panic_candidate(const struct ctx *c, size_t i)
{
    const struct sw_route_backend_view *b = &c->v->backends[i];
    enum sw_route_excl e = c->plan->excluded[i];
    if ((e != SW_EXCL_BREAKER_OPEN && e != SW_EXCL_PROBE_BUSY) || !b->panic_free)
        return false;
    struct sw_route_backend_view closed = *b;
    closed.breaker = SW_BREAKER_CLOSED;
    return check_rest(c, &closed, false) == SW_EXCL_NONE;
}

/* Ranks panic candidates: for a sensitive request in an emergency, locals
 * before (masked) clouds; then the one whose latest failure is oldest (the
 * likeliest to have recovered: a breaker opened long ago by a fault that has
 * passed, rather than one still failing the requests it gets); ties keep the
 * configured order. */
static bool panic_before(const struct ctx *c, size_t a, size_t b)
{
    const struct sw_route_backend_view *va = &c->v->backends[a], *vb = &c->v->backends[b];
    if (c->mode == CLOUD_MASKED && va->tier != vb->tier)
        return va->tier == SW_TIER_LOCAL;
    return va->breaker_failed_ms < vb->breaker_failed_ms;
}

/* No backend is eligible. When some are out only because of their breakers,
 * the request goes to them anyway, best first (reason panic), instead of
 * being rejected while a tier may well have recovered. Privacy, capability,
 * queue, budget and rate checks still apply: only the breaker is overridden. */
static bool panic_plan(struct ctx *c)
{
    size_t order[SW_ROUTE_MAX_BACKENDS], n = 0;
    for (size_t i = 0; i < c->n; i++) {
        if (!panic_candidate(c, i))
            continue;
        size_t k = n++;
        while (k > 0 && panic_before(c, i, order[k - 1])) {
            order[k] = order[k - 1];
            k--;
        }
        order[k] = i;
    }
    for (size_t k = 0; k < n; k++) {
        bool masked = c->mode == CLOUD_MASKED && c->v->backends[order[k]].tier == SW_TIER_CLOUD;
        c->plan->attempts[c->plan->n++] =
            (struct sw_route_attempt){order[k], SW_REASON_PANIC, masked, true};
    }
    return n > 0;
}

/* The triggers that want the cloud for a request whose best local is l0;
 * T_LONG_PROMPT is none: it keeps the request on l0 with its own reason. */
enum trigger { T_NONE, T_LATENCY_CRITICAL, T_DEGRADED, T_COLD_START, T_OVERFLOW, T_LONG_PROMPT };

static const enum sw_reason trigger_reason[] = {
    [T_NONE] = SW_REASON_BASELINE,        [T_LATENCY_CRITICAL] = SW_REASON_LATENCY,
    [T_DEGRADED] = SW_REASON_LATENCY,     [T_COLD_START] = SW_REASON_COLD_START,
    [T_OVERFLOW] = SW_REASON_OVERFLOW,    [T_LONG_PROMPT] = SW_REASON_LONG_PROMPT,
};

/* The plan emptied and the context of one decision: the backends, the
 * request's needs and the time left to its deadline. */
static void init_ctx(struct ctx *c, const struct sw_route_facts *facts,
                     const struct sw_route_view *view, const struct sw_route_policy *policy,
                     int64_t now_ms, struct sw_route_plan *plan)
{
    plan->n = 0;
    plan->status = 0;
    plan->code = NULL;
    plan->message[0] = '\0';
    plan->retry_after_s = -1;
    c->f = facts;
    c->v = view;
    c->p = policy;
    c->plan = plan;
    c->n = view->n < SW_ROUTE_MAX_BACKENDS ? view->n : SW_ROUTE_MAX_BACKENDS;
    plan->n_backends = c->n;
    c->n_locals = c->n_clouds = 0;
    c->added = 0;
    c->needs_caps = facts->needs_tools || facts->needs_images;
    c->need_tokens = sw_sat_add_long(facts->prompt_tokens_est > 0 ? facts->prompt_tokens_est : 0,
                                     facts->max_tokens > 0 ? facts->max_tokens : 0);
    c->left_ms = facts->deadline_ms > 0 ? (double)(facts->deadline_ms - now_ms) : NO_DEADLINE;
}

/* Privacy: allows_cloud false is absolute; sensitive may go masked in a
 * declared emergency when masking exists. */
static void privacy_mode(struct ctx *c)
{
    const struct sw_route_facts *facts = c->f;
    c->banned_code = SW_EXCL_PRIVACY;
    c->resident = false;
    if (!facts->allows_cloud) {
        c->mode = CLOUD_BANNED;
    } else if (facts->sensitive && resident_cloud(facts, c->v, c->n)) {
        /* Residency: clouds in an allowed region take it unmasked, like any
         * request; every other cloud is out (even masked in an emergency). */
        c->mode = CLOUD_OPEN;
        c->resident = true;
    } else if (facts->sensitive) {
        c->mode = c->v->emergency && c->p->masking_available ? CLOUD_MASKED : CLOUD_BANNED;
        if (c->v->emergency && !c->p->masking_available)
            c->banned_code = SW_EXCL_NO_MASKING;
    } else {
        c->mode = CLOUD_OPEN;
    }
}

/* A latency-critical request: the backend with the lowest estimated first
 * token, local or a cloud that would take it (*target, *target_local);
 * T_LATENCY_CRITICAL when that is not the best local l0. */
static enum trigger latency_trigger(const struct ctx *c, size_t l0, size_t *target,
                                    bool *target_local)
{
    const struct sw_route_plan *plan = c->plan;
    double best = plan->est_ttft_ms[l0];
    size_t best_i = l0;
    bool best_local = true;
    for (size_t i = 1; i < c->n_locals; i++)
        if (plan->est_ttft_ms[c->locals[i]] < best) {
            best = plan->est_ttft_ms[c->locals[i]];
            best_i = c->locals[i];
        }
    for (size_t i = 0; i < c->n; i++)
        if ((c->would_cloud >> i & 1u) && plan->est_ttft_ms[i] < best) {
            best = plan->est_ttft_ms[i];
            best_i = i;
            best_local = false;
        }
    if (best_local && best_i == l0)
        return T_NONE;
    *target = best_i;
    *target_local = best_local;
    return T_LATENCY_CRITICAL;
}

/* Whether local backend b is idle: nothing of Spillway's in flight or
 * queued there (every replica's, with shared state) and no work its load
 * signal reports beyond that. */
static bool idle(const struct sw_route_backend_view *b)
{
    return b->in_flight <= 0 && b->queued <= 0 && !(b->outside_load > 0);
}

/* Whether an eligible local other than l0 is expected to hold a cached
 * prefix of this request: then its prefill is not what any tier must pay,
 * and a long prompt on l0 is no reason to stay. */
static bool cached_elsewhere(const struct ctx *c, size_t l0)
{
    for (size_t k = 0; k < c->n_locals; k++)
        if (c->locals[k] != l0 && c->v->backends[c->locals[k]].cached_tokens > 0)
            return true;
    return false;
}

/* The hard triggers: the best local l0 would break the request's latency or
 * deadline. Over the TTFT budget (not the deadline) on an idle l0 because
 * of the request's own prefill (the estimate less that prefill is within
 * the budget), it is T_LONG_PROMPT: there is no wait to avoid, and the
 * prefill is paid wherever the prompt goes. */
static enum trigger hard_trigger(const struct ctx *c, size_t l0)
{
    const struct sw_route_backend_view *b0 = &c->v->backends[l0];
    double eff0 = c->plan->est_ttft_ms[l0];
    double est0 = c->est_raw[l0];  /* no warm-up */
    long budget_ms = sw_route_budget_ms(c->f, c->p);
    double budget = budget_ms > 0 ? (double)budget_ms : NO_DEADLINE;
    if (b0->health == SW_HEALTH_DEGRADED)
        return T_DEGRADED;
    if ((b0->health == SW_HEALTH_COLD || b0->health == SW_HEALTH_WARMING) && eff0 > c->left_ms)
        return T_COLD_START;
    if (est0 > c->left_ms)
        return T_OVERFLOW;
    if (est0 > budget) {
        double prompt = c->f->prompt_tokens_est > 0 ? (double)c->f->prompt_tokens_est : 0;
        double prefill = sw_route_uncached(b0, prompt) *
                         sw_route_learned(b0->prefill_ms_per_token,
                                          SW_ROUTE_PRIOR_PREFILL_MS_PER_TOKEN);
        return idle(b0) && est0 - prefill <= budget && !cached_elsewhere(c, l0) ? T_LONG_PROMPT
                                                                               : T_OVERFLOW;
    }
    return T_NONE;
}

/* Only the key's or team's budget keeps the cloud out (the global cap does
 * not): its keep_local applies, whatever the cap's policy. */
static bool tenant_only_budget(const struct ctx *c)
{
    return c->f->tenant_budget_out &&
           (c->p->spend_cap_usd <= 0 || c->v->spend_usd < c->p->spend_cap_usd);
}

/* Local b would start a request at once, its breaker closed. */
static bool starts_closed(const struct sw_route_backend_view *b)
{
    return b->breaker == SW_BREAKER_CLOSED &&
           starts_now(b, b->slots > 0 && sw_route_may_wait(b));
}

/* A request no eligible local holds a prefix of takes, on a server caching
 * per slot, a free slot and drops what it held. Among the locals that start
 * it at once within the TTFT budget and the time left, the one whose next
 * prefix to drop was served longest ago goes first (the first local must be
 * one of them): the prefix a conversation still in progress left there
 * stays. True when it moved a local to the front. */
static bool place_unmatched(struct ctx *c, double budget)
{
    const struct sw_route_backend_view *bs = c->v->backends;
    size_t l0 = c->locals[0], best = 0;
    if (!starts_closed(&bs[l0]))
        return false;
    double oldest = bs[l0].drop_age_ms;
    for (size_t k = 1; k < c->n_locals; k++) {
        size_t i = c->locals[k];
        double est = c->plan->est_ttft_ms[i];
        if (starts_closed(&bs[i]) && bs[i].drop_age_ms > oldest && est <= c->left_ms &&
            est <= budget) {
            oldest = bs[i].drop_age_ms;
            best = k;
        }
    }
    if (best == 0)
        return false;
    size_t a = c->locals[best];
    memmove(&c->locals[1], &c->locals[0], best * sizeof c->locals[0]);
    c->locals[0] = a;
    return true;
}

/* Prefix affinity: the eligible local that served the longest prefix of
 * this request (view prefix_tokens; ties: the better ranked) goes first
 * when it is not first already, is neither degraded nor probing, and its
 * estimate (which prefills only what its cache is expected to miss) is
 * within the TTFT budget and the time left. Otherwise the least-wait order
 * stands: a box that holds the prefix but would break the budget does not
 * keep the request from another local or the cloud. True when it moved a
 * local to the front. Latency-critical requests keep their own rule. */
static bool affinity_first(struct ctx *c)
{
    const struct sw_route_backend_view *bs = c->v->backends;
    if (c->f->latency_critical || c->n_locals < 2)
        return false;
    size_t best = 0;
    long most = 0;
    for (size_t k = 0; k < c->n_locals; k++) {
        long t = bs[c->locals[k]].prefix_tokens;
        if (t > most) {
            most = t;
            best = k;
        }
    }
    long budget_ms = sw_route_budget_ms(c->f, c->p);
    double budget = budget_ms > 0 ? (double)budget_ms : NO_DEADLINE;
    if (most <= 0)
        return place_unmatched(c, budget);
    if (best == 0)
        return false;
    size_t a = c->locals[best];
    const struct sw_route_backend_view *b = &bs[a];
    double est = c->plan->est_ttft_ms[a];
    if (b->health == SW_HEALTH_DEGRADED || b->breaker == SW_BREAKER_HALF_OPEN ||
        est > c->left_ms || est > budget)
        return false;
    /* A holder the request would wait in line at (estimated at its full
     * prompt: the slot that frees may not hold the prefix) goes first only
     * when its estimate is within twice the prefill its cache could save of
     * the first local's: a box without the cache pays that prefill in this
     * request's first token and again in the slot time it takes from those
     * behind it. So prompts that share a prefix (one system prompt for every
     * user) do not pile up in one box's queue while another has free slots.
     * A request that follows a running one (follow_left_ms) waits in no line:
     * its estimate is that slot's. */
    if (!(b->follow_left_ms > 0) && sw_route_waits(b)) {
        double held = (double)b->prefix_tokens - sw_route_nonneg(b->cached_tokens);
        double saved = sw_route_nonneg(held) * sw_route_learned(b->prefill_ms_per_token,
                                                                SW_ROUTE_PRIOR_PREFILL_MS_PER_TOKEN);
        if (est - 2 * saved > c->plan->est_ttft_ms[c->locals[0]])
            return false;
    }
    memmove(&c->locals[1], &c->locals[0], best * sizeof c->locals[0]);
    c->locals[0] = a;
    return true;
}

/* The cloud is wanted but cannot take the request (not open, or no cloud
 * left): it stays on a local, or is shed when the cap says so. */
static void cloud_refused(struct ctx *c, size_t l0, enum trigger hard,
                          enum sw_reason local_reason)
{
    size_t d;
    /* Sensitive in an emergency: local still meets the deadline, so it stays
     * local; the masked clouds only back it up. */
    if (c->mode == CLOUD_MASKED) {
        primary_local(c, l0, SW_REASON_PRIVACY);
        return;
    }
    switch (cloud_block(c)) {
    case BLOCK_NONE:            /* not reached: open clouds were taken above */
    case BLOCK_PRIVACY:
        primary_local(c, l0, SW_REASON_PRIVACY);
        return;
    case BLOCK_BUDGET:
        /* A latency-critical request that local serves without a hard trigger
         * (an idle box's long prompt is none) only lost its faster cloud: it
         * stays local under every policy. */
        if (hard == T_NONE || hard == T_LONG_PROMPT || tenant_only_budget(c)) {
            primary_local(c, l0, SW_REASON_BUDGET);
            return;
        }
        if (c->p->on_cap == SW_CAP_SHED) {
            reject(c->plan, 429, SW_ROUTE_CODE_BUDGET, budget_retry_after(c),
                   "The cloud spend cap is reached and the local backends are too busy to "
                   "serve this request within its latency budget; retry later.");
            return;
        }
        if (c->p->on_cap == SW_CAP_DEGRADE && degrade_target(c, &d)) {
            primary_local(c, d, SW_REASON_BUDGET);
            return;
        }
        primary_local(c, l0, SW_REASON_BUDGET);
        return;
    case BLOCK_BREAKER:
        primary_local(c, l0, SW_REASON_BREAKER);
        return;
    case BLOCK_FAILED:
        primary_local(c, l0, SW_REASON_FALLBACK);
        return;
    case BLOCK_OTHER:
        primary_local(c, l0, local_reason);
        return;
    }
}

void sw_route_decide(const struct sw_route_facts *facts, const struct sw_route_view *view,
                     const struct sw_route_policy *policy, int64_t now_ms,
                     struct sw_route_plan *plan)
{
    struct ctx c;

    init_ctx(&c, facts, view, policy, now_ms, plan);
    privacy_mode(&c);
    eligibility(&c);

    if (c.left_ms <= 0) {
        reject(plan, 504, SW_ROUTE_CODE_DEADLINE, -1,
               "The request's deadline passed before a backend could be chosen.");
        return;
    }
    if (c.n == 0) {
        reject(plan, 503, SW_ROUTE_CODE_ALL_FAILED, -1, "This model has no backend.");
        return;
    }
    if (c.n_locals == 0 && c.n_clouds == 0 && panic_plan(&c))
        return;
    if (c.n_locals == 0) {
        no_local(&c);
        return;
    }

    bool affinity = affinity_first(&c);
    size_t l0 = c.locals[0];
    double eff0 = plan->est_ttft_ms[l0];
    enum sw_reason local_reason = facts->exclude ? SW_REASON_FALLBACK : SW_REASON_BASELINE;

    /* Masked cloud (sensitive, emergency): only when local cannot meet the
     * deadline; otherwise it backs local up as a masked fallback. */
    if (c.mode == CLOUD_MASKED && c.n_clouds > 0 && eff0 > c.left_ms) {
        primary_cloud(&c, c.clouds[0], SW_REASON_EMERGENCY);
        return;
    }

    /* Triggers, first that applies. */
    size_t target = 0;          /* the cloud (or local) a latency-critical request goes to */
    bool target_local = false;
    enum trigger t = facts->latency_critical ? latency_trigger(&c, l0, &target, &target_local)
                                             : T_NONE;
    enum trigger hard = hard_trigger(&c, l0);
    if (t == T_NONE)
        t = hard;

    if (t == T_NONE || t == T_LONG_PROMPT) {
        primary_local(&c, l0, t == T_NONE || facts->exclude
                                  ? (affinity && !facts->exclude ? SW_REASON_AFFINITY
                                                                 : local_reason)
                                  : SW_REASON_LONG_PROMPT);
        return;
    }
    if (t == T_LATENCY_CRITICAL && target_local) {
        primary_local(&c, target, SW_REASON_LATENCY);
        return;
    }
    if (c.mode == CLOUD_OPEN && c.n_clouds > 0) {
        size_t cl = c.clouds[0];
        if (t == T_LATENCY_CRITICAL && plan->excluded[target] == SW_EXCL_NONE)
            cl = target;
        primary_cloud(&c, cl, trigger_reason[t]);
        return;
    }
    cloud_refused(&c, l0, hard,
                  hard == T_LONG_PROMPT && !facts->exclude ? SW_REASON_LONG_PROMPT : local_reason);
}

bool sw_route_moves_to(const struct sw_route_view *view, const struct sw_route_plan *plan,
                       double waited_ms, double est_here_ms, double check_ms)
{
    if (plan->n == 0 || plan->attempts[0].backend >= view->n)
        return false;
    size_t j = plan->attempts[0].backend;
    const struct sw_route_backend_view *o = &view->backends[j];
    return o->tier == SW_TIER_LOCAL && o->slots > 0 && sw_route_ahead(o) <= 0 &&
           sw_route_move_local(waited_ms, est_here_ms, plan->est_ttft_ms[j], check_ms);
}
