#include "state/store.h"


/* ---- The in-memory store: one gateway, the local claim holds everything ---- */

static int mem_admit(void *ctx, struct sw_live *live, struct sw_store_hold *h, size_t be,
                     double est_usd, bool probe, long tokens)
{
    (void)ctx, (void)live, (void)probe;
    h->be = be;
    h->est_usd = 0; /* nothing reserved beyond the local claim */
    h->bucket_tokens = 0;
    (void)est_usd, (void)tokens;
    return SW_STORE_OK;
}

static void mem_release(void *ctx, struct sw_live *live, struct sw_store_hold *h,
                        double actual_usd, bool sent, long actual_tokens)
{
    (void)ctx, (void)live, (void)actual_usd, (void)sent, (void)actual_tokens;
    h->op = NULL;
    h->spend = h->lease = h->probe = h->bucket = h->fallback_lease = false;
    h->est_usd = 0;
    h->bucket_tokens = 0;
}

static void mem_backend(void *ctx, struct sw_live *live, size_t be)
{
    (void)ctx, (void)live, (void)be;
}

static void mem_flags_changed(void *ctx)
{
    (void)ctx;
}

static bool mem_degraded(const void *ctx)
{
    (void)ctx;
    return false;
}

const struct sw_store_ops sw_store_memory_ops = {
    .name = "memory",
    .shared = false,
    .admit = mem_admit,
    .release = mem_release,
    .breaker_check = mem_backend,
    .breaker_reset = mem_backend,
    .flags_changed = mem_flags_changed,
    .degraded = mem_degraded,
};
