/* Keys' and teams' usage for operators: see admin_keys.h. */
#include "front/admin_keys.h"

#include <jansson.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/err.h"
#include "obs/metrics.h"
#include "relay/reply.h"
#include "state/live.h"
#include "state/tenant.h"
#include "state/vkeys.h"
#include "http/server.h"

static const char *const window_names[] = {"hour", "day", "week", "month", "rolling"};

/* ---- /metrics ---- */

struct runtime {
    const struct sw_config_key *k[SW_VKEYS_MAX];
    bool revoked[SW_VKEYS_MAX];
    int64_t created_ms[SW_VKEYS_MAX];
    size_t n;
};

static void collect(void *ud, const struct sw_config_key *k, bool revoked, int64_t created_ms)
{
    struct runtime *r = ud;
    if (r->n < SW_VKEYS_MAX) {
        r->revoked[r->n] = revoked;
        r->created_ms[r->n] = created_ms;
        r->k[r->n++] = k;
    }
}

struct row {
    const char *label;
    struct sw_tenant_stats s;
    double budget_usd;
};

static int by_spend(const void *a, const void *b)
{
    double x = ((const struct row *)a)->s.spent_usd_total, y = ((const struct row *)b)->s.spent_usd_total;
    return x < y ? 1 : x > y ? -1 : strcmp(((const struct row *)a)->label, ((const struct row *)b)->label);
}

static int family(struct sw_metrics_scrape *s, const char *label_name, const struct row *rows,
                  size_t n, const char *name, const char *help, int which)
{
    int err = SW_OK;
    if (n == 0) /* declared without samples, so rules over it find the family */
        return sw_buf_appendf(s->out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name,
                              which >= 4 ? "gauge" : "counter")
                   ? SW_ENOMEM
                   : SW_OK;
    for (size_t i = 0; i < n && !err; i++) {
        const struct sw_tenant_stats *t = &rows[i].s;
        double v = which == 0 ? (double)t->requests
                   : which == 1 ? t->spent_usd_total
                   : which == 2 ? (double)t->rate_limited
                   : which == 3 ? (double)t->budget_refused
                   : which == 4 ? rows[i].budget_usd
                                : t->window_usd;
        if (which == 5 && v < 0)
            continue;
        const char *const lbl[] = {label_name}, *const val[] = {rows[i].label};
        err = which >= 4 ? sw_metrics_gauge(s, name, help, lbl, val, 1, v)
                         : sw_metrics_scrape_counter(s, name, help, lbl, val, 1, v);
    }
    return err;
}

/* Rows of n ledgers, the top SW_ADMIN_KEYS_METRICS_MAX by spend kept and the
 * rest summed into "other". Returns the row count. */
static size_t cap_rows(struct row *rows, size_t n)
{
    qsort(rows, n, sizeof *rows, by_spend);
    if (n <= SW_ADMIN_KEYS_METRICS_MAX)
        return n;
    struct row *o = &rows[SW_ADMIN_KEYS_METRICS_MAX];
    for (size_t i = SW_ADMIN_KEYS_METRICS_MAX + 1; i < n; i++) {
        o->s.requests += rows[i].s.requests;
        o->s.spent_usd_total += rows[i].s.spent_usd_total;
        o->s.rate_limited += rows[i].s.rate_limited;
        o->s.budget_refused += rows[i].s.budget_refused;
        o->budget_usd += rows[i].budget_usd;
    }
    o->label = "other";
    o->s.window_usd = -1; /* windows differ: not summed */
    return SW_ADMIN_KEYS_METRICS_MAX + 1;
}

