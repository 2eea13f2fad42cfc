#include "front/front.h"

#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/err.h"
#include "common/jmemo.h"
#include "common/log.h"
#include "common/query.h"
#include "common/workpool.h"
#include "front/admin.h"
#include "front/admin_keys.h"
#include "front/internal.h"
#include "front/responses_state.h"
#include "relay/relay.h"
#include "relay/reply.h"
#include "relay/trace.h"
#include "request/embed.h"
#include "request/facts.h"
#include "request/request.h"
#include "route/tenant.h"
#include "state/vkeys.h"
#include "dialect/anth_native.h"
#include "dialect/anth_req.h"
#include "dialect/responses_req.h"
#include "upstream/dialect.h"

/* The listen backlog asked of the kernel (capped by net.core.somaxconn):
 * a burst of thousands of clients connecting at once must not lose SYNs. */
#define LISTEN_BACKLOG 65535
/* A request body above this many bytes is scanned for PII by a worker
 * thread (limits.scan_threads), not on the loop: at the detectors' worst
 * (tens of ms per MB) it would hold up every other client. A smaller one is
 * scanned inline (about 2 ms at the worst), so its latency does not change. */
#define SCAN_OFF_LOOP_BYTES (64 * 1024)

/* ---- Draining ---- */

/* Drained: no request in the relay and every answer's last byte written. */
static void check_drained(struct sw_front *f)
{
    if (!f->draining || f->in_flight > 0 || !f->on_drained)
        return;
    if (!sw_http_server_flushed(f->http)) {
        struct timeval tv = {0, 10000};
        evtimer_add(f->drain_check, &tv);
        return;
    }
    void (*cb)(void *) = f->on_drained;
    f->on_drained = NULL;
    cb(f->drained_ud);
}

static void on_drain_check(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    check_drained(arg);
}

void sw_front_finished(struct sw_front *f)
{
    f->in_flight--;
    check_drained(f);
}

static void on_relay_finish(void *ud)
{
    sw_front_finished(ud);
}

/* ---- Helpers ---- */

/* The request's id into out (n bytes), set once as the X-Request-Id of its
 * answer: every answer carries one (errors, the HTTP server's own 4xx, every
 * URL). The first call gives the request its id; later calls return it. */
static void make_request_id(struct sw_front *f, struct sw_http_req *req, char *out, size_t n)
{
    const char *have = sw_http_header_out(req, "X-Request-Id");
    if (have) {
        sw_str_copy(out, n, have);
        return;
    }
    /* "sw-%08lx-%06llx" of the start time and a counter, without printf */
    char id[64];
    size_t k = 0;
    memcpy(id, "sw-", 3);
    k = 3;
    k += sw_fmt_u64(id + k, (uint64_t)(unsigned long)f->started_s, 16, 8);
    id[k++] = '-';
    k += sw_fmt_u64(id + k, ++f->next_id & 0xffffff, 16, 6);
    if (k > n - 1)
        k = n - 1;
    memcpy(out, id, k);
    out[k] = '\0';
    sw_http_add_header(req, "X-Request-Id", out);
}

/* The client's key (NULL when auth is off), or NULL with *denied set to
 * "missing_api_key", "invalid_api_key" or "ambiguous_api_key" (two
 * Authorization or two x-api-key headers, or both naming different keys:
 * no header is taken over another). Answers nothing. */
static const struct sw_config_key *find_key(struct sw_front *f, struct sw_http_req *req,
                                            const char **denied)
{
    *denied = NULL;
    if (!f->cfg->auth_enabled)
        return NULL;
    static const char bearer[] = "Bearer ";
    int n_auth, n_xkey;
    const char *auth = sw_http_header(req, "Authorization", &n_auth);
    const char *xkey = sw_http_header(req, "x-api-key", &n_xkey); /* Anthropic's clients */
    const char *secret = NULL;
    if (auth && strncasecmp(auth, bearer, sizeof bearer - 1) == 0)
        secret = auth + sizeof bearer - 1;
    else if (!auth)
        secret = xkey;
    if (n_auth > 1 || n_xkey > 1 || (secret && xkey && strcmp(secret, xkey) != 0)) {
        *denied = "ambiguous_api_key";
        return NULL;
    }
    if (!secret) {
        *denied = "missing_api_key";
        return NULL;
    }
    const struct sw_config_key *k = sw_config_find_key(f->cfg, secret);
    if (!k) /* a runtime key (admin API), by the SHA-256 of the secret */
        k = sw_vkeys_find(f->live->g->vkeys, f->cfg, secret);
    if (!k)
        *denied = "invalid_api_key";
    return k;
}

/* A request ended: a 401, 404 or 405 counted by path class, and its
 * access-log line (obs/access.h) when the log is on. */
static void on_done(struct sw_http_req *req, void *ud)
{
    struct sw_front *f = ud;
    if (!f->obs)
        return;
    int status = sw_http_status(req);
    if (status == 401 || status == 404 || status == 405) {
        const char *lbl[] = {status == 401 ? "401" : status == 404 ? "404" : "405",
                             sw_access_path_class(sw_http_path(req))};
        sw_metrics_inc(f->obs->metrics, SW_M_REFUSED, lbl, 1);
    }
    if (!f->obs->access)
        return;
    const char *denied;
    const struct sw_config_key *k = find_key(f, req, &denied);
    size_t in = sw_http_body_len(req);
    struct sw_access_entry e = {
        sw_wall_ms(), sw_http_header_out(req, "X-Request-Id"), sw_http_peer(req),
        sw_http_method_name(req), sw_http_path(req), sw_http_status(req), in,
        sw_http_bytes_out(req), (double)(sw_now_ms() - sw_http_start_ms(req)),
        sw_http_header_out(req, "X-Spillway-Backend"), sw_http_header_out(req, "X-Spillway-Reason"),
        k ? k->name : NULL,
    };
    sw_access_write(f->obs->access, &e);
}

/* 404 model_not_found: the names the config defines (the first few), and
 * where they come from. */
static void reply_no_model(struct sw_http_req *req, const struct sw_config *cfg, const char *name)
{
    char names[256] = "";
    size_t used = 0;
    for (size_t i = 0; i < cfg->n_models && used < sizeof names; i++) {
        int w = i < 8 ? snprintf(names + used, sizeof names - used, "%s'%s'", i ? ", " : "",
                                 cfg->models[i].name)
                      : snprintf(names + used, sizeof names - used, ", ...");
        if (w < 0)
            break;
        used += (size_t)w;
        if (i >= 8)
            break;
    }
    sw_reply_error(req, 404, "invalid_request_error", "model_not_found", "model",
                   "The model '%s' does not exist. This gateway serves %s (GET /v1/models lists "
                   "them; models: in the gateway's config defines them).", name, names);
}

/* Whether the key's models list and its team's both allow the model. */
static bool key_allows_model(const struct sw_config *cfg, const struct sw_config_key *key,
                             const char *model)
{
    const struct sw_config_tenancy *team =
        key->team_index >= 0 && (size_t)key->team_index < cfg->n_teams
            ? &cfg->teams[key->team_index].t
            : NULL;
    struct sw_tenant_policy p;
    sw_tenant_merge(&key->t, team, &p);
    return sw_tenant_policy_allows_model(&p, model);
}

