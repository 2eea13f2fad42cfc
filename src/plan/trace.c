/* Trace readers and the synthetic workload (trace.h, docs/planning.md). */
#include "plan/trace.h"

#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_TRACE_MS 4233600000.0   /* 49 days: t_ms is 32-bit */

void sw_plan_trace_free(struct sw_plan_trace *t)
{
    free(t->r);
    t->r = NULL;
    t->n = t->cap = 0;
}

static void seterr(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

#define CSV_COLUMNS "time,prompt_tokens,output_tokens[,allow_cloud][,priority][,conversation]"
#define CSV_FIELDS 6
#define CONVERSATION_MAX 128    /* bytes of a conversation id */

/* Arrival times as read (ms, any origin) until sorted and rebased. */
struct raw {
    double t;
    uint32_t prompt, output;
    uint8_t allow, prio, whole;
    uint64_t conv;
};

struct rawvec {
    struct raw *v;
    size_t n, cap;
};

static int raw_push(struct rawvec *rv, struct raw r)
{
    if (rv->n == rv->cap) {
        size_t nc = rv->cap ? rv->cap * 2 : 4096;
        struct raw *nv = realloc(rv->v, nc * sizeof *nv);
        if (!nv)
            return -1;
        rv->v = nv;
        rv->cap = nc;
    }
    rv->v[rv->n++] = r;
    return 0;
}

static int raw_cmp(const void *a, const void *b)
{
    const struct raw *x = a, *y = b;
    return x->t < y->t ? -1 : x->t > y->t ? 1 : 0;
}

/* Sorts (stable enough: equal times keep no particular order, which the
 * simulation does not depend on beyond determinism) and rebases to 0. */
static int raw_finish(struct rawvec *rv, struct sw_plan_trace *t, bool epoch, char *err,
                      size_t errlen)
{
    if (rv->n == 0) {
        seterr(err, errlen, "the trace has no requests");
        free(rv->v);
        return -1;
    }
    qsort(rv->v, rv->n, sizeof *rv->v, raw_cmp);
    double t0 = rv->v[0].t, t1 = rv->v[rv->n - 1].t;
    if (t1 - t0 >= MAX_TRACE_MS) {
        seterr(err, errlen, "the trace spans %.1f days; at most 49 days are supported",
               (t1 - t0) / 86400000.0);
        free(rv->v);
        return -1;
    }
    t->r = calloc(rv->n, sizeof *t->r);
    if (!t->r) {
        seterr(err, errlen, "out of memory");
        free(rv->v);
        return -1;
    }
    for (size_t i = 0; i < rv->n; i++)
        t->r[i] = (struct sw_plan_req){.t_ms = (uint32_t)llround(rv->v[i].t - t0),
                                       .prompt = rv->v[i].prompt,
                                       .output = rv->v[i].output,
                                       .allow_cloud = rv->v[i].allow,
                                       .priority = rv->v[i].prio,
                                       .whole = rv->v[i].whole,
                                       .conv = rv->v[i].conv};
    t->n = t->cap = rv->n;
    t->start_epoch_ms = epoch ? (int64_t)t0 : 0;
    t->duration_ms = (int64_t)llround(t1 - t0) + 1;
    free(rv->v);
    return 0;
}

/* "2026-11-30T07:01:02.123Z" (or without fraction / Z) -> epoch ms; -1 if not one. */
static double parse_iso(const char *s)
{
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    const char *p = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
    if (!p)
        return -1;
    double frac = 0;
    if (*p == '.') {
        size_t digits = strspn(p + 1, "0123456789");
        if (!digits)
            return -1;
        frac = strtod(p, NULL); /* only digits follow the point: no exponent */
        p += 1 + digits;
    }
    if (*p == 'Z')
        p++;
    if (*p)
        return -1;
    return (double)timegm(&tm) * 1000.0 + frac * 1000.0;
}

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1]))
        *--e = '\0';
    return s;
}

/* The largest token count a trace may hold, in either reader. */
#define MAX_COUNT 100000000

static bool parse_count(const char *s, uint32_t *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (!*s || *end || errno || v < 0 || v > MAX_COUNT)
        return false;
    *out = (uint32_t)v;
    return true;
}

/* Line `lineno` (s, trimmed) cut at its commas into at most CSV_FIELDS
 * trimmed fields; false with *err set when there are more. */