int sw_admin_keys_metrics(struct sw_front *f, struct sw_buf *out)
{
    const struct sw_config *cfg = f->cfg;
    struct sw_tenant *t = f->live->g->tenant;
    int64_t wall = sw_wall_ms();
    static struct runtime rt;
    rt.n = 0;
    sw_vkeys_each(f->live->g->vkeys, collect, &rt);
    size_t nk = cfg->n_keys + rt.n, nt = cfg->n_teams;
    struct row *k = calloc(nk + 1, sizeof *k), *tm = calloc(nt + 1, sizeof *tm);
    if (!k || !tm) {
        free(k);
        free(tm);
        return SW_ENOMEM;
    }
    char id[SW_TENANT_ID_MAX];
    for (size_t i = 0; i < nk; i++) {
        const struct sw_config_key *key = i < cfg->n_keys ? &cfg->keys[i] : rt.k[i - cfg->n_keys];
        snprintf(id, sizeof id, "k:%s", key->id ? key->id : "");
        k[i].label = key->id ? key->id : "";
        k[i].budget_usd = key->t.budget.usd;
        sw_tenant_stats(t, id, &key->t, wall, &k[i].s);
    }
    for (size_t i = 0; i < nt; i++) {
        snprintf(id, sizeof id, "t:%s", cfg->teams[i].name);
        tm[i].label = cfg->teams[i].name;
        tm[i].budget_usd = cfg->teams[i].t.budget.usd;
        sw_tenant_stats(t, id, &cfg->teams[i].t, wall, &tm[i].s);
    }
    nk = cap_rows(k, nk);
    nt = cap_rows(tm, nt);
    struct sw_metrics_scrape s;
    sw_metrics_scrape_init(&s, out);
    static const struct {
        const char *kname, *tname, *help;
    } fam[] = {
        {"spillway_key_requests_total", "spillway_team_requests_total",
         "Requests admitted per key_id (team), on this replica."},
        {"spillway_key_cloud_cost_usd_total", "spillway_team_cloud_cost_usd_total",
         "Cloud spend settled per key_id (team), on this replica."},
        {"spillway_key_rate_limited_total", "spillway_team_rate_limited_total",
         "Requests answered 429 for the key's (team's) rpm or tpm, on this replica."},
        {"spillway_key_budget_refused_total", "spillway_team_budget_refused_total",
         "Cloud attempts the key's (team's) budget refused, on this replica."},
        {"spillway_key_budget_usd", "spillway_team_budget_usd",
         "The configured cloud budget per window (0: none)."},
        {"spillway_key_window_spend_usd", "spillway_team_window_spend_usd",
         "Cloud spend settled in the budget's current window (with Redis: as this replica "
         "last read it)."},
    };
    int err = SW_OK;
    for (int w = 0; w < 6 && !err; w++)
        err = family(&s, "key_id", k, nk, fam[w].kname, fam[w].help, w);
    for (int w = 0; w < 6 && !err; w++)
        err = family(&s, "team", tm, nt, fam[w].tname, fam[w].help, w);
    if (!err)
        err = sw_metrics_scrape_counter(&s, "spillway_key_ledger_unavailable_total",
                                        "Key or team ledger steps Redis could not take (budgets "
                                        "failed closed for the cloud).",
                                        NULL, NULL, 0, (double)sw_tenant_degraded_total(t));
    free(k);
    free(tm);
    return err;
}

/* ---- /admin/keys ---- */

static json_t *rules_json(const struct sw_config_tenancy *r)
{
    json_t *models = json_array();
    for (size_t i = 0; i < r->n_models; i++)
        json_array_append_new(models, json_string(r->models[i]));
    json_t *budget = r->budget.usd > 0
                         ? json_pack("{s:f, s:s, s:I}", "usd", r->budget.usd, "window",
                                     window_names[r->budget.window % 5], "rolling_ms",
                                     (json_int_t)r->budget.rolling_ms)
                         : json_null();
    return json_pack("{s:o, s:I, s:I, s:o, s:s, s:s}", "budget", budget, "rpm", (json_int_t)r->rpm,
                     "tpm", (json_int_t)r->tpm, "models", models, "max_tier",
                     r->max_tier == SW_MAX_TIER_LOCAL ? "local" : "cloud", "on_budget",
                     r->on_budget == SW_ON_BUDGET_REJECT ? "reject" : "keep_local");
}

static json_t *usage_json(struct sw_tenant *t, const char *id, const struct sw_config_tenancy *r)
{
    struct sw_tenant_stats s;
    sw_tenant_stats(t, id, r, sw_wall_ms(), &s);
    return json_pack("{s:I, s:f, s:o, s:o, s:f, s:I, s:I}", "requests", (json_int_t)s.requests,
                     "spent_usd_total", s.spent_usd_total, "window_spent_usd",
                     s.window_usd >= 0 ? json_real(s.window_usd) : json_null(), "reserved_usd",
                     s.reserved_usd >= 0 ? json_real(s.reserved_usd) : json_null(),
                     "max_reserved_usd", s.max_reserved_usd, "rate_limited",
                     (json_int_t)s.rate_limited, "budget_refused", (json_int_t)s.budget_refused);
}

static json_t *key_json(struct sw_front *f, const struct sw_config_key *k, bool runtime)
{
    char id[SW_TENANT_ID_MAX];
    snprintf(id, sizeof id, "k:%s", k->id ? k->id : "");
    json_t *o = json_pack("{s:s, s:s, s:o, s:s}", "id", k->id ? k->id : "", "name", k->name,
                          "team", k->team ? json_string(k->team) : json_null(), "source",
                          runtime ? "runtime" : "config");
    json_object_set_new(o, "rules", rules_json(&k->t));
    json_object_set_new(o, "usage", usage_json(f->live->g->tenant, id, &k->t));
    return o;
}

