/* Shared state on Redis: see rstate.h and docs/scaling.md. */
#include "state/rstate.h"

#include <event2/event.h>
#include <hiredis/hiredis.h>
#include <openssl/evp.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "state/rconn.h"
#include "state/rdial.h"
#include "config/rurl.h"
#include "state/rkey.h"

#define SYNC_MS 200             /* shared view refresh, lease renewal */
#define MAX_ARGS 16

/* KEYS: none (single-instance Redis; keys are built from the prefix in ARGV). */
#define LUA_PURGE \
    "local function purge(p, now)\n" \
    "  local old = redis.call('ZRANGEBYSCORE', p..'spend:resv', '-inf', now)\n" \
    "  for _, r in ipairs(old) do\n" \
    "    local a = tonumber(redis.call('HGET', p..'spend:amt', r) or '0')\n" \
    "    redis.call('HDEL', p..'spend:amt', r)\n" \
    "    redis.call('INCRBYFLOAT', p..'spend:reserved', -a)\n" \
    "  end\n" \
    "  if #old > 0 then redis.call('ZREMRANGEBYSCORE', p..'spend:resv', '-inf', now) end\n" \
    "  if redis.call('ZCARD', p..'spend:resv') == 0 then redis.call('SET', p..'spend:reserved', '0') end\n" \
    "end\n" \
    "local function bucket(k, rpm, tpm, now)\n" \
    "  local h = redis.call('HMGET', k, 'req', 'tok', 'last')\n" \
    "  local req = tonumber(h[1]) or rpm * 60000\n" \
    "  local tok = tonumber(h[2]) or tpm * 60000\n" \
    "  local el = now - (tonumber(h[3]) or now)\n" \
    "  if el < 0 then el = 0 end\n" \
    "  if el > 120000 then el = 120000 end\n" \
    "  return math.min(req + el * rpm, rpm * 60000), math.min(tok + el * tpm, tpm * 60000)\n" \
    "end\n" \
    "local function total(p, win)\n" \
    "  return tonumber(redis.call('GET', p..'spend:'..win) or '0') +\n" \
    "         tonumber(redis.call('GET', p..'spend:reserved') or '0')\n" \
    "end\n"

/* ARGV: prefix now id est cap resv_ttl window lease_be slots lease_ttl probe_be probe_ttl
 * bucket_be rpm tpm tokens */
static const char lua_admit[] = LUA_PURGE
    "local p, now, id = ARGV[1], tonumber(ARGV[2]), ARGV[3]\n"
    "local est, cap = tonumber(ARGV[4]), tonumber(ARGV[5])\n"
    "local lease, slots, probe = ARGV[8], tonumber(ARGV[9]), ARGV[11]\n"
    "local n = 0\n"
    "if lease ~= '' then\n"
    "  redis.call('ZREMRANGEBYSCORE', p..'slots:'..lease, '-inf', now)\n"
    "  n = redis.call('ZCARD', p..'slots:'..lease)\n"
    "  if n >= slots then return {'slot', tostring(n)} end\n"
    "end\n"
    "local bk, rpm, tpm, tokens = ARGV[13], tonumber(ARGV[14]), tonumber(ARGV[15]), tonumber(ARGV[16])\n"
    "local req, tok = 0, 0\n"
    "if bk ~= '' then\n"
    "  req, tok = bucket(p..'bucket:'..bk, rpm, tpm, now)\n"
    "  if (rpm > 0 and req < 60000) or (tpm > 0 and tok < tokens * 60000) then\n"
    "    return {'rate', '0'} end\n"
    "end\n"
    "if probe ~= '' then\n"
    "  if not redis.call('SET', p..'probe:'..probe, id, 'NX', 'PX', ARGV[12]) then\n"
    "    return {'probe', '0'} end\n"
    "end\n"
    "local t = 0\n"
    "if est > 0 then\n"
    "  purge(p, now)\n"
    "  t = total(p, ARGV[7])\n"
    "  if cap > 0 and t + est > cap then\n"
    "    if probe ~= '' then redis.call('DEL', p..'probe:'..probe) end\n"
    "    return {'spend', tostring(t)}\n"
    "  end\n"
    "  redis.call('ZADD', p..'spend:resv', now + tonumber(ARGV[6]), id)\n"
    "  redis.call('HSET', p..'spend:amt', id, ARGV[4])\n"
    "  redis.call('INCRBYFLOAT', p..'spend:reserved', est)\n"
    "  t = t + est\n"
    "end\n"
    "if lease ~= '' then\n"
    "  redis.call('ZADD', p..'slots:'..lease, now + tonumber(ARGV[10]), id)\n"
    "  n = n + 1\n"
    "end\n"
    "if bk ~= '' then\n"
    "  local k = p..'bucket:'..bk\n"
    "  redis.call('HSET', k, 'req', tostring(req - 60000), 'tok', tostring(tok - tokens * 60000), 'last', ARGV[2])\n"
    "  redis.call('PEXPIRE', k, 120000)\n"
    "end\n"
    "return {'ok', tostring(t), tostring(n)}\n";

/* ARGV: prefix id actual(-1: no reservation) window window_ttl lease_be probe_be
 * bucket_be rpm tpm refund_tokens refund_request now */
static const char lua_release[] = LUA_PURGE
    "local p, id, actual = ARGV[1], ARGV[2], tonumber(ARGV[3])\n"
    "if actual >= 0 then\n"
    "  local a = redis.call('HGET', p..'spend:amt', id)\n"
    "  if a then\n"
    "    redis.call('HDEL', p..'spend:amt', id)\n"
    "    redis.call('ZREM', p..'spend:resv', id)\n"
    "    redis.call('INCRBYFLOAT', p..'spend:reserved', -tonumber(a))\n"
    "    if redis.call('ZCARD', p..'spend:resv') == 0 then redis.call('SET', p..'spend:reserved', '0') end\n"
    "  end\n"
    "  if actual > 0 then\n"
    "    redis.call('INCRBYFLOAT', p..'spend:'..ARGV[4], actual)\n"
    "    redis.call('PEXPIRE', p..'spend:'..ARGV[4], ARGV[5])\n"
    "  end\n"
    "end\n"
    "if ARGV[6] ~= '' then redis.call('ZREM', p..'slots:'..ARGV[6], id) end\n"
    "if ARGV[8] ~= '' then\n"
    "  local k, rpm, tpm, now = p..'bucket:'..ARGV[8], tonumber(ARGV[9]), tonumber(ARGV[10]), tonumber(ARGV[13])\n"
    "  local req, tok = bucket(k, rpm, tpm, now)\n"
    "  req = math.min(req + tonumber(ARGV[12]) * 60000, rpm * 60000)\n"
    "  tok = math.max(-tpm * 60000, math.min(tok + tonumber(ARGV[11]) * 60000, tpm * 60000))\n"
    "  redis.call('HSET', k, 'req', tostring(req), 'tok', tostring(tok), 'last', ARGV[13])\n"
    "  redis.call('PEXPIRE', k, 120000)\n"
    "end\n"
    "if ARGV[7] ~= '' and redis.call('GET', p..'probe:'..ARGV[7]) == id then\n"
    "  redis.call('DEL', p..'probe:'..ARGV[7]) end\n"
    "return tostring(total(p, ARGV[4]))\n";

