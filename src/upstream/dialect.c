#include "upstream/dialect.h"

#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/err.h"
#include "common/jdump.h"
#include "common/sigv4.h"
#include "dialect/anth_req.h"
#include "dialect/anth_stream.h"
#include "dialect/responses_up.h"
#include "upstream/h1.h"

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
    const char *cv = c ? c->value[0] : NULL, *cb = c ? c->value[1] : NULL;
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

static int openai_client_init(struct sw_dialect_client *c, const struct sw_dialect_answer *a)
{
    (void)c, (void)a;
    return SW_OK;
}

static int openai_client_chunk(struct sw_dialect_client *c, const json_t *chunk,
                               struct sw_buf *out)
{
    (void)c;
    return sw_oai_stream_chunk(chunk, out);
}

static int openai_client_finish(struct sw_dialect_client *c, long long now_s, struct sw_buf *out)
{
    (void)c, (void)now_s;
    return sw_oai_stream_finish(out);
}

static int openai_client_error(struct sw_dialect_client *c, const char *type, const char *code,
                               const char *msg, struct sw_buf *out)
{
    (void)c, (void)type;
    return sw_oai_stream_error(code, msg, out);
}

static int anthropic_client_init(struct sw_dialect_client *c, const struct sw_dialect_answer *a)
{
    sw_oai_to_anth_init(&c->u.anth, a->id, a->model, a->input_tokens_est);
    return SW_OK;
}

static int anthropic_client_chunk(struct sw_dialect_client *c, const json_t *chunk,
                                  struct sw_buf *out)
{
    return sw_oai_to_anth_chunk(&c->u.anth, chunk, out);
}

static int anthropic_client_finish(struct sw_dialect_client *c, long long now_s,
                                   struct sw_buf *out)
{
    (void)now_s;
    return sw_oai_to_anth_finish(&c->u.anth, out);
}

static int anthropic_client_error(struct sw_dialect_client *c, const char *type,
                                  const char *code, const char *msg, struct sw_buf *out)
{
    (void)code;
    return sw_oai_to_anth_error_typed(&c->u.anth, type, msg, out);
}

static json_t *anthropic_from_openai(struct sw_dialect_client *c, const json_t *oai,
                                     const char *model, long long now_s)
{
    (void)c, (void)now_s;
    return sw_anth_resp_from_openai(oai, model);
}

/* ---- OpenAI's Responses API ---- */

/* A chat client's body has no Responses form here: a backend that speaks
 * only the Responses API serves Responses clients alone (give it
 * `dialects: [openai, responses]` when it speaks chat too). */
static json_t *responses_body(const json_t *oai, long default_max_tokens,
                              struct sw_request_error *err)
{
    (void)oai, (void)default_max_tokens;
    sw_request_error_set(err, 400, "invalid_request_error", "untranslatable", NULL,
                         "The backend speaks only OpenAI's Responses API, and requests of "
                         "other APIs are not translated to it.");
    return NULL;
}

static json_t *responses_answer(const json_t *answer, const char *model, long long created,
                                bool format_tool)
{
    (void)format_tool;
    return sw_responses_to_chat(answer, model, created);
}

static void responses_stream_init(struct sw_dialect_stream *s, const char *model,
                                  long long created, bool format_tool)
{
    (void)format_tool;
    s->error_type[0] = '\0';
    s->preamble = true;
    sw_resp_to_oai_init(&s->u.resp, model, created);
}

static int responses_stream_event(struct sw_dialect_stream *s, const char *data, size_t len,
                                  json_t *chunks, bool *done, const char **msg)
{
    size_t before = json_array_size(chunks);
    int rc = sw_resp_to_oai_event(&s->u.resp, data, len, chunks, msg);
    if (json_array_size(chunks) > before)
        s->preamble = false;
    *done = s->u.resp.done;
    return rc;
}

static int resp_client_init(struct sw_dialect_client *c, const struct sw_dialect_answer *a)
{
    struct sw_dialect_resp_client *r = &c->u.resp;
    memset(r, 0, sizeof *r);
    snprintf(r->id, sizeof r->id, "%s", a->response_id ? a->response_id : a->id);
    snprintf(r->model, sizeof r->model, "%s", a->model ? a->model : "");
    r->meta = (struct sw_resp_meta){r->id, r->model, a->created, 0};
    r->request = a->request ? json_incref((json_t *)a->request) : NULL;
    return SW_OK;
}

