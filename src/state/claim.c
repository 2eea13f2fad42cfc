#include "state/claim.h"

#include "common/err.h"
#include "common/satmath.h"

/* The queue granted the slot a claim was waiting for. */
static void on_slot(struct sw_localq_waiter *w)
{
    struct sw_claim *c = (struct sw_claim *)((char *)w - offsetof(struct sw_claim, waiter));
    c->holding_slot = true;
    c->busy.since_ms = c->lb->grant_ms;
    c->busy.unmatched = true;   /* whichever slot freed first */
    sw_live_busy_add(c->lb, &c->busy);
    if (c->on_grant)
        c->on_grant(c);
}

/* Follow: parks c on the slot of the request running on lb whose prompt
 * c's prefix extends, when nobody waits for lb (a slot handed over skips
 * no waiter that came first) and nobody follows that request yet. */
static bool park(struct sw_live_backend *lb, const struct sw_prefix *prefix, struct sw_claim *c)
{
    struct sw_live_busy *x = prefix ? sw_live_busy_extended(lb, prefix) : NULL;
    if (!x || x->follower || lb->q.queued > 0)
        return false;
    x->follower = c;
    lb->n_parked++;
    c->parked = true;
    c->held = true;
    return true;
}

/* A parked claim gives up (settle): its holder keeps no follower. */
static void unpark(struct sw_live_backend *lb, struct sw_claim *c)
{
    for (size_t i = 0; i < lb->n_busy; i++)
        if (lb->busy[i].follower == c) {
            lb->busy[i].follower = NULL;
            lb->n_parked--;
        }
    c->parked = false;
}

/* The request holding the slot of record x ends: its follower, if any,
 * takes the slot (the server finds the follower's prefix there), before any
 * waiter. True when it did (the slot stays taken). */
static bool hand_over(struct sw_live_backend *lb, const struct sw_live_busy *rec,
                      int64_t now_ms)
{
    struct sw_live_busy *x = sw_live_busy_find(lb, rec);
    struct sw_claim *f = x ? x->follower : NULL;
    if (!f)
        return false;
    x->follower = NULL;
    lb->n_parked--;
    sw_live_busy_remove(lb, rec);
    f->parked = false;
    f->holding_slot = true;
    f->busy.since_ms = now_ms;
    f->busy.unmatched = false;  /* the slot holding its prefix */
    sw_live_busy_add(lb, &f->busy);
    if (f->on_grant)
        f->on_grant(f);
    return true;
}

/* Gives back what the take so far holds: nothing was sent, nothing produced. */
static void undo(struct sw_live *live, struct sw_claim *c, int64_t now_ms)
{
    struct sw_live_backend *lb = live->b[c->be];
    if (c->bucket_tokens) {
        sw_bucket_cancel(&lb->bucket, now_ms, c->bucket_tokens);
        c->bucket_tokens = 0;
    }
    if (c->spend_held) {
        sw_spend_release(&live->g->spend, c->spend);
        c->spend_held = false;
        c->spend = 0;
        c->spend_usd = 0;
    }
    if (c->probe) {
        sw_breaker_release_probe(&lb->breaker);
        c->probe = false;
    }
    if (c->panic) {
        sw_breaker_panic_end(&lb->breaker, now_ms, c->taken_ms, SW_BREAKER_NO_VERDICT);
        c->panic = false;
    }
}

enum sw_claim_result sw_claim_take(struct sw_live *live, size_t be,
                                   const struct sw_route_facts *facts, int64_t now_ms,
                                   struct sw_claim *c)
{
    if (c->held)
        sw_claim_settle(live, c, SW_CLAIM_NEUTRAL, 0, 0, -1, 0, 0, 0, -1, now_ms);
    void (*on_grant)(struct sw_claim *) = c->on_grant;
    bool allow_panic = c->allow_panic, matched = c->prefix_matched, follow = c->follow;
    const struct sw_prefix *prefix = c->prefix;
    *c = (struct sw_claim){.on_grant = on_grant, .allow_panic = allow_panic,
                           .prefix_matched = matched, .follow = follow, .be = be,
                           .taken_ms = now_ms};
    struct sw_live_backend *lb = live->b[be];
    const struct sw_config_backend *cb = &live->cfg->backends[be];
    c->lb = lb;
    c->busy = (struct sw_live_busy){now_ms, facts->prompt_tokens_est, facts->max_tokens,
                                    facts->max_tokens_given, !matched, 0, 0, NULL, &c->busy_at};
    if (prefix && prefix->n > 0 && prefix->n <= SW_PREFIX_MAX) {
        c->busy.tail_hash = prefix->hash[prefix->n - 1];
        c->busy.tail_tokens = prefix->tokens[prefix->n - 1];
    }

    enum sw_breaker_state st = sw_breaker_state(&lb->breaker, now_ms);
    if (allow_panic && st != SW_BREAKER_CLOSED && !sw_breaker_probe_free(&lb->breaker, now_ms)) {
        if (!sw_breaker_allow_panic(&lb->breaker, now_ms))
            return SW_CLAIM_BREAKER_OPEN;
        c->panic = true;
    } else {
        if (!sw_breaker_allow(&lb->breaker, now_ms))
            return SW_CLAIM_BREAKER_OPEN;
        c->probe = st == SW_BREAKER_HALF_OPEN;
    }

