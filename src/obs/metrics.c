#include "obs/metrics.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"

/* ---- The families ---- */

enum kind { COUNTER, HISTOGRAM };

struct family_def {
    const char *name;
    const char *help;
    enum kind kind;
    const char *labels[SW_METRICS_MAX_LABELS];
    size_t n_labels;
    size_t max_series;          /* distinct label tuples before "other" */
    const double *buckets;      /* upper bounds in seconds, ascending; +Inf implied */
    size_t n_buckets;
};

/* Time to first token: a local box answers in tens of ms, a queued one in
 * seconds; the TTFT budget is usually around 0.5-2 s, so that range is dense. */
static const double ttft_buckets[] = {0.025, 0.05, 0.1, 0.25, 0.5, 0.75, 1,
                                      1.5,   2.5,  5,   10,   30};
/* Whole requests: short completions up to long streamed generations. */
static const double duration_buckets[] = {0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300};

#define NB(a) (sizeof(a) / sizeof((a)[0]))

static const struct family_def families[SW_M__COUNT] = {
    [SW_M_REQUESTS] = {"spillway_requests_total",
                       "Requests served, by requested model, backend, tier and routing reason.",
                       COUNTER, {"model", "backend", "tier", "reason"}, 4, 512, NULL, 0},
    [SW_M_ERRORS] = {"spillway_errors_total",
                     "Failed upstream attempts and failed answers, by error class.", COUNTER,
                     {"class"}, 1, 64, NULL, 0},
    [SW_M_REJECTIONS] = {"spillway_rejections_total",
                         "Structured rejections answered to clients, by stable error code.",
                         COUNTER, {"code"}, 1, 64, NULL, 0},
    [SW_M_TTFT] = {"spillway_ttft_seconds",
                   "Time from request arrival to the first token sent, per backend.", HISTOGRAM,
                   {"backend"}, 1, 64, ttft_buckets, NB(ttft_buckets)},
    [SW_M_DURATION] = {"spillway_request_duration_seconds",
                       "Time from request arrival to the end of the answer, per backend.",
                       HISTOGRAM, {"backend"}, 1, 64, duration_buckets, NB(duration_buckets)},
    [SW_M_TOKENS] = {"spillway_tokens_total",
                     "Tokens processed, per backend and direction (in: prompt, out: completion).",
                     COUNTER, {"backend", "direction"}, 2, 128, NULL, 0},
    [SW_M_CLOUD_COST] = {"spillway_cloud_cost_usd_total",
                         "Cloud spend in US dollars from reported usage, per backend.", COUNTER,
                         {"backend"}, 1, 64, NULL, 0},
    [SW_M_SPILLED] = {"spillway_spilled_requests_total",
                      "Requests served by the cloud because local could not (overflow, latency, "
                      "cold_start, capacity, breaker, fallback), per requested model.",
                      COUNTER, {"model"}, 1, 128, NULL, 0},
    [SW_M_PII] = {"spillway_pii_entities_total",
                  "PII entities detected, by type and outcome (kept_local, masked_cloud, "
                  "region_cloud, blocked).",
                  COUNTER, {"type", "outcome"}, 2, 256, NULL, 0},
    [SW_M_CONFIG_RELOADS] = {"spillway_config_reloads_total",
                             "Configuration reloads, by result (ok, failed).", COUNTER,
                             {"result"}, 1, 4, NULL, 0},
    [SW_M_EMERGENCY] = {"spillway_emergency_declarations_total",
                        "Emergency declarations and clearances through the admin API.", COUNTER,
                        {"state"}, 1, 4, NULL, 0},
    [SW_M_PANIC] = {"spillway_panic_attempts_total",
                     "Attempts sent past an open breaker because every backend the request "
                     "may use had its breaker open (routing reason panic), per backend.",
                     COUNTER, {"backend"}, 1, 64, NULL, 0},
    [SW_M_EMBEDDINGS] = {"spillway_embeddings_requests_total",
                         "Embeddings requests served (also in spillway_requests_total), by "
                         "requested model, backend and tier.",
                         COUNTER, {"model", "backend", "tier"}, 3, 256, NULL, 0},
    [SW_M_CONTRACT] = {"spillway_contract_violations_total",
                       "Answers whose content broke the request's JSON schema (output "
                       "contract), per backend that answered and requested model.",
                       COUNTER, {"backend", "model"}, 2, 256, NULL, 0},
    [SW_M_PRIORITY] = {"spillway_priority_requests_total",
                       "Requests served, by priority (interactive, batch), tier and routing "
                       "reason.",
                       COUNTER, {"priority", "tier", "reason"}, 3, 128, NULL, 0},
    [SW_M_DROPPED] = {"spillway_translation_dropped_total",
                      "Request fields left out because the backend that served has no form "
                      "for them (translation.unsupported: drop), by field.",
                      COUNTER, {"field"}, 1, 64, NULL, 0},
    [SW_M_REFUSED] = {"spillway_http_refused_total",
                      "Requests answered 401 (no or unknown key), 404 (unknown URL or model) or "
                      "405 (wrong method), by status and path class (api, models, admin, ops, "
                      "unknown; never the path itself).",
                      COUNTER, {"status", "path_class"}, 2, 32, NULL, 0},
    [SW_M_QUEUE_MOVES] = {"spillway_queue_moves_total",
                          "Requests that left a local backend's queue for another local with a "
                          "free slot (the wait they queued on ran longer than moving costs), "
                          "per backend left.",
                          COUNTER, {"backend"}, 1, 64, NULL, 0},
};