/* ARGV: prefix now replica window lease_ttl queue_ttl, then per backend:
 * name local(1|0) queued. Returns spend total, then per backend: the other
 * replicas' leases, their queued, breaker open-until (wall ms, 0: closed).
 * This replica's own leases are left out: it counts its own slot holders
 * itself, at once, where a lease count read here would hold a slot it has
 * just given back as busy until the next sync. */
static const char lua_sync[] = LUA_PURGE
    "local p, now, me = ARGV[1], tonumber(ARGV[2]), ARGV[3]\n"
    "purge(p, now)\n"
    "local out = {tostring(total(p, ARGV[4]))}\n"
    "local i = 7\n"
    "while i + 2 <= #ARGV do\n"
    "  local name, loc, q = ARGV[i], ARGV[i+1], ARGV[i+2]\n"
    "  local n, others = 0, 0\n"
    "  if loc == '1' then\n"
    "    local k = p..'slots:'..name\n"
    "    redis.call('ZREMRANGEBYSCORE', k, '-inf', now)\n"
    "    local mine = 0\n"
    "    for _, m in ipairs(redis.call('ZRANGE', k, 0, -1)) do\n"
    "      if string.sub(m, 1, #me + 1) == me..':' then\n"
    "        redis.call('ZADD', k, 'XX', now + tonumber(ARGV[5]), m)\n"
    "        mine = mine + 1\n"
    "      end\n"
    "    end\n"
    "    n = redis.call('ZCARD', k) - mine\n"
    "    local qk = p..'queue:'..name\n"
    "    redis.call('HSET', qk, me, q..' '..(now + tonumber(ARGV[6])))\n"
    "    local all = redis.call('HGETALL', qk)\n"
    "    for j = 1, #all, 2 do\n"
    "      local c, x = string.match(all[j+1], '^(%d+) (%d+)$')\n"
    "      if not x or tonumber(x) < now then redis.call('HDEL', qk, all[j])\n"
    "      elseif all[j] ~= me then others = others + tonumber(c) end\n"
    "    end\n"
    "  end\n"
    "  local b = redis.call('GET', p..'breaker:'..name) or '0'\n"
    "  table.insert(out, tostring(n))\n"
    "  table.insert(out, tostring(others))\n"
    "  table.insert(out, b)\n"
    "  i = i + 3\n"
    "end\n"
    "return out\n";

enum script { S_ADMIT, S_RELEASE, S_SYNC, N_SCRIPTS };
static const char *const scripts[N_SCRIPTS] = {lua_admit, lua_release, lua_sync};

enum op_kind { OP_ADMIT, OP_RELEASE, OP_SYNC, OP_FLAGS, OP_PLAIN, OP_EVAL };

struct sw_store_op {
    struct sw_rstate *rs;
    enum op_kind kind;
    enum script script;
    struct event *timer;
    bool answered;              /* timed out or replied: the caller has its answer */
    bool eval_retry;            /* resent as EVAL after NOSCRIPT */
    struct sw_store_hold *hold;/* admit: NULL once cancelled */
    struct sw_live *live;       /* admit: referenced */
    size_t hold_be;             /* admit: the backend */
    sw_rstate_eval_fn eval_cb;  /* eval: answered once (NULL reply on failure) */
    void *eval_ud;
    const char *eval_script;    /* eval: the script's text (static) */
    char *eval_sha;             /* eval: its cached SHA (the caller's, 41 bytes) */
    int argc;
    char *argv[MAX_ARGS + 3 * 64];
};

struct sw_rstate {
    struct event_base *base;
    struct sw_live_shared *g;
    struct sw_live *live;           /* referenced */
    struct sw_rurl url;
    char *prefix;
    long timeout_ms, lease_ttl_ms, resv_ttl_ms;
    double share;
    int64_t window_ms;
    char replica[40];
    uint64_t next_id;
    struct sw_rtls *tls;            /* rediss:// */
    char *server_name;              /* rediss://: the certificate's name; NULL: the host */
    struct sw_rconn *ac, *sub;      /* commands; pub/sub */
    bool connected, sub_connected;  /* Redis answered PING; SUBSCRIBE */
    bool slow;                      /* a round trip timed out; cleared by the next reply */
    char sha[N_SCRIPTS][41];
    struct sw_rdial dial;           /* connect deadline, backoff */
    struct event *sync_timer;
    long *fallback_held;            /* per backend index: fallback slots held */
    size_t n_fallback;
    int64_t degraded_since;
    sw_rstate_announced_fn hook_announced;  /* sw_rstate_hook */
    void (*hook_sync)(void *ud);
    void *hook_ud;
};

static void update_degraded(struct sw_rstate *rs);

/* ---- Helpers ---- */

static void fmt_double(char *buf, size_t cap, double v)
{
    snprintf(buf, cap, "%.17g", v);
}

static bool ready(const struct sw_rstate *rs)
{
    return rs->ac && rs->connected && rs->sub_connected && !rs->slow;
}

static void update_degraded(struct sw_rstate *rs)
{
    bool d = !ready(rs);
    if (d && !rs->g->remote_degraded)
        sw_warn("state: Redis %s:%d unreachable or slow: degraded (spend cap fails closed, "
                "local slots at %.0f%% per replica)", rs->url.host, rs->url.port, rs->share * 100);
    else if (!d && rs->g->remote_degraded)
        sw_info("state: Redis %s:%d back: shared state again", rs->url.host, rs->url.port);
    rs->g->remote_degraded = d;
}

static void op_free(struct sw_store_op *op)
{
    if (op->timer)
        event_free(op->timer);
    for (int i = 0; i < op->argc; i++)
        free(op->argv[i]);
    if (op->live)
        sw_live_unref(op->live);
    free(op);
}

static void on_reply(struct sw_rconn *ac, void *r, void *priv);
static enum sw_store_verdict degraded_admit(struct sw_rstate *rs, struct sw_live *live,
                                             struct sw_store_hold *h);

