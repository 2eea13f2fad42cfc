/* The decision log (every routing decision logged with
 * its deterministic reason): one JSON object per request, on one line.
 *
 * What goes in is exactly the fields of struct sw_declog_entry: identifiers,
 * names from the configuration, numbers. Never prompt or answer text, never
 * an API key (only the key's configured name), never a PII value (only
 * counts per type). docs/operations.md documents every field.
 *
 * Three parts:
 * - sw_declog_format: pure, entry -> malloc'ed line (no clock, no I/O);
 * - the writer: appends lines to a file or stdout with one write(2) each,
 *   or batched: one write(2) per turn of the event loop;
 * - the ring: the last N lines in memory for GET /admin/decisions and the
 *   dashboard. */
#ifndef SW_OBS_DECLOG_H
#define SW_OBS_DECLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

/* A string field longer than this is cut (at a UTF-8 character boundary). */
#define SW_DECLOG_MAX_FIELD 256
/* Each backend is tried at most once per request (SW_ROUTE_MAX_BACKENDS), and
 * PII types are at most SW_PII_MAX_TYPES: entries beyond these are left out. */
#define SW_DECLOG_MAX_ATTEMPTS 16
#define SW_DECLOG_MAX_PII_TYPES 32
/* With the bounds above a line cannot exceed this (all fields at their
 * maximum, fully escaped); it is the formatter's buffer limit. */
#define SW_DECLOG_MAX_LINE (256 * 1024)

enum sw_declog_decision { SW_DECLOG_SERVED, SW_DECLOG_REJECTED };

enum sw_declog_outcome {
    SW_ATTEMPT_OK,              /* the answer came from this attempt */
    SW_ATTEMPT_FAILED,          /* upstream error, timeout, bad answer */
    SW_ATTEMPT_SKIPPED,         /* not sent: bucket empty, breaker opened meanwhile, ... */
    SW_ATTEMPT_CLIENT_GONE      /* the client left while this attempt ran */
};

/* "served"/"rejected", "ok"/"failed"/"skipped"/"client_gone". */
const char *sw_declog_decision_name(enum sw_declog_decision d);
const char *sw_declog_outcome_name(enum sw_declog_outcome o);

struct sw_declog_attempt {
    const char *backend;        /* configured backend name */
    const char *reason;         /* routing reason of this attempt (sw_reason_name) */
    enum sw_declog_outcome outcome;
    int status;                 /* upstream HTTP status; 0: none (not sent, transport error) */
    const char *error;          /* error class (sw_err_str or a stable name); NULL when ok */
    double ttft_ms;             /* < 0: no first byte */
};

struct sw_declog_pii {
    const char *type;           /* entity type name, e.g. "email" */
    unsigned long n;            /* entities of that type in the request */
};

/* Every pointer is borrowed for the call; NULL strings are written as null. */
struct sw_declog_entry {
    const char *request_id;
    int64_t time_ms;            /* wall clock, ms since the epoch (request arrival) */
    const char *model;          /* model as requested; NULL if unknown */
    const char *key_name;       /* the API key's configured name; NULL: no key */
    const char *key_id;         /* the key's stable key_id (never the secret); NULL: not written */
    enum sw_declog_decision decision;
    int status;                 /* HTTP status answered to the client */
    const char *backend;        /* served: the backend that answered */
    const char *tier;           /* served: "local" | "cloud" */
    const char *region;         /* served: the backend's region ("local" for local); NULL
                                   for a cloud without one */
    const char *reason;         /* served: routing reason of the answering attempt */
    const char *code;           /* rejected: stable error code, e.g. "budget_exhausted" */
    const struct sw_declog_attempt *attempts;
    size_t n_attempts;
    double ttft_ms;             /* < 0: no first token */
    double duration_ms;         /* arrival to the end of the answer */
    long tokens_in, tokens_out; /* < 0: unknown */
    double cost_usd;            /* cloud cost from usage; 0 for local */
    bool stream;
    const struct sw_declog_pii *pii;    /* types with n > 0 */
    size_t n_pii;
    uint32_t pii_allowed;       /* known-safe matches (pii.allow); 0: the field is left out */
    const char *pii_outcome;    /* "kept_local" | "masked_cloud" | "region_cloud" (sent
                                   unmasked to a cloud in an allowed region) | "blocked";
                                   NULL: none found */
    const char *api;            /* the client's API: "openai" (chat completions), "anthropic"
                                   (messages), "embeddings"; NULL: "openai" */
    const char *contract;       /* output contract verdict: "ok" | "violation" |
                                   "invalid_json"; NULL (not written): no contract */
    const char *priority;       /* "interactive" | "batch"; NULL: not known (field omitted) */
    const char *const *dropped; /* names of the request fields left out for the backend that
                                   served (translation.unsupported: drop), a closed set */
    size_t n_dropped;           /* 0: the field is left out */
    const char *trace_id;       /* the request's trace (32 hex digits, telemetry.otlp); NULL:
                                   tracing off (the field is left out) */
};