static void resp_client_free(struct sw_dialect_client *c)
{
    struct sw_dialect_resp_client *r = &c->u.resp;
    if (r->stream)
        sw_resp_stream_free(r->stream);
    free(r->stream);
    json_decref(r->request);
    json_decref(r->shell);
    json_decref(r->final);
    memset(r, 0, sizeof *r);
}

/* The translated stream, made on its first use (whole answers need none). */
static struct sw_resp_stream *resp_stream(struct sw_dialect_resp_client *r)
{
    if (r->stream)
        return r->stream;
    struct sw_resp_stream *s = malloc(sizeof *s);
    if (!s || sw_resp_stream_init(s, r->request, &r->meta)) {
        if (s)
            sw_resp_stream_free(s);
        free(s);
        return NULL;
    }
    return r->stream = s;
}

static int resp_client_chunk(struct sw_dialect_client *c, const json_t *chunk, struct sw_buf *out)
{
    struct sw_resp_stream *s = resp_stream(&c->u.resp);
    return s ? sw_resp_stream_chunk(s, chunk, out) : SW_ENOMEM;
}

static int resp_client_finish(struct sw_dialect_client *c, long long now_s, struct sw_buf *out)
{
    struct sw_resp_stream *s = resp_stream(&c->u.resp);
    return s ? sw_resp_stream_finish(s, now_s, out) : SW_ENOMEM;
}

/* response.failed after a passed-through stream's events: the last response
 * object it showed, failed, numbered after its last event. */
static int resp_passed_fail(struct sw_dialect_resp_client *r, const char *msg, struct sw_buf *out)
{
    if (r->ended)
        return SW_OK;
    r->ended = true;
    json_t *resp = r->shell ? json_deep_copy(r->shell) : json_object();
    json_t *ev = resp ? json_pack("{s:s, s:I, s:o}", "type", "response.failed",
                                  "sequence_number", (json_int_t)r->seq, "response", resp)
                      : NULL;
    if (ev) {
        json_object_set_new(resp, "status", json_string("failed"));
        json_object_set_new(resp, "error", json_pack("{s:s, s:s}", "code", "server_error",
                                                     "message", msg ? msg : ""));
    }
    char *d = ev ? sw_json_dumps(ev, JSON_COMPACT) : NULL;
    json_decref(ev);
    int err = d ? sw_buf_appendf(out, "event: response.failed\ndata: %s\n\n", d) : SW_ENOMEM;
    free(d);
    return err;
}

/* A failure after the first byte: response.failed, its error's code
 * server_error (the spec's codes name none of the gateway's causes: the
 * message says what failed). */
static int resp_client_error(struct sw_dialect_client *c, const char *type, const char *code,
                             const char *msg, struct sw_buf *out)
{
    (void)type, (void)code;
    struct sw_dialect_resp_client *r = &c->u.resp;
    if (r->shell || r->seq)
        return resp_passed_fail(r, msg, out);
    struct sw_resp_stream *s = resp_stream(r);
    return s ? sw_resp_stream_fail(s, NULL, msg, out) : SW_ENOMEM;
}

static json_t *resp_from_openai(struct sw_dialect_client *c, const json_t *oai,
                                const char *model, long long now_s)
{
    (void)model;
    struct sw_dialect_resp_client *r = &c->u.resp;
    struct sw_resp_meta m = r->meta;
    m.completed_at = now_s;
    json_t *o = sw_responses_from_chat(oai, r->request, &m);
    json_decref(r->final);
    r->final = json_incref(o);
    return o;
}

/* A passed-through Response object as the gateway names it: its id is the
 * one the gateway stores it under, and previous_response_id the client's
 * (the backend got the whole conversation instead). */
static void resp_own_object(const struct sw_dialect_resp_client *r, json_t *resp)
{
    json_t *prev = r->request ? json_object_get(r->request, "previous_response_id") : NULL;
    json_object_set_new(resp, "id", json_string(r->id));
    json_object_set_new(resp, "previous_response_id",
                        json_is_string(prev) ? json_incref(prev) : json_null());
}

