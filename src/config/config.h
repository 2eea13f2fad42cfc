/* Spillway's configuration: one YAML file parsed (libyaml) and validated in
 * full into an immutable, reference-counted snapshot.
 *
 * Parsing collects every error as "file:line:col: key: what is wrong and what
 * is allowed" in one pass (HAProxy's "parsing [%s:%d]", h2o's configurator)
 * and returns SW_EINVAL if there was any. `${NAME}` in any scalar is replaced
 * by the environment variable NAME; an unset variable is an error at its
 * position. docs/configuration.md documents every key and its default.
 *
 * Ownership: a snapshot is created with refcount 1; whoever holds a pointer
 * across an event-loop turn takes a reference (sw_config_ref) and drops it
 * (sw_config_unref). All strings inside are owned by the snapshot. */
#ifndef SW_CONFIG_CONFIG_H
#define SW_CONFIG_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "config/aws.h"
#include "config/errors.h"

enum sw_tier { SW_TIER_LOCAL, SW_TIER_CLOUD };

/* What a request with PII may do, ordered from least to most restrictive so
 * that combining sources is a max(). INHERIT: take it from elsewhere. */
enum sw_pii_policy {
    SW_PII_POLICY_INHERIT,      /* keys/models: use pii.policy */
    SW_PII_POLICY_OFF,          /* no scanning */
    SW_PII_POLICY_MASK,         /* may go to the cloud, masked */
    SW_PII_POLICY_LOCAL_ONLY,   /* sensitive: stays local (emergency: masked cloud) */
    SW_PII_POLICY_BLOCK         /* rejected */
};

/* Residency: region labels are [a-z0-9-]{1,32}; "local" is every local
 * backend's region and no cloud's. */
#define SW_CONFIG_MAX_REGIONS 16
#define SW_CONFIG_REGION_MAX_LEN 32

/* A list of cloud regions (pii.sensitive_regions, per key, per model). */
struct sw_config_regions {
    bool set;                   /* the key was given (an empty list is set) */
    size_t n;
    char *names[SW_CONFIG_MAX_REGIONS];
    size_t line[SW_CONFIG_MAX_REGIONS], col[SW_CONFIG_MAX_REGIONS];  /* for messages: */
    size_t index[SW_CONFIG_MAX_REGIONS];                            /* where, as written */
};

/* Known-safe text (pii.allow, per key, per model): exact values and e-mail
 * domains that are never counted as personal data. A request's lists are
 * those of the file, its key and its model together. */
struct sw_config_pii_allow {
    char **values;
    size_t n_values;
    char **domains;
    size_t n_domains;
};

/* What a request with a content part the scanner cannot read (an image as a
 * data: URL, input_audio, a file's file_data) may do, ordered so that
 * combining sources is a max(). INHERIT: take it from elsewhere. */
enum sw_pii_binary {
    SW_PII_BINARY_INHERIT,      /* keys/models: use pii.binary_parts */
    SW_PII_BINARY_ALLOW,        /* sent as is; only the readable text decides */
    SW_PII_BINARY_LOCAL         /* the request is kept off the cloud (default) */
};

struct sw_config_pii_custom {
    char *name;                 /* entity type name, e.g. "employee_id" */
    char *regex;
    char *validator;            /* NULL, "luhn", "mod97" or "elfproef" */
};
enum sw_dialect {
    SW_DIALECT_OPENAI,
    SW_DIALECT_ANTHROPIC,
    SW_DIALECT_RESPONSES,
    SW_DIALECT_AZURE,
    SW_DIALECT_BEDROCK,         /* AWS Bedrock's Converse (SigV4) */
    SW_DIALECT_GEMINI,          /* Google's generateContent, Gemini API (an API key) */
    SW_DIALECT_VERTEX,          /* the same on Vertex AI (OAuth2 bearer, project and location) */
    SW_DIALECT_VERTEX_ANTHROPIC,    /* Anthropic's Messages on Vertex AI (rawPredict) */
};
/* A request's priority (X-Spillway-Priority, metadata.priority, keys[].priority). */
enum sw_priority { SW_PRIORITY_INTERACTIVE, SW_PRIORITY_BATCH };

