/* The planner's outputs (report.h). The HTML page is self-contained (inline
 * CSS and SVG, no script) and shows the same numbers as summary.json, rounded
 * as the text table rounds them. */
#include "plan/report.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---- Text ---- */

static void breakeven_line(char *out, size_t len, const struct sw_plan_breakeven *b)
{
    if (b->ratio > 0)
        snprintf(out, len, "the hybrid costs less than the cheaper single tier %s a peak of "
                 "%.2gx the baseline, more %s it", b->pays_above ? "above" : "below", b->ratio,
                 b->pays_above ? "below" : "above");
    else if (b->always > 0)
        snprintf(out, len, "the hybrid costs less than either single tier at every peak ratio "
                 "from 1x to 10x");
    else
        snprintf(out, len, "the hybrid never costs less than the cheaper single tier between "
                 "1x and 10x with these costs");
}

static void text_row(FILE *o, const struct sw_plan_result *r, const char *label)
{
    fprintf(o, "%-28s %6ld %7.1f%% %6.0f %6.0f %6.0f %6.1f%% %7.1f %6.0f %10.2f %10.2f %10.2f %10.2f %8.3f %6.1f%%\n",
            label, r->slots, 100 * r->within_share, r->ttft_p50, r->ttft_p95, r->ttft_p99,
            100 * r->cloud_share, r->spill_per_hour_mean, r->spill_per_hour_max, r->spend_per_day,
            r->spend_per_month, r->local_per_month, r->total_per_month, r->usd_per_mtok,
            100 * r->utilisation);
}

static void text_head(FILE *o, const char *first)
{
    fprintf(o, "%-28s %6s %8s %6s %6s %6s %7s %7s %6s %10s %10s %10s %10s %8s %7s\n", first,
            "slots", "in-TTFT", "p50", "p95", "p99", "cloud", "spill/h", "max/h", "cloud$/d",
            "cloud$/mo", "local$/mo", "total$/mo", "$/Mtok", "util");
}

void sw_plan_report_text(FILE *o, const struct sw_plan_report *r)
{
    const struct sw_plan_trace *t = r->trace;
    fprintf(o, "trace: %s: %zu requests over %.1f h; model %s; local prefill %.3g ms/token, "
            "decode %.3g tokens/s per slot%s\n",
            r->source, t->n, (double)t->duration_ms / 3600000.0, r->model, r->local_prefill_ms,
            r->local_decode_tps, t->learned.samples ? " (learned from the decision log)" : "");
    if (r->n_strategies)
        fprintf(o, "TTFT budget %ld ms; local cost $%.2f/h + $%.2f/month for %ld slots\n\n",
                r->strategies[0].budget_ms, r->local_usd_per_hour, r->local_usd_per_month,
                r->config_slots);
    text_head(o, "strategy");
    for (size_t i = 0; i < r->n_strategies; i++)
        text_row(o, &r->strategies[i], r->strategies[i].name);
    if (r->n_strategies > 1 && !r->peak_target_ok)
        fprintf(o, "(local sized for peak: even 1024 slots keep fewer than 99 %% within budget)\n");
    for (size_t s = 0; s < r->n_sweeps; s++) {
        const struct sw_plan_sweep *sw = &r->sweeps[s];
        fprintf(o, "\nsweep %s (hybrid as configured otherwise)\n", sw->param);
        text_head(o, sw->param);
        for (size_t k = 0; k < sw->n; k++) {
            char label[32];
            snprintf(label, sizeof label, "%s=%g", sw->param, sw->values[k]);
            text_row(o, &sw->rows[k], label);
        }
    }
    if (r->be.n) {
        fprintf(o, "\nbreak-even (one day, baseline %.3g/s, %d peak hour%s a day%s): monthly USD\n",
                r->be.baseline_rps, r->be.peak_hours, r->be.peak_hours == 1 ? "" : "s",
                r->be.derived ? ", shape derived from the trace" : "");
        fprintf(o, "%8s %12s %12s %8s %12s %9s\n", "peak", "hybrid", "local-peak", "slots",
                "cloud-only", "hyb in-TTFT");
        for (size_t i = 0; i < r->be.n; i++)
            fprintf(o, "%7.1fx %12.2f %12.2f %8ld %12.2f %8.1f%%\n", r->be.ratios[i],
                    r->be.hybrid[i], r->be.local_peak[i], r->be.peak_slots[i], r->be.cloud[i],
                    100 * r->be.hybrid_within[i]);
        char line[256];
        breakeven_line(line, sizeof line, &r->be);
        fprintf(o, "break-even: %s\n", line);
    }
}

