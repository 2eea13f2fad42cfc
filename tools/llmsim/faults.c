#include "faults.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/err.h"
#include "model.h"

void sw_llmsim_faults_clear(struct sw_llmsim_faults *f)
{
    *f = (struct sw_llmsim_faults){0};
    f->error_status = 500;
    f->retry_after_s = 1;
}

static int int_field(json_t *v, const char *key, int lo, int hi, int *out, char *err,
                     size_t errlen)
{
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi) {
        snprintf(err, errlen, "%s: must be an integer in [%d, %d]", key, lo, hi);
        return SW_EINVAL;
    }
    *out = (int)json_integer_value(v);
    return SW_OK;
}

static int bool_field(json_t *v, const char *key, bool *out, char *err, size_t errlen)
{
    if (!json_is_boolean(v)) {
        snprintf(err, errlen, "%s: must be true or false", key);
        return SW_EINVAL;
    }
    *out = json_is_true(v);
    return SW_OK;
}

int sw_llmsim_faults_parse(const char *text, size_t len, struct sw_llmsim_faults *out,
                           char *err, size_t errlen)
{
    json_error_t jerr;
    struct sw_llmsim_faults f;
    int rc = SW_OK;
    sw_llmsim_faults_clear(&f);
    json_t *root = json_loadb(text, len, 0, &jerr);
    if (!root) {
        snprintf(err, errlen, "invalid JSON: %s", jerr.text);
        return SW_EINVAL;
    }
    if (!json_is_object(root)) {
        snprintf(err, errlen, "the body must be a JSON object");
        rc = SW_EINVAL;
        goto done;
    }
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v) {
        if (!strcmp(key, "error_rate")) {
            if (!json_is_number(v) || json_number_value(v) < 0 || json_number_value(v) > 1) {
                snprintf(err, errlen, "error_rate: must be a number in [0, 1]");
                rc = SW_EINVAL;
            } else {
                f.error_rate = json_number_value(v);
            }
        } else if (!strcmp(key, "error_status")) {
            rc = int_field(v, key, 400, 599, &f.error_status, err, errlen);
        } else if (!strcmp(key, "retry_after_s")) {
            rc = int_field(v, key, 0, 86400, &f.retry_after_s, err, errlen);
        } else if (!strcmp(key, "latency_ms")) {
            rc = int_field(v, key, 0, 3600000, &f.latency_ms, err, errlen);
        } else if (!strcmp(key, "hang")) {
            rc = bool_field(v, key, &f.hang, err, errlen);
        } else if (!strcmp(key, "close_after_chunks")) {
            rc = int_field(v, key, 0, 1000000000, &f.close_after_chunks, err, errlen);
        } else if (!strcmp(key, "stream_error_after")) {
            f.stream_error = !json_is_null(v);
            if (f.stream_error)
                rc = int_field(v, key, 0, 1000000000, &f.stream_error_after, err, errlen);
        } else if (!strcmp(key, "malformed")) {
            if (json_is_null(v)) {
                f.malformed = SW_LLMSIM_MALFORMED_NONE;
            } else if (json_is_string(v) && !strcmp(json_string_value(v), "json")) {
                f.malformed = SW_LLMSIM_MALFORMED_JSON;
            } else if (json_is_string(v) && !strcmp(json_string_value(v), "sse")) {
                f.malformed = SW_LLMSIM_MALFORMED_SSE;
            } else {
                snprintf(err, errlen, "malformed: must be \"json\", \"sse\" or null");
                rc = SW_EINVAL;
            }
        } else if (!strcmp(key, "drift")) {
            if (json_is_null(v)) {
                f.drift = SW_LLMSIM_DRIFT_NONE;
            } else if (json_is_string(v) && !strcmp(json_string_value(v), "shape")) {
                f.drift = SW_LLMSIM_DRIFT_SHAPE;
            } else if (json_is_string(v) && !strcmp(json_string_value(v), "prose")) {
                f.drift = SW_LLMSIM_DRIFT_PROSE;
            } else {
                snprintf(err, errlen, "drift: must be \"shape\", \"prose\" or null");
                rc = SW_EINVAL;
            }
        } else if (!strcmp(key, "exit")) {
            rc = bool_field(v, key, &f.exit, err, errlen);
        } else if (!strcmp(key, "exit_after")) {
            rc = int_field(v, key, 0, 1000000000, &f.exit_after, err, errlen);
        } else if (!strcmp(key, "rpm")) {
            rc = int_field(v, key, 0, 1000000000, &f.rpm, err, errlen);
        } else if (!strcmp(key, "tpm")) {
            rc = int_field(v, key, 0, 1000000000, &f.tpm, err, errlen);
        } else {
            snprintf(err, errlen,
                     "unknown field \"%.64s\" (allowed: error_rate, error_status, retry_after_s, "
                     "latency_ms, hang, close_after_chunks, stream_error_after, malformed, drift, exit, exit_after, rpm, "
                     "tpm)",
                     key);
            rc = SW_EINVAL;
        }
        if (rc)
            goto done;
    }
    *out = f;
