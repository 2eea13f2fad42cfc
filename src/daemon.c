#include "daemon.h"

#include <curl/curl.h>
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/err.h"
#include "common/jmemo.h"
#include "common/log.h"
#include "common/notify.h"
#include "config/config.h"
#include "front/front.h"
#include "obs/declog.h"
#include "obs/metrics.h"
#include "pii/pii.h"
#include "pii/cache.h"
#include "state/live.h"
#include "state/respredis.h"
#include "state/rstate.h"
#include "state/tenant.h"
#include "state/vkeys.h"
#include "upstream/curlev.h"
#include "upstream/dialect.h"
#include "upstream/health.h"
#include "upstream/otlp.h"
#include "upstream/startcheck.h"
#include "upstream/token.h"

/* Raises the process's soft open-files limit towards the descriptors a
 * configuration may hold at once (two per connection, the client's and the
 * upstream's, and some for the listener, logs, Redis and libcurl), as far as
 * the hard limit allows: a server started with the usual soft 1024 would
 * refuse connections at about 500 streams. Past the hard limit it is a
 * warning. Returns how many the process may now hold, at most that many. */
static long raise_nofile(const struct sw_config *cfg)
{
    long want = 2 * cfg->limits.max_connections + 64;
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY ||
        (rlim_t)want <= rl.rlim_cur)
        return want;
    rlim_t to = rl.rlim_max != RLIM_INFINITY && rl.rlim_max < (rlim_t)want ? rl.rlim_max : (rlim_t)want;
    if (to > rl.rlim_cur && setrlimit(RLIMIT_NOFILE, &(struct rlimit){to, rl.rlim_max}) == 0)
        rl.rlim_cur = to;
    if ((rlim_t)want > rl.rlim_cur) {
        sw_warn("limits.max_connections %ld needs about %ld open files; the process may open "
                "%llu (raise its limit: ulimit -n, systemd's LimitNOFILE)",
                cfg->limits.max_connections, want, (unsigned long long)rl.rlim_cur);
        want = (long)rl.rlim_cur;
    }
    return want;
}

/* Grows the descriptor table to hold raise_nofile's descriptors now, not as they
 * are opened. The kernel doubles the table when a descriptor needs it, and
 * in a process with threads (the scan workers, libcurl's resolver) each
 * doubling first waits for an RCU grace period (expand_fdtable), about 15 ms
 * on a VM, with the loop blocked inside the accept or connect that needed
 * it: a burst of new streams paid it at 256, 512, 1024, ... descriptors.
 * The table never shrinks: one descriptor duplicated to the top and closed
 * again grows it for good (a reload that raises the limit grows it then). */
static void presize_fds(const struct sw_config *cfg)
{
    long top = raise_nofile(cfg) - 1;
    int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
    int fd = null < 0 || top <= null ? -1 : fcntl(null, F_DUPFD_CLOEXEC, (int)top);
    if (fd >= 0)
        close(fd);
    if (null >= 0)
        close(null);
}

/* The PII engine of a config: the built-in types plus pii.custom. NULL (and
 * the reason printed) when a custom type does not compile. */
static struct sw_pii_engine *build_pii(const struct sw_config *cfg, const char *path)
{
    struct sw_pii_custom custom[SW_PII_MAX_CUSTOM];
    size_t n = cfg->pii.n_custom;
    if (n > SW_PII_MAX_CUSTOM) {
        fprintf(stderr, "%s: pii.custom: %zu types; at most %d\n", path, n, SW_PII_MAX_CUSTOM);
        return NULL;
    }
    for (size_t i = 0; i < n; i++)
        custom[i] = (struct sw_pii_custom){cfg->pii.custom[i].name, cfg->pii.custom[i].regex,
                                           cfg->pii.custom[i].validator};
    struct sw_pii_engine *e = NULL;
    char err[256] = "";
    if (sw_pii_engine_new(custom, n, &e, err, sizeof err)) {
        fprintf(stderr, "%s: pii.custom: %s\n", path, err[0] ? err : "out of memory");
        return NULL;
    }
    if (cfg->pii.phone_regions_set) {
        const char *codes[SW_PII_MAX_PHONE_REGIONS];
        for (size_t i = 0; i < cfg->pii.n_phone_regions; i++)
            codes[i] = cfg->pii.phone_regions[i];
        if (sw_pii_engine_set_phone_regions(e, codes, cfg->pii.n_phone_regions, err, sizeof err)) {
            fprintf(stderr, "%s: %s\n", path, err);
            sw_pii_engine_free(e);
            return NULL;
        }
    }
    return e;
}

