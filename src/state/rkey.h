/* The key layout of the shared state in Redis (state/rstate.c).
 * Pure: no I/O, no clock. */
#ifndef SW_STATE_RKEY_H
#define SW_STATE_RKEY_H

#include <stdbool.h>
#include <stddef.h>

/* Key layout (prefix first, e.g. "spillway:"):
 *   <p>spend:<window_start_ms>   settled USD in that window (string, float; TTL 2 windows)
 *   <p>spend:resv                reservations: zset id -> expiry (wall ms)
 *   <p>spend:amt                 reservations: hash id -> USD
 *   <p>spend:reserved            sum of the reservations (float)
 *   <p>slots:<backend>           leases of a local backend: zset id -> expiry (wall ms)
 *   <p>queue:<backend>           waiting requests per replica: hash replica -> "n expiry_ms"
 *   <p>bucket:<backend>          a cloud backend's rpm/tpm levels: hash req tok last
 *   <p>breaker:<backend>         an open breaker: wall ms it turns half-open (PX until then)
 *   <p>probe:<backend>           the replica holding the half-open probe (SET NX PX)
 *   <p>flags                     hash: emergency, emergency_reason, ttft_budget_ms, spend_cap_usd
 *   <p>events                    pub/sub channel: "flags", "breaker <backend>"
 * Writes "<prefix><what>" (what may have a ":<arg>" suffix) into buf;
 * returns the length, or -1 when it does not fit. */
int sw_rkey(char *buf, size_t cap, const char *prefix, const char *what, const char *arg);

/* The spend window key's argument: the window start containing wall_ms. */
long long sw_rkey_window_start(long long wall_ms, long long window_ms);

/* Parses "n expiry_ms" (a replica's queue field); false when malformed. */
bool sw_rkey_parse_queue(const char *s, long *n, long long *expiry_ms);

#endif
