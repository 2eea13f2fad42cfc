/* Unit tests of src/config: good files (the shipped examples among them) and a
 * table of bad ones, each with the full list of messages it must produce. The
 * environment is a fake (struct env) so results never depend on the host. */
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

/* ---- Fake environment ---- */

struct env {
    const char *const *pairs; /* name, value, name, value, ..., NULL */
};

static const char *fake_getenv(const char *name, void *ud)
{
    const struct env *e = ud;
    for (size_t i = 0; e && e->pairs[i]; i += 2)
        if (!strcmp(e->pairs[i], name))
            return e->pairs[i + 1];
    return NULL;
}

static const char *const default_pairs[] = {
    "APP_KEY", "sk-app-0123456789",
    "ADMIN_KEY", "sk-admin-0123456789",
    "INTERNAL_KEY", "sk-internal-0123456789",
    "OPENAI_API_KEY", "sk-openai-secret",
    "ANTHROPIC_API_KEY", "sk-ant-secret",
    "EMPTY", "",
    "SLOTS", "3",
    "TIER", "edge",
    "HOST", "10.0.0.7",
    NULL,
};
static struct env default_env = {default_pairs};

static int parse(const char *text, struct sw_config **cfg, struct sw_config_errors *errs)
{
    return sw_config_parse("t.yaml", text, strlen(text), fake_getenv, &default_env, cfg, errs);
}

static struct sw_config *parse_ok(const char *text)
{
    struct sw_config *cfg = NULL;
    struct sw_config_errors errs;
    int err = parse(text, &cfg, &errs);
    for (size_t i = 0; i < errs.n; i++)
        print_error("unexpected: %s\n", errs.msgs[i]);
    assert_int_equal(err, SW_OK);
    assert_int_equal(errs.n, 0);
    assert_non_null(cfg);
    sw_config_errors_free(&errs);
    return cfg;
}

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    static char buf[1 << 16];
    *len = fread(buf, 1, sizeof(buf) - 1, f);
    assert_true(feof(f));
    fclose(f);
    buf[*len] = '\0';
    return buf;
}

#define BACKENDS                                                                   \
    "backends:\n"                                                                  \
    "  - name: edge\n"                                                             \
    "    tier: local\n"                                                            \
    "    url: \"http://127.0.0.1:8081\"\n"                                         \
    "    model: m\n"
#define MODELS                                                                     \
    "models:\n"                                                                    \
    "  - name: chat\n"                                                             \
    "    backends: [edge]\n"

/* ---- Good files ---- */

static void test_defaults(void **state)
{
    (void)state;
    struct sw_config *cfg = parse_ok(BACKENDS
                                     "  - name: cloud\n"
                                     "    tier: cloud\n"
                                     "    url: https://api.example.com/\n"
                                     "    model: big\n" MODELS);
    assert_string_equal(cfg->path, "t.yaml");
    assert_int_equal(cfg->refcount, 1);
    assert_string_equal(cfg->listen_host, "127.0.0.1");
    assert_int_equal(cfg->listen_port, 8080);
    assert_false(cfg->auth_enabled);
    assert_int_equal(cfg->n_keys, 0);
    assert_null(cfg->keys);
    assert_null(cfg->admin_key);
    assert_int_equal(cfg->n_backends, 2);

    const struct sw_config_backend *b = &cfg->backends[0];
    assert_string_equal(b->name, "edge");
    assert_int_equal(b->tier, SW_TIER_LOCAL);
    assert_int_equal(b->dialect, SW_DIALECT_OPENAI);
    assert_null(b->api_key);
    assert_int_equal(b->slots, 1);
    assert_true(b->input_usd_per_mtok == 0 && b->output_usd_per_mtok == 0);
    assert_int_equal(b->connect_timeout_ms, 2000);
    assert_int_equal(b->max_context_tokens, 0);
    assert_true(b->supports_tools);
    assert_false(b->supports_images);
    assert_true(b->tls_verify);
    assert_null(b->ca_file);
    assert_int_equal(b->rpm, 0);
    assert_int_equal(b->tpm, 0);
    assert_int_equal(b->queue_max, 64);
    assert_string_equal(b->health_path, "/health");
    assert_int_equal(b->keep_warm_ms, 0);

    b = &cfg->backends[1];
    assert_int_equal(b->tier, SW_TIER_CLOUD);
    assert_string_equal(b->url, "https://api.example.com");
    assert_int_equal(b->slots, 0);
    assert_true(b->supports_images);
    assert_null(b->health_path);

    assert_int_equal(cfg->n_models, 1);
    assert_string_equal(cfg->models[0].name, "chat");
    assert_int_equal(cfg->models[0].n_backends, 1);
    assert_int_equal(cfg->models[0].backends[0], 0);
    assert_int_equal(cfg->models[0].ttft_budget_ms, 0);

    assert_int_equal(cfg->routing.ttft_budget_ms, 800);
    assert_int_equal(cfg->routing.request_timeout_ms, 30000);
    assert_int_equal(cfg->routing.default_max_tokens, 256);
    assert_int_equal(cfg->routing.health_interval_ms, 2000);
    assert_float_equal(cfg->routing.overdue_factor, 4, 0);
    assert_int_equal(cfg->routing.overdue_floor_ms, 5000);
    assert_false(cfg->routing.emergency);
    assert_int_equal(cfg->routing.latency.window_ms, 30000);
    assert_int_equal(cfg->routing.latency.degrade_ms, 200);
    assert_int_equal(cfg->routing.latency.recover_ms, 150);
    assert_int_equal(cfg->routing.latency.dwell_ms, 10000);
    assert_int_equal(cfg->routing.breaker.failures, 5);
    assert_int_equal(cfg->routing.breaker.window_ms, 60000);
    assert_int_equal(cfg->routing.breaker.cooldown_ms, 30000);
    assert_true(cfg->routing.spend.cap_usd == 0);
    assert_int_equal(cfg->routing.spend.window, SW_SPEND_HOUR);
    assert_int_equal(cfg->routing.spend.on_cap, SW_ON_CAP_SHED);
    assert_null(cfg->routing.spend.degrade_to);
    assert_int_equal(cfg->routing.spend.degrade_backend, -1);
    assert_int_equal(cfg->routing.spend.shed_retry_after_s, 60);
    assert_int_equal(cfg->pii.policy, SW_PII_POLICY_LOCAL_ONLY);
    assert_int_equal(cfg->pii.n_custom, 0);
    assert_int_equal(cfg->models[0].pii, SW_PII_POLICY_INHERIT);
    assert_int_equal(cfg->limits.max_body_bytes, 4194304);
    assert_int_equal(cfg->limits.max_header_bytes, 16384);
    assert_int_equal(cfg->limits.max_connections, 1024);
    assert_int_equal(cfg->limits.client_timeout_ms, 15000);
    assert_int_equal(cfg->limits.max_response_bytes, 16777216);
    assert_int_equal(cfg->limits.drain_timeout_ms, 15000);
    sw_config_unref(cfg);
}

/* The issue's full example, every key set to a non-default value. */
static const char full_yaml[] =
    "listen: \"0.0.0.0:9090\"\n"
    "keys:\n"
    "  - name: app\n"
    "    key: \"${APP_KEY}\"\n"
    "    allow_cloud: true\n"
    "  - name: lab\n"
    "    key: \"${INTERNAL_KEY}\"\n"
    "    allow_cloud: false\n"
    "admin:\n"
    "  key: \"${ADMIN_KEY}\"\n"
    "backends:\n"
    "  - name: edge\n"
    "    tier: local\n"
    "    url: \"http://127.0.0.1:8081\"\n"
    "    dialect: openai\n"
    "    model: \"llama-3.1-8b-instruct\"\n"
    "    slots: 4\n"
    "    connect_timeout_ms: 250\n"
    "    max_context_tokens: 8192\n"
    "    supports_tools: false\n"
    "    supports_images: true\n"
    "    tls_verify: false\n"
    "    ca_file: \"/path/ca.pem\"\n"
    "  - name: cloud\n"
    "    tier: cloud\n"
    "    url: \"https://api.openai.com/v1/\"\n"
    "    dialect: anthropic\n"
    "    model: \"gpt-4o-mini\"\n"
    "    api_key: \"${OPENAI_API_KEY}\"\n"
    "    slots: 64\n"
    "    price: { input_usd_per_mtok: 0.15, output_usd_per_mtok: 0.60 }\n"
    "    supports_images: false\n"
    "models:\n"
    "  - name: \"chat\"\n"
    "    backends: [edge, cloud]\n"
    "    ttft_budget_ms: 500\n"
    "  - name: \"cloud-only\"\n"
    "    backends:\n"
    "      - cloud\n"
    "routing:\n"
    "  ttft_budget_ms: 900\n"
    "  request_timeout_ms: 45000\n"
    "limits:\n"
    "  max_body_bytes: 1048576\n"
    "  max_header_bytes: 8192\n"
    "  max_connections: 10\n"
    "  client_timeout_ms: 5000\n"
    "  max_response_bytes: 2097152\n"
    "  drain_timeout_ms: 0\n";