static bool split_fields(char *s, char *f[7], int *nf_out, size_t lineno, char *err,
                         size_t errlen)
{
    int nf = 0;
    for (char *tok = s;; nf++) {
        if (nf == CSV_FIELDS) {
            seterr(err, errlen, "line %zu: more than %d fields; expected " CSV_COLUMNS, lineno,
                   CSV_FIELDS);
            return false;
        }
        char *c = strchr(tok, ',');
        if (c)
            *c = '\0';
        f[nf] = trim(tok);
        if (!c) {
            nf++;
            break;
        }
        tok = c + 1;
    }
    if (nf > CSV_FIELDS) {
        seterr(err, errlen, "line %zu: more than %d fields; expected " CSV_COLUMNS, lineno,
               CSV_FIELDS);
        return false;
    }
    *nf_out = nf;
    return true;
}

/* Seconds past which a time is refused (the year 33658): epoch milliseconds
 * stay far inside int64. */
#define MAX_TIME_S 1e12

/* The time field: seconds (a number >= 0 and < MAX_TIME_S) or an ISO-8601 UTC time (which,
 * like seconds past 1e9, makes the trace's times epoch ones). */
static bool parse_time(const char *f0, struct raw *r, bool *epoch, size_t lineno, char *err,
                       size_t errlen)
{
    char *e;
    errno = 0;
    double sec = strtod(f0, &e);
    if (*f0 && !*e && !errno && isfinite(sec) && sec >= 0 && sec < MAX_TIME_S) {
        r->t = sec * 1000.0;
    } else {
        r->t = parse_iso(f0);
        if (r->t < 0) {
            seterr(err, errlen, "line %zu: time \"%.40s\" is neither seconds (a number "
                   ">= 0 and < 1e12) nor an ISO-8601 UTC time", lineno, f0);
            return false;
        }
        *epoch = true;
    }
    if (sec > 1e9)
        *epoch = true;
    return true;
}

/* A conversation id as a nonzero 64-bit FNV-1a hash of its bytes. */
static uint64_t conv_id(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        h = (h ^ *p) * 1099511628211ull;
    return h ? h : 1;
}

/* One row's nf (3 to CSV_FIELDS) fields as a request; false with *err set. */
static bool parse_row(char *f[7], int nf, struct raw *r, bool *epoch, size_t lineno, char *err,
                      size_t errlen)
{
    *r = (struct raw){.allow = 1};
    if (!parse_time(f[0], r, epoch, lineno, err, errlen))
        return false;
    if (!parse_count(f[1], &r->prompt)) {
        seterr(err, errlen, "line %zu: prompt_tokens \"%.40s\" is not a whole number "
               "0..100000000", lineno, f[1]);
        return false;
    }
    if (!parse_count(f[2], &r->output) || r->output == 0) {
        seterr(err, errlen, "line %zu: output_tokens \"%.40s\" is not a whole number "
               "1..100000000", lineno, f[2]);
        return false;
    }
    if (nf > 3 && *f[3]) {
        if (!strcasecmp(f[3], "true") || !strcmp(f[3], "1"))
            r->allow = 1;
        else if (!strcasecmp(f[3], "false") || !strcmp(f[3], "0"))
            r->allow = 0;
        else {
            seterr(err, errlen, "line %zu: allow_cloud \"%.40s\" is not true, false, 1 "
                   "or 0", lineno, f[3]);
            return false;
        }
    }
    if (nf > 4 && *f[4]) {
        uint32_t pr;
        if (!parse_count(f[4], &pr) || pr > 255) {
            seterr(err, errlen, "line %zu: priority \"%.40s\" is not a whole number "
                   "0..255", lineno, f[4]);
            return false;
        }
        r->prio = (uint8_t)pr;
    }
    if (nf > 5 && *f[5]) {
        if (strlen(f[5]) > CONVERSATION_MAX) {
            seterr(err, errlen, "line %zu: conversation \"%.40s...\" is longer than %d bytes",
                   lineno, f[5], CONVERSATION_MAX);
            return false;
        }
        r->conv = conv_id(f[5]);
    }
    return true;
}

