/* Runtime (virtual) keys: see vkeys.h. */
#include "state/vkeys.h"

#include <hiredis/hiredis.h>
#include <jansson.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/err.h"
#include "common/log.h"
#include "config/tenancy.h"
#include "state/rstate.h"

#define NAME_MAX_LEN 64

struct entry {
    bool used, revoked;
    bool unshared;              /* revoked, but Redis has not taken it yet: written again */
    bool writing;               /* a write of it is on its way to Redis */
    unsigned char hash[32];     /* SHA-256 of the secret */
    int64_t created_ms;         /* wall */
    struct sw_config_key k;     /* its strings point into the buffers below */
    char id[NAME_MAX_LEN + 1], name[NAME_MAX_LEN + 1], team[NAME_MAX_LEN + 1];
    char models[SW_CONFIG_MAX_KEY_MODELS][SW_VKEYS_MODEL_MAX];
};

struct sw_vkeys {
    struct entry *e;            /* SW_VKEYS_MAX */
    size_t n;
    struct sw_rstate *rs;
    char prefix[128];
    long long ver;              /* the Redis version last loaded; -1 none */
    bool loading, polling;
    char sha_write[41], sha_load[41], sha_ver[41];
};

static const char *const window_names[] = {"hour", "day", "week", "month", NULL};

/* ---- Helpers ---- */

static void sha256(const char *s, unsigned char out[32])
{
    unsigned int n = 0;
    if (EVP_Digest(s, strlen(s), out, &n, EVP_sha256(), NULL) != 1 || n != 32)
        memset(out, 0, 32);
}

static void hex(const unsigned char *b, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++)
        snprintf(out + 2 * i, 3, "%02x", b[i]);
}

static bool unhex(const char *s, unsigned char *out, size_t n)
{
    if (!s || strlen(s) != 2 * n)
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned v;
        if (sscanf(s + 2 * i, "%2x", &v) != 1)
            return false;
        out[i] = (unsigned char)v;
    }
    return true;
}

static bool name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > NAME_MAX_LEN)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '.' || c == '-'))
            return false;
    }
    return true;
}

static struct entry *by_id(struct sw_vkeys *v, const char *id)
{
    for (size_t i = 0; i < v->n; i++)
        if (v->e[i].used && !strcmp(v->e[i].id, id))
            return &v->e[i];
    return NULL;
}

static void entry_init(struct entry *e)
{
    memset(e, 0, sizeof *e);
    e->used = true;
    e->k.id = e->id;
    e->k.name = e->name;
    e->k.allow_cloud = true;
    e->k.team_index = -1;
    e->k.pii = SW_PII_POLICY_INHERIT;
    e->k.pii_binary_parts = SW_PII_BINARY_INHERIT;
    e->k.t.max_tier = SW_MAX_TIER_CLOUD;
    e->k.t.on_budget = SW_ON_BUDGET_KEEP_LOCAL;
    e->k.t.budget.window = SW_BUDGET_DAY;
}

/* ---- JSON fields (the request's and the stored record's) ---- */

#define WHY(...) (snprintf(why, why_cap, __VA_ARGS__), SW_EINVAL)
#define WHY_UNSHARED(...) (snprintf(why, why_cap, __VA_ARGS__), SW_ECONNECT)

