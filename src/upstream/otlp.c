#include "upstream/otlp.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "common/err.h"
#include "common/log.h"
#include "upstream/curlev.h"
#include "upstream/h1.h"

#define BODY_MAX (64u * 1024 * 1024)    /* one export request */
#define ANSWER_MAX (64u * 1024)         /* the collector's answer, read and dropped */
#define RANDOM_BLOCK 4096
#define QUEUE_KEEP (8u * 1024 * 1024)  /* bytes of an empty queue's buffer kept for the next spans */
#define QUEUE_SPAN_TYPICAL 4096         /* bytes a queue reserves per span of a batch */

struct sw_otlp {
    struct event_base *base;
    struct sw_curlev *cev;
    /* configuration (copied) */
    char *url;
    enum sw_span_encoding enc;
    struct curl_slist *headers;
    char *head;                     /* the same headers as lines, for the own HTTP/1 client */
    size_t head_len;
    long timeout_ms;
    double ratio;
    size_t batch_max;
    long interval_ms;
    char *ca_file;
    /* the resource, and its bytes in the queue's protocol */
    char *service_name, *instance_id, *replica;
    struct sw_attrs resource;
    struct sw_otlp_frame frame;
    /* the queue: spans encoded in q_enc and framed for a request, back to
     * back in q after q_gap bytes kept for the request's opening (no
     * allocation per span; a batch of every queued span is made in place);
     * span i ends at q_end[i] */
    struct sw_buf q;
    size_t q_gap;
    size_t *q_end;
    size_t q_cap, q_n;
    enum sw_span_encoding q_enc;    /* what the queued spans are encoded in */
    /* the batch in flight (or waiting for its retry): on curl (easy) or, for
     * a plain-http collector at a numeric address, on the HTTP/1 client (h1) */
    CURL *easy;
    struct curl_slist *easy_headers;    /* the headers its transfer sends (kept past a reload) */
    struct sw_h1req *h1;
    char *h1_head;                  /* the header lines it sends (kept past a reload) */
    long h1_status, h1_retry_after_s;
    struct sw_buf body;
    size_t body_off;                /* where the request starts in body */
    enum sw_span_encoding batch_enc;    /* what body is encoded in */
    size_t batch_spans;             /* spans in body; 0: no batch */
    int tries;
    struct sw_buf answer;
    struct event *timer;            /* the next flush, or the batch's retry */
    bool backing_off;
    /* the CSPRNG pool */
    uint8_t rnd[RANDOM_BLOCK];
    size_t rnd_left;
    struct sw_otlp_stats st;
};

static void flush(struct sw_otlp *o);
static void drop_batch(struct sw_otlp *o);

/* ---- Ids ---- */

void sw_otlp_random(struct sw_otlp *o, uint8_t *out, size_t n)
{
    do {
        for (size_t i = 0; i < n;) {
            if (!o->rnd_left) {
                size_t got = 0;
                while (got < sizeof o->rnd) {
                    ssize_t r = getrandom(o->rnd + got, sizeof o->rnd - got, 0);
                    if (r > 0)
                        got += (size_t)r;
                }
                o->rnd_left = sizeof o->rnd;
            }
            size_t k = n - i < o->rnd_left ? n - i : o->rnd_left;
            uint8_t *from = o->rnd + sizeof o->rnd - o->rnd_left;
            memcpy(out + i, from, k);
            memset(from, 0, k); /* a byte is handed out once */
            o->rnd_left -= k;
            i += k;
        }
    } while (sw_trace_id_zero(out, n));
}

double sw_otlp_sample_ratio(const struct sw_otlp *o)
{
    return o->ratio;
}

/* ---- Configuration ---- */

static void free_config(struct sw_otlp *o)
{
    free(o->url);
    free(o->ca_file);
    if (o->headers != o->easy_headers) /* else freed when its transfer ends */
        curl_slist_free_all(o->headers);
    if (o->head != o->h1_head)
        free(o->head);
    o->url = o->ca_file = o->head = NULL;
    o->headers = NULL;
    o->head_len = 0;
}

/* The export's header lines for the HTTP/1 client ("Name: value\r\n" each):
 * the content type, then telemetry.otlp.headers, then the blank line. */
