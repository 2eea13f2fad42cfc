/* The attempt's list of stages and the stages' contexts (relay/stage.h,
 * docs/internals/relay.md). */
#include "relay/stages.h"

#include <stdio.h>
#include <sys/random.h>
#include <string.h>

#include "contract/contract.h"
#include "state/respsave.h"

/* The PII surface of an API: what its request bodies look like. */
static enum sw_pii_surface pii_surface(const struct proxy *p, enum sw_dialect d)
{
    if (p->chat.api == SW_API_EMBEDDINGS)
        return SW_PII_SURFACE_EMBEDDINGS;
    return sw_upstream_dialect(d)->pii_surface;
}

/* The attempt's stages, upstream side first. The spliced fast path (no tree
 * needed) runs the splice stage alone, plus the gate and, for a masked
 * embeddings request, the mask. */
void sw_relay_stages_pick(struct proxy *p, bool own_api)
{
    struct sw_relay_attempt *a = &p->a;
    struct sw_stage *s = a->stages;
    size_t n = 0;
    const struct sw_config_backend *be = sw_relay_backend(p);
    p->pii_st.need_mask = a->need_mask;
    p->pii_st.native = a->native;
    p->pii_st.cloud = be->tier == SW_TIER_CLOUD;
    p->pii_st.mask_surface = pii_surface(p, own_api ? p->client_dialect : SW_DIALECT_OPENAI);
    p->pii_st.send_surface = pii_surface(p, a->up_dialect);
    p->contract.be = be;
    p->dialect.be = be;
    sw_auth_stage_free(&p->auth);
    p->auth.ts = be->tier == SW_TIER_CLOUD ? sw_token_source_for(p->env.base, p->env.cev, be) : NULL;
    p->contract.native = a->native;
    p->dialect.plain = a->native && !a->need_mask && !p->contract.schema;
    struct sw_stage all[] = {{&sw_pii_mask_ops, &p->pii_st}, {&sw_contract_stage_ops, &p->contract}};
    sw_stage_reset(all, p->contract.schema ? 2 : 1);
    bool splice = p->chat.api == SW_API_EMBEDDINGS ||
                  (!a->need_mask && !p->contract.schema &&
                   p->client_dialect == SW_DIALECT_OPENAI && a->up_dialect == SW_DIALECT_OPENAI);
    s[n++] = (struct sw_stage){&sw_pii_gate_ops, &p->pii_st};
    s[n++] = splice ? (struct sw_stage){&sw_splice_ops, &p->splice}
                    : (struct sw_stage){&sw_dialect_up_ops, &p->dialect};
    if (a->need_mask)
        s[n++] = all[0];
    if (!splice && p->contract.schema)
        s[n++] = all[1];
    if (!splice)
        s[n++] = (struct sw_stage){&sw_dialect_client_ops, &p->dialect};
    /* last: its request hook runs first, so the token is there before the
     * body is built */
    if (p->auth.ts)
        s[n++] = (struct sw_stage){&sw_auth_stage_ops, &p->auth};
    a->n_stages = n;
}

/* A client's answer object is complete (sw_dialect_stage_complete): the
 * whole Responses object or the one response.completed carried. It is
 * stored unless the request said `store: false` (state/respsave.h), its
 * input as the client's bytes carried it unless the front put a stored
 * response's items before it (previous_response_id). */
static void on_answer_complete(void *ud, const json_t *answer)
{
    struct proxy *p = ud;
    size_t len = 0;
    const char *body = p->req ? sw_http_body(p->req, &len) : NULL;
    bool raw = body && p->chat.input_len && p->chat.input_off + p->chat.input_len <= len;
    sw_resp_save(p->live->g->resp, p->key_name, p->facts.sensitive, p->chat.native,
                 raw ? body + p->chat.input_off : NULL, raw ? p->chat.input_len : 0, answer);
}

/* "resp_" and 48 hex digits of the kernel's randomness (OpenAI's shape); the
 * request id when none can be had. */
static void make_response_id(const char *request_id, char *out, size_t n)
{
    unsigned char r[24];
    if (getrandom(r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r) {
        snprintf(out, n, "resp_%s", request_id);
        return;
    }
    static const char hex[] = "0123456789abcdef";
    size_t k = (size_t)snprintf(out, n, "resp_");
    for (size_t i = 0; i < sizeof r && k + 2 < n; i++) {
        out[k++] = hex[r[i] >> 4];
        out[k++] = hex[r[i] & 15];
    }
    out[k] = '\0';
}

bool sw_relay_format_tool(const struct proxy *p)
{
    if (p->contract.schema)
        return !p->contract.tool;
    json_t *rf = json_object_get(p->chat.body, "response_format");
    const char *t = json_string_value(json_object_get(rf, "type"));
    return t && !strcmp(t, "json_object");
}

/* The stages' contexts for the request (their attempt parts are set by
 * dispatch). */
void sw_relay_stages_init(struct proxy *p)
{
    bool embeddings = p->chat.api == SW_API_EMBEDDINGS;
    const char *tool = NULL;
    const json_t *schema = NULL;
    if (p->chat.api == SW_API_CHAT) {
        schema = sw_contract_schema(p->chat.body);
        if (!schema && sw_upstream_dialect(p->client_dialect)->tool_contract)
            schema = sw_contract_tool_schema(p->chat.body, &tool);
    }
    p->splice = (struct sw_splice_stage){p->public_model_json, p->client_wants_usage, embeddings};
    struct sw_dialect_stage *d = &p->dialect;
    d->client = sw_upstream_dialect(p->client_dialect);
    d->id = p->id;
    d->public_model = p->public_model;
    d->input_tokens_est = p->chat.prompt_tokens_est;
    d->client_wants_usage = p->client_wants_usage;
    d->default_max_tokens = p->cfg->routing.default_max_tokens;
    d->request = p->chat.native;
    d->response_id[0] = '\0';
    if (d->client->object_ids)
        make_response_id(p->id, d->response_id, sizeof d->response_id);
    d->on_complete = on_answer_complete;
    d->complete_ud = p;
    d->drop = sw_config_translation(p->cfg, p->model) == SW_TRANSLATION_DROP;
    d->us = &p->x.us;
    d->cs = &p->x.cs;
    d->cs_ready = false;
    d->rerr = NULL;
    sw_buf_init(&d->aout, SW_RELAY_SSE_EVENT_MAX * 4);
    p->pii_st = (struct sw_pii_stage){
        .engine = p->engine,
        .policy = p->pii.policy,
        .binary_blocked = p->pii.binary_blocked,
        .stream = p->chat.stream,
        .embeddings = embeddings,
        .pool = p->env.pool,
        .live = p->live,
        /* the byte bound of the body (sw_request_bound_tokens counts a token
         * per byte at most): what the front also scans off the loop */
        .large = p->chat.prompt_tokens_max > SW_RELAY_PII_OFF_LOOP_BYTES,
    };
    struct sw_contract_stage *c = &p->contract;
    c->schema = schema;
    c->tool = tool;
    c->model = p->model;
    c->cfg = p->cfg;
    c->id = p->id;
    c->public_model = p->public_model;
    c->obs = p->env.obs;
    c->client = d;
}

