#include "relay/body.h"

#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/jdump.h"
#include "common/jscan.h"
#include "state/live.h"
#include "relay/splice.h"
#include "relay/trace.h"
#include "upstream/dialect.h"

void sw_relay_strip_fields(json_t *body)
{
    json_t *md = json_object_get(body, "metadata");
    if (!json_is_object(md))
        return;
    json_object_del(md, "allow_cloud");
    if (json_object_size(md) == 0)
        json_object_del(body, "metadata");
}

/* Where text (len bytes) has `model`, `metadata` and `stream_options` at
 * its top level (len 0: it does not): as the front noted them when it wrote
 * the text, else found in the client's bytes (the front's parse accepted
 * them: their syntax is not checked again). False: not an object. */
static bool body_members(const struct sw_chat_request *chat, const char *text, size_t len,
                         struct sw_jspan sp[3])
{
    static const char *const keys[] = {"model", "metadata", "stream_options"};
    if (text == chat->text && chat->text_pieces.n && !chat->text_model_len)
        return false;   /* text is not the whole text */
    if (text != chat->text || !chat->text_model_len)
        return sw_jscan_members(text, len, keys, sp, NULL, 3);
    sp[0] = (struct sw_jspan){chat->text_model_off, chat->text_model_len};
    sp[1] = (struct sw_jspan){0, chat->text_metadata};
    sp[2] = (struct sw_jspan){0, chat->text_stream_options};
    return true;
}

/* The body for an unmasked attempt spliced from the client's own bytes
 * (an OpenAI client's), or from the text the front wrote the internal body
 * as (a translation, which the front scanned as that tree; the kept texts
 * of resent elements it shares go in their places): `model` replaced by
 * the backend's, and for a stream without stream_options the usage request
 * put before the closing brace, the edits the tree gets before it is sent.
 * The bytes around the edits are not copied: io->parts sends them from
 * where they are (the request holds them to its end), and io->text holds
 * the backend's model. False when the body needs edits splicing does not do
 * (metadata, stream_options the body has): then the tree is serialised
 * instead. */
static bool plain_body(struct proxy *p, const struct sw_config_backend *be,
                       struct sw_stage_io *io)
{
    static const char usage[] = ",\"stream_options\":{\"include_usage\":true}";
    struct sw_jspan sp[3];
    size_t len = p->chat.text_len;
    const char *text = p->client_dialect != SW_DIALECT_OPENAI ? p->chat.text
                       : p->req                               ? sw_http_body(p->req, &len)
                                                              : NULL;
    if (!text || !body_members(&p->chat, text, len, sp) || !sp[0].len || sp[1].len ||
        (sp[2].len && p->chat.stream))
        return false;
    const struct sw_json_pieces *pc = text == p->chat.text ? &p->chat.text_pieces : NULL;
    size_t n_pc = pc ? pc->n : 0;
    const char *after = text + sp[0].off + sp[0].len;
    const char *close = p->chat.stream ? memrchr(text, '}', len) : NULL;
    if ((p->chat.stream && (!close || close < after)) || (n_pc && text + pc->v[0].at < after) ||
        (n_pc && close && close < text + pc->v[n_pc - 1].at))
        return false;
    struct iovec *v = sw_iovs_room(&io->parts, 5 + 2 * (int)n_pc);
    if (!v || !(io->text = sw_splice_quote(be->model)))
        return false;
    io->text_len = strlen(io->text);
    const char *end = close ? close : text + len;
    int n = 0;
    v[n++] = (struct iovec){(void *)text, sp[0].off};
    v[n++] = (struct iovec){io->text, io->text_len};
    for (size_t i = 0; i < n_pc; i++) {
        const char *to = text + pc->v[i].at;
        if (to > after)
            v[n++] = (struct iovec){(void *)after, (size_t)(to - after)};
        v[n++] = (struct iovec){(void *)pc->v[i].data, pc->v[i].len};
        after = to;
    }
    v[n++] = (struct iovec){(void *)after, (size_t)(end - after)};
    if (close) {
        v[n++] = (struct iovec){(void *)usage, sizeof usage - 1};
        v[n++] = (struct iovec){(void *)close, (size_t)(text + len - close)};
    }
    io->parts.n = n;
    return true;
}

/* The tree the request is sent from: the client's own body when the
 * backend speaks its API, else the internal (OpenAI) one, as the front
 * scanned it. A masked attempt gets a deep copy (masking edits it; a
 * masked request is rebuilt in the backend's own API, never through a
 * translation of a masked tree); the client's own tree a shallow copy (its
 * metadata copied when it is edited); the internal one is the request's. */
