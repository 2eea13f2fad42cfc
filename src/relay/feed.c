/* The attempt loop's intake: the upstream's bytes, a whole answer kept
 * (bounded), a stream fed event by event through the stages and written to
 * the client as it comes, with backpressure (a slow client pauses the
 * upstream). Nothing here ends a request: a broken stream aborts the
 * transfer with p->a.abort_err and the loop's on_done decides. */
#include "relay/feed.h"

#include <event2/buffer.h>
#include <stdio.h>
#include <string.h>

#include "common/clock.h"
#include "common/err.h"
#include "relay/trace.h"

/* Pause the upstream while this much is waiting to be written to the client. */
#define CLIENT_PENDING_MAX (1024 * 1024)

/* One SSE event from the upstream through the stages, out to p->out.
 * Before the first byte went out, an error or garbage aborts the attempt so
 * the next backend can answer instead. */
int sw_relay_on_sse_event(void *ud, const char *event, const char *data, size_t len)
{
    struct proxy *p = ud;
    struct sw_relay_attempt *a = &p->a;
    struct sw_stage_io *io = &a->io;
    if (a->saw_done)
        return SW_OK;   /* the client has the stream's end: nothing follows it */
    io->event = event;
    io->data = data;
    io->len = len;
    io->done = false;
    io->started = p->started;
    enum sw_stage_rc rc = sw_stage_run(a->stages, a->n_stages, SW_STAGE_EVENT, io);
    if (rc == SW_STAGE_OK && io->done) {
        io->created = (long long)sw_wall_s(); /* the answer's completion time */
        rc = sw_stage_run(a->stages, a->n_stages, SW_STAGE_END, io);
        a->saw_done = rc == SW_STAGE_OK;
    }
    if (rc == SW_STAGE_OK)
        return SW_OK;
    if (io->chunks)
        json_array_clear(io->chunks);
    json_decref(io->native);
    json_decref(io->native_before);
    io->native = io->native_before = NULL;
    a->abort_err = io->verdict.err ? io->verdict.err : SW_EPROTO;
    snprintf(a->abort_msg, sizeof a->abort_msg, "%.150s", io->verdict.msg);
    return a->abort_err;
}

int sw_relay_on_evs_message(void *ud, const struct sw_evs_message *m)
{
    struct proxy *p = ud;
    const struct sw_upstream_dialect *d = p->dialect.up;
    sw_buf_reset(&p->evs_data);
    int err = d && d->frame ? d->frame(m, &p->evs_data) : SW_EPROTO;
    if (err) {
        p->a.abort_err = SW_EPROTO;
        snprintf(p->a.abort_msg, sizeof p->a.abort_msg, "event-stream message of no known type");
        return err;
    }
    return sw_relay_on_sse_event(ud, "", p->evs_data.ptr, p->evs_data.len);
}

/* The slow client caught up: resume the upstream transfer. */
static void on_client_drained(void *arg)
{
    struct proxy *p = arg;
    sw_upstream_resume(&p->up);
}

static void start_client_stream(struct proxy *p)
{
    sw_relay_route_headers(p);
    sw_http_add_header(p->req, "Cache-Control", "no-cache");
    sw_http_stream_start(p->req, 200, "text/event-stream");
    p->started = true;
    /* no attempt follows the first byte: what only attempts read goes */
    sw_relay_snap_release(p);
    sw_http_body_release(p->req);
    sw_upstream_drop_sent(&p->up);
}

static size_t on_stream_data(struct proxy *p, const char *bytes, size_t len)
{
    if (p->started && sw_http_pending(p->req) > CLIENT_PENDING_MAX) {
        sw_http_on_drained(p->req, CLIENT_PENDING_MAX / 2, on_client_drained, p);
        return SW_UPSTREAM_PAUSE;
    }
    if (p->a.saw_done)
        return len;     /* after the stream's end: not relayed, not parsed */
    bool framed = p->dialect.up && p->dialect.up->frame;
    int err = framed ? sw_evs_feed(&p->evs, bytes, len) : sw_sse_feed(&p->sse, bytes, len);
    if (err == SW_ETOOBIG && !p->a.abort_err) {
        p->a.abort_err = SW_EPROTO;
        snprintf(p->a.abort_msg, sizeof p->a.abort_msg, "stream event larger than %d bytes",
                 SW_RELAY_SSE_EVENT_MAX);
    } else if (framed && err && !p->a.abort_err) {
        p->a.abort_err = SW_EPROTO;
        snprintf(p->a.abort_msg, sizeof p->a.abort_msg, "%s",
                 p->evs.why ? p->evs.why : "event-stream framing broken");
    }
    /* Nothing goes out of an attempt that is failing before its first byte,
     * nor what a backend's preamble made (an error may still follow it). */
    if (evbuffer_get_length(p->out) > 0 &&
        (p->started || (!p->x.us.preamble && !p->a.abort_err))) {
        if (!p->started)
            start_client_stream(p);
        sw_http_stream_write(p->req, p->out);
    }
    return err ? 0 : len;
}

size_t sw_relay_on_data(void *ud, const char *bytes, size_t len)
{
    struct proxy *p = ud;
    if (p->client_gone)
        return 0;
    sw_relay_trace_scan(p, bytes, len);
    if (p->up.status < 200 || p->up.status > 299) {
        /* Keep what fits of the error body; it is passed through or logged. */
        size_t room = p->resp.max - p->resp.len;
        sw_buf_append(&p->resp, bytes, len < room ? len : room);
        return len;
    }
    p->a.last_byte_ms = sw_now_ms();
    if (!p->a.first_byte_ms)
        p->a.first_byte_ms = p->a.last_byte_ms;
    if (p->chat.stream)
        return on_stream_data(p, bytes, len);
    if (sw_buf_append(&p->resp, bytes, len)) {
        p->a.abort_err = SW_ETOOBIG;
        snprintf(p->a.abort_msg, sizeof p->a.abort_msg, "answer larger than %ld bytes",
                 p->cfg->limits.max_response_bytes);
        return 0;
    }
    return len;
}

