/* Unit tests of the routing decision (src/route/route.c).
 *
 * One table row per scenario: a view of up to 5 backends built from two
 * templates (an idle local box, a healthy cloud API) with overrides, the
 * request's facts and the policy, and the expected plan written as a string:
 * "L1:baseline C1:fallback C2:emergency*" (backend:reason, * = masked), or the
 * expected rejection (status, code, Retry-After, a piece of the message).
 * After the table, every reason and every rejection code must have appeared
 * in some row. */
#include <limits.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "route/route.h"

/* Rows leave fields to zero and override template fields. */
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Woverride-init"

#define NOW 1000000
#define T30 (NOW + 30000)

/* Idle local: 4 slots, 0.5 ms/token prefill, 40 tok/s decode, 200 output
 * tokens: a 500-token prompt has its first token in 276 ms (prefill, one decode
 * step, RTT); one request queued behind 4 in flight waits 1 x (250 + 5000) / 4 =
 * 1312 ms more. */
#define LOCAL(n, ...) { .name = n, .tier = SW_TIER_LOCAL, .health = SW_HEALTH_UP,           \
        .breaker = SW_BREAKER_CLOSED, .slots = 4, .queue_max = 64,                          \
        .prefill_ms_per_token = 0.5, .decode_tps = 40, .avg_output_tokens = 200,            \
        .rtt_ms = 1, .max_context_tokens = 8192, .supports_tools = true,                    \
        .rpm_available = -1, .tpm_available = -1, __VA_ARGS__ }
/* Healthy cloud: measured TTFT 400 ms, $3 / $15 per million tokens. */
#define CLOUD(n, ...) { .name = n, .tier = SW_TIER_CLOUD, .health = SW_HEALTH_UP,           \
        .breaker = SW_BREAKER_CLOSED, .ttft_avg_ms = 400, .rtt_ms = 40,                     \
        .max_context_tokens = 128000, .supports_tools = true, .supports_images = true,      \
        .rpm_available = 100, .tpm_available = 100000, .input_usd_per_mtok = 3,             \
        .output_usd_per_mtok = 15, __VA_ARGS__ }
#define FACTS(...) { .prompt_tokens_est = 500, .max_tokens = 200, .allows_cloud = true,   \
        .deadline_ms = T30, __VA_ARGS__ }
#define POLICY(...) { .ttft_budget_ms = 800, .on_cap = SW_CAP_SHED, .degrade_backend = -1,  \
        .shed_retry_after_s = 60, __VA_ARGS__ }

/* Residency: cloud regions, and a request allowed eu-west. */
#define EUR .region = "eu-west"
#define USR .region = "us-east"
#define EU .regions = {"eu-west"}, .n_regions = 1

/* Local overloads used below. */
#define BUSY .in_flight = 4, .queued = 2        /* wait 3 x 5250 / 4 = 3937 ms: overflow */
#define FULL .in_flight = 4, .queued = 64       /* queue at queue_max */

struct row {
    const char *name;
    struct sw_route_facts f;
    struct sw_route_backend_view b[5];
    size_t n;
    double spend_usd;
    bool emergency;
    struct sw_route_policy p;
    int64_t now;                /* 0: NOW */
    /* expected */
    const char *plan;           /* attempts, or NULL for a rejection */
    int status;
    const char *code;
    long retry_after;           /* checked for rejections; 0 means -1 */
    const char *excl;           /* if set: the non-eligible backends, "C1=privacy L1=down" */
    const char *msg;            /* if set: a substring of the rejection message */
};

