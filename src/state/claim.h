/* What one attempt of a request holds of the shared state, taken together
 * and given back together.
 *
 * sw_claim_take claims, in this order, what an attempt on backend `be`
 * needs: admission by its breaker (in HALF_OPEN that is the single probe),
 * for a cloud backend with rpm/tpm a request and its estimated tokens from
 * the token bucket and, when it has a price, a spend reservation of the
 * estimated cost, and finally a slot of the backend's queue (a local slot, or
 * a place in the gateway's queue for one). It is all or nothing: when a step
 * refuses, what earlier steps took is given back and nothing is held.
 *
 * sw_claim_settle gives everything back once the attempt is over, with what
 * it cost: the token bucket is settled on the real usage if the request was
 * sent (the provider counts every request it received, failed ones too) and
 * refunded in full if it never was; the spend reservation is settled on the
 * real usage if tokens were produced (billed even when the attempt failed
 * later) and released otherwise; the breaker and the learned rates hear the
 * outcome (a neutral one only frees the half-open probe, if this attempt
 * held it); the local slot is released last, which may grant it to the next
 * waiter before settle returns. Settling twice is harmless.
 *
 * Pure: no I/O, no clock (now_ms comes in: the monotonic milliseconds of
 * sw_live), no allocation. */
#ifndef SW_STATE_CLAIM_H
#define SW_STATE_CLAIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "route/route.h"
#include "route/spend.h"
#include "state/live.h"
#include "state/localq.h"

enum sw_claim_result {
    SW_CLAIM_GRANTED,       /* everything held, the slot too: send now */
    SW_CLAIM_QUEUED,        /* held, waiting for a slot: on_grant fires when it comes */
    SW_CLAIM_BREAKER_OPEN,  /* the breaker refused (open, or half-open with its probe out) */
    SW_CLAIM_RATE_LIMITED,  /* the provider's token bucket is empty (not a failure) */
    SW_CLAIM_SPEND_FULL,    /* no spend reservation could be held (fails closed) */
    SW_CLAIM_QUEUE_FULL,    /* no slot and no room to wait for one */
};

/* How the attempt ended, for the breaker and the learned rates. */
enum sw_claim_outcome {
    SW_CLAIM_OK,            /* answered */
    SW_CLAIM_FAILED,        /* failed: the breaker judges the status or error */
    SW_CLAIM_NEUTRAL,       /* no verdict on the backend: never sent, left the queue,
                               client gone, the request was wrong for it */
};

struct sw_claim {
    /* Set by the caller before sw_claim_take, kept by it: called when a
     * queued claim gets its slot (it then holds it), from within the
     * sw_claim_settle or sw_localq release that freed the slot. */
    void (*on_grant)(struct sw_claim *c);
    /* Set by the caller before sw_claim_take, kept by it: the router chose
     * this backend in panic (SW_REASON_PANIC): when its breaker refuses, it
     * is admitted as a panic request (sw_breaker_allow_panic) instead. */
    bool allow_panic;
    /* Set by the caller before sw_claim_take, kept by it: a prefix of this
     * request is expected in the local backend's cache (prefix affinity);
     * granted at once, it runs in the slot holding it. Without it, or
     * granted from the queue, it holds a slot as an unmatched request
     * (struct sw_live_busy, sw_live_cache_busy). */
    bool prefix_matched;
    /* Set by the caller before sw_claim_take (borrowed for the call only;
     * NULL: none): the request's prefix identity (route/affinity.h), kept on
     * its slot's record so that a later request extending its prompt can
     * follow it. */
    const struct sw_prefix *prefix;
    /* Set by the caller before sw_claim_take: the view said this request
     * follows a running request whose prompt it extends (the backend's
     * follow_left_ms > 0, docs/routing.md "Following a running turn"). With
     * prefix given, the claim then parks on that request's slot, when no
     * other request waits for the backend and none follows it already:
     * QUEUED, and granted (on_grant) that very slot when it ends, before
     * any waiter. Otherwise it takes a slot as usual. */
    bool follow;

    /* Read-only for the caller. */
    size_t be;                  /* config index of the backend (live->b[be]) */
    bool held;                  /* taken and not yet settled */
    bool probe;                 /* holds the breaker's half-open probe */
    bool panic;                 /* admitted as a panic request: settle reports its verdict */
    int64_t taken_ms;           /* when sw_claim_take admitted it */
    bool holding_slot;          /* holds a slot of the backend's queue */
    bool sent;                  /* the request went out (sw_claim_mark_sent) */
    long bucket_tokens;         /* taken from the token bucket; 0: no bucket */
    bool spend_held;
    sw_spend_handle spend;
    double spend_usd;           /* the reservation held (spend_held) */
    struct sw_localq_waiter waiter; /* in the queue while waiting for a slot */
    bool parked;                /* waiting for a running request's slot (follow) */
    /* Set by the caller before sw_claim_settle: the answer came in one piece
     * (not streamed), so its first byte came with its last and says nothing
     * about the first token: the learned rates take no prefill or decode
     * sample from it and the latency window no TTFT sample (its output length
     * still teaches). */
    bool whole_answer;
    /* Set by the caller before sw_claim_settle: the backend reported no
     * usage, so the tokens passed are estimates; the spend window is then
     * charged at least the reservation (an unknown bill counts as its
     * upper bound). */
    bool usage_unreported;
    struct sw_live_backend *lb;     /* the backend's state (live->b[be]) */
    struct sw_live_busy busy;       /* its slot: since when, its size (holding_slot) */
    size_t busy_at;                 /* busy's position in lb's list while held */
};

/* Claims what an attempt on backend `be` of `live` needs for a request with
 * `facts` (prompt_tokens_est and max_tokens size the bucket take and the
 * cost estimate). A claim still held is settled as neutral first. On
 * GRANTED and QUEUED the claim is held; on every other result nothing is. */
enum sw_claim_result sw_claim_take(struct sw_live *live, size_t be,
                                   const struct sw_route_facts *facts, int64_t now_ms,
                                   struct sw_claim *c);

/* The request is on its way to the backend: from now on the provider counts
 * it, so settle charges the bucket instead of refunding it. */
static inline void sw_claim_mark_sent(struct sw_claim *c)
{
    c->sent = true;
}

/* Requests ahead of a queued claim in its backend's queue, those parked to
 * follow a running request included (0 when it holds a slot, is parked
 * itself, or is not queued). */
long sw_claim_queue_position(const struct sw_live *live, const struct sw_claim *c);

/* Gives back what the claim holds (see above) and reports the outcome.
 * usage_in / usage_out: the attempt's prompt and output tokens (the real
 * usage, or the best estimate when the backend gave none); ttft_ms: from
 * sending to the first byte, < 0 when no byte came (then no tokens were
 * produced and nothing is billed); decode_ms: first to last byte;
 * http_status, transport_err, retry_after_s (< 0: none) judge a failure.
 * Returns the USD settled on the spend window (0 when nothing was billed).
 * No-op returning 0 on a claim that is not held. */
double sw_claim_settle(struct sw_live *live, struct sw_claim *c, enum sw_claim_outcome o,
                       long usage_in, long usage_out, double ttft_ms, double decode_ms,
                       int http_status, int transport_err, long retry_after_s, int64_t now_ms);

#endif
