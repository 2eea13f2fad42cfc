#include "upstream/health.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/err.h"
#include "common/log.h"
#include "upstream/dialect.h"
#include "upstream/loadpoll.h"
#include "upstream/prefillprobe.h"
#include "upstream/upstream.h"

/* Longest a warm-up may take (a big model loading from disk). */
#define WARMUP_TIMEOUT_MS 600000L

struct probe {
    struct sw_healthcheck *h;
    size_t i;                   /* backend index */
    CURL *easy;                 /* the health GET, set up once and reused by every poll */
    bool polling;               /* ... and in flight */
    int sock_errno;             /* why its socket could not be opened (0: it could) */
    int64_t sent_ms;
    bool checked;               /* a health check answered since start */
    struct sw_upstream warm;    /* the warm-up or latency-probe request */
    bool warming;               /* a ping is in flight */
    bool latency_probe;         /* ... and its time feeds the latency window */
    int64_t last_ping_ms;
};

struct sw_healthcheck {
    struct event_base *base;
    struct sw_curlev *cev;
    struct sw_config *cfg;
    struct sw_live *live;
    struct event *timer;
    struct probe *probes;
    size_t n;
    unsigned long not_asked;    /* checks the gateway's own limits kept from being sent */
    struct sw_loadpoll *load;   /* the load signals of the same snapshot */
    struct sw_prefill_probes *prefill;  /* the prefill warm-ups (upstream/prefillprobe.h) */
};

static size_t discard(char *ptr, size_t size, size_t nmemb, void *ud)
{
    (void)ptr;
    (void)ud;
    return size * nmemb;
}

static void on_check_done(void *ud, CURLcode rc)
{
    struct probe *pr = ud;
    long status = 0;
    if (rc == CURLE_OK)
        curl_easy_getinfo(pr->easy, CURLINFO_RESPONSE_CODE, &status);
    pr->polling = false;
    if (sw_curlev_local_limit(rc, pr->sock_errno)) {
        /* the gateway's own limit: the box was not asked, nothing is known */
        if (sw_log_doubling(&pr->h->not_asked))
            sw_warn("health check of %s not sent: %s (%lu time(s) so far)",
                    pr->h->cfg->backends[pr->i].name, strerror(pr->sock_errno),
                    pr->h->not_asked);
        return;
    }
    pr->checked = true;
    int64_t now = sw_now_ms();
    sw_live_on_health(pr->h->live, pr->i, now, (int)status, (double)(now - pr->sent_ms));
}

static size_t on_warm_data(void *ud, const char *bytes, size_t len)
{
    (void)ud;
    (void)bytes;
    return len;
}

static void on_warm_done(void *ud, int err)
{
    struct probe *pr = ud;
    int64_t now = sw_now_ms();
    long status = pr->warm.status;
    pr->warming = false;
    sw_upstream_cleanup(&pr->warm);
    if (pr->latency_probe) {
        if (!err && status == 200)
            sw_live_on_probe(pr->h->live, pr->i, now, (double)(now - pr->last_ping_ms));
        return;
    }
    sw_info("warm-up of %s finished: %s", pr->h->cfg->backends[pr->i].name,
            err ? sw_err_str(err) : "ok");
}

/* A one-token chat request: loads the model without costing much. */
static void send_ping(struct probe *pr, int64_t now, bool latency_probe)
{
    const struct sw_config_backend *be = &pr->h->cfg->backends[pr->i];
    struct sw_buf b;
    sw_buf_init(&b, 4096);
    /* in the backend's first dialect */
    const struct sw_upstream_dialect *d = sw_upstream_dialect(be->dialect);
    if (sw_buf_appendf(&b, d->ping_fmt, be->model)) {
        sw_buf_free(&b);
        return;
    }
    static const struct sw_upstream_cbs cbs = {on_warm_data, on_warm_done};
    struct sw_buf hdrs;
    sw_buf_init(&hdrs, 8192);
    if (d->headers(be, NULL, &hdrs)) {
        sw_buf_free(&hdrs);
        sw_buf_free(&b);
        return;
    }
    struct sw_buf path;
    sw_buf_init(&path, 4096);
    if (sw_upstream_path(be, be->dialect, d->chat_path, &path) ||
        (d->sign && d->sign(be, path.ptr, b.ptr, b.len, &hdrs))) {
        sw_buf_free(&path);
        sw_buf_free(&hdrs);
        sw_buf_free(&b);
        return;
    }
    /* Ownership of b.ptr passes to the upstream. */
    int err = sw_upstream_start(&pr->warm, pr->h->cev, be, path.ptr, hdrs.ptr, b.ptr, b.len,
                                WARMUP_TIMEOUT_MS, "sw-warmup", &cbs, pr);
    sw_buf_free(&hdrs);
    sw_buf_free(&path);
    if (err == SW_OK) {
        pr->warming = true;
        pr->latency_probe = latency_probe;
        pr->last_ping_ms = now;
    }
}

