/* Tenancy arithmetic: budget windows, model allow-lists, the merge of a
 * key's and its team's rules, and the per-key request and token buckets.
 * Pure: no I/O, no clock (times are wall-clock epoch ms passed in), no
 * allocation. state/tenant.c keeps the ledgers (memory or Redis) and the
 * Redis scripts repeat this arithmetic in Lua (docs/scaling.md, "Keys and
 * teams").
 *
 * Budget windows. A calendar window (hour, day, week, month) is aligned to
 * UTC: an hour starts at :00, a day at 00:00, a week on Monday 00:00, a
 * month on its first day 00:00. A rolling window of D counts the spend of
 * the last D in tenths: spend is kept in slots of D/10 and the current slot
 * and the ten before it are counted, so a cost leaves the window between D
 * and 1.1 D after it settled (never earlier: a rolling budget is never
 * spent twice over).
 *
 * Every window is a run of slots: sw_tenant_slot gives the slot now falls in
 * and the oldest slot still counted; spend settled in a slot s counts while
 * s >= oldest. For a calendar window the slot is the window's start (ms)
 * and only the current slot counts. */
#ifndef SW_ROUTE_TENANT_H
#define SW_ROUTE_TENANT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/config.h"

#define SW_TENANT_ROLLING_SLOTS 10

/* The slot containing wall_ms and the oldest slot still counted. */
void sw_tenant_slot(enum sw_budget_window w, int64_t rolling_ms, int64_t wall_ms, int64_t *slot,
                    int64_t *oldest);

/* When the budget next gives back spend: the end of the current calendar
 * window, or for a rolling window the end of the current slot (the oldest
 * counted slot leaves then). Always > wall_ms. */
int64_t sw_tenant_window_end_ms(enum sw_budget_window w, int64_t rolling_ms, int64_t wall_ms);

/* The start (epoch ms) of the UTC calendar window containing wall_ms. */
int64_t sw_tenant_calendar_start_ms(enum sw_budget_window w, int64_t wall_ms);

/* Whether name matches pattern, where '*' matches any run of characters
 * (also none) and every other character itself. Bounded: O(len^2). */
bool sw_tenant_glob(const char *pattern, const char *name);

/* Whether a model list allows name: an empty list (n == 0) allows all. */
bool sw_tenant_models_allow(char *const *list, size_t n, const char *name);

/* The rules a request of one key is held to: the key's and its team's
 * together, the most restrictive of each. Budgets and rate limits are not
 * merged into one number: each is a ledger of its own (the key's, the
 * team's) and every ledger must admit, which is the most restrictive of
 * them. */
struct sw_tenant_policy {
    enum sw_tier max_tier;          /* local: never the cloud */
    enum sw_on_budget on_budget;    /* reject when either says reject */
    const struct sw_config_tenancy *key;    /* borrowed; NULL: none */
    const struct sw_config_tenancy *team;   /* borrowed; NULL: no team */
};

void sw_tenant_merge(const struct sw_config_tenancy *key, const struct sw_config_tenancy *team,
                     struct sw_tenant_policy *out);

/* Whether both lists (key and team) allow the model. */
bool sw_tenant_policy_allows_model(const struct sw_tenant_policy *p, const char *model);

/* Whether a tenancy rule set limits anything a ledger must count. */
bool sw_tenant_counts(const struct sw_config_tenancy *t);

/* ---- Request and token buckets ---- */

/* A per-minute limit as a bucket: capacity `limit`, refilled continuously at
 * limit per 60 s. level is in whole units (requests, tokens), fractional. */
struct sw_tenant_bucket {
    double level;
    int64_t last_ms;
    bool init;
};

struct sw_tenant_take {
    bool ok;
    long remaining;             /* whole units left after this take (or now, refused) */
    int64_t reset_ms;           /* until the bucket is full again */
    int64_t retry_ms;           /* refused: until `cost` fits (>= 1) */
};

/* Refills b to now_ms, then takes cost (> capacity counts as the capacity)
 * when it fits. limit <= 0: no limit, always ok. Does not modify b when
 * dry is true (a check before every ledger takes). */
struct sw_tenant_take sw_tenant_bucket_take(struct sw_tenant_bucket *b, long limit, double cost,
                                            int64_t now_ms, bool dry);

/* "1s", "6m0s", "20ms": a duration as OpenAI's x-ratelimit-reset-* headers
 * write it. Returns the length written (NUL-terminated, truncated to cap). */
size_t sw_tenant_fmt_reset(char *out, size_t cap, int64_t ms);

#endif
