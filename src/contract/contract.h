/* The output contract: a request that carries
 * response_format {type: "json_schema", json_schema: {schema: S}} expects
 * the answer's content to be JSON that S accepts, whichever tier answers
 * (a cloud model can drift to another shape than the local one). This
 * module finds S in a request and judges a content text against it; what
 * happens on a violation is the relay's (models[].contract). Pure. */
#ifndef SW_CONTRACT_CONTRACT_H
#define SW_CONTRACT_CONTRACT_H

#include <jansson.h>
#include <stddef.h>

#include "contract/schema.h"

enum sw_contract_verdict {
    SW_CONTRACT_OK,             /* JSON the schema accepts */
    SW_CONTRACT_VIOLATION,      /* JSON the schema rejects */
    SW_CONTRACT_INVALID_JSON,   /* not JSON at all (or no content) */
    SW_CONTRACT_UNCHECKED,      /* the schema could not be applied (malformed, too complex) */
};

/* The schema of a chat request body's response_format (borrowed from body),
 * or NULL when it asks for none. */
const json_t *sw_contract_schema(const json_t *body);

/* An Anthropic client's equivalent of response_format: a tool_choice that
 * forces one tool ({type: function, function: {name}} in the OpenAI form of
 * its request); the answer is that tool's input, held to the tool's
 * parameters (its input_schema). The schema (borrowed from body) and in
 * *name the tool's name, or NULL when no tool with a schema is forced. */
const json_t *sw_contract_tool_schema(const json_t *body, const char **name);

/* Judges content (len bytes, borrowed; NULL: no content) against schema.
 * err (may be NULL) says where a violation is (never the content itself). */
enum sw_contract_verdict sw_contract_check(const json_t *schema, const char *content, size_t len,
                                           struct sw_schema_error *err);

/* "ok", "violation", "invalid_json", "unchecked". */
const char *sw_contract_verdict_name(enum sw_contract_verdict v);

#endif