static int build_head(struct sw_otlp *o, const struct sw_config_otlp *c)
{
    struct sw_buf h;
    sw_buf_init(&h, 64 * 1024);
    int err = sw_buf_append_str(&h, o->enc == SW_OTLP_PROTOBUF
                                        ? "Content-Type: application/x-protobuf\r\n"
                                        : "Content-Type: application/json\r\n");
    for (size_t i = 0; !err && i < c->n_headers; i++)
        err = sw_buf_appendf(&h, "%s: %s\r\n", c->header_name[i], c->header_value[i]);
    if (!err)
        err = sw_buf_append(&h, "\r\n", 2); /* the end of the head */
    if (err) {
        sw_buf_free(&h);
        return err;
    }
    o->head = h.ptr;
    o->head_len = h.len;
    return SW_OK;
}

/* The queued spans dropped (counted as encode: they were encoded for a
 * protocol no longer configured). */
static void drop_queue(struct sw_otlp *o)
{
    o->st.dropped_encode += o->q_n;
    o->q_n = 0;
    sw_buf_reset(&o->q);
}

/* The queue, empty: its room for the request's opening, and for a batch of
 * typical spans at once (address space only until written: the buffer is
 * not grown, and copied, span by span). */
static int queue_open(struct sw_otlp *o)
{
    o->q_gap = sw_otlp_frame_gap(&o->frame);
    size_t want = o->q_gap + o->batch_max * QUEUE_SPAN_TYPICAL;
    if (want > o->q.max)
        want = o->q_gap;
    int err = sw_buf_reserve(&o->q, want);
    if (!err)
        o->q.len = o->q_gap;
    return err;
}

int sw_otlp_configure(struct sw_otlp *o, const struct sw_config_otlp *c)
{
    free_config(o);
    const char *ep = c->endpoint;
    const char *auth = strstr(ep, "://");
    bool has_path = auth && strchr(auth + 3, '/');
    size_t n = strlen(ep) + sizeof "/v1/traces";
    o->url = malloc(n);
    if (!o->url)
        return SW_ENOMEM;
    snprintf(o->url, n, "%s%s", ep, has_path ? "" : "/v1/traces");
    o->enc = c->protocol == SW_OTLP_HTTP_PROTOBUF ? SW_OTLP_PROTOBUF : SW_OTLP_JSON;
    o->headers = curl_slist_append(NULL, o->enc == SW_OTLP_PROTOBUF
                                             ? "Content-Type: application/x-protobuf"
                                             : "Content-Type: application/json");
    for (size_t i = 0; o->headers && i < c->n_headers; i++) {
        struct sw_buf h;
        sw_buf_init(&h, 8192);
        if (!sw_buf_appendf(&h, "%s: %s", c->header_name[i], c->header_value[i]))
            o->headers = curl_slist_append(o->headers, h.ptr);
        sw_buf_free(&h);
    }
    o->ca_file = c->ca_file ? strdup(c->ca_file) : NULL;
    o->timeout_ms = c->timeout_ms;
    o->ratio = c->sample_ratio;
    o->batch_max = (size_t)c->batch_max_spans;
    o->interval_ms = c->batch_interval_ms;
    if (!o->headers || (c->ca_file && !o->ca_file) || build_head(o, c))
        return SW_ENOMEM;
    /* spans encoded for the other protocol cannot go into this one's
     * batches; the resource is encoded once per protocol */
    if (o->q_enc != o->enc || !o->frame.res.len) {
        drop_queue(o);
        sw_otlp_frame_free(&o->frame);
        if (sw_otlp_frame_init(&o->frame, &o->resource, "spillway", SW_VERSION, o->enc))
            return SW_ENOMEM;
    }
    o->q_enc = o->enc;
    if (o->batch_spans && !o->easy && !o->h1 && o->batch_enc != o->enc)
        drop_batch(o);
    return SW_OK;
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct sw_otlp *o = arg;
    o->backing_off = false;
    flush(o);
}

static void arm(struct sw_otlp *o, long ms)
{
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    evtimer_add(o->timer, &tv);
}