/* The model asked for, or NULL after answering 404 (and logging): a name
 * the config does not define, or a model outside the key's (or its team's)
 * models list, answered as the API answers a model the caller has no
 * access to. */
/* The SERVER span of a request the HTTP server or the route table refused
 * (malformed, too large, unknown URL of the API surface): read and
 * submitted before the answer, which carries its X-Trace-Id. */
static void trace_http_refusal(struct sw_front *f, struct sw_http_req *req, const char *id,
                               int status, const char *code)
{
    struct sw_otlp *o = f->obs ? f->obs->otlp : NULL;
    if (!o)
        return;
    struct sw_relay_trace_ctx tc;
    sw_relay_trace_ctx_read(o, req, false, &tc);
    sw_http_add_header(req, "X-Trace-Id", tc.trace_hex);
    struct sw_declog_entry e = {.request_id = id, .decision = SW_DECLOG_REJECTED,
                                .status = status, .code = code};
    sw_relay_trace_refused(o, f->live, &tc, &e, sw_http_start_ms(req), sw_now_ms());
}

static const struct sw_config_model *find_model(struct sw_front *f, struct sw_http_req *req,
                                                const struct sw_relay_trace_ctx *tc,
                                                const struct sw_config_key *key,
                                                const char *name, const char *api_name,
                                                const char *id, int64_t start_ms);

/* Whether the request carries a known client key (or auth is off). */
static bool key_ok(struct sw_front *f, struct sw_http_req *req)
{
    const char *denied;
    find_key(f, req, &denied);
    return !denied;
}

/* Authenticates the client. Returns the key (NULL when auth is disabled) or
 * answers 401 and sets *denied to the error code it answered. */
static const struct sw_config_key *authenticate(struct sw_front *f, struct sw_http_req *req,
                                                const char **denied)
{
    const struct sw_config_key *k = find_key(f, req, denied);
    const char *auth = sw_http_header(req, "Authorization", NULL);
    if (*denied && !strcmp(*denied, "missing_api_key") && auth) {
        sw_reply_error(req, 401, "invalid_request_error", "missing_api_key", NULL,
                       "The Authorization header is not a bearer token. Send the key as "
                       "'Authorization: Bearer KEY' (or 'x-api-key: KEY' without Authorization).");
    } else if (*denied && !strcmp(*denied, "ambiguous_api_key")) {
        sw_reply_error(req, 401, "invalid_request_error", "ambiguous_api_key", NULL,
                       "The request carries more than one API key (two Authorization or "
                       "x-api-key headers, or both with different keys). Send exactly one.");
        sw_info("rejected a request with more than one API key");
    } else if (*denied && !strcmp(*denied, "missing_api_key")) {
        sw_reply_error(req, 401, "invalid_request_error", "missing_api_key", NULL,
                       "You didn't provide an API key. Send it as 'Authorization: Bearer KEY' "
                       "(or 'x-api-key: KEY').");
    } else if (*denied) {
        sw_reply_error(req, 401, "invalid_request_error", "invalid_api_key", NULL,
                       "Incorrect API key provided. Send one of the secrets under keys: in the "
                       "gateway's config as 'Authorization: Bearer KEY'.");
        sw_info("rejected a request with an unknown API key");
    }
    return k;
}

/* Whether the request's body is declared JSON: exactly one Content-Type,
 * application/json in any case, parameters (charset) allowed. A web page can
 * POST text/plain or a form to any address without a CORS preflight; a JSON
 * type it cannot send without one, so this keeps pages off the API. */
static bool json_content_type(struct sw_http_req *req)
{
    int n;
    const char *ct = sw_http_header(req, "Content-Type", &n);
    if (!ct || n != 1)
        return false;
    static const char json[] = "application/json";
    while (*ct == ' ' || *ct == '\t')
        ct++;
    if (strncasecmp(ct, json, sizeof json - 1) != 0)
        return false;
    ct += sizeof json - 1;
    while (*ct == ' ' || *ct == '\t')
        ct++;
    return *ct == '\0' || *ct == ';';
}

/* Answers 415 unless the body is declared JSON. Returns false when answered. */
static bool require_json(struct sw_http_req *req)
{
    if (json_content_type(req))
        return true;
    sw_reply_error(req, 415, "invalid_request_error", "unsupported_media_type", NULL,
                   "Send the body as JSON with 'Content-Type: application/json' (exactly one "
                   "Content-Type header).");
    return false;
}

/* Whether a Host header value (host, host:port, [v6]:port) is one that
 * listen_hosts accepts: the host in any case, the port when the entry
 * names one. No check when the list is empty or "*" is in it. */
static bool host_listed(const struct sw_config_listen_hosts *lh, const char *v)
{
    if (lh->any || lh->n == 0)
        return true;
    const char *host = v, *end;
    const char *port = NULL;
    if (v[0] == '[') {
        host = v + 1;
        end = strchr(host, ']');
        if (!end)
            return false;
        if (end[1] == ':')
            port = end + 2;
        else if (end[1])
            return false;
    } else {
        end = strchr(v, ':');
        if (end)
            port = end + 1;
        else
            end = v + strlen(v);
    }
    size_t host_len = (size_t)(end - host);
    long p = -1;
    if (port) {
        char *pe;
        errno = 0;
        p = strtol(port, &pe, 10);
        if (errno || pe == port || *pe || p < 1 || p > 65535)
            return false;
    }
    for (size_t i = 0; i < lh->n; i++)
        if (strlen(lh->host[i]) == host_len && !strncasecmp(lh->host[i], host, host_len) &&
            (lh->port[i] < 0 || lh->port[i] == p))
            return true;
    return false;
}

/* The Host check (listen_hosts): one Host header at most (RFC 9112 3.2), and
 * when a list applies, a listed one. A request without Host (HTTP/1.0) passes:
 * browsers always send one. Returns false when answered. */
static bool host_ok(struct sw_front *f, struct sw_http_req *req)
{
    int n;
    const char *host = sw_http_header(req, "Host", &n);
    if (n > 1) {
        sw_reply_error(req, 400, "invalid_request_error", "invalid_header", "Host",
                       "The request has more than one Host header.");
        return false;
    }
    if (!host || host_listed(&f->cfg->listen_hosts, host))
        return true;
    sw_reply_error(req, 421, "invalid_request_error", "host_not_allowed", "Host",
                   "This gateway does not answer to that Host name. Use one listed under "
                   "listen_hosts in the gateway's config (with no keys configured: localhost, "
                   "127.0.0.1, [::1] or the listen address).");
    sw_info("rejected a request for a Host not in listen_hosts");
    return false;
}

/* ---- Handlers ---- */

/* ---- Models ---- */

/* Whether the client speaks Anthropic's API: it sends anthropic-version
 * (Anthropic's SDKs always do). /v1/models is then answered in Anthropic's
 * shape, errors included (sw_reply_is_anthropic). */
static bool anthropic_client(struct sw_http_req *req)
{
    return sw_http_header(req, "anthropic-version", NULL) != NULL;
}

