/* A bedrock backend's AWS section and where its credentials come from.
 *
 * aws: {region, access_key_id, secret_access_key, session_token, profile},
 * each string open to ${ENV}. What the section leaves out is looked up as
 * the AWS SDKs do, once per config load (a reload reads again): the keys
 * from the config as a pair, else AWS_ACCESS_KEY_ID and
 * AWS_SECRET_ACCESS_KEY (with AWS_SESSION_TOKEN), else the profile's
 * aws_access_key_id and aws_secret_access_key (and aws_session_token) in
 * the shared credentials file (AWS_SHARED_CREDENTIALS_FILE, else
 * ~/.aws/credentials), else in the shared config file (AWS_CONFIG_FILE,
 * else ~/.aws/config, section "[profile NAME]" or "[default]"). The profile:
 * aws.profile, else AWS_PROFILE, else "default". The region: aws.region,
 * else AWS_REGION, else AWS_DEFAULT_REGION, else the profile's region in
 * the shared config file. A backend without keys or region is a config
 * error naming what was looked at, never the values. */
#ifndef SW_CONFIG_AWS_H
#define SW_CONFIG_AWS_H

#include <stdbool.h>
#include <stddef.h>

#include "config/walk.h"

/* A backend's aws section; after the load every field but session_token and
 * profile is set (from the config, the environment or the shared files).
 * Never logged. */
struct sw_config_aws {
    char *region;               /* signing region, e.g. "us-east-1" */
    char *access_key_id;
    char *secret_access_key;
    char *session_token;        /* NULL: long-term keys */
    char *profile;              /* the shared files' profile; NULL: AWS_PROFILE or default */
    const char *source;         /* static: where the keys came from ("config", "environment",
                                 * "shared credentials file", "shared config file") */
};

extern const struct sw_walk_section sw_config_aws_section;

/* What the bedrock checks need of the backend around its aws section. */
struct sw_config_aws_backend {
    bool bedrock;               /* it speaks dialect bedrock */
    bool alone;                 /* ... and no other */
    bool url_has_path;          /* its url has a path (or ended in /v1) */
    char **url;                 /* absent: set to https://bedrock-runtime.{region}.amazonaws.com */
    const char *model;
};

/* The checks and the lookups above for one backend (any dialect: the aws
 * section is for bedrock only), after its mapping was walked (sec, vals:
 * the backend's section and values; path its key path). */
void sw_config_check_bedrock(struct sw_walk *w, struct sw_config_aws *a,
                             const struct sw_config_aws_backend *b,
                             const struct sw_walk_section *sec, const yaml_node_t *const *vals,
                             const char *path);

void sw_config_aws_free(struct sw_config_aws *a);

/* The value of `key` in section `section` of INI text (the shared files'
 * format: "[section]" lines, "key = value" lines, '#' and ';' comments,
 * white space around names and values ignored), into out (NUL-terminated).
 * 0, or -1 when absent or longer than cap - 1. Pure. */
int sw_config_ini_get(const char *text, const char *section, const char *key, char *out,
                      size_t cap);

#endif
