#include "contract/contract.h"

#include <string.h>

const json_t *sw_contract_schema(const json_t *body)
{
    const json_t *rf = json_object_get(body, "response_format");
    const char *type = json_string_value(json_object_get(rf, "type"));
    if (!type || strcmp(type, "json_schema") != 0)
        return NULL;
    const json_t *schema = json_object_get(json_object_get(rf, "json_schema"), "schema");
    return json_is_object(schema) || json_is_boolean(schema) ? schema : NULL;
}

const json_t *sw_contract_tool_schema(const json_t *body, const char **name)
{
    const json_t *tc = json_object_get(body, "tool_choice");
    const char *type = json_string_value(json_object_get(tc, "type"));
    const char *want = json_string_value(json_object_get(json_object_get(tc, "function"), "name"));
    if (!type || strcmp(type, "function") != 0 || !want)
        return NULL;
    size_t i;
    const json_t *t;
    json_array_foreach(json_object_get(body, "tools"), i, t) {
        const json_t *fn = json_object_get(t, "function");
        const char *n = json_string_value(json_object_get(fn, "name"));
        const json_t *schema = json_object_get(fn, "parameters");
        if (n && !strcmp(n, want) && (json_is_object(schema) || json_is_boolean(schema))) {
            *name = n;
            return schema;
        }
    }
    return NULL;
}

enum sw_contract_verdict sw_contract_check(const json_t *schema, const char *content, size_t len,
                                           struct sw_schema_error *err)
{
    if (err)
        err->path[0] = err->reason[0] = '\0';
    if (!content)
        return SW_CONTRACT_INVALID_JSON;
    json_error_t je;
    json_t *v = json_loadb(content, len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &je);
    if (!v)
        return SW_CONTRACT_INVALID_JSON;
    enum sw_schema_result r = sw_schema_validate(schema, v, err);
    json_decref(v);
    return r == SW_SCHEMA_OK        ? SW_CONTRACT_OK
           : r == SW_SCHEMA_INVALID ? SW_CONTRACT_VIOLATION
                                    : SW_CONTRACT_UNCHECKED;
}

const char *sw_contract_verdict_name(enum sw_contract_verdict v)
{
    switch (v) {
    case SW_CONTRACT_OK: return "ok";
    case SW_CONTRACT_VIOLATION: return "violation";
    case SW_CONTRACT_INVALID_JSON: return "invalid_json";
    default: return "unchecked";
    }
}
