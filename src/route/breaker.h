/* Circuit breaker per backend (docs/routing.md). Pure and clock-injected:
 * every call that depends on time takes `now_ms` (the caller's monotonic
 * milliseconds, non-decreasing); nothing here reads a clock or allocates.
 *
 * States (enum sw_breaker_state, route/route.h):
 *
 *   CLOSED    requests flow. Each *qualifying* failure (sw_breaker_qualifies)
 *             is recorded; when `threshold` of them fall within `window_ms`
 *             (the threshold-th most recent failure is younger than
 *             window_ms) the breaker opens. Successes do NOT erase recorded
 *             failures: the count is a sliding count of failure timestamps,
 *             kept in a fixed ring of the last `threshold` failures, so a
 *             backend failing one request in two still trips. Old failures
 *             simply age out of the window.
 *   OPEN      nothing is sent until open_until_ms = now + max(cooldown_ms,
 *             Retry-After), where Retry-After is the longest one seen on any
 *             recorded failure (capped at SW_BREAKER_MAX_RETRY_AFTER_MS).
 *             Outcomes of requests still in flight from before the trip are
 *             ignored, except that a longer Retry-After extends open_until_ms.
 *   HALF_OPEN reached lazily: the first call with now_ms >= open_until_ms
 *             sees HALF_OPEN. Exactly one probe at a time: sw_breaker_allow
 *             claims it. Success -> CLOSED (failure ring cleared); failure ->
 *             OPEN again for a fresh cooldown (or longer Retry-After);
 *             sw_breaker_release_probe -> HALF_OPEN with the probe free again.
 *             Any outcome reported while HALF_OPEN counts as the probe's
 *             outcome (a success from any request proves the backend answers;
 *             a failure proves it does not).
 *
 * What to report: sw_breaker_on_failure only for qualifying failures; a
 * non-qualifying answer (400, 401, 404, 413, 500: see sw_breaker_qualifies)
 * means the backend is reachable and should be reported as
 * sw_breaker_on_success, so a half-open probe that gets a 400 still closes.
 * A probe that ends without an outcome (client left, never sent):
 * sw_breaker_release_probe.
 *
 * PANIC. When every backend a request may use has its breaker open (or its
 * half-open probe out), the router does not reject: it sends the request to
 * the one most likely to have recovered (route.h, SW_REASON_PANIC). Such a
 * request is admitted by sw_breaker_allow_panic, at most
 * SW_BREAKER_PANIC_MAX at once per backend, and its outcome is reported with
 * sw_breaker_panic_end (before the usual on_success / on_failure): an answer
 * closes the breaker at once, whatever the cooldown had left (unless another
 * request failed on it meanwhile); a qualifying
 * failure restarts the cooldown from now. The router ranks panic candidates
 * by their latest failure (sw_breaker_last_failure), oldest first. */
#ifndef SW_ROUTE_BREAKER_H
#define SW_ROUTE_BREAKER_H

#include <stdbool.h>
#include <stdint.h>

#include "route/route.h"

#define SW_BREAKER_DEFAULT_THRESHOLD   5
#define SW_BREAKER_DEFAULT_WINDOW_MS   60000
#define SW_BREAKER_DEFAULT_COOLDOWN_MS 30000
#define SW_BREAKER_MAX_THRESHOLD       64       /* ring size: bounded memory */
#define SW_BREAKER_MAX_RETRY_AFTER_MS  600000   /* a Retry-After longer than 10 min is capped */
#define SW_BREAKER_PANIC_MAX           32       /* panic requests in flight at once, per backend */

struct sw_breaker {
    /* configuration (sw_breaker_init) */
    int threshold;              /* qualifying failures within window_ms that open it, 1..64 */
    int64_t window_ms;          /* sliding window of the failure count */
    int64_t cooldown_ms;        /* minimum time spent OPEN before a probe */

