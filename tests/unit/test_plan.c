/* The capacity planner (src/plan): trace readers (bad lines name their line),
 * the synthetic workload, and the event loop on tiny traces whose every
 * number can be worked out by hand (docs/planning.md, "How a request is
 * simulated"). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "config/config.h"
#include "plan/sim.h"
#include "plan/trace.h"

static struct sw_plan_trace parse_csv_ok(const char *text)
{
    struct sw_plan_trace t;
    char err[256] = "";
    int rc = sw_plan_trace_csv(text, strlen(text), &t, err, sizeof err);
    if (rc)
        fail_msg("unexpected error: %s", err);
    return t;
}

static void csv_err(const char *text, const char *want)
{
    struct sw_plan_trace t;
    char err[256] = "";
    assert_int_equal(sw_plan_trace_csv(text, strlen(text), &t, err, sizeof err), -1);
    if (!strstr(err, want))
        fail_msg("error \"%s\" does not contain \"%s\"", err, want);
}

static void test_csv_reads_and_sorts(void **state)
{
    (void)state;
    struct sw_plan_trace t = parse_csv_ok("time,prompt_tokens,output_tokens,allow_cloud,priority\n"
                                          "# a comment\n"
                                          "\n"
                                          "12.5, 100, 20\n"
                                          "10,200,30,false,3\n"
                                          "11,300,40,1\n");
    assert_int_equal(t.n, 3);
    assert_int_equal(t.r[0].t_ms, 0);
    assert_int_equal(t.r[0].prompt, 200);
    assert_int_equal(t.r[0].allow_cloud, 0);
    assert_int_equal(t.r[0].priority, 3);
    assert_int_equal(t.r[1].t_ms, 1000);
    assert_int_equal(t.r[1].allow_cloud, 1);
    assert_int_equal(t.r[2].t_ms, 2500);
    assert_int_equal(t.r[2].output, 20);
    sw_plan_trace_free(&t);
    t = parse_csv_ok("2026-11-30T10:00:00Z,10,5\n2026-11-30T10:00:01.250Z,10,5\n");
    assert_int_equal(t.n, 2);
    assert_int_equal(t.r[1].t_ms, 1250);
    assert_true(t.start_epoch_ms > 0);
    sw_plan_trace_free(&t);
    /* the conversation column: the same id is the same conversation, none
     * (absent or empty) is 0 */
    t = parse_csv_ok("0,10,5,true,0,agent-7\n1,20,5,,,agent-7\n2,30,5,true,0,agent-8\n"
                     "3,40,5,true,0,\n4,50,5\n");
    assert_int_equal(t.n, 5);
    assert_true(t.r[0].conv != 0 && t.r[0].conv == t.r[1].conv);
    assert_true(t.r[2].conv != 0 && t.r[2].conv != t.r[0].conv);
    assert_int_equal(t.r[3].conv, 0);
    assert_int_equal(t.r[4].conv, 0);
    sw_plan_trace_free(&t);
}

static void test_csv_bad_lines_name_their_line(void **state)
{
    (void)state;
    csv_err("0,1,1\n1,2\n", "line 2: 2 fields");
    csv_err("time,prompt_tokens,output_tokens\n0,1,1\n\n5,x,1\n", "line 4: prompt_tokens \"x\"");
    csv_err("0,1,0\n", "line 1: output_tokens \"0\"");
    csv_err("0,1,1,maybe\n", "line 1: allow_cloud \"maybe\"");
    csv_err("0,1,1,true,999\n", "line 1: priority \"999\"");
    csv_err("yesterday,1,1\n", "line 1: time \"yesterday\"");
    csv_err("0,1,1,true,1,c1,extra\n", "line 1: more than 6 fields");
    char longid[200];
    memset(longid, 'x', sizeof longid - 1);
    longid[sizeof longid - 1] = '\0';
    char row[256];
    snprintf(row, sizeof row, "0,1,1,true,1,%s\n", longid);
    csv_err(row, "line 1: conversation \"xxx");
    csv_err("# nothing\n", "no requests");
}

