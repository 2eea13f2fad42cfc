/* Tenancy arithmetic: see tenant.h. */
#include "route/tenant.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define HOUR_MS 3600000LL
#define DAY_MS 86400000LL

/* ---- Windows ---- */

static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/* Days since 1970-01-01 of y-m-01 (proleptic Gregorian; H. Hinnant's
 * days_from_civil). */
static int64_t days_from_civil(int64_t y, int64_t m)
{
    y -= m <= 2;
    int64_t era = floor_div(y, 400);
    int64_t yoe = y - era * 400;
    int64_t mp = (m + 9) % 12;
    int64_t doy = (153 * mp + 2) / 5; /* day 1 of the month */
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

/* The year and month of day z (days since 1970-01-01). */
static void civil_from_days(int64_t z, int64_t *y, int64_t *m)
{
    z += 719468;
    int64_t era = floor_div(z, 146097);
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    *m = mp < 10 ? mp + 3 : mp - 9;
    *y = yoe + era * 400 + (*m <= 2);
}

int64_t sw_tenant_calendar_start_ms(enum sw_budget_window w, int64_t wall_ms)
{
    int64_t day = floor_div(wall_ms, DAY_MS);
    switch (w) {
    case SW_BUDGET_HOUR:
        return floor_div(wall_ms, HOUR_MS) * HOUR_MS;
    case SW_BUDGET_WEEK: {
        /* 1970-01-01 was a Thursday: (day + 3) mod 7 is 0 on Mondays */
        int64_t wd = ((day + 3) % 7 + 7) % 7;
        return (day - wd) * DAY_MS;
    }
    case SW_BUDGET_MONTH: {
        int64_t y, m;
        civil_from_days(day, &y, &m);
        return days_from_civil(y, m) * DAY_MS;
    }
    case SW_BUDGET_DAY:
    case SW_BUDGET_ROLLING:
    default:
        return day * DAY_MS;
    }
}

static int64_t calendar_end_ms(enum sw_budget_window w, int64_t wall_ms)
{
    int64_t start = sw_tenant_calendar_start_ms(w, wall_ms);
    switch (w) {
    case SW_BUDGET_HOUR:
        return start + HOUR_MS;
    case SW_BUDGET_WEEK:
        return start + 7 * DAY_MS;
    case SW_BUDGET_MONTH: {
        int64_t y, m;
        civil_from_days(floor_div(start, DAY_MS), &y, &m);
        return days_from_civil(m == 12 ? y + 1 : y, m == 12 ? 1 : m + 1) * DAY_MS;
    }
    default:
        return start + DAY_MS;
    }
}

static int64_t slot_ms(int64_t rolling_ms)
{
    int64_t s = rolling_ms / SW_TENANT_ROLLING_SLOTS;
    return s > 0 ? s : 1;
}

void sw_tenant_slot(enum sw_budget_window w, int64_t rolling_ms, int64_t wall_ms, int64_t *slot,
                    int64_t *oldest)
{
    if (w == SW_BUDGET_ROLLING) {
        *slot = floor_div(wall_ms, slot_ms(rolling_ms));
        *oldest = *slot - SW_TENANT_ROLLING_SLOTS;
        return;
    }
    *slot = *oldest = sw_tenant_calendar_start_ms(w, wall_ms);
}

int64_t sw_tenant_window_end_ms(enum sw_budget_window w, int64_t rolling_ms, int64_t wall_ms)
{
    if (w == SW_BUDGET_ROLLING) {
        int64_t s = slot_ms(rolling_ms);
        return (floor_div(wall_ms, s) + 1) * s;
    }
    return calendar_end_ms(w, wall_ms);
}

/* ---- Model access ---- */

bool sw_tenant_glob(const char *pattern, const char *name)
{
    /* Iterative match with one backtrack point (the last '*'): linear in
     * the usual case, quadratic at worst, never recursive. */
    const char *p = pattern, *n = name, *star = NULL, *mark = NULL;
    while (*n) {
        if (*p == '*') {
            star = p++;
            mark = n;
        } else if (*p == *n) {
            p++;
            n++;
        } else if (star) {
            p = star + 1;
            n = ++mark;
        } else {
            return false;
        }
    }
    while (*p == '*')
        p++;
    return *p == '\0';
}

bool sw_tenant_models_allow(char *const *list, size_t n, const char *name)
{
    if (n == 0)
        return true;
    if (!name)
        return false;
    for (size_t i = 0; i < n; i++)
        if (sw_tenant_glob(list[i], name))
            return true;
    return false;
}

/* ---- Merge ---- */

void sw_tenant_merge(const struct sw_config_tenancy *key, const struct sw_config_tenancy *team,
                     struct sw_tenant_policy *out)
{
    *out = (struct sw_tenant_policy){.max_tier = SW_TIER_CLOUD,
                                     .on_budget = SW_ON_BUDGET_KEEP_LOCAL,
                                     .key = key,
                                     .team = team};
    const struct sw_config_tenancy *src[2] = {key, team};
    for (size_t i = 0; i < 2; i++) {
        if (!src[i])
            continue;
        if (src[i]->max_tier == SW_MAX_TIER_LOCAL)
            out->max_tier = SW_TIER_LOCAL;
        if (src[i]->on_budget == SW_ON_BUDGET_REJECT)
            out->on_budget = SW_ON_BUDGET_REJECT;
    }
}

bool sw_tenant_policy_allows_model(const struct sw_tenant_policy *p, const char *model)
{
    return (!p->key || sw_tenant_models_allow(p->key->models, p->key->n_models, model)) &&
           (!p->team || sw_tenant_models_allow(p->team->models, p->team->n_models, model));
}

bool sw_tenant_counts(const struct sw_config_tenancy *t)
{
    return t && (t->budget.usd > 0 || t->rpm > 0 || t->tpm > 0);
}

/* ---- Buckets ---- */

struct sw_tenant_take sw_tenant_bucket_take(struct sw_tenant_bucket *b, long limit, double cost,
                                            int64_t now_ms, bool dry)
{
    struct sw_tenant_take r = {.ok = true, .remaining = -1};
    if (limit <= 0)
        return r;
    double cap = (double)limit, rate = cap / 60000.0; /* units per ms */
    double level = b->init ? b->level : cap;
    int64_t el = b->init ? now_ms - b->last_ms : 0;
    if (el > 0)
        level = fmin(cap, level + (double)el * rate);
    if (!(cost >= 0))
        cost = 0;
    if (cost > cap)
        cost = cap;
    r.ok = level + 1e-9 >= cost;
    if (r.ok)
        level -= cost;
    else
        r.retry_ms = (int64_t)ceil((cost - level) / rate);
    if (r.retry_ms < 1 && !r.ok)
        r.retry_ms = 1;
    r.remaining = level > 0 ? (long)floor(level + 1e-9) : 0;
    r.reset_ms = (int64_t)ceil((cap - level) / rate);
    if (!dry) {
        b->level = level;
        if (!b->init || now_ms > b->last_ms)
            b->last_ms = now_ms;
        b->init = true;
    }
    return r;
}

size_t sw_tenant_fmt_reset(char *out, size_t cap, int64_t ms)
{
    int n;
    if (ms < 0)
        ms = 0;
    if (ms < 1000)
        n = snprintf(out, cap, "%lldms", (long long)ms);
    else if (ms < 60000)
        n = snprintf(out, cap, "%.3gs", (double)ms / 1000.0);
    else if (ms < 3600000)
        n = snprintf(out, cap, "%lldm%llds", (long long)(ms / 60000),
                     (long long)((ms % 60000) / 1000));
    else
        n = snprintf(out, cap, "%lldh%lldm%llds", (long long)(ms / 3600000),
                     (long long)((ms % 3600000) / 60000), (long long)((ms % 60000) / 1000));
    if (n < 0)
        return 0;
    return (size_t)n < cap ? (size_t)n : (cap ? cap - 1 : 0);
}
