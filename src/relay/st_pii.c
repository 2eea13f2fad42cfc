#include "relay/st_pii.h"

#include "common/err.h"

void sw_pii_stage_free(struct sw_pii_stage *s)
{
    sw_pii_stream_free(s->pstream);
    s->pstream = NULL;
    sw_pii_map_free(s->map);
    s->map = NULL;
}

static void mask_reset(struct sw_stage *st)
{
    struct sw_pii_stage *s = st->ctx;
    sw_pii_stream_free(s->pstream);
    s->pstream = NULL;
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
    bool ok = s->map && !s->binary_blocked && io->body &&
              sw_pii_mask_body(s->engine, s->map, s->mask_surface, io->body, NULL, NULL, 0) ==
                  SW_OK;
    if (ok && s->stream && !(s->pstream = sw_pii_stream_new(s->map)))
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
    if (!s->masked || s->embeddings || !io->answer)
        return SW_STAGE_OK;
    if (sw_pii_unmask_response(s->map, io->answer) != SW_OK)
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
    struct sw_pii_counts c;
    if (s->engine && io->body &&
        sw_pii_scan_built(s->engine, s->send_surface, io->body, &c) == SW_OK && c.total == 0 &&
        (c.binary == 0 || !s->binary_blocked))
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