static int apply_budget(struct sw_config_tenancy *t, const json_t *b, char *why, size_t why_cap)
{
    if (json_is_null(b)) {
        t->budget.usd = 0;
        return SW_OK;
    }
    const json_t *usd = json_object_get(b, "usd"), *w = json_object_get(b, "window"),
                 *r = json_object_get(b, "rolling");
    if (!json_is_object(b) || !json_is_number(usd) || json_number_value(usd) < 0 ||
        json_number_value(usd) > 1e12)
        return WHY("budget: an object with usd (a number >= 0) and window or rolling");
    if (w && r)
        return WHY("budget: give window or rolling, not both");
    int win = SW_BUDGET_DAY;
    long rolling = 0;
    if (w) {
        win = -1;
        for (int i = 0; window_names[i] && json_is_string(w); i++)
            if (!strcmp(json_string_value(w), window_names[i]))
                win = i;
        if (win < 0)
            return WHY("budget.window: hour, day, week or month");
    }
    if (r) {
        long long ms = json_is_string(r) ? sw_config_duration_ms(json_string_value(r)) : -1;
        if (ms < SW_CONFIG_ROLLING_MIN_MS)
            return WHY("budget.rolling: a duration of 100ms to 366d such as \"2s\" or \"30d\"");
        win = SW_BUDGET_ROLLING;
        rolling = (long)ms;
    }
    t->budget.usd = json_number_value(usd);
    t->budget.window = win;
    t->budget.rolling_ms = rolling;
    return SW_OK;
}

static int apply_models(struct entry *e, const json_t *m, char *why, size_t why_cap)
{
    if (!json_is_array(m) || json_array_size(m) == 0 ||
        json_array_size(m) > SW_CONFIG_MAX_KEY_MODELS)
        return WHY("models: a list of 1 to 32 model names or patterns ('*' a wildcard)");
    size_t i;
    const json_t *s;
    json_array_foreach(m, i, s) {
        if (!json_is_string(s) || json_string_length(s) == 0 ||
            json_string_length(s) >= SW_VKEYS_MODEL_MAX)
            return WHY("models[%zu]: a model name or pattern of 1 to 127 bytes", i);
    }
    json_array_foreach(m, i, s) {
        snprintf(e->models[i], sizeof e->models[i], "%s", json_string_value(s));
        e->k.t.models[i] = e->models[i];
    }
    e->k.t.n_models = json_array_size(m);
    return SW_OK;
}

static int apply_limit(const json_t *o, const char *name, long max, long *out, char *why,
                       size_t why_cap)
{
    const json_t *v = json_object_get(o, name);
    if (!v)
        return SW_OK;
    if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > max)
        return WHY("%s: an integer of 0 (no limit) to %ld", name, max);
    *out = (long)json_integer_value(v);
    return SW_OK;
}

static int apply_enum(const json_t *o, const char *name, const char *const *names, int *out,
                      char *why, size_t why_cap)
{
    const json_t *v = json_object_get(o, name);
    if (!v)
        return SW_OK;
    for (int i = 0; names[i] && json_is_string(v); i++)
        if (!strcmp(json_string_value(v), names[i])) {
            *out = i;
            return SW_OK;
        }
    return WHY("%s: %s or %s", name, names[0], names[1]);
}

/* Applies the fields of o to a copy of e (e is untouched on error). cfg
 * NULL: a stored record, its team not checked. */
static int apply(struct entry *e, const json_t *o, const struct sw_config *cfg, char *why,
                 size_t why_cap)
{
    static struct entry tmp; /* one event loop: a scratch copy, off the stack */
    if (!json_is_object(o))
        return WHY("the body is a JSON object of key fields");
    tmp = *e;
    const json_t *name = json_object_get(o, "name"), *team = json_object_get(o, "team");
    if (name && (!json_is_string(name) || !name_ok(json_string_value(name))))
        return WHY("name: 1 to 64 of A-Z a-z 0-9 _ . -");
    if (name)
        snprintf(tmp.name, sizeof tmp.name, "%s", json_string_value(name));
    if (team && !json_is_null(team)) {
        if (!json_is_string(team) || !name_ok(json_string_value(team)))
            return WHY("team: a teams[] name");
        bool found = !cfg;
        for (size_t i = 0; cfg && i < cfg->n_teams; i++)
            found = found || !strcmp(cfg->teams[i].name, json_string_value(team));
        if (!found)
            return WHY("team: \"%.64s\" is not a team of the config (teams:)",
                       json_string_value(team));
        snprintf(tmp.team, sizeof tmp.team, "%s", json_string_value(team));
    } else if (team) {
        tmp.team[0] = '\0';
    }
    const json_t *b = json_object_get(o, "budget"), *m = json_object_get(o, "models");
    int err = b ? apply_budget(&tmp.k.t, b, why, why_cap) : SW_OK;
    if (!err && m && !json_is_null(m))
        err = apply_models(&tmp, m, why, why_cap);
    else if (!err && m)
        tmp.k.t.n_models = 0;
    if (!err)
        err = apply_limit(o, "rpm", 100000000, &tmp.k.t.rpm, why, why_cap);
    if (!err)
        err = apply_limit(o, "tpm", 1000000000, &tmp.k.t.tpm, why, why_cap);
    if (!err)
        err = apply_enum(o, "max_tier", sw_config_tier_names, &tmp.k.t.max_tier, why, why_cap);
    if (!err)
        err = apply_enum(o, "on_budget", sw_config_on_budget_names, &tmp.k.t.on_budget, why,
                         why_cap);
    if (err)
        return err;
    *e = tmp;
    /* the pointers into the entry's own buffers */
    e->k.id = e->id;
    e->k.name = e->name;
    e->k.team = e->team[0] ? e->team : NULL;
    for (size_t i = 0; i < e->k.t.n_models; i++)
        e->k.t.models[i] = e->models[i];
    return SW_OK;
}

