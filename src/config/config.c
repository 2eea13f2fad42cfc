#include "config/config.h"

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/err.h"
#include "config/rurl.h"
#include "config/walk.h"
#include "pii/pii.h"

#define CONFIG_MAX_FILE_BYTES (1024 * 1024)
#define DEFAULT_LISTEN_HOST "127.0.0.1"
#define DEFAULT_LISTEN_PORT 8080
#define MAX_SLOTS 1024
#define SHOW 256

static const char *const tier_names[] = {"local", "cloud", NULL};
static const char *const dialect_names[] = {"openai", "anthropic", "responses", "azure",
                                            "bedrock", "gemini", "vertex", "vertex_anthropic",
                                            NULL};

/* ---- Custom value parsers ---- */

static bool all_digits(const char *s, size_t n)
{
    if (n == 0)
        return false;
    for (size_t i = 0; i < n; i++)
        if (s[i] < '0' || s[i] > '9')
            return false;
    return true;
}

/* Port digits (at most 5) to a number; -1 when not a number. */
static long port_of(const char *s, size_t n)
{
    if (!all_digits(s, n) || n > 5)
        return -1;
    long p = 0;
    for (size_t i = 0; i < n; i++)
        p = p * 10 + (s[i] - '0');
    return p;
}

/* How a custom setting's value appears in a message: its source text, never
 * a substituted secret (sw_walk_show's rules). */
static void show_value(const yaml_node_t *node, char *value, char *out, size_t cap)
{
    const char *raw = (const char *)node->data.scalar.value;
    struct sw_walk_scalar v = {.v = value, .len = strlen(value), .raw = raw,
                               .raw_len = node->data.scalar.length,
                               .substituted = strstr(raw, "${") != NULL};
    sw_walk_show(&v, out, cap);
}

/* listen: "host:port", "[v6]:port"; stores host (without brackets) and port. */
static void parse_listen(struct sw_walk *w, const struct sw_walk_setting *s,
                         const yaml_node_t *node, void *base, const char *path)
{
    char *str = NULL;
    if (sw_walk_string(w, s, node, path, &str))
        return;
    char shown[SHOW];
    show_value(node, str, shown, sizeof(shown));
    const char *host = str, *colon = strrchr(str, ':');
    size_t host_len = colon ? (size_t)(colon - str) : 0;
    const char *why = NULL;
    if (!colon) {
        why = "has no port";
    } else if (str[0] == '[') {
        if (host_len < 2 || str[host_len - 1] != ']') {
            why = "has an unterminated [IPv6] address";
        } else {
            host++;
            host_len -= 2;
        }
    } else if (memchr(str, ':', host_len)) {
        why = "has an IPv6 address without brackets";
    }
    long port = colon ? port_of(colon + 1, strlen(colon + 1)) : -1;
    if (!why && host_len == 0)
        why = "has no host (use 0.0.0.0 for every interface)";
    if (!why && (port < 0 || port > 65535))
        why = "has an invalid port";
    if (why) {
        sw_walk_error(w, node, path,
                      "%s %s; expected \"host:port\" with port 0..65535, e.g. \"127.0.0.1:8080\", "
                      "\"0.0.0.0:8080\", \"[::1]:8080\"",
                      shown, why);
        free(str);
        return;
    }
    char *h = strndup(host, host_len);
    free(str);
    if (!h) {
        w->oom = true;
        return;
    }
    free(*(char **)((char *)base + s->off));
    *(char **)((char *)base + s->off) = h;
    *(int *)((char *)base + s->aux_off) = (int)port;
}

/* Why a URL's authority (host[:port], auth_len bytes) is not one; NULL: it is. */
static const char *authority_error(const char *auth, size_t auth_len)
{
    const char *why = NULL;
    const char *port = NULL;
    size_t host_len;
    if (auth[0] == '[') {
        const char *close = memchr(auth, ']', auth_len);
        if (!close)
            why = "has an unterminated [IPv6] host";
        host_len = close ? (size_t)(close - auth - 1) : 0;
        if (close && close + 1 < auth + auth_len) {
            if (close[1] == ':')
                port = close + 2;
            else
                why = "has junk after the [IPv6] host";
        }
    } else {
        const char *colon = memchr(auth, ':', auth_len);
        host_len = colon ? (size_t)(colon - auth) : auth_len;
        port = colon ? colon + 1 : NULL;
    }
    if (!why && host_len == 0)
        why = "has no host";
    if (!why && port) {
        long p = port_of(port, (size_t)(auth + auth_len - port));
        if (p < 1 || p > 65535)
            why = "has an invalid port (1..65535)";
    }
    return why;
}

/* url: http(s)://host[:port][/prefix]; trailing slashes are stripped. */
static void parse_url(struct sw_walk *w, const struct sw_walk_setting *s,
                      const yaml_node_t *node, void *base, const char *path)
{
    char *url = NULL;
    if (sw_walk_string(w, s, node, path, &url))
        return;
    char shown[SHOW];
    show_value(node, url, shown, sizeof(shown));
    const char *why = NULL;
    size_t skip = 0;
    if (!strncmp(url, "http://", 7))
        skip = 7;
    else if (!strncmp(url, "https://", 8))
        skip = 8;
    else
        why = "must start with http:// or https://";
    const char *auth = url + skip;
    size_t auth_len = strcspn(auth, "/");
    if (!why && strpbrk(url, " \t"))
        why = "must not contain spaces";
    if (!why && strpbrk(url, "?#"))
        why = "must not contain a query or fragment (? or #)";
    if (!why && memchr(auth, '@', auth_len))
        why = "must not contain credentials (user:pass@); use api_key";
    if (!why)
        why = authority_error(auth, auth_len);
    if (why) {
        sw_walk_error(w, node, path, "%s %s, e.g. \"http://127.0.0.1:8081\"", shown, why);
        free(url);
        return;
    }
    size_t len = strlen(url);
    while (len > skip + auth_len && url[len - 1] == '/')
        url[--len] = '\0';
    /* An endpoint copied into url would be appended to twice. */
    static const char *const endpoints[] = {"/chat/completions", "/completions", "/messages",
                                            "/embeddings", "/models"};
    for (size_t e = 0; s->off == offsetof(struct sw_config_backend, url) &&
                       e < sizeof endpoints / sizeof *endpoints; e++) {
        size_t el = strlen(endpoints[e]);
        if (len < skip + auth_len + el || strcmp(url + len - el, endpoints[e]))
            continue;
        size_t root = len - el;
        if (root >= skip + auth_len + 3 && !strncmp(url + root - 3, "/v1", 3))
            root -= 3;
        sw_walk_error(w, node, path,
                      "%s ends in the API endpoint %s; Spillway appends /v1/chat/completions or "
                      "/v1/messages itself (chat/completions or messages after a path such as "
                      "/v1beta/openai): use \"%.*s\"",
                      shown, endpoints[e], (int)root, url);
        free(url);
        return;
    }
    /* A URL without a path gets /v1/ before the API's relative path. A URL
     * written as the OpenAI and llama.cpp docs show it (.../v1) means the
     * same, so the /v1 is dropped (the daemon says so) and added back. */
    if (len >= skip + auth_len + 3 && !strcmp(url + len - 3, "/v1") &&
        s->off == offsetof(struct sw_config_backend, url)) {
        len -= 3;
        url[len] = '\0';
        while (len > skip + auth_len && url[len - 1] == '/')
            url[--len] = '\0';
        ((struct sw_config_backend *)base)->url_v1_stripped = true;
        if (len >= skip + auth_len + 3 && !strcmp(url + len - 3, "/v1")) {
            sw_walk_error(w, node, path,
                          "%s has /v1 twice, so every request would go to .../v1/v1/...: "
                          "use \"%s\"", shown, url);
            free(url);
            return;
        }
    }
    /* Any other path is the API's own base, as an SDK's base_url: the API's
     * relative path (chat/completions, messages, models) follows it. */
    if (s->off == offsetof(struct sw_config_backend, url))
        ((struct sw_config_backend *)base)->url_is_base =
            !((struct sw_config_backend *)base)->url_v1_stripped && len > skip + auth_len;
    free(*(char **)((char *)base + s->off));
    *(char **)((char *)base + s->off) = url;
}

static const char *const validator_names[] = {"luhn", "mod97", "elfproef", NULL};

/* validator: one of the built-in checksum validators of src/pii. */
static void parse_validator(struct sw_walk *w, const struct sw_walk_setting *s,
                            const yaml_node_t *node, void *base, const char *path)
{
    char *v = NULL;
    if (sw_walk_string(w, s, node, path, &v))
        return;
    bool known = false;
    for (size_t i = 0; validator_names[i]; i++)
        known |= !strcmp(v, validator_names[i]);
    if (!known) {
        sw_walk_error(w, node, path, "\"%s\" is not one of luhn, mod97, elfproef", v);
        free(v);
        return;
    }
    free(*(char **)((char *)base + s->off));
    *(char **)((char *)base + s->off) = v;
}

/* A region label: [a-z0-9-]{1,32}. */
static bool region_ok(const char *r)
{
    size_t n = strlen(r);
    if (n < 1 || n > SW_CONFIG_REGION_MAX_LEN)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((r[i] >= 'a' && r[i] <= 'z') || (r[i] >= '0' && r[i] <= '9') || r[i] == '-'))
            return false;
    return true;
}

/* backends[].region: a label. */
static void parse_region(struct sw_walk *w, const struct sw_walk_setting *s,
                         const yaml_node_t *node, void *base, const char *path)
{
    char *v = NULL;
    if (sw_walk_string(w, s, node, path, &v))
        return;
    if (!region_ok(v)) {
        sw_walk_error(w, node, path, "\"%.64s\" is not a region label: 1-32 of a-z 0-9 -, "
                      "e.g. \"eu-west\"", v);
        free(v);
        return;
    }
    free(*(char **)((char *)base + s->off));
    *(char **)((char *)base + s->off) = v;
}

/* ---- listen_hosts ---- */

/* Adds "host" or "host:port" (IPv6 in brackets) to the list, lower-cased;
 * NULL, or what is wrong with it. */
static const char *listen_host_add(struct sw_config_listen_hosts *lh, const char *v, bool *oom)
{
    if (!strcmp(v, "*")) {
        lh->any = true;
        return NULL;
    }
    size_t len = strlen(v), host_len = len;
    const char *host = v, *port = NULL;
    if (v[0] == '[') {
        const char *close = strchr(v, ']');
        if (!close || close == v + 1)
            return "has an unterminated or empty [IPv6] address";
        host = v + 1;
        host_len = (size_t)(close - host);
        if (close[1] == ':')
            port = close + 2;
        else if (close[1])
            return "has text after the ] of its [IPv6] address";
    } else {
        const char *colon = strchr(v, ':');
        if (colon && strchr(colon + 1, ':'))
            return "has an IPv6 address without brackets (write [::1])";
        if (colon) {
            host_len = (size_t)(colon - v);
            port = colon + 1;
        }
    }
    long p = -1;
    if (port && ((p = port_of(port, strlen(port))) < 1 || p > 65535))
        return "has an invalid port (1..65535)";
    if (host_len == 0 || host_len > 253)
        return "has no host, or one longer than 253 bytes";
    for (size_t i = 0; i < host_len; i++) {
        unsigned char ch = (unsigned char)host[i];
        if (!(ch >= 'a' && ch <= 'z') && !(ch >= 'A' && ch <= 'Z') && !(ch >= '0' && ch <= '9') &&
            ch != '.' && ch != '-' && ch != '_' && ch != ':')
            return "is not a host name or address (letters, digits, . - _, [IPv6])";
    }
    if (lh->n == SW_CONFIG_MAX_LISTEN_HOSTS)
        return "is one host too many (at most 32)";
    char *h = strndup(host, host_len);
    if (!h) {
        *oom = true;
        return NULL;
    }
    for (char *c = h; *c; c++)
        if (*c >= 'A' && *c <= 'Z')
            *c = (char)(*c - 'A' + 'a');
    lh->host[lh->n] = h;
    lh->port[lh->n++] = p;
    return NULL;
}

static void listen_hosts_free(struct sw_config_listen_hosts *lh)
{
    for (size_t i = 0; i < lh->n; i++)
        free(lh->host[i]);
    lh->n = 0;
}

/* listen_hosts: a list of Host header values (ports optional) or "*". */
static void listen_host_item(struct sw_walk *w, const yaml_node_t *item, const char *ipath,
                             size_t i, char *v, void *ctx)
{
    (void)i;
    bool oom = false;
    const char *why = listen_host_add(ctx, v, &oom);
    if (oom)
        w->oom = true;
    if (why)
        sw_walk_error(w, item, ipath, "\"%.64s\" %s; expected \"host\" or \"host:port\", "
                      "e.g. localhost, \"gateway.internal:8080\", \"[::1]\"", v, why);
    free(v);
}

static void parse_listen_hosts(struct sw_walk *w, const struct sw_walk_setting *s,
                               const yaml_node_t *node, void *base, const char *path)
{
    static const struct sw_walk_setting item = {.key = "host", .type = SW_WALK_TEXT};
    struct sw_config_listen_hosts *lh = (struct sw_config_listen_hosts *)((char *)base + s->off);
    long n = sw_walk_strings(w, &item, node, path,
                             "a list of Host header values such as [localhost, "
                             "\"gateway.internal:8080\"], or [\"*\"] for any",
                             listen_host_item, lh);
    if (n >= 0)
        lh->set = true;
    if (n == 0)
        sw_walk_error(w, node, path, "an empty list would answer no Host; list at least one, "
                      "or [\"*\"] to accept any");
}