/* The time the gateway started as RFC 3339 ("2026-01-02T03:04:05Z"): the
 * created_at of every model (their `created` in OpenAI's shape). */
static void started_rfc3339(const struct sw_front *f, char *out, size_t n)
{
    time_t t = (time_t)f->started_s;
    struct tm tm;
    if (!gmtime_r(&t, &tm) || !strftime(out, n, "%Y-%m-%dT%H:%M:%SZ", &tm))
        snprintf(out, n, "1970-01-01T00:00:00Z");
}

/* One model in the shape the client speaks: OpenAI's {id, object, created,
 * owned_by} or Anthropic's {type, id, display_name, created_at}. */
static json_t *model_object(const struct sw_front *f, const char *name, bool anthropic)
{
    if (anthropic) {
        char at[32];
        started_rfc3339(f, at, sizeof at);
        return json_pack("{s:s, s:s, s:s, s:s}", "type", "model", "id", name, "display_name",
                         name, "created_at", at);
    }
    return json_pack("{s:s, s:s, s:I, s:s}", "id", name, "object", "model", "created",
                     (json_int_t)f->started_s, "owned_by", "spillway");
}

static void reply_json_object(struct sw_http_req *req, json_t *o)
{
    char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
    if (s)
        sw_reply_json(req, 200, s, strlen(s));
    else
        sw_reply_error(req, 500, "server_error", NULL, NULL, "Out of memory.");
    free(s);
    json_decref(o);
}

/* The index of the model named by query parameter `param` (after_id,
 * before_id): -1 when absent, -2 (answered 400) when it names no model. The
 * value is the client's text: the message does not quote it. */
static long model_cursor(struct sw_front *f, struct sw_http_req *req, const char *param)
{
    char v[256];
    int qerr = sw_query_param(sw_http_query(req), param, v, sizeof v);
    if (qerr == SW_ENOTFOUND)
        return -1;
    for (size_t i = 0; !qerr && i < f->cfg->n_models; i++)
        if (!strcmp(f->cfg->models[i].name, v))
            return (long)i;
    sw_reply_error(req, 400, "invalid_request_error", "invalid_value", param,
                   "%s does not name a model of this gateway (GET /v1/models lists them).", param);
    return -2;
}

/* GET /v1/models in Anthropic's shape: a page of `limit` models (1 to
 * 1000, default 20) after after_id or before before_id, in config order,
 * with has_more, first_id and last_id (null on an empty page). */
static void models_anthropic(struct sw_front *f, struct sw_http_req *req)
{
    long limit = 20;
    char v[32];
    int qerr = sw_query_param(sw_http_query(req), "limit", v, sizeof v);
    if (qerr != SW_ENOTFOUND) {
        char *end;
        errno = 0;
        limit = strtol(v, &end, 10);
        if (qerr || errno || end == v || *end || limit < 1 || limit > 1000) {
            sw_reply_error(req, 400, "invalid_request_error", "invalid_value", "limit",
                           "limit must be an integer from 1 to 1000.");
            return;
        }
    }
    long after = model_cursor(f, req, "after_id");
    if (after == -2)
        return;
    long before = after == -1 ? model_cursor(f, req, "before_id") : -1;
    if (before == -2)
        return;
    long n = (long)f->cfg->n_models, from, to; /* [from, to) */
    bool more;
    if (before >= 0) {
        to = before;
        from = to - limit > 0 ? to - limit : 0;
        more = from > 0;
    } else {
        from = after + 1;
        to = from + limit < n ? from + limit : n;
        more = to < n;
    }
    json_t *data = json_array();
    for (long i = from; i < to; i++)
        json_array_append_new(data, model_object(f, f->cfg->models[i].name, true));
    const char *first = from < to ? f->cfg->models[from].name : NULL;
    const char *last = from < to ? f->cfg->models[to - 1].name : NULL;
    reply_json_object(req, json_pack("{s:o, s:b, s:s?, s:s?}", "data", data, "has_more", more,
                                     "first_id", first, "last_id", last));
}

static void handle_models(struct sw_front *f, struct sw_http_req *req)
{
    if (anthropic_client(req)) {
        models_anthropic(f, req);
        return;
    }
    json_t *data = json_array();
    for (size_t i = 0; i < f->cfg->n_models; i++)
        json_array_append_new(data, model_object(f, f->cfg->models[i].name, false));
    reply_json_object(req, json_pack("{s:s, s:o}", "object", "list", "data", data));
}

static const char models_prefix[] = "/v1/models/";

/* Whether path is /v1/models/{id} (a non-empty id). */
static bool model_path(const char *path)
{
    return !strncmp(path, models_prefix, sizeof models_prefix - 1) &&
           path[sizeof models_prefix - 1] != '\0';
}

