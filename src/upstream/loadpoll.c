#include "upstream/loadpoll.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/log.h"
#include "upstream/loadsig.h"

#define LOAD_BODY_MAX (1u << 20)    /* a /metrics page larger than this is refused */

struct poll {
    struct sw_loadpoll *lp;
    size_t i;                   /* backend index */
    enum sw_load_source source;
    const char *path;           /* "/metrics", "/slots" or "/api/ps" */
    CURL *easy;                 /* the GET in flight, or NULL */
    long own;                   /* Spillway's in-flight requests there when it was sent */
    struct sw_buf body;
    bool too_big;
    struct sw_cache_counters cache;     /* the server's prefix-cache counters last seen */
    struct event *timer;
};

struct sw_loadpoll {
    struct event_base *base;
    struct sw_curlev *cev;
    struct sw_config *cfg;
    struct sw_live *live;
    struct poll *polls;
    size_t n;
};

static size_t on_body(char *ptr, size_t size, size_t nmemb, void *ud)
{
    struct poll *pl = ud;
    size_t len = size * nmemb;
    if (sw_buf_append(&pl->body, ptr, len)) {
        pl->too_big = true;
        return 0;               /* aborts the transfer */
    }
    return len;
}

static void on_done(void *ud, CURLcode rc)
{
    struct poll *pl = ud;
    struct sw_loadpoll *lp = pl->lp;
    long status = 0;
    if (rc == CURLE_OK)
        curl_easy_getinfo(pl->easy, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(pl->easy);
    pl->easy = NULL;
    int64_t now = sw_now_ms();
    char err[160];
    if (rc != CURLE_OK) {
        snprintf(err, sizeof err, "GET %s: %s", pl->path,
                 pl->too_big ? "answer too large" : curl_easy_strerror(rc));
        sw_live_on_load(lp->live, pl->i, now, 0, 0, false, 0, err);
        return;
    }
    /* llama-server answers 501 on /metrics unless started with --metrics:
     * its /slots endpoint says which slots are processing instead. */
    if (pl->source == SW_LOAD_LLAMACPP && !strcmp(pl->path, "/metrics") &&
        (status == 404 || status == 501)) {
        sw_info("%s: GET /metrics answered %ld; reading its load from /slots",
                lp->cfg->backends[pl->i].name, status);
        pl->path = "/slots";
    }
    struct sw_load_sample s;
    if (sw_load_parse(pl->source, pl->path, (int)status, pl->body.ptr ? pl->body.ptr : "",
                      pl->body.len, &s, err, sizeof err)) {
        sw_live_on_load(lp->live, pl->i, now, 0, 0, false, 0, err);
        return;
    }
    sw_live_on_load(lp->live, pl->i, now, s.processing, s.waiting, s.saturated, pl->own, NULL);
    struct sw_prefill_report pr;
    if (!strcmp(pl->path, "/metrics") &&
        !sw_load_parse_prefill(pl->source, pl->body.ptr ? pl->body.ptr : "", pl->body.len, &pr))
        sw_live_on_prefill(lp->live, pl->i, &pr);
    struct sw_cache_report cr;
    double rate;
    if (!strcmp(pl->path, "/metrics") &&
        !sw_load_parse_cache(pl->source, pl->body.ptr ? pl->body.ptr : "", pl->body.len, &cr) &&
        sw_cache_counters_take(&pl->cache, &cr, &rate))
        sw_live_on_cache_rate(lp->live, pl->i, rate);
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct poll *pl = arg;
    struct sw_loadpoll *lp = pl->lp;
    const struct sw_config_backend *be = &lp->cfg->backends[pl->i];
    if (pl->easy)
        return;                 /* the previous poll is still out (it has its timeout) */
    sw_buf_reset(&pl->body);
    pl->too_big = false;
    long timeout = be->load.poll_ms < 100 ? 100 : be->load.poll_ms > 2000 ? 2000 : be->load.poll_ms;
    if (!(pl->easy = sw_curlev_easy(be, pl->path, timeout)))
        return;
    pl->own = lp->live->b[pl->i]->q.in_flight;
    curl_easy_setopt(pl->easy, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(pl->easy, CURLOPT_WRITEDATA, pl);
    if (sw_curlev_add(lp->cev, pl->easy, on_done, pl)) {
        curl_easy_cleanup(pl->easy);
        pl->easy = NULL;
    }
}

struct sw_loadpoll *sw_loadpoll_new(struct event_base *base, struct sw_curlev *cev,
                                    struct sw_config *cfg, struct sw_live *live)
{
    struct sw_loadpoll *lp = calloc(1, sizeof *lp);
    if (!lp)
        return NULL;
    lp->base = base;
    lp->cev = cev;
    lp->cfg = cfg;
    lp->live = live;
    lp->polls = calloc(cfg->n_backends ? cfg->n_backends : 1, sizeof *lp->polls);
    if (!lp->polls) {
        free(lp);
        return NULL;
    }
    for (size_t i = 0; i < cfg->n_backends; i++) {
        const struct sw_config_backend *be = &cfg->backends[i];
        if (be->tier != SW_TIER_LOCAL || be->load.source == SW_LOAD_NONE)
            continue;
        struct poll *pl = &lp->polls[lp->n];
        pl->lp = lp;
        pl->i = i;
        pl->source = (enum sw_load_source)be->load.source;
        pl->path = sw_load_path(pl->source);
        sw_buf_init(&pl->body, LOAD_BODY_MAX);
        pl->timer = event_new(base, -1, EV_PERSIST, on_tick, pl);
        if (!pl->timer) {
            sw_loadpoll_free(lp);
            return NULL;
        }
        lp->n++;
        struct timeval tv = {be->load.poll_ms / 1000, (be->load.poll_ms % 1000) * 1000};
        event_add(pl->timer, &tv);
        on_tick(-1, 0, pl);
    }
    return lp;
}

void sw_loadpoll_free(struct sw_loadpoll *lp)
{
    if (!lp)
        return;
    for (size_t k = 0; k < lp->n; k++) {
        struct poll *pl = &lp->polls[k];
        if (pl->easy) {
            sw_curlev_remove(lp->cev, pl->easy);
            curl_easy_cleanup(pl->easy);
        }
        if (pl->timer)
            event_free(pl->timer);
        sw_buf_free(&pl->body);
    }
    free(lp->polls);
    free(lp);
}
