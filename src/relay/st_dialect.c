#include "relay/st_dialect.h"

#include <event2/buffer.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/jdump.h"
#include "common/jfast.h"
#include "common/jscan.h"
#include "common/log.h"
#include "dialect/anth_req.h"
#include "dialect/anth_stream.h"

void sw_dialect_stage_attempt(struct sw_dialect_stage *d, const struct sw_upstream_dialect *up,
                              bool native, bool own_api, bool format_tool, bool started,
                              long long created)
{
    d->up = up;
    d->native = native;
    d->own_api = own_api;
    d->format_tool = format_tool;
    d->dropped = 0;
    if (!started) {
        if (d->cs_ready && d->client->client_free)
            d->client->client_free(d->cs);
        const struct sw_dialect_answer a = {
            .id = d->id, .response_id = d->response_id[0] ? d->response_id : NULL,
            .model = d->public_model, .input_tokens_est = d->input_tokens_est,
            .request = d->request, .created = created};
        d->client->client_init(d->cs, &a); /* fails on first use (out of memory) if at all */
        d->cs_ready = true;
    }
    up->stream_init(d->us, d->public_model, created, format_tool);
}

void sw_dialect_stage_free(struct sw_dialect_stage *d)
{
    if (d->cs_ready && d->client && d->client->client_free)
        d->client->client_free(d->cs);
    d->cs_ready = false;
    sw_buf_free(&d->aout);
    free(d->rerr);
    d->rerr = NULL;
}

void sw_dialect_stage_complete(struct sw_dialect_stage *d)
{
    const json_t *answer = d->client->client_final ? d->client->client_final(d->cs) : NULL;
    if (answer && d->on_complete)
        d->on_complete(d->complete_ud, answer);
}

/* Moves what the client's side wrote to aout into the client's stream. */
static int flush(struct sw_dialect_stage *d, int err, struct evbuffer *out)
{
    if (!err && d->aout.len && evbuffer_add(out, d->aout.ptr, d->aout.len))
        err = SW_ENOMEM;
    sw_buf_reset(&d->aout);
    return err;
}

int sw_dialect_stage_error(struct sw_dialect_stage *d, bool upstream_type, const char *code,
                           const char *msg, struct evbuffer *out)
{
    sw_buf_reset(&d->aout);
    int err = d->client->client_error(d->cs, upstream_type ? d->us->error_type : NULL, code, msg,
                                      &d->aout);
    return flush(d, err, out);
}

/* ---- The backend's side ---- */

/* The internal body in the backend's API: the one serialisation of the
 * attempt happens later, from the tree this leaves in io->body. Under
 * translation.unsupported: drop a top-level field the backend's API has no
 * form for is left out (of a copy: the tree may be the request's) and the
 * translation tried again. */
static enum sw_stage_rc up_request(struct sw_stage *st, struct sw_stage_io *io)
{
    struct sw_dialect_stage *d = st->ctx;
    if (d->own_api || !io->body || !d->up->request_body)
        return SW_STAGE_OK;
    json_t *pruned = NULL, *b = NULL;
    struct sw_request_error e;
    e.status = 0;
    for (int round = 0; round < 32; round++) {
        b = d->up->request_body(pruned ? pruned : io->body, d->default_max_tokens, &e);
        if (b || !d->drop || e.status != 400 || strcmp(e.code, "untranslatable"))
            break;
        if ((!pruned && !(pruned = json_copy(io->body))) || json_object_del(pruned, e.param))
            break; /* not a top-level field: refused as it is */
        d->dropped |= 1u << sw_anth_openai_field_class(e.param);
    }
    json_decref(pruned);
    json_decref(io->body);
    io->body = b;
    if (b && d->dropped) {
        char list[512];
        sw_anth_field_list(d->dropped, list, sizeof list);
        sw_info("request %s: the backend's API cannot carry %s: dropped "
                "(translation.unsupported: drop)", d->id, list);
    }
    if (!b) {
        if (e.status == 400 && (d->rerr || (d->rerr = malloc(sizeof *d->rerr)))) {
            *d->rerr = e;
            io->verdict.cannot = d->rerr;
            io->verdict.before_send = true;
            return SW_STAGE_FAILOVER;
        }
        return sw_stage_fail(io, SW_ENOMEM, 0, "out of memory");
    }
    if (d->up->request_config && d->be && d->up->request_config(d->be, b))
        return sw_stage_fail(io, SW_ENOMEM, 0, "out of memory");
    io->built = true;
    return SW_STAGE_OK;
}