static int hex_digit(char c)
{
    return c >= '0' && c <= '9' ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

/* GET /v1/models/{id}: the model, the id percent-decoded (SDKs encode a '/'
 * in a name as %2F; a raw '/' is taken as it is). An id that names no model
 * is a 404 model_not_found, which only the client sees: the decision log
 * and the dashboard never record it. */
static void handle_model(struct sw_front *f, struct sw_http_req *req)
{
    const char *raw = sw_http_path(req) + sizeof models_prefix - 1;
    char id[512];
    size_t k = 0;
    bool ok = true;
    for (const char *p = raw; *p && ok; p++) {
        int hi, lo;
        char c = *p;
        if (c == '%' && (hi = hex_digit(p[1])) >= 0 && (lo = hex_digit(p[2])) >= 0) {
            c = (char)(hi * 16 + lo);
            p += 2;
        }
        ok = c != '\0' && k < sizeof id - 1;
        id[k++] = c;
    }
    id[ok ? k : 0] = '\0';
    bool anthropic = anthropic_client(req);
    if (!ok || !sw_config_find_model(f->cfg, id)) {
        if (ok)
            reply_no_model(req, f->cfg, id);
        else
            sw_reply_error(req, 404, "invalid_request_error", "model_not_found", "model",
                           "The model does not exist (GET /v1/models lists them).");
        return;
    }
    reply_json_object(req, model_object(f, id, anthropic));
}

static void handle_healthz(struct sw_front *f, struct sw_http_req *req)
{
    char body[160];
    int n = snprintf(body, sizeof body, "{\"status\":\"%s\",\"in_flight\":%ld,\"connections\":%ld}",
                     f->draining ? "draining" : "ok", f->in_flight,
                     sw_http_server_connections(f->http));
    sw_reply_json(req, f->draining ? 503 : 200, body, (size_t)n);
}

/* The Anthropic headers a client of /v1/messages may have passed on to an
 * Anthropic backend (the only client headers that reach an upstream): each
 * at most once and to its grammar (sw_upstream_anthropic_version_ok,
 * sw_upstream_anthropic_beta_ok), else 400 naming the header (the value is
 * not quoted). Returns false when it answered. */
static bool anthropic_headers_ok(struct sw_http_req *req)
{
    static const char *const names[] = {"anthropic-version", "anthropic-beta"};
    static const char *const grammar[] = {
        "a date, YYYY-MM-DD",
        "comma-separated beta names of lower-case letters, digits and '-' ending in their "
        "date (e.g. prompt-caching-2024-07-31), at most 16"};
    for (size_t i = 0; i < 2; i++) {
        int count = 0;
        const char *v = sw_http_header(req, names[i], &count);
        if (!v)
            continue;
        size_t n = strlen(v);
        bool ok = count == 1 && (i == 0 ? sw_upstream_anthropic_version_ok(v, n)
                                        : sw_upstream_anthropic_beta_ok(v, n));
        if (!ok) {
            sw_reply_error(req, 400, "invalid_request_error", "invalid_header", names[i],
                           "Invalid %s header: expected %s, once.", names[i], grammar[i]);
            return false;
        }
    }
    return true;
}

/* One decision-log line and the metrics for a chat request the front
 * refused before routing (the relay records everything after). */
static void record_rejection(struct sw_front *f, const struct sw_relay_trace_ctx *tc,
                             const char *api, const char *id, const char *model,
                             const struct sw_config_key *key, int status, const char *code,
                             const struct sw_pii_counts *counts, int64_t start_ms)
{
    if (!f->obs)
        return;
    /* Only a configured model is named: any other name is the client's
     * text, logged as "unknown" (the 404 to the client names it). */
    if (model && !sw_config_find_model(f->cfg, model))
        model = "unknown";
    struct sw_declog_pii pii[SW_PII_MAX_TYPES];
    size_t n_pii = sw_obs_pii_list(f->live->pii, counts, pii);
    int64_t now = sw_now_ms();
    struct sw_declog_entry e = {
        .request_id = id,
        .time_ms = sw_live_wall_ms(f->live, start_ms),
        .model = model,
        .key_name = key ? key->name : NULL,
        .key_id = key ? key->id : NULL,
        .decision = SW_DECLOG_REJECTED,
        .status = status,
        .code = code,
        .ttft_ms = -1,
        .duration_ms = (double)(now - start_ms),
        .tokens_in = -1,
        .tokens_out = -1,
        .pii = pii,
        .n_pii = n_pii,
        .pii_allowed = counts ? counts->allowed : 0,
        .pii_outcome = n_pii ? "blocked" : NULL,
        .api = api,
        .trace_id = tc->on ? tc->trace_hex : NULL,
    };
    sw_obs_record(f->obs, &e, false, now / 1000);
    sw_relay_trace_refused(f->obs->otlp, f->live, tc, &e, start_ms, now);
}

static const struct sw_config_model *find_model(struct sw_front *f, struct sw_http_req *req,
                                                const struct sw_relay_trace_ctx *tc,
                                                const struct sw_config_key *key,
                                                const char *name, const char *api_name,
                                                const char *id, int64_t start_ms)
{
    const struct sw_config_model *model = sw_config_find_model(f->cfg, name);
    if (!model) {
        reply_no_model(req, f->cfg, name);
        record_rejection(f, tc, api_name, id, name, key, 404, "model_not_found", NULL, start_ms);
        return NULL;
    }
    if (!key || key_allows_model(f->cfg, key, model->name))
        return model;
    sw_reply_error(req, 404, "invalid_request_error", "model_not_found", "model",
                   "The model '%s' does not exist or this API key does not have access to "
                   "it (keys[].models and its team's models in the gateway's config).",
                   model->name);
    record_rejection(f, tc, api_name, id, model->name, key, 404, "model_not_allowed", NULL,
                     start_ms);
    sw_info("request %s: key %s may not use model %s", id, key->id ? key->id : "-",
            model->name);
    return NULL;
}

/* ---- Facts ---- */

/* The request's headers as sw_facts_headers reads them: on the stack for
 * any request the server takes (it refuses more headers with 431), on the
 * heap past that. */
#define HEADERS_ON_STACK 64
struct header_list {
    struct sw_facts_header *h;
    size_t n, cap, total;
};

static void add_header(const char *name, const char *value, void *ud)
{
    struct header_list *l = ud;
    if (l->n < l->cap)
        l->h[l->n++] = (struct sw_facts_header){name, value};
    l->total++;
}

/* Fills *l from req (l->h the caller's array of HEADERS_ON_STACK); false
 * when more headers did not fit in memory. l->h is the caller's or malloc'ed
 * (free it when it is not the caller's). */
static bool list_headers(struct sw_http_req *req, struct header_list *l)
{
    l->cap = HEADERS_ON_STACK;
    sw_http_each_header(req, add_header, l);
    if (l->total <= l->cap)
        return true;
    l->h = malloc(l->total * sizeof *l->h);
    if (!l->h)
        return false;
    l->n = 0;
    l->cap = l->total;
    l->total = 0;
    sw_http_each_header(req, add_header, l);
    return true;
}

/* Answers a refusal of the fact derivation (or the parser) as it is. */
static void reply_refusal(struct sw_http_req *req, const struct sw_request_error *e)
{
    sw_reply_error(req, e->status, e->type, e->code[0] ? e->code : NULL,
                   e->param[0] ? e->param : NULL, "%s", e->message);
}

/* ---- The PII scan, on the loop or off it ---- */

/* A request between sw_facts_begin and sw_facts_finish: what handle_api
 * knew before the scan, and the scan's result. Inline it lives on
 * handle_api's stack and borrows f's cfg and live; off the loop it is
 * malloc'ed, holds references to both (key and model point into cfg, the
 * PII engine is live's) and owns the parsed body while a worker scans it. */
struct api_scan {
    struct sw_front *f;
    struct sw_http_req *req;        /* NULL once the client left: the result is dropped */
    struct sw_work *work;           /* while on the pool */
    struct sw_config *cfg;
    struct sw_live *live;
    const char *api_name;
    char id[48];
    struct sw_chat_request chat;
    struct sw_facts_in in;          /* in.chat is &chat; in.hdrs is not read after begin */
    struct sw_facts facts;          /* as sw_facts_begin left them */
    struct sw_facts_scan res;
    struct sw_relay_trace_ctx tc;   /* read before any answer */
};

/* Answers and records a refusal of the fact derivation. */
static void api_refused(struct api_scan *s, const struct sw_request_error *rerr)
{
    const struct sw_facts *facts = &s->facts;
    bool blocked = facts->refused == SW_FACTS_REFUSED_PII;
    reply_refusal(s->req, rerr);
    record_rejection(s->f, &s->tc, s->api_name, s->id, s->in.chat->model, s->in.key, rerr->status,
                     rerr->code, blocked ? &facts->pii.counts : NULL, s->in.start_ms);
    if (blocked)
        sw_info("request %s: rejected pii_blocked (%s)", s->id, facts->types);
    else if (facts->refused == SW_FACTS_REFUSED_FIELD)
        sw_info("request %s: rejected invalid_value (%s)", s->id,
                facts->bad[0] ? facts->bad : "body");
}

/* The PII engine of the request: its key's and model's known-safe lists. */
static const struct sw_pii_engine *request_engine(const struct api_scan *s)
{
    return sw_live_pii(s->live, s->in.key, s->in.model);
}

/* The rest of handle_api once the body was scanned (or needed no scan):
 * the facts finished, a refusal answered, else the request handed to the
 * relay. Takes s->chat. */
static void api_scanned(struct api_scan *s)
{
    struct sw_front *f = s->f;
    const struct sw_facts_scanner scanner = sw_facts_engine_scanner(request_engine(s));
    struct sw_request_error rerr;
    int ferr = sw_facts_finish(&s->in, &scanner, &s->res, &s->facts, &rerr);
    if (s->facts.scan_failed)
        sw_warn("request %s: PII scan failed; treated as sensitive", s->id);
    if (ferr) {
        api_refused(s, &rerr);
        sw_request_free(&s->chat);
        return;
    }
    if (s->facts.pii.binary_blocked)
        sw_info("request %s: %u content part(s) cannot be scanned; treated as sensitive", s->id,
                s->facts.pii.counts.binary);

    f->in_flight++;
    struct sw_relay_env env = {.base = f->base, .cev = f->cev, .live = s->live, .obs = f->obs,
                               .pool = f->scan_pool, .on_finish = on_relay_finish, .ud = f};
    sw_relay_start(&(struct sw_relay_request){.env = &env, .req = s->req, .cfg = s->cfg,
                                              .chat = &s->chat, .model = s->in.model,
                                              .facts = &s->facts, .request_id = s->id,
                                              .key_name = s->in.key ? s->in.key->name : NULL,
                                              .key = s->in.key,
                                              .pii = request_engine(s), .trace = &s->tc});
}

static void api_scan_free(struct api_scan *s)
{
    sw_live_unref(s->live);
    sw_config_unref(s->cfg);
    free(s);
}

/* On a worker: the scan itself (request/facts.c, the real engine). */
static void api_scan_run(void *ud)
{
    struct api_scan *s = ud;
    const struct sw_facts_scanner scanner = sw_facts_engine_scanner(request_engine(s));
    sw_facts_scan(&s->in, &scanner, &s->res);
}

/* The client left while its body was being scanned: the job is cancelled
 * and its result dropped (the request handle is gone once this returns). */
static void api_scan_gone(void *ud)
{
    struct api_scan *s = ud;
    struct sw_front *f = s->f;
    s->req = NULL;
    f->scans_dropped++;
    sw_info("request %s: client disconnected during the PII scan; dropped", s->id);
    sw_workpool_cancel(f->scan_pool, s->work);
    f->in_flight--;
    check_drained(f);
}

/* Back on the loop from the pool. */
static void api_scan_done(void *ud, enum sw_work_end end)
{
    struct api_scan *s = ud;
    struct sw_front *f = s->f;
    s->work = NULL;
    if (end == SW_WORK_CANCELLED || !s->req) {
        sw_request_free(&s->chat);
        api_scan_free(s);
        return;
    }
    sw_http_on_gone(s->req, NULL, NULL);
    f->in_flight--;
    if (end == SW_WORK_NOT_RUN) { /* no worker took it (the pool is closing): scanned here */
        const struct sw_facts_scanner scanner = sw_facts_engine_scanner(request_engine(s));
        sw_facts_scan(&s->in, &scanner, &s->res);
    }
    api_scanned(s);
    api_scan_free(s);
    check_drained(f);
}

/* Hands the scan of *chat (taken when this returns true) to the pool; the
 * request then continues in api_scan_done. False: it could not be (out of
 * memory), the caller scans inline. While on the pool the request counts
 * in flight, so a drain waits for it. */
static bool scan_off_loop(const struct api_scan *inline_scan, struct sw_chat_request *chat)
{
    struct sw_front *f = inline_scan->f;
    struct api_scan *s = malloc(sizeof *s);
    if (!s)
        return false;
    *s = *inline_scan;
    s->chat = *chat;
    s->in.chat = &s->chat;
    s->in.hdrs = NULL;
    s->cfg = sw_config_ref(f->cfg);
    s->live = sw_live_ref(f->live);
    s->work = sw_workpool_submit(f->scan_pool, api_scan_run, api_scan_done, s);
    if (!s->work) {
        api_scan_free(s);
        return false;
    }
    f->in_flight++;
    f->scans_offloaded++;
    sw_http_on_gone(s->req, api_scan_gone, s);
    return true;
}

/* A Responses body (POST /v1/responses) in the internal form, the client's
 * own body kept for a backend that speaks the API. A request that continues
 * a stored response (previous_response_id) is parsed with the stored items
 * (prior, fetched by responses_state.c), or refused as the fetch failed. */
static int responses_parse(const char *body, size_t len, const struct sw_resp_prior *prior,
                           struct sw_jspan input, struct sw_chat_request *chat,
                           struct sw_request_error *err)
{
    if (prior && prior->err) {
        sw_front_resp_prior_error(prior, err);
        return SW_EINVAL;
    }
    int rc = sw_responses_request_parse(body, len, prior ? prior->items : NULL, chat, err);
    if (rc)
        return rc;
    chat->dialect = SW_DIALECT_RESPONSES;
    if (!prior) {
        chat->input_off = input.off;
        chat->input_len = input.len;
    }
    if (sw_front_resp_continue(prior, chat)) {
        sw_request_free(chat);
        sw_request_error_set(err, 500, "server_error", NULL, NULL, "Out of memory.");
        return SW_ENOMEM;
    }
    return SW_OK;
}

/* The body (len bytes) in the internal form, by the parser of its API. */
static int parse_body(struct sw_http_req *req, enum sw_api api, const char *body, size_t len,
                      const struct sw_resp_prior *prior, struct sw_jspan input,
                      struct sw_chat_request *chat, struct sw_request_error *err)
{
    int rc = api == SW_API_EMBEDDINGS  ? sw_embed_parse(body, len, chat, err)
             : api == SW_API_MESSAGES  ? sw_anth_request_parse(body, len, 1, chat, err)
             : api == SW_API_RESPONSES ? responses_parse(body, len, prior, input, chat, err)
                                       : sw_request_parse(body, len, chat, err);
    /* system messages inside messages, as an Anthropic backend takes them
     * (before the scan: what is scanned is what goes) */
    if (!rc && chat->native &&
        sw_anth_native_prepare(chat->native, sw_http_header(req, "anthropic-beta", NULL),
                               chat->native_system)) {
        sw_request_free(chat);
        sw_request_error_set(err, 500, "server_error", "out_of_memory", NULL, "Out of memory.");
        rc = SW_ENOMEM;
    }
    return rc;
}

/* Whether the scan of the body just parsed (len bytes) has more than
 * SCAN_OFF_LOOP_BYTES to look at: a message the parse memo holds brings its
 * verdict, and a worker's hand-off costs more than adding it. */
static bool large_scan(size_t len)
{
    size_t reused = sw_jmemo_reused();
    return len - (reused < len ? reused : len) > SCAN_OFF_LOOP_BYTES;
}

/* A chat-completions, Anthropic messages, Responses or embeddings request: all are
 * authenticated, scanned and routed the same way; api says which parser
 * reads the body into the internal (OpenAI) form. The facts come from
 * request/facts.c; this is the HTTP around it: the early rejections in
 * their order (401, 415, the headers' 400s, the body's, 404, the facts'),
 * each answered, logged and recorded once. A Responses request that
 * continues a stored one runs this twice: first to fetch the stored one
 * (prior NULL), then with it (responses_state.h). */
static void handle_api(struct sw_front *f, struct sw_http_req *req, enum sw_api api,
                       const struct sw_resp_prior *prior);

/* An API request's trace context, read while req is there (a refusal's
 * answer ends it), and its X-Trace-Id (set once, on a resume too). */
static void read_trace(struct sw_front *f, struct sw_http_req *req, struct sw_relay_trace_ctx *tc)
{
    sw_relay_trace_ctx_read(f->obs ? f->obs->otlp : NULL, req, true, tc);
    if (tc->on)
        sw_http_set_header(req, "X-Trace-Id", tc->trace_hex);
}

static void responses_resume(struct sw_front *f, struct sw_http_req *req,
                             const struct sw_resp_prior *prior)
{
    handle_api(f, req, SW_API_RESPONSES, prior);
}

static void handle_api(struct sw_front *f, struct sw_http_req *req, enum sw_api api,
                       const struct sw_resp_prior *prior)
{
    /* Kept apart from req, which is gone once an answer was sent. */
    const char *api_name = api == SW_API_EMBEDDINGS   ? "embeddings"
                           : api == SW_API_MESSAGES   ? "anthropic"
                           : api == SW_API_RESPONSES ? "responses"
                                                     : "openai";
    int64_t start_ms = prior ? prior->start_ms : sw_now_ms();
    char id[48];
    make_request_id(f, req, id, sizeof id);
    struct sw_relay_trace_ctx trace_ctx, *tc = &trace_ctx;
    read_trace(f, req, tc);
    const char *denied;
    const struct sw_config_key *key = authenticate(f, req, &denied);
    if (denied) {
        record_rejection(f, tc, api_name, id, NULL, NULL, 401, denied, NULL, start_ms);
        return;
    }
    if (!require_json(req)) {
        record_rejection(f, tc, api_name, id, NULL, key, 415, "unsupported_media_type", NULL,
                         start_ms);
        return;
    }

    struct sw_facts_header on_stack[HEADERS_ON_STACK];
    struct header_list hl = {.h = on_stack};
    struct sw_facts_hdrs hdrs;
    struct sw_request_error rerr;
    if (!list_headers(req, &hl)) {
        sw_reply_error(req, 500, "server_error", NULL, NULL, "Out of memory.");
        record_rejection(f, tc, api_name, id, NULL, key, 500, "out_of_memory", NULL, start_ms);
        return;
    }
    int herr = sw_facts_headers(hl.h, hl.n, f->cfg->routing.request_timeout_ms, &hdrs, &rerr);
    if (hl.h != on_stack)
        free(hl.h);
    if (herr) {
        reply_refusal(req, &rerr);
        record_rejection(f, tc, api_name, id, NULL, key, 400, "invalid_header", NULL, start_ms);
        return;
    }
    if (api == SW_API_MESSAGES && !anthropic_headers_ok(req)) {
        record_rejection(f, tc, api_name, id, NULL, key, 400, "invalid_header", NULL, start_ms);
        return;
    }

    size_t len;
    const char *body = sw_http_body(req, &len);
    struct sw_jspan input = {0};
    if (api == SW_API_RESPONSES && !prior &&
        sw_front_resp_prior(f, req, key, body, len, start_ms, responses_resume, &input))
        return; /* goes on in responses_resume */
    if (prior && prior->sensitive)
        hdrs.sensitive.any_true = true; /* a sensitive conversation stays sensitive */
    struct sw_chat_request chat;
    int perr = parse_body(req, api, body, len, prior, input, &chat, &rerr);
    if (perr) {
        reply_refusal(req, &rerr);
        record_rejection(f, tc, api_name, id, NULL, key, rerr.status,
                         rerr.code[0] ? rerr.code : "invalid_request", NULL, start_ms);
        return;
    }

    const struct sw_config_model *model = find_model(f, req, tc, key, chat.model, api_name, id,
                                                     start_ms);
    if (!model) {
        sw_request_free(&chat);
        return;
    }

    const struct sw_facts_in in = {.api = api, .cfg = f->cfg, .key = key, .model = model,
                                   .chat = &chat, .hdrs = &hdrs, .start_ms = start_ms};
    struct api_scan inline_scan = {.f = f, .req = req, .cfg = f->cfg, .live = f->live,
                                   .api_name = api_name, .in = in, .tc = trace_ctx};
    struct api_scan *s = &inline_scan;
    sw_str_copy(s->id, sizeof s->id, id);
    if (sw_facts_begin(&in, &s->facts, &rerr) != SW_OK) {
        api_refused(s, &rerr);
        sw_request_free(&chat);
        return;
    }
    if (sw_facts_needs_scan(&s->facts) && f->scan_pool && large_scan(len) &&
        scan_off_loop(s, &chat))
        return;
    s->chat = chat;
    s->in.chat = &s->chat;
    if (sw_facts_needs_scan(&s->facts)) {
        const struct sw_facts_scanner scanner = sw_facts_engine_scanner(request_engine(s));
        sw_facts_scan(&s->in, &scanner, &s->res);
    }
    api_scanned(s);
}

static void handle_chat(struct sw_front *f, struct sw_http_req *req)
{
    handle_api(f, req, SW_API_CHAT, NULL);
}

static void handle_embeddings(struct sw_front *f, struct sw_http_req *req)
{
    handle_api(f, req, SW_API_EMBEDDINGS, NULL);
}

static void handle_messages(struct sw_front *f, struct sw_http_req *req)
{
    handle_api(f, req, SW_API_MESSAGES, NULL);
}

static void handle_responses(struct sw_front *f, struct sw_http_req *req)
{
    handle_api(f, req, SW_API_RESPONSES, NULL);
}

/* POST /v1/messages/count_tokens: the gateway's own prompt estimate (the
 * one routing uses, sw_request_estimate_tokens), not a tokenizer's count. */
static void handle_count_tokens(struct sw_front *f, struct sw_http_req *req)
{
    char id[48];
    make_request_id(f, req, id, sizeof id);
    const char *denied;
    authenticate(f, req, &denied);
    if (denied || !require_json(req))
        return;
    size_t len;
    const char *body = sw_http_body(req, &len);
    struct sw_chat_request chat;
    struct sw_request_error rerr;
    if (sw_anth_request_parse(body, len, 0, &chat, &rerr)) {
        sw_reply_error(req, rerr.status, rerr.type, rerr.code[0] ? rerr.code : NULL,
                       rerr.param[0] ? rerr.param : NULL, "%s", rerr.message);
        return;
    }
    if (!sw_config_find_model(f->cfg, chat.model)) {
        reply_no_model(req, f->cfg, chat.model);
        sw_request_free(&chat);
        return;
    }
    char out[64];
    int n = snprintf(out, sizeof out, "{\"input_tokens\":%ld}", chat.prompt_tokens_est);
    sw_request_free(&chat);
    sw_reply_json(req, 200, out, (size_t)n);
}

/* ---- URLs ---- */

struct route {
    const char *path;
    enum sw_http_method method;
    void (*fn)(struct sw_front *, struct sw_http_req *);
    bool admin;                 /* needs the admin key */
};

static const struct route routes[] = {
    {"/v1/chat/completions", SW_HTTP_POST, handle_chat, false},
    {"/v1/embeddings", SW_HTTP_POST, handle_embeddings, false},
    {"/v1/messages", SW_HTTP_POST, handle_messages, false},
    {"/v1/messages/count_tokens", SW_HTTP_POST, handle_count_tokens, false},
    {"/v1/responses", SW_HTTP_POST, handle_responses, false},
    {"/v1/models", SW_HTTP_GET, handle_models, false},
    {"/healthz", SW_HTTP_GET, handle_healthz, false},
    {"/metrics", SW_HTTP_GET, sw_admin_metrics, false},
    {"/dashboard", SW_HTTP_GET, sw_admin_dashboard, false},
    {"/admin/state", SW_HTTP_GET, sw_admin_state, true},
    {"/admin/emergency", SW_HTTP_POST, sw_admin_emergency, true},
    {"/admin/reload", SW_HTTP_POST, sw_admin_reload, true},
    {"/admin/decisions", SW_HTTP_GET, sw_admin_decisions, true},
    {"/admin/thresholds", SW_HTTP_PUT, sw_admin_thresholds, true},
    {"/admin/series", SW_HTTP_GET, sw_admin_series, true},
};

static const char breakers_prefix[] = "/admin/breakers/", reset_suffix[] = "/reset";

/* The breaker name in /admin/breakers/{name}/reset, or NULL. */
static const char *breaker_path(const char *path, size_t *len)
{
    size_t plen = strlen(path), pre = sizeof breakers_prefix - 1, suf = sizeof reset_suffix - 1;
    if (plen <= pre + suf || strncmp(path, breakers_prefix, pre) != 0 ||
        strcmp(path + plen - suf, reset_suffix) != 0)
        return NULL;
    *len = plen - pre - suf;
    return path + pre;
}

static const char keys_path[] = "/admin/keys";

/* /admin/keys ("" in *id) or /admin/keys/{id} (the id, len bytes): true. */
static bool key_path(const char *path, const char **id, size_t *len)
{
    size_t pre = sizeof keys_path - 1;
    if (strncmp(path, keys_path, pre) != 0 || (path[pre] && path[pre] != '/'))
        return false;
    *id = path[pre] ? path + pre + 1 : "";
    *len = strlen(*id);
    return !strchr(*id, '/') && (!path[pre] || *len > 0);
}

static const struct route *find_route(const char *path)
{
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++)
        if (strcmp(path, routes[i].path) == 0)
            return &routes[i];
    return NULL;
}