/* ---- Storage ---- */

struct series {
    uint64_t hash;
    char *labels[SW_METRICS_MAX_LABELS];    /* owned, already cut to length */
    double value;                           /* counter value, or histogram sum */
    uint64_t count;                         /* histogram: observations */
    uint64_t *buckets;                      /* histogram: per bucket (not cumulative) */
};

struct family {
    struct series *series;      /* in creation order */
    size_t n, cap;
    struct series *other;       /* the overflow series, created when first needed */
    uint64_t dropped;           /* updates that went to `other` */
    size_t recent[2];           /* the last two series found (indexes; checked against n) */
};

struct sw_metrics {
    struct family fam[SW_M__COUNT];
};

const char *sw_metrics_name(enum sw_metric fam)
{
    return (unsigned)fam < SW_M__COUNT ? families[fam].name : NULL;
}

size_t sw_metrics_label_count(enum sw_metric fam)
{
    return (unsigned)fam < SW_M__COUNT ? families[fam].n_labels : 0;
}

/* Length of s cut to SW_METRICS_MAX_VALUE_LEN without splitting a UTF-8 sequence. */
static size_t cut_len(const char *s)
{
    size_t n = strnlen(s, SW_METRICS_MAX_VALUE_LEN + 1);
    if (n <= SW_METRICS_MAX_VALUE_LEN)
        return n;
    n = SW_METRICS_MAX_VALUE_LEN;
    while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
        n--;
    return n;
}

static const char *label_at(const char *const *labels, size_t i)
{
    return labels && labels[i] ? labels[i] : "";
}

static uint64_t tuple_hash(const struct family_def *d, const char *const *labels)
{
    uint64_t h = 1469598103934665603ULL;    /* FNV-1a */
    for (size_t i = 0; i < d->n_labels; i++) {
        const char *s = label_at(labels, i);
        size_t n = cut_len(s);
        for (size_t k = 0; k < n; k++)
            h = (h ^ (unsigned char)s[k]) * 1099511628211ULL;
        h = (h ^ 0xFF) * 1099511628211ULL;  /* separator: 0xFF never occurs in UTF-8 */
    }
    return h;
}

/* A stored label (already cut) equals v as it would be stored: one pass
 * over both, no length measured first (a request compares a few short
 * labels on every increment). */
static inline __attribute__((always_inline)) bool label_equal(const char *stored, const char *v)
{
    for (size_t k = 0;; k++) {
        char a = stored[k], b = v[k];
        if (a != b)     /* v may go on past the cut, and still be equal */
            return a == '\0' && cut_len(v) == k;
        if (a == '\0')
            return true;
    }
}

