#include "relay/st_contract.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/log.h"
#include "contract/contract.h"
#include "obs/metrics.h"

void sw_contract_stage_free(struct sw_contract_stage *c)
{
    sw_contract_collect_free(&c->col);
}

static void contract_reset(struct sw_stage *st)
{
    struct sw_contract_stage *c = st->ctx;
    sw_contract_collect_init(&c->col, c->tool, (size_t)c->cfg->limits.max_response_bytes);
}

/* The verdict on content (len bytes; NULL: none), logged and counted. */
static enum sw_contract_verdict judge(struct sw_contract_stage *c, const char *content, size_t len)
{
    struct sw_schema_error err;
    enum sw_contract_verdict v = sw_contract_check(c->schema, content, len, &err);
    c->verdict = sw_contract_verdict_name(v);
    if (v == SW_CONTRACT_UNCHECKED) {
        sw_warn("request %s: output contract not checked: the schema cannot be applied (%s)",
                c->id, err.reason);
    } else if (v != SW_CONTRACT_OK) {
        const char *labels[] = {c->be->name, c->public_model};
        if (c->obs && c->obs->metrics)
            sw_metrics_inc(c->obs->metrics, SW_M_CONTRACT, labels, 1);
        sw_info("request %s: the answer from %s breaks the output contract: %s%s%s", c->id,
                c->be->name, c->verdict, err.reason[0] ? ", " : "", err.reason);
    }
    return v;
}

static enum sw_stage_rc contract_event(struct sw_stage *st, struct sw_stage_io *io)
{
    struct sw_contract_stage *c = st->ctx;
    if (io->native) {
        const char *bt = json_string_value(json_object_get(io->native_before, "type"));
        if (bt)
            sw_contract_collect_native(&c->col, bt, io->native_before);
        const char *type = json_string_value(json_object_get(io->native, "type"));
        if (type)
            sw_contract_collect_native(&c->col, type, io->native);
        return SW_STAGE_OK;
    }
    size_t i;
    json_t *ch;
    json_array_foreach(io->chunks, i, ch)
        sw_contract_collect_chunk(&c->col, ch);
    return SW_STAGE_OK;
}

/* A streamed answer is judged at its end; under stream: enforce a
 * violation (or no JSON) ends the client's stream with an error event. */
static enum sw_stage_rc contract_end(struct sw_stage *st, struct sw_stage_io *io)
{
    struct sw_contract_stage *c = st->ctx;
    size_t len;
    const char *text;
    if (c->native) {
        text = sw_contract_collected_native(&c->col, &len);
    } else {
        text = sw_contract_collected(&c->col, &len);
    }
    if (judge(c, text, len) == SW_CONTRACT_OK || !strcmp(c->verdict, "unchecked") ||
        c->model->contract.stream != SW_CONTRACT_STREAM_ENFORCE)
        return SW_STAGE_OK;
    const char *msg = c->tool ? "The answer does not call the tool that tool_choice forces with "
                                "an input its input_schema accepts."
                              : "The answer does not follow the JSON schema the request's "
                                "response_format asked for.";
    if (sw_dialect_stage_error(c->client, false, "contract_violation", msg, io->out))
        return sw_stage_fail(io, SW_ENOMEM, 0, "out of memory");
    io->closed = true;
    return SW_STAGE_OK;
}

/* A whole answer that broke the contract under retry or reject: retry asks
 * the other tier once (within the deadline); reject, or a retry that cannot
 * happen or broke it again, refuses it. */
static enum sw_stage_rc refuse(struct sw_contract_stage *c, struct sw_stage_io *io)
{
    bool other = false;
    for (size_t i = 0; i < c->model->n_backends; i++)
        other |= c->cfg->backends[c->model->backends[i]].tier != c->be->tier;
    io->verdict.end_class = "contract_violation";
    if (c->model->contract.on_violation == SW_CONTRACT_RETRY && !c->retried && other) {
        c->retried = true;
        io->verdict.neutral = true;
        io->verdict.whole_tier = true;
        return sw_stage_fail(io, SW_OK, io->up_status, "contract_violation");
    }
    io->verdict.code = "contract_violation";
    io->verdict.reply_status = 502;
    if (c->tool) {
        io->verdict.param = "tool_choice";
        snprintf(io->verdict.msg, sizeof io->verdict.msg,
                 "The answer from backend '%s' does not call the tool '%s' that tool_choice "
                 "forces with an input its input_schema accepts (%s).",
                 c->be->name, c->tool, c->verdict);
    } else {
        io->verdict.param = "response_format";
        snprintf(io->verdict.msg, sizeof io->verdict.msg,
                 "The answer from backend '%s' does not follow the JSON schema the "
                 "request's response_format asked for (%s).", c->be->name, c->verdict);
    }
    return SW_STAGE_REFUSE;
}

static enum sw_stage_rc contract_answer(struct sw_stage *st, struct sw_stage_io *io)
{
    struct sw_contract_stage *c = st->ctx;
    enum sw_contract_verdict v;
    if (io->native) {
        char *input = sw_contract_native_answer_text(io->native, c->tool);
        v = judge(c, input, input ? strlen(input) : 0);
        free(input);
    } else {
        size_t len;
        const char *text = sw_contract_answer_text(io->answer, c->tool, &len);
        v = judge(c, text, len);
    }
    if ((v == SW_CONTRACT_VIOLATION || v == SW_CONTRACT_INVALID_JSON) &&
        (c->model->contract.on_violation != SW_CONTRACT_PASS || c->retried))
        return refuse(c, io);
    return SW_STAGE_OK;
}

const struct sw_stage_ops sw_contract_stage_ops = {
    .name = "contract",
    .event = contract_event,
    .answer = contract_answer,
    .end = contract_end,
    .reset = contract_reset,
};
