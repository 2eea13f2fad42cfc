/* Shared state on Redis (state.redis; docs/scaling.md): what N replicas must
 * agree on, kept in one Redis, over two rconn.c connections (plain TCP or
 * TLS: rediss://) on the daemon's event loop. Every round trip has a timeout
 * (state.timeout_ms); read-modify-writes are Lua scripts (EVALSHA, EVAL when
 * the server lost them).
 *
 *   spend     reserve before dispatch, settle after, against the cap, atomically
 *   slots     a local backend's slots are leases (TTL, renewed while held)
 *   breakers  an open breaker is announced (stored + pub/sub); one probe (SET NX PX)
 *   flags     emergency, ttft_budget_ms, spend_cap_usd: stored + pub/sub
 *   buckets   a cloud backend's rpm/tpm (the provider account's) over all replicas
 *
 * When Redis is unreachable or slow the replica keeps serving: the spend cap
 * fails closed (as if reached), local slots fall back to state.fallback_share
 * of each backend's slots, breakers and flags are this replica's; it
 * reconnects with backoff and resyncs. */
#ifndef SW_STATE_RSTATE_H
#define SW_STATE_RSTATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "state/live.h"
#include "state/store.h"

struct event_base;
struct sw_rstate;

/* NULL when cfg has no state.redis (or on allocation failure: check cfg).
 * Installs itself as g->store (the Redis implementation of state/store.h);
 * sw_rstate_free puts the memory store back. */
struct sw_rstate *sw_rstate_new(struct event_base *base, const struct sw_config *cfg,
                                struct sw_live_shared *g);
void sw_rstate_free(struct sw_rstate *rs);
/* The snapshot now serving (breakers, queues and leases are looked up in it). */
void sw_rstate_set_live(struct sw_rstate *rs, struct sw_live *live);
bool sw_rstate_degraded(const struct sw_rstate *rs);
/* For GET /admin/state: "redis" when degraded, NULL otherwise. */
const char *sw_rstate_degraded_reason(const struct sw_rstate *rs);

/* Asks for what an attempt on backend be needs of the shared state: a spend
 * reservation of est_usd (> 0, when the cap is in force), a lease (local
 * backend), the half-open probe (probe), a request and `tokens` from the
 * token bucket (cloud backend with rpm or tpm). Returns -1 when the answer
 * comes later through h->cb, else the verdict now (nothing to ask, or
 * degraded). */
int sw_rstate_admit(struct sw_rstate *rs, struct sw_live *live, struct sw_store_hold *h,
                    size_t be, double est_usd, bool probe, long tokens);
/* The attempt is over: gives back what h holds (settling actual_usd on the
 * spend window; the bucket on actual_tokens when the request was sent, in
 * full when not) and forgets a pending admit. */
void sw_rstate_release(struct sw_rstate *rs, struct sw_live *live, struct sw_store_hold *h,
                       double actual_usd, bool sent, long actual_tokens);
/* Another module's read-modify-write (state/tenant.c): runs the Lua script
 * `script` (static text; its SHA-1 is cached in sha, "" at first) with
 * ARGV args (n of them, copied) on the command connection, within
 * state.timeout_ms. cb gets the reply (a redisReply *) exactly once, NULL
 * when Redis failed, answered an error or timed out (a late reply is then
 * dropped). Returns -1 without calling cb when Redis is not usable now. */
typedef void (*sw_rstate_eval_fn)(void *ud, const void *reply);
int sw_rstate_eval(struct sw_rstate *rs, const char *script, char sha[41],
                   const char *const *args, int n, sw_rstate_eval_fn cb, void *ud);

/* One more module's share of the connection (state/vkeys.c): announced is
 * called with every other message on <prefix>events (msg), and with NULL
 * once connected again (resync); sync on every 200 ms sync tick. */
typedef void (*sw_rstate_announced_fn)(void *ud, const char *msg);
void sw_rstate_hook(struct sw_rstate *rs, sw_rstate_announced_fn announced,
                    void (*sync)(void *ud), void *ud);
/* state.key_prefix; this replica's id (random and pid, fixed for the
 * process's life); how long a reservation lives (ms). */
const char *sw_rstate_prefix(const struct sw_rstate *rs);
const char *sw_rstate_replica(const struct sw_rstate *rs);
long sw_rstate_resv_ttl_ms(const struct sw_rstate *rs);

/* After an outcome on backend be: announces its breaker when it opened or closed. */
void sw_rstate_breaker_check(struct sw_rstate *rs, struct sw_live *live, size_t be);
/* The admin API closed backend be's breaker: closed on every replica. */
void sw_rstate_breaker_reset(struct sw_rstate *rs, struct sw_live *live, size_t be);
/* The admin API changed the emergency flag or the thresholds: store and announce. */
void sw_rstate_flags_changed(struct sw_rstate *rs);

#endif