static inline __attribute__((always_inline)) bool
tuple_equal(const struct family_def *d, const struct series *s, const char *const *labels)
{
    /* Last label first: series of a family that differ in one label mostly
     * differ in the last (tokens "in"/"out"), told apart at its first byte. */
    for (size_t i = d->n_labels; i-- > 0;)
        if (!label_equal(s->labels[i], label_at(labels, i)))
            return false;
    return true;
}

static void series_clear(struct series *s)
{
    for (size_t i = 0; i < SW_METRICS_MAX_LABELS; i++)
        free(s->labels[i]);
    free(s->buckets);
}

static int series_init(const struct family_def *d, struct series *s, uint64_t hash,
                       const char *const *labels)
{
    memset(s, 0, sizeof *s);
    s->hash = hash;
    for (size_t i = 0; i < d->n_labels; i++) {
        const char *v = labels ? label_at(labels, i) : "other";
        s->labels[i] = strndup(v, cut_len(v));
        if (!s->labels[i])
            goto fail;
    }
    if (d->kind == HISTOGRAM) {
        s->buckets = calloc(d->n_buckets, sizeof *s->buckets);
        if (!s->buckets)
            goto fail;
    }
    return SW_OK;
fail:
    series_clear(s);
    return SW_ENOMEM;
}

/* The series for labels, created if needed; the overflow series when the
 * family is full; NULL only when memory ran out. */
static struct series *lookup(struct sw_metrics *m, enum sw_metric fam, const char *const *labels)
{
    if (!m || (unsigned)fam >= SW_M__COUNT)
        return NULL;
    const struct family_def *d = &families[fam];
    struct family *f = &m->fam[fam];
    /* A request updates the same few series as the one before: those are
     * compared first, without hashing. */
    for (size_t j = 0; j < 2; j++) {
        size_t i = f->recent[j];
        if (i < f->n && tuple_equal(d, &f->series[i], labels)) {
            f->recent[j] = f->recent[0];
            f->recent[0] = i;
            return &f->series[i];
        }
    }
    uint64_t h = tuple_hash(d, labels);
    for (size_t i = 0; i < f->n; i++)
        if (f->series[i].hash == h && tuple_equal(d, &f->series[i], labels)) {
            f->recent[1] = f->recent[0];
            f->recent[0] = i;
            return &f->series[i];
        }
    if (f->n < d->max_series) {
        if (f->n == f->cap) {
            size_t cap = f->cap ? f->cap * 2 : 8;
            if (cap > d->max_series)
                cap = d->max_series;
            struct series *p = realloc(f->series, cap * sizeof *p);
            if (!p)
                return NULL;
            f->series = p;
            f->cap = cap;
        }
        if (series_init(d, &f->series[f->n], h, labels) != SW_OK)
            return NULL;
        return &f->series[f->n++];
    }
    if (!f->other) {
        struct series *o = malloc(sizeof *o);
        if (!o || series_init(d, o, 0, NULL) != SW_OK) {
            free(o);
            return NULL;
        }
        f->other = o;
    }
    f->dropped++;
    return f->other;
}

struct sw_metrics *sw_metrics_new(void)
{
    struct sw_metrics *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    static const char *const results[] = {"ok", "failed"};
    static const char *const states[] = {"declared", "cleared"};
    for (size_t i = 0; i < 2; i++) {
        if (!lookup(m, SW_M_CONFIG_RELOADS, &results[i]) ||
            !lookup(m, SW_M_EMERGENCY, &states[i])) {
            sw_metrics_free(m);
            return NULL;
        }
    }
    return m;
}

void sw_metrics_free(struct sw_metrics *m)
{
    if (!m)
        return;
    for (size_t k = 0; k < SW_M__COUNT; k++) {
        struct family *f = &m->fam[k];
        for (size_t i = 0; i < f->n; i++)
            series_clear(&f->series[i]);
        free(f->series);
        if (f->other) {
            series_clear(f->other);
            free(f->other);
        }
    }
    free(m);
}

