/* JSON Schema validation of a jansson tree (the subset an output contract
 * needs; docs/api.md "Output contract" lists the keywords). Pure: no I/O,
 * no clock, no allocation that outlives a call. */
#ifndef SW_CONTRACT_SCHEMA_H
#define SW_CONTRACT_SCHEMA_H

#include <jansson.h>
#include <stddef.h>

/* How deep validation may nest (subschemas plus $ref hops), and how many
 * subschema applications one validation may make, before it stops with
 * SW_SCHEMA_LIMIT: a recursive $ref cannot loop forever, and nested
 * combinators cannot take exponential time. */
#define SW_SCHEMA_MAX_DEPTH 128
#define SW_SCHEMA_MAX_STEPS 200000

enum sw_schema_result {
    SW_SCHEMA_OK = 0,
    SW_SCHEMA_INVALID,    /* the instance violates the schema */
    SW_SCHEMA_BAD_SCHEMA, /* the schema itself is malformed (bad $ref, bad pattern, wrong type) */
    SW_SCHEMA_LIMIT,      /* nesting beyond SW_SCHEMA_MAX_DEPTH or more than SW_SCHEMA_MAX_STEPS steps */
};

/* Where and why validation failed: the instance's JSON pointer and the
 * keyword with a short reason. Never holds instance values (they may be
 * prompts or answers), only keyword names and schema-side numbers. */
struct sw_schema_error {
    char path[128];   /* JSON pointer into the instance, "" for the root */
    char reason[128]; /* e.g. "required: missing property \"name\"" */
};

/* Validates instance against schema (root of its own $ref space). Borrows
 * both; err may be NULL. Unknown keywords are ignored (as JSON Schema says). */
enum sw_schema_result sw_schema_validate(const json_t *schema, const json_t *instance,
                                         struct sw_schema_error *err);

#endif
