/* The output contract's JSON Schema validator against the official JSON
 * Schema Test Suite (Debian's json-schema-test-suite, draft 7 files) for
 * the keywords it implements, plus the limits the suite does not cover.
 * The suite's directory may be overridden with JSON_SCHEMA_TEST_SUITE. */
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "contract/contract.h"
#include "contract/schema.h"

/* The suite files run, one per implemented keyword. */
static const char *const files[] = {
    "additionalItems", "additionalProperties", "allOf", "anyOf", "boolean_schema",
    "const", "enum", "exclusiveMaximum", "exclusiveMinimum", "items", "maxItems",
    "maxLength", "maximum", "minItems", "minLength", "minimum", "not", "oneOf",
    "pattern", "patternProperties", "properties", "ref", "required", "type",
};

/* Test groups ("file: group description") skipped: they need what the
 * validator deliberately leaves out (remote or $id-based references, the
 * metaschema, keywords outside the list in schema.c). */
static const char *const skipped[] = {
    "ref: remote ref, containing refs itself",     /* the metaschema by URL */
    "ref: Recursive references between schemas",  /* $id-based resolution */
};

static bool skip_group(const char *file, const char *group)
{
    char key[512];
    snprintf(key, sizeof key, "%s: %s", file, group);
    for (size_t k = 0; k < sizeof skipped / sizeof *skipped; k++)
        if (!strcmp(key, skipped[k]))
            return true;
    return false;
}

static const char *suite_dir(void)
{
    const char *d = getenv("JSON_SCHEMA_TEST_SUITE");
    return d ? d : "/usr/share/json-schema-test-suite/tests/draft7";
}

static void test_suite(void **state)
{
    (void)state;
    int ran = 0, failed = 0, skipped_groups = 0;
    for (size_t f = 0; f < sizeof files / sizeof *files; f++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s.json", suite_dir(), files[f]);
        json_error_t e;
        json_t *groups = json_load_file(path, 0, &e);
        if (!json_is_array(groups))
            fail_msg("cannot read %s: %s (install json-schema-test-suite)", path, e.text);
        size_t g;
        json_t *group;
        json_array_foreach(groups, g, group) {
            const char *desc = json_string_value(json_object_get(group, "description"));
            if (skip_group(files[f], desc)) {
                skipped_groups++;
                continue;
            }
            json_t *schema = json_object_get(group, "schema");
            size_t t;
            json_t *tc;
            json_array_foreach(json_object_get(group, "tests"), t, tc) {
                bool want = json_is_true(json_object_get(tc, "valid"));
                struct sw_schema_error err;
                enum sw_schema_result r = sw_schema_validate(schema, json_object_get(tc, "data"), &err);
                ran++;
                if ((r == SW_SCHEMA_OK) != want || (r != SW_SCHEMA_OK && r != SW_SCHEMA_INVALID)) {
                    failed++;
                    print_message("FAIL %s: %s: %s: want %s, got %d (%s at \"%s\")\n", files[f], desc,
                                  json_string_value(json_object_get(tc, "description")),
                                  want ? "valid" : "invalid", (int)r, err.reason, err.path);
                }
            }
        }
        json_decref(groups);
    }
    print_message("schema suite: %d tests, %d failed, %d groups skipped\n", ran, failed, skipped_groups);
    assert_true(ran > 250);
    assert_int_equal(failed, 0);
}

static json_t *js(const char *text)
{
    json_error_t e;
    json_t *v = json_loads(text, JSON_DECODE_ANY, &e);
    if (!v)
        fail_msg("bad test JSON: %s", e.text);
    return v;
}

static enum sw_schema_result check(const char *schema, const char *inst, struct sw_schema_error *err)
{
    json_t *s = js(schema), *i = js(inst);
    enum sw_schema_result r = sw_schema_validate(s, i, err);
    json_decref(s);
    json_decref(i);
    return r;
}

/* What the suite does not cover: $defs, the error's path and reason, the
 * bounds that keep a hostile schema from looping or taking exponential time. */