static void test_declog_reads_and_learns(void **state)
{
    (void)state;
    /* local: 100 prompt tokens, 11 out; first token at 300 ms, last at 1300:
     * decode (11-1)/1.0 s = 10 tokens/s, prefill (300 - 100)/100 = 2 ms/token;
     * non-streamed answers teach no speed */
    const char *log =
        "{\"time\":\"2026-11-30T10:00:00.000Z\",\"decision\":\"served\",\"tier\":\"local\","
        "\"reason\":\"baseline\",\"ttft_ms\":300,\"duration_ms\":1300,\"tokens_in\":100,"
        "\"tokens_out\":11}\n"
        "{\"time\":\"2026-11-30T10:00:02.000Z\",\"decision\":\"served\",\"tier\":\"local\","
        "\"reason\":\"privacy\",\"ttft_ms\":300,\"duration_ms\":1300,\"tokens_in\":100,"
        "\"tokens_out\":11}\n"
        "{\"time\":\"2026-11-30T10:00:01.000Z\",\"decision\":\"rejected\",\"code\":\"x\"}\n"
        /* not streamed: the first byte came 10 ms before the end; counted, the
         * two would make the median decode 10 tokens in 10 ms = 1000/s */
        "{\"time\":\"2026-11-30T10:00:03.000Z\",\"decision\":\"served\",\"tier\":\"local\","
        "\"reason\":\"baseline\",\"ttft_ms\":1290,\"duration_ms\":1300,\"tokens_in\":100,"
        "\"tokens_out\":11,\"stream\":false}\n"
        "{\"time\":\"2026-11-30T10:00:04.000Z\",\"decision\":\"served\",\"tier\":\"local\","
        "\"reason\":\"baseline\",\"ttft_ms\":1290,\"duration_ms\":1300,\"tokens_in\":100,"
        "\"tokens_out\":11,\"stream\":false}\n";
    struct sw_plan_trace t;
    char err[256] = "";
    assert_int_equal(sw_plan_trace_declog(log, strlen(log), &t, err, sizeof err), 0);
    assert_int_equal(t.n, 4);
    assert_int_equal(t.r[1].t_ms, 2000);
    assert_int_equal(t.r[0].allow_cloud, 1);
    assert_int_equal(t.r[1].allow_cloud, 0); /* kept local for privacy */
    assert_int_equal(t.r[1].whole, 0);
    assert_int_equal(t.r[2].whole, 1);      /* replayed as non-streamed */
    assert_int_equal(t.learned.samples, 2);
    assert_float_equal(t.learned.decode_tokens_per_s, 10.0, 1e-9);
    assert_float_equal(t.learned.prefill_ms_per_token, 2.0, 1e-9);
    sw_plan_trace_free(&t);

    const char *bad = "{\"time\":\"2026-11-30T10:00:00Z\",\"tokens_in\":1,\"tokens_out\":1}\n"
                      "{\"time\": oops}\n";
    assert_int_equal(sw_plan_trace_declog(bad, strlen(bad), &t, err, sizeof err), -1);
    assert_non_null(strstr(err, "line 2:"));
    const char *notime = "{\"tokens_in\":1,\"tokens_out\":1}\n";
    assert_int_equal(sw_plan_trace_declog(notime, strlen(notime), &t, err, sizeof err), -1);
    assert_non_null(strstr(err, "line 1: \"time\""));
}

static void test_synthetic_shape(void **state)
{
    (void)state;
    struct sw_plan_trace a, b;
    char err[256] = "";
    assert_int_equal(sw_plan_trace_synthetic("baseline=2/s,peak=5x,peak_hours=2,days=1,seed=7",
                                             &a, err, sizeof err), 0);
    assert_int_equal(sw_plan_trace_synthetic("baseline=2/s,peak=5x,peak_hours=2,days=1,seed=7",
                                             &b, err, sizeof err), 0);
    assert_int_equal(a.n, b.n); /* same seed, same trace */
    assert_memory_equal(a.r, b.r, a.n * sizeof *a.r);
    /* 22 h around 2/s, 2 h at 10/s: about 2 x 79200 + 10 x 7200 = 230400 */
    assert_in_range(a.n, 220000, 241000);
    size_t peak = 0;
    for (size_t i = 0; i < a.n; i++)
        if (a.r[i].t_ms >= 13 * 3600000u && a.r[i].t_ms < 15 * 3600000u)
            peak++;
    assert_in_range(peak, 70000, 74000);
    sw_plan_trace_free(&a);
    sw_plan_trace_free(&b);
    assert_int_equal(sw_plan_trace_synthetic("baseline=0/s", &a, err, sizeof err), -1);
    assert_non_null(strstr(err, "baseline"));
    assert_int_equal(sw_plan_trace_synthetic("peek=5x", &a, err, sizeof err), -1);
    assert_non_null(strstr(err, "unknown key \"peek\""));
}

