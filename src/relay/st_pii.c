#include "relay/st_pii.h"

#include <stdlib.h>

#include "common/err.h"
#include "common/workpool.h"
#include "state/live.h"

/* A request hook of a large body, on a worker. */
struct pii_job {
    struct sw_pii_stage *s;     /* NULL once the request is gone */
    struct sw_stage_io *io;
    struct sw_work *work;
    bool mask;                  /* the mask hook, else the gate's */
    const struct sw_pii_engine *engine;
    struct sw_live *live;       /* referenced: the engine's owner */
    struct sw_pii_map *map;     /* owned while the job runs (mask) */
    json_t *body;               /* owned while the job runs */
    enum sw_pii_surface surface;
    bool ok;                    /* mask: masked; gate: scanned clean */
    struct sw_pii_counts counts;
};

static bool mask_tree(const struct sw_pii_engine *e, struct sw_pii_map *m, enum sw_pii_surface sf,
                      json_t *body)
{
    return m && body && sw_pii_mask_body(e, m, sf, body, NULL, NULL, 0) == SW_OK;
}

static bool gate_tree(const struct sw_pii_engine *e, enum sw_pii_surface sf, const json_t *body,
                      struct sw_pii_counts *c)
{
    return e && body && sw_pii_scan_built(e, sf, body, c) == SW_OK;
}

static void job_run(void *ud)
{
    struct pii_job *j = ud;
    j->ok = j->mask ? mask_tree(j->engine, j->map, j->surface, j->body)
                    : gate_tree(j->engine, j->surface, j->body, &j->counts);
}

static enum sw_stage_rc mask_done(struct sw_pii_stage *s, struct sw_stage_io *io, bool ok);
static enum sw_stage_rc gate_done(struct sw_pii_stage *s, struct sw_stage_io *io, bool ok,
                                  const struct sw_pii_counts *c);

/* Back on the loop: the tree and the map go back to the request, which
 * goes on from the hook (a hook no worker ran fails: nothing was sent); a
 * request gone meanwhile gets nothing, and what the job held is freed. */
static void job_done(void *ud, enum sw_work_end end)
{
    struct pii_job *j = ud;
    struct sw_pii_stage *s = j->s;
    struct sw_stage_io *io = j->io;
    bool mask = j->mask, ok = j->ok;
    struct sw_pii_counts c = j->counts;
    if (s) {
        s->job = NULL;
        io->body = j->body;
        if (mask)
            s->map = j->map;
    } else {
        json_decref(j->body);
        if (mask)
            sw_pii_map_free(j->map);
    }
    sw_live_unref(j->live);
    free(j);
    if (!s)
        return;
    enum sw_stage_rc rc;
    if (end != SW_WORK_RAN) {
        io->verdict.before_send = true;
        rc = sw_stage_fail(io, SW_ENOMEM, 0, "%s", "the PII check could not run");
    } else {
        rc = mask ? mask_done(s, io, ok) : gate_done(s, io, ok, &c);
    }
    io->resume(io, rc);
}

/* Hands the hook to the pool: true when it went (the hook answers
 * SW_STAGE_PENDING), false to run it here. */
static bool offload(struct sw_pii_stage *s, struct sw_stage_io *io, bool mask,
                    enum sw_pii_surface surface)
{
    if (!s->pool || !s->large || !s->live || !io->body || !io->resume)
        return false;
    struct pii_job *j = malloc(sizeof *j);
    if (!j)
        return false;
    *j = (struct pii_job){.s = s, .io = io, .mask = mask, .engine = s->engine,
                          .live = sw_live_ref(s->live), .map = mask ? s->map : NULL,
                          .body = io->body, .surface = surface};
    if (!(j->work = sw_workpool_submit(s->pool, job_run, job_done, j))) {
        sw_live_unref(j->live);
        free(j);
        return false;
    }
    io->body = NULL;
    if (mask)
        s->map = NULL;
    s->job = j;
    return true;
}

/* The request ends or a new attempt begins with a hook on the pool: the job
 * is cancelled, and frees what it holds when it comes back. */
static void detach(struct sw_pii_stage *s)
{
    if (!s->job)
        return;
    s->job->s = NULL;
    sw_workpool_cancel(s->pool, s->job->work);
    s->job = NULL;
}

void sw_pii_stage_free(struct sw_pii_stage *s)
{
    detach(s);
    sw_pii_stream_free(s->pstream);
    s->pstream = NULL;
    sw_pii_nstream_free(s->nstream);
    s->nstream = NULL;
    sw_pii_map_free(s->map);
    s->map = NULL;
}

static void mask_reset(struct sw_stage *st)
{
    struct sw_pii_stage *s = st->ctx;
    detach(s);
    sw_pii_stream_free(s->pstream);
    s->pstream = NULL;
    sw_pii_nstream_free(s->nstream);
    s->nstream = NULL;
    s->masked = false;
}

/* Masks io->body in place (the caller made it a deep copy). Never sent
 * unmasked: a failure puts this backend out for the request. */