static void test_full(void **state)
{
    (void)state;
    struct sw_config *cfg = parse_ok(full_yaml);
    assert_string_equal(cfg->listen_host, "0.0.0.0");
    assert_int_equal(cfg->listen_port, 9090);
    assert_true(cfg->auth_enabled);
    assert_int_equal(cfg->n_keys, 2);
    assert_string_equal(cfg->keys[0].name, "app");
    assert_string_equal(cfg->keys[0].key, "sk-app-0123456789");
    assert_true(cfg->keys[0].allow_cloud);
    assert_string_equal(cfg->keys[1].name, "lab");
    assert_false(cfg->keys[1].allow_cloud);
    assert_string_equal(cfg->admin_key, "sk-admin-0123456789");

    const struct sw_config_backend *b = &cfg->backends[0];
    assert_string_equal(b->url, "http://127.0.0.1:8081");
    assert_string_equal(b->model, "llama-3.1-8b-instruct");
    assert_int_equal(b->slots, 4);
    assert_int_equal(b->connect_timeout_ms, 250);
    assert_int_equal(b->max_context_tokens, 8192);
    assert_false(b->supports_tools);
    assert_true(b->supports_images);
    assert_false(b->tls_verify);
    assert_string_equal(b->ca_file, "/path/ca.pem");

    b = &cfg->backends[1];
    assert_string_equal(b->url, "https://api.openai.com"); /* the /v1 is Spillway's to add */
    assert_true(b->url_v1_stripped);
    assert_int_equal(b->dialect, SW_DIALECT_ANTHROPIC);
    assert_string_equal(b->api_key, "sk-openai-secret");
    assert_int_equal(b->slots, 64);
    assert_float_equal(b->input_usd_per_mtok, 0.15, 1e-12);
    assert_float_equal(b->output_usd_per_mtok, 0.60, 1e-12);
    assert_false(b->supports_images);

    assert_int_equal(cfg->n_models, 2);
    assert_int_equal(cfg->models[0].n_backends, 2);
    assert_int_equal(cfg->models[0].backends[0], 0);
    assert_int_equal(cfg->models[0].backends[1], 1);
    assert_int_equal(cfg->models[0].ttft_budget_ms, 500);
    assert_int_equal(cfg->models[1].n_backends, 1);
    assert_int_equal(cfg->models[1].backends[0], 1);

    assert_int_equal(cfg->routing.ttft_budget_ms, 900);
    assert_int_equal(cfg->routing.request_timeout_ms, 45000);
    assert_int_equal(cfg->limits.max_body_bytes, 1048576);
    assert_int_equal(cfg->limits.max_header_bytes, 8192);
    assert_int_equal(cfg->limits.max_connections, 10);
    assert_int_equal(cfg->limits.client_timeout_ms, 5000);
    assert_int_equal(cfg->limits.max_response_bytes, 2097152);
    assert_int_equal(cfg->limits.drain_timeout_ms, 0);
    sw_config_unref(cfg);
}

static void test_example_llamacpp(void **state)
{
    (void)state;
    size_t len;
    char *text = read_file("examples/llamacpp-openai.yaml", &len);
    struct sw_config *cfg = NULL;
    struct sw_config_errors errs;
    int err = sw_config_parse("examples/llamacpp-openai.yaml", text, len, fake_getenv,
                              &default_env, &cfg, &errs);
    for (size_t i = 0; i < errs.n; i++)
        print_error("%s\n", errs.msgs[i]);
    assert_int_equal(err, SW_OK);
    sw_config_errors_free(&errs);
    assert_true(cfg->auth_enabled);
    assert_int_equal(cfg->n_keys, 2);
    assert_false(cfg->keys[1].allow_cloud);
    assert_non_null(cfg->admin_key);
    assert_int_equal(cfg->n_backends, 2);
    assert_int_equal(cfg->backends[0].tier, SW_TIER_LOCAL);
    assert_string_equal(cfg->backends[0].url, "http://127.0.0.1:8081");
    assert_int_equal(cfg->backends[0].slots, 4);
    assert_int_equal(cfg->backends[0].max_context_tokens, 8192);
    assert_int_equal(cfg->backends[1].tier, SW_TIER_CLOUD);
    assert_string_equal(cfg->backends[1].model, "gpt-4o-mini");
    assert_string_equal(cfg->backends[1].api_key, "sk-openai-secret");
    assert_float_equal(cfg->backends[1].input_usd_per_mtok, 0.15, 1e-12);
    assert_float_equal(cfg->backends[1].output_usd_per_mtok, 0.60, 1e-12);
    assert_non_null(sw_config_find_model(cfg, "chat"));
    assert_int_equal(sw_config_find_model(cfg, "chat-fast")->ttft_budget_ms, 300);
    sw_config_unref(cfg);
}

static void test_example_ollama(void **state)
{
    (void)state;
    size_t len;
    char *text = read_file("examples/ollama.yaml", &len);
    struct sw_config *cfg = NULL;
    struct sw_config_errors errs;
    int err = sw_config_parse("examples/ollama.yaml", text, len, fake_getenv, &default_env,
                              &cfg, &errs);
    for (size_t i = 0; i < errs.n; i++)
        print_error("%s\n", errs.msgs[i]);
    assert_int_equal(err, SW_OK);
    sw_config_errors_free(&errs);
    assert_null(cfg->admin_key);
    assert_string_equal(cfg->backends[0].url, "http://127.0.0.1:11434");
    assert_string_equal(cfg->backends[0].model, "llama3.1:8b");
    assert_int_equal(cfg->backends[0].slots, 2);
    assert_int_equal(cfg->backends[1].dialect, SW_DIALECT_ANTHROPIC);
    assert_int_equal(cfg->backends[1].dialects, 1u << SW_DIALECT_ANTHROPIC);
    assert_string_equal(cfg->backends[1].anthropic_version, "2023-06-01");
    assert_int_equal(cfg->backends[0].dialects, 1u << SW_DIALECT_OPENAI);
    assert_string_equal(cfg->backends[1].api_key, "sk-ant-secret");
    assert_non_null(sw_config_find_model(cfg, "llama3.1:8b"));
    assert_int_equal(cfg->limits.max_connections, 256);
    assert_int_equal(cfg->limits.max_body_bytes, 4194304);
    sw_config_unref(cfg);
}

/* Both examples refuse to load when their secrets are not in the environment. */
static void test_example_needs_env(void **state)
{
    (void)state;
    size_t len;
    char *text = read_file("examples/ollama.yaml", &len);
    static const char *const pairs[] = {"APP_KEY", "a-key", NULL};
    struct env e = {pairs};
    struct sw_config *cfg = NULL;
    struct sw_config_errors errs;
    int err = sw_config_parse("ollama.yaml", text, len, fake_getenv, &e, &cfg, &errs);
    assert_int_equal(err, SW_EINVAL);
    assert_null(cfg);
    assert_int_equal(errs.n, 1);
    assert_non_null(strstr(errs.msgs[0],
                           "backends[1].api_key: environment variable ANTHROPIC_API_KEY is "
                           "not set"));
    sw_config_errors_free(&errs);
}

static void test_env_substitution(void **state)
{
    (void)state;
    struct sw_config *cfg = parse_ok("listen: \"${HOST}:${SLOTS}000\"\n"
                                     "backends:\n"
                                     "  - name: edge\n"
                                     "    tier: local\n"
                                     "    url: \"http://${HOST}:8081/p$${x}/$HOME/a$\"\n"
                                     "    model: \"m-${EMPTY}-$${EMPTY}\"\n"
                                     "    slots: ${SLOTS}\n"
                                     "    api_key: Bearer-${OPENAI_API_KEY}\n"
                                     "    ca_file: '${HOST}'\n" MODELS);
    assert_string_equal(cfg->listen_host, "10.0.0.7");
    assert_int_equal(cfg->listen_port, 3000);
    assert_string_equal(cfg->backends[0].url, "http://10.0.0.7:8081/p${x}/$HOME/a$");
    assert_string_equal(cfg->backends[0].model, "m--${EMPTY}");
    assert_int_equal(cfg->backends[0].slots, 3);
    assert_string_equal(cfg->backends[0].api_key, "Bearer-sk-openai-secret");
    assert_string_equal(cfg->backends[0].ca_file, "10.0.0.7");
    sw_config_unref(cfg);
}

