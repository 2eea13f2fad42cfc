/* The prefill rate of a local endpoint: see prefill.h. */
#include "route/prefill.h"

#include <math.h>

const char *sw_prefill_source_name(enum sw_prefill_source s)
{
    static const char *const names[] = {
        [SW_PREFILL_DEFAULT] = "default", [SW_PREFILL_CONFIG] = "config",
        [SW_PREFILL_LEARNED] = "learned", [SW_PREFILL_SERVER] = "server",
        [SW_PREFILL_WARMUP] = "warmup",
    };
    return (unsigned)s < sizeof names / sizeof names[0] ? names[s] : "unknown";
}

static double positive(double v)
{
    return isfinite(v) && v > 0 ? v : 0;
}

void sw_prefill_init(struct sw_prefill *p, double config_ms_per_token)
{
    *p = (struct sw_prefill){0};
    p->config_ms_per_token = positive(config_ms_per_token);
}

void sw_prefill_set_config(struct sw_prefill *p, double config_ms_per_token)
{
    p->config_ms_per_token = positive(config_ms_per_token);
}

static double clamp(double ms_per_token)
{
    if (ms_per_token < SW_EWMA_MIN_PREFILL_MS_PER_TOKEN)
        return SW_EWMA_MIN_PREFILL_MS_PER_TOKEN;
    if (ms_per_token > SW_EWMA_MAX_PREFILL_MS_PER_TOKEN)
        return SW_EWMA_MAX_PREFILL_MS_PER_TOKEN;
    return ms_per_token;
}

static void take(struct sw_prefill *p, double ms_per_token)
{
    ms_per_token = clamp(ms_per_token);
    p->server_ms_per_token =
        p->n_server == 0 ? ms_per_token
                         : p->server_ms_per_token +
                               SW_PREFILL_ALPHA * (ms_per_token - p->server_ms_per_token);
    p->n_server++;
}

bool sw_prefill_report(struct sw_prefill *p, const struct sw_prefill_report *r)
{
    if (r->totals || r->gauge)
        p->server_reports = true;
    if (r->totals) {
        double tokens = r->tokens_total, seconds = r->seconds_total;
        if (!(isfinite(tokens) && tokens >= 0 && isfinite(seconds) && seconds >= 0))
            return false;
        double dt = tokens, ds = seconds;
        if (p->have_prev && tokens >= p->prev_tokens && seconds >= p->prev_seconds) {
            dt = tokens - p->prev_tokens;
            ds = seconds - p->prev_seconds;
        }   /* else the first report, or a restart: its whole history */
        if (dt < SW_PREFILL_MIN_TOKENS) {
            /* Too little since the last sample: keep the older counters, so
             * slow traffic adds up to an interval that teaches. */
            if (!p->have_prev || tokens < p->prev_tokens || seconds < p->prev_seconds) {
                p->prev_tokens = tokens;
                p->prev_seconds = seconds;
                p->have_prev = true;
            }
            return false;
        }
        p->prev_tokens = tokens;
        p->prev_seconds = seconds;
        p->have_prev = true;
        if (!(ds > 0))
            return false;   /* tokens with no time: a server that does not time them */
        take(p, ds * 1000.0 / dt);
        return true;
    }
    if (r->gauge && isfinite(r->gauge_tps) && r->gauge_tps > 0) {
        take(p, 1000.0 / r->gauge_tps);
        return true;
    }
    return false;
}

bool sw_prefill_warmup(struct sw_prefill *p, double elapsed_ms, double rtt_ms, long prompt_tokens,
                       long output_tokens, double decode_tps)
{
    if (prompt_tokens < (long)SW_PREFILL_MIN_TOKENS || !isfinite(elapsed_ms) || !isfinite(rtt_ms) ||
        !isfinite(decode_tps))
        return false;
    double ms = elapsed_ms - (rtt_ms > 0 ? rtt_ms : 0);
    if (decode_tps > 0 && output_tokens > 0)
        ms -= (double)output_tokens * 1000.0 / decode_tps;
    if (!(ms > 0))
        return false;
    p->warmup_ms_per_token = clamp(ms / (double)prompt_tokens);
    p->n_warmup++;
    return true;
}

double sw_prefill_ms_per_token(const struct sw_prefill *p, const struct sw_ewma *e,
                               enum sw_prefill_source *src)
{
    enum sw_prefill_source s = SW_PREFILL_DEFAULT;
    double v = SW_EWMA_PRIOR_PREFILL_MS_PER_TOKEN;
    if (p && p->n_server > 0 && positive(p->server_ms_per_token) > 0) {
        s = SW_PREFILL_SERVER;
        v = p->server_ms_per_token;
    } else if (e && e->n_prefill > 0 && positive(e->prefill_ms_per_token) > 0) {
        s = SW_PREFILL_LEARNED;
        v = e->prefill_ms_per_token;
    } else if (p && p->n_warmup > 0 && positive(p->warmup_ms_per_token) > 0) {
        s = SW_PREFILL_WARMUP;
        v = p->warmup_ms_per_token;
    } else if (p && positive(p->config_ms_per_token) > 0) {
        s = SW_PREFILL_CONFIG;
        v = p->config_ms_per_token;
    }
    if (src)
        *src = s;
    return v;
}
