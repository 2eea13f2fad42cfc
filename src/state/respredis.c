/* The response store on Redis: see respredis.h. */
#include "state/respredis.h"

#include <event2/event.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/err.h"
#include "common/log.h"
#include "config/config.h"
#include "config/rurl.h"
#include "state/rconn.h"
#include "state/rdial.h"

#define MIN_OP_TIMEOUT_MS 1000  /* records can be large: a round trip gets at least this */

/* ARGV: prefix id scope sensitive created input output meta bytes now_ms ttl_s
 * max_entries max_bytes. Drops the index's expired ids and a record of the
 * same id, then the oldest until the record fits, then stores it. Returns
 * {evicted, expired}. */
static const char lua_put[] =
    "local p, id = ARGV[1], ARGV[2]\n"
    "local b, now, ttl = tonumber(ARGV[9]), tonumber(ARGV[10]), tonumber(ARGV[11])\n"
    "local maxn, maxb = tonumber(ARGV[12]), tonumber(ARGV[13])\n"
    "local idx, sizes, total, rk = p..'resp:index', p..'resp:sizes', p..'resp:bytes', p..'resp:r:'\n"
    "local function drop(x)\n"
    "  local s = tonumber(redis.call('HGET', sizes, x) or '0')\n"
    "  redis.call('HDEL', sizes, x)\n"
    "  redis.call('ZREM', idx, x)\n"
    "  redis.call('DEL', rk..x)\n"
    "  redis.call('DECRBY', total, s)\n"
    "end\n"
    "local old = redis.call('ZRANGEBYSCORE', idx, '-inf', now - ttl * 1000)\n"
    "for _, x in ipairs(old) do drop(x) end\n"
    "if redis.call('ZSCORE', idx, id) then drop(id) end\n"
    "local evicted = 0\n"
    "while redis.call('ZCARD', idx) > 0 and (redis.call('ZCARD', idx) + 1 > maxn or\n"
    "      tonumber(redis.call('GET', total) or '0') + b > maxb) do\n"
    "  drop(redis.call('ZRANGE', idx, 0, 0)[1])\n"
    "  evicted = evicted + 1\n"
    "end\n"
    "redis.call('DEL', rk..id)\n"
    "redis.call('HSET', rk..id, 's', ARGV[3], 'f', ARGV[4], 'c', ARGV[5], 'i', ARGV[6],\n"
    "           'o', ARGV[7], 'm', ARGV[8])\n"
    "redis.call('EXPIRE', rk..id, ttl)\n"
    "redis.call('ZADD', idx, now, id)\n"
    "redis.call('HSET', sizes, id, b)\n"
    "redis.call('INCRBY', total, b)\n"
    "return {evicted, #old}\n";

/* ARGV: prefix id scope. 1 when the record of id was in scope and is gone, else 0. */
static const char lua_del[] =
    "local p, id = ARGV[1], ARGV[2]\n"
    "local rk = p..'resp:r:'..id\n"
    "if redis.call('HGET', rk, 's') ~= ARGV[3] then return 0 end\n"
    "local s = tonumber(redis.call('HGET', p..'resp:sizes', id) or '0')\n"
    "redis.call('HDEL', p..'resp:sizes', id)\n"
    "redis.call('ZREM', p..'resp:index', id)\n"
    "redis.call('DECRBY', p..'resp:bytes', s)\n"
    "redis.call('DEL', rk)\n"
    "return 1\n";

struct rstore {
    struct sw_respstore store;
    struct event_base *base;
    struct sw_respstore_limits lim;
    struct sw_rurl url;
    struct sw_rtls *tls;            /* rediss:// */
    char *server_name;              /* rediss://: the certificate's name; NULL: the host */
    char *prefix;
    long op_timeout_ms;
    struct sw_rconn *c;
    bool connected;                 /* PING answered on c */
    struct sw_rdial dial;           /* connect deadline, backoff */
    uint64_t evicted, expired, refused;
};

enum op_kind { OP_PUT, OP_GET, OP_DEL };

/* One call in flight: freed when its reply (or the connection's end) comes,
 * answered at most once (the reply, or the timeout first). */
struct op {
    struct rstore *rs;
    enum op_kind kind;
    sw_respstore_done_fn done;
    sw_respstore_get_fn got;
    void *ud;
    char id[SW_RESPSTORE_MAX_ID + 1];
    char scope[SW_RESPSTORE_MAX_SCOPE + 1];
    struct event *timer;
    bool answered;
};

/* ---- Answers ---- */

static void answer(struct op *op, int err, const struct sw_resp_record *r)
{
    if (op->answered)
        return;
    op->answered = true;
    if (op->kind == OP_GET)
        op->got(err, err ? NULL : r, op->ud);
    else
        op->done(err, op->ud);
}

