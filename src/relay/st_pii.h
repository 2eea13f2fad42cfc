/* The PII stages of a masked or built attempt.
 *
 *  - mask (its request hook): the body tree, a copy the attempt owns, has
 *    every entity replaced by its placeholder (one map across attempts, so a
 *    value keeps its placeholder). Its response hooks restore the values:
 *    the whole answer (sw_pii_unmask_response), or the stream chunk by chunk
 *    (pii/stream.c: a placeholder split across events, at any byte, is
 *    still restored); an Anthropic answer passed in its own API, thinking
 *    blocks included, with sw_pii_unmask_message and pii/nstream.c.
 *  - gate (its request hook, the last before the body leaves): a body that
 *    was built (translated or masked) for a cloud backend is scanned once
 *    more in that backend's API; masked it must hold no entity, unmasked
 *    none the front's scan did not allow out. Fails closed.
 *
 * Both request hooks work on the tree alone (no loop state): for a large
 * body (large, with a pool) they run on a worker of the pool and answer
 * SW_STAGE_PENDING; the job owns the tree, the map and a reference on the
 * live snapshot (the engine's owner) while it runs, so a request that ends
 * meanwhile (sw_pii_stage_free: the job cancelled) frees nothing in use. */
#ifndef SW_RELAY_ST_PII_H
#define SW_RELAY_ST_PII_H

#include <stdbool.h>

#include "config/config.h"
#include "pii/pii.h"
#include "relay/stage.h"

/* A body above this many bytes has its PII hooks run on the pool. */
#define SW_RELAY_PII_OFF_LOOP_BYTES (64 * 1024)

struct sw_workpool;
struct sw_live;
struct pii_job;

struct sw_pii_stage {
    /* the request's */
    const struct sw_pii_engine *engine;     /* NULL: none configured */
    struct sw_pii_map *map;                 /* across attempts (owned); never logged */
    enum sw_pii_policy policy;
    bool binary_blocked;                    /* content parts that cannot be scanned */
    bool stream;                            /* the answer is streamed */
    bool embeddings;                        /* vectors hold no placeholders */
    struct sw_workpool *pool;               /* where a large body's hooks run; NULL: inline */
    struct sw_live *live;                   /* the engine's owner (borrowed; a job refs it) */
    bool large;                             /* the body is large: its hooks go to the pool */
    struct pii_job *job;                    /* the hook running on the pool, NULL none */
    /* the attempt's */
    bool need_mask;                         /* must be masked (else no mask stage) */
    bool cloud;                             /* its backend is a cloud */
    enum sw_pii_surface mask_surface;       /* the API of the tree masked */
    enum sw_pii_surface send_surface;       /* the API of the body sent */
    bool masked;                            /* ... and was: the answer is unmasked */
    bool native;                            /* the answer is in the client's API (Anthropic's):
                                             * unmasked in that shape */
    struct sw_pii_stream *pstream;          /* the stream's unmasker (owned) */
    struct sw_pii_nstream *nstream;         /* ... of a native stream (owned) */
};

extern const struct sw_stage_ops sw_pii_mask_ops;
extern const struct sw_stage_ops sw_pii_gate_ops;

void sw_pii_stage_free(struct sw_pii_stage *s);

#endif