    /* state; read through the functions below, not directly */
    enum sw_breaker_state state; /* stored state; OPEN becomes HALF_OPEN lazily */
    int64_t fail_ms[SW_BREAKER_MAX_THRESHOLD]; /* ring of the last `threshold` failures */
    int fail_head;              /* next slot to write */
    int fail_n;                 /* failures in the ring, <= threshold */
    int64_t retry_until_ms;     /* latest now + Retry-After seen while CLOSED; 0: none */
    int64_t open_until_ms;      /* OPEN: when it turns HALF_OPEN */
    bool probe_out;             /* HALF_OPEN: the single probe is in flight */
    int panic_out;              /* panic requests in flight (sw_breaker_allow_panic) */
    int64_t last_fail_ms;       /* latest qualifying failure reported in any state; 0: none */

    /* counters for /metrics (monotonic over the breaker's life, kept by reset) */
    uint64_t opened_total;      /* CLOSED or HALF_OPEN -> OPEN transitions */
    uint64_t closed_total;      /* HALF_OPEN -> CLOSED transitions (recoveries) */
    uint64_t probes_total;      /* probes granted by sw_breaker_allow */
    uint64_t rejected_total;    /* sw_breaker_allow answered false */
    uint64_t panic_total;       /* panic requests admitted by sw_breaker_allow_panic */
};

/* How a panic request ended (sw_breaker_panic_end). */
enum sw_breaker_verdict {
    SW_BREAKER_ANSWERED,        /* any non-qualifying outcome: the backend answers */
    SW_BREAKER_FAILED,          /* a qualifying failure */
    SW_BREAKER_NO_VERDICT       /* never sent, client gone */
};

/* Sets up a CLOSED breaker with zeroed counters. threshold <= 0, window_ms <= 0
 * and cooldown_ms <= 0 each select the default (5, 60000, 30000). Returns
 * SW_EINVAL (and leaves the defaults in place of that value) when threshold
 * exceeds SW_BREAKER_MAX_THRESHOLD; SW_OK otherwise. */
int sw_breaker_init(struct sw_breaker *b, int threshold, int64_t window_ms, int64_t cooldown_ms);

/* The state as of now_ms, for the router's view. Advances OPEN to HALF_OPEN
 * when open_until_ms has passed (hence not const). */
enum sw_breaker_state sw_breaker_state(struct sw_breaker *b, int64_t now_ms);

/* True when HALF_OPEN and no probe is in flight: the view's `probe_free`. */
bool sw_breaker_probe_free(struct sw_breaker *b, int64_t now_ms);

/* May a request be sent to this backend now? CLOSED: true. OPEN: false.
 * HALF_OPEN: true exactly once until the probe's outcome (or release) is
 * reported: the call claims the probe. Call it at dispatch, not while merely
 * planning, since a true answer in HALF_OPEN is a commitment. */
bool sw_breaker_allow(struct sw_breaker *b, int64_t now_ms);

/* The backend answered (any non-qualifying outcome). HALF_OPEN -> CLOSED with
 * the failure ring cleared. CLOSED: no change (successes do not erase the
 * sliding failure count). OPEN: ignored. */
void sw_breaker_on_success(struct sw_breaker *b, int64_t now_ms);

/* A qualifying failure. retry_after_ms: the upstream's Retry-After converted
 * to ms, <= 0 when absent; values above SW_BREAKER_MAX_RETRY_AFTER_MS are
 * capped. CLOSED: recorded; opens when `threshold` failures fall within
 * window_ms. HALF_OPEN: back to OPEN for max(cooldown, Retry-After). OPEN:
 * only a longer Retry-After extends the open period. */
void sw_breaker_on_failure(struct sw_breaker *b, int64_t now_ms, int64_t retry_after_ms);

/* The probe ended without an outcome (client left, deadline spent in our own
 * queue, request never sent). HALF_OPEN: the probe is free again. Otherwise a
 * no-op. The breaker cannot tell the probe from other requests, so call it
 * only for a request that was admitted by sw_breaker_allow while HALF_OPEN. */
void sw_breaker_release_probe(struct sw_breaker *b);