int sw_plan_trace_csv(const char *text, size_t len, struct sw_plan_trace *t, char *err,
                      size_t errlen)
{
    memset(t, 0, sizeof *t);
    struct rawvec rv = {0};
    size_t lineno = 0;
    bool epoch = false;
    const char *p = text, *end = text + len;
    char line[1024];
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t ll = (size_t)((nl ? nl : end) - p);
        lineno++;
        if (ll >= sizeof line) {
            seterr(err, errlen, "line %zu: longer than %zu bytes", lineno, sizeof line - 1);
            goto fail;
        }
        memcpy(line, p, ll);
        line[ll] = '\0';
        p = nl ? nl + 1 : end;
        char *s = trim(line);
        if (!*s || *s == '#')
            continue;
        char *f[7];
        int nf = 0;
        if (!split_fields(s, f, &nf, lineno, err, errlen))
            goto fail;
        if (lineno == 1 || rv.n == 0) {
            if (!strcmp(f[0], "time")) /* the header */
                continue;
        }
        if (nf < 3) {
            seterr(err, errlen, "line %zu: %d field%s; expected "
                   CSV_COLUMNS,
                   lineno, nf, nf == 1 ? "" : "s");
            goto fail;
        }
        struct raw r;
        if (!parse_row(f, nf, &r, &epoch, lineno, err, errlen))
            goto fail;
        if (raw_push(&rv, r)) {
            seterr(err, errlen, "out of memory");
            goto fail;
        }
    }
    return raw_finish(&rv, t, epoch, err, errlen);
fail:
    free(rv.v);
    return -1;
}

static int dbl_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y ? 1 : 0;
}

/* What a decision log teaches of a local backend's speed: per streamed
 * local answer, its decode rate and (ttft, prompt) pairs. */
struct learn {
    double *dec, *pre;
    size_t n_dec, n_pre, cap;
};

/* Adds request r's sample (ttft and duration in ms); false out of memory. */
static bool learn_add(struct learn *L, const struct raw *r, double ttft, double dur)
{
    if (L->n_dec + 2 >= L->cap || L->n_pre + 2 >= L->cap) {
        size_t nc = L->cap ? L->cap * 2 : 1024;
        double *a = realloc(L->dec, nc * sizeof *a), *b2 = a ? realloc(L->pre, nc * sizeof *b2) : NULL;
        if (a)
            L->dec = a;
        if (!a || !b2)
            return false;
        L->pre = b2;
        L->cap = nc;
    }
    if (r->output >= 2 && dur > ttft)
        L->dec[L->n_dec++] = (r->output - 1) / ((dur - ttft) / 1000.0);
    if (r->prompt >= 32) {
        L->pre[L->n_pre++] = ttft;    /* over the prompt, less one period: below */
        L->pre[L->n_pre++] = r->prompt;
    }
    return true;
}

/* The median decode rate, and the prefill time per prompt token of the
 * fastest tenth. */
static void learn_finish(struct learn *L, struct sw_plan_learned *out)
{
    double *dec = L->dec, *pre = L->pre;
    size_t n_dec = L->n_dec, n_pre = L->n_pre;
    if (n_dec > 0) {
        qsort(dec, n_dec, sizeof *dec, dbl_cmp);
        out->decode_tokens_per_s = dec[n_dec / 2];
    }
    if (n_pre > 0 && n_dec > 0) {
        /* ttft = queue wait + prefill + one decode period: the fastest tenth
         * waited least; their TTFT less one period, per prompt token. */
        double period = 1000.0 / out->decode_tokens_per_s;
        size_t m = n_pre / 2;
        for (size_t i = 0; i < m; i++)
            pre[i] = (pre[2 * i] - period) / pre[2 * i + 1];
        qsort(pre, m, sizeof *pre, dbl_cmp);
        double v = pre[m / 10];
        out->prefill_ms_per_token = v > 0 ? v : 0;
    }
    out->samples = n_dec;
}