void sw_metrics_inc(struct sw_metrics *m, enum sw_metric fam, const char *const *labels,
                    double v)
{
    if ((unsigned)fam >= SW_M__COUNT || families[fam].kind != COUNTER || !(v >= 0) ||
        isinf(v))
        return;
    struct series *s = lookup(m, fam, labels);
    if (s)
        s->value += v;
}

void sw_metrics_observe(struct sw_metrics *m, enum sw_metric fam, const char *const *labels,
                        double seconds)
{
    if ((unsigned)fam >= SW_M__COUNT || families[fam].kind != HISTOGRAM || isnan(seconds))
        return;
    struct series *s = lookup(m, fam, labels);
    if (!s)
        return;
    const struct family_def *d = &families[fam];
    for (size_t i = 0; i < d->n_buckets; i++) {
        if (seconds <= d->buckets[i]) {
            s->buckets[i]++;
            break;
        }
    }
    s->count++;
    s->value += seconds;
}

void sw_metrics_touch(struct sw_metrics *m, enum sw_metric fam, const char *const *labels)
{
    struct family *f = m && (unsigned)fam < SW_M__COUNT ? &m->fam[fam] : NULL;
    /* Touching a tuple that does not fit is not a drop: nothing was counted. */
    if (!f)
        return;
    uint64_t before = f->dropped;
    lookup(m, fam, labels);
    f->dropped = before;
}

double sw_metrics_value(const struct sw_metrics *m, enum sw_metric fam,
                        const char *const *labels)
{
    if (!m || (unsigned)fam >= SW_M__COUNT)
        return 0;
    const struct family_def *d = &families[fam];
    const struct family *f = &m->fam[fam];
    uint64_t h = tuple_hash(d, labels);
    for (size_t i = 0; i < f->n; i++)
        if (f->series[i].hash == h && tuple_equal(d, &f->series[i], labels))
            return d->kind == COUNTER ? f->series[i].value : (double)f->series[i].count;
    return 0;
}

void sw_metrics_each(const struct sw_metrics *m, enum sw_metric fam,
                     void (*fn)(void *ud, const char *const *labels, double v), void *ud)
{
    if (!m || (unsigned)fam >= SW_M__COUNT || families[fam].kind != COUNTER)
        return;
    const struct family *f = &m->fam[fam];
    for (size_t i = 0; i < f->n; i++)
        fn(ud, (const char *const *)f->series[i].labels, f->series[i].value);
    if (f->other)
        fn(ud, (const char *const *)f->other->labels, f->other->value);
}

void sw_metrics_each_hist(const struct sw_metrics *m, enum sw_metric fam,
                          void (*fn)(void *ud, const char *const *labels, const double *bounds,
                                     const uint64_t *counts, size_t n_bounds, uint64_t total),
                          void *ud)
{
    if (!m || (unsigned)fam >= SW_M__COUNT || families[fam].kind != HISTOGRAM)
        return;
    const struct family_def *d = &families[fam];
    const struct family *f = &m->fam[fam];
    for (size_t i = 0; i < f->n; i++)
        fn(ud, (const char *const *)f->series[i].labels, d->buckets, f->series[i].buckets,
           d->n_buckets, f->series[i].count);
    if (f->other)
        fn(ud, (const char *const *)f->other->labels, d->buckets, f->other->buckets,
           d->n_buckets, f->other->count);
}

/* ---- Text exposition format ---- */

/* v as Prometheus writes a float into tmp (at least 32 bytes). */
static const char *format_number(char *tmp, size_t size, double v)
{
    if (isnan(v))
        return "NaN";
    if (isinf(v))
        return v > 0 ? "+Inf" : "-Inf";
    if (v == 0)
        return "0";
    if (v == floor(v) && fabs(v) < 1e15) {
        snprintf(tmp, size, "%.0f", v);
        return tmp;
    }
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(tmp, size, "%.*g", prec, v);
        if (strtod(tmp, NULL) == v)
            break;
    }
    return tmp;
}

int sw_metrics_append_number(struct sw_buf *out, double v)
{
    char tmp[40];
    const char *s = format_number(tmp, sizeof tmp, v);
    return sw_buf_append(out, s, strlen(s));
}