static void test_listen_forms(void **state)
{
    (void)state;
    static const struct {
        const char *listen, *host;
        int port;
    } cases[] = {
        {"\"[::1]:0\"", "::1", 0},
        {"localhost:65535", "localhost", 65535},
        {"'0.0.0.0:80'", "0.0.0.0", 80},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char text[512];
        snprintf(text, sizeof(text), "listen: %s\n" BACKENDS MODELS, cases[i].listen);
        struct sw_config *cfg = parse_ok(text);
        assert_string_equal(cfg->listen_host, cases[i].host);
        assert_int_equal(cfg->listen_port, cases[i].port);
        sw_config_unref(cfg);
    }
}

/* listen_hosts: as given (lower case, ports kept, "*" for any); unset with
 * no keys, the loopback names and the listen host; unset with keys, none. */
static void test_listen_hosts(void **state)
{
    (void)state;
    struct sw_config *cfg = parse_ok("listen: \"10.1.2.3:8080\"\n" BACKENDS MODELS);
    assert_false(cfg->listen_hosts.set);
    assert_false(cfg->listen_hosts.any);
    assert_int_equal(cfg->listen_hosts.n, 4);
    static const char *const want[] = {"localhost", "127.0.0.1", "::1", "10.1.2.3"};
    for (size_t i = 0; i < 4; i++) {
        assert_string_equal(cfg->listen_hosts.host[i], want[i]);
        assert_int_equal(cfg->listen_hosts.port[i], -1);
    }
    sw_config_unref(cfg);

    cfg = parse_ok("listen: \"0.0.0.0:8080\"\n" BACKENDS MODELS);
    assert_int_equal(cfg->listen_hosts.n, 3); /* the any-address names no host */
    sw_config_unref(cfg);

    cfg = parse_ok("keys:\n  - { name: a, key: sk-a-123456 }\n" BACKENDS MODELS);
    assert_int_equal(cfg->listen_hosts.n, 0);
    sw_config_unref(cfg);

    cfg = parse_ok("listen_hosts: [Gateway.Internal, \"api.example:8443\", \"[::1]:9000\", \"*\"]\n"
                   BACKENDS MODELS);
    assert_true(cfg->listen_hosts.set);
    assert_true(cfg->listen_hosts.any);
    assert_int_equal(cfg->listen_hosts.n, 3);
    assert_string_equal(cfg->listen_hosts.host[0], "gateway.internal");
    assert_int_equal(cfg->listen_hosts.port[0], -1);
    assert_string_equal(cfg->listen_hosts.host[1], "api.example");
    assert_int_equal(cfg->listen_hosts.port[1], 8443);
    assert_string_equal(cfg->listen_hosts.host[2], "::1");
    assert_int_equal(cfg->listen_hosts.port[2], 9000);
    sw_config_unref(cfg);

    static const char *const bad[] = {
        "listen_hosts: localhost\n",
        "listen_hosts: [\"::1\"]\n",
        "listen_hosts: [\"a.example:0\"]\n",
        "listen_hosts: [\"a.example:x\"]\n",
        "listen_hosts: [\"[::1\"]\n",
        "listen_hosts: [\"a b\"]\n",
        "listen_hosts: [\"a/b\"]\n",
        "listen_hosts: [\":80\"]\n",
        "listen_hosts: []\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char text[512];
        snprintf(text, sizeof text, "%s" BACKENDS MODELS, bad[i]);
        struct sw_config_errors errs;
        cfg = NULL;
        assert_int_equal(parse(text, &cfg, &errs), SW_EINVAL);
        assert_null(cfg);
        assert_int_equal(errs.n, 1);
        assert_non_null(strstr(errs.msgs[0], "listen_hosts"));
        sw_config_errors_free(&errs);
    }
}

static void test_refcount(void **state)
{
    (void)state;
    struct sw_config *cfg = parse_ok(full_yaml);
    assert_ptr_equal(sw_config_ref(cfg), cfg);
    assert_int_equal(cfg->refcount, 2);
    sw_config_unref(cfg);
    assert_int_equal(cfg->refcount, 1);
    assert_string_equal(cfg->models[0].name, "chat"); /* still alive */
    sw_config_unref(cfg);                               /* freed: valgrind/ASan check */
    assert_null(sw_config_ref(NULL));
    sw_config_unref(NULL);
}

/* Residency: region labels, "local" for local backends, and the three
 * sensitive_regions lists as given. */
static void test_regions(void **state)
{
    (void)state;
    struct sw_config *cfg = parse_ok(
        "keys:\n"
        "  - { name: a, key: sk-a, sensitive_regions: [eu-west] }\n"
        "  - { name: b, key: sk-b }\n"
        "backends:\n"
        "  - { name: edge, tier: local, url: \"http://127.0.0.1:8081\", model: m }\n"
        "  - { name: eu, tier: cloud, url: \"http://127.0.0.1:8082\", model: m, region: eu-west }\n"
        "  - { name: us, tier: cloud, url: \"http://127.0.0.1:8083\", model: m, region: us-east }\n"
        "  - { name: any, tier: cloud, url: \"http://127.0.0.1:8084\", model: m }\n"
        "models:\n"
        "  - { name: chat, backends: [edge, eu, us, any], sensitive_regions: [] }\n"
        "pii:\n"
        "  sensitive_regions: [us-east, eu-west]\n");
    assert_string_equal(cfg->backends[0].region, "local");
    assert_string_equal(cfg->backends[1].region, "eu-west");
    assert_string_equal(cfg->backends[2].region, "us-east");
    assert_null(cfg->backends[3].region);
    assert_true(cfg->pii.sensitive_regions.set);
    assert_int_equal(cfg->pii.sensitive_regions.n, 2);
    assert_true(sw_config_regions_has(&cfg->pii.sensitive_regions, "eu-west"));
    assert_false(sw_config_regions_has(&cfg->pii.sensitive_regions, "eu"));
    assert_true(cfg->keys[0].sensitive_regions.set);
    assert_int_equal(cfg->keys[0].sensitive_regions.n, 1);
    assert_false(cfg->keys[1].sensitive_regions.set);
    assert_true(cfg->models[0].sensitive_regions.set);      /* set, and empty */
    assert_int_equal(cfg->models[0].sensitive_regions.n, 0);
    sw_config_unref(cfg);
}

static void test_find(void **state)
{
    (void)state;
    struct sw_config *cfg = parse_ok(full_yaml);
    assert_ptr_equal(sw_config_find_model(cfg, "chat"), &cfg->models[0]);
    assert_ptr_equal(sw_config_find_model(cfg, "cloud-only"), &cfg->models[1]);
    assert_null(sw_config_find_model(cfg, "cha"));
    assert_null(sw_config_find_model(cfg, "chat "));
    assert_null(sw_config_find_model(cfg, NULL));
    assert_null(sw_config_find_model(NULL, "chat"));

    assert_ptr_equal(sw_config_find_key(cfg, "sk-app-0123456789"), &cfg->keys[0]);
    assert_ptr_equal(sw_config_find_key(cfg, "sk-internal-0123456789"), &cfg->keys[1]);
    assert_null(sw_config_find_key(cfg, "sk-app-012345678"));   /* prefix */
    assert_null(sw_config_find_key(cfg, "sk-app-01234567890")); /* longer */
    assert_null(sw_config_find_key(cfg, "sk-app-0123456780"));  /* last byte */
    assert_null(sw_config_find_key(cfg, "Sk-app-0123456789"));  /* first byte */
    assert_null(sw_config_find_key(cfg, ""));
    assert_null(sw_config_find_key(cfg, "sk-admin-0123456789")); /* admin is not a client key */
    assert_null(sw_config_find_key(cfg, NULL));
    assert_null(sw_config_find_key(NULL, "x"));
    sw_config_unref(cfg);

    cfg = parse_ok(BACKENDS MODELS); /* no keys: auth disabled, nothing matches */
    assert_null(sw_config_find_key(cfg, "sk-app-0123456789"));
    sw_config_unref(cfg);
}

static void test_names(void **state)
{
    (void)state;
    assert_string_equal(sw_tier_name(SW_TIER_LOCAL), "local");
    assert_string_equal(sw_tier_name(SW_TIER_CLOUD), "cloud");
    assert_string_equal(sw_dialect_name(SW_DIALECT_OPENAI), "openai");
    assert_string_equal(sw_dialect_name(SW_DIALECT_ANTHROPIC), "anthropic");
}