static const struct row rows[] = {
    /* ---- baseline and ordering ---- */
    { "idle local is the baseline; cloud backs it up",
      FACTS(), { LOCAL("L1"), CLOUD("C1") }, 2, .p = POLICY(),
      .plan = "L1:baseline C1:fallback", .excl = "" },
    { "every eligible backend once: locals by wait, then clouds in order",
      FACTS(), { CLOUD("C1"), LOCAL("L1", .in_flight = 3, .rtt_ms = 30), CLOUD("C2"),
                 LOCAL("L2") }, 4, .p = POLICY(),
      .plan = "L2:baseline L1:fallback C1:fallback C2:fallback" },
    { "a busy local endpoint is passed over for an idle one",
      FACTS(), { LOCAL("L1", BUSY), LOCAL("L2"), CLOUD("C1") }, 3, .p = POLICY(),
      .plan = "L2:baseline L1:fallback C1:fallback" },
    { "a free slot beats a queue even when the queue's average wait looks shorter",
      FACTS(), { LOCAL("L1", .slots = 1000, .in_flight = 1000), LOCAL("L2", .slots = 1000, .rtt_ms = 20),
                 CLOUD("C1") }, 3, .p = POLICY(),
      .plan = "L2:baseline L1:fallback C1:fallback" },
    { "local-only model",
      FACTS(), { LOCAL("L1") }, 1, .p = POLICY(), .plan = "L1:baseline" },

    /* ---- prefix affinity (prefix_tokens: the longest prefix the box served;
     * cached_tokens: what it is expected to find cached) ---- */
    { "the local that served the prefix goes first, though another waits less",
      FACTS(), { LOCAL("L1"), LOCAL("L2", .rtt_ms = 30, .prefix_tokens = 450), CLOUD("C1") }, 3,
      .p = POLICY(), .plan = "L2:affinity L1:fallback C1:fallback" },
    { "the longest prefix wins among the boxes that hold one",
      FACTS(), { LOCAL("L1", .prefix_tokens = 100), LOCAL("L2", .rtt_ms = 30, .prefix_tokens = 450),
                 LOCAL("L3", .rtt_ms = 10, .prefix_tokens = 200), CLOUD("C1") }, 4,
      .p = POLICY(), .plan = "L2:affinity L1:fallback L3:fallback C1:fallback" },
    { "its cache counted, the box holding the prefix is the least wait anyway: baseline",
      FACTS(), { LOCAL("L1"), LOCAL("L2", .rtt_ms = 30, .prefix_tokens = 450,
                                          .cached_tokens = 450), CLOUD("C1") }, 3,
      .p = POLICY(), .plan = "L2:baseline L1:fallback C1:fallback" },
    { "the box holding the prefix would break the budget: the least-wait local",
      FACTS(), { LOCAL("L1"), LOCAL("L2", BUSY, .prefix_tokens = 450), CLOUD("C1") }, 3,
      .p = POLICY(), .plan = "L1:baseline L2:fallback C1:fallback" },
    { "the box holding the prefix has no free slot, another has: no pile-up, within budget",
      FACTS(), { LOCAL("L1"), LOCAL("L2", .in_flight = 4, .prefix_tokens = 450), CLOUD("C1") }, 3,
      .p = POLICY(.ttft_budget_ms = 5000), .plan = "L1:baseline L2:fallback C1:fallback" },
    { "the box holding the prefix has no free slot, another has: no pile-up, no budget",
      FACTS(), { LOCAL("L1"), LOCAL("L2", .in_flight = 4, .queued = 30, .prefix_tokens = 450,
                                          .cached_tokens = 450), CLOUD("C1") }, 3,
      .p = POLICY(.ttft_budget_ms = 0), .plan = "L1:baseline L2:fallback C1:fallback" },
    { "a short wait for the box holding most of a long prompt: affinity, its prefill saved",
      FACTS(.prompt_tokens_est = 2000), { LOCAL("L1"), LOCAL("L2", .in_flight = 4,
                                          .avg_prompt_tokens = 100, .avg_output_tokens = 10,
                                          .prefix_tokens = 1950), CLOUD("C1") }, 3,
      .p = POLICY(.ttft_budget_ms = 5000), .plan = "L2:affinity L1:fallback C1:fallback" },
    { "the box holding the prefix has a free slot: affinity within a wide budget",
      FACTS(), { LOCAL("L1"), LOCAL("L2", .in_flight = 3, .rtt_ms = 30, .prefix_tokens = 450),
                 CLOUD("C1") }, 3,
      .p = POLICY(.ttft_budget_ms = 5000), .plan = "L2:affinity L1:fallback C1:fallback" },
    { "following a running turn: the box it waits on goes first, in no line (its slot's release)",
      FACTS(.prompt_tokens_est = 2000), { LOCAL("L1"), LOCAL("L2", .in_flight = 4, .queued = 3,
                                          .prefix_tokens = 1900, .cached_tokens = 1900,
                                          .follow_left_ms = 300), CLOUD("C1") }, 3,
      .p = POLICY(), .plan = "L2:affinity L1:fallback C1:fallback" },
    { "following a running turn whose slot frees too late for the budget: the least-wait local",
      FACTS(.prompt_tokens_est = 1000), { LOCAL("L1"), LOCAL("L2", .in_flight = 4,
                                          .prefix_tokens = 900, .cached_tokens = 900,
                                          .follow_left_ms = 900), CLOUD("C1") }, 3,
      .p = POLICY(), .plan = "L1:baseline L2:fallback C1:fallback" },
    { "both locals over the budget, one holding the prefix: the cloud",
      FACTS(), { LOCAL("L1", BUSY), LOCAL("L2", BUSY, .prefix_tokens = 450), CLOUD("C1") }, 3,
      .p = POLICY(), .plan = "C1:overflow L1:fallback L2:fallback" },
    { "a long prompt the box holds: only the uncached suffix is prefilled, within the budget",
      FACTS(.prompt_tokens_est = 2000), { LOCAL("L1"), LOCAL("L2", .in_flight = 1,
                                          .prefix_tokens = 1900, .cached_tokens = 1900),
                                          CLOUD("C1") }, 3,
      .p = POLICY(), .plan = "L2:baseline L1:fallback C1:fallback" },
    { "a long prompt, the prefix held but no hit ever reported: the full prompt (long_prompt)",
      FACTS(.prompt_tokens_est = 2000), { LOCAL("L1", .prefix_tokens = 1900), CLOUD("C1") }, 2,
      .p = POLICY(), .plan = "L1:long_prompt C1:fallback" },
    { "a queued request whose prefix is cached stays within the budget",
      FACTS(.prompt_tokens_est = 2000), { LOCAL("L1", .in_flight = 1, .slots = 1,
                                          .avg_prompt_tokens = 100, .avg_output_tokens = 10,
                                          .prefix_tokens = 1950, .cached_tokens = 1950),
                                          CLOUD("C1") }, 2,
      .p = POLICY(), .plan = "L1:baseline C1:fallback" },
    { "re-decision: the box holding the prefix first, reason fallback",
      FACTS(.exclude = 1u), { LOCAL("L1"), LOCAL("L2", .rtt_ms = 30, .prefix_tokens = 450),
                              LOCAL("L3"), CLOUD("C1") }, 4,
      .p = POLICY(), .plan = "L2:fallback L3:fallback C1:fallback", .excl = "L1=failed" },
    { "latency-critical: the lowest estimate, whatever the prefix",
      FACTS(.latency_critical = true), { LOCAL("L1"), LOCAL("L2", .rtt_ms = 30,
                                         .prefix_tokens = 450), CLOUD("C1") }, 3,
      .p = POLICY(), .plan = "L1:baseline L2:fallback C1:fallback" },
    { "a degraded box holding the prefix is not preferred",
      FACTS(), { LOCAL("L1"), LOCAL("L2", .health = SW_HEALTH_DEGRADED, .ttft_avg_ms = 300,
                                    .prefix_tokens = 450), CLOUD("C1") }, 3,
      .p = POLICY(), .plan = "L1:baseline L2:fallback C1:fallback" },
    { "a restricted request: affinity among the locals all the same",
      FACTS(.allows_cloud = false), { LOCAL("L1"), LOCAL("L2", .rtt_ms = 30,
                                      .prefix_tokens = 450), CLOUD("C1") }, 3,
      .p = POLICY(), .plan = "L2:affinity L1:fallback", .excl = "C1=privacy" },

    /* ---- placement of a request no local holds a prefix of (drop_age_ms:
     * how long ago the box served the prefix its table drops next) ---- */
    { "no box holds the prefix: the one whose next prefix to drop is the oldest",
      FACTS(), { LOCAL("L1", .drop_age_ms = 2000), LOCAL("L2", .rtt_ms = 30, .drop_age_ms = 60000),
                 CLOUD("C1") }, 3,
      .p = POLICY(), .plan = "L2:affinity L1:fallback C1:fallback" },
    { "a box whose table has room drops nothing: it goes first",
      FACTS(), { LOCAL("L1", .drop_age_ms = 60000),
                 LOCAL("L2", .rtt_ms = 30, .drop_age_ms = SW_ROUTE_DROP_NONE), CLOUD("C1") }, 3,
      .p = POLICY(), .plan = "L2:affinity L1:fallback C1:fallback" },
    { "alike ages (affinity off: all 0) keep the least-wait order",
      FACTS(), { LOCAL("L1"), LOCAL("L2", .rtt_ms = 30), CLOUD("C1") }, 3,
      .p = POLICY(), .plan = "L1:baseline L2:fallback C1:fallback" },
    { "the box with the older prefix would queue the request: the least-wait order",
      FACTS(), { LOCAL("L1", .drop_age_ms = 2000), LOCAL("L2", .in_flight = 4, .drop_age_ms = 60000),
                 CLOUD("C1") }, 3,
      .p = POLICY(), .plan = "L1:baseline L2:fallback C1:fallback" },
    { "the box with the older prefix would break the budget: the least-wait order",
      FACTS(), { LOCAL("L1", .drop_age_ms = 2000),
                 LOCAL("L2", .prefill_ms_per_token = 5, .drop_age_ms = 60000), CLOUD("C1") }, 3,
      .p = POLICY(), .plan = "L1:baseline L2:fallback C1:fallback" },
    { "a box holding a prefix of it: affinity to that box, whatever the ages",
      FACTS(), { LOCAL("L1", .drop_age_ms = 2000), LOCAL("L2", .rtt_ms = 30, .drop_age_ms = 60000),
                 LOCAL("L3", .rtt_ms = 20, .prefix_tokens = 450), CLOUD("C1") }, 4,
      .p = POLICY(), .plan = "L3:affinity L1:fallback L2:fallback C1:fallback" },
    { "latency-critical: the lowest estimate, whatever the ages",
      FACTS(.latency_critical = true), { LOCAL("L1", .drop_age_ms = 2000),
                 LOCAL("L2", .rtt_ms = 30, .drop_age_ms = 60000), CLOUD("C1") }, 3,
      .p = POLICY(), .plan = "L1:baseline L2:fallback C1:fallback" },

    /* ---- overflow ---- */
    { "wait over the TTFT budget spills to the first cloud",
      FACTS(), { LOCAL("L1", BUSY), CLOUD("C1"), CLOUD("C2") }, 3, .p = POLICY(),
      .plan = "C1:overflow C2:fallback L1:fallback" },
    { "one request queued behind full slots: 1563 ms > 800",
      FACTS(), { LOCAL("L1", .in_flight = 4), CLOUD("C1") }, 2, .p = POLICY(),
      .plan = "C1:overflow L1:fallback" },
    { "a free slot: no wait, no spill (the signal is the wait, not the rate)",
      FACTS(), { LOCAL("L1", .in_flight = 3), CLOUD("C1") }, 2, .p = POLICY(),
      .plan = "L1:baseline C1:fallback" },
    { "budget from policy: 5000 ms tolerates the queue (4188 ms)",
      FACTS(), { LOCAL("L1", BUSY), CLOUD("C1") }, 2, .p = POLICY(.ttft_budget_ms = 5000),
      .plan = "L1:baseline C1:fallback" },
    { "deadline nearer than the local wait: overflow",
      FACTS(.deadline_ms = NOW + 200), { LOCAL("L1"), CLOUD("C1") }, 2, .p = POLICY(),
      .plan = "C1:overflow L1:fallback" },
    { "queue full, cloud allowed: overflow",
      FACTS(), { LOCAL("L1", FULL), CLOUD("C1") }, 2, .p = POLICY(),
      .plan = "C1:overflow", .excl = "L1=queue_full" },
    { "queue_max 0: no waiting at all once the slots are busy",
      FACTS(), { LOCAL("L1", .in_flight = 4, .queue_max = 0), CLOUD("C1") }, 2, .p = POLICY(),
      .plan = "C1:overflow", .excl = "L1=queue_full" },
    { "queue full, restricted: 503 local_queue_full with Retry-After",
      FACTS(.allows_cloud = false), { LOCAL("L1", FULL), CLOUD("C1") }, 2, .p = POLICY(),
      .status = 503, .code = "local_queue_full", .retry_after = 60,
      .excl = "L1=queue_full C1=privacy", .msg = "queue" },
    { "queue full, cloud down: 503 local_queue_full",
      FACTS(), { LOCAL("L1", .in_flight = 4, .queued = 1, .queue_max = 1),
                 CLOUD("C1", .health = SW_HEALTH_DOWN) }, 2, .p = POLICY(),
      .status = 503, .code = "local_queue_full", .retry_after = 3 },
    { "overflow, no cloud configured: stays local",
      FACTS(), { LOCAL("L1", BUSY) }, 1, .p = POLICY(), .plan = "L1:baseline" },

    /* ---- privacy ---- */
    { "restricted, idle local: baseline, no cloud attempt",
      FACTS(.allows_cloud = false), { LOCAL("L1"), CLOUD("C1") }, 2, .p = POLICY(),
      .plan = "L1:baseline", .excl = "C1=privacy" },
    { "restricted waits for local however deep the queue: privacy",
      FACTS(.allows_cloud = false), { LOCAL("L1", .in_flight = 4, .queued = 63), CLOUD("C1") },
      2, .p = POLICY(), .plan = "L1:privacy", .excl = "C1=privacy" },
    { "restricted, local down: 503 privacy_restricted",
      FACTS(.allows_cloud = false), { LOCAL("L1", .health = SW_HEALTH_DOWN), CLOUD("C1") }, 2,
      .p = POLICY(), .status = 503, .code = "privacy_restricted", .msg = "may not leave" },
    { "restricted, cloud-only model: 422 (no local backend)",
      FACTS(.allows_cloud = false), { CLOUD("C1") }, 1, .p = POLICY(),
      .status = 422, .code = "local_capacity_insufficient", .msg = "no local backend" },
    { "sensitive overflow without emergency: privacy",
      FACTS(.sensitive = true), { LOCAL("L1", BUSY), CLOUD("C1") }, 2, .p = POLICY(),
      .plan = "L1:privacy", .excl = "C1=privacy" },

    /* ---- emergency ---- */
    { "emergency, sensitive, idle local: local first, masked cloud behind",
      FACTS(.sensitive = true), { LOCAL("L1"), CLOUD("C1") }, 2, .emergency = true,
      .p = POLICY(.masking_available = true), .plan = "L1:baseline C1:emergency*" },
    { "emergency does not spill a sensitive overflow: local meets the deadline",
      FACTS(.sensitive = true), { LOCAL("L1", BUSY), CLOUD("C1") }, 2, .emergency = true,
      .p = POLICY(.masking_available = true), .plan = "L1:privacy C1:emergency*" },
    { "emergency, local down: masked cloud",
      FACTS(.sensitive = true), { LOCAL("L1", .health = SW_HEALTH_DOWN), CLOUD("C1"),
                                  CLOUD("C2") }, 3, .emergency = true,
      .p = POLICY(.masking_available = true), .plan = "C1:emergency* C2:emergency*" },
    { "emergency, local breaker open: masked cloud",
      FACTS(.sensitive = true), { LOCAL("L1", .breaker = SW_BREAKER_OPEN), CLOUD("C1") }, 2,
      .emergency = true, .p = POLICY(.masking_available = true), .plan = "C1:emergency*" },
    { "emergency, local failed this request: masked cloud",
      FACTS(.sensitive = true, .exclude = 1), { LOCAL("L1"), CLOUD("C1") }, 2,
      .emergency = true, .p = POLICY(.masking_available = true), .plan = "C1:emergency*",
      .excl = "L1=failed" },
    { "emergency, local cannot meet the deadline: masked cloud first",
      FACTS(.sensitive = true, .deadline_ms = NOW + 3000), { LOCAL("L1", BUSY), CLOUD("C1") },
      2, .emergency = true, .p = POLICY(.masking_available = true),
      .plan = "C1:emergency* L1:fallback" },
    { "emergency, local queue full: masked cloud",
      FACTS(.sensitive = true), { LOCAL("L1", FULL), CLOUD("C1") }, 2, .emergency = true,
      .p = POLICY(.masking_available = true), .plan = "C1:emergency*" },
    { "emergency without masking: sensitive never leaves",
      FACTS(.sensitive = true), { LOCAL("L1", .health = SW_HEALTH_DOWN), CLOUD("C1") }, 2,
      .emergency = true, .p = POLICY(), .status = 503, .code = "privacy_restricted",
      .excl = "L1=down C1=no_masking", .msg = "masking is not available" },
    { "allow_cloud false is absolute, even sensitive in an emergency with masking",
      FACTS(.sensitive = true, .allows_cloud = false),
      { LOCAL("L1", .health = SW_HEALTH_DOWN), CLOUD("C1") }, 2, .emergency = true,
      .p = POLICY(.masking_available = true), .status = 503, .code = "privacy_restricted",
      .excl = "L1=down C1=privacy" },
    { "emergency is not for capability: 422",
      FACTS(.sensitive = true, .needs_images = true), { LOCAL("L1"), CLOUD("C1") }, 2,
      .emergency = true, .p = POLICY(.masking_available = true), .status = 422,
      .code = "local_capacity_insufficient", .msg = "image input" },
    { "emergency, non-sensitive: unaffected, unmasked",
      FACTS(), { LOCAL("L1", BUSY), CLOUD("C1") }, 2, .emergency = true,
      .p = POLICY(.masking_available = true), .plan = "C1:overflow L1:fallback" },
    { "emergency, local down, cloud over the cap: 429",
      FACTS(.sensitive = true), { LOCAL("L1", .health = SW_HEALTH_DOWN), CLOUD("C1") }, 2,
      .emergency = true, .spend_usd = 10,
      .p = POLICY(.masking_available = true, .spend_cap_usd = 10), .status = 429,
      .code = "budget_exhausted", .retry_after = 60 },
    { "emergency, cloud-only model: masked",
      FACTS(.sensitive = true), { CLOUD("C1") }, 1, .emergency = true,
      .p = POLICY(.masking_available = true), .plan = "C1:emergency*" },

    /* ---- residency: a sensitive request may use clouds in its regions ---- */
    { "residency: sensitive overflow goes to the cloud in its region, never another",
      FACTS(.sensitive = true, EU), { LOCAL("L1", BUSY), CLOUD("US", USR), CLOUD("EU", EUR) }, 3,
      .p = POLICY(), .plan = "EU:overflow L1:fallback", .excl = "US=privacy" },
    { "residency: sensitive, idle local: local first, the in-region cloud behind",
      FACTS(.sensitive = true, EU), { LOCAL("L1"), CLOUD("US", USR), CLOUD("EU", EUR) }, 3,
      .p = POLICY(), .plan = "L1:baseline EU:fallback", .excl = "US=privacy" },
    { "residency: no regions (the default): sensitive stays local",
      FACTS(.sensitive = true), { LOCAL("L1", BUSY), CLOUD("US", USR), CLOUD("EU", EUR) }, 3,
      .p = POLICY(), .plan = "L1:privacy", .excl = "US=privacy EU=privacy" },
    { "residency: a region no backend of the model has: local only",
      FACTS(.sensitive = true, .regions = {"ap-south"}, .n_regions = 1),
      { LOCAL("L1", BUSY), CLOUD("US", USR), CLOUD("EU", EUR) }, 3,
      .p = POLICY(), .plan = "L1:privacy", .excl = "US=privacy EU=privacy" },
    { "residency: labels match exactly (eu-west-1 is not eu-west)",
      FACTS(.sensitive = true, EU), { LOCAL("L1", BUSY), CLOUD("EU1", .region = "eu-west-1") }, 2,
      .p = POLICY(), .plan = "L1:privacy", .excl = "EU1=privacy" },
    { "residency: a cloud without a region never takes sensitive data",
      FACTS(.sensitive = true, EU), { LOCAL("L1", BUSY), CLOUD("C1") }, 2,
      .p = POLICY(), .plan = "L1:privacy", .excl = "C1=privacy" },
    { "residency: allow_cloud false still means local only, sensitive or not",
      FACTS(.sensitive = true, .allows_cloud = false, EU),
      { LOCAL("L1", BUSY), CLOUD("US", USR), CLOUD("EU", EUR) }, 3,
      .p = POLICY(), .plan = "L1:privacy", .excl = "US=privacy EU=privacy" },
    { "residency: allow_cloud false, local down: refused, not sent in region",
      FACTS(.allows_cloud = false, EU), { LOCAL("L1", .health = SW_HEALTH_DOWN), CLOUD("EU", EUR) },
      2, .p = POLICY(), .status = 503, .code = "privacy_restricted", .excl = "L1=down EU=privacy" },
    { "residency: regions do not restrict a request that is not sensitive",
      FACTS(EU), { LOCAL("L1", BUSY), CLOUD("US", USR), CLOUD("EU", EUR) }, 3,
      .p = POLICY(), .plan = "US:overflow EU:fallback L1:fallback", .excl = "" },
    { "residency: both regions listed: configured order among them",
      FACTS(.sensitive = true, .regions = {"us-east", "eu-west"}, .n_regions = 2),
      { LOCAL("L1", BUSY), CLOUD("US", USR), CLOUD("EU", EUR) }, 3,
      .p = POLICY(), .plan = "US:overflow EU:fallback L1:fallback", .excl = "" },
    { "residency: cloud-only model: the in-region cloud, reason privacy for the one passed over",
      FACTS(.sensitive = true, EU), { CLOUD("US", USR), CLOUD("EU", EUR) }, 2,
      .p = POLICY(), .plan = "EU:privacy", .excl = "US=privacy" },
    { "residency: in-region cloud's breaker open: stays local, reason breaker",
      FACTS(.sensitive = true, EU),
      { LOCAL("L1", BUSY), CLOUD("US", USR), CLOUD("EU", EUR, .breaker = SW_BREAKER_OPEN) }, 3,
      .p = POLICY(), .plan = "L1:breaker", .excl = "US=privacy EU=breaker_open" },
    { "residency: local full, in-region cloud down: 503 local_queue_full, nothing out of region",
      FACTS(.sensitive = true, EU),
      { LOCAL("L1", FULL), CLOUD("US", USR), CLOUD("EU", EUR, .health = SW_HEALTH_DOWN) }, 3,
      .p = POLICY(), .status = 503, .code = "local_queue_full", .retry_after = 60,
      .excl = "L1=queue_full US=privacy EU=down" },
    { "residency: latency-critical sensitive: only the in-region cloud competes",
      FACTS(.sensitive = true, .latency_critical = true, EU),
      { LOCAL("L1", .in_flight = 3), CLOUD("US", USR, .ttft_avg_ms = 10), CLOUD("EU", EUR) }, 3,
      .p = POLICY(), .plan = "L1:baseline EU:fallback", .excl = "US=privacy" },
    { "residency: emergency with masking: in region unmasked, out of region not at all",
      FACTS(.sensitive = true, EU),
      { LOCAL("L1", .health = SW_HEALTH_DOWN), CLOUD("US", USR), CLOUD("EU", EUR) }, 3,
      .emergency = true, .p = POLICY(.masking_available = true), .plan = "EU:fallback",
      .excl = "L1=down US=privacy" },
    { "residency: emergency, no cloud in the regions: masked as before",
      FACTS(.sensitive = true, .regions = {"ap-south"}, .n_regions = 1),
      { LOCAL("L1", .health = SW_HEALTH_DOWN), CLOUD("US", USR), CLOUD("EU", EUR) }, 3,
      .emergency = true, .p = POLICY(.masking_available = true),
      .plan = "US:emergency* EU:emergency*" },

    /* ---- latency ---- */
    { "degraded local: cloud, reason latency",
      FACTS(), { LOCAL("L1", .health = SW_HEALTH_DEGRADED, .ttft_avg_ms = 350), CLOUD("C1") }, 2,
      .p = POLICY(), .plan = "C1:latency L1:fallback" },
    { "degraded local ranks after a healthy one",
      FACTS(), { LOCAL("L1", .health = SW_HEALTH_DEGRADED), LOCAL("L2", .in_flight = 3, .rtt_ms = 90),
                 CLOUD("C1") }, 3, .p = POLICY(), .plan = "L2:baseline L1:fallback C1:fallback" },
    { "degraded local, restricted: privacy",
      FACTS(.allows_cloud = false), { LOCAL("L1", .health = SW_HEALTH_DEGRADED), CLOUD("C1") }, 2,
      .p = POLICY(), .plan = "L1:privacy" },
    { "latency-critical: cloud faster (300 < 501 ms)",
      FACTS(.prompt_tokens_est = 1000, .latency_critical = true),
      { LOCAL("L1"), CLOUD("C1", .ttft_avg_ms = 900), CLOUD("C2", .ttft_avg_ms = 300) }, 3,
      .p = POLICY(), .plan = "C2:latency C1:fallback L1:fallback" },
    { "latency-critical: local faster, baseline",
      FACTS(.latency_critical = true), { LOCAL("L1"), CLOUD("C1") }, 2, .p = POLICY(),
      .plan = "L1:baseline C1:fallback" },
    { "latency-critical: a probing local is the fastest",
      FACTS(.latency_critical = true),
      { LOCAL("L1", .breaker = SW_BREAKER_HALF_OPEN, .probe_free = true),
        LOCAL("L2", .rtt_ms = 50), CLOUD("C1") }, 3, .p = POLICY(),
      .plan = "L1:latency L2:fallback C1:fallback" },
    { "latency-critical, restricted, cloud faster: privacy",
      FACTS(.prompt_tokens_est = 1000, .latency_critical = true, .allows_cloud = false),
      { LOCAL("L1"), CLOUD("C1", .ttft_avg_ms = 100) }, 2, .p = POLICY(), .plan = "L1:privacy" },
    { "latency-critical, no cloud data: priors (prefill 0.5 ms/token + RTT) favour local",
      FACTS(.latency_critical = true), { LOCAL("L1"), CLOUD("C1", .ttft_avg_ms = 0) }, 2,
      .p = POLICY(), .plan = "L1:baseline C1:fallback" },

    /* ---- cold start ---- */
    { "cold, warm-up fits the deadline: wait for local",
      FACTS(), { LOCAL("L1", .health = SW_HEALTH_COLD, .warm_eta_ms = 5000), CLOUD("C1") }, 2,
      .p = POLICY(), .plan = "L1:baseline C1:fallback" },
    { "cold, warm-up outlasts a short deadline: cloud",
      FACTS(.deadline_ms = NOW + 3000),
      { LOCAL("L1", .health = SW_HEALTH_COLD, .warm_eta_ms = 5000), CLOUD("C1") }, 2,
      .p = POLICY(), .plan = "C1:cold_start L1:fallback" },
    { "warming with no ETA uses the 10 s prior",
      FACTS(.deadline_ms = NOW + 8000), { LOCAL("L1", .health = SW_HEALTH_WARMING), CLOUD("C1") },
      2, .p = POLICY(), .plan = "C1:cold_start L1:fallback" },
    { "cold, no deadline: wait for local",
      FACTS(.deadline_ms = 0), { LOCAL("L1", .health = SW_HEALTH_COLD), CLOUD("C1") }, 2,
      .p = POLICY(), .plan = "L1:baseline C1:fallback" },
    { "cold, short deadline, restricted: privacy",
      FACTS(.deadline_ms = NOW + 3000, .allows_cloud = false),
      { LOCAL("L1", .health = SW_HEALTH_COLD, .warm_eta_ms = 5000), CLOUD("C1") }, 2,
      .p = POLICY(), .plan = "L1:privacy" },
    { "a warm local is preferred over a cold one",
      FACTS(), { LOCAL("L1", .health = SW_HEALTH_COLD, .warm_eta_ms = 5000), LOCAL("L2", BUSY),
                 CLOUD("C1") }, 3, .p = POLICY(), .plan = "C1:overflow L2:fallback L1:fallback" },

    /* ---- idle box: a long prompt (4000 tokens: 2000 ms prefill + 26 ms) ---- */
    { "idle box, long prompt: its own prefill breaks the budget, it stays local",
      FACTS(.prompt_tokens_est = 4000), { LOCAL("L1"), CLOUD("C1") }, 2, .p = POLICY(),
      .plan = "L1:long_prompt C1:fallback", .excl = "" },
    { "one request running (a free slot left): not idle, overflow",
      FACTS(.prompt_tokens_est = 4000), { LOCAL("L1", .in_flight = 1), CLOUD("C1") }, 2,
      .p = POLICY(), .plan = "C1:overflow L1:fallback" },
    { "a request of Spillway's queued there: not idle, overflow",
      FACTS(.prompt_tokens_est = 4000), { LOCAL("L1", .queued = 1), CLOUD("C1") }, 2,
      .p = POLICY(), .plan = "C1:overflow L1:fallback" },
    { "outside work the server reports: not idle, overflow",
      FACTS(.prompt_tokens_est = 4000), { LOCAL("L1", .outside_load = 1), CLOUD("C1") }, 2,
      .p = POLICY(), .plan = "C1:overflow L1:fallback" },
    { "garbage outside load counts as none: idle",
      FACTS(.prompt_tokens_est = 4000), { LOCAL("L1", .outside_load = NAN), CLOUD("C1") }, 2,
      .p = POLICY(), .plan = "L1:long_prompt C1:fallback" },
    { "at the budget exactly (1548 tokens: 800 ms): baseline",
      FACTS(.prompt_tokens_est = 1548), { LOCAL("L1"), CLOUD("C1") }, 2, .p = POLICY(),
      .plan = "L1:baseline C1:fallback" },
    { "just over it (1550 tokens: 801 ms): long_prompt",
      FACTS(.prompt_tokens_est = 1550), { LOCAL("L1"), CLOUD("C1") }, 2, .p = POLICY(),
      .plan = "L1:long_prompt C1:fallback" },
    { "the deadline nearer than the prefill: overflow (the deadline is hard)",
      FACTS(.prompt_tokens_est = 4000, .deadline_ms = NOW + 1500), { LOCAL("L1"), CLOUD("C1") },
      2, .p = POLICY(), .plan = "C1:overflow L1:fallback" },
    { "a slow link alone breaks the budget (RTT 900 ms): overflow",
      FACTS(), { LOCAL("L1", .rtt_ms = 900), CLOUD("C1") }, 2, .p = POLICY(),
      .plan = "C1:overflow L1:fallback" },
    { "RTT and first step within the budget (800 ms), the prefill over it: long_prompt",
      FACTS(), { LOCAL("L1", .rtt_ms = 775), CLOUD("C1") }, 2, .p = POLICY(),
      .plan = "L1:long_prompt C1:fallback" },
    { "no learned rate: the prior counts as the prefill",
      FACTS(.prompt_tokens_est = 4000), { LOCAL("L1", .prefill_ms_per_token = 0), CLOUD("C1") },
      2, .p = POLICY(), .plan = "L1:long_prompt C1:fallback" },
    { "restricted: long_prompt, not privacy (nothing wanted the cloud)",
      FACTS(.prompt_tokens_est = 4000, .allows_cloud = false), { LOCAL("L1"), CLOUD("C1") }, 2,
      .p = POLICY(), .plan = "L1:long_prompt", .excl = "C1=privacy" },
    { "local-only model: long_prompt",
      FACTS(.prompt_tokens_est = 4000), { LOCAL("L1") }, 1, .p = POLICY(),
      .plan = "L1:long_prompt" },
    { "cap reached, shed: an idle box's long prompt is served, not shed",
      FACTS(.prompt_tokens_est = 4000), { LOCAL("L1"), CLOUD("C1") }, 2, .spend_usd = 10,
      .p = POLICY(.spend_cap_usd = 10), .plan = "L1:long_prompt", .excl = "C1=budget" },
    { "latency-critical, the cloud's estimate lower: latency",
      FACTS(.prompt_tokens_est = 4000, .latency_critical = true), { LOCAL("L1"), CLOUD("C1") },
      2, .p = POLICY(), .plan = "C1:latency L1:fallback" },
    { "latency-critical, cap reached, shed: local, budget (not shed)",
      FACTS(.prompt_tokens_est = 4000, .latency_critical = true), { LOCAL("L1"), CLOUD("C1") },
      2, .spend_usd = 10, .p = POLICY(.spend_cap_usd = 10), .plan = "L1:budget" },
    { "latency-critical, every cloud breaker open (none to compare): long_prompt",
      FACTS(.prompt_tokens_est = 4000, .latency_critical = true),
      { LOCAL("L1"), CLOUD("C1", .breaker = SW_BREAKER_OPEN) }, 2, .p = POLICY(),
      .plan = "L1:long_prompt", .excl = "C1=breaker_open" },
    { "latency-critical, the cloud slower than local: long_prompt",
      FACTS(.prompt_tokens_est = 4000, .latency_critical = true),
      { LOCAL("L1"), CLOUD("C1", .ttft_avg_ms = 3000) }, 2, .p = POLICY(),
      .plan = "L1:long_prompt C1:fallback" },
    { "latency-critical, no cloud open (rate-limited): long_prompt",
      FACTS(.prompt_tokens_est = 4000, .latency_critical = true),
      { LOCAL("L1"), CLOUD("C1", .rpm_available = 0) }, 2, .p = POLICY(),
      .plan = "L1:long_prompt", .excl = "C1=rate_rpm" },
    { "re-decision (the cloud failed): fallback",
      FACTS(.prompt_tokens_est = 4000, .exclude = 1u << 1), { LOCAL("L1"), CLOUD("C1") }, 2,
      .p = POLICY(), .plan = "L1:fallback", .excl = "C1=failed" },
    { "a busy local and an idle one: the idle one serves it",
      FACTS(.prompt_tokens_est = 4000), { LOCAL("L1", .in_flight = 4), LOCAL("L2"), CLOUD("C1") },
      3, .p = POLICY(), .plan = "L2:long_prompt L1:fallback C1:fallback" },
    { "degraded idle box: latency first",
      FACTS(.prompt_tokens_est = 4000),
      { LOCAL("L1", .health = SW_HEALTH_DEGRADED, .ttft_avg_ms = 3000), CLOUD("C1") }, 2,
      .p = POLICY(), .plan = "C1:latency L1:fallback" },
    { "cold idle box whose warm-up fits the deadline: long_prompt",
      FACTS(.prompt_tokens_est = 4000),
      { LOCAL("L1", .health = SW_HEALTH_COLD, .warm_eta_ms = 5000), CLOUD("C1") }, 2,
      .p = POLICY(), .plan = "L1:long_prompt C1:fallback" },
    { "cold idle box whose warm-up outlasts the deadline: cold_start",
      FACTS(.prompt_tokens_est = 4000, .deadline_ms = NOW + 6000),
      { LOCAL("L1", .health = SW_HEALTH_COLD, .warm_eta_ms = 5000), CLOUD("C1") }, 2,
      .p = POLICY(), .plan = "C1:cold_start L1:fallback" },
    { "the key's longer budget (3000 ms) covers the prefill: baseline",
      FACTS(.prompt_tokens_est = 4000, .ttft_budget_ms = 3000), { LOCAL("L1"), CLOUD("C1") }, 2,
      .p = POLICY(), .plan = "L1:baseline C1:fallback" },
    { "the model's longer budget (3000 ms), busy box (2 queued: 5250 ms wait): overflow",
      FACTS(.prompt_tokens_est = 4000), { LOCAL("L1", BUSY), CLOUD("C1") }, 2,
      .p = POLICY(.ttft_budget_ms = 3000), .plan = "C1:overflow L1:fallback" },
    { "sensitive in an emergency: local long_prompt, the masked cloud backs it up",
      FACTS(.prompt_tokens_est = 4000, .sensitive = true), { LOCAL("L1"), CLOUD("C1") }, 2,
      .emergency = true, .p = POLICY(.masking_available = true),
      .plan = "L1:long_prompt C1:emergency*" },
    { "unbounded slots, one running: not idle, overflow",
      FACTS(.prompt_tokens_est = 4000), { LOCAL("L1", .slots = 0, .in_flight = 1), CLOUD("C1") },
      2, .p = POLICY(), .plan = "C1:overflow L1:fallback" },

    /* ---- availability ---- */
    { "local breaker open: cloud, reason breaker",
      FACTS(), { LOCAL("L1", .breaker = SW_BREAKER_OPEN), CLOUD("C1") }, 2, .p = POLICY(),
      .plan = "C1:breaker", .excl = "L1=breaker_open" },
    { "local half-open, probe taken: breaker",
      FACTS(), { LOCAL("L1", .breaker = SW_BREAKER_HALF_OPEN), CLOUD("C1") }, 2, .p = POLICY(),
      .plan = "C1:breaker", .excl = "L1=probe_busy" },
    { "local half-open, probe free: it gets the request",
      FACTS(), { LOCAL("L1", .breaker = SW_BREAKER_HALF_OPEN, .probe_free = true), CLOUD("C1") },
      2, .p = POLICY(), .plan = "L1:baseline C1:fallback" },
    { "local down: cloud, reason fallback",
      FACTS(), { LOCAL("L1", .health = SW_HEALTH_DOWN), CLOUD("C1") }, 2, .p = POLICY(),
      .plan = "C1:fallback", .excl = "L1=down" },
    { "cloud breaker open, overflow: the secondary cloud",
      FACTS(), { LOCAL("L1", BUSY), CLOUD("C1", .breaker = SW_BREAKER_OPEN), CLOUD("C2") }, 3,
      .p = POLICY(), .plan = "C2:overflow L1:fallback", .excl = "C1=breaker_open" },
    { "every cloud breaker open, overflow: local, reason breaker",
      FACTS(), { LOCAL("L1", BUSY), CLOUD("C1", .breaker = SW_BREAKER_OPEN) }, 2, .p = POLICY(),
      .plan = "L1:breaker" },
    { "re-decision: the local failed this request, cloud next",
      FACTS(.exclude = 1u << 0), { LOCAL("L1"), CLOUD("C1") }, 2, .p = POLICY(),
      .plan = "C1:fallback", .excl = "L1=failed" },
    { "re-decision: the cloud failed, local is a fallback",
      FACTS(.exclude = 1u << 1), { LOCAL("L1"), CLOUD("C1"), CLOUD("C2") }, 3, .p = POLICY(),
      .plan = "L1:fallback C2:fallback", .excl = "C1=failed" },
    { "re-decision: cloud failed during overflow, local waits",
      FACTS(.exclude = 1u << 1), { LOCAL("L1", BUSY), CLOUD("C1") }, 2, .p = POLICY(),
      .plan = "L1:fallback" },
    { "every backend failed: 503",
      FACTS(.exclude = 3), { LOCAL("L1"), CLOUD("C1") }, 2, .p = POLICY(),
      .status = 503, .code = "all_backends_failed", .excl = "L1=failed C1=failed" },
    { "local down, cloud down: 503",
      FACTS(), { LOCAL("L1", .health = SW_HEALTH_DOWN), CLOUD("C1", .health = SW_HEALTH_DOWN) },
      2, .p = POLICY(), .status = 503, .code = "all_backends_failed" },
    { "no backend at all: 503",
      FACTS(), { LOCAL("unused") }, 0, .p = POLICY(), .status = 503,
      .code = "all_backends_failed" },

    /* ---- rate ---- */
    { "request bucket empty: skipped, next cloud",
      FACTS(), { LOCAL("L1", BUSY), CLOUD("C1", .rpm_available = 0.5), CLOUD("C2") }, 3,
      .p = POLICY(), .plan = "C2:overflow L1:fallback", .excl = "C1=rate_rpm" },
    { "token bucket below prompt + max_tokens: skipped",
      FACTS(), { LOCAL("L1", BUSY), CLOUD("C1", .tpm_available = 699), CLOUD("C2") }, 3,
      .p = POLICY(), .plan = "C2:overflow L1:fallback", .excl = "C1=rate_tpm" },
    { "token bucket exactly enough: admitted",
      FACTS(), { LOCAL("L1", BUSY), CLOUD("C1", .tpm_available = 700) }, 2,
      .p = POLICY(), .plan = "C1:overflow L1:fallback" },
    { "no limits configured (< 0): admitted",
      FACTS(), { LOCAL("L1", BUSY), CLOUD("C1", .rpm_available = -1, .tpm_available = -1) }, 2,
      .p = POLICY(), .plan = "C1:overflow L1:fallback" },
    { "every cloud rate-limited, overflow: local waits",
      FACTS(), { LOCAL("L1", BUSY), CLOUD("C1", .rpm_available = 0) }, 2, .p = POLICY(),
      .plan = "L1:baseline" },

    /* ---- capability ---- */
    { "context beyond the local model: cloud, reason capacity",
      FACTS(.prompt_tokens_est = 8000), { LOCAL("L1"), CLOUD("C1") }, 2, .p = POLICY(),
      .plan = "C1:capacity", .excl = "L1=context" },
    { "tools unsupported locally: capacity",
      FACTS(.needs_tools = true), { LOCAL("L1", .supports_tools = false), CLOUD("C1") }, 2,
      .p = POLICY(), .plan = "C1:capacity", .excl = "L1=tools" },
    { "images unsupported locally: capacity",
      FACTS(.needs_images = true), { LOCAL("L1"), CLOUD("C1") }, 2, .p = POLICY(),
      .plan = "C1:capacity", .excl = "L1=images" },
    { "context beyond local, restricted: 422 naming the need",
      FACTS(.prompt_tokens_est = 8000, .allows_cloud = false), { LOCAL("L1"), CLOUD("C1") }, 2,
      .p = POLICY(), .status = 422, .code = "local_capacity_insufficient",
      .msg = "needs 8200 tokens of context (prompt ~8000 + max_tokens 200) but 'L1' declares 8192" },
    { "tools beyond local, sensitive: 422",
      FACTS(.needs_tools = true, .sensitive = true),
      { LOCAL("L1", .supports_tools = false), CLOUD("C1") }, 2, .p = POLICY(), .status = 422,
      .code = "local_capacity_insufficient", .msg = "tool calling" },
    { "no backend of the model can serve it: 422",
      FACTS(.needs_images = true), { LOCAL("L1"), CLOUD("C1", .supports_images = false) }, 2,
      .p = POLICY(), .status = 422, .code = "local_capacity_insufficient",
      .msg = "No backend of this model" },
    { "one local too small, another fits (and prefills 8000 tokens in 401 ms)",
      FACTS(.prompt_tokens_est = 8000), { LOCAL("L1"), LOCAL("L2", .max_context_tokens = 32768,
                                                          .prefill_ms_per_token = 0.05),
                                          CLOUD("C1") }, 3, .p = POLICY(),
      .plan = "L2:baseline C1:fallback", .excl = "L1=context" },
    { "capability declared on a cloud too",
      FACTS(.prompt_tokens_est = 8000), { LOCAL("L1"), CLOUD("C1", .max_context_tokens = 4096),
                                          CLOUD("C2") }, 3, .p = POLICY(),
      .plan = "C2:capacity", .excl = "L1=context C1=context" },

    /* A sum of token counts never wraps: prompt + max_tokens saturates, so a
     * huge max_tokens still fails the context check and the token bucket. */
    { "max_tokens LONG_MAX: beyond every context, not wrapped into a small need",
      FACTS(.max_tokens = LONG_MAX), { LOCAL("L1"), CLOUD("C1") }, 2, .p = POLICY(),
      .status = 422, .code = "local_capacity_insufficient",
      .excl = "L1=context C1=context" },
    { "prompt and max_tokens both LONG_MAX: still beyond the context",
      FACTS(.prompt_tokens_est = LONG_MAX, .max_tokens = LONG_MAX), { LOCAL("L1"), CLOUD("C1") },
      2, .p = POLICY(), .status = 422, .code = "local_capacity_insufficient",
      .excl = "L1=context C1=context" },
    { "max_tokens LONG_MAX, no declared context: the token bucket still refuses it",
      FACTS(.max_tokens = LONG_MAX), { LOCAL("L1", BUSY, .max_context_tokens = 0),
                                       CLOUD("C1", .max_context_tokens = 0, .tpm_available = 1e12) },
      2, .p = POLICY(), .plan = "L1:baseline", .excl = "C1=rate_tpm" },
    { "largest accepted max_tokens (10000000): context and bucket see all of it",
      FACTS(.max_tokens = 10000000), { LOCAL("L1"), CLOUD("C1", .max_context_tokens = 0,
                                                           .tpm_available = 10000499) },
      2, .p = POLICY(), .status = 503, .code = "all_backends_failed",
      .excl = "L1=context C1=rate_tpm" },
    { "largest accepted max_tokens within the bucket and a declared context",
      FACTS(.max_tokens = 10000000), { LOCAL("L1", .max_context_tokens = 10000500),
                                       CLOUD("C1", .max_context_tokens = 0,
                                             .tpm_available = 10000500) },
      2, .p = POLICY(), .plan = "L1:baseline C1:fallback", .excl = "" },

    /* ---- spend cap ---- */
    { "cap reached, idle local: local traffic never blocked",
      FACTS(), { LOCAL("L1"), CLOUD("C1") }, 2, .spend_usd = 10,
      .p = POLICY(.spend_cap_usd = 10), .plan = "L1:baseline", .excl = "C1=budget" },
    { "cap not reached but this request would cross it",
      FACTS(), { LOCAL("L1", BUSY), CLOUD("C1") }, 2, .spend_usd = 9.9999,
      .p = POLICY(.spend_cap_usd = 10), .status = 429, .code = "budget_exhausted",
      .retry_after = 60, .excl = "C1=budget" },
    { "under the cap: overflow as usual",
      FACTS(), { LOCAL("L1", BUSY), CLOUD("C1") }, 2, .spend_usd = 9.99,
      .p = POLICY(.spend_cap_usd = 10), .plan = "C1:overflow L1:fallback" },
    { "cap, shed: overflow rejected 429 with Retry-After",
      FACTS(), { LOCAL("L1", BUSY), CLOUD("C1") }, 2, .spend_usd = 10,
      .p = POLICY(.spend_cap_usd = 10), .status = 429, .code = "budget_exhausted",
      .retry_after = 60, .msg = "spend cap" },
    { "cap, shed, no Retry-After configured",
      FACTS(), { LOCAL("L1", BUSY), CLOUD("C1") }, 2, .spend_usd = 10,
      .p = POLICY(.spend_cap_usd = 10, .shed_retry_after_s = 0), .status = 429,
      .code = "budget_exhausted" },
    { "cap, shed, latency-critical but local within budget: local, budget",
      FACTS(.prompt_tokens_est = 1000, .latency_critical = true),
      { LOCAL("L1"), CLOUD("C1", .ttft_avg_ms = 100) }, 2, .spend_usd = 10,
      .p = POLICY(.spend_cap_usd = 10), .plan = "L1:budget" },
    { "cap, degrade, latency-critical but local within budget: local, budget",
      FACTS(.prompt_tokens_est = 1000, .latency_critical = true),
      { LOCAL("L1"), CLOUD("C1", .ttft_avg_ms = 100), LOCAL("small", .degrade_only = true) }, 3,
      .spend_usd = 10, .p = POLICY(.spend_cap_usd = 10, .on_cap = SW_CAP_DEGRADE,
                                   .degrade_backend = 2), .plan = "L1:budget" },
    { "cap, shed, latency-critical and local over budget: 429 like any overflow",
      FACTS(.latency_critical = true), { LOCAL("L1", BUSY), CLOUD("C1") }, 2, .spend_usd = 10,
      .p = POLICY(.spend_cap_usd = 10), .status = 429, .code = "budget_exhausted",
      .retry_after = 60 },
    { "cap, keep_local: overflow waits locally",
      FACTS(), { LOCAL("L1", BUSY), CLOUD("C1") }, 2, .spend_usd = 10,
      .p = POLICY(.spend_cap_usd = 10, .on_cap = SW_CAP_KEEP_LOCAL), .plan = "L1:budget" },
    /* ---- a key's or team's budget (facts.tenant_budget_out) ---- */
    { "key budget spent: overflow is kept local, reason budget, whatever the cap's policy",
      FACTS(.tenant_budget_out = true), { LOCAL("L1", BUSY), CLOUD("C1") }, 2,
      .p = POLICY(.on_cap = SW_CAP_SHED), .plan = "L1:budget", .excl = "C1=budget" },
    { "key budget spent: a free cloud still takes the overflow",
      FACTS(.tenant_budget_out = true), { LOCAL("L1", BUSY), CLOUD("C1"),
                 CLOUD("free", .input_usd_per_mtok = 0, .output_usd_per_mtok = 0) }, 3,
      .p = POLICY(), .plan = "free:overflow L1:fallback", .excl = "C1=budget" },
    { "key budget spent, no local: 429 naming the key's budget",
      FACTS(.tenant_budget_out = true), { CLOUD("C1") }, 1, .p = POLICY(), .status = 429,
      .code = "budget_exhausted", .retry_after = 60, .msg = "budget of this key" },
    { "key budget spent and the global cap reached with shed: the cap sheds",
      FACTS(.tenant_budget_out = true), { LOCAL("L1", BUSY), CLOUD("C1") }, 2, .spend_usd = 10,
      .p = POLICY(.spend_cap_usd = 10, .on_cap = SW_CAP_SHED), .status = 429,
      .code = "budget_exhausted", .retry_after = 60 },
    { "cap, degrade: overflow to the smaller local model",
      FACTS(), { LOCAL("L1", BUSY), CLOUD("C1"), LOCAL("small", .degrade_only = true) }, 3,
      .spend_usd = 10, .p = POLICY(.spend_cap_usd = 10, .on_cap = SW_CAP_DEGRADE,
                                   .degrade_backend = 2),
      .plan = "small:budget L1:fallback", .excl = "C1=budget small=degrade_only" },
    { "cap, degrade, idle local: the reserve stays unused",
      FACTS(), { LOCAL("L1"), CLOUD("C1"), LOCAL("small", .degrade_only = true) }, 3,
      .spend_usd = 10, .p = POLICY(.spend_cap_usd = 10, .on_cap = SW_CAP_DEGRADE,
                                   .degrade_backend = 2), .plan = "L1:baseline" },
    { "no cap: the degrade reserve is never chosen",
      FACTS(), { LOCAL("L1", BUSY), CLOUD("C1"), LOCAL("small", .degrade_only = true) }, 3,
      .p = POLICY(.on_cap = SW_CAP_DEGRADE, .degrade_backend = 2),
      .plan = "C1:overflow L1:fallback" },
    { "cap, degrade without a target: keep_local",
      FACTS(), { LOCAL("L1", BUSY), CLOUD("C1") }, 2, .spend_usd = 10,
      .p = POLICY(.spend_cap_usd = 10, .on_cap = SW_CAP_DEGRADE), .plan = "L1:budget" },
    { "cap, degrade, target down: keep_local",
      FACTS(), { LOCAL("L1", BUSY), CLOUD("C1"),
                 LOCAL("small", .degrade_only = true, .health = SW_HEALTH_DOWN) }, 3,
      .spend_usd = 10, .p = POLICY(.spend_cap_usd = 10, .on_cap = SW_CAP_DEGRADE,
                                   .degrade_backend = 2), .plan = "L1:budget" },
    { "cap, degrade, main local down: the smaller model",
      FACTS(), { LOCAL("L1", .health = SW_HEALTH_DOWN), CLOUD("C1"),
                 LOCAL("small", .degrade_only = true) }, 3,
      .spend_usd = 10, .p = POLICY(.spend_cap_usd = 10, .on_cap = SW_CAP_DEGRADE,
                                   .degrade_backend = 2), .plan = "small:budget" },
    { "cap, keep_local, local down: 429",
      FACTS(), { LOCAL("L1", .health = SW_HEALTH_DOWN), CLOUD("C1") }, 2, .spend_usd = 10,
      .p = POLICY(.spend_cap_usd = 10, .on_cap = SW_CAP_KEEP_LOCAL), .status = 429,
      .code = "budget_exhausted", .retry_after = 60 },
    { "cap, capability needs the cloud: 429",
      FACTS(.needs_images = true), { LOCAL("L1"), CLOUD("C1") }, 2, .spend_usd = 10,
      .p = POLICY(.spend_cap_usd = 10, .on_cap = SW_CAP_KEEP_LOCAL), .status = 429,
      .code = "budget_exhausted", .retry_after = 60 },
    { "cap: a free cloud backend still fits",
      FACTS(), { LOCAL("L1", BUSY), CLOUD("C1"),
                 CLOUD("free", .input_usd_per_mtok = 0, .output_usd_per_mtok = 0) }, 3,
      .spend_usd = 10, .p = POLICY(.spend_cap_usd = 10), .plan = "free:overflow L1:fallback" },
    { "cap: a free cloud backend still fits once spend is past the cap (a settled answer longer than reserved)",
      FACTS(), { LOCAL("L1", BUSY), CLOUD("C1"),
                 CLOUD("free", .input_usd_per_mtok = 0, .output_usd_per_mtok = 0) }, 3,
      .spend_usd = 10.5, .p = POLICY(.spend_cap_usd = 10), .plan = "free:overflow L1:fallback" },

    /* ---- models without local backends ---- */
    { "cloud-only: first cloud is the baseline",
      FACTS(), { CLOUD("C1"), CLOUD("C2") }, 2, .p = POLICY(), .plan = "C1:baseline C2:fallback" },
    { "cloud-only: primary breaker open, secondary, reason breaker",
      FACTS(), { CLOUD("C1", .breaker = SW_BREAKER_OPEN), CLOUD("C2") }, 2, .p = POLICY(),
      .plan = "C2:breaker" },
    { "cloud-only: the cap steers to a cheaper cloud, reason cost",
      FACTS(), { CLOUD("C1", .input_usd_per_mtok = 30, .output_usd_per_mtok = 60),
                 CLOUD("C2", .input_usd_per_mtok = 0.1, .output_usd_per_mtok = 0.4) }, 2,
      .spend_usd = 0.99, .p = POLICY(.spend_cap_usd = 1), .plan = "C2:cost",
      .excl = "C1=budget" },
    { "cloud-only: primary rate-limited, fallback",
      FACTS(), { CLOUD("C1", .tpm_available = 10), CLOUD("C2") }, 2, .p = POLICY(),
      .plan = "C2:fallback" },
    { "cloud-only: primary lacks images, capacity",
      FACTS(.needs_images = true), { CLOUD("C1", .supports_images = false), CLOUD("C2") }, 2,
      .p = POLICY(), .plan = "C2:capacity" },

    /* ---- panic: every usable breaker open ---- */
    { "every breaker open: panic, the backend whose latest failure is oldest leads",
      FACTS(), { LOCAL("L1", .breaker = SW_BREAKER_OPEN, .panic_free = true, .breaker_failed_ms = NOW + 9000),
                 CLOUD("C1", .breaker = SW_BREAKER_OPEN, .panic_free = true, .breaker_failed_ms = NOW + 2000) },
      2, .p = POLICY(), .plan = "C1:panic L1:panic", .excl = "L1=breaker_open C1=breaker_open" },
    { "panic: the local failed longer ago, local leads",
      FACTS(), { LOCAL("L1", .breaker = SW_BREAKER_OPEN, .panic_free = true, .breaker_failed_ms = NOW + 1000),
                 CLOUD("C1", .breaker = SW_BREAKER_OPEN, .panic_free = true, .breaker_failed_ms = NOW + 2000) },
      2, .p = POLICY(), .plan = "L1:panic C1:panic" },
    { "panic: a half-open backend with its probe out, failed longer ago, leads",
      FACTS(), { CLOUD("C1", .breaker = SW_BREAKER_OPEN, .panic_free = true, .breaker_failed_ms = NOW - 100),
                 LOCAL("L1", .breaker = SW_BREAKER_HALF_OPEN, .panic_free = true, .breaker_failed_ms = NOW - 30000) },
      2, .p = POLICY(), .plan = "L1:panic C1:panic", .excl = "C1=breaker_open L1=probe_busy" },
    { "panic: equal failure times keep the configured order",
      FACTS(), { CLOUD("C1", .breaker = SW_BREAKER_OPEN, .panic_free = true, .breaker_failed_ms = T30),
                 CLOUD("C2", .breaker = SW_BREAKER_OPEN, .panic_free = true, .breaker_failed_ms = T30) },
      2, .p = POLICY(), .plan = "C1:panic C2:panic" },
    { "panic: restricted stays local even when the cloud failed longer ago",
      FACTS(.allows_cloud = false),
      { LOCAL("L1", .breaker = SW_BREAKER_OPEN, .panic_free = true, .breaker_failed_ms = NOW + 9000),
        CLOUD("C1", .breaker = SW_BREAKER_OPEN, .panic_free = true, .breaker_failed_ms = NOW + 1) },
      2, .p = POLICY(), .plan = "L1:panic", .excl = "L1=breaker_open C1=privacy" },
    { "panic: sensitive without an emergency stays local",
      FACTS(.sensitive = true),
      { LOCAL("L1", .breaker = SW_BREAKER_OPEN, .panic_free = true, .breaker_failed_ms = NOW + 9000),
        CLOUD("C1", .breaker = SW_BREAKER_OPEN, .panic_free = true, .breaker_failed_ms = NOW + 1) },
      2, .p = POLICY(.masking_available = true), .plan = "L1:panic" },
    { "panic: sensitive in an emergency, locals before the masked cloud",
      FACTS(.sensitive = true),
      { CLOUD("C1", .breaker = SW_BREAKER_OPEN, .panic_free = true, .breaker_failed_ms = NOW + 1),
        LOCAL("L1", .breaker = SW_BREAKER_OPEN, .panic_free = true, .breaker_failed_ms = NOW + 9000) },
      2, .emergency = true, .p = POLICY(.masking_available = true), .plan = "L1:panic C1:panic*" },
    { "restricted, local breaker open and its panic slots taken: 503 privacy_restricted",
      FACTS(.allows_cloud = false),
      { LOCAL("L1", .breaker = SW_BREAKER_OPEN, .breaker_failed_ms = NOW + 9000),
        CLOUD("C1", .breaker = SW_BREAKER_OPEN, .panic_free = true, .breaker_failed_ms = NOW + 1) },
      2, .p = POLICY(), .status = 503, .code = "privacy_restricted", .msg = "breaker open" },
    { "panic slots taken everywhere: 503 all_backends_failed",
      FACTS(), { LOCAL("L1", .breaker = SW_BREAKER_OPEN, .breaker_failed_ms = NOW + 9000),
                 CLOUD("C1", .breaker = SW_BREAKER_HALF_OPEN) },
      2, .p = POLICY(), .status = 503, .code = "all_backends_failed" },
    { "one tier usable: no panic, the other tier serves (reason breaker)",
      FACTS(), { LOCAL("L1", .breaker = SW_BREAKER_OPEN, .panic_free = true, .breaker_failed_ms = NOW + 1),
                 CLOUD("C1") }, 2, .p = POLICY(), .plan = "C1:breaker" },
    { "panic never overrides the spend cap",
      FACTS(), { LOCAL("L1", .breaker = SW_BREAKER_OPEN, .panic_free = true, .breaker_failed_ms = NOW + 9000),
                 CLOUD("C1", .breaker = SW_BREAKER_OPEN, .panic_free = true, .breaker_failed_ms = NOW + 1) },
      2, .spend_usd = 10, .p = POLICY(.spend_cap_usd = 10), .plan = "L1:panic" },
    { "panic never overrides a full queue or the rate limit",
      FACTS(), { LOCAL("L1", FULL, .breaker = SW_BREAKER_OPEN, .panic_free = true, .breaker_failed_ms = NOW + 1),
                 CLOUD("C1", .breaker = SW_BREAKER_OPEN, .panic_free = true, .breaker_failed_ms = NOW + 5,
                       .rpm_available = 0.5),
                 CLOUD("C2", .breaker = SW_BREAKER_OPEN, .panic_free = true, .breaker_failed_ms = NOW + 9) },
      3, .p = POLICY(), .plan = "C2:panic" },
    { "panic never retries a backend that already failed this request",
      FACTS(.exclude = 1u << 1),
      { LOCAL("L1", .breaker = SW_BREAKER_OPEN, .panic_free = true, .breaker_failed_ms = NOW + 9000),
        CLOUD("C1", .breaker = SW_BREAKER_OPEN, .panic_free = true, .breaker_failed_ms = NOW + 1) },
      2, .p = POLICY(), .plan = "L1:panic", .excl = "L1=breaker_open C1=failed" },
    { "panic never uses a degrade-only backend or a down one",
      FACTS(), { LOCAL("L1", .breaker = SW_BREAKER_OPEN, .panic_free = true, .breaker_failed_ms = NOW + 1,
                       .degrade_only = true),
                 LOCAL("L2", .health = SW_HEALTH_DOWN, .breaker = SW_BREAKER_OPEN, .panic_free = true),
                 CLOUD("C1", .breaker = SW_BREAKER_OPEN, .panic_free = true, .breaker_failed_ms = NOW + 9) },
      3, .p = POLICY(), .plan = "C1:panic" },

    /* ---- deadline ---- */
    { "deadline already passed: 504",
      FACTS(.deadline_ms = NOW - 1), { LOCAL("L1"), CLOUD("C1") }, 2, .p = POLICY(),
      .status = 504, .code = "deadline_exceeded" },
    { "deadline exactly now: 504",
      FACTS(.deadline_ms = NOW), { LOCAL("L1") }, 1, .p = POLICY(),
      .status = 504, .code = "deadline_exceeded" },
};