static char *dump_json(json_t *o)
{
    char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    return s;
}

static void reply(struct sw_http_req *req, json_t *o)
{
    char *s = dump_json(o);
    if (!s) {
        sw_reply_error(req, 500, "server_error", NULL, NULL, "Out of memory.");
        return;
    }
    sw_reply_json(req, 200, s, strlen(s));
    free(s);
}

void sw_admin_keys(struct sw_front *f, struct sw_http_req *req)
{
    const struct sw_config *cfg = f->cfg;
    json_t *keys = json_array(), *teams = json_array();
    for (size_t i = 0; i < cfg->n_keys; i++)
        json_array_append_new(keys, key_json(f, &cfg->keys[i], false));
    static struct runtime rt;
    rt.n = 0;
    sw_vkeys_each(f->live->g->vkeys, collect, &rt);
    for (size_t i = 0; i < rt.n; i++) {
        json_t *o = key_json(f, rt.k[i], true);
        json_object_set_new(o, "revoked", json_boolean(rt.revoked[i]));
        json_object_set_new(o, "created_ms", json_integer(rt.created_ms[i]));
        json_array_append_new(keys, o);
    }
    char id[SW_TENANT_ID_MAX];
    for (size_t i = 0; i < cfg->n_teams; i++) {
        snprintf(id, sizeof id, "t:%s", cfg->teams[i].name);
        json_t *o = json_pack("{s:s}", "name", cfg->teams[i].name);
        json_object_set_new(o, "rules", rules_json(&cfg->teams[i].t));
        json_object_set_new(o, "usage", usage_json(f->live->g->tenant, id, &cfg->teams[i].t));
        json_array_append_new(teams, o);
    }
    reply(req, json_pack("{s:o, s:o, s:b}", "keys", keys, "teams", teams, "shared",
                         f->live->g->rstate != NULL));
}

static json_t *body_json(struct sw_http_req *req)
{
    size_t len;
    const char *text = sw_http_body(req, &len);
    json_error_t jerr;
    json_t *o = text && len ? json_loadb(text, len, 0, &jerr) : NULL;
    if (!json_is_object(o)) {
        json_decref(o);
        sw_reply_error(req, 400, "invalid_request_error", "invalid_body", NULL,
                       "The body must be a JSON object of key fields (docs/operations.md).");
        return NULL;
    }
    return o;
}

static void refused(struct sw_http_req *req, int err, const char *why)
{
    if (err == SW_ECONNECT)
        sw_reply_error(req, 503, "server_error", "key_store_unavailable", NULL, "%s", why);
    else if (err == SW_ENOTFOUND)
        sw_reply_error(req, 404, "invalid_request_error", "key_not_found", NULL,
                       "No runtime key has this key_id (configured keys change with a reload).");
    else
        sw_reply_error(req, err == SW_EUNAVAILABLE ? 409 : 400, "invalid_request_error",
                       "invalid_key", NULL, "%s", why);
}

/* ---- Answers that wait for Redis ---- */

/* A change on its way to Redis (state.redis): its answer is made at once and
 * sent when Redis has the change, or replaced by a 503 when Redis does not
 * take it, so a 2xx means every replica will see it. */
struct waiting {
    struct sw_http_req *req;    /* NULL: the client left */
    int status;
    char *body;                 /* the answer, NULL until made (a new key's secret: wiped) */
    bool known, stored;         /* what Redis said, once it did */
    const char *unshared;       /* the 503's message */
};

static void waiting_free(struct waiting *w)
{
    if (w->body)
        OPENSSL_cleanse(w->body, strlen(w->body));
    free(w->body);
    free(w);
}

static void waiting_send(struct waiting *w)
{
    if (w->stored)
        sw_reply_json(w->req, w->status, w->body, strlen(w->body));
    else
        sw_reply_error(w->req, 503, "server_error", "key_store_unavailable", NULL, "%s",
                       w->unshared);
    waiting_free(w);
}

static void waiting_done(void *ud, bool stored)
{
    struct waiting *w = ud;
    w->known = true;
    w->stored = stored;
    if (!w->req)
        waiting_free(w);
    else if (w->body)
        waiting_send(w);
}

static void waiting_gone(void *ud)
{
    struct waiting *w = ud;
    w->req = NULL;
    if (w->known)
        waiting_free(w);
}

static struct waiting *waiting_new(struct sw_http_req *req, const char *unshared)
{
    struct waiting *w = calloc(1, sizeof *w);
    if (!w)
        sw_reply_error(req, 500, "server_error", NULL, NULL, "Out of memory.");
    else {
        w->req = req;
        w->unshared = unshared;
    }
    return w;
}

