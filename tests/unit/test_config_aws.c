/* A bedrock backend's config (config/aws.c): the aws section, credentials
 * from the config (${ENV}), the AWS variables and the shared files (in a
 * scratch HOME), the default url, and the errors, none showing a secret. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "common/err.h"
#include "config/aws.h"
#include "config/config.h"

static const char *pairs[32];

static const char *fake_getenv(const char *name, void *ud)
{
    (void)ud;
    for (size_t i = 0; pairs[i]; i += 2)
        if (!strcmp(pairs[i], name))
            return pairs[i + 1];
    return NULL;
}

static void set_env(const char *const *kv)
{
    size_t i = 0;
    for (; kv && kv[i]; i++)
        pairs[i] = kv[i];
    pairs[i] = NULL;
}

#define HEAD "backends:\n  - name: br\n    tier: cloud\n    dialect: bedrock\n" \
             "    model: \"anthropic.claude-3-5-sonnet-20240620-v1:0\"\n"
#define MODELS "models:\n  - name: m\n    backends: [br]\n"

static int parse(const char *text, struct sw_config **cfg, struct sw_config_errors *errs)
{
    return sw_config_parse("t.yaml", text, strlen(text), fake_getenv, NULL, cfg, errs);
}

static struct sw_config *ok(const char *text)
{
    struct sw_config *cfg = NULL;
    struct sw_config_errors errs;
    int err = parse(text, &cfg, &errs);
    for (size_t i = 0; i < errs.n; i++)
        print_error("unexpected: %s\n", errs.msgs[i]);
    sw_config_errors_free(&errs);
    assert_int_equal(err, SW_OK);
    return cfg;
}

/* The one error of text, which must contain want and no secret. */
static void bad(const char *text, const char *want)
{
    struct sw_config *cfg = NULL;
    struct sw_config_errors errs;
    assert_int_not_equal(parse(text, &cfg, &errs), SW_OK);
    bool found = false;
    for (size_t i = 0; i < errs.n; i++) {
        found |= strstr(errs.msgs[i], want) != NULL;
        assert_null(strstr(errs.msgs[i], "s3cr3t"));
    }
    if (!found)
        for (size_t i = 0; i < errs.n; i++)
            print_error("got: %s\n", errs.msgs[i]);
    assert_true(found);
    sw_config_errors_free(&errs);
}

static void test_from_config(void **state)
{
    (void)state;
    static const char *const env[] = {"SECRET", "s3cr3t", NULL};
    set_env(env);
    struct sw_config *cfg = ok(HEAD "    aws: { region: eu-central-1, access_key_id: AKID, "
                                    "secret_access_key: \"${SECRET}\" }\n" MODELS);
    const struct sw_config_backend *b = &cfg->backends[0];
    assert_string_equal(b->url, "https://bedrock-runtime.eu-central-1.amazonaws.com");
    assert_string_equal(b->aws.secret_access_key, "s3cr3t");
    assert_string_equal(b->aws.source, "config");
    assert_null(b->aws.session_token);
    assert_int_equal(b->dialect, SW_DIALECT_BEDROCK);
    assert_string_equal(sw_dialect_name(b->dialect), "bedrock");
    sw_config_unref(cfg);
    /* a url of its own (llmsim, a VPC endpoint) is kept */
    cfg = ok(HEAD "    url: http://127.0.0.1:9\n    aws: { region: us-east-1, access_key_id: A, "
                  "secret_access_key: B }\n" MODELS);
    assert_string_equal(cfg->backends[0].url, "http://127.0.0.1:9");
    sw_config_unref(cfg);
}

static void test_from_env(void **state)
{
    (void)state;
    static const char *const env[] = {"AWS_ACCESS_KEY_ID", "AKENV", "AWS_SECRET_ACCESS_KEY",
                                      "s3cr3t", "AWS_SESSION_TOKEN", "TOK",
                                      "AWS_DEFAULT_REGION", "ap-south-1", NULL};
    set_env(env);
    struct sw_config *cfg = ok(HEAD MODELS);
    const struct sw_config_backend *b = &cfg->backends[0];
    assert_string_equal(b->aws.access_key_id, "AKENV");
    assert_string_equal(b->aws.session_token, "TOK");
    assert_string_equal(b->aws.region, "ap-south-1");
    assert_string_equal(b->aws.source, "environment");
    sw_config_unref(cfg);
}

