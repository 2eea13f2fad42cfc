/* The ledgers of keys and teams (docs/scaling.md "Keys and teams"): per key
 * and per team, the cloud spend in its budget window with the reservations
 * still open, and the request and token buckets of its rpm and tpm.
 *
 *   admit    once per request, before routing: a request from each bucket
 *            (and its tokens, prompt estimate + max_tokens), all or none;
 *            says whether a budget is already spent
 *   reserve  before a cloud attempt: the worst-case cost held on the key's
 *            and the team's budget, both or neither, refused when it would
 *            take either past its budget
 *   settle   after the attempt: the reservation dropped, the actual cost
 *            added to the window (money spent is never lost)
 *
 * In memory when the gateway has no state.redis (one replica: exact); with
 * state.redis the same steps are Lua scripts on Redis (state/rstate.h's
 * sw_rstate_eval), atomic over every ledger they touch, so N replicas
 * together never take a budget past its limit by more than what one
 * reservation under-estimated. A reservation carries a TTL (the request
 * timeout plus the lease TTL) so a dead replica's reservations come back.
 * With Redis unreachable a reservation is refused (budgets fail closed for
 * the cloud; local service goes on) and the buckets fall back to this
 * replica's own.
 *
 * Every ledger also counts, in memory, what this replica did for it
 * (requests, settled USD, refusals): GET /admin/keys/{id} and /metrics read
 * those. The table is bounded (SW_TENANT_MAX_LEDGERS); past it a request
 * that needs a ledger is refused the cloud (fails closed). */
#ifndef SW_STATE_TENANT_H
#define SW_STATE_TENANT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "route/tenant.h"

#define SW_TENANT_MAX_LEDGERS 4096
#define SW_TENANT_ID_MAX 80         /* "k:" or "t:" and a 64-byte name */

struct sw_tenant;
struct sw_tenant_op;
struct sw_rstate;

/* One ledger a request is held to. */
struct sw_tenant_ledger_ask {
    char id[SW_TENANT_ID_MAX];      /* "k:<key_id>" or "t:<team>" */
    const struct sw_config_tenancy *rules;  /* borrowed (the snapshot's) */
};

/* What one request asks: its key's ledger and its team's (if any). */
struct sw_tenant_ask {
    struct sw_tenant_ledger_ask l[2];
    size_t n;
    long tokens;                    /* tpm cost: prompt estimate + max_tokens */
};

enum sw_tenant_verdict {
    SW_TENANT_OK,
    SW_TENANT_RATE_LIMITED,         /* admit: an rpm or tpm bucket is empty */
    SW_TENANT_OVER_BUDGET,          /* reserve: the cost does not fit a budget */
    SW_TENANT_UNAVAILABLE,          /* reserve: no shared ledger now (fails closed) */
};

/* A bucket's state for x-ratelimit-*: limit 0 when that limit is not set. */
struct sw_tenant_rate {
    long limit, remaining;
    int64_t reset_ms;
};

struct sw_tenant_answer {
    enum sw_tenant_verdict v;
    bool budget_spent;              /* admit: a budget of the key or team is used up */
    bool unavailable;               /* admit: no shared ledger now (budgets count as spent) */
    size_t which;                   /* the ledger (index in ask->l) that refused */
    bool tokens;                    /* rate limited: by tpm (else rpm) */
    int64_t retry_ms;               /* refused: when to try again */
    struct sw_tenant_rate req, tok; /* the tightest ledger's buckets after this request */
};

/* One request's dealings with the ledgers; zeroed by the caller, who sets
 * cb before an admit or reserve that may answer later. */
struct sw_tenant_wait {
    struct sw_tenant_op *op;        /* pending (NULL: none) */
    void (*cb)(struct sw_tenant_wait *w, const struct sw_tenant_answer *a);
    struct sw_tenant_ask ask;       /* copied at admit */
    bool held;                      /* a reservation is held */
    bool shared;                    /* ... in Redis */
    double resv_usd;
    char resv_id[48];
};

struct sw_tenant *sw_tenant_new(void);
void sw_tenant_free(struct sw_tenant *t);
/* The shared ledgers (NULL: in memory); the replica's name prefixes ids. */
void sw_tenant_set_redis(struct sw_tenant *t, struct sw_rstate *rs, const char *prefix,
                         long resv_ttl_ms, const char *replica);

/* Fills ask from a key (and its team in cfg); a NULL key leaves ask->n 0.
 * A key whose rules limit nothing still has its ledger: its usage counts. */
void sw_tenant_ask_for(const struct sw_config *cfg, const struct sw_config_key *key, long tokens,
                       struct sw_tenant_ask *ask);

/* Admits one request (w->ask set). Returns 1 with *out filled now, or 0
 * when the answer comes through w->cb. */
int sw_tenant_admit(struct sw_tenant *t, struct sw_tenant_wait *w, int64_t wall_ms,
                    struct sw_tenant_answer *out);

/* Reserves est_usd on every budget of w->ask before a cloud attempt.
 * Returns 1 with *out filled now, or 0 when it comes through w->cb. With no
 * budget in w->ask: 1 and OK at once. */
int sw_tenant_reserve(struct sw_tenant *t, struct sw_tenant_wait *w, double est_usd,
                      int64_t wall_ms, struct sw_tenant_answer *out);

/* The attempt is over: drops what w holds and counts actual_usd (>= 0) on the
 * key's and team's ledgers (an attempt without a reservation is counted too).
 * Once per attempt: each call counts its cost. */
void sw_tenant_settle(struct sw_tenant *t, struct sw_tenant_wait *w, double actual_usd,
                      int64_t wall_ms);

/* Forgets a pending admit or reserve (the request is gone); a reservation
 * granted after this is given back. Settle first for one already held. */
void sw_tenant_cancel(struct sw_tenant *t, struct sw_tenant_wait *w);

/* What this replica counted for a ledger id ("k:..."/"t:..."), and (memory
 * ledgers only, exact on one replica) the spend in the current window. */
struct sw_tenant_stats {
    bool found;
    double spent_usd_total;         /* settled by this replica, ever */
    double window_usd;              /* memory: settled in the window now; shared: as the
                                       last admission on this replica read it; -1 unknown */
    double reserved_usd;            /* memory: held now; -1 shared */
    double max_reserved_usd;        /* the largest reservation this replica was granted */
    uint64_t requests, rate_limited, budget_refused;
};
void sw_tenant_stats(struct sw_tenant *t, const char *id, const struct sw_config_tenancy *rules,
                     int64_t wall_ms, struct sw_tenant_stats *out);

/* Calls fn for each ledger id this replica knows (for /metrics). */
void sw_tenant_each(struct sw_tenant *t,
                    void (*fn)(void *ud, const char *id, const struct sw_tenant_stats *s), void *ud);

/* Redis could not be used for a ledger step (counted for /metrics). */
uint64_t sw_tenant_degraded_total(const struct sw_tenant *t);

#endif
