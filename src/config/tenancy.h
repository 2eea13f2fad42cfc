/* The tenancy settings of keys[] and teams[] (config.h's struct
 * sw_config_tenancy): budget, rpm, tpm, models, max_tier, on_budget, and the
 * teams[] section. config.c lists SW_CONFIG_TENANCY_SETTINGS in its key
 * table; docs/configuration.md "Keys and teams" documents every field.
 * Pure: no I/O, no clock. */
#ifndef SW_CONFIG_TENANCY_H
#define SW_CONFIG_TENANCY_H

#include <stddef.h>

#include "config/config.h"
#include "config/walk.h"

extern const struct sw_walk_section sw_config_budget_section;
extern const struct sw_walk_section sw_config_team_section;
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
     .names = sw_config_tier_names, .def = SW_TIER_CLOUD, .hint = "local or cloud"},           \
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

/* After the whole file was walked: each key's team resolved (an unknown
 * team is an error at its position), ids derived where absent. */
void sw_config_tenancy_check(struct sw_walk *w, struct sw_config *cfg);

/* A key's explicit id (node: where it was written) against the keys before it. */
void sw_config_key_check_id(struct sw_walk *w, const struct sw_config *cfg, size_t index,
                            const yaml_node_t *node, const char *path);

void sw_config_tenancy_free(struct sw_config_tenancy *t);

#endif
