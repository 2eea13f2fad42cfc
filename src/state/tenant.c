/* The ledgers of keys and teams: see tenant.h and docs/scaling.md. */
#include "state/tenant.h"

#include <hiredis/hiredis.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "state/rstate.h"

#define N_SLOTS (SW_TENANT_ROLLING_SLOTS + 2)

/* ---- Memory ledgers ---- */

struct ledger {
    char id[SW_TENANT_ID_MAX];      /* "" free */
    int window;                     /* what the slots were counted in */
    long rolling_ms;
    int64_t slot[N_SLOTS];
    double usd[N_SLOTS];
    bool slot_used[N_SLOTS];
    double reserved_usd;
    struct sw_tenant_bucket req, tok;
    /* this replica's counts */
    double spent_usd_total;
    double max_reserved_usd;        /* the largest reservation granted */
    double seen_window_usd;         /* shared: the window's settled spend, last read; -1 none */
    uint64_t requests, rate_limited, budget_refused;
};

struct sw_tenant {
    struct ledger *l;               /* SW_TENANT_MAX_LEDGERS, open addressing */
    size_t n;
    struct sw_rstate *rs;           /* NULL: memory only */
    char prefix[128];
    long resv_ttl_ms;
    char replica[24];
    uint64_t next_id;
    uint64_t degraded_total;
    char sha_admit[41], sha_reserve[41], sha_settle[41];
};

