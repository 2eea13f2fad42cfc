/* The request's facts (request/facts.c): every combination of the key's
 * policy, the privacy headers (absent, true, false, conflicting, invalid),
 * metadata.allow_cloud (absent, true, false, a flag string, null, another
 * type, a word that is not a flag), the model's PII policy and what the
 * scan finds, against an oracle that merges them most restrictive first;
 * each refusal in its order and in its exact words; the headers' other
 * facts, priority, residency, the translation's scan and the embeddings
 * surface. */
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "common/err.h"
#include "dialect/anth_req.h"
#include "dialect/responses_req.h"
#include "pii/pii.h"
#include "request/embed.h"
#include "request/facts.h"
#include "request/request.h"

/* ---- A scanner that answers from a table ---- */

enum scan_kind { SCAN_CLEAN, SCAN_FOUND, SCAN_FAILED, SCAN_BAD_FIELD, SCAN_BINARY, N_SCAN };
static const char *const scan_names[] = {"clean", "found", "failed", "bad field", "binary"};

struct fake_scan {
    enum scan_kind body_kind;           /* what the client's body holds */
    int built_rc;                       /* the translation's scan */
    struct sw_pii_counts built_counts;
    int body_calls, built_calls;
    enum sw_pii_surface body_surface, built_surface;
    const json_t *body_tree, *built_tree;
};

static int fake_body(void *ud, enum sw_pii_surface s, const json_t *body,
                     struct sw_pii_counts *counts, char *bad, size_t bad_len)
{
    struct fake_scan *fs = ud;
    fs->body_calls++;
    fs->body_surface = s;
    fs->body_tree = body;
    memset(counts, 0, sizeof *counts);
    switch (fs->body_kind) {
    case SCAN_FOUND:
        counts->n[SW_PII_EMAIL] = 2;
        counts->n[SW_PII_IBAN] = 1;
        counts->total = 3;
        return SW_OK;
    case SCAN_FAILED:
        return SW_ETOOBIG;
    case SCAN_BAD_FIELD:
        snprintf(bad, bad_len, "messages[0].role");
        return SW_EINVAL;
    case SCAN_BINARY:
        counts->binary = 1;
        return SW_OK;
    default:
        return SW_OK;
    }
}

static int fake_built(void *ud, enum sw_pii_surface s, const json_t *body,
                      struct sw_pii_counts *counts)
{
    struct fake_scan *fs = ud;
    fs->built_calls++;
    fs->built_surface = s;
    fs->built_tree = body;
    *counts = fs->built_counts;
    return fs->built_rc;
}

static const char *fake_name(void *ud, int type)
{
    (void)ud;
    return sw_pii_type_name(NULL, type);
}

static struct sw_facts_scanner scanner_of(struct fake_scan *fs)
{
    return (struct sw_facts_scanner){fake_body, fake_built, fake_name, fs, NULL};
}

/* ---- Inputs ---- */

static struct sw_config base_config(void)
{
    struct sw_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.pii.policy = SW_PII_POLICY_LOCAL_ONLY;
    cfg.pii.binary_parts = SW_PII_BINARY_LOCAL;
    cfg.routing.request_timeout_ms = 30000;
    cfg.routing.default_max_tokens = 256;
    return cfg;
}

static struct sw_config_key plain_key(void)
{
    struct sw_config_key k;
    memset(&k, 0, sizeof k);
    k.name = "k";
    k.allow_cloud = true;
    return k;
}

static struct sw_config_model plain_model(void)
{
    struct sw_config_model m;
    memset(&m, 0, sizeof m);
    m.name = "m";
    return m;
}

/* The headers a case sends: up to 8 name/value pairs. */
struct hdrs {
    struct sw_facts_header h[8];
    size_t n;
};

static void add(struct hdrs *h, const char *name, const char *value)
{
    assert_true(h->n < 8);
    h->h[h->n++] = (struct sw_facts_header){name, value};
}

/* One privacy header's variants: its values (NULL-ended), what they mean. */
struct flag_case {
    const char *label;
    const char *values[3];
    bool valid, any_true, any_false;
};

static const struct flag_case flag_cases[] = {
    {"absent", {NULL}, true, false, false},
    {"true", {"true"}, true, true, false},
    {"false", {"FALSE"}, true, false, true},
    {"repeated true,false", {"yes", "off"}, true, true, true},
    {"list false,true", {" 0 , on"}, true, true, true},
    {"invalid", {"maybe"}, false, false, false},
    {"one bad occurrence", {"true", "nope"}, false, false, false},
};
#define N_FLAG (sizeof flag_cases / sizeof flag_cases[0])

/* metadata.allow_cloud variants: the body's metadata, what the parser says. */
struct body_case {
    const char *label;
    const char *metadata;       /* NULL: none */
    int allow_cloud;            /* -1 absent, 0, 1; -2: the parser refuses */
    const char *code;           /* the refusal's code */
};

static const struct body_case body_cases[] = {
    {"absent", NULL, -1, NULL},
    {"true", "{\"allow_cloud\":true}", 1, NULL},
    {"false", "{\"allow_cloud\":false}", 0, NULL},
    {"string \"false\"", "{\"allow_cloud\":\"false\"}", 0, NULL},
    {"string \"yes\"", "{\"allow_cloud\":\"yes\"}", 1, NULL},
    {"null", "{\"allow_cloud\":null}", -2, "invalid_type"},
    {"a number", "{\"allow_cloud\":7}", -2, "invalid_type"},
    {"a word", "{\"allow_cloud\":\"maybe\"}", -2, "invalid_value"},
};
#define N_BODY (sizeof body_cases / sizeof body_cases[0])

/* The key's policy: NULL (auth off) or one of these. */
struct key_case {
    const char *label;
    bool present, allow_cloud, sensitive;
    enum sw_pii_policy pii;
    enum sw_pii_binary binary;
};

