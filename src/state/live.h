/* The gateway's live routing state: for every backend its
 * breaker, rate buckets, latency window, learned service rates, local queue
 * and health; the cloud spend window; the emergency flag. It turns that state
 * into the router's view for one request (sw_live_view) and takes the
 * outcomes of attempts back (sw_live_on_*). Clock values come in as
 * arguments, so this stays testable with a fake clock.
 *
 * This is the in-memory state; with state.redis the spend window, local
 * slots, breakers and flags are also shared by the replicas (state/rstate.h):
 * the remote_* fields hold what the other replicas do, as last read. */
#ifndef SW_STATE_LIVE_H
#define SW_STATE_LIVE_H

#include <stdbool.h>
#include <stdint.h>

#include "config/config.h"
#include "pii/pii.h"
#include "route/breaker.h"
#include "route/affinity.h"
#include "route/bucket.h"
#include "route/ewma.h"
#include "route/latwin.h"
#include "route/outlen.h"
#include "route/prefill.h"
#include "route/estimate.h"
#include "route/view.h"
#include "route/spend.h"
#include "state/localq.h"
#include "state/piiallow.h"
#include "state/respstore.h"
#include "state/store.h"

/* Until a backend has been seen loading, how long a cold start is assumed to take. */
#define SW_LIVE_PRIOR_LOAD_MS 10000.0

/* A request holding a local slot: since when, and its size (max_tokens_given:
 * the request named max_tokens, else max_tokens is the gateway's default).
 * unmatched: it came with no prefix of it expected on the box (none served
 * there, or it waited and got whichever slot freed first), so on a server
 * caching per slot it may hold the slot that kept another's prefix. */
struct sw_claim;

struct sw_live_busy {
    int64_t since_ms;
    long prompt_tokens, max_tokens;
    bool max_tokens_given;
    bool unmatched;
    /* The request's whole prompt as a prefix identity (the last boundary of
     * its struct sw_prefix; tail_tokens 0: none given): a later request
     * whose prefix has that boundary extends it, and finds it in this slot
     * once this request ends (sw_live_prefix_view, "follow"). */
    uint64_t tail_hash;
    long tail_tokens;
    /* The record in the backend's list only: the claim parked to take this
     * slot when this request ends (sw_claim follow), NULL: none. Borrowed. */
    struct sw_claim *follower;
    /* Where the holder keeps this record's position in the backend's list,
     * kept right as records move (NULL: found by its values instead). */
    size_t *at;
};

/* One backend's state. It outlives config reloads: a new snapshot whose
 * backend has the same name, tier and url takes the same state (breaker,
 * queue with its waiters, learned rates) with the new limits applied. */
struct sw_live_backend {
    int refs;                   /* snapshots that use it */
    char *name, *url;           /* identity across reloads */
    enum sw_tier tier;
    struct sw_breaker breaker;
    struct sw_bucket bucket;
    struct sw_latwin latwin;
    struct sw_ewma ewma;
    struct sw_prefill prefill;  /* the server's prefill figures and the config's prior: the
                                   view's rate is sw_prefill_ms_per_token(prefill, ewma) */
    struct sw_outlen outlen;    /* output / max_tokens of answers that named max_tokens */
    struct sw_localq q;
    enum sw_health health;      /* from health checks and transport errors */
    int64_t warming_since_ms;   /* WARMING: when our warm-up request went out */
    double load_ms;             /* learned time a cold start takes */
    double rtt_ms;              /* last health-check round trip */
    /* When each request holding a slot of q got it (unordered; n_busy of
     * cap_busy used), for the wait estimate; grant_ms is the clock of the
     * release that is granting slots right now (sw_claim sets it). */
    struct sw_live_busy *busy;
    size_t n_busy, cap_busy;
    size_t n_unmatched;         /* records of busy that are unmatched */
    /* Records of busy with a tail, by the low six bits of their tail_hash:
     * a request none of whose prefix hashes has a record in its bucket
     * extends no running request (sw_live_busy_extended walks nothing). */
    uint16_t tails[64];
    long n_parked;              /* records of busy with a follower (sw_claim follow) */
    int64_t grant_ms;
    /* Why the last attempt, health check or start-up check failed, for
     * operators (GET /admin/state); "" after a success. */
    char last_error[240];
    /* The server's last load report (backends[].load); at_ms 0: none yet. */
    struct {
        double processing, waiting;
        bool saturated;
        long own;               /* Spillway's in-flight requests there when the poll was
                                   sent: the server's count includes them */
        double outside;         /* sw_live_outside_load of the latest samples */
        double prev_outside;    /* the latest sample's own estimate */
        int64_t at_ms;          /* when it was read */
        char error[160];        /* why the latest poll failed; "" after a success */
    } load;
    /* Shared state (state.redis), as the last sync read it: leases held by
     * the other replicas (this replica's own slot holders are q.in_flight,
     * always current), requests the other replicas queue, and the
     * open-until of the breaker this replica last announced (wall ms; 0:
     * closed). */
    long remote_in_flight;
    long remote_queued;
    int64_t announced_open_until;
    /* Prefix affinity: the name's id in the shared table, and the share of
     * a matched prefix the server reported as cached (moving averages; [0]
     * for requests that started with no work there that may hold the slot
     * keeping their prefix, [1] with such work running (sw_live_cache_busy):
     * a server caching per slot then gives a slot that may not hold it;
     * n_cache 0: no report, the estimate prefills the whole prompt). */
    uint64_t affinity_id;
    struct sw_affinity aff;     /* local: the prefixes it served recently (route/affinity.h),
                                   from this replica's answers and, with state.redis, the
                                   other replicas' announcements */
    double cache_hit[2];
    uint64_t n_cache[2];
    bool cache_per_answer;      /* its answers report cached tokens: its /metrics rate unused */
};

