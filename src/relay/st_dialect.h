/* The dialect stages: the backend's side (its stream events and answers
 * into the relay's OpenAI form, or an event of the client's own API passed
 * through) and the client's side (the OpenAI form out in the client's API).
 * Both work through the dialect tables (upstream/dialect.h) and share one
 * context, so a new API is one more table, not a change here. */
#ifndef SW_RELAY_ST_DIALECT_H
#define SW_RELAY_ST_DIALECT_H

#include <stdbool.h>
#include <stdint.h>

#include "relay/stage.h"
#include "request/request.h"
#include "upstream/dialect.h"

struct sw_dialect_stage {
    /* the request's, set once */
    const struct sw_upstream_dialect *client;   /* the client's API */
    const char *id;                 /* the request id (borrowed) */
    const char *public_model;       /* the name the client asked for (borrowed) */
    long input_tokens_est;
    bool client_wants_usage;        /* the client asked for the usage chunk */
    long default_max_tokens;
    const json_t *request;          /* the client's own body (borrowed), NULL for OpenAI's */
    char response_id[64];           /* the answer object's id when its API has one the relay
                                     * makes ("resp_..."), else "" */
    /* Told the client's finished answer object (borrowed) once it is
     * complete (see sw_dialect_stage_complete); NULL: nobody is. */
    void (*on_complete)(void *ud, const json_t *answer);
    void *complete_ud;
    bool drop;                      /* translation.unsupported: drop */
    /* the attempt's, set by sw_dialect_stage_attempt */
    uint32_t dropped;               /* top-level fields its translation left out (drop),
                                       bits 1 << enum sw_anth_field */
    const struct sw_upstream_dialect *up;   /* the backend's API */
    const struct sw_config_backend *be;     /* the backend (its config's additions to a
                                             * translated body: request_config) */
    bool native;                    /* the client's own API end to end: passed through */
    bool plain;                     /* native, and no stage between the two sides reads an
                                     * event (nothing to unmask, no contract): a Responses
                                     * delta event goes out as its own bytes */
    bool own_api;                   /* the request goes in the client's own API (masked or
                                     * not): it is not translated */
    bool format_tool;               /* an OpenAI client's response_format went as a tool */
    struct sw_request_error *rerr;  /* request FAILOVER with verdict.cannot: why (owned;
                                     * allocated the first time, freed by
                                     * sw_dialect_stage_free) */
    struct sw_dialect_stream *us;   /* states (owned by the caller, written in full
                                     * by sw_dialect_stage_attempt before they are read) */
    struct sw_dialect_client *cs;
    bool cs_ready;                  /* cs was prepared (client_init): client_free is due */
    struct sw_buf aout;             /* the client's bytes of one event (bounded) */
};

/* The backend's side: request (the body in the backend's API), event,
 * answer. The client's side: event and end (the client's bytes), answer. */
extern const struct sw_stage_ops sw_dialect_up_ops;
extern const struct sw_stage_ops sw_dialect_client_ops;

/* Prepares an attempt on a backend of dialect `up`; `started`: the client's
 * stream is already open (its state is kept). */
void sw_dialect_stage_attempt(struct sw_dialect_stage *d, const struct sw_upstream_dialect *up,
                              bool native, bool own_api, bool format_tool, bool started,
                              long long created);

/* Appends to out the error event that ends the client's stream, in its
 * API (`code` the OpenAI code; the upstream's own error type when
 * `upstream_type`). SW_OK or SW_ENOMEM. */
int sw_dialect_stage_error(struct sw_dialect_stage *d, bool upstream_type, const char *code,
                           const char *msg, struct evbuffer *out);

void sw_dialect_stage_free(struct sw_dialect_stage *d);

/* The one place where the client's answer object is complete: the whole
 * answer made (translated or passed through), or the stream's last event
 * written (response.completed / response.incomplete of a Responses
 * stream). Hands the finished object, when the client's API has one
 * (client_final), to d->on_complete. Called by the client stage. */
void sw_dialect_stage_complete(struct sw_dialect_stage *d);

#endif