/* What a local server reported of its prefix cache in an answer or chunk:
 * usage.prompt_tokens_details.cached_tokens (OpenAI's shape, vLLM),
 * timings.cache_n (llama.cpp), or tokens_cached (llama.cpp's own API). */
static void read_cached(struct sw_stage_usage *u, const json_t *obj)
{
    const json_t *usage = json_object_get(obj, "usage");
    const json_t *v = json_object_get(json_object_get(usage, "prompt_tokens_details"),
                                      "cached_tokens");
    if (!json_is_integer(v))
        v = json_object_get(json_object_get(obj, "timings"), "cache_n");
    if (!json_is_integer(v))
        v = json_object_get(obj, "tokens_cached");
    if (json_is_integer(v) && json_integer_value(v) >= 0) {
        u->cached = (long)json_integer_value(v);
        u->cached_known = true;
    }
}

/* An OpenAI chunk (taken) as the client asked for it: an error before the
 * first token fails the attempt; usage read; the usage-only chunk Spillway
 * asked for on the client's behalf dropped, and the "usage": null that
 * include_usage adds. */
static enum sw_stage_rc take_chunk(struct sw_dialect_stage *d, struct sw_stage_io *io,
                                   json_t *chunk)
{
    if (json_object_get(chunk, "error") && !io->started) {
        json_decref(chunk);
        return sw_stage_fail(io, SW_ESTATUS, 0, "error event before the first token");
    }
    json_t *usage = json_object_get(chunk, "usage");
    json_t *choices = json_object_get(chunk, "choices");
    read_cached(io->usage, chunk);
    if (json_is_object(usage)) {
        json_t *in = json_object_get(usage, "prompt_tokens");
        json_t *out = json_object_get(usage, "completion_tokens");
        if (json_is_integer(in) && json_integer_value(in) >= 0)
            io->usage->in = (long)json_integer_value(in);
        if (json_is_integer(out) && json_integer_value(out) >= 0)
            io->usage->out = (long)json_integer_value(out);
        if (!d->client_wants_usage && json_is_array(choices) && json_array_size(choices) == 0) {
            json_decref(chunk);
            return SW_STAGE_OK;
        }
    } else if (json_is_null(usage) && !d->client_wants_usage) {
        json_object_del(chunk, "usage");
    }
    if (json_is_array(choices) && json_array_size(choices) > 0)
        io->usage->chunks++;
    if (json_array_append_new(io->chunks, chunk))
        return sw_stage_fail(io, SW_ENOMEM, 0, "out of memory");
    return SW_STAGE_OK;
}

/* A Responses delta event (a text, refusal, reasoning or arguments delta:
 * most of a stream) when the attempt is plain: checked to be one
 * well-formed object on one line whose type is "response.<...>.delta",
 * then written as its own bytes, its sequence_number told to the client's
 * side; no tree is built. 0: not such an event (nothing done: it takes
 * the tree path); 1: written; -1: out of memory. */
static int plain_delta(struct sw_dialect_stage *d, struct sw_stage_io *io)
{
    static const char *const keys[] = {"type", "sequence_number"};
    struct sw_jspan sp[2];
    const char *t = io->data;
    size_t n = io->len;
    if (!d->plain || n < 2 || memchr(t, '\n', n) || memchr(t, '\r', n) ||
        !sw_jscan_object(t, n, keys, sp, NULL, 2) || sp[0].len < 17 || t[sp[0].off] != '"')
        return 0;
    const char *ty = t + sp[0].off + 1;
    size_t tl = sp[0].len - 2;
    if (memcmp(ty, "response.", 9) || memcmp(ty + tl - 6, ".delta", 6) || memchr(ty, '\\', tl))
        return 0;
    long seq = sp[1].len ? sw_jscan_long(t, sp[1]) : -1;
    char nm[64];
    if (io->event && io->event[0])
        snprintf(nm, sizeof nm, "%s", io->event);
    else
        snprintf(nm, sizeof nm, "%.*s", (int)tl, ty);
    if (seq >= 0 && d->client->client_passed) {
        json_t *s = json_pack("{s:I}", "sequence_number", (json_int_t)seq);
        if (!s)
            return -1;
        d->client->client_passed(d->cs, s, false);
        json_decref(s);
    }
    if (d->us->preamble)
        d->us->preamble = false;
    io->usage->chunks++;
    if (evbuffer_add_printf(io->out, "event: %s\ndata: ", nm) < 0 ||
        evbuffer_add(io->out, t, n) || evbuffer_add(io->out, "\n\n", 2))
        return -1;
    return 1;
}

/* An event of the client's own API from a backend of that API: read, model
 * rewritten; an error event fails the attempt. */