/* HEAD is answered like GET, without the body. */
static bool method_ok(const struct route *r, enum sw_http_method m)
{
    return m == r->method || (r->method == SW_HTTP_GET && m == SW_HTTP_HEAD);
}

/* The admin key check, refusing a request with two Authorization headers
 * (no header is taken over another). */
static bool admin_ok(struct sw_front *f, struct sw_http_req *req)
{
    int n_auth;
    sw_http_header(req, "Authorization", &n_auth);
    if (n_auth > 1 && f->cfg->admin_key) {
        sw_reply_error(req, 401, "invalid_request_error", "ambiguous_api_key", NULL,
                       "The request carries more than one Authorization header. Send exactly one.");
        sw_warn("admin: rejected a call with more than one Authorization header");
        return false;
    }
    return sw_admin_authorized(f, req);
}

/* Whether the request carries a known client key; else answers 401. */
static bool key_answered(struct sw_front *f, struct sw_http_req *req)
{
    if (key_ok(f, req))
        return true;
    const char *denied;
    authenticate(f, req, &denied);
    return false;
}

/* Before the body is read: refuse what needs no body to refuse (draining,
 * unknown URL, wrong method, missing key), so an unauthenticated client
 * cannot make the gateway buffer a body. Returns false when answered. */
static bool on_headers(struct sw_http_req *req, void *arg)
{
    struct sw_front *f = arg;
    const char *path = sw_http_path(req);
    char id[48];
    make_request_id(f, req, id, sizeof id);
    if (f->draining) {
        sw_reply_error(req, 503, "server_error", "shutting_down", NULL,
                       "Spillway is shutting down; retry on another instance.");
        return false;
    }
    if (strcmp(path, "/healthz") != 0 && !host_ok(f, req))
        return false;
    size_t nlen;
    if (breaker_path(path, &nlen)) {
        if (sw_http_method(req) != SW_HTTP_POST) {
            sw_reply_error(req, 405, "invalid_request_error", "method_not_allowed", NULL,
                           "Use POST.");
            return false;
        }
        return admin_ok(f, req);
    }
    const char *kid;
    if (key_path(path, &kid, &nlen)) {
        enum sw_http_method m = sw_http_method(req);
        if (m != SW_HTTP_GET && m != SW_HTTP_HEAD && m != SW_HTTP_POST &&
            !(nlen && m == SW_HTTP_DELETE)) {
            sw_reply_error(req, 405, "invalid_request_error", "method_not_allowed", NULL,
                           nlen ? "Use GET, POST (update) or DELETE (revoke)."
                                : "Use GET (list) or POST (create).");
            return false;
        }
        return admin_ok(f, req);
    }
    if (sw_front_resp_path(path))
        return sw_front_resp_method_ok(req) && key_answered(f, req);
    if (model_path(path)) {
        enum sw_http_method m = sw_http_method(req);
        if (m != SW_HTTP_GET && m != SW_HTTP_HEAD) {
            sw_reply_error(req, 405, "invalid_request_error", "method_not_allowed", NULL,
                           "Method not allowed on /v1/models/{id}; use GET.");
            return false;
        }
        return key_answered(f, req);
    }
    const struct route *r = find_route(path);
    if (!r && !strncmp(path, "/admin/", 7)) {
        sw_reply_error(req, 404, "invalid_request_error", "unknown_url", NULL,
                       "Unknown URL: %s. The admin API serves GET /admin/state, "
                       "GET /admin/decisions, GET /admin/series, GET /admin/keys[/ID], POST /admin/reload, "
                       "POST /admin/emergency, PUT /admin/thresholds and "
                       "POST /admin/breakers/NAME/reset (docs/operations.md).", path);
        return false;
    }
    if (!r) {
        if (!strncmp(path, "/v1/", 4))
            trace_http_refusal(f, req, id, 404, "unknown_url");
        sw_reply_error(req, 404, "invalid_request_error", "unknown_url", NULL,
                       "Unknown URL: %s. Spillway serves POST /v1/chat/completions, "
                       "POST /v1/embeddings, POST /v1/messages, POST /v1/messages/count_tokens, "
                       "GET /v1/models, GET /v1/models/{id} and GET /healthz.", path);
        return false;
    }
    if (!method_ok(r, sw_http_method(req))) {
        sw_reply_error(req, 405, "invalid_request_error", "method_not_allowed", NULL,
                       "Method not allowed on %s; use %s.", r->path,
                       r->method == SW_HTTP_POST ? "POST" : r->method == SW_HTTP_PUT ? "PUT" : "GET");
        return false;
    }
    if (r->admin)
        return admin_ok(f, req);
    bool serves = r->fn == handle_chat || r->fn == handle_embeddings || r->fn == handle_messages;
    if ((serves || r->fn == handle_count_tokens || r->fn == handle_models) && !key_ok(f, req)) {
        if (serves) {
            r->fn(f, req); /* answers 401 before reading the body, and logs it */
        } else {
            const char *denied;
            authenticate(f, req, &denied);
        }
        return false;
    }
    return true;
}

