/* Traces for the capacity planner (`spillway plan`, docs/planning.md): the
 * requests to replay, read from a CSV, from Spillway's own decision log, or
 * generated from a synthetic workload shape. Everything is in memory, sorted
 * by arrival time; times are ms from the start of the trace. */
#ifndef SW_PLAN_TRACE_H
#define SW_PLAN_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sw_plan_req {
    uint32_t t_ms;              /* arrival, ms after the trace start (traces up to 49 days) */
    uint32_t prompt;            /* prompt tokens */
    uint32_t output;            /* output tokens (the request's max_tokens: always reached) */
    uint8_t allow_cloud;        /* 1: may leave the network */
    uint8_t priority;           /* carried from the trace; the router does not read it yet */
    uint8_t whole;              /* 1: not streamed (a decision log's "stream": false): the
                                   answer comes in one piece and teaches no speeds */
    uint64_t conv;              /* the conversation it is a turn of (a hash of its id; 0:
                                   none): its prompt extends the conversation's previous one */
};

/* Local speeds seen in a decision log (0: not enough data). */
struct sw_plan_learned {
    double prefill_ms_per_token;
    double decode_tokens_per_s;
    size_t samples;
};

struct sw_plan_trace {
    struct sw_plan_req *r;
    size_t n, cap;
    int64_t start_epoch_ms;     /* wall clock of t_ms 0 (0: unknown) */
    int64_t duration_ms;        /* covers every arrival; >= 1 hour for synthetic traces */
    struct sw_plan_learned learned;
    /* synthetic shape (for the report and the break-even search); baseline 0: not synthetic */
    double baseline_rps, peak_ratio;
    int peak_hours, days;
    unsigned seed;
    double prompt_mean, output_mean, allow_share;
};

void sw_plan_trace_free(struct sw_plan_trace *t);

/* CSV `time,prompt_tokens,output_tokens[,allow_cloud][,priority][,conversation]`:
 * time is seconds (a number, relative or epoch) or an ISO-8601 UTC time; an
 * optional first line naming the columns is skipped; allow_cloud is
 * true/false/1/0 (default true); conversation is any id of at most 128
 * bytes (empty: none): the rows with the same id are the turns of one
 * conversation, each prompt extending the previous turn's (the simulation's
 * prefix caches, sim.h); blank lines and lines starting with # are ignored.
 * On error returns -1 with "line N: what is wrong" in err. */
int sw_plan_trace_csv(const char *text, size_t len, struct sw_plan_trace *t, char *err,
                      size_t errlen);

/* Decision log JSON lines (docs/operations.md): time, tokens_in, tokens_out
 * (served requests; a rejected one counts with its estimate when present),
 * key allow_cloud is not logged, so a request is cloud-eligible unless it was
 * kept local for privacy (reason "privacy" or pii_outcome "kept_local").
 * Local streamed requests teach the local speeds (trace->learned); a
 * non-streamed one ("stream": false) does not: its first byte came with its
 * last. */
int sw_plan_trace_declog(const char *text, size_t len, struct sw_plan_trace *t, char *err,
                         size_t errlen);

/* "baseline=10/s,peak=5x,peak_hours=3,days=7,seed=1[,prompt=500][,output=250][,allow=1]":
 * see docs/planning.md for the shape. */
int sw_plan_trace_synthetic(const char *spec, struct sw_plan_trace *t, char *err, size_t errlen);

/* Generates the synthetic trace of a shape already parsed into t (after
 * changing e.g. peak_ratio); replaces t->r. */
int sw_plan_trace_generate(struct sw_plan_trace *t);

#endif
