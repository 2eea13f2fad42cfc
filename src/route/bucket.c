/* Token buckets: see bucket.h. */
#include "route/bucket.h"

#include <math.h>

#define MS_PER_MIN 60000.0

static double clamp(double v, double lo, double hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

static void refill(struct sw_bucket *b, int64_t now_ms)
{
    if (now_ms <= b->last_ms)
        return;
    double elapsed = (double)(now_ms - b->last_ms);
    if (b->rpm_limit > 0)
        b->req_level = fmin(b->rpm_limit, b->req_level + elapsed * b->rpm_limit / MS_PER_MIN);
    if (b->tpm_limit > 0)
        b->tok_level = fmin(b->tpm_limit, b->tok_level + elapsed * b->tpm_limit / MS_PER_MIN);
    b->last_ms = now_ms;
}

void sw_bucket_init(struct sw_bucket *b, double rpm_limit, double tpm_limit, int64_t now_ms)
{
    *b = (struct sw_bucket){0};
    b->rpm_limit = rpm_limit > 0 ? rpm_limit : 0;
    b->tpm_limit = tpm_limit > 0 ? tpm_limit : 0;
    b->req_level = b->rpm_limit;
    b->tok_level = b->tpm_limit;
    b->last_ms = now_ms;
}

static bool admits(const struct sw_bucket *b, long tokens)
{
    if (b->rpm_limit > 0 && b->req_level < 1.0)
        return false;
    if (b->tpm_limit > 0 && b->tok_level < (double)tokens)
        return false;
    return true;
}

bool sw_bucket_can_admit(struct sw_bucket *b, int64_t now_ms, long tokens)
{
    refill(b, now_ms);
    return admits(b, tokens < 0 ? 0 : tokens);
}

bool sw_bucket_take(struct sw_bucket *b, int64_t now_ms, long tokens)
{
    if (tokens < 0)
        tokens = 0;
    refill(b, now_ms);
    if (!admits(b, tokens)) {
        b->refused_total++;
        return false;
    }
    if (b->rpm_limit > 0)
        b->req_level -= 1.0;
    if (b->tpm_limit > 0)
        b->tok_level -= (double)tokens;
    b->taken_total++;
    return true;
}

void sw_bucket_refund(struct sw_bucket *b, int64_t now_ms, long tokens)
{
    refill(b, now_ms);
    if (b->tpm_limit > 0)
        b->tok_level = clamp(b->tok_level + (double)tokens, -b->tpm_limit, b->tpm_limit);
}

void sw_bucket_settle(struct sw_bucket *b, int64_t now_ms, long est_tokens, long actual_tokens)
{
    sw_bucket_refund(b, now_ms, est_tokens - actual_tokens);
}

void sw_bucket_cancel(struct sw_bucket *b, int64_t now_ms, long tokens)
{
    refill(b, now_ms);
    if (b->rpm_limit > 0)
        b->req_level = fmin(b->rpm_limit, b->req_level + 1.0);
    sw_bucket_refund(b, now_ms, tokens < 0 ? 0 : tokens);
}

double sw_bucket_rpm_available(struct sw_bucket *b, int64_t now_ms)
{
    if (b->rpm_limit <= 0)
        return -1;
    refill(b, now_ms);
    return b->req_level > 0 ? b->req_level : 0;
}

double sw_bucket_tpm_available(struct sw_bucket *b, int64_t now_ms)
{
    if (b->tpm_limit <= 0)
        return -1;
    refill(b, now_ms);
    return b->tok_level > 0 ? b->tok_level : 0;
}

/* ms until one bucket at `level` of capacity `limit` holds `need`. */
static double wait_one(double level, double limit, double need)
{
    if (limit <= 0 || level >= need)
        return 0;
    return (need - level) * MS_PER_MIN / limit;
}

int64_t sw_bucket_wait_ms(struct sw_bucket *b, int64_t now_ms, long tokens)
{
    if (tokens < 0)
        tokens = 0;
    if (b->tpm_limit > 0 && (double)tokens > b->tpm_limit)
        return -1;
    refill(b, now_ms);
    double w = fmax(wait_one(b->req_level, b->rpm_limit, 1.0),
                    wait_one(b->tok_level, b->tpm_limit, (double)tokens));
    return (int64_t)ceil(w);
}
