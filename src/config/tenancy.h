/* The tenancy settings of keys[] and teams[] (config.h's struct
 * sw_config_tenancy): budget, rpm, tpm, models, max_tier, on_budget, and the
 * the fields of teams[]. config.c lists SW_CONFIG_TENANCY_SETTINGS in its
 * key and team tables (and checks teams and ids across the file); docs/configuration.md "Keys and teams" documents every field.
 * Pure: no I/O, no clock. */
#ifndef SW_CONFIG_TENANCY_H
#define SW_CONFIG_TENANCY_H

#include <stddef.h>

#include "config/walk.h"

/* Tenancy (keys[] and teams[]; route/tenant.h, docs/configuration.md "Keys
 * and teams"): a budget, rate limits and model access. */
enum sw_budget_window {
    SW_BUDGET_HOUR,             /* UTC hour */
    SW_BUDGET_DAY,              /* UTC day (default) */
    SW_BUDGET_WEEK,             /* UTC week from Monday 00:00 */
    SW_BUDGET_MONTH,            /* UTC calendar month */
    SW_BUDGET_ROLLING,          /* the last rolling_ms, counted in tenths */
};
/* keys[].max_tier: the highest tier a key may use; 0 (a zeroed key) is cloud. */
enum sw_max_tier { SW_MAX_TIER_CLOUD, SW_MAX_TIER_LOCAL };
enum sw_on_budget {
    SW_ON_BUDGET_KEEP_LOCAL,    /* over budget: served by the local tier only (default) */
    SW_ON_BUDGET_REJECT,        /* over budget: 429 budget_exhausted */
};
#define SW_CONFIG_MAX_KEY_MODELS 32
struct sw_config_tenancy {
    struct {
        double usd;             /* 0: no budget */
        int window;             /* enum sw_budget_window; default day */
        long rolling_ms;        /* budget.rolling: a duration (window rolling) */
    } budget;
    long rpm;                   /* requests per minute; 0: no limit */
    long tpm;                   /* tokens per minute (prompt estimate + max_tokens); 0: none */
    char *models[SW_CONFIG_MAX_KEY_MODELS];     /* allow-list, '*' wildcards */
    size_t n_models;            /* 0: every model */
    int max_tier;               /* enum sw_max_tier; default cloud (0: a zeroed key) */
    int on_budget;              /* enum sw_on_budget; default keep_local */
};


extern const struct sw_walk_section sw_config_budget_section;
extern const char *const sw_config_tier_names[];
extern const char *const sw_config_on_budget_names[];

/* models: a list of model names or patterns with '*'. */
void sw_config_parse_models(struct sw_walk *w, const struct sw_walk_setting *s,
                            const yaml_node_t *node, void *base, const char *path);

/* The tenancy settings of a struct with a struct sw_config_tenancy at byte
 * offset OFF (keys[] and teams[] share them). */
#define SW_CONFIG_TENANCY_SETTINGS(OFF)                                                        \
    {.key = "budget", .type = SW_WALK_MAP, .off = (OFF) + offsetof(struct sw_config_tenancy,   \
                                                                   budget),                    \
     .sub = &sw_config_budget_section},                                                        \
    {.key = "rpm", .type = SW_WALK_LONG, .off = (OFF) + offsetof(struct sw_config_tenancy, rpm), \
     .min = 0, .max = 100000000, .def = 0, .hint = "requests per minute; 0: no limit"},        \
    {.key = "tpm", .type = SW_WALK_LONG, .off = (OFF) + offsetof(struct sw_config_tenancy, tpm), \
     .min = 0, .max = 1000000000, .def = 0, .hint = "tokens per minute; 0: no limit"},         \
    {.key = "models", .type = SW_WALK_CUSTOM,                                                  \
     .off = (OFF) + offsetof(struct sw_config_tenancy, models),                                \
     .parse = sw_config_parse_models, .hint = "a list of model names, '*' as a wildcard"},     \
    {.key = "max_tier", .type = SW_WALK_ENUM,                                                  \
     .off = (OFF) + offsetof(struct sw_config_tenancy, max_tier),                              \
     .names = sw_config_tier_names, .def = SW_MAX_TIER_CLOUD, .hint = "cloud or local"},           \
    {.key = "on_budget", .type = SW_WALK_ENUM,                                                 \
     .off = (OFF) + offsetof(struct sw_config_tenancy, on_budget),                             \
     .names = sw_config_on_budget_names, .def = SW_ON_BUDGET_KEEP_LOCAL,                       \
     .hint = "keep_local or reject"}

#define SW_CONFIG_ROLLING_MIN_MS 100LL
#define SW_CONFIG_ROLLING_MAX_MS (366LL * 86400000LL)

/* "2s", "500ms", "30m", "12h", "7d" in ms: a positive whole number and a
 * unit, at most SW_CONFIG_ROLLING_MAX_MS; -1 otherwise. */
long long sw_config_duration_ms(const char *s);

/* A key's id: the one given, else "k-" and the first 12 hex digits of the
 * SHA-256 of its secret (stable across restarts, never the secret). out
 * holds at least 16 bytes. */
void sw_config_key_id_derive(const char *secret, char *out, size_t cap);

void sw_config_tenancy_free(struct sw_config_tenancy *t);

#endif
