/* `spillway plan` (plan.h): loads the config and the trace, replays it under
 * each strategy, the sweeps and the break-even search, and reports. */
#include "plan/plan.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "config/config.h"
#include "plan/report.h"
#include "plan/sim.h"
#include "plan/trace.h"

#define PEAK_TARGET 0.99
#define MAX_SWEEP_ROWS 64
#define MAX_SWEEPS 4

static void usage(FILE *out)
{
    fprintf(out,
            "Usage: spillway plan -c CONFIG (--trace FILE | --synthetic SPEC) [options]\n"
            "\n"
            "Replays a trace through Spillway's own router (the same decision, queue,\n"
            "breakers, buckets, spend window and learned rates as the gateway) on a\n"
            "simulated clock and compares strategies side by side: local only sized for\n"
            "the baseline (the config's slots), local only sized for the peak (the fewest\n"
            "slots keeping 99 %% of requests within the TTFT budget), cloud only, and the\n"
            "hybrid as configured. docs/planning.md explains every number.\n"
            "\n"
            "  -c, --config FILE     the gateway's YAML config (backend speeds:\n"
            "                        prefill_ms_per_token, decode_tokens_per_s; costs:\n"
            "                        plan.local_cost, price.*)\n"
            "      --trace FILE      a CSV time,prompt_tokens,output_tokens[,allow_cloud][,priority]\n"
            "                        or a decision log (JSON lines); detected from the content\n"
            "      --synthetic SPEC  e.g. \"baseline=10/s,peak=5x,peak_hours=3,days=7,seed=1\"\n"
            "                        (also prompt=MEAN, output=MEAN tokens, allow=SHARE)\n"
            "      --model NAME      the model to plan (default: the first in the config)\n"
            "      --sweep P=A..B[:STEP] | P=V1,V2,...  what-if rows, P one of slots,\n"
            "                        budget_ms, cap (USD per spend window); repeatable\n"
            "      --strategies LIST only these of baseline,peak,cloud,hybrid (default all)\n"
            "      --no-breakeven    skip the peak-ratio search for the break-even point\n"
            "      --out DIR         also write DIR/report.html and DIR/summary.json\n"
            "  -h, --help            this text\n");
}

static char *read_file(const char *path, size_t *len, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: cannot read: %s", path, strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 20, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (n < cap)
            break;
        cap *= 2;
        char *nb = realloc(buf, cap);
        if (!nb) {
            free(buf);
            buf = NULL;
        }
        buf = nb;
    }
    if (buf && ferror(f)) {
        snprintf(err, errlen, "%s: cannot read: %s", path, strerror(errno));
        free(buf);
        buf = NULL;
    } else if (!buf) {
        snprintf(err, errlen, "%s: out of memory", path);
    }
    fclose(f);
    *len = n;
    return buf;
}