static void on_op_timeout(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct op *op = arg;
    if (!op->answered)
        sw_warn("respstore: a Redis round trip took longer than %ld ms", op->rs->op_timeout_ms);
    answer(op, SW_ETIMEOUT, NULL);
}

static bool str_el(const redisReply *r)
{
    return r && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS);
}

/* HMGET s f c i o m: the record, or SW_ENOTFOUND (none, or another scope's). */
static void answer_get(struct op *op, const redisReply *r)
{
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 6) {
        answer(op, SW_EPROTO, NULL);
        return;
    }
    redisReply *const *e = r->element;
    if (!str_el(e[0]) || strlen(op->scope) != e[0]->len || memcmp(op->scope, e[0]->str, e[0]->len)) {
        answer(op, SW_ENOTFOUND, NULL);
        return;
    }
    for (int i = 1; i < 5; i++)
        if (!str_el(e[i])) {
            answer(op, SW_EPROTO, NULL);
            return;
        }
    char created[24] = "";
    snprintf(created, sizeof created, "%.*s", (int)e[2]->len, e[2]->str);
    const struct sw_resp_record rec = {
        .id = op->id, .scope = op->scope, .sensitive = e[1]->len == 1 && e[1]->str[0] == '1',
        .created_at_s = strtoll(created, NULL, 10),
        .input = e[3]->str, .input_len = e[3]->len,
        .output = e[4]->str, .output_len = e[4]->len,
        .meta = str_el(e[5]) && e[5]->len ? e[5]->str : NULL,
        .meta_len = str_el(e[5]) ? e[5]->len : 0,
    };
    answer(op, SW_OK, &rec);
}

static void on_reply(struct sw_rconn *c, void *reply, void *priv)
{
    (void)c;
    struct op *op = priv;
    struct rstore *rs = op->rs;
    const redisReply *r = reply;
    if (!r) {
        answer(op, SW_EUNAVAILABLE, NULL);
    } else if (r->type == REDIS_REPLY_ERROR) {
        /* Redis's text is not logged: a script error may quote an argument. */
        if (!op->answered)
            sw_warn("respstore: Redis refused a %s", op->kind == OP_PUT   ? "put"
                                                     : op->kind == OP_GET ? "get"
                                                                          : "delete");
        if (op->kind == OP_PUT)
            rs->refused++;
        answer(op, SW_EIO, NULL);
    } else if (op->kind == OP_GET) {
        answer_get(op, r);
    } else if (op->kind == OP_DEL) {
        answer(op, r->type == REDIS_REPLY_INTEGER && r->integer == 1 ? SW_OK : SW_ENOTFOUND, NULL);
    } else {
        if (r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
            r->element[0]->type == REDIS_REPLY_INTEGER && r->element[1]->type == REDIS_REPLY_INTEGER) {
            rs->evicted += (uint64_t)r->element[0]->integer;
            rs->expired += (uint64_t)r->element[1]->integer;
        }
        answer(op, r->type == REDIS_REPLY_ARRAY ? SW_OK : SW_EPROTO, NULL);
    }
    if (op->timer)
        event_free(op->timer);
    free(op);
}

/* Sends argv for op; on failure op is answered and freed. */
static void send_op(struct rstore *rs, struct op *op, int argc, const char **argv,
                    const size_t *lens)
{
    if (!rs->c || !rs->connected) {
        if (op->kind == OP_PUT)
            rs->refused++;
        answer(op, SW_EUNAVAILABLE, NULL);
        free(op);
        return;
    }
    op->timer = evtimer_new(rs->base, on_op_timeout, op);
    if (!op->timer || sw_rconn_command(rs->c, on_reply, op, false, argc, argv, lens)) {
        if (op->kind == OP_PUT)
            rs->refused++;
        answer(op, op->timer ? SW_EUNAVAILABLE : SW_ENOMEM, NULL);
        if (op->timer)
            event_free(op->timer);
        free(op);
        return;
    }
    struct timeval tv = {rs->op_timeout_ms / 1000, (rs->op_timeout_ms % 1000) * 1000};
    evtimer_add(op->timer, &tv);
}