/* Process-wide state that no reload resets: spend, emergency and the runtime
 * threshold overrides of the admin API. Counters of finished requests
 * (rejections, PII outcomes) are not kept here: the metrics registry holds
 * them (sw_obs_record), and GET /admin/state reads them from there. */
struct sw_rstate;
struct sw_tenant;
struct sw_vkeys;

struct sw_live_shared {
    struct sw_spend spend;      /* on wall-clock time: see sw_live_wall_ms */
    int64_t wall_offset_ms;     /* wall-clock ms minus the monotonic clock, at start */
    bool emergency;
    char emergency_reason[200];
    /* Runtime overrides (PUT /admin/thresholds); until the next reload. */
    long ttft_budget_ms;        /* 0: the config's */
    double spend_cap_usd;       /* < 0: the config's */
    /* Shared state (state.redis; docs/scaling.md). */
    struct sw_store store;      /* what attempts ask of the shared state (state/store.h):
                                   the memory store, or Redis' while rstate is set */
    struct sw_rstate *rstate;   /* NULL: in memory only (the view counts no other replica) */
    bool remote_degraded;       /* Redis unreachable or slow: cap as if reached */
    double remote_spend_usd;    /* every replica's spend in the window, last read */
    /* The Responses API's stored conversations (state/respstore.h): owned,
     * freed with the shared state; NULL until the daemon opens one (memory,
     * or Redis with state.redis). Its limits follow every snapshot. */
    struct sw_respstore *resp;
    /* The ledgers of keys and teams (state/tenant.h) and the runtime keys
     * (state/vkeys.h): the daemon's, set after sw_live_shared_new; on Redis
     * while rstate is set. */
    struct sw_tenant *tenant;
    struct sw_vkeys *vkeys;
    bool affinity_on;           /* routing.affinity.enabled (the tables are per backend) */
};

/* One config snapshot's view of the state: reference-counted, so requests
 * finish on the snapshot they started with. */
struct sw_live {
    int refs;
    struct sw_config *cfg;      /* referenced; b[i] is cfg->backends[i]'s state */
    struct sw_live_backend **b;
    size_t n;
    struct sw_live_shared *g;   /* borrowed: owned by the daemon */
    struct sw_pii_engine *pii;  /* owned; NULL: no masking available */
    struct sw_piiallow pii_allow;   /* the engines of the known-safe lists (sw_live_pii) */
    /* Per backend, the view's fields that come from the config (the rest
     * zero): a snapshot starts each backend's view from a copy of it. */
    struct sw_route_backend_view *tmpl;
    uint8_t *tflags;            /* per backend: which of its view's fields need more than
                                   its state (SW_LIVE_T_*) */
};

#define SW_LIVE_T_RPM   1u      /* a request bucket */
#define SW_LIVE_T_TPM   2u      /* a token bucket */
#define SW_LIVE_T_CLOUD 4u      /* no slots, no remote leases, no load signal */
#define SW_LIVE_T_LOAD  8u      /* a load signal */

/* now_ms is the monotonic clock every other call passes; wall_ms the wall
 * clock at the same moment. NULL on allocation failure. */
struct sw_live_shared *sw_live_shared_new(const struct sw_config *cfg, int64_t now_ms,
                                          int64_t wall_ms);
