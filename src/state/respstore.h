/* The Responses API's conversation state: what a response created with
 * `store: true` leaves behind, so that a later request can continue it
 * (`previous_response_id`) or read it back (`GET /v1/responses/{id}`, its
 * input items, `DELETE`). One record per response: its id, the scope it
 * belongs to (the client key's name; "" with auth off), whether the
 * conversation held sensitive data, its input and output items as JSON
 * arrays, an optional metadata object (the response's other fields) and its
 * creation time. docs/api.md says what is stored and for how long.
 *
 * Two implementations behind one ops struct: bounded memory (this file: at
 * most responses.store_max_entries records and store_max_bytes bytes, each
 * for store_ttl_s, the oldest evicted first), and Redis (respredis.c) when
 * state.redis is set, so replicas share it.
 *
 * The values are request content: they are never logged, never in a metric,
 * and the memory store wipes a record before freeing it. A record keeps its
 * sensitive flag for its whole life: a conversation that held sensitive data
 * stays sensitive when continued.
 *
 * Every call answers through its callback exactly once: the memory store
 * before the call returns, Redis later on the event loop (or at once when it
 * cannot send). A caller must cope with both. */
#ifndef SW_STATE_RESPSTORE_H
#define SW_STATE_RESPSTORE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SW_RESPSTORE_MAX_ID 128     /* bytes of a response id */
#define SW_RESPSTORE_MAX_SCOPE 128  /* bytes of a scope */

struct sw_respstore_limits {
    long max_entries;           /* records held at most (memory; Redis: across replicas) */
    long max_bytes;             /* sum of sw_resp_record_bytes; a larger record is refused */
    long ttl_s;                 /* a record is gone this long after it was put */
};

/* One stored response. Strings are borrowed ({ptr, len} for the JSON). */
struct sw_resp_record {
    const char *id;             /* 1 to SW_RESPSTORE_MAX_ID bytes, no NUL */
    const char *scope;          /* 0 to SW_RESPSTORE_MAX_SCOPE bytes */
    bool sensitive;             /* the conversation held sensitive data */
    int64_t created_at_s;       /* wall seconds, as the response reports it */
    const char *input;          /* JSON array of input items */
    size_t input_len;
    const char *output;         /* JSON array of output items */
    size_t output_len;
    const char *meta;           /* JSON object or NULL/empty */
    size_t meta_len;
};

/* Counters for metrics (no content). */
struct sw_respstore_stats {
    size_t entries;             /* held now (memory store; 0 for Redis) */
    size_t bytes;               /* held now (memory store) */
    uint64_t evicted;           /* dropped to make room (bounds) */
    uint64_t expired;           /* dropped at their TTL */
    uint64_t refused;           /* puts refused: too large, invalid, unavailable */
};

/* err: SW_OK; SW_ENOTFOUND (no such id in that scope, or expired);
 * SW_ETOOBIG (a record over max_bytes or a field over its maximum);
 * SW_EINVAL (an empty id, a cursor that names no item, a put over another
 * scope's record); SW_EUNAVAILABLE
 * (Redis unreachable); SW_ETIMEOUT (Redis too slow); SW_ENOMEM. */
typedef void (*sw_respstore_done_fn)(int err, void *ud);
/* rec is borrowed, valid during the call only; NULL unless err is SW_OK. */
typedef void (*sw_respstore_get_fn)(int err, const struct sw_resp_record *rec, void *ud);
/* json: an OpenAI list object, borrowed, valid during the call only. */
typedef void (*sw_respstore_list_fn)(int err, const char *json, size_t len, void *ud);

struct sw_respstore_ops {
    const char *name;           /* "memory", "redis" */
    void (*put)(void *impl, const struct sw_resp_record *r, sw_respstore_done_fn cb, void *ud);
    void (*get)(void *impl, const char *id, const char *scope, sw_respstore_get_fn cb, void *ud);
    void (*del)(void *impl, const char *id, const char *scope, sw_respstore_done_fn cb, void *ud);
    void (*set_limits)(void *impl, const struct sw_respstore_limits *l);
    void (*stats)(void *impl, struct sw_respstore_stats *out);
    void (*free)(void *impl);
};

struct sw_respstore {
    const struct sw_respstore_ops *ops;
    void *impl;
};

/* The bytes a record counts against max_bytes: its strings and a fixed
 * overhead per record. */
size_t sw_resp_record_bytes(const struct sw_resp_record *r);

/* Whether a record's fields are within their bounds (id 1..MAX_ID bytes
 * without NUL, scope up to MAX_SCOPE): SW_OK, SW_EINVAL or SW_ETOOBIG. */
int sw_resp_record_check(const struct sw_resp_record *r);

/* A store in memory. now_ms reads the clock the TTL runs on (monotonic
 * milliseconds; tests inject theirs). NULL on allocation failure. */
struct sw_respstore *sw_respstore_memory_new(const struct sw_respstore_limits *l,
                                             int64_t (*now_ms)(void *ud), void *clock_ud);

/* Stores r (copied), replacing a record of the same id in the same scope
 * (one of another scope is never replaced: SW_EINVAL, counted refused).
 * Expired records go first, then the oldest until r fits both bounds. */
void sw_respstore_put(struct sw_respstore *s, const struct sw_resp_record *r,
                      sw_respstore_done_fn cb, void *ud);
/* The record of id if it belongs to scope: another scope's record is
 * SW_ENOTFOUND, as if it did not exist. */
void sw_respstore_get(struct sw_respstore *s, const char *id, const char *scope,
                      sw_respstore_get_fn cb, void *ud);
/* Deletes the record of id in scope (SW_ENOTFOUND when there is none). */
void sw_respstore_delete(struct sw_respstore *s, const char *id, const char *scope,
                         sw_respstore_done_fn cb, void *ud);

/* A page of a response's input items, OpenAI's list query. */
struct sw_resp_page_query {
    long limit;                 /* 1 to 100; 0: 20 */
    bool asc;                   /* order=asc; default desc (newest item first) */
    const char *after;          /* an item id: the page starts after it; NULL: the start */
};

void sw_respstore_set_limits(struct sw_respstore *s, const struct sw_respstore_limits *l);
void sw_respstore_stats(struct sw_respstore *s, struct sw_respstore_stats *out);
/* Frees the store; Redis answers its pending calls with SW_EUNAVAILABLE. NULL is fine. */
void sw_respstore_free(struct sw_respstore *s);

#endif