static void on_op_timeout(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct sw_store_op *op = arg;
    if (op->answered)
        return;
    op->answered = true;
    struct sw_rstate *rs = op->rs;
    if (!rs->slow)
        sw_warn("state: a Redis round trip took longer than %ld ms", rs->timeout_ms);
    rs->slow = true;
    update_degraded(rs);
    if (op->kind == OP_EVAL && op->eval_cb) {
        op->eval_cb(op->eval_ud, NULL);
        return;
    }
    if (op->kind == OP_ADMIT && op->hold) {
        struct sw_store_hold *h = op->hold;
        h->op = NULL;
        op->hold = NULL;
        h->spend = h->lease = h->probe = false;
        h->cb(h, degraded_admit(rs, op->live, h));
    }
}

/* Sends op (its argv) on the command connection; on failure the op is
 * answered as a failure at once. */
static int send_op(struct sw_rstate *rs, struct sw_store_op *op)
{
    if (!rs->ac || !rs->connected)
        return -1;
    size_t lens[MAX_ARGS + 3 * 64];
    for (int i = 0; i < op->argc; i++)
        lens[i] = strlen(op->argv[i]);
    if (sw_rconn_command(rs->ac, on_reply, op, false, op->argc, (const char **)op->argv, lens))
        return -1;
    if (!op->timer) {
        op->timer = evtimer_new(rs->base, on_op_timeout, op);
        if (op->timer) {
            struct timeval tv = {rs->timeout_ms / 1000, (rs->timeout_ms % 1000) * 1000};
            evtimer_add(op->timer, &tv);
        }
    }
    return 0;
}

/* An op running script s with the script's ARGV (args; NULL-terminated is not
 * needed: n). EVALSHA when the SHA is known, else EVAL. */
static struct sw_store_op *script_op(struct sw_rstate *rs, enum op_kind kind, enum script s,
                                      char **args, int n)
{
    struct sw_store_op *op = calloc(1, sizeof *op);
    if (!op)
        return NULL;
    op->rs = rs;
    op->kind = kind;
    op->script = s;
    bool sha = rs->sha[s][0] != 0;
    op->argv[op->argc++] = strdup(sha ? "EVALSHA" : "EVAL");
    op->argv[op->argc++] = strdup(sha ? rs->sha[s] : scripts[s]);
    op->argv[op->argc++] = strdup("0");
    for (int i = 0; i < n && op->argc < (int)(sizeof op->argv / sizeof op->argv[0]); i++)
        op->argv[op->argc++] = strdup(args[i] ? args[i] : "");
    for (int i = 0; i < op->argc; i++)
        if (!op->argv[i]) {
            op_free(op);
            return NULL;
        }
    return op;
}

static bool is_noscript(const redisReply *r)
{
    return r && r->type == REDIS_REPLY_ERROR && !strncmp(r->str, "NOSCRIPT", 8);
}

/* ---- Replies ---- */

static void apply_flags(struct sw_rstate *rs, const redisReply *r)
{
    if (!r || r->type != REDIS_REPLY_ARRAY)
        return;
    struct sw_live_shared *g = rs->g;
    for (size_t i = 0; i + 1 < r->elements; i += 2) {
        const redisReply *k = r->element[i], *v = r->element[i + 1];
        if (k->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING)
            continue;
        if (!strcmp(k->str, "emergency")) {
            bool e = !strcmp(v->str, "1");
            if (e != g->emergency)
                sw_warn("state: emergency %s by another replica", e ? "DECLARED" : "cleared");
            g->emergency = e;
        } else if (!strcmp(k->str, "emergency_reason")) {
            snprintf(g->emergency_reason, sizeof g->emergency_reason, "%s", v->str);
        } else if (!strcmp(k->str, "ttft_budget_ms")) {
            long t = strtol(v->str, NULL, 10);
            if (t >= 0 && t <= 600000)
                g->ttft_budget_ms = t;
        } else if (!strcmp(k->str, "spend_cap_usd")) {
            double c = strtod(v->str, NULL);
            if (isfinite(c))
                g->spend_cap_usd = c;
        }
    }
}

static int64_t wall_to_mono(int64_t wall)
{
    return wall - (sw_wall_ms() - sw_now_ms());
}

static void apply_sync(struct sw_rstate *rs, const redisReply *r)
{
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements < 1 ||
        r->element[0]->type != REDIS_REPLY_STRING)
        return;
    rs->g->remote_spend_usd = strtod(r->element[0]->str, NULL);
    struct sw_live *l = rs->live;
    if (!l)
        return;
    int64_t now = sw_now_ms(), wall = sw_wall_ms();
    for (size_t i = 0; i < l->n && 1 + 3 * i + 2 < r->elements; i++) {
        const redisReply *n = r->element[1 + 3 * i], *q = r->element[2 + 3 * i],
                         *b = r->element[3 + 3 * i];
        if (n->type != REDIS_REPLY_STRING || q->type != REDIS_REPLY_STRING ||
            b->type != REDIS_REPLY_STRING)
            return;
        struct sw_live_backend *lb = l->b[i];
        lb->remote_in_flight = strtol(n->str, NULL, 10);
        lb->remote_queued = strtol(q->str, NULL, 10);
        int64_t until = strtoll(b->str, NULL, 10);
        if (until > wall) {
            sw_breaker_force_open(&lb->breaker, now, wall_to_mono(until));
        } else if (lb->announced_open_until == 0 && until == 0 &&
                   sw_breaker_state(&lb->breaker, now) != SW_BREAKER_CLOSED &&
                   lb->breaker.fail_n == 0) {
            /* opened by another replica and closed there since */
            sw_breaker_reset(&lb->breaker);
        }
    }
}

/* cap: the cap in force. A refusal leaves the view at the cap at least, so
 * the router applies the cap's policy to priced requests (a backend without
 * a price still takes them) until the next sync reads the total again. */
static enum sw_store_verdict verdict_of(const redisReply *r, struct sw_rstate *rs, double cap)
{
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements < 2 ||
        r->element[0]->type != REDIS_REPLY_STRING || r->element[1]->type != REDIS_REPLY_STRING)
        return SW_STORE_SPEND_FULL;
    const char *w = r->element[0]->str;
    double t = strtod(r->element[1]->str, NULL);
    if (!strcmp(w, "ok")) {
        if (t > rs->g->remote_spend_usd)
            rs->g->remote_spend_usd = t;
        return SW_STORE_OK;
    }
    if (!strcmp(w, "spend")) {
        rs->g->remote_spend_usd = t > cap ? t : cap;
        return SW_STORE_SPEND_FULL;
    }
    if (!strcmp(w, "slot"))
        return SW_STORE_NO_SLOT;
    if (!strcmp(w, "rate"))
        return SW_STORE_RATE_LIMITED;
    return SW_STORE_PROBE_TAKEN;
}