/* A backend at a provider's public API host without api_key: that API
 * refuses every call. The usual variable for the key, else NULL. */
static const char *provider_key_env(const struct sw_config_backend *b)
{
    static const struct { const char *host, *env; } providers[] = {
        {"api.openai.com", "OPENAI_API_KEY"},
        {"api.anthropic.com", "ANTHROPIC_API_KEY"},
        {"api.groq.com", "GROQ_API_KEY"},
        {"api.mistral.ai", "MISTRAL_API_KEY"},
        {"api.deepseek.com", "DEEPSEEK_API_KEY"},
        {"api.together.xyz", "TOGETHER_API_KEY"},
        {"openrouter.ai", "OPENROUTER_API_KEY"},
    };
    if (b->api_key)
        return NULL;
    const char *host = strstr(b->url, "://");
    if (!host)
        return NULL;
    host += 3;
    size_t len = strcspn(host, ":/");
    for (size_t k = 0; k < sizeof providers / sizeof *providers; k++)
        if (strlen(providers[k].host) == len && !strncmp(host, providers[k].host, len))
            return providers[k].env;
    return NULL;
}

/* Loads and validates the config and builds its PII engine (handed to *pii,
 * or freed when pii is NULL); prints every error. NULL when invalid. */
static struct sw_config *load_config(const char *path, struct sw_pii_engine **pii)
{
    struct sw_config *cfg = NULL;
    struct sw_config_errors errs = {0};
    int err = sw_config_load_file(path, &cfg, &errs);
    for (size_t i = 0; i < errs.n; i++)
        fprintf(stderr, "%s\n", errs.msgs[i]);
    sw_config_errors_free(&errs);
    if (err)
        return NULL;
    int bad = 0;
    for (size_t i = 0; i < cfg->n_backends; i++) {
        if (cfg->backends[i].url_v1_stripped)
            fprintf(stderr, "%s: notice: backends[%zu].url (%s): read as \"%s\"; the /v1 is dropped "
                    "because Spillway appends the API's path (/v1/chat/completions, /v1/messages) itself\n",
                    path, i, cfg->backends[i].name, cfg->backends[i].url);
        if (cfg->backends[i].url_is_base && cfg->backends[i].dialect != SW_DIALECT_AZURE)
            fprintf(stderr, "%s: notice: backends[%zu].url (%s): requests go to %s/%s, as to an "
                    "SDK's base_url (a url with a path is the API's base; end it in /v1 for "
                    "%s/v1/...)\n", path, i, cfg->backends[i].name, cfg->backends[i].url,
                    sw_upstream_dialect(cfg->backends[i].dialect)->chat_path,
                    cfg->backends[i].url);
        const char *env = provider_key_env(&cfg->backends[i]);
        if (env)
            fprintf(stderr, "%s: notice: backends[%zu] (%s): no api_key, so the provider will "
                    "answer 401; add api_key: \"${%s}\" and set %s in the environment\n",
                    path, i, cfg->backends[i].name, env, env);
    }
    struct sw_pii_engine *engine = bad ? NULL : build_pii(cfg, path);
    if (!engine) {
        sw_config_unref(cfg);
        return NULL;
    }
    if (pii)
        *pii = engine;
    else
        sw_pii_engine_free(engine);
    return cfg;
}

struct daemon {
    struct event_base *base;
    struct sw_curlev *cev;
    const char *config_path;
    struct sw_config *cfg;          /* the snapshot new requests get */
    struct sw_live_shared *shared;  /* survives reloads */
    struct sw_pii_cache *pii_cache; /* scan verdicts; survives reloads, cleared by each */
    struct sw_live *live;
    struct sw_rstate *rstate;       /* state.redis; NULL: in memory */
    struct sw_healthcheck *hc;
    struct sw_startcheck *startcheck;
    struct sw_front *front;
    struct sw_obs_sinks obs;
    struct event *drain_timer, *watch_timer;
    struct event *sigterm, *sigint, *sighup;
    struct event *declog_flush;     /* writes the decision log's batch, once per loop turn */
    struct stat seen;               /* the config file as last loaded */
    long drain_timeout_ms;
    int signals;
};