static int append_escaped(struct sw_buf *out, const char *s, bool quotes)
{
    const char *run = s;
    int err = SW_OK;
    for (; *s && !err; s++) {
        const char *esc = NULL;
        if (*s == '\\')
            esc = "\\\\";
        else if (*s == '\n')
            esc = "\\n";
        else if (*s == '"' && quotes)
            esc = "\\\"";
        if (!esc)
            continue;
        err = sw_buf_append(out, run, (size_t)(s - run));
        if (!err)
            err = sw_buf_append(out, esc, 2);
        run = s + 1;
    }
    return err ? err : sw_buf_append(out, run, (size_t)(s - run));
}

int sw_metrics_append_label_value(struct sw_buf *out, const char *s)
{
    return append_escaped(out, s ? s : "", true);
}

static int append_header(struct sw_buf *out, const char *name, const char *help,
                         const char *type)
{
    int err = sw_buf_appendf(out, "# HELP %s ", name);
    if (!err)
        err = append_escaped(out, help, false);
    if (!err)
        err = sw_buf_appendf(out, "\n# TYPE %s %s\n", name, type);
    return err;
}

/* name{l1="v1",...,extra_name="extra_value"} value\n; no braces when there are no labels. */
static int append_sample(struct sw_buf *out, const char *name, const char *suffix,
                         const char *const *names, const char *const *values, size_t n,
                         const char *extra_name, const char *extra_value, double v)
{
    int err = sw_buf_appendf(out, "%s%s", name, suffix);
    bool any = n > 0 || extra_name;
    if (!err && any)
        err = sw_buf_append(out, "{", 1);
    for (size_t i = 0; i < n && !err; i++) {
        err = sw_buf_appendf(out, "%s%s=\"", i ? "," : "", names[i]);
        if (!err)
            err = sw_metrics_append_label_value(out, values ? values[i] : "");
        if (!err)
            err = sw_buf_append(out, "\"", 1);
    }
    if (!err && extra_name)
        err = sw_buf_appendf(out, "%s%s=\"%s\"", n ? "," : "", extra_name, extra_value);
    if (!err && any)
        err = sw_buf_append(out, "}", 1);
    if (!err)
        err = sw_buf_append(out, " ", 1);
    if (!err)
        err = sw_metrics_append_number(out, v);
    if (!err)
        err = sw_buf_append(out, "\n", 1);
    return err;
}

static int render_series(struct sw_buf *out, const struct family_def *d, const struct series *s)
{
    const char *const *vals = (const char *const *)s->labels;
    if (d->kind == COUNTER)
        return append_sample(out, d->name, "", d->labels, vals, d->n_labels, NULL, NULL,
                             s->value);
    int err = SW_OK;
    uint64_t cum = 0;
    for (size_t i = 0; i < d->n_buckets && !err; i++) {
        char tmp[40];
        const char *le = format_number(tmp, sizeof tmp, d->buckets[i]);
        cum += s->buckets[i];
        if (!err)
            err = append_sample(out, d->name, "_bucket", d->labels, vals, d->n_labels, "le", le,
                                (double)cum);
    }
    if (!err)
        err = append_sample(out, d->name, "_bucket", d->labels, vals, d->n_labels, "le",
                            "+Inf", (double)s->count);
    if (!err)
        err = append_sample(out, d->name, "_sum", d->labels, vals, d->n_labels, NULL, NULL,
                            s->value);
    if (!err)
        err = append_sample(out, d->name, "_count", d->labels, vals, d->n_labels, NULL, NULL,
                            (double)s->count);
    return err;
}

