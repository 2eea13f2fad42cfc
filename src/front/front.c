#include "front/front.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/listener.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/clock.h"
#include "common/err.h"
#include "common/log.h"
#include "obs/dashboard.h"
#include "relay/relay.h"
#include "relay/reply.h"
#include "request/request.h"

/* Requests may say how long they are willing to wait, within these bounds. */
#define REQUEST_TIMEOUT_MAX_MS 3600000L

struct sw_front {
    struct event_base *base;
    struct evhttp *http;
    struct evhttp_bound_socket *bound;
    struct evconnlistener *listener;
    struct sw_config *cfg;
    struct sw_curlev *cev;
    struct sw_live *live;           /* referenced */
    struct sw_front_hooks hooks;
    struct sw_obs_sinks *obs;       /* borrowed */
    struct timeval client_tv;       /* slow-client read/write timeout */
    long in_flight;                 /* requests handed to the relay, not finished */
    struct conn *conns;             /* every open client connection */
    struct event *drain_check;      /* re-checks until every answer left the process */
    long connections;               /* open client connections */
    bool accepting;
    bool draining;
    void (*on_drained)(void *ud);
    void *drained_ud;
    uint64_t next_id;
    int64_t started_s;
};

/* ---- Bookkeeping ---- */

struct conn {
    struct sw_front *f;
    struct bufferevent *bev;
    struct bufferevent *sock;       /* the socket under bev */
    struct event *kick;
    bool kicking;
    struct conn *prev, *next;
};

/* True when no connection holds answer bytes not yet written to its socket. */
static bool outputs_flushed(const struct sw_front *f)
{
    for (const struct conn *c = f->conns; c; c = c->next) {
        struct bufferevent *under = bufferevent_get_underlying(c->bev);
        if (evbuffer_get_length(bufferevent_get_output(c->bev)) ||
            (under && evbuffer_get_length(bufferevent_get_output(under))))
            return false;
    }
    return true;
}

