/* One relayed request, shared by the parts of the attempt loop (relay.c,
 * body.c, account.c): the request's identity, its one current attempt, its
 * stages' contexts, and what the decision log is told. Only relay.c ends a
 * request. Not an interface: the stages see their own contexts only. */
#ifndef SW_RELAY_PROXY_H
#define SW_RELAY_PROXY_H

#include <event2/event.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/evstream.h"
#include "obs/declog.h"
#include "request/facts.h"
#include "request/request.h"
#include "route/affinity.h"
#include "route/route.h"
#include "config/config.h"
#include "relay/env.h"
#include "relay/reply.h"
#include "relay/splice.h"
#include "relay/sse.h"
#include "relay/st_auth.h"
#include "relay/st_contract.h"
#include "relay/st_dialect.h"
#include "relay/st_pii.h"
#include "relay/stage.h"
#include "relay/trace_state.h"
#include "state/claim.h"
#include "state/store.h"
#include "state/tenant.h"
#include "upstream/upstream.h"

/* Largest SSE event of an upstream stream. */
#define SW_RELAY_SSE_EVENT_MAX (1024 * 1024)

/* Most stages an attempt runs (gate, dialect, unmask, contract, client). */
#define SW_RELAY_STAGES_MAX 6

/* The current attempt. Every field starts over with the attempt: one
 * assignment in try_attempt resets it (what it holds elsewhere is freed
 * before). */
struct sw_relay_attempt {
    size_t be;                      /* config index of its backend */
    enum sw_reason reason;
    bool attempting;                /* begun: its settle and log entry are due */
    bool lease_wait;                /* holds its local slot, waits for a replica-wide lease */
    bool need_mask;                 /* must be masked */
    bool native;                    /* carries the client's own body, no translation */
    uint32_t dropped;               /* fields its translation left out (translation.unsupported:
                                       drop), bits 1 << enum sw_anth_field */
    enum sw_dialect up_dialect;     /* what its backend speaks */
    int64_t attempt_ms, first_byte_ms, last_byte_ms;
    struct sw_stage_usage usage;    /* from the upstream's answer */
    long prefix_tokens;             /* local: the prefix the table matched on its backend */
    bool busy_at_start;             /* work that may hold its slot ran there (sw_live_cache_busy) */
    long ttft_abandon_ms;           /* its TTFT budget, 0: none */
    const char *end_class;          /* error class when it is not the transport's:
                                       "ttft_abandoned", "stream_cut", ... */
    bool saw_done;                  /* the upstream's stream is complete, and its end
                                     * went to the client */
    int abort_err;                  /* why on_data aborted the transfer (SW_EPROTO, ...) */
    char abort_msg[160];
    struct sw_stage stages[SW_RELAY_STAGES_MAX];
    size_t n_stages;
    struct sw_stage_io io;          /* the stages' input and output */
    /* for its span (relay/trace.h) */
    uint8_t span_id[SW_SPAN_ID_LEN];
    int64_t claim_ms;               /* planned: its claim was asked */
    double est_ttft_ms;             /* the router's estimate for it */
    int breaker;                    /* its breaker's state when planned */
};

/* Written in full before they are read, so a proxy is not zeroed over them
 * (most of its size): the last member of struct proxy. */
struct proxy_scratch {
    struct sw_dialect_stream us;    /* the attempt's upstream stream (sw_dialect_stage_attempt) */
    struct sw_dialect_client cs;    /* the client's stream (the same, before the first byte) */
    struct sw_relay_trace trace;    /* its trace context and what its spans tell (set up by
                                       sw_relay_trace_start) */
};

struct proxy {
    /* The request's identity and what it runs on. */
    struct sw_relay_env env;
    struct sw_live *live;           /* referenced: the snapshot this request started on */
    struct sw_http_req *req;        /* NULL once answered or the client is gone */
    struct sw_config *cfg;          /* referenced */
    struct sw_chat_request chat;
    char *public_model;             /* what the client asked for */
    char *public_model_json;        /* ... as a JSON string, quotes included */
    const struct sw_config_model *model;
    const char *key_name;           /* borrowed from cfg */
    char id[48];
    struct sw_facts_pii pii;        /* what the front found */
    const struct sw_pii_engine *engine; /* the request's: its known-safe lists allowed */
    bool client_wants_usage;        /* stream_options.include_usage was the client's */
    enum sw_dialect client_dialect;
    int64_t start_ms;               /* arrival */
    int64_t deadline_ms;