/* "L1:baseline C1:emergency*" */
static void render_plan(const struct sw_route_view *v, const struct sw_route_plan *pl,
                        char *buf, size_t len)
{
    size_t o = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < pl->n; i++)
        o += (size_t)snprintf(buf + o, len - o, "%s%s:%s%s", i ? " " : "",
                              v->backends[pl->attempts[i].backend].name,
                              sw_reason_name(pl->attempts[i].reason),
                              pl->attempts[i].masked ? "*" : "");
}

/* "L1=down C1=privacy": the excluded backends in view order. */
static void render_excl(const struct sw_route_view *v, const struct sw_route_plan *pl,
                        char *buf, size_t len)
{
    size_t o = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < pl->n_backends; i++)
        if (pl->excluded[i] != SW_EXCL_NONE)
            o += (size_t)snprintf(buf + o, len - o, "%s%s=%s", o ? " " : "",
                                  v->backends[i].name, sw_route_excl_name(pl->excluded[i]));
}

static const char *const codes[] = {
    SW_ROUTE_CODE_CAPABILITY, SW_ROUTE_CODE_QUEUE_FULL, SW_ROUTE_CODE_PRIVACY,
    SW_ROUTE_CODE_BUDGET, SW_ROUTE_CODE_DEADLINE, SW_ROUTE_CODE_ALL_FAILED,
};

