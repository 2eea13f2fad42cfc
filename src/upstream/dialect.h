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
#include "dialect/oai_stream.h"
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

/* One attempt's stream from a backend, whichever its dialect (set by
 * stream_init; OpenAI's needs none but error_type and preamble). */
struct sw_dialect_stream {
    char error_type[32];        /* the upstream's error type of a failed stream, "" none */
    bool preamble;              /* only events that carry no token so far: what they made is
                                 * held, so an error event still fails over */
    union {
        struct sw_anth_to_oai anth;
    } u;
};

/* One attempt's stream to a client, whichever the client's dialect. */
struct sw_dialect_client {
    union {
        struct sw_oai_to_anth anth;
    } u;
};

struct sw_upstream_dialect {
    const char *name;
    const char *chat_path;              /* appended to the backend's url */
    /* Appends the authentication and version headers, "Name: value\r\n" each. */
    int (*headers)(const struct sw_config_backend *be, const struct sw_upstream_client_hdrs *c,
                   struct sw_buf *out);
    /* An OpenAI request (borrowed) as this dialect's body: a new tree, or
     * NULL with *err filled (a field that cannot be translated: 400). */
    json_t *(*request_body)(const json_t *oai, long default_max_tokens,
                            struct sw_request_error *err);
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

    /* ---- A client of this dialect ---- */
    /* Prepares *c for an answer (id, public model, the prompt's estimate). */
    void (*client_init)(struct sw_dialect_client *c, const char *id, const char *model,
                        long input_tokens_est);
    /* One OpenAI chunk (borrowed) as this client's stream bytes, appended. */
    int (*client_chunk)(struct sw_dialect_client *c, const json_t *chunk, struct sw_buf *out);
    /* The end of the stream. */
    int (*client_finish)(struct sw_dialect_client *c, struct sw_buf *out);
    /* The error event that ends a stream already started (and what must
     * follow it): `type` an upstream error type of this dialect (NULL or "":
     * the default), `code` the OpenAI error code, `msg` the message. */
    int (*client_error)(struct sw_dialect_client *c, const char *type, const char *code,
                        const char *msg, struct sw_buf *out);
    /* A whole OpenAI answer (borrowed) in this client's dialect, a new tree;
     * NULL: none needed (the answer is OpenAI's). */
    json_t *(*answer_from_openai)(const json_t *oai, const char *model);
};

/* The table of dialect d; never NULL. */
const struct sw_upstream_dialect *sw_upstream_dialect(enum sw_dialect d);

/* Which of its dialects backend `be` is spoken to for a client of API
 * `client`: the client's own when the backend speaks it (no translation),
 * else the backend's first. */
enum sw_dialect sw_upstream_dialect_for(const struct sw_config_backend *be, enum sw_dialect client);

#endif