/* With no keys a web page the user visits could reach the gateway under a
 * name of the attacker's (DNS rebinding): unless listen_hosts says
 * otherwise, only the loopback names and the listen host are accepted. */
static void default_listen_hosts(struct sw_config *cfg, bool *oom)
{
    if (cfg->listen_hosts.set || cfg->auth_enabled)
        return;
    static const char *const names[] = {"localhost", "127.0.0.1", "[::1]"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        listen_host_add(&cfg->listen_hosts, names[i], oom);
    const char *lh = cfg->listen_host;
    bool any_addr = !strcmp(lh, "0.0.0.0") || !strcmp(lh, "::");
    bool known = false;
    for (size_t i = 0; i < cfg->listen_hosts.n; i++)
        known |= !strcasecmp(cfg->listen_hosts.host[i], lh);
    if (!any_addr && !known && cfg->listen_hosts.n < SW_CONFIG_MAX_LISTEN_HOSTS) {
        char *h = strdup(lh);
        if (!h) {
            *oom = true;
            return;
        }
        for (char *c = h; *c; c++)
            if (*c >= 'A' && *c <= 'Z')
                *c = (char)(*c - 'A' + 'a');
        cfg->listen_hosts.host[cfg->listen_hosts.n] = h;
        cfg->listen_hosts.port[cfg->listen_hosts.n++] = -1;
    }
}

/* sensitive_regions: a list of cloud region labels (checked against the
 * backends' regions once everything is parsed, in check_top). */
static void region_item(struct sw_walk *w, const yaml_node_t *item, const char *ipath, size_t i,
                        char *v, void *ctx)
{
    struct sw_config_regions *r = ctx;
    const char *why = NULL;
    if (!region_ok(v))
        why = "is not a region label: 1-32 of a-z 0-9 -, e.g. \"eu-west\"";
    else if (!strcmp(v, "local"))
        why = "is the region of local backends, which sensitive requests may always use; "
              "list cloud regions only";
    else if (sw_config_regions_has(r, v))
        why = "is listed twice";
    else if (r->n == SW_CONFIG_MAX_REGIONS)
        why = "is one region too many (at most 16)";
    if (why) {
        sw_walk_error(w, item, ipath, "\"%.64s\" %s", v, why);
        free(v);
        return;
    }
    r->line[r->n] = item->start_mark.line + 1;
    r->col[r->n] = item->start_mark.column + 1;
    r->index[r->n] = i;
    r->names[r->n++] = v;
}

static void parse_regions(struct sw_walk *w, const struct sw_walk_setting *s,
                          const yaml_node_t *node, void *base, const char *path)
{
    static const struct sw_walk_setting item = {.key = "region", .type = SW_WALK_TEXT};
    struct sw_config_regions *r = (struct sw_config_regions *)((char *)base + s->off);
    if (sw_walk_strings(w, &item, node, path, "a list of cloud region labels such as [eu-west]",
                        region_item, r) >= 0)
        r->set = true;
}

/* dialects: a non-empty list of dialect names, each once; the first is the
 * one spoken to clients of the other APIs. */
static void dialect_item(struct sw_walk *w, const yaml_node_t *item, const char *ipath, size_t i,
                         char *v, void *ctx)
{
    (void)i;
    struct sw_config_backend *b = ctx;
    int d = -1;
    for (int k = 0; dialect_names[k]; k++)
        if (!strcmp(v, dialect_names[k]))
            d = k;
    if (d < 0)
        sw_walk_error(w, item, ipath, "\"%.64s\" is not a dialect: openai, anthropic, responses, azure, bedrock, "
                      "gemini, vertex or vertex_anthropic",
                      v);
    else if (b->dialects & (1u << d))
        sw_walk_error(w, item, ipath, "\"%.64s\" is listed twice", v);
    else {
        if (!b->dialects)
            b->dialect = (enum sw_dialect)d;
        b->dialects |= 1u << d;
    }
    free(v);
}

static void parse_dialects(struct sw_walk *w, const struct sw_walk_setting *s,
                           const yaml_node_t *node, void *base, const char *path)
{
    (void)s;
    static const struct sw_walk_setting item = {.key = "dialect", .type = SW_WALK_TEXT};
    static const char want[] = "a non-empty list of dialects such as [openai, anthropic]";
    if (sw_walk_strings(w, &item, node, path, want, dialect_item, base) == 0)
        sw_walk_error(w, node, path, "expected %s", want);
}

bool sw_config_regions_has(const struct sw_config_regions *r, const char *region)
{
    for (size_t i = 0; region && i < r->n; i++)
        if (!strcmp(r->names[i], region))
            return true;
    return false;
}

static void regions_free(struct sw_config_regions *r)
{
    for (size_t i = 0; i < r->n; i++)
        free(r->names[i]);
    r->n = 0;
}

/* pii.allow's lists: strings, 1-256 bytes each, at most 256; domains are
 * host names (checked by the engine, which names the bad one). */
struct str_list {
    char ***v;
    size_t *n;
    bool domains;               /* each a domain (sw_pii_allow_domain_ok) */
};

static void str_list_item(struct sw_walk *w, const yaml_node_t *item, const char *ipath, size_t i,
                          char *v, void *ctx)
{
    (void)i;
    struct str_list *l = ctx;
    size_t len = strlen(v);
    if (len == 0 || len > SW_PII_MAX_ALLOW_LEN || *l->n == SW_PII_MAX_ALLOW) {
        sw_walk_error(w, item, ipath, len ? (len > SW_PII_MAX_ALLOW_LEN ? "is longer than 256 bytes"
                                                                       : "is one too many (at most 256)")
                                          : "is empty");
        free(v);
        return;
    }
    if (l->domains && !sw_pii_allow_domain_ok(v)) {
        sw_walk_error(w, item, ipath, "\"%.64s\" is not a domain such as example.com", v);
        free(v);
        return;
    }
    char **nv = realloc(*l->v, (*l->n + 1) * sizeof *nv);
    if (!nv) {
        w->oom = true;
        free(v);
        return;
    }
    *l->v = nv;
    nv[(*l->n)++] = v;
}

static void parse_str_list(struct sw_walk *w, const struct sw_walk_setting *s,
                           const yaml_node_t *node, void *base, const char *path)
{
    static const struct sw_walk_setting item = {.key = "value", .type = SW_WALK_TEXT};
    struct str_list l = {(char ***)((char *)base + s->off), (size_t *)((char *)base + s->aux_off),
                         !strcmp(s->key, "domains")};
    sw_walk_strings(w, &item, node, path, s->hint, str_list_item, &l);
}

#define PA(f) offsetof(struct sw_config_pii_allow, f)
static const struct sw_walk_setting pii_allow_settings[] = {
    {.key = "values", .type = SW_WALK_CUSTOM, .off = PA(values), .aux_off = PA(n_values),
     .parse = parse_str_list, .hint = "a list of exact values, e.g. [noreply@example.com]"},
    {.key = "domains", .type = SW_WALK_CUSTOM, .off = PA(domains), .aux_off = PA(n_domains),
     .parse = parse_str_list, .hint = "a list of e-mail domains, e.g. [anthropic.com]"},
};
static const struct sw_walk_section pii_allow_section = {
    pii_allow_settings, sizeof(pii_allow_settings) / sizeof(pii_allow_settings[0]), 0, NULL};

static void pii_allow_free(struct sw_config_pii_allow *a)
{
    for (size_t i = 0; i < a->n_values; i++)
        free(a->values[i]);
    for (size_t i = 0; i < a->n_domains; i++)
        free(a->domains[i]);
    free(a->values);
    free(a->domains);
    *a = (struct sw_config_pii_allow){0};
}

/* pii.phone_regions: a list of region codes libphonenumber knows. */
struct phone_regions {
    char (*codes)[3];
    size_t *n;
};

static void phone_region_item(struct sw_walk *w, const yaml_node_t *item, const char *ipath,
                              size_t i, char *v, void *ctx)
{
    (void)i;
    struct phone_regions *pr = ctx;
    if (!sw_pii_phone_region_known(v))
        sw_walk_error(w, item, ipath,
                      "\"%s\" is not a region code (two upper-case letters, ISO 3166, e.g. NL, DE, GB, US)", v);
    else if (*pr->n == SW_PII_MAX_PHONE_REGIONS)
        sw_walk_error(w, item, ipath, "at most %d regions", SW_PII_MAX_PHONE_REGIONS);
    else
        memcpy(pr->codes[(*pr->n)++], v, 3);
    free(v);
}

static void parse_phone_regions(struct sw_walk *w, const struct sw_walk_setting *s,
                                const yaml_node_t *node, void *base, const char *path)
{
    static const struct sw_walk_setting item = {.key = "phone_regions", .type = SW_WALK_NAME};
    struct phone_regions pr = {(char (*)[3])((char *)base + s->off),
                               (size_t *)((char *)base + s->aux_off)};
    bool *set = (bool *)((char *)base + (offsetof(struct sw_config, pii.phone_regions_set) -
                                        offsetof(struct sw_config, pii)));
    _Static_assert(sizeof(((struct sw_config *)0)->pii.phone_regions) / 3 == SW_PII_MAX_PHONE_REGIONS,
                   "pii.phone_regions holds SW_PII_MAX_PHONE_REGIONS codes");
    *pr.n = 0;
    if (sw_walk_strings(w, &item, node, path, "a list of region codes, e.g. [NL, DE, GB, US]",
                        phone_region_item, &pr) >= 0)
        *set = true;
}

static void backend_names(const struct sw_config *cfg, char *out, size_t cap)
{
    size_t used = 0;
    out[0] = '\0';
    for (size_t i = 0; i < cfg->n_backends && used < cap; i++)
        if (cfg->backends[i].name)
            used += (size_t)snprintf(out + used, cap - used, "%s%s", used ? ", " : "",
                                     cfg->backends[i].name);
}

/* models[i].backends: names of backends, resolved to indices. Backends are
 * walked before models (table order), so every valid one is known here. */
static void parse_refs(struct sw_walk *w, const struct sw_walk_setting *s,
                       const yaml_node_t *node, void *base, const char *path)
{
    struct sw_config *cfg = w->user;
    char defined[512], ipath[SW_WALK_MAX_PATH];
    backend_names(cfg, defined, sizeof(defined));
    if (node->type != YAML_SEQUENCE_NODE) {
        char got[SHOW];
        sw_walk_describe(w, node, got, sizeof(got));
        sw_walk_error(w, node, path, "expected a list of backend names (defined: %s), got %s",
                      defined, got);
        return;
    }
    yaml_node_item_t *it = node->data.sequence.items.start;
    size_t n = (size_t)(node->data.sequence.items.top - it);
    if (n == 0) {
        sw_walk_error(w, node, path, "is empty; list at least one backend (defined: %s)",
                      defined);
        return;
    }
    size_t *idx = calloc(n, sizeof(*idx));
    if (!idx) {
        w->oom = true;
        return;
    }
    /* A backend whose name was invalid is not in the list; a reference to it
     * would only repeat that error. */
    bool names_complete = true;
    for (size_t b = 0; b < cfg->n_backends; b++)
        names_complete = names_complete && cfg->backends[b].name;
    size_t got_n = 0;
    bool seen_cloud = false;
    const char *first_cloud = NULL;
    static const struct sw_walk_setting name_setting = {.key = "backend", .type = SW_WALK_NAME};
    for (size_t i = 0; i < n; i++) {
        yaml_node_t *item = yaml_document_get_node(w->doc, it[i]);
        sw_walk_path_index(ipath, sizeof(ipath), path, i);
        char *name = NULL;
        if (sw_walk_string(w, &name_setting, item, ipath, &name))
            continue;
        size_t b = 0;
        while (b < cfg->n_backends && (!cfg->backends[b].name || strcmp(cfg->backends[b].name, name)))
            b++;
        bool dup = false;
        for (size_t j = 0; j < got_n; j++)
            dup = dup || idx[j] == b;
        if (b == cfg->n_backends && (cfg->n_backends == 0 || !names_complete)) {
            /* backends is missing or broken: reported there. */
        } else if (b == cfg->n_backends) {
            sw_walk_error(w, item, ipath, "unknown backend \"%s\" (defined: %s)", name, defined);
        } else if (dup) {
            sw_walk_error(w, item, ipath, "backend \"%s\" is listed twice", name);
        } else if (seen_cloud && cfg->backends[b].tier == SW_TIER_LOCAL) {
            sw_walk_error(w, item, ipath,
                          "local backend \"%s\" is listed after cloud backend \"%s\"; list local "
                          "backends first (local is always preferred), then cloud backends in "
                          "priority order",
                          name, first_cloud);
        } else {
            if (cfg->backends[b].tier == SW_TIER_CLOUD && !seen_cloud) {
                seen_cloud = true;
                first_cloud = cfg->backends[b].name;
            }
            idx[got_n++] = b;
        }
        free(name);
    }
    *(size_t **)((char *)base + s->off) = idx;
    *(size_t *)((char *)base + s->aux_off) = got_n;
}

/* ---- Teams and key ids (config/tenancy.h) ---- */

#define TEAM(f) offsetof(struct sw_config_team, f)
static const struct sw_walk_section team_section;
static void check_team(struct sw_walk *w, void *base, const yaml_node_t *map,
                       const yaml_node_t *const *vals, const char *path, size_t index)
{
    (void)map;
    struct sw_config *cfg = w->user;
    struct sw_config_team *t = base;
    char p[SW_WALK_MAX_PATH];
    for (size_t j = 0; j < index; j++)
        if (t->name && cfg->teams[j].name && !strcmp(t->name, cfg->teams[j].name)) {
            sw_walk_path_key(p, sizeof p, path, "name");
            sw_walk_error(w, sw_walk_val(&team_section, vals, "name"), p,
                          "duplicate team \"%s\" (also teams[%zu]); names must be unique",
                          t->name, j);
        }
}

static const struct sw_walk_setting team_settings[] = {
    {.key = "name", .type = SW_WALK_NAME, .off = TEAM(name), .required = true,
     .hint = "the team keys[].team names"},
    SW_CONFIG_TENANCY_SETTINGS(TEAM(t)),
};
static const struct sw_walk_section team_section = {
    team_settings, sizeof team_settings / sizeof team_settings[0], sizeof(struct sw_config_team),
    check_team};

static void tenancy_check(struct sw_walk *w, struct sw_config *cfg)
{
    char p[SW_WALK_MAX_PATH];
    for (size_t i = 0; i < cfg->n_keys; i++) {
        struct sw_config_key *k = &cfg->keys[i];
        k->team_index = -1;
        if (!k->id && k->key) {
            char id[24];
            sw_config_key_id_derive(k->key, id, sizeof id);
            k->id = strdup(id);
            if (!k->id)
                w->oom = true;
        }
        if (!k->team)
            continue;
        for (size_t t = 0; t < cfg->n_teams; t++)
            if (cfg->teams[t].name && !strcmp(cfg->teams[t].name, k->team))
                k->team_index = (long)t;
        if (k->team_index < 0) {
            snprintf(p, sizeof p, "keys[%zu].team", i);
            sw_walk_error_at(w, k->team_line, k->team_col, p,
                             "\"%s\" is not a team: list it under teams: (teams: - name: %s)",
                             k->team, k->team);
        }
    }
}

static void key_check_id(struct sw_walk *w, const struct sw_config *cfg, size_t index,
                            const yaml_node_t *node, const char *path)
{
    const struct sw_config_key *k = &cfg->keys[index];
    char p[SW_WALK_MAX_PATH];
    for (size_t j = 0; k->id && j < index; j++)
        if (cfg->keys[j].id && !strcmp(cfg->keys[j].id, k->id)) {
            sw_walk_path_key(p, sizeof p, path, "id");
            sw_walk_error(w, node, p, "id \"%s\" is also keys[%zu]'s; every key_id is unique",
                          k->id, j);
        }
}

/* ---- Cross-field checks ---- */

static const struct sw_walk_section key_section, admin_section, backend_section,
    model_section, routing_section;

static void check_key(struct sw_walk *w, void *base, const yaml_node_t *map,
                      const yaml_node_t *const *vals, const char *path, size_t index)
{
    (void)map;
    (void)path;
    struct sw_config *cfg = w->user;
    struct sw_config_key *k = base;
    char p[SW_WALK_MAX_PATH];
    for (size_t j = 0; j < index; j++) {
        struct sw_config_key *o = &cfg->keys[j];
        if (k->name && o->name && !strcmp(k->name, o->name)) {
            sw_walk_path_key(p, sizeof(p), path, "name");
            sw_walk_error(w, sw_walk_val(&key_section, vals, "name"), p,
                          "duplicate name \"%s\" (also keys[%zu]); names must be unique",
                          k->name, j);
        }
        if (k->key && o->key && !strcmp(k->key, o->key)) {
            sw_walk_path_key(p, sizeof(p), path, "key");
            sw_walk_error(w, sw_walk_val(&key_section, vals, "key"), p,
                          "same secret as keys[%zu] (\"%s\"); every key needs its own secret",
                          j, o->name ? o->name : "?");
        }
    }
    key_check_id(w, cfg, index, sw_walk_val(&key_section, vals, "id"), path);
    const yaml_node_t *team = sw_walk_val(&key_section, vals, "team");
    if (team) {
        k->team_line = team->start_mark.line + 1;
        k->team_col = team->start_mark.column + 1;
    }
}

static void check_admin(struct sw_walk *w, void *base, const yaml_node_t *map,
                        const yaml_node_t *const *vals, const char *path, size_t index)
{
    (void)map;
    (void)index;
    struct sw_config *cfg = base;
    char p[SW_WALK_MAX_PATH];
    for (size_t j = 0; cfg->admin_key && j < cfg->n_keys; j++) {
        if (cfg->keys[j].key && !strcmp(cfg->keys[j].key, cfg->admin_key)) {
            sw_walk_path_key(p, sizeof(p), path, "key");
            sw_walk_error(w, sw_walk_val(&admin_section, vals, "key"), p,
                          "same secret as keys[%zu] (\"%s\"); the admin key must differ from "
                          "every client key",
                          j, cfg->keys[j].name ? cfg->keys[j].name : "?");
            break;
        }
    }
}

/* An azure backend: the dialect alone, the resource's root as url, a key
 * or a token; the azure section only with it. */
static void check_azure(struct sw_walk *w, struct sw_config_backend *b,
                        const yaml_node_t *const *vals, const char *path)
{
    char p[SW_WALK_MAX_PATH];
    bool azure = b->dialects & (1u << SW_DIALECT_AZURE);
    const yaml_node_t *az = sw_walk_val(&backend_section, vals, "azure");
    if (!azure && az) {
        sw_walk_path_key(p, sizeof p, path, "azure");
        sw_walk_error(w, az, p, "is for dialect azure only (omit it, or set dialect: azure)");
        return;
    }
    if (!azure)
        return;
    if (b->dialects != 1u << SW_DIALECT_AZURE) {
        sw_walk_path_key(p, sizeof p, path, "dialects");
        sw_walk_error(w, sw_walk_val(&backend_section, vals, "dialects"), p,
                      "azure is spoken alone: give dialect: azure (Azure serves the chat "
                      "completions API under its own paths)");
    }
    const char *host = b->url ? strstr(b->url, "://") : NULL;
    if (host && (strchr(host + 3, '/') || b->url_v1_stripped)) {
        sw_walk_path_key(p, sizeof p, path, "url");
        sw_walk_error(w, sw_walk_val(&backend_section, vals, "url"), p,
                      "an azure backend's url is the resource's root, e.g. "
                      "\"https://NAME.openai.azure.com\"; Spillway appends /openai/... itself");
    }
    const char *names[] = {b->azure.deployment, b->azure.api_version};
    const char *keys[] = {"azure.deployment", "azure.api_version"};
    for (size_t k = 0; k < 2; k++)
        if (names[k] && (!names[k][0] || names[k][strspn(names[k], "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                               "abcdefghijklmnopqrstuvwxyz"
                                                               "0123456789._-")])) {
            sw_walk_path_key(p, sizeof p, path, keys[k]);
            sw_walk_error(w, az, p, "\"%.64s\" may hold only A-Z a-z 0-9 . _ - (it goes "
                          "into the request's path or query)", names[k]);
        }
    int creds = !!b->azure.tenant_id + !!b->azure.client_id + !!b->azure.client_secret;
    if (creds && creds < 3) {
        sw_walk_path_key(p, sizeof p, path, "azure");
        sw_walk_error(w, az, p, "Entra ID client credentials need tenant_id, client_id and "
                      "client_secret together");
    }
    if (b->azure.tenant_id && b->azure.tenant_id[strspn(b->azure.tenant_id,
                                                        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789.-")]) {
        sw_walk_path_key(p, sizeof p, path, "azure.tenant_id");
        sw_walk_error(w, az, p, "a tenant is a GUID or a domain name (A-Z a-z 0-9 . -)");
    }
    if (!b->api_key && !b->azure.entra_token && creds < 3) {
        sw_walk_path_key(p, sizeof p, path, "api_key");
        sw_walk_error(w, sw_walk_val(&backend_section, vals, "name"), p,
                      "an azure backend needs api_key (sent as the api-key header), "
                      "azure.entra_token (an Entra ID bearer token) or Entra ID client "
                      "credentials (azure.tenant_id, client_id, client_secret)");
    }
}

/* A Google backend: gemini (an API key) or vertex (a project, a location
 * and a token source); dialect gemini with a vertex section is vertex. The
 * gemini and vertex sections only with them. */
static void check_google(struct sw_walk *w, struct sw_config_backend *b,
                         const yaml_node_t *const *vals, const char *path)
{
    char p[SW_WALK_MAX_PATH];
    const yaml_node_t *gm = sw_walk_val(&backend_section, vals, "gemini");
    const yaml_node_t *vx = sw_walk_val(&backend_section, vals, "vertex");
    unsigned google = (1u << SW_DIALECT_GEMINI) | (1u << SW_DIALECT_VERTEX) |
                      (1u << SW_DIALECT_VERTEX_ANTHROPIC);
    if (!(b->dialects & google)) {
        if (gm || vx) {
            sw_walk_path_key(p, sizeof p, path, gm ? "gemini" : "vertex");
            sw_walk_error(w, gm ? gm : vx, p, "is for dialect gemini or vertex only");
        }
        return;
    }
    if (b->dialects != (1u << SW_DIALECT_GEMINI) && b->dialects != (1u << SW_DIALECT_VERTEX) &&
        b->dialects != (1u << SW_DIALECT_VERTEX_ANTHROPIC)) {
        sw_walk_path_key(p, sizeof p, path, "dialects");
        sw_walk_error(w, sw_walk_val(&backend_section, vals, "dialects"), p,
                      "gemini, vertex and vertex_anthropic are spoken alone: give dialect: "
                      "gemini, vertex or vertex_anthropic");
        return;
    }
    if (b->dialect == SW_DIALECT_GEMINI && vx) {
        b->dialect = SW_DIALECT_VERTEX;
        b->dialects = 1u << SW_DIALECT_VERTEX;
    }
    const char *host = b->url ? strstr(b->url, "://") : NULL;
    if (host && (strchr(host + 3, '/') || b->url_v1_stripped)) {
        sw_walk_path_key(p, sizeof p, path, "url");
        sw_walk_error(w, sw_walk_val(&backend_section, vals, "url"), p,
                      "a gemini or vertex backend's url is the API's root, e.g. "
                      "\"https://generativelanguage.googleapis.com\" or "
                      "\"https://us-central1-aiplatform.googleapis.com\"; Spillway appends "
                      "/v1beta/models/... itself");
    }
    /* '@' for a publisher model's version (claude-sonnet-4@20250514) */
    static const char safe[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-@";
    const char *names[] = {b->model, b->gemini.api_version, b->vertex.project, b->vertex.location};
    const char *keys[] = {"model", "gemini.api_version", "vertex.project", "vertex.location"};
    for (size_t k = 0; k < 4; k++)
        if (names[k] && (!names[k][0] || names[k][strspn(names[k], safe)])) {
            sw_walk_path_key(p, sizeof p, path, keys[k]);
            sw_walk_error(w, k ? (k == 1 ? gm : vx) : sw_walk_val(&backend_section, vals, "model"),
                          p, "\"%.64s\" may hold only A-Z a-z 0-9 . _ - @ (it goes into the "
                          "request's path)", names[k]);
        }
    if (b->dialect == SW_DIALECT_GEMINI) {
        if (!b->api_key) {
            sw_walk_path_key(p, sizeof p, path, "api_key");
            sw_walk_error(w, sw_walk_val(&backend_section, vals, "name"), p,
                          "a gemini backend needs api_key (sent as x-goog-api-key); for "
                          "Vertex AI give a vertex section");
        }
        return;
    }
    sw_walk_path_key(p, sizeof p, path, "vertex");
    if (!b->vertex.project || !b->vertex.location)
        sw_walk_error(w, vx ? vx : sw_walk_val(&backend_section, vals, "name"), p,
                      "a vertex backend needs vertex.project and vertex.location");
    if (!b->vertex.credentials_file == !b->vertex.token_command)
        sw_walk_error(w, vx ? vx : sw_walk_val(&backend_section, vals, "name"), p,
                      "a vertex backend needs one of vertex.credentials_file (a service-account "
                      "JSON) and vertex.token_command");
}

static void check_backend(struct sw_walk *w, void *base, const yaml_node_t *map,
                          const yaml_node_t *const *vals, const char *path, size_t index)
{
    (void)map;
    struct sw_config *cfg = w->user;
    struct sw_config_backend *b = base;
    char p[SW_WALK_MAX_PATH];
    bool local = b->tier == SW_TIER_LOCAL;
    const yaml_node_t *dl = sw_walk_val(&backend_section, vals, "dialect");
    const yaml_node_t *dls = sw_walk_val(&backend_section, vals, "dialects");
    if (dl && dls) {
        sw_walk_path_key(p, sizeof p, path, "dialects");
        sw_walk_error(w, dls, p, "give either dialect or dialects, not both");
    }
    if (!b->dialects)
        b->dialects = 1u << b->dialect;
    check_azure(w, b, vals, path);
    const char *uhost = b->url ? strstr(b->url, "://") : NULL;
    const struct sw_config_aws_backend ab = {
        .bedrock = b->dialects & (1u << SW_DIALECT_BEDROCK),
        .alone = b->dialects == 1u << SW_DIALECT_BEDROCK,
        .url_has_path = uhost && (strchr(uhost + 3, '/') || b->url_v1_stripped),
        .url = &b->url, .model = b->model};
    sw_config_check_bedrock(w, &b->aws, &ab, &backend_section, vals, path);
    check_google(w, b, vals, path);
    const yaml_node_t *slots = sw_walk_val(&backend_section, vals, "slots");
    if (b->slots < 0) {
        b->slots = local ? 1 : 0; /* absent (or invalid, reported already) */
    } else if (local && b->slots == 0) {
        sw_walk_path_key(p, sizeof(p), path, "slots");
        sw_walk_error(w, slots, p,
                      "a local backend needs at least 1 slot (1..%d: the requests the server runs "
                      "at once, e.g. llama-server --parallel)",
                      MAX_SLOTS);
    }
    if (!sw_walk_val(&backend_section, vals, "supports_images"))
        b->supports_images = !local;
    if (local && b->region && strcmp(b->region, "local")) {
        sw_walk_path_key(p, sizeof(p), path, "region");
        sw_walk_error(w, sw_walk_val(&backend_section, vals, "region"), p,
                      "\"%s\": a local backend's region is always \"local\" (omit it)",
                      b->region);
        free(b->region);
        b->region = NULL;
    } else if (!local && b->region && !strcmp(b->region, "local")) {
        sw_walk_path_key(p, sizeof(p), path, "region");
        sw_walk_error(w, sw_walk_val(&backend_section, vals, "region"), p,
                      "\"local\" is the region of local backends; name the cloud's region, "
                      "e.g. \"eu-west\"");
        free(b->region);
        b->region = NULL;
    }
    if (local && !b->region) {
        b->region = strdup("local");
        if (!b->region)
            w->oom = true;
    }
    if (!local && b->load.source != SW_LOAD_NONE) {
        sw_walk_path_key(p, sizeof(p), path, "load");
        sw_walk_error(w, sw_walk_val(&backend_section, vals, "load"), p,
                      "load signals are read from local inference servers only (omit it for a "
                      "cloud backend)");
    }
    const yaml_node_t *ptps = sw_walk_val(&backend_section, vals, "prefill_tps");
    if (ptps && b->prefill_ms_per_token > 0) {
        sw_walk_path_key(p, sizeof p, path, "prefill_tps");
        sw_walk_error(w, ptps, p,
                      "give either prefill_tps or prefill_ms_per_token, not both (prefill_tps "
                      "= 1000 / prefill_ms_per_token)");
    } else if (b->prefill_tps > 0) {
        b->prefill_ms_per_token = 1000.0 / b->prefill_tps;
    }
    if (!b->health_path && local && !sw_walk_val(&backend_section, vals, "health_path"))
        b->health_path = strdup("/health");
    for (size_t j = 0; b->name && j < index; j++) {
        if (cfg->backends[j].name && !strcmp(cfg->backends[j].name, b->name)) {
            sw_walk_path_key(p, sizeof(p), path, "name");
            sw_walk_error(w, sw_walk_val(&backend_section, vals, "name"), p,
                          "duplicate name \"%s\" (also backends[%zu]); names must be unique",
                          b->name, j);
        }
    }
}

static void check_model(struct sw_walk *w, void *base, const yaml_node_t *map,
                        const yaml_node_t *const *vals, const char *path, size_t index)
{
    (void)map;
    struct sw_config *cfg = w->user;
    struct sw_config_model *m = base;
    char p[SW_WALK_MAX_PATH];
    for (size_t j = 0; m->name && j < index; j++) {
        if (cfg->models[j].name && !strcmp(cfg->models[j].name, m->name)) {
            sw_walk_path_key(p, sizeof(p), path, "name");
            sw_walk_error(w, sw_walk_val(&model_section, vals, "name"), p,
                          "duplicate name \"%s\" (also models[%zu]); names must be unique",
                          m->name, j);
        }
    }
    const yaml_node_t *ttft = sw_walk_val(&model_section, vals, "ttft_budget_ms");
    if (ttft && m->ttft_budget_ms >= cfg->routing.request_timeout_ms) {
        sw_walk_path_key(p, sizeof(p), path, "ttft_budget_ms");
        sw_walk_error(w, ttft, p, "%ld must be less than routing.request_timeout_ms (%ld)",
                      m->ttft_budget_ms, cfg->routing.request_timeout_ms);
    }
}

static void check_routing(struct sw_walk *w, void *base, const yaml_node_t *map,
                          const yaml_node_t *const *vals, const char *path, size_t index)
{
    (void)map;
    (void)index;
    struct sw_config_routing *r = base;
    const yaml_node_t *ttft = sw_walk_val(&routing_section, vals, "ttft_budget_ms");
    const yaml_node_t *rt = sw_walk_val(&routing_section, vals, "request_timeout_ms");
    char p[SW_WALK_MAX_PATH];
    if (r->ttft_budget_ms < r->request_timeout_ms)
        return;
    if (ttft) {
        sw_walk_path_key(p, sizeof(p), path, "ttft_budget_ms");
        sw_walk_error(w, ttft, p, "%ld must be less than routing.request_timeout_ms (%ld)",
                      r->ttft_budget_ms, r->request_timeout_ms);
    } else {
        sw_walk_path_key(p, sizeof(p), path, "request_timeout_ms");
        sw_walk_error(w, rt, p, "%ld must be greater than routing.ttft_budget_ms (%ld)",
                      r->request_timeout_ms, r->ttft_budget_ms);
    }
}

/* Every listed sensitive region must be some cloud backend's region: a typo
 * would otherwise silently keep sensitive requests local (or, worse, a
 * region nobody meant would be trusted once a backend appears with it). */
static void check_regions(struct sw_walk *w, const struct sw_config *cfg,
                          const struct sw_config_regions *r, const char *path)
{
    char known[512], ipath[SW_WALK_MAX_PATH];
    size_t used = 0;
    known[0] = '\0';
    for (size_t b = 0; b < cfg->n_backends && used < sizeof known; b++) {
        const char *reg = cfg->backends[b].region;
        bool dup = false;
        for (size_t j = 0; reg && j < b; j++)
            dup = dup || (cfg->backends[j].region && !strcmp(cfg->backends[j].region, reg));
        if (reg && cfg->backends[b].tier == SW_TIER_CLOUD && !dup)
            used += (size_t)snprintf(known + used, sizeof known - used, "%s%s",
                                     used ? ", " : "", reg);
    }
    for (size_t i = 0; i < r->n; i++) {
        bool found = false;
        for (size_t b = 0; b < cfg->n_backends && !found; b++)
            found = cfg->backends[b].tier == SW_TIER_CLOUD && cfg->backends[b].region &&
                    !strcmp(cfg->backends[b].region, r->names[i]);
        if (found)
            continue;
        sw_walk_path_index(ipath, sizeof ipath, path, r->index[i]);
        sw_walk_error_at(w, r->line[i], r->col[i], ipath,
                         "\"%s\" is no cloud backend's region (cloud regions: %s)", r->names[i],
                         used ? known : "none; set backends[].region");
    }
}

static void check_top(struct sw_walk *w, void *base, const yaml_node_t *map,
                      const yaml_node_t *const *vals, const char *path, size_t index);

/* ---- The settings tables (docs/configuration.md mirrors them) ---- */

static const char *const pii_policy_names[] = {"inherit", "off", "mask", "local_only", "block",
                                               NULL};
static const char *const pii_binary_names[] = {"inherit", "allow", "local", NULL};
static const char *const priority_names[] = {"interactive", "batch", NULL};
/* In the order of enum sw_load_source. */
static const char *const load_source_names[] = {"none", "llamacpp", "vllm", "sglang", "tgi",
                                                "ollama", NULL};
_Static_assert(sizeof(enum sw_tier) == sizeof(int), "ENUM fields are stored as int");
_Static_assert(sizeof(enum sw_dialect) == sizeof(int), "ENUM fields are stored as int");
_Static_assert(sizeof load_source_names / sizeof load_source_names[0] == SW_LOAD__COUNT + 1,
               "one name per load source");

#define KEY(f) offsetof(struct sw_config_key, f)
static const struct sw_walk_setting key_settings[] = {
    {.key = "name", .type = SW_WALK_NAME, .off = KEY(name), .required = true,
     .hint = "shown in logs and metrics"},
    {.key = "key", .type = SW_WALK_SECRET, .off = KEY(key), .required = true,
     .hint = "the bearer secret, usually \"${SOME_ENV_VAR}\""},
    {.key = "allow_cloud", .type = SW_WALK_BOOL, .off = KEY(allow_cloud), .def = 1},
    {.key = "sensitive", .type = SW_WALK_BOOL, .off = KEY(sensitive), .def = 0},
    {.key = "ttft_budget_ms", .type = SW_WALK_LONG, .off = KEY(ttft_budget_ms), .min = 0,
     .max = 600000, .def = 0},
    {.key = "pii", .type = SW_WALK_ENUM, .off = KEY(pii), .names = pii_policy_names,
     .def = SW_PII_POLICY_INHERIT, .hint = "inherit, off, mask, local_only or block"},
    {.key = "sensitive_regions", .type = SW_WALK_CUSTOM, .off = KEY(sensitive_regions),
     .parse = parse_regions, .hint = "a list of cloud region labels"},
    {.key = "pii_binary_parts", .type = SW_WALK_ENUM, .off = KEY(pii_binary_parts),
     .names = pii_binary_names, .def = SW_PII_BINARY_INHERIT, .hint = "inherit, allow or local"},
    {.key = "pii_allow", .type = SW_WALK_MAP, .off = KEY(pii_allow), .sub = &pii_allow_section},
    {.key = "priority", .type = SW_WALK_ENUM, .off = KEY(priority), .names = priority_names,
     .def = SW_PRIORITY_INTERACTIVE, .hint = "interactive or batch"},
    {.key = "id", .type = SW_WALK_NAME, .off = KEY(id),
     .hint = "a stable key_id for logs and metrics; default: derived from the secret"},
    {.key = "team", .type = SW_WALK_NAME, .off = KEY(team), .hint = "a teams[] name"},
    SW_CONFIG_TENANCY_SETTINGS(KEY(t)),
};
static const struct sw_walk_section key_section = {
    key_settings, sizeof(key_settings) / sizeof(key_settings[0]),
    sizeof(struct sw_config_key), check_key};

#define CFG(f) offsetof(struct sw_config, f)
static const struct sw_walk_setting admin_settings[] = {
    {.key = "key", .type = SW_WALK_SECRET, .off = CFG(admin_key), .required = true,
     .hint = "the admin bearer secret; omit the whole admin section to disable the admin API"},
};
static const struct sw_walk_section admin_section = {
    admin_settings, sizeof(admin_settings) / sizeof(admin_settings[0]), 0, check_admin};

#define BE(f) offsetof(struct sw_config_backend, f)
static const struct sw_walk_setting price_settings[] = {
    {.key = "input_usd_per_mtok", .type = SW_WALK_DOUBLE, .off = BE(input_usd_per_mtok),
     .dmin = 0, .dmax = 10000},
    {.key = "output_usd_per_mtok", .type = SW_WALK_DOUBLE, .off = BE(output_usd_per_mtok),
     .dmin = 0, .dmax = 10000},
};
static const struct sw_walk_section price_section = {
    price_settings, sizeof(price_settings) / sizeof(price_settings[0]), 0, NULL};

static const struct sw_walk_setting load_settings[] = {
    {.key = "source", .type = SW_WALK_ENUM, .off = BE(load.source) - BE(load),
     .names = load_source_names, .def = SW_LOAD_NONE,
     .hint = "llamacpp, vllm, sglang, tgi, ollama or none"},
    {.key = "poll_ms", .type = SW_WALK_LONG, .off = BE(load.poll_ms) - BE(load), .min = 50,
     .max = 60000, .def = 250},
};
static const struct sw_walk_section load_section = {
    load_settings, sizeof(load_settings) / sizeof(load_settings[0]), 0, NULL};

#define AZ(f) (BE(azure.f) - BE(azure))
static const struct sw_walk_setting azure_settings[] = {
    {.key = "deployment", .type = SW_WALK_TEXT, .off = AZ(deployment),
     .hint = "the deployment's name on the Azure resource; absent: the backend's model"},
    {.key = "api_version", .type = SW_WALK_TEXT, .off = AZ(api_version),
     .hint = "the api-version query, e.g. \"2024-10-21\"; absent: the v1 API (/openai/v1)"},
    {.key = "entra_token", .type = SW_WALK_SECRET, .off = AZ(entra_token),
     .hint = "an Entra ID access token, sent as Authorization: Bearer instead of api-key"},
    {.key = "tenant_id", .type = SW_WALK_TEXT, .off = AZ(tenant_id),
     .hint = "the Entra ID tenant (a GUID or domain) of the client credentials"},
    {.key = "client_id", .type = SW_WALK_TEXT, .off = AZ(client_id),
     .hint = "the application (client) id of the client credentials"},
    {.key = "client_secret", .type = SW_WALK_SECRET, .off = AZ(client_secret),
     .hint = "the client secret; the gateway fetches and refreshes the token"},
    {.key = "token_url", .type = SW_WALK_TEXT, .off = AZ(token_url),
     .hint = "the token endpoint; absent: https://login.microsoftonline.com/{tenant}/oauth2/v2.0/token"},
};
static const struct sw_walk_section azure_section = {
    azure_settings, sizeof(azure_settings) / sizeof(azure_settings[0]), 0, NULL};

#define GM(f) (BE(gemini.f) - BE(gemini))
static const struct sw_walk_setting gemini_settings[] = {
    {.key = "api_version", .type = SW_WALK_TEXT, .off = GM(api_version),
     .hint = "the API version in the path; absent: v1beta (Gemini API), v1 (Vertex AI)"},
    {.key = "safety_threshold", .type = SW_WALK_TEXT, .off = GM(safety_threshold),
     .hint = "sent as every harm category's threshold, e.g. BLOCK_ONLY_HIGH"},
};
static const struct sw_walk_section gemini_section = {
    gemini_settings, sizeof(gemini_settings) / sizeof(gemini_settings[0]), 0, NULL};

#define VX(f) (BE(vertex.f) - BE(vertex))
static const struct sw_walk_setting vertex_settings[] = {
    {.key = "project", .type = SW_WALK_TEXT, .off = VX(project), .hint = "the Google Cloud project id"},
    {.key = "location", .type = SW_WALK_TEXT, .off = VX(location),
     .hint = "the region, e.g. us-central1 or europe-west4 (or global)"},
    {.key = "credentials_file", .type = SW_WALK_TEXT, .off = VX(credentials_file),
     .hint = "a service-account key file (JSON)"},
    {.key = "token_command", .type = SW_WALK_TEXT, .off = VX(token_command),
     .hint = "a command that prints an access token, e.g. gcloud auth print-access-token"},
    {.key = "token_url", .type = SW_WALK_TEXT, .off = VX(token_url),
     .hint = "the token endpoint; absent: the service account's token_uri"},
    {.key = "token_command_timeout_ms", .type = SW_WALK_LONG, .off = VX(token_command_timeout_ms),
     .min = 100, .max = 600000, .def = 10000},
};
static const struct sw_walk_section vertex_section = {
    vertex_settings, sizeof(vertex_settings) / sizeof(vertex_settings[0]), 0, NULL};

static const struct sw_walk_setting backend_settings[] = {
    {.key = "name", .type = SW_WALK_NAME, .off = BE(name), .required = true,
     .hint = "1-64 characters from A-Z a-z 0-9 _ . -"},
    {.key = "tier", .type = SW_WALK_ENUM, .off = BE(tier), .required = true,
     .names = tier_names, .def = SW_TIER_LOCAL, .hint = "local or cloud"},
    {.key = "url", .type = SW_WALK_CUSTOM, .off = BE(url), .required = true,
     .optional_if = "dialect=bedrock", .parse = parse_url, .hint = "an http:// or https:// URL"},
    {.key = "dialect", .type = SW_WALK_ENUM, .off = BE(dialect), .names = dialect_names,
     .def = SW_DIALECT_OPENAI,
     .fix = "llama.cpp, Ollama, vLLM and OpenAI speak openai; Anthropic's API speaks anthropic; "
            "OpenAI's Responses API (OpenAI, vLLM) is responses; Azure OpenAI is azure; AWS "
            "Bedrock's Converse API is bedrock; Google's Gemini API is gemini, Gemini on Vertex "
            "AI is vertex, Claude on Vertex AI is vertex_anthropic"},
    {.key = "dialects", .type = SW_WALK_CUSTOM, .off = BE(dialects), .parse = parse_dialects,
     .hint = "a list of dialects, e.g. [openai, anthropic]"},
    {.key = "anthropic_version", .type = SW_WALK_TEXT, .off = BE(anthropic_version),
     .hint = "the anthropic-version header, e.g. \"2023-06-01\""},
    {.key = "model", .type = SW_WALK_TEXT, .off = BE(model), .required = true,
     .hint = "the model id the upstream expects"},
    {.key = "api_key", .type = SW_WALK_SECRET, .off = BE(api_key)},
    {.key = "slots", .type = SW_WALK_LONG, .off = BE(slots), .min = 0, .max = MAX_SLOTS,
     .def = -1 /* unset: check_backend picks 1 (local) or 0 (cloud) */},
    {.key = "price", .type = SW_WALK_MAP, .off = 0, .sub = &price_section},
    {.key = "connect_timeout_ms", .type = SW_WALK_LONG, .off = BE(connect_timeout_ms),
     .min = 1, .max = 600000, .def = 2000},
    {.key = "max_context_tokens", .type = SW_WALK_LONG, .off = BE(max_context_tokens),
     .min = 0, .max = 100000000, .def = 0},
    {.key = "supports_tools", .type = SW_WALK_BOOL, .off = BE(supports_tools), .def = 1},
    {.key = "supports_images", .type = SW_WALK_BOOL, .off = BE(supports_images), .def = 0},
    {.key = "tls_verify", .type = SW_WALK_BOOL, .off = BE(tls_verify), .def = 1},
    {.key = "ca_file", .type = SW_WALK_TEXT, .off = BE(ca_file)},
    {.key = "rpm", .type = SW_WALK_LONG, .off = BE(rpm), .min = 0, .max = 100000000, .def = 0},
    {.key = "tpm", .type = SW_WALK_LONG, .off = BE(tpm), .min = 0, .max = 10000000000L, .def = 0},
    {.key = "queue_max", .type = SW_WALK_LONG, .off = BE(queue_max), .min = 0, .max = 100000,
     .def = 64},
    {.key = "health_path", .type = SW_WALK_TEXT, .off = BE(health_path),
     .hint = "a path such as /health; absent: /health for local backends, none for cloud"},
    {.key = "keep_warm_ms", .type = SW_WALK_LONG, .off = BE(keep_warm_ms), .min = 0,
     .max = 86400000, .def = 0},
    {.key = "region", .type = SW_WALK_CUSTOM, .off = BE(region), .parse = parse_region,
     .hint = "a region label such as eu-west; local backends are always \"local\""},
    {.key = "load", .type = SW_WALK_MAP, .off = BE(load), .sub = &load_section},
    {.key = "azure", .type = SW_WALK_MAP, .off = BE(azure), .sub = &azure_section},
    {.key = "aws", .type = SW_WALK_MAP, .off = BE(aws), .sub = &sw_config_aws_section},
    {.key = "gemini", .type = SW_WALK_MAP, .off = BE(gemini), .sub = &gemini_section},
    {.key = "vertex", .type = SW_WALK_MAP, .off = BE(vertex), .sub = &vertex_section},
    {.key = "max_output_tokens", .type = SW_WALK_LONG, .off = BE(max_output_tokens), .min = 1,
     .max = 10000000, .def = 4096},
    {.key = "prefill_ms_per_token", .type = SW_WALK_DOUBLE, .off = BE(prefill_ms_per_token),
     .dmin = 0, .dmax = 10000},
    {.key = "decode_tokens_per_s", .type = SW_WALK_DOUBLE, .off = BE(decode_tokens_per_s),
     .dmin = 0, .dmax = 100000},
    {.key = "prefill_tps", .type = SW_WALK_DOUBLE, .off = BE(prefill_tps), .dmin = 0,
     .dmax = 10000000},
    {.key = "prefill_warmup", .type = SW_WALK_BOOL, .off = BE(prefill_warmup), .def = 0},
};
static const struct sw_walk_section backend_section = {
    backend_settings, sizeof(backend_settings) / sizeof(backend_settings[0]),
    sizeof(struct sw_config_backend), check_backend};

#define MO(f) offsetof(struct sw_config_model, f)
static const char *const contract_violation_names[] = {"pass", "retry", "reject", NULL};
static const char *const contract_stream_names[] = {"log", "enforce", NULL};
static const struct sw_walk_setting contract_settings[] = {
    {.key = "on_violation", .type = SW_WALK_ENUM,
     .off = offsetof(struct sw_config_contract, on_violation), .names = contract_violation_names,
     .def = SW_CONTRACT_PASS, .hint = "pass, retry or reject"},
    {.key = "stream", .type = SW_WALK_ENUM, .off = offsetof(struct sw_config_contract, stream),
     .names = contract_stream_names, .def = SW_CONTRACT_STREAM_LOG, .hint = "log or enforce"},
};
static const struct sw_walk_section contract_section = {
    contract_settings, sizeof(contract_settings) / sizeof(contract_settings[0]), 0, NULL};

/* translation: {unsupported: reject | drop}, on the file and per model */
static const char *const translation_names[] = {"reject", "drop", "inherit", NULL};
static const char *const translation_top_names[] = {"reject", "drop", NULL};
static const struct sw_walk_setting model_translation_settings[] = {
    {.key = "unsupported", .type = SW_WALK_ENUM, .off = 0, .names = translation_names,
     .def = SW_TRANSLATION_INHERIT, .hint = "reject, drop or inherit"},
};
static const struct sw_walk_section model_translation_section = {
    model_translation_settings, 1, 0, NULL};
static const struct sw_walk_setting top_translation_settings[] = {
    {.key = "unsupported", .type = SW_WALK_ENUM, .off = 0, .names = translation_top_names,
     .def = SW_TRANSLATION_REJECT, .hint = "reject or drop"},
};
static const struct sw_walk_section top_translation_section = {top_translation_settings, 1, 0,
                                                               NULL};

static const struct sw_walk_setting model_settings[] = {
    {.key = "name", .type = SW_WALK_TEXT, .off = MO(name), .required = true,
     .hint = "the model name clients ask for"},
    {.key = "backends", .type = SW_WALK_CUSTOM, .off = MO(backends), .aux_off = MO(n_backends),
     .required = true, .parse = parse_refs, .hint = "a list of backend names"},
    {.key = "ttft_budget_ms", .type = SW_WALK_LONG, .off = MO(ttft_budget_ms), .min = 0,
     .max = 600000, .def = 0},
    {.key = "pii", .type = SW_WALK_ENUM, .off = MO(pii), .names = pii_policy_names,
     .def = SW_PII_POLICY_INHERIT, .hint = "inherit, off, mask, local_only or block"},
    {.key = "sensitive_regions", .type = SW_WALK_CUSTOM, .off = MO(sensitive_regions),
     .parse = parse_regions, .hint = "a list of cloud region labels"},
    {.key = "pii_binary_parts", .type = SW_WALK_ENUM, .off = MO(pii_binary_parts),
     .names = pii_binary_names, .def = SW_PII_BINARY_INHERIT, .hint = "inherit, allow or local"},
    {.key = "pii_allow", .type = SW_WALK_MAP, .off = MO(pii_allow), .sub = &pii_allow_section},
    {.key = "contract", .type = SW_WALK_MAP, .off = MO(contract), .sub = &contract_section},
    {.key = "translation", .type = SW_WALK_MAP, .off = MO(translation_unsupported),
     .sub = &model_translation_section},
};
static const struct sw_walk_section model_section = {
    model_settings, sizeof(model_settings) / sizeof(model_settings[0]),
    sizeof(struct sw_config_model), check_model};

#define RT(f) offsetof(struct sw_config_routing, f)
static const struct sw_walk_setting latency_settings[] = {
    {.key = "window_ms", .type = SW_WALK_LONG, .off = RT(latency.window_ms) - RT(latency),
     .min = 1000, .max = 3600000, .def = 30000},
    {.key = "degrade_ms", .type = SW_WALK_LONG, .off = RT(latency.degrade_ms) - RT(latency),
     .min = 1, .max = 600000, .def = 200},
    {.key = "recover_ms", .type = SW_WALK_LONG, .off = RT(latency.recover_ms) - RT(latency),
     .min = 1, .max = 600000, .def = 150},
    {.key = "dwell_ms", .type = SW_WALK_LONG, .off = RT(latency.dwell_ms) - RT(latency),
     .min = 0, .max = 3600000, .def = 10000},
};
static void check_latency(struct sw_walk *w, void *base, const yaml_node_t *map,
                          const yaml_node_t *const *vals, const char *path, size_t index);
static const struct sw_walk_section latency_section = {
    latency_settings, sizeof(latency_settings) / sizeof(latency_settings[0]), 0, check_latency};

static const struct sw_walk_setting breaker_settings[] = {
    {.key = "failures", .type = SW_WALK_LONG, .off = RT(breaker.failures) - RT(breaker),
     .min = 1, .max = 1000, .def = 5},
    {.key = "window_ms", .type = SW_WALK_LONG, .off = RT(breaker.window_ms) - RT(breaker),
     .min = 1000, .max = 3600000, .def = 60000},
    {.key = "cooldown_ms", .type = SW_WALK_LONG, .off = RT(breaker.cooldown_ms) - RT(breaker),
     .min = 100, .max = 3600000, .def = 30000},
};
static const struct sw_walk_section breaker_section = {
    breaker_settings, sizeof(breaker_settings) / sizeof(breaker_settings[0]), 0, NULL};

static const struct sw_walk_setting affinity_settings[] = {
    {.key = "enabled", .type = SW_WALK_BOOL, .off = RT(affinity.enabled) - RT(affinity), .def = 1},
    {.key = "ttl_s", .type = SW_WALK_LONG, .off = RT(affinity.ttl_s) - RT(affinity), .min = 1,
     .max = 86400, .def = 300},
    {.key = "max_entries", .type = SW_WALK_LONG, .off = RT(affinity.max_entries) - RT(affinity),
     .min = 1, .max = 16777216, .def = 256},
};
static const struct sw_walk_section affinity_section = {
    affinity_settings, sizeof(affinity_settings) / sizeof(affinity_settings[0]), 0, NULL};

static const char *const spend_window_names[] = {"hour", "day", NULL};
static const char *const on_cap_names[] = {"shed", "degrade", "keep_local", NULL};
static const struct sw_walk_setting spend_settings[] = {
    {.key = "cap_usd", .type = SW_WALK_DOUBLE, .off = RT(spend.cap_usd) - RT(spend), .dmin = 0,
     .dmax = 1e9},
    {.key = "window", .type = SW_WALK_ENUM, .off = RT(spend.window) - RT(spend),
     .names = spend_window_names, .def = SW_SPEND_HOUR, .hint = "hour or day"},
    {.key = "on_cap", .type = SW_WALK_ENUM, .off = RT(spend.on_cap) - RT(spend),
     .names = on_cap_names, .def = SW_ON_CAP_SHED, .hint = "shed, degrade or keep_local"},
    {.key = "degrade_to", .type = SW_WALK_NAME, .off = RT(spend.degrade_to) - RT(spend),
     .hint = "the name of a local backend"},
    {.key = "shed_retry_after_s", .type = SW_WALK_LONG,
     .off = RT(spend.shed_retry_after_s) - RT(spend), .min = 1, .max = 86400, .def = 60},
};
static void check_spend(struct sw_walk *w, void *base, const yaml_node_t *map,
                        const yaml_node_t *const *vals, const char *path, size_t index);
static const struct sw_walk_section spend_section = {
    spend_settings, sizeof(spend_settings) / sizeof(spend_settings[0]), 0, check_spend};

static const struct sw_walk_setting routing_settings[] = {
    {.key = "ttft_budget_ms", .type = SW_WALK_LONG, .off = RT(ttft_budget_ms), .min = 1,
     .max = 600000, .def = 800},
    {.key = "request_timeout_ms", .type = SW_WALK_LONG, .off = RT(request_timeout_ms),
     .min = 1, .max = 3600000, .def = 30000},
    {.key = "default_max_tokens", .type = SW_WALK_LONG, .off = RT(default_max_tokens), .min = 1,
     .max = 1000000, .def = 256},
    {.key = "batch_ttft_budget_ms", .type = SW_WALK_LONG, .off = RT(batch_ttft_budget_ms),
     .min = 0, .max = 3600000, .def = 0},
    {.key = "health_interval_ms", .type = SW_WALK_LONG, .off = RT(health_interval_ms),
     .min = 100, .max = 3600000, .def = 2000},
    {.key = "overdue_factor", .type = SW_WALK_DOUBLE, .off = RT(overdue_factor), .dmin = 0,
     .dmax = 1000, .ddef = 4},
    {.key = "overdue_floor_ms", .type = SW_WALK_LONG, .off = RT(overdue_floor_ms), .min = 0,
     .max = 3600000, .def = 5000},
    {.key = "emergency", .type = SW_WALK_BOOL, .off = RT(emergency), .def = 0},
    {.key = "latency", .type = SW_WALK_MAP, .off = RT(latency), .sub = &latency_section},
    {.key = "breaker", .type = SW_WALK_MAP, .off = RT(breaker), .sub = &breaker_section},
    {.key = "spend", .type = SW_WALK_MAP, .off = RT(spend), .sub = &spend_section},
    {.key = "affinity", .type = SW_WALK_MAP, .off = RT(affinity), .sub = &affinity_section},
};
static const struct sw_walk_section routing_section = {
    routing_settings, sizeof(routing_settings) / sizeof(routing_settings[0]), 0,
    check_routing};

#define LI(f) offsetof(struct sw_config_limits, f)
static const struct sw_walk_setting limits_settings[] = {
    {.key = "max_body_bytes", .type = SW_WALK_LONG, .off = LI(max_body_bytes), .min = 1024,
     .max = 1073741824, .def = 4194304},
    {.key = "max_header_bytes", .type = SW_WALK_LONG, .off = LI(max_header_bytes),
     .min = 1024, .max = 1048576, .def = 16384},
    {.key = "max_connections", .type = SW_WALK_LONG, .off = LI(max_connections), .min = 1,
     .max = 1000000, .def = 1024},
    {.key = "client_timeout_ms", .type = SW_WALK_LONG, .off = LI(client_timeout_ms),
     .min = 100, .max = 3600000, .def = 15000},
    {.key = "max_response_bytes", .type = SW_WALK_LONG, .off = LI(max_response_bytes),
     .min = 1024, .max = 1073741824, .def = 16777216},
    {.key = "drain_timeout_ms", .type = SW_WALK_LONG, .off = LI(drain_timeout_ms), .min = 0,
     .max = 3600000, .def = 15000},
    {.key = "scan_threads", .type = SW_WALK_LONG, .off = LI(scan_threads), .min = 0,
     .max = 16, .def = 2},
    {.key = "scan_cache_bytes", .type = SW_WALK_LONG, .off = LI(scan_cache_bytes), .min = 0,
     .max = 1073741824, .def = 16777216},
    {.key = "parse_cache_bytes", .type = SW_WALK_LONG, .off = LI(parse_cache_bytes), .min = 0,
     .max = 1073741824, .def = 33554432},
};
static const struct sw_walk_section limits_section = {
    limits_settings, sizeof(limits_settings) / sizeof(limits_settings[0]), 0, NULL};

#define ST(f) offsetof(struct sw_config_state, f)
static void parse_redis_url(struct sw_walk *w, const struct sw_walk_setting *s,
                            const yaml_node_t *node, void *base, const char *path)
{
    char *str = NULL;
    if (sw_walk_string(w, s, node, path, &str))
        return;
    struct sw_rurl u;
    char why[512];
    if (sw_rurl_parse(str, &u, why, sizeof why)) {
        sw_walk_error(w, node, path, "%s", why); /* never the URL: it may hold a password */
        free(str);
        return;
    }
    *(char **)((char *)base + s->off) = str;
}
#define STLS(f) offsetof(struct sw_config_state_tls, f)
static const struct sw_walk_setting state_tls_settings[] = {
    {.key = "ca_file", .type = SW_WALK_TEXT, .off = STLS(ca_file),
     .hint = "a PEM file of the CA(s) that sign the Redis server's certificate"},
    {.key = "cert_file", .type = SW_WALK_TEXT, .off = STLS(cert_file),
     .hint = "a PEM client certificate (with key_file)"},
    {.key = "key_file", .type = SW_WALK_TEXT, .off = STLS(key_file),
     .hint = "the PEM private key of cert_file"},
    {.key = "server_name", .type = SW_WALK_TEXT, .off = STLS(server_name),
     .hint = "the name (or IP) the server's certificate must carry, default the URL's host"},
    {.key = "verify", .type = SW_WALK_BOOL, .off = STLS(verify), .def = 1},
};
static void check_state_tls(struct sw_walk *w, void *base, const yaml_node_t *map,
                            const yaml_node_t *const *vals, const char *path, size_t index);
static const struct sw_walk_section state_tls_section = {
    state_tls_settings, sizeof(state_tls_settings) / sizeof(state_tls_settings[0]), 0,
    check_state_tls};
static void check_state_tls(struct sw_walk *w, void *base, const yaml_node_t *map,
                            const yaml_node_t *const *vals, const char *path, size_t index)
{
    (void)index;
    struct sw_config_state_tls *t = base;
    char p[SW_WALK_MAX_PATH];
    static const char *const files[] = {"ca_file", "cert_file", "key_file"};
    char *const vals_f[] = {t->ca_file, t->cert_file, t->key_file};
    for (size_t i = 0; i < 3; i++) {
        if (vals_f[i] && access(vals_f[i], R_OK)) {
            sw_walk_path_key(p, sizeof p, path, files[i]);
            sw_walk_error(w, sw_walk_val(&state_tls_section, vals, files[i]), p,
                          "cannot read \"%s\": %s", vals_f[i], strerror(errno));
        }
    }
    if (!t->cert_file != !t->key_file)
        sw_walk_error(w, map, path, "cert_file and key_file go together (a client certificate "
                                    "and its key), or neither");
}
static const struct sw_walk_setting state_settings[] = {
    {.key = "redis", .type = SW_WALK_CUSTOM, .off = ST(redis), .parse = parse_redis_url,
     .hint = "redis[s]://[[USER]:PASSWORD@]HOST:PORT/DB"},
    {.key = "tls", .type = SW_WALK_MAP, .off = ST(tls), .sub = &state_tls_section,
     .hint = "{ ca_file, cert_file, key_file, server_name, verify } for rediss://"},
    {.key = "key_prefix", .type = SW_WALK_TEXT, .off = ST(key_prefix),
     .hint = "prefix of every key, default \"spillway:\""},
    {.key = "timeout_ms", .type = SW_WALK_LONG, .off = ST(timeout_ms), .min = 1, .max = 10000,
     .def = 50},
    {.key = "replicas", .type = SW_WALK_LONG, .off = ST(replicas), .min = 1, .max = 1000,
     .def = 1},
    {.key = "fallback_share", .type = SW_WALK_DOUBLE, .off = ST(fallback_share), .dmin = 0.001,
     .dmax = 1},
    {.key = "lease_ttl_ms", .type = SW_WALK_LONG, .off = ST(lease_ttl_ms), .min = 1000,
     .max = 600000, .def = 5000},
};
static const struct sw_walk_section state_section;
static void check_state(struct sw_walk *w, void *base, const yaml_node_t *map,
                        const yaml_node_t *const *vals, const char *path, size_t index)
{
    (void)map;
    (void)index;
    struct sw_config_state *st = base;
    const yaml_node_t *tls = sw_walk_val(&state_section, vals, "tls");
    if (tls && st->redis && strncmp(st->redis, "rediss://", 9)) {
        char p[SW_WALK_MAX_PATH];
        sw_walk_path_key(p, sizeof p, path, "tls");
        sw_walk_error(w, tls, p, "is set but state.redis is a plain redis:// URL: write "
                                 "rediss://HOST:PORT for TLS, or drop state.tls");
    }
    if (!st->key_prefix)
        st->key_prefix = strdup("spillway:");
    if (!(st->fallback_share > 0))
        st->fallback_share = 1.0 / (double)(st->replicas > 0 ? st->replicas : 1);
}
static const struct sw_walk_section state_section = {
    state_settings, sizeof(state_settings) / sizeof(state_settings[0]), 0, check_state};

#define RS(f) offsetof(struct sw_config_responses, f)
static const struct sw_walk_setting responses_settings[] = {
    {.key = "store_max_entries", .type = SW_WALK_LONG, .off = RS(store_max_entries), .min = 1,
     .max = 10000000, .def = 10000},
    {.key = "store_max_bytes", .type = SW_WALK_LONG, .off = RS(store_max_bytes), .min = 65536,
     .max = 17179869184L, .def = 67108864},
    {.key = "store_ttl_s", .type = SW_WALK_LONG, .off = RS(store_ttl_s), .min = 1,
     .max = 2592000, .def = 3600},
};
#define AL(f) offsetof(struct sw_config, access_log.f)
static const char *const access_format_names[] = {"json", "combined", NULL};
static const struct sw_walk_setting access_settings[] = {
    {.key = "path", .type = SW_WALK_TEXT, .off = AL(path) - CFG(access_log),
     .hint = "a file path, \"-\" for standard output or \"stderr\""},
    {.key = "format", .type = SW_WALK_ENUM, .off = AL(format) - CFG(access_log),
     .names = access_format_names, .def = 0, .hint = "json or combined"},
};
static const struct sw_walk_section access_section = {
    access_settings, sizeof(access_settings) / sizeof(access_settings[0]), 0, NULL};

/* telemetry.otlp.headers: a mapping of header names to values (a
 * collector's API key: from ${ENV}, a value is never shown in messages). */
static void parse_otlp_headers(struct sw_walk *w, const struct sw_walk_setting *s,
                               const yaml_node_t *node, void *base, const char *path)
{
    struct sw_config_otlp *o = (struct sw_config_otlp *)((char *)base + s->off);
    if (node->type != YAML_MAPPING_NODE) {
        char got[SHOW];
        sw_walk_describe(w, node, got, sizeof(got));
        sw_walk_error(w, node, path, "expected a mapping of header names to values, got %s", got);
        return;
    }
    static const struct sw_walk_setting name_setting = {.key = "header", .type = SW_WALK_NAME};
    /* a value may hold spaces ("Bearer ..."), never a control character */
    static const struct sw_walk_setting value_setting = {.key = "value", .type = SW_WALK_TEXT};
    for (yaml_node_pair_t *pr = node->data.mapping.pairs.start; pr < node->data.mapping.pairs.top;
         pr++) {
        yaml_node_t *k = yaml_document_get_node(w->doc, pr->key);
        yaml_node_t *v = yaml_document_get_node(w->doc, pr->value);
        char *name = NULL, *value = NULL;
        if (sw_walk_string(w, &name_setting, k, path, &name))
            continue;
        char ipath[SW_WALK_MAX_PATH];
        sw_walk_path_key(ipath, sizeof(ipath), path, name);
        if (sw_walk_string(w, &value_setting, v, ipath, &value)) {
            free(name);
            continue;
        }
        if (o->n_headers == SW_CONFIG_OTLP_MAX_HEADERS) {
            sw_walk_error(w, k, ipath, "too many headers (at most %d)", SW_CONFIG_OTLP_MAX_HEADERS);
            free(name);
            free(value);
            continue;
        }
        o->header_name[o->n_headers] = name;
        o->header_value[o->n_headers++] = value;
    }
}

#define OT(f) offsetof(struct sw_config_otlp, f)
static const char *const otlp_protocol_names[] = {"http/json", "http/protobuf", NULL};
static const struct sw_walk_setting otlp_batch_settings[] = {
    {.key = "max_spans", .type = SW_WALK_LONG, .off = OT(batch_max_spans) - OT(batch_max_spans),
     .min = 1, .max = 8192, .def = 512},
    {.key = "interval_ms", .type = SW_WALK_LONG,
     .off = OT(batch_interval_ms) - OT(batch_max_spans), .min = 1, .max = 60000, .def = 1000},
};
static const struct sw_walk_section otlp_batch_section = {
    otlp_batch_settings, sizeof(otlp_batch_settings) / sizeof(otlp_batch_settings[0]), 0, NULL};
static const struct sw_walk_setting otlp_settings[] = {
    {.key = "endpoint", .type = SW_WALK_CUSTOM, .off = OT(endpoint), .required = true,
     .parse = parse_url, .hint = "the collector's URL, e.g. \"http://127.0.0.1:4318\""},
    {.key = "protocol", .type = SW_WALK_ENUM, .off = OT(protocol), .names = otlp_protocol_names,
     .def = SW_OTLP_HTTP_JSON, .hint = "http/json or http/protobuf"},
    {.key = "headers", .type = SW_WALK_CUSTOM, .off = 0, .parse = parse_otlp_headers,
     .hint = "a mapping of header names to values"},
    {.key = "timeout_ms", .type = SW_WALK_LONG, .off = OT(timeout_ms), .min = 1, .max = 60000,
     .def = 5000},
    {.key = "sample_ratio", .type = SW_WALK_DOUBLE, .off = OT(sample_ratio), .dmin = 0,
     .dmax = 1, .ddef = 1.0},
    {.key = "batch", .type = SW_WALK_MAP, .off = OT(batch_max_spans), .sub = &otlp_batch_section},
    {.key = "queue_max", .type = SW_WALK_LONG, .off = OT(queue_max), .min = 1, .max = 1000000,
     .def = 4096},
    {.key = "service_name", .type = SW_WALK_NAME, .off = OT(service_name),
     .hint = "the resource's service.name, default spillway"},
    {.key = "ca_file", .type = SW_WALK_TEXT, .off = OT(ca_file),
     .hint = "a PEM CA bundle for an https endpoint"},
};
static void check_otlp(struct sw_walk *w, void *base, const yaml_node_t *map,
                       const yaml_node_t *const *vals, const char *path, size_t index)
{
    (void)w;
    (void)map;
    (void)vals;
    (void)path;
    (void)index;
    struct sw_config_otlp *o = base;
    if (!o->service_name)
        o->service_name = strdup("spillway");
}
static const struct sw_walk_section otlp_section = {
    otlp_settings, sizeof(otlp_settings) / sizeof(otlp_settings[0]), 0, check_otlp};
static const struct sw_walk_setting telemetry_settings[] = {
    {.key = "otlp", .type = SW_WALK_MAP, .off = 0, .sub = &otlp_section},
};
static const struct sw_walk_section telemetry_section = {
    telemetry_settings, sizeof(telemetry_settings) / sizeof(telemetry_settings[0]), 0, NULL};

static const struct sw_walk_section responses_section = {
    responses_settings, sizeof(responses_settings) / sizeof(responses_settings[0]), 0, NULL};

/* Table order is processing order: backends before models (which refer to
 * them), routing before models (model budgets are checked against it), keys
 * before admin. Messages are sorted by position afterwards. */
#define PC(f) offsetof(struct sw_config_pii_custom, f)
static const struct sw_walk_setting pii_custom_settings[] = {
    {.key = "name", .type = SW_WALK_NAME, .off = PC(name), .required = true,
     .hint = "the entity type, e.g. employee_id"},
    {.key = "regex", .type = SW_WALK_TEXT, .off = PC(regex), .required = true,
     .hint = "a PCRE-style pattern"},
    {.key = "validator", .type = SW_WALK_CUSTOM, .off = PC(validator), .parse = parse_validator,
     .hint = "luhn, mod97 or elfproef"},
};
static const struct sw_walk_section pii_custom_section = {
    pii_custom_settings, sizeof(pii_custom_settings) / sizeof(pii_custom_settings[0]),
    sizeof(struct sw_config_pii_custom), NULL};

static const struct sw_walk_setting pii_settings[] = {
    {.key = "policy", .type = SW_WALK_ENUM, .off = CFG(pii.policy) - CFG(pii),
     .names = pii_policy_names, .def = SW_PII_POLICY_LOCAL_ONLY,
     .hint = "off, mask, local_only or block"},
    {.key = "binary_parts", .type = SW_WALK_ENUM, .off = CFG(pii.binary_parts) - CFG(pii),
     .names = pii_binary_names, .def = SW_PII_BINARY_LOCAL, .hint = "allow or local"},
    {.key = "custom", .type = SW_WALK_LIST, .off = CFG(pii.custom) - CFG(pii),
     .aux_off = CFG(pii.n_custom) - CFG(pii), .sub = &pii_custom_section,
     .hint = "a list of {name, regex, validator}"},
    {.key = "sensitive_regions", .type = SW_WALK_CUSTOM,
     .off = CFG(pii.sensitive_regions) - CFG(pii), .parse = parse_regions,
     .hint = "a list of cloud region labels"},
    {.key = "phone_regions", .type = SW_WALK_CUSTOM, .off = CFG(pii.phone_regions) - CFG(pii),
     .aux_off = CFG(pii.n_phone_regions) - CFG(pii), .parse = parse_phone_regions,
     .hint = "a list of ISO 3166 region codes"},
    {.key = "allow", .type = SW_WALK_MAP, .off = CFG(pii.allow) - CFG(pii), .sub = &pii_allow_section},
};
static const struct sw_walk_section pii_section;

/* pii.binary_parts is the base the keys and models inherit: it has no
 * "inherit" of its own. */
static void check_pii(struct sw_walk *w, void *base, const yaml_node_t *map,
                      const yaml_node_t *const *vals, const char *path, size_t index)
{
    (void)map;
    (void)index;
    const enum sw_pii_binary *b =
        (const enum sw_pii_binary *)((const char *)base + CFG(pii.binary_parts) - CFG(pii));
    if (*b == SW_PII_BINARY_INHERIT) {
        char p[SW_WALK_MAX_PATH];
        sw_walk_path_key(p, sizeof(p), path, "binary_parts");
        sw_walk_error(w, sw_walk_val(&pii_section, vals, "binary_parts"), p,
                      "must be allow or local (inherit is for keys and models)");
    }
}
static const struct sw_walk_section pii_section = {
    pii_settings, sizeof(pii_settings) / sizeof(pii_settings[0]), 0, check_pii};

static const struct sw_walk_setting plan_cost_settings[] = {
    {.key = "usd_per_hour", .type = SW_WALK_DOUBLE, .off = CFG(plan.local_usd_per_hour) - CFG(plan),
     .dmin = 0, .dmax = 1e6},
    {.key = "usd_per_month", .type = SW_WALK_DOUBLE,
     .off = CFG(plan.local_usd_per_month) - CFG(plan), .dmin = 0, .dmax = 1e9},
};
static const struct sw_walk_section plan_cost_section = {
    plan_cost_settings, sizeof(plan_cost_settings) / sizeof(plan_cost_settings[0]), 0, NULL};
static const struct sw_walk_setting plan_settings[] = {
    {.key = "local_cost", .type = SW_WALK_MAP, .off = 0, .sub = &plan_cost_section},
};
static const struct sw_walk_section plan_section = {
    plan_settings, sizeof(plan_settings) / sizeof(plan_settings[0]), 0, NULL};

static const struct sw_walk_setting top_settings[] = {
    {.key = "listen", .type = SW_WALK_CUSTOM, .off = CFG(listen_host),
     .aux_off = CFG(listen_port), .parse = parse_listen, .hint = "\"host:port\""},
    {.key = "listen_hosts", .type = SW_WALK_CUSTOM, .off = CFG(listen_hosts),
     .parse = parse_listen_hosts},
    {.key = "keys", .type = SW_WALK_LIST, .off = CFG(keys), .aux_off = CFG(n_keys),
     .sub = &key_section, .hint = "omit keys to disable client auth, or list at least one key"},
    {.key = "teams", .type = SW_WALK_LIST, .off = CFG(teams), .aux_off = CFG(n_teams),
     .sub = &team_section, .hint = "a list of teams, each with a name"},
    {.key = "admin", .type = SW_WALK_MAP, .off = 0, .sub = &admin_section},
    {.key = "backends", .type = SW_WALK_LIST, .off = CFG(backends), .aux_off = CFG(n_backends),
     .required = true, .sub = &backend_section,
     .hint = "a list of backends, each with name, tier, url and model"},
    {.key = "routing", .type = SW_WALK_MAP, .off = CFG(routing), .sub = &routing_section},
    {.key = "models", .type = SW_WALK_LIST, .off = CFG(models), .aux_off = CFG(n_models),
     .required = true, .sub = &model_section,
     .hint = "a list of models, each with name and backends"},
    {.key = "limits", .type = SW_WALK_MAP, .off = CFG(limits), .sub = &limits_section},
    {.key = "pii", .type = SW_WALK_MAP, .off = CFG(pii), .sub = &pii_section},
    {.key = "state", .type = SW_WALK_MAP, .off = CFG(state), .sub = &state_section},
    {.key = "responses", .type = SW_WALK_MAP, .off = CFG(responses), .sub = &responses_section},
    {.key = "translation", .type = SW_WALK_MAP, .off = CFG(translation_unsupported),
     .sub = &top_translation_section},
    {.key = "decision_log", .type = SW_WALK_TEXT, .off = CFG(decision_log),
     .hint = "a file path, or \"-\" for standard output"},
    {.key = "access_log", .type = SW_WALK_MAP, .off = CFG(access_log), .sub = &access_section},
    {.key = "telemetry", .type = SW_WALK_MAP, .off = CFG(otlp), .sub = &telemetry_section},
    {.key = "plan", .type = SW_WALK_MAP, .off = CFG(plan), .sub = &plan_section},
};
static const struct sw_walk_section top_section = {
    top_settings, sizeof(top_settings) / sizeof(top_settings[0]), 0, check_top};

static void check_latency(struct sw_walk *w, void *base, const yaml_node_t *map,
                          const yaml_node_t *const *vals, const char *path, size_t index)
{
    (void)map;
    (void)index;
    const struct sw_config_routing *r = (const void *)((const char *)base - RT(latency));
    const long degrade = r->latency.degrade_ms, recover = r->latency.recover_ms;
    if (recover >= degrade) {
        char p[SW_WALK_MAX_PATH];
        sw_walk_path_key(p, sizeof(p), path, "recover_ms");
        sw_walk_error(w, sw_walk_val(&latency_section, vals, "recover_ms")
                             ? sw_walk_val(&latency_section, vals, "recover_ms")
                             : sw_walk_val(&latency_section, vals, "degrade_ms"),
                      p, "%ld must be below degrade_ms (%ld): the gap is the hysteresis", recover,
                      degrade);
    }
}

/* degrade_to names a local backend; backends are walked before routing. */
static void check_spend(struct sw_walk *w, void *base, const yaml_node_t *map,
                        const yaml_node_t *const *vals, const char *path, size_t index)
{
    (void)index;
    struct sw_config *cfg = w->user;
    struct sw_config_routing *r = &cfg->routing;
    (void)base;
    char p[SW_WALK_MAX_PATH];
    r->spend.degrade_backend = -1;
    if (r->spend.degrade_to) {
        for (size_t i = 0; i < cfg->n_backends; i++)
            if (cfg->backends[i].name && !strcmp(cfg->backends[i].name, r->spend.degrade_to))
                r->spend.degrade_backend = (long)i;
        sw_walk_path_key(p, sizeof(p), path, "degrade_to");
        if (r->spend.degrade_backend < 0)
            sw_walk_error(w, sw_walk_val(&spend_section, vals, "degrade_to"), p,
                          "unknown backend \"%s\"", r->spend.degrade_to);
        else if (cfg->backends[r->spend.degrade_backend].tier != SW_TIER_LOCAL)
            sw_walk_error(w, sw_walk_val(&spend_section, vals, "degrade_to"), p,
                          "backend \"%s\" is not local; degrade_to names a smaller local model",
                          r->spend.degrade_to);
    } else if (r->spend.on_cap == SW_ON_CAP_DEGRADE) {
        sw_walk_path_key(p, sizeof(p), path, "on_cap");
        sw_walk_error(w, sw_walk_val(&spend_section, vals, "on_cap") ? sw_walk_val(&spend_section, vals, "on_cap") : map, p,
                      "degrade needs degrade_to: the local backend to degrade to");
    }
}

static void check_top(struct sw_walk *w, void *base, const yaml_node_t *map,
                      const yaml_node_t *const *vals, const char *path, size_t index)
{
    (void)w;
    (void)map;
    (void)path;
    (void)index;
    struct sw_config *cfg = base;
    cfg->auth_enabled = sw_walk_val(&top_section, vals, "keys") != NULL;
    bool oom = false;
    default_listen_hosts(cfg, &oom);
    if (oom)
        w->oom = true;
    check_regions(w, cfg, &cfg->pii.sensitive_regions, "pii.sensitive_regions");
    char p[SW_WALK_MAX_PATH];
    for (size_t i = 0; i < cfg->n_keys; i++) {
        snprintf(p, sizeof p, "keys[%zu].sensitive_regions", i);
        check_regions(w, cfg, &cfg->keys[i].sensitive_regions, p);
    }
    for (size_t i = 0; i < cfg->n_models; i++) {
        snprintf(p, sizeof p, "models[%zu].sensitive_regions", i);
        check_regions(w, cfg, &cfg->models[i].sensitive_regions, p);
    }
    if (!cfg->routing.spend.degrade_to)
        cfg->routing.spend.degrade_backend = -1;
    tenancy_check(w, cfg);
}

/* ---- Parsing ---- */

static const char *process_getenv(const char *name, void *ud)
{
    (void)ud;
    return getenv(name);
}

static void syntax_error(struct sw_walk *w, const yaml_parser_t *p)
{
    if (p->error == YAML_MEMORY_ERROR) {
        w->oom = true;
        return;
    }
    if (p->error == YAML_READER_ERROR) {
        sw_walk_error_at(w, 1, 1, "", "syntax error: %s at byte offset %zu",
                         p->problem ? p->problem : "unreadable input", p->problem_offset);
        return;
    }
    size_t line = p->problem_mark.line + 1, col = p->problem_mark.column + 1;
    if (p->context)
        sw_walk_error_at(w, line, col, "", "syntax error: %s (%s at line %zu, column %zu)",
                         p->problem ? p->problem : "invalid YAML", p->context,
                         p->context_mark.line + 1, p->context_mark.column + 1);
    else
        sw_walk_error_at(w, line, col, "", "syntax error: %s",
                         p->problem ? p->problem : "invalid YAML");
}

static void parse_document(struct sw_walk *w, yaml_parser_t *parser, struct sw_config *cfg)
{
    yaml_document_t doc;
    if (!yaml_parser_load(parser, &doc)) {
        syntax_error(w, parser);
        return;
    }
    w->doc = &doc;
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    if (!root) {
        sw_walk_error_at(w, 1, 1, "",
                         "the file is empty; expected a mapping with at least backends and "
                         "models");
    } else if (root->type != YAML_MAPPING_NODE) {
        char got[SHOW];
        sw_walk_describe(w, root, got, sizeof(got));
        sw_walk_error(w, root, "",
                      "the top level must be a mapping (listen, keys, admin, backends, routing, "
                      "models, limits), got %s",
                      got);
    } else {
        sw_walk_map(w, &top_section, root, cfg, "", 0);
        yaml_document_t next;
        if (!yaml_parser_load(parser, &next)) {
            syntax_error(w, parser);
        } else {
            yaml_node_t *r2 = yaml_document_get_root_node(&next);
            if (r2)
                sw_walk_error(w, r2, "",
                              "a second YAML document; the config is one document");
            yaml_document_delete(&next);
        }
    }
    w->doc = NULL;
    yaml_document_delete(&doc);
}

/* Whether s may go into a span as it is (sw_attrs_name_k's rule): NULL or
 * printable ASCII but '"' and '\\', at most 100 bytes. */
static bool span_plain(const char *s)
{
    size_t n = 0;
    for (; s && s[n]; n++)
        if (n >= 100 || (unsigned char)s[n] < 0x20 || (unsigned char)s[n] > 0x7e || s[n] == '"' ||
            s[n] == '\\')
            return false;
    return true;
}

/* The names spans copy unchecked, checked once here. */
static void mark_span_plain(struct sw_config *cfg)
{
    for (size_t i = 0; i < cfg->n_backends; i++) {
        struct sw_config_backend *b = &cfg->backends[i];
        b->span_plain = span_plain(b->model) && span_plain(b->region);
    }
    for (size_t i = 0; i < cfg->n_models; i++)
        cfg->models[i].span_plain = span_plain(cfg->models[i].name);
}

int sw_config_parse(const char *filename, const char *text, size_t len,
                    sw_config_getenv_fn getenv_fn, void *ud,
                    struct sw_config **out, struct sw_config_errors *errs)
{
    struct sw_walk w;
    yaml_parser_t parser;
    bool parser_ok = false;
    int err = SW_OK;

    *out = NULL;
    errs->msgs = NULL;
    errs->n = 0;
    sw_walk_init(&w, filename, NULL, getenv_fn ? getenv_fn : process_getenv, ud, NULL);
    struct sw_config *cfg = calloc(1, sizeof(*cfg));
    if (!cfg)
        goto oom;
    cfg->refcount = 1;
    w.user = cfg;
    sw_walk_defaults(&top_section, cfg);
    cfg->path = strdup(filename);
    cfg->listen_host = strdup(DEFAULT_LISTEN_HOST);
    cfg->listen_port = DEFAULT_LISTEN_PORT;
    if (!cfg->path || !cfg->listen_host)
        goto oom;
    if (!yaml_parser_initialize(&parser))
        goto oom;
    parser_ok = true;
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    parse_document(&w, &parser, cfg);
    goto done;
oom:
    w.oom = true;
done:
    err = sw_walk_finish(&w, errs);
    if (parser_ok)
        yaml_parser_delete(&parser);
    if (err) {
        sw_config_unref(cfg);
        return err;
    }
    mark_span_plain(cfg);
    *out = cfg;
    return SW_OK;
}

int sw_config_load_file(const char *path, struct sw_config **out,
                        struct sw_config_errors *errs)
{
    struct sw_buf b;
    char msg[1024];
    int err = SW_OK;

    *out = NULL;
    errs->msgs = NULL;
    errs->n = 0;
    sw_buf_init(&b, CONFIG_MAX_FILE_BYTES);
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(msg, sizeof(msg), "%s: cannot read: %s; check the path and that the user "
                 "Spillway runs as may read it", path, strerror(errno));
        goto fail;
    }
    char chunk[16384];
    size_t n;
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
        err = sw_buf_append(&b, chunk, n);
        if (err)
            break;
    }
    if (!err && ferror(f)) {
        snprintf(msg, sizeof(msg), "%s: cannot read: %s", path, strerror(errno));
        fclose(f);
        goto fail;
    }
    fclose(f);
    if (err == SW_ETOOBIG) {
        snprintf(msg, sizeof(msg), "%s: cannot read: larger than %d bytes", path,
                 CONFIG_MAX_FILE_BYTES);
        goto fail;
    }
    if (err) {
        sw_buf_free(&b);
        return err;
    }
    err = sw_config_parse(path, b.ptr ? b.ptr : "", b.len, NULL, NULL, out, errs);
    sw_buf_free(&b);
    return err;
fail:
    sw_buf_free(&b);
    errs->msgs = calloc(1, sizeof(char *));
    if (!errs->msgs)
        return SW_ENOMEM;
    errs->msgs[0] = strdup(msg);
    if (!errs->msgs[0]) {
        free(errs->msgs);
        errs->msgs = NULL;
        return SW_ENOMEM;
    }
    errs->n = 1;
    return SW_EIO;
}

/* ---- Snapshots ---- */

struct sw_config *sw_config_ref(struct sw_config *cfg)
{
    if (cfg)
        __atomic_add_fetch(&cfg->refcount, 1, __ATOMIC_RELAXED);
    return cfg;
}

void sw_config_unref(struct sw_config *cfg)
{
    if (!cfg || __atomic_sub_fetch(&cfg->refcount, 1, __ATOMIC_ACQ_REL) > 0)
        return;
    free(cfg->path);
    free(cfg->listen_host);
    listen_hosts_free(&cfg->listen_hosts);
    for (size_t i = 0; i < cfg->n_keys; i++) {
        free(cfg->keys[i].name);
        free(cfg->keys[i].key);
        regions_free(&cfg->keys[i].sensitive_regions);
        pii_allow_free(&cfg->keys[i].pii_allow);
        free(cfg->keys[i].id);
        free(cfg->keys[i].team);
        sw_config_tenancy_free(&cfg->keys[i].t);
    }
    free(cfg->keys);
    for (size_t i = 0; i < cfg->n_teams; i++) {
        free(cfg->teams[i].name);
        sw_config_tenancy_free(&cfg->teams[i].t);
    }
    free(cfg->teams);
    free(cfg->admin_key);
    free(cfg->decision_log);
    free(cfg->access_log.path);
    free(cfg->otlp.endpoint);
    free(cfg->otlp.service_name);
    free(cfg->otlp.ca_file);
    for (size_t i = 0; i < cfg->otlp.n_headers; i++) {
        free(cfg->otlp.header_name[i]);
        free(cfg->otlp.header_value[i]);
    }
    free(cfg->state.redis);
    free(cfg->state.key_prefix);
    free(cfg->state.tls.ca_file);
    free(cfg->state.tls.cert_file);
    free(cfg->state.tls.key_file);
    free(cfg->state.tls.server_name);
    free(cfg->routing.spend.degrade_to);
    for (size_t i = 0; i < cfg->pii.n_custom; i++) {
        free(cfg->pii.custom[i].name);
        free(cfg->pii.custom[i].regex);
        free(cfg->pii.custom[i].validator);
    }
    free(cfg->pii.custom);
    regions_free(&cfg->pii.sensitive_regions);
    pii_allow_free(&cfg->pii.allow);
    for (size_t i = 0; i < cfg->n_backends; i++) {
        struct sw_config_backend *b = &cfg->backends[i];
        free(b->name);
        free(b->url);
        free(b->model);
        free(b->api_key);
        free(b->ca_file);
        free(b->anthropic_version);
        free(b->health_path);
        free(b->region);
        free(b->azure.deployment);
        free(b->azure.api_version);
        free(b->azure.entra_token);
        sw_config_aws_free(&b->aws);
        free(b->azure.tenant_id);
        free(b->azure.client_id);
        free(b->azure.client_secret);
        free(b->azure.token_url);
        free(b->gemini.api_version);
        free(b->gemini.safety_threshold);
        free(b->vertex.project);
        free(b->vertex.location);
        free(b->vertex.credentials_file);
        free(b->vertex.token_command);
        free(b->vertex.token_url);
    }
    free(cfg->backends);
    for (size_t i = 0; i < cfg->n_models; i++) {
        free(cfg->models[i].name);
        free(cfg->models[i].backends);
        regions_free(&cfg->models[i].sensitive_regions);
        pii_allow_free(&cfg->models[i].pii_allow);
    }
    free(cfg->models);
    free(cfg);
}

void sw_config_errors_free(struct sw_config_errors *errs)
{
    if (!errs)
        return;
    for (size_t i = 0; i < errs->n; i++)
        free(errs->msgs[i]);
    free(errs->msgs);
    errs->msgs = NULL;
    errs->n = 0;
}

/* ---- Lookups ---- */

const struct sw_config_model *sw_config_find_model(const struct sw_config *cfg, const char *name)
{
    if (!cfg || !name)
        return NULL;
    for (size_t i = 0; i < cfg->n_models; i++)
        if (!strcmp(cfg->models[i].name, name))
            return &cfg->models[i];
    return NULL;
}

enum sw_translation_unsupported sw_config_translation(const struct sw_config *cfg,
                                                      const struct sw_config_model *model)
{
    if (model && model->translation_unsupported != SW_TRANSLATION_INHERIT)
        return model->translation_unsupported;
    return cfg ? cfg->translation_unsupported : SW_TRANSLATION_REJECT;
}

/* A hook run once per byte compared; empty in the product. The unit test that
 * includes this file defines it to count the bytes each compare examines. */
#ifndef SW_SECRET_EQUAL_STEP
#define SW_SECRET_EQUAL_STEP(i) ((void)0)
#endif

/* Compares all of secret against bearer without exiting early on the first
 * differing byte: the time depends on the lengths, not on where they differ. */
static bool secret_equal(const char *secret, const char *bearer, size_t bearer_len)
{
    size_t len = strlen(secret);
    volatile unsigned char diff = (unsigned char)(len != bearer_len);
    for (size_t i = 0; i < len; i++) {
        SW_SECRET_EQUAL_STEP(i);
        unsigned char b = i < bearer_len ? (unsigned char)bearer[i] : 0;
        diff |= (unsigned char)secret[i] ^ b;
    }
    return diff == 0;
}

bool sw_config_secret_equal(const char *secret, const char *bearer)
{
    return secret_equal(secret, bearer, strlen(bearer));
}

const struct sw_config_key *sw_config_find_key(const struct sw_config *cfg, const char *bearer)
{
    if (!cfg || !bearer)
        return NULL;
    size_t blen = strlen(bearer);
    const struct sw_config_key *found = NULL;
    /* Every key is compared, also after a match. */
    for (size_t i = 0; i < cfg->n_keys; i++)
        if (secret_equal(cfg->keys[i].key, bearer, blen) && !found)
            found = &cfg->keys[i];
    return found;
}

const char *sw_tier_name(enum sw_tier tier)
{
    return tier == SW_TIER_CLOUD ? "cloud" : "local";
}

const char *sw_dialect_name(enum sw_dialect d)
{
    return d == SW_DIALECT_ANTHROPIC   ? "anthropic"
           : d == SW_DIALECT_RESPONSES ? "responses"
           : d == SW_DIALECT_AZURE     ? "azure"
           : d == SW_DIALECT_BEDROCK   ? "bedrock"
           : d == SW_DIALECT_GEMINI    ? "gemini"
           : d == SW_DIALECT_VERTEX    ? "vertex"
           : d == SW_DIALECT_VERTEX_ANTHROPIC ? "vertex_anthropic"
                                       : "openai";
}

const char *sw_load_source_name(enum sw_load_source s)
{
    return (unsigned)s < SW_LOAD__COUNT ? load_source_names[s] : "unknown";
}