static const struct key_case key_cases[] = {
    {"no key (auth off)", false, true, false, SW_PII_POLICY_INHERIT, SW_PII_BINARY_INHERIT},
    {"key: defaults", true, true, false, SW_PII_POLICY_INHERIT, SW_PII_BINARY_INHERIT},
    {"key: allow_cloud false", true, false, false, SW_PII_POLICY_INHERIT, SW_PII_BINARY_INHERIT},
    {"key: sensitive", true, true, true, SW_PII_POLICY_INHERIT, SW_PII_BINARY_INHERIT},
    {"key: pii block", true, true, false, SW_PII_POLICY_BLOCK, SW_PII_BINARY_INHERIT},
    {"key: pii off (cannot loosen)", true, true, false, SW_PII_POLICY_OFF, SW_PII_BINARY_INHERIT},
    {"key: binary allow", true, true, false, SW_PII_POLICY_INHERIT, SW_PII_BINARY_ALLOW},
};
#define N_KEY (sizeof key_cases / sizeof key_cases[0])

/* The model's policy. */
struct model_case {
    const char *label;
    enum sw_pii_policy pii;
    enum sw_pii_binary binary;
};

static const struct model_case model_cases[] = {
    {"model: inherit", SW_PII_POLICY_INHERIT, SW_PII_BINARY_INHERIT},
    {"model: mask", SW_PII_POLICY_MASK, SW_PII_BINARY_INHERIT},
    {"model: local_only", SW_PII_POLICY_LOCAL_ONLY, SW_PII_BINARY_INHERIT},
    {"model: block", SW_PII_POLICY_BLOCK, SW_PII_BINARY_INHERIT},
    {"model: binary allow", SW_PII_POLICY_INHERIT, SW_PII_BINARY_ALLOW},
};
#define N_MODEL (sizeof model_cases / sizeof model_cases[0])

/* Global policies the table runs under. */
struct global_case {
    enum sw_pii_policy pii;
    enum sw_pii_binary binary;
};

static const struct global_case global_cases[] = {
    {SW_PII_POLICY_LOCAL_ONLY, SW_PII_BINARY_LOCAL},
    {SW_PII_POLICY_OFF, SW_PII_BINARY_ALLOW},
    {SW_PII_POLICY_MASK, SW_PII_BINARY_LOCAL},
};
#define N_GLOBAL (sizeof global_cases / sizeof global_cases[0])

static char *chat_body(const char *metadata)
{
    static const char head[] = "{\"model\":\"m\",\"messages\":"
                               "[{\"role\":\"user\",\"content\":\"hi\"}]";
    size_t cap = sizeof head + 16 + (metadata ? strlen(metadata) : 0);
    char *s = malloc(cap);
    assert_non_null(s);
    int n = snprintf(s, cap, "%s%s%s}", head, metadata ? ",\"metadata\":" : "",
                     metadata ? metadata : "");
    assert_true(n > 0 && (size_t)n < cap);
    return s;
}

/* ---- The oracle ---- */

struct expect {
    /* a refusal: status, code, param; NULL code: accepted */
    int status;
    const char *code, *param;
    bool allows_cloud, sensitive, binary_blocked;
    enum sw_pii_policy policy;
};

static enum sw_pii_policy max_policy(enum sw_pii_policy a, enum sw_pii_policy b)
{
    return a > b ? a : b;
}

static struct expect oracle(const struct global_case *g, const struct key_case *k,
                            const struct flag_case *cloud, const struct flag_case *sens,
                            const struct body_case *b, const struct model_case *m,
                            enum scan_kind scan)
{
    struct expect e = {0};
    /* The order of the front: headers, then the body, then the facts. */
    if (!cloud->valid) {
        e = (struct expect){.status = 400, .code = "invalid_header",
                            .param = "X-Spillway-Allow-Cloud"};
        return e;
    }
    if (!sens->valid) {
        e = (struct expect){.status = 400, .code = "invalid_header",
                            .param = "X-Spillway-Sensitive"};
        return e;
    }
    if (b->allow_cloud == -2) {
        e = (struct expect){.status = 400, .code = b->code,
                            .param = "metadata.allow_cloud"};
        return e;
    }
    e.policy = max_policy(max_policy(g->pii, k->present ? k->pii : SW_PII_POLICY_INHERIT), m->pii);
    enum sw_pii_binary binary = g->binary;
    if (k->present && k->binary > binary)
        binary = k->binary;
    if (m->binary > binary)
        binary = m->binary;
    bool scanned = e.policy != SW_PII_POLICY_OFF;
    if (scanned && scan == SCAN_BAD_FIELD) {
        e.status = 400;
        e.code = "invalid_value";
        e.param = "messages[0].role";
        return e;
    }
    bool found = scanned && scan == SCAN_FOUND;
    if (found && e.policy == SW_PII_POLICY_BLOCK) {
        e.status = 400;
        e.code = "pii_blocked";
        e.param = "messages";
        return e;
    }
    /* Any source saying no keeps it local; any saying sensitive makes it so. */
    e.allows_cloud = (!k->present || k->allow_cloud) && !cloud->any_false && b->allow_cloud != 0;
    e.binary_blocked = scanned && scan == SCAN_BINARY && binary != SW_PII_BINARY_ALLOW;
    e.sensitive = (k->present && k->sensitive) || sens->any_true ||
                  (found && e.policy == SW_PII_POLICY_LOCAL_ONLY) ||
                  (scanned && scan == SCAN_FAILED) || e.binary_blocked;
    return e;
}

/* ---- The table ---- */