static void test_table(void **state)
{
    (void)state;
    unsigned reasons_seen = 0, codes_seen = 0;
    int failures = 0;

    for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
        const struct row *w = &rows[r];
        struct sw_route_view v = { w->b, w->n, w->spend_usd, w->emergency };
        struct sw_route_plan pl;
        char got[512], excl[512];

        memset(&pl, 0xa5, sizeof pl);     /* decide must set every field it reports */
        sw_route_decide(&w->f, &v, &w->p, w->now ? w->now : NOW, &pl);
        render_plan(&v, &pl, got, sizeof got);
        render_excl(&v, &pl, excl, sizeof excl);
        for (size_t i = 0; i < pl.n; i++)
            reasons_seen |= 1u << pl.attempts[i].reason;

        bool ok;
        if (w->plan) {
            ok = pl.n > 0 && strcmp(got, w->plan) == 0 && pl.status == 0 && pl.code == NULL &&
                 pl.message[0] == '\0' && pl.retry_after_s == -1;
        } else {
            long ra = w->retry_after ? w->retry_after : -1;
            ok = pl.n == 0 && pl.status == w->status && pl.code &&
                 strcmp(pl.code, w->code) == 0 && pl.retry_after_s == ra && pl.message[0] &&
                 (!w->msg || strstr(pl.message, w->msg));
            for (size_t c = 0; pl.code && c < sizeof codes / sizeof codes[0]; c++)
                if (strcmp(pl.code, codes[c]) == 0)
                    codes_seen |= 1u << c;
        }
        if (w->excl && strcmp(excl, w->excl) != 0)
            ok = false;
        /* Every eligible backend appears exactly once; no excluded one does. */
        for (size_t i = 0; i < pl.n_backends && pl.n > 0; i++) {
            int count = 0;
            for (size_t a = 0; a < pl.n; a++)
                count += pl.attempts[a].backend == i;
            bool panic = false;
            for (size_t a = 0; a < pl.n; a++)
                if (pl.attempts[a].backend == i)
                    panic = pl.attempts[a].panic;
            if (count > 1 || (count == 1 && pl.excluded[i] != SW_EXCL_NONE &&
                              pl.excluded[i] != SW_EXCL_DEGRADE_ONLY && !panic))
                ok = false;
            /* Panic only ever overrides a breaker, and flags every attempt it adds. */
            if (count == 1 && panic != (pl.attempts[0].reason == SW_REASON_PANIC))
                ok = false;
            if (count == 1 && panic && pl.excluded[i] != SW_EXCL_BREAKER_OPEN &&
                pl.excluded[i] != SW_EXCL_PROBE_BUSY)
                ok = false;
        }
        if (!ok) {
            failures++;
            print_error("row %zu \"%s\":\n  want plan [%s] status %d code %s excl [%s]\n"
                        "  got  plan [%s] status %d code %s retry %ld excl [%s]\n  message: %s\n",
                        r, w->name, w->plan ? w->plan : "", w->status, w->code ? w->code : "-",
                        w->excl ? w->excl : "*", got, pl.status, pl.code ? pl.code : "-",
                        pl.retry_after_s, excl, pl.message);
        }
    }
    for (int i = 0; i < SW_REASON__COUNT; i++)
        if (!(reasons_seen & 1u << i)) {
            print_error("reason %s appears in no row\n", sw_reason_name(i));
            failures++;
        }
    for (size_t c = 0; c < sizeof codes / sizeof codes[0]; c++)
        if (!(codes_seen & 1u << c)) {
            print_error("code %s appears in no row\n", codes[c]);
            failures++;
        }
    assert_int_equal(failures, 0);
}