static void on_drained(void *ud)
{
    struct daemon *d = ud;
    sw_info("drained; exiting");
    event_base_loopbreak(d->base);
}

static void on_drain_timeout(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct daemon *d = arg;
    sw_warn("drain timeout: %ld request(s) still in flight are cut", sw_front_in_flight(d->front));
    event_base_loopbreak(d->base);
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
    (void)what;
    struct daemon *d = arg;
    if (++d->signals > 1) {
        sw_warn("second signal: exiting now");
        event_base_loopbreak(d->base);
        return;
    }
    sw_info("%s: draining", sig == SIGTERM ? "SIGTERM" : "SIGINT");
    sw_notify("STOPPING=1");
    struct timeval tv = {d->drain_timeout_ms / 1000, (d->drain_timeout_ms % 1000) * 1000};
    evtimer_add(d->drain_timer, &tv);
    sw_front_drain(d->front, on_drained, d);
}

/* ---- Reload: build and validate a whole new snapshot, then swap ---- */

/* Loads the file again; on any error the running snapshot keeps serving.
 * Requests in flight finish on the snapshot they started with (they hold
 * references); backend state (breakers, queues, learned rates) carries over
 * by name. */
static int do_reload(struct daemon *d, char *msg, size_t cap);
static bool open_traces(struct daemon *d, const struct sw_config *cfg);

