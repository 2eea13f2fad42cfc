/* Unit tests of the pure parts of the shared state: the Redis URL of
 * state.redis, the key layout, the queue field of a replica, the state
 * section of the config (password from ${ENV}, rediss:// and state.tls, the
 * fallback share's default) and a breaker opened by another replica. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/err.h"
#include "config/config.h"
#include "route/breaker.h"
#include "config/rurl.h"
#include "state/rkey.h"

static void test_url_ok(void **state)
{
    (void)state;
    struct sw_rurl u;
    char why[256];
    assert_int_equal(sw_rurl_parse("redis://127.0.0.1:6380/2", &u, why, sizeof why), 0);
    assert_string_equal(u.host, "127.0.0.1");
    assert_int_equal(u.port, 6380);
    assert_int_equal(u.db, 2);
    assert_string_equal(u.password, "");
    assert_int_equal(sw_rurl_parse("redis://cache.internal", &u, why, sizeof why), 0);
    assert_string_equal(u.host, "cache.internal");
    assert_int_equal(u.port, 6379);
    assert_int_equal(u.db, 0);
    assert_int_equal(sw_rurl_parse("redis://:s3cr%40t@h:1/", &u, why, sizeof why), 0);
    assert_string_equal(u.password, "s3cr@t");
    assert_string_equal(u.host, "h");
    assert_int_equal(u.port, 1);
    assert_int_equal(sw_rurl_parse("redis://user:pw@[::1]:7000/3", &u, why, sizeof why), 0);
    assert_string_equal(u.host, "::1");
    assert_string_equal(u.user, "user");
    assert_string_equal(u.password, "pw");
    assert_int_equal(u.port, 7000);
    assert_int_equal(u.db, 3);
    assert_false(u.tls);
    /* rediss://: TLS, same layout */
    assert_int_equal(sw_rurl_parse("rediss://app:s%2Fcret@redis.example:6380/1", &u, why, sizeof why), 0);
    assert_true(u.tls);
    assert_string_equal(u.user, "app");
    assert_string_equal(u.password, "s/cret");
    assert_string_equal(u.host, "redis.example");
    assert_int_equal(u.port, 6380);
    assert_int_equal(u.db, 1);
}

static void test_url_bad(void **state)
{
    (void)state;
    struct sw_rurl u;
    char why[512];
    static const char *const bad[] = {
        "http://h:6379", "redis://", "redis://h:0", "redis://h:65536", "redis://h:x",
        "redis://h/x", "redis://[::1", "redis://user@h", "redis://:pw%zz@h", NULL,
    };
    for (size_t i = 0; bad[i]; i++) {
        why[0] = 0;
        assert_int_equal(sw_rurl_parse(bad[i], &u, why, sizeof why), -1);
        assert_true(why[0] != 0);
    }
    assert_int_equal(sw_rurl_parse("redisx://:topsecret@h:6380", &u, why, sizeof why), -1);
    assert_non_null(strstr(why, "rediss://"));
    assert_null(strstr(why, "topsecret")); /* the password is never in a message */
    assert_int_equal(sw_rurl_parse("rediss://:topsecret@h:0", &u, why, sizeof why), -1);
    assert_null(strstr(why, "topsecret"));
}

static void test_keys(void **state)
{
    (void)state;
    char k[64];
    assert_int_equal(sw_rkey(k, sizeof k, "spillway:", "slots", "edge"), 19);
    assert_string_equal(k, "spillway:slots:edge");
    sw_rkey(k, sizeof k, "p:", "flags", NULL);
    assert_string_equal(k, "p:flags");
    char small[8];
    assert_int_equal(sw_rkey(small, sizeof small, "spillway:", "flags", NULL), -1);
    assert_int_equal(sw_rkey_window_start(7200500, 3600000), 7200000);
    assert_int_equal(sw_rkey_window_start(3599999, 3600000), 0);
    assert_int_equal(sw_rkey_window_start(-1, 3600000), -3600000);
    long n;
    long long x;
    assert_true(sw_rkey_parse_queue("3 1700000000000", &n, &x));
    assert_int_equal(n, 3);
    assert_int_equal(x, 1700000000000LL);
    assert_false(sw_rkey_parse_queue("3", &n, &x));
    assert_false(sw_rkey_parse_queue("-1 5", &n, &x));
    assert_false(sw_rkey_parse_queue("3 5x", &n, &x));
    assert_false(sw_rkey_parse_queue(NULL, &n, &x));
}

static const char *fake_getenv(const char *name, void *ud)
{
    (void)ud;
    return !strcmp(name, "REDIS_PASSWORD") ? "pw" : NULL;
}

