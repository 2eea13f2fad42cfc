/* Unit tests of the prefill rate (src/route/prefill.c): the sources in
 * order (server, learned, config, default), the server's counters turned
 * into rates (deltas, slow traffic that adds up, a restart, a gauge without
 * counters, garbage), the parsers of the servers' metrics pages
 * (sw_load_parse_prefill) and the live state's view of them (a config
 * prior, a reload, a report through sw_live_on_prefill). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "route/prefill.h"
#include "state/live.h"
#include "upstream/loadsig.h"

static struct sw_prefill_report totals(double tokens, double seconds)
{
    return (struct sw_prefill_report){.totals = true, .tokens_total = tokens,
                                      .seconds_total = seconds};
}

static void test_sources(void **state)
{
    (void)state;
    struct sw_prefill p;
    struct sw_ewma e;
    enum sw_prefill_source src;
    sw_ewma_init(&e, 0.5);

    sw_prefill_init(&p, 0);
    assert_float_equal(sw_prefill_ms_per_token(&p, &e, &src), SW_EWMA_PRIOR_PREFILL_MS_PER_TOKEN,
                       0);
    assert_int_equal(src, SW_PREFILL_DEFAULT);
    sw_prefill_init(&p, NAN);
    assert_float_equal(sw_prefill_ms_per_token(&p, NULL, &src), 1.0, 0);
    assert_int_equal(src, SW_PREFILL_DEFAULT);

    sw_prefill_init(&p, 0.25);      /* prefill_tps: 4000 */
    assert_float_equal(sw_prefill_ms_per_token(&p, &e, &src), 0.25, 0);
    assert_int_equal(src, SW_PREFILL_CONFIG);

    /* A first-token sample beats the config prior. */
    assert_true(sw_ewma_observe(&e, 1000, 540, 0, 0, 0) & SW_EWMA_PREFILL);
    assert_float_equal(sw_prefill_ms_per_token(&p, &e, &src), (540 - 50.0) / 1000, 1e-12);
    assert_int_equal(src, SW_PREFILL_LEARNED);

    /* The server's own figure beats both. */
    struct sw_prefill_report r = totals(10000, 2);
    assert_true(sw_prefill_report(&p, &r));
    assert_float_equal(sw_prefill_ms_per_token(&p, &e, &src), 0.2, 1e-12);
    assert_int_equal(src, SW_PREFILL_SERVER);

    /* A reload changes the prior, never the server's figure. */
    sw_prefill_set_config(&p, 3);
    assert_float_equal(sw_prefill_ms_per_token(&p, &e, NULL), 0.2, 1e-12);
    assert_float_equal(p.config_ms_per_token, 3, 0);

    assert_string_equal(sw_prefill_source_name(SW_PREFILL_DEFAULT), "default");
    assert_string_equal(sw_prefill_source_name(SW_PREFILL_CONFIG), "config");
    assert_string_equal(sw_prefill_source_name(SW_PREFILL_LEARNED), "learned");
    assert_string_equal(sw_prefill_source_name(SW_PREFILL_SERVER), "server");
    assert_string_equal(sw_prefill_source_name((enum sw_prefill_source)9), "unknown");
}

