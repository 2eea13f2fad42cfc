/* The relay's side of tenancy: see tenancy.h. */
#include "relay/tenancy.h"

#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "http/server.h"
#include "route/route.h"
#include "route/tenant.h"

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
