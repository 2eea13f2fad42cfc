/* Load-signal parsers: see loadsig.h. */
#include "upstream/loadsig.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *sw_load_path(enum sw_load_source s)
{
    switch (s) {
    case SW_LOAD_LLAMACPP: case SW_LOAD_VLLM: case SW_LOAD_SGLANG: case SW_LOAD_TGI:
        return "/metrics";
    case SW_LOAD_OLLAMA:
        return "/api/ps";
    default:
        return NULL;
    }
}

/* ---- Prometheus text ---- */

static bool name_char(char c, bool first)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
           (!first && c >= '0' && c <= '9');
}

/* Skips a {label="value",...} block starting at p[0] == '{'. Returns the
 * index after '}', or 0 when it does not close on this line. */
static size_t skip_labels(const char *p, size_t n)
{
    bool quoted = false;
    for (size_t i = 1; i < n; i++) {
        char c = p[i];
        if (quoted) {
            if (c == '\\')
                i++;            /* \" \\ \n: the next byte is escaped */
            else if (c == '"')
                quoted = false;
        } else if (c == '"') {
            quoted = true;
        } else if (c == '}') {
            return i + 1;
        }
    }
    return 0;
}

/* One sample line "name[{labels}] value [timestamp]": whether its metric is
 * `name` and, if so, its value. */
static bool sample_of(const char *p, size_t n, const char *name, size_t name_len, double *v)
{
    size_t i = 0;
    while (i < n && (p[i] == ' ' || p[i] == '\t'))
        i++;
    size_t start = i;
    while (i < n && name_char(p[i], i == start))
        i++;
    if (i - start != name_len || memcmp(p + start, name, name_len) != 0)
        return false;
    if (i < n && p[i] == '{') {
        size_t k = skip_labels(p + i, n - i);
        if (!k)
            return false;
        i += k;
    }
    if (i >= n || (p[i] != ' ' && p[i] != '\t'))
        return false;
    while (i < n && (p[i] == ' ' || p[i] == '\t'))
        i++;
    char tok[64];
    size_t t = 0;
    while (i < n && p[i] != ' ' && p[i] != '\t' && p[i] != '\r') {
        if (t + 1 >= sizeof tok)
            return false;
        tok[t++] = p[i++];
    }
    if (t == 0)
        return false;
    tok[t] = '\0';
    char *end;
    double d = strtod(tok, &end);
    if (*end || (tok[0] == '0' && (tok[1] == 'x' || tok[1] == 'X')))
        return false;
    *v = d;
    return true;
}

int sw_prom_sum(const char *text, size_t len, const char *name, double *out)
{
    size_t name_len = strlen(name);
    double sum = 0;
    bool found = false;
    size_t i = 0;
    while (i < len) {
        const char *nl = memchr(text + i, '\n', len - i);
        size_t n = nl ? (size_t)(nl - (text + i)) : len - i;
        const char *line = text + i;
        double v;
        if (n > 0 && line[0] != '#' && sample_of(line, n, name, name_len, &v) && isfinite(v)) {
            sum += v;
            found = true;
        }
        i += n + 1;
    }
    if (!found)
        return -1;
    *out = sum;
    return 0;
}

/* ---- JSON answers ---- */

int sw_load_parse_slots(const char *body, size_t len, double *processing)
{
    json_t *j = json_loadb(body, len, 0, NULL);
    if (!json_is_array(j)) {
        json_decref(j);
        return -1;
    }
    double n = 0;
    size_t i;
    json_t *slot;
    json_array_foreach(j, i, slot) {
        json_t *ip = json_object_get(slot, "is_processing");
        json_t *st = json_object_get(slot, "state");
        if (json_is_true(ip) || (!ip && json_is_integer(st) && json_integer_value(st) != 0))
            n++;
    }
    json_decref(j);
    *processing = n;
    return 0;
}

static int two(const char *body, size_t len, const char *run, const char *wait, bool run_optional,
               struct sw_load_sample *out, char *err, size_t errlen)
{
    if (sw_prom_sum(body, len, run, &out->processing)) {
        if (!run_optional) {
            snprintf(err, errlen, "metric %s not found", run);
            return -1;
        }
        out->processing = 0;
    }
    if (sw_prom_sum(body, len, wait, &out->waiting)) {
        snprintf(err, errlen, "metric %s not found", wait);
        return -1;
    }
    return 0;
}