static int reload(void *ud, char *msg, size_t cap)
{
    struct daemon *d = ud;
    /* MONOTONIC_USEC: systemd (253+) wants the time the reload began. */
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    char reloading[80];
    snprintf(reloading, sizeof reloading, "RELOADING=1\nMONOTONIC_USEC=%lld",
             (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000);
    sw_notify(reloading);
    int err = do_reload(d, msg, cap);
    sw_notify(err ? "READY=1\nSTATUS=reload refused; the old configuration keeps serving"
                  : "READY=1\nSTATUS=serving");
    return err;
}

/* Whether the access log's file or format differs between two snapshots. */
static bool access_log_changed(const struct sw_config *a, const struct sw_config *b)
{
    const char *pa = a->access_log.path, *pb = b->access_log.path;
    if (!pa || !pb)
        return pa != pb;
    return strcmp(pa, pb) != 0 || a->access_log.format != b->access_log.format;
}

static void schedule_declog_flush(void *arg);

static int do_reload(struct daemon *d, char *msg, size_t cap)
{
    struct sw_pii_engine *pii = NULL;
    stat(d->config_path, &d->seen); /* a refused file is not retried until it changes */
    struct sw_config *cfg = load_config(d->config_path, &pii);
    if (pii)
        sw_pii_engine_set_cache(pii, d->pii_cache);
    struct sw_live *live = cfg ? sw_live_new(cfg, d->shared, d->live, pii, sw_now_ms()) : NULL;
    struct sw_healthcheck *hc = live ? sw_healthcheck_new(d->base, d->cev, cfg, live) : NULL;
    if (!hc)
        snprintf(msg, cap, "%s is invalid (errors logged above)", d->config_path);
    /* A changed access_log opens before anything is swapped: a file that
     * cannot be opened refuses the reload, the old log keeps writing. */
    struct sw_access *access = d->obs.access;
    bool access_changed = hc && access_log_changed(d->cfg, cfg);
    if (access_changed && cfg->access_log.path &&
        !(access = sw_access_open(cfg->access_log.path,
                                  (enum sw_access_format)cfg->access_log.format,
                                  schedule_declog_flush, d))) {
        snprintf(msg, cap, "cannot open the access log %s: %s", cfg->access_log.path,
                 strerror(errno));
        sw_healthcheck_free(hc);
        hc = NULL;
    }
    if (!hc) {
        sw_error("reload refused: %s; the old configuration keeps serving", msg);
        sw_metrics_inc(d->obs.metrics, SW_M_CONFIG_RELOADS, (const char *const[]){"failed"}, 1);
        sw_live_unref(live);
        sw_config_unref(cfg);
        return SW_EINVAL;
    }
    if (access_changed) {
        sw_access_close(d->obs.access); /* writes what it still holds */
        d->obs.access = cfg->access_log.path ? access : NULL;
        sw_info("access log: %s", cfg->access_log.path ? cfg->access_log.path : "off");
    }
    sw_healthcheck_free(d->hc);
    d->hc = hc;
    sw_front_swap(d->front, cfg, live);
    /* the old engines' verdicts are never asked for again: the new engine
     * (and each of its pii.allow engines) has a generation of its own */
    sw_pii_cache_set_max(d->pii_cache, (size_t)cfg->limits.scan_cache_bytes);
    sw_pii_cache_clear(d->pii_cache);
    /* parsing does not depend on the configuration: only the bound changes */
    sw_jmemo_set_max((size_t)cfg->limits.parse_cache_bytes);
    sw_rstate_set_live(d->rstate, live);
    sw_live_unref(d->live);
    sw_config_unref(d->cfg);
    d->live = live;
    d->cfg = cfg;
    d->drain_timeout_ms = cfg->limits.drain_timeout_ms;
    presize_fds(cfg);
    open_traces(d, cfg);
    sw_metrics_inc(d->obs.metrics, SW_M_CONFIG_RELOADS, (const char *const[]){"ok"}, 1);
    sw_info("reloaded %s: %zu model(s) on %zu backend(s)", d->config_path, cfg->n_models,
            cfg->n_backends);
    /* A reloaded file may name new backends or new URLs: check them as at start. */
    sw_startcheck_free(d->startcheck);
    d->startcheck = sw_startcheck_new(d->cev, live);
    return SW_OK;
}

static void on_declog_flush(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct daemon *d = arg;
    sw_declog_flush(d->obs.log);
    sw_access_flush(d->obs.access);
}

/* A decision-log line was buffered: written once the callbacks active in
 * this turn of the loop have run. */
static void schedule_declog_flush(void *arg)
{
    struct daemon *d = arg;
    event_active(d->declog_flush, EV_TIMEOUT, 0);
}

static void on_sighup(evutil_socket_t sig, short what, void *arg)
{
    (void)sig;
    (void)what;
    char msg[512];
    struct daemon *d = arg;
    sw_info("SIGHUP: reloading, reopening the decision and access logs");
    sw_declog_reopen(d->obs.log);
    sw_access_reopen(d->obs.access);
    reload(d, msg, sizeof msg);
}

/* Reloads when the file changes (modification time, size or inode: editors
 * often replace the file). */
static void on_watch(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct daemon *d = arg;
    struct stat st;
    if (stat(d->config_path, &st) != 0)
        return;
    if (st.st_mtim.tv_sec == d->seen.st_mtim.tv_sec &&
        st.st_mtim.tv_nsec == d->seen.st_mtim.tv_nsec && st.st_size == d->seen.st_size &&
        st.st_ino == d->seen.st_ino)
        return;
    char msg[512];
    sw_info("%s changed: reloading", d->config_path);
    reload(d, msg, sizeof msg);
}

int sw_daemon_check_config(const char *path)
{
    struct sw_config *cfg = load_config(path, NULL);
    if (!cfg)
        return 1;
    sw_config_unref(cfg);
    return 0;
}

/* The loop, the upstream pools and the live state (with the Redis store
 * when state.redis is set); the snapshot takes *pii. */
static bool open_state(struct daemon *d, struct sw_pii_engine **pii)
{
    struct sw_config *cfg = d->cfg;
    d->base = event_base_new();
    if (!d->base)
        return false;
    d->cev = sw_curlev_new(d->base, 256);
    if (!d->cev)
        return false;
    d->shared = sw_live_shared_new(cfg, sw_now_ms(), sw_wall_ms());
    if (!d->shared)
        return false;
    d->shared->tenant = sw_tenant_new();
    d->shared->vkeys = sw_vkeys_new();
    if (!d->shared->tenant || !d->shared->vkeys)
        return false;
    const struct sw_respstore_limits lim = sw_live_resp_limits(cfg);
    d->shared->resp = sw_respstore_open(d->base, cfg, &lim);
    if (!d->shared->resp)
        return false;
    d->live = sw_live_new(cfg, d->shared, NULL, *pii, sw_now_ms());
    *pii = NULL; /* the snapshot owns it */
    if (!d->live)
        return false;
    d->hc = sw_healthcheck_new(d->base, d->cev, cfg, d->live);
    if (!d->hc)
        return false;
    if (cfg->state.redis) {
        d->rstate = sw_rstate_new(d->base, cfg, d->shared);
        if (!d->rstate)
            return false;
        sw_rstate_set_live(d->rstate, d->live);
        sw_tenant_set_redis(d->shared->tenant, d->rstate, sw_rstate_prefix(d->rstate),
                            sw_rstate_resv_ttl_ms(d->rstate), sw_rstate_replica(d->rstate));
        sw_vkeys_set_redis(d->shared->vkeys, d->rstate, sw_rstate_prefix(d->rstate));
    }
    return true;
}

/* The metrics, the decision log (batched, flushed once per loop turn) and
 * its ring; every backend's latency series exist from the start. */
static bool open_obs(struct daemon *d)
{
    struct sw_config *cfg = d->cfg;
    d->obs.metrics = sw_metrics_new();
    d->obs.log = sw_declog_open(cfg->decision_log ? cfg->decision_log : "-");
    d->obs.ring = sw_declog_ring_new(1000);
    sw_spill_init(&d->obs.spill);
    d->declog_flush = event_new(d->base, -1, 0, on_declog_flush, d);
    if (d->declog_flush && d->obs.log)
        sw_declog_batch(d->obs.log, schedule_declog_flush, d);
    if (!d->obs.metrics || !d->obs.log || !d->obs.ring || !d->declog_flush) {
        sw_error("cannot open the decision log %s or allocate the metrics",
                 cfg->decision_log ? cfg->decision_log : "-");
        return false;
    }
    if (cfg->access_log.path) {
        d->obs.access = sw_access_open(cfg->access_log.path,
                                       (enum sw_access_format)cfg->access_log.format,
                                       schedule_declog_flush, d);
        if (!d->obs.access) {
            sw_error("cannot open the access log %s: %s", cfg->access_log.path, strerror(errno));
            return false;
        }
    }
    for (size_t i = 0; i < cfg->n_backends; i++) {
        const char *const lbl[] = {cfg->backends[i].name};
        sw_metrics_touch(d->obs.metrics, SW_M_TTFT, lbl);
        sw_metrics_touch(d->obs.metrics, SW_M_DURATION, lbl);
    }
    return true;
}

/* The trace exporter when telemetry.otlp is set (upstream/otlp.h): its
 * service.instance.id is a random UUID of this process; on a shared Redis
 * the replica's id goes with it. On reload the exporter takes the new
 * settings (queue_max at the next start), or stops when the key is gone. */
static bool open_traces(struct daemon *d, const struct sw_config *cfg)
{
    if (!cfg->otlp.endpoint) {
        sw_otlp_free(d->obs.otlp);
        d->obs.otlp = NULL;
        return true;
    }
    if (d->obs.otlp) {
        if (sw_otlp_configure(d->obs.otlp, &cfg->otlp)) {
            sw_error("traces: out of memory applying telemetry.otlp");
            return false;
        }
        return true;
    }
    uint8_t u[16];
    char id[40];
    for (size_t got = 0; got < sizeof u;) {
        ssize_t r = getrandom(u + got, sizeof u - got, 0);
        if (r > 0)
            got += (size_t)r;
    }
    u[6] = (uint8_t)((u[6] & 0x0f) | 0x40); /* UUID version 4, RFC 9562 variant */
    u[8] = (uint8_t)((u[8] & 0x3f) | 0x80);
    snprintf(id, sizeof id, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
             u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12],
             u[13], u[14], u[15]);
    d->obs.otlp = sw_otlp_new(d->base, d->cev, &cfg->otlp, id,
                              d->rstate ? sw_rstate_replica(d->rstate) : NULL);
    if (!d->obs.otlp) {
        sw_error("traces: cannot start the OTLP exporter (out of memory)");
        return false;
    }
    sw_info("traces: exporting to %s over OTLP/HTTP (%s), sample ratio %g", cfg->otlp.endpoint,
            cfg->otlp.protocol == SW_OTLP_HTTP_PROTOBUF ? "http/protobuf" : "http/json",
            cfg->otlp.sample_ratio);
    return true;
}

