/* Token buckets for a cloud backend's provider limits (the hard
 * limits of a cloud API are watched locally, before the provider says 429). Two
 * buckets per backend: requests per minute and tokens per minute. Pure and
 * clock-injected: time-dependent calls take `now_ms` (non-decreasing; a
 * smaller value than the last one seen refills nothing).
 *
 * Each bucket holds at most its per-minute limit (capacity = limit, so a
 * fresh or idle backend admits one minute's worth at once, as providers do)
 * and refills continuously: level += elapsed_ms * limit / 60000, capped at
 * the capacity. Limits are whole numbers per minute (as providers publish
 * them) and levels are kept as integers in units of 1/60000 of a request or
 * token, so refill is exact: ten refills of 1 ms equal one of 10 ms, and no
 * rounding drift accumulates. A limit <= 0 means "no limit configured": that
 * bucket always admits and its level reads -1.
 *
 * Tokens: the caller chooses what a request costs; to match OpenAI's and
 * Anthropic's accounting, take prompt tokens (estimated) + max_tokens at
 * dispatch and settle with the real usage afterwards (sw_bucket_refund with
 * estimate - actual). A settlement may leave the token level negative (the
 * request used more than estimated): that debt is real, the provider counted
 * it, and it delays later admissions until refilled. The level is clamped to
 * [-capacity, capacity] so one absurd estimate costs at most one extra minute.
 * A request whose tokens exceed the tokens-per-minute capacity can never be
 * admitted (the provider would refuse it too). */
#ifndef SW_ROUTE_BUCKET_H
#define SW_ROUTE_BUCKET_H

#include <stdbool.h>
#include <stdint.h>

#define SW_BUCKET_MAX_LIMIT 1000000000L   /* per minute; larger limits are capped */

struct sw_bucket {
    long rpm_limit;             /* requests per minute = capacity; 0: unlimited */
    long tpm_limit;             /* tokens per minute = capacity; 0: unlimited */
    int64_t req_level;          /* requests available x 60000 (as of last_ms) */
    int64_t tok_level;          /* tokens available x 60000 (as of last_ms); may be negative */
    int64_t last_ms;            /* time of the last refill */

    /* counters for /metrics */
    uint64_t taken_total;       /* requests admitted by sw_bucket_take */
    uint64_t refused_total;     /* sw_bucket_take answered false */
};

/* Both buckets start full at now_ms. Limits <= 0 are unlimited; limits above
 * SW_BUCKET_MAX_LIMIT are capped to it. */
void sw_bucket_init(struct sw_bucket *b, long rpm_limit, long tpm_limit, int64_t now_ms);

/* Would one request of `tokens` tokens be admitted now (both buckets hold at
 * least 1 request and `tokens` tokens)? Refills as of now_ms; takes nothing. */
bool sw_bucket_can_admit(struct sw_bucket *b, int64_t now_ms, long tokens);

/* Admits one request of `tokens` tokens: takes 1 from the request bucket and
 * `tokens` from the token bucket, both or neither. Returns false (and counts
 * a refusal) when sw_bucket_can_admit would. tokens < 0 counts as 0. */
bool sw_bucket_take(struct sw_bucket *b, int64_t now_ms, long tokens);

/* Settles the token bucket: tokens > 0 gives tokens back (the request used
 * fewer than taken), tokens < 0 takes more (it used more). The level is then
 * clamped to [-capacity, capacity]. No-op when tokens are unlimited. */
void sw_bucket_refund(struct sw_bucket *b, int64_t now_ms, long tokens);

/* Convenience for the usual settlement: refund(est_tokens - actual_tokens). */
void sw_bucket_settle(struct sw_bucket *b, int64_t now_ms, long est_tokens, long actual_tokens);

/* The request was taken but never reached the provider (connection refused,
 * cancelled before sending): gives back the request and its tokens. */
void sw_bucket_cancel(struct sw_bucket *b, int64_t now_ms, long tokens);

/* Levels for the router's view (rpm_available, tpm_available): what is
 * available as of now_ms, >= 0 (fractional while refilling); -1 when that
 * limit is not configured. */
double sw_bucket_rpm_available(struct sw_bucket *b, int64_t now_ms);
double sw_bucket_tpm_available(struct sw_bucket *b, int64_t now_ms);

/* Milliseconds from now_ms until a request of `tokens` tokens could be
 * admitted (0: now), rounded up; -1 when never (tokens exceed the capacity).
 * For a Retry-After or for holding a request rather than failing it. */
int64_t sw_bucket_wait_ms(struct sw_bucket *b, int64_t now_ms, long tokens);

#endif