/* Where a local backend's load signal is read (backends[].load.source;
 * upstream/loadsig.h parses each). */
enum sw_load_source {
    SW_LOAD_NONE,
    SW_LOAD_LLAMACPP,
    SW_LOAD_VLLM,
    SW_LOAD_SGLANG,
    SW_LOAD_TGI,
    SW_LOAD_OLLAMA,
    SW_LOAD__COUNT
};

#include "config/tenancy.h"

struct sw_config_team {
    char *name;                 /* unique: the team's ledger id */
    struct sw_config_tenancy t;
};

struct sw_config_key {
    char *name;                 /* shown in logs and metrics */
    char *id;                   /* stable key_id: given, else "k-" + 12 hex of SHA-256(key) */
    char *team;                 /* a teams[] name; NULL: none */
    long team_index;            /* its index in teams[]; -1: none */
    size_t team_line, team_col; /* where team was written (for messages) */
    struct sw_config_tenancy t; /* budget, limits, models, max_tier, on_budget */
    char *key;                  /* the bearer secret; never logged */
    bool allow_cloud;           /* default true */
    bool sensitive;             /* default false: every request of this key is sensitive */
    long ttft_budget_ms;        /* default 0: the model's / routing's TTFT budget */
    enum sw_pii_policy pii;     /* default inherit */
    struct sw_config_regions sensitive_regions;     /* default unset */
    struct sw_config_pii_allow pii_allow;           /* default empty */
    enum sw_pii_binary pii_binary_parts;    /* default inherit */
    int priority;               /* enum sw_priority: default interactive */
};