static void release_ids(struct sw_rstate *rs, struct sw_live *live, const char *id, size_t be,
                        bool spend, double actual, bool lease, bool probe, bool bucket,
                        long refund_tokens, bool refund_request);

static void on_reply(struct sw_rconn *ac, void *reply, void *priv)
{
    (void)ac;
    struct sw_store_op *op = priv;
    struct sw_rstate *rs = op->rs;
    redisReply *r = reply;
    if (is_noscript(r) && !op->eval_retry && rs->ac && rs->connected) {
        /* the server lost the script (restart, SCRIPT FLUSH): EVAL it */
        op->eval_retry = true;
        if (op->kind == OP_EVAL)
            op->eval_sha[0] = 0;
        else
            rs->sha[op->script][0] = 0;
        free(op->argv[0]);
        free(op->argv[1]);
        op->argv[0] = strdup("EVAL");
        op->argv[1] = strdup(op->kind == OP_EVAL ? op->eval_script : scripts[op->script]);
        if (op->argv[0] && op->argv[1] && send_op(rs, op) == 0)
            return;
    }
    bool ok = r && r->type != REDIS_REPLY_ERROR;
    if (r && r->type == REDIS_REPLY_ERROR)
        sw_warn("state: Redis answered an error: %.200s", r->str);
    if (ok && rs->slow) {
        rs->slow = false;
        update_degraded(rs);
    }
    if (op->kind == OP_ADMIT) {
        if (!op->answered) {
            op->answered = true;
            struct sw_store_hold *h = op->hold;
            if (h) {
                h->op = NULL;
                if (!ok) {
                    h->cb(h, degraded_admit(rs, op->live, h));
                } else {
                    enum sw_store_verdict v = verdict_of(r, rs, sw_live_spend_cap_usd(op->live));
                    if (v == SW_STORE_OK) {
                        h->spend = h->est_usd > 0;
                        h->lease = op->argv[3 + 7][0] != 0;
                        h->probe = op->argv[3 + 10][0] != 0;
                        h->bucket = op->argv[3 + 12][0] != 0;
                    }
                    h->cb(h, v);
                }
            }
        } else if (ok && verdict_of(r, rs, 0) == SW_STORE_OK && op->live) {
            /* granted after the caller gave up waiting: give it back */
            release_ids(rs, op->live, op->argv[3 + 2], op->hold_be,
                        strtod(op->argv[3 + 3], NULL) > 0, 0, op->argv[3 + 7][0] != 0,
                        op->argv[3 + 10][0] != 0, op->argv[3 + 12][0] != 0,
                        strtol(op->argv[3 + 15], NULL, 10), true);
        }
    } else if (op->kind == OP_EVAL) {
        if (!op->answered && op->eval_cb)
            op->eval_cb(op->eval_ud, ok ? r : NULL);
    } else if (op->kind == OP_SYNC && ok) {
        apply_sync(rs, r);
    } else if (op->kind == OP_FLAGS && ok) {
        apply_flags(rs, r);
    } else if (op->kind == OP_RELEASE && ok && r->type == REDIS_REPLY_STRING) {
        rs->g->remote_spend_usd = strtod(r->str, NULL);
    }
    op->answered = true;
    op_free(op);
}

/* Fires a plain command; its reply only counts as a sign of life. */
static void plain(struct sw_rstate *rs, enum op_kind kind, int argc, const char **argv)
{
    struct sw_store_op *op = calloc(1, sizeof *op);
    if (!op)
        return;
    op->rs = rs;
    op->kind = kind;
    for (int i = 0; i < argc && i < MAX_ARGS; i++) {
        op->argv[op->argc] = strdup(argv[i]);
        if (!op->argv[op->argc]) {
            op_free(op);
            return;
        }
        op->argc++;
    }
    if (send_op(rs, op))
        op_free(op);
}

static void on_script_loaded(struct sw_rconn *ac, void *reply, void *priv)
{
    struct sw_rstate *rs = sw_rconn_data(ac);
    redisReply *r = reply;
    if (!rs || ac != rs->ac || !r || r->type != REDIS_REPLY_STRING || r->len != 40)
        return;
    for (int s = 0; s < N_SCRIPTS; s++)
        if (!rs->sha[s][0] && priv == scripts[s])
            memcpy(rs->sha[s], r->str, 41);
}

/* ---- Connections ---- */

static void window_arg(struct sw_rstate *rs, char *buf, size_t cap)
{
    snprintf(buf, cap, "%lld", sw_rkey_window_start(sw_wall_ms(), rs->window_ms));
}

static void fetch_flags(struct sw_rstate *rs)
{
    char key[300];
    sw_rkey(key, sizeof key, rs->prefix, "flags", NULL);
    plain(rs, OP_FLAGS, 2, (const char *[]){"HGETALL", key});
}

/* Closes both connections; pending commands are answered with NULL. */
static void teardown(struct sw_rstate *rs)
{
    struct sw_rconn *ac = rs->ac, *sub = rs->sub;
    rs->ac = rs->sub = NULL;
    rs->connected = rs->sub_connected = false;
    update_degraded(rs);    /* what the NULL answers' callbacks decide on */
    sw_rconn_free(ac);
    sw_rconn_free(sub);
}

/* A connection failed: connect, TLS handshake (an untrusted certificate, a
 * wrong name), I/O. Never a plain-text retry: the same URL after backoff. */
static void on_lost(struct sw_rconn *c, const char *why, void *data)
{
    struct sw_rstate *rs = data;
    if (c != rs->ac && c != rs->sub)
        return;
    sw_warn("state: lost the connection to Redis %s:%d: %s", rs->url.host, rs->url.port, why);
    teardown(rs);
    sw_rdial_retry(&rs->dial);
}

static void on_answered(struct sw_rstate *rs)
{
    if (rs->connected && rs->sub_connected) {
        sw_rdial_connected(&rs->dial);
        rs->slow = false;
        update_degraded(rs);
        fetch_flags(rs); /* resync: what changed while we were away */
        if (rs->hook_announced)
            rs->hook_announced(rs->hook_ud, NULL);
    }
}

