/* The relay's side of tenancy: see tenancy.h. */
#include "relay/tenancy.h"

#include <stdio.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"
#include "relay/account.h"
#include "http/server.h"
#include "route/route.h"
#include "route/tenant.h"
#include "state/live.h"

static void add(struct proxy *p, const char *name, const char *kind, long long v)
{
    char h[64], val[32];
    snprintf(h, sizeof h, "x-ratelimit-%s-%s", name, kind);
    snprintf(val, sizeof val, "%lld", v);
    sw_http_add_header(p->req, h, val);
}

static void add_rate(struct proxy *p, const char *kind, const struct sw_tenant_rate *r)
{
    if (r->limit <= 0)
        return;
    char h[64], val[32];
    add(p, "limit", kind, r->limit);
    add(p, "remaining", kind, r->remaining);
    snprintf(h, sizeof h, "x-ratelimit-reset-%s", kind);
    sw_tenant_fmt_reset(val, sizeof val, r->reset_ms);
    sw_http_add_header(p->req, h, val);
}

void sw_relay_tenant_headers(struct proxy *p, const struct sw_tenant_answer *a)
{
    if (!p->req)
        return;
    add_rate(p, "requests", &a->req);
    add_rate(p, "tokens", &a->tok);
}

void sw_relay_tenant_refusal(struct proxy *p, const struct sw_tenant_answer *a, bool budget)
{
    struct sw_route_plan *pl = &p->plan;
    pl->n = 0;
    pl->status = 429;
    long s = (long)((a->retry_ms + 999) / 1000);
    pl->retry_after_s = s > 0 ? s : 1;
    const char *whose = a->which == 1 ? "this key's team" : "this API key";
    if (budget) {
        pl->code = SW_ROUTE_CODE_BUDGET;
        snprintf(pl->message, sizeof pl->message,
                 "The cloud budget of %s is spent (keys[].budget, teams[].budget; on_budget: "
                 "reject).", whose);
    } else {
        pl->code = "rate_limit_exceeded";
        snprintf(pl->message, sizeof pl->message,
                 "Rate limit reached for %s: %s per minute (keys[].%s, teams[].%s).", whose,
                 a->tokens ? "tokens" : "requests", a->tokens ? "tpm" : "rpm",
                 a->tokens ? "tpm" : "rpm");
    }
    p->tenant_rejected = true;
    sw_info("request %s: key %s: %s", p->id, p->key && p->key->id ? p->key->id : "-",
            budget ? "budget spent (reject)" : a->tokens ? "tpm reached" : "rpm reached");
}

bool sw_relay_tenant_rejects(const struct proxy *p)
{
    if (!p->key)
        return false;
    const struct sw_config_tenancy *team =
        p->key->team_index >= 0 && (size_t)p->key->team_index < p->cfg->n_teams
            ? &p->cfg->teams[p->key->team_index].t
            : NULL;
    struct sw_tenant_policy pol;
    sw_tenant_merge(&p->key->t, team, &pol);
    return pol.on_budget == SW_ON_BUDGET_REJECT;
}

bool sw_relay_tenant_admit(struct proxy *p, sw_relay_tenant_cb cb, struct sw_tenant_answer *a,
                           bool *now)
{
    if (p->key) {
        sw_tenant_ask_for(p->cfg, p->key, p->facts.prompt_tokens_est + p->facts.max_tokens,
                          &p->tw.ask);
        for (size_t i = 0; i < p->tw.ask.n; i++)
            p->tenant_budget = p->tenant_budget || p->tw.ask.l[i].rules->budget.usd > 0;
    }
    if (!p->tw.ask.n)
        return false;
    p->tw.cb = cb;
    *now = sw_tenant_admit(p->live->g->tenant, &p->tw, sw_wall_ms(), a);
    return true;
}

bool sw_relay_tenant_admitted(struct proxy *p, const struct sw_tenant_answer *a)
{
    sw_relay_tenant_headers(p, a);
    if (a->v == SW_TENANT_RATE_LIMITED) {
        sw_relay_tenant_refusal(p, a, false);
        return true;
    }
    if (a->budget_spent) {
        if (!a->unavailable && sw_relay_tenant_rejects(p)) {
            sw_relay_tenant_refusal(p, a, true);
            return true;
        }
        p->facts.tenant_budget_out = true;
    }
    return false;
}

bool sw_relay_tenant_reserve(struct proxy *p, sw_relay_tenant_cb cb, struct sw_tenant_answer *a,
                             bool *now)
{
    const struct sw_config_backend *be = sw_relay_backend(p);
    if (be->tier != SW_TIER_CLOUD || !p->tenant_budget || p->tw.held ||
        (be->input_usd_per_mtok <= 0 && be->output_usd_per_mtok <= 0))
        return false;
    p->tw.cb = cb;
    *now = sw_tenant_reserve(p->live->g->tenant, &p->tw, sw_relay_worst_usd(p, be), sw_wall_ms(),
                             a);
    return true;
}

const char *sw_relay_tenant_why(const struct sw_tenant_answer *a)
{
    return a->v == SW_TENANT_UNAVAILABLE ? "no shared key budget ledger (fails closed)"
                                         : "key or team budget reached";
}

bool sw_relay_tenant_reserved(struct proxy *p, const struct sw_tenant_answer *a)
{
    p->tenant_refused = true;
    p->facts.tenant_budget_out = true;
    if (a->v == SW_TENANT_OVER_BUDGET && sw_relay_tenant_rejects(p)) {
        sw_relay_tenant_refusal(p, a, true);
        return true;
    }
    return false;
}
