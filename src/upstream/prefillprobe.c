/* The prefill warm-up request: see prefillprobe.h. */
#include "upstream/prefillprobe.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/err.h"
#include "common/log.h"
#include "upstream/dialect.h"
#include "upstream/upstream.h"

/* The prompt: plain text of a known size, the same every time, nothing a
 * PII scan or a cache would single out. */
#define PROBE_SENTENCE "The quick brown fox jumps over the lazy dog near the river bank. "
#define PROBE_REPEAT 36
/* Its size when the answer carries no usage: about four bytes a token. */
#define PROBE_PROMPT_TOKENS_EST ((long)((sizeof PROBE_SENTENCE - 1) * PROBE_REPEAT / 4))

struct probe {
    struct sw_prefill_probes *pp;
    size_t i;                   /* backend index */
    bool armed;                 /* a measurement is wanted */
    int64_t armed_ms;
    bool sending;               /* in flight */
    int64_t sent_ms;
    enum sw_health seen;        /* the health at the last tick */
    int64_t left_up_ms;         /* when it last stopped being up */
    struct sw_upstream up;
    struct sw_buf answer;
};

struct sw_prefill_probes {
    struct sw_curlev *cev;
    struct sw_config *cfg;
    struct sw_live *live;
    struct probe *p;
    size_t n;
};

char *sw_prefill_probe_body(enum sw_dialect d, const char *model, uint64_t nonce)
{
    struct sw_buf t;
    sw_buf_init(&t, 8192);
    /* A prompt that starts differently each time: no prefix cache of the
     * server (llama.cpp's, vLLM's) holds any of it. */
    if (sw_buf_appendf(&t, "Note %llu. ", (unsigned long long)nonce)) {
        sw_buf_free(&t);
        return NULL;
    }
    for (int k = 0; k < PROBE_REPEAT; k++)
        if (sw_buf_append(&t, PROBE_SENTENCE, sizeof PROBE_SENTENCE - 1)) {
            sw_buf_free(&t);
            return NULL;
        }
    json_t *b = d == SW_DIALECT_RESPONSES
                    ? json_pack("{s:s, s:i, s:s%, s:b}", "model", model, "max_output_tokens", 16,
                                "input", t.ptr, t.len, "store", 0)
                    : json_pack("{s:s, s:i, s:[{s:s, s:s%}]}", "model", model, "max_tokens", 1,
                                "messages", "role", "user", "content", t.ptr, t.len);
    sw_buf_free(&t);
    char *s = b ? json_dumps(b, JSON_COMPACT) : NULL;
    json_decref(b);
    return s;
}

static long count(json_t *usage, const char *key)
{
    json_t *v = json_object_get(usage, key);
    return json_is_integer(v) && json_integer_value(v) >= 0 ? (long)json_integer_value(v) : -1;
}

void sw_prefill_probe_read(enum sw_dialect d, const char *body, size_t len,
                           struct sw_prefill_probe_answer *out)
{
    *out = (struct sw_prefill_probe_answer){-1, -1, -1, -1};
    json_t *j = body && len ? json_loadb(body, len, 0, NULL) : NULL;
    json_t *u = json_object_get(j, "usage");
    bool chat = d == SW_DIALECT_OPENAI || d == SW_DIALECT_AZURE;
    if (json_is_object(u)) {
        out->prompt_tokens = count(u, chat ? "prompt_tokens" : "input_tokens");
        out->output_tokens = count(u, chat ? "completion_tokens" : "output_tokens");
    }
    json_t *t = json_object_get(j, "timings");
    json_t *ms = json_object_get(t, "prompt_ms");
    if (json_is_object(t) && json_is_number(ms) && json_number_value(ms) > 0) {
        out->timed_tokens = count(t, "prompt_n");
        out->timed_ms = json_number_value(ms);
    }
    json_decref(j);
}

static size_t on_data(void *ud, const char *bytes, size_t len)
{
    struct probe *pr = ud;
    (void)sw_buf_append(&pr->answer, bytes, len); /* past the cap: no usage, the estimate */
    return len;
}

static void on_done(void *ud, int err)
{
    struct probe *pr = ud;
    struct sw_prefill_probes *pp = pr->pp;
    const struct sw_config_backend *be = &pp->cfg->backends[pr->i];
    double elapsed = (double)(sw_now_ms() - pr->sent_ms);
    long status = pr->up.status;
    pr->sending = false;
    pr->armed = false;
    sw_upstream_cleanup(&pr->up);
    if (err || status != 200) {
        if (err)
            sw_warn("prefill warm-up of %s failed: %s; the prefill rate stays as it is", be->name,
                    sw_err_str(err));
        else
            sw_warn("prefill warm-up of %s was answered %ld; the prefill rate stays as it is",
                    be->name, status);
        sw_buf_reset(&pr->answer);
        return;
    }
    struct sw_prefill_probe_answer a;
    sw_prefill_probe_read(be->dialect, pr->answer.ptr, pr->answer.len, &a);
    sw_buf_reset(&pr->answer);
    long prompt = a.prompt_tokens >= 0 ? a.prompt_tokens : PROBE_PROMPT_TOKENS_EST;
    long output = a.output_tokens >= 0 ? a.output_tokens : 1;
    bool taught;
    if (a.timed_tokens >= (long)SW_PREFILL_MIN_TOKENS) {
        /* the server's own time of this prompt: no link or decode in it */
        prompt = a.timed_tokens;
        elapsed = a.timed_ms;
        taught = sw_prefill_warmup(&pp->live->b[pr->i]->prefill, elapsed, 0, prompt, 0, 0);
    } else {
        taught = sw_live_on_prefill_warmup(pp->live, pr->i, elapsed, prompt, output);
    }
    if (taught)
        sw_info("prefill warm-up of %s: %ld prompt tokens in %.0f ms, %.0f tokens/s", be->name,
                prompt, elapsed, 1000.0 / pp->live->b[pr->i]->prefill.warmup_ms_per_token);
    else
        sw_info("prefill warm-up of %s: %ld prompt tokens in %.0f ms teach no rate", be->name,
                prompt, elapsed);
}

