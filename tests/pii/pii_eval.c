/* Precision and recall of the PII detector per type on a labeled corpus
 * (tests/pii/corpus/labeled.jsonl, see tests/pii/gen_corpus.py). A detected
 * span is a true positive when it overlaps a labeled span of the same type;
 * a labeled span is found (recall) when some detected span of its type
 * overlaps it. "covered" counts labeled spans overlapped by a detection of
 * any type (what masking needs); "whole" those whose every byte a detection
 * covers (a value masked only in part leaves the rest readable). -v prints
 * every miss, partial cover and false alarm.
 *   build/pii-dev/pii_eval [-v] tests/pii/corpus/labeled.jsonl */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "pii/pii.h"

#define MAXS 64

struct det {
    struct sw_pii_span s[MAXS];
    int n;
};

static int on_span(void *ud, const struct sw_pii_span *sp)
{
    struct det *d = ud;
    if (d->n < MAXS)
        d->s[d->n++] = *sp;
    return SW_OK;
}

static int overlap(size_t a0, size_t a1, size_t b0, size_t b1)
{
    return a0 < b1 && b0 < a1;
}

int main(int argc, char **argv)
{
    int verbose = 0, ai = 1;
    if (argc > 1 && !strcmp(argv[1], "-v")) {
        verbose = 1;
        ai = 2;
    }
    if (ai >= argc) {
        fprintf(stderr, "usage: %s [-v] labeled.jsonl\n", argv[0]);
        return 2;
    }
    FILE *f = fopen(argv[ai], "r");
    if (!f) {
        perror(argv[ai]);
        return 2;
    }
    struct sw_pii_engine *e;
    char err[256];
    if (sw_pii_engine_new(NULL, 0, &e, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return 2;
    }
    unsigned tp[SW_PII_MAX_TYPES] = {0}, fp[SW_PII_MAX_TYPES] = {0}, gold[SW_PII_MAX_TYPES] = {0},
             found[SW_PII_MAX_TYPES] = {0}, covered[SW_PII_MAX_TYPES] = {0},
             whole[SW_PII_MAX_TYPES] = {0};
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    unsigned lines = 0;
    while ((n = getline(&line, &cap, f)) > 0) {
        json_t *o = json_loadb(line, (size_t)n, 0, NULL);
        if (!o)
            continue;
        lines++;
        const char *text = json_string_value(json_object_get(o, "text"));
        size_t len = json_string_length(json_object_get(o, "text"));
        struct det d = {.n = 0};
        if (sw_pii_scan_text(e, text, len, on_span, &d) != SW_OK)
            fprintf(stderr, "line %u: scan failed\n", lines);
        json_t *spans = json_object_get(o, "spans"), *g;
        size_t i;
        int gt[MAXS], ng = 0;
        size_t g0[MAXS], g1[MAXS];
        json_array_foreach(spans, i, g) {
            if (ng == MAXS)
                break;
            const char *tn = json_string_value(json_object_get(g, "type"));
            int t = -1;
            for (int k = 0; k < SW_PII_CUSTOM_BASE; k++)
                if (tn && !strcmp(tn, sw_pii_type_name(e, k)))
                    t = k;
            if (t < 0)
                continue;
            gt[ng] = t;
            g0[ng] = (size_t)json_integer_value(json_object_get(g, "start"));
            g1[ng] = (size_t)json_integer_value(json_object_get(g, "end"));
            gold[t]++;
            int hit = 0, any = 0;
            for (int k = 0; k < d.n; k++)
                if (overlap(d.s[k].start, d.s[k].start + d.s[k].len, g0[ng], g1[ng])) {
                    any = 1;
                    hit |= d.s[k].type == t;
                }
            found[t] += hit;
            covered[t] += any;
            size_t cov = 0;     /* detections never overlap: their shares add up */
            for (int k = 0; k < d.n; k++) {
                size_t a0 = d.s[k].start > g0[ng] ? d.s[k].start : g0[ng];
                size_t a1 = d.s[k].start + d.s[k].len < g1[ng] ? d.s[k].start + d.s[k].len : g1[ng];
                cov += a1 > a0 ? a1 - a0 : 0;
            }
            whole[t] += cov == g1[ng] - g0[ng];
            if (verbose && any && cov != g1[ng] - g0[ng])
                printf("PART %-6s line %u: %.*s  | %s\n", tn, lines, (int)(g1[ng] - g0[ng]),
                       text + g0[ng], text);
            if (verbose && !hit)
                printf("MISS %-6s line %u: %.*s  | %s\n", tn, lines, (int)(g1[ng] - g0[ng]),
                       text + g0[ng], text);
            ng++;
        }
        for (int k = 0; k < d.n; k++) {
            int ok = 0;
            for (int j = 0; j < ng; j++)
                ok |= gt[j] == d.s[k].type &&
                      overlap(d.s[k].start, d.s[k].start + d.s[k].len, g0[j], g1[j]);
            if (ok) {
                tp[d.s[k].type]++;
            } else {
                fp[d.s[k].type]++;
                if (verbose)
                    printf("FP   %-6s line %u: %.*s  | %s\n", sw_pii_type_name(e, d.s[k].type),
                           lines, (int)d.s[k].len, text + d.s[k].start, text);
            }
        }
        json_decref(o);
    }
    free(line);
    fclose(f);
    printf("%u texts\n%-7s %6s %6s %6s %6s %10s %8s %8s %8s\n", lines, "type", "gold", "found",
           "TP", "FP", "precision", "recall", "covered", "whole");
    unsigned G = 0, F = 0, TP = 0, FP = 0, C = 0, W = 0;
    for (int t = 0; t < SW_PII_CUSTOM_BASE; t++) {
        printf("%-7s %6u %6u %6u %6u %9.1f%% %7.1f%% %7.1f%% %7.1f%%\n", sw_pii_type_name(e, t), gold[t],
               found[t], tp[t], fp[t], tp[t] + fp[t] ? 100.0 * tp[t] / (tp[t] + fp[t]) : 100.0,
               gold[t] ? 100.0 * found[t] / gold[t] : 100.0,
               gold[t] ? 100.0 * covered[t] / gold[t] : 100.0,
               gold[t] ? 100.0 * whole[t] / gold[t] : 100.0);
        G += gold[t], F += found[t], TP += tp[t], FP += fp[t], C += covered[t], W += whole[t];
    }
    printf("%-7s %6u %6u %6u %6u %9.1f%% %7.1f%% %7.1f%% %7.1f%%\n", "all", G, F, TP, FP,
           TP + FP ? 100.0 * TP / (TP + FP) : 100.0, G ? 100.0 * F / G : 100.0,
           G ? 100.0 * C / G : 100.0, G ? 100.0 * W / G : 100.0);
    sw_pii_engine_free(e);
    return 0;
}