done:
    json_decref(root);
    return rc;
}

json_t *sw_llmsim_faults_to_json(const struct sw_llmsim_faults *f)
{
    static const char *mal[] = {NULL, "json", "sse"};
    static const char *drift[] = {NULL, "shape", "prose"};
    const char *m = mal[f->malformed], *dr = drift[f->drift];
    return json_pack("{s:f, s:i, s:i, s:i, s:b, s:i, s:o, s:o, s:o, s:b, s:i, s:i, s:i}",
                     "error_rate", f->error_rate, "error_status", f->error_status,
                     "retry_after_s", f->retry_after_s, "latency_ms", f->latency_ms,
                     "hang", (int)f->hang, "close_after_chunks", f->close_after_chunks,
                     "stream_error_after",
                     f->stream_error ? json_integer(f->stream_error_after) : json_null(),
                     "malformed", m ? json_string(m) : json_null(),
                     "drift", dr ? json_string(dr) : json_null(), "exit", (int)f->exit,
                     "exit_after", f->exit_after, "rpm", f->rpm, "tpm", f->tpm);
}

static void bucket_init(struct sw_llmsim_bucket *b, int per_minute, int64_t now_us)
{
    b->cap = per_minute;
    b->level = per_minute;
    b->last_us = now_us;
}

int sw_llmsim_bucket_take(struct sw_llmsim_bucket *b, int64_t now_us, double n)
{
    double per_us = b->cap / 60e6;
    if (now_us > b->last_us) {
        b->level += (double)(now_us - b->last_us) * per_us;
        if (b->level > b->cap)
            b->level = b->cap;
        b->last_us = now_us;
    }
    if (n > b->cap)
        n = b->cap; /* a request larger than the bucket waits for a full one */
    if (b->level >= n) {
        b->level -= n;
        return 0;
    }
    double wait_s = (n - b->level) / (per_us * 1e6);
    int s = (int)ceil(wait_s);
    return s < 1 ? 1 : s;
}

void sw_llmsim_faults_set(struct sw_llmsim_fault_state *s, const struct sw_llmsim_faults *f,
                          int64_t now_us)
{
    s->f = *f;
    bucket_init(&s->rpm, f->rpm, now_us);
    bucket_init(&s->tpm, f->tpm, now_us);
}

bool sw_llmsim_faults_arrive(struct sw_llmsim_fault_state *s)
{
    s->chat_requests++;
    return s->f.exit_after > 0 && s->chat_requests == (uint64_t)s->f.exit_after;
}

void sw_llmsim_faults_decide(struct sw_llmsim_fault_state *s, int64_t now_us, int tokens,
                             struct sw_llmsim_verdict *v)
{
    const struct sw_llmsim_faults *f = &s->f;
    *v = (struct sw_llmsim_verdict){0};
    v->retry_after_s = -1;
    v->latency_ms = f->latency_ms;
    v->close_after_chunks = f->close_after_chunks;
    v->stream_error_after = f->stream_error ? f->stream_error_after : -1;
    v->malformed = f->malformed;
    if (f->hang) {
        v->hang = true;
        return;
    }
    if (f->rpm > 0 || f->tpm > 0) {
        /* Check both before taking from either: a refused request costs nothing. */
        struct sw_llmsim_bucket r = s->rpm, t = s->tpm;
        int wr = f->rpm > 0 ? sw_llmsim_bucket_take(&r, now_us, 1) : 0;
        int wt = f->tpm > 0 ? sw_llmsim_bucket_take(&t, now_us, tokens) : 0;
        if (wr || wt) {
            v->status = 429;
            v->retry_after_s = wr > wt ? wr : wt;
            v->limit = wr ? "requests" : "tokens";
            /* keep the refill bookkeeping, not the takes */
            if (f->rpm > 0)
                sw_llmsim_bucket_take(&s->rpm, now_us, 0);
            if (f->tpm > 0)
                sw_llmsim_bucket_take(&s->tpm, now_us, 0);
            return;
        }
        s->rpm = r;
        s->tpm = t;
    }
    if (f->error_rate > 0 && sw_llmsim_rand01(&s->rng) < f->error_rate) {
        v->status = f->error_status;
        v->retry_after_s = f->retry_after_s;
        if (v->status != 429 && v->status != 503 && v->status != 529)
            v->retry_after_s = -1;
    }
}