/* SIGTERM/SIGINT (drain), SIGHUP (reload), the drain timer and the config
 * file watch (once a second). */
static bool arm_events(struct daemon *d)
{
    d->sigterm = evsignal_new(d->base, SIGTERM, on_signal, d);
    d->sigint = evsignal_new(d->base, SIGINT, on_signal, d);
    d->sighup = evsignal_new(d->base, SIGHUP, on_sighup, d);
    d->drain_timer = evtimer_new(d->base, on_drain_timeout, d);
    d->watch_timer = event_new(d->base, -1, EV_PERSIST, on_watch, d);
    if (!d->sigterm || !d->sigint || !d->sighup || !d->drain_timer || !d->watch_timer)
        return false;
    evsignal_add(d->sigterm, NULL);
    evsignal_add(d->sigint, NULL);
    evsignal_add(d->sighup, NULL);
    struct timeval watch_tv = {1, 0};
    event_add(d->watch_timer, &watch_tv);
    return true;
}

/* Frees what the daemon opened, whatever part of it was opened. */
static void close_daemon(struct daemon *d)
{
    struct event *evs[] = {d->drain_timer, d->watch_timer, d->sigterm, d->sigint, d->sighup};
    for (size_t i = 0; i < sizeof evs / sizeof evs[0]; i++)
        if (evs[i])
            event_free(evs[i]);
    sw_startcheck_free(d->startcheck);
    sw_front_free(d->front);
    sw_healthcheck_free(d->hc);
    if (d->shared) {
        sw_tenant_set_redis(d->shared->tenant, NULL, NULL, 0, NULL);
        sw_vkeys_set_redis(d->shared->vkeys, NULL, NULL);
    }
    sw_rstate_free(d->rstate);
    sw_live_unref(d->live);
    if (d->shared) {
        sw_tenant_free(d->shared->tenant);
        sw_vkeys_free(d->shared->vkeys);
    }
    sw_live_shared_free(d->shared);
    sw_metrics_free(d->obs.metrics);
    sw_declog_close(d->obs.log); /* writes what is still batched */
    sw_access_close(d->obs.access);
    sw_otlp_free(d->obs.otlp);
    d->obs.otlp = NULL;
    if (d->declog_flush)
        event_free(d->declog_flush);
    sw_declog_ring_free(d->obs.ring);
}