/* box: 1 slot, 1 ms per prompt token, 10 tokens/s (100 ms a token).
 * cloud: 0.2 ms per prompt token, 80 tokens/s (12.5 ms), $10 / $20 per Mtok. */
static const char yaml[] =
    "backends:\n"
    "  - {name: box, tier: local, url: \"http://127.0.0.1:9001\", model: m, slots: 1,\n"
    "     prefill_ms_per_token: 1, decode_tokens_per_s: 10}\n"
    "  - {name: cloud, tier: cloud, url: \"http://127.0.0.1:9002\", model: c,\n"
    "     prefill_ms_per_token: 0.2, decode_tokens_per_s: 80,\n"
    "     price: {input_usd_per_mtok: 10, output_usd_per_mtok: 20}}\n"
    "models:\n"
    "  - {name: chat, backends: [box, cloud]}\n"
    "routing:\n"
    "  ttft_budget_ms: 800\n"
    "  latency: {degrade_ms: 100000, recover_ms: 50000}\n"
    "plan:\n"
    "  local_cost: {usd_per_hour: 1, usd_per_month: 270}\n";

static struct sw_config *load(void)
{
    struct sw_config *cfg = NULL;
    struct sw_config_errors errs = {0};
    int rc = sw_config_parse("plan.yaml", yaml, strlen(yaml), NULL, NULL, &cfg, &errs);
    if (rc)
        fail_msg("config: %s", errs.n ? errs.msgs[0] : "?");
    sw_config_errors_free(&errs);
    return cfg;
}

static struct sw_plan_result run(struct sw_config *cfg, const char *csv, int tiers, long budget)
{
    struct sw_plan_trace t = parse_csv_ok(csv);
    struct sw_plan_strategy st = {.name = "s", .tiers = tiers, .budget_ms = budget, .cap_usd = -1};
    struct sw_plan_result r;
    char err[256] = "";
    assert_int_equal(sw_plan_run(cfg, &cfg->models[0], &t, &st, &r, err, sizeof err), 0);
    sw_plan_derive(cfg, &cfg->models[0], &r);
    sw_plan_trace_free(&t);
    return r;
}

/* Three at once on one slot, local only: each waits for the one before.
 * TTFT = wait + 100 prompt x 1 ms + one 100 ms period: 200, 1300, 2400 ms. */
static void test_local_only_queues_fifo(void **state)
{
    (void)state;
    struct sw_config *cfg = load();
    struct sw_plan_result r = run(cfg, "0,100,10\n0,100,10\n0,100,10\n", SW_PLAN_LOCAL, 0);
    assert_int_equal(r.n, 3);
    assert_int_equal(r.local, 3);
    assert_int_equal(r.cloud, 0);
    assert_int_equal(r.within, 1);
    assert_float_equal(r.ttft_p50, 1300, 1e-9);
    assert_float_equal(r.ttft_p99, 2400, 1e-9);
    assert_float_equal(r.local_busy_ms, 3300, 1e-9);  /* 3 x (100 + 10 x 100) */
    assert_float_equal(r.duration_ms, 3300, 1e-9);    /* until the last answer ended */
    assert_float_equal(r.utilisation, 1.0, 1e-9);
    assert_float_equal(r.spend_usd, 0, 1e-12);
    /* the configured slots cost usd_per_month + 730 x usd_per_hour = 1000 a month */
    assert_float_equal(r.local_per_month, 1000, 1e-9);
    sw_plan_result_free(&r);
    sw_config_unref(cfg);
}

/* The box caches the latest prompt of its slot: the second turn of a
 * conversation prefills only the 50 tokens it adds (TTFT 50 + 100 = 150
 * ms, not 250), a request of another conversation or of none the whole
 * prompt; the slot keeps the prompt of the last request only. */