static enum sw_stage_rc native_event(struct sw_dialect_stage *d, struct sw_stage_io *io)
{
    struct sw_native_event ev;
    int plain = plain_delta(d, io);
    if (plain)
        return plain > 0 ? SW_STAGE_OK : sw_stage_fail(io, SW_ENOMEM, 0, "out of memory");
    if (d->up->native_event(io->data, io->len, d->public_model, &ev))
        return sw_stage_fail(io, SW_EPROTO, 0, "malformed JSON in stream event");
    if (!ev.tree)
        return SW_STAGE_OK;
    if (d->us->preamble && !ev.preamble)
        d->us->preamble = false;
    if (ev.error) {
        memcpy(d->us->error_type, ev.error_type, sizeof d->us->error_type);
        json_decref(ev.tree);
        return sw_stage_fail(io, io->started ? SW_EPROTO : SW_ESTATUS, 0, "error event%s",
                             io->started ? " mid-stream" : " before the first token");
    }
    if (ev.content)
        io->usage->chunks++;
    if (ev.usage_in > 0)
        io->usage->in = ev.usage_in;
    if (ev.usage_out >= 0)
        io->usage->out = ev.usage_out;
    io->native = ev.tree;
    io->done = ev.stop;
    return SW_STAGE_OK;
}

static enum sw_stage_rc up_event(struct sw_stage *st, struct sw_stage_io *io)
{
    struct sw_dialect_stage *d = st->ctx;
    if (d->native)
        return native_event(d, io);
    if (d->up->stream_event) {
        json_t *chunks = json_array();
        const char *msg = "out of memory";
        bool done = false;
        if (!chunks || d->up->stream_event(d->us, io->data, io->len, chunks, &done, &msg)) {
            json_decref(chunks);
            return sw_stage_fail(io, io->started ? SW_EPROTO : SW_ESTATUS, 0, "%s%s", msg,
                                 io->started ? "" : " before the first token");
        }
        size_t i;
        json_t *c;
        json_array_foreach(chunks, i, c) {
            enum sw_stage_rc rc = take_chunk(d, io, json_incref(c));
            if (rc) {
                json_decref(chunks);
                return rc;
            }
        }
        json_decref(chunks);
        io->done = done;
        return SW_STAGE_OK;
    }
    if (io->len == 6 && memcmp(io->data, "[DONE]", 6) == 0) {
        io->done = true;
        return SW_STAGE_OK;
    }
    json_error_t jerr;
    json_t *chunk = sw_json_load(io->data, io->len, 0, &jerr);
    if (!chunk || !json_is_object(chunk)) {
        json_decref(chunk);
        return sw_stage_fail(io, SW_EPROTO, 0, "malformed JSON in stream event");
    }
    return take_chunk(d, io, chunk);
}

/* A whole answer: parsed, in the relay's form unless passed through, its
 * usage read. */
static enum sw_stage_rc up_answer(struct sw_stage *st, struct sw_stage_io *io)
{
    struct sw_dialect_stage *d = st->ctx;
    const struct sw_buf *t = io->answer_text;
    json_error_t jerr;
    json_t *body = sw_json_load(t->ptr ? t->ptr : "", t->len, 0, &jerr);
    if (body && d->native) {
        long in, out;
        if (d->up->native_answer(body, &in, &out)) {
            json_decref(body);
            return sw_stage_fail(io, SW_EPROTO, io->up_status, "malformed JSON answer");
        }
        if (in >= 0)
            io->usage->in = in;
        if (out >= 0)
            io->usage->out = out;
        io->native = body;
        return SW_STAGE_OK;
    }
    if (body && d->up->answer_to_openai) {
        json_t *o = d->up->answer_to_openai(body, d->public_model, io->created, d->format_tool);
        json_decref(body);
        body = o;
    }
    if (!body || !json_is_object(body) || !json_is_array(json_object_get(body, "choices"))) {
        json_decref(body);
        return sw_stage_fail(io, SW_EPROTO, io->up_status, "malformed JSON answer");
    }
    json_t *usage = json_object_get(body, "usage");
    read_cached(io->usage, body);
    if (json_is_object(usage)) {
        json_t *in = json_object_get(usage, "prompt_tokens");
        json_t *out = json_object_get(usage, "completion_tokens");
        if (json_is_integer(in) && json_integer_value(in) >= 0)
            io->usage->in = (long)json_integer_value(in);
        if (json_is_integer(out) && json_integer_value(out) >= 0)
            io->usage->out = (long)json_integer_value(out);
    }
    io->answer = body;
    return SW_STAGE_OK;
}

