/* The APIs an upstream may speak, behind one small table of operations, so
 * the relay stays the same whatever the backend speaks and another dialect
 * is one more table. The relay's own form is OpenAI's chat completions: a
 * dialect says where its chat endpoint is, which headers authenticate and
 * version a request, and how requests and answers translate to and from
 * that form (NULL translation functions: none needed). */
#ifndef SW_UPSTREAM_DIALECT_H
#define SW_UPSTREAM_DIALECT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/buf.h"
#include "config/config.h"
#include "dialect/anth_resp.h"
#include "request/request.h"

/* Headers of the client passed through to a backend of the client's own API. */
struct sw_upstream_client_hdrs {
    const char *anthropic_version;      /* NULL: absent */
    const char *anthropic_beta;
};

/* The client headers a backend of the client's own API may get, validated
 * at the door (a value outside its grammar is a 400 naming the header); no
 * other client header reaches an upstream. anthropic-version: a date,
 * YYYY-MM-DD. anthropic-beta: 1..SW_UPSTREAM_BETA_MAX comma-separated
 * names (optional spaces or tabs around each), each of at most
 * SW_UPSTREAM_BETA_NAME_MAX bytes: lower-case letters and digits in words
 * joined by single '-', ending in the feature's date (-YYYY-MM-DD or
 * -YYYYMMDD), as Anthropic names every beta ("prompt-caching-2024-07-31",
 * "claude-code-20250219"). */
#define SW_UPSTREAM_BETA_MAX 16
#define SW_UPSTREAM_BETA_NAME_MAX 64
bool sw_upstream_anthropic_version_ok(const char *v, size_t len);
bool sw_upstream_anthropic_beta_ok(const char *v, size_t len);

struct sw_upstream_dialect {
    const char *name;
    const char *chat_path;              /* appended to the backend's url */
    /* Appends the authentication and version headers, "Name: value\r\n" each. */
    int (*headers)(const struct sw_config_backend *be, const struct sw_upstream_client_hdrs *c,
                   struct sw_buf *out);
    /* An OpenAI request (borrowed) as this dialect's body: malloc'ed text, or
     * NULL with *err filled (a field that cannot be translated: 400). */
    char *(*request_body)(const json_t *oai, long default_max_tokens,
                          struct sw_request_error *err);
    /* A whole answer of this dialect as an OpenAI answer; NULL: malformed. */
    json_t *(*answer_to_openai)(const json_t *answer, const char *model, long long created);
};

/* The table of dialect d; never NULL. */
const struct sw_upstream_dialect *sw_upstream_dialect(enum sw_dialect d);

/* Which of its dialects backend `be` is spoken to for a client of API
 * `client`: the client's own when the backend speaks it (no translation),
 * else the backend's first. */
enum sw_dialect sw_upstream_dialect_for(const struct sw_config_backend *be, enum sw_dialect client);

#endif