static void test_paths_and_limits(void **state)
{
    (void)state;
    struct sw_schema_error err;
    const char *s = "{\"$defs\":{\"item\":{\"type\":\"object\",\"required\":[\"id\"],"
                    "\"properties\":{\"id\":{\"type\":\"integer\"}}}},"
                    "\"type\":\"object\",\"properties\":{\"items\":{\"type\":\"array\",\"items\":{\"$ref\":\"#/$defs/item\"}}}}";
    assert_int_equal(check(s, "{\"items\":[{\"id\":1},{\"id\":2.0}]}", &err), SW_SCHEMA_OK);
    assert_int_equal(check(s, "{\"items\":[{\"id\":1},{\"id\":\"x\"}]}", &err), SW_SCHEMA_INVALID);
    assert_string_equal(err.path, "/items/1/id");
    assert_string_equal(err.reason, "type: wrong type");
    assert_int_equal(check(s, "{\"items\":[{}]}", &err), SW_SCHEMA_INVALID);
    assert_string_equal(err.reason, "required: missing property");

    /* A $ref to itself with nothing consumed stops at the depth bound. */
    assert_int_equal(check("{\"$ref\":\"#\"}", "1", &err), SW_SCHEMA_LIMIT);
    /* Each level doubling the work stops at the step budget. */
    json_t *deep = js("true");
    for (int k = 0; k < 40; k++)
        deep = json_pack("{s:[o,o]}", "anyOf", json_pack("{s:o}", "not", json_pack("{s:o}", "not", json_incref(deep))), deep);
    json_t *one = json_integer(1);
    assert_int_not_equal(sw_schema_validate(deep, one, &err), SW_SCHEMA_INVALID);
    json_decref(deep);
    json_decref(one);
    json_t *loop = js("{\"allOf\":[{\"$ref\":\"#/$defs/a\"},{\"$ref\":\"#/$defs/a\"}],"
                      "\"$defs\":{\"a\":{\"allOf\":[{\"$ref\":\"#/$defs/b\"},{\"$ref\":\"#/$defs/b\"}]},"
                      "\"b\":{\"allOf\":[{\"$ref\":\"#\"},{\"$ref\":\"#\"}]}}}");
    json_t *arr = js("[]");
    assert_int_equal(sw_schema_validate(loop, arr, &err), SW_SCHEMA_LIMIT);
    json_decref(loop);
    json_decref(arr);

    /* A malformed schema is the schema's fault, not the answer's. */
    assert_int_equal(check("{\"$ref\":\"http://example.com/s\"}", "1", &err), SW_SCHEMA_BAD_SCHEMA);
    assert_int_equal(check("{\"pattern\":\"(\"}", "\"a\"", &err), SW_SCHEMA_BAD_SCHEMA);
    assert_int_equal(check("{\"type\":5}", "1", &err), SW_SCHEMA_BAD_SCHEMA);
    /* Code points, not bytes. */
    assert_int_equal(check("{\"maxLength\":2}", "\"\xc3\xa9\xc3\xa9\"", &err), SW_SCHEMA_OK);
    assert_int_equal(check("{\"maxLength\":1}", "\"\xc3\xa9\xc3\xa9\"", &err), SW_SCHEMA_INVALID);
    /* prefixItems then items for the rest. */
    assert_int_equal(check("{\"prefixItems\":[{\"type\":\"string\"}],\"items\":{\"type\":\"integer\"}}",
                           "[\"a\",1,2]", &err), SW_SCHEMA_OK);
    assert_int_equal(check("{\"prefixItems\":[{\"type\":\"string\"}],\"items\":{\"type\":\"integer\"}}",
                           "[\"a\",1,\"b\"]", &err), SW_SCHEMA_INVALID);
    assert_string_equal(err.path, "/2");
}

/* The contract finds the schema in response_format json_schema only, and
 * tells conforming JSON, other JSON, non-JSON and an unusable schema apart. */
static void test_contract(void **state)
{
    (void)state;
    json_t *body = js("{\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"p\","
                      "\"schema\":{\"type\":\"object\",\"required\":[\"a\"]}}}}");
    const json_t *s = sw_contract_schema(body);
    assert_non_null(s);
    struct sw_schema_error err;
    assert_int_equal(sw_contract_check(s, "{\"a\":1}", 7, &err), SW_CONTRACT_OK);
    assert_int_equal(sw_contract_check(s, "{\"b\":1}", 7, &err), SW_CONTRACT_VIOLATION);
    assert_int_equal(sw_contract_check(s, "Sure! {\"a\":1}", 13, &err), SW_CONTRACT_INVALID_JSON);
    assert_int_equal(sw_contract_check(s, NULL, 0, &err), SW_CONTRACT_INVALID_JSON);
    assert_string_equal(sw_contract_verdict_name(SW_CONTRACT_INVALID_JSON), "invalid_json");
    json_decref(body);
    json_t *bad = js("{\"$ref\":\"#/nowhere\"}");
    assert_int_equal(sw_contract_check(bad, "1", 1, &err), SW_CONTRACT_UNCHECKED);
    json_decref(bad);
    static const char *const none[] = {
        "{}", "{\"response_format\":{\"type\":\"json_object\"}}",
        "{\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"x\"}}}",
        "{\"response_format\":\"json_schema\"}",
    };
    for (size_t k = 0; k < sizeof none / sizeof *none; k++) {
        json_t *b = js(none[k]);
        assert_null(sw_contract_schema(b));
        json_decref(b);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_suite),
        cmocka_unit_test(test_paths_and_limits),
        cmocka_unit_test(test_contract),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