static int parse_sweep(const char *arg, struct sw_plan_sweep *sw, char *err, size_t errlen)
{
    memset(sw, 0, sizeof *sw);
    const char *eq = strchr(arg, '=');
    size_t kl = eq ? (size_t)(eq - arg) : 0;
    if (!eq || kl >= sizeof sw->param) {
        snprintf(err, errlen, "--sweep \"%s\": expected slots=, budget_ms= or cap=", arg);
        return -1;
    }
    memcpy(sw->param, arg, kl);
    sw->param[kl] = '\0';
    bool is_slots = !strcmp(sw->param, "slots"), is_budget = !strcmp(sw->param, "budget_ms");
    if (!is_slots && !is_budget && strcmp(sw->param, "cap")) {
        snprintf(err, errlen, "--sweep: unknown parameter \"%s\" (slots, budget_ms or cap)",
                 sw->param);
        return -1;
    }
    sw->values = calloc(MAX_SWEEP_ROWS, sizeof *sw->values);
    if (!sw->values)
        return -1;
    const char *v = eq + 1;
    double lo, hi, step = 0;
    char *e;
    const char *dots = strstr(v, "..");
    if (dots) {
        char first[64];
        size_t fl = (size_t)(dots - v);
        bool bad = fl == 0 || fl >= sizeof first;
        memcpy(first, v, bad ? 0 : fl);
        first[bad ? 0 : fl] = '\0';
        lo = strtod(first, &e);     /* alone: "1..4" would read as "1." */
        bad = bad || *e;
        hi = strtod(dots + 2, &e);
        if (*e == ':')
            step = strtod(e + 1, &e);
        bad = bad || *e || !isfinite(lo) || !isfinite(hi) || hi < lo || step < 0;
        if (!bad && step == 0)
            step = is_slots ? 1 : is_budget ? 200 : (hi - lo) / 8;
        if (bad || step <= 0 || (hi - lo) / step + 1 > MAX_SWEEP_ROWS + 1e-9) {
            snprintf(err, errlen, "--sweep %s: \"%s\" is not A..B[:STEP] with A <= B and at "
                     "most %d rows", sw->param, v, MAX_SWEEP_ROWS);
            return -1;
        }
        for (double x = lo; x <= hi + 1e-9 && sw->n < MAX_SWEEP_ROWS; x += step)
            sw->values[sw->n++] = x;
    } else {
        for (const char *p = v; *p && sw->n < MAX_SWEEP_ROWS;) {
            double x = strtod(p, &e);
            if (e == p || (*e && *e != ',') || !isfinite(x)) {
                snprintf(err, errlen, "--sweep %s: \"%s\" is not a number list", sw->param, v);
                return -1;
            }
            sw->values[sw->n++] = x;
            p = *e ? e + 1 : e;
        }
    }
    for (size_t i = 0; i < sw->n; i++) {
        double x = sw->values[i];
        if ((is_slots && (x < 1 || x > 1024 || x != floor(x))) ||
            (is_budget && (x < 1 || x > 600000)) || (!is_slots && !is_budget && x < 0)) {
            snprintf(err, errlen, "--sweep %s: %g is out of range (%s)", sw->param, x,
                     is_slots ? "whole numbers 1..1024" : is_budget ? "1..600000 ms" : ">= 0 USD");
            return -1;
        }
    }
    if (sw->n == 0) {
        snprintf(err, errlen, "--sweep %s: no values", sw->param);
        return -1;
    }
    return 0;
}

#define STRAT_BASE 1
#define STRAT_PEAK 2
#define STRAT_CLOUD 4
#define STRAT_HYBRID 8

static int parse_strategies(const char *arg, int *out)
{
    char buf[128];
    snprintf(buf, sizeof buf, "%s", arg);
    *out = 0;
    char *save = NULL;
    for (char *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
        if (!strcmp(w, "baseline"))
            *out |= STRAT_BASE;
        else if (!strcmp(w, "peak"))
            *out |= STRAT_PEAK;
        else if (!strcmp(w, "cloud"))
            *out |= STRAT_CLOUD;
        else if (!strcmp(w, "hybrid"))
            *out |= STRAT_HYBRID;
        else
            return -1;
    }
    return *out ? 0 : -1;
}

static bool model_has(const struct sw_config *cfg, const struct sw_config_model *m, enum sw_tier t)
{
    for (size_t k = 0; k < m->n_backends; k++)
        if (cfg->backends[m->backends[k]].tier == t)
            return true;
    return false;
}