/* Drained: no request in the relay and every answer's last byte written. */
static void check_drained(struct sw_front *f)
{
    if (!f->draining || f->in_flight > 0 || !f->on_drained)
        return;
    if (!outputs_flushed(f)) {
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

static void on_relay_finish(void *ud)
{
    struct sw_front *f = ud;
    f->in_flight--;
    check_drained(f);
}

/* Connections are counted through the bufferevent libevent creates for each:
 * a filter whose context is freed with the connection. At the limit the
 * listener stops accepting; the kernel backlog holds newcomers.
 *
 * evhttp writes a reply and only then sets the callback that completes it,
 * expecting the write callback to come later from the socket. A filter that
 * moved output at once would call it too early (the reply never completes
 * and keep-alive stalls), so output is moved one loop turn later, by `kick`. */
static void on_conn_freed(void *ctx)
{
    struct conn *c = ctx;
    struct sw_front *f = c->f;
    event_free(c->kick);
    if (!f) { /* the front is gone; libevent finalizes bufferevents late */
        free(c);
        return;
    }
    if (c->prev)
        c->prev->next = c->next;
    else
        f->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    free(c);
    f->connections--;
    if (!f->accepting && !f->draining && f->connections < f->cfg->limits.max_connections) {
        evconnlistener_enable(f->listener);
        f->accepting = true;
    }
}

static enum bufferevent_filter_result filter_out(struct evbuffer *src, struct evbuffer *dst,
                                                 ev_ssize_t limit,
                                                 enum bufferevent_flush_mode mode, void *ctx)
{
    (void)limit;
    (void)mode;
    struct conn *c = ctx;
    if (!c->kicking)
        return BEV_NEED_MORE;
    evbuffer_add_buffer(dst, src);
    /* Into the socket now, as far as it takes it: once this returns evhttp
     * may close the connection (Connection: close, HTTP/1.0, a shutdown
     * answer), shutting the socket down with whatever still waits in dst. */
    evutil_socket_t fd = bufferevent_getfd(c->sock);
    if (fd >= 0)
        evbuffer_write(dst, fd);
    return BEV_OK;
}

static void on_output_added(struct evbuffer *buf, const struct evbuffer_cb_info *info, void *arg)
{
    (void)buf;
    struct conn *c = arg;
    if (info->n_added)
        event_active(c->kick, EV_TIMEOUT, 0);
}

static void on_kick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct conn *c = arg;
    c->kicking = true;
    bufferevent_flush(c->bev, EV_WRITE, BEV_NORMAL);
    c->kicking = false;
}

static struct bufferevent *on_new_connection(struct event_base *base, void *arg)
{
    struct sw_front *f = arg;
    struct bufferevent *sock = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
    struct conn *c = calloc(1, sizeof *c);
    if (c) {
        c->f = f;
        c->kick = event_new(base, -1, 0, on_kick, c);
    }
    if (c)
        c->sock = sock;
    if (sock && c && c->kick)
        c->bev = bufferevent_filter_new(sock, NULL, filter_out, BEV_OPT_CLOSE_ON_FREE,
                                        on_conn_freed, c);
    if (!c || !c->bev) {
        if (sock)
            bufferevent_free(sock);
        if (c && c->kick)
            event_free(c->kick);
        free(c);
        sw_error("out of memory accepting a connection");
        return NULL;
    }
    evbuffer_add_cb(bufferevent_get_output(c->bev), on_output_added, c);
    c->next = f->conns;
    if (f->conns)
        f->conns->prev = c;
    f->conns = c;
    f->connections++;
    if (f->accepting && f->connections >= f->cfg->limits.max_connections) {
        evconnlistener_disable(f->listener);
        f->accepting = false;
        sw_warn("connection limit %ld reached; not accepting until one closes",
                f->cfg->limits.max_connections);
    }
    return c->bev;
}

/* While a request is being answered the client owes us nothing, so the read
 * timeout (meant for slow clients sending a request) is suspended; the write
 * timeout still catches a client that stops reading. Restored once the
 * answer is complete, for the next request on the keep-alive connection. */
static void on_request_complete(struct evhttp_request *req, void *arg)
{
    struct sw_front *f = arg;
    struct evhttp_connection *evcon = evhttp_request_get_connection(req);
    if (evcon)
        evhttp_connection_set_timeout_tv(evcon, &f->client_tv);
}

static void hold_request(struct sw_front *f, struct evhttp_request *req)
{
    struct evhttp_connection *evcon = evhttp_request_get_connection(req);
    struct bufferevent *bev = evcon ? evhttp_connection_get_bufferevent(evcon) : NULL;
    if (bev)
        bufferevent_set_timeouts(bev, NULL, &f->client_tv);
    evhttp_request_set_on_complete_cb(req, on_request_complete, f);
}

/* ---- Helpers ---- */

static const char *header(struct evhttp_request *req, const char *name)
{
    return evhttp_find_header(evhttp_request_get_input_headers(req), name);
}

static void make_request_id(struct sw_front *f, struct evhttp_request *req, char *out, size_t n)
{
    snprintf(out, n, "sw-%08lx-%06llx", (unsigned long)f->started_s,
             (unsigned long long)(++f->next_id & 0xffffff));
    evhttp_add_header(evhttp_request_get_output_headers(req), "X-Request-Id", out);
}

/* Parses "true"/"false" (any case, also 1/0); -1 if absent or unparsable. */
static int parse_bool_header(const char *v)
{
    if (!v)
        return -1;
    if (!strcasecmp(v, "true") || !strcmp(v, "1"))
        return 1;
    if (!strcasecmp(v, "false") || !strcmp(v, "0"))
        return 0;
    return -1;
}

/* Authenticates the client. Returns the key (NULL when auth is disabled) or
 * answers 401 and sets *denied. */
static const struct sw_config_key *authenticate(struct sw_front *f, struct evhttp_request *req,
                                                bool *denied)
{
    *denied = false;
    if (!f->cfg->auth_enabled)
        return NULL;
    const char *auth = header(req, "Authorization");
    static const char bearer[] = "Bearer ";
    if (!auth || strncasecmp(auth, bearer, sizeof bearer - 1) != 0) {
        sw_reply_error(req, 401, "invalid_request_error", "missing_api_key", NULL,
                       "You didn't provide an API key. Send it as 'Authorization: Bearer KEY'.");
        *denied = true;
        return NULL;
    }
    const struct sw_config_key *k = sw_config_find_key(f->cfg, auth + sizeof bearer - 1);
    if (!k) {
        sw_reply_error(req, 401, "invalid_request_error", "invalid_api_key", NULL,
                       "Incorrect API key provided.");
        sw_info("rejected a request with an unknown API key");
        *denied = true;
    }
    return k;
}

/* ---- Handlers ---- */

static void handle_models(struct sw_front *f, struct evhttp_request *req)
{
    json_t *data = json_array();
    for (size_t i = 0; i < f->cfg->n_models; i++)
        json_array_append_new(data, json_pack("{s:s, s:s, s:I, s:s}", "id", f->cfg->models[i].name,
                                              "object", "model", "created",
                                              (json_int_t)f->started_s, "owned_by", "spillway"));
    json_t *list = json_pack("{s:s, s:o}", "object", "list", "data", data);
    char *s = list ? json_dumps(list, JSON_COMPACT) : NULL;
    if (s)
        sw_reply_json(req, 200, s, strlen(s));
    else
        sw_reply_error(req, 500, "server_error", NULL, NULL, "Out of memory.");
    free(s);
    json_decref(list);
}

static void handle_healthz(struct sw_front *f, struct evhttp_request *req)
{
    char body[160];
    int n = snprintf(body, sizeof body, "{\"status\":\"%s\",\"in_flight\":%ld,\"connections\":%ld}",
                     f->draining ? "draining" : "ok", f->in_flight, f->connections);
    sw_reply_json(req, f->draining ? 503 : 200, body, (size_t)n);
}

/* Reads X-Request-Timeout-Ms; answers 400 and returns -1 when it is invalid. */
static long request_timeout_ms(struct sw_front *f, struct evhttp_request *req)
{
    const char *v = header(req, "X-Request-Timeout-Ms");
    if (!v)
        return f->cfg->routing.request_timeout_ms;
    char *end;
    errno = 0;
    long ms = strtol(v, &end, 10);
    if (errno || end == v || *end || ms < 1 || ms > REQUEST_TIMEOUT_MAX_MS) {
        sw_reply_error(req, 400, "invalid_request_error", "invalid_header",
                       "X-Request-Timeout-Ms",
                       "Invalid X-Request-Timeout-Ms: expected milliseconds from 1 to %ld.",
                       REQUEST_TIMEOUT_MAX_MS);
        return -1;
    }
    return ms;
}

/* "email, iban": the types found, for messages and logs (never the values). */
static void pii_type_list(const struct sw_front *f, const struct sw_pii_counts *c, char *out,
                          size_t cap)
{
    size_t used = 0;
    out[0] = '\0';
    for (int t = 0; t < SW_PII_MAX_TYPES && used < cap; t++)
        if (c->n[t])
            used += (size_t)snprintf(out + used, cap - used, "%s%s", used ? ", " : "",
                                     sw_pii_type_name(f->live->pii, t));
}

/* One decision-log line and the metrics for a chat request the front
 * refused before routing (the relay records everything after). */
static void record_rejection(struct sw_front *f, const char *id, const char *model,
                             const struct sw_config_key *key, int status, const char *code,
                             const struct sw_pii_counts *counts, int64_t start_ms)
{
    if (!f->obs)
        return;
    struct sw_declog_pii pii[SW_PII_MAX_TYPES];
    size_t n_pii = sw_obs_pii_list(f->live->pii, counts, pii);
    int64_t now = sw_now_ms();
    struct sw_declog_entry e = {
        .request_id = id,
        .time_ms = sw_live_wall_ms(f->live, start_ms),
        .model = model,
        .key_name = key ? key->name : NULL,
        .decision = SW_DECLOG_REJECTED,
        .status = status,
        .code = code,
        .ttft_ms = -1,
        .duration_ms = (double)(now - start_ms),
        .tokens_in = -1,
        .tokens_out = -1,
        .pii = pii,
        .n_pii = n_pii,
        .pii_outcome = n_pii ? "blocked" : NULL,
    };
    sw_obs_account(f->obs->metrics, &f->obs->spill, &e, false, now / 1000);
    sw_declog_record(f->obs->log, f->obs->ring, &e);
}

static void handle_chat(struct sw_front *f, struct evhttp_request *req)
{
    int64_t start_ms = sw_now_ms();
    char id[48];
    make_request_id(f, req, id, sizeof id);

    bool denied;
    const struct sw_config_key *key = authenticate(f, req, &denied);
    if (denied) {
        record_rejection(f, id, NULL, NULL, 401, "invalid_api_key", NULL, start_ms);
        return;
    }

    struct evbuffer *in = evhttp_request_get_input_buffer(req);
    size_t len = evbuffer_get_length(in);
    if (len > (size_t)f->cfg->limits.max_body_bytes) {
        sw_reply_error(req, 413, "invalid_request_error", "request_too_large", NULL,
                       "Request body is %zu bytes; the limit is %ld bytes.", len,
                       f->cfg->limits.max_body_bytes);
        sw_info("request %s: body of %zu bytes over the %ld limit", id, len,
                f->cfg->limits.max_body_bytes);
        record_rejection(f, id, NULL, key, 413, "request_too_large", NULL, start_ms);
        return;
    }
    long timeout_ms = request_timeout_ms(f, req);
    if (timeout_ms < 0) {
        record_rejection(f, id, NULL, key, 400, "invalid_header", NULL, start_ms);
        return;
    }

    struct sw_chat_request chat;
    struct sw_request_error rerr;
    const char *body = len ? (const char *)evbuffer_pullup(in, -1) : "";
    if (sw_request_parse(body, len, &chat, &rerr)) {
        sw_reply_error(req, rerr.status, rerr.type, rerr.code[0] ? rerr.code : NULL,
                       rerr.param[0] ? rerr.param : NULL, "%s", rerr.message);
        record_rejection(f, id, NULL, key, rerr.status,
                         "invalid_request", NULL, start_ms);
        return;
    }

    const struct sw_config_model *model = sw_config_find_model(f->cfg, chat.model);
    if (!model) {
        sw_reply_error(req, 404, "invalid_request_error", "model_not_found", "model",
                       "The model '%s' does not exist. GET /v1/models lists the models.",
                       chat.model);
        record_rejection(f, id, chat.model, key, 404, "model_not_found", NULL, start_ms);
        sw_request_free(&chat);
        return;
    }

    /* allows_cloud: the key's policy, the header and the body; the most
     * restrictive wins, so a header cannot widen what a key allows. Same for
     * sensitive: any source can set it, none can clear it. */
    struct sw_route_facts facts = {
        .prompt_tokens_est = chat.prompt_tokens_est,
        .max_tokens = chat.max_tokens > 0 ? chat.max_tokens : f->cfg->routing.default_max_tokens,
        .allows_cloud = (!key || key->allow_cloud) &&
                        parse_bool_header(header(req, "X-Spillway-Allow-Cloud")) != 0 &&
                        chat.allow_cloud != 0,
        .sensitive = (key && key->sensitive) ||
                     parse_bool_header(header(req, "X-Spillway-Sensitive")) == 1,
        .latency_critical = parse_bool_header(header(req, "X-Spillway-Latency-Critical")) == 1,
        .needs_tools = chat.has_tools,
        .needs_images = chat.has_images,
        .deadline_ms = start_ms + timeout_ms,
        .ttft_budget_ms = key ? key->ttft_budget_ms : 0,
    };

    /* PII: the most restrictive of the global, key and model policies. */
    enum sw_pii_policy policy = f->cfg->pii.policy;
    if (key && key->pii > policy)
        policy = key->pii;
    if (model->pii > policy)
        policy = model->pii;
    struct sw_relay_pii pii = {.policy = policy};
    if (policy != SW_PII_POLICY_OFF &&
        sw_pii_scan_request(f->live->pii, chat.body, &pii.counts) != SW_OK) {
        /* Could not be scanned (too large): fail closed, it stays local. */
        facts.sensitive = true;
        sw_warn("request %s: PII scan failed; treated as sensitive", id);
    }
    if (pii.counts.total > 0) {
        if (policy == SW_PII_POLICY_BLOCK) {
            char types[256];
            pii_type_list(f, &pii.counts, types, sizeof types);
            sw_reply_error(req, 400, "invalid_request_error", "pii_blocked", "messages",
                           "The request contains personal data or secrets (%s) and its policy "
                           "blocks such requests.", types);
            sw_live_count_pii(f->live, SW_PII_BLOCKED, &pii.counts);
            sw_live_count_rejection(f->live, "pii_blocked");
            record_rejection(f, id, chat.model, key, 400, "pii_blocked", &pii.counts, start_ms);
            sw_info("request %s: rejected pii_blocked (%s)", id, types);
            sw_request_free(&chat);
            return;
        }
        if (policy == SW_PII_POLICY_LOCAL_ONLY)
            facts.sensitive = true;
    }

    hold_request(f, req);
    f->in_flight++;
    struct sw_relay_env env = {f->base, f->cev, f->live, f->obs, on_relay_finish, f};
    sw_relay_start(&env, req, f->cfg, &chat, model, &facts, &pii, start_ms, id,
                   key ? key->name : NULL);
}

/* ---- Metrics and the dashboard ---- */

static const char *health_name(enum sw_health h);

/* Backend i as the router sees it now (the view of a one-backend model). */
static struct sw_route_backend_view backend_view(struct sw_live *l, size_t i, int64_t now)
{
    struct sw_config_model one = {.name = "", .backends = &i, .n_backends = 1};
    struct sw_live_snapshot snap;
    sw_live_snapshot(l, &one, now, &snap);
    return snap.backends[0];
}

/* GET /metrics: the counters and histograms, then gauges read from the live
 * state (the same numbers /admin/state shows). */
static void handle_metrics(struct sw_front *f, struct evhttp_request *req)
{
    struct sw_live *l = f->live;
    int64_t now = sw_now_ms();
    struct sw_obs_backend obs[SW_ROUTE_MAX_BACKENDS];
    size_t n = 0;
    for (size_t i = 0; i < l->n && n < SW_ROUTE_MAX_BACKENDS; i++) {
        struct sw_route_backend_view view = backend_view(l, i, now);
        const struct sw_route_backend_view *v = &view;
        obs[n++] = (struct sw_obs_backend){
            .name = v->name,
            .local = v->tier == SW_TIER_LOCAL,
            .health = health_name(v->health),
            .breaker = v->breaker == SW_BREAKER_OPEN        ? 2
                       : v->breaker == SW_BREAKER_HALF_OPEN ? 1
                                                            : 0,
            .in_flight = (double)v->in_flight,
            .queued = (double)v->queued,
            .est_wait_ms = sw_route_est_ttft_ms(v, 0),
            .prefill_ms_per_token = v->prefill_ms_per_token,
            .decode_tps = v->decode_tps,
            .rpm_available = v->rpm_available,
            .tpm_available = v->tpm_available,
        };
    }
    struct sw_obs_gauges g = {
        .backends = obs,
        .n_backends = n,
        .spend_usd = sw_live_spend_usd(l, now),
        .spend_cap_usd = sw_live_spend_cap_usd(l),
        .spill_ratio = sw_spill_ratio(&f->obs->spill, now / 1000),
        .emergency = l->g->emergency,
        .declog_write_errors = sw_declog_write_errors(f->obs->log),
    };
    struct sw_buf b;
    sw_buf_init(&b, 16 << 20);
    int err = sw_metrics_render(f->obs->metrics, &b);
    if (!err)
        err = sw_obs_render_gauges(&b, &g);
    if (err) {
        sw_buf_free(&b);
        sw_reply_error(req, 500, "server_error", NULL, NULL, "metrics: %s", sw_err_str(err));
        return;
    }
    struct evkeyvalq *h = evhttp_request_get_output_headers(req);
    evhttp_add_header(h, "Content-Type", "text/plain; version=0.0.4; charset=utf-8");
    struct evbuffer *out = evbuffer_new();
    if (out)
        evbuffer_add(out, b.ptr, b.len);
    evhttp_send_reply(req, 200, "OK", out);
    if (out)
        evbuffer_free(out);
    sw_buf_free(&b);
}

/* GET /dashboard: the self-contained page; its data comes from the admin API. */
static void handle_dashboard(struct sw_front *f, struct evhttp_request *req)
{
    (void)f;
    size_t len;
    const char *html = sw_dashboard_html(&len);
    struct evkeyvalq *h = evhttp_request_get_output_headers(req);
    evhttp_add_header(h, "Content-Type", "text/html; charset=utf-8");
    evhttp_add_header(h, "Cache-Control", "no-store");
    evhttp_add_header(h, "Content-Security-Policy",
                      "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
                      "connect-src 'self'; img-src 'self' data:; base-uri 'none'; "
                      "form-action 'none'; frame-ancestors 'none'");
    evhttp_add_header(h, "X-Content-Type-Options", "nosniff");
    struct evbuffer *out = evbuffer_new();
    if (out)
        evbuffer_add_reference(out, html, len, NULL, NULL);
    evhttp_send_reply(req, 200, "OK", out);
    if (out)
        evbuffer_free(out);
}

/* ---- Admin API (its own key: admin.key) ---- */

static bool admin_authorized(struct sw_front *f, struct evhttp_request *req)
{
    if (!f->cfg->admin_key) {
        sw_reply_error(req, 404, "invalid_request_error", "admin_disabled", NULL,
                       "The admin API is disabled: set admin.key in the configuration.");
        return false;
    }
    const char *auth = header(req, "Authorization");
    static const char bearer[] = "Bearer ";
    if (!auth || strncasecmp(auth, bearer, sizeof bearer - 1) != 0 ||
        !sw_config_secret_equal(f->cfg->admin_key, auth + sizeof bearer - 1)) {
        sw_reply_error(req, 401, "invalid_request_error", "invalid_admin_key", NULL,
                       "The admin API needs 'Authorization: Bearer ADMIN_KEY'.");
        sw_warn("admin: rejected a call without the admin key");
        return false;
    }
    return true;
}

static void reply_json_value(struct evhttp_request *req, int status, json_t *v)
{
    char *s = v ? json_dumps(v, JSON_COMPACT) : NULL;
    if (s)
        sw_reply_json(req, status, s, strlen(s));
    else
        sw_reply_error(req, 500, "server_error", NULL, NULL, "Out of memory.");
    free(s);
    json_decref(v);
}

static const char *health_name(enum sw_health h)
{
    static const char *const names[] = {"up", "degraded", "cold", "warming", "down"};
    return (unsigned)h < sizeof names / sizeof names[0] ? names[h] : "unknown";
}

static const char *breaker_name(enum sw_breaker_state b)
{
    static const char *const names[] = {"closed", "open", "half_open"};
    return (unsigned)b < sizeof names / sizeof names[0] ? names[b] : "unknown";
}

/* GET /admin/state: what the router sees right now, per backend. */
static void handle_admin_state(struct sw_front *f, struct evhttp_request *req)
{
    struct sw_live *l = f->live;
    int64_t now = sw_now_ms();
    json_t *backends = json_array();
    for (size_t i = 0; i < l->n; i++) {
        struct sw_route_backend_view v = backend_view(l, i, now);
        json_array_append_new(
            backends,
            json_pack("{s:s, s:s, s:s, s:s, s:I, s:I, s:I, s:f, s:f, s:f, s:f, s:f, s:f, s:f}",
                      "name", v.name, "tier", sw_tier_name(v.tier), "health",
                      health_name(v.health), "breaker", breaker_name(v.breaker), "slots",
                      (json_int_t)v.slots, "in_flight", (json_int_t)v.in_flight, "queued",
                      (json_int_t)v.queued, "est_ttft_ms", sw_route_est_ttft_ms(&v, 0),
                      "prefill_ms_per_token", v.prefill_ms_per_token, "decode_tps",
                      v.decode_tps, "avg_output_tokens", v.avg_output_tokens, "ttft_avg_ms",
                      v.ttft_avg_ms, "rpm_available", v.rpm_available, "tpm_available",
                      v.tpm_available));
    }
    static const char *const outcomes[] = {"kept_local", "masked_cloud", "blocked"};
    json_t *pii = json_object();
    for (int o = 0; o < 3; o++) {
        json_t *types = json_object();
        for (int t = 0; t < sw_pii_type_count(l->pii); t++)
            json_object_set_new(types, sw_pii_type_name(l->pii, t),
                                json_integer((json_int_t)l->g->pii_count[o][t]));
        json_object_set_new(pii, outcomes[o], types);
    }
    json_t *rejections = json_object();
    for (size_t i = 0; i < l->g->n_codes; i++)
        json_object_set_new(rejections, l->g->rejections[i].code,
                            json_integer((json_int_t)l->g->rejections[i].n));
    reply_json_value(req, 200,
                     json_pack("{s:b, s:s, s:f, s:f, s:o, s:o, s:o}", "emergency", l->g->emergency,
                               "emergency_reason", l->g->emergency_reason, "spend_usd",
                               sw_live_spend_usd(l, now), "spend_cap_usd",
                               sw_live_spend_cap_usd(l), "backends", backends,
                               "rejections", rejections, "pii", pii));
}

/* Parses the admin call's JSON body; answers 400 and returns NULL if it is not an object. */
static json_t *admin_body(struct evhttp_request *req)
{
    struct evbuffer *in = evhttp_request_get_input_buffer(req);
    size_t len = evbuffer_get_length(in);
    json_error_t jerr;
    json_t *body = json_loadb(len ? (const char *)evbuffer_pullup(in, -1) : "", len, 0, &jerr);
    if (!json_is_object(body)) {
        json_decref(body);
        sw_reply_error(req, 400, "invalid_request_error", "invalid_json", NULL,
                       "Expected a JSON object: %s.", jerr.text);
        return NULL;
    }
    return body;
}

/* POST /admin/emergency {"declared": true|false, "reason": "..."}: seed 1's
 * "explicit business emergency" that lets sensitive requests reach the cloud,
 * masked, when the local tier has failed. Audited in the log. */
static void handle_admin_emergency(struct sw_front *f, struct evhttp_request *req)
{
    json_t *body = admin_body(req);
    if (!body)
        return;
    json_t *declared = json_object_get(body, "declared");
    json_t *reason = json_object_get(body, "reason");
    if (!json_is_boolean(declared) || (reason && !json_is_string(reason))) {
        json_decref(body);
        sw_reply_error(req, 400, "invalid_request_error", "invalid_value", "declared",
                       "Expected {\"declared\": true|false, \"reason\": \"...\"}.");
        return;
    }
    struct sw_live *l = f->live;
    l->g->emergency = json_is_true(declared);
    if (l->g->emergency)
        l->g->emergencies_declared++;
    else
        l->g->emergencies_cleared++;
    sw_metrics_inc(f->obs->metrics, SW_M_EMERGENCY,
                   (const char *const[]){l->g->emergency ? "declared" : "cleared"}, 1);
    snprintf(l->g->emergency_reason, sizeof l->g->emergency_reason, "%s",
             reason ? json_string_value(reason) : "");
    sw_warn("admin: emergency %s (reason: %s)", l->g->emergency ? "DECLARED" : "cleared",
            l->g->emergency_reason[0] ? l->g->emergency_reason : "none given");
    json_decref(body);
    reply_json_value(req, 200, json_pack("{s:b, s:s}", "emergency", l->g->emergency, "reason",
                                         l->g->emergency_reason));
}

/* GET /admin/decisions?n=N (1..1000, default 20): the latest decision-log lines. */
static void handle_admin_decisions(struct sw_front *f, struct evhttp_request *req)
{
    long n = 20;
    const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
    const char *q = uri ? evhttp_uri_get_query(uri) : NULL;
    struct evkeyvalq params = {0};
    if (q && evhttp_parse_query_str(q, &params) == 0) {
        const char *v = evhttp_find_header(&params, "n");
        char *end;
        if (v) {
            errno = 0;
            n = strtol(v, &end, 10);
            if (errno || end == v || *end || n < 1 || n > 1000) {
                evhttp_clear_headers(&params);
                sw_reply_error(req, 400, "invalid_request_error", "invalid_value", "n",
                               "n must be an integer from 1 to 1000.");
                return;
            }
        }
    }
    evhttp_clear_headers(&params);
    struct sw_buf b;
    sw_buf_init(&b, 64 << 20);
    if (sw_declog_ring_render(f->obs->ring, (size_t)n, &b)) {
        sw_buf_free(&b);
        sw_reply_error(req, 500, "server_error", NULL, NULL, "Out of memory.");
        return;
    }
    sw_reply_json(req, 200, b.ptr, b.len);
    sw_buf_free(&b);
}

/* POST /admin/reload: the same as SIGHUP. */
static void handle_admin_reload(struct sw_front *f, struct evhttp_request *req)
{
    char msg[512] = "";
    if (!f->hooks.reload) {
        sw_reply_error(req, 503, "server_error", "reload_unavailable", NULL,
                       "Reload is not available.");
        return;
    }
    if (f->hooks.reload(f->hooks.ud, msg, sizeof msg) != SW_OK) {
        sw_reply_error(req, 422, "invalid_request_error", "invalid_config", NULL,
                       "The new configuration was refused; the old one keeps serving: %s", msg);
        return;
    }
    reply_json_value(req, 200, json_pack("{s:b, s:s}", "reloaded", 1, "config", f->cfg->path));
}

/* POST /admin/breakers/{backend}/reset: closes that backend's breaker now. */
static void handle_admin_breaker_reset(struct sw_front *f, struct evhttp_request *req,
                                       const char *name, size_t len)
{
    for (size_t i = 0; i < f->live->n; i++) {
        struct sw_live_backend *b = f->live->b[i];
        if (strlen(b->name) == len && !memcmp(b->name, name, len)) {
            sw_breaker_reset(&b->breaker);
            sw_warn("admin: breaker of %s reset", b->name);
            reply_json_value(req, 200, json_pack("{s:s, s:s}", "backend", b->name, "breaker",
                                                 "closed"));
            return;
        }
    }
    sw_reply_error(req, 404, "invalid_request_error", "unknown_backend", NULL,
                   "No backend named '%.*s'.", (int)len, name);
}

/* PUT /admin/thresholds: runtime changes without a restart (until the next
 * reload): ttft_budget_ms, spend_cap_usd, latency_degrade_ms,
 * latency_recover_ms. Every field is checked before any is applied. */
static void handle_admin_thresholds(struct sw_front *f, struct evhttp_request *req)
{
    json_t *body = admin_body(req);
    if (!body)
        return;
    struct sw_live_shared *g = f->live->g;
    json_t *ttft = json_object_get(body, "ttft_budget_ms");
    json_t *cap = json_object_get(body, "spend_cap_usd");
    json_t *deg = json_object_get(body, "latency_degrade_ms");
    json_t *rec = json_object_get(body, "latency_recover_ms");
    const char *bad = NULL;
    if (ttft && (!json_is_integer(ttft) || json_integer_value(ttft) < 1 ||
                 json_integer_value(ttft) > 600000))
        bad = "ttft_budget_ms: an integer 1..600000";
    else if (cap && (!json_is_number(cap) || json_number_value(cap) < 0))
        bad = "spend_cap_usd: a number >= 0 (0: no cap)";
    else if ((deg && (!json_is_number(deg) || json_number_value(deg) <= 0)) ||
             (rec && (!json_is_number(rec) || json_number_value(rec) <= 0)))
        bad = "latency_degrade_ms / latency_recover_ms: numbers > 0";
    else if (f->live->n && (deg || rec) &&
             (rec ? json_number_value(rec) : f->live->b[0]->latwin.recover_ms) >=
                 (deg ? json_number_value(deg) : f->live->b[0]->latwin.degrade_ms))
        bad = "latency_recover_ms must stay below latency_degrade_ms (the hysteresis)";
    if (bad) {
        json_decref(body);
        sw_reply_error(req, 400, "invalid_request_error", "invalid_value", NULL, "%s", bad);
        return;
    }
    if (ttft)
        g->ttft_budget_ms = (long)json_integer_value(ttft);
    if (cap)
        g->spend_cap_usd = json_number_value(cap);
    for (size_t i = 0; i < f->live->n; i++) {
        if (deg)
            f->live->b[i]->latwin.degrade_ms = json_number_value(deg);
        if (rec)
            f->live->b[i]->latwin.recover_ms = json_number_value(rec);
    }
    json_decref(body);
    sw_warn("admin: thresholds changed (ttft_budget_ms %ld, spend_cap_usd %.4f)",
            g->ttft_budget_ms, g->spend_cap_usd);
    handle_admin_state(f, req);
}

static void on_request(struct evhttp_request *req, void *arg)
{
    struct sw_front *f = arg;
    const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
    const char *path = uri ? evhttp_uri_get_path(uri) : NULL;
    enum evhttp_cmd_type method = evhttp_request_get_command(req);
    if (!path)
        path = "";

    if (f->draining) {
        evhttp_add_header(evhttp_request_get_output_headers(req), "Connection", "close");
        sw_reply_error(req, 503, "server_error", "shutting_down", NULL,
                       "Spillway is shutting down; retry on another instance.");
        return;
    }

    struct route {
        const char *path;
        enum evhttp_cmd_type method;
        void (*fn)(struct sw_front *, struct evhttp_request *);
    };
    static const struct route routes[] = {
        {"/v1/chat/completions", EVHTTP_REQ_POST, handle_chat},
        {"/v1/models", EVHTTP_REQ_GET, handle_models},
        {"/healthz", EVHTTP_REQ_GET, handle_healthz},
        {"/admin/state", EVHTTP_REQ_GET, handle_admin_state},
        {"/admin/emergency", EVHTTP_REQ_POST, handle_admin_emergency},
        {"/admin/reload", EVHTTP_REQ_POST, handle_admin_reload},
        {"/admin/decisions", EVHTTP_REQ_GET, handle_admin_decisions},
        {"/metrics", EVHTTP_REQ_GET, handle_metrics},
        {"/dashboard", EVHTTP_REQ_GET, handle_dashboard},
        {"/admin/thresholds", EVHTTP_REQ_PUT, handle_admin_thresholds},
    };
    static const char breakers[] = "/admin/breakers/", reset[] = "/reset";
    size_t plen = strlen(path);
    if (!strncmp(path, breakers, sizeof breakers - 1) && plen > sizeof breakers + sizeof reset - 2 &&
        !strcmp(path + plen - (sizeof reset - 1), reset)) {
        if (method != EVHTTP_REQ_POST)
            sw_reply_error(req, 405, "invalid_request_error", "method_not_allowed", NULL,
                           "Use POST.");
        else if (admin_authorized(f, req))
            handle_admin_breaker_reset(f, req, path + sizeof breakers - 1,
                                       plen - (sizeof breakers - 1) - (sizeof reset - 1));
        return;
    }
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++) {
        if (strcmp(path, routes[i].path) != 0)
            continue;
        if (method != routes[i].method) {
            sw_reply_error(req, 405, "invalid_request_error", "method_not_allowed", NULL,
                           "Method not allowed on %s; use %s.", routes[i].path,
                           routes[i].method == EVHTTP_REQ_POST ? "POST" : "GET");
            return;
        }
        if (routes[i].fn == handle_models) {
            bool denied;
            authenticate(f, req, &denied);
            if (denied)
                return;
        }
        if (!strncmp(path, "/admin/", 7) && !admin_authorized(f, req))
            return;
        routes[i].fn(f, req);
        return;
    }
    sw_reply_error(req, 404, "invalid_request_error", "unknown_url", NULL,
                   "Unknown URL: %s. Spillway serves POST /v1/chat/completions, "
                   "GET /v1/models and GET /healthz.", path);
}

