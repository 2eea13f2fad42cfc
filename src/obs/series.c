#include "obs/series.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sw_series {
    struct sw_series_sample ring[SW_SERIES_SLOTS];
    int64_t last;                       /* last second recorded, -1 none */
    /* The previous reading's cumulative counters (deltas are taken against them). */
    double prev_requests[SW_SERIES_TIERS];
    double prev_spilled;
    uint64_t prev_ttft[SW_SERIES_TIERS][SW_SERIES_MAX_BOUNDS + 1];
    double prev_codes[SW_SERIES_MAX_CODES];
    /* The TTFT observations of the last second so far (several readings in one second). */
    uint64_t sec_ttft[SW_SERIES_TIERS][SW_SERIES_MAX_BOUNDS + 1];
    char backend_names[SW_SERIES_MAX_BACKENDS][SW_SERIES_NAME_LEN];
    bool backend_local[SW_SERIES_MAX_BACKENDS];
    size_t n_backends;
    char code_names[SW_SERIES_MAX_CODES][SW_SERIES_NAME_LEN];
    size_t n_codes;
};

struct sw_series *sw_series_new(void)
{
    struct sw_series *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->last = -1;
    for (size_t i = 0; i < SW_SERIES_SLOTS; i++)
        s->ring[i].t = -1;
    return s;
}

void sw_series_free(struct sw_series *s)
{
    free(s);
}

size_t sw_series_memory(void)
{
    return sizeof(struct sw_series);
}

static size_t slot_of(int64_t t)
{
    return (size_t)(t % SW_SERIES_SLOTS);
}

/* Index of name in a table of n names (adding it if there is room), or -1. */
static int intern(char (*names)[SW_SERIES_NAME_LEN], size_t *n, size_t cap, const char *name)
{
    for (size_t i = 0; i < *n; i++)
        if (strncmp(names[i], name, SW_SERIES_NAME_LEN - 1) == 0)
            return (int)i;
    if (*n >= cap)
        return -1;
    snprintf(names[*n], SW_SERIES_NAME_LEN, "%s", name);
    return (int)(*n)++;
}

static double delta(double now, double *prev)
{
    double d = now - *prev;
    *prev = now;
    return d > 0 && isfinite(d) ? d : 0;
}

static uint32_t sat32(double v)
{
    return v >= 4294967295.0 ? UINT32_MAX : v > 0 ? (uint32_t)v : 0;
}

static uint16_t sat16(double v)
{
    return v >= 65535.0 ? UINT16_MAX : v > 0 ? (uint16_t)v : 0;
}

double sw_series_quantile_ms(const double *bounds, const uint64_t *counts, size_t n_bounds,
                             double q)
{
    uint64_t total = 0;
    for (size_t i = 0; i <= n_bounds; i++)
        total += counts[i];
    if (!total || n_bounds == 0)
        return NAN;
    double rank = q * (double)total;
    uint64_t cum = 0;
    for (size_t i = 0; i < n_bounds; i++) {
        uint64_t before = cum;
        cum += counts[i];
        if ((double)cum >= rank && counts[i]) {
            double lo = i ? bounds[i - 1] : 0;
            double frac = (rank - (double)before) / (double)counts[i];
            return (lo + (bounds[i] - lo) * frac) * 1000.0;
        }
    }
    return bounds[n_bounds - 1] * 1000.0;
}

void sw_series_record(struct sw_series *s, int64_t now_s, const struct sw_series_input *in)
{
    if (now_s < 0)
        return;
    if (now_s < s->last)
        now_s = s->last;
    struct sw_series_sample *x = &s->ring[slot_of(now_s)];
    bool same = now_s == s->last;
    if (!same) {
        memset(x, 0, sizeof *x);
        x->t = now_s;
        memset(s->sec_ttft, 0, sizeof s->sec_ttft);
    }
    s->last = now_s;

    for (int k = 0; k < SW_SERIES_TIERS; k++)
        x->requests[k] = sat32(x->requests[k] + delta(in->requests[k], &s->prev_requests[k]));
    x->spilled = sat32(x->spilled + delta(in->spilled, &s->prev_spilled));

    size_t nb = in->n_bounds < SW_SERIES_MAX_BOUNDS ? in->n_bounds : SW_SERIES_MAX_BOUNDS;
    for (int k = 0; k < SW_SERIES_TIERS; k++) {
        for (size_t i = 0; i <= nb; i++) {
            uint64_t now = in->ttft[k][i], prev = s->prev_ttft[k][i];
            s->sec_ttft[k][i] += now > prev ? now - prev : 0;
            s->prev_ttft[k][i] = now;
        }
        x->ttft_p50_ms[k] = (float)sw_series_quantile_ms(in->ttft_bounds, s->sec_ttft[k], nb, 0.5);
        x->ttft_p99_ms[k] = (float)sw_series_quantile_ms(in->ttft_bounds, s->sec_ttft[k], nb, 0.99);
    }

    /* Rejections: codes past the table's room all count under its last entry, "other". */
    double other = 0;
    for (size_t i = 0; i < in->n_codes; i++) {
        int c = intern(s->code_names, &s->n_codes, SW_SERIES_MAX_CODES - 1, in->codes[i].code);
        if (c >= 0)
            x->rejections[c] = sat16(x->rejections[c] + delta(in->codes[i].total, &s->prev_codes[c]));
        else
            other += in->codes[i].total;
    }
    if (other > 0) {
        size_t o = SW_SERIES_MAX_CODES - 1;
        if (!s->code_names[o][0])
            snprintf(s->code_names[o], SW_SERIES_NAME_LEN, "other");
        x->rejections[o] = sat16(x->rejections[o] + delta(other, &s->prev_codes[o]));
    }

    for (size_t i = 0; i < in->n_backends; i++) {
        const struct sw_series_backend_in *b = &in->backends[i];
        int j = intern(s->backend_names, &s->n_backends, SW_SERIES_MAX_BACKENDS, b->name);
        if (j < 0)
            continue;
        s->backend_local[j] = b->local;
        x->backends[j] = (struct sw_series_backend){
            .in_flight = sat16(b->in_flight),
            .queued = sat16(b->queued),
            .slots = sat16(b->slots),
            .breaker = (uint8_t)(b->breaker >= 0 && b->breaker <= 2 ? b->breaker : 0),
            .present = 1,
        };
    }
    x->ttft_budget_ms = (float)in->ttft_budget_ms;
    x->spend_usd = in->spend_usd;
    x->spend_cap_usd = in->spend_cap_usd;
    x->emergency = in->emergency;
}

const struct sw_series_sample *sw_series_at(const struct sw_series *s, int64_t t)
{
    if (t < 0 || t > s->last)
        return NULL;
    const struct sw_series_sample *x = &s->ring[slot_of(t)];
    return x->t == t ? x : NULL;
}

int64_t sw_series_last(const struct sw_series *s)
{
    return s->last;
}

const char *sw_series_backend_name(const struct sw_series *s, size_t i)
{
    return i < s->n_backends ? s->backend_names[i] : NULL;
}

bool sw_series_backend_local(const struct sw_series *s, size_t i)
{
    return i < s->n_backends && s->backend_local[i];
}

const char *sw_series_code_name(const struct sw_series *s, size_t i)
{
    if (i < s->n_codes)
        return s->code_names[i];
    if (i == SW_SERIES_MAX_CODES - 1 && s->code_names[i][0])
        return s->code_names[i];
    return NULL;
}
