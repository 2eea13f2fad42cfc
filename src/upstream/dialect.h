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
#include "common/evstream.h"
#include "dialect/anth_resp.h"
#include "dialect/bedrock.h"
#include "dialect/gemini.h"
#include "dialect/native.h"
#include "dialect/oai_stream.h"
#include "dialect/responses_resp.h"
#include "dialect/responses_up.h"
#include "pii/pii.h"
#include "request/request.h"

/* The anthropic_version of a Messages body on Vertex AI. */
#define SW_VERTEX_ANTHROPIC_VERSION "vertex-2023-10-16"

/* Headers of the client passed through to a backend of the client's own API
 * (the values of the client dialect's client_headers, in that order), and the
 * attempt's access token. */
#define SW_UPSTREAM_CLIENT_HDRS 2
struct sw_upstream_client_hdrs {
    const char *value[SW_UPSTREAM_CLIENT_HDRS]; /* NULL: absent or not named */
    const char *bearer;                 /* an access token of the backend's token source
                                         * (upstream/token.h), NULL: none */
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

/* One attempt's stream from a backend, whichever its dialect (set by
 * stream_init; OpenAI's needs none but error_type and preamble). */
struct sw_dialect_stream {
    char error_type[32];        /* the upstream's error type of a failed stream, "" none */
    bool preamble;              /* only events that carry no token so far: what they made is
                                 * held, so an error event still fails over */
    union {
        struct sw_anth_to_oai anth;
        struct sw_resp_to_oai resp;
        struct sw_bedrock_to_oai bedrock;
        struct sw_gem_to_oai gem;
    } u;
};

/* A Responses client's answer: the translated stream (heap: it is large,
 * and only Responses clients need it), or what a passed-through stream
 * showed of itself (for the response.failed that may have to end it). */
struct sw_dialect_resp_client {
    struct sw_resp_stream *stream;  /* owned; NULL until client_init */
    json_t *request;                /* the client's body (referenced) */
    struct sw_resp_meta meta;       /* meta.id and meta.model point into id, model */
    char id[96];
    char model[128];
    long seq;                       /* passed through: the last sequence_number + 1 */
    json_t *shell;                  /* passed through: the last response object seen (owned) */
    json_t *final;                  /* passed through: the finished response (owned) */
    bool ended;                     /* passed through: a terminal event went out */
};

/* One attempt's stream to a client, whichever the client's dialect. */
struct sw_dialect_client {
    union {
        struct sw_oai_to_anth anth;
        struct sw_dialect_resp_client resp;
    } u;
};

/* What a client's answer is made with (the request's, set once). */
struct sw_dialect_answer {
    const char *id;                 /* the request id */
    const char *response_id;        /* the answer object's own id when its API gives one
                                     * ("resp_...", made by the relay); NULL: derived from id */
    const char *model;              /* the public model name */
    long input_tokens_est;
    const json_t *request;          /* the client's own body (borrowed), NULL for OpenAI's */
    long long created;              /* unix seconds */
};

struct sw_upstream_dialect {
    const char *name;
    const char *chat_path;              /* the chat endpoint relative to the API's base
                                         * ("chat/completions"; sw_upstream_path) */
    const char *stream_path;            /* a streamed chat's endpoint when it has its own
                                         * (Bedrock's converse-stream); NULL: chat_path */
    /* Writes the path after the backend's url of `rel` (a path relative to
     * the API's base: "chat/completions", "embeddings", "models"), query
     * included. NULL: the default join of sw_upstream_path. */
    int (*path)(const struct sw_config_backend *be, const char *rel, struct sw_buf *out);
    /* Appends the authentication and version headers, "Name: value\r\n" each. */
    int (*headers)(const struct sw_config_backend *be, const struct sw_upstream_client_hdrs *c,
                   struct sw_buf *out);
    /* Appends the headers that sign this request (path as sent after the
     * url, the body's bytes), after `headers`; NULL: none (AWS SigV4 for
     * Bedrock: docs/internals/dialects.md). Reads the wall clock. */
    int (*sign)(const struct sw_config_backend *be, const char *path, const char *body,
                size_t len, struct sw_buf *out);
    /* An OpenAI request (borrowed) as this dialect's body: a new tree, or
     * NULL with *err filled (a field that cannot be translated: 400). */
    json_t *(*request_body)(const json_t *oai, long default_max_tokens,
                            struct sw_request_error *err);
    /* What backend be's config adds to a translated body (edited in place);
     * NULL: nothing. SW_OK or SW_ENOMEM. */
    int (*request_config)(const struct sw_config_backend *be, json_t *body);
    /* A whole answer of this dialect as an OpenAI answer; NULL: malformed.
     * format_tool: as stream_init. */
    json_t *(*answer_to_openai)(const json_t *answer, const char *model, long long created,
                                bool format_tool);