struct sw_otlp *sw_otlp_new(struct event_base *base, struct sw_curlev *cev,
                            const struct sw_config_otlp *c, const char *instance_id,
                            const char *replica)
{
    struct sw_otlp *o = calloc(1, sizeof *o);
    if (!o)
        return NULL;
    o->base = base;
    o->cev = cev;
    o->q_cap = (size_t)c->queue_max;
    o->q_end = calloc(o->q_cap, sizeof *o->q_end);
    /* every queued span is at most SW_OTLP_SPAN_MAX bytes and its framing */
    sw_buf_init(&o->q, o->q_cap * (SW_OTLP_SPAN_MAX + 8));
    o->timer = evtimer_new(base, on_timer, o);
    o->service_name = strdup(c->service_name ? c->service_name : "spillway");
    o->instance_id = strdup(instance_id);
    o->replica = replica ? strdup(replica) : NULL;
    sw_buf_init(&o->body, BODY_MAX);
    sw_buf_init(&o->answer, ANSWER_MAX);
    if (!o->q_end || !o->timer || !o->service_name || !o->instance_id ||
        (replica && !o->replica)) {
        sw_otlp_free(o);
        return NULL;
    }
    sw_attrs_str_k(&o->resource, SW_K("service.name"), o->service_name);
    sw_attrs_str_k(&o->resource, SW_K("service.version"), SW_VERSION);
    sw_attrs_str_k(&o->resource, SW_K("service.instance.id"), o->instance_id);
    sw_attrs_str_k(&o->resource, SW_K("telemetry.sdk.name"), "spillway");
    sw_attrs_str_k(&o->resource, SW_K("telemetry.sdk.language"), "c");
    sw_attrs_str_k(&o->resource, SW_K("telemetry.sdk.version"), SW_VERSION);
    sw_attrs_str_k(&o->resource, SW_K("spillway.replica.id"), o->replica);
    if (sw_otlp_configure(o, c)) {
        sw_otlp_free(o);
        return NULL;
    }
    return o;
}

void sw_otlp_free(struct sw_otlp *o)
{
    if (!o)
        return;
    if (o->easy) {
        sw_curlev_remove(o->cev, o->easy);
        curl_easy_cleanup(o->easy);
    }
    if (o->easy_headers != o->headers)
        curl_slist_free_all(o->easy_headers);
    o->easy_headers = NULL; /* free_config frees the current ones */
    sw_h1_abort(o->h1);
    if (o->h1_head != o->head)
        free(o->h1_head);
    o->h1_head = NULL;
    if (o->timer)
        event_free(o->timer);
    sw_buf_free(&o->q);
    free(o->q_end);
    sw_otlp_frame_free(&o->frame);
    free_config(o);
    sw_buf_free(&o->body);
    sw_buf_free(&o->answer);
    free(o->service_name);
    free(o->instance_id);
    free(o->replica);
    free(o);
}

/* ---- Queue ---- */

void sw_otlp_submit(struct sw_otlp *o, const struct sw_span *s)
{
    if (o->q_n == o->q_cap) {
        o->st.dropped_queue_full++;
        return;
    }
    if (!o->frame.res.len || (!o->q_n && queue_open(o)) ||
        sw_span_encode_framed(s, o->q_enc, SW_OTLP_SPAN_MAX, &o->q)) {
        o->st.dropped_encode++;
        return;
    }
    o->q_end[o->q_n++] = o->q.len;
    if (o->batch_spans || o->backing_off)
        return; /* the batch in flight or its retry comes first */
    if (o->q_n >= o->batch_max)
        arm(o, 0); /* at once, but never from inside the request's own call */
    else if (!evtimer_pending(o->timer, NULL))
        arm(o, o->interval_ms);
}

/* ---- Export ---- */

static size_t on_answer(char *ptr, size_t size, size_t nmemb, void *ud)
{
    struct sw_otlp *o = ud;
    size_t len = size * nmemb;
    (void)sw_buf_append(&o->answer, ptr, len); /* a longer answer is cut: it is not read */
    return len;
}

static void drop_batch(struct sw_otlp *o)
{
    o->st.dropped_export += o->batch_spans;
    o->batch_spans = 0;
    o->tries = 0;
    sw_buf_reset(&o->body);
}

/* An export ended: transport_ok with the collector's status and
 * Retry-After (seconds, -1: none), or a transport failure (why). */