int sw_metrics_render(const struct sw_metrics *m, struct sw_buf *out)
{
    int err = SW_OK;
    for (size_t k = 0; k < SW_M__COUNT && !err; k++) {
        const struct family_def *d = &families[k];
        const struct family *f = &m->fam[k];
        err = append_header(out, d->name, d->help, d->kind == COUNTER ? "counter" : "histogram");
        for (size_t i = 0; i < f->n && !err; i++)
            err = render_series(out, d, &f->series[i]);
        if (!err && f->other)
            err = render_series(out, d, f->other);
    }
    static const char dropped[] = "spillway_metrics_series_dropped_total";
    if (!err)
        err = append_header(out, dropped,
                            "Metric updates folded into a family's \"other\" series because "
                            "its table of label sets was full.",
                            "counter");
    static const char *const family_label[] = {"family"};
    for (size_t k = 0; k < SW_M__COUNT && !err; k++)
        err = append_sample(out, dropped, "", family_label, &families[k].name, 1, NULL, NULL,
                            (double)m->fam[k].dropped);
    return err;
}

/* ---- Gauges rendered at scrape time ---- */

void sw_metrics_scrape_init(struct sw_metrics_scrape *s, struct sw_buf *out)
{
    memset(s, 0, sizeof *s);
    s->out = out;
}

static int scrape_sample(struct sw_metrics_scrape *s, const char *type, const char *name,
                         const char *help, const char *const *label_names,
                         const char *const *label_values, size_t n_labels, double v)
{
    if (!name || n_labels > SW_METRICS_MAX_LABELS || (n_labels && !label_names))
        return SW_EINVAL;
    bool current = s->n_names > 0 && strcmp(s->names[s->n_names - 1], name) == 0;
    if (!current) {
        for (size_t i = 0; i < s->n_names; i++)
            if (strcmp(s->names[i], name) == 0)
                return SW_EINVAL;   /* the family's samples would be split */
        if (s->n_names == SW_METRICS_MAX_GAUGES)
            return SW_ETOOBIG;
        int err = append_header(s->out, name, help ? help : "", type);
        if (err)
            return err;
        s->names[s->n_names++] = name;
    }
    return append_sample(s->out, name, "", label_names, label_values, n_labels, NULL, NULL, v);
}

int sw_metrics_gauge(struct sw_metrics_scrape *s, const char *name, const char *help,
                     const char *const *label_names, const char *const *label_values,
                     size_t n_labels, double v)
{
    return scrape_sample(s, "gauge", name, help, label_names, label_values, n_labels, v);
}

int sw_metrics_scrape_counter(struct sw_metrics_scrape *s, const char *name, const char *help,
                              const char *const *label_names, const char *const *label_values,
                              size_t n_labels, double v)
{
    return scrape_sample(s, "counter", name, help, label_names, label_values, n_labels, v);
}

/* ---- Spill ratio over the last 60 seconds ---- */

void sw_spill_init(struct sw_spill *s)
{
    memset(s, 0, sizeof *s);
    for (size_t i = 0; i < SW_SPILL_WINDOW_S; i++)
        s->sec[i] = -1;
}

static size_t slot_of(int64_t sec)
{
    int64_t r = sec % SW_SPILL_WINDOW_S;
    return (size_t)(r < 0 ? r + SW_SPILL_WINDOW_S : r);
}

void sw_spill_add(struct sw_spill *s, int64_t now_s, bool spilled)
{
    size_t i = slot_of(now_s);
    if (s->sec[i] != now_s) {
        s->sec[i] = now_s;
        s->total[i] = 0;
        s->spilled[i] = 0;
    }
    if (s->total[i] < UINT32_MAX) {
        s->total[i]++;
        s->spilled[i] += spilled;
    }
}

void sw_spill_counts(const struct sw_spill *s, int64_t now_s, uint64_t *total, uint64_t *spilled)
{
    uint64_t t = 0, sp = 0;
    for (size_t i = 0; i < SW_SPILL_WINDOW_S; i++) {
        if (s->sec[i] >= 0 && s->sec[i] <= now_s && now_s - s->sec[i] < SW_SPILL_WINDOW_S) {
            t += s->total[i];
            sp += s->spilled[i];
        }
    }
    if (total)
        *total = t;
    if (spilled)
        *spilled = sp;
}

double sw_spill_ratio(const struct sw_spill *s, int64_t now_s)
{
    uint64_t t, sp;
    sw_spill_counts(s, now_s, &t, &sp);
    return t ? (double)sp / (double)t : 0;
}