static enum sw_stage_rc mask_request(struct sw_stage *st, struct sw_stage_io *io)
{
    struct sw_pii_stage *s = st->ctx;
    if (!s->need_mask)
        return SW_STAGE_OK;
    if (!s->map)
        s->map = sw_pii_map_new();
    /* Binary parts cannot be masked: such a request never goes masked. */
    if (s->map && !s->binary_blocked && offload(s, io, true, s->mask_surface))
        return SW_STAGE_PENDING;
    return mask_done(s, io, !s->binary_blocked && mask_tree(s->engine, s->map, s->mask_surface, io->body));
}

/* What the mask hook decides once the tree was masked (ok) or not. */
static enum sw_stage_rc mask_done(struct sw_pii_stage *s, struct sw_stage_io *io, bool ok)
{
    if (ok && s->stream && !s->native && !(s->pstream = sw_pii_stream_new(s->map)))
        ok = false;
    if (ok && s->stream && s->native && !(s->nstream = sw_pii_nstream_new(s->map)))
        ok = false;
    if (!ok) {
        io->verdict.before_send = true;
        return sw_stage_fail(io, SW_EINVAL, 0, "%s",
                             s->binary_blocked
                                 ? "masking failed: content parts that cannot be scanned"
                                 : "masking failed");
    }
    s->masked = true;
    io->built = true;
    return SW_STAGE_OK;
}

static enum sw_stage_rc mask_event(struct sw_stage *st, struct sw_stage_io *io)
{
    struct sw_pii_stage *s = st->ctx;
    size_t i;
    json_t *c;
    if (s->nstream && io->native) {
        if (sw_pii_nstream_event(s->nstream, io->native, &io->native_before) != SW_OK)
            return sw_stage_fail(io, SW_EPROTO, 0, "could not restore the masked values");
        return SW_STAGE_OK;
    }
    if (!s->pstream)
        return SW_STAGE_OK;
    json_array_foreach(io->chunks, i, c) {
        if (sw_pii_stream_chunk(s->pstream, c) != SW_OK)
            return sw_stage_fail(io, SW_EPROTO, 0, "could not restore the masked values");
    }
    return SW_STAGE_OK;
}

/* What the unmasker still held goes out before the stream's end. */
static enum sw_stage_rc mask_end(struct sw_stage *st, struct sw_stage_io *io)
{
    struct sw_pii_stage *s = st->ctx;
    json_t *held = s->pstream ? sw_pii_stream_finish(s->pstream) : NULL;
    if (held && json_array_append_new(io->chunks, held))
        return sw_stage_fail(io, SW_ENOMEM, 0, "out of memory");
    return SW_STAGE_OK;
}

static enum sw_stage_rc mask_answer(struct sw_stage *st, struct sw_stage_io *io)
{
    struct sw_pii_stage *s = st->ctx;
    if (!s->masked || s->embeddings)
        return SW_STAGE_OK;
    if (io->native && sw_pii_unmask_message(s->map, io->native) != SW_OK)
        return sw_stage_fail(io, SW_EPROTO, io->up_status, "could not restore the masked values");
    if (io->answer && sw_pii_unmask_response(s->map, io->answer) != SW_OK)
        return sw_stage_fail(io, SW_EPROTO, io->up_status, "could not restore the masked values");
    return SW_STAGE_OK;
}

const struct sw_stage_ops sw_pii_mask_ops = {
    .name = "unmask",
    .request = mask_request,
    .event = mask_event,
    .answer = mask_answer,
    .end = mask_end,
    .reset = mask_reset,
};

/* The last check before a built body leaves for a cloud backend. A body
 * spliced from the client's own bytes, the Anthropic client's own tree or
 * its OpenAI translation is exactly what the front scanned and is not
 * scanned again. */
static enum sw_stage_rc gate_request(struct sw_stage *st, struct sw_stage_io *io)
{
    struct sw_pii_stage *s = st->ctx;
    if (!io->built || !s->cloud || s->policy == SW_PII_POLICY_OFF)
        return SW_STAGE_OK;
    if (offload(s, io, false, s->send_surface))
        return SW_STAGE_PENDING;
    struct sw_pii_counts c;
    bool ok = gate_tree(s->engine, s->send_surface, io->body, &c);
    return gate_done(s, io, ok, &c);
}

/* What the gate decides once the body was scanned (ok: the scan ran). */
static enum sw_stage_rc gate_done(struct sw_pii_stage *s, struct sw_stage_io *io, bool ok,
                                  const struct sw_pii_counts *c)
{
    if (ok && c->total == 0 && (c->binary == 0 || !s->binary_blocked))
        return SW_STAGE_OK;
    /* Never sent: the bytes that would leave hold what may not. */
    io->verdict.before_send = true;
    io->verdict.sensitive = true;
    return sw_stage_fail(io, SW_EINVAL, 0, "%s",
                         s->masked ? "masked body still holds personal data or secrets"
                                   : "outgoing body holds personal data or secrets");
}

const struct sw_stage_ops sw_pii_gate_ops = {
    .name = "gate",
    .request = gate_request,
};