static void export_done(struct sw_otlp *o, bool transport_ok, long status, long retry_after,
                        const char *why)
{
    if (transport_ok && status >= 200 && status <= 299) {
        o->st.exports_ok++;
        o->st.spans_exported += o->batch_spans;
        o->batch_spans = 0;
        o->tries = 0;
        sw_buf_reset(&o->body);
        if (o->q_n >= o->batch_max)
            arm(o, 0);
        else if (o->q_n)
            arm(o, o->interval_ms);
        return;
    }
    bool retryable = !transport_ok || status == 429 || status == 502 || status == 503 ||
                     status == 504;
    /* a batch in the protocol of before a reload is not sent again */
    if (!retryable || o->tries >= SW_OTLP_TRIES || o->batch_enc != o->enc) {
        o->st.exports_failed++;
        if (o->st.exports_failed == 1 || o->st.exports_failed % 100 == 0) {
            char what[160];
            if (transport_ok)
                snprintf(what, sizeof what, "status %ld", status);
            else
                snprintf(what, sizeof what, "%s", why ? why : "transport error");
            sw_warn("traces: export to %s failed (%s): %zu spans dropped (%llu exports "
                    "failed so far)",
                    o->url, what, o->batch_spans, (unsigned long long)o->st.exports_failed);
        }
        drop_batch(o);
        if (o->q_n)
            arm(o, o->interval_ms);
        return;
    }
    o->st.exports_retried++;
    long wait = SW_OTLP_BACKOFF_MIN_MS << (o->tries - 1 < 8 ? o->tries - 1 : 8);
    if (retry_after >= 0)
        wait = retry_after * 1000 > SW_OTLP_BACKOFF_MIN_MS ? retry_after * 1000
                                                           : SW_OTLP_BACKOFF_MIN_MS;
    if (wait > SW_OTLP_BACKOFF_MAX_MS)
        wait = SW_OTLP_BACKOFF_MAX_MS;
    o->backing_off = true;
    arm(o, wait);
}

static void on_done(void *ud, CURLcode rc)
{
    struct sw_otlp *o = ud;
    long status = 0;
    curl_off_t retry_after = -1;
    if (rc == CURLE_OK) {
        curl_easy_getinfo(o->easy, CURLINFO_RESPONSE_CODE, &status);
        curl_easy_getinfo(o->easy, CURLINFO_RETRY_AFTER, &retry_after);
    }
    curl_easy_cleanup(o->easy);
    o->easy = NULL;
    if (o->easy_headers != o->headers)
        curl_slist_free_all(o->easy_headers); /* a reload replaced them meanwhile */
    o->easy_headers = NULL;
    sw_buf_reset(&o->answer);
    if (retry_after > 24 * 3600)
        retry_after = 24 * 3600;
    export_done(o, rc == CURLE_OK, status, (long)retry_after, curl_easy_strerror(rc));
}

/* ---- The HTTP/1 client's callbacks ---- */

static void on_h1_head(void *ud, long status, long retry_after_s)
{
    struct sw_otlp *o = ud;
    o->h1_status = status;
    o->h1_retry_after_s = retry_after_s;
}

static size_t on_h1_data(void *ud, const char *bytes, size_t len)
{
    (void)ud;
    (void)bytes;
    return len; /* the collector's answer is not read */
}

static void on_h1_done(void *ud, int err, const char *why)
{
    struct sw_otlp *o = ud;
    o->h1 = NULL;
    if (o->h1_head != o->head)
        free(o->h1_head); /* a reload replaced them meanwhile */
    o->h1_head = NULL;
    export_done(o, err == SW_OK, o->h1_status, o->h1_retry_after_s, why ? why : sw_err_str(err));
}

static const struct sw_h1_cbs h1_cbs = {on_h1_data, on_h1_done, on_h1_head};

/* Builds the next batch from the queue (unless one waits for its retry):
 * the first batch_max queued spans with the resource around them, made
 * into the request where they lie: the queue's buffer becomes the body,
 * and spans queued past the batch move to the other buffer (the body's
 * last one), which becomes the queue. */
static int build_batch(struct sw_otlp *o)
{
    size_t n = o->q_n < o->batch_max ? o->q_n : o->batch_max;
    size_t end = o->q_end[n - 1];
    struct sw_buf rest = o->body;
    sw_buf_reset(&rest);
    rest.max = o->q.max; /* each buffer keeps its role's bound */
    size_t rest_n = o->q_n - n, gap = o->q_gap;
    int err = SW_OK;
    if (rest_n) {
        err = sw_buf_reserve(&rest, gap + (o->q.len - end));
        if (err) {
            drop_queue(o); /* out of memory: nothing queued is kept */
            return err;
        }
        memcpy(rest.ptr + gap, o->q.ptr + end, o->q.len - end);
        rest.len = gap + (o->q.len - end);
        rest.ptr[rest.len] = '\0';
        for (size_t i = 0; i < rest_n; i++)
            o->q_end[i] = o->q_end[n + i] - end + gap;
        o->q.len = end;
    }
    err = sw_otlp_frame_wrap(&o->frame, &o->q, gap, &o->body_off);
    o->body = o->q;
    o->body.max = BODY_MAX;
    if (!err && o->body.len - o->body_off > BODY_MAX)
        err = SW_ETOOBIG;
    o->q = rest;
    o->q_n = rest_n;
    if (!o->q_n && o->q.cap > QUEUE_KEEP)
        sw_buf_free(&o->q); /* a burst's buffer is not kept */
    o->batch_spans = n;
    o->batch_enc = o->q_enc;
    o->tries = 0;
    if (err)
        drop_batch(o);
    return err;
}