static void test_from_shared_files(void **state)
{
    (void)state;
    char dir[] = "/tmp/sw-aws-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char p[256];
    snprintf(p, sizeof p, "%s/.aws", dir);
    assert_int_equal(mkdir(p, 0700), 0);
    snprintf(p, sizeof p, "%s/.aws/credentials", dir);
    FILE *f = fopen(p, "w");
    fputs("[default]\naws_access_key_id = DEF\naws_secret_access_key = def\n"
          "; a comment\n[work]\n  aws_access_key_id=WORK  \naws_secret_access_key = s3cr3t\n"
          "aws_session_token = wtok\n", f);
    fclose(f);
    char c[256];
    snprintf(c, sizeof c, "%s/.aws/config", dir);
    f = fopen(c, "w");
    fputs("[default]\nregion = us-west-2\n[profile work]\nregion = eu-west-3\n", f);
    fclose(f);
    const char *env[] = {"HOME", dir, "AWS_PROFILE", "work", NULL};
    set_env(env);
    struct sw_config *cfg = ok(HEAD MODELS);
    const struct sw_config_backend *b = &cfg->backends[0];
    assert_string_equal(b->aws.access_key_id, "WORK");
    assert_string_equal(b->aws.session_token, "wtok");
    assert_string_equal(b->aws.region, "eu-west-3");
    assert_string_equal(b->aws.source, "shared credentials file");
    sw_config_unref(cfg);
    /* aws.profile over AWS_PROFILE; the default profile's region */
    cfg = ok(HEAD "    aws: { profile: default }\n" MODELS);
    assert_string_equal(cfg->backends[0].aws.access_key_id, "DEF");
    assert_string_equal(cfg->backends[0].aws.region, "us-west-2");
    sw_config_unref(cfg);
    unlink(p);
    unlink(c);
    snprintf(p, sizeof p, "%s/.aws", dir);
    rmdir(p);
    rmdir(dir);
}

static void test_errors(void **state)
{
    (void)state;
    set_env(NULL);
    bad(HEAD "    aws: { region: us-east-1 }\n" MODELS, "needs AWS credentials");
    bad(HEAD "    aws: { access_key_id: A, secret_access_key: s3cr3t }\n" MODELS, "needs a region");
    bad(HEAD "    aws: { region: US_EAST, access_key_id: A, secret_access_key: s3cr3t }\n" MODELS,
        "is not an AWS region");
    bad(HEAD "    aws: { region: us-east-1, access_key_id: A }\n" MODELS,
        "needs aws.secret_access_key");
    bad(HEAD "    url: http://127.0.0.1:9/v1\n    aws: { region: us-east-1, access_key_id: A, "
             "secret_access_key: s3cr3t }\n" MODELS, "the endpoint's root");
    bad("backends:\n  - { name: o, tier: cloud, url: \"http://127.0.0.1:9\", model: m, "
        "aws: { region: us-east-1 } }\nmodels:\n  - { name: m, backends: [o] }\n",
        "is for dialect bedrock only");
    bad("backends:\n  - { name: o, tier: cloud, model: m }\nmodels:\n  - { name: m, backends: [o] }\n",
        "url: required key is missing");
    bad("backends:\n  - { name: o, tier: cloud, dialects: [bedrock, openai], url: \"http://127.0.0.1:9\", "
        "model: m, aws: { region: us-east-1, access_key_id: A, secret_access_key: s3cr3t } }\n"
        "models:\n  - { name: m, backends: [o] }\n", "bedrock is spoken alone");
}

static void test_ini(void **state)
{
    (void)state;
    const char *t = "a=1\n[s]\n k = v w \r\n#x = y\n[ t ]\nk=2\n[s]\nj=3";
    char out[8];
    assert_int_equal(sw_config_ini_get(t, "s", "k", out, sizeof out), 0);
    assert_string_equal(out, "v w");
    assert_int_equal(sw_config_ini_get(t, "t", "k", out, sizeof out), 0);
    assert_string_equal(out, "2");
    assert_int_equal(sw_config_ini_get(t, "s", "j", out, sizeof out), 0);
    assert_int_equal(sw_config_ini_get(t, "s", "x", out, sizeof out), -1);
    assert_int_equal(sw_config_ini_get(t, "u", "k", out, sizeof out), -1);
    assert_int_equal(sw_config_ini_get("[s]\nk=123456789", "s", "k", out, sizeof out), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_from_config),
        cmocka_unit_test(test_from_env),
        cmocka_unit_test(test_from_shared_files),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_ini),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