static void test_counters(void **state)
{
    (void)state;
    struct sw_prefill p;
    struct sw_prefill_report r;
    sw_prefill_init(&p, 0);

    /* Nothing processed yet: no rate, but the counters are kept. */
    r = totals(0, 0);
    assert_false(sw_prefill_report(&p, &r));
    assert_int_equal(p.n_server, 0);
    /* 20 tokens: too few; 20 more: 40 since the first report, a sample. */
    r = totals(20, 0.1);
    assert_false(sw_prefill_report(&p, &r));
    r = totals(40, 0.04);
    assert_true(sw_prefill_report(&p, &r));
    assert_float_equal(p.server_ms_per_token, 1.0, 1e-12);     /* 40 ms / 40 tokens */
    /* The next interval: 1000 tokens in 0.5 s: 0.5 ms/token, averaged. */
    r = totals(1040, 0.54);
    assert_true(sw_prefill_report(&p, &r));
    assert_float_equal(p.server_ms_per_token, 1.0 + SW_PREFILL_ALPHA * (0.5 - 1.0), 1e-12);
    /* An idle interval teaches nothing and moves nothing. */
    double before = p.server_ms_per_token;
    assert_false(sw_prefill_report(&p, &r));
    assert_float_equal(p.server_ms_per_token, before, 0);
    /* A restart (counters went down): its whole history is the interval. */
    r = totals(100, 0.01);
    assert_true(sw_prefill_report(&p, &r));
    assert_float_equal(p.server_ms_per_token, before + SW_PREFILL_ALPHA * (0.1 - before), 1e-12);
    /* Tokens but no time: no sample. */
    r = totals(1000, 0.01);
    assert_false(sw_prefill_report(&p, &r));
    /* Garbage is ignored and keeps the counters. */
    uint64_t n = p.n_server;
    r = totals(NAN, 1);
    assert_false(sw_prefill_report(&p, &r));
    r = totals(5000, -1);
    assert_false(sw_prefill_report(&p, &r));
    r = totals(INFINITY, 1);
    assert_false(sw_prefill_report(&p, &r));
    assert_int_equal(p.n_server, n);
    /* Absurd rates are clamped. */
    sw_prefill_init(&p, 0);
    r = totals(1e9, 1e-9);
    assert_true(sw_prefill_report(&p, &r));
    assert_float_equal(p.server_ms_per_token, SW_EWMA_MIN_PREFILL_MS_PER_TOKEN, 0);
    sw_prefill_init(&p, 0);
    r = totals(100, 1e6);
    assert_true(sw_prefill_report(&p, &r));
    assert_float_equal(p.server_ms_per_token, SW_EWMA_MAX_PREFILL_MS_PER_TOKEN, 0);

    /* A gauge alone (no counters): tokens/s as it is. */
    sw_prefill_init(&p, 0);
    r = (struct sw_prefill_report){.gauge = true, .gauge_tps = 2500};
    assert_true(sw_prefill_report(&p, &r));
    assert_float_equal(p.server_ms_per_token, 0.4, 1e-12);
    r.gauge_tps = 0;    /* llama.cpp's "nothing since the last scrape" */
    assert_false(sw_prefill_report(&p, &r));
    r.gauge_tps = NAN;
    assert_false(sw_prefill_report(&p, &r));
    r = (struct sw_prefill_report){0};
    assert_false(sw_prefill_report(&p, &r));
    assert_float_equal(p.server_ms_per_token, 0.4, 1e-12);
}

static void test_parse(void **state)
{
    (void)state;
    struct sw_prefill_report r;
    static const char llama[] =
        "# HELP llamacpp:prompt_tokens_total Number of prompt tokens processed.\n"
        "# TYPE llamacpp:prompt_tokens_total counter\n"
        "llamacpp:prompt_tokens_total 9000\n"
        "llamacpp:prompt_seconds_total 1.5\n"
        "llamacpp:prompt_tokens_seconds 4000\n"
        "llamacpp:requests_processing 0\n";
    assert_int_equal(sw_load_parse_prefill(SW_LOAD_LLAMACPP, llama, strlen(llama), &r), 0);
    assert_true(r.totals && !r.gauge);
    assert_float_equal(r.tokens_total, 9000, 0);
    assert_float_equal(r.seconds_total, 1.5, 0);

    static const char gauge_only[] = "llamacpp:prompt_tokens_seconds 1234.5\n";
    assert_int_equal(sw_load_parse_prefill(SW_LOAD_LLAMACPP, gauge_only, strlen(gauge_only), &r),
                     0);
    assert_true(!r.totals && r.gauge);
    assert_float_equal(r.gauge_tps, 1234.5, 0);

    /* One counter without the other: the gauge, if any. */
    static const char half[] = "llamacpp:prompt_tokens_total 9000\n";
    assert_int_equal(sw_load_parse_prefill(SW_LOAD_LLAMACPP, half, strlen(half), &r), -1);
    assert_true(!r.totals && !r.gauge);

    static const char vllm[] =
        "vllm:request_prompt_tokens_sum{model_name=\"m\"} 3000.0\n"
        "vllm:request_prompt_tokens_count{model_name=\"m\"} 3.0\n"
        "vllm:request_prefill_time_seconds_sum{model_name=\"m\"} 0.6\n"
        "vllm:num_requests_running{model_name=\"m\"} 0.0\n";
    assert_int_equal(sw_load_parse_prefill(SW_LOAD_VLLM, vllm, strlen(vllm), &r), 0);
    assert_true(r.totals);
    assert_float_equal(r.tokens_total, 3000, 0);
    assert_float_equal(r.seconds_total, 0.6, 1e-12);
    /* vLLM does not read llama.cpp's names, nor the reverse. */
    assert_int_equal(sw_load_parse_prefill(SW_LOAD_VLLM, llama, strlen(llama), &r), -1);
    assert_int_equal(sw_load_parse_prefill(SW_LOAD_LLAMACPP, vllm, strlen(vllm), &r), -1);
    /* Sources without prefill figures. */
    assert_int_equal(sw_load_parse_prefill(SW_LOAD_SGLANG, llama, strlen(llama), &r), -1);
    assert_int_equal(sw_load_parse_prefill(SW_LOAD_OLLAMA, llama, strlen(llama), &r), -1);
    assert_int_equal(sw_load_parse_prefill(SW_LOAD_NONE, llama, strlen(llama), &r), -1);
    assert_int_equal(sw_load_parse_prefill(SW_LOAD_LLAMACPP, "", 0, &r), -1);
}

