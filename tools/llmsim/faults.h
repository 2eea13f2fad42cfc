/* Fault injection: the fault set (from flags or POST /admin/faults), the
 * rpm/tpm token buckets, and the per-request decision. Pure: the caller
 * passes the time; the error-rate draw uses a seeded generator, so a run
 * with the same --seed and the same request order injects the same errors. */
#ifndef SW_LLMSIM_FAULTS_H
#define SW_LLMSIM_FAULTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

enum sw_llmsim_malformed {
    SW_LLMSIM_MALFORMED_NONE,
    SW_LLMSIM_MALFORMED_JSON,    /* a body / event whose JSON does not parse */
    SW_LLMSIM_MALFORMED_SSE      /* an SSE event whose data line is broken in two */
};

/* Answers in another shape than asked (output drift): applies to a chat
 * request with response_format json_schema or json_object. */
enum sw_llmsim_drift {
    SW_LLMSIM_DRIFT_NONE,
    SW_LLMSIM_DRIFT_SHAPE,       /* valid JSON of another shape: {"answer": "<text>"} */
    SW_LLMSIM_DRIFT_PROSE        /* not JSON: "Sure! Here it is: <text>" */
};

struct sw_llmsim_faults {
    double error_rate;           /* probability a chat request fails, 0..1 */
    int error_status;            /* status of those failures, 400..599 (default 500) */
    int retry_after_s;           /* Retry-After of injected errors (default 1) */
    int latency_ms;              /* added before the first byte */
    bool hang;                   /* accept chat requests, never answer */
    int close_after_chunks;      /* close a stream after K token chunks, 0 = off */
    bool stream_error;           /* end a stream with an error event ... */
    int stream_error_after;      /* ... after K token events (K >= 0) */
    enum sw_llmsim_malformed malformed;
    bool exit;                   /* (admin only) exit(1) after answering the call */
    int exit_after;              /* exit(1) on receiving the N-th chat request, 0 = off */
    int rpm;                     /* requests per minute, 0 = unlimited */
    int tpm;                     /* tokens per minute (prompt + output), 0 = unlimited */
    enum sw_llmsim_drift drift;  /* answer JSON requests in another shape */
};

/* A token bucket holding at most `cap` units and refilling cap per minute. */
struct sw_llmsim_bucket {
    double level;
    double cap;
    int64_t last_us;
};

struct sw_llmsim_fault_state {
    struct sw_llmsim_faults f;
    uint64_t rng;                /* error-rate draws */
    uint64_t chat_requests;      /* chat requests arrived so far (for exit_after) */
    struct sw_llmsim_bucket rpm, tpm;
};

/* What to do with one chat request. */
struct sw_llmsim_verdict {
    bool hang;                   /* never answer */
    int status;                  /* 0 = serve normally, else answer this error */
    int retry_after_s;           /* Retry-After header when >= 0 (always for 429) */
    const char *limit;           /* "requests" or "tokens" for rpm/tpm 429s, else NULL */
    int latency_ms;              /* delay before the first byte */
    int close_after_chunks;
    int stream_error_after;      /* -1 = off, else the error event follows K token events */
    enum sw_llmsim_malformed malformed;
};

/* The fault set with everything off (retry_after_s 1, error_status 500). */
void sw_llmsim_faults_clear(struct sw_llmsim_faults *f);
/* Parses a POST /admin/faults body: a JSON object whose fields REPLACE the
 * whole set (missing = off). On error returns SW_EINVAL and writes a
 * message to err (NUL-terminated, at most errlen bytes). Borrows text. */
int sw_llmsim_faults_parse(const char *text, size_t len, struct sw_llmsim_faults *out,
                           char *err, size_t errlen);
/* The set as a new JSON object (caller owns the reference). */
json_t *sw_llmsim_faults_to_json(const struct sw_llmsim_faults *f);

/* Installs a fault set at now_us: buckets start full. */
void sw_llmsim_faults_set(struct sw_llmsim_fault_state *s, const struct sw_llmsim_faults *f,
                          int64_t now_us);
/* Counts one chat request as it arrives (valid or not); true when it is the
 * exit_after-th one and the process must exit(1) without answering. */
bool sw_llmsim_faults_arrive(struct sw_llmsim_fault_state *s);
/* Decides the fate of one valid chat request that would cost `tokens` tokens
 * (prompt + planned output). Order: hang, rpm, tpm, error rate. A request
 * refused by a limit consumes nothing. */
void sw_llmsim_faults_decide(struct sw_llmsim_fault_state *s, int64_t now_us, int tokens,
                             struct sw_llmsim_verdict *v);

/* Refills b to now_us; takes `n` units and returns 0 if there are enough,
 * else takes nothing and returns the seconds until there will be (>= 1). */
int sw_llmsim_bucket_take(struct sw_llmsim_bucket *b, int64_t now_us, double n);

#endif