/* When an OPEN breaker turns half-open (its cooldown or Retry-After end);
 * 0 when it is CLOSED or already HALF_OPEN. The router's panic ranks by it. */
int64_t sw_breaker_open_until(struct sw_breaker *b, int64_t now_ms);

/* The latest qualifying failure reported (sw_breaker_on_failure in any
 * state, in-flight requests of an open breaker included); 0 when none. The
 * router's panic ranks by it: the backend that failed longest ago is the
 * likeliest to have recovered. */
static inline int64_t sw_breaker_last_failure(const struct sw_breaker *b)
{
    return b->last_fail_ms;
}

/* May a panic request go to this non-CLOSED backend now? True while fewer
 * than SW_BREAKER_PANIC_MAX panic requests are in flight (the call takes one
 * of them); false when CLOSED (use sw_breaker_allow). Does not touch the
 * half-open probe. */
bool sw_breaker_panic_free(struct sw_breaker *b, int64_t now_ms);
bool sw_breaker_allow_panic(struct sw_breaker *b, int64_t now_ms);

/* A panic request, sent at sent_ms, ended. ANSWERED: the breaker closes at
 * once (closed_total counts it), unless a qualifying failure was reported
 * since sent_ms (a backend that answers some requests and fails others
 * meanwhile has not recovered); it closes on probation: the failure ring
 * holds threshold - 1 failures at now_ms, so one qualifying failure within
 * window_ms opens it again. FAILED while OPEN: the cooldown restarts
 * from now (open_until_ms = max(open_until_ms, now + cooldown_ms)); in the
 * other states the usual sw_breaker_on_failure judges it. NO_VERDICT: only
 * frees the panic slot. */
void sw_breaker_panic_end(struct sw_breaker *b, int64_t now_ms, int64_t sent_ms,
                          enum sw_breaker_verdict v);

/* Another replica opened this breaker until until_ms (this clock): OPEN
 * until then (a longer open period already in force stays), the probe free.
 * No-op when until_ms <= now_ms. */
void sw_breaker_force_open(struct sw_breaker *b, int64_t now_ms, int64_t until_ms);

/* Back to CLOSED with no recorded failures (admin action, config reload).
 * Keeps the configuration and the counters. */
void sw_breaker_reset(struct sw_breaker *b);

/* Does this outcome count against the backend? transport_err is an enum
 * sw_err (common/err.h) from the upstream layer, SW_OK when an HTTP status was
 * received. Qualifying: SW_ECONNECT and SW_ETIMEOUT (connectivity), and the
 * statuses 429, 502, 503, 504 and 529 (Anthropic's overloaded). Not qualifying: every other status (2xx,
 * 4xx other than 429, and 500, which inference servers return for
 * request-specific errors such as a bad template or grammar; a crashed server
 * shows up as connection errors and timeouts instead), and other transport
 * errors (SW_ECANCELED: the client left; SW_EPROTO: an answer we could not
 * parse). SW_ETIMEOUT should only be reported for timeouts that indict the
 * backend (connect timeout, no first byte within a budget the backend was
 * given), not for a client deadline that was too short to begin with. */
bool sw_breaker_qualifies(int http_status, int transport_err);

/* The view's breaker, probe_free and panic_free in one call: as
 * sw_breaker_state, sw_breaker_probe_free and sw_breaker_panic_free at now_ms
 * (a closed breaker has nothing to advance). */
static inline enum sw_breaker_state sw_breaker_view(struct sw_breaker *b, int64_t now_ms,
                                                    bool *probe_free, bool *panic_free)
{
    enum sw_breaker_state s =
        b->state == SW_BREAKER_CLOSED ? SW_BREAKER_CLOSED : sw_breaker_state(b, now_ms);
    *probe_free = s == SW_BREAKER_HALF_OPEN && !b->probe_out;
    *panic_free = s != SW_BREAKER_CLOSED && b->panic_out < SW_BREAKER_PANIC_MAX;
    return s;
}

#endif
