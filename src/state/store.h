/* The shared-state store: what an attempt must ask of the state every
 * replica shares before it is sent (a spend reservation, a replica-wide slot
 * lease, the half-open probe, the provider's request and token buckets), and
 * gives back once it is over. Two implementations behind one struct of
 * function pointers, so the relay calls one API and never asks which one
 * serves:
 *
 *   memory   one gateway (no state.redis): the local claim (state/claim.h)
 *            already holds everything; admit answers SW_STORE_OK at once,
 *            release and the announcements do nothing
 *   redis    state.redis (state/rstate.h, docs/scaling.md): admit may answer
 *            later through the hold's callback
 *
 * sw_live_shared_new starts with the memory store; sw_rstate_new installs the
 * Redis one and sw_rstate_free puts the memory one back. */
#ifndef SW_STATE_STORE_H
#define SW_STATE_STORE_H

#include <stdbool.h>
#include <stddef.h>

struct sw_live;
struct sw_prefix;
struct sw_store_op;

enum sw_store_verdict {
    SW_STORE_OK,           /* granted: send */
    SW_STORE_SPEND_FULL,   /* the shared cap (or no shared counter) refuses the cost */
    SW_STORE_NO_SLOT,      /* every slot of the backend is leased: wait and ask again */
    SW_STORE_PROBE_TAKEN,  /* another replica holds the half-open probe */
    SW_STORE_RATE_LIMITED, /* the provider's rpm/tpm, counted over every replica, is spent */
};

/* What one attempt holds in the store; zeroed by the caller before first use.
 * The caller sets cb before admit; the store fills the rest. */
struct sw_store_hold {
    struct sw_store_op *op;     /* an admit in flight (NULL: none) */
    void (*cb)(struct sw_store_hold *h, enum sw_store_verdict v);
    char id[48];                /* this attempt's id in the store */
    size_t be;                  /* config index of the backend */
    double est_usd;             /* > 0: a reservation is (asked to be) held */
    long bucket_tokens;         /* > 0 or a request: taken from the shared token bucket */
    bool spend, lease, probe, bucket; /* held in the store */
    bool fallback_lease;        /* a slot of the fallback share (store unreachable) */
    bool unshared;              /* the verdict was given without the shared state */
};

/* One implementation. ctx is the implementation's own (NULL for memory). */
struct sw_store_ops {
    const char *name;           /* "memory", "redis": GET /admin/state */
    bool shared;                /* replicas share it (the state_shared gauge) */
    /* Asks for what an attempt on backend be needs: a spend reservation of
     * est_usd (> 0 when the cap is in force), a lease (local backend), the
     * half-open probe (probe), a request and `tokens` from the token bucket
     * (cloud backend with rpm or tpm). Returns -1 when the verdict comes
     * later through h->cb, else the verdict now. */
    int (*admit)(void *ctx, struct sw_live *live, struct sw_store_hold *h, size_t be,
                 double est_usd, bool probe, long tokens);
    /* The attempt is over: gives back what h holds (settling actual_usd; the
     * bucket on actual_tokens when sent, in full when not) and forgets a
     * pending admit. */
    void (*release)(void *ctx, struct sw_live *live, struct sw_store_hold *h, double actual_usd,
                    bool sent, long actual_tokens);
    /* After an outcome on backend be: announces its breaker when it opened or closed. */
    void (*breaker_check)(void *ctx, struct sw_live *live, size_t be);
    /* The admin API closed backend be's breaker: closed everywhere. */
    void (*breaker_reset)(void *ctx, struct sw_live *live, size_t be);
    /* The admin API changed the emergency flag or the thresholds. */
    void (*flags_changed)(void *ctx);
    /* The store cannot be reached now: the spend cap fails closed. */
    bool (*degraded)(const void *ctx);
    /* Local backend be now holds prefix p (already in this replica's
     * table): tells the other replicas; NULL or unreachable: local only. */
    void (*affinity_put)(void *ctx, struct sw_live *live, size_t be, const struct sw_prefix *p);
};

struct sw_store {
    const struct sw_store_ops *ops; /* never NULL once sw_live_shared_new returned */
    void *ctx;
};

/* The in-memory store: one gateway, nothing shared. */
extern const struct sw_store_ops sw_store_memory_ops;
static inline struct sw_store sw_store_memory(void)
{
    return (struct sw_store){&sw_store_memory_ops, NULL};
}

static inline int sw_store_admit(const struct sw_store *s, struct sw_live *live,
                                 struct sw_store_hold *h, size_t be, double est_usd, bool probe,
                                 long tokens)
{
    return s->ops->admit(s->ctx, live, h, be, est_usd, probe, tokens);
}
static inline void sw_store_release(const struct sw_store *s, struct sw_live *live,
                                    struct sw_store_hold *h, double actual_usd, bool sent,
                                    long actual_tokens)
{
    s->ops->release(s->ctx, live, h, actual_usd, sent, actual_tokens);
}
static inline void sw_store_breaker_check(const struct sw_store *s, struct sw_live *live,
                                          size_t be)
{
    s->ops->breaker_check(s->ctx, live, be);
}
static inline void sw_store_breaker_reset(const struct sw_store *s, struct sw_live *live,
                                          size_t be)
{
    s->ops->breaker_reset(s->ctx, live, be);
}
static inline void sw_store_flags_changed(const struct sw_store *s)
{
    s->ops->flags_changed(s->ctx);
}
static inline bool sw_store_degraded(const struct sw_store *s)
{
    return s->ops->degraded(s->ctx);
}
static inline void sw_store_affinity_put(const struct sw_store *s, struct sw_live *live,
                                         size_t be, const struct sw_prefix *p)
{
    if (s->ops->affinity_put)
        s->ops->affinity_put(s->ctx, live, be, p);
}
/* For GET /admin/state: the store's name when degraded, NULL otherwise. */
static inline const char *sw_store_degraded_reason(const struct sw_store *s)
{
    return sw_store_degraded(s) ? s->ops->name : NULL;
}

#endif
