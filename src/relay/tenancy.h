/* The relay's side of tenancy (state/tenant.h, docs/configuration.md "Keys
 * and teams"): a keyed request's admission by its key's and team's buckets,
 * a priced cloud attempt's reservation on their budgets, what their answers
 * mean for the request (go on, decide again without the priced clouds, or
 * refuse), the x-ratelimit-* headers, and the 429s of a spent rpm, tpm or
 * budget, in the client's API's error shape. The loop acts on the answers. */
#ifndef SW_RELAY_TENANCY_H
#define SW_RELAY_TENANCY_H

#include <stdbool.h>

#include "relay/proxy.h"
#include "state/tenant.h"

typedef void (*sw_relay_tenant_cb)(struct sw_tenant_wait *w, const struct sw_tenant_answer *a);

/* Asks the key's (and team's) buckets to admit the request (p->key set;
 * the tpm cost is the prompt estimate and max_tokens, as the providers
 * count), and notes whether a budget applies (p->tenant_budget). False: no
 * key, nothing asked. True: asked; *now says *a holds the answer, else cb
 * gets it later. */
bool sw_relay_tenant_admit(struct proxy *p, sw_relay_tenant_cb cb, struct sw_tenant_answer *a,
                           bool *now);

/* The admission's answer: sets the x-ratelimit-* headers; true when the
 * request is refused (p->plan holds the 429: an empty bucket, or a spent
 * budget under on_budget: reject, unless the shared ledger is out of
 * reach); else a spent budget is a fact the router reads (keep_local). */
bool sw_relay_tenant_admitted(struct proxy *p, const struct sw_tenant_answer *a);

/* Reserves the worst case of the current attempt (sw_relay_worst_usd) on
 * the key's and team's budgets when it is a priced cloud attempt of a key
 * with a budget and holds none yet. False: nothing to reserve. True: asked,
 * *now and cb as sw_relay_tenant_admit. */
bool sw_relay_tenant_reserve(struct proxy *p, sw_relay_tenant_cb cb, struct sw_tenant_answer *a,
                             bool *now);

/* Why a reservation was refused, for the request's failures. */
const char *sw_relay_tenant_why(const struct sw_tenant_answer *a);

/* A refused reservation (or no shared ledger: fails closed): the priced
 * clouds are out for the request (reason budget); true when on_budget:
 * reject answers it instead (p->plan holds the 429). */
bool sw_relay_tenant_reserved(struct proxy *p, const struct sw_tenant_answer *a);

/* x-ratelimit-{limit,remaining,reset}-{requests,tokens}, for the limits
 * the key or its team has (the tighter ledger's), as OpenAI sends them. */
void sw_relay_tenant_headers(struct proxy *p, const struct sw_tenant_answer *a);

/* Fills p->plan with the 429 of a refusal: rate_limit_exceeded (rpm/tpm),
 * or budget_exhausted (the key's on_budget is reject), Retry-After set. */
void sw_relay_tenant_refusal(struct proxy *p, const struct sw_tenant_answer *a, bool budget);

/* Whether the key (or its team) says reject when its budget is spent. */
bool sw_relay_tenant_rejects(const struct proxy *p);

#endif