const struct sw_stage_ops sw_dialect_up_ops = {
    .name = "dialect",
    .request = up_request,
    .event = up_event,
    .answer = up_answer,
};

/* ---- The client's side ---- */

/* Writes one event of the client's own API (ev is taken); name NULL: its type. */
static enum sw_stage_rc write_native(struct sw_dialect_stage *d, struct sw_stage_io *io,
                                     json_t *ev, const char *name)
{
    char nm[64];
    const char *type = json_string_value(json_object_get(ev, "type"));
    snprintf(nm, sizeof nm, "%s", name && name[0] ? name : type ? type : "message");
    if (d->client->client_passed)
        d->client->client_passed(d->cs, ev, false);
    struct sw_buf b;
    sw_buf_init(&b, SIZE_MAX / 8);
    int err = sw_buf_append_str(&b, "event: ");
    if (!err)
        err = sw_buf_append_str(&b, nm);
    if (!err)
        err = sw_buf_append(&b, "\ndata: ", 7);
    if (!err)
        err = sw_json_dump_buf(ev, JSON_COMPACT, &b);
    if (!err)
        err = sw_buf_append(&b, "\n\n", 2);
    json_decref(ev);
    if (!err && evbuffer_add(io->out, b.ptr, b.len))
        err = SW_ENOMEM;
    sw_buf_free(&b);
    if (err)
        return sw_stage_fail(io, SW_ENOMEM, 0, "out of memory");
    return SW_STAGE_OK;
}

static enum sw_stage_rc client_event(struct sw_stage *st, struct sw_stage_io *io)
{
    struct sw_dialect_stage *d = st->ctx;
    if (io->native_before) {
        json_t *ev = io->native_before;
        io->native_before = NULL;
        enum sw_stage_rc rc = write_native(d, io, ev, NULL);
        if (rc)
            return rc;
    }
    if (io->native) {
        /* message_stop is the end: held for the end hook (a contract may
         * end the stream with its error event instead) */
        if (io->done)
            return SW_STAGE_OK;
        json_t *ev = io->native;
        io->native = NULL;
        return write_native(d, io, ev, io->event);
    }
    size_t i;
    json_t *c;
    int err = SW_OK;
    json_array_foreach(io->chunks, i, c) {
        if (json_is_string(json_object_get(c, "model")))
            json_object_set_new(c, "model", json_string(d->public_model));
        if (!err)
            err = flush(d, d->client->client_chunk(d->cs, c, &d->aout), io->out);
    }
    json_array_clear(io->chunks);
    return err ? sw_stage_fail(io, SW_ENOMEM, 0, "out of memory") : SW_STAGE_OK;
}

static enum sw_stage_rc client_end(struct sw_stage *st, struct sw_stage_io *io)
{
    struct sw_dialect_stage *d = st->ctx;
    if (io->native) {
        json_t *stop = io->native;
        io->native = NULL;
        if (!io->closed) {
            io->done = false; /* written now */
            io->native = stop;
            enum sw_stage_rc rc = client_event(st, io);
            io->done = true;
            if (rc == SW_STAGE_OK)
                sw_dialect_stage_complete(d);
            return rc;
        }
        json_decref(stop);
        return SW_STAGE_OK;
    }
    if (io->closed || d->native)
        return SW_STAGE_OK;
    int err = flush(d, d->client->client_finish(d->cs, io->created, &d->aout), io->out);
    if (err)
        return sw_stage_fail(io, SW_ENOMEM, 0, "out of memory");
    sw_dialect_stage_complete(d);
    return SW_STAGE_OK;
}

/* The whole answer in the client's API, serialised once. */
static enum sw_stage_rc client_answer(struct sw_stage *st, struct sw_stage_io *io)
{
    struct sw_dialect_stage *d = st->ctx;
    json_t *body = io->native ? io->native : io->answer;
    io->native = io->answer = NULL;
    json_object_set_new(body, "model", json_string(d->public_model));
    if (!d->native && d->client->answer_from_openai) {
        json_t *a = d->client->answer_from_openai(d->cs, body, d->public_model, io->created);
        json_decref(body);
        body = a;
    } else if (d->native && body && d->client->client_passed) {
        d->client->client_passed(d->cs, body, true);
    }
    char *s = body ? sw_json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    if (!s)
        return sw_stage_fail(io, SW_ENOMEM, 0, "out of memory");
    sw_dialect_stage_complete(d);
    io->reply_owned = s;
    io->reply = s;
    io->reply_len = strlen(s);
    return SW_STAGE_OK;
}

const struct sw_stage_ops sw_dialect_client_ops = {
    .name = "client",
    .event = client_event,
    .answer = client_answer,
    .end = client_end,
};