struct sw_config_backend {
    char *name;                 /* unique */
    enum sw_tier tier;          /* required: local | cloud */
    char *url;                  /* required: http(s)://host[:port][/prefix], no trailing slash */
    enum sw_dialect dialect;    /* default openai; with dialects: the first listed */
    unsigned dialects;          /* bit (1u << enum sw_dialect) per API the backend speaks:
                                 * `dialects` when given, else `dialect` alone */
    char *anthropic_version;    /* anthropic-version sent to it; NULL: the default */
    char *model;                /* required: the upstream's model id */
    char *api_key;              /* NULL when absent */
    long slots;                 /* concurrent generations; default 1 for local, 0 (unbounded) for cloud */
    double input_usd_per_mtok;  /* price.input_usd_per_mtok, default 0 */
    double output_usd_per_mtok; /* price.output_usd_per_mtok, default 0 */
    long connect_timeout_ms;    /* default 2000 */
    long max_context_tokens;    /* 0: not declared (no capability check) */
    bool supports_tools;        /* default true */
    bool supports_images;       /* default true for cloud, false for local */
    bool tls_verify;            /* default true; false only for self-signed test setups */
    char *ca_file;              /* optional CA bundle for this backend; NULL: system default */
    long rpm;                   /* provider limit, requests per minute; 0: none */
    long tpm;                   /* provider limit, tokens per minute; 0: none */
    long queue_max;             /* local: requests Spillway holds waiting for a slot, default 64 */
    char *health_path;          /* local: GET path polled for health, default "/health"; NULL: none */
    long keep_warm_ms;          /* local: ping this often when idle to keep the model loaded; 0: off */
    char *region;               /* local: "local" (always); cloud: a label, NULL when not given */
    bool span_plain;            /* model and region are printable ASCII but '"' and '\\', at
                                   most 100 bytes: spans copy them unchecked (set at load) */
    bool url_v1_stripped;       /* url was written ending in /v1, which was dropped (Spillway adds it) */
    bool url_is_base;           /* url has a path other than /v1: the API's base, its relative
                                 * paths follow it (no /v1 added; docs/configuration.md) */
    /* azure: OpenAI on Azure (dialect azure; docs/configuration.md, "Azure OpenAI") */
    struct {
        char *deployment;       /* the deployment in the path; NULL: model */
        char *api_version;      /* api-version query: /openai/deployments/{deployment}/...;
                                 * NULL: the v1 API, /openai/v1/... (model in the body) */
        char *entra_token;      /* Entra ID bearer token, sent instead of api-key; NULL: none */
        /* Entra ID client credentials: a token fetched and refreshed by the
         * gateway (upstream/token.h); all three or none */
        char *tenant_id, *client_id, *client_secret;
        char *token_url;        /* NULL: https://login.microsoftonline.com/{tenant}/oauth2/v2.0/token */
    } azure;
    struct sw_config_aws aws;   /* dialect bedrock (config/aws.h; docs/configuration.md,
                                 * "AWS Bedrock") */
    /* gemini: Google's generateContent API (dialect gemini or vertex) */
    struct {
        char *api_version;      /* the path's version: NULL: v1beta (Gemini API), v1 (Vertex) */
        char *safety_threshold; /* every harm category's threshold (BLOCK_ONLY_HIGH ...);
                                 * NULL: the provider's defaults */
    } gemini;
    /* vertex: Gemini (or another publisher's model) on Vertex AI */
    struct {
        char *project, *location;   /* both required */
        char *credentials_file;     /* a service-account JSON: its key signs the token request */
        char *token_command;        /* or a command that prints a token (or a token JSON) */
        char *token_url;            /* NULL: the service account's token_uri */
        long token_command_timeout_ms;  /* default 10000 */
    } vertex;
    /* load: the server's own report of the work it holds (docs/routing.md, "Load signals") */
    struct {
        int source;             /* enum sw_load_source; default none */
        long poll_ms;           /* default 250 */
    } load;
    long max_output_tokens;     /* worst-case output of a request that names no max_tokens,
                                   reserved (and sent upstream) under a spend cap; default 4096 */
    /* local: the prefill rate to assume until the server reports its own or
     * traffic teaches one (the gateway's prior; `spillway plan`'s rate):
     * prefill_tps, or prefill_ms_per_token, whichever is given (check_backend
     * sets prefill_ms_per_token = 1000 / prefill_tps); 0: not given */
    double prefill_ms_per_token;    /* prefill cost per prompt token, ms */
    double prefill_tps;             /* prompt tokens processed per second */
    bool prefill_warmup;            /* local: measure the prefill rate with one timed request
                                       at start and after the backend comes back, where
                                       neither the server nor prefill_tps gives one */
    /* For `spillway plan` only (the gateway learns it from traffic); 0: not given */
    double decode_tokens_per_s;     /* decode speed per slot, tokens/s */
};

/* The output contract: what happens when an answer's content breaks the
 * request's response_format JSON schema (docs/routing.md "Output contract"). */
enum sw_contract_on_violation {
    SW_CONTRACT_PASS,           /* log and count, answer as it is (default) */
    SW_CONTRACT_RETRY,          /* once more on the other tier within the deadline (non-streamed) */
    SW_CONTRACT_REJECT,         /* 502 contract_violation */
};
enum sw_contract_stream {
    SW_CONTRACT_STREAM_LOG,     /* streamed: log and count at the end (default) */
    SW_CONTRACT_STREAM_ENFORCE, /* streamed: end with an error event instead of [DONE] */
};
struct sw_config_contract {
    enum sw_contract_on_violation on_violation;
    enum sw_contract_stream stream;
};

/* translation.unsupported: what happens to a request field the chosen
 * backend's API has no form for (docs/agents.md, docs/api.md). */
enum sw_translation_unsupported {
    SW_TRANSLATION_REJECT,      /* that backend cannot take the request: a 400 naming the
                                   field when no other backend can (default) */
    SW_TRANSLATION_DROP,        /* the field is left out, named in the log, the decision
                                   log's `dropped` and spillway_translation_dropped_total */
    SW_TRANSLATION_INHERIT,     /* models: use translation.unsupported */
};