static void test_every_combination(void **state)
{
    (void)state;
    struct sw_chat_request chats[N_BODY];
    struct sw_request_error perr[N_BODY];
    int prc[N_BODY];
    for (size_t b = 0; b < N_BODY; b++) {
        char *s = chat_body(body_cases[b].metadata);
        prc[b] = sw_request_parse(s, strlen(s), &chats[b], &perr[b]);
        free(s);
    }
    size_t runs = 0, refused = 0;
    for (size_t gi = 0; gi < N_GLOBAL; gi++)
    for (size_t ki = 0; ki < N_KEY; ki++)
    for (size_t ci = 0; ci < N_FLAG; ci++)
    for (size_t si = 0; si < N_FLAG; si++)
    for (size_t bi = 0; bi < N_BODY; bi++)
    for (size_t mi = 0; mi < N_MODEL; mi++)
    for (int sc = 0; sc < N_SCAN; sc++) {
        const struct global_case *g = &global_cases[gi];
        const struct key_case *kc = &key_cases[ki];
        const struct flag_case *cloud = &flag_cases[ci], *sens = &flag_cases[si];
        const struct body_case *bc = &body_cases[bi];
        const struct model_case *mc = &model_cases[mi];
        char label[512];
        snprintf(label, sizeof label,
                 "global pii %d binary %d, %s, allow-cloud header %s, sensitive header %s, "
                 "metadata %s, %s, scan %s", g->pii, g->binary, kc->label, cloud->label,
                 sens->label, bc->label, mc->label, scan_names[sc]);
        struct expect want = oracle(g, kc, cloud, sens, bc, mc, (enum scan_kind)sc);

        struct sw_config cfg = base_config();
        cfg.pii.policy = g->pii;
        cfg.pii.binary_parts = g->binary;
        struct sw_config_key key = plain_key();
        key.allow_cloud = kc->allow_cloud;
        key.sensitive = kc->sensitive;
        key.pii = kc->pii;
        key.pii_binary_parts = kc->binary;
        struct sw_config_model model = plain_model();
        model.pii = mc->pii;
        model.pii_binary_parts = mc->binary;
        struct hdrs h = {0};
        add(&h, "Host", "localhost");
        for (size_t v = 0; cloud->values[v]; v++)
            add(&h, v ? "x-spillway-allow-cloud" : "X-Spillway-Allow-Cloud", cloud->values[v]);
        for (size_t v = 0; sens->values[v]; v++)
            add(&h, "X-Spillway-Sensitive", sens->values[v]);

        /* The chain as the front runs it. */
        struct sw_request_error err;
        struct sw_facts_hdrs fh;
        struct sw_facts facts;
        struct fake_scan fs = {.body_kind = (enum scan_kind)sc};
        struct sw_facts_scanner scanner = scanner_of(&fs);
        const struct sw_request_error *got = NULL;
        runs++;
        if (sw_facts_headers(h.h, h.n, cfg.routing.request_timeout_ms, &fh, &err) != SW_OK) {
            got = &err;
        } else if (prc[bi] != SW_OK) {
            got = &perr[bi];
        } else {
            const struct sw_facts_in in = {SW_API_CHAT, &cfg, kc->present ? &key : NULL,
                                           &model, &chats[bi], &fh, 1000};
            if (sw_facts_derive(&in, &scanner, &facts, &err) != SW_OK)
                got = &err;
        }
        if (want.code || got) {
            refused++;
            if (!want.code || !got || got->status != want.status ||
                strcmp(got->code, want.code) || strcmp(got->param, want.param))
                fail_msg("%s: want %s (%s), got %s (%s): %s", label,
                         want.code ? want.code : "accepted", want.param ? want.param : "",
                         got ? got->code : "accepted", got ? got->param : "",
                         got ? got->message : "");
            continue;
        }
        if (facts.route.allows_cloud != want.allows_cloud ||
            facts.route.sensitive != want.sensitive ||
            facts.pii.binary_blocked != want.binary_blocked || facts.pii.policy != want.policy)
            fail_msg("%s: want allows_cloud %d sensitive %d binary_blocked %d policy %d, got "
                     "%d %d %d %d", label, want.allows_cloud, want.sensitive,
                     want.binary_blocked, want.policy, facts.route.allows_cloud,
                     facts.route.sensitive, facts.pii.binary_blocked, facts.pii.policy);
        /* Scanned exactly when the policy is not off, the client's body, with chat's table. */
        assert_int_equal(fs.body_calls, want.policy != SW_PII_POLICY_OFF);
        assert_int_equal(fs.built_calls, 0);
        if (fs.body_calls) {
            assert_int_equal(fs.body_surface, SW_PII_SURFACE_CHAT);
            assert_ptr_equal(fs.body_tree, chats[bi].body);
        }
        assert_int_equal(facts.scan_failed, fs.body_calls && sc == SCAN_FAILED);
        assert_int_equal(facts.refused, SW_FACTS_ACCEPTED);
        assert_int_equal(facts.route.latency_critical, false);
        assert_int_equal(facts.route.deadline_ms, 1000 + 30000);
    }
    for (size_t b = 0; b < N_BODY; b++)
        sw_request_free(&chats[b]);
    /* Every combination ran, and both outcomes occur. */
    assert_int_equal(runs, N_GLOBAL * N_KEY * N_FLAG * N_FLAG * N_BODY * N_MODEL * N_SCAN);
    assert_true(refused > 0 && refused < runs);
}

/* ---- Refusals, in their words and their order ---- */

struct refusal_case {
    const char *label;
    struct sw_facts_header h[3];
    size_t n;
    const char *param, *message;        /* NULL param: accepted */
};