/* ---- Setup ---- */

/* The limits of f->cfg onto the HTTP server (new connections get them). */
static void apply_limits(struct sw_front *f)
{
    const struct sw_config_limits *lim = &f->cfg->limits;
    f->client_tv.tv_sec = lim->client_timeout_ms / 1000;
    f->client_tv.tv_usec = (lim->client_timeout_ms % 1000) * 1000;
    /* Bodies up to twice the limit are read and refused with an OpenAI-shaped
     * 413 that names the limit; beyond that libevent cuts the connection with
     * its own plain 413 (it has no hook for the body of that answer). */
    long body_cap = lim->max_body_bytes;
    evhttp_set_max_body_size(f->http, body_cap > (1L << 30) ? body_cap : body_cap * 2);
    evhttp_set_max_headers_size(f->http, lim->max_header_bytes);
    evhttp_set_timeout_tv(f->http, &f->client_tv);
}

void sw_front_swap(struct sw_front *f, struct sw_config *cfg, struct sw_live *live)
{
    if (strcmp(cfg->listen_host, f->cfg->listen_host) || cfg->listen_port != f->cfg->listen_port)
        sw_warn("reload: listen changed to %s:%d; that takes a restart (still on %s:%d)",
                cfg->listen_host, cfg->listen_port, f->cfg->listen_host, f->cfg->listen_port);
    struct sw_config *old_cfg = f->cfg;
    struct sw_live *old_live = f->live;
    f->cfg = sw_config_ref(cfg);
    f->live = sw_live_ref(live);
    sw_live_unref(old_live);
    sw_config_unref(old_cfg);
    apply_limits(f);
    if (!f->accepting && !f->draining && f->connections < f->cfg->limits.max_connections) {
        evconnlistener_enable(f->listener);
        f->accepting = true;
    }
}

