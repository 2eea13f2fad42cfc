#include "upstream/dialect.h"

#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "dialect/anth_req.h"

/* ---- Client header grammars ---- */

static bool digits(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] < '0' || s[i] > '9')
            return false;
    return true;
}

/* A calendar-shaped date: 8 digits, month 01-12, day 01-31. */
static bool date8(const char *y, const char *m, const char *d)
{
    int month = (m[0] - '0') * 10 + (m[1] - '0'), day = (d[0] - '0') * 10 + (d[1] - '0');
    (void)y;
    return month >= 1 && month <= 12 && day >= 1 && day <= 31;
}

bool sw_upstream_anthropic_version_ok(const char *v, size_t len)
{
    return v && len == 10 && digits(v, 4) && v[4] == '-' && digits(v + 5, 2) && v[7] == '-' &&
           digits(v + 8, 2) && date8(v, v + 5, v + 8);
}

/* One beta name (see dialect.h). */
static bool beta_name_ok(const char *s, size_t n)
{
    if (n == 0 || n > SW_UPSTREAM_BETA_NAME_MAX)
        return false;
    size_t date;        /* bytes of the date suffix, its '-' included */
    if (n > 11 && s[n - 11] == '-' && sw_upstream_anthropic_version_ok(s + n - 10, 10))
        date = 11;
    else if (n > 9 && s[n - 9] == '-' && digits(s + n - 8, 8) && date8(s + n - 8, s + n - 4, s + n - 2))
        date = 9;
    else
        return false;
    size_t words = n - date;
    if (words == 0 || s[0] < 'a' || s[0] > 'z')
        return false;
    for (size_t i = 0; i < words; i++) {
        char c = s[i];
        bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
        if (!alnum && !(c == '-' && i > 0 && s[i - 1] != '-'))
            return false;
    }
    return s[words - 1] != '-';
}

bool sw_upstream_anthropic_beta_ok(const char *v, size_t len)
{
    size_t i = 0, names = 0;
    if (!v)
        return false;
    for (;;) {
        while (i < len && (v[i] == ' ' || v[i] == '\t'))
            i++;
        size_t start = i;
        while (i < len && v[i] != ',' && v[i] != ' ' && v[i] != '\t')
            i++;
        if (!beta_name_ok(v + start, i - start) || ++names > SW_UPSTREAM_BETA_MAX)
            return false;
        while (i < len && (v[i] == ' ' || v[i] == '\t'))
            i++;
        if (i == len)
            return true;
        if (v[i] != ',')
            return false;
        i++;
    }
}

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
 * anthropic-beta only from the client. A client value outside its grammar
 * is never sent (the front answers it 400; this holds whoever calls). */
static int anthropic_headers(const struct sw_config_backend *be,
                             const struct sw_upstream_client_hdrs *c, struct sw_buf *out)
{
    int err = be->api_key ? header(out, "x-api-key", be->api_key) : SW_OK;
    const char *cv = c ? c->anthropic_version : NULL, *cb = c ? c->anthropic_beta : NULL;
    if (cv && !sw_upstream_anthropic_version_ok(cv, strlen(cv)))
        cv = NULL;
    if (cb && !sw_upstream_anthropic_beta_ok(cb, strlen(cb)))
        cb = NULL;
    const char *version = cv                    ? cv
                          : be->anthropic_version ? be->anthropic_version
                                                  : SW_ANTH_DEFAULT_VERSION;
    if (!err)
        err = header(out, "anthropic-version", version);
    if (!err && cb)
        err = header(out, "anthropic-beta", cb);
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