    /* ---- A backend's stream of this dialect ---- */
    /* Prepares *s for an attempt (always called). `model` is the name the
     * chunks carry; format_tool: an OpenAI client's response_format went as
     * the forced format tool (SW_ANTH_FORMAT_TOOL). */
    void (*stream_init)(struct sw_dialect_stream *s, const char *model, long long created,
                        bool format_tool);
    /* One event's data as OpenAI chunks, appended to `chunks` (an array);
     * *done when it ended the stream. 0, or -1 for an error event or one not
     * valid (*msg a short static description, s->error_type the upstream's
     * own type). NULL: the events are OpenAI chunks already. */
    int (*stream_event)(struct sw_dialect_stream *s, const char *data, size_t len, json_t *chunks,
                        bool *done, const char **msg);
    /* The stream is AWS event-stream framed, not SSE: each message turned
     * into one event's data for stream_event (sw_bedrock_frame_json); SW_OK
     * or an error (the message is not one of this API). NULL: SSE. */
    int (*frame)(const struct sw_evs_message *m, struct sw_buf *out);

    /* ---- A client of this dialect ---- */
    /* Prepares *c for an answer (released first with client_free when it was
     * prepared before). SW_OK or SW_ENOMEM. */
    int (*client_init)(struct sw_dialect_client *c, const struct sw_dialect_answer *a);
    /* Releases what client_init took; NULL: nothing. */
    void (*client_free)(struct sw_dialect_client *c);
    /* One OpenAI chunk (borrowed) as this client's stream bytes, appended. */
    int (*client_chunk)(struct sw_dialect_client *c, const json_t *chunk, struct sw_buf *out);
    /* The end of the stream (now_s: the wall clock). */
    int (*client_finish)(struct sw_dialect_client *c, long long now_s, struct sw_buf *out);
    /* The error event that ends a stream already started (and what must
     * follow it): `type` an upstream error type of this dialect (NULL or "":
     * the default), `code` the OpenAI error code, `msg` the message. */
    int (*client_error)(struct sw_dialect_client *c, const char *type, const char *code,
                        const char *msg, struct sw_buf *out);
    /* A whole OpenAI answer (borrowed) in this client's dialect, a new tree;
     * NULL: none needed (the answer is OpenAI's). */
    json_t *(*answer_from_openai)(struct sw_dialect_client *c, const json_t *oai,
                                  const char *model, long long now_s);
    /* An event (whole: the whole answer) of the client's own API passed
     * through to it, seen (and where the gateway names the object, edited)
     * before it goes out; NULL: nothing to note. */
    void (*client_passed)(struct sw_dialect_client *c, json_t *tree, bool whole);
    /* The finished answer object once the answer is complete (the whole
     * answer made, or the stream's last event), borrowed; NULL: none (not
     * finished, failed, or an API without one). */
    const json_t *(*client_final)(const struct sw_dialect_client *c);