static void on_request(struct sw_http_req *req, void *arg)
{
    struct sw_front *f = arg;
    const char *path = sw_http_path(req);
    size_t nlen;
    const char *name = breaker_path(path, &nlen);
    if (name) {
        sw_admin_breaker_reset(f, req, name, nlen);
        return;
    }
    const char *kid;
    if (key_path(path, &kid, &nlen)) {
        sw_admin_key(f, req, kid, nlen);
        return;
    }
    if (model_path(path)) {
        handle_model(f, req);
        return;
    }
    if (sw_front_resp_path(path)) {
        const char *denied;
        const struct sw_config_key *key = authenticate(f, req, &denied);
        if (!denied)
            sw_front_resp_state(f, req, key);
        return;
    }
    const struct route *r = find_route(path);
    if (r) /* on_headers let only known routes through */
        r->fn(f, req);
    else
        sw_reply_error(req, 404, "invalid_request_error", "unknown_url", NULL, "Unknown URL.");
}

/* Errors the HTTP server answers itself (malformed, too large, too slow). */
static void on_http_error(struct sw_http_req *req, int status, const char *code,
                          const char *message, void *arg)
{
    char id[48];
    make_request_id(arg, req, id, sizeof id);
    const char *fix = status == 413 ? " Send a smaller request, or raise limits.max_body_bytes in "
                                      "the gateway's config."
                      : status == 431 ? " Send fewer or shorter headers, or raise "
                                        "limits.max_header_bytes in the gateway's config."
                      : status == 408 ? " Send the whole request without pausing, or raise "
                                        "limits.client_timeout_ms in the gateway's config."
                                      : "";
    trace_http_refusal(arg, req, id, status, code);
    sw_reply_error(req, status, status == 408 ? "timeout_error" : "invalid_request_error", code,
                   NULL, "%s%s", message, fix);
}