static void send_probe(struct probe *pr, int64_t now)
{
    struct sw_prefill_probes *pp = pr->pp;
    const struct sw_config_backend *be = &pp->cfg->backends[pr->i];
    const struct sw_upstream_dialect *d = sw_upstream_dialect(be->dialect);
    char *body = sw_prefill_probe_body(be->dialect, be->model, (uint64_t)sw_wall_ms());
    struct sw_buf hdrs, path;
    sw_buf_init(&hdrs, 8192);
    sw_buf_init(&path, 4096);
    int err = body ? SW_OK : SW_ENOMEM;
    if (!err)
        err = d->headers(be, NULL, &hdrs);
    if (!err)
        err = sw_upstream_path(be, be->dialect, d->chat_path, &path);
    long timeout = pp->cfg->routing.request_timeout_ms;
    if (timeout <= 0 || timeout > SW_PREFILL_PROBE_TIMEOUT_MS)
        timeout = SW_PREFILL_PROBE_TIMEOUT_MS;
    static const struct sw_upstream_cbs cbs = {on_data, on_done};
    if (!err) {
        /* ownership of body passes to the upstream */
        err = sw_upstream_start(&pr->up, pp->cev, be, path.ptr, hdrs.ptr, body, strlen(body),
                                timeout, "sw-prefill-warmup", &cbs, pr);
        body = NULL;
    }
    free(body);
    sw_buf_free(&hdrs);
    sw_buf_free(&path);
    if (err) {
        sw_warn("prefill warm-up of %s could not be sent: %s", be->name, sw_err_str(err));
        pr->armed = false;
        return;
    }
    pr->sending = true;
    pr->sent_ms = now;
}

/* The server reports prefill figures of its own through this load source. */
static bool server_may_report(const struct sw_config_backend *be)
{
    return be->load.source == SW_LOAD_LLAMACPP || be->load.source == SW_LOAD_VLLM;
}

static void tick_one(struct probe *pr, int64_t now, bool health_known)
{
    struct sw_prefill_probes *pp = pr->pp;
    const struct sw_config_backend *be = &pp->cfg->backends[pr->i];
    struct sw_live_backend *lb = pp->live->b[pr->i];
    enum sw_health h = lb->health;
    if (h != SW_HEALTH_UP && pr->seen == SW_HEALTH_UP)
        pr->left_up_ms = now;
    /* Back up after loading its model again, or after being down longer
     * than one missed health check: the box may have changed. */
    bool back = h == SW_HEALTH_UP && pr->seen != SW_HEALTH_UP &&
                (pr->seen != SW_HEALTH_DOWN ||
                 now - pr->left_up_ms >= 2 * pp->cfg->routing.health_interval_ms);
    if (back && !pr->armed && !pr->sending) {
        pr->armed = true;
        pr->armed_ms = now;
    }
    pr->seen = h;
    if (!pr->armed || pr->sending)
        return;
    if (be->prefill_ms_per_token > 0 || lb->prefill.server_reports) {
        pr->armed = false;      /* a figure of the operator's or the server's own */
        return;
    }
    if (server_may_report(be) && now - pr->armed_ms < 2 * be->load.poll_ms)
        return;                 /* the server may report first */
    if (!health_known || h != SW_HEALTH_UP || lb->q.in_flight > 0 || lb->q.queued > 0)
        return;                 /* measured on a box known up (not loading) and idle */
    send_probe(pr, now);
}

struct sw_prefill_probes *sw_prefill_probes_new(struct sw_curlev *cev, struct sw_config *cfg,
                                                struct sw_live *live)
{
    struct sw_prefill_probes *pp = calloc(1, sizeof *pp);
    if (!pp)
        return NULL;
    pp->cev = cev;
    pp->cfg = cfg;
    pp->live = live;
    pp->p = calloc(cfg->n_backends ? cfg->n_backends : 1, sizeof *pp->p);
    if (!pp->p) {
        free(pp);
        return NULL;
    }
    int64_t now = sw_now_ms();
    for (size_t i = 0; i < cfg->n_backends; i++) {
        const struct sw_config_backend *be = &cfg->backends[i];
        if (be->tier != SW_TIER_LOCAL || !be->prefill_warmup)
            continue;
        struct probe *pr = &pp->p[pp->n++];
        pr->pp = pp;
        pr->i = i;
        /* what an earlier snapshot measured stands */
        pr->armed = live->b[i]->prefill.n_warmup == 0;
        pr->armed_ms = now;
        pr->seen = live->b[i]->health;
        sw_buf_init(&pr->answer, SW_PREFILL_PROBE_BODY_MAX);
    }
    return pp;
}

void sw_prefill_probes_tick(struct sw_prefill_probes *pp, size_t i, int64_t now_ms,
                            bool health_known)
{
    for (size_t k = 0; pp && k < pp->n; k++)
        if (pp->p[k].i == i)
            tick_one(&pp->p[k], now_ms, health_known);
}

void sw_prefill_probes_free(struct sw_prefill_probes *pp)
{
    if (!pp)
        return;
    for (size_t k = 0; k < pp->n; k++) {
        sw_upstream_cleanup(&pp->p[k].up);
        sw_buf_free(&pp->p[k].answer);
    }
    free(pp->p);
    free(pp);
}