int sw_daemon_run(const char *config_path)
{
    struct sw_pii_engine *pii = NULL;
    struct sw_config *cfg = load_config(config_path, &pii);
    if (!cfg)
        return 1;

    signal(SIGPIPE, SIG_IGN);
    presize_fds(cfg); /* before any thread: growing it then waits for no one */
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        fprintf(stderr, "spillway: curl_global_init failed\n");
        return 1;
    }
    int rc = 1;
    struct daemon d = {.config_path = config_path, .cfg = cfg};
    stat(config_path, &d.seen);
    d.drain_timeout_ms = cfg->limits.drain_timeout_ms;
    d.pii_cache = sw_pii_cache_new((size_t)cfg->limits.scan_cache_bytes);
    if (!d.pii_cache) {
        fprintf(stderr, "spillway: out of memory\n");
        sw_pii_engine_free(pii);
        sw_config_unref(cfg);
        return 1;
    }
    sw_pii_engine_set_cache(pii, d.pii_cache);
    sw_jmemo_set_max((size_t)cfg->limits.parse_cache_bytes);
    if (!open_state(&d, &pii) || !open_obs(&d) || !open_traces(&d, cfg))
        goto out;
    d.front = sw_front_new(d.base, cfg, d.cev, d.live, &d.obs);
    if (!d.front)
        goto out;
    sw_front_set_hooks(d.front, &(struct sw_front_hooks){reload, &d});
    if (!arm_events(&d))
        goto out;

    sw_info("spillway %s serving %zu model(s) on %zu backend(s)", SW_VERSION, cfg->n_models,
            cfg->n_backends);
    d.startcheck = sw_startcheck_new(d.cev, d.live);
    /* Listening since sw_front_new: tell the service manager (Type=notify). */
    sw_notify("READY=1\nSTATUS=serving");
    event_base_dispatch(d.base);
    rc = 0;

out:
    close_daemon(&d);
    sw_pii_engine_free(pii);
    sw_pii_cache_free(d.pii_cache);
    sw_jmemo_set_max(0);
    sw_token_registry_free(); /* its transfers are the multi handle's */
    sw_curlev_free(d.cev);
    if (d.base) {
        /* A bufferevent freed while its deferred callbacks were queued (a
         * Redis connection given up at shutdown) is finalized by the loop:
         * one pass without waiting lets it go before the base does. */
        event_base_loop(d.base, EVLOOP_NONBLOCK);
        event_base_free(d.base);
    }
    curl_global_cleanup();
    sw_config_unref(d.cfg);
    return rc;
}