static void on_pong(struct sw_rconn *ac, void *reply, void *priv)
{
    (void)priv;
    struct sw_rstate *rs = sw_rconn_data(ac);
    const redisReply *r = reply;
    if (!rs || ac != rs->ac || !r)
        return;
    if (r->type == REDIS_REPLY_STATUS && !strcmp(r->str, "PONG")) {
        rs->connected = true;
        on_answered(rs);
    } else if (r->type == REDIS_REPLY_ERROR) {
        /* e.g. NOAUTH or WRONGPASS: the connect timeout retries */
        sw_warn("state: Redis %s:%d refused the connection: %.200s", rs->url.host, rs->url.port,
                r->str);
    }
}

/* Another replica's (or this one's own) announcement that a local backend
 * served a prefix: "<name> <hash0> <tokens0> <hashN> <tokensN>" (hex hashes).
 * The entries join this replica's table. */
static void on_affinity(struct sw_rstate *rs, const char *s)
{
    char name[80];
    unsigned long long h0, hn;
    long t0, tn;
    if (sscanf(s, "%79s %llx %ld %llx %ld", name, &h0, &t0, &hn, &tn) != 5 || !rs->g->affinity_on)
        return;
    int64_t now = sw_now_ms();
    struct sw_live *l = rs->live;
    for (size_t i = 0; i < l->n; i++) {
        struct sw_live_backend *b = l->b[i];
        if (b->tier != SW_TIER_LOCAL || strcmp(b->name, name))
            continue;
        if (h0 != hn)
            sw_affinity_put(&b->aff, (uint64_t)h0, b->affinity_id, t0, now);
        sw_affinity_put(&b->aff, (uint64_t)hn, b->affinity_id, tn, now);
    }
}

static void on_event(struct sw_rconn *ac, void *reply, void *priv)
{
    (void)priv;
    struct sw_rstate *rs = sw_rconn_data(ac);
    redisReply *r = reply;
    if (!rs || ac != rs->sub || !r || r->type != REDIS_REPLY_ARRAY || r->elements < 3)
        return;
    const redisReply *kind = r->element[0], *msg = r->element[2];
    if (kind->type == REDIS_REPLY_STRING && !strcmp(kind->str, "subscribe") && ac == rs->sub) {
        rs->sub_connected = true;
        on_answered(rs);
        return;
    }
    if (kind->type != REDIS_REPLY_STRING || strcmp(kind->str, "message") ||
        msg->type != REDIS_REPLY_STRING)
        return;
    if (!strcmp(msg->str, "flags"))
        fetch_flags(rs);
    else if (!strncmp(msg->str, "affinity ", 9)) {
        if (rs->live)
            on_affinity(rs, msg->str + 9);
    }
    else if (strncmp(msg->str, "breaker ", 8) != 0 && rs->hook_announced)
        rs->hook_announced(rs->hook_ud, msg->str);
    else if (!strncmp(msg->str, "breaker ", 8) && rs->live) {
        /* "breaker <name> <open-until wall ms, 0: closed>" */
        char name[80];
        long long until = 0;
        if (sscanf(msg->str + 8, "%79s %lld", name, &until) != 2)
            return;
        struct sw_live *l = rs->live;
        int64_t now = sw_now_ms();
        for (size_t i = 0; i < l->n; i++) {
            struct sw_live_backend *b = l->b[i];
            if (strcmp(b->name, name))
                continue;
            if (until > 0)
                sw_breaker_force_open(&b->breaker, now, wall_to_mono(until));
            else if (sw_breaker_state(&b->breaker, now) != SW_BREAKER_CLOSED)
                sw_breaker_reset(&b->breaker);
        }
    }
}

static int command(struct sw_rconn *c, sw_rconn_reply_fn cb, void *priv, bool subscribe, int argc,
                   const char **argv)
{
    size_t lens[8];
    for (int i = 0; i < argc && i < 8; i++)
        lens[i] = strlen(argv[i]);
    return sw_rconn_command(c, cb, priv, subscribe, argc, argv, lens);
}

/* The backoff is over: both connections, usable once PING and SUBSCRIBE
 * are answered. */
static void do_connect(void *owner)
{
    struct sw_rstate *rs = owner;
    if (rs->ac)
        return;
    rs->ac = sw_rdial_open(&rs->dial, rs->tls, rs->server_name, on_lost, rs, true);
    rs->sub = rs->ac ? sw_rdial_open(&rs->dial, rs->tls, rs->server_name, on_lost, rs, false) : NULL;
    if (!rs->ac || !rs->sub) {
        teardown(rs);
        sw_rdial_retry(&rs->dial);
        return;
    }
    for (int s = 0; s < N_SCRIPTS; s++) {
        rs->sha[s][0] = 0;
        command(rs->ac, on_script_loaded, (void *)scripts[s], false, 3,
                (const char *[]){"SCRIPT", "LOAD", scripts[s]});
    }
    command(rs->ac, on_pong, NULL, false, 1, (const char *[]){"PING"}); /* after the SHAs */
    char ch[300];
    sw_rkey(ch, sizeof ch, rs->prefix, "events", NULL);
    command(rs->sub, on_event, NULL, true, 2, (const char *[]){"SUBSCRIBE", ch});
    sw_rdial_started(&rs->dial);
}

/* The deadline passed before PING and SUBSCRIBE were both answered. */
static void on_expired(void *owner)
{
    teardown(owner);
}

/* ---- Sync ---- */

static void on_sync(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct sw_rstate *rs = arg;
    struct sw_live *l = rs->live;
    if (!l || !rs->ac || !rs->connected)
        return;
    if (rs->hook_sync)
        rs->hook_sync(rs->hook_ud);
    char now[24], win[24], lease_ttl[24], queue_ttl[24];
    snprintf(now, sizeof now, "%lld", (long long)sw_wall_ms());
    window_arg(rs, win, sizeof win);
    snprintf(lease_ttl, sizeof lease_ttl, "%ld", rs->lease_ttl_ms);
    snprintf(queue_ttl, sizeof queue_ttl, "%d", SYNC_MS * 5);
    char *args[6 + 3 * 64];
    char qbuf[64][24];
    int n = 0;
    args[n++] = rs->prefix;
    args[n++] = now;
    args[n++] = rs->replica;
    args[n++] = win;
    args[n++] = lease_ttl;
    args[n++] = queue_ttl;
    for (size_t i = 0; i < l->n && i < 64; i++) {
        args[n++] = l->b[i]->name;
        args[n++] = l->b[i]->tier == SW_TIER_LOCAL ? "1" : "0";
        snprintf(qbuf[i], sizeof qbuf[i], "%ld", l->b[i]->q.queued);
        args[n++] = qbuf[i];
    }
    struct sw_store_op *op = script_op(rs, OP_SYNC, S_SYNC, args, n);
    if (op && send_op(rs, op))
        op_free(op);
}