/* The stored record: the fields, the hash, revoked, created_ms. */
static json_t *record(const struct entry *e)
{
    char h[65];
    hex(e->hash, 32, h);
    const struct sw_config_tenancy *t = &e->k.t;
    json_t *models = json_array();
    for (size_t i = 0; i < t->n_models; i++)
        json_array_append_new(models, json_string(t->models[i]));
    json_t *budget = json_null();
    if (t->budget.usd > 0) {
        budget = json_pack("{s:f}", "usd", t->budget.usd);
        if (t->budget.window == SW_BUDGET_ROLLING) {
            char d[32];
            snprintf(d, sizeof d, "%ldms", t->budget.rolling_ms);
            json_object_set_new(budget, "rolling", json_string(d));
        } else {
            json_object_set_new(budget, "window", json_string(window_names[t->budget.window % 4]));
        }
    }
    json_t *o = json_pack("{s:s, s:s, s:s, s:b, s:I, s:o, s:I, s:I, s:s, s:s}", "id", e->id,
                          "name", e->name, "h", h, "revoked", e->revoked, "created_ms",
                          (json_int_t)e->created_ms, "budget", budget, "rpm", (json_int_t)t->rpm,
                          "tpm", (json_int_t)t->tpm, "max_tier",
                          sw_config_tier_names[t->max_tier == SW_MAX_TIER_LOCAL], "on_budget",
                          sw_config_on_budget_names[t->on_budget ? 1 : 0]);
    json_object_set_new(o, "team", e->team[0] ? json_string(e->team) : json_null());
    json_object_set_new(o, "models", t->n_models ? models : (json_decref(models), json_null()));
    return o;
}

/* ---- Redis ---- */

/* ARGV: prefix id record. */
static const char lua_write[] =
    "redis.call('HSET', ARGV[1]..'vkeys', ARGV[2], ARGV[3])\n"
    "local v = redis.call('INCR', ARGV[1]..'vkeys:ver')\n"
    "redis.call('PUBLISH', ARGV[1]..'events', 'vkeys')\n"
    "return v\n";
/* ARGV: prefix. Returns {ver, id, record, id, record, ...}. */
static const char lua_load[] =
    "local out = {tostring(redis.call('GET', ARGV[1]..'vkeys:ver') or '0')}\n"
    "for _, x in ipairs(redis.call('HGETALL', ARGV[1]..'vkeys')) do table.insert(out, x) end\n"
    "return out\n";
static const char lua_ver[] = "return tostring(redis.call('GET', ARGV[1]..'vkeys:ver') or '0')\n";

/* A change on its way to Redis. */
struct written {
    struct sw_vkeys *v;
    size_t i;                   /* the entry */
    bool created;               /* dropped again when Redis does not take it */
    struct sw_vkeys_wait w;     /* done NULL: no one waits (a revocation written again) */
};

