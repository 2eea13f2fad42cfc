/* Cloud spend window: see spend.h. */
#include "route/spend.h"

#include <math.h>
#include <stddef.h>

#include "common/err.h"

/* Handles pack a slot index and the slot's generation; generations start at
 * 1, so a live handle is never 0 and a released slot's old handle goes stale. */
static sw_spend_handle make_handle(uint32_t slot, uint32_t gen)
{
    return ((uint64_t)gen << 32) | slot;
}

static struct sw_spend_resv *lookup(struct sw_spend *s, sw_spend_handle h)
{
    uint32_t slot = (uint32_t)(h & 0xffffffffu);
    uint32_t gen = (uint32_t)(h >> 32);
    if (gen == 0 || slot >= SW_SPEND_MAX_RESERVATIONS || s->resv[slot].gen != gen)
        return NULL;
    return &s->resv[slot];
}

static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

static void roll(struct sw_spend *s, int64_t now_ms)
{
    if (now_ms >= s->window_start_ms && now_ms - s->window_start_ms < s->window_ms)
        return;
    /* Time moving backwards (it should not) also lands here; the window then
     * follows the clock, which can only lose the settled total, never the
     * reservations. */
    s->window_start_ms = floor_div(now_ms, s->window_ms) * s->window_ms;
    s->settled_usd = 0;
    s->windows_total++;
}

static void drop(struct sw_spend *s, struct sw_spend_resv *r)
{
    r->gen = 0;
    s->n_outstanding--;
    s->reserved_usd -= r->usd;
    r->usd = 0;
    if (s->n_outstanding == 0 || s->reserved_usd < 0)
        s->reserved_usd = 0; /* no float residue once nothing is outstanding */
}

void sw_spend_init(struct sw_spend *s, int64_t window_ms, int64_t now_ms)
{
    *s = (struct sw_spend){0};
    s->window_ms = window_ms > 0 ? window_ms : SW_SPEND_HOUR_MS;
    s->window_start_ms = floor_div(now_ms, s->window_ms) * s->window_ms;
    s->next_gen = 1;
}

double sw_spend_cost_usd(long in_tok, long out_tok, double in_price_usd_per_mtok,
                         double out_price_usd_per_mtok)
{
    double in = in_tok > 0 ? (double)in_tok : 0;
    double out = out_tok > 0 ? (double)out_tok : 0;
    double pin = in_price_usd_per_mtok > 0 ? in_price_usd_per_mtok : 0;  /* NaN > 0 is false */
    double pout = out_price_usd_per_mtok > 0 ? out_price_usd_per_mtok : 0;
    return (in * pin + out * pout) / 1e6;
}

int sw_spend_reserve(struct sw_spend *s, int64_t now_ms, double est_usd, sw_spend_handle *handle)
{
    *handle = 0;
    if (!isfinite(est_usd) || est_usd < 0)
        return SW_EINVAL;
    roll(s, now_ms);
    if (s->n_outstanding >= SW_SPEND_MAX_RESERVATIONS) {
        s->refused_total++;
        return SW_EUNAVAILABLE;
    }
    uint32_t slot = 0;
    while (s->resv[slot].gen != 0)
        slot++; /* n_outstanding < max guarantees a free slot */
    uint32_t gen = s->next_gen++;
    if (s->next_gen == 0)
        s->next_gen = 1;
    s->resv[slot] = (struct sw_spend_resv){.usd = est_usd, .gen = gen};
    s->n_outstanding++;
    s->reserved_usd += est_usd;
    *handle = make_handle(slot, gen);
    return SW_OK;
}

int sw_spend_settle(struct sw_spend *s, int64_t now_ms, sw_spend_handle handle, double actual_usd)
{
    struct sw_spend_resv *r = lookup(s, handle);
    roll(s, now_ms);
    if (isnan(actual_usd))
        actual_usd = r ? r->usd : 0;
    if (!(actual_usd > 0))
        actual_usd = 0;
    if (r)
        drop(s, r);
    else
        s->stale_total++;
    s->settled_usd += actual_usd;
    s->spent_total_usd += actual_usd;
    return r ? SW_OK : SW_ENOTFOUND;
}

int sw_spend_release(struct sw_spend *s, sw_spend_handle handle)
{
    struct sw_spend_resv *r = lookup(s, handle);
    if (!r) {
        s->stale_total++;
        return SW_ENOTFOUND;
    }
    drop(s, r);
    return SW_OK;
}

double sw_spend_total(struct sw_spend *s, int64_t now_ms)
{
    roll(s, now_ms);
    return s->settled_usd + s->reserved_usd;
}

bool sw_spend_would_exceed(struct sw_spend *s, int64_t now_ms, double est_usd, double cap_usd)
{
    if (!(cap_usd > 0))
        return false;
    if (!(est_usd > 0))
        est_usd = 0;
    return sw_spend_total(s, now_ms) + est_usd > cap_usd;
}

int64_t sw_spend_window_end_ms(struct sw_spend *s, int64_t now_ms)
{
    roll(s, now_ms);
    return s->window_start_ms + s->window_ms;
}