struct sw_config_model {
    char *name;                 /* what clients ask for; unique */
    bool span_plain;            /* name as sw_config_backend.span_plain says (set at load) */
    size_t *backends;           /* indices into sw_config.backends, in configured order */
    size_t n_backends;          /* >= 1 */
    long ttft_budget_ms;        /* 0: use routing.ttft_budget_ms */
    enum sw_pii_policy pii;     /* default inherit */
    struct sw_config_regions sensitive_regions;     /* default unset */
    struct sw_config_pii_allow pii_allow;           /* default empty */
    enum sw_pii_binary pii_binary_parts;    /* default inherit */
    struct sw_config_contract contract;     /* default pass, log */
    enum sw_translation_unsupported translation_unsupported; /* default inherit */
};

enum sw_spend_window { SW_SPEND_HOUR, SW_SPEND_DAY };
enum sw_spend_on_cap { SW_ON_CAP_SHED, SW_ON_CAP_DEGRADE, SW_ON_CAP_KEEP_LOCAL };

struct sw_config_routing {
    long ttft_budget_ms;        /* default 800 */
    long request_timeout_ms;    /* default 30000 */
    long default_max_tokens;    /* output estimate when a request sets none, default 256 */
    long batch_ttft_budget_ms;  /* TTFT budget of batch requests; default 0: the request timeout */
    long health_interval_ms;    /* local health checks, default 2000 */
    /* A local slot held past overdue_factor x its expected hold plus
     * overdue_floor_ms counts as not freeing in the wait estimate
     * (docs/routing.md, "Overdue slots"); factor 0: never. */
    double overdue_factor;      /* default 4 */
    long overdue_floor_ms;      /* default 5000 */
    bool emergency;             /* start with an emergency declared, default false */
    struct {
        long window_ms;         /* default 30000 */
        long degrade_ms;        /* default 200 */
        long recover_ms;        /* default 150 */
        long dwell_ms;          /* default 10000 */
    } latency;
    struct {
        long failures;          /* default 5 */
        long window_ms;         /* default 60000 */
        long cooldown_ms;       /* default 30000 */
    } breaker;
    struct {
        double cap_usd;         /* default 0: no cap */
        enum sw_spend_window window;    /* default hour */
        enum sw_spend_on_cap on_cap;    /* default shed */
        char *degrade_to;       /* backend name for on_cap: degrade */
        long degrade_backend;   /* its index, resolved at parse; -1 none */
        long shed_retry_after_s;        /* default 60 */
    } spend;
    struct {                    /* prefix affinity (docs/routing.md, "Prefix affinity") */
        bool enabled;           /* default true */
        long ttl_s;             /* how long a served prefix is remembered, default 300 */
        long max_entries;       /* per local backend: prefixes remembered (LRU beyond it),
                                   like its server's cache; default 256 */
    } affinity;
};

struct sw_config_limits {
    long max_body_bytes;        /* default 4 MiB (4194304) */
    long max_header_bytes;      /* default 16 KiB (16384) */
    long max_connections;       /* default 1024 */
    long client_timeout_ms;     /* slow/idle client read timeout, default 15000 */
    long max_response_bytes;    /* a non-streamed upstream answer, default 16 MiB */
    long drain_timeout_ms;      /* SIGTERM: how long in-flight requests may finish, default 15000 */
    long scan_threads;          /* workers that scan large bodies off the loop, default 2; 0: none */
    long scan_cache_bytes;      /* the PII scan-verdict cache's bound, default 16 MiB; 0: off */
    long parse_cache_bytes;     /* the parse memo's bound (common/jmemo.h), default 32 MiB; 0: off */
};

/* state.tls: how a rediss:// connection is checked (docs/scaling.md). */
struct sw_config_state_tls {
    char *ca_file;              /* PEM CA bundle; NULL: the system CA store */
    char *cert_file, *key_file; /* client certificate (both or neither) */
    char *server_name;          /* name (or IP) the certificate must carry; NULL: the URL's host */
    bool verify;                /* default true; false logs a warning at start */
};