int sw_plan_trace_declog(const char *text, size_t len, struct sw_plan_trace *t, char *err,
                         size_t errlen)
{
    memset(t, 0, sizeof *t);
    struct rawvec rv = {0};
    struct learn L = {0};
    size_t lineno = 0;
    const char *p = text, *end = text + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t ll = (size_t)((nl ? nl : end) - p);
        const char *line = p;
        p = nl ? nl + 1 : end;
        lineno++;
        size_t k = 0;
        while (k < ll && isspace((unsigned char)line[k]))
            k++;
        if (k == ll)
            continue;
        json_error_t je;
        json_t *o = json_loadb(line, ll, 0, &je);
        if (!json_is_object(o)) {
            seterr(err, errlen, "line %zu: not a decision-log JSON object (%s)", lineno,
                   o ? "not an object" : je.text);
            json_decref(o);
            goto fail;
        }
        const char *time_s = json_string_value(json_object_get(o, "time"));
        double tm = time_s ? parse_iso(time_s) : -1;
        if (tm < 0) {
            seterr(err, errlen, "line %zu: \"time\" missing or not an ISO-8601 UTC time", lineno);
            json_decref(o);
            goto fail;
        }
        json_t *ti = json_object_get(o, "tokens_in"), *to = json_object_get(o, "tokens_out");
        const char *tier = json_string_value(json_object_get(o, "tier"));
        const char *reason = json_string_value(json_object_get(o, "reason"));
        const char *pii = json_string_value(json_object_get(o, "pii_outcome"));
        if (!json_is_number(ti) || !json_is_number(to) || json_number_value(to) < 1) {
            json_decref(o); /* rejected before any usage: nothing to replay */
            continue;
        }
        if (json_number_value(ti) < 0 || json_number_value(ti) > MAX_COUNT ||
            json_number_value(to) > MAX_COUNT) {
            seterr(err, errlen, "line %zu: \"tokens_in\"/\"tokens_out\" outside 0..%d", lineno,
                   MAX_COUNT);
            json_decref(o);
            goto fail;
        }
        struct raw r = {
            .t = tm,
            .prompt = (uint32_t)json_number_value(ti),
            .output = (uint32_t)json_number_value(to),
            .allow = !((reason && !strcmp(reason, "privacy")) ||
                       (pii && !strcmp(pii, "kept_local"))),
            .whole = json_is_false(json_object_get(o, "stream")),
        };
        json_t *tt = json_object_get(o, "ttft_ms"), *du = json_object_get(o, "duration_ms");
        /* a non-streamed answer's first byte is its whole generation: no speed */
        if (tier && !strcmp(tier, "local") && !r.whole && json_is_number(tt) &&
            json_is_number(du)) {
            if (!learn_add(&L, &r, json_number_value(tt), json_number_value(du))) {
                seterr(err, errlen, "out of memory");
                json_decref(o);
                goto fail;
            }
        }
        json_decref(o);
        if (raw_push(&rv, r)) {
            seterr(err, errlen, "out of memory");
            goto fail;
        }
    }
    learn_finish(&L, &t->learned);
    free(L.dec);
    free(L.pre);
    {
        struct sw_plan_learned keep = t->learned;
        int rc = raw_finish(&rv, t, true, err, errlen);
        t->learned = keep;
        return rc;
    }
fail:
    free(L.dec);
    free(L.pre);
    free(rv.v);
    return -1;
}

/* ---- Synthetic ---- */

static double unif(unsigned short xs[3])
{
    double u;
    do
        u = erand48(xs);
    while (u <= 0);
    return u;
}

static double normal(unsigned short xs[3])
{
    return sqrt(-2.0 * log(unif(xs))) * cos(2.0 * M_PI * erand48(xs));
}

/* Lognormal with the given mean: mu = ln(mean) - sigma^2 / 2. */
static uint32_t lognormal(unsigned short xs[3], double mean, double sigma)
{
    double v = exp(log(mean) - sigma * sigma / 2 + sigma * normal(xs));
    if (v < 1)
        v = 1;
    if (v > 100000)
        v = 100000;
    return (uint32_t)llround(v);
}

#define PEAK_START_HOUR 13
#define SIGMA_PROMPT 0.6
#define SIGMA_OUTPUT 0.8

/* Requests per second at second s of the trace. */
static double synth_rate(const struct sw_plan_trace *t, double s)
{
    double hod = fmod(s / 3600.0, 24.0);
    if (hod >= PEAK_START_HOUR && hod < PEAK_START_HOUR + t->peak_hours)
        return t->baseline_rps * t->peak_ratio;
    /* Diurnal swing +-30 % around the baseline, highest mid-afternoon. */
    return t->baseline_rps * (1.0 + 0.3 * sin(2.0 * M_PI * (hod - 8.0) / 24.0));
}