/* A new op for id in scope, or NULL (answered) when either is out of bounds. */
static struct op *new_op(struct rstore *rs, enum op_kind kind, const char *id, const char *scope,
                         sw_respstore_done_fn done, sw_respstore_get_fn got, void *ud)
{
    size_t il = id ? strnlen(id, SW_RESPSTORE_MAX_ID + 1) : 0;
    size_t sl = strnlen(scope, SW_RESPSTORE_MAX_SCOPE + 1);
    int err = !il ? SW_EINVAL : il > SW_RESPSTORE_MAX_ID || sl > SW_RESPSTORE_MAX_SCOPE ? SW_ETOOBIG : 0;
    struct op *op = err ? NULL : calloc(1, sizeof *op);
    if (!op) {
        err = err ? err : SW_ENOMEM;
        /* no record can have an id or scope out of bounds: a get or delete
         * of one finds nothing */
        if (kind == OP_PUT)
            rs->refused++;
        if (kind != OP_PUT && err != SW_ENOMEM)
            err = SW_ENOTFOUND;
        if (kind == OP_GET)
            got(err, NULL, ud);
        else
            done(err, ud);
        return NULL;
    }
    *op = (struct op){.rs = rs, .kind = kind, .done = done, .got = got, .ud = ud};
    memcpy(op->id, id, il);
    memcpy(op->scope, scope, sl);
    return op;
}

/* ---- Calls ---- */

static void r_put(void *impl, const struct sw_resp_record *r, sw_respstore_done_fn cb, void *ud)
{
    struct rstore *rs = impl;
    int err = sw_resp_record_check(r);
    size_t bytes = sw_resp_record_bytes(r);
    if (!err && bytes > (size_t)rs->lim.max_bytes)
        err = SW_ETOOBIG;
    if (err) {
        rs->refused++;
        cb(err, ud);
        return;
    }
    struct op *op = new_op(rs, OP_PUT, r->id, r->scope ? r->scope : "", cb, NULL, ud);
    if (!op)
        return;
    char created[24], nbytes[24], now[24], ttl[24], maxn[24], maxb[24];
    snprintf(created, sizeof created, "%lld", (long long)r->created_at_s);
    snprintf(nbytes, sizeof nbytes, "%zu", bytes);
    snprintf(now, sizeof now, "%lld", (long long)sw_wall_ms());
    snprintf(ttl, sizeof ttl, "%ld", rs->lim.ttl_s);
    snprintf(maxn, sizeof maxn, "%ld", rs->lim.max_entries);
    snprintf(maxb, sizeof maxb, "%ld", rs->lim.max_bytes);
    const char *argv[] = {"EVAL", lua_put, "0", rs->prefix, op->id, op->scope,
                          r->sensitive ? "1" : "0", created, r->input ? r->input : "",
                          r->output ? r->output : "", r->meta ? r->meta : "", nbytes, now, ttl,
                          maxn, maxb};
    size_t lens[sizeof argv / sizeof argv[0]];
    for (size_t i = 0; i < sizeof argv / sizeof argv[0]; i++)
        lens[i] = strlen(argv[i]);
    lens[8] = r->input_len;
    lens[9] = r->output_len;
    lens[10] = r->meta ? r->meta_len : 0;
    send_op(rs, op, (int)(sizeof argv / sizeof argv[0]), argv, lens);
}

static void record_key(const struct rstore *rs, const char *id, char *out, size_t n)
{
    snprintf(out, n, "%sresp:r:%s", rs->prefix, id);
}

static void r_get(void *impl, const char *id, const char *scope, sw_respstore_get_fn cb, void *ud)
{
    struct rstore *rs = impl;
    struct op *op = new_op(rs, OP_GET, id, scope, NULL, cb, ud);
    if (!op)
        return;
    char key[512];
    record_key(rs, op->id, key, sizeof key);
    const char *argv[] = {"HMGET", key, "s", "f", "c", "i", "o", "m"};
    size_t lens[8];
    for (size_t i = 0; i < 8; i++)
        lens[i] = strlen(argv[i]);
    send_op(rs, op, 8, argv, lens);
}

static void r_del(void *impl, const char *id, const char *scope, sw_respstore_done_fn cb, void *ud)
{
    struct rstore *rs = impl;
    struct op *op = new_op(rs, OP_DEL, id, scope, cb, NULL, ud);
    if (!op)
        return;
    const char *argv[] = {"EVAL", lua_del, "0", rs->prefix, op->id, op->scope};
    size_t lens[6];
    for (size_t i = 0; i < 6; i++)
        lens[i] = strlen(argv[i]);
    send_op(rs, op, 6, argv, lens);
}

static void r_set_limits(void *impl, const struct sw_respstore_limits *l)
{
    struct rstore *rs = impl;
    rs->lim = *l; /* the next put trims to them */
}

static void r_stats(void *impl, struct sw_respstore_stats *out)
{
    struct rstore *rs = impl;
    *out = (struct sw_respstore_stats){.evicted = rs->evicted, .expired = rs->expired,
                                       .refused = rs->refused};
}

/* ---- The connection ---- */

static void teardown(struct rstore *rs)
{
    struct sw_rconn *c = rs->c;
    rs->c = NULL;
    rs->connected = false;
    sw_rconn_free(c); /* pending calls answer SW_EUNAVAILABLE */
}