/* ---- The estimate ---- */

static void test_estimate(void **state)
{
    (void)state;
    struct sw_route_backend_view b = LOCAL("L");

    /* Idle: own prefill, the first token's decode step (25 ms at 40 tok/s), RTT. */
    assert_float_equal(sw_route_est_ttft_ms(&b, 500), 276, 1e-9);
    /* A free slot left: no wait. */
    b.in_flight = 3;
    assert_float_equal(sw_route_est_ttft_ms(&b, 500), 276, 1e-9);
    /* First in the queue: one release of four slots, 5250 ms service. */
    b.in_flight = 4;
    assert_float_equal(sw_route_est_ttft_ms(&b, 500), 276 + 5250.0 / 4, 1e-9);
    /* Learned average prompt of others replaces this request's. */
    b.avg_prompt_tokens = 100;
    assert_float_equal(sw_route_est_ttft_ms(&b, 500), 276 + 5050.0 / 4, 1e-9);
    /* Tenth in the queue. */
    b.queued = 9;
    assert_float_equal(sw_route_est_ttft_ms(&b, 500), 276 + 10 * 5050.0 / 4, 1e-9);

    /* No data at all: priors 0.5 ms/token, 30 tok/s, 256 tokens; no RTT. */
    struct sw_route_backend_view z = { .tier = SW_TIER_LOCAL, .slots = 1, .in_flight = 1 };
    assert_float_equal(sw_route_est_ttft_ms(&z, 100),
                       50 + 1000.0 / 30 + (100 * 0.5 + 1000.0 * 256 / 30), 1e-6);
    /* slots 0: unbounded, never waits. */
    z.slots = 0;
    z.in_flight = 1000;
    assert_float_equal(sw_route_est_ttft_ms(&z, 100), 50 + 1000.0 / 30, 1e-9);
    /* Negative or absurd inputs stay finite and non-negative. */
    struct sw_route_backend_view bad = { .tier = SW_TIER_LOCAL, .slots = 2, .in_flight = -5,
                                         .queued = -1, .prefill_ms_per_token = NAN,
                                         .decode_tps = -3, .rtt_ms = -7, .avg_output_tokens = INFINITY };
    double e = sw_route_est_ttft_ms(&bad, -10);
    assert_true(isfinite(e) && e >= 0);
    bad.in_flight = 3;
    e = sw_route_est_ttft_ms(&bad, 10);
    assert_true(isfinite(e) && e > 0);
    bad.n_busy = 1000;
    bad.busy_left_ms[0] = NAN;
    e = sw_route_est_ttft_ms(&bad, 10);
    assert_true(isfinite(e) && e > 0);
    struct sw_route_backend_view huge = LOCAL("H", .in_flight = 4, .queued = 2000000000L,
                                             .decode_tps = 1e-300, .avg_output_tokens = 1e300);
    e = sw_route_est_ttft_ms(&huge, 500);
    assert_true(isfinite(e) && e > 0);

    /* Cloud: the measured TTFT window stands for prefill + RTT. */
    struct sw_route_backend_view c = CLOUD("C");
    assert_float_equal(sw_route_est_ttft_ms(&c, 5000), 400, 1e-9);
    c.ttft_avg_ms = 0;
    assert_float_equal(sw_route_est_ttft_ms(&c, 1000), 540 + 1000.0 / 30, 1e-9);
}