static void test_header_refusals(void **state)
{
    (void)state;
    static const struct refusal_case cases[] = {
        {"timeout not a number", {{"X-Request-Timeout-Ms", "12ms"}}, 1, "X-Request-Timeout-Ms",
         "Invalid X-Request-Timeout-Ms: expected milliseconds from 1 to 3600000."},
        {"timeout 0", {{"x-request-timeout-ms", "0"}}, 1, "X-Request-Timeout-Ms",
         "Invalid X-Request-Timeout-Ms: expected milliseconds from 1 to 3600000."},
        {"timeout over an hour", {{"X-Request-Timeout-Ms", "3600001"}}, 1, "X-Request-Timeout-Ms",
         "Invalid X-Request-Timeout-Ms: expected milliseconds from 1 to 3600000."},
        {"a flag header's near-miss", {{"X_Spillway_Allow_Cloud", "false"}}, 1,
         "X_Spillway_Allow_Cloud",
         "Unknown header 'X_Spillway_Allow_Cloud': the flag is spelled 'X-Spillway-Allow-Cloud' "
         "(words joined by '-')."},
        {"a near-miss with a leading separator", {{"-x spillway_sensitive", "1"}}, 1,
         "-x spillway_sensitive",
         "Unknown header '-x spillway_sensitive': the flag is spelled 'X-Spillway-Sensitive' "
         "(words joined by '-')."},
        {"near-miss of another flag", {{"X-Spillway-LatencyCritical", "1"}}, 1,
         "X-Spillway-LatencyCritical",
         "Unknown header 'X-Spillway-LatencyCritical': the flag is spelled "
         "'X-Spillway-Latency-Critical' (words joined by '-')."},
        {"an empty flag", {{"X-Spillway-Sensitive", ""}}, 1, "X-Spillway-Sensitive",
         "Invalid X-Spillway-Sensitive: every value must be true/false, 1/0, yes/no or on/off."},
        {"one bad list element", {{"X-Spillway-Latency-Critical", "true,"}}, 1,
         "X-Spillway-Latency-Critical",
         "Invalid X-Spillway-Latency-Critical: every value must be true/false, 1/0, yes/no or "
         "on/off."},
        {"ttft budget 0", {{"X-Spillway-TTFT-Budget-Ms", "0"}}, 1, "X-Spillway-TTFT-Budget-Ms",
         "Invalid X-Spillway-TTFT-Budget-Ms: expected milliseconds from 1 to 3600000."},
        {"ttft budget negative", {{"X-Spillway-TTFT-Budget-Ms", "-5"}}, 1,
         "X-Spillway-TTFT-Budget-Ms",
         "Invalid X-Spillway-TTFT-Budget-Ms: expected milliseconds from 1 to 3600000."},
        /* the order: timeout, spelling, Allow-Cloud, Sensitive, Latency-Critical, TTFT budget */
        {"timeout before a near-miss",
         {{"X-Spillway-AllowCloud", "1"}, {"X-Request-Timeout-Ms", "x"}}, 2,
         "X-Request-Timeout-Ms",
         "Invalid X-Request-Timeout-Ms: expected milliseconds from 1 to 3600000."},
        {"a near-miss before a bad flag",
         {{"X-Spillway-Allow-Cloud", "maybe"}, {"x-spillway-sensitive ", "1"}}, 2,
         "x-spillway-sensitive ",
         "Unknown header 'x-spillway-sensitive ': the flag is spelled 'X-Spillway-Sensitive' "
         "(words joined by '-')."},
        {"Allow-Cloud before Sensitive",
         {{"X-Spillway-Sensitive", "x"}, {"X-Spillway-Allow-Cloud", "y"}}, 2,
         "X-Spillway-Allow-Cloud",
         "Invalid X-Spillway-Allow-Cloud: every value must be true/false, 1/0, yes/no or on/off."},
        {"flags before the TTFT budget",
         {{"X-Spillway-TTFT-Budget-Ms", "x"}, {"X-Spillway-Latency-Critical", "y"}}, 2,
         "X-Spillway-Latency-Critical",
         "Invalid X-Spillway-Latency-Critical: every value must be true/false, 1/0, yes/no or "
         "on/off."},
        {"the first timeout counts", {{"X-Request-Timeout-Ms", "5"}, {"X-Request-Timeout-Ms", "x"}},
         2, NULL, NULL},
        {"lower case is the header itself", {{"x-spillway-allow-cloud", "no"}}, 1, NULL, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        struct sw_facts_hdrs fh;
        struct sw_request_error err;
        int rc = sw_facts_headers(cases[i].h, cases[i].n, 30000, &fh, &err);
        if (!cases[i].param) {
            if (rc != SW_OK)
                fail_msg("%s: refused: %s", cases[i].label, err.message);
            continue;
        }
        if (rc != SW_EINVAL)
            fail_msg("%s: accepted", cases[i].label);
        assert_int_equal(err.status, 400);
        assert_string_equal(err.type, "invalid_request_error");
        assert_string_equal(err.code, "invalid_header");
        assert_string_equal(err.param, cases[i].param);
        if (strcmp(err.message, cases[i].message))
            fail_msg("%s: message %s", cases[i].label, err.message);
    }
}

/* The headers' other facts: the deadline, the TTFT budget, latency-critical. */
static void test_header_facts(void **state)
{
    (void)state;
    static const struct {
        const char *timeout, *ttft, *critical;
        long timeout_ms, ttft_cap_ms;
        bool critical_true;
    } cases[] = {
        {NULL, NULL, NULL, 30000, 0, false},
        {"100", NULL, NULL, 100, 0, false},
        {"30001", NULL, NULL, 30000, 0, false},        /* never longer than configured */
        {"3600000", "3600000", "on", 30000, 3600000, true},
        {NULL, "250", "false", 30000, 250, false},
        {NULL, NULL, "no, yes", 30000, 0, true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        struct hdrs h = {0};
        if (cases[i].timeout)
            add(&h, "X-Request-Timeout-Ms", cases[i].timeout);
        if (cases[i].ttft)
            add(&h, "x-spillway-ttft-budget-ms", cases[i].ttft);
        if (cases[i].critical)
            add(&h, "X-Spillway-Latency-Critical", cases[i].critical);
        struct sw_facts_hdrs fh;
        struct sw_request_error err;
        assert_int_equal(sw_facts_headers(h.h, h.n, 30000, &fh, &err), SW_OK);
        assert_int_equal(fh.timeout_ms, cases[i].timeout_ms);
        assert_int_equal(fh.ttft_budget_cap_ms, cases[i].ttft_cap_ms);
        assert_int_equal(fh.latency_critical.any_true, cases[i].critical_true);
        assert_null(fh.priority);

        struct sw_config cfg = base_config();
        cfg.pii.policy = SW_PII_POLICY_OFF;
        struct sw_config_model model = plain_model();
        struct sw_chat_request chat;
        char *s = chat_body(NULL);
        assert_int_equal(sw_request_parse(s, strlen(s), &chat, &err), SW_OK);
        free(s);
        const struct sw_facts_in in = {SW_API_CHAT, &cfg, NULL, &model, &chat, &fh, 5000};
        struct sw_facts facts;
        struct fake_scan fs = {0};
        struct sw_facts_scanner scanner = scanner_of(&fs);
        assert_int_equal(sw_facts_derive(&in, &scanner, &facts, &err), SW_OK);
        assert_int_equal(facts.start_ms, 5000);
        assert_int_equal(facts.route.deadline_ms, 5000 + cases[i].timeout_ms);
        assert_int_equal(facts.route.ttft_budget_cap_ms, cases[i].ttft_cap_ms);
        assert_int_equal(facts.route.latency_critical, cases[i].critical_true);
        assert_int_equal(facts.route.max_tokens, 256);     /* the default estimate */
        assert_false(facts.route.max_tokens_given);
        assert_int_equal(fs.body_calls, 0);                 /* policy off: not scanned */
        sw_request_free(&chat);
    }
}

/* X-Spillway-Priority, else metadata.priority, else the key's default. */
static void test_priority(void **state)
{
    (void)state;
    static const struct {
        const char *header, *metadata;
        bool key_batch;
        int priority;           /* -1: refused */
        const char *code, *param, *message;
    } cases[] = {
        {NULL, NULL, false, SW_PRIORITY_INTERACTIVE, NULL, NULL, NULL},
        {NULL, NULL, true, SW_PRIORITY_BATCH, NULL, NULL, NULL},
        {" Batch ", NULL, false, SW_PRIORITY_BATCH, NULL, NULL, NULL},
        {"interactive", "{\"priority\":\"batch\"}", true, SW_PRIORITY_INTERACTIVE, NULL, NULL,
         NULL},
        {NULL, "{\"priority\":\"batch\"}", false, SW_PRIORITY_BATCH, NULL, NULL, NULL},
        {"urgent", NULL, false, -1, "invalid_header", "X-Spillway-Priority",
         "Invalid X-Spillway-Priority: expected interactive or batch."},
        {"urgent", "{\"priority\":\"never read\"}", false, -1, "invalid_header",
         "X-Spillway-Priority", "Invalid X-Spillway-Priority: expected interactive or batch."},
        {NULL, "{\"priority\":\"later\"}", true, -1, "invalid_value", "metadata.priority",
         "Invalid metadata.priority: expected \"interactive\" or \"batch\"."},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        struct hdrs h = {0};
        if (cases[i].header)
            add(&h, "X-Spillway-Priority", cases[i].header);
        struct sw_facts_hdrs fh;
        struct sw_request_error err;
        assert_int_equal(sw_facts_headers(h.h, h.n, 30000, &fh, &err), SW_OK);
        struct sw_config cfg = base_config();
        struct sw_config_key key = plain_key();
        key.priority = cases[i].key_batch ? SW_PRIORITY_BATCH : SW_PRIORITY_INTERACTIVE;
        struct sw_config_model model = plain_model();
        struct sw_chat_request chat;
        char *s = chat_body(cases[i].metadata);
        assert_int_equal(sw_request_parse(s, strlen(s), &chat, &err), SW_OK);
        free(s);
        /* without a key the default is interactive */
        const struct sw_facts_in in = {SW_API_CHAT, &cfg, cases[i].key_batch ? &key : NULL,
                                       &model, &chat, &fh, 0};
        struct sw_facts facts;
        struct fake_scan fs = {.body_kind = SCAN_FOUND};
        struct sw_facts_scanner scanner = scanner_of(&fs);
        int rc = sw_facts_derive(&in, &scanner, &facts, &err);
        if (cases[i].priority < 0) {
            assert_int_equal(rc, SW_EINVAL);
            assert_int_equal(facts.refused, SW_FACTS_REFUSED_PRIORITY);
            assert_int_equal(err.status, 400);
            assert_string_equal(err.code, cases[i].code);
            assert_string_equal(err.param, cases[i].param);
            assert_string_equal(err.message, cases[i].message);
            assert_int_equal(fs.body_calls, 0);     /* refused before the scan */
        } else {
            assert_int_equal(rc, SW_OK);
            assert_int_equal(facts.route.priority, cases[i].priority);
        }
        sw_request_free(&chat);
    }
}

/* The scan's refusals in their words; the types named, never the values. */
static void test_scan_refusals(void **state)
{
    (void)state;
    struct sw_config cfg = base_config();
    cfg.pii.policy = SW_PII_POLICY_BLOCK;
    struct sw_config_model model = plain_model();
    struct sw_facts_hdrs fh;
    struct sw_request_error err;
    assert_int_equal(sw_facts_headers(NULL, 0, 30000, &fh, &err), SW_OK);
    struct sw_chat_request chat;
    char *s = chat_body(NULL);
    assert_int_equal(sw_request_parse(s, strlen(s), &chat, &err), SW_OK);
    free(s);
    const struct sw_facts_in in = {SW_API_CHAT, &cfg, NULL, &model, &chat, &fh, 0};
    struct sw_facts facts;

    struct fake_scan fs = {.body_kind = SCAN_FOUND};
    struct sw_facts_scanner scanner = scanner_of(&fs);
    assert_int_equal(sw_facts_derive(&in, &scanner, &facts, &err), SW_EINVAL);
    assert_int_equal(facts.refused, SW_FACTS_REFUSED_PII);
    assert_string_equal(err.code, "pii_blocked");
    assert_string_equal(err.param, "messages");
    assert_string_equal(err.message, "The request contains personal data or secrets (email, "
                                     "iban) and its policy blocks such requests.");
    assert_string_equal(facts.types, "email, iban");
    assert_int_equal(facts.pii.counts.total, 3);           /* recorded with the rejection */

    fs = (struct fake_scan){.body_kind = SCAN_BAD_FIELD};
    assert_int_equal(sw_facts_derive(&in, &scanner, &facts, &err), SW_EINVAL);
    assert_int_equal(facts.refused, SW_FACTS_REFUSED_FIELD);
    assert_string_equal(err.code, "invalid_value");
    assert_string_equal(err.param, "messages[0].role");
    assert_string_equal(facts.bad, "messages[0].role");
    assert_string_equal(err.message,
                        "messages[0].role: the value is not one this field takes (an enum value, "
                        "an id or name of its documented pattern, or a number within 2^53).");
    sw_request_free(&chat);
}

/* ---- Surfaces ---- */

/* An Anthropic body: the client's own body is scanned with the Messages
 * table, then its translation with chat's; per type the larger count wins.
 * A scan that cannot run is sensitive, and after the first fails the
 * translation is not scanned. */
static void test_translation_scan(void **state)
{
    (void)state;
    static const char body[] = "{\"model\":\"m\",\"max_tokens\":64,\"messages\":"
                               "[{\"role\":\"user\",\"content\":\"hi\"}]}";
    struct sw_chat_request chat;
    struct sw_request_error err;
    assert_int_equal(sw_anth_request_parse(body, sizeof body - 1, 1, &chat, &err), SW_OK);
    assert_non_null(chat.native);
    struct sw_config cfg = base_config();
    cfg.pii.policy = SW_PII_POLICY_MASK;
    struct sw_config_model model = plain_model();
    struct sw_facts_hdrs fh;
    assert_int_equal(sw_facts_headers(NULL, 0, 30000, &fh, &err), SW_OK);
    const struct sw_facts_in in = {SW_API_MESSAGES, &cfg, NULL, &model, &chat, &fh, 0};
    struct sw_facts facts;

    struct fake_scan fs = {.body_kind = SCAN_FOUND};
    fs.built_counts.n[SW_PII_EMAIL] = 5;      /* the translation joined texts: more */
    fs.built_counts.n[SW_PII_PHONE] = 1;
    fs.built_counts.total = 6;
    fs.built_counts.binary = 2;
    struct sw_facts_scanner scanner = scanner_of(&fs);
    assert_int_equal(sw_facts_derive(&in, &scanner, &facts, &err), SW_OK);
    assert_int_equal(fs.body_surface, SW_PII_SURFACE_MESSAGES);
    assert_ptr_equal(fs.body_tree, chat.native);
    assert_int_equal(fs.built_calls, 1);
    assert_int_equal(fs.built_surface, SW_PII_SURFACE_CHAT);
    assert_ptr_equal(fs.built_tree, chat.body);
    assert_int_equal(facts.pii.counts.n[SW_PII_EMAIL], 5);
    assert_int_equal(facts.pii.counts.n[SW_PII_IBAN], 1);
    assert_int_equal(facts.pii.counts.n[SW_PII_PHONE], 1);
    assert_int_equal(facts.pii.counts.total, 7);
    assert_int_equal(facts.pii.counts.binary, 2);
    assert_true(facts.pii.binary_blocked);                  /* binary_parts local */
    assert_true(facts.route.sensitive);
    assert_int_equal(facts.route.max_tokens, 64);
    assert_true(facts.route.max_tokens_given);

    fs = (struct fake_scan){.body_kind = SCAN_FAILED};
    assert_int_equal(sw_facts_derive(&in, &scanner, &facts, &err), SW_OK);
    assert_int_equal(fs.built_calls, 0);
    assert_true(facts.scan_failed && facts.route.sensitive);

    fs = (struct fake_scan){.body_kind = SCAN_CLEAN, .built_rc = SW_ENOMEM};
    assert_int_equal(sw_facts_derive(&in, &scanner, &facts, &err), SW_OK);
    assert_int_equal(fs.built_calls, 1);
    assert_true(facts.scan_failed && facts.route.sensitive);

    fs = (struct fake_scan){.body_kind = SCAN_CLEAN};
    assert_int_equal(sw_facts_derive(&in, &scanner, &facts, &err), SW_OK);
    assert_false(facts.scan_failed || facts.route.sensitive || facts.pii.binary_blocked);
    assert_true(facts.route.allows_cloud);
    sw_request_free(&chat);
}

/* A Responses body: the client's own body is scanned with the Responses
 * table, its translation with chat's; a request refused for PII names
 * `input`. */
static void test_responses_scan(void **state)
{
    (void)state;
    static const char body[] = "{\"model\":\"m\",\"instructions\":\"x\",\"input\":\"hi\","
                               "\"max_output_tokens\":32}";
    struct sw_chat_request chat;
    struct sw_request_error err;
    assert_int_equal(sw_responses_request_parse(body, sizeof body - 1, NULL, &chat, &err), SW_OK);
    assert_non_null(chat.native);
    struct sw_config cfg = base_config();
    cfg.pii.policy = SW_PII_POLICY_MASK;
    struct sw_config_model model = plain_model();
    struct sw_facts_hdrs fh;
    assert_int_equal(sw_facts_headers(NULL, 0, 30000, &fh, &err), SW_OK);
    const struct sw_facts_in in = {SW_API_RESPONSES, &cfg, NULL, &model, &chat, &fh, 0};
    struct sw_facts facts;
    struct fake_scan fs = {.body_kind = SCAN_FOUND};
    struct sw_facts_scanner scanner = scanner_of(&fs);
    assert_int_equal(sw_facts_derive(&in, &scanner, &facts, &err), SW_OK);
    assert_int_equal(fs.body_surface, SW_PII_SURFACE_RESPONSES);
    assert_ptr_equal(fs.body_tree, chat.native);
    assert_int_equal(fs.built_calls, 1);
    assert_int_equal(fs.built_surface, SW_PII_SURFACE_CHAT);
    assert_ptr_equal(fs.built_tree, chat.body);
    assert_int_equal(facts.route.max_tokens, 32);
    assert_true(facts.pii.counts.total > 0);
    cfg.pii.policy = SW_PII_POLICY_BLOCK;
    fs = (struct fake_scan){.body_kind = SCAN_FOUND};
    assert_int_equal(sw_facts_derive(&in, &scanner, &facts, &err), SW_EINVAL);
    assert_string_equal(err.code, "pii_blocked");
    assert_string_equal(err.param, "input");
    sw_request_free(&chat);
}

/* Embeddings: no output tokens, their own table, token ids unscannable. */
static void test_embeddings(void **state)
{
    (void)state;
    static const char *const bodies[] = {"{\"model\":\"m\",\"input\":\"hello\"}",
                                         "{\"model\":\"m\",\"input\":[1,2,3]}"};
    for (size_t i = 0; i < 2; i++) {
        struct sw_chat_request chat;
        struct sw_request_error err;
        assert_int_equal(sw_embed_parse(bodies[i], strlen(bodies[i]), &chat, &err), SW_OK);
        for (int allow = 0; allow < 2; allow++) {
            struct sw_config cfg = base_config();
            cfg.pii.binary_parts = allow ? SW_PII_BINARY_ALLOW : SW_PII_BINARY_LOCAL;
            struct sw_config_model model = plain_model();
            struct sw_facts_hdrs fh;
            assert_int_equal(sw_facts_headers(NULL, 0, 30000, &fh, &err), SW_OK);
            const struct sw_facts_in in = {SW_API_EMBEDDINGS, &cfg, NULL, &model, &chat, &fh, 0};
            struct sw_facts facts;
            struct fake_scan fs = {0};
            struct sw_facts_scanner scanner = scanner_of(&fs);
            assert_int_equal(sw_facts_derive(&in, &scanner, &facts, &err), SW_OK);
            assert_int_equal(fs.body_surface, SW_PII_SURFACE_EMBEDDINGS);
            assert_int_equal(facts.route.max_tokens, 1);
            bool tokens = i == 1;
            assert_int_equal(facts.pii.counts.binary, tokens);
            assert_int_equal(facts.pii.binary_blocked, tokens && !allow);
            assert_int_equal(facts.route.sensitive, tokens && !allow);
        }
        sw_request_free(&chat);
    }
}

/* ---- Residency ---- */

static struct sw_config_regions regions(const char *a, const char *b)
{
    struct sw_config_regions r;
    memset(&r, 0, sizeof r);
    r.set = true;
    if (a)
        r.names[r.n++] = (char *)a;
    if (b)
        r.names[r.n++] = (char *)b;
    return r;
}

static void test_regions(void **state)
{
    (void)state;
    struct sw_config_regions unset;
    memset(&unset, 0, sizeof unset);
    static const struct {
        int global, key, model;         /* 0 unset, 1 {eu, us}, 2 {us}, 3 {} */
        bool with_key;
        const char *want[2];
        size_t n;
    } cases[] = {
        {0, 0, 0, true, {NULL}, 0},
        {1, 0, 0, true, {"eu", "us"}, 2},
        {1, 2, 0, true, {"us"}, 1},
        {1, 2, 0, false, {"eu", "us"}, 2},     /* no key: its list does not apply */
        {0, 1, 2, true, {"us"}, 1},
        {0, 0, 2, true, {"us"}, 1},
        {1, 0, 3, true, {NULL}, 0},            /* an empty list: no cloud region */
        {2, 0, 1, true, {"us"}, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const struct sw_config_regions lists[4] = {unset, regions("eu", "us"), regions("us", NULL),
                                                   regions(NULL, NULL)};
        struct sw_config cfg = base_config();
        cfg.pii.policy = SW_PII_POLICY_OFF;
        cfg.pii.sensitive_regions = lists[cases[i].global];
        struct sw_config_key key = plain_key();
        key.sensitive_regions = lists[cases[i].key];
        struct sw_config_model model = plain_model();
        model.sensitive_regions = lists[cases[i].model];
        struct sw_facts_hdrs fh;
        struct sw_request_error err;
        assert_int_equal(sw_facts_headers(NULL, 0, 30000, &fh, &err), SW_OK);
        struct sw_chat_request chat;
        char *s = chat_body(NULL);
        assert_int_equal(sw_request_parse(s, strlen(s), &chat, &err), SW_OK);
        free(s);
        const struct sw_facts_in in = {SW_API_CHAT, &cfg, cases[i].with_key ? &key : NULL,
                                       &model, &chat, &fh, 0};
        struct sw_facts facts;
        struct fake_scan fs = {0};
        struct sw_facts_scanner scanner = scanner_of(&fs);
        assert_int_equal(sw_facts_derive(&in, &scanner, &facts, &err), SW_OK);
        if (facts.route.n_regions != cases[i].n)
            fail_msg("case %zu: %zu regions", i, facts.route.n_regions);
        for (size_t r = 0; r < cases[i].n; r++)
            assert_string_equal(facts.route.regions[r], cases[i].want[r]);
        sw_request_free(&chat);
    }
}

/* ---- With the real engine ---- */

static void test_real_engine(void **state)
{
    (void)state;
    struct sw_pii_engine *e;
    char msg[256];
    assert_int_equal(sw_pii_engine_new(NULL, 0, &e, msg, sizeof msg), SW_OK);
    const struct sw_facts_scanner scanner = sw_facts_engine_scanner(e);
    static const char body[] = "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":"
                               "\"mail jan.jansen@example.com\"}]}";
    struct sw_chat_request chat;
    struct sw_request_error err;
    assert_int_equal(sw_request_parse(body, sizeof body - 1, &chat, &err), SW_OK);
    struct sw_facts_hdrs fh;
    assert_int_equal(sw_facts_headers(NULL, 0, 30000, &fh, &err), SW_OK);
    static const enum sw_pii_policy policies[] = {SW_PII_POLICY_OFF, SW_PII_POLICY_MASK,
                                                  SW_PII_POLICY_LOCAL_ONLY, SW_PII_POLICY_BLOCK};
    for (size_t i = 0; i < 4; i++) {
        struct sw_config cfg = base_config();
        cfg.pii.policy = policies[i];
        struct sw_config_model model = plain_model();
        const struct sw_facts_in in = {SW_API_CHAT, &cfg, NULL, &model, &chat, &fh, 0};
        struct sw_facts facts;
        int rc = sw_facts_derive(&in, &scanner, &facts, &err);
        assert_int_equal(rc, policies[i] == SW_PII_POLICY_BLOCK ? SW_EINVAL : SW_OK);
        assert_int_equal(facts.pii.counts.n[SW_PII_EMAIL], policies[i] != SW_PII_POLICY_OFF);
        if (rc == SW_OK)
            assert_int_equal(facts.route.sensitive, policies[i] == SW_PII_POLICY_LOCAL_ONLY);
        else
            assert_null(strstr(err.message, "jansen"));     /* the type, never the value */
    }
    sw_request_free(&chat);
    sw_pii_engine_free(e);
}

/* ---- The three steps apart ---- */

/* sw_facts_begin, sw_facts_scan and sw_facts_finish run apart (as the front
 * runs them when a worker scans) give what sw_facts_derive gives, for every
 * policy, scan outcome and surface: begin never scans, finish never scans
 * and reads no headers, the scan reads only the API and the body. */
static void test_steps_apart(void **state)
{
    (void)state;
    static const char anth[] = "{\"model\":\"m\",\"max_tokens\":64,\"messages\":"
                               "[{\"role\":\"user\",\"content\":\"hi\"}]}";
    struct sw_chat_request chats[2];
    struct sw_request_error err;
    char *s = chat_body(NULL);
    assert_int_equal(sw_request_parse(s, strlen(s), &chats[0], &err), SW_OK);
    free(s);
    assert_int_equal(sw_anth_request_parse(anth, sizeof anth - 1, 1, &chats[1], &err), SW_OK);
    static const enum sw_pii_policy policies[] = {SW_PII_POLICY_OFF, SW_PII_POLICY_MASK,
                                                  SW_PII_POLICY_LOCAL_ONLY, SW_PII_POLICY_BLOCK};
    static const int built_rcs[] = {SW_OK, SW_ENOMEM};
    size_t runs = 0;
    for (size_t c = 0; c < 2; c++)
    for (size_t p = 0; p < 4; p++)
    for (int sc = 0; sc < N_SCAN; sc++)
    for (size_t b = 0; b < 2; b++) {
        struct sw_config cfg = base_config();
        cfg.pii.policy = policies[p];
        struct sw_config_model model = plain_model();
        struct sw_facts_hdrs fh;
        assert_int_equal(sw_facts_headers(NULL, 0, 30000, &fh, &err), SW_OK);
        enum sw_api api = c ? SW_API_MESSAGES : SW_API_CHAT;
        const struct sw_facts_in in = {api, &cfg, NULL, &model, &chats[c], &fh, 7};
        struct fake_scan base = {.body_kind = (enum scan_kind)sc, .built_rc = built_rcs[b]};
        base.built_counts.n[SW_PII_PHONE] = 4;
        base.built_counts.total = 4;

        struct fake_scan fs1 = base;
        struct sw_facts_scanner sc1 = scanner_of(&fs1);
        struct sw_facts whole;
        struct sw_request_error err1 = {0};
        int rc1 = sw_facts_derive(&in, &sc1, &whole, &err1);

        struct fake_scan fs2 = base;
        struct sw_facts_scanner sc2 = scanner_of(&fs2);
        struct sw_facts apart;
        struct sw_request_error err2 = {0};
        assert_int_equal(sw_facts_begin(&in, &apart, &err2), SW_OK);
        assert_int_equal(fs2.body_calls + fs2.built_calls, 0);
        assert_int_equal(sw_facts_needs_scan(&apart), policies[p] != SW_PII_POLICY_OFF);
        struct sw_facts_scan res;
        memset(&res, 0xa5, sizeof res);         /* finish must not read it when not scanned */
        if (sw_facts_needs_scan(&apart)) {
            /* Only the API and the body: anything else would crash here. */
            const struct sw_facts_in bare = {.api = api, .chat = &chats[c]};
            sw_facts_scan(&bare, &sc2, &res);
        }
        int calls = fs2.body_calls + fs2.built_calls;
        const struct sw_facts_in no_hdrs = {api, &cfg, NULL, &model, &chats[c], NULL, 7};
        int rc2 = sw_facts_finish(&no_hdrs, &sc2, &res, &apart, &err2);
        assert_int_equal(fs2.body_calls + fs2.built_calls, calls);
        assert_int_equal(fs1.body_calls, fs2.body_calls);
        assert_int_equal(fs1.built_calls, fs2.built_calls);

        assert_int_equal(rc1, rc2);
        assert_int_equal(whole.refused, apart.refused);
        assert_int_equal(whole.scan_failed, apart.scan_failed);
        assert_int_equal(whole.route.sensitive, apart.route.sensitive);
        assert_int_equal(whole.route.allows_cloud, apart.route.allows_cloud);
        assert_int_equal(whole.route.deadline_ms, apart.route.deadline_ms);
        assert_int_equal(whole.route.max_tokens, apart.route.max_tokens);
        assert_int_equal(whole.pii.policy, apart.pii.policy);
        assert_int_equal(whole.pii.binary_blocked, apart.pii.binary_blocked);
        assert_memory_equal(&whole.pii.counts, &apart.pii.counts, sizeof whole.pii.counts);
        assert_int_equal(whole.start_ms, apart.start_ms);
        if (rc1) {
            assert_string_equal(whole.bad, apart.bad);
            assert_string_equal(whole.types, apart.types);
            assert_int_equal(err1.status, err2.status);
            assert_string_equal(err1.code, err2.code);
            assert_string_equal(err1.param, err2.param);
            assert_string_equal(err1.message, err2.message);
        }
        runs++;
    }
    assert_int_equal(runs, 2 * 4 * N_SCAN * 2);
    /* The priority is refused by the first step, before any scan. */
    struct sw_config cfg = base_config();
    struct sw_config_model model = plain_model();
    struct hdrs h = {0};
    add(&h, "X-Spillway-Priority", "urgent");
    struct sw_facts_hdrs fh;
    assert_int_equal(sw_facts_headers(h.h, h.n, 30000, &fh, &err), SW_OK);
    const struct sw_facts_in in = {SW_API_CHAT, &cfg, NULL, &model, &chats[0], &fh, 0};
    struct sw_facts facts;
    assert_int_equal(sw_facts_begin(&in, &facts, &err), SW_EINVAL);
    assert_int_equal(facts.refused, SW_FACTS_REFUSED_PRIORITY);
    assert_string_equal(err.param, "X-Spillway-Priority");
    for (size_t c = 0; c < 2; c++)
        sw_request_free(&chats[c]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_combination),
        cmocka_unit_test(test_header_refusals),
        cmocka_unit_test(test_header_facts),
        cmocka_unit_test(test_priority),
        cmocka_unit_test(test_scan_refusals),
        cmocka_unit_test(test_translation_scan),
        cmocka_unit_test(test_responses_scan),
        cmocka_unit_test(test_embeddings),
        cmocka_unit_test(test_regions),
        cmocka_unit_test(test_real_engine),
        cmocka_unit_test(test_steps_apart),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
