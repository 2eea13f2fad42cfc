/* spillway: the daemon. Parses flags, loads and validates the config, then
 * runs the front (HTTP server) and the upstream client on one libevent loop
 * until SIGTERM/SIGINT, which drain in-flight requests first. */
#include <curl/curl.h>
#include <event2/event.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "config/config.h"
#include "common/clock.h"
#include "front/front.h"
#include "state/live.h"
#include "upstream/curlev.h"
#include "upstream/health.h"

static void usage(FILE *out)
{
    fprintf(out,
            "Usage: spillway -c FILE [--log-level LEVEL]\n"
            "       spillway --check-config FILE\n"
            "       spillway --version | --help\n"
            "\n"
            "Spillway is an OpenAI-compatible LLM gateway that keeps the baseline on local\n"
            "inference servers and spills only cloud-eligible overflow to cloud APIs.\n"
            "\n"
            "  -c, --config FILE        run with this YAML config (docs/configuration.md)\n"
            "      --check-config FILE  validate FILE, print every error, exit 0 if valid, 1 if not\n"
            "      --log-level LEVEL    debug | info | warn | error (default info)\n"
            "  -V, --version            print the version\n"
            "  -h, --help               this text\n"
            "\n"
            "Signals: SIGTERM/SIGINT stop accepting and let in-flight requests finish\n"
            "(up to limits.drain_timeout_ms); a second signal exits at once.\n");
}

/* Loads and validates; prints every error. NULL when invalid. */
static struct sw_config *load_config(const char *path)
{
    struct sw_config *cfg = NULL;
    struct sw_config_errors errs = {0};
    int err = sw_config_load_file(path, &cfg, &errs);
    for (size_t i = 0; i < errs.n; i++)
        fprintf(stderr, "%s\n", errs.msgs[i]);
    sw_config_errors_free(&errs);
    if (err)
        return NULL;
    /* The Anthropic adapter is its own piece of work; refuse rather than
     * send an OpenAI body to an Anthropic endpoint. */
    int bad = 0;
    for (size_t i = 0; i < cfg->n_backends; i++) {
        if (cfg->backends[i].dialect != SW_DIALECT_OPENAI) {
            fprintf(stderr, "%s: backends[%zu].dialect: %s is not supported by this build yet; use openai\n",
                    path, i, sw_dialect_name(cfg->backends[i].dialect));
            bad = 1;
        }
    }
    if (bad) {
        sw_config_unref(cfg);
        return NULL;
    }
    return cfg;
}

struct daemon {
    struct event_base *base;
    struct sw_front *front;
    struct event *drain_timer;
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
    struct timeval tv = {d->drain_timeout_ms / 1000, (d->drain_timeout_ms % 1000) * 1000};
    evtimer_add(d->drain_timer, &tv);
    sw_front_drain(d->front, on_drained, d);
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"config", required_argument, NULL, 'c'},
        {"check-config", required_argument, NULL, 'k'},
        {"log-level", required_argument, NULL, 'l'},
        {"version", no_argument, NULL, 'V'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *config_path = NULL, *check_path = NULL;
    int c;
    while ((c = getopt_long(argc, argv, "c:Vh", opts, NULL)) != -1) {
        switch (c) {
        case 'c': config_path = optarg; break;
        case 'k': check_path = optarg; break;
        case 'l':
            if (!strcmp(optarg, "debug")) sw_log_set_level(SW_LOG_DEBUG);
            else if (!strcmp(optarg, "info")) sw_log_set_level(SW_LOG_INFO);
            else if (!strcmp(optarg, "warn")) sw_log_set_level(SW_LOG_WARN);
            else if (!strcmp(optarg, "error")) sw_log_set_level(SW_LOG_ERROR);
            else {
                fprintf(stderr, "spillway: --log-level: '%s' is not one of debug, info, warn, error\n", optarg);
                return 2;
            }
            break;
        case 'V': printf("spillway %s\n", SW_VERSION); return 0;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "spillway: unexpected argument '%s'\n", argv[optind]);
        usage(stderr);
        return 2;
    }
    if (check_path) {
        struct sw_config *cfg = load_config(check_path);
        if (!cfg)
            return 1;
        printf("%s: ok\n", check_path);
        sw_config_unref(cfg);
        return 0;
    }
    if (!config_path) {
        fprintf(stderr, "spillway: no config given; use -c FILE (see --help)\n");
        return 2;
    }
    struct sw_config *cfg = load_config(config_path);
    if (!cfg)
        return 1;

    signal(SIGPIPE, SIG_IGN);
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        fprintf(stderr, "spillway: curl_global_init failed\n");
        return 1;
    }
    int rc = 1;
    struct daemon d = {0};
    struct sw_curlev *cev = NULL;
    struct sw_live *live = NULL;
    struct sw_healthcheck *hc = NULL;
    struct event *sigterm = NULL, *sigint = NULL;
    d.drain_timeout_ms = cfg->limits.drain_timeout_ms;
    d.base = event_base_new();
    if (!d.base)
        goto out;
    cev = sw_curlev_new(d.base, 256);
    if (!cev)
        goto out;
    live = sw_live_new(cfg, sw_now_ms(), sw_wall_ms());
    if (!live)
        goto out;
    hc = sw_healthcheck_new(d.base, cev, cfg, live);
    if (!hc)
        goto out;
    d.front = sw_front_new(d.base, cfg, cev, live);
    if (!d.front)
        goto out;
    sigterm = evsignal_new(d.base, SIGTERM, on_signal, &d);
    sigint = evsignal_new(d.base, SIGINT, on_signal, &d);
    d.drain_timer = evtimer_new(d.base, on_drain_timeout, &d);
    if (!sigterm || !sigint || !d.drain_timer)
        goto out;
    evsignal_add(sigterm, NULL);
    evsignal_add(sigint, NULL);

    sw_info("spillway %s serving %zu model(s) on %zu backend(s)", SW_VERSION, cfg->n_models,
            cfg->n_backends);
    event_base_dispatch(d.base);
    rc = 0;

out:
    if (d.drain_timer)
        event_free(d.drain_timer);
    if (sigterm)
        event_free(sigterm);
    if (sigint)
        event_free(sigint);
    sw_front_free(d.front);
    sw_healthcheck_free(hc);
    sw_live_free(live);
    sw_curlev_free(cev);
    if (d.base)
        event_base_free(d.base);
    curl_global_cleanup();
    sw_config_unref(cfg);
    return rc;
}