static void on_written(void *ud, const void *reply)
{
    struct written *x = ud;
    struct entry *e = &x->v->e[x->i];
    e->writing = false;
    if (!reply && x->w.done) {  /* a revocation written again is warned of once, when asked */
        sw_warn("keys: the change to runtime key %s could not be written to Redis%s", e->id,
                x->created   ? ": the key is dropped"
                : e->revoked ? ": refused on this replica, written again once Redis takes it"
                             : "; it applies on this replica only");
    }
    if (!reply && x->created)
        memset(e, 0, sizeof *e);        /* unused: no one was shown its secret */
    e->unshared = e->revoked && !reply;
    if (x->w.done)
        x->w.done(x->w.ud, reply != NULL);
    free(x);
}

/* Writes e to Redis when there is one: SW_OK (*w->pending says whether
 * w->done comes), SW_ECONNECT when Redis cannot be asked now. w NULL:
 * no one waits. */
static int write_entry(struct sw_vkeys *v, struct entry *e, bool created,
                       const struct sw_vkeys_wait *w)
{
    static const struct sw_vkeys_wait none = {NULL, NULL, NULL};
    if (!w)
        w = &none;
    if (w->pending)
        *w->pending = false;
    if (!v->rs) {
        e->unshared = false;
        return SW_OK;
    }
    e->unshared = e->revoked;   /* until Redis has it */
    json_t *r = record(e);
    char *s = r ? json_dumps(r, JSON_COMPACT) : NULL;
    json_decref(r);
    struct written *x = s ? malloc(sizeof *x) : NULL;
    if (!x) {
        free(s);
        return SW_ENOMEM;
    }
    *x = (struct written){v, (size_t)(e - v->e), created, *w};
    const char *args[] = {v->prefix, e->id, s};
    int rc = sw_rstate_eval(v->rs, lua_write, v->sha_write, args, 3, on_written, x);
    free(s);
    if (rc) {
        free(x);
        if (w->done)
            sw_warn("keys: Redis unreachable: the change to runtime key %s is not shared", e->id);
        return SW_ECONNECT;
    }
    e->writing = true;
    if (w->pending)
        *w->pending = true;
    return SW_OK;
}

static void load_one(struct sw_vkeys *v, const char *id, const char *text, bool *seen)
{
    json_error_t jerr;
    json_t *o = json_loads(text, 0, &jerr);
    unsigned char h[32];
    if (!o || !name_ok(id) || !unhex(json_string_value(json_object_get(o, "h")), h, 32)) {
        json_decref(o);
        return;
    }
    struct entry *e = by_id(v, id);
    if (!e && v->n < SW_VKEYS_MAX) {
        e = &v->e[v->n++];
        entry_init(e);
        snprintf(e->id, sizeof e->id, "%s", id);
    }
    char why[160];
    if (e && apply(e, o, NULL, why, sizeof why) == SW_OK) {
        memcpy(e->hash, h, 32);
        /* a revocation is never undone: one Redis did not take stays */
        e->revoked = e->revoked || json_is_true(json_object_get(o, "revoked"));
        e->created_ms = json_integer_value(json_object_get(o, "created_ms"));
        seen[e - v->e] = true;
    }
    json_decref(o);
}

static void on_loaded(void *ud, const void *reply)
{
    struct sw_vkeys *v = ud;
    const redisReply *r = reply;
    v->loading = false;
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements < 1 ||
        r->element[0]->type != REDIS_REPLY_STRING)
        return;
    static bool seen[SW_VKEYS_MAX];
    memset(seen, 0, sizeof seen);
    for (size_t i = 1; i + 1 < r->elements; i += 2)
        if (r->element[i]->type == REDIS_REPLY_STRING &&
            r->element[i + 1]->type == REDIS_REPLY_STRING)
            load_one(v, r->element[i]->str, r->element[i + 1]->str, seen);
    /* gone from Redis (an emptied server): refused, as revoked */
    for (size_t i = 0; i < v->n; i++)
        if (!seen[i] && !v->e[i].revoked) {
            v->e[i].revoked = true;
            sw_warn("keys: runtime key %s is no longer in Redis: refused", v->e[i].id);
        }
    v->ver = strtoll(r->element[0]->str, NULL, 10);
}