    /* ---- This API as a client's own, passed through ---- */
    /* One event's data of a backend of this API (see dialect/native.h). 0 or
     * -1 (not an event of this API). */
    int (*native_event)(const char *data, size_t len, const char *model,
                        struct sw_native_event *ev);
    /* A whole answer's usage (-1: absent); -1: not an answer of this API. */
    int (*native_answer)(const json_t *body, long *in, long *out);

    /* ---- What the rest of the gateway says of this API ---- */
    const char *api_name;               /* the decision log's and metrics' `api` */
    const char *max_tokens_key;         /* its request's output token limit */
    const char *ping_fmt;               /* a one-token request of this API, %s the model
                                         * (the health check's warm-up and latency probe) */
    enum sw_pii_surface pii_surface;    /* what its request bodies look like to the PII walk */
    bool always_usage;                  /* its streams carry the usage whatever the client
                                         * asked (Anthropic's message_delta, Responses'
                                         * response.completed) */
    bool object_ids;                    /* its answers carry an id the relay makes
                                         * (sw_dialect_answer.response_id) */
    bool no_models;                     /* no model list at the API's base: no start-up
                                         * check of GET .../models */
    bool tool_contract;                 /* without a response_format schema, the input
                                         * of a forced tool is the output contract (an
                                         * API that has no response_format) */
    const char *provider_name;          /* OpenTelemetry's gen_ai.provider.name */
    bool embeddings;                    /* it serves /embeddings (OpenAI's shape) */
    bool native_unmask;                 /* a client of this API is unmasked in its own
                                         * shape (its answer is not read in the internal
                                         * form for it) */
    const char *client_headers[SW_UPSTREAM_CLIENT_HDRS];
                                        /* the headers a client of this API passes to a
                                         * backend of the same API (their values in
                                         * sw_upstream_client_hdrs, in this order), NULL:
                                         * none */
    /* The message of an error answer's body (borrowed), NULL: none; NULL
     * hook: the body's error.message. */
    const json_t *(*error_message)(const json_t *body);
};

/* The path that follows backend be's url for `rel`, a path relative to the
 * API's base ("chat/completions", "messages", "responses", "embeddings",
 * "models"), as backend dialect d wants it, appended to out. The default
 * join: "/v1/" + rel when the url has no path of its own (or ended in /v1,
 * dropped by the config), "/" + rel after any other path (the url is the
 * API's base, as an SDK's base_url: .../v1beta/openai + /chat/completions).
 * SW_OK or SW_ENOMEM. */
int sw_upstream_path(const struct sw_config_backend *be, enum sw_dialect d, const char *rel,
                     struct sw_buf *out);

/* An attempt's upstream target for backend be spoken to in dialect d: the
 * path after the url (appended to path) of a chat (streamed: the dialect's
 * stream_path when it has one) or an embeddings request, and the request's
 * headers (appended to hdrs): the dialect's own from c, then `extra` (the
 * caller's, "Name: value\r\n" each, NULL: none), then the signature over
 * the path and body when the dialect signs (body NULL: not at hand,
 * SW_EINVAL for a dialect that signs). SW_OK or an error. */
int sw_upstream_target(const struct sw_config_backend *be, enum sw_dialect d, enum sw_api api,
                       bool stream, const struct sw_upstream_client_hdrs *c,
                       const struct sw_buf *extra, const char *body, size_t len,
                       struct sw_buf *path, struct sw_buf *hdrs);

/* The table of dialect d; never NULL. */
const struct sw_upstream_dialect *sw_upstream_dialect(enum sw_dialect d);

/* Which of its dialects backend `be` is spoken to for a client of API
 * `client`: the client's own when the backend speaks it (no translation),
 * else the backend's first, unless that is the Responses API (which takes
 * no translated request): then another the backend speaks, OpenAI's first. */
enum sw_dialect sw_upstream_dialect_for(const struct sw_config_backend *be, enum sw_dialect client);

#endif
