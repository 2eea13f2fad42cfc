/* The planner's report: text table, summary.json, report.html (docs/planning.md). */
#ifndef SW_PLAN_REPORT_H
#define SW_PLAN_REPORT_H

#include <stdio.h>

#include "plan/sim.h"

struct sw_plan_sweep {
    char param[16];             /* "slots", "budget_ms", "cap" */
    double *values;
    struct sw_plan_result *rows;
    size_t n;
};

struct sw_plan_breakeven {
    double ratios[16];
    double hybrid[16], local_peak[16], cloud[16];   /* USD per month */
    long peak_slots[16];
    double hybrid_within[16];
    size_t n;
    double ratio;               /* where the hybrid's cost crosses the cheaper single tier's
                                   (interpolated); 0: no crossing in the range */
    bool pays_above;            /* the hybrid is the cheaper above `ratio` (else below it) */
    int always;                 /* no crossing: 1 hybrid cheapest throughout, -1 never, 0 mixed */
    bool derived;               /* shape derived from a file trace */
    double baseline_rps;
    int peak_hours;
};

struct sw_plan_report {
    const char *source;         /* the trace file or the synthetic spec */
    const char *model;
    const struct sw_plan_trace *trace;
    struct sw_plan_result *strategies;
    size_t n_strategies;
    struct sw_plan_sweep *sweeps;
    size_t n_sweeps;
    struct sw_plan_breakeven be;
    double local_prefill_ms, local_decode_tps;
    double local_usd_per_hour, local_usd_per_month;
    long config_slots;          /* the model's local slots as configured */
    long peak_target_ok;        /* 1: the peak-sized search reached 99 % */
};

void sw_plan_report_text(FILE *out, const struct sw_plan_report *r);
int sw_plan_report_json(const char *path, const struct sw_plan_report *r);
int sw_plan_report_html(const char *path, const struct sw_plan_report *r);

#endif