static void load(struct sw_vkeys *v)
{
    if (!v->rs || v->loading)
        return;
    const char *args[] = {v->prefix};
    v->loading = sw_rstate_eval(v->rs, lua_load, v->sha_load, args, 1, on_loaded, v) == 0;
}

static void on_ver(void *ud, const void *reply)
{
    struct sw_vkeys *v = ud;
    const redisReply *r = reply;
    v->polling = false;
    if (r && r->type == REDIS_REPLY_STRING && strtoll(r->str, NULL, 10) != v->ver)
        load(v);
}

static void on_announced(void *ud, const char *msg)
{
    if (!msg || !strcmp(msg, "vkeys"))
        load(ud);
}

static void on_sync(void *ud)
{
    struct sw_vkeys *v = ud;
    if (!v->rs)
        return;
    for (size_t i = 0; i < v->n; i++)
        if (v->e[i].used && v->e[i].unshared && !v->e[i].writing)
            write_entry(v, &v->e[i], false, NULL);
    if (v->polling || v->loading)
        return;
    const char *args[] = {v->prefix};
    v->polling = sw_rstate_eval(v->rs, lua_ver, v->sha_ver, args, 1, on_ver, v) == 0;
}

/* ---- Public ---- */

struct sw_vkeys *sw_vkeys_new(void)
{
    struct sw_vkeys *v = calloc(1, sizeof *v);
    if (v)
        v->e = calloc(SW_VKEYS_MAX, sizeof *v->e);
    if (!v || !v->e) {
        if (v)
            free(v->e);
        free(v);
        return NULL;
    }
    v->ver = -1;
    return v;
}

void sw_vkeys_free(struct sw_vkeys *v)
{
    if (!v)
        return;
    free(v->e);
    free(v);
}

void sw_vkeys_set_redis(struct sw_vkeys *v, struct sw_rstate *rs, const char *prefix)
{
    if (!v)
        return;
    v->rs = rs;
    v->loading = v->polling = false;
    snprintf(v->prefix, sizeof v->prefix, "%s", prefix ? prefix : "");
    if (rs)
        sw_rstate_hook(rs, on_announced, on_sync, v);
}

const struct sw_config_key *sw_vkeys_find(struct sw_vkeys *v, const struct sw_config *cfg,
                                          const char *bearer)
{
    if (!v || !v->n || !bearer)
        return NULL;
    unsigned char h[32];
    sha256(bearer, h);
    struct entry *found = NULL;
    for (size_t i = 0; i < v->n; i++)
        if (v->e[i].used && CRYPTO_memcmp(v->e[i].hash, h, 32) == 0)
            found = &v->e[i];
    if (!found || found->revoked)
        return NULL;
    found->k.team_index = -1;
    for (size_t t = 0; found->team[0] && t < cfg->n_teams; t++)
        if (!strcmp(cfg->teams[t].name, found->team))
            found->k.team_index = (long)t;
    return &found->k;
}

bool sw_vkeys_has_id(const struct sw_vkeys *v, const char *id)
{
    return v && by_id((struct sw_vkeys *)v, id) != NULL;
}