static void on_lost(struct sw_rconn *c, const char *why, void *data)
{
    struct rstore *rs = data;
    if (c != rs->c)
        return;
    sw_warn("respstore: lost the connection to Redis %s:%d: %s", rs->url.host, rs->url.port, why);
    teardown(rs);
    sw_rdial_retry(&rs->dial);
}

static void on_pong(struct sw_rconn *c, void *reply, void *priv)
{
    struct rstore *rs = priv;
    const redisReply *r = reply;
    if (!r || c != rs->c)
        return;
    if (r->type == REDIS_REPLY_STATUS && !strcmp(r->str, "PONG")) {
        rs->connected = true;
        sw_rdial_connected(&rs->dial);
    } else if (r->type == REDIS_REPLY_ERROR) {
        /* e.g. NOAUTH or WRONGPASS (never the password): the connect deadline retries */
        sw_warn("respstore: Redis %s:%d refused the connection: %.200s", rs->url.host,
                rs->url.port, r->str);
    }
}

/* The backoff is over: a new connection, usable once PING is answered. */
static void do_connect(void *owner)
{
    struct rstore *rs = owner;
    if (rs->c)
        return;
    struct sw_rconn *c = sw_rdial_open(&rs->dial, rs->tls, rs->server_name, on_lost, rs, false);
    if (!c) {
        sw_rdial_retry(&rs->dial);
        return;
    }
    rs->c = c;
    size_t len = 4;
    if (sw_rconn_command(c, on_pong, rs, false, 1, (const char *[]){"PING"}, &len) || !rs->c) {
        if (rs->c)
            teardown(rs);
        sw_rdial_retry(&rs->dial);
        return;
    }
    sw_rdial_started(&rs->dial);
}

static void on_expired(void *owner)
{
    teardown(owner);
}

static void r_free(void *impl)
{
    struct rstore *rs = impl;
    if (rs->c)
        teardown(rs);
    sw_rdial_free(&rs->dial);
    sw_rtls_free(rs->tls);
    free(rs->server_name);
    free(rs->prefix);
    explicit_bzero(&rs->url, sizeof rs->url);
    free(rs);
}

static const struct sw_respstore_ops redis_ops = {
    .name = "redis",
    .put = r_put,
    .get = r_get,
    .del = r_del,
    .set_limits = r_set_limits,
    .stats = r_stats,
    .free = r_free,
};

struct sw_respstore *sw_respstore_redis_new(struct event_base *base,
                                            const struct sw_config_state *st,
                                            const struct sw_respstore_limits *l)
{
    if (!st->redis)
        return NULL;
    struct rstore *rs = calloc(1, sizeof *rs);
    if (!rs)
        return NULL;
    char why[512];
    if (sw_rurl_parse(st->redis, &rs->url, why, sizeof why)) {
        sw_error("respstore: state.redis: %s", why); /* never the URL: it may hold a password */
        free(rs);
        return NULL;
    }
    rs->base = base;
    rs->lim = *l;
    rs->store = (struct sw_respstore){&redis_ops, rs};
    if (rs->url.tls) {
        const struct sw_config_state_tls *t = &st->tls;
        rs->tls = sw_rtls_new(t->ca_file, t->cert_file, t->key_file, t->verify, why, sizeof why);
        if (!rs->tls) {
            sw_error("respstore: TLS for Redis %s:%d: %s", rs->url.host, rs->url.port, why);
            r_free(rs);
            return NULL;
        }
        if (t->server_name && !(rs->server_name = strdup(t->server_name))) {
            r_free(rs);
            return NULL;
        }
    }
    rs->prefix = strdup(st->key_prefix ? st->key_prefix : "spillway:");
    rs->op_timeout_ms = st->timeout_ms > MIN_OP_TIMEOUT_MS ? st->timeout_ms : MIN_OP_TIMEOUT_MS;
    if (sw_rdial_init(&rs->dial, base, &rs->url, "respstore", do_connect, on_expired, rs) ||
        !rs->prefix || strlen(rs->prefix) > 256) {
        r_free(rs);
        return NULL;
    }
    do_connect(rs);
    return &rs->store;
}

/* ---- The daemon's store ---- */

static int64_t mono_ms(void *ud)
{
    (void)ud;
    return sw_now_ms();
}

struct sw_respstore *sw_respstore_open(struct event_base *base, const struct sw_config *cfg,
                                       const struct sw_respstore_limits *l)
{
    struct sw_respstore *s = cfg->state.redis ? sw_respstore_redis_new(base, &cfg->state, l)
                                              : sw_respstore_memory_new(l, mono_ms, NULL);
    if (!s)
        sw_error("cannot open the response store (%s)", cfg->state.redis ? "Redis" : "memory");
    return s;
}