/* Fewest slots (>= from) keeping PEAK_TARGET within budget, local only. */
static int search_peak(struct sw_config *cfg, const struct sw_config_model *m,
                       const struct sw_plan_trace *t, long from, struct sw_plan_result *best,
                       bool *ok, char *err, size_t errlen)
{
    struct sw_plan_strategy st = {.name = "local, sized for peak", .tiers = SW_PLAN_LOCAL,
                                  .cap_usd = -1};
    struct sw_plan_result r;
    /* Fewer slots than the busiest hour's offered load (arrivals x mean
     * service time) cannot hold it; start there. */
    {
        double prefill = 0, tps = 0;
        for (size_t k = 0; k < m->n_backends; k++)
            if (cfg->backends[m->backends[k]].tier == SW_TIER_LOCAL) {
                sw_plan_speeds(cfg, m->backends[k], &t->learned, &prefill, &tps);
                break;
            }
        size_t nh = (size_t)(t->duration_ms / 3600000) + 1;
        uint32_t *per = calloc(nh, sizeof *per);
        double busiest = 0, svc = 0;
        if (per && tps > 0) {
            for (size_t i = 0; i < t->n; i++) {
                per[t->r[i].t_ms / 3600000]++;
                svc += t->r[i].prompt * prefill + 1000.0 * t->r[i].output / tps;
            }
            for (size_t i = 0; i < nh; i++)
                if (per[i] > busiest)
                    busiest = per[i];
            svc = t->n ? svc / (double)t->n : 0;
            double load = busiest / 3600.0 * svc / 1000.0;
            if (load > (double)from)
                from = (long)load;
        }
        free(per);
    }
    if (from > 1024)
        from = 1024;
    long lo = from > 0 ? from : 1, hi = lo;
    *ok = false;
    memset(best, 0, sizeof *best);
    /* grow until it holds, then bisect between the last failure and it */
    for (;;) {
        st.slots = hi;
        if (sw_plan_run(cfg, m, t, &st, &r, err, errlen))
            return -1;
        sw_plan_derive(cfg, m, &r);
        if (r.within_share >= PEAK_TARGET) {
            *ok = true;
            break;
        }
        sw_plan_result_free(&r);
        if (hi >= 1024) {
            st.slots = 1024;
            if (sw_plan_run(cfg, m, t, &st, &r, err, errlen))
                return -1;
            sw_plan_derive(cfg, m, &r);
            break;
        }
        lo = hi + 1;
        hi = hi + hi / 4 + 1 > 1024 ? 1024 : hi + hi / 4 + 1;
    }
    *best = r;
    /* to within 2 % (or one slot) of the fewest */
    while (*ok && lo < hi && hi - lo > hi / 50) {
        long mid = lo + (hi - lo) / 2;
        st.slots = mid;
        if (sw_plan_run(cfg, m, t, &st, &r, err, errlen))
            return -1;
        sw_plan_derive(cfg, m, &r);
        if (r.within_share >= PEAK_TARGET) {
            sw_plan_result_free(best);
            *best = r;
            hi = mid;
        } else {
            sw_plan_result_free(&r);
            lo = mid + 1;
        }
    }
    snprintf(best->name, sizeof best->name, "%s", st.name);
    return 0;
}

/* The workload shape of a file trace, for the break-even search: baseline =
 * the median hourly rate, peak hours per day = hours above twice it. */
static void derive_shape(struct sw_plan_trace *shape, const struct sw_plan_trace *t)
{
    size_t nh = (size_t)((t->duration_ms + 3599999) / 3600000);
    uint32_t *h = calloc(nh ? nh : 1, sizeof *h), *s = calloc(nh ? nh : 1, sizeof *s);
    double prompt = 0, out = 0, allow = 0, peak = 0;
    if (h && s) {
        for (size_t i = 0; i < t->n; i++) {
            h[t->r[i].t_ms / 3600000]++;
            prompt += t->r[i].prompt;
            out += t->r[i].output;
            allow += t->r[i].allow_cloud;
        }
        memcpy(s, h, nh * sizeof *s);
        for (size_t i = 1; i < nh; i++) /* insertion sort: a few hundred hours */
            for (size_t j = i; j > 0 && s[j - 1] > s[j]; j--) {
                uint32_t x = s[j];
                s[j] = s[j - 1];
                s[j - 1] = x;
            }
        double med = s[nh / 2] ? s[nh / 2] : 1;
        size_t hot = 0;
        for (size_t i = 0; i < nh; i++)
            if (h[i] > 2 * med) {
                hot++;
                peak += h[i] / med;
            }
        memset(shape, 0, sizeof *shape);
        shape->baseline_rps = med / 3600.0;
        shape->peak_ratio = hot ? peak / (double)hot : 1;
        double days = nh / 24.0 < 1 ? 1 : nh / 24.0;
        shape->peak_hours = (int)lround((double)hot / days);
        shape->prompt_mean = t->n ? prompt / (double)t->n : 500;
        shape->output_mean = t->n ? out / (double)t->n : 250;
        shape->allow_share = t->n ? allow / (double)t->n : 1;
    }
    free(h);
    free(s);
    if (shape->prompt_mean < 1)
        shape->prompt_mean = 1;
    if (shape->output_mean < 1)
        shape->output_mean = 1;
}

/* Hybrid vs local sized for the peak vs cloud only at peak ratios 1..10x of
 * the trace's shape (one simulated day each). */
