/* The relay's side of tenancy (state/tenant.h, docs/configuration.md "Keys
 * and teams"): the x-ratelimit-* headers of a keyed request, and the 429s
 * of a spent rpm, tpm or budget, in the client's API's error shape. */
#ifndef SW_RELAY_TENANCY_H
#define SW_RELAY_TENANCY_H

#include <stdbool.h>

#include "relay/proxy.h"
#include "state/tenant.h"

/* x-ratelimit-{limit,remaining,reset}-{requests,tokens}, for the limits
 * the key or its team has (the tighter ledger's), as OpenAI sends them. */
void sw_relay_tenant_headers(struct proxy *p, const struct sw_tenant_answer *a);

/* Fills p->plan with the 429 of a refusal: rate_limit_exceeded (rpm/tpm),
 * or budget_exhausted (the key's on_budget is reject), Retry-After set. */
void sw_relay_tenant_refusal(struct proxy *p, const struct sw_tenant_answer *a, bool budget);

/* Whether the key (or its team) says reject when its budget is spent. */
bool sw_relay_tenant_rejects(const struct proxy *p);

#endif