static void test_prefix_cache_per_slot(void **state)
{
    (void)state;
    struct sw_config *cfg = load();
    struct sw_plan_result r = run(cfg, "0,100,10,true,0,a\n10,150,10,true,0,a\n", SW_PLAN_LOCAL, 0);
    assert_float_equal(r.ttft_sum_ms, 200 + 150, 1e-9);
    assert_float_equal(r.local_busy_ms, 100 + 1000 + 50 + 1000, 1e-9);
    sw_plan_result_free(&r);
    r = run(cfg, "0,100,10\n10,150,10\n", SW_PLAN_LOCAL, 0);
    assert_float_equal(r.ttft_sum_ms, 200 + 250, 1e-9);
    sw_plan_result_free(&r);
    /* b's turn in between takes the slot: a's second turn prefills it all */
    r = run(cfg, "0,100,10,true,0,a\n5,80,10,true,0,b\n10,150,10,true,0,a\n", SW_PLAN_LOCAL, 0);
    assert_float_equal(r.ttft_sum_ms, 200 + 180 + 250, 1e-9);
    sw_plan_result_free(&r);
    sw_config_unref(cfg);
}

/* Two slots: a request no slot holds takes the free slot used least
 * recently, as llama.cpp's server does. a (10 tokens out) ends at 1100 ms,
 * b (1 token) at 200 ms; c at 2 s evicts b's slot, not a's, so a's second
 * turn at 3 s prefills only its 50 new tokens: TTFT 200 + 200 + 200 + 150.
 * (The lowest free slot would have been a's: 250.) */
static void test_prefix_cache_lru_slot(void **state)
{
    (void)state;
    struct sw_config *cfg = load();
    struct sw_plan_trace t = parse_csv_ok("0,100,10,true,0,a\n0,100,1,true,0,b\n"
                                          "2,100,1,true,0,c\n3,150,10,true,0,a\n");
    struct sw_plan_strategy st = {.name = "s", .tiers = SW_PLAN_LOCAL, .cap_usd = -1, .slots = 2};
    struct sw_plan_result r;
    char err[256] = "";
    assert_int_equal(sw_plan_run(cfg, &cfg->models[0], &t, &st, &r, err, sizeof err), 0);
    assert_float_equal(r.ttft_sum_ms, 200 + 200 + 200 + 150, 1e-9);
    sw_plan_result_free(&r);
    sw_plan_trace_free(&t);
    sw_config_unref(cfg);
}

/* Hybrid, 700 ms budget, no learned rates yet (the router's priors: 1 ms
 * per prompt token, 20 tokens/s). The first finds the slot free: estimate
 * 100 x 1 + 1000/20 = 150 ms, local. For the next two the slot is held: the
 * wait is the holder's latest finish, its bound at the priors, 100 x 1 +
 * 10 x 50 = 600 ms (capped by the fluid 100 x 1 + 256 x 50 = 12.9 s), plus
 * their own 150: 750 > 700, so each overflows at once (the second saw the
 * same: the first overflow left nobody queued). Cloud TTFT 100 x 0.2 + 12.5 =
 * 32.5 ms, cost (100 x 10 + 10 x 20) / 1e6 each. */
static void test_hybrid_overflows_on_the_wait_estimate(void **state)
{
    (void)state;
    struct sw_config *cfg = load();
    struct sw_plan_result r = run(cfg, "0,100,10\n0,100,10\n0,100,10\n",
                                  SW_PLAN_LOCAL | SW_PLAN_CLOUD, 700);
    assert_int_equal(r.local, 1);
    assert_int_equal(r.cloud, 2);
    assert_int_equal(r.spilled, 2);
    assert_int_equal(r.within, 3);
    assert_float_equal(r.spend_usd, 2 * 0.0012, 1e-12);
    assert_float_equal(r.ttft_p50, 32, 1e-9);
    assert_float_equal(r.ttft_sum_ms, 200 + 32.5 + 32.5, 1e-9);
    sw_plan_result_free(&r);

    /* Cloud only: no local cost, every request billed. */
    r = run(cfg, "0,100,10\n0,100,10\n0,100,10\n", SW_PLAN_CLOUD, 0);
    assert_int_equal(r.cloud, 3);
    assert_float_equal(r.spend_usd, 3 * 0.0012, 1e-12);
    assert_float_equal(r.local_per_month, 0, 1e-12);
    sw_plan_result_free(&r);
    sw_config_unref(cfg);
}