int sw_load_parse(enum sw_load_source s, const char *path, int status, const char *body,
                  size_t len, struct sw_load_sample *out, char *err, size_t errlen)
{
    *out = (struct sw_load_sample){0};
    if (s == SW_LOAD_OLLAMA && status == 503) {
        out->saturated = true;
        return 0;
    }
    if (status != 200) {
        snprintf(err, errlen, "GET %s answered %d", path ? path : "?", status);
        return -1;
    }
    switch (s) {
    case SW_LOAD_LLAMACPP:
        if (path && !strcmp(path, "/slots")) {
            if (sw_load_parse_slots(body, len, &out->processing)) {
                snprintf(err, errlen, "GET /slots: not a JSON array of slots");
                return -1;
            }
            return 0;
        }
        return two(body, len, "llamacpp:requests_processing", "llamacpp:requests_deferred",
                   false, out, err, errlen);
    case SW_LOAD_VLLM:
        return two(body, len, "vllm:num_requests_running", "vllm:num_requests_waiting", false,
                   out, err, errlen);
    case SW_LOAD_SGLANG:
        return two(body, len, "sglang:num_running_reqs", "sglang:num_queue_reqs", false, out,
                   err, errlen);
    case SW_LOAD_TGI:
        return two(body, len, "tgi_batch_current_size", "tgi_queue_size", true, out, err,
                   errlen);
    case SW_LOAD_OLLAMA: {
        json_t *j = json_loadb(body, len, 0, NULL);
        bool ok = json_is_array(json_object_get(j, "models"));
        json_decref(j);
        if (!ok) {
            snprintf(err, errlen, "GET /api/ps: no \"models\" list");
            return -1;
        }
        return 0;
    }
    default:
        snprintf(err, errlen, "no load source");
        return -1;
    }
}

/* ---- Prefill figures ---- */

int sw_load_parse_prefill(enum sw_load_source s, const char *body, size_t len,
                          struct sw_prefill_report *out)
{
    *out = (struct sw_prefill_report){0};
    const char *tokens = NULL, *seconds = NULL, *gauge = NULL;
    switch (s) {
    case SW_LOAD_LLAMACPP:
        tokens = "llamacpp:prompt_tokens_total";
        seconds = "llamacpp:prompt_seconds_total";
        gauge = "llamacpp:prompt_tokens_seconds";
        break;
    case SW_LOAD_VLLM:
        tokens = "vllm:request_prompt_tokens_sum";
        seconds = "vllm:request_prefill_time_seconds_sum";
        break;
    default:
        return -1;
    }
    if (!sw_prom_sum(body, len, tokens, &out->tokens_total) &&
        !sw_prom_sum(body, len, seconds, &out->seconds_total))
        out->totals = true;
    else
        out->tokens_total = out->seconds_total = 0;
    if (!out->totals && gauge && !sw_prom_sum(body, len, gauge, &out->gauge_tps))
        out->gauge = true;
    return out->totals || out->gauge ? 0 : -1;
}

int sw_load_parse_cache(enum sw_load_source s, const char *body, size_t len,
                        struct sw_cache_report *out)
{
    *out = (struct sw_cache_report){0};
    if (s != SW_LOAD_VLLM)
        return -1;
    if ((!sw_prom_sum(body, len, "vllm:prefix_cache_queries_total", &out->queries_total) &&
         !sw_prom_sum(body, len, "vllm:prefix_cache_hits_total", &out->hits_total)) ||
        (!sw_prom_sum(body, len, "vllm:gpu_prefix_cache_queries_total", &out->queries_total) &&
         !sw_prom_sum(body, len, "vllm:gpu_prefix_cache_hits_total", &out->hits_total)))
        out->totals = true;
    else
        out->queries_total = out->hits_total = 0;
    if (!out->totals && !sw_prom_sum(body, len, "vllm:gpu_prefix_cache_hit_rate", &out->gauge_rate))
        out->gauge = true;
    return out->totals || out->gauge ? 0 : -1;
}

bool sw_cache_counters_take(struct sw_cache_counters *c, const struct sw_cache_report *r,
                            double *rate)
{
    if (r->totals) {
        double q = r->queries_total, h = r->hits_total;
        if (!(isfinite(q) && q >= 0 && isfinite(h) && h >= 0))
            return false;
        if (!c->have_prev || q < c->prev_queries || h < c->prev_hits) {
            c->prev_queries = q;    /* the first report, or a restart: the baseline */
            c->prev_hits = h;
            c->have_prev = true;
            return false;
        }
        double dq = q - c->prev_queries, dh = h - c->prev_hits;
        if (dq < SW_CACHE_MIN_QUERIES)
            return false;
        c->prev_queries = q;
        c->prev_hits = h;
        *rate = dh < dq ? dh / dq : 1;
        return true;
    }
    if (r->gauge && isfinite(r->gauge_rate) && r->gauge_rate >= 0) {
        double g = r->gauge_rate > 1 ? 1 : r->gauge_rate;
        bool changed = c->have_gauge && g != c->prev_gauge;
        c->prev_gauge = g;
        c->have_gauge = true;
        if (!changed)
            return false;
        *rate = g;
        return true;
    }
    return false;
}