/* The batch on the HTTP/1 client; false when it cannot take it. */
static bool send_h1(struct sw_otlp *o)
{
    struct sw_h1pool *pool = sw_curlev_h1(o->cev);
    if (!pool || !sw_h1pool_handles(pool, o->url))
        return false;
    o->h1_status = 0;
    o->h1_retry_after_s = -1;
    const struct iovec body = {o->body.ptr + o->body_off, o->body.len - o->body_off};
    o->h1 = sw_h1_start(pool, o->url, "", o->head, o->head_len, &body, 1, o->timeout_ms,
                        o->timeout_ms, &h1_cbs, o);
    if (!o->h1)
        return false;
    o->h1_head = o->head;
    o->tries++;
    return true;
}

static void flush(struct sw_otlp *o)
{
    if (o->easy || o->h1)
        return;
    if (!o->batch_spans && (!o->q_n || build_batch(o)))
        return;
    if (send_h1(o))
        return;
    CURL *e = curl_easy_init();
    if (!e) {
        o->backing_off = true;
        arm(o, SW_OTLP_BACKOFF_MIN_MS);
        return;
    }
    curl_easy_setopt(e, CURLOPT_URL, o->url);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, o->timeout_ms);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, o->timeout_ms);
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 2L);
    if (o->ca_file)
        curl_easy_setopt(e, CURLOPT_CAINFO, o->ca_file);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, o->headers);
    curl_easy_setopt(e, CURLOPT_POST, 1L);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, o->body.ptr + o->body_off);
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(o->body.len - o->body_off));
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_answer);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, o);
    o->easy = e;
    o->easy_headers = o->headers;
    o->tries++;
    if (sw_curlev_add(o->cev, e, on_done, o)) {
        curl_easy_cleanup(e);
        o->easy = NULL;
        o->easy_headers = NULL;
        o->backing_off = true;
        arm(o, SW_OTLP_BACKOFF_MIN_MS);
    }
}

/* ---- Metrics ---- */

void sw_otlp_stats(const struct sw_otlp *o, struct sw_otlp_stats *st)
{
    *st = o->st;
    st->queued = o->q_n + o->batch_spans;
    st->queue_max = o->q_cap;
}

int sw_otlp_render_metrics(const struct sw_otlp *o, struct sw_buf *out)
{
    struct sw_otlp_stats st;
    sw_otlp_stats(o, &st);
    return sw_buf_appendf(
        out,
        "# HELP spillway_otel_spans_exported_total Spans the trace collector accepted.\n"
        "# TYPE spillway_otel_spans_exported_total counter\n"
        "spillway_otel_spans_exported_total %llu\n"
        "# HELP spillway_otel_spans_dropped_total Spans dropped before the collector took them.\n"
        "# TYPE spillway_otel_spans_dropped_total counter\n"
        "spillway_otel_spans_dropped_total{reason=\"queue_full\"} %llu\n"
        "spillway_otel_spans_dropped_total{reason=\"export_failed\"} %llu\n"
        "spillway_otel_spans_dropped_total{reason=\"encode\"} %llu\n"
        "# HELP spillway_otel_exports_total Export requests to the trace collector by result.\n"
        "# TYPE spillway_otel_exports_total counter\n"
        "spillway_otel_exports_total{result=\"ok\"} %llu\n"
        "spillway_otel_exports_total{result=\"retried\"} %llu\n"
        "spillway_otel_exports_total{result=\"failed\"} %llu\n"
        "# HELP spillway_otel_queue_spans Spans waiting for export (queued and in flight).\n"
        "# TYPE spillway_otel_queue_spans gauge\n"
        "spillway_otel_queue_spans %zu\n"
        "# HELP spillway_otel_queue_max_spans The queue's bound (telemetry.otlp.queue_max).\n"
        "# TYPE spillway_otel_queue_max_spans gauge\n"
        "spillway_otel_queue_max_spans %zu\n",
        (unsigned long long)st.spans_exported, (unsigned long long)st.dropped_queue_full,
        (unsigned long long)st.dropped_export, (unsigned long long)st.dropped_encode,
        (unsigned long long)st.exports_ok, (unsigned long long)st.exports_retried,
        (unsigned long long)st.exports_failed, st.queued, st.queue_max);
}
