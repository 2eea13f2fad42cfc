/* build/llmsim: an inference-server simulator for tests, demos and
 * benchmarks. Flags in opts.c, HTTP in server.c, the model in model.c;
 * docs/llmsim.md is the user documentation. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include <event2/event.h>

#include "common/log.h"
#include "opts.h"
#include "server.h"

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
    (void)sig;
    (void)what;
    event_base_loopbreak(arg);
}

int main(int argc, char **argv)
{
    struct sw_llmsim_opts o;
    char err[256];
    switch (sw_llmsim_opts_parse(argc, argv, &o, err, sizeof err)) {
    case SW_LLMSIM_OPTS_HELP:
        fputs(sw_llmsim_opts_usage(), stdout);
        return 0;
    case SW_LLMSIM_OPTS_VERSION:
        printf("llmsim %s\n", SW_VERSION);
        return 0;
    case SW_LLMSIM_OPTS_ERROR:
        fprintf(stderr, "llmsim: %s\n", err);
        return 2;
    case SW_LLMSIM_OPTS_RUN:
        break;
    }
    signal(SIGPIPE, SIG_IGN);
    struct event_base *base = event_base_new();
    if (!base) {
        fprintf(stderr, "llmsim: cannot create the event loop\n");
        return 1;
    }
    struct sw_llmsim_server *srv = NULL;
    if (sw_llmsim_server_new(base, &o, &srv)) {
        event_base_free(base);
        return 1;
    }
    struct event *sigterm = evsignal_new(base, SIGTERM, on_signal, base);
    struct event *sigint = evsignal_new(base, SIGINT, on_signal, base);
    evsignal_add(sigterm, NULL);
    evsignal_add(sigint, NULL);
    printf("llmsim: listening on %s:%d\n", o.host, sw_llmsim_server_port(srv));
    fflush(stdout);
    event_base_dispatch(base);
    event_free(sigterm);
    event_free(sigint);
    sw_llmsim_server_free(srv);
    event_base_free(base);
    return 0;
}