static void resp_client_passed(struct sw_dialect_client *c, json_t *tree, bool whole)
{
    struct sw_dialect_resp_client *r = &c->u.resp;
    if (whole) {
        resp_own_object(r, tree);
        json_decref(r->final);
        r->final = json_incref(tree);
        return;
    }
    const char *type = json_string_value(json_object_get(tree, "type"));
    json_t *seq = json_object_get(tree, "sequence_number"), *resp = json_object_get(tree, "response");
    if (json_is_integer(seq) && json_integer_value(seq) >= 0)
        r->seq = (long)json_integer_value(seq) + 1;
    if (json_is_object(resp)) {
        resp_own_object(r, resp);
        json_decref(r->shell);
        r->shell = json_incref(resp);
    }
    if (type && (!strcmp(type, "response.completed") || !strcmp(type, "response.incomplete")) &&
        json_is_object(resp)) {
        json_decref(r->final);
        r->final = json_incref(resp);
    }
    if (type && (!strcmp(type, "response.completed") || !strcmp(type, "response.incomplete") ||
                 !strcmp(type, "response.failed") || !strcmp(type, "error")))
        r->ended = true;
}

static const json_t *resp_client_final(const struct sw_dialect_client *c)
{
    const struct sw_dialect_resp_client *r = &c->u.resp;
    return r->final ? r->final : r->stream ? r->stream->final : NULL;
}

/* ---- Azure OpenAI ---- */

/* api-key, or an Entra ID token as a bearer: the one the client
 * credentials fetched, else the configured one (a token wins over the
 * key). */
static int azure_headers(const struct sw_config_backend *be,
                         const struct sw_upstream_client_hdrs *c, struct sw_buf *out)
{
    if (c && c->bearer)
        return sw_buf_appendf(out, "Authorization: Bearer %s\r\n", c->bearer);
    if (be->azure.entra_token)
        return sw_buf_appendf(out, "Authorization: Bearer %s\r\n", be->azure.entra_token);
    return be->api_key ? header(out, "api-key", be->api_key) : SW_OK;
}

/* With an api-version: /openai/deployments/{deployment}/{rel}?api-version=V
 * (the deployment names the model; "models" is the resource's list,
 * /openai/models?api-version=V). Without: the v1 API, /openai/v1/{rel}.
 * The config admits only URL-safe deployment and version names. */
static int azure_path(const struct sw_config_backend *be, const char *rel, struct sw_buf *out)
{
    const char *dep = be->azure.deployment ? be->azure.deployment : be->model;
    if (!be->azure.api_version)
        return sw_buf_appendf(out, "/openai/v1/%s", rel);
    if (!strcmp(rel, "models"))
        return sw_buf_appendf(out, "/openai/models?api-version=%s", be->azure.api_version);
    return sw_buf_appendf(out, "/openai/deployments/%s/%s?api-version=%s", dep ? dep : "", rel,
                          be->azure.api_version);
}

/* Azure's additions to an OpenAI answer or chunk (its content-filter
 * reports) removed, so the client gets OpenAI's shape. */
static void azure_strip(json_t *o)
{
    json_object_del(o, "prompt_filter_results");
    json_object_del(o, "prompt_annotations");
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(o, "choices"), i, c) {
        json_object_del(c, "content_filter_results");
        json_object_del(c, "content_filter_offsets");
    }
}

static json_t *azure_answer(const json_t *answer, const char *model, long long created,
                            bool format_tool)
{
    (void)model, (void)created, (void)format_tool;
    json_t *o = json_deep_copy(answer);
    if (o && json_is_object(o))
        azure_strip(o);
    return o;
}

/* Azure's stream is OpenAI's with content-filter reports: a first chunk of
 * no choices that carries only prompt_filter_results, and the reports on
 * the choices. The report-only chunks are dropped, the rest stripped. An
 * error event ({"error":{...}}: a filter that stopped the output, or a
 * failure) fails the stream: before the first token the attempt fails
 * over, after it the client gets its own API's error event. */