static void test_load_file(void **state)
{
    (void)state;
    struct sw_config *cfg = NULL;
    struct sw_config_errors errs;
    int err = sw_config_load_file("tests/unit/config/good.yaml", &cfg, &errs);
    assert_int_equal(err, SW_OK);
    assert_int_equal(errs.n, 0);
    assert_string_equal(cfg->path, "tests/unit/config/good.yaml");
    assert_string_equal(cfg->listen_host, "::1");
    assert_int_equal(cfg->listen_port, 0);
    assert_string_equal(cfg->backends[0].url, "http://127.0.0.1:8081");
    sw_config_errors_free(&errs);
    sw_config_unref(cfg);

    err = sw_config_load_file("tests/unit/config/bad.yaml", &cfg, &errs);
    assert_int_equal(err, SW_EINVAL);
    assert_null(cfg);
    assert_int_equal(errs.n, 3);
    assert_string_equal(errs.msgs[0],
                        "tests/unit/config/bad.yaml:1:9: listen: \"127.0.0.1\" has no port; "
                        "expected \"host:port\" with port 0..65535, e.g. \"127.0.0.1:8080\", "
                        "\"0.0.0.0:8080\", \"[::1]:8080\"");
    assert_string_equal(errs.msgs[1],
                        "tests/unit/config/bad.yaml:4:11: backends[0].tier: \"edge\" is not one "
                        "of local, cloud");
    assert_string_equal(errs.msgs[2],
                        "tests/unit/config/bad.yaml:9:22: models[0].backends[1]: unknown "
                        "backend \"clod\" (defined: edge)");
    sw_config_errors_free(&errs);

    err = sw_config_load_file("tests/unit/config/does-not-exist.yaml", &cfg, &errs);
    assert_int_equal(err, SW_EIO);
    assert_null(cfg);
    assert_int_equal(errs.n, 1);
    assert_string_equal(errs.msgs[0], "tests/unit/config/does-not-exist.yaml: cannot read: "
                                      "No such file or directory; check the path and that "
                                      "the user Spillway runs as may read it");
    sw_config_errors_free(&errs);

    err = sw_config_load_file("tests/unit/config", &cfg, &errs); /* a directory */
    assert_int_not_equal(err, SW_OK);
    assert_null(cfg);
    assert_int_equal(errs.n, 1);
    assert_non_null(strstr(errs.msgs[0], "tests/unit/config: cannot read: "));
    sw_config_errors_free(&errs);
}

/* ---- Bad files: every message, in order ---- */

struct bad_case {
    const char *name;
    const char *yaml;
    const char *msgs[12]; /* NULL-terminated */
};