/* ---- The live state ---- */

static const char yaml[] =
    "listen: \"127.0.0.1:0\"\n"
    "backends:\n"
    "  - {name: edge, tier: local, url: \"http://127.0.0.1:9001\", model: m, slots: 4,\n"
    "     load: {source: llamacpp, poll_ms: 100}}\n"
    "  - {name: told, tier: local, url: \"http://127.0.0.1:9002\", model: m, slots: 4,\n"
    "     prefill_tps: 2000}\n"
    "  - {name: cloud, tier: cloud, url: \"http://127.0.0.1:9003\", model: c}\n"
    "models:\n"
    "  - {name: chat, backends: [edge, told, cloud]}\n";

static struct sw_config *parse(const char *text)
{
    struct sw_config *cfg = NULL;
    struct sw_config_errors errs;
    int err = sw_config_parse("prefill.yaml", text, strlen(text), NULL, NULL, &cfg, &errs);
    for (size_t i = 0; i < errs.n; i++)
        print_error("config: %s\n", errs.msgs[i]);
    sw_config_errors_free(&errs);
    return err ? NULL : cfg;
}

#define T0 1000000

static void test_live(void **state)
{
    (void)state;
    struct sw_config *cfg = parse(yaml);
    assert_non_null(cfg);
    assert_float_equal(cfg->backends[1].prefill_ms_per_token, 0.5, 1e-12);
    struct sw_live_shared *g = sw_live_shared_new(cfg, T0, 1700000000000LL);
    struct sw_live *l = sw_live_new(cfg, g, NULL, NULL, T0);
    sw_config_unref(cfg);
    assert_non_null(l);

    struct sw_live_snapshot s;
    sw_live_snapshot(l, &l->cfg->models[0], T0, &s);
    assert_float_equal(s.backends[0].prefill_ms_per_token, SW_EWMA_PRIOR_PREFILL_MS_PER_TOKEN, 0);
    assert_float_equal(s.backends[1].prefill_ms_per_token, 0.5, 1e-12);

    /* The server reports 9000 tokens in 0.45 s: 0.05 ms/token. */
    struct sw_prefill_report r = totals(9000, 0.45);
    sw_live_on_prefill(l, 0, &r);
    sw_live_snapshot(l, &l->cfg->models[0], T0, &s);
    assert_float_equal(s.backends[0].prefill_ms_per_token, 0.05, 1e-12);
    /* An agent's 9000-token prompt on the idle box: 450 ms + the first
     * step: within an 800 ms budget, where the default (9 s) was not. */
    assert_true(sw_route_est_ttft_ms(&s.backends[0], 9000) < 800);

    /* A reload keeps the learned figure and takes the new prior. */
    struct sw_config *cfg2 = parse(
        "listen: \"127.0.0.1:0\"\n"
        "backends:\n"
        "  - {name: edge, tier: local, url: \"http://127.0.0.1:9001\", model: m, slots: 4,\n"
        "     load: {source: llamacpp, poll_ms: 100}, prefill_ms_per_token: 3}\n"
        "  - {name: told, tier: local, url: \"http://127.0.0.1:9002\", model: m, slots: 4,\n"
        "     prefill_tps: 500}\n"
        "models:\n"
        "  - {name: chat, backends: [edge, told]}\n");
    assert_non_null(cfg2);
    struct sw_live *l2 = sw_live_new(cfg2, g, l, NULL, T0);
    sw_config_unref(cfg2);
    assert_non_null(l2);
    sw_live_snapshot(l2, &l2->cfg->models[0], T0, &s);
    assert_float_equal(s.backends[0].prefill_ms_per_token, 0.05, 1e-12);
    assert_float_equal(s.backends[1].prefill_ms_per_token, 2, 1e-12);
    sw_live_unref(l2);
    sw_live_unref(l);
    sw_live_shared_free(g);
}