static int azure_stream_event(struct sw_dialect_stream *s, const char *data, size_t len,
                              json_t *chunks, bool *done, const char **msg)
{
    if (len == 6 && !memcmp(data, "[DONE]", 6)) {
        *done = true;
        return 0;
    }
    json_t *o = json_loadb(data, len, 0, NULL);
    if (!json_is_object(o)) {
        json_decref(o);
        *msg = "malformed JSON in stream event";
        return -1;
    }
    json_t *e = json_object_get(o, "error");
    if (json_is_object(e)) {
        const char *code = json_string_value(json_object_get(e, "code"));
        bool filtered = code && !strcmp(code, "content_filter");
        /* Anthropic's names: what the client's error event says */
        snprintf(s->error_type, sizeof s->error_type, "%s",
                 filtered ? "invalid_request_error" : "api_error");
        *msg = filtered ? "the provider's content filter stopped the answer"
                        : "the provider reported an error mid-stream";
        json_decref(o);
        return -1;
    }
    bool report_only = json_object_get(o, "prompt_filter_results") &&
                       json_array_size(json_object_get(o, "choices")) == 0 &&
                       !json_is_object(json_object_get(o, "usage"));
    azure_strip(o);
    if (report_only) {
        json_decref(o);
        return 0;
    }
    if (json_array_append_new(chunks, o)) {
        *msg = "out of memory";
        return -1;
    }
    return 0;
}

/* A provider's stream error, for a client of an API that names error types
 * (Anthropic's), by the HTTP status the provider gives it: 429
 * rate_limit_error, 503 overloaded_error, 400 invalid_request_error, else
 * api_error. */
static void stream_error_type(struct sw_dialect_stream *s, int status)
{
    snprintf(s->error_type, sizeof s->error_type, "%s",
             status == 429   ? "rate_limit_error"
             : status == 503 ? "overloaded_error"
             : status == 400 ? "invalid_request_error"
                             : "api_error");
}

/* ---- AWS Bedrock (Converse) ---- */

/* /model/{model id}/{rel}: the model id (an id, an inference profile or an
 * ARN) percent-encoded as the AWS SDKs do (':' and '/' too). */
static int bedrock_path(const struct sw_config_backend *be, const char *rel, struct sw_buf *out)
{
    int err = sw_buf_append_str(out, "/model/");
    for (const unsigned char *m = (const unsigned char *)(be->model ? be->model : "");
         !err && *m; m++) {
        bool plain = (*m >= 'A' && *m <= 'Z') || (*m >= 'a' && *m <= 'z') ||
                     (*m >= '0' && *m <= '9') || *m == '-' || *m == '_' || *m == '.' || *m == '~';
        err = plain ? sw_buf_append(out, m, 1) : sw_buf_appendf(out, "%%%02X", *m);
    }
    return err ? err : sw_buf_appendf(out, "/%s", rel);
}

static int bedrock_headers(const struct sw_config_backend *be,
                           const struct sw_upstream_client_hdrs *c, struct sw_buf *out)
{
    (void)be, (void)c;
    (void)out;
    return SW_OK;
}

/* The Host header as the transport sends it: the built-in client always
 * names the port, libcurl only one that is not the scheme's default. */
static void signing_host(const char *url, char *out, size_t cap)
{
    bool https = !strncmp(url, "https://", 8);
    const char *a = url + (https ? 8 : 7);
    size_t n = strcspn(a, "/");
    const char *colon = NULL;
    for (size_t i = n; i > 0; i--)
        if (a[i - 1] == ':') {
            colon = a + i - 1;
            break;
        } else if (a[i - 1] == ']') {
            break;
        }
    size_t hn = colon ? (size_t)(colon - a) : n;
    const char *port = colon ? colon + 1 : (https ? "443" : "80");
    size_t pn = colon ? n - hn - 1 : strlen(port);
    bool dflt = pn == (https ? 3u : 2u) && !strncmp(port, https ? "443" : "80", pn);
    if (sw_h1_handles(url) || !dflt)
        snprintf(out, cap, "%.*s:%.*s", (int)hn, a, (int)pn, port);
    else
        snprintf(out, cap, "%.*s", (int)hn, a);
}

static int bedrock_sign(const struct sw_config_backend *be, const char *path, const char *body,
                        size_t len, struct sw_buf *out)
{
    char host[300];
    signing_host(be->url, host, sizeof host);
    static const char *const names[] = {"content-type"};
    static const char *const values[] = {"application/json"};
    const struct sw_sigv4_req r = {"POST", host, path, be->aws.region, "bedrock", body, len,
                                   (long long)sw_wall_s(), names, values, 1};
    const struct sw_sigv4_creds c = {be->aws.access_key_id, be->aws.secret_access_key,
                                     be->aws.session_token};
    struct sw_sigv4_out o;
    return sw_sigv4_sign(&r, &c, &o, out);
}

