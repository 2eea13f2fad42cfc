/* Known-safe text (sw_pii_engine_allowing): a listed value or an address at
 * a listed domain is counted as allowed, not as an entity, and left as it is
 * when the rest is masked; the same value inside a longer entity, in another
 * spelling, or split over parts next to more text is still an entity; the
 * base engine is unchanged; bad lists are refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "common/err.h"
#include "pii/pii.h"

static struct sw_pii_engine *BASE, *SAFE;

static int setup(void **state)
{
    (void)state;
    char err[256];
    static const char *const values[] = {"no-reply@vendor.example", "203.0.113.7"};
    static const char *const domains[] = {"Anthropic.com"};
    if (sw_pii_engine_new(NULL, 0, &BASE, err, sizeof err))
        return -1;
    return sw_pii_engine_allowing(BASE, values, 2, domains, 1, &SAFE, err, sizeof err);
}

static int teardown(void **state)
{
    (void)state;
    sw_pii_engine_free(SAFE);
    sw_pii_engine_free(BASE);
    return 0;
}

static struct sw_pii_counts scan(const struct sw_pii_engine *e, const char *body)
{
    json_error_t je;
    json_t *j = json_loads(body, 0, &je);
    assert_non_null(j);
    struct sw_pii_counts c = {0};
    char bad[128];
    assert_int_equal(sw_pii_scan_body(e, SW_PII_SURFACE_CHAT, j, &c, bad, sizeof bad), SW_OK);
    json_decref(j);
    return c;
}

#define MSG(text) "{\"model\":\"m\",\"messages\":[{\"role\":\"system\",\"content\":\"" text "\"}]}"

static void test_allowed_not_counted(void **state)
{
    (void)state;
    static const char *const safe[] = {
        MSG("Questions? Write to noreply@anthropic.com, we read it."),
        MSG("Bugs: support@docs.anthropic.com"),
        MSG("From NO-REPLY@Vendor.Example with love"),
        MSG("the resolver at 203.0.113.7 answers"),
    };
    for (size_t i = 0; i < sizeof safe / sizeof *safe; i++) {
        struct sw_pii_counts b = scan(BASE, safe[i]), s = scan(SAFE, safe[i]);
        assert_int_equal(b.total, 1);
        assert_int_equal(b.allowed, 0);
        assert_int_equal(s.total, 0);
        assert_int_equal(s.allowed, 1);
    }
}

static void test_not_allowed(void **state)
{
    (void)state;
    static const char *const entity[] = {
        MSG("mail jan.jansen@gmail.com please"),            /* another domain */
        MSG("mail evil@anthropic.com.attacker.net"),         /* the domain is not its end */
        MSG("mail bob@notanthropic.com"),                    /* nor a label of it */
        MSG("the resolver at 203.0.113.70 answers"),         /* another value */
        MSG("call 06-12345678 about no-reply@vendor.example"), /* the allowed one only */
    };
    for (size_t i = 0; i < sizeof entity / sizeof *entity; i++) {
        struct sw_pii_counts s = scan(SAFE, entity[i]);
        assert_int_equal(s.total, 1);
    }
    /* an allowed value next to a real one in split parts is still found */
    struct sw_pii_counts s = scan(SAFE, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":["
                                        "{\"type\":\"text\",\"text\":\"write to jan.jansen\"},"
                                        "{\"type\":\"text\",\"text\":\"@gmail.com or noreply@anthropic.com\"}]}]}");
    assert_int_equal(s.total, 1);
    assert_int_equal(s.allowed, 1);
}

static void test_mask_keeps_allowed(void **state)
{
    (void)state;
    json_error_t je;
    json_t *j = json_loads(MSG("noreply@anthropic.com asks jan.jansen@gmail.com"), 0, &je);
    struct sw_pii_map *m = sw_pii_map_new();
    struct sw_pii_counts c = {0};
    char bad[128];
    assert_int_equal(sw_pii_mask_body(SAFE, m, SW_PII_SURFACE_CHAT, j, &c, bad, sizeof bad), SW_OK);
    const char *t = json_string_value(json_object_get(json_array_get(json_object_get(j, "messages"), 0), "content"));
    assert_string_equal(t, "noreply@anthropic.com asks [EMAIL_1]");
    assert_int_equal(c.total, 1);
    assert_int_equal(c.allowed, 1);
    sw_pii_map_free(m);
    json_decref(j);
}

static void test_bad_lists(void **state)
{
    (void)state;
    char err[256];
    struct sw_pii_engine *e = NULL;
    static const char *const bad_domains[][1] = {{"exa mple.com"}, {"localhost"}, {".com"}, {""}};
    for (size_t i = 0; i < 4; i++) {
        assert_int_equal(sw_pii_engine_allowing(BASE, NULL, 0, bad_domains[i], 1, &e, err, sizeof err),
                         SW_EINVAL);
        assert_non_null(strstr(err, "domain"));
    }
    static const char *const empty[] = {""};
    assert_int_equal(sw_pii_engine_allowing(BASE, empty, 1, NULL, 0, &e, err, sizeof err), SW_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_allowed_not_counted),
        cmocka_unit_test(test_not_allowed),
        cmocka_unit_test(test_mask_keeps_allowed),
        cmocka_unit_test(test_bad_lists),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
