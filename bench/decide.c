/* The cost of one routing decision: sw_route_decide() over a realistic view
 * (2 local endpoints + 2 cloud backends), timed over many calls, next to a
 * baseline loop in the same process that only clears a plan (memset), so the
 * ratio is comparable across noisy machines. Built and run by bench/decide.sh.
 *
 *   decide [ITERATIONS]      default 10000000 per scenario */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "route/route.h"

/* Struct literals leave the rest zero. */
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

#define NOW 1000000

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* Keeps the compiler from dropping work whose result is unused. */
#define CLOBBER(p) __asm__ volatile("" : : "g"(p) : "memory")

static struct sw_route_backend_view backends[4] = {
    { .name = "mac-studio", .tier = SW_TIER_LOCAL, .health = SW_HEALTH_UP, .slots = 8,
      .in_flight = 8, .queued = 5, .queue_max = 64, .prefill_ms_per_token = 0.6,
      .decode_tps = 35, .avg_output_tokens = 220, .avg_prompt_tokens = 900, .rtt_ms = 0.4,
      .max_context_tokens = 32768, .supports_tools = true, .rpm_available = -1,
      .tpm_available = -1 },
    { .name = "rtx-box", .tier = SW_TIER_LOCAL, .health = SW_HEALTH_DEGRADED, .slots = 4,
      .in_flight = 4, .queued = 2, .queue_max = 64, .prefill_ms_per_token = 0.3,
      .decode_tps = 60, .avg_output_tokens = 220, .ttft_avg_ms = 450, .rtt_ms = 1.5,
      .max_context_tokens = 16384, .supports_tools = true, .rpm_available = -1,
      .tpm_available = -1 },
    { .name = "openai", .tier = SW_TIER_CLOUD, .health = SW_HEALTH_UP,
      .breaker = SW_BREAKER_HALF_OPEN, .probe_free = true, .ttft_avg_ms = 420, .rtt_ms = 35,
      .max_context_tokens = 128000, .supports_tools = true, .supports_images = true,
      .rpm_available = 300, .tpm_available = 150000, .input_usd_per_mtok = 2.5,
      .output_usd_per_mtok = 10 },
    { .name = "anthropic", .tier = SW_TIER_CLOUD, .health = SW_HEALTH_UP, .ttft_avg_ms = 600,
      .rtt_ms = 40, .max_context_tokens = 200000, .supports_tools = true,
      .supports_images = true, .rpm_available = 50, .tpm_available = 40000,
      .input_usd_per_mtok = 3, .output_usd_per_mtok = 15 },
};

struct scenario {
    const char *name;
    struct sw_route_facts facts;
    double spend_usd;
    bool emergency;
};

static const struct scenario scenarios[] = {
    { "overflow to cloud", { .prompt_tokens_est = 900, .max_tokens = 300, .allows_cloud = true,
                             .deadline_ms = NOW + 30000 } },
    { "restricted, stays local", { .prompt_tokens_est = 900, .max_tokens = 300,
                                   .allows_cloud = false, .deadline_ms = NOW + 30000 } },
    { "sensitive in emergency", { .prompt_tokens_est = 900, .max_tokens = 300,
                                  .allows_cloud = true, .sensitive = true,
                                  .deadline_ms = NOW + 30000 }, 0, true },
    { "capability, restricted: rejection",
      { .prompt_tokens_est = 40000, .max_tokens = 300, .allows_cloud = false,
        .deadline_ms = NOW + 30000 } },
};

int main(int argc, char **argv)
{
    long iters = argc > 1 ? strtol(argv[1], NULL, 10) : 10000000;
    struct sw_route_policy policy = { .ttft_budget_ms = 800, .spend_cap_usd = 50,
                                      .on_cap = SW_CAP_DEGRADE, .degrade_backend = 1,
                                      .masking_available = true, .shed_retry_after_s = 60 };
    static struct sw_route_plan plan;
    if (iters <= 0)
        iters = 10000000;

    /* Baseline: clearing the plan the caller would hand to decide. */
    double t0 = now_ns();
    for (long i = 0; i < iters; i++) {
        CLOBBER(&plan);
        memset(&plan, 0, sizeof plan);
        CLOBBER(&plan);
    }
    double base_ns = (now_ns() - t0) / (double)iters;
    printf("plan is %zu bytes; baseline memset(plan): %.1f ns/call\n", sizeof plan, base_ns);

    for (size_t s = 0; s < sizeof scenarios / sizeof scenarios[0]; s++) {
        struct sw_route_view view = { backends, 4, scenarios[s].spend_usd, scenarios[s].emergency };
        struct sw_route_facts f = scenarios[s].facts;
        unsigned long sink = 0;

        sw_route_decide(&f, &view, &policy, NOW, &plan);    /* warm up, and show */
        printf("%-36s -> ", scenarios[s].name);
        if (plan.n == 0)
            printf("%d %s", plan.status, plan.code);
        for (size_t a = 0; a < plan.n; a++)
            printf("%s%s:%s%s", a ? " " : "", backends[plan.attempts[a].backend].name,
                   sw_reason_name(plan.attempts[a].reason), plan.attempts[a].masked ? "*" : "");
        printf("\n");

        t0 = now_ns();
        for (long i = 0; i < iters; i++) {
            /* Vary the clock (and thus the time left) so nothing is loop-invariant. */
            sw_route_decide(&f, &view, &policy, NOW + (i & 1023), &plan);
            sink += plan.n;
            CLOBBER(&plan);
        }
        double ns = (now_ns() - t0) / (double)iters;
        printf("  %.1f ns/decide  (%.1fx the memset baseline)  [%ld calls, sink %lu]\n", ns,
               ns / base_ns, iters, sink % 7);
    }
    return 0;
}