/* A waiter leaves the local queue for the cloud at the relay's first 25 ms
 * poll after its estimated first token passes the budget (1500 ms). The
 * first request teaches the rates: 10 tokens/s from its decode (9 tokens in
 * 900 ms), prefill (200 ms TTFT - one 100 ms period) / 100 = 1 ms/token, 10
 * output tokens. At 2 s, A (30 tokens) takes the slot. B's wait is A's
 * latest finish, 100 x 1 + 30 x 100 = 3100 ms, capped by the fluid
 * 100 x 1 + 10 x 100 = 1100 ms (A asked for more than the average); with
 * its own 100 + 100 its estimate is 1300 <= 1500: it queues. A's bound
 * stays 3100 - wait, so the fluid cap decides and the estimate grows with
 * the wait: 1500 at 200 ms (not past), 1525 at the 225 ms poll: it moves.
 * TTFT 225 + 32.5 ms. */
static void test_waiter_moves_to_cloud_at_the_crossing_poll(void **state)
{
    (void)state;
    struct sw_config *cfg = load();
    struct sw_plan_result r = run(cfg, "0,100,10\n2,100,30\n2,100,10\n",
                                  SW_PLAN_LOCAL | SW_PLAN_CLOUD, 1500);
    assert_int_equal(r.local, 2);
    assert_int_equal(r.cloud, 1);
    assert_int_equal(r.spilled, 1);
    assert_int_equal(r.within, 3);
    assert_float_equal(r.ttft_p50, 200, 1e-9);      /* the locals: 200 ms each */
    assert_float_equal(r.ttft_p99, 257, 1e-9);      /* B's 257.5 ms, whole ms */
    assert_float_equal(r.ttft_sum_ms, 200 + 200 + 257.5, 1e-9);
    assert_float_equal(r.spend_usd, 0.0012, 1e-12);
    sw_plan_result_free(&r);
    /* Local only, the same trace: B waits for A (done at 5.1 s): TTFT 3300. */
    r = run(cfg, "0,100,10\n2,100,30\n2,100,10\n", SW_PLAN_LOCAL, 1500);
    assert_int_equal(r.local, 3);
    assert_int_equal(r.within, 2);
    assert_float_equal(r.ttft_p99, 3300, 1e-9);
    sw_plan_result_free(&r);
    sw_config_unref(cfg);
}

/* The estimate does not only grow with the wait: it jumps when a slot
 * holder runs past its bound, and the planner sees that at the same poll as
 * the relay. 800 ms budget, the priors (1 ms/token, 20 tokens/s): the first
 * takes the slot (its bound 100 + 10 x 50 = 600 ms; it really needs 1100 at
 * the box's 10 tokens/s). The second's estimate is 600 + 150 = 750 <= 800:
 * it queues; the wait uses the holder's bound, 600 - elapsed, so every poll
 * sees 750, up to 575 ms. At 600 ms the holder is past its bound and still
 * counts a tenth of it, 60 ms: 600 + 60 + 150 = 810 > 800, it moves at that
 * poll: TTFT 600 + 32.5. The third's estimate counts the holder and the
 * waiter: 600 + 12.9 s of fluid for the second release: it overflows at
 * once (32.5 ms). */
static void test_waiter_moves_when_the_holder_passes_its_bound(void **state)
{
    (void)state;
    struct sw_config *cfg = load();
    struct sw_plan_result r = run(cfg, "0,100,10\n0,100,10\n0,100,10\n",
                                  SW_PLAN_LOCAL | SW_PLAN_CLOUD, 0);
    assert_int_equal(r.budget_ms, 800);
    assert_int_equal(r.local, 1);
    assert_int_equal(r.cloud, 2);
    assert_int_equal(r.spilled, 2);
    assert_int_equal(r.within, 3);
    assert_float_equal(r.ttft_sum_ms, 200 + 632.5 + 32.5, 1e-9);
    assert_float_equal(r.ttft_p99, 632, 1e-9);
    sw_plan_result_free(&r);
    sw_config_unref(cfg);
}

/* A non-streamed answer teaches the output length but no speeds, as in the
 * gateway. The waiter trace above with the first request non-streamed: the
 * rates stay at the priors (1 ms/token, 20 tokens/s), the average output is
 * 10. At 2 s A takes the slot (estimate 100 + 50 = 150). B's wait: A's bound
 * 100 + 30 x 50 = 1600, capped by the fluid 100 + 10 x 50 = 600; with its
 * own 150, 750 <= 1500: it queues; the estimate grows with the wait, 1500
 * at 750 ms (not past), 1525 at the 775 ms poll: it moves. TTFT 775 + 32.5
 * (streamed, the first request taught 10 tokens/s: 225 + 32.5). */
