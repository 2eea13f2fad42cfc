#include "upstream/dialect.h"

#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "dialect/anth_req.h"
#include "dialect/anth_stream.h"

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

static json_t *anthropic_body(const json_t *oai, long default_max_tokens,
                              struct sw_request_error *err)
{
    json_t *body;
    if (sw_anth_req_from_openai(oai, default_max_tokens, &body, err))
        return NULL;
    return body;
}

static json_t *anthropic_answer(const json_t *answer, const char *model, long long created,
                                bool format_tool)
{
    json_t *o = sw_anth_resp_to_openai(answer, model, created);
    if (o && format_tool)
        sw_anth_resp_format_tool_to_content(o);
    return o;
}

/* ---- Streams ---- */

static void openai_stream_init(struct sw_dialect_stream *s, const char *model, long long created,
                               bool format_tool)
{
    (void)model, (void)created, (void)format_tool;
    s->error_type[0] = '\0';
    s->preamble = false;
}

static void anthropic_stream_init(struct sw_dialect_stream *s, const char *model,
                                  long long created, bool format_tool)
{
    s->error_type[0] = '\0';
    s->preamble = true;
    sw_anth_to_oai_init(&s->u.anth, model, created);
    s->u.anth.format_tool = format_tool;
}

static int anthropic_stream_event(struct sw_dialect_stream *s, const char *data, size_t len,
                                  json_t *chunks, bool *done, const char **msg)
{
    if (s->preamble && !sw_anth_preamble_event(data, len))
        s->preamble = false;
    int rc = sw_anth_to_oai_event(&s->u.anth, data, len, chunks, msg);
    memcpy(s->error_type, s->u.anth.error_type, sizeof s->error_type);
    *done = s->u.anth.done;
    return rc;
}

static void openai_client_init(struct sw_dialect_client *c, const char *id, const char *model,
                               long input_tokens_est)
{
    (void)c, (void)id, (void)model, (void)input_tokens_est;
}

static int openai_client_chunk(struct sw_dialect_client *c, const json_t *chunk,
                               struct sw_buf *out)
{
    (void)c;
    return sw_oai_stream_chunk(chunk, out);
}

static int openai_client_finish(struct sw_dialect_client *c, struct sw_buf *out)
{
    (void)c;
    return sw_oai_stream_finish(out);
}

static int openai_client_error(struct sw_dialect_client *c, const char *type, const char *code,
                               const char *msg, struct sw_buf *out)
{
    (void)c, (void)type;
    return sw_oai_stream_error(code, msg, out);
}

static void anthropic_client_init(struct sw_dialect_client *c, const char *id, const char *model,
                                  long input_tokens_est)
{
    sw_oai_to_anth_init(&c->u.anth, id, model, input_tokens_est);
}

static int anthropic_client_chunk(struct sw_dialect_client *c, const json_t *chunk,
                                  struct sw_buf *out)
{
    return sw_oai_to_anth_chunk(&c->u.anth, chunk, out);
}

static int anthropic_client_finish(struct sw_dialect_client *c, struct sw_buf *out)
{
    return sw_oai_to_anth_finish(&c->u.anth, out);
}

static int anthropic_client_error(struct sw_dialect_client *c, const char *type,
                                  const char *code, const char *msg, struct sw_buf *out)
{
    (void)code;
    return sw_oai_to_anth_error_typed(&c->u.anth, type, msg, out);
}

/* One table per API; another dialect is one more row. */
static const struct sw_upstream_dialect dialects[] = {
    [SW_DIALECT_OPENAI] = {
        .name = "openai",
        .chat_path = "/v1/chat/completions",
        .headers = openai_headers,
        .stream_init = openai_stream_init,
        .client_init = openai_client_init,
        .client_chunk = openai_client_chunk,
        .client_finish = openai_client_finish,
        .client_error = openai_client_error,
    },
    [SW_DIALECT_ANTHROPIC] = {
        .name = "anthropic",
        .chat_path = "/v1/messages",
        .headers = anthropic_headers,
        .request_body = anthropic_body,
        .answer_to_openai = anthropic_answer,
        .stream_init = anthropic_stream_init,
        .stream_event = anthropic_stream_event,
        .client_init = anthropic_client_init,
        .client_chunk = anthropic_client_chunk,
        .client_finish = anthropic_client_finish,
        .client_error = anthropic_client_error,
        .answer_from_openai = sw_anth_resp_from_openai,
    },
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