/* The wait when the view knows when the running requests free their slots:
 * the k-th soonest release, not a full service time per slot; never more
 * than the fluid estimate. */
static void test_estimate_busy(void **state)
{
    (void)state;
    /* 4 slots busy; the soonest frees in 100 ms, the next ones later. The
     * fluid estimate would be 5250 / 4 = 1312.5 ms of wait. */
    struct sw_route_backend_view b = LOCAL("L", .in_flight = 4, .n_busy = 4,
                                           .busy_left_ms = {100, 700, 3000, 4000});
    assert_float_equal(sw_route_est_ttft_ms(&b, 500), 276 + 100, 1e-9);
    /* Second in line: the second release. */
    b.queued = 1;
    assert_float_equal(sw_route_est_ttft_ms(&b, 500), 276 + 700, 1e-9);
    /* Sixth: beyond the known releases, one service per slot each after the last. */
    b.queued = 5;
    double fluid6 = 6 * 5250.0 / 4;
    assert_float_equal(sw_route_est_ttft_ms(&b, 500),
                       276 + fmin(4000 + 2 * 5250.0 / 4, fluid6), 1e-9);
    /* Only some known (the view carries at most SW_ROUTE_BUSY_MAX): the last known
     * one and the fluid rate after it. */
    b.queued = 2;
    b.n_busy = 2;
    assert_float_equal(sw_route_est_ttft_ms(&b, 500), 276 + 700 + 5250.0 / 4, 1e-9);
    /* Running requests whose bounds say they may run long (max_tokens far
     * above what they produce): never more than the fluid estimate. */
    struct sw_route_backend_view l = LOCAL("L", .in_flight = 4, .n_busy = 4,
                                           .busy_left_ms = {60000, 60000, 60000, 60000});
    assert_float_equal(sw_route_est_ttft_ms(&l, 500), 276 + 5250.0 / 4, 1e-9);
    /* A free slot: no wait, whatever the running ones do. */
    l.in_flight = 3;
    l.n_busy = 3;
    assert_float_equal(sw_route_est_ttft_ms(&l, 500), 276, 1e-9);
    /* Following a running request (follow_left_ms): its slot's release and
     * the prefill of what it does not leave there, whatever the queue. */
    struct sw_route_backend_view fo = LOCAL("L", .in_flight = 4, .queued = 9, .n_busy = 4,
                                            .busy_left_ms = {100, 700, 3000, 4000},
                                            .follow_left_ms = 900, .cached_tokens = 400);
    assert_float_equal(sw_route_est_ttft_ms(&fo, 500), 900 + 276 - 200, 1e-9);
    fo.in_flight = 1;   /* a free slot: it still waits for the one it follows */
    assert_float_equal(sw_route_est_ttft_ms(&fo, 500), 900 + 276 - 200, 1e-9);

    /* What a running request still holds at most: its prefill and max_tokens,
     * less the time it has run. */
    struct sw_route_backend_view v = LOCAL("L");
    assert_float_equal(sw_route_busy_left_ms(&v, 1000, 80, 0), 500 + 2000, 1e-9);
    assert_float_equal(sw_route_busy_left_ms(&v, 1000, 80, 1500), 1000, 1e-9);
    /* Running past its bound: the rates are stale; it still holds a tenth of
     * it, or as long again as it has overrun, whichever is more (a request
     * that hangs makes the wait grow). */
    assert_float_equal(sw_route_busy_left_ms(&v, 1000, 80, 2400), 100, 1e-9);
    assert_float_equal(sw_route_busy_left_ms(&v, 1000, 80, 2500), 250, 1e-9);
    assert_float_equal(sw_route_busy_left_ms(&v, 1000, 80, 2700), 250, 1e-9);
    assert_float_equal(sw_route_busy_left_ms(&v, 1000, 80, 9000), 6500, 1e-9);
    /* Without max_tokens: the learned average output. */
    assert_float_equal(sw_route_busy_left_ms(&v, 0, 0, 0), 5000, 1e-9);
    assert_float_equal(sw_route_busy_left_ms(&v, -5, -1, -100), 5000, 1e-9);
    struct sw_route_backend_view z = { .tier = SW_TIER_LOCAL };
    assert_float_equal(sw_route_busy_left_ms(&z, 100, 30, 0), 50 + 1000, 1e-9);
    assert_true(isfinite(sw_route_busy_left_ms(&z, 100, 30, NAN)));
}

/* ---- Load signals, priority, worst-case reservation ---- */

static const char *primary(const struct sw_route_facts *f, const struct sw_route_backend_view *b,
                           size_t n, const struct sw_route_policy *p, double spend,
                           enum sw_reason *why)
{
    struct sw_route_view v = {.backends = b, .n = n, .spend_usd = spend};
    struct sw_route_plan pl;
    sw_route_decide(f, &v, p, NOW, &pl);
    if (pl.n == 0)
        return pl.code;
    *why = pl.attempts[0].reason;
    return b[pl.attempts[0].backend].name;
}