    if (cb->tier == SW_TIER_CLOUD) {
        /* Under a spend cap a request without max_tokens is held at its worst
         * case: the backend's max_output_tokens, which the relay sends as its
         * limit (docs/routing.md, "Worst-case reservation under a cap"). */
        long out = facts->max_tokens;
        if (!facts->max_tokens_given && sw_live_spend_cap_usd(live) > 0 &&
            cb->max_output_tokens > 0)
            out = cb->max_output_tokens;
        long tokens = sw_sat_add_long(facts->prompt_tokens_est, out);
        if (cb->rpm || cb->tpm) {
            if (!sw_bucket_take(&lb->bucket, now_ms, tokens)) {
                undo(live, c, now_ms);
                return SW_CLAIM_RATE_LIMITED;
            }
            c->bucket_tokens = tokens;
        }
        double est = sw_spend_cost_usd(sw_route_spend_prompt_tokens(facts), out,
                                       cb->input_usd_per_mtok, cb->output_usd_per_mtok);
        if (est > 0) {
            if (sw_spend_reserve(&live->g->spend, sw_live_wall_ms(live, now_ms), est,
                                 &c->spend) != SW_OK) {
                undo(live, c, now_ms);
                return SW_CLAIM_SPEND_FULL;
            }
            c->spend_held = true;
            c->spend_usd = est;
        }
    }

    if (follow && cb->tier == SW_TIER_LOCAL && park(lb, prefix, c))
        return SW_CLAIM_QUEUED;
    c->waiter.on_grant = on_slot;
    c->waiter.batch = facts->priority == SW_PRIORITY_BATCH;
    switch (sw_localq_acquire(&lb->q, &c->waiter)) {
    case SW_LOCALQ_GRANTED:
        c->holding_slot = true;
        sw_live_busy_add(lb, &c->busy);
        c->held = true;
        return SW_CLAIM_GRANTED;
    case SW_LOCALQ_QUEUED:
        c->held = true;
        return SW_CLAIM_QUEUED;
    case SW_LOCALQ_FULL:
        break;
    }
    undo(live, c, now_ms);
    return SW_CLAIM_QUEUE_FULL;
}

long sw_claim_queue_position(const struct sw_live *live, const struct sw_claim *c)
{
    if (!c->held || !c->waiter.queued)
        return 0;   /* parked: first for its slot */
    /* Requests parked to follow a running one came before every waiter (one
     * parks only while nobody waits): each takes a slot that frees first. */
    const struct sw_live_backend *lb = live->b[c->be];
    return sw_localq_position(&lb->q, &c->waiter) + lb->n_parked;
}

double sw_claim_settle(struct sw_live *live, struct sw_claim *c, enum sw_claim_outcome o,
                       long usage_in, long usage_out, double ttft_ms, double decode_ms,
                       int http_status, int transport_err, long retry_after_s, int64_t now_ms)
{
    if (!c->held)
        return 0;
    c->held = false;
    struct sw_live_backend *lb = live->b[c->be];
    const struct sw_config_backend *cb = &live->cfg->backends[c->be];
    sw_localq_cancel(&lb->q, &c->waiter);
    if (c->parked)
        unpark(lb, c);

    if (c->bucket_tokens) {
        if (c->sent)
            sw_bucket_settle(&lb->bucket, now_ms, c->bucket_tokens,
                             sw_sat_add_long(usage_in, usage_out));
        else
            sw_bucket_cancel(&lb->bucket, now_ms, c->bucket_tokens);
        c->bucket_tokens = 0;
    }
    double usd = 0;
    if (c->spend_held) {
        if (ttft_ms >= 0) {
            usd = sw_spend_cost_usd(usage_in, usage_out, cb->input_usd_per_mtok,
                                    cb->output_usd_per_mtok);
            if (c->usage_unreported && usd < c->spend_usd)
                usd = c->spend_usd;
            sw_spend_settle(&live->g->spend, sw_live_wall_ms(live, now_ms), c->spend, usd);
        } else {
            sw_spend_release(&live->g->spend, c->spend);
        }
        c->spend_held = false;
        c->spend = 0;
    }

    /* The gateway's own limit kept the request from leaving: the backend
     * was not asked, so neither its breaker nor its health hears of it. */
    bool not_asked = o == SW_CLAIM_FAILED && transport_err == SW_ELOCAL;
    if (c->panic) {
        enum sw_breaker_verdict v = SW_BREAKER_NO_VERDICT;
        if (o == SW_CLAIM_OK)
            v = SW_BREAKER_ANSWERED;
        else if (o == SW_CLAIM_FAILED && !not_asked)
            v = sw_breaker_qualifies(http_status, transport_err) ? SW_BREAKER_FAILED
                                                                 : SW_BREAKER_ANSWERED;
        sw_breaker_panic_end(&lb->breaker, now_ms, c->taken_ms, v);
        c->panic = false;
    }
    if (o == SW_CLAIM_OK)   /* a whole answer: no speed or first-token sample */
        sw_live_on_success(live, c->be, now_ms, usage_in, c->whole_answer ? -1 : ttft_ms,
                           c->whole_answer ? 0 : decode_ms, usage_out);
    /* How far into its limit an answer stopped: bounds the running requests
     * that name one (sw_route_first_release_ms). */
    if (o == SW_CLAIM_OK && cb->tier == SW_TIER_LOCAL && c->busy.max_tokens_given)
        sw_outlen_observe(&lb->outlen, usage_out, c->busy.max_tokens);
    else if (o == SW_CLAIM_FAILED && !not_asked)
        sw_live_on_failure(live, c->be, now_ms, http_status, transport_err, retry_after_s);
    else if (c->probe)
        sw_breaker_release_probe(&lb->breaker);
    c->probe = false;

    if (c->holding_slot) {
        c->holding_slot = false;
        lb->grant_ms = now_ms;
        if (!hand_over(lb, &c->busy, now_ms)) {
            sw_live_busy_remove(lb, &c->busy);
            sw_localq_release(&lb->q); /* may grant the slot to the next waiter right here */
        }
    }
    return usd;
}