/* ---- JSON ---- */

static json_t *result_json(const struct sw_plan_result *r)
{
    return json_pack("{s:s,s:I,s:I,s:I,s:I,s:I,s:I,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,"
                     "s:f,s:f,s:f,s:I,s:f,s:f}",
                     "name", r->name, "slots", (json_int_t)r->slots, "requests", (json_int_t)r->n,
                     "local", (json_int_t)r->local, "cloud", (json_int_t)r->cloud,
                     "rejected", (json_int_t)r->rejected, "spilled", (json_int_t)r->spilled,
                     "within_share", r->within_share, "ttft_p50_ms", r->ttft_p50,
                     "ttft_p95_ms", r->ttft_p95, "ttft_p99_ms", r->ttft_p99,
                     "cloud_share", r->cloud_share, "rejected_share", r->rejected_share,
                     "spill_per_hour_mean", r->spill_per_hour_mean,
                     "spill_per_hour_max", r->spill_per_hour_max,
                     "cloud_usd_per_day", r->spend_per_day,
                     "cloud_usd_per_month", r->spend_per_month,
                     "local_usd_per_month", r->local_per_month,
                     "total_usd_per_month", r->total_per_month,
                     "usd_per_mtok", r->usd_per_mtok, "local_utilisation", r->utilisation,
                     "budget_ms", (json_int_t)r->budget_ms, "cap_usd", r->cap_usd,
                     "ttft_mean_ms", r->local + r->cloud ? r->ttft_sum_ms / (double)(r->local + r->cloud) : 0.0);
}

static json_t *hours_json(const struct sw_plan_result *r)
{
    json_t *a = json_array(), *q = json_array(), *c = json_array(), *s = json_array(),
           *w = json_array();
    for (size_t i = 0; i < r->n_hours; i++) {
        json_array_append_new(a, json_integer(r->hours[i].arrivals));
        json_array_append_new(q, json_integer(r->hours[i].queue_max));
        json_array_append_new(c, json_integer(r->hours[i].cloud));
        json_array_append_new(s, json_real(r->hours[i].spend_usd));
        json_array_append_new(w, json_integer(r->hours[i].within));
    }
    return json_pack("{s:o,s:o,s:o,s:o,s:o}", "arrivals", a, "local_queue_max", q, "cloud", c,
                     "cloud_usd", s, "within", w);
}

static const struct sw_plan_result *hybrid_of(const struct sw_plan_report *r)
{
    return r->n_strategies ? &r->strategies[r->n_strategies - 1] : NULL;
}