#define BASE                                                                       \
    "backends:\n"                                                                  \
    "  - { name: edge, tier: local, url: \"http://127.0.0.1:8081\", model: m }\n"  \
    "models:\n"                                                                    \
    "  - { name: m, backends: [edge] }\n"

static int parse(const char *text, struct sw_config **cfg, struct sw_config_errors *errs)
{
    return sw_config_parse("t.yaml", text, strlen(text), fake_getenv, NULL, cfg, errs);
}

static void test_config(void **state)
{
    (void)state;
    struct sw_config *cfg = NULL;
    struct sw_config_errors errs;
    assert_int_equal(parse(BASE, &cfg, &errs), SW_OK);
    assert_null(cfg->state.redis); /* no section: in memory */
    sw_config_unref(cfg);
    sw_config_errors_free(&errs);

    assert_int_equal(parse(BASE "state:\n  redis: \"redis://:${REDIS_PASSWORD}@r:6379/1\"\n"
                                "  replicas: 4\n",
                           &cfg, &errs),
                     SW_OK);
    assert_string_equal(cfg->state.redis, "redis://:pw@r:6379/1");
    assert_string_equal(cfg->state.key_prefix, "spillway:");
    assert_int_equal(cfg->state.timeout_ms, 50);
    assert_true(cfg->state.fallback_share > 0.2499 && cfg->state.fallback_share < 0.2501);
    sw_config_unref(cfg);
    sw_config_errors_free(&errs);

    /* rediss:// with state.tls: verified by default against the system CA store */
    assert_int_equal(parse(BASE "state:\n  redis: \"rediss://:${REDIS_PASSWORD}@r:6380\"\n"
                                "  tls: { server_name: redis.internal }\n",
                           &cfg, &errs),
                     SW_OK);
    assert_true(cfg->state.tls.verify);
    assert_null(cfg->state.tls.ca_file);
    assert_string_equal(cfg->state.tls.server_name, "redis.internal");
    sw_config_unref(cfg);
    sw_config_errors_free(&errs);

    /* state.tls without rediss://: the plain connection would not be encrypted */
    assert_int_equal(parse(BASE "state:\n  redis: \"redis://:hunter2@r:6380\"\n"
                                "  tls: { verify: true }\n",
                           &cfg, &errs),
                     SW_EINVAL);
    assert_int_equal(errs.n, 1);
    assert_non_null(strstr(errs.msgs[0], "state.tls"));
    assert_non_null(strstr(errs.msgs[0], "rediss://"));
    assert_null(strstr(errs.msgs[0], "hunter2"));
    sw_config_errors_free(&errs);

    /* a CA file that cannot be read, a certificate without its key */
    assert_int_equal(parse(BASE "state:\n  redis: \"rediss://r\"\n"
                                "  tls: { ca_file: /nonexistent/ca.pem, cert_file: /etc/passwd }\n",
                           &cfg, &errs),
                     SW_EINVAL);
    assert_int_equal(errs.n, 2);
    assert_non_null(strstr(errs.msgs[0], "key_file")); /* sorted by position: the map first */
    assert_non_null(strstr(errs.msgs[1], "state.tls.ca_file"));
    assert_non_null(strstr(errs.msgs[1], "/nonexistent/ca.pem"));
    sw_config_errors_free(&errs);

    assert_int_equal(parse(BASE "state:\n  redis: \"redis://r\"\n  fallback_share: 2\n", &cfg,
                           &errs),
                     SW_EINVAL);
    assert_non_null(strstr(errs.msgs[0], "fallback_share"));
    sw_config_errors_free(&errs);
}

static void test_breaker_force_open(void **state)
{
    (void)state;
    struct sw_breaker b;
    sw_breaker_init(&b, 3, 1000, 500);
    sw_breaker_force_open(&b, 100, 50); /* already past: nothing */
    assert_int_equal(sw_breaker_state(&b, 100), SW_BREAKER_CLOSED);
    sw_breaker_force_open(&b, 100, 2000);
    assert_int_equal(sw_breaker_state(&b, 1999), SW_BREAKER_OPEN);
    assert_false(sw_breaker_allow(&b, 1999));
    sw_breaker_force_open(&b, 1000, 1500); /* a shorter period does not shorten it */
    assert_int_equal(sw_breaker_open_until(&b, 1600), 2000);
    assert_int_equal(sw_breaker_state(&b, 2000), SW_BREAKER_HALF_OPEN);
    assert_true(sw_breaker_allow(&b, 2000)); /* the probe */
    sw_breaker_on_success(&b, 2001);
    assert_int_equal(sw_breaker_state(&b, 2001), SW_BREAKER_CLOSED);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_url_ok),
        cmocka_unit_test(test_url_bad),
        cmocka_unit_test(test_keys),
        cmocka_unit_test(test_config),
        cmocka_unit_test(test_breaker_force_open),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