static void test_load_priority_reserve(void **state)
{
    (void)state;
    enum sw_reason why = SW_REASON__COUNT;

    /* Outside load counts as work ahead: four outside requests on four slots
     * make this one wait a release, as four of Spillway's own would (276 ms
     * alone: prefill 250, the first token 25, rtt 1). */
    struct sw_route_backend_view l = LOCAL("L", .outside_load = 4);
    assert_float_equal(sw_route_est_ttft_ms(&l, 500), 276 + 5250.0 / 4, 1e-9);
    l.outside_load = 3;
    assert_float_equal(sw_route_est_ttft_ms(&l, 500), 276, 1e-9);
    l = (struct sw_route_backend_view)LOCAL("L", .in_flight = 2, .outside_load = 3.0);
    assert_float_equal(sw_route_est_ttft_ms(&l, 500), 276 + 2 * 5250.0 / 4, 1e-9);
    l.outside_load = NAN;     /* garbage counts as none */
    assert_float_equal(sw_route_est_ttft_ms(&l, 500), 276, 1e-9);

    /* The same box, idle to Spillway: local without the signal, cloud
     * (overflow) when the server reports six requests of others. */
    struct sw_route_facts f = FACTS();
    struct sw_route_policy p = POLICY();
    struct sw_route_backend_view bs[2] = {LOCAL("L1"), CLOUD("C1")};
    assert_string_equal(primary(&f, bs, 2, &p, 0, &why), "L1");
    bs[0].outside_load = 6;
    assert_string_equal(primary(&f, bs, 2, &p, 0, &why), "C1");
    assert_int_equal(why, SW_REASON_OVERFLOW);

    /* A free slot beats a queue: the box busy with outside work ranks after
     * an idle one. */
    struct sw_route_backend_view two[2] = {LOCAL("L1", .outside_load = 4), LOCAL("L2")};
    assert_string_equal(primary(&f, two, 2, &p, 0, &why), "L2");

    /* Batch: its own budget. Without one it stays local however long the
     * wait (the deadline aside); with one it spills only past it. */
    struct sw_route_backend_view busy[2] = {LOCAL("L1", BUSY), CLOUD("C1")};  /* wait 3937 */
    assert_string_equal(primary(&f, busy, 2, &p, 0, &why), "C1");
    f.priority = SW_PRIORITY_BATCH;
    assert_string_equal(primary(&f, busy, 2, &p, 0, &why), "L1");
    assert_int_equal(why, SW_REASON_BASELINE);
    p.batch_ttft_budget_ms = 10000;
    assert_string_equal(primary(&f, busy, 2, &p, 0, &why), "L1");
    p.batch_ttft_budget_ms = 2000;
    assert_string_equal(primary(&f, busy, 2, &p, 0, &why), "C1");
    assert_int_equal(why, SW_REASON_OVERFLOW);
    f.deadline_ms = NOW + 3000;     /* the deadline still applies to batch */
    p.batch_ttft_budget_ms = 0;
    assert_string_equal(primary(&f, busy, 2, &p, 0, &why), "C1");

    /* A client's budget header tightens, never loosens. */
    struct sw_route_facts g = FACTS(.ttft_budget_cap_ms = 100);
    p = (struct sw_route_policy)POLICY();
    assert_string_equal(primary(&g, bs, 1, &p, 0, &why), "L1"); /* no cloud: stays */
    struct sw_route_backend_view one[2] = {LOCAL("L1", .in_flight = 1), CLOUD("C1")}; /* 276 */
    assert_string_equal(primary(&g, one, 2, &p, 0, &why), "C1");
    assert_int_equal(why, SW_REASON_OVERFLOW);
    /* The same box idle: its own prefill (250 ms) is what breaks the 100 ms. */
    struct sw_route_backend_view idle[2] = {LOCAL("L1"), CLOUD("C1")};
    assert_string_equal(primary(&g, idle, 2, &p, 0, &why), "L1");
    assert_int_equal(why, SW_REASON_LONG_PROMPT);
    g.ttft_budget_cap_ms = 60000;
    assert_string_equal(primary(&g, busy, 2, &p, 0, &why), "C1");  /* 800 still applies */
    g.ttft_budget_ms = 5000;        /* the key's 5000, capped at 60000: 5000 */
    assert_string_equal(primary(&g, busy, 2, &p, 0, &why), "L1");
    assert_int_equal(sw_route_budget_ms(&g, &p), 5000);
    g.ttft_budget_cap_ms = 300;
    assert_int_equal(sw_route_budget_ms(&g, &p), 300);
    g.priority = SW_PRIORITY_BATCH;
    assert_int_equal(sw_route_budget_ms(&g, &p), 300);
    g.ttft_budget_cap_ms = 0;
    assert_int_equal(sw_route_budget_ms(&g, &p), 0);

    /* Worst case under a cap: without max_tokens a cloud is held at its
     * max_output_tokens ($3 x 500 + $15 x 4096 per M = $0.06294). */
    struct sw_route_backend_view cl[1] = {CLOUD("C1", .max_output_tokens = 4096)};
    struct sw_route_facts h = FACTS(.max_tokens_given = true);
    p = (struct sw_route_policy)POLICY(.spend_cap_usd = 1.0);
    assert_int_equal(sw_route_reserve_tokens(&h, &cl[0], 1.0), 200);    /* given */
    h.max_tokens_given = false;
    h.max_tokens = 256;             /* the gateway's estimate */
    assert_int_equal(sw_route_reserve_tokens(&h, &cl[0], 1.0), 4096);
    assert_int_equal(sw_route_reserve_tokens(&h, &cl[0], 0), 256);     /* no cap */
    assert_string_equal(primary(&h, cl, 1, &p, 1.0 - 0.06, &why), "budget_exhausted");
    assert_string_equal(primary(&h, cl, 1, &p, 1.0 - 0.0629, &why), "budget_exhausted");
    assert_string_equal(primary(&h, cl, 1, &p, 1.0 - 0.06295, &why), "C1");
    h.max_tokens_given = true;      /* 256 asked for: $0.00534 fits */
    assert_string_equal(primary(&h, cl, 1, &p, 1.0 - 0.006, &why), "C1");
}

/* ---- Names ---- */

/* ---- Overdue slots ---- */

/* A slot held past factor x its expected hold + floor counts as not freeing
 * (docs/routing.md, "Overdue slots"): the threshold, strictly past it; the
 * wait estimate without the overdue holders' slots; the decision. */