static int breakeven(struct sw_config *cfg, const struct sw_config_model *m,
                     const struct sw_plan_trace *t, struct sw_plan_breakeven *be, char *err,
                     size_t errlen)
{
    static const double ratios[] = {1, 1.5, 2, 3, 4, 5, 6, 8, 10};
    struct sw_plan_trace shape;
    if (t->baseline_rps > 0) {
        shape = *t;
        shape.r = NULL;
        be->derived = false;
    } else {
        derive_shape(&shape, t);
        shape.seed = 1;
        be->derived = true;
    }
    shape.days = 1;
    if (shape.peak_hours < 1)
        shape.peak_hours = 1;
    be->baseline_rps = shape.baseline_rps;
    be->peak_hours = shape.peak_hours;
    be->n = 0;
    be->ratio = 0;
    long from = sw_plan_config_slots(cfg, m);
    for (size_t i = 0; i < sizeof ratios / sizeof ratios[0]; i++) {
        shape.peak_ratio = ratios[i];
        if (sw_plan_trace_generate(&shape)) {
            if (shape.r)
                continue;   /* no request in a day at this ratio: nothing to compare */
            snprintf(err, errlen, "break-even: out of memory");
            sw_plan_trace_free(&shape);
            return -1;
        }
        struct sw_plan_strategy hy = {.name = "hybrid", .tiers = SW_PLAN_LOCAL | SW_PLAN_CLOUD,
                                      .cap_usd = -1},
                                cl = {.name = "cloud", .tiers = SW_PLAN_CLOUD, .cap_usd = -1};
        struct sw_plan_result rh, rc, rp;
        bool ok;
        if (sw_plan_run(cfg, m, &shape, &hy, &rh, err, errlen) ||
            sw_plan_run(cfg, m, &shape, &cl, &rc, err, errlen) ||
            search_peak(cfg, m, &shape, from, &rp, &ok, err, errlen)) {
            sw_plan_trace_free(&shape);
            return -1;
        }
        sw_plan_derive(cfg, m, &rh);
        sw_plan_derive(cfg, m, &rc);
        size_t k = be->n++;
        be->ratios[k] = ratios[i];
        be->hybrid[k] = rh.total_per_month;
        be->cloud[k] = rc.total_per_month;
        be->local_peak[k] = ok ? rp.total_per_month : INFINITY;
        be->peak_slots[k] = ok ? rp.slots : -1;
        be->hybrid_within[k] = rh.within_share;
        from = ok ? rp.slots : from;
        sw_plan_result_free(&rh);
        sw_plan_result_free(&rc);
        sw_plan_result_free(&rp);
    }
    sw_plan_trace_free(&shape);
    /* The hybrid's cost less the cheaper single tier's: where it changes
     * sign (the first time), interpolated, is the break-even ratio. */
    double prev = 0;
    int pos = 0, neg = 0;
    for (size_t k = 0; k < be->n; k++) {
        double single = be->local_peak[k] < be->cloud[k] ? be->local_peak[k] : be->cloud[k];
        double d = be->hybrid[k] - single;
        d < 0 ? neg++ : pos++;
        if (k > 0 && be->ratio == 0 && ((prev < 0) != (d < 0))) {
            double f = isfinite(prev) && isfinite(d) && d != prev ? prev / (prev - d) : 0.5;
            be->ratio = be->ratios[k - 1] + f * (be->ratios[k] - be->ratios[k - 1]);
            be->pays_above = d < 0;
        }
        prev = d;
    }
    be->always = be->ratio > 0 ? 0 : neg && !pos ? 1 : -1;
    return 0;
}

/* The command line of `spillway plan`, as parsed. */
struct plan_args {
    const char *config_path, *trace_path, *synth, *model_name, *out_dir;
    const char *sweep_args[MAX_SWEEPS];
    size_t n_sweep_args;
    bool do_breakeven;
    int strategies;
};

/* The hybrid strategy: the model's local and cloud backends, the config's cap. */
static const struct sw_plan_strategy HYBRID = {.name = "hybrid",
                                               .tiers = SW_PLAN_LOCAL | SW_PLAN_CLOUD,
                                               .cap_usd = -1};

