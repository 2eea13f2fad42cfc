/* The PII scan work of one turn of an agent's conversation: the engine (with
 * or without its verdict cache) first scans the previous turn's body, as the
 * gateway did one request earlier, then the turn's body in measured_scan(),
 * which bench/agent_instr.sh counts with callgrind --toggle-collect.
 *
 *   agent_scan CACHE_BYTES PREV.json TURN.json [chat|messages [REPEAT]]
 *
 * CACHE_BYTES 0: no cache. Prints the entities found and the cache's hits and
 * misses during the measured scan. With REPEAT, the whole (cache emptied,
 * previous turn scanned, turn scanned) is repeated and the thread's CPU time
 * of the turn's scan printed: its median over the repetitions, in µs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "pii/cache.h"
#include "pii/pii.h"

__attribute__((noinline)) static int measured_scan(const struct sw_pii_engine *e,
                                                   enum sw_pii_surface s, const json_t *b,
                                                   struct sw_pii_counts *c)
{
    return sw_pii_scan_body(e, s, b, c, NULL, 0);
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: agent_scan CACHE_BYTES PREV.json TURN.json [chat|messages]\n");
        return 2;
    }
    char *end;
    size_t cap = strtoull(argv[1], &end, 10);
    enum sw_pii_surface s = argc > 4 && !strcmp(argv[4], "messages") ? SW_PII_SURFACE_MESSAGES
                                                                      : SW_PII_SURFACE_CHAT;
    char err[256];
    struct sw_pii_engine *e = NULL;
    if (*end || sw_pii_engine_new(NULL, 0, &e, err, sizeof err))
        return 1;
    struct sw_pii_cache *c = cap ? sw_pii_cache_new(cap) : NULL;
    sw_pii_engine_set_cache(e, c);
    json_error_t je;
    json_t *prev = json_load_file(argv[2], 0, &je), *turn = json_load_file(argv[3], 0, &je);
    if (!prev || !turn) {
        fprintf(stderr, "agent_scan: %s\n", je.text);
        return 1;
    }
    struct sw_pii_counts n;
    if (sw_pii_scan_body(e, s, prev, &n, NULL, 0))
        return 1;
    struct sw_pii_cache_stats a, b;
    sw_pii_cache_get_stats(c, &a);
    int rc = measured_scan(e, s, turn, &n);
    sw_pii_cache_get_stats(c, &b);
    printf("rc=%d entities=%u hits=%llu misses=%llu\n", rc, n.total,
           (unsigned long long)(b.hits - a.hits), (unsigned long long)(b.misses - a.misses));
    long reps = argc > 5 ? strtol(argv[5], NULL, 10) : 0;
    double *us = reps > 0 ? calloc((size_t)reps, sizeof *us) : NULL;
    for (long r = 0; us && r < reps; r++) {
        struct timespec t0, t1;
        sw_pii_cache_clear(c);
        sw_pii_scan_body(e, s, prev, &n, NULL, 0);
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
        measured_scan(e, s, turn, &n);
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
        us[r] = (double)(t1.tv_sec - t0.tv_sec) * 1e6 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e3;
    }
    for (long i = 0; us && i < reps; i++)      /* insertion sort: a few dozen values */
        for (long j = i; j > 0 && us[j] < us[j - 1]; j--) {
            double x = us[j];
            us[j] = us[j - 1];
            us[j - 1] = x;
        }
    if (us)
        printf("cpu_us_median=%.1f\n", us[reps / 2]);
    free(us);
    json_decref(prev);
    json_decref(turn);
    sw_pii_engine_free(e);
    sw_pii_cache_free(c);
    return rc != 0;
}