/* state: shared state on Redis (docs/scaling.md); redis NULL: in memory. */
struct sw_config_state {
    char *redis;                /* redis[s]://[[USER]:PASSWORD@]HOST:PORT/DB (a secret: never shown) */
    struct sw_config_state_tls tls;
    char *key_prefix;           /* default "spillway:" */
    long timeout_ms;            /* every round trip, default 50 */
    long replicas;              /* replicas expected, default 1 (fallback_share's default) */
    double fallback_share;      /* share of a local backend's slots per replica while Redis is
                                   unreachable; 0 in the file: 1 / replicas */
    long lease_ttl_ms;          /* a dead replica's slots and probe come back after this */
};

/* responses: the stored conversations of the Responses API
 * (state/respstore.h, docs/configuration.md). */
struct sw_config_responses {
    long store_max_entries;     /* records held at most, default 10000 */
    long store_max_bytes;       /* their bytes at most, default 64 MiB (67108864) */
    long store_ttl_s;           /* a record's life, default 3600 */
};

/* listen_hosts: the Host header values the front accepts. */
#define SW_CONFIG_MAX_LISTEN_HOSTS 32
struct sw_config_listen_hosts {
    bool set;                   /* the key was given */
    bool any;                   /* "*" listed: every Host is accepted */
    size_t n;                   /* 0 and !any: no check */
    char *host[SW_CONFIG_MAX_LISTEN_HOSTS];     /* lower case, IPv6 without brackets */
    long port[SW_CONFIG_MAX_LISTEN_HOSTS];      /* -1: any port */
};

/* telemetry.otlp: traces exported over OTLP/HTTP (upstream/otlp.h,
 * docs/configuration.md); endpoint NULL: tracing off (the default). */
#define SW_CONFIG_OTLP_MAX_HEADERS 16
enum sw_otlp_protocol { SW_OTLP_HTTP_JSON, SW_OTLP_HTTP_PROTOBUF };
struct sw_config_otlp {
    char *endpoint;             /* http(s)://host:port[/path]; no path: /v1/traces */
    int protocol;               /* enum sw_otlp_protocol, default http/json */
    char *header_name[SW_CONFIG_OTLP_MAX_HEADERS];  /* headers: sent with every export */
    char *header_value[SW_CONFIG_OTLP_MAX_HEADERS]; /* (from ${ENV}: never shown) */
    size_t n_headers;
    long timeout_ms;            /* one export request, default 5000 */
    double sample_ratio;        /* traces without a parent kept, default 1.0 */
    long batch_max_spans;       /* batch.max_spans: spans per export, default 512 */
    long batch_interval_ms;     /* batch.interval_ms: longest a span waits, default 1000 */
    long queue_max;             /* spans held at most; more are dropped, default 4096 */
    char *service_name;         /* resource service.name, default "spillway" */
    char *ca_file;              /* PEM CA bundle for https; NULL: the system store */
};