/* Parses the options into *a: -1 to go on, else the exit code (usage and errors printed). */
static int plan_parse_args(int argc, char **argv, struct plan_args *a)
{
    static const struct option opts[] = {
        {"config", required_argument, NULL, 'c'},  {"trace", required_argument, NULL, 't'},
        {"synthetic", required_argument, NULL, 's'}, {"model", required_argument, NULL, 'm'},
        {"sweep", required_argument, NULL, 'w'},   {"out", required_argument, NULL, 'o'},
        {"no-breakeven", no_argument, NULL, 'B'},  {"help", no_argument, NULL, 'h'},
        {"strategies", required_argument, NULL, 'S'},
        {NULL, 0, NULL, 0},
    };
    *a = (struct plan_args){.do_breakeven = true,
                            .strategies = STRAT_BASE | STRAT_PEAK | STRAT_CLOUD | STRAT_HYBRID};
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "c:h", opts, NULL)) != -1) {
        switch (c) {
        case 'c': a->config_path = optarg; break;
        case 't': a->trace_path = optarg; break;
        case 's': a->synth = optarg; break;
        case 'm': a->model_name = optarg; break;
        case 'o': a->out_dir = optarg; break;
        case 'B': a->do_breakeven = false; break;
        case 'S':
            if (parse_strategies(optarg, &a->strategies)) {
                fprintf(stderr, "spillway plan: --strategies \"%s\": a comma list of baseline, "
                                "peak, cloud, hybrid\n", optarg);
                return 2;
            }
            break;
        case 'w':
            if (a->n_sweep_args == MAX_SWEEPS) {
                fprintf(stderr, "spillway plan: at most %d --sweep options\n", MAX_SWEEPS);
                return 2;
            }
            a->sweep_args[a->n_sweep_args++] = optarg;
            break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "spillway plan: unexpected argument '%s'\n", argv[optind]);
        return 2;
    }
    if (!a->config_path || (!a->trace_path == !a->synth)) {
        fprintf(stderr, "spillway plan: needs -c CONFIG and exactly one of --trace FILE or "
                        "--synthetic SPEC (see spillway plan --help)\n");
        return 2;
    }
    return -1;
}

/* Parses each --sweep into sweeps[]: 0, or -1 (printed; the values parsed so far freed). */
static int plan_parse_sweeps(const struct plan_args *a, struct sw_plan_sweep *sweeps, char *err,
                             size_t errlen)
{
    for (size_t i = 0; i < a->n_sweep_args; i++)
        if (parse_sweep(a->sweep_args[i], &sweeps[i], err, errlen)) {
            fprintf(stderr, "spillway plan: %s\n", err);
            for (size_t k = 0; k <= i; k++)
                free(sweeps[k].values);
            return -1;
        }
    return 0;
}

/* Loads the config into *cfg and finds the model: the model, or NULL (printed; *cfg may be
 * set all the same, for the caller to unref). */
static const struct sw_config_model *plan_load_config(const struct plan_args *a,
                                                      struct sw_config **cfg)
{
    struct sw_config_errors errs = {0};
    if (sw_config_load_file(a->config_path, cfg, &errs)) {
        for (size_t i = 0; i < errs.n; i++)
            fprintf(stderr, "%s\n", errs.msgs[i]);
        sw_config_errors_free(&errs);
        return NULL;
    }
    sw_config_errors_free(&errs);
    const struct sw_config_model *m = a->model_name ? sw_config_find_model(*cfg, a->model_name)
                                                    : &(*cfg)->models[0];
    if (!m)
        fprintf(stderr, "spillway plan: --model: no model \"%s\" in %s\n", a->model_name,
                a->config_path);
    return m;
}

/* The trace: the synthetic one, or the file (a decision log when it starts with '{', else
 * CSV). 0, or -1 (printed). */
static int plan_load_trace(const struct plan_args *a, struct sw_plan_trace *trace, char *err,
                           size_t errlen)
{
    if (a->synth) {
        if (sw_plan_trace_synthetic(a->synth, trace, err, errlen)) {
            fprintf(stderr, "spillway plan: %s\n", err);
            return -1;
        }
        return 0;
    }
    size_t len;
    char *text = read_file(a->trace_path, &len, err, errlen);
    if (!text) {
        fprintf(stderr, "spillway plan: %s\n", err);
        return -1;
    }
    size_t k = 0;
    while (k < len && (text[k] == ' ' || text[k] == '\n' || text[k] == '\r' || text[k] == '\t'))
        k++;
    int r = k < len && text[k] == '{' ? sw_plan_trace_declog(text, len, trace, err, errlen)
                                      : sw_plan_trace_csv(text, len, trace, err, errlen);
    free(text);
    if (r) {
        fprintf(stderr, "spillway plan: %s: %s\n", a->trace_path, err);
        return -1;
    }
    return 0;
}

