/* The stage interface: what shapes one attempt's request and answer runs as
 * a list of stages behind one small table of hooks (HAProxy's flt_ops,
 * nginx's filter chain), so the attempt loop (relay.c) stays the same
 * whatever the client's API, the backend's API, the masking or the answer
 * checks. docs/internals/relay.md describes the stages.
 *
 * A stage never ends the request: each hook returns a result, and the loop
 * alone decides what it means (sw_stage_action): a failure before the first
 * byte reached the client moves on to the next backend, after it ends the
 * stream with an error event; a refusal answers the client's error.
 *
 * Order: response hooks (event, answer, end) run from the upstream's side
 * to the client's, first stage to last; the request hook runs the other way
 * (the client's body is shaped first by the stages nearest the client). A
 * hook may finish later: it returns SW_STAGE_PENDING, keeps io, and calls
 * io->resume(io, rc) once (from the event loop's thread) when done; the
 * loop then continues with sw_stage_resume. Pure: no I/O, no clock. */
#ifndef SW_RELAY_STAGE_H
#define SW_RELAY_STAGE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/buf.h"
#include "request/request.h"
#include "upstream/upstream.h"

enum sw_stage_rc {
    SW_STAGE_OK = 0,        /* go on with the next stage */
    SW_STAGE_FAILOVER,      /* this backend's attempt failed: try another (or end the stream) */
    SW_STAGE_REFUSE,        /* the answer may not go out: the client gets io->verdict's error */
    SW_STAGE_PENDING,       /* finishes later through io->resume */
};

enum sw_stage_hook { SW_STAGE_REQUEST, SW_STAGE_EVENT, SW_STAGE_ANSWER, SW_STAGE_END };

/* What a failed or refused hook says: the loop logs, settles and answers
 * from it. Filled only by the hook that returned the result. */
struct sw_stage_verdict {
    int err;                /* SW_EPROTO (a broken answer), SW_ESTATUS (an error the
                             * backend reported: logged as status 502), SW_ENOMEM ... */
    int status;             /* FAILOVER: HTTP status for the attempt's log, 0 none */
    const char *end_class;  /* error class for the decision log when not err's */
    bool neutral;           /* FAILOVER: the backend did not fail (breaker not told) */
    bool whole_tier;        /* FAILOVER: every backend of this tier is out for the request */
    bool before_send;       /* REQUEST FAILOVER: nothing was sent (the attempt is skipped) */
    bool sensitive;         /* REQUEST FAILOVER: the body holds what may not leave */
    const struct sw_request_error *cannot;  /* REQUEST FAILOVER: the backend's API has no
                                             * form for a field of the request (why) */
    const char *code;       /* REFUSE: the error code ("contract_violation") */
    const char *param;      /* REFUSE: the field it names, or NULL */
    int reply_status;       /* REFUSE: the client's status */
    char msg[400];          /* FAILOVER: what failed (logged); REFUSE: the client's message */
};

/* Token counts the stages read from the answer, for accounting. */
struct sw_stage_usage {
    long in, out;           /* the upstream's usage, 0 if none */
    long cached;            /* prompt tokens the upstream found in its prefix cache
                               (usage.prompt_tokens_details.cached_tokens, llama.cpp
                               timings.cache_n or tokens_cached), when cached_known */
    bool cached_known;
    long chunks;            /* content chunks relayed (a token count when no usage) */
};

struct evbuffer;
struct sw_stage_io;
typedef void (*sw_stage_resume_fn)(struct sw_stage_io *io, enum sw_stage_rc rc);

