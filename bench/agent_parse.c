/* The front's parse of one request body as the daemon runs it (jansson's
 * block cache installed): sw_request_parse (SURFACE messages: an Anthropic
 * Messages body, sw_anth_request_parse with its translation; SURFACE
 * responses: a Responses body, sw_responses_request_parse), then
 * sw_request_free, REPEAT times; prints the median of the thread's CPU time of one parse and free,
 * in µs. Natively timed (bench/agent_instr.sh GATEWAY=1 prints it per turn
 * next to the instruction counts); noisy on a loaded machine, a ratio within
 * one run is what to read. PARSE_CACHE: limits.parse_cache_bytes (default
 * the daemon's; 0: off), so every parse after the first finds the body's
 * elements in the memo, as a conversation's next turn finds its earlier ones.
 *
 *   agent_parse BODY.json [REPEAT [chat|messages|responses]] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/jalloc.h"
#include "common/jmemo.h"
#include "dialect/anth_req.h"
#include "dialect/responses_req.h"
#include "request/request.h"

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: agent_parse BODY.json [REPEAT [chat|messages|responses]]\n");
        return 2;
    }
    long reps = argc > 2 ? strtol(argv[2], NULL, 10) : 101;
    int anth = argc > 3 && !strcmp(argv[3], "messages");
    int resp = argc > 3 && !strcmp(argv[3], "responses");
    FILE *f = fopen(argv[1], "rb");
    if (!f || fseek(f, 0, SEEK_END))
        return 1;
    long n = ftell(f);
    rewind(f);
    char *b = n > 0 ? malloc((size_t)n) : NULL;
    if (!b || fread(b, 1, (size_t)n, f) != (size_t)n || reps < 1)
        return 1;
    fclose(f);
    sw_jalloc_install();
    /* the parse memo as the daemon's default has it (PARSE_CACHE=0: off) */
    const char *pc = getenv("PARSE_CACHE");
    sw_jmemo_set_max(pc ? strtoul(pc, NULL, 10) : 32ul << 20);
    double *us = calloc((size_t)reps, sizeof *us);
    if (!us)
        return 1;
    for (long r = 0; r < reps; r++) {
        struct timespec t0, t1;
        struct sw_chat_request q;
        struct sw_request_error e;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
        if (anth   ? sw_anth_request_parse(b, (size_t)n, 1, &q, &e)
            : resp ? sw_responses_request_parse(b, (size_t)n, NULL, &q, &e)
                   : sw_request_parse(b, (size_t)n, &q, &e)) {
            fprintf(stderr, "agent_parse: %s\n", e.message);
            return 1;
        }
        sw_request_free(&q);
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
        us[r] = (double)(t1.tv_sec - t0.tv_sec) * 1e6 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e3;
    }
    qsort(us, (size_t)reps, sizeof *us, cmp);
    printf("parse_us_median=%.1f\n", us[reps / 2]);
    free(us);
    free(b);
    return 0;
}