static const struct bad_case bad_cases[] = {
    {"load signal, priority and worst-case keys",
     BACKENDS "    load: { source: prom, poll_ms: 10 }\n"
     "  - { name: c, tier: cloud, url: \"https://x.example\", model: m, load: { source: vllm }, max_output_tokens: 0 }\n"
     MODELS "keys:\n  - { name: a, key: \"k1\", priority: urgent }\nrouting:\n  batch_ttft_budget_ms: -1\n",
     {"t.yaml:6:21: backends[0].load.source: \"prom\" is not one of none, llamacpp, vllm, sglang, tgi, ollama",
      "t.yaml:6:36: backends[0].load.poll_ms: \"10\" is out of range (50..60000)",
      "t.yaml:7:71: backends[1].load: load signals are read from local inference servers only (omit it for a cloud backend)",
      "t.yaml:7:108: backends[1].max_output_tokens: \"0\" is out of range (1..10000000)",
      "t.yaml:12:37: keys[0].priority: \"urgent\" is not one of interactive, batch",
      "t.yaml:14:25: routing.batch_ttft_budget_ms: \"-1\" is out of range (0..3600000)"}},
    {"overdue slot keys", BACKENDS MODELS "routing:\n  overdue_factor: -1\n  overdue_floor_ms: 3600001\n",
     {"t.yaml:10:19: routing.overdue_factor: \"-1\" is out of range (0..1000)",
      "t.yaml:11:21: routing.overdue_floor_ms: \"3600001\" is out of range (0..3600000)"}},
    {"pii validator unknown", BACKENDS MODELS "pii:\n  custom:\n    - { name: emp, regex: \"E[0-9]+\", validator: crc }\n",
     {"t.yaml:11:49: pii.custom[0].validator: \"crc\" is not one of luhn, mod97, elfproef"}},
    {"pii phone region unknown", BACKENDS MODELS "pii:\n  phone_regions: [NL, XX, de]\n",
     {"t.yaml:10:23: pii.phone_regions[1]: \"XX\" is not a region code (two upper-case letters, ISO 3166, e.g. NL, DE, GB, US)",
      "t.yaml:10:27: pii.phone_regions[2]: \"de\" is not a region code (two upper-case letters, ISO 3166, e.g. NL, DE, GB, US)"}},
    {"pii allow domain not a host name", BACKENDS MODELS "pii:\n  allow: { values: [ok@x.example], domains: [localhost] }\n",
     {"t.yaml:10:46: pii.allow.domains[0]: \"localhost\" is not a domain such as example.com"}},
    {"pii phone regions not a list", BACKENDS MODELS "pii:\n  phone_regions: NL\n",
     {"t.yaml:10:18: pii.phone_regions: expected a list of region codes, e.g. [NL, DE, GB, US], got \"NL\""}},
    {"pii policy unknown", BACKENDS MODELS "pii:\n  policy: maybe\n",
     {"t.yaml:10:11: pii.policy: \"maybe\" is not one of inherit, off, mask, local_only, block"}},
    {"latency hysteresis inverted", BACKENDS MODELS "routing:\n  latency: { degrade_ms: 100, recover_ms: 120 }\n",
     {"t.yaml:10:43: routing.latency.recover_ms: 120 must be below degrade_ms (100): the gap is the hysteresis"}},
    {"degrade_to unknown", BACKENDS MODELS "routing:\n  spend: { on_cap: degrade, degrade_to: small }\n",
     {"t.yaml:10:41: routing.spend.degrade_to: unknown backend \"small\""}},
    {"degrade_to a cloud backend", BACKENDS "  - { name: c, tier: cloud, url: \"http://x\", model: m }\n" MODELS
     "routing:\n  spend: { on_cap: degrade, degrade_to: c }\n",
     {"t.yaml:11:41: routing.spend.degrade_to: backend \"c\" is not local; degrade_to names a smaller local model"}},
    {"degrade without degrade_to", BACKENDS MODELS "routing:\n  spend: { cap_usd: 5, on_cap: degrade }\n",
     {"t.yaml:10:32: routing.spend.on_cap: degrade needs degrade_to: the local backend to degrade to"}},
    {"empty file", "", {"t.yaml:1:1: the file is empty; expected a mapping with at least backends and models"}},
    {"only comments", "# nothing\n\n", {"t.yaml:1:1: the file is empty; expected a mapping with at least backends and models"}},
    {"top level list", "- a\n- b\n", 
     {"t.yaml:1:1: the top level must be a mapping (listen, keys, admin, backends, routing, models, limits), got a list"}},
    {"top level scalar", "hello\n", 
     {"t.yaml:1:1: the top level must be a mapping (listen, keys, admin, backends, routing, models, limits), got \"hello\""}},
    {"syntax: bad indent", "listen: x\n backends: y\n", 
     {"t.yaml:2:10: syntax error: mapping values are not allowed in this context"}},
    {"syntax: unclosed flow", "backends: [edge\nmodels: x\n", 
     {"t.yaml:2:7: syntax error: did not find expected ',' or ']' (while parsing a flow sequence at line 1, column 11)"}},
    {"syntax: tab", "listen: x\n\tbackends: y\n", 
     {"t.yaml:2:1: syntax error: found a tab character that violates indentation (while scanning a plain scalar at line 1, column 9)"}},
    {"second document", BACKENDS MODELS "---\nlisten: x\n", 
     {"t.yaml:10:1: a second YAML document; the config is one document"}},
    {"missing sections", "listen: \"1.2.3.4:80\"\n", 
     {"t.yaml:1:1: backends: required key is missing (a list of backends, each with name, tier, url and model)",
      "t.yaml:1:1: models: required key is missing (a list of models, each with name and backends)"}},
    {"unknown keys", "lisen: x\n" BACKENDS "    slot: 4\n    foo: 1\n" MODELS "extra: {}\n", 
     {"t.yaml:1:1: lisen: unknown key; did you mean \"listen\"? (allowed: listen, listen_hosts, keys, teams, admin, backends, routing, models, limits, pii, state, responses, translation, decision_log, access_log, telemetry, plan)",
      "t.yaml:7:5: backends[0].slot: unknown key; did you mean \"slots\"? (allowed: name, tier, url, dialect, dialects, anthropic_version, model, api_key, slots, price, connect_timeout_ms, max_context_tokens, supports_tools, supports_images, tls_verify, ca_file, rpm, tpm, queue_max, health_path, keep_warm_ms, region, load, azure, aws, gemini, vertex, max_output_tokens, prefill_ms_per_token, decode_tokens_per_s, prefill_tps, prefill_warmup)",
      "t.yaml:8:5: backends[0].foo: unknown key (allowed: name, tier, url, dialect, dialects, anthropic_version, model, api_key, slots, price, connect_timeout_ms, max_context_tokens, supports_tools, supports_images, tls_verify, ca_file, rpm, tpm, queue_max, health_path, keep_warm_ms, region, load, azure, aws, gemini, vertex, max_output_tokens, prefill_ms_per_token, decode_tokens_per_s, prefill_tps, prefill_warmup)",
      "t.yaml:12:1: extra: unknown key (allowed: listen, listen_hosts, keys, teams, admin, backends, routing, models, limits, pii, state, responses, translation, decision_log, access_log, telemetry, plan)"}},
    {"regions", "keys:\n  - { name: a, key: sk-a, sensitive_regions: [eu-wst] }\n"
     "backends:\n"
     "  - { name: edge, tier: local, url: \"http://h:1\", model: m, region: eu-west }\n"
     "  - { name: c1, tier: cloud, url: \"http://h:2\", model: m, region: EU_West }\n"
     "  - { name: c2, tier: cloud, url: \"http://h:3\", model: m, region: local }\n"
     "  - { name: c3, tier: cloud, url: \"http://h:4\", model: m, region: eu-west }\n"
     "models:\n  - { name: chat, backends: [edge, c3], sensitive_regions: eu-west }\n"
     "pii:\n  sensitive_regions: [eu-west, eu-west, local, us-east]\n",
     {"t.yaml:2:47: keys[0].sensitive_regions[0]: \"eu-wst\" is no cloud backend's region (cloud regions: eu-west)",
      "t.yaml:4:69: backends[0].region: \"eu-west\": a local backend's region is always \"local\" (omit it)",
      "t.yaml:5:67: backends[1].region: \"EU_West\" is not a region label: 1-32 of a-z 0-9 -, e.g. \"eu-west\"",
      "t.yaml:6:67: backends[2].region: \"local\" is the region of local backends; name the cloud's region, e.g. \"eu-west\"",
      "t.yaml:9:60: models[0].sensitive_regions: expected a list of cloud region labels such as [eu-west], got \"eu-west\"",
      "t.yaml:11:32: pii.sensitive_regions[1]: \"eu-west\" is listed twice",
      "t.yaml:11:41: pii.sensitive_regions[2]: \"local\" is the region of local backends, which sensitive requests may always use; list cloud regions only",
      "t.yaml:11:48: pii.sensitive_regions[3]: \"us-east\" is no cloud backend's region (cloud regions: eu-west)"}},
    {"duplicate key", BACKENDS "    model: n\n" MODELS, 
     {"t.yaml:6:5: backends[0].model: duplicate key (first at line 5)"}},
    {"wrong types", "listen: [a]\nrouting: 5\nlimits: [1]\nkeys: {a: 1}\nbackends: x\nmodels: {}\n", 
     {"t.yaml:1:9: listen: expected \"host:port\", got a list",
      "t.yaml:2:10: routing: expected a mapping, got \"5\"",
      "t.yaml:3:9: limits: expected a mapping, got a list",
      "t.yaml:4:7: keys: expected a list, got a mapping",
      "t.yaml:5:11: backends: expected a list, got \"x\"",
      "t.yaml:6:9: models: expected a list, got a mapping"}},
    {"null values", "admin:\nbackends:\n  - name: edge\n    tier: ~\n    url: null\n    model:\n" MODELS, 
     {"t.yaml:1:7: admin: expected a mapping, got nothing (null)",
      "t.yaml:4:11: backends[0].tier: expected one of local, cloud, got nothing (null)",
      "t.yaml:5:10: backends[0].url: expected an http:// or https:// URL, got nothing (null)",
      "t.yaml:6:11: backends[0].model: expected a string, got nothing (null)"}},
    {"required in backend", "backends:\n  - dialect: openai\n" MODELS, 
     {"t.yaml:2:5: backends[0].name: required key is missing (1-64 characters from A-Z a-z 0-9 _ . -)",
      "t.yaml:2:5: backends[0].tier: required key is missing (local or cloud)",
      "t.yaml:2:5: backends[0].url: required key is missing (an http:// or https:// URL)",
      "t.yaml:2:5: backends[0].model: required key is missing (the model id the upstream expects)"}},
    {"integers", BACKENDS "    slots: four\n    connect_timeout_ms: 0\n    max_context_tokens: 99999999999999999999\n" MODELS "limits:\n  max_body_bytes: 1.5\n  drain_timeout_ms: -1\n  max_connections: \"\"\n", 
     {"t.yaml:6:12: backends[0].slots: expected an integer 0..1024, got \"four\"",
      "t.yaml:7:25: backends[0].connect_timeout_ms: \"0\" is out of range (1..600000)",
      "t.yaml:8:25: backends[0].max_context_tokens: \"99999999999999999999\" is out of range (0..100000000)",
      "t.yaml:13:19: limits.max_body_bytes: expected an integer 1024..1073741824, got \"1.5\"",
      "t.yaml:14:21: limits.drain_timeout_ms: \"-1\" is out of range (0..3600000)",
      "t.yaml:15:20: limits.max_connections: expected an integer 1..1000000, got \"\""}},
    {"local slots 0", BACKENDS "    slots: 0\n" MODELS, 
     {"t.yaml:6:12: backends[0].slots: a local backend needs at least 1 slot (1..1024: the requests the server runs at once, e.g. llama-server --parallel)"}},
    {"bools", BACKENDS "    supports_tools: yes\n    tls_verify: 1\n" MODELS, 
     {"t.yaml:6:21: backends[0].supports_tools: expected true or false, got \"yes\" (yes/no/on/off are not booleans here; write true or false)",
      "t.yaml:7:17: backends[0].tls_verify: expected true or false, got \"1\""}},
    {"enums", BACKENDS "    dialect: OpenAI\n  - name: c\n    tier: \"${TIER}\"\n    url: https://x\n    model: m\n" MODELS, 
     {"t.yaml:6:14: backends[0].dialect: \"OpenAI\" is not one of openai, anthropic, responses, azure, bedrock, gemini, vertex, vertex_anthropic; "
      "llama.cpp, Ollama, vLLM and OpenAI speak openai; Anthropic's API speaks anthropic; "
      "OpenAI's Responses API (OpenAI, vLLM) is responses; Azure OpenAI is azure; AWS "
      "Bedrock's Converse API is bedrock; Google's Gemini API is gemini, Gemini on Vertex "
      "AI is vertex, Claude on Vertex AI is vertex_anthropic",
      "t.yaml:8:11: backends[1].tier: \"${TIER}\" (after substitution) is not one of local, cloud"}},
    {"dialects", BACKENDS "    dialects: [openai, claude, openai]\n  - {name: c, tier: cloud, url: \"https://x\", model: m, dialect: openai, dialects: [anthropic]}\n" MODELS,
     {"t.yaml:6:24: backends[0].dialects[1]: \"claude\" is not a dialect: openai, anthropic, responses, azure, bedrock, gemini, vertex or vertex_anthropic",
      "t.yaml:6:32: backends[0].dialects[2]: \"openai\" is listed twice",
      "t.yaml:7:83: backends[1].dialects: give either dialect or dialects, not both"}},
    {"prices", BACKENDS "    price: { input_usd_per_mtok: -0.1, output_usd_per_mtok: nan, cached: 1 }\n" MODELS, 
     {"t.yaml:6:34: backends[0].price.input_usd_per_mtok: \"-0.1\" is out of range (0..10000)",
      "t.yaml:6:61: backends[0].price.output_usd_per_mtok: expected a number 0..10000, got \"nan\"",
      "t.yaml:6:66: backends[0].price.cached: unknown key (allowed: input_usd_per_mtok, output_usd_per_mtok)"}},
    {"price not a map", BACKENDS "    price: 3\n" MODELS, 
     {"t.yaml:6:12: backends[0].price: expected a mapping, got \"3\""}},
    {"urls", "backends:\n"
             "  - {name: a, tier: local, model: m, url: \"127.0.0.1:8081\"}\n"
             "  - {name: b, tier: local, model: m, url: \"http://\"}\n"
             "  - {name: c, tier: local, model: m, url: \"http://:80\"}\n"
             "  - {name: d, tier: local, model: m, url: \"http://h:99999\"}\n"
             "  - {name: e, tier: local, model: m, url: \"http://u:p@h\"}\n"
             "  - {name: f, tier: local, model: m, url: \"http://h/?q=1\"}\n"
             "  - {name: g, tier: local, model: m, url: \"ftp://h\"}\n"
             "  - {name: h, tier: local, model: m, url: \"http://[::1\"}\n"
             "  - {name: i, tier: local, model: m, url: \"http://[::1]:8080/\"}\n"
             "  - {name: j, tier: local, model: m, url: \"http://h:\"}\n"
             "models: [{name: chat, backends: [i]}]\n", 
     {"t.yaml:2:43: backends[0].url: \"127.0.0.1:8081\" must start with http:// or https://, e.g. \"http://127.0.0.1:8081\"",
      "t.yaml:3:43: backends[1].url: \"http://\" has no host, e.g. \"http://127.0.0.1:8081\"",
      "t.yaml:4:43: backends[2].url: \"http://:80\" has no host, e.g. \"http://127.0.0.1:8081\"",
      "t.yaml:5:43: backends[3].url: \"http://h:99999\" has an invalid port (1..65535), e.g. \"http://127.0.0.1:8081\"",
      "t.yaml:6:43: backends[4].url: \"http://***@h\" must not contain credentials (user:pass@); use api_key, e.g. \"http://127.0.0.1:8081\"",
      "t.yaml:7:43: backends[5].url: \"http://h/?***\" must not contain a query or fragment (? or #), e.g. \"http://127.0.0.1:8081\"",
      "t.yaml:8:43: backends[6].url: \"ftp://h\" must start with http:// or https://, e.g. \"http://127.0.0.1:8081\"",
      "t.yaml:9:43: backends[7].url: \"http://[::1\" has an unterminated [IPv6] host, e.g. \"http://127.0.0.1:8081\"",
      "t.yaml:11:43: backends[9].url: \"http://h:\" has an invalid port (1..65535), e.g. \"http://127.0.0.1:8081\""}},
    /* A URL's credentials and query never appear in a message, with an
     * error in it or next to it. */
    {"url secrets", "backends:\n"
                    "  - {name: a, tier: cloudy, model: m, url: \"https://jan:hunter2pass@api.example.com/v1?key=SECRETKEY123\"}\n"
                    "  - {name: b, tier: cloud, model: m, url: \"https://jan:pa/ss@api.example.com/v1\", slots: many}\n"
                    "  - {name: c, tier: \"https://jan:hunter3@example.com/x#SECRETFRAG\", model: m, url: \"http://h\"}\n"
                    "models: [{name: chat, backends: [a]}]\n",
     {"t.yaml:2:21: backends[0].tier: \"cloudy\" is not one of local, cloud",
      "t.yaml:2:44: backends[0].url: \"https://***@api.example.com/v1?***\" must not contain a query or fragment (? or #), e.g. \"http://127.0.0.1:8081\"",
      "t.yaml:3:43: backends[1].url: \"https://***@api.example.com/v1\" has an invalid port (1..65535), e.g. \"http://127.0.0.1:8081\"",
      "t.yaml:3:90: backends[1].slots: expected an integer 0..1024, got \"many\"",
      "t.yaml:4:21: backends[2].tier: \"https://***@example.com/x#***\" is not one of local, cloud"}},
    {"listen", "listen: \":8080\"\n" BACKENDS MODELS, 
     {"t.yaml:1:9: listen: \":8080\" has no host (use 0.0.0.0 for every interface); expected \"host:port\" with port 0..65535, e.g. \"127.0.0.1:8080\", \"0.0.0.0:8080\", \"[::1]:8080\""}},
    {"listen port", "listen: \"h:65536\"\n" BACKENDS MODELS, 
     {"t.yaml:1:9: listen: \"h:65536\" has an invalid port; expected \"host:port\" with port 0..65535, e.g. \"127.0.0.1:8080\", \"0.0.0.0:8080\", \"[::1]:8080\""}},
    {"listen v6", "listen: \"::1:80\"\n" BACKENDS MODELS, 
     {"t.yaml:1:9: listen: \"::1:80\" has an IPv6 address without brackets; expected \"host:port\" with port 0..65535, e.g. \"127.0.0.1:8080\", \"0.0.0.0:8080\", \"[::1]:8080\""}},
    {"listen v6 unterminated", "listen: \"[::1:80\"\n" BACKENDS MODELS, 
     {"t.yaml:1:9: listen: \"[::1:80\" has an unterminated [IPv6] address; expected \"host:port\" with port 0..65535, e.g. \"127.0.0.1:8080\", \"0.0.0.0:8080\", \"[::1]:8080\""}},
    {"duplicate names", BACKENDS "  - name: edge\n    tier: cloud\n    url: https://x\n    model: m\n" MODELS "  - name: chat\n    backends: [edge]\n", 
     {"t.yaml:6:11: backends[1].name: duplicate name \"edge\" (also backends[0]); names must be unique",
      "t.yaml:13:11: models[1].name: duplicate name \"chat\" (also models[0]); names must be unique"}},
    {"bad names", "backends:\n  - name: \"my edge\"\n    tier: local\n    url: http://h\n    model: m\n" MODELS, 
     {"t.yaml:2:11: backends[0].name: \"my edge\" is not a valid name (1-64 characters from A-Z a-z 0-9 _ . -)"}},
    {"model refs", BACKENDS "  - name: cloud\n    tier: cloud\n    url: https://x\n    model: m\n"
                   "models:\n  - name: a\n    backends: [clod, edge, edge]\n"
                   "  - name: b\n    backends: []\n"
                   "  - name: c\n    backends: [cloud, edge]\n"
                   "  - name: d\n    backends: edge\n"
                   "  - name: e\n    backends: [[edge]]\n", 
     {"t.yaml:12:16: models[0].backends[0]: unknown backend \"clod\" (defined: edge, cloud)",
      "t.yaml:12:28: models[0].backends[2]: backend \"edge\" is listed twice",
      "t.yaml:14:15: models[1].backends: is empty; list at least one backend (defined: edge, cloud)",
      "t.yaml:16:23: models[2].backends[1]: local backend \"edge\" is listed after cloud backend \"cloud\"; list local backends first (local is always preferred), then cloud backends in priority order",
      "t.yaml:18:15: models[3].backends: expected a list of backend names (defined: edge, cloud), got \"edge\"",
      "t.yaml:20:16: models[4].backends[0]: expected a name (1-64 characters from A-Z a-z 0-9 _ . -), got a list"}},
    {"no backends", "backends: []\nmodels: []\n", 
     {"t.yaml:1:11: backends: is empty; a list of backends, each with name, tier, url and model",
      "t.yaml:2:9: models: is empty; a list of models, each with name and backends"}},
    {"keys", "keys:\n  - name: a\n    key: \"${APP_KEY}\"\n  - name: a\n    key: \"${APP_KEY}\"\n  - name: c\n    key: \"with space\"\n  - name: d\n    key: \"${EMPTY}\"\n  - name: e\n" "admin:\n  key: \"${APP_KEY}\"\n" BACKENDS MODELS, 
     {"t.yaml:4:11: keys[1].name: duplicate name \"a\" (also keys[0]); names must be unique",
      "t.yaml:5:10: keys[1].key: same secret as keys[0] (\"a\"); every key needs its own secret",
      "t.yaml:7:10: keys[2].key: contains whitespace or a control character (value not shown); a secret is sent as one HTTP header token",
      "t.yaml:9:10: keys[3].key: is empty (after substitution); expected a secret string",
      "t.yaml:10:5: keys[4].key: required key is missing (the bearer secret, usually \"${SOME_ENV_VAR}\")",
      "t.yaml:12:8: admin.key: same secret as keys[0] (\"a\"); the admin key must differ from every client key"}},
    {"empty keys", "keys: []\nadmin: {}\n" BACKENDS MODELS, 
     {"t.yaml:1:7: keys: is empty; omit keys to disable client auth, or list at least one key",
      "t.yaml:2:8: admin.key: required key is missing (the admin bearer secret; omit the whole admin section to disable the admin API)"}},
    {"key not a mapping", "keys: [abc]\n" BACKENDS MODELS, 
     {"t.yaml:1:8: keys[0]: expected a mapping (key: value lines), got \"abc\""}},
    {"env errors", BACKENDS "    api_key: \"${NOPE}\"\n    ca_file: \"${1X}\"\n    dialect: \"x${OPEN\"\n" MODELS, 
     {"t.yaml:6:14: backends[0].api_key: environment variable NOPE is not set; export it in the "
      "environment Spillway starts in (e.g. NOPE=... spillway -c FILE), or write the value in place of \"${NOPE}\"",
      "t.yaml:7:14: backends[0].ca_file: \"${1X}\" is not a valid variable reference (${NAME}: letters, digits and _, not starting with a digit; $${ for a literal \"${\")",
      "t.yaml:8:14: backends[0].dialect: unterminated \"${\" (write ${NAME}, or $${ for a literal \"${\")"}},
    {"env never shown", BACKENDS "    slots: \"${OPENAI_API_KEY}\"\n    tls_verify: \"${OPENAI_API_KEY}\"\n" MODELS, 
     {"t.yaml:6:12: backends[0].slots: expected an integer 0..1024, got \"${OPENAI_API_KEY}\" (after substitution)",
      "t.yaml:7:17: backends[0].tls_verify: expected true or false, got \"${OPENAI_API_KEY}\" (after substitution)"}},
    {"routing budget", BACKENDS MODELS "    ttft_budget_ms: 40000\nrouting:\n  ttft_budget_ms: 5000\n  request_timeout_ms: 5000\n", 
     {"t.yaml:9:21: models[0].ttft_budget_ms: 40000 must be less than routing.request_timeout_ms (5000)",
      "t.yaml:11:19: routing.ttft_budget_ms: 5000 must be less than routing.request_timeout_ms (5000)"}},
    {"complex key", "? [a]\n: 1\n" BACKENDS MODELS, 
     {"t.yaml:1:3: a key must be a plain string, not a list"}},
};