/* The answer (body, taken; NULL: out of memory) to a change vkeys took:
 * sent now, or when Redis has it (pending). */
static void answer(struct waiting *w, bool pending, int status, char *body)
{
    w->status = status;
    w->body = body;
    if (!body) {    /* stored or not, the client learns nothing more */
        sw_reply_error(w->req, 500, "server_error", NULL, NULL, "Out of memory.");
        w->req = NULL;
        if (!pending || w->known)
            waiting_free(w);
        return;
    }
    if (!pending)
        w->known = w->stored = true;
    if (w->known)
        waiting_send(w);
    else
        sw_http_on_gone(w->req, waiting_gone, w);
}

/* POST /admin/keys: a new runtime key; its secret is in this answer only. */
static void create(struct sw_front *f, struct sw_http_req *req)
{
    json_t *o = body_json(req);
    if (!o)
        return;
    struct waiting *w = waiting_new(req, "The shared key store (Redis) did not take the new "
                                         "key: no key was created; retry.");
    if (!w) {
        json_decref(o);
        return;
    }
    char secret[64], why[200] = "";
    const struct sw_config_key *k = NULL;
    bool pending = false;
    const struct sw_vkeys_wait vw = {waiting_done, w, &pending};
    int err = sw_vkeys_create(f->live->g->vkeys, f->cfg, o, secret, sizeof secret, &k, why,
                              sizeof why, &vw);
    json_decref(o);
    if (err || !k) {
        free(w);
        refused(req, err ? err : SW_EINVAL, why);
        return;
    }
    json_t *out = key_json(f, k, true);
    json_object_set_new(out, "key", json_string(secret));
    OPENSSL_cleanse(secret, sizeof secret);
    answer(w, pending, 201, dump_json(out));
}

void sw_admin_key(struct sw_front *f, struct sw_http_req *req, const char *id, size_t len)
{
    const struct sw_config *cfg = f->cfg;
    enum sw_http_method m = sw_http_method(req);
    if (!len) {
        if (m == SW_HTTP_POST)
            create(f, req);
        else
            sw_admin_keys(f, req);
        return;
    }
    char kid[80];
    snprintf(kid, sizeof kid, "%.*s", (int)(len < 79 ? len : 79), id);
    for (size_t i = 0; i < cfg->n_keys; i++) {
        const char *cid = cfg->keys[i].id;
        if (cid && !strcmp(cid, kid)) {
            if (m == SW_HTTP_GET || m == SW_HTTP_HEAD)
                reply(req, key_json(f, &cfg->keys[i], false));
            else
                sw_reply_error(req, 409, "invalid_request_error", "configured_key", NULL,
                               "This key comes from the config file: change it there and "
                               "reload.");
            return;
        }
    }
    struct sw_vkeys *v = f->live->g->vkeys;
    char why[200] = "";
    const struct sw_config_key *k = NULL;
    int err = SW_ENOTFOUND;
    bool pending = false;
    if (m == SW_HTTP_DELETE) {
        struct waiting *w = waiting_new(req, "The shared key store (Redis) did not take the "
                                             "revocation: the key is refused on this replica and "
                                             "written again until Redis takes it; retry to know.");
        const struct sw_vkeys_wait vw = {waiting_done, w, &pending};
        if (!w)
            return;
        err = sw_vkeys_revoke(v, kid, why, sizeof why, &vw);
        if (err) {
            free(w);
            refused(req, err, why);
        } else {
            answer(w, pending, 200, strdup("{\"revoked\":true}"));
        }
        return;
    }
    if (m == SW_HTTP_POST) {
        json_t *o = body_json(req);
        if (!o)
            return;
        struct waiting *w = waiting_new(req, "The shared key store (Redis) did not take the "
                                             "change: it applies on this replica only; retry.");
        const struct sw_vkeys_wait vw = {waiting_done, w, &pending};
        err = w ? sw_vkeys_update(v, cfg, kid, o, &k, why, sizeof why, &vw) : SW_OK;
        json_decref(o);
        if (!w)
            return;
        if (err || !k) {
            free(w);
            refused(req, err ? err : SW_ENOTFOUND, why);
        } else {
            answer(w, pending, 200, dump_json(key_json(f, k, true)));
        }
        return;
    }
    {
        static struct runtime rt;
        rt.n = 0;
        sw_vkeys_each(v, collect, &rt);
        for (size_t i = 0; i < rt.n && !k; i++)
            if (!strcmp(rt.k[i]->id, kid)) {
                json_t *o = key_json(f, rt.k[i], true);
                json_object_set_new(o, "revoked", json_boolean(rt.revoked[i]));
                reply(req, o);
                return;
            }
    }
    refused(req, SW_ENOTFOUND, why);
}
