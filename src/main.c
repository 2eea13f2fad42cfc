/* spillway: the command line. Parses the flags and hands the config to the
 * daemon (daemon.h), which loads, validates and serves it. */
#include <getopt.h>
#include <malloc.h>
#include <stdio.h>
#include <string.h>

#include "common/jalloc.h"
#include "common/log.h"
#include "daemon.h"
#include "plan/plan.h"

static void usage(FILE *out)
{
    fprintf(out,
            "Usage: spillway -c FILE [--log-level LEVEL]\n"
            "       spillway --check-config FILE\n"
            "       spillway plan -c FILE (--trace FILE | --synthetic SPEC) [--out DIR] (see plan --help)\n"
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
            "(up to limits.drain_timeout_ms); a second signal exits at once. SIGHUP reloads.\n"
            "Under systemd (NOTIFY_SOCKET set) it reports READY=1, RELOADING=1, STOPPING=1.\n");
}

/* The buffers of an agent's turn (its body, the text written from it, a
 * stored response: hundreds of KB each, every request) come from the heap
 * and go back to it. Left to itself glibc maps some of them afresh (its
 * threshold adapts to what was freed), and every page of a fresh mapping
 * faults on its first write: 13% of the CPU of a 350 KB Responses turn in
 * one measured run (bench/agent_proxy.sh under perf). A buffer up to 32 MiB
 * is the heap's; free memory beyond 64 MiB at the heap's top goes back to
 * the system. */
static void heap_policy(void)
{
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 64 << 20);
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
    sw_jalloc_install();        /* before the first jansson value */
    heap_policy();
    if (argc > 1 && !strcmp(argv[1], "plan"))
        return sw_plan_main(argc - 1, argv + 1);
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
        if (sw_daemon_check_config(check_path))
            return 1;
        printf("%s: ok\n", check_path);
        return 0;
    }
    if (!config_path) {
        fprintf(stderr, "spillway: no config given; use -c FILE (see --help)\n");
        return 2;
    }
    return sw_daemon_run(config_path);
}
