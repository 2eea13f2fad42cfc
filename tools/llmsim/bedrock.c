#include "bedrock.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "chat.h"
#include "common/err.h"
#include "common/evstream.h"
#include "common/sigv4.h"

/* ---- Routes ---- */

static int hexval(char c)
{
    return c >= '0' && c <= '9' ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

int sw_llmsim_bedrock_route(const char *path, char *model, size_t cap, bool *stream)
{
    if (strncmp(path, "/model/", 7))
        return -1;
    const char *id = path + 7, *slash = strchr(id, '/');
    if (!slash || slash == id)
        return -1;
    if (!strcmp(slash, "/converse"))
        *stream = false;
    else if (!strcmp(slash, "/converse-stream"))
        *stream = true;
    else
        return -1;
    size_t o = 0;
    for (const char *s = id; s < slash; s++) {
        char c = *s;
        if (c == '%' && s + 2 < slash + 1 && hexval(s[1]) >= 0 && hexval(s[2]) >= 0) {
            c = (char)(hexval(s[1]) * 16 + hexval(s[2]));
            s += 2;
        }
        if (o + 1 >= cap)
            return -1;
        model[o++] = c;
    }
    model[o] = '\0';
    return 0;
}

/* ---- SigV4 ---- */

static int deny(const char **type, const char *t, char *msg, size_t cap, const char *m)
{
    *type = t;
    snprintf(msg, cap, "%s", m);
    return 403;
}

/* "Credential=AKID/DATE/REGION/SERVICE/aws4_request, SignedHeaders=a;b, Signature=hex" */
struct auth {
    char key_id[128], date[16], region[64], service[64], signed_headers[512], signature[80];
};

static bool field(const char *a, const char *name, char *out, size_t cap)
{
    const char *p = strstr(a, name);
    if (!p)
        return false;
    p += strlen(name);
    size_t n = strcspn(p, ", ");
    if (n == 0 || n >= cap)
        return false;
    memcpy(out, p, n);
    out[n] = '\0';
    return true;
}

static bool parse_auth(const char *h, struct auth *a)
{
    static const char algo[] = "AWS4-HMAC-SHA256 ";
    char cred[400];
    if (!h || strncmp(h, algo, sizeof algo - 1) || !field(h, "Credential=", cred, sizeof cred) ||
        !field(h, "SignedHeaders=", a->signed_headers, sizeof a->signed_headers) ||
        !field(h, "Signature=", a->signature, sizeof a->signature))
        return false;
    char *parts[5], *save = NULL;
    int n = 0;
    for (char *t = strtok_r(cred, "/", &save); t && n < 5; t = strtok_r(NULL, "/", &save))
        parts[n++] = t;
    if (n != 5 || strcmp(parts[4], "aws4_request"))
        return false;
    snprintf(a->key_id, sizeof a->key_id, "%s", parts[0]);
    snprintf(a->date, sizeof a->date, "%s", parts[1]);
    snprintf(a->region, sizeof a->region, "%s", parts[2]);
    snprintf(a->service, sizeof a->service, "%s", parts[3]);
    return true;
}

/* The value as canonical: trimmed, runs of white space as one space. */
static int canon_value(struct sw_buf *b, const char *v)
{
    while (*v == ' ' || *v == '\t')
        v++;
    size_t n = strlen(v);
    while (n && (v[n - 1] == ' ' || v[n - 1] == '\t'))
        n--;
    int err = SW_OK;
    for (size_t i = 0; !err && i < n; i++) {
        bool ws = v[i] == ' ' || v[i] == '\t';
        if (ws && i && (v[i - 1] == ' ' || v[i - 1] == '\t'))
            continue;
        err = sw_buf_append(b, ws ? " " : v + i, 1);
    }
    return err;
}

int sw_llmsim_sigv4_verify(const char *method, const char *raw_path, const char *body,
                           size_t len, sw_llmsim_header_fn hdr, void *ud, const char *key_id,
                           const char *secret, const char *region, long long now_s,
                           const char **type, char *msg, size_t cap)
{
    struct auth a;
    const char *auth = hdr(ud, "authorization");
    if (!auth)
        return deny(type, "MissingAuthenticationTokenException", msg, cap,
                    "Missing Authentication Token");
    if (!parse_auth(auth, &a))
        return deny(type, "IncompleteSignatureException", msg, cap,
                    "Authorization header requires 'Credential', 'Signature' and "
                    "'SignedHeaders' parameters.");
    if (strcmp(a.key_id, key_id))
        return deny(type, "UnrecognizedClientException", msg, cap,
                    "The security token included in the request is invalid.");
    const char *date = hdr(ud, "x-amz-date");
    long long t = sw_sigv4_parse_date(date);
    if (t < 0 || strncmp(date, a.date, 8) || strlen(a.date) != 8)
        return deny(type, "InvalidSignatureException", msg, cap,
                    "Date in Credential scope does not match YYYYMMDD from ISO-8601 version of "
                    "date from HTTP.");
    if (t < now_s - 300 || t > now_s + 300)
        return deny(type, "InvalidSignatureException", msg, cap,
                    "Signature expired: the X-Amz-Date is more than 5 minutes from now.");
    if (strcmp(a.region, region) || strcmp(a.service, "bedrock"))
        return deny(type, "InvalidSignatureException", msg, cap,
                    "Credential should be scoped to a valid region and to service bedrock.");
    char hash[65];
    sw_sigv4_sha256_hex(body, len, hash);
    const char *sent_hash = hdr(ud, "x-amz-content-sha256");
    if (sent_hash && strcmp(sent_hash, hash))
        return deny(type, "InvalidSignatureException", msg, cap,
                    "The provided x-amz-content-sha256 header does not match what was computed.");
    char sh[520];
    snprintf(sh, sizeof sh, ";%s;", a.signed_headers);
    if (!strstr(sh, ";host;") || !strstr(sh, ";x-amz-date;"))
        return deny(type, "InvalidSignatureException", msg, cap,
                    "host and x-amz-date must be signed.");
    /* the canonical request, rebuilt from what arrived */
    struct sw_buf cr;
    sw_buf_init(&cr, 256 * 1024);
    int err = sw_buf_appendf(&cr, "%s\n", method);
    if (!err)
        err = sw_sigv4_canonical_path(raw_path, &cr);
    if (!err)
        err = sw_buf_append_str(&cr, "\n\n");
    char names[512], *save = NULL;
    snprintf(names, sizeof names, "%s", a.signed_headers);
    for (char *n = strtok_r(names, ";", &save); !err && n; n = strtok_r(NULL, ";", &save)) {
        const char *v = hdr(ud, n);
        err = sw_buf_appendf(&cr, "%s:", n);
        if (!err)
            err = canon_value(&cr, v ? v : "");
        if (!err)
            err = sw_buf_append_str(&cr, "\n");
    }
    if (!err)
        err = sw_buf_appendf(&cr, "\n%s\n%s", a.signed_headers, hash);
    char sig[65] = "";
    if (!err)
        err = sw_sigv4_signature(cr.ptr, cr.len, date, region, "bedrock", secret, sig);
    sw_buf_free(&cr);
    unsigned diff = strlen(sig) != strlen(a.signature);
    for (size_t i = 0; !diff && sig[i]; i++)
        diff |= (unsigned)(sig[i] ^ a.signature[i]);
    if (err || diff)
        return deny(type, "InvalidSignatureException", msg, cap,
                    "The request signature we calculated does not match the signature you "
                    "provided. Check your AWS Secret Access Key and signing method.");
    return 0;
}

/* ---- Requests ---- */

/* The text blocks of content (and of tool results) appended to b. */
static void block_text(const json_t *content, struct sw_buf *b, int *tokens)
{
    size_t i;
    json_t *blk;
    json_array_foreach(content, i, blk) {
        json_t *t = json_object_get(blk, "text");
        json_t *tr = json_object_get(blk, "toolResult");
        if (json_is_string(t)) {
            if (b)
                sw_buf_append(b, json_string_value(t), json_string_length(t));
            *tokens += sw_llmsim_echo_tokens(json_string_value(t), json_string_length(t));
        } else if (json_is_object(tr)) {
            block_text(json_object_get(tr, "content"), b, tokens);
        }
    }
}

int sw_llmsim_bedrock_parse(const json_t *req, long long seq, struct sw_llmsim_bedrock_plan *p,
                            char *msg, size_t cap)
{
    memset(p, 0, sizeof *p);
    sw_buf_init(&p->echo, 1 << 20);
    json_t *msgs = json_object_get(req, "messages");
    if (!json_is_object(req) || !json_is_array(msgs) || !json_array_size(msgs)) {
        snprintf(msg, cap, "The model returned the following errors: messages: at least one "
                           "message is required");
        return -1;
    }
    size_t i;
    json_t *m;
    const char *prev = NULL;
    json_array_foreach(msgs, i, m) {
        const char *role = json_string_value(json_object_get(m, "role"));
        if (!role || (strcmp(role, "user") && strcmp(role, "assistant")) ||
            !json_is_array(json_object_get(m, "content")) || (prev && !strcmp(prev, role)) ||
            (!prev && strcmp(role, "user"))) {
            snprintf(msg, cap, "A conversation must start with a user message and alternate "
                               "user and assistant messages (messages[%zu]).", i);
            return -1;
        }
        prev = role;
        int toks = 0;
        bool last_user = !strcmp(role, "user") && i + 1 == json_array_size(msgs);
        block_text(json_object_get(m, "content"), last_user ? &p->echo : NULL, &toks);
        p->input_tokens += toks;
    }
    json_array_foreach(json_object_get(req, "system"), i, m) {
        json_t *t = json_object_get(m, "text");
        if (json_is_string(t))
            p->input_tokens += sw_llmsim_echo_tokens(json_string_value(t), json_string_length(t));
    }
    json_t *mt = json_object_get(json_object_get(req, "inferenceConfig"), "maxTokens");
    p->max_tokens = json_is_integer(mt) && json_integer_value(mt) > 0
                        ? (int)json_integer_value(mt) : 0;
    json_t *tc = json_object_get(req, "toolConfig");
    json_t *choice = json_object_get(tc, "toolChoice"), *tools = json_object_get(tc, "tools");
    const char *forced = json_string_value(json_object_get(json_object_get(choice, "tool"), "name"));
    const char *first = json_string_value(
        json_object_get(json_object_get(json_array_get(tools, 0), "toolSpec"), "name"));
    if (forced)
        snprintf(p->tool, sizeof p->tool, "%s", forced);
    else if (json_object_get(choice, "any") && first)
        snprintf(p->tool, sizeof p->tool, "%s", first);
    snprintf(p->tool_id, sizeof p->tool_id, "tooluse_sim%016llx", (unsigned long long)seq);
    int pieces = sw_llmsim_echo_tokens(p->echo.ptr ? p->echo.ptr : "", p->echo.len);
    p->output_tokens = pieces;
    if (p->max_tokens && pieces > p->max_tokens) {
        p->output_tokens = p->max_tokens;
        p->length = true;
    }
    if (p->tool[0])
        p->output_tokens = p->output_tokens ? p->output_tokens : 1;
    return 0;
}

void sw_llmsim_bedrock_plan_free(struct sw_llmsim_bedrock_plan *p)
{
    sw_buf_free(&p->echo);
}

/* The answer's text: the first output_tokens echo tokens. */
static void answer_text(const struct sw_llmsim_bedrock_plan *p, struct sw_buf *out)
{
    struct sw_llmsim_text t;
    sw_llmsim_text_echo(&t, p->echo.ptr ? p->echo.ptr : "", p->echo.len);
    for (int k = 0; k < p->output_tokens; k++) {
        struct sw_str s = sw_llmsim_text_next(&t);
        if (!s.len)
            break;
        sw_buf_append(out, s.ptr, s.len);
    }
}

static const char *stop_reason(const struct sw_llmsim_bedrock_plan *p)
{
    return p->tool[0] ? "tool_use" : p->length ? "max_tokens" : "end_turn";
}

static json_t *tool_input(const struct sw_llmsim_bedrock_plan *p)
{
    return json_pack("{s:s%}", "text", p->echo.ptr ? p->echo.ptr : "", p->echo.len);
}

json_t *sw_llmsim_bedrock_answer(const struct sw_llmsim_bedrock_plan *p, int latency_ms)
{
    json_t *content = json_array();
    if (p->tool[0]) {
        json_array_append_new(content, json_pack("{s:{s:s, s:s, s:o}}", "toolUse", "toolUseId",
                                                 p->tool_id, "name", p->tool, "input",
                                                 tool_input(p)));
    } else {
        struct sw_buf t;
        sw_buf_init(&t, 1 << 20);
        answer_text(p, &t);
        json_array_append_new(content, json_pack("{s:s%}", "text", t.ptr ? t.ptr : "", t.len));
        sw_buf_free(&t);
    }
    return json_pack("{s:{s:{s:s, s:o}}, s:s, s:{s:i, s:i, s:i}, s:{s:i}}", "output", "message",
                     "role", "assistant", "content", content, "stopReason", stop_reason(p),
                     "usage", "inputTokens", p->input_tokens, "outputTokens", p->output_tokens,
                     "totalTokens", p->input_tokens + p->output_tokens, "metrics", "latencyMs",
                     latency_ms);
}

/* ---- ConverseStream ---- */

static int frame(struct sw_buf *out, const char *mtype, const char *name, json_t *payload)
{
    char *s = payload ? json_dumps(payload, JSON_COMPACT) : NULL;
    json_decref(payload);
    if (!s)
        return SW_ENOMEM;
    bool exc = !strcmp(mtype, "exception");
    const char *names[] = {":message-type", exc ? ":exception-type" : ":event-type",
                           ":content-type"};
    const char *values[] = {mtype, name, "application/json"};
    int err = sw_evs_encode(out, names, values, 3, s, strlen(s));
    free(s);
    return err;
}

/* Bedrock pads each event with "p", a run of letters that varies its size. */
static const char pad[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJ";

int sw_llmsim_bedrock_stream(const struct sw_llmsim_bedrock_plan *p, int error_after,
                             const char *exc, int cut_after, struct sw_buf *out)
{
    int err = frame(out, "event", "messageStart", json_pack("{s:s, s:s}", "role", "assistant",
                                                            "p", "abcdefgh"));
    int deltas = 0;
#define DELTA_CHECK()                                                                     \
    do {                                                                                  \
        if (error_after >= 0 && deltas == error_after)                                    \
            return err ? err                                                              \
                       : frame(out, "exception", exc,                                     \
                               json_pack("{s:s}", "message", "llmsim: stream fault"));    \
        if (cut_after > 0 && deltas == cut_after)                                         \
            return err;                                                                   \
    } while (0)
    DELTA_CHECK();
    if (p->tool[0]) {
        if (!err)
            err = frame(out, "event", "contentBlockStart",
                        json_pack("{s:i, s:{s:{s:s, s:s}}, s:s}", "contentBlockIndex", 0, "start",
                                  "toolUse", "toolUseId", p->tool_id, "name", p->tool, "p",
                                  "abc"));
        json_t *input = tool_input(p);
        char *in = input ? json_dumps(input, JSON_COMPACT) : NULL;
        json_decref(input);
        size_t half = in ? strlen(in) / 2 : 0;
        for (int k = 0; in && !err && k < 2; k++) {
            json_t *piece = k ? json_string(in + half) : json_stringn(in, half);
            err = frame(out, "event", "contentBlockDelta",
                        json_pack("{s:i, s:{s:{s:o}}, s:s}", "contentBlockIndex", 0, "delta",
                                  "toolUse", "input", piece, "p", pad + k));
            deltas++;
            if (!err && k == 0) {
                if ((error_after >= 0 && deltas == error_after) ||
                    (cut_after > 0 && deltas == cut_after)) {
                    free(in);
                    DELTA_CHECK();
                }
            }
        }
        free(in);
    } else {
        struct sw_llmsim_text t;
        sw_llmsim_text_echo(&t, p->echo.ptr ? p->echo.ptr : "", p->echo.len);
        for (int k = 0; !err && k < p->output_tokens; k++) {
            struct sw_str s = sw_llmsim_text_next(&t);
            if (!s.len)
                break;
            err = frame(out, "event", "contentBlockDelta",
                        json_pack("{s:i, s:{s:s%}, s:s}", "contentBlockIndex", 0, "delta", "text",
                                  s.ptr, s.len, "p", pad + (k % 20)));
            deltas++;
            DELTA_CHECK();
        }
    }
#undef DELTA_CHECK
    if (!err)
        err = frame(out, "event", "contentBlockStop",
                    json_pack("{s:i, s:s}", "contentBlockIndex", 0, "p", "ab"));
    if (!err)
        err = frame(out, "event", "messageStop",
                    json_pack("{s:s, s:s}", "stopReason", stop_reason(p), "p", "abcd"));
    if (!err)
        err = frame(out, "event", "metadata",
                    json_pack("{s:{s:i, s:i, s:i}, s:{s:i}, s:s}", "usage", "inputTokens",
                              p->input_tokens, "outputTokens", p->output_tokens, "totalTokens",
                              p->input_tokens + p->output_tokens, "metrics", "latencyMs", 1, "p",
                              "abcdef"));
    return err;
}

/* ---- Errors ---- */

char *sw_llmsim_bedrock_error(const char *msg)
{
    json_t *o = json_pack("{s:s}", "message", msg ? msg : "");
    char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    return s;
}

const char *sw_llmsim_bedrock_exception(int status)
{
    switch (status) {
    case 429: return "ThrottlingException";
    case 400: return "ValidationException";
    case 403: return "AccessDeniedException";
    case 404: return "ResourceNotFoundException";
    case 408: return "ModelTimeoutException";
    case 424: return "ModelErrorException";
    case 503: return "ServiceUnavailableException";
    default: return "InternalServerException";
    }
}