static void on_conn_closed(void *arg)
{
    check_drained(arg);
}

/* ---- Setup ---- */

static struct sw_http_limits http_limits(const struct sw_config_limits *lim)
{
    return (struct sw_http_limits){
        .max_header_bytes = (size_t)lim->max_header_bytes,
        .max_body_bytes = (size_t)lim->max_body_bytes,
        .client_timeout_ms = lim->client_timeout_ms,
        .max_connections = lim->max_connections,
    };
}

void sw_front_swap(struct sw_front *f, struct sw_config *cfg, struct sw_live *live)
{
    if (strcmp(cfg->listen_host, f->cfg->listen_host) || cfg->listen_port != f->cfg->listen_port)
        sw_warn("reload: listen changed to %s:%d; that takes a restart (still on %s:%d)",
                cfg->listen_host, cfg->listen_port, f->cfg->listen_host,
                sw_http_server_port(f->http));
    struct sw_config *old_cfg = f->cfg;
    struct sw_live *old_live = f->live;
    f->cfg = sw_config_ref(cfg);
    f->live = sw_live_ref(live);
    sw_live_unref(old_live);
    sw_config_unref(old_cfg);
    if (cfg->limits.scan_threads != f->scan_threads)
        sw_warn("reload: limits.scan_threads changed to %ld; that takes a restart (still %ld)",
                cfg->limits.scan_threads, f->scan_threads);
    struct sw_http_limits lim = http_limits(&f->cfg->limits);
    sw_http_server_set_limits(f->http, &lim);
}

