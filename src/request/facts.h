/* The request's facts: what the router and the relay need to know about one
 * request, derived from plain inputs (the request's headers as name/value
 * pairs, the parsed body, the client's key and the model's config, the
 * start time) and merged so that the most restrictive source wins. Pure: no
 * I/O, no clock, no logging; the front reads the clock, scans with the real
 * PII engine (through struct sw_facts_scanner), answers refusals and logs.
 *
 * Two steps, so that the front's early rejections keep their order:
 *
 *   sw_facts_headers   before the body is parsed: X-Request-Timeout-Ms, the
 *                      spelling of the flag headers, X-Spillway-Allow-Cloud,
 *                      X-Spillway-Sensitive, X-Spillway-Latency-Critical,
 *                      X-Spillway-TTFT-Budget-Ms, in that order;
 *   sw_facts_derive    after the body was parsed and the model found: the
 *                      priority (X-Spillway-Priority, metadata.priority, the
 *                      key's), the merged flags, the residency regions, the
 *                      PII policy, the scan and what it adds. It is three
 *                      steps the front may also run apart (sw_facts_begin,
 *                      sw_facts_scan, sw_facts_finish), so that the scan of a
 *                      large body can run on a worker thread.
 *
 * Merging. allows_cloud: the key's allow_cloud, no X-Spillway-Allow-Cloud
 * element false, metadata.allow_cloud not false; any one source saying no
 * keeps the request local, none can widen another. sensitive: the key's
 * sensitive, any X-Spillway-Sensitive element true, PII found under policy
 * local_only, a scan that could not run, unscannable content parts not
 * allowed by binary_parts; any source sets it, none clears it. The PII
 * policy and binary_parts are each the most restrictive of the global, the
 * key's and the model's (enum order: a max()). The regions are the
 * intersection of the lists that are set (global, key, model).
 *
 * A refusal is a struct sw_request_error (status, type, code, param,
 * message) that the front answers as it is. */
#ifndef SW_REQUEST_FACTS_H
#define SW_REQUEST_FACTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "pii/pii.h"
#include "request/request.h"
#include "route/route.h"

/* Requests may say how long they are willing to wait (X-Request-Timeout-Ms)
 * and how soon their first token must come (X-Spillway-TTFT-Budget-Ms),
 * in milliseconds from 1 to this. */
#define SW_FACTS_HEADER_MS_MAX 3600000L

/* One request header as received: both NUL-terminated, borrowed. */
struct sw_facts_header {
    const char *name;
    const char *value;
};

/* What the occurrences of one flag header say: some element true, some
 * element false (both: conflicting; neither: absent). */
struct sw_facts_flag {
    bool any_true, any_false;
};

/* What the headers say, read before the body. */
struct sw_facts_hdrs {
    long timeout_ms;            /* X-Request-Timeout-Ms, at most the configured timeout;
                                   the configured one when absent */
    long ttft_budget_cap_ms;    /* X-Spillway-TTFT-Budget-Ms; 0: absent */
    struct sw_facts_flag allow_cloud, sensitive, latency_critical;
    const char *priority;       /* X-Spillway-Priority's first value (borrowed), NULL:
                                   absent; checked by sw_facts_derive, after the body */
};

/* Reads the headers h[0..n) (in the order received). A flag header counts
 * every occurrence and every comma-separated element, each of which must be
 * a flag (sw_request_flag); a header whose name is a near-miss of a flag
 * header's (sw_request_name_near_miss, any case) is refused, so a typo never
 * leaves a control unset. request_timeout_ms is routing.request_timeout_ms:
 * the header may shorten it, never extend it. SW_OK with *out filled, or
 * SW_EINVAL with *err a 400 invalid_header naming the header. */
int sw_facts_headers(const struct sw_facts_header *h, size_t n, long request_timeout_ms,
                     struct sw_facts_hdrs *out, struct sw_request_error *err);

/* The PII scan of a request, as the front runs it: the real engine, or a
 * table in tests. body: sw_pii_scan_body of the client's own body with its
 * surface's table (SW_OK; SW_EINVAL: a structural field outside its grammar,
 * its path in bad; else the scan could not run). built: sw_pii_scan_built of
 * the gateway's translation of that body (SW_OK or could not run).
 * type_name: sw_pii_type_name, for the refusal's message. */
struct sw_facts_scanner {
    int (*body)(void *ud, enum sw_pii_surface s, const json_t *body,
                struct sw_pii_counts *counts, char *bad, size_t bad_len);
    int (*built)(void *ud, enum sw_pii_surface s, const json_t *body,
                 struct sw_pii_counts *counts);
    const char *(*type_name)(void *ud, int type);
    void *ud;
    /* body then built of its translation, as the two calls count them
     * (what sw_pii_scan_pair does, reading a text the two share once); NULL:
     * the two calls */
    int (*pair)(void *ud, enum sw_pii_surface s, const json_t *body,
                struct sw_pii_counts *counts, char *bad, size_t bad_len,
                enum sw_pii_surface built_s, const json_t *built,
                struct sw_pii_counts *built_counts, int *built_rc);
};

