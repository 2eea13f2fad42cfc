#include "upstream/dialect.h"

#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "dialect/anth_req.h"

static int header(struct sw_buf *out, const char *name, const char *value)
{
    return sw_buf_appendf(out, "%s: %s\r\n", name, value);
}

static int openai_headers(const struct sw_config_backend *be,
                          const struct sw_upstream_client_hdrs *c, struct sw_buf *out)
{
    (void)c;
    return be->api_key ? sw_buf_appendf(out, "Authorization: Bearer %s\r\n", be->api_key) : SW_OK;
}

/* x-api-key, and anthropic-version: the client's when it spoke Anthropic,
 * else the backend's configured one, else SW_ANTH_DEFAULT_VERSION;
 * anthropic-beta only from the client. */
static int anthropic_headers(const struct sw_config_backend *be,
                             const struct sw_upstream_client_hdrs *c, struct sw_buf *out)
{
    int err = be->api_key ? header(out, "x-api-key", be->api_key) : SW_OK;
    const char *version = c && c->anthropic_version ? c->anthropic_version
                          : be->anthropic_version   ? be->anthropic_version
                                                    : SW_ANTH_DEFAULT_VERSION;
    if (!err)
        err = header(out, "anthropic-version", version);
    if (!err && c && c->anthropic_beta)
        err = header(out, "anthropic-beta", c->anthropic_beta);
    return err;
}

static char *anthropic_body(const json_t *oai, long default_max_tokens,
                            struct sw_request_error *err)
{
    json_t *body;
    if (sw_anth_req_from_openai(oai, default_max_tokens, &body, err))
        return NULL;
    char *s = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    if (!s)
        sw_request_error_set(err, 500, "server_error", "out_of_memory", NULL, "Out of memory.");
    return s;
}

static const struct sw_upstream_dialect dialects[] = {
    [SW_DIALECT_OPENAI] = {"openai", "/v1/chat/completions", openai_headers, NULL, NULL},
    [SW_DIALECT_ANTHROPIC] = {"anthropic", "/v1/messages", anthropic_headers, anthropic_body,
                              sw_anth_resp_to_openai},
};

const struct sw_upstream_dialect *sw_upstream_dialect(enum sw_dialect d)
{
    return (unsigned)d < sizeof dialects / sizeof dialects[0] ? &dialects[d] : &dialects[0];
}

enum sw_dialect sw_upstream_dialect_for(const struct sw_config_backend *be, enum sw_dialect client)
{
    unsigned set = be->dialects ? be->dialects : 1u << be->dialect;
    return set & (1u << client) ? client : be->dialect;
}
