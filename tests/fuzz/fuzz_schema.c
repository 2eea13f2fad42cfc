/* libFuzzer target for the output contract's JSON Schema validator
 * (src/contract/schema.c). The input is a schema and an instance, two JSON
 * texts separated by the first newline. Promises checked on every input:
 *  - it returns one of its results, never crashes, loops or reads out of
 *    bounds, whatever the schema ($ref cycles, patterns, deep nesting);
 *  - it is deterministic: validating twice gives the same answer;
 *  - the error it fills is NUL-terminated within its arrays;
 *  - the true schema accepts and the false schema rejects everything. */
#include <jansson.h>
#include <stdint.h>
#include <string.h>

#include "contract/schema.h"

#include "check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    const char *nl = memchr(text, '\n', size);
    if (!nl)
        return 0;
    json_error_t e;
    size_t flags = JSON_DECODE_ANY | JSON_REJECT_DUPLICATES;
    json_t *schema = json_loadb(text, (size_t)(nl - text), flags, &e);
    json_t *inst = json_loadb(nl + 1, size - (size_t)(nl - text) - 1, flags, &e);
    if (schema && inst) {
        struct sw_schema_error err;
        enum sw_schema_result r = sw_schema_validate(schema, inst, &err);
        CHECK(r == SW_SCHEMA_OK || r == SW_SCHEMA_INVALID || r == SW_SCHEMA_BAD_SCHEMA ||
              r == SW_SCHEMA_LIMIT);
        CHECK(memchr(err.path, '\0', sizeof err.path) && memchr(err.reason, '\0', sizeof err.reason));
        CHECK(sw_schema_validate(schema, inst, NULL) == r);
        CHECK(r == SW_SCHEMA_OK || err.reason[0]);
        CHECK(sw_schema_validate(json_true(), inst, NULL) == SW_SCHEMA_OK);
        CHECK(sw_schema_validate(json_false(), inst, NULL) == SW_SCHEMA_INVALID);
    }
    json_decref(schema);
    json_decref(inst);
    return 0;
}