static json_t *tree_body(struct proxy *p, const struct sw_config_backend *be, bool own_api,
                         bool limit)
{
    json_t *from = own_api ? p->chat.native : p->chat.body;
    json_t *t;
    bool strip = p->a.need_mask;
    if (p->a.need_mask) {
        t = json_deep_copy(from);
    } else if (own_api) {
        t = json_copy(from);
        json_t *md = json_object_get(t, "metadata");
        if (t && json_is_object(md) && json_object_get(md, "allow_cloud")) {
            json_object_set_new(t, "metadata", json_copy(md)); /* the client's stays whole */
            strip = true;
        }
    } else {
        t = json_incref(from); /* stripped when the request arrived */
    }
    if (!t)
        return NULL;
    json_object_set_new(t, "model", json_string(be->model));
    if (own_api) /* the gateway resolved it: the body carries the whole conversation */
        json_object_del(t, "previous_response_id");
    if (own_api && sw_upstream_dialect(p->client_dialect)->object_ids)
        /* an API whose objects the gateway names keeps their state in the
         * gateway: the backend is asked to keep no copy */
        json_object_set_new(t, "store", json_false());
    if (own_api && limit) /* the client's own body carries the spend limit too */
        json_object_set_new(t, sw_upstream_dialect(p->client_dialect)->max_tokens_key,
                            json_integer(be->max_output_tokens));
    if (strip)
        sw_relay_strip_fields(t);
    return t;
}

int sw_relay_body(struct proxy *p, const struct sw_config_backend *be, bool own_api, bool limit,
                  struct sw_stage_io *io)
{
    if (!p->a.need_mask && !own_api && !limit && p->a.up_dialect == SW_DIALECT_OPENAI &&
        plain_body(p, be, io))
        return SW_OK;
    io->body = tree_body(p, be, own_api, limit);
    return io->body ? SW_OK : SW_ENOMEM;
}

int sw_relay_body_text(struct sw_stage_io *io)
{
    if (io->text)
        return SW_OK;
    io->text = io->body ? sw_json_dumps(io->body, JSON_COMPACT) : NULL;
    json_decref(io->body);
    io->body = NULL;
    if (!io->text)
        return SW_ENOMEM;
    io->text_len = strlen(io->text);
    return SW_OK;
}

bool sw_relay_body_limit(struct proxy *p, const struct sw_config_backend *be)
{
    bool limit = !p->facts.max_tokens_given && be->tier == SW_TIER_CLOUD &&
                 be->max_output_tokens > 0 &&
                 (sw_live_spend_cap_usd(p->live) > 0 || p->tenant_budget);
    if (limit)
        json_object_set_new(p->chat.body, "max_completion_tokens",
                            json_integer(be->max_output_tokens));
    else if (!p->facts.max_tokens_given)
        json_object_del(p->chat.body, "max_completion_tokens");
    return limit;
}

void sw_relay_ask_for_usage(struct proxy *p)
{
    if (!p->chat.stream)
        return;
    /* Some APIs always carry the usage (Anthropic's message_delta,
     * Responses' response.completed). */
    p->client_wants_usage =
        p->chat.include_usage || sw_upstream_dialect(p->client_dialect)->always_usage;
    json_t *so = json_object_get(p->chat.body, "stream_options");
    if (!json_is_object(so)) {
        so = json_object();
        json_object_set_new(p->chat.body, "stream_options", so);
    }
    json_object_set_new(so, "include_usage", json_true());
}

int sw_relay_target(const struct proxy *p, const struct sw_config_backend *be,
                    struct sw_buf *path, struct sw_buf *hdrs)
{
    const struct sw_relay_attempt *a = &p->a;
    struct sw_upstream_client_hdrs ch = {.bearer = p->auth.token};
    const char *const *names = sw_upstream_dialect(p->client_dialect)->client_headers;
    for (size_t i = 0; p->req && a->up_dialect == p->client_dialect &&
                       i < SW_UPSTREAM_CLIENT_HDRS && names[i]; i++)
        ch.value[i] = sw_http_header(p->req, names[i], NULL);
    struct sw_buf trace;
    sw_buf_init(&trace, 1024);
    /* a body in pieces goes only to OpenAI's API, which signs nothing */
    const char *whole = a->io.parts.n ? NULL : a->io.text;
    int err = sw_relay_trace_headers(p, &trace);
    if (!err)
        err = sw_upstream_target(be, a->up_dialect, p->chat.api, p->chat.stream, &ch, &trace,
                                 whole, whole ? a->io.text_len : 0, path, hdrs);
    sw_buf_free(&trace);
    return err;
}