struct sw_config {
    int refcount;
    char *path;                 /* the file it came from */
    char *listen_host;          /* listen: "host:port", default "127.0.0.1:8080" */
    int listen_port;            /* 0 picks an ephemeral port (tests) */
    struct sw_config_listen_hosts listen_hosts; /* unset with no keys: localhost, 127.0.0.1,
                                                   [::1] and the listen host; unset with
                                                   keys: no check */
    struct sw_config_key *keys; /* keys: omitted => client auth disabled */
    size_t n_keys;
    struct sw_config_team *teams;   /* teams: budgets and limits shared by keys */
    size_t n_teams;
    bool auth_enabled;          /* true when a `keys` list is present */
    char *admin_key;            /* admin.key; NULL: admin API disabled */
    char *decision_log;         /* path of the decision log, "-" (default): stdout */
    /* access_log: one line per HTTP request (obs/access.h); path NULL: off (default) */
    struct {
        char *path;             /* a file, "-" (stdout) or "stderr" */
        int format;             /* enum sw_access_format: 0 json (default), 1 combined */
    } access_log;
    struct sw_config_otlp otlp; /* telemetry.otlp */
    struct sw_config_backend *backends;
    size_t n_backends;
    struct sw_config_model *models;
    size_t n_models;
    struct sw_config_routing routing;
    struct sw_config_limits limits;
    struct sw_config_state state;
    struct sw_config_responses responses;
    enum sw_translation_unsupported translation_unsupported; /* translation.unsupported,
                                                                default reject */
    struct {
        enum sw_pii_policy policy;          /* default local_only */
        enum sw_pii_binary binary_parts;    /* default local */
        struct sw_config_pii_custom *custom;
        size_t n_custom;
        struct sw_config_regions sensitive_regions; /* default unset: no cloud region */
        struct sw_config_pii_allow allow;           /* default empty */
        /* pii.phone_regions: ISO 3166 codes whose national phone numbers are
         * detected; unset: the engine's default (NL DE FR BE ES IT GB US) */
        bool phone_regions_set;
        char phone_regions[32][3];
        size_t n_phone_regions;
    } pii;
    struct {                    /* plan: `spillway plan` only; the gateway ignores it */
        double local_usd_per_hour;  /* plan.local_cost.usd_per_hour, default 0 */
        double local_usd_per_month; /* plan.local_cost.usd_per_month, default 0 */
    } plan;
};

/* Looks up an environment variable; returns NULL when unset. Injected so that
 * parsing stays pure and unit tests control the environment. */
typedef const char *(*sw_config_getenv_fn)(const char *name, void *ud);

/* Parses and validates `text` (len bytes) as a config; `filename` is used only
 * in messages. On success *out is a new snapshot (refcount 1) and SW_OK is
 * returned. On failure *out is NULL, errs holds every message, and the result
 * is SW_EINVAL (or SW_ENOMEM). errs must be freed with sw_config_errors_free
 * either way. getenv_fn NULL means the process environment (getenv). */
int sw_config_parse(const char *filename, const char *text, size_t len,
                    sw_config_getenv_fn getenv_fn, void *ud,
                    struct sw_config **out, struct sw_config_errors *errs);

/* Reads the file at path and parses it with the process environment. A file
 * that cannot be read (or is larger than 1 MiB) is reported as
 * "path: cannot read: <strerror>" and returns SW_EIO. */
int sw_config_load_file(const char *path, struct sw_config **out,
                        struct sw_config_errors *errs);

struct sw_config *sw_config_ref(struct sw_config *cfg);
void sw_config_unref(struct sw_config *cfg);
void sw_config_errors_free(struct sw_config_errors *errs);

/* Lookups; borrowed pointers valid while the snapshot is referenced. */
const struct sw_config_model *sw_config_find_model(const struct sw_config *cfg, const char *name);
/* The model's translation.unsupported, else the file's. */
enum sw_translation_unsupported sw_config_translation(const struct sw_config *cfg,
                                                      const struct sw_config_model *model);
/* Finds the key whose secret equals `bearer` (compared in constant time per key). */
const struct sw_config_key *sw_config_find_key(const struct sw_config *cfg, const char *bearer);

/* Compares a configured secret with what a client sent, in constant time. */
bool sw_config_secret_equal(const char *secret, const char *bearer);

/* Whether region is on the list. */
bool sw_config_regions_has(const struct sw_config_regions *r, const char *region);

const char *sw_tier_name(enum sw_tier tier);       /* "local" | "cloud" */
const char *sw_dialect_name(enum sw_dialect d);    /* "openai" | "anthropic" | "responses" | "azure"
                                                    * | "bedrock" | "gemini" | "vertex"
                                                    * | "vertex_anthropic" */
/* Stable lowercase name ("llamacpp", "none", ...); "unknown" out of range. */
const char *sw_load_source_name(enum sw_load_source s);

#endif