static json_t *bedrock_body(const json_t *oai, long default_max_tokens,
                            struct sw_request_error *err)
{
    json_t *body;
    if (sw_bedrock_req_from_openai(oai, default_max_tokens, &body, err))
        return NULL;
    return body;
}

static json_t *bedrock_answer(const json_t *answer, const char *model, long long created,
                              bool format_tool)
{
    (void)format_tool;
    return sw_bedrock_resp_to_openai(answer, model, created);
}

static void bedrock_stream_init(struct sw_dialect_stream *s, const char *model, long long created,
                                bool format_tool)
{
    (void)format_tool;
    s->error_type[0] = '\0';
    s->preamble = true;
    sw_bedrock_to_oai_init(&s->u.bedrock, model, created);
}

/* messageStart alone makes no token: an exception after it still fails
 * over. An exception's type reaches a typed client by the status Bedrock
 * gives it. */
static int bedrock_stream_event(struct sw_dialect_stream *s, const char *data, size_t len,
                                json_t *chunks, bool *done, const char **msg)
{
    struct sw_bedrock_to_oai *b = &s->u.bedrock;
    int rc = sw_bedrock_to_oai_event(b, data, len, chunks, msg);
    if (b->content)
        s->preamble = false;
    if (rc && b->error_type[0])
        stream_error_type(s, sw_bedrock_exception_status(b->error_type));
    *done = b->done;
    return rc;
}

/* ---- Google's generateContent (Gemini API, Vertex AI) ---- */

/* The Gemini API's key; Vertex AI's access token (its token source). */
static int gemini_headers(const struct sw_config_backend *be,
                          const struct sw_upstream_client_hdrs *c, struct sw_buf *out)
{
    if (c && c->bearer)
        return sw_buf_appendf(out, "Authorization: Bearer %s\r\n", c->bearer);
    return be->api_key ? header(out, "x-goog-api-key", be->api_key) : SW_OK;
}

/* The model's resource and method: Gemini API
 * /{version}/models/{model}:{method}, Vertex AI
 * /{version}/projects/{project}/locations/{location}/publishers/google/models/{model}:{method}
 * ("models" is the model itself, a GET). A stream's method is
 * streamGenerateContent?alt=sse. The config admits only URL-safe names. */
static int gemini_path(const struct sw_config_backend *be, const char *rel, struct sw_buf *out)
{
    bool vertex = be->dialect == SW_DIALECT_VERTEX;
    const char *ver = be->gemini.api_version ? be->gemini.api_version : vertex ? "v1" : "v1beta";
    int err = vertex ? sw_buf_appendf(out, "/%s/projects/%s/locations/%s/publishers/google/models/%s",
                                      ver, be->vertex.project ? be->vertex.project : "",
                                      be->vertex.location ? be->vertex.location : "", be->model)
                     : sw_buf_appendf(out, "/%s/models/%s", ver, be->model);
    if (err || !strcmp(rel, "models"))
        return err;
    return sw_buf_appendf(out, ":%s%s", rel,
                          !strcmp(rel, "streamGenerateContent") ? "?alt=sse" : "");
}

static json_t *gemini_body(const json_t *oai, long default_max_tokens,
                           struct sw_request_error *err)
{
    return sw_gem_req_from_openai(oai, default_max_tokens, err);
}

/* The configured safety threshold, for every harm category. */
static int gemini_config(const struct sw_config_backend *be, json_t *body)
{
    if (!be->gemini.safety_threshold)
        return SW_OK;
    json_t *ss = sw_gem_safety_settings(be->gemini.safety_threshold);
    return ss && !json_object_set_new(body, "safetySettings", ss) ? SW_OK : SW_ENOMEM;
}

static json_t *gemini_answer(const json_t *answer, const char *model, long long created,
                             bool format_tool)
{
    (void)format_tool;
    return sw_gem_resp_to_openai(answer, model, created);
}

static void gemini_stream_init(struct sw_dialect_stream *s, const char *model, long long created,
                               bool format_tool)
{
    (void)format_tool;
    s->error_type[0] = '\0';
    s->preamble = true;
    sw_gem_to_oai_init(&s->u.gem, model, created);
}

