/* Unit tests of the keys[] and teams[] tenancy settings (src/config/tenancy.c):
 * what a good file fills in, the derived key_id, and every message of a bad one. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/err.h"
#include "config/config.h"
#include "config/tenancy.h"

#define BASE                                                                       \
    "backends:\n"                                                                  \
    "  - { name: edge, tier: local, url: \"http://127.0.0.1:8081\", model: m }\n"  \
    "models:\n"                                                                    \
    "  - { name: chat, backends: [edge] }\n"

static int parse(const char *text, struct sw_config **cfg, struct sw_config_errors *errs)
{
    return sw_config_parse("t.yaml", text, strlen(text), NULL, NULL, cfg, errs);
}

static void test_good(void **state)
{
    (void)state;
    static const char y[] = BASE
        "teams:\n"
        "  - { name: research, budget: { usd: 50, window: month }, rpm: 600, models: [\"chat*\"] }\n"
        "keys:\n"
        "  - name: alice\n"
        "    key: sk-alice\n"
        "    id: alice-1\n"
        "    team: research\n"
        "    budget: { usd: 2.5, rolling: 2s }\n"
        "    rpm: 60\n"
        "    tpm: 10000\n"
        "    models: [chat, \"gpt-*\"]\n"
        "    max_tier: local\n"
        "    on_budget: reject\n"
        "  - { name: bob, key: sk-bob, budget: { usd: 1 } }\n";
    struct sw_config *cfg = NULL;
    struct sw_config_errors errs;
    int err = parse(y, &cfg, &errs);
    for (size_t i = 0; i < errs.n; i++)
        print_error("unexpected: %s\n", errs.msgs[i]);
    assert_int_equal(err, SW_OK);
    sw_config_errors_free(&errs);
    assert_int_equal(cfg->n_teams, 1);
    const struct sw_config_team *t = &cfg->teams[0];
    assert_string_equal(t->name, "research");
    assert_true(t->t.budget.usd == 50);
    assert_int_equal(t->t.budget.window, SW_BUDGET_MONTH);
    assert_int_equal(t->t.rpm, 600);
    assert_int_equal(t->t.max_tier, SW_MAX_TIER_CLOUD);
    const struct sw_config_key *a = &cfg->keys[0], *b = &cfg->keys[1];
    assert_string_equal(a->id, "alice-1");
    assert_int_equal(a->team_index, 0);
    assert_true(a->t.budget.usd == 2.5);
    assert_int_equal(a->t.budget.window, SW_BUDGET_ROLLING);
    assert_int_equal(a->t.budget.rolling_ms, 2000);
    assert_int_equal(a->t.rpm, 60);
    assert_int_equal(a->t.tpm, 10000);
    assert_int_equal(a->t.n_models, 2);
    assert_string_equal(a->t.models[1], "gpt-*");
    assert_int_equal(a->t.max_tier, SW_MAX_TIER_LOCAL);
    assert_int_equal(a->t.on_budget, SW_ON_BUDGET_REJECT);
    /* defaults: a day window, keep_local, cloud, no team, an id from the secret */
    assert_int_equal(b->t.budget.window, SW_BUDGET_DAY);
    assert_int_equal(b->t.on_budget, SW_ON_BUDGET_KEEP_LOCAL);
    assert_int_equal(b->t.max_tier, SW_MAX_TIER_CLOUD);
    assert_int_equal(b->team_index, -1);
    char id[24];
    sw_config_key_id_derive("sk-bob", id, sizeof id);
    assert_string_equal(b->id, id);
    assert_int_equal(strlen(id), 14);
    assert_null(strstr(id, "sk-bob"));
    sw_config_unref(cfg);
}

static void test_bad(void **state)
{
    (void)state;
    static const char y[] = BASE
        "teams:\n"
        "  - { name: ops, budget: { usd: 5, window: fortnight } }\n"
        "  - { name: ops, budget: { window: day } }\n"
        "keys:\n"
        "  - { name: a, key: ka, team: nobody, budget: { usd: 1, window: day, rolling: 1h } }\n"
        "  - { name: b, key: kb, id: same, models: [], budget: { usd: 1, rolling: 1y } }\n"
        "  - { name: c, key: kc, id: same, on_budget: shed, max_tier: edge, rpm: -1 }\n";
    static const char *const want[] = {
        "t.yaml:6:44: teams[0].budget.window: \"fortnight\" is not a window: hour, day, week or "
        "month (UTC aligned); for a sliding window write rolling: <duration> instead",
        "t.yaml:7:13: teams[1].name: duplicate team \"ops\" (also teams[0]); names must be unique",
        "t.yaml:7:26: teams[1].budget.usd: missing: a budget needs usd, the most the window may "
        "spend on the cloud",
        "t.yaml:9:31: keys[0].team: \"nobody\" is not a team: list it under teams: (teams: - "
        "name: nobody)",
        "t.yaml:9:79: keys[0].budget.rolling: give window (hour, day, week, month) or rolling, "
        "not both",
        "t.yaml:10:43: keys[1].models: an empty list allows no model; omit models to allow all",
        "t.yaml:10:74: keys[1].budget.rolling: \"1y\" is not a duration of 100ms to 366d: a whole "
        "number and ms, s, m, h or d, e.g. \"2s\" or \"30d\"",
    };
    struct sw_config *cfg = NULL;
    struct sw_config_errors errs;
    assert_int_equal(parse(y, &cfg, &errs), SW_EINVAL);
    assert_null(cfg);
    size_t n_want = sizeof want / sizeof want[0];
    bool same = true;
    for (size_t i = 0; i < n_want; i++) {
        bool found = false;
        for (size_t j = 0; j < errs.n; j++)
            found = found || !strcmp(errs.msgs[j], want[i]);
        if (!found) {
            print_error("missing: %s\n", want[i]);
            same = false;
        }
    }
    /* and the enum, range and id messages of keys[2] */
    const char *const also[] = {"keys[2].on_budget: \"shed\" is not one of keep_local, reject",
                                "keys[2].max_tier: \"edge\" is not one of cloud, local",
                                "keys[2].rpm: \"-1\" is out of range",
                                "keys[2].id: id \"same\" is also keys[1]'s"};
    for (size_t i = 0; i < sizeof also / sizeof also[0]; i++) {
        bool found = false;
        for (size_t j = 0; j < errs.n; j++)
            found = found || strstr(errs.msgs[j], also[i]) != NULL;
        if (!found) {
            print_error("missing: %s\n", also[i]);
            same = false;
        }
    }
    if (!same)
        for (size_t j = 0; j < errs.n; j++)
            print_error("  got: %s\n", errs.msgs[j]);
    sw_config_errors_free(&errs);
    assert_true(same);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good),
        cmocka_unit_test(test_bad),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