static void test_bad(void **state)
{
    (void)state;
    size_t failed = 0;
    for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
        const struct bad_case *c = &bad_cases[i];
        struct sw_config *cfg = (struct sw_config *)1;
        struct sw_config_errors errs;
        int err = parse(c->yaml, &cfg, &errs);
        size_t want = 0;
        while (c->msgs[want])
            want++;
        bool same = err == SW_EINVAL && cfg == NULL && errs.n == want;
        for (size_t j = 0; j < errs.n; j++)
            assert_null(strstr(errs.msgs[j], "sk-")); /* no secret from the env, ever */
        for (size_t j = 0; same && j < want; j++)
            same = !strcmp(errs.msgs[j], c->msgs[j]);
        if (!same) {
            print_error("case \"%s\": err=%d, got %zu messages, want %zu:\n", c->name, err,
                        errs.n, want);
            for (size_t j = 0; j < errs.n; j++)
                print_error("  got:  %s\n", errs.msgs[j]);
            for (size_t j = 0; j < want; j++)
                print_error("  want: %s\n", c->msgs[j]);
        }
        sw_config_errors_free(&errs);
        failed += !same;
    }
    assert_int_equal(failed, 0);
}

/* pii.phone_regions: unset means the engine's default; a list is kept in order. */
static void test_phone_regions(void **state)
{
    (void)state;
    struct sw_config *cfg = parse_ok(BACKENDS MODELS);
    assert_false(cfg->pii.phone_regions_set);
    sw_config_unref(cfg);
    cfg = parse_ok(BACKENDS MODELS "pii:\n  phone_regions: [NL, GB]\n");
    assert_true(cfg->pii.phone_regions_set);
    assert_int_equal(cfg->pii.n_phone_regions, 2);
    assert_string_equal(cfg->pii.phone_regions[0], "NL");
    assert_string_equal(cfg->pii.phone_regions[1], "GB");
    sw_config_unref(cfg);
    cfg = parse_ok(BACKENDS MODELS "pii:\n  phone_regions: []\n");
    assert_true(cfg->pii.phone_regions_set);
    assert_int_equal(cfg->pii.n_phone_regions, 0);
    sw_config_unref(cfg);
}

