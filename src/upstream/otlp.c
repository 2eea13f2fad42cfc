#include "upstream/otlp.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "common/err.h"
#include "common/log.h"
#include "upstream/curlev.h"

#define BODY_MAX (64u * 1024 * 1024)    /* one export request */
#define ANSWER_MAX (64u * 1024)         /* the collector's answer, read and dropped */
#define RANDOM_BLOCK 4096

struct sw_otlp {
    struct event_base *base;
    struct sw_curlev *cev;
    /* configuration (copied) */
    char *url;
    enum sw_span_encoding enc;
    struct curl_slist *headers;
    long timeout_ms;
    double ratio;
    size_t batch_max;
    long interval_ms;
    char *ca_file;
    /* the resource */
    char *service_name, *instance_id, *replica;
    struct sw_attrs resource;
    /* the queue: a ring of encoded spans */
    struct sw_str *q;
    size_t q_cap, q_head, q_n;
    enum sw_span_encoding q_enc;    /* what the queued spans are encoded in */
    /* the batch in flight (or waiting for its retry) */
    CURL *easy;
    struct curl_slist *easy_headers;    /* the headers its transfer sends (kept past a reload) */
    struct sw_buf body;
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
        for (size_t i = 0; i < n; i++) {
            if (!o->rnd_left) {
                size_t got = 0;
                while (got < sizeof o->rnd) {
                    ssize_t r = getrandom(o->rnd + got, sizeof o->rnd - got, 0);
                    if (r > 0)
                        got += (size_t)r;
                }
                o->rnd_left = sizeof o->rnd;
            }
            out[i] = o->rnd[sizeof o->rnd - o->rnd_left];
            o->rnd[sizeof o->rnd - o->rnd_left--] = 0; /* a byte is handed out once */
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
    o->url = o->ca_file = NULL;
    o->headers = NULL;
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
    if (!o->headers || (c->ca_file && !o->ca_file))
        return SW_ENOMEM;
    /* spans encoded for the other protocol cannot go into this one's batches */
    if (o->q_n && o->q_enc != o->enc) {
        while (o->q_n) {
            free((void *)o->q[o->q_head].ptr);
            o->q_head = (o->q_head + 1) % o->q_cap;
            o->q_n--;
            o->st.dropped_encode++;
        }
    }
    o->q_enc = o->enc;
    if (o->batch_spans && !o->easy && o->batch_enc != o->enc)
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
    o->q = calloc(o->q_cap, sizeof *o->q);
    o->timer = evtimer_new(base, on_timer, o);
    o->service_name = strdup(c->service_name ? c->service_name : "spillway");
    o->instance_id = strdup(instance_id);
    o->replica = replica ? strdup(replica) : NULL;
    sw_buf_init(&o->body, BODY_MAX);
    sw_buf_init(&o->answer, ANSWER_MAX);
    if (!o->q || !o->timer || !o->service_name || !o->instance_id || (replica && !o->replica) ||
        sw_otlp_configure(o, c)) {
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
    if (o->timer)
        event_free(o->timer);
    for (size_t i = 0; o->q && i < o->q_n; i++)
        free((void *)o->q[(o->q_head + i) % o->q_cap].ptr);
    free(o->q);
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
    struct sw_buf b;
    sw_buf_init(&b, SW_OTLP_SPAN_MAX);
    if (sw_span_encode(s, o->enc, &b) || !b.ptr) {
        sw_buf_free(&b);
        o->st.dropped_encode++;
        return;
    }
    o->q[(o->q_head + o->q_n) % o->q_cap] = (struct sw_str){b.ptr, b.len};
    o->q_n++;
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

static bool retryable(CURLcode rc, long status)
{
    if (rc != CURLE_OK)
        return true;
    return status == 429 || status == 502 || status == 503 || status == 504;
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
    if (rc == CURLE_OK && status >= 200 && status <= 299) {
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
    /* a batch in the protocol of before a reload is not sent again */
    if (!retryable(rc, status) || o->tries >= SW_OTLP_TRIES || o->batch_enc != o->enc) {
        o->st.exports_failed++;
        if (o->st.exports_failed == 1 || o->st.exports_failed % 100 == 0)
            sw_warn("traces: export to %s failed (%s%ld): %zu spans dropped (%llu exports "
                    "failed so far)",
                    o->url, rc != CURLE_OK ? curl_easy_strerror(rc) : "status ",
                    rc != CURLE_OK ? 0L : status, o->batch_spans,
                    (unsigned long long)o->st.exports_failed);
        drop_batch(o);
        if (o->q_n)
            arm(o, o->interval_ms);
        return;
    }
    o->st.exports_retried++;
    long wait = SW_OTLP_BACKOFF_MIN_MS << (o->tries - 1 < 8 ? o->tries - 1 : 8);
    if (retry_after >= 0)
        wait = retry_after * 1000 > SW_OTLP_BACKOFF_MIN_MS ? (long)retry_after * 1000
                                                           : SW_OTLP_BACKOFF_MIN_MS;
    if (wait > SW_OTLP_BACKOFF_MAX_MS)
        wait = SW_OTLP_BACKOFF_MAX_MS;
    o->backing_off = true;
    arm(o, wait);
}

/* Builds the next batch from the queue (unless one waits for its retry). */
static int build_batch(struct sw_otlp *o)
{
    size_t n = o->q_n < o->batch_max ? o->q_n : o->batch_max;
    struct sw_str *spans = malloc(n * sizeof *spans);
    if (!spans)
        return SW_ENOMEM;
    for (size_t i = 0; i < n; i++)
        spans[i] = o->q[(o->q_head + i) % o->q_cap];
    sw_buf_reset(&o->body);
    int err = sw_otlp_request(&o->resource, "spillway", SW_VERSION, spans, n, o->q_enc, &o->body);
    for (size_t i = 0; i < n; i++)
        free((void *)spans[i].ptr);
    free(spans);
    o->q_head = (o->q_head + n) % o->q_cap;
    o->q_n -= n;
    o->batch_spans = n;
    o->batch_enc = o->q_enc;
    o->tries = 0;
    if (err)
        drop_batch(o);
    return err;
}

static void flush(struct sw_otlp *o)
{
    if (o->easy)
        return;
    if (!o->batch_spans && (!o->q_n || build_batch(o)))
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
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, o->body.ptr);
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)o->body.len);
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