/* Frees g and its response store (pending Redis calls answer SW_EUNAVAILABLE). */
void sw_live_shared_free(struct sw_live_shared *g);

/* The response store's limits in cfg (responses.store_*). sw_live_new
 * applies them to g->resp, so a reload changes them. */
struct sw_respstore_limits sw_live_resp_limits(const struct sw_config *cfg);

/* A snapshot for cfg (referenced). Backends matching one of prev's (may be
 * NULL) keep their state; takes ownership of pii. NULL on allocation failure
 * (pii is then freed). */
struct sw_live *sw_live_new(struct sw_config *cfg, struct sw_live_shared *g,
                            const struct sw_live *prev, struct sw_pii_engine *pii,
                            int64_t now_ms);
/* The PII engine for a request of `key` (NULL: auth off) for `model`: the
 * one that allows their known-safe lists (state/piiallow.h). */
const struct sw_pii_engine *sw_live_pii(const struct sw_live *l, const struct sw_config_key *key,
                                        const struct sw_config_model *model);
struct sw_live *sw_live_ref(struct sw_live *l);
void sw_live_unref(struct sw_live *l);

/* The spend window's clock: wall time, so an hour or day window is a UTC hour
 * or day (and replicas sharing a spend counter agree on it). */
static inline int64_t sw_live_wall_ms(const struct sw_live *l, int64_t now_ms)
{
    return now_ms + l->g->wall_offset_ms;
}

/* The view and policy for one request to `model`. The view lists the model's
 * backends in configured order, then the spend cap's degrade backend if it is
 * not among them; map[i] is the config index of view entry i. */
struct sw_live_snapshot {
    struct sw_route_backend_view backends[SW_ROUTE_MAX_BACKENDS];
    size_t map[SW_ROUTE_MAX_BACKENDS];
    struct sw_route_view view;
    struct sw_route_policy policy;
};

void sw_live_snapshot(struct sw_live *l, const struct sw_config_model *model, int64_t now_ms,
                      struct sw_live_snapshot *out);

/* Prefix affinity: sets each local backend's prefix_tokens (the longest
 * prefix of p it served recently) and cached_tokens (that times its
 * learned hit share in the box's state: the tokens it is expected to find
 * cached; 0 where the request would wait for a slot: the slot that frees
 * may not be the one holding it) in a snapshot taken for the request. Nothing when affinity is off or p has no identity. */
void sw_live_prefix_view(struct sw_live *l, const struct sw_prefix *p, int64_t now_ms,
                         struct sw_live_snapshot *snap);
/* Whether a request for model m (of cfg) needs its prefix identity: only
 * prefix affinity reads it, and only on a local backend; without both its
 * hashing (the whole conversation) is skipped. */
bool sw_live_prefix_wanted(const struct sw_live *l, const struct sw_config *cfg,
                           const struct sw_config_model *m);
/* Local backend i answered a request of identity p: it holds that prefix
 * now (through the store: every replica learns it with state.redis). */
void sw_live_prefix_served(struct sw_live *l, size_t i, const struct sw_prefix *p,
                           int64_t now_ms);
/* What backend i reported of its prefix cache for one answer: `reported`
 * prompt tokens cached (< 0: it reported nothing) where the table predicted
 * `predicted` (0 for a request that waited for its slot: it teaches
 * nothing), starting in the busy state (sw_live_cache_busy) or not. A report
 * teaches that state's hit share (at most 1); no report keeps the estimate
 * at the full prompt. */
void sw_live_on_cache(struct sw_live *l, size_t i, long predicted, long reported, bool busy);
/* Backend i's own prefix-cache hit rate over a poll interval (its
 * /metrics: vLLM's counters, upstream/loadsig.h), for a server whose
 * answers report no cached tokens: a sample of both states' hit share (its
 * cache is not per slot). It counts each prompt's new tokens as misses, so
 * it is at most the share of a matched prefix: an estimate that errs
 * towards prefilling. Ignored once an answer of i reported its figure. */
void sw_live_on_cache_rate(struct sw_live *l, size_t i, double rate);
/* The share of a matched prefix backend i is expected to find cached, for
 * a request starting there in the busy state (sw_live_cache_busy) or not. */
double sw_live_cache_hit(const struct sw_live *l, size_t i, bool busy);
/* Whether a request starting on local backend i (v: its view in the
 * request's snapshot) may find the slot that keeps its prefix taken: more
 * than one slot, and running there is a request of this replica that came
 * unmatched (struct sw_live_busy), or work this replica did not send
 * (another replica's, the server's reported outside load). Requests that
 * came matched run in the slots holding their own prefixes: beside them a
 * request finds its slot free, as on an idle box. */