/* Messages are bounded: the first SW_WALK_MAX_ERRORS (100), then a count. */
static void test_too_many_errors(void **state)
{
    (void)state;
    static char text[8192];
    size_t used = (size_t)snprintf(text, sizeof(text), BACKENDS MODELS "limits:\n");
    for (int i = 0; i < 150; i++)
        used += (size_t)snprintf(text + used, sizeof(text) - used, "  k%d: 1\n", i);
    struct sw_config *cfg = NULL;
    struct sw_config_errors errs;
    assert_int_equal(parse(text, &cfg, &errs), SW_EINVAL);
    assert_null(cfg);
    assert_int_equal(errs.n, 101);
    assert_string_equal(errs.msgs[0], "t.yaml:10:3: limits.k0: unknown key (allowed: "
                                      "max_body_bytes, max_header_bytes, max_connections, "
                                      "client_timeout_ms, max_response_bytes, drain_timeout_ms, scan_threads, scan_cache_bytes, parse_cache_bytes)");
    assert_string_equal(errs.msgs[100], "t.yaml: 50 more errors not shown");
    sw_config_errors_free(&errs);
}

/* pii.binary_parts (allow | local, default local) and the keys' and models'
 * pii_binary_parts (default inherit); the global one has no inherit. */
static void test_pii_binary_parts(void **state)
{
    (void)state;
    struct sw_config *cfg = parse_ok(BACKENDS MODELS);
    assert_int_equal(cfg->pii.binary_parts, SW_PII_BINARY_LOCAL);
    assert_int_equal(cfg->models[0].pii_binary_parts, SW_PII_BINARY_INHERIT);
    sw_config_unref(cfg);

    cfg = parse_ok("keys:\n  - { name: a, key: k1, pii_binary_parts: local }\n"
                   "  - { name: b, key: k2 }\n" BACKENDS MODELS
                   "    pii_binary_parts: allow\npii:\n  binary_parts: allow\n");
    assert_int_equal(cfg->pii.binary_parts, SW_PII_BINARY_ALLOW);
    assert_int_equal(cfg->keys[0].pii_binary_parts, SW_PII_BINARY_LOCAL);
    assert_int_equal(cfg->keys[1].pii_binary_parts, SW_PII_BINARY_INHERIT);
    assert_int_equal(cfg->models[0].pii_binary_parts, SW_PII_BINARY_ALLOW);
    sw_config_unref(cfg);

    static const char *const bad[] = {
        BACKENDS MODELS "pii:\n  binary_parts: inherit\n",
        BACKENDS MODELS "pii:\n  binary_parts: yes\n",
        BACKENDS MODELS "    pii_binary_parts: sometimes\n",
    };
    static const char *const want[] = {
        "pii.binary_parts: must be allow or local",
        "pii.binary_parts:",
        "models[0].pii_binary_parts:",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        struct sw_config *c = (struct sw_config *)1;
        struct sw_config_errors errs;
        assert_int_equal(parse(bad[i], &c, &errs), SW_EINVAL);
        assert_null(c);
        assert_int_equal(errs.n, 1);
        if (!strstr(errs.msgs[0], want[i]))
            fail_msg("case %zu: %s", i, errs.msgs[0]);
        sw_config_errors_free(&errs);
    }
}

/* models[].contract: defaults pass/log, each value parsed, typos refused
 * with the path and what is allowed. */
static void test_contract_keys(void **state)
{
    (void)state;
    struct sw_config *cfg = parse_ok(BACKENDS MODELS);
    assert_int_equal(cfg->models[0].contract.on_violation, SW_CONTRACT_PASS);
    assert_int_equal(cfg->models[0].contract.stream, SW_CONTRACT_STREAM_LOG);
    sw_config_unref(cfg);
    cfg = parse_ok(BACKENDS MODELS "    contract: { on_violation: retry, stream: enforce }\n");
    assert_int_equal(cfg->models[0].contract.on_violation, SW_CONTRACT_RETRY);
    assert_int_equal(cfg->models[0].contract.stream, SW_CONTRACT_STREAM_ENFORCE);
    sw_config_unref(cfg);
    cfg = parse_ok(BACKENDS MODELS "    contract: { on_violation: reject }\n");
    assert_int_equal(cfg->models[0].contract.on_violation, SW_CONTRACT_REJECT);
    assert_int_equal(cfg->models[0].contract.stream, SW_CONTRACT_STREAM_LOG);
    sw_config_unref(cfg);

    static const char *const bad[] = {
        BACKENDS MODELS "    contract: { on_violation: retri }\n",
        BACKENDS MODELS "    contract: { stream: drop }\n",
        BACKENDS MODELS "    contract: { strem: log }\n",
        BACKENDS MODELS "    contract: reject\n",
    };
    static const char *const want[] = {
        "models[0].contract.on_violation: \"retri\" is not one of pass, retry, reject",
        "models[0].contract.stream: \"drop\" is not one of log, enforce",
        "models[0].contract.strem: unknown key; did you mean \"stream\"?",
        "models[0].contract:",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        struct sw_config *c = (struct sw_config *)1;
        struct sw_config_errors errs;
        assert_int_equal(parse(bad[i], &c, &errs), SW_EINVAL);
        assert_null(c);
        assert_int_equal(errs.n, 1);
        if (!strstr(errs.msgs[0], want[i]))
            fail_msg("case %zu: %s", i, errs.msgs[0]);
        sw_config_errors_free(&errs);
    }
}