static void test_non_streamed_answer_teaches_no_speed(void **state)
{
    (void)state;
    struct sw_config *cfg = load();
    struct sw_plan_trace t = parse_csv_ok("0,100,10\n2,100,30\n2,100,10\n");
    t.r[0].whole = 1;
    struct sw_plan_strategy st = {.name = "s", .tiers = SW_PLAN_LOCAL | SW_PLAN_CLOUD,
                                  .budget_ms = 1500, .cap_usd = -1};
    struct sw_plan_result r;
    char err[256] = "";
    assert_int_equal(sw_plan_run(cfg, &cfg->models[0], &t, &st, &r, err, sizeof err), 0);
    sw_plan_trace_free(&t);
    assert_int_equal(r.local, 2);
    assert_int_equal(r.cloud, 1);
    assert_float_equal(r.ttft_sum_ms, 200 + 200 + 807.5, 1e-9);
    sw_plan_result_free(&r);
    sw_config_unref(cfg);
}

static void test_strategy_without_backends_is_an_error(void **state)
{
    (void)state;
    static const char only_local[] =
        "backends:\n"
        "  - {name: box, tier: local, url: \"http://127.0.0.1:9001\", model: m}\n"
        "models:\n"
        "  - {name: chat, backends: [box]}\n";
    struct sw_config *cfg = NULL;
    struct sw_config_errors errs = {0};
    assert_int_equal(sw_config_parse("p.yaml", only_local, strlen(only_local), NULL, NULL, &cfg,
                                     &errs), 0);
    sw_config_errors_free(&errs);
    struct sw_plan_trace t = parse_csv_ok("0,1,1\n");
    struct sw_plan_strategy st = {.name = "cloud only", .tiers = SW_PLAN_CLOUD, .cap_usd = -1};
    struct sw_plan_result r;
    char err[256] = "";
    assert_int_equal(sw_plan_run(cfg, &cfg->models[0], &t, &st, &r, err, sizeof err), -1);
    assert_non_null(strstr(err, "no cloud backend"));
    sw_plan_trace_free(&t);
    sw_config_unref(cfg);
}

/* The planner's keys are validated with the rest of the config. */
static void test_plan_keys_validated(void **state)
{
    (void)state;
    static const char bad[] =
        "backends:\n"
        "  - {name: b, tier: local, url: \"http://127.0.0.1:1\", model: m, decode_tokens_per_s: -1}\n"
        "models:\n"
        "  - {name: c, backends: [b]}\n"
        "plan:\n"
        "  local_cost: {usd_per_hour: x, usd_per_mnth: 3}\n";
    struct sw_config *cfg = NULL;
    struct sw_config_errors errs = {0};
    assert_int_not_equal(sw_config_parse("p.yaml", bad, strlen(bad), NULL, NULL, &cfg, &errs), 0);
    assert_int_equal(errs.n, 3);
    assert_non_null(strstr(errs.msgs[0], "backends[0].decode_tokens_per_s: \"-1\" is out of range"));
    assert_non_null(strstr(errs.msgs[1], "plan.local_cost.usd_per_hour: expected a number"));
    assert_non_null(strstr(errs.msgs[2], "plan.local_cost.usd_per_mnth: unknown key"));
    sw_config_errors_free(&errs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_csv_reads_and_sorts),
        cmocka_unit_test(test_csv_bad_lines_name_their_line),
        cmocka_unit_test(test_declog_reads_and_learns),
        cmocka_unit_test(test_synthetic_shape),
        cmocka_unit_test(test_local_only_queues_fifo),
        cmocka_unit_test(test_prefix_cache_per_slot),
        cmocka_unit_test(test_prefix_cache_lru_slot),
        cmocka_unit_test(test_hybrid_overflows_on_the_wait_estimate),
        cmocka_unit_test(test_waiter_moves_to_cloud_at_the_crossing_poll),
        cmocka_unit_test(test_waiter_moves_when_the_holder_passes_its_bound),
        cmocka_unit_test(test_non_streamed_answer_teaches_no_speed),
        cmocka_unit_test(test_strategy_without_backends_is_an_error),
        cmocka_unit_test(test_plan_keys_validated),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