static uint64_t hash(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

/* The ledger of id; create: made when absent (NULL when the table is full). */
static struct ledger *find(struct sw_tenant *t, const char *id, bool create)
{
    if (!t || !id[0])
        return NULL;
    size_t i = (size_t)(hash(id) % SW_TENANT_MAX_LEDGERS);
    for (size_t k = 0; k < SW_TENANT_MAX_LEDGERS; k++, i = (i + 1) % SW_TENANT_MAX_LEDGERS) {
        struct ledger *l = &t->l[i];
        if (!l->id[0]) {
            if (!create || t->n >= SW_TENANT_MAX_LEDGERS * 3 / 4)
                return NULL;
            snprintf(l->id, sizeof l->id, "%s", id);
            l->seen_window_usd = -1;
            t->n++;
            return l;
        }
        if (!strcmp(l->id, id))
            return l;
    }
    return NULL;
}

/* The spend counted now in l's window (rules: the window to count in). */
static double window_usd(struct ledger *l, const struct sw_config_tenancy *r, int64_t wall_ms)
{
    if (l->window != r->budget.window || l->rolling_ms != r->budget.rolling_ms) {
        memset(l->slot_used, 0, sizeof l->slot_used); /* another window since a reload */
        l->window = r->budget.window;
        l->rolling_ms = r->budget.rolling_ms;
    }
    int64_t slot, oldest;
    sw_tenant_slot(r->budget.window, r->budget.rolling_ms, wall_ms, &slot, &oldest);
    double sum = 0;
    for (size_t i = 0; i < N_SLOTS; i++) {
        if (l->slot_used[i] && l->slot[i] < oldest)
            l->slot_used[i] = false;
        else if (l->slot_used[i])
            sum += l->usd[i];
    }
    return sum;
}

static void add_usd(struct ledger *l, const struct sw_config_tenancy *r, int64_t wall_ms,
                    double usd)
{
    window_usd(l, r, wall_ms); /* drops the slots that left the window */
    int64_t slot, oldest;
    sw_tenant_slot(r->budget.window, r->budget.rolling_ms, wall_ms, &slot, &oldest);
    size_t free_i = N_SLOTS;
    for (size_t i = 0; i < N_SLOTS; i++) {
        if (l->slot_used[i] && l->slot[i] == slot) {
            l->usd[i] += usd;
            return;
        }
        if (!l->slot_used[i] && free_i == N_SLOTS)
            free_i = i;
    }
    if (free_i == N_SLOTS) { /* not reached: at most SLOTS + 1 slots count */
        size_t min = 0;
        for (size_t i = 1; i < N_SLOTS; i++)
            if (l->slot[i] < l->slot[min])
                min = i;
        l->usd[min ? min - 1 : 1] += l->usd[min];
        free_i = min;
    }
    l->slot_used[free_i] = true;
    l->slot[free_i] = slot;
    l->usd[free_i] = usd;
}

static void rate_of(const struct sw_tenant_take *tk, long limit, struct sw_tenant_rate *r)
{
    if (limit <= 0)
        return;
    /* the tightest ledger shows: the one with the least left */
    if (r->limit == 0 || tk->remaining < r->remaining) {
        r->limit = limit;
        r->remaining = tk->remaining;
        r->reset_ms = tk->reset_ms;
    }
}

static bool budget_spent(struct ledger *l, const struct sw_config_tenancy *r, int64_t wall_ms)
{
    return r->budget.usd > 0 && window_usd(l, r, wall_ms) + l->reserved_usd >= r->budget.usd;
}

/* Admission on the memory ledgers: the buckets, then whether a budget is spent. */
static void mem_admit(struct sw_tenant *t, const struct sw_tenant_ask *ask, int64_t wall_ms,
                      bool budgets, struct sw_tenant_answer *out)
{
    struct ledger *ls[2] = {NULL, NULL};
    *out = (struct sw_tenant_answer){.v = SW_TENANT_OK};
    for (size_t i = 0; i < ask->n; i++) {
        ls[i] = find(t, ask->l[i].id, true);
        if (!ls[i]) {
            out->budget_spent = true; /* no ledger: the cloud is refused */
            continue;
        }
        const struct sw_config_tenancy *r = ask->l[i].rules;
        struct sw_tenant_take q = sw_tenant_bucket_take(&ls[i]->req, r->rpm, 1, wall_ms, true);
        struct sw_tenant_take k =
            sw_tenant_bucket_take(&ls[i]->tok, r->tpm, (double)ask->tokens, wall_ms, true);
        if ((!q.ok || !k.ok) && out->v == SW_TENANT_OK) {
            out->v = SW_TENANT_RATE_LIMITED;
            out->which = i;
            out->tokens = q.ok;
            out->retry_ms = !q.ok ? q.retry_ms : k.retry_ms;
            if (!q.ok && !k.ok && k.retry_ms > q.retry_ms)
                out->retry_ms = k.retry_ms;
        }
        rate_of(&q, r->rpm, &out->req);
        rate_of(&k, r->tpm, &out->tok);
    }
    if (out->v == SW_TENANT_RATE_LIMITED) {
        if (ls[out->which])
            ls[out->which]->rate_limited++;
        return;
    }
    out->req = out->tok = (struct sw_tenant_rate){0};
    for (size_t i = 0; i < ask->n; i++) {
        if (!ls[i])
            continue;
        const struct sw_config_tenancy *r = ask->l[i].rules;
        struct sw_tenant_take q = sw_tenant_bucket_take(&ls[i]->req, r->rpm, 1, wall_ms, false);
        struct sw_tenant_take k =
            sw_tenant_bucket_take(&ls[i]->tok, r->tpm, (double)ask->tokens, wall_ms, false);
        rate_of(&q, r->rpm, &out->req);
        rate_of(&k, r->tpm, &out->tok);
        ls[i]->requests++;
        if (budgets && budget_spent(ls[i], r, wall_ms))
            out->budget_spent = true;
    }
}

static void mem_reserve(struct sw_tenant *t, struct sw_tenant_wait *w, double est,
                        int64_t wall_ms, struct sw_tenant_answer *out)
{
    const struct sw_tenant_ask *ask = &w->ask;
    *out = (struct sw_tenant_answer){.v = SW_TENANT_OK};
    struct ledger *ls[2] = {NULL, NULL};
    for (size_t i = 0; i < ask->n; i++) {
        const struct sw_config_tenancy *r = ask->l[i].rules;
        if (r->budget.usd <= 0)
            continue;
        ls[i] = find(t, ask->l[i].id, true);
        if (!ls[i]) {
            out->v = SW_TENANT_UNAVAILABLE;
            out->which = i;
            return;
        }
        if (window_usd(ls[i], r, wall_ms) + ls[i]->reserved_usd + est > r->budget.usd) {
            out->v = SW_TENANT_OVER_BUDGET;
            out->which = i;
            ls[i]->budget_refused++;
            out->retry_ms =
                sw_tenant_window_end_ms(r->budget.window, r->budget.rolling_ms, wall_ms) - wall_ms;
            return;
        }
    }
    for (size_t i = 0; i < ask->n; i++)
        if (ls[i]) {
            ls[i]->reserved_usd += est;
            if (est > ls[i]->max_reserved_usd)
                ls[i]->max_reserved_usd = est;
        }
    w->held = true;
    w->shared = false;
    w->resv_usd = est;
}

/* ---- Redis ---- */

/* Lua helpers shared by the scripts: a ledger's keys are <p>tn:<id> (hash:
 * req, req_t, tok, tok_t: the buckets), <p>tn:<id>:spend (hash slot -> USD),
 * <p>tn:<id>:resv (zset reservation id -> expiry wall ms) and <p>tn:<id>:amt
 * (hash reservation id -> USD). */
#define LUA_TN \
    "local function level(k, f, lim, now)\n" \
    "  local h = redis.call('HMGET', k, f, f..'_t')\n" \
    "  local v, t = tonumber(h[1]), tonumber(h[2])\n" \
    "  if not v or not t then return lim end\n" \
    "  local el = now - t\n" \
    "  if el < 0 then el = 0 end\n" \
    "  return math.min(lim, v + el * lim / 60000)\n" \
    "end\n" \
    "local function spent(b, oldest)\n" \
    "  local h = redis.call('HGETALL', b..':spend')\n" \
    "  local s = 0\n" \
    "  for i = 1, #h, 2 do\n" \
    "    if tonumber(h[i]) < oldest then redis.call('HDEL', b..':spend', h[i])\n" \
    "    else s = s + tonumber(h[i+1]) end\n" \
    "  end\n" \
    "  return s\n" \
    "end\n" \
    "local function held(b, now)\n" \
    "  local old = redis.call('ZRANGEBYSCORE', b..':resv', '-inf', now)\n" \
    "  for _, r in ipairs(old) do redis.call('HDEL', b..':amt', r) end\n" \
    "  if #old > 0 then redis.call('ZREMRANGEBYSCORE', b..':resv', '-inf', now) end\n" \
    "  local s = 0\n" \
    "  for _, v in ipairs(redis.call('HVALS', b..':amt')) do s = s + tonumber(v) end\n" \
    "  return s\n" \
    "end\n"

/* ARGV: prefix now tokens n, then per ledger: id rpm tpm budget oldest.
 * Returns {verdict, which, retry_ms, spent(0|1), req_lim, req_rem, req_reset,
 * tok_lim, tok_rem, tok_reset, tokens_refused(0|1), spent0, spent1 (-1: no budget)}. */
static const char lua_admit[] = LUA_TN
    "local p, now, tokens, n = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])\n"
    "local lv, out = {}, {'ok', '0', '0', '0', '0', '0', '0', '0', '0', '0', '0', '-1', '-1'}\n"
    "local worst = nil\n"
    "for i = 0, n - 1 do\n"
    "  local id, rpm, tpm = ARGV[5+i*5], tonumber(ARGV[6+i*5]), tonumber(ARGV[7+i*5])\n"
    "  local b = p..'tn:'..id\n"
    "  local q, k = 0, 0\n"
    "  if rpm > 0 then q = level(b, 'req', rpm, now) end\n"
    "  if tpm > 0 then k = level(b, 'tok', tpm, now) end\n"
    "  lv[i] = {q, k}\n"
    "  local cost = math.min(tokens, tpm)\n"
    "  local rq = rpm > 0 and q + 1e-9 < 1\n"
    "  local rk = tpm > 0 and k + 1e-9 < cost\n"
    "  if (rq or rk) and not worst then\n"
    "    local r1, r2 = 0, 0\n"
    "    if rq then r1 = math.ceil((1 - q) * 60000 / rpm) end\n"
    "    if rk then r2 = math.ceil((cost - k) * 60000 / tpm) end\n"
    "    worst = i\n"
    "    out[1], out[2], out[3] = 'rate', tostring(i), tostring(math.max(r1, r2, 1))\n"
    "    if not rq then out[11] = '1' end\n"
    "  end\n"
    "end\n"
    "local function show(o, lim, left)\n"
    "  if lim <= 0 then return end\n"
    "  local rem = math.max(0, math.floor(left + 1e-9))\n"
    "  if tonumber(out[o]) == 0 or rem < tonumber(out[o+1]) then\n"
    "    out[o], out[o+1] = tostring(lim), tostring(rem)\n"
    "    out[o+2] = tostring(math.ceil((lim - left) * 60000 / lim))\n"
    "  end\n"
    "end\n"
    "for i = 0, n - 1 do\n"
    "  local id, rpm, tpm = ARGV[5+i*5], tonumber(ARGV[6+i*5]), tonumber(ARGV[7+i*5])\n"
    "  local budget, oldest = tonumber(ARGV[8+i*5]), tonumber(ARGV[9+i*5])\n"
    "  local b = p..'tn:'..id\n"
    "  local q, k = lv[i][1], lv[i][2]\n"
    "  if not worst then\n"
    "    if rpm > 0 then q = q - 1; redis.call('HSET', b, 'req', tostring(q), 'req_t', ARGV[2]) end\n"
    "    if tpm > 0 then k = k - math.min(tokens, tpm); redis.call('HSET', b, 'tok', tostring(k), 'tok_t', ARGV[2]) end\n"
    "    if rpm > 0 or tpm > 0 then redis.call('PEXPIRE', b, 120000) end\n"
    "    if budget > 0 then\n"
    "      local s = spent(b, oldest)\n"
    "      out[12 + i] = tostring(s)\n"
    "      if s + held(b, now) >= budget then out[4] = '1' end\n"
    "    end\n"
    "  end\n"
    "  show(5, rpm, q)\n"
    "  show(8, tpm, k)\n"
    "end\n"
    "return out\n";

/* ARGV: prefix now resv_id est expiry n, then per ledger: id budget oldest.
 * Returns {verdict, which}. */
static const char lua_reserve[] = LUA_TN
    "local p, now, rid, est = ARGV[1], tonumber(ARGV[2]), ARGV[3], tonumber(ARGV[4])\n"
    "local n = tonumber(ARGV[6])\n"
    "for i = 0, n - 1 do\n"
    "  local b, budget, oldest = p..'tn:'..ARGV[7+i*3], tonumber(ARGV[8+i*3]), tonumber(ARGV[9+i*3])\n"
    "  if budget > 0 and spent(b, oldest) + held(b, now) + est > budget then\n"
    "    return {'budget', tostring(i)} end\n"
    "end\n"
    "for i = 0, n - 1 do\n"
    "  local b = p..'tn:'..ARGV[7+i*3]\n"
    "  if tonumber(ARGV[8+i*3]) > 0 then\n"
    "    redis.call('ZADD', b..':resv', tonumber(ARGV[5]), rid)\n"
    "    redis.call('HSET', b..':amt', rid, ARGV[4])\n"
    "    redis.call('PEXPIRE', b..':resv', tonumber(ARGV[5]) - now + 1000)\n"
    "    redis.call('PEXPIRE', b..':amt', tonumber(ARGV[5]) - now + 1000)\n"
    "  end\n"
    "end\n"
    "return {'ok', '0'}\n";

/* ARGV: prefix resv_id actual n, then per ledger: id slot keep_ms. */
static const char lua_settle[] =
    "local p, rid, actual, n = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])\n"
    "for i = 0, n - 1 do\n"
    "  local b = p..'tn:'..ARGV[5+i*3]\n"
    "  redis.call('HDEL', b..':amt', rid)\n"
    "  redis.call('ZREM', b..':resv', rid)\n"
    "  if actual > 0 then\n"
    "    redis.call('HINCRBYFLOAT', b..':spend', ARGV[6+i*3], ARGV[3])\n"
    "    redis.call('PEXPIRE', b..':spend', tonumber(ARGV[7+i*3]))\n"
    "  end\n"
    "end\n"
    "return 'ok'\n";

enum op_kind { OP_ADMIT, OP_RESERVE };

struct sw_tenant_op {
    struct sw_tenant *t;
    enum op_kind kind;
    struct sw_tenant_wait *w;       /* NULL once cancelled */
    struct sw_tenant_ask ask;       /* reserve: what a late grant gives back */
    char resv_id[48];
    double est;
    int64_t wall_ms;
};

static bool uses_redis(const struct sw_tenant *t)
{
    return t->rs && !sw_rstate_degraded(t->rs);
}

static long long oldest_of(const struct sw_config_tenancy *r, int64_t wall_ms)
{
    int64_t slot, oldest;
    sw_tenant_slot(r->budget.window, r->budget.rolling_ms, wall_ms, &slot, &oldest);
    return (long long)oldest;
}

static const char *str_el(const redisReply *r, size_t i)
{
    return r && r->type == REDIS_REPLY_ARRAY && i < r->elements &&
                   r->element[i]->type == REDIS_REPLY_STRING
               ? r->element[i]->str
               : NULL;
}

static void answer(struct sw_tenant_op *op, const struct sw_tenant_answer *a)
{
    struct sw_tenant_wait *w = op->w;
    if (w) {
        w->op = NULL;
        w->cb(w, a);
    }
}

static void give_back(struct sw_tenant *t, const struct sw_tenant_ask *ask, const char *rid)
{
    struct sw_tenant_wait w = {.ask = *ask, .held = true, .shared = true};
    snprintf(w.resv_id, sizeof w.resv_id, "%s", rid);
    sw_tenant_settle(t, &w, 0, 0);
}

static void on_admit(void *ud, const void *reply)
{
    struct sw_tenant_op *op = ud;
    struct sw_tenant *t = op->t;
    const redisReply *r = reply;
    struct sw_tenant_answer a = {.v = SW_TENANT_OK};
    const char *v = str_el(r, 0);
    if (!v || r->elements < 13) {
        /* Redis failed: the buckets of this replica; a budget counts as spent */
        t->degraded_total++;
        if (op->w) {
            mem_admit(t, &op->w->ask, op->wall_ms, false, &a);
            a.budget_spent = a.unavailable = true;
        }
        answer(op, &a);
        free(op);
        return;
    }
    a.v = !strcmp(v, "rate") ? SW_TENANT_RATE_LIMITED : SW_TENANT_OK;
    a.which = (size_t)strtoul(str_el(r, 1), NULL, 10);
    a.retry_ms = strtoll(str_el(r, 2), NULL, 10);
    a.budget_spent = !strcmp(str_el(r, 3), "1");
    a.req = (struct sw_tenant_rate){strtol(str_el(r, 4), NULL, 10), strtol(str_el(r, 5), NULL, 10),
                                    strtoll(str_el(r, 6), NULL, 10)};
    a.tok = (struct sw_tenant_rate){strtol(str_el(r, 7), NULL, 10), strtol(str_el(r, 8), NULL, 10),
                                    strtoll(str_el(r, 9), NULL, 10)};
    a.tokens = !strcmp(str_el(r, 10), "1");
    if (op->w) {
        for (size_t i = 0; i < op->w->ask.n; i++) {
            struct ledger *l = find(t, op->w->ask.l[i].id, true);
            if (l && a.v == SW_TENANT_OK)
                l->requests++;
            const char *sp = str_el(r, 11 + i);
            if (l && sp && strtod(sp, NULL) >= 0)
                l->seen_window_usd = strtod(sp, NULL);
            if (l && a.v == SW_TENANT_RATE_LIMITED && i == a.which)
                l->rate_limited++;
        }
    }
    answer(op, &a);
    free(op);
}

static void on_reserve(void *ud, const void *reply)
{
    struct sw_tenant_op *op = ud;
    struct sw_tenant *t = op->t;
    const char *v = str_el(reply, 0);
    struct sw_tenant_answer a = {.v = SW_TENANT_OK};
    if (!v) {
        t->degraded_total++;
        a.v = SW_TENANT_UNAVAILABLE;
        answer(op, &a);
        free(op);
        return;
    }
    if (!strcmp(v, "budget")) {
        a.v = SW_TENANT_OVER_BUDGET;
        a.which = (size_t)strtoul(str_el(reply, 1), NULL, 10);
        if (a.which < op->ask.n) {
            const struct sw_config_tenancy *r = op->ask.l[a.which].rules;
            struct ledger *l = find(t, op->ask.l[a.which].id, true);
            if (l)
                l->budget_refused++;
            a.retry_ms = sw_tenant_window_end_ms(r->budget.window, r->budget.rolling_ms,
                                                 op->wall_ms) -
                         op->wall_ms;
        }
    } else if (!op->w) {
        give_back(t, &op->ask, op->resv_id); /* granted after the request left */
    } else {
        for (size_t i = 0; i < op->ask.n; i++) {
            struct ledger *l = find(t, op->ask.l[i].id, true);
            if (l && op->ask.l[i].rules->budget.usd > 0 && op->est > l->max_reserved_usd)
                l->max_reserved_usd = op->est;
        }
        op->w->held = true;
        op->w->shared = true;
        op->w->resv_usd = op->est;
        snprintf(op->w->resv_id, sizeof op->w->resv_id, "%s", op->resv_id);
    }
    answer(op, &a);
    free(op);
}

/* Starts a script; false when Redis cannot be asked now (op freed). */
static bool send_script(struct sw_tenant *t, struct sw_tenant_op *op, const char *script,
                        char *sha, const char *const *args, int n,
                        void (*cb)(void *, const void *))
{
    if (sw_rstate_eval(t->rs, script, sha, args, n, cb, op) == 0)
        return true;
    free(op);
    t->degraded_total++;
    return false;
}

static int redis_admit(struct sw_tenant *t, struct sw_tenant_wait *w, int64_t wall_ms)
{
    struct sw_tenant_op *op = calloc(1, sizeof *op);
    if (!op)
        return -1;
    *op = (struct sw_tenant_op){.t = t, .kind = OP_ADMIT, .w = w, .wall_ms = wall_ms};
    char now[24], tok[24], n[8], num[2][4][32];
    const char *args[4 + 2 * 5];
    int k = 0;
    snprintf(now, sizeof now, "%lld", (long long)wall_ms);
    snprintf(tok, sizeof tok, "%ld", w->ask.tokens);
    snprintf(n, sizeof n, "%zu", w->ask.n);
    args[k++] = t->prefix;
    args[k++] = now;
    args[k++] = tok;
    args[k++] = n;
    for (size_t i = 0; i < w->ask.n; i++) {
        const struct sw_config_tenancy *r = w->ask.l[i].rules;
        args[k++] = w->ask.l[i].id;
        snprintf(num[i][0], sizeof num[i][0], "%ld", r->rpm);
        snprintf(num[i][1], sizeof num[i][1], "%ld", r->tpm);
        snprintf(num[i][2], sizeof num[i][2], "%.17g", r->budget.usd);
        args[k++] = num[i][0];
        args[k++] = num[i][1];
        args[k++] = num[i][2];
        snprintf(num[i][3], sizeof num[i][3], "%lld", oldest_of(r, wall_ms));
        args[k++] = num[i][3];
    }
    if (!send_script(t, op, lua_admit, t->sha_admit, args, k, on_admit))
        return -1;
    w->op = op;
    return 0;
}

static int redis_reserve(struct sw_tenant *t, struct sw_tenant_wait *w, double est,
                         int64_t wall_ms)
{
    struct sw_tenant_op *op = calloc(1, sizeof *op);
    if (!op)
        return -1;
    *op = (struct sw_tenant_op){
        .t = t, .kind = OP_RESERVE, .w = w, .ask = w->ask, .est = est, .wall_ms = wall_ms};
    snprintf(op->resv_id, sizeof op->resv_id, "%s:t%llu", t->replica,
             (unsigned long long)++t->next_id);
    char now[24], e[32], exp[24], n[8], bud[2][32], old[2][32];
    const char *args[6 + 2 * 3];
    int k = 0;
    snprintf(now, sizeof now, "%lld", (long long)wall_ms);
    snprintf(e, sizeof e, "%.17g", est);
    snprintf(exp, sizeof exp, "%lld", (long long)(wall_ms + t->resv_ttl_ms));
    snprintf(n, sizeof n, "%zu", w->ask.n);
    args[k++] = t->prefix;
    args[k++] = now;
    args[k++] = op->resv_id;
    args[k++] = e;
    args[k++] = exp;
    args[k++] = n;
    for (size_t i = 0; i < w->ask.n; i++) {
        const struct sw_config_tenancy *r = w->ask.l[i].rules;
        snprintf(bud[i], sizeof bud[i], "%.17g", r->budget.usd);
        snprintf(old[i], sizeof old[i], "%lld", oldest_of(r, wall_ms));
        args[k++] = w->ask.l[i].id;
        args[k++] = bud[i];
        args[k++] = old[i];
    }
    if (!send_script(t, op, lua_reserve, t->sha_reserve, args, k, on_reserve))
        return -1;
    w->op = op;
    return 0;
}

static void redis_settle(struct sw_tenant *t, struct sw_tenant_wait *w, double actual,
                         int64_t wall_ms)
{
    char a[32], n[8], slot[2][24], keep[2][24];
    const char *args[4 + 2 * 3];
    int k = 0;
    snprintf(a, sizeof a, "%.17g", actual > 0 ? actual : 0);
    size_t m = 0;
    args[k++] = t->prefix;
    args[k++] = w->resv_id;
    args[k++] = a;
    args[k++] = n;
    for (size_t i = 0; i < w->ask.n; i++) {
        const struct sw_config_tenancy *r = w->ask.l[i].rules;
        if (r->budget.usd <= 0)
            continue;
        int64_t s, o;
        sw_tenant_slot(r->budget.window, r->budget.rolling_ms, wall_ms, &s, &o);
        int64_t end = sw_tenant_window_end_ms(r->budget.window, r->budget.rolling_ms, wall_ms);
        int64_t keep_ms = r->budget.window == SW_BUDGET_ROLLING
                              ? r->budget.rolling_ms + r->budget.rolling_ms / 5 + 1000
                              : end - wall_ms + 60000;
        snprintf(slot[m], sizeof slot[m], "%lld", (long long)s);
        snprintf(keep[m], sizeof keep[m], "%lld", (long long)keep_ms);
        args[k++] = w->ask.l[i].id;
        args[k++] = slot[m];
        args[k++] = keep[m];
        m++;
    }
    snprintf(n, sizeof n, "%zu", m);
    if (m && sw_rstate_eval(t->rs, lua_settle, t->sha_settle, args, k, NULL, NULL)) {
        /* lost: the reservation expires with its TTL; the spend is counted
         * here only (logged: the shared budget misses it) */
        t->degraded_total++;
        sw_warn("tenancy: could not settle %.6f USD on Redis (the reservation expires)", actual);
    }
}

/* ---- Public ---- */

struct sw_tenant *sw_tenant_new(void)
{
    struct sw_tenant *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->l = calloc(SW_TENANT_MAX_LEDGERS, sizeof *t->l);
    if (!t->l) {
        free(t);
        return NULL;
    }
    snprintf(t->replica, sizeof t->replica, "mem");
    return t;
}

void sw_tenant_free(struct sw_tenant *t)
{
    if (!t)
        return;
    free(t->l);
    free(t);
}

void sw_tenant_set_redis(struct sw_tenant *t, struct sw_rstate *rs, const char *prefix,
                         long resv_ttl_ms, const char *replica)
{
    if (!t)
        return;
    t->rs = rs;
    snprintf(t->prefix, sizeof t->prefix, "%s", prefix ? prefix : "");
    t->resv_ttl_ms = resv_ttl_ms > 0 ? resv_ttl_ms : 60000;
    snprintf(t->replica, sizeof t->replica, "%s", replica ? replica : "mem");
}

void sw_tenant_ask_for(const struct sw_config *cfg, const struct sw_config_key *key, long tokens,
                       struct sw_tenant_ask *ask)
{
    memset(ask, 0, sizeof *ask);
    ask->tokens = tokens > 0 ? tokens : 0;
    if (!key || !key->id)
        return;
    const struct sw_config_team *team =
        key->team_index >= 0 && (size_t)key->team_index < cfg->n_teams
            ? &cfg->teams[key->team_index]
            : NULL;
    snprintf(ask->l[0].id, sizeof ask->l[0].id, "k:%s", key->id);
    ask->l[0].rules = &key->t;
    ask->n = 1;
    if (team) {
        snprintf(ask->l[1].id, sizeof ask->l[1].id, "t:%s", team->name);
        ask->l[1].rules = &team->t;
        ask->n = 2;
    }
}

int sw_tenant_admit(struct sw_tenant *t, struct sw_tenant_wait *w, int64_t wall_ms,
                    struct sw_tenant_answer *out)
{
    bool limits = false;
    for (size_t i = 0; i < w->ask.n; i++)
        limits = limits || w->ask.l[i].rules->rpm > 0 || w->ask.l[i].rules->tpm > 0 ||
                 w->ask.l[i].rules->budget.usd > 0;
    if (limits && uses_redis(t) && redis_admit(t, w, wall_ms) == 0)
        return 0;
    if (limits && t->rs && !uses_redis(t))
        t->degraded_total++; /* (a failed send counted itself) */
    mem_admit(t, &w->ask, wall_ms, !t->rs, out);
    if (t->rs) { /* shared budgets but no Redis: fail closed for the cloud */
        for (size_t i = 0; i < w->ask.n; i++)
            if (w->ask.l[i].rules->budget.usd > 0)
                out->budget_spent = out->unavailable = true;
    }
    return 1;
}

int sw_tenant_reserve(struct sw_tenant *t, struct sw_tenant_wait *w, double est_usd,
                      int64_t wall_ms, struct sw_tenant_answer *out)
{
    *out = (struct sw_tenant_answer){.v = SW_TENANT_OK};
    if (w->held)
        return 1;
    bool budget = false;
    for (size_t i = 0; i < w->ask.n; i++)
        budget = budget || w->ask.l[i].rules->budget.usd > 0;
    if (!budget)
        return 1;
    if (!(est_usd >= 0) || !isfinite(est_usd))
        est_usd = 0;
    if (t->rs) {
        if (uses_redis(t) && redis_reserve(t, w, est_usd, wall_ms) == 0)
            return 0;
        out->v = SW_TENANT_UNAVAILABLE;
        return 1;
    }
    mem_reserve(t, w, est_usd, wall_ms, out);
    return 1;
}

void sw_tenant_settle(struct sw_tenant *t, struct sw_tenant_wait *w, double actual_usd,
                      int64_t wall_ms)
{
    if (!t)
        return;
    if (!(actual_usd >= 0) || !isfinite(actual_usd))
        actual_usd = w->resv_usd;
    if (w->held && w->shared) {
        if (t->rs)
            redis_settle(t, w, actual_usd, wall_ms);
    }
    for (size_t i = 0; i < w->ask.n && wall_ms > 0; i++) {
        struct ledger *l = find(t, w->ask.l[i].id, true);
        if (!l)
            continue;
        const struct sw_config_tenancy *r = w->ask.l[i].rules;
        if (w->held && !w->shared && r->budget.usd > 0) {
            l->reserved_usd -= w->resv_usd;
            if (l->reserved_usd < 1e-12)
                l->reserved_usd = 0;
        }
        if (actual_usd > 0) {
            l->spent_usd_total += actual_usd;
            if (!w->shared || !w->held)
                add_usd(l, r, wall_ms, actual_usd);
        }
    }
    w->held = false;
    w->resv_usd = 0;
}

void sw_tenant_cancel(struct sw_tenant *t, struct sw_tenant_wait *w)
{
    (void)t;
    if (w->op) {
        w->op->w = NULL;
        w->op = NULL;
    }
}

static void stats_of(const struct ledger *l, bool shared, struct sw_tenant_stats *out)
{
    *out = (struct sw_tenant_stats){.found = true,
                                    .spent_usd_total = l->spent_usd_total,
                                    .window_usd = shared ? l->seen_window_usd : -1,
                                    .reserved_usd = shared ? -1 : l->reserved_usd,
                                    .max_reserved_usd = l->max_reserved_usd,
                                    .requests = l->requests,
                                    .rate_limited = l->rate_limited,
                                    .budget_refused = l->budget_refused};
}

void sw_tenant_stats(struct sw_tenant *t, const char *id, const struct sw_config_tenancy *rules,
                     int64_t wall_ms, struct sw_tenant_stats *out)
{
    struct ledger *l = find(t, id, false);
    if (!l) {
        *out = (struct sw_tenant_stats){.window_usd = t && t->rs ? -1 : 0,
                                        .reserved_usd = t && t->rs ? -1 : 0};
        return;
    }
    stats_of(l, t->rs != NULL, out);
    if (!t->rs && rules)
        out->window_usd = window_usd(l, rules, wall_ms);
}

void sw_tenant_each(struct sw_tenant *t,
                    void (*fn)(void *ud, const char *id, const struct sw_tenant_stats *s), void *ud)
{
    if (!t)
        return;
    for (size_t i = 0; i < SW_TENANT_MAX_LEDGERS; i++) {
        if (!t->l[i].id[0])
            continue;
        struct sw_tenant_stats s;
        stats_of(&t->l[i], t->rs != NULL, &s);
        fn(ud, t->l[i].id, &s);
    }
}

uint64_t sw_tenant_degraded_total(const struct sw_tenant *t)
{
    return t ? t->degraded_total : 0;
}