void sw_front_set_hooks(struct sw_front *f, const struct sw_front_hooks *hooks)
{
    f->hooks = *hooks;
}

static void on_second(void *ud)
{
    sw_admin_series_tick(ud);
}

struct sw_front *sw_front_new(struct event_base *base, struct sw_config *cfg,
                              struct sw_curlev *cev, struct sw_live *live,
                              struct sw_obs_sinks *obs)
{
    struct sw_front *f = calloc(1, sizeof *f);
    if (!f)
        return NULL;
    f->obs = obs;
    f->live = sw_live_ref(live);
    f->base = base;
    f->cfg = sw_config_ref(cfg);
    f->cev = cev;
    f->started_s = sw_wall_s();
    f->drain_check = evtimer_new(base, on_drain_check, f);
    if (!f->drain_check)
        goto fail;
    f->series = sw_series_new();
    if (!f->series || sw_ticks_start(&f->ticks, base, on_second, f) != SW_OK)
        goto fail;
    f->scan_threads = cfg->limits.scan_threads;
    if (f->scan_threads > 0) {
        f->scan_pool = sw_workpool_new(base, (int)f->scan_threads);
        if (!f->scan_pool) {
            sw_warn("cannot start %ld PII scan thread(s): every body is scanned on the event "
                    "loop", f->scan_threads);
        }
    }
    struct sw_http_limits lim = http_limits(&cfg->limits);
    struct sw_http_handler h = {on_headers, on_request, on_http_error, on_conn_closed, f, on_done};
    f->http = sw_http_server_new(base, cfg->listen_host, cfg->listen_port, LISTEN_BACKLOG, &lim, &h);
    if (!f->http) {
        int e = errno;
        sw_error("cannot listen on %s:%d: %s%s", cfg->listen_host, cfg->listen_port, strerror(e),
                 e == EADDRINUSE ? "; another process (another spillway?) holds the port: stop "
                                   "it or change listen: in the config"
                 : e == EACCES ? "; ports below 1024 need privileges: use a port >= 1024 in listen:"
                 : e == EADDRNOTAVAIL ? "; no interface has this address: use 127.0.0.1 or "
                                        "0.0.0.0 in listen:"
                 : "");
        goto fail;
    }
    fprintf(stderr, "spillway: listening on %s:%d\n", cfg->listen_host,
            sw_http_server_port(f->http));
    return f;

fail:
    sw_front_free(f);
    return NULL;
}

void sw_front_drain(struct sw_front *f, void (*on_drained)(void *ud), void *ud)
{
    f->draining = true;
    f->on_drained = on_drained;
    f->drained_ud = ud;
    sw_http_server_stop_accepting(f->http);
    sw_info("draining: %ld request(s) in flight", f->in_flight);
    check_drained(f);
}

long sw_front_in_flight(const struct sw_front *f)
{
    return f->in_flight;
}

void sw_front_free(struct sw_front *f)
{
    if (!f)
        return;
    f->draining = true;
    f->on_drained = NULL;
    sw_http_server_free(f->http); /* requests still in the relay learn their client is gone */
    /* After the server: a request still being scanned has had its on_gone,
     * so this joins the workers (a running scan is waited for) and drops
     * the results. */
    sw_workpool_free(f->scan_pool);
    if (f->drain_check)
        event_free(f->drain_check);
    sw_ticks_stop(&f->ticks);
    sw_series_free(f->series);
    sw_live_unref(f->live);
    sw_config_unref(f->cfg);
    free(f);
}
