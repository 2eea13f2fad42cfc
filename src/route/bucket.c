/* Token buckets: see bucket.h. Levels are integers scaled by MS_PER_MIN: a
 * bucket of limit L gains exactly L units per elapsed ms. */
#include "route/bucket.h"

#define MS_PER_MIN 60000
#define MAX_TOKENS 1000000000000L   /* bound on a token argument: no int64 overflow */

static long bound_tokens(long tokens)
{
    return tokens < -MAX_TOKENS ? -MAX_TOKENS : tokens > MAX_TOKENS ? MAX_TOKENS : tokens;
}

static int64_t clamp64(int64_t v, int64_t lo, int64_t hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

static int64_t cap(long limit)
{
    return (int64_t)limit * MS_PER_MIN;
}

static int64_t fill(int64_t level, long limit, int64_t elapsed_ms)
{
    if (limit <= 0)
        return level;
    level += elapsed_ms * limit;
    return level > cap(limit) ? cap(limit) : level;
}

static void refill(struct sw_bucket *b, int64_t now_ms)
{
    if (now_ms <= b->last_ms)
        return;
    /* Two minutes refill any level from its floor (-capacity) to full, so
     * longer gaps need not be multiplied out (and cannot overflow). */
    int64_t elapsed = now_ms - b->last_ms;
    if (elapsed > 2 * MS_PER_MIN)
        elapsed = 2 * MS_PER_MIN;
    b->req_level = fill(b->req_level, b->rpm_limit, elapsed);
    b->tok_level = fill(b->tok_level, b->tpm_limit, elapsed);
    b->last_ms = now_ms;
}

static long bound_limit(long limit)
{
    return limit <= 0 ? 0 : limit > SW_BUCKET_MAX_LIMIT ? SW_BUCKET_MAX_LIMIT : limit;
}

void sw_bucket_init(struct sw_bucket *b, long rpm_limit, long tpm_limit, int64_t now_ms)
{
    *b = (struct sw_bucket){0};
    b->rpm_limit = bound_limit(rpm_limit);
    b->tpm_limit = bound_limit(tpm_limit);
    b->req_level = cap(b->rpm_limit);
    b->tok_level = cap(b->tpm_limit);
    b->last_ms = now_ms;
}

static bool admits(const struct sw_bucket *b, long tokens)
{
    if (b->rpm_limit > 0 && b->req_level < MS_PER_MIN)
        return false;
    if (b->tpm_limit > 0 && b->tok_level < (int64_t)tokens * MS_PER_MIN)
        return false;
    return true;
}

bool sw_bucket_can_admit(struct sw_bucket *b, int64_t now_ms, long tokens)
{
    refill(b, now_ms);
    return admits(b, tokens < 0 ? 0 : bound_tokens(tokens));
}

bool sw_bucket_take(struct sw_bucket *b, int64_t now_ms, long tokens)
{
    tokens = tokens < 0 ? 0 : bound_tokens(tokens);
    refill(b, now_ms);
    if (!admits(b, tokens)) {
        b->refused_total++;
        return false;
    }
    if (b->rpm_limit > 0)
        b->req_level -= MS_PER_MIN;
    if (b->tpm_limit > 0)
        b->tok_level -= (int64_t)tokens * MS_PER_MIN;
    b->taken_total++;
    return true;
}

void sw_bucket_refund(struct sw_bucket *b, int64_t now_ms, long tokens)
{
    refill(b, now_ms);
    if (b->tpm_limit > 0)
        b->tok_level = clamp64(b->tok_level + (int64_t)bound_tokens(tokens) * MS_PER_MIN,
                               -cap(b->tpm_limit), cap(b->tpm_limit));
}

void sw_bucket_settle(struct sw_bucket *b, int64_t now_ms, long est_tokens, long actual_tokens)
{
    sw_bucket_refund(b, now_ms, bound_tokens(est_tokens) - bound_tokens(actual_tokens));
}

void sw_bucket_cancel(struct sw_bucket *b, int64_t now_ms, long tokens)
{
    refill(b, now_ms);
    if (b->rpm_limit > 0)
        b->req_level = clamp64(b->req_level + MS_PER_MIN, 0, cap(b->rpm_limit));
    sw_bucket_refund(b, now_ms, tokens < 0 ? 0 : tokens);
}

static double level(int64_t scaled)
{
    return scaled > 0 ? (double)scaled / MS_PER_MIN : 0;
}

double sw_bucket_rpm_available(struct sw_bucket *b, int64_t now_ms)
{
    if (b->rpm_limit <= 0)
        return -1;
    refill(b, now_ms);
    return level(b->req_level);
}

double sw_bucket_tpm_available(struct sw_bucket *b, int64_t now_ms)
{
    if (b->tpm_limit <= 0)
        return -1;
    refill(b, now_ms);
    return level(b->tok_level);
}

/* ms until a bucket at `lvl` with `limit` holds need (scaled), rounded up. */
static int64_t wait_one(int64_t lvl, long limit, int64_t need)
{
    if (limit <= 0 || lvl >= need)
        return 0;
    return (need - lvl + limit - 1) / limit;
}

int64_t sw_bucket_wait_ms(struct sw_bucket *b, int64_t now_ms, long tokens)
{
    tokens = tokens < 0 ? 0 : bound_tokens(tokens);
    if (b->tpm_limit > 0 && tokens > b->tpm_limit)
        return -1;
    refill(b, now_ms);
    int64_t wr = wait_one(b->req_level, b->rpm_limit, MS_PER_MIN);
    int64_t wt = wait_one(b->tok_level, b->tpm_limit, (int64_t)tokens * MS_PER_MIN);
    return wr > wt ? wr : wt;
}
