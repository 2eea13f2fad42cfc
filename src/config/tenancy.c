/* keys[] and teams[] tenancy settings: see tenancy.h. */
#include "config/tenancy.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const sw_config_tier_names[] = {"cloud", "local", NULL}; /* enum sw_max_tier */
const char *const sw_config_on_budget_names[] = {"keep_local", "reject", NULL};
static const char *const window_names[] = {"hour", "day", "week", "month", NULL};

#define MAX_ROLLING_MS SW_CONFIG_ROLLING_MAX_MS

/* ---- budget ---- */

/* "2s", "500ms", "30m", "12h", "7d": a positive whole number and a unit. */
long long sw_config_duration_ms(const char *s)
{
    char *end;
    long long n = strtoll(s, &end, 10);
    if (end == s || n <= 0 || n > MAX_ROLLING_MS)
        return -1;
    static const struct {
        const char *unit;
        long long ms;
    } units[] = {{"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000}, {"d", 86400000}};
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (!strcmp(end, units[i].unit))
            return n <= MAX_ROLLING_MS / units[i].ms ? n * units[i].ms : -1;
    return -1;
}

static void parse_rolling(struct sw_walk *w, const struct sw_walk_setting *s,
                          const yaml_node_t *node, void *base, const char *path)
{
    static const struct sw_walk_setting text = {.key = "rolling", .type = SW_WALK_TEXT};
    char *v = NULL;
    if (sw_walk_string(w, &text, node, path, &v))
        return;
    long long ms = sw_config_duration_ms(v);
    if (ms < SW_CONFIG_ROLLING_MIN_MS)
        sw_walk_error(w, node, path,
                      "\"%.32s\" is not a duration of 100ms to 366d: a whole number and ms, s, "
                      "m, h or d, e.g. \"2s\" or \"30d\"", v);
    else
        *(long *)((char *)base + s->off) = (long)ms;
    free(v);
}

static void parse_window(struct sw_walk *w, const struct sw_walk_setting *s,
                         const yaml_node_t *node, void *base, const char *path)
{
    static const struct sw_walk_setting text = {.key = "window", .type = SW_WALK_TEXT};
    char *v = NULL;
    if (sw_walk_string(w, &text, node, path, &v))
        return;
    int found = -1;
    for (int i = 0; window_names[i]; i++)
        if (!strcmp(v, window_names[i]))
            found = i;
    if (found < 0)
        sw_walk_error(w, node, path,
                      "\"%.32s\" is not a window: hour, day, week or month (UTC aligned); for "
                      "a sliding window write rolling: <duration> instead", v);
    else
        *(int *)((char *)base + s->off) = found;
    free(v);
}

static void check_budget(struct sw_walk *w, void *base, const yaml_node_t *map,
                         const yaml_node_t *const *vals, const char *path, size_t index)
{
    (void)index;
    struct sw_config_tenancy *t =
        (struct sw_config_tenancy *)((char *)base - offsetof(struct sw_config_tenancy, budget));
    const yaml_node_t *win = sw_walk_val(&sw_config_budget_section, vals, "window");
    const yaml_node_t *roll = sw_walk_val(&sw_config_budget_section, vals, "rolling");
    char p[SW_WALK_MAX_PATH];
    if (win && roll) {
        sw_walk_path_key(p, sizeof p, path, "rolling");
        sw_walk_error(w, roll, p, "give window (hour, day, week, month) or rolling, not both");
    }
    if (roll && t->budget.rolling_ms > 0)
        t->budget.window = SW_BUDGET_ROLLING;
    else if (!win)
        t->budget.window = SW_BUDGET_DAY;
    if (!sw_walk_val(&sw_config_budget_section, vals, "usd")) {
        sw_walk_path_key(p, sizeof p, path, "usd");
        sw_walk_error(w, map, p, "missing: a budget needs usd, the most the window may spend "
                                 "on the cloud");
    }
}

#define BUD(f) offsetof(struct sw_config_tenancy, budget.f) - offsetof(struct sw_config_tenancy, budget)
static const struct sw_walk_setting budget_settings[] = {
    {.key = "usd", .type = SW_WALK_DOUBLE, .off = BUD(usd), .dmin = 0, .dmax = 1e12, .ddef = 0,
     .hint = "USD of cloud spend per window, e.g. 25"},
    {.key = "window", .type = SW_WALK_CUSTOM, .off = BUD(window), .parse = parse_window,
     .hint = "hour, day, week or month"},
    {.key = "rolling", .type = SW_WALK_CUSTOM, .off = BUD(rolling_ms), .parse = parse_rolling,
     .hint = "a duration such as \"2s\" or \"30d\""},
};
const struct sw_walk_section sw_config_budget_section = {
    budget_settings, sizeof budget_settings / sizeof budget_settings[0], 0, check_budget};

/* ---- models ---- */

static void model_item(struct sw_walk *w, const yaml_node_t *item, const char *ipath, size_t i,
                       char *v, void *ctx)
{
    (void)i;
    struct sw_config_tenancy *t = ctx;
    const char *why = NULL;
    for (size_t j = 0; j < t->n_models && !why; j++)
        if (!strcmp(t->models[j], v))
            why = "is listed twice";
    if (!why && t->n_models == SW_CONFIG_MAX_KEY_MODELS)
        why = "is one pattern too many (at most 32)";
    if (!why && strlen(v) > 128)
        why = "is longer than 128 characters";
    if (why) {
        sw_walk_error(w, item, ipath, "\"%.64s\" %s", v, why);
        free(v);
        return;
    }
    t->models[t->n_models++] = v;
}

void sw_config_parse_models(struct sw_walk *w, const struct sw_walk_setting *s,
                            const yaml_node_t *node, void *base, const char *path)
{
    static const struct sw_walk_setting item = {.key = "model", .type = SW_WALK_TEXT};
    struct sw_config_tenancy *t =
        (struct sw_config_tenancy *)((char *)base + s->off - offsetof(struct sw_config_tenancy,
                                                                       models));
    long n = sw_walk_strings(w, &item, node, path,
                             "a list of model names or patterns such as [\"gpt-4o*\", local]",
                             model_item, t);
    if (n == 0)
        sw_walk_error(w, node, path, "an empty list allows no model; omit models to allow all");
}

/* ---- Key ids ---- */

void sw_config_key_id_derive(const char *secret, char *out, size_t cap)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    if (!secret || EVP_Digest(secret, strlen(secret), md, &n, EVP_sha256(), NULL) != 1 || n < 6) {
        snprintf(out, cap, "k-unknown");
        return;
    }
    snprintf(out, cap, "k-%02x%02x%02x%02x%02x%02x", md[0], md[1], md[2], md[3], md[4], md[5]);
}

void sw_config_tenancy_free(struct sw_config_tenancy *t)
{
    for (size_t i = 0; i < t->n_models; i++)
        free(t->models[i]);
    t->n_models = 0;
}