static void test_estimate_overdue(void **state)
{
    (void)state;
    /* The expected hold: prefill 1000 x 0.5 plus the average output (200 at
     * 40 tokens/s), at most max_tokens. */
    struct sw_route_backend_view v = LOCAL("L");
    assert_float_equal(sw_route_expected_hold_ms(&v, 1000, 80), 500 + 2000, 1e-9);
    assert_float_equal(sw_route_expected_hold_ms(&v, 1000, 0), 500 + 5000, 1e-9);
    assert_float_equal(sw_route_expected_hold_ms(&v, 1000, 4000), 500 + 5000, 1e-9);
    struct sw_route_backend_view z = {.tier = SW_TIER_LOCAL};   /* the priors */
    assert_float_equal(sw_route_expected_hold_ms(&z, -3, 0), 1000.0 * 256 / 30, 1e-9);

    static const struct {
        double elapsed_ms, expected_ms, factor, floor_ms;
        bool overdue;
    } cases[] = {
        {14999, 2500, 4, 5000, false},      /* within its threshold: still freeing */
        {15000, 2500, 4, 5000, false},      /* the edge: not past it */
        {15001, 2500, 4, 5000, true},       /* past 4 x 2500 + 5000 */
        {600000, 2500, 4, 5000, true},      /* a box that never answers */
        {2500, 2500, 1, 0, false},
        {2501, 2500, 1, 0, true},
        {5001, 0, 4, 5000, true},           /* nothing expected: the floor alone */
        {1e9, 2500, 0, 5000, false},        /* factor 0: the rule is off */
        {1e9, 2500, NAN, 5000, false},
        {-100, 2500, 4, 0, false},
        {NAN, 2500, 4, 5000, false},
        {20001, NAN, 4, 20000, true},       /* garbage expected: 0 */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        assert_int_equal(sw_route_overdue(cases[i].elapsed_ms, cases[i].expected_ms,
                                          cases[i].factor, cases[i].floor_ms),
                         cases[i].overdue);

    /* The wait (prompt 500: own 276, service 5250 ms). One slot, its holder
     * within its estimate: it frees when its bound says. */
    struct sw_route_backend_view one = LOCAL("L", .slots = 1, .in_flight = 1, .n_busy = 1,
                                             .busy_left_ms = {100});
    assert_float_equal(sw_route_est_ttft_ms(&one, 500), 276 + 100, 1e-9);
    /* The same holder overdue: no slot frees, the wait is unbounded. */
    one.n_busy = 0;
    one.n_overdue = 1;
    assert_true(sw_route_est_ttft_ms(&one, 500) >= 1e300);
    /* 4 slots, one overdue: the other 3 release, at the rate of 3 slots. */
    struct sw_route_backend_view four = LOCAL("L", .in_flight = 4, .n_busy = 3, .n_overdue = 1,
                                              .busy_left_ms = {700, 3000, 4000});
    assert_float_equal(sw_route_est_ttft_ms(&four, 500), 276 + 700, 1e-9);
    four.queued = 4;    /* fifth in line: the last known release, then 3 slots' rate */
    assert_float_equal(sw_route_est_ttft_ms(&four, 500),
                       276 + fmin(4000 + 2 * 5250.0 / 3, 5 * 5250.0 / 3), 1e-9);
    four.n_busy = 0;    /* none known: the fluid rate of 3 slots */
    assert_float_equal(sw_route_est_ttft_ms(&four, 500), 276 + 5 * 5250.0 / 3, 1e-9);
    four.n_overdue = 4; /* all overdue */
    assert_true(sw_route_est_ttft_ms(&four, 500) >= 1e300);
    /* A free slot: no wait, however overdue the others. */
    four.in_flight = 3;
    four.n_overdue = 3;
    four.queued = 0;
    assert_float_equal(sw_route_est_ttft_ms(&four, 500), 276, 1e-9);
    /* More overdue than running counts as all running. */
    struct sw_route_backend_view odd = LOCAL("L", .in_flight = 2, .queued = 3, .n_overdue = 9);
    assert_float_equal(sw_route_est_ttft_ms(&odd, 500), 276 + 2 * 5250.0 / 2, 1e-9);

    /* The decision: a request that may leave goes to the cloud (overflow);
     * one that may not stays on the box (it queues there). */
    enum sw_reason why = SW_REASON_BASELINE;
    struct sw_route_policy p = POLICY();
    struct sw_route_backend_view bs[2] = {
        LOCAL("L1", .slots = 1, .in_flight = 1, .n_overdue = 1), CLOUD("C1")};
    struct sw_route_facts f = FACTS();
    assert_string_equal(primary(&f, bs, 2, &p, 0, &why), "C1");
    assert_int_equal(why, SW_REASON_OVERFLOW);
    struct sw_route_facts local_only = FACTS(.allows_cloud = false);
    assert_string_equal(primary(&local_only, bs, 2, &p, 0, &why), "L1");
    struct sw_route_facts sensitive = FACTS(.sensitive = true);
    assert_string_equal(primary(&sensitive, bs, 2, &p, 0, &why), "L1");
    /* The queue check: an unbounded local wait breaks any budget. */
    assert_true(sw_route_leave_queue(1000, sw_route_est_ttft_ms(&bs[0], 500),
                                     sw_route_est_ttft_ms(&bs[0], 500), 400, 30000, 250));
}

/* The queue check's move: only to a plan's first attempt that is a local
 * with a free slot, on sw_route_move_local. */
static void test_moves_to(void **state)
{
    (void)state;
    struct sw_route_backend_view bs[3] = {
        LOCAL("full", .slots = 1, .in_flight = 1), LOCAL("free", .slots = 2, .in_flight = 1),
        CLOUD("C1")};
    struct sw_route_view v = {.backends = bs, .n = 3};
    struct sw_route_plan pl = {.n = 1, .n_backends = 3};
    pl.attempts[0].backend = 1;
    pl.est_ttft_ms[1] = 300;
    assert_true(sw_route_moves_to(&v, &pl, 0, 1000, 25));
    assert_false(sw_route_moves_to(&v, &pl, 0, 310, 25));
    assert_true(sw_route_moves_to(&v, &pl, 301, 0, 25));
    bs[1].queued = 1;                   /* no free slot there now */
    assert_false(sw_route_moves_to(&v, &pl, 1e6, 1e6, 25));
    bs[1].queued = 0;
    bs[1].outside_load = 1;             /* the server's own work takes it */
    assert_false(sw_route_moves_to(&v, &pl, 1e6, 1e6, 25));
    bs[1].outside_load = 0;
    pl.attempts[0].backend = 0;         /* a full local */
    pl.est_ttft_ms[0] = 1;
    assert_false(sw_route_moves_to(&v, &pl, 1e6, 1e6, 25));
    pl.attempts[0].backend = 2;         /* the cloud: the other rule's */
    pl.est_ttft_ms[2] = 1;
    assert_false(sw_route_moves_to(&v, &pl, 1e6, 1e6, 25));
    pl.attempts[0].backend = 3;         /* past the view */
    assert_false(sw_route_moves_to(&v, &pl, 1e6, 1e6, 25));
    pl.n = 0;                           /* a rejection */
    pl.attempts[0].backend = 1;
    assert_false(sw_route_moves_to(&v, &pl, 1e6, 1e6, 25));
}

static void test_names(void **state)
{
    (void)state;
    static const char *const want[] = { "baseline", "overflow", "latency", "privacy", "cost",
                                        "budget", "breaker", "cold_start", "capacity",
                                        "fallback", "emergency", "panic", "long_prompt", "affinity" };
    assert_int_equal(sizeof want / sizeof want[0], SW_REASON__COUNT);
    for (int i = 0; i < SW_REASON__COUNT; i++)
        assert_string_equal(sw_reason_name(i), want[i]);
    assert_string_equal(sw_reason_name(SW_REASON__COUNT), "unknown");
    assert_string_equal(sw_reason_name((enum sw_reason)-1), "unknown");
    for (int i = 0; i < SW_EXCL__COUNT; i++) {
        assert_non_null(sw_route_excl_name(i));
        assert_string_not_equal(sw_route_excl_name(i), "unknown");
    }
    assert_string_equal(sw_route_excl_name(SW_EXCL__COUNT), "unknown");
}

/* ---- Bounds ---- */

/* More backends than the plan holds: only the first SW_ROUTE_MAX_BACKENDS count. */
static void test_many_backends(void **state)
{
    (void)state;
    struct sw_route_backend_view b[SW_ROUTE_MAX_BACKENDS + 4];
    for (size_t i = 0; i < sizeof b / sizeof b[0]; i++)
        b[i] = (struct sw_route_backend_view)CLOUD("C");
    struct sw_route_view v = { b, sizeof b / sizeof b[0], 0, false };
    struct sw_route_facts f = FACTS();
    struct sw_route_policy p = POLICY();
    struct sw_route_plan pl;
    sw_route_decide(&f, &v, &p, NOW, &pl);
    assert_int_equal(pl.n, SW_ROUTE_MAX_BACKENDS);
    assert_int_equal(pl.n_backends, SW_ROUTE_MAX_BACKENDS);
    for (size_t i = 0; i < pl.n; i++)
        assert_int_equal(pl.attempts[i].backend, i);

    /* Exclude bits beyond the view are harmless. */
    f.exclude = 0xffff0000u;
    v.n = 2;
    sw_route_decide(&f, &v, &p, NOW, &pl);
    assert_int_equal(pl.n, 2);
}

/* A rejection message names a long backend without overflowing. */
static void test_long_name(void **state)
{
    (void)state;
    char name[600];
    memset(name, 'x', sizeof name - 1);
    name[sizeof name - 1] = '\0';
    struct sw_route_backend_view b[] = { LOCAL(name, .supports_tools = false) };
    struct sw_route_view v = { b, 1, 0, false };
    struct sw_route_facts f = FACTS(.needs_tools = true);
    struct sw_route_policy p = POLICY();
    struct sw_route_plan pl;
    sw_route_decide(&f, &v, &p, NOW, &pl);
    assert_int_equal(pl.status, 422);
    assert_true(strlen(pl.message) < sizeof pl.message);
}

/* ---- Invariants over random views ---- */

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static unsigned rnd(unsigned n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (unsigned)(rng % n);
}

static int status_of(const char *code)
{
    static const struct { const char *code; int status; } table[] = {
        { SW_ROUTE_CODE_CAPABILITY, 422 }, { SW_ROUTE_CODE_QUEUE_FULL, 503 },
        { SW_ROUTE_CODE_PRIVACY, 503 },    { SW_ROUTE_CODE_BUDGET, 429 },
        { SW_ROUTE_CODE_DEADLINE, 504 },   { SW_ROUTE_CODE_ALL_FAILED, 503 },
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (strcmp(code, table[i].code) == 0)
            return table[i].status;
    return -1;
}

/* Whatever the view: a restricted request never gets a cloud attempt; a
 * sensitive one only to a cloud in its regions (unmasked) or, when the model
 * has none there, only masked, only in an emergency with masking; masked means
 * emergency; every attempt is eligible (or the degrade target) and appears
 * once; every eligible backend appears; rejections use the code table. */
static void test_invariants(void **state)
{
    (void)state;
    static const char *const regions[] = { NULL, "eu-west", "us-east" };
    static const enum sw_health healths[] = { SW_HEALTH_UP, SW_HEALTH_DEGRADED, SW_HEALTH_COLD,
                                              SW_HEALTH_WARMING, SW_HEALTH_DOWN };
    static const enum sw_breaker_state breakers[] = { SW_BREAKER_CLOSED, SW_BREAKER_CLOSED,
                                                      SW_BREAKER_OPEN, SW_BREAKER_HALF_OPEN };
    for (int iter = 0; iter < 200000; iter++) {
        struct sw_route_backend_view b[6];
        size_t n = rnd(7);
        for (size_t i = 0; i < n; i++) {
            if (rnd(2))
                b[i] = (struct sw_route_backend_view)LOCAL("L", .in_flight = rnd(6),
                        .queued = rnd(4), .queue_max = rnd(4), .slots = rnd(5),
                        .max_context_tokens = rnd(2) ? 8192 : 0, .supports_tools = rnd(4) != 0,
                        .supports_images = rnd(3) == 0, .degrade_only = rnd(6) == 0,
                        .warm_eta_ms = rnd(8000), .prefill_ms_per_token = rnd(3) * 0.3);
            else
                b[i] = (struct sw_route_backend_view)CLOUD("C", .rpm_available = rnd(3) - 1.0,
                        .tpm_available = rnd(3) ? -1.0 : (double)rnd(2000), .supports_images = rnd(4) != 0,
                        .ttft_avg_ms = rnd(900), .input_usd_per_mtok = rnd(20),
                        .region = regions[rnd(3)]);
            b[i].health = healths[rnd(5)];
            b[i].breaker = breakers[rnd(4)];
            b[i].probe_free = rnd(2);
        }
        struct sw_route_facts f = FACTS(.prompt_tokens_est = rnd(10000), .max_tokens = rnd(500),
                                        .allows_cloud = rnd(3) != 0, .sensitive = rnd(3) == 0,
                                        .latency_critical = rnd(4) == 0,
                                        .needs_tools = rnd(4) == 0, .needs_images = rnd(5) == 0,
                                        .deadline_ms = rnd(5) ? NOW + (int64_t)rnd(20000) - 500 : 0,
                                        .exclude = rnd(4) ? 0 : rnd(64));
        f.n_regions = rnd(3);
        for (size_t r = 0; r < f.n_regions; r++)
            f.regions[r] = regions[1 + rnd(2)];
        bool resident_cloud = false;
        for (size_t i = 0; i < n; i++)
            for (size_t r = 0; r < f.n_regions; r++)
                resident_cloud |= b[i].tier == SW_TIER_CLOUD && b[i].region &&
                                  !strcmp(b[i].region, f.regions[r]);
        struct sw_route_policy p = POLICY(.ttft_budget_ms = rnd(2000),
                                          .spend_cap_usd = rnd(2) ? 10 : 0, .on_cap = rnd(3),
                                          .degrade_backend = (long)rnd(8) - 1,
                                          .masking_available = rnd(2));
        struct sw_route_view v = { b, n, rnd(2) ? 9.999 : 0, rnd(2) };
        struct sw_route_plan pl;
        sw_route_decide(&f, &v, &p, NOW, &pl);

        if (pl.n == 0) {
            assert_non_null(pl.code);
            assert_int_equal(pl.status, status_of(pl.code));
            assert_true(pl.message[0] != '\0');
            continue;
        }
        assert_null(pl.code);
        assert_true(pl.n <= n);
        for (size_t a = 0; a < pl.n; a++) {
            const struct sw_route_attempt *at = &pl.attempts[a];
            assert_true(at->backend < n);
            assert_true((unsigned)at->reason < SW_REASON__COUNT);
            if (b[at->backend].tier == SW_TIER_CLOUD) {
                assert_true(f.allows_cloud);
                bool listed = false;
                for (size_t r = 0; r < f.n_regions; r++)
                    listed |= b[at->backend].region && !strcmp(b[at->backend].region, f.regions[r]);
                /* Sensitive: unmasked only in a listed region; masked only in an
                 * emergency with masking when the model has no cloud in them. */
                if (f.sensitive && resident_cloud)
                    assert_true(listed && !at->masked);
                else if (f.sensitive)
                    assert_true(at->masked && v.emergency && p.masking_available);
            }
            assert_true(at->masked == (at->reason == SW_REASON_EMERGENCY));
            assert_true(pl.excluded[at->backend] == SW_EXCL_NONE ||
                        (pl.excluded[at->backend] == SW_EXCL_DEGRADE_ONLY &&
                         (long)at->backend == p.degrade_backend &&
                         at->reason == SW_REASON_BUDGET && a == 0));
            for (size_t o = 0; o < a; o++)
                assert_true(pl.attempts[o].backend != at->backend);
            if (a > 0)
                assert_true(at->reason == SW_REASON_FALLBACK || at->reason == SW_REASON_EMERGENCY);
            /* long_prompt: an idle local whose estimate is over the budget
             * and within the deadline. */
            if (at->reason == SW_REASON_LONG_PROMPT) {
                const struct sw_route_backend_view *lb = &b[at->backend];
                long budget = sw_route_budget_ms(&f, &p);
                assert_true(lb->tier == SW_TIER_LOCAL && lb->in_flight <= 0 &&
                            lb->queued <= 0 && !(lb->outside_load > 0));
                assert_true(budget > 0 && pl.est_ttft_ms[at->backend] > (double)budget);
                assert_true(f.deadline_ms == 0 ||
                            sw_route_est_ttft_ms(lb, f.prompt_tokens_est) <=
                                (double)(f.deadline_ms - NOW));
            }
        }
        for (size_t i = 0; i < n; i++) {
            bool in = false;
            for (size_t a = 0; a < pl.n; a++)
                in |= pl.attempts[a].backend == i;
            if (pl.excluded[i] == SW_EXCL_NONE)
                assert_true(in);
        }
    }
}

/* ---- The idle-box rule, exhaustively ---- */

/* Every combination of load (Spillway's in flight and queued, outside load),
 * prompt size around the budget, RTT, budget, deadline and privacy on a
 * {local, cloud} model, against the rule written out: over the deadline:
 * overflow; over the budget: long_prompt when the box is idle and the
 * estimate less the request's own prefill is within the budget, else
 * overflow; a request that may not leave stays local with privacy where
 * the cloud was wanted. */
static void test_idle_rule(void **state)
{
    (void)state;
    static const long in_flights[] = {0, 1, 3, 4};
    static const long queueds[] = {0, 1};
    static const double outsides[] = {0, 0.5, 2};
    static const long prompts[] = {0, 100, 1000, 1548, 1550, 3000, 9000};
    static const double rtts[] = {0, 1, 500, 775, 776, 2000};
    static const long budgets[] = {0, 100, 800, 5000};
    static const int64_t deadlines[] = {0, 1000, 4000, 30000};
    static const double rates[] = {0, 0.05, 0.5, 2};
    size_t cases = 0, long_prompts = 0, overflows = 0;
    for (size_t a = 0; a < sizeof in_flights / sizeof *in_flights; a++)
    for (size_t q = 0; q < sizeof queueds / sizeof *queueds; q++)
    for (size_t o = 0; o < sizeof outsides / sizeof *outsides; o++)
    for (size_t k = 0; k < sizeof prompts / sizeof *prompts; k++)
    for (size_t r = 0; r < sizeof rtts / sizeof *rtts; r++)
    for (size_t bu = 0; bu < sizeof budgets / sizeof *budgets; bu++)
    for (size_t d = 0; d < sizeof deadlines / sizeof *deadlines; d++)
    for (size_t ra = 0; ra < sizeof rates / sizeof *rates; ra++)
    for (int cloud = 0; cloud < 2; cloud++) {
        struct sw_route_backend_view b[2] = {
            LOCAL("L1", .in_flight = in_flights[a], .queued = queueds[q],
                  .outside_load = outsides[o], .rtt_ms = rtts[r],
                  .prefill_ms_per_token = rates[ra], .max_context_tokens = 0),
            CLOUD("C1"),
        };
        struct sw_route_facts f = FACTS(.prompt_tokens_est = prompts[k], .allows_cloud = cloud,
                                        .deadline_ms = deadlines[d] ? NOW + deadlines[d] : 0);
        struct sw_route_policy p = POLICY(.ttft_budget_ms = budgets[bu]);
        struct sw_route_view v = {b, 2, 0, false};
        struct sw_route_plan pl;
        sw_route_decide(&f, &v, &p, NOW, &pl);

        double est = sw_route_est_ttft_ms(&b[0], prompts[k]);
        double rate = rates[ra] > 0 ? rates[ra] : SW_ROUTE_PRIOR_PREFILL_MS_PER_TOKEN;
        double own = (double)prompts[k] * rate;
        double left = deadlines[d] ? (double)deadlines[d] : 1e300;
        double budget = budgets[bu] > 0 ? (double)budgets[bu] : 1e300;
        bool idle = in_flights[a] == 0 && queueds[q] == 0 && outsides[o] == 0;
        const char *want;
        if (est > left || (est > budget && !(idle && est - own <= budget)))
            want = cloud ? "C1:overflow" : "L1:privacy";
        else if (est > budget)
            want = "L1:long_prompt";
        else
            want = "L1:baseline";
        char got[64];
        snprintf(got, sizeof got, "%s:%s", pl.n ? b[pl.attempts[0].backend].name : "-",
                 pl.n ? sw_reason_name(pl.attempts[0].reason) : pl.code);
        if (strcmp(got, want))
            fail_msg("in_flight %ld queued %ld outside %g prompt %ld rtt %g budget %ld "
                     "deadline %lld rate %g cloud %d: est %g: want %s, got %s",
                     in_flights[a], queueds[q], outsides[o], prompts[k], rtts[r], budgets[bu],
                     (long long)deadlines[d], rates[ra], cloud, est, want, got);
        cases++;
        long_prompts += !strcmp(want, "L1:long_prompt");
        overflows += !strcmp(want, "C1:overflow");
    }
    assert_true(cases > 10000);
    assert_true(long_prompts > 100 && overflows > 100);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_estimate),
        cmocka_unit_test(test_load_priority_reserve),
        cmocka_unit_test(test_estimate_busy),
        cmocka_unit_test(test_estimate_overdue),
        cmocka_unit_test(test_moves_to),
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_many_backends),
        cmocka_unit_test(test_long_name),
        cmocka_unit_test(test_invariants),
        cmocka_unit_test(test_idle_rule),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