int sw_plan_report_json(const char *path, const struct sw_plan_report *r)
{
    json_t *root = json_object(), *st = json_array();
    json_object_set_new(root, "trace",
                        json_pack("{s:s,s:I,s:f,s:f,s:f}", "source", r->source, "requests",
                                  (json_int_t)r->trace->n, "hours",
                                  (double)r->trace->duration_ms / 3600000.0,
                                  "local_prefill_ms_per_token", r->local_prefill_ms,
                                  "local_decode_tokens_per_s", r->local_decode_tps));
    json_object_set_new(root, "model", json_string(r->model));
    json_object_set_new(root, "local_cost", json_pack("{s:f,s:f}", "usd_per_hour",
                                                      r->local_usd_per_hour, "usd_per_month",
                                                      r->local_usd_per_month));
    for (size_t i = 0; i < r->n_strategies; i++)
        json_array_append_new(st, result_json(&r->strategies[i]));
    json_object_set_new(root, "strategies", st);
    json_object_set_new(root, "peak_target_met", json_boolean(r->peak_target_ok));
    json_t *sws = json_array();
    for (size_t s = 0; s < r->n_sweeps; s++) {
        json_t *rows = json_array();
        for (size_t k = 0; k < r->sweeps[s].n; k++) {
            json_t *row = result_json(&r->sweeps[s].rows[k]);
            json_object_set_new(row, "value", json_real(r->sweeps[s].values[k]));
            json_array_append_new(rows, row);
        }
        json_array_append_new(sws, json_pack("{s:s,s:o}", "param", r->sweeps[s].param, "rows", rows));
    }
    json_object_set_new(root, "sweeps", sws);
    if (r->be.n) {
        json_t *rows = json_array();
        for (size_t i = 0; i < r->be.n; i++)
            json_array_append_new(rows, json_pack("{s:f,s:f,s:o,s:I,s:f,s:f}", "peak_ratio",
                                                  r->be.ratios[i], "hybrid_usd_per_month",
                                                  r->be.hybrid[i], "local_peak_usd_per_month",
                                                  isfinite(r->be.local_peak[i])
                                                      ? json_real(r->be.local_peak[i])
                                                      : json_null(),
                                                  "local_peak_slots",
                                                  (json_int_t)r->be.peak_slots[i],
                                                  "cloud_usd_per_month", r->be.cloud[i],
                                                  "hybrid_within_share", r->be.hybrid_within[i]));
        json_object_set_new(root, "break_even",
                            json_pack("{s:o,s:b,s:i,s:b,s:f,s:i,s:o}", "peak_ratio",
                                      r->be.ratio > 0 ? json_real(r->be.ratio) : json_null(),
                                      "hybrid_cheaper_above", r->be.pays_above,
                                      "hybrid_cheaper_always", r->be.always,
                                      "derived_shape", r->be.derived, "baseline_rps",
                                      r->be.baseline_rps, "peak_hours", r->be.peak_hours, "rows",
                                      rows));
    }
    const struct sw_plan_result *h = hybrid_of(r);
    if (h)
        json_object_set_new(root, "hours", json_pack("{s:s,s:o}", "strategy", h->name,
                                                     "series", hours_json(h)));
    int rc = json_dump_file(root, path, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
    json_decref(root);
    return rc;
}

/* ---- HTML ---- */

static void esc(FILE *o, const char *s)
{
    for (; *s; s++) {
        if (*s == '<')
            fputs("&lt;", o);
        else if (*s == '>')
            fputs("&gt;", o);
        else if (*s == '&')
            fputs("&amp;", o);
        else if (*s == '"')
            fputs("&quot;", o);
        else
            fputc(*s, o);
    }
}

/* Cells carry data-k (the summary.json field) so a reader (or the test) can
 * match each shown number to its source; the text is what people read. */
static void html_row(FILE *o, const struct sw_plan_result *r, const char *label)
{
    fputs("<tr><th>", o);
    esc(o, label);
    fprintf(o, "</th><td data-k=\"slots\">%ld</td><td data-k=\"within_share\">%.1f %%</td>"
            "<td data-k=\"ttft_p50_ms\">%.0f</td><td data-k=\"ttft_p95_ms\">%.0f</td>"
            "<td data-k=\"ttft_p99_ms\">%.0f</td><td data-k=\"cloud_share\">%.1f %%</td>"
            "<td data-k=\"spill_per_hour_mean\">%.1f</td><td data-k=\"spill_per_hour_max\">%.0f</td>"
            "<td data-k=\"cloud_usd_per_day\">%.2f</td><td data-k=\"cloud_usd_per_month\">%.2f</td>"
            "<td data-k=\"local_usd_per_month\">%.2f</td><td data-k=\"total_usd_per_month\">%.2f</td>"
            "<td data-k=\"usd_per_mtok\">%.3f</td><td data-k=\"local_utilisation\">%.1f %%</td></tr>\n",
            r->slots, 100 * r->within_share, r->ttft_p50, r->ttft_p95, r->ttft_p99,
            100 * r->cloud_share, r->spill_per_hour_mean, r->spill_per_hour_max, r->spend_per_day,
            r->spend_per_month, r->local_per_month, r->total_per_month, r->usd_per_mtok,
            100 * r->utilisation);
}

static void html_head_row(FILE *o, const char *first)
{
    fprintf(o, "<tr><th>%s</th><th>local slots</th><th>within TTFT budget</th><th>TTFT p50 ms</th>"
            "<th>p95 ms</th><th>p99 ms</th><th>cloud share</th><th>spill/hour (mean)</th>"
            "<th>spill/hour (max)</th><th>cloud $/day</th><th>cloud $/month</th>"
            "<th>local $/month</th><th>total $/month</th><th>$ per M tokens</th>"
            "<th>local utilisation</th></tr>\n", first);
}

/* A line chart of v[0..n) (x: index), 640 x 180, axis labels at min/max. */
static void svg_chart(FILE *o, const char *id, const char *title, const double *x,
                      const double *v, size_t n, const char *xlabel, const char *ylabel)
{
    const double W = 640, H = 180, L = 56, B = 28, T = 10, R = 10;
    double ymax = 0, xmin = x ? x[0] : 0, xmax = x ? x[n ? n - 1 : 0] : (double)(n ? n - 1 : 0);
    for (size_t i = 0; i < n; i++)
        if (v[i] > ymax)
            ymax = v[i];
    if (ymax <= 0)
        ymax = 1;
    if (xmax <= xmin)
        xmax = xmin + 1;
    fprintf(o, "<figure id=\"%s\"><figcaption>", id);
    esc(o, title);
    fprintf(o, "</figcaption><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" "
            "height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" role=\"img\">", W, H, W, H);
    fprintf(o, "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"#888\"/>", L,
            H - B, W - R, H - B);
    fprintf(o, "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"#888\"/>", L, T, L,
            H - B);
    fprintf(o, "<text x=\"%.0f\" y=\"%.0f\" font-size=\"11\" text-anchor=\"end\">%.4g</text>",
            L - 4, T + 8, ymax);
    fprintf(o, "<text x=\"%.0f\" y=\"%.0f\" font-size=\"11\" text-anchor=\"end\">0</text>", L - 4,
            H - B);
    fprintf(o, "<text x=\"%.0f\" y=\"%.0f\" font-size=\"11\">%.4g</text>", L, H - 8, xmin);
    fprintf(o, "<text x=\"%.0f\" y=\"%.0f\" font-size=\"11\" text-anchor=\"end\">%.4g %s</text>",
            W - R, H - 8, xmax, xlabel);
    fprintf(o, "<text x=\"4\" y=\"%.0f\" font-size=\"11\">%s</text>", T + 24, ylabel);
    fputs("<polyline fill=\"none\" stroke=\"#1f6feb\" stroke-width=\"1.5\" points=\"", o);
    for (size_t i = 0; i < n; i++) {
        double xi = x ? x[i] : (double)i;
        fprintf(o, "%.1f,%.1f ", L + (xi - xmin) / (xmax - xmin) * (W - L - R),
                H - B - v[i] / ymax * (H - B - T));
    }
    fputs("\"/></svg></figure>\n", o);
}

int sw_plan_report_html(const char *path, const struct sw_plan_report *r)
{
    FILE *o = fopen(path, "w");
    if (!o)
        return -1;
    fputs("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
          "<title>Spillway capacity plan</title><style>"
          "body{font:14px system-ui,sans-serif;margin:24px;color:#222}"
          "table{border-collapse:collapse;margin:8px 0 20px}"
          "td,th{border:1px solid #ccc;padding:3px 7px;text-align:right}"
          "th:first-child{text-align:left}figure{display:inline-block;margin:8px 16px 8px 0}"
          "figcaption{font-weight:600}</style></head><body>\n", o);
    fputs("<h1>Spillway capacity plan</h1>\n<p id=\"source\">Trace: ", o);
    esc(o, r->source);
    fprintf(o, " &middot; <span id=\"requests\">%zu</span> requests over %.1f h &middot; model ",
            r->trace->n, (double)r->trace->duration_ms / 3600000.0);
    esc(o, r->model);
    fprintf(o, " &middot; local prefill %.3g ms/token, decode %.3g tokens/s per slot &middot; "
            "local cost $%.2f/h + $%.2f/month for %ld slots</p>\n",
            r->local_prefill_ms, r->local_decode_tps, r->local_usd_per_hour,
            r->local_usd_per_month, r->config_slots);
    fputs("<h2>Strategies</h2>\n<table id=\"strategies\">\n", o);
    html_head_row(o, "strategy");
    for (size_t i = 0; i < r->n_strategies; i++)
        html_row(o, &r->strategies[i], r->strategies[i].name);
    fputs("</table>\n", o);
    for (size_t s = 0; s < r->n_sweeps; s++) {
        const struct sw_plan_sweep *sw = &r->sweeps[s];
        fprintf(o, "<h2>What if: %s</h2>\n<table class=\"sweep\" data-param=\"%s\">\n", sw->param,
                sw->param);
        html_head_row(o, sw->param);
        for (size_t k = 0; k < sw->n; k++) {
            char label[32];
            snprintf(label, sizeof label, "%g", sw->values[k]);
            html_row(o, &sw->rows[k], label);
        }
        fputs("</table>\n", o);
    }
    if (r->be.n) {
        fputs("<h2>Break-even</h2>\n<table id=\"breakeven\"><tr><th>peak / baseline</th>"
              "<th>hybrid $/month</th><th>local sized for peak $/month</th><th>slots</th>"
              "<th>cloud only $/month</th><th>hybrid within budget</th></tr>\n", o);
        for (size_t i = 0; i < r->be.n; i++)
            fprintf(o, "<tr><th>%.3gx</th><td>%.2f</td><td>%.2f</td><td>%ld</td><td>%.2f</td>"
                    "<td>%.1f %%</td></tr>\n", r->be.ratios[i], r->be.hybrid[i],
                    r->be.local_peak[i], r->be.peak_slots[i], r->be.cloud[i],
                    100 * r->be.hybrid_within[i]);
        char line[256];
        breakeven_line(line, sizeof line, &r->be);
        fputs("</table>\n<p id=\"breakeven-line\">Break-even: ", o);
        esc(o, line);
        fputs("</p>\n", o);
    }
    const struct sw_plan_result *h = hybrid_of(r);
    if (h && h->n_hours) {
        size_t n = h->n_hours;
        double *v = malloc(n * sizeof *v);
        if (v) {
            char title[96];
            snprintf(title, sizeof title, "Request rate (requests/s, hourly) - %s", h->name);
            for (size_t i = 0; i < n; i++)
                v[i] = h->hours[i].arrivals / 3600.0;
            fputs("<h2>Over the trace</h2>\n", o);
            svg_chart(o, "chart-rate", title, NULL, v, n, "h", "req/s");
            for (size_t i = 0; i < n; i++)
                v[i] = h->hours[i].queue_max;
            svg_chart(o, "chart-queue", "Local queue depth (deepest per hour)", NULL, v, n, "h",
                      "waiting");
            for (size_t i = 0; i < n; i++)
                v[i] = h->hours[i].cloud;
            svg_chart(o, "chart-spill", "Spill rate (cloud requests per hour)", NULL, v, n, "h",
                      "per hour");
            double acc = 0;
            for (size_t i = 0; i < n; i++)
                v[i] = acc += h->hours[i].spend_usd;
            svg_chart(o, "chart-spend", "Cloud spend (cumulative USD)", NULL, v, n, "h", "USD");
            free(v);
        }
    }
    for (size_t s = 0; s < r->n_sweeps; s++) {
        const struct sw_plan_sweep *sw = &r->sweeps[s];
        if (strcmp(sw->param, "slots") || sw->n < 2)
            continue;
        double *v = malloc(sw->n * sizeof *v);
        if (v) {
            for (size_t k = 0; k < sw->n; k++)
                v[k] = sw->rows[k].total_per_month;
            svg_chart(o, "chart-cost-slots", "Total cost vs local slots (USD/month)", sw->values,
                      v, sw->n, "slots", "USD/mo");
            free(v);
        }
    }
    fputs("</body></html>\n", o);
    return fclose(o) ? -1 : 0;
}
