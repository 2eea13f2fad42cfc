/* The attempt loop's waiting rules, as decisions on the live state: how
 * long an attempt may go without a first byte before another backend is
 * asked, whether another would take it now, and when a request waiting in
 * a local queue moves to the cloud. They read the live state and decide;
 * the loop acts (relay.c). */
#ifndef SW_RELAY_WAIT_H
#define SW_RELAY_WAIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "route/route.h"
#include "state/claim.h"
#include "state/live.h"

/* The TTFT budget of an attempt just sent on the plan's first attempt (or
 * the router's estimate for that backend, when larger; plus the expected
 * generation time for a non-streamed request), in ms; 0: none (no budget,
 * or it would not leave room within left_ms). */
long sw_relay_ttft_budget_ms(const struct sw_route_facts *f, const struct sw_live_snapshot *snap,
                             const struct sw_route_plan *plan, bool stream, int64_t left_ms);

/* Whether the router, without backend `be` (config index), would send this
 * request somewhere now (privacy, breakers, budget and queues all still
 * apply). */
bool sw_relay_another_would_take(struct sw_live *live, const struct sw_config_model *model,
                                 const struct sw_route_facts *f, const struct sw_prefix *prefix,
                                 size_t be, int64_t now);

/* Whether a request queued for local backend `be` (its claim `c`) should
 * leave the queue now, on a fresh snapshot with the request's prefix
 * affinity: for another local that starts it at once and sooner
 * (sw_route_move_local; *to_local set), or, when it may leave, for the
 * cloud (sw_route_leave_queue). Then *k is the backend's index in that
 * snapshot (its exclude bit) and the reason is logged under request `id`. */
bool sw_relay_leave_queue(struct sw_live *live, const struct sw_config_model *model,
                          const struct sw_route_facts *f, const struct sw_prefix *prefix,
                          const struct sw_claim *c, size_t be,
                          int64_t start_ms, int64_t now, double check_ms, const char *id,
                          const char *be_name, size_t *k, bool *to_local);

/* "name: health[, breaker open][, last error: ...]; ..." for every backend
 * of a snapshot, into out (truncated to fit). */
void sw_relay_describe_backends(const struct sw_live *live, const struct sw_live_snapshot *snap,
                                char *out, size_t size);

#endif
