/* The response store on Redis (state.redis): replicas share the Responses
 * API's conversations. One hash per record, `<prefix>resp:r:<id>` with
 * EXPIRE = responses.store_ttl_s; an index of ids by put time
 * (`<prefix>resp:index`), their sizes (`<prefix>resp:sizes`) and their total
 * (`<prefix>resp:bytes`) keep store_max_entries and store_max_bytes across
 * replicas, the oldest evicted first, in one script per put. The values are
 * request content: never logged (not even Redis's error text for a put).
 * See respstore.h for the calls and docs/scaling.md for the keys. */
#ifndef SW_STATE_RESPREDIS_H
#define SW_STATE_RESPREDIS_H

#include "state/respstore.h"

struct event_base;
struct sw_config_state;

/* A store on the Redis of st (st->redis must be set), connecting at once and
 * again after a loss (with backoff). Until connected, calls answer
 * SW_EUNAVAILABLE; a round trip that takes longer than the larger of
 * st->timeout_ms and 1 s answers SW_ETIMEOUT. NULL when the URL or TLS
 * settings cannot be used (logged without secrets). */
struct sw_respstore *sw_respstore_redis_new(struct event_base *base,
                                            const struct sw_config_state *st,
                                            const struct sw_respstore_limits *l);

struct sw_config;

/* The store the daemon runs for cfg: on Redis when state.redis is set (so
 * replicas share it), else in memory on the monotonic clock, with limits l
 * (sw_live_resp_limits). NULL when it cannot be made (logged). */
struct sw_respstore *sw_respstore_open(struct event_base *base, const struct sw_config *cfg,
                                       const struct sw_respstore_limits *l);

#endif