/* Gemini's stream has no end marker: the chunk with a finishReason ends it. */
static int gemini_stream_event(struct sw_dialect_stream *s, const char *data, size_t len,
                               json_t *chunks, bool *done, const char **msg)
{
    size_t before = json_array_size(chunks);
    int rc = sw_gem_to_oai_event(&s->u.gem, data, len, chunks, msg);
    if (!rc && json_array_size(chunks) > before)
        s->preamble = false;
    if (rc) {
        const char *t = s->u.gem.error_type;
        stream_error_type(s, !strcmp(t, "RESOURCE_EXHAUSTED") ? 429
                             : !strcmp(t, "UNAVAILABLE")      ? 503
                             : !strcmp(t, "INVALID_ARGUMENT") ? 400
                                                              : 0);
    }
    *done = s->u.gem.done;
    return rc;
}

/* ---- Anthropic's Messages on Vertex AI ---- */

/* The publisher's model: /v1/projects/{p}/locations/{l}/publishers/anthropic/
 * models/{model}:rawPredict (streamed: :streamRawPredict). */
static int vertex_anthropic_path(const struct sw_config_backend *be, const char *rel,
                                 struct sw_buf *out)
{
    int err = sw_buf_appendf(out, "/v1/projects/%s/locations/%s/publishers/anthropic/models/%s",
                             be->vertex.project ? be->vertex.project : "",
                             be->vertex.location ? be->vertex.location : "", be->model);
    return err || !strcmp(rel, "models") ? err : sw_buf_appendf(out, ":%s", rel);
}

/* The token only: the version goes in the body. */
static int vertex_anthropic_headers(const struct sw_config_backend *be,
                                    const struct sw_upstream_client_hdrs *c, struct sw_buf *out)
{
    (void)be;
    return c && c->bearer ? sw_buf_appendf(out, "Authorization: Bearer %s\r\n", c->bearer) : SW_OK;
}

/* Vertex AI's Messages body: no model (the path names it), its own
 * anthropic_version. */
static int vertex_anthropic_config(const struct sw_config_backend *be, json_t *body)
{
    (void)be;
    json_object_del(body, "model");
    return json_object_set_new(body, "anthropic_version", json_string(SW_VERTEX_ANTHROPIC_VERSION))
               ? SW_ENOMEM
               : SW_OK;
}

#define GEMINI_PING "{\"contents\":[{\"role\":\"user\",\"parts\":[{\"text\":\"ping\"}]}]," \
                    "\"generationConfig\":{\"maxOutputTokens\":1}}"

/* The one-token ping of chat completions and Messages: the body reads the
 * same in both. */
#define CHAT_PING "{\"model\":\"%s\",\"max_tokens\":1,\"messages\":[{\"role\":\"user\",\"content\":\"ping\"}]}"

/* One table per API; another dialect is one more row. */

/* AWS's error bodies: {"message": ...} (or "Message"). */
static const json_t *bedrock_error_message(const json_t *body)
{
    const json_t *m = json_object_get(body, "message");
    return m ? m : json_object_get(body, "Message");
}