/* translation.unsupported: reject by default, drop on the file or per
 * model (a model's own wins; inherit takes the file's). */
static void test_translation_keys(void **state)
{
    (void)state;
    struct sw_config *cfg = parse_ok(BACKENDS MODELS);
    assert_int_equal(cfg->translation_unsupported, SW_TRANSLATION_REJECT);
    assert_int_equal(cfg->models[0].translation_unsupported, SW_TRANSLATION_INHERIT);
    assert_int_equal(sw_config_translation(cfg, &cfg->models[0]), SW_TRANSLATION_REJECT);
    assert_int_equal(sw_config_translation(cfg, NULL), SW_TRANSLATION_REJECT);
    sw_config_unref(cfg);
    cfg = parse_ok("translation: { unsupported: drop }\n" BACKENDS MODELS);
    assert_int_equal(sw_config_translation(cfg, &cfg->models[0]), SW_TRANSLATION_DROP);
    sw_config_unref(cfg);
    cfg = parse_ok("translation: { unsupported: drop }\n" BACKENDS MODELS
                   "    translation: { unsupported: reject }\n");
    assert_int_equal(sw_config_translation(cfg, &cfg->models[0]), SW_TRANSLATION_REJECT);
    sw_config_unref(cfg);
    cfg = parse_ok(BACKENDS MODELS "    translation: { unsupported: drop }\n");
    assert_int_equal(sw_config_translation(cfg, &cfg->models[0]), SW_TRANSLATION_DROP);
    assert_int_equal(cfg->translation_unsupported, SW_TRANSLATION_REJECT);
    sw_config_unref(cfg);
    cfg = parse_ok("translation: { unsupported: drop }\n" BACKENDS MODELS
                   "    translation: { unsupported: inherit }\n");
    assert_int_equal(sw_config_translation(cfg, &cfg->models[0]), SW_TRANSLATION_DROP);
    sw_config_unref(cfg);

    static const char *const bad[] = {
        "translation: { unsupported: inherit }\n" BACKENDS MODELS,
        BACKENDS MODELS "    translation: { unsupported: ignore }\n",
        BACKENDS MODELS "    translation: drop\n",
        "translation: { unsuported: drop }\n" BACKENDS MODELS,
    };
    static const char *const want[] = {
        "translation.unsupported: \"inherit\" is not one of reject, drop",
        "models[0].translation.unsupported: \"ignore\" is not one of reject, drop, inherit",
        "models[0].translation:",
        "translation.unsuported: unknown key; did you mean \"unsupported\"?",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        struct sw_config *c = (struct sw_config *)1;
        struct sw_config_errors errs;
        assert_int_equal(parse(bad[i], &c, &errs), SW_EINVAL);
        assert_null(c);
        assert_int_equal(errs.n, 1);
        if (!strstr(errs.msgs[0], want[i]))
            fail_msg("case %zu: %s", i, errs.msgs[0]);
        sw_config_errors_free(&errs);
    }
}

/* Anchors and aliases are plain YAML: a shared price block. */
static void test_aliases(void **state)
{
    (void)state;
    struct sw_config *cfg = parse_ok(BACKENDS
                                     "    price: &p {input_usd_per_mtok: 1, output_usd_per_mtok: 2}\n"
                                     "  - {name: c, tier: cloud, url: \"https://x\", model: m, price: *p}\n"
                                     MODELS);
    assert_float_equal(cfg->backends[1].input_usd_per_mtok, 1, 0);
    assert_float_equal(cfg->backends[1].output_usd_per_mtok, 2, 0);
    sw_config_unref(cfg);
}

/* telemetry.otlp: off by default; defaults; the headers mapping (values
 * never shown); bounds. */
static void test_telemetry_keys(void **state)
{
    (void)state;
    struct sw_config *cfg = parse_ok(BACKENDS MODELS);
    assert_null(cfg->otlp.endpoint);
    sw_config_unref(cfg);
    cfg = parse_ok(BACKENDS MODELS "telemetry:\n  otlp: { endpoint: \"http://127.0.0.1:4318/\" }\n");
    assert_string_equal(cfg->otlp.endpoint, "http://127.0.0.1:4318");
    assert_int_equal(cfg->otlp.protocol, SW_OTLP_HTTP_JSON);
    assert_int_equal(cfg->otlp.timeout_ms, 5000);
    assert_true(cfg->otlp.sample_ratio == 1.0);
    assert_int_equal(cfg->otlp.batch_max_spans, 512);
    assert_int_equal(cfg->otlp.batch_interval_ms, 1000);
    assert_int_equal(cfg->otlp.queue_max, 4096);
    assert_string_equal(cfg->otlp.service_name, "spillway");
    assert_int_equal(cfg->otlp.n_headers, 0);
    sw_config_unref(cfg);
    cfg = parse_ok(BACKENDS MODELS
                   "telemetry:\n  otlp:\n    endpoint: \"https://otel.example:4318/v1/traces\"\n"
                   "    protocol: http/protobuf\n    sample_ratio: 0.25\n    timeout_ms: 700\n"
                   "    batch: { max_spans: 100, interval_ms: 50 }\n    queue_max: 300\n"
                   "    service_name: gw-eu\n    ca_file: /etc/ssl/ca.pem\n"
                   "    headers: { authorization: \"Bearer t0k\", x-scope: team-a }\n");
    assert_string_equal(cfg->otlp.endpoint, "https://otel.example:4318/v1/traces");
    assert_int_equal(cfg->otlp.protocol, SW_OTLP_HTTP_PROTOBUF);
    assert_true(cfg->otlp.sample_ratio == 0.25);
    assert_int_equal(cfg->otlp.timeout_ms, 700);
    assert_int_equal(cfg->otlp.batch_max_spans, 100);
    assert_int_equal(cfg->otlp.batch_interval_ms, 50);
    assert_int_equal(cfg->otlp.queue_max, 300);
    assert_string_equal(cfg->otlp.service_name, "gw-eu");
    assert_string_equal(cfg->otlp.ca_file, "/etc/ssl/ca.pem");
    assert_int_equal(cfg->otlp.n_headers, 2);
    assert_string_equal(cfg->otlp.header_name[0], "authorization");
    assert_string_equal(cfg->otlp.header_value[0], "Bearer t0k");
    assert_string_equal(cfg->otlp.header_name[1], "x-scope");
    sw_config_unref(cfg);

    static const char *const bad[] = {
        BACKENDS MODELS "telemetry:\n  otlp: { protocol: http/json }\n",          /* no endpoint */
        BACKENDS MODELS "telemetry:\n  otlp: { endpoint: \"grpc://h:4317\" }\n",
        BACKENDS MODELS "telemetry:\n  otlp: { endpoint: \"http://h:4318\", protocol: grpc }\n",
        BACKENDS MODELS "telemetry:\n  otlp: { endpoint: \"http://h:4318\", sample_ratio: 1.5 }\n",
        BACKENDS MODELS "telemetry:\n  otlp: { endpoint: \"http://h:4318\", queue_max: 0 }\n",
        BACKENDS MODELS "telemetry:\n  otlp: { endpoint: \"http://h:4318\", headers: [a] }\n",
        BACKENDS MODELS "telemetry:\n  otlp: { endpoint: \"http://h:4318\", headers: { \"bad name\": x } }\n",
        BACKENDS MODELS "telemetry:\n  otlp: { endpoint: \"http://h:4318\", batch: { max_spans: 0 } }\n",
        BACKENDS MODELS "telemetry:\n  otl: { endpoint: \"http://h:4318\" }\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct sw_config *c = NULL;
        struct sw_config_errors errs;
        if (parse(bad[i], &c, &errs) != SW_EINVAL)
            fail_msg("case %zu accepted", i);
        assert_null(c);
        sw_config_errors_free(&errs);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_full),
        cmocka_unit_test(test_example_llamacpp),
        cmocka_unit_test(test_example_ollama),
        cmocka_unit_test(test_example_needs_env),
        cmocka_unit_test(test_env_substitution),
        cmocka_unit_test(test_listen_forms),
        cmocka_unit_test(test_refcount),
        cmocka_unit_test(test_find),
        cmocka_unit_test(test_regions),
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_load_file),
        cmocka_unit_test(test_bad),
        cmocka_unit_test(test_phone_regions),
        cmocka_unit_test(test_too_many_errors),
        cmocka_unit_test(test_aliases),
        cmocka_unit_test(test_listen_hosts),
        cmocka_unit_test(test_pii_binary_parts),
        cmocka_unit_test(test_contract_keys),
        cmocka_unit_test(test_translation_keys),
        cmocka_unit_test(test_telemetry_keys),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