static CURL *health_get(struct sw_healthcheck *h, const struct sw_config_backend *be);

static void check(struct probe *pr, int64_t now)
{
    struct sw_healthcheck *h = pr->h;
    const struct sw_config_backend *be = &h->cfg->backends[pr->i];
    struct sw_live_backend *lb = h->live->b[pr->i];
    if (!pr->warming && (lb->health == SW_HEALTH_COLD ||
                         (be->keep_warm_ms && now - pr->last_ping_ms >= be->keep_warm_ms))) {
        if (lb->health == SW_HEALTH_COLD) {
            sw_info("%s is cold: warming it up in the background", be->name);
            sw_live_on_warmup(h->live, pr->i, now);
        }
        send_ping(pr, now, false);
    } else if (!pr->warming && lb->health == SW_HEALTH_UP && sw_latwin_degraded(&lb->latwin, now)) {
        /* Degraded endpoints get no traffic; a one-token request tells
         * whether their first-token latency came back down. */
        send_ping(pr, now, true);
    }
    if (pr->polling || !be->health_path)
        return;
    if (!pr->easy) {
        if (!(pr->easy = health_get(h, be)))
            return;
        sw_curlev_note_socket_errno(pr->easy, &pr->sock_errno);
    }
    pr->sent_ms = now;
    if (sw_curlev_add(h->cev, pr->easy, on_check_done, pr) == SW_OK)
        pr->polling = true;
}

/* The health GET of a backend; the options stay with the handle, so each
 * poll only adds it to the multi again (no new handle, no new options). It
 * waits the interval for an answer, but at least HEALTH_TIMEOUT_MIN_MS and
 * at most HEALTH_TIMEOUT_MAX_MS: a short interval says how soon to look
 * again, not that a box answering its health check in 150 ms is down (one
 * unanswered check marks it down and counts against its breaker). A refused
 * connection fails at once whatever the timeout; the next poll starts only
 * when this one is done. */
#define HEALTH_TIMEOUT_MIN_MS 1000L
#define HEALTH_TIMEOUT_MAX_MS 2000L

static CURL *health_get(struct sw_healthcheck *h, const struct sw_config_backend *be)
{
    long timeout = h->cfg->routing.health_interval_ms;
    timeout = timeout < HEALTH_TIMEOUT_MIN_MS ? HEALTH_TIMEOUT_MIN_MS
              : timeout > HEALTH_TIMEOUT_MAX_MS ? HEALTH_TIMEOUT_MAX_MS : timeout;
    CURL *easy = sw_curlev_easy(be, be->health_path, timeout);
    if (easy)
        curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, discard);
    return easy;
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct sw_healthcheck *h = arg;
    int64_t now = sw_now_ms();
    for (size_t k = 0; k < h->n; k++) {
        struct probe *pr = &h->probes[k];
        check(pr, now);
        sw_prefill_probes_tick(h->prefill, pr->i, now,
                               pr->checked || !h->cfg->backends[pr->i].health_path);
    }
}

struct sw_healthcheck *sw_healthcheck_new(struct event_base *base, struct sw_curlev *cev,
                                struct sw_config *cfg, struct sw_live *live)
{
    struct sw_healthcheck *h = calloc(1, sizeof *h);
    if (!h)
        return NULL;
    h->base = base;
    h->cev = cev;
    h->cfg = cfg;
    h->live = live;
    h->probes = calloc(cfg->n_backends ? cfg->n_backends : 1, sizeof *h->probes);
    h->timer = event_new(base, -1, EV_PERSIST, on_tick, h);
    h->load = sw_loadpoll_new(base, cev, cfg, live);
    h->prefill = sw_prefill_probes_new(cev, cfg, live);
    if (!h->probes || !h->timer || !h->load || !h->prefill) {
        sw_healthcheck_free(h);
        return NULL;
    }
    int64_t now = sw_now_ms();
    for (size_t i = 0; i < cfg->n_backends; i++) {
        if (cfg->backends[i].tier != SW_TIER_LOCAL)
            continue;
        struct probe *pr = &h->probes[h->n++];
        pr->h = h;
        pr->i = i;
        pr->last_ping_ms = now;
    }
    long ms = cfg->routing.health_interval_ms;
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    event_add(h->timer, &tv);
    on_tick(-1, 0, h);
    return h;
}

void sw_healthcheck_free(struct sw_healthcheck *h)
{
    if (!h)
        return;
    for (size_t k = 0; k < h->n; k++) {
        struct probe *pr = &h->probes[k];
        if (pr->polling)
            sw_curlev_remove(h->cev, pr->easy);
        if (pr->easy)
            curl_easy_cleanup(pr->easy);
        sw_upstream_cleanup(&pr->warm);
    }
    if (h->timer)
        event_free(h->timer);
    sw_loadpoll_free(h->load);
    sw_prefill_probes_free(h->prefill);
    free(h->probes);
    free(h);
}