    /* The plan and what moved it. */
    struct sw_route_facts facts;
    struct sw_prefix prefix;        /* the request's prefix identity (request/prefix.h) */
    struct sw_route_plan plan;
    /* The view the current plan was made on (plan_next): a block of its own
     * (about 6 KB), held while attempts may still be made and given back once
     * the stream's first byte went out, so a running stream does not keep it. */
    struct sw_live_snapshot *snap;
    bool overflowed;                /* left a local queue for the cloud */
    uint32_t left_queue;            /* the local(s) it left (exclude bits), eligible again
                                     * once a later attempt fails */
    bool spend_refused;             /* the shared spend counter refused a reservation */

    /* The current attempt, and what it holds. */
    struct sw_relay_attempt a;
    struct sw_claim claim;          /* of the shared state */
    struct sw_store_hold rh;        /* ... and of the state shared by replicas (state.redis) */
    struct event *queue_timer;
    struct event *ttft_timer;       /* the attempt's TTFT budget (abandon when no first byte) */
    struct sw_upstream up;
    struct sw_buf resp;             /* non-stream body, or the error body of a failed attempt */
    struct sw_sse sse;
    struct sw_evs evs;              /* ... or the AWS event-stream framing (dialect frame) */
    struct sw_buf evs_data;         /* one framed message as its event's data */
    struct evbuffer *out;           /* events of the current upstream write (streams only) */
    bool started;                   /* the first byte went to the client */
    bool client_gone;

    /* The stages' contexts. */
    struct sw_splice_stage splice;
    struct sw_dialect_stage dialect;
    struct sw_pii_stage pii_st;
    struct sw_contract_stage contract;
    struct sw_auth_stage auth;

    /* For the decision log and the metrics (never prompt or answer text). */
    struct sw_declog_attempt att[SW_DECLOG_MAX_ATTEMPTS];
    size_t n_att;
    bool served;
    int final_status;
    const char *rej_code;           /* static string */
    const char *refused_code;       /* a backend answered, a stage refused it (static) */
    double cost_usd;
    double ttft_ms;                 /* arrival to first byte of the answer that served; -1 none */
    long tok_in, tok_out;
    struct sw_request_error *cannot;    /* a backend that could not carry the request, why */
    bool other_failure;             /* an attempt failed for another reason */
    /* The failures so far, for the final error message: "edge: connect_error; ..."
     * (SW_RELAY_FAILURES_MAX bytes once the first is noted; NULL: none) */
    char *failures;
    long retry_after_s;
    bool any_timeout;

    /* Tenancy: the key's and its team's ledgers (state/tenant.h). */
    const struct sw_config_key *key;    /* borrowed from cfg; NULL: no key */
    struct sw_tenant_wait tw;
    bool tenant_budget;             /* a budget applies: cloud attempts reserve on it */
    bool tenant_refused;            /* a reservation was refused: decided again */
    bool tenant_rejected;           /* answered 429 for the key's limits or budget */

    struct proxy_scratch x;         /* last (see proxy_scratch) */
};

#define SW_RELAY_FAILURES_MAX 512

/* The failures noted so far ("" for none). */
static inline const char *sw_relay_failures(const struct proxy *p)
{
    return p->failures ? p->failures : "";
}

/* p->failures to write to (SW_RELAY_FAILURES_MAX bytes), allocated when
 * first asked for: NULL out of memory (the error message says less). */
char *sw_relay_failures_buf(struct proxy *p);

/* Gives back the planning view (p->snap, may be NULL): at the end, and once a
 * stream's first byte went out (no attempt follows it). */
void sw_relay_snap_release(struct proxy *p);

static inline const struct sw_config_backend *sw_relay_backend(const struct proxy *p)
{
    return &p->cfg->backends[p->a.be];
}

/* The route headers of the current attempt's backend. */
static inline void sw_relay_route_headers(struct proxy *p)
{
    const struct sw_config_backend *be = sw_relay_backend(p);
    sw_reply_route_headers(p->req, be->name, sw_tier_name(be->tier), be->region,
                           sw_reason_name(p->a.reason));
}

#endif