static const struct sw_upstream_dialect dialects[] = {
    [SW_DIALECT_OPENAI] = {
        .name = "openai",
        .chat_path = "chat/completions",
        .headers = openai_headers,
        .stream_init = openai_stream_init,
        .client_init = openai_client_init,
        .client_chunk = openai_client_chunk,
        .client_finish = openai_client_finish,
        .client_error = openai_client_error,
        .api_name = "openai",
        .max_tokens_key = "max_completion_tokens",
        .ping_fmt = CHAT_PING,
        .pii_surface = SW_PII_SURFACE_CHAT,
        .provider_name = "openai",
        .embeddings = true,
    },
    [SW_DIALECT_ANTHROPIC] = {
        .name = "anthropic",
        .chat_path = "messages",
        .headers = anthropic_headers,
        .request_body = anthropic_body,
        .answer_to_openai = anthropic_answer,
        .stream_init = anthropic_stream_init,
        .stream_event = anthropic_stream_event,
        .client_init = anthropic_client_init,
        .client_chunk = anthropic_client_chunk,
        .client_finish = anthropic_client_finish,
        .client_error = anthropic_client_error,
        .answer_from_openai = anthropic_from_openai,
        .native_event = sw_anth_native_event,
        .native_answer = sw_anth_native_answer,
        .api_name = "anthropic",
        .max_tokens_key = "max_tokens",
        .ping_fmt = CHAT_PING,
        .pii_surface = SW_PII_SURFACE_MESSAGES,
        .always_usage = true,
        .tool_contract = true,
        .provider_name = "anthropic",
        .native_unmask = true,
        .client_headers = {"anthropic-version", "anthropic-beta"},
    },
    [SW_DIALECT_RESPONSES] = {
        .name = "responses",
        .chat_path = "responses",
        .headers = openai_headers,
        .request_body = responses_body,
        .answer_to_openai = responses_answer,
        .stream_init = responses_stream_init,
        .stream_event = responses_stream_event,
        .client_init = resp_client_init,
        .client_free = resp_client_free,
        .client_chunk = resp_client_chunk,
        .client_finish = resp_client_finish,
        .client_error = resp_client_error,
        .answer_from_openai = resp_from_openai,
        .client_passed = resp_client_passed,
        .client_final = resp_client_final,
        .native_event = sw_resp_native_event,
        .native_answer = sw_resp_native_answer,
        .api_name = "responses",
        .max_tokens_key = "max_output_tokens",
        /* 16: the least max_output_tokens OpenAI takes */
        .ping_fmt = "{\"model\":\"%s\",\"max_output_tokens\":16,\"input\":\"ping\"}",
        .pii_surface = SW_PII_SURFACE_RESPONSES,
        .always_usage = true,
        .object_ids = true,
        .provider_name = "openai",
    },
    [SW_DIALECT_AZURE] = {
        .name = "azure",
        .chat_path = "chat/completions",
        .path = azure_path,
        .headers = azure_headers,
        .answer_to_openai = azure_answer,
        .stream_init = openai_stream_init,
        .stream_event = azure_stream_event,
        .client_init = openai_client_init,
        .client_chunk = openai_client_chunk,
        .client_finish = openai_client_finish,
        .client_error = openai_client_error,
        .api_name = "azure",
        .max_tokens_key = "max_completion_tokens",
        .ping_fmt = CHAT_PING,
        .pii_surface = SW_PII_SURFACE_CHAT,
        .provider_name = "azure.ai.openai",
        .embeddings = true,
    },
    [SW_DIALECT_BEDROCK] = {
        .name = "bedrock",
        .chat_path = "converse",
        .stream_path = "converse-stream",
        .path = bedrock_path,
        .headers = bedrock_headers,
        .sign = bedrock_sign,
        .request_body = bedrock_body,
        .answer_to_openai = bedrock_answer,
        .stream_init = bedrock_stream_init,
        .stream_event = bedrock_stream_event,
        .frame = sw_bedrock_frame_json,
        .client_init = openai_client_init,
        .client_chunk = openai_client_chunk,
        .client_finish = openai_client_finish,
        .client_error = openai_client_error,
        .api_name = "bedrock",
        .max_tokens_key = "max_completion_tokens",
        /* the model is in the path (the format's %s is left unused) */
        .ping_fmt = "{\"messages\":[{\"role\":\"user\",\"content\":[{\"text\":\"ping\"}]}],"
                    "\"inferenceConfig\":{\"maxTokens\":1}}",
        .pii_surface = SW_PII_SURFACE_CONVERSE,
        .always_usage = true,
        .no_models = true,
        .provider_name = "aws.bedrock",
        .error_message = bedrock_error_message,
    },
    [SW_DIALECT_GEMINI] = {
        .name = "gemini",
        .chat_path = "generateContent",
        .stream_path = "streamGenerateContent",
        .path = gemini_path,
        .headers = gemini_headers,
        .request_body = gemini_body,
        .request_config = gemini_config,
        .answer_to_openai = gemini_answer,
        .stream_init = gemini_stream_init,
        .stream_event = gemini_stream_event,
        .client_init = openai_client_init,
        .client_chunk = openai_client_chunk,
        .client_finish = openai_client_finish,
        .client_error = openai_client_error,
        .api_name = "gemini",
        .max_tokens_key = "max_completion_tokens",
        .ping_fmt = GEMINI_PING,
        .pii_surface = SW_PII_SURFACE_GEMINI,
        .always_usage = true,
        .provider_name = "gcp.gemini",
    },
    [SW_DIALECT_VERTEX_ANTHROPIC] = {
        .name = "vertex_anthropic",
        .chat_path = "rawPredict",
        .stream_path = "streamRawPredict",
        .path = vertex_anthropic_path,
        .headers = vertex_anthropic_headers,
        .request_body = anthropic_body,
        .request_config = vertex_anthropic_config,
        .answer_to_openai = anthropic_answer,
        .stream_init = anthropic_stream_init,
        .stream_event = anthropic_stream_event,
        .client_init = openai_client_init,
        .client_chunk = openai_client_chunk,
        .client_finish = openai_client_finish,
        .client_error = openai_client_error,
        .api_name = "vertex_anthropic",
        .max_tokens_key = "max_tokens",
        .ping_fmt = CHAT_PING,
        .pii_surface = SW_PII_SURFACE_MESSAGES,
        .always_usage = true,
        .provider_name = "gcp.vertex_ai",
    },
    [SW_DIALECT_VERTEX] = {
        .name = "vertex",
        .chat_path = "generateContent",
        .stream_path = "streamGenerateContent",
        .path = gemini_path,
        .headers = gemini_headers,
        .request_body = gemini_body,
        .request_config = gemini_config,
        .answer_to_openai = gemini_answer,
        .stream_init = gemini_stream_init,
        .stream_event = gemini_stream_event,
        .client_init = openai_client_init,
        .client_chunk = openai_client_chunk,
        .client_finish = openai_client_finish,
        .client_error = openai_client_error,
        .api_name = "vertex",
        .max_tokens_key = "max_completion_tokens",
        .ping_fmt = GEMINI_PING,
        .pii_surface = SW_PII_SURFACE_GEMINI,
        .always_usage = true,
        .provider_name = "gcp.vertex_ai",
    },
};

