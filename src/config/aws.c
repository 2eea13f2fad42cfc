#include "config/aws.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The shared files are small; a larger one is not read. */
#define SHARED_FILE_MAX (256 * 1024)
#define VALUE_MAX 4096

#define AWS(f) offsetof(struct sw_config_aws, f)
static const struct sw_walk_setting aws_settings[] = {
    {.key = "region", .type = SW_WALK_TEXT, .off = AWS(region),
     .hint = "the AWS region, e.g. \"us-east-1\"; absent: AWS_REGION, AWS_DEFAULT_REGION or "
             "the shared config file"},
    {.key = "access_key_id", .type = SW_WALK_SECRET, .off = AWS(access_key_id)},
    {.key = "secret_access_key", .type = SW_WALK_SECRET, .off = AWS(secret_access_key)},
    {.key = "session_token", .type = SW_WALK_SECRET, .off = AWS(session_token)},
    {.key = "profile", .type = SW_WALK_TEXT, .off = AWS(profile),
     .hint = "a profile of ~/.aws/credentials and ~/.aws/config; absent: AWS_PROFILE or default"},
};
const struct sw_walk_section sw_config_aws_section = {
    aws_settings, sizeof aws_settings / sizeof aws_settings[0], 0, NULL};

/* ---- The shared files' INI ---- */

static const char *trim(const char *s, const char *e, const char **end)
{
    while (s < e && (*s == ' ' || *s == '\t'))
        s++;
    while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
        e--;
    *end = e;
    return s;
}

int sw_config_ini_get(const char *text, const char *section, const char *key, char *out,
                      size_t cap)
{
    bool in = false;
    for (const char *l = text; l && *l;) {
        const char *nl = strchr(l, '\n'), *le = nl ? nl : l + strlen(l), *e;
        const char *s = trim(l, le, &e);
        l = nl ? nl + 1 : NULL;
        if (s == e || *s == '#' || *s == ';')
            continue;
        if (*s == '[') {
            const char *se;
            if (e[-1] != ']')
                continue;
            const char *n = trim(s + 1, e - 1, &se);
            in = (size_t)(se - n) == strlen(section) && !strncmp(n, section, (size_t)(se - n));
            continue;
        }
        const char *eq = memchr(s, '=', (size_t)(e - s));
        if (!in || !eq)
            continue;
        const char *ke, *ve;
        const char *k = trim(s, eq, &ke), *v = trim(eq + 1, e, &ve);
        if ((size_t)(ke - k) != strlen(key) || strncmp(k, key, (size_t)(ke - k)))
            continue;
        if ((size_t)(ve - v) >= cap)
            return -1;
        memcpy(out, v, (size_t)(ve - v));
        out[ve - v] = '\0';
        return 0;
    }
    return -1;
}

/* The environment as the config load sees it (the walk's, so tests set it). */
static const char *env(struct sw_walk *w, const char *name)
{
    const char *v = w->getenv_fn(name, w->getenv_ud);
    return v && *v ? v : NULL;
}