/* ---- Scripts of other modules ---- */

static void sha1_hex(const char *text, char out[41])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    out[0] = 0;
    if (EVP_Digest(text, strlen(text), md, &n, EVP_sha1(), NULL) != 1 || n != 20)
        return;
    for (unsigned i = 0; i < 20; i++)
        snprintf(out + 2 * i, 3, "%02x", md[i]);
}

int sw_rstate_eval(struct sw_rstate *rs, const char *script, char sha[41],
                   const char *const *args, int n, sw_rstate_eval_fn cb, void *ud)
{
    if (!rs || !ready(rs) || n < 0 || n > MAX_ARGS + 3 * 64 - 3)
        return -1;
    if (!sha[0])
        sha1_hex(script, sha);
    struct sw_store_op *op = calloc(1, sizeof *op);
    if (!op)
        return -1;
    op->rs = rs;
    op->kind = OP_EVAL;
    op->eval_cb = cb;
    op->eval_ud = ud;
    op->eval_script = script;
    op->eval_sha = sha;
    op->argv[op->argc++] = strdup(sha[0] ? "EVALSHA" : "EVAL");
    op->argv[op->argc++] = strdup(sha[0] ? sha : script);
    op->argv[op->argc++] = strdup("0");
    for (int i = 0; i < n; i++)
        op->argv[op->argc++] = strdup(args[i] ? args[i] : "");
    for (int i = 0; i < op->argc; i++)
        if (!op->argv[i]) {
            op_free(op);
            return -1;
        }
    if (send_op(rs, op)) {
        op_free(op);
        return -1;
    }
    return 0;
}

void sw_rstate_hook(struct sw_rstate *rs, sw_rstate_announced_fn announced,
                    void (*sync)(void *ud), void *ud)
{
    rs->hook_announced = announced;
    rs->hook_sync = sync;
    rs->hook_ud = ud;
}

const char *sw_rstate_prefix(const struct sw_rstate *rs)
{
    return rs->prefix;
}

const char *sw_rstate_replica(const struct sw_rstate *rs)
{
    return rs->replica;
}

long sw_rstate_resv_ttl_ms(const struct sw_rstate *rs)
{
    return rs->resv_ttl_ms;
}

/* ---- Public ---- */

static const struct sw_store_ops redis_ops;

struct sw_rstate *sw_rstate_new(struct event_base *base, const struct sw_config *cfg,
                                struct sw_live_shared *g)
{
    const struct sw_config_state *st = &cfg->state;
    if (!st->redis)
        return NULL;
    struct sw_rstate *rs = calloc(1, sizeof *rs);
    if (!rs)
        return NULL;
    char why[512];
    if (sw_rurl_parse(st->redis, &rs->url, why, sizeof why)) {
        free(rs);
        return NULL;
    }
    rs->base = base;
    rs->g = g;
    if (rs->url.tls) {
        const struct sw_config_state_tls *t = &st->tls;
        rs->tls = sw_rtls_new(t->ca_file, t->cert_file, t->key_file, t->verify, why, sizeof why);
        if (!rs->tls) {
            sw_error("state: TLS for Redis %s:%d: %s", rs->url.host, rs->url.port, why);
            free(rs);
            return NULL;
        }
        if (t->server_name && !(rs->server_name = strdup(t->server_name))) {
            sw_rtls_free(rs->tls);
            free(rs);
            return NULL;
        }
        if (!t->verify)
            sw_warn("state: state.tls.verify is false: the certificate of Redis %s:%d is NOT "
                    "checked (anyone on the path can read and change the shared state)",
                    rs->url.host, rs->url.port);
    }
    rs->prefix = strdup(st->key_prefix ? st->key_prefix : "spillway:");
    rs->timeout_ms = st->timeout_ms > 0 ? st->timeout_ms : 50;
    rs->lease_ttl_ms = st->lease_ttl_ms > 0 ? st->lease_ttl_ms : 5000;
    rs->resv_ttl_ms = cfg->routing.request_timeout_ms + rs->lease_ttl_ms;
    rs->share = st->fallback_share > 0 ? st->fallback_share : 1.0;
    rs->window_ms = cfg->routing.spend.window == SW_SPEND_DAY ? SW_SPEND_DAY_MS : SW_SPEND_HOUR_MS;
    unsigned long long rnd = 0;
    FILE *f = fopen("/dev/urandom", "rb");
    if (f) {
        if (fread(&rnd, sizeof rnd, 1, f) != 1)
            rnd = 0;
        fclose(f);
    }
    snprintf(rs->replica, sizeof rs->replica, "%llx.%ld", rnd, (long)getpid());
    int derr = sw_rdial_init(&rs->dial, base, &rs->url, "state", do_connect, on_expired, rs);
    rs->sync_timer = event_new(base, -1, EV_PERSIST, on_sync, rs);
    if (derr || !rs->prefix || !rs->sync_timer) {
        sw_rstate_free(rs);
        return NULL;
    }
    g->rstate = rs;
    g->store = (struct sw_store){&redis_ops, rs};

    g->remote_degraded = true; /* until connected */
    struct timeval tv = {0, SYNC_MS * 1000};
    event_add(rs->sync_timer, &tv);
    sw_info("state: shared on Redis %s:%d db %d%s (prefix %s, replica %s)", rs->url.host,
            rs->url.port, rs->url.db, rs->tls ? " over TLS" : "", rs->prefix, rs->replica);
    do_connect(rs);
    return rs;
}

void sw_rstate_free(struct sw_rstate *rs)
{
    if (!rs)
        return;
    if (rs->g && rs->g->rstate == rs) {
        rs->g->rstate = NULL;
        rs->g->store = sw_store_memory();

    }
    sw_rdial_free(&rs->dial);
    if (rs->sync_timer)
        event_free(rs->sync_timer);
    rs->sync_timer = NULL;
    struct sw_rconn *ac = rs->ac, *sub = rs->sub;
    rs->ac = rs->sub = NULL;
    sw_rconn_free(ac);
    sw_rconn_free(sub);
    sw_rtls_free(rs->tls);
    free(rs->server_name);
    if (rs->live)
        sw_live_unref(rs->live);
    free(rs->fallback_held);
    free(rs->prefix);
    free(rs);
}