void sw_front_set_hooks(struct sw_front *f, const struct sw_front_hooks *hooks)
{
    f->hooks = *hooks;
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
    f->accepting = true;
    f->started_s = sw_wall_s();
    f->drain_check = evtimer_new(base, on_drain_check, f);
    f->http = evhttp_new(base);
    if (!f->http || !f->drain_check)
        goto fail;
    apply_limits(f);
    evhttp_set_allowed_methods(f->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_HEAD |
                                            EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE |
                                            EVHTTP_REQ_OPTIONS);
    evhttp_set_default_content_type(f->http, "application/json");
    evhttp_set_gencb(f->http, on_request, f);
    evhttp_set_bevcb(f->http, on_new_connection, f);

    f->bound = evhttp_bind_socket_with_handle(f->http, cfg->listen_host,
                                              (ev_uint16_t)cfg->listen_port);
    if (!f->bound) {
        sw_error("cannot listen on %s:%d: %s", cfg->listen_host, cfg->listen_port,
                 strerror(errno));
        goto fail;
    }
    f->listener = evhttp_bound_socket_get_listener(f->bound);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    int port = cfg->listen_port;
    if (getsockname(evhttp_bound_socket_get_fd(f->bound), (struct sockaddr *)&ss, &sl) == 0)
        port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
    fprintf(stderr, "spillway: listening on %s:%d\n", cfg->listen_host, port);
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
    if (f->accepting) {
        evconnlistener_disable(f->listener);
        f->accepting = false;
    }
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
    f->draining = true; /* connections freed below must not re-enable the listener */
    if (f->http)
        evhttp_free(f->http);
    for (struct conn *c = f->conns; c; c = c->next)
        c->f = NULL;
    if (f->drain_check)
        event_free(f->drain_check);
    sw_live_unref(f->live);
    sw_config_unref(f->cfg);
    free(f);
}