/* The entry as one JSON object without a trailing newline, fields in the
 * order of the struct. Returns a malloc'ed string (free()), NULL on
 * allocation failure. Invalid UTF-8 in a string becomes U+FFFD. */
char *sw_declog_format(const struct sw_declog_entry *e);

/* Appends the ISO-8601 UTC form of epoch ms, e.g. "2026-11-30T07:01:02.123Z". */
int sw_declog_append_time(struct sw_buf *out, int64_t epoch_ms);

/* ---- Writer ---- */

struct sw_declog;

/* "-" writes to stdout, "stderr" to stderr; any other path is opened for appending (created 0640).
 * NULL if the file cannot be opened (errno set). */
struct sw_declog *sw_declog_open(const char *path);
/* The log's name in its warnings (static; default "decision log"). */
void sw_declog_name(struct sw_declog *d, const char *what);
/* Writes line + "\n" with one write(2) (batched: into the buffer), so
 * concurrent writers (other replicas appending to one file) never
 * interleave within a line. A failed or
 * short write is counted and logged once per run of failures; the caller goes
 * on serving. SW_OK or SW_EIO. */
int sw_declog_write(struct sw_declog *d, const char *line);
/* Batching: from now on sw_declog_write appends the line to a buffer and
 * returns SW_OK; `schedule(ud)` is called when the buffer stops being empty,
 * and the owner calls sw_declog_flush soon after (the daemon: once per turn
 * of its event loop). The buffer is written with one write(2) of whole lines
 * (concurrent writers still never interleave within a line), at once when it
 * holds SW_DECLOG_BATCH_MAX bytes, and by sw_declog_reopen and
 * sw_declog_close. A process killed outright (SIGKILL, a crash) loses the
 * lines not flushed yet: those of the current loop turn. */
#define SW_DECLOG_BATCH_MAX (64 * 1024)
void sw_declog_batch(struct sw_declog *d, void (*schedule)(void *ud), void *ud);
/* Writes the buffered lines; a failed write counts each of them as lost.
 * SW_OK or SW_EIO. */
int sw_declog_flush(struct sw_declog *d);
/* Reopens the file (after logrotate moved it; on SIGHUP). stdout: no-op. */
int sw_declog_reopen(struct sw_declog *d);
uint64_t sw_declog_lines(const struct sw_declog *d);        /* lines written (flushed) */
uint64_t sw_declog_write_errors(const struct sw_declog *d); /* lines lost */
void sw_declog_close(struct sw_declog *d);

/* ---- Ring of the latest lines ---- */

struct sw_declog_ring;

/* Keeps the last cap (>= 1) lines. NULL on allocation failure. */
struct sw_declog_ring *sw_declog_ring_new(size_t cap);
void sw_declog_ring_free(struct sw_declog_ring *r);
/* Copies line in, dropping the oldest when full. SW_OK or SW_ENOMEM. */
int sw_declog_ring_push(struct sw_declog_ring *r, const char *line);
size_t sw_declog_ring_count(const struct sw_declog_ring *r);
/* The i-th newest line (0: the latest); NULL when i >= count. Valid until the next push. */
const char *sw_declog_ring_get(const struct sw_declog_ring *r, size_t i);
/* Appends {"decisions":[newest, ..., n-th newest]}: the lines are JSON already. */
int sw_declog_ring_render(const struct sw_declog_ring *r, size_t n, struct sw_buf *out);

/* Formats e once, writes it (if d) and keeps it in the ring (if r). A full
 * ring's oldest line gives its place (and its allocation) to the new one
 * before it is formatted: should that fail (SW_ENOMEM), the ring holds one
 * line less. */
int sw_declog_record(struct sw_declog *d, struct sw_declog_ring *r,
                     const struct sw_declog_entry *e);

#endif