void sw_rstate_set_live(struct sw_rstate *rs, struct sw_live *live)
{
    if (!rs)
        return;
    struct sw_live *old = rs->live;
    rs->live = sw_live_ref(live);
    if (old)
        sw_live_unref(old);
    if (live->n > rs->n_fallback) {
        long *nf = realloc(rs->fallback_held, live->n * sizeof *nf);
        if (nf) {
            memset(nf + rs->n_fallback, 0, (live->n - rs->n_fallback) * sizeof *nf);
            rs->fallback_held = nf;
            rs->n_fallback = live->n;
        }
    }
}

bool sw_rstate_degraded(const struct sw_rstate *rs)
{
    return rs && rs->g->remote_degraded;
}

const char *sw_rstate_degraded_reason(const struct sw_rstate *rs)
{
    return sw_rstate_degraded(rs) ? "redis" : NULL;
}

/* Without Redis: no spend (fails closed), slots from the fallback share, the
 * probe this replica's own. A refused reservation leaves the view at the cap
 * (as a refusal by Redis does) until the next sync reads the total: the
 * request's next decision, made before this replica knows it is degraded (an
 * error answer, a connection lost with the admit in flight), applies the
 * cap's policy instead of trying the same cloud again. */
static enum sw_store_verdict degraded_admit(struct sw_rstate *rs, struct sw_live *live,
                                             struct sw_store_hold *h)
{
    if (h->est_usd > 0) {
        double cap = sw_live_spend_cap_usd(live);
        if (rs->g->remote_spend_usd < cap)
            rs->g->remote_spend_usd = cap;
        h->unshared = true;
        return SW_STORE_SPEND_FULL;
    }
    const struct sw_config_backend *cb = &live->cfg->backends[h->be];
    if (cb->tier == SW_TIER_LOCAL && cb->slots > 0) {
        long share = (long)ceil((double)cb->slots * rs->share - 1e-9);
        if (share < 1)
            share = 1;
        if (h->be >= rs->n_fallback || rs->fallback_held[h->be] >= share)
            return SW_STORE_NO_SLOT;
        rs->fallback_held[h->be]++;
        h->fallback_lease = true;
    }
    return SW_STORE_OK;
}

int sw_rstate_admit(struct sw_rstate *rs, struct sw_live *live, struct sw_store_hold *h,
                    size_t be, double est_usd, bool probe, long tokens)
{
    const struct sw_config_backend *cb = &live->cfg->backends[be];
    bool lease = cb->tier == SW_TIER_LOCAL && cb->slots > 0;
    bool bucket = cb->tier == SW_TIER_CLOUD && (cb->rpm > 0 || cb->tpm > 0);
    h->be = be;
    h->unshared = false;
    h->est_usd = est_usd > 0 ? est_usd : 0;
    h->bucket_tokens = tokens > 0 ? tokens : 0;
    if (!lease && !(h->est_usd > 0) && !probe && !bucket)
        return SW_STORE_OK;
    if (!ready(rs))
        return degraded_admit(rs, live, h);
    snprintf(h->id, sizeof h->id, "%s:%llu", rs->replica, (unsigned long long)++rs->next_id);
    char now[24], est[40], cap[40], resv_ttl[24], win[24], slots[24], lease_ttl[24],
        probe_ttl[24], rpm[24], tpm[24], toks[24];
    snprintf(now, sizeof now, "%lld", (long long)sw_wall_ms());
    fmt_double(est, sizeof est, h->est_usd);
    fmt_double(cap, sizeof cap, sw_live_spend_cap_usd(live));
    snprintf(resv_ttl, sizeof resv_ttl, "%ld", rs->resv_ttl_ms);
    window_arg(rs, win, sizeof win);
    snprintf(slots, sizeof slots, "%ld", cb->slots);
    snprintf(lease_ttl, sizeof lease_ttl, "%ld", rs->lease_ttl_ms);
    snprintf(probe_ttl, sizeof probe_ttl, "%ld", rs->resv_ttl_ms);
    snprintf(rpm, sizeof rpm, "%ld", cb->rpm > 0 ? cb->rpm : 0);
    snprintf(tpm, sizeof tpm, "%ld", cb->tpm > 0 ? cb->tpm : 0);
    snprintf(toks, sizeof toks, "%ld", h->bucket_tokens);
    char *args[] = {rs->prefix, now,   h->id, est,       cap,
                    resv_ttl,   win,   lease ? cb->name : "", slots, lease_ttl,
                    probe ? cb->name : "", probe_ttl, bucket ? cb->name : "", rpm, tpm, toks};
    struct sw_store_op *op = script_op(rs, OP_ADMIT, S_ADMIT, args, 16);
    if (!op)
        return degraded_admit(rs, live, h);
    op->hold = h;
    op->hold_be = be;
    op->live = sw_live_ref(live);
    if (send_op(rs, op)) {
        op_free(op);
        return degraded_admit(rs, live, h);
    }
    h->op = op;
    return -1;
}

static void release_ids(struct sw_rstate *rs, struct sw_live *live, const char *id, size_t be,
                        bool spend, double actual, bool lease, bool probe, bool bucket,
                        long refund_tokens, bool refund_request)
{
    if (!rs->ac || !rs->connected)
        return; /* leases and reservations expire on their own */
    const struct sw_config_backend *cb = &live->cfg->backends[be];
    char act[40], win[24], win_ttl[24], rpm[24], tpm[24], refund[24], now[24];
    fmt_double(act, sizeof act, spend ? (actual > 0 ? actual : 0) : -1);
    window_arg(rs, win, sizeof win);
    snprintf(win_ttl, sizeof win_ttl, "%lld", (long long)rs->window_ms * 2);
    snprintf(rpm, sizeof rpm, "%ld", cb->rpm > 0 ? cb->rpm : 0);
    snprintf(tpm, sizeof tpm, "%ld", cb->tpm > 0 ? cb->tpm : 0);
    snprintf(refund, sizeof refund, "%ld", refund_tokens);
    snprintf(now, sizeof now, "%lld", (long long)sw_wall_ms());
    char *args[] = {rs->prefix, (char *)id, act, win, win_ttl,
                    lease ? cb->name : "", probe ? cb->name : "",
                    bucket ? cb->name : "", rpm, tpm, refund,
                    refund_request ? "1" : "0", now};
    struct sw_store_op *op = script_op(rs, OP_RELEASE, S_RELEASE, args, 13);
    if (op && send_op(rs, op))
        op_free(op);
}