int sw_vkeys_create(struct sw_vkeys *v, const struct sw_config *cfg, const json_t *req,
                    char *secret, size_t cap, const struct sw_config_key **out, char *why,
                    size_t why_cap, const struct sw_vkeys_wait *w)
{
    const json_t *name = json_object_get(req, "name"), *id = json_object_get(req, "id");
    if (!json_is_object(req) || !json_is_string(name))
        return WHY("name: required (1 to 64 of A-Z a-z 0-9 _ . -)");
    if (id && (!json_is_string(id) || !name_ok(json_string_value(id))))
        return WHY("id: 1 to 64 of A-Z a-z 0-9 _ . -");
    if (v->rs && v->ver < 0)
        return WHY("the shared key store (Redis) has not been read yet; retry shortly");
    if (v->n >= SW_VKEYS_MAX) {
        snprintf(why, why_cap, "at most %d runtime keys", SW_VKEYS_MAX);
        return SW_EUNAVAILABLE;
    }
    unsigned char rnd[16];
    if (RAND_bytes(rnd, sizeof rnd) != 1 || cap < 48)
        return WHY("no random bytes for a secret");
    char rhex[33];
    hex(rnd, sizeof rnd, rhex);
    snprintf(secret, cap, "sk-sw-%s", rhex);
    char kid[NAME_MAX_LEN + 1];
    if (id)
        snprintf(kid, sizeof kid, "%s", json_string_value(id));
    else
        sw_config_key_id_derive(secret, kid, sizeof kid);
    bool dup = by_id(v, kid) != NULL;
    for (size_t i = 0; i < cfg->n_keys && !dup; i++)
        dup = (cfg->keys[i].id && !strcmp(cfg->keys[i].id, kid)) ||
              !strcmp(cfg->keys[i].name, json_string_value(name));
    if (dup)
        return WHY("id or name \"%.64s\" is taken (a configured or runtime key)", kid);
    struct entry *e = &v->e[v->n];
    entry_init(e);
    snprintf(e->id, sizeof e->id, "%s", kid);
    int err = apply(e, req, cfg, why, why_cap);
    if (err) {
        memset(e, 0, sizeof *e);
        return err;
    }
    sha256(secret, e->hash);
    e->created_ms = sw_wall_ms();
    v->n++;
    *out = sw_vkeys_find(v, cfg, secret);
    err = write_entry(v, e, true, w);
    if (err) {
        memset(e, 0, sizeof *e);
        *out = NULL;
        return err == SW_ECONNECT
                   ? WHY_UNSHARED("the shared key store (Redis) is unreachable: no key was "
                                     "created; retry shortly")
                   : err;
    }
    return SW_OK;
}

int sw_vkeys_update(struct sw_vkeys *v, const struct sw_config *cfg, const char *id,
                    const json_t *req, const struct sw_config_key **out, char *why,
                    size_t why_cap, const struct sw_vkeys_wait *w)
{
    struct entry *e = by_id(v, id);
    if (!e || e->revoked)
        return SW_ENOTFOUND;
    if (json_object_get(req, "id"))
        return WHY("id: a key's id cannot change");
    int err = apply(e, req, cfg, why, why_cap);
    if (err)
        return err;
    *out = &e->k;
    err = write_entry(v, e, false, w);
    if (err == SW_ECONNECT)
        return WHY_UNSHARED("the shared key store (Redis) is unreachable: the change applies "
                               "on this replica only; retry shortly");
    return err;
}

int sw_vkeys_revoke(struct sw_vkeys *v, const char *id, char *why, size_t why_cap,
                    const struct sw_vkeys_wait *w)
{
    struct entry *e = by_id(v, id);
    if (!e || (e->revoked && !e->unshared))    /* a revocation Redis lacks may be asked again */
        return SW_ENOTFOUND;
    e->revoked = true;
    sw_info("keys: runtime key %s revoked", id);
    int err = write_entry(v, e, false, w);
    if (err == SW_ECONNECT)
        return WHY_UNSHARED("the shared key store (Redis) is unreachable: the key is refused "
                               "on this replica only; retry shortly");
    return err;
}

void sw_vkeys_each(struct sw_vkeys *v,
                   void (*fn)(void *ud, const struct sw_config_key *k, bool revoked,
                              int64_t created_ms),
                   void *ud)
{
    for (size_t i = 0; v && i < v->n; i++)
        if (v->e[i].used)
            fn(ud, &v->e[i].k, v->e[i].revoked, v->e[i].created_ms);
}