/* The file at the path in env var `var`, else ~/`rel`; NULL when unreadable. */
static char *read_shared(struct sw_walk *w, const char *var, const char *rel, char *shown,
                         size_t cap)
{
    const char *p = env(w, var), *home = env(w, "HOME");
    if (p && *p)
        snprintf(shown, cap, "%s", p);
    else if (home && *home)
        snprintf(shown, cap, "%s/%s", home, rel);
    else
        return NULL;
    FILE *f = fopen(shown, "rb");
    if (!f)
        return NULL;
    char *buf = malloc(SHARED_FILE_MAX + 1);
    size_t n = buf ? fread(buf, 1, SHARED_FILE_MAX + 1, f) : 0;
    fclose(f);
    if (!buf || n > SHARED_FILE_MAX) {
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    return buf;
}

/* ---- The lookups ---- */

static bool set(char **field, const char *v, struct sw_walk *w)
{
    if (*field || !v || !*v)
        return false;
    *field = strdup(v);
    if (!*field)
        w->oom = true;
    return *field != NULL;
}

/* Keys and region of the profile from the shared files (when the config
 * and the environment left them out). */
static void from_files(struct sw_walk *w, struct sw_config_aws *b, const char *profile,
                       bool want_keys)
{
    char path[1024], v[VALUE_MAX], sect[300];
    char *creds = want_keys ? read_shared(w, "AWS_SHARED_CREDENTIALS_FILE", ".aws/credentials", path,
                                          sizeof path)
                            : NULL;
    if (creds && !sw_config_ini_get(creds, profile, "aws_access_key_id", v, sizeof v) &&
        set(&b->access_key_id, v, w)) {
        if (!sw_config_ini_get(creds, profile, "aws_secret_access_key", v, sizeof v))
            set(&b->secret_access_key, v, w);
        if (!sw_config_ini_get(creds, profile, "aws_session_token", v, sizeof v))
            set(&b->session_token, v, w);
        b->source = "shared credentials file";
        want_keys = false;
    }
    free(creds);
    char *conf = read_shared(w, "AWS_CONFIG_FILE", ".aws/config", path, sizeof path);
    if (!conf)
        return;
    if (!strcmp(profile, "default"))
        snprintf(sect, sizeof sect, "default");
    else
        snprintf(sect, sizeof sect, "profile %s", profile);
    if (want_keys && !sw_config_ini_get(conf, sect, "aws_access_key_id", v, sizeof v) &&
        set(&b->access_key_id, v, w)) {
        if (!sw_config_ini_get(conf, sect, "aws_secret_access_key", v, sizeof v))
            set(&b->secret_access_key, v, w);
        if (!sw_config_ini_get(conf, sect, "aws_session_token", v, sizeof v))
            set(&b->session_token, v, w);
        b->source = "shared config file";
    }
    if (!b->region && !sw_config_ini_get(conf, sect, "region", v, sizeof v))
        set(&b->region, v, w);
    free(conf);
}

static void resolve(struct sw_walk *w, struct sw_config_aws *b)
{
    if (b->access_key_id && b->secret_access_key) {
        b->source = "config";
    } else if (!b->access_key_id && !b->secret_access_key && env(w, "AWS_ACCESS_KEY_ID") &&
               env(w, "AWS_SECRET_ACCESS_KEY")) {
        set(&b->access_key_id, env(w, "AWS_ACCESS_KEY_ID"), w);
        set(&b->secret_access_key, env(w, "AWS_SECRET_ACCESS_KEY"), w);
        if (!b->session_token)
            set(&b->session_token, env(w, "AWS_SESSION_TOKEN"), w);
        b->source = "environment";
    }
    if (!b->region)
        set(&b->region, env(w, "AWS_REGION"), w);
    if (!b->region)
        set(&b->region, env(w, "AWS_DEFAULT_REGION"), w);
    bool want_keys = !b->access_key_id && !b->secret_access_key;
    if (want_keys || !b->region) {
        const char *profile = b->profile ? b->profile : env(w, "AWS_PROFILE");
        from_files(w, b, profile ? profile : "default", want_keys);
    }
}

static bool plain(const char *s, const char *allowed)
{
    return s && *s && !s[strspn(s, allowed)];
}

#define LOWER_DIGITS "abcdefghijklmnopqrstuvwxyz0123456789-"

void sw_config_check_bedrock(struct sw_walk *w, struct sw_config_aws *a,
                             const struct sw_config_aws_backend *b,
                             const struct sw_walk_section *sec, const yaml_node_t *const *vals,
                             const char *path)
{
    char p[SW_WALK_MAX_PATH];
    bool bedrock = b->bedrock;
    const yaml_node_t *aws = sw_walk_val(sec, vals, "aws"), *name = sw_walk_val(sec, vals, "name");
    if (!bedrock && aws) {
        sw_walk_path_key(p, sizeof p, path, "aws");
        sw_walk_error(w, aws, p, "is for dialect bedrock only (omit it, or set dialect: bedrock)");
        return;
    }
    if (!bedrock)
        return;
    if (!b->alone) {
        sw_walk_path_key(p, sizeof p, path, "dialects");
        sw_walk_error(w, sw_walk_val(sec, vals, "dialects"), p,
                      "bedrock is spoken alone: give dialect: bedrock (Bedrock serves its "
                      "Converse API under its own paths)");
    }
    if (a->access_key_id && !a->secret_access_key) {
        sw_walk_path_key(p, sizeof p, path, "aws.secret_access_key");
        sw_walk_error(w, aws, p, "aws.access_key_id needs aws.secret_access_key with it");
    } else if (!a->access_key_id && a->secret_access_key) {
        sw_walk_path_key(p, sizeof p, path, "aws.access_key_id");
        sw_walk_error(w, aws, p, "aws.secret_access_key needs aws.access_key_id with it");
    }
    resolve(w, a);
    if (!a->access_key_id || !a->secret_access_key) {
        sw_walk_path_key(p, sizeof p, path, "aws");
        sw_walk_error(w, aws ? aws : name, p,
                      "a bedrock backend needs AWS credentials: aws.access_key_id and "
                      "aws.secret_access_key (${ENV} allowed), AWS_ACCESS_KEY_ID and "
                      "AWS_SECRET_ACCESS_KEY, or the profile in ~/.aws/credentials");
    }
    if (!a->region || !plain(a->region, LOWER_DIGITS)) {
        sw_walk_path_key(p, sizeof p, path, "aws.region");
        sw_walk_error(w, aws ? aws : name, p,
                      a->region ? "\"%.64s\" is not an AWS region (a-z 0-9 -, e.g. us-east-1)"
                                    : "a bedrock backend needs a region: aws.region, AWS_REGION, "
                                      "AWS_DEFAULT_REGION or the profile's region in ~/.aws/config%s",
                      a->region ? a->region : "");
    }
    if (b->url_has_path) {
        sw_walk_path_key(p, sizeof p, path, "url");
        sw_walk_error(w, sw_walk_val(sec, vals, "url"), p,
                      "a bedrock backend's url is the endpoint's root, e.g. "
                      "\"https://bedrock-runtime.us-east-1.amazonaws.com\" (the default); "
                      "Spillway appends /model/... itself");
    }
    if (!*b->url && a->region && plain(a->region, LOWER_DIGITS)) {
        char u[256];
        snprintf(u, sizeof u, "https://bedrock-runtime.%s.amazonaws.com", a->region);
        set(b->url, u, w);
    }
    if (b->model && !plain(b->model, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                     "0123456789.:/_-")) {
        sw_walk_path_key(p, sizeof p, path, "model");
        sw_walk_error(w, sw_walk_val(sec, vals, "model"), p,
                      "\"%.64s\" is not a Bedrock model id, inference profile or ARN "
                      "(A-Z a-z 0-9 . : / _ -)", b->model);
    }
}

void sw_config_aws_free(struct sw_config_aws *a)
{
    free(a->region);
    free(a->access_key_id);
    free(a->secret_access_key);
    free(a->session_token);
    free(a->profile);
}