void sw_rstate_release(struct sw_rstate *rs, struct sw_live *live, struct sw_store_hold *h,
                       double actual_usd, bool sent, long actual_tokens)
{
    if (h->op) {
        /* still asking: the late answer gives back whatever it granted */
        h->op->hold = NULL;
        h->op = NULL;
    }
    if (h->fallback_lease && rs && h->be < rs->n_fallback && rs->fallback_held[h->be] > 0)
        rs->fallback_held[h->be]--;
    /* the provider counts every request it received: refund the estimate's
     * excess when sent, all of it when not */
    long refund = h->bucket ? (sent ? h->bucket_tokens - actual_tokens : h->bucket_tokens) : 0;
    if (rs && (h->spend || h->lease || h->probe || h->bucket))
        release_ids(rs, live, h->id, h->be, h->spend, actual_usd, h->lease, h->probe, h->bucket,
                    refund, h->bucket && !sent);
    else if (rs && actual_usd > 0)
        /* spent without a shared reservation (no cap in force): still counted */
        release_ids(rs, live, h->id[0] ? h->id : "none", h->be, true, actual_usd, false, false,
                    false, 0, false);
    h->spend = h->lease = h->probe = h->bucket = h->fallback_lease = false;
    h->est_usd = 0;
    h->bucket_tokens = 0;
}

void sw_rstate_breaker_check(struct sw_rstate *rs, struct sw_live *live, size_t be)
{
    if (!rs || !ready(rs))
        return;
    struct sw_live_backend *b = live->b[be];
    int64_t now = sw_now_ms();
    int64_t until = sw_breaker_open_until(&b->breaker, now);
    int64_t until_wall = until ? until + (sw_wall_ms() - now) : 0;
    bool open = until != 0;
    bool was = b->announced_open_until != 0;
    if (open == was && (!open || until_wall <= b->announced_open_until + 50))
        return;
    if (!open && sw_breaker_state(&b->breaker, now) != SW_BREAKER_CLOSED)
        return; /* half-open: the probe decides */
    b->announced_open_until = open ? until_wall : 0;
    char key[300], ch[300], msg[200], val[24], px[24];
    sw_rkey(key, sizeof key, rs->prefix, "breaker", b->name);
    sw_rkey(ch, sizeof ch, rs->prefix, "events", NULL);
    snprintf(msg, sizeof msg, "breaker %s %lld", b->name, (long long)(open ? until_wall : 0));
    if (open) {
        snprintf(val, sizeof val, "%lld", (long long)until_wall);
        snprintf(px, sizeof px, "%lld", (long long)(until - now > 0 ? until - now : 1));
        plain(rs, OP_PLAIN, 5, (const char *[]){"SET", key, val, "PX", px});
        sw_info("state: breaker of %s open until %lld: announced", b->name, (long long)until_wall);
    } else {
        plain(rs, OP_PLAIN, 2, (const char *[]){"DEL", key});
    }
    plain(rs, OP_PLAIN, 3, (const char *[]){"PUBLISH", ch, msg});
}

void sw_rstate_breaker_reset(struct sw_rstate *rs, struct sw_live *live, size_t be)
{
    if (!rs || !rs->ac || !rs->connected)
        return;
    struct sw_live_backend *b = live->b[be];
    b->announced_open_until = 0;
    char key[300], ch[300], msg[200];
    sw_rkey(key, sizeof key, rs->prefix, "breaker", b->name);
    sw_rkey(ch, sizeof ch, rs->prefix, "events", NULL);
    snprintf(msg, sizeof msg, "breaker %s 0", b->name);
    plain(rs, OP_PLAIN, 2, (const char *[]){"DEL", key});
    plain(rs, OP_PLAIN, 3, (const char *[]){"PUBLISH", ch, msg});
}

void sw_rstate_flags_changed(struct sw_rstate *rs)
{
    if (!rs || !rs->ac || !rs->connected)
        return;
    struct sw_live_shared *g = rs->g;
    char key[300], ch[300], ttft[24], cap[40];
    sw_rkey(key, sizeof key, rs->prefix, "flags", NULL);
    sw_rkey(ch, sizeof ch, rs->prefix, "events", NULL);
    snprintf(ttft, sizeof ttft, "%ld", g->ttft_budget_ms);
    fmt_double(cap, sizeof cap, g->spend_cap_usd);
    plain(rs, OP_PLAIN, 10,
          (const char *[]){"HSET", key, "emergency", g->emergency ? "1" : "0", "emergency_reason",
                           g->emergency_reason, "ttft_budget_ms", ttft, "spend_cap_usd", cap});
    plain(rs, OP_PLAIN, 3, (const char *[]){"PUBLISH", ch, "flags"});
}

/* ---- The Redis implementation of the store (state/store.h) ---- */

static int store_admit(void *ctx, struct sw_live *live, struct sw_store_hold *h, size_t be,
                       double est_usd, bool probe, long tokens)
{
    return sw_rstate_admit(ctx, live, h, be, est_usd, probe, tokens);
}

static void store_release(void *ctx, struct sw_live *live, struct sw_store_hold *h,
                          double actual_usd, bool sent, long actual_tokens)
{
    sw_rstate_release(ctx, live, h, actual_usd, sent, actual_tokens);
}

static void store_breaker_check(void *ctx, struct sw_live *live, size_t be)
{
    sw_rstate_breaker_check(ctx, live, be);
}

static void store_breaker_reset(void *ctx, struct sw_live *live, size_t be)
{
    sw_rstate_breaker_reset(ctx, live, be);
}

static void store_flags_changed(void *ctx)
{
    sw_rstate_flags_changed(ctx);
}

static bool store_degraded(const void *ctx)
{
    return sw_rstate_degraded(ctx);
}

/* Announces that local backend be served prefix p; unreachable: this
 * replica's own table only (the caller already put it there). */
static void store_affinity_put(void *ctx, struct sw_live *live, size_t be,
                               const struct sw_prefix *p)
{
    struct sw_rstate *rs = ctx;
    if (!rs || !ready(rs) || p->n == 0)
        return;
    char ch[300], msg[200];
    size_t last = p->n - 1;
    sw_rkey(ch, sizeof ch, rs->prefix, "events", NULL);
    snprintf(msg, sizeof msg, "affinity %s %llx %ld %llx %ld", live->b[be]->name,
             (unsigned long long)p->hash[0], p->tokens[0], (unsigned long long)p->hash[last],
             p->tokens[last]);
    plain(rs, OP_PLAIN, 3, (const char *[]){"PUBLISH", ch, msg});
}

static const struct sw_store_ops redis_ops = {
    .name = "redis",
    .shared = true,
    .admit = store_admit,
    .release = store_release,
    .breaker_check = store_breaker_check,
    .breaker_reset = store_breaker_reset,
    .flags_changed = store_flags_changed,
    .degraded = store_degraded,
    .affinity_put = store_affinity_put,
};
