/* The cloud spend window (a hard cap on cloud spend). Only cloud
 * traffic is accounted here; local traffic is never blocked by the cap.
 * Pure and clock-injected; no allocation (fixed reservation table).
 *
 * Lifecycle of a cloud request's cost:
 *   reserve  at dispatch, the estimate (prompt estimate + max_tokens, priced)
 *            is held as an outstanding reservation, so concurrent requests
 *            cannot all slip under the cap before any of them settles;
 *   settle   on the real usage: the reservation is dropped and the actual
 *            cost is added to the current window;
 *   release  on cancel before any usage was billed: the reservation is dropped.
 *
 * Windows are FIXED and aligned to multiples of window_ms on the injected
 * clock: [k*window_ms, (k+1)*window_ms). Chosen over a sliding window because
 * "$20 per day" is read by users (and billed by providers) as a calendar
 * period, it needs O(1) memory, and the moment the cap lifts is exact (for
 * the shed policy's Retry-After: sw_spend_window_end_ms). The price: a burst
 * straddling a boundary may spend up to 2 x cap within window_ms. Since the
 * windows align to t = 0 of the clock passed in, give this module wall-clock
 * epoch milliseconds (not the monotonic clock) so that hours and days align
 * to UTC and replicas sharing the counter agree on the window.
 *
 * At a window roll the settled total resets to 0; outstanding reservations
 * carry over (they are still owed). A cost is attributed to the window in
 * which it settles.
 *
 * sw_spend_total = settled in the current window + all outstanding
 * reservations. The reservation table is bounded (SW_SPEND_MAX_RESERVATIONS);
 * when it is full, sw_spend_reserve refuses (fail closed): the caller must not
 * send the request to the cloud unaccounted. */
#ifndef SW_ROUTE_SPEND_H
#define SW_ROUTE_SPEND_H

#include <stdbool.h>
#include <stdint.h>

#define SW_SPEND_MAX_RESERVATIONS 1024      /* concurrent cloud requests accounted */
#define SW_SPEND_HOUR_MS 3600000LL
#define SW_SPEND_DAY_MS  86400000LL

/* A reservation handle: 0 never names a reservation (an "empty" handle). */
typedef uint64_t sw_spend_handle;

struct sw_spend_resv {
    double usd;                 /* reserved amount */
    uint32_t gen;               /* generation of the slot; 0: free */
};

struct sw_spend {
    int64_t window_ms;          /* window length, e.g. SW_SPEND_HOUR_MS */
    int64_t window_start_ms;    /* start of the current window */
    double settled_usd;         /* settled in the current window */
    double reserved_usd;        /* sum of outstanding reservations */
    uint32_t n_outstanding;
    uint32_t next_gen;          /* generation stamped on the next reservation */
    struct sw_spend_resv resv[SW_SPEND_MAX_RESERVATIONS];

    /* counters for /metrics */
    double spent_total_usd;     /* everything ever settled */
    uint64_t refused_total;     /* reservations refused: table full */
    uint64_t stale_total;       /* settle/release with an unknown handle */
    uint64_t windows_total;     /* window rolls */
};

/* An empty window of window_ms (<= 0: one hour) containing now_ms. */
void sw_spend_init(struct sw_spend *s, int64_t window_ms, int64_t now_ms);

/* Cost of a request in USD: in_tok and out_tok priced per million tokens.
 * Negative or NaN inputs count as 0. */
double sw_spend_cost_usd(long in_tok, long out_tok, double in_price_usd_per_mtok,
                         double out_price_usd_per_mtok);

/* Holds est_usd (>= 0, finite) as an outstanding reservation and stores its
 * handle in *handle. Returns SW_OK; SW_EUNAVAILABLE when the table is full
 * (fail closed: do not send); SW_EINVAL when est_usd is negative or not
 * finite. On failure *handle is 0. Does not check a cap: call
 * sw_spend_would_exceed first (same event-loop turn). */
int sw_spend_reserve(struct sw_spend *s, int64_t now_ms, double est_usd, sw_spend_handle *handle);

/* The request's real cost is known: drops the reservation and adds actual_usd
 * (negative counts as 0; NaN as the reserved estimate) to the current window.
 * With a stale or 0 handle the cost is still added (money spent is never
 * lost) and SW_ENOTFOUND is returned; SW_OK otherwise. */
int sw_spend_settle(struct sw_spend *s, int64_t now_ms, sw_spend_handle handle, double actual_usd);

/* Drops a reservation without cost (cancelled before usage was billed).
 * Returns SW_ENOTFOUND for a stale or 0 handle, SW_OK otherwise. */
int sw_spend_release(struct sw_spend *s, sw_spend_handle handle);

/* Settled in the window containing now_ms + outstanding reservations: the
 * view's spend_usd. Rolls the window when now_ms has left it. */
double sw_spend_total(struct sw_spend *s, int64_t now_ms);

/* Would reserving est_usd more take the total above cap_usd? Reaching the cap
 * exactly is allowed. cap_usd <= 0 means no cap: always false. */
bool sw_spend_would_exceed(struct sw_spend *s, int64_t now_ms, double est_usd, double cap_usd);

/* End of the window containing now_ms (when the settled total next resets). */
int64_t sw_spend_window_end_ms(struct sw_spend *s, int64_t now_ms);

#endif