/* The scanner of the PII engine e (NULL: no engine; the scan functions say
 * what that means): what the daemon runs. */
struct sw_facts_scanner sw_facts_engine_scanner(const struct sw_pii_engine *e);

/* What was decided about PII in the request (the relay masks and unmasks by it). */
struct sw_facts_pii {
    enum sw_pii_policy policy;      /* the most restrictive of global, key, model */
    struct sw_pii_counts counts;    /* entities per type; total 0: none */
    bool binary_blocked;            /* has content parts that cannot be scanned and
                                       binary_parts does not allow them: never masked */
};

/* Everything sw_facts_derive reads; all borrowed. */
struct sw_facts_in {
    enum sw_api api;                        /* the endpoint the request came in on */
    const struct sw_config *cfg;            /* pii.*, routing.default_max_tokens */
    const struct sw_config_key *key;        /* the client's key; NULL: auth is off */
    const struct sw_config_model *model;    /* the model asked for (found) */
    const struct sw_chat_request *chat;     /* the parsed body */
    const struct sw_facts_hdrs *hdrs;       /* from sw_facts_headers */
    int64_t start_ms;                       /* when the request came in (the deadline's origin) */
};

/* Which step refused a request (sw_facts_derive). */
enum sw_facts_refused {
    SW_FACTS_ACCEPTED,
    SW_FACTS_REFUSED_PRIORITY,      /* X-Spillway-Priority or metadata.priority */
    SW_FACTS_REFUSED_FIELD,         /* a structural field outside its grammar (bad) */
    SW_FACTS_REFUSED_PII,           /* PII found under policy block (types) */
};

/* The request's facts. */
struct sw_facts {
    struct sw_route_facts route;    /* what the router decides on (regions borrowed
                                       from the config) */
    struct sw_facts_pii pii;
    int64_t start_ms;
    /* What the front logs (never values): */
    enum sw_facts_refused refused;
    bool scan_failed;               /* a scan could not run: treated as sensitive */
    char bad[SW_PII_MAX_BAD_PATH];  /* refused invalid_value: the field's path ("" body) */
    char types[256];                /* refused pii_blocked: "email, iban" */
};

/* Derives the facts of a parsed request, scanning it with *scan unless its
 * PII policy is off (the client's own body with its API's table: an
 * Anthropic body whole, an embeddings body with the embeddings table; a
 * translated body's translation too, and per type the larger count of the
 * two is kept). Token-id inputs count as unscannable parts. SW_OK with
 * *out filled, or SW_EINVAL with *err the refusal, in this order:
 * X-Spillway-Priority not interactive/batch (400 invalid_header),
 * metadata.priority not "interactive"/"batch" (400 invalid_value), a
 * structural field outside its grammar (400 invalid_value naming it),
 * PII found under policy block (400 pii_blocked naming the types, never the
 * values). *out's pii.counts and scan_failed are set even when refused.
 *
 * The same as sw_facts_begin, then (when sw_facts_needs_scan) sw_facts_scan,
 * then sw_facts_finish: the front runs the three apart when the scan of a
 * large body runs on a worker thread. */
int sw_facts_derive(const struct sw_facts_in *in, const struct sw_facts_scanner *scan,
                    struct sw_facts *out, struct sw_request_error *err);

/* What the scan of one request found, before it is judged (sw_facts_scan). */
struct sw_facts_scan {
    int body_rc;                    /* scan->body on the client's body */
    struct sw_pii_counts body;      /* its counts */
    bool built_ran;                 /* the translation was scanned too (a translated
                                       body whose first scan was SW_OK) */
    int built_rc;                   /* scan->built on the translation */
    struct sw_pii_counts built;
    char bad[SW_PII_MAX_BAD_PATH];  /* body_rc SW_EINVAL: the field's path ("" body) */
};

/* The facts before the scan: the priority (its refusals), the route facts,
 * the regions and the PII policy. Reads in->hdrs (which may be gone after
 * it). SW_OK, or SW_EINVAL with *err the priority refusal. */
int sw_facts_begin(const struct sw_facts_in *in, struct sw_facts *out,
                   struct sw_request_error *err);

/* Whether the request is to be scanned: its PII policy is not off. */
bool sw_facts_needs_scan(const struct sw_facts *f);

/* Scans the request with *scan into *out. Reads in->api and in->chat only
 * (never modifying the trees) and writes only *out: it may run on another
 * thread than the rest when *scan may (the real engine may), as long as
 * nothing else touches in->chat meanwhile. */
void sw_facts_scan(const struct sw_facts_in *in, const struct sw_facts_scanner *scan,
                   struct sw_facts_scan *out);

/* The facts after the scan: *res judged (read only when sw_facts_needs_scan)
 * under the policy, into *out as sw_facts_begin left it. Reads in->cfg,
 * in->key, in->model and in->chat, not in->hdrs; of *scan only type_name
 * (for the pii_blocked message). Returns as sw_facts_derive. */
int sw_facts_finish(const struct sw_facts_in *in, const struct sw_facts_scanner *scan,
                    const struct sw_facts_scan *res, struct sw_facts *out,
                    struct sw_request_error *err);

#endif