int sw_upstream_path(const struct sw_config_backend *be, enum sw_dialect d, const char *rel,
                     struct sw_buf *out)
{
    const struct sw_upstream_dialect *ops = sw_upstream_dialect(d);
    if (ops->path)
        return ops->path(be, rel, out);
    /* "/v1/<rel>" (a base URL: "/<rel>"), appended whole or not at all */
    const char *pre = be->url_is_base ? "/" : "/v1/";
    size_t pl = strlen(pre), rl = strlen(rel);
    int err = sw_buf_reserve(out, pl + rl);
    if (!err)
        err = sw_buf_append(out, pre, pl);
    if (!err)
        err = sw_buf_append(out, rel, rl);
    return err;
}

int sw_upstream_target(const struct sw_config_backend *be, enum sw_dialect d, enum sw_api api,
                       bool stream, const struct sw_upstream_client_hdrs *c,
                       const struct sw_buf *extra, const char *body, size_t len,
                       struct sw_buf *path, struct sw_buf *hdrs)
{
    const struct sw_upstream_dialect *ops = sw_upstream_dialect(d);
    const char *rel = api == SW_API_EMBEDDINGS        ? "embeddings"
                      : stream && ops->stream_path ? ops->stream_path
                                                   : ops->chat_path;
    int err = ops->headers(be, c, hdrs);
    if (!err && extra && extra->len)
        err = sw_buf_append(hdrs, extra->ptr, extra->len);
    if (!err)
        err = sw_upstream_path(be, d, rel, path);
    /* a signature covers the path and the body as sent */
    if (!err && ops->sign)
        err = body ? ops->sign(be, path->ptr, body, len, hdrs) : SW_EINVAL;
    return err;
}

const struct sw_upstream_dialect *sw_upstream_dialect(enum sw_dialect d)
{
    return (unsigned)d < sizeof dialects / sizeof dialects[0] ? &dialects[d] : &dialects[0];
}

enum sw_dialect sw_upstream_dialect_for(const struct sw_config_backend *be, enum sw_dialect client)
{
    unsigned set = be->dialects ? be->dialects : 1u << be->dialect;
    if (set & (1u << client))
        return client;
    /* the Responses API takes no other API's requests: another API it speaks does */
    if (be->dialect == SW_DIALECT_RESPONSES && (set & (1u << SW_DIALECT_OPENAI)))
        return SW_DIALECT_OPENAI;
    if (be->dialect == SW_DIALECT_RESPONSES && (set & (1u << SW_DIALECT_ANTHROPIC)))
        return SW_DIALECT_ANTHROPIC;
    return be->dialect;
}