static void test_config_errors(void **state)
{
    (void)state;
    static const char both[] =
        "listen: \"127.0.0.1:0\"\n"
        "backends:\n"
        "  - {name: edge, tier: local, url: \"http://127.0.0.1:9001\", model: m,\n"
        "     prefill_ms_per_token: 1, prefill_tps: 1000}\n"
        "models:\n"
        "  - {name: chat, backends: [edge]}\n";
    struct sw_config *cfg = NULL;
    struct sw_config_errors errs;
    assert_int_not_equal(sw_config_parse("p.yaml", both, strlen(both), NULL, NULL, &cfg, &errs),
                         0);
    assert_int_equal(errs.n, 1);
    assert_non_null(strstr(errs.msgs[0], "p.yaml:4:"));
    assert_non_null(strstr(errs.msgs[0], "backends[0].prefill_tps: give either prefill_tps or "
                                         "prefill_ms_per_token"));
    sw_config_errors_free(&errs);

    static const char neg[] =
        "listen: \"127.0.0.1:0\"\n"
        "backends:\n"
        "  - {name: edge, tier: local, url: \"http://127.0.0.1:9001\", model: m,\n"
        "     prefill_tps: -5}\n"
        "models:\n"
        "  - {name: chat, backends: [edge]}\n";
    assert_int_not_equal(sw_config_parse("p.yaml", neg, strlen(neg), NULL, NULL, &cfg, &errs), 0);
    assert_int_equal(errs.n, 1);
    assert_non_null(strstr(errs.msgs[0], "backends[0].prefill_tps"));
    sw_config_errors_free(&errs);
}

/* A timed warm-up: its rate with the link and decode taken out, below the
 * server's and learned rates, above the config prior; the last one wins;
 * too small, non-positive or non-finite figures teach nothing. */
static void test_warmup(void **state)
{
    (void)state;
    struct sw_prefill p;
    struct sw_ewma e;
    enum sw_prefill_source src;
    sw_ewma_init(&e, 0);
    sw_prefill_init(&p, 2.0);
    assert_true(sw_prefill_ms_per_token(&p, &e, &src) == 2.0);
    assert_int_equal(src, SW_PREFILL_CONFIG);
    /* 350 ms for 500 tokens, 50 ms of link, 2 tokens at 40 tokens/s: 0.5 ms/token */
    assert_true(sw_prefill_warmup(&p, 350, 50, 500, 2, 40));
    assert_true(fabs(sw_prefill_ms_per_token(&p, &e, &src) - 0.5) < 1e-9);
    assert_int_equal(src, SW_PREFILL_WARMUP);
    assert_string_equal(sw_prefill_source_name(src), "warmup");
    /* no decode speed known: nothing taken out for it */
    assert_true(sw_prefill_warmup(&p, 1050, 50, 500, 1, 0));
    assert_true(fabs(p.warmup_ms_per_token - 2.0) < 1e-9);
    assert_int_equal(p.n_warmup, 2);
    /* what teaches nothing leaves the figure */
    assert_false(sw_prefill_warmup(&p, 600, 50, 31, 1, 0));
    assert_false(sw_prefill_warmup(&p, 40, 50, 500, 1, 0));
    assert_false(sw_prefill_warmup(&p, 100, 0, 500, 4, 40));
    assert_false(sw_prefill_warmup(&p, NAN, 0, 500, 1, 0));
    assert_false(sw_prefill_warmup(&p, 100, INFINITY, 500, 1, 0));
    assert_false(sw_prefill_warmup(&p, 100, 0, 500, 1, NAN));
    assert_int_equal(p.n_warmup, 2);
    /* clamped */
    assert_true(sw_prefill_warmup(&p, 1e9, 0, 500, 0, 0));
    assert_true(p.warmup_ms_per_token == SW_EWMA_MAX_PREFILL_MS_PER_TOKEN);
    assert_true(sw_prefill_warmup(&p, 0.0001, 0, 500, 0, 0));
    assert_true(p.warmup_ms_per_token == SW_EWMA_MIN_PREFILL_MS_PER_TOKEN);
    /* learned beats it */
    sw_ewma_observe(&e, 1000, 330, 0, 1000, 21);
    sw_prefill_ms_per_token(&p, &e, &src);
    assert_int_equal(src, SW_PREFILL_LEARNED);
    /* a server report, even one that teaches nothing yet, says the server reports */
    sw_prefill_init(&p, 0);
    assert_false(p.server_reports);
    struct sw_prefill_report r = {.totals = true, .tokens_total = 0, .seconds_total = 0};
    assert_false(sw_prefill_report(&p, &r));
    assert_true(p.server_reports);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sources),
        cmocka_unit_test(test_counters),
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_live),
        cmocka_unit_test(test_config_errors),
        cmocka_unit_test(test_warmup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