bool sw_live_cache_busy(const struct sw_live *l, size_t i, const struct sw_route_backend_view *v);
/* Entries held in every backend's affinity table (GET /admin/state). */
size_t sw_live_affinity_entries(const struct sw_live *l);
/* Weight of a new hit-share sample. */
#define SW_LIVE_CACHE_ALPHA 0.3

/* Cloud spend in the current window (with reservations), and the cap in
 * force: the admin override, else the config's (0: none). */
double sw_live_spend_usd(struct sw_live *l, int64_t now_ms);
double sw_live_spend_cap_usd(const struct sw_live *l);

/* A load sample older than this many poll intervals is stale. */
#define SW_LIVE_LOAD_STALE_POLLS 4

/* A load poll of backend i answered (error NULL) or failed (error says why;
 * the last values are kept for operators but no longer used). own: Spillway's
 * in-flight requests on it when the poll was sent (the server's counts
 * include those; one sent later may not have reached it yet). */
void sw_live_on_load(struct sw_live *l, size_t i, int64_t now_ms, double processing,
                     double waiting, bool saturated, long own, const char *error);
/* A load poll of backend i's metrics carried prefill figures
 * (upstream/loadsig.h, sw_load_parse_prefill). */
void sw_live_on_prefill(struct sw_live *l, size_t i, const struct sw_prefill_report *r);
/* A timed warm-up request to backend i answered (route/prefill.h,
 * sw_prefill_warmup), with the backend's health-check RTT and its learned
 * decode speed (none before it learned one). Returns whether it taught. */
bool sw_live_on_prefill_warmup(struct sw_live *l, size_t i, double elapsed_ms, long prompt_tokens,
                               long output_tokens);
/* Work on backend i's server beyond Spillway's in-flight requests there:
 * processing + waiting - Spillway's in_flight when the poll was sent (at
 * least 0), the larger of the last two samples; the slot count when the
 * server reports saturation; 0 without a fresh sample. */
double sw_live_outside_load(const struct sw_live *l, size_t i, int64_t now_ms);
/* Backend i has a load source but no fresh sample (none yet, too old, or the
 * latest poll failed): the router uses Spillway's own queue alone. */
bool sw_live_load_stale(const struct sw_live *l, size_t i, int64_t now_ms);
/* A request took a slot of b / gave it back (the same record). Without room
 * to record it (allocation failed) the view falls back to the fluid
 * estimate. */
void sw_live_busy_add(struct sw_live_backend *b, const struct sw_live_busy *r);
void sw_live_busy_remove(struct sw_live_backend *b, const struct sw_live_busy *r);
/* b's record of r (the same since, size and tail), NULL: none. */
struct sw_live_busy *sw_live_busy_find(struct sw_live_backend *b, const struct sw_live_busy *r);
/* The request running on b whose whole prompt (its tail) is the longest
 * that p extends: p has a boundary of the same hash (its tokens are each
 * request's own estimate from its bytes, so they may differ); NULL: none. */
struct sw_live_busy *sw_live_busy_extended(struct sw_live_backend *b, const struct sw_prefix *p);

/* Outcome of one attempt on backend i. ttft_ms < 0 when no first byte came. */
void sw_live_on_success(struct sw_live *l, size_t i, int64_t now_ms, long prompt_tokens,
                        double ttft_ms, double decode_ms, long output_tokens);
void sw_live_on_failure(struct sw_live *l, size_t i, int64_t now_ms, int http_status,
                        int transport_err, long retry_after_s);
/* Records why backend i failed (a start-up or health check); "" clears it. */
void sw_live_set_error(struct sw_live *l, size_t i, const char *msg);
/* A latency probe (a one-token request the health checker sends to a
 * degraded backend, which gets no traffic) took ttft_ms: the window sees
 * whether it recovered. */
void sw_live_on_probe(struct sw_live *l, size_t i, int64_t now_ms, double ttft_ms);
/* A warm-up request went to a cold backend i: it is WARMING from now. */
void sw_live_on_warmup(struct sw_live *l, size_t i, int64_t now_ms);
/* A health check answered: status 200 up, 503 cold (or still warming), 0 unreachable. */
void sw_live_on_health(struct sw_live *l, size_t i, int64_t now_ms, int status, double rtt_ms);

#endif