/* Runs the chosen strategies the model's tiers allow into res[*n_res...] (*n_res counts the
 * results to free, on failure too) and sets rep->peak_target_ok. 0, or -1 (err set). */
static int plan_run_strategies(struct sw_config *cfg, const struct sw_config_model *m,
                               const struct sw_plan_trace *trace, int strategies, bool local,
                               bool cloud, struct sw_plan_result *res, size_t *n_res,
                               struct sw_plan_report *rep, char *err, size_t errlen)
{
    struct sw_plan_strategy base = {.name = "local, sized for baseline", .tiers = SW_PLAN_LOCAL,
                                    .cap_usd = -1},
                            conly = {.name = "cloud only", .tiers = SW_PLAN_CLOUD, .cap_usd = -1},
                            hyb = HYBRID;
    if (local && (strategies & STRAT_BASE)) {
        if (sw_plan_run(cfg, m, trace, &base, &res[*n_res], err, errlen))
            return -1;
        sw_plan_derive(cfg, m, &res[(*n_res)++]);
    }
    rep->peak_target_ok = 1;
    if (local && (strategies & STRAT_PEAK)) {
        bool ok;
        if (search_peak(cfg, m, trace, sw_plan_config_slots(cfg, m), &res[*n_res], &ok, err,
                        errlen))
            return -1;
        rep->peak_target_ok = ok;
        (*n_res)++;
    }
    if (cloud && (strategies & STRAT_CLOUD)) {
        if (sw_plan_run(cfg, m, trace, &conly, &res[*n_res], err, errlen))
            return -1;
        sw_plan_derive(cfg, m, &res[(*n_res)++]);
    }
    if (local && cloud && (strategies & STRAT_HYBRID)) {
        if (sw_plan_run(cfg, m, trace, &hyb, &res[*n_res], err, errlen))
            return -1;
        sw_plan_derive(cfg, m, &res[(*n_res)++]);
    }
    return 0;
}

/* Runs each sweep's values (on the hybrid strategy, or the one tier the model has) into its
 * rows. 0, or -1 (err set; empty for out of memory). */
static int plan_run_sweeps(struct sw_config *cfg, const struct sw_config_model *m,
                           const struct sw_plan_trace *trace, bool local, bool cloud,
                           struct sw_plan_sweep *sweeps, size_t n_sweeps, char *err,
                           size_t errlen)
{
    for (size_t i = 0; i < n_sweeps; i++) {
        struct sw_plan_sweep *sw = &sweeps[i];
        sw->rows = calloc(sw->n, sizeof *sw->rows);
        if (!sw->rows)
            return -1;
        for (size_t k = 0; k < sw->n; k++) {
            struct sw_plan_strategy st = HYBRID;
            if (!local || !cloud)
                st.tiers = local ? SW_PLAN_LOCAL : SW_PLAN_CLOUD;
            if (!strcmp(sw->param, "slots"))
                st.slots = (long)sw->values[k];
            else if (!strcmp(sw->param, "budget_ms"))
                st.budget_ms = (long)sw->values[k];
            else
                st.cap_usd = sw->values[k];
            if (sw_plan_run(cfg, m, trace, &st, &sw->rows[k], err, errlen))
                return -1;
            sw_plan_derive(cfg, m, &sw->rows[k]);
        }
    }
    return 0;
}

/* Fills the rest of the report: source, model, results, costs, the first local backend's
 * speeds. */