int sw_plan_trace_generate(struct sw_plan_trace *t)
{
    free(t->r);
    t->r = NULL;
    t->n = t->cap = 0;
    unsigned short xs[3] = {0x330e, (unsigned short)(t->seed & 0xffff),
                            (unsigned short)(t->seed >> 16)};
    double total_s = t->days * 86400.0;
    size_t cap = (size_t)(t->baseline_rps * total_s * (t->peak_ratio > 1.3 ? t->peak_ratio : 1.3) / 4) + 1024;
    t->r = malloc(cap * sizeof *t->r);
    if (!t->r)
        return -1;
    t->cap = cap;
    /* Piecewise-constant rate per minute; Poisson arrivals within it. */
    double now = 0;
    for (double m0 = 0; m0 < total_s; m0 += 60) {
        double rate = synth_rate(t, m0);
        if (now < m0)
            now = m0;
        for (;;) {
            double gap = -log(unif(xs)) / rate;
            if (now + gap >= m0 + 60) {
                now = m0 + 60;
                break;
            }
            now += gap;
            if (t->n == t->cap) {
                size_t nc = t->cap * 2;
                struct sw_plan_req *nr = realloc(t->r, nc * sizeof *nr);
                if (!nr)
                    return -1;
                t->r = nr;
                t->cap = nc;
            }
            t->r[t->n++] = (struct sw_plan_req){
                .t_ms = (uint32_t)(now * 1000.0),
                .prompt = lognormal(xs, t->prompt_mean, SIGMA_PROMPT),
                .output = lognormal(xs, t->output_mean, SIGMA_OUTPUT),
                .allow_cloud = erand48(xs) < t->allow_share,
            };
        }
    }
    t->duration_ms = (int64_t)(total_s * 1000.0);
    return t->n ? 0 : -1;
}

int sw_plan_trace_synthetic(const char *spec, struct sw_plan_trace *t, char *err, size_t errlen)
{
    memset(t, 0, sizeof *t);
    t->baseline_rps = 10;
    t->peak_ratio = 5;
    t->peak_hours = 3;
    t->days = 7;
    t->seed = 1;
    t->prompt_mean = 500;
    t->output_mean = 250;
    t->allow_share = 1;
    char buf[512];
    snprintf(buf, sizeof buf, "%s", spec);
    char *save = NULL;
    for (char *kv = strtok_r(buf, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(kv, '=');
        if (!eq) {
            seterr(err, errlen, "--synthetic: \"%s\" is not key=value", kv);
            return -1;
        }
        *eq = '\0';
        const char *k = trim(kv), *v = trim(eq + 1);
        char *e;
        double d = strtod(v, &e);
        bool bad = e == v || !isfinite(d);
        if (!strcmp(k, "baseline")) {
            bad = bad || d <= 0 || d > 10000 || (*e && strcmp(e, "/s"));
            t->baseline_rps = d;
        } else if (!strcmp(k, "peak")) {
            bad = bad || d < 1 || d > 100 || (*e && strcmp(e, "x"));
            t->peak_ratio = d;
        } else if (!strcmp(k, "peak_hours")) {
            bad = bad || *e || d < 0 || d > 24 || d != floor(d);
            t->peak_hours = (int)d;
        } else if (!strcmp(k, "days")) {
            bad = bad || *e || d < 1 || d > 49 || d != floor(d);
            t->days = (int)d;
        } else if (!strcmp(k, "seed")) {
            bad = bad || *e || d < 0 || d > 4294967295.0 || d != floor(d);
            t->seed = (unsigned)d;
        } else if (!strcmp(k, "prompt")) {
            bad = bad || *e || d < 1 || d > 100000;
            t->prompt_mean = d;
        } else if (!strcmp(k, "output")) {
            bad = bad || *e || d < 1 || d > 100000;
            t->output_mean = d;
        } else if (!strcmp(k, "allow")) {
            bad = bad || *e || d < 0 || d > 1;
            t->allow_share = d;
        } else {
            seterr(err, errlen, "--synthetic: unknown key \"%s\" (allowed: baseline, peak, "
                   "peak_hours, days, seed, prompt, output, allow)", k);
            return -1;
        }
        if (bad) {
            seterr(err, errlen, "--synthetic: %s=\"%s\" is not valid (e.g. baseline=10/s, "
                   "peak=5x, peak_hours=3, days=7, seed=1, prompt=500, output=250, allow=0.9)",
                   k, v);
            return -1;
        }
    }
    if (sw_plan_trace_generate(t)) {
        seterr(err, errlen, t->r ? "--synthetic: the shape gives no requests (raise baseline or "
                                   "days)" : "--synthetic: out of memory");
        sw_plan_trace_free(t);
        return -1;
    }
    return 0;
}