/* One hook call's input and output; one per attempt, reused for each call. */
struct sw_stage_io {
    /* the request hook */
    json_t *body;           /* the body tree being built (owned by io; NULL: none yet) */
    char *text;             /* or the body as bytes, spliced (owned; then no tree is built) */
    size_t text_len;
    /* ... or as pieces sent in turn (parts.n > 0): bytes the request holds
     * (the client's body, the front's text and the kept texts it shares)
     * around what splicing put in text */
    struct sw_iovs parts;
    bool built;             /* the body is not the client's scanned bytes or tree */
    /* the event hook: the upstream's event (borrowed) */
    const char *event;
    const char *data;
    size_t len;
    /* the event and end hooks: the chunks in the relay's (OpenAI) form that
     * the event became, an array (owned); or the event in the client's own
     * API, passed through (native, owned) */
    json_t *chunks;
    json_t *native;
    json_t *native_before;  /* an event in the client's API to send before native (owned):
                             * what the unmasker still held of a block it closes */
    bool done;              /* the upstream's stream is complete */
    bool closed;            /* the client's stream ended (an error event): write no more */
    /* the answer hook: the whole answer, bytes (borrowed, editable) or tree (owned) */
    struct sw_buf *answer_text;
    json_t *answer;
    const char *reply;      /* what the client gets: answer_text's bytes (spliced) */
    size_t reply_len;
    char *reply_owned;      /* ... or this (malloc'ed) */
    int up_status;          /* the upstream's HTTP status */
    long long created;      /* the wall clock, seconds (the loop reads it) */
    /* every hook */
    bool started;           /* the first byte went to the client */
    struct evbuffer *out;   /* the client's stream bytes of this event (streams only) */
    struct sw_stage_usage *usage;
    struct sw_stage_verdict verdict;
    /* a pending hook */
    size_t at;              /* the stage that returned the result */
    sw_stage_resume_fn resume;
    void *ud;
};

struct sw_stage;
struct sw_stage_ops {
    const char *name;
    /* Each may be NULL (nothing to do). `st` is the stage, with its context. */
    enum sw_stage_rc (*request)(struct sw_stage *st, struct sw_stage_io *io);
    enum sw_stage_rc (*event)(struct sw_stage *st, struct sw_stage_io *io);
    enum sw_stage_rc (*answer)(struct sw_stage *st, struct sw_stage_io *io);
    enum sw_stage_rc (*end)(struct sw_stage *st, struct sw_stage_io *io);
    /* A new attempt: forget the last one's state (never fails). */
    void (*reset)(struct sw_stage *st);
};

struct sw_stage {
    const struct sw_stage_ops *ops;
    void *ctx;
};

/* Runs hook h of stages[0..n) on io in the hook's order (see above),
 * stopping at the first result that is not OK (io->at says which stage).
 * For SW_STAGE_END, the chunks an end hook adds pass at once through the
 * event hooks of the stages after it (before their end hooks run). */
enum sw_stage_rc sw_stage_run(const struct sw_stage *stages, size_t n, enum sw_stage_hook h,
                              struct sw_stage_io *io);
/* Continues a run that stopped at io->at with SW_STAGE_PENDING, now that
 * that hook finished with rc: rc itself when it is not OK, else the result
 * of the stages after it. */
enum sw_stage_rc sw_stage_resume(const struct sw_stage *stages, size_t n, enum sw_stage_hook h,
                                 struct sw_stage_io *io, enum sw_stage_rc rc);
/* Releases what io's input and output hold (the attempt's): its body,
 * text, chunks, native trees, answer and owned reply. */
void sw_stage_io_clear(struct sw_stage_io *io);

/* Calls every stage's reset hook. */
void sw_stage_reset(const struct sw_stage *stages, size_t n);

/* Fills io->verdict for a failure: err, status and the printf-formatted msg;
 * returns SW_STAGE_FAILOVER. */
enum sw_stage_rc sw_stage_fail(struct sw_stage_io *io, int err, int status, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* What the loop does with a hook's result. */
enum sw_stage_action {
    SW_ACT_GO_ON,           /* OK: continue the attempt */
    SW_ACT_WAIT,            /* PENDING: nothing until the hook resumes */
    SW_ACT_NEXT_BACKEND,    /* failed before the first byte: end the attempt, decide again */
    SW_ACT_END_STREAM,      /* failed after the first byte: an error event ends the stream */
    SW_ACT_ANSWER_ERROR,    /* refused before the first byte: the client gets the error */
};
enum sw_stage_action sw_stage_action(enum sw_stage_rc rc, bool started);

#endif