static void plan_fill_report(struct sw_plan_report *rep, const struct plan_args *a,
                             const struct sw_config *cfg, const struct sw_config_model *m,
                             struct sw_plan_trace *trace, struct sw_plan_result *res,
                             size_t n_res, struct sw_plan_sweep *sweeps)
{
    rep->source = a->synth ? a->synth : a->trace_path;
    rep->model = m->name;
    rep->trace = trace;
    rep->strategies = res;
    rep->n_strategies = n_res;
    rep->sweeps = sweeps;
    rep->n_sweeps = a->n_sweep_args;
    rep->local_usd_per_hour = cfg->plan.local_usd_per_hour;
    rep->local_usd_per_month = cfg->plan.local_usd_per_month;
    rep->config_slots = sw_plan_config_slots(cfg, m);
    for (size_t k = 0; k < m->n_backends; k++)
        if (cfg->backends[m->backends[k]].tier == SW_TIER_LOCAL) {
            sw_plan_speeds(cfg, m->backends[k], &trace->learned, &rep->local_prefill_ms,
                           &rep->local_decode_tps);
            break;
        }
}

/* Writes out_dir/summary.json and out_dir/report.html (the directory made if need be).
 * 0, or -1 (printed). */
static int plan_write_out(const char *out_dir, const struct sw_plan_report *rep)
{
    char p[4096];
    if (mkdir(out_dir, 0755) && errno != EEXIST) {
        fprintf(stderr, "spillway plan: --out %s: %s\n", out_dir, strerror(errno));
        return -1;
    }
    snprintf(p, sizeof p, "%s/summary.json", out_dir);
    if (sw_plan_report_json(p, rep)) {
        fprintf(stderr, "spillway plan: cannot write %s: %s\n", p, strerror(errno));
        return -1;
    }
    snprintf(p, sizeof p, "%s/report.html", out_dir);
    if (sw_plan_report_html(p, rep)) {
        fprintf(stderr, "spillway plan: cannot write %s: %s\n", p, strerror(errno));
        return -1;
    }
    printf("\nwrote %s/report.html and %s/summary.json\n", out_dir, out_dir);
    return 0;
}

/* Frees the results, the sweeps' rows and values, the trace and the config. */
static void plan_free(struct sw_plan_result *res, size_t n_res, struct sw_plan_sweep *sweeps,
                      size_t n_sweeps, struct sw_plan_trace *trace, struct sw_config *cfg)
{
    for (size_t i = 0; i < n_res; i++)
        sw_plan_result_free(&res[i]);
    for (size_t i = 0; i < n_sweeps; i++) {
        for (size_t k = 0; sweeps[i].rows && k < sweeps[i].n; k++)
            sw_plan_result_free(&sweeps[i].rows[k]);
        free(sweeps[i].rows);
        free(sweeps[i].values);
    }
    sw_plan_trace_free(trace);
    if (cfg)
        sw_config_unref(cfg);
}

int sw_plan_main(int argc, char **argv)
{
    struct plan_args a;
    int rc = plan_parse_args(argc, argv, &a);
    if (rc >= 0)
        return rc;
    char err[512] = "";
    rc = 1;
    struct sw_plan_sweep sweeps[MAX_SWEEPS];
    memset(sweeps, 0, sizeof sweeps);
    if (plan_parse_sweeps(&a, sweeps, err, sizeof err))
        return 2;

    struct sw_config *cfg = NULL;
    struct sw_plan_trace trace = {0};
    struct sw_plan_result res[4];
    size_t n_res = 0;
    struct sw_plan_report rep = {0};
    const struct sw_config_model *m = plan_load_config(&a, &cfg);
    if (!m || plan_load_trace(&a, &trace, err, sizeof err))
        goto out;
    bool local = model_has(cfg, m, SW_TIER_LOCAL), cloud = model_has(cfg, m, SW_TIER_CLOUD);
    if (plan_run_strategies(cfg, m, &trace, a.strategies, local, cloud, res, &n_res, &rep, err,
                            sizeof err) ||
        plan_run_sweeps(cfg, m, &trace, local, cloud, sweeps, a.n_sweep_args, err, sizeof err) ||
        (a.do_breakeven && local && cloud && breakeven(cfg, m, &trace, &rep.be, err, sizeof err)))
        goto fail;
    plan_fill_report(&rep, &a, cfg, m, &trace, res, n_res, sweeps);
    sw_plan_report_text(stdout, &rep);
    if (a.out_dir && plan_write_out(a.out_dir, &rep))
        goto out;
    rc = 0;
    goto out;
fail:
    fprintf(stderr, "spillway plan: %s\n", err[0] ? err : "out of memory");
out:
    plan_free(res, n_res, sweeps, a.n_sweep_args, &trace, cfg);
    return rc;
}
