#include "upstream/startcheck.h"

#include <curl/curl.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/log.h"
#include "upstream/dialect.h"

struct check {
    struct sw_startcheck *s;
    size_t i;
    CURL *easy;
    struct curl_slist *hdrs;
    struct sw_buf answer;
    char errbuf[CURL_ERROR_SIZE];
};

struct sw_startcheck {
    struct sw_curlev *cev;
    struct sw_live *live;
    struct check *checks;
    size_t n;
    size_t done, passed;        /* checks finished (or never started), and passed */
};

/* One line when every check has ended, so an operator (or a test) knows the
 * start-up warnings are complete. */
static void finished_one(struct sw_startcheck *s, bool passed)
{
    s->done++;
    s->passed += passed;
    if (s->done == s->n)
        sw_info("start-up checks done: %zu of %zu backend(s) passed", s->passed, s->n);
}

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *ud)
{
    struct check *c = ud;
    size_t len = size * nmemb;
    (void)sw_buf_append(&c->answer, ptr, len); /* over the cap: the verdict needs no more */
    return len;
}

static void check_clear(struct check *c)
{
    if (c->easy) {
        sw_curlev_remove(c->s->cev, c->easy);
        curl_easy_cleanup(c->easy);
        c->easy = NULL;
    }
    curl_slist_free_all(c->hdrs);
    c->hdrs = NULL;
    sw_buf_free(&c->answer);
}

/* error.message of an OpenAI-shaped error answer, else the answer's start. */
static void error_text(const char *body, size_t len, char *out, size_t cap)
{
    out[0] = '\0';
    if (!body || !len)
        return;
    json_t *j = json_loadb(body, len, 0, NULL);
    json_t *err = j ? json_object_get(j, "error") : NULL;
    const char *msg = json_string_value(json_is_object(err) ? json_object_get(err, "message") : err);
    if (msg)
        snprintf(out, cap, "%s", msg);
    else
        snprintf(out, cap, "%.*s", (int)(len < 120 ? len : 120), body);
    json_decref(j);
    for (char *p = out; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
}

void sw_startcheck_verdict(const struct sw_config_backend *be, int curl_rc, const char *errbuf,
                           long status, const char *body, size_t body_len, char *out, size_t cap)
{
    const char *host = strstr(be->url, "://");
    const char *prefix = host ? host + 3 + strcspn(host + 3, "/") : "";
    char what[400];
    struct sw_buf path;
    sw_buf_init(&path, 256);
    int perr = sw_upstream_path(be, be->dialect, "models", &path);
    snprintf(what, sizeof what, "GET %.100s%.256s", prefix, !perr && path.ptr ? path.ptr : "/v1/models");
    sw_buf_free(&path);
    out[0] = '\0';
    if (curl_rc != CURLE_OK) {
        snprintf(out, cap, "%s: %s%s", what,
                 errbuf && errbuf[0] ? errbuf : curl_easy_strerror((CURLcode)curl_rc),
                 curl_rc == CURLE_COULDNT_CONNECT || curl_rc == CURLE_COULDNT_RESOLVE_HOST ||
                 curl_rc == CURLE_OPERATION_TIMEDOUT
                     ? "; is the server running and listening at this backend's url?"
                     : "");
        return;
    }
    char text[160];
    error_text(body, body_len, text, sizeof text);
    if (status < 200 || status > 299) {
        const char *hint = "";
        if (status == 401 || status == 403)
            hint = "; check the backend's api_key";
        else if (status == 404)
            hint = "; url must be the server's root or the API's base (Spillway appends "
                   "/v1/chat/completions, or chat/completions after a path of its own) "
                   "and model one the server serves";
        snprintf(out, cap, "%ld from %s: %s%s", status, what, text[0] ? text : "(no message)", hint);
        return;
    }
    /* 200 from /v1/models: the model must be listed. */
    json_t *j = json_loadb(body ? body : "", body_len, 0, NULL);
    json_t *data = j ? json_object_get(j, "data") : NULL;
    if (!json_is_array(data)) {
        json_decref(j);
        return; /* not an OpenAI list: nothing to compare with */
    }
    size_t k;
    json_t *m;
    struct sw_buf some;
    sw_buf_init(&some, 200);
    json_array_foreach(data, k, m) {
        const char *id = json_string_value(json_object_get(m, "id"));
        if (id && !strcmp(id, be->model)) {
            sw_buf_free(&some);
            json_decref(j);
            return;
        }
        if (id && k < 5)
            sw_buf_appendf(&some, "%s%s", k ? ", " : "", id);
    }
    snprintf(out, cap, "model \"%s\" is not among the %zu model(s) %s lists (%.*s%s)%s",
             be->model, json_array_size(data), what, (int)some.len, some.ptr ? some.ptr : "",
             json_array_size(data) > 5 ? ", ..." : "",
             be->tier == SW_TIER_LOCAL ? "; a server of one model (llama.cpp) may ignore the name, "
                                         "others answer 404" : "");
    sw_buf_free(&some);
    json_decref(j);
}

static void on_done(void *ud, CURLcode rc)
{
    struct check *c = ud;
    const struct sw_config_backend *be = &c->s->live->cfg->backends[c->i];
    long status = 0;
    if (rc == CURLE_OK)
        curl_easy_getinfo(c->easy, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(c->easy); /* sw_curlev has removed it */
    c->easy = NULL;
    char why[240];
    sw_startcheck_verdict(be, rc, c->errbuf, status, c->answer.ptr, c->answer.len, why, sizeof why);
    if (why[0]) {
        sw_warn("backend %s (%s) failed its start-up check: %s", be->name, be->url, why);
        sw_live_set_error(c->s->live, c->i, why);
    } else {
        sw_info("backend %s (%s) passed its start-up check", be->name, be->url);
    }
    check_clear(c);
    finished_one(c->s, !why[0]);
}

static int start(struct check *c, const struct sw_config_backend *be, long timeout_ms)
{
    struct sw_buf path;
    sw_buf_init(&path, 4096);
    if (sw_upstream_path(be, be->dialect, "models", &path) ||
        !(c->easy = sw_curlev_easy(be, path.ptr, timeout_ms))) {
        sw_buf_free(&path);
        return -1;
    }
    sw_buf_free(&path);
    c->hdrs = curl_slist_append(c->hdrs, "X-Request-Id: sw-startcheck");
    /* Authenticated and versioned the way the backend's (first) API wants. */
    struct sw_buf h;
    sw_buf_init(&h, 8192);
    if (!sw_upstream_dialect(be->dialect)->headers(be, NULL, &h) && h.ptr) {
        char *save = NULL;
        for (char *line = strtok_r(h.ptr, "\r\n", &save); line;
             line = strtok_r(NULL, "\r\n", &save))
            c->hdrs = curl_slist_append(c->hdrs, line);
    }
    sw_buf_free(&h);
    sw_buf_init(&c->answer, 1 << 20);
    curl_easy_setopt(c->easy, CURLOPT_HTTPHEADER, c->hdrs);
    curl_easy_setopt(c->easy, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c->easy, CURLOPT_WRITEDATA, c);
    curl_easy_setopt(c->easy, CURLOPT_ERRORBUFFER, c->errbuf);
    if (sw_curlev_add(c->s->cev, c->easy, on_done, c)) {
        curl_easy_cleanup(c->easy);
        c->easy = NULL;
        return -1;
    }
    return 0;
}

struct sw_startcheck *sw_startcheck_new(struct sw_curlev *cev, struct sw_live *live)
{
    struct sw_startcheck *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->cev = cev;
    s->live = sw_live_ref(live);
    s->n = live->cfg->n_backends;
    s->checks = calloc(s->n ? s->n : 1, sizeof *s->checks);
    if (!s->checks) {
        sw_startcheck_free(s);
        return NULL;
    }
    for (size_t i = 0; i < s->n; i++) {
        struct check *c = &s->checks[i];
        c->s = s;
        c->i = i;
        if (sw_upstream_dialect(live->cfg->backends[i].dialect)->no_models) {
            finished_one(s, true); /* no model list to ask for */
            continue;
        }
        if (start(c, &live->cfg->backends[i], live->cfg->routing.request_timeout_ms)) {
            sw_warn("backend %s: its start-up check could not be sent", live->cfg->backends[i].name);
            check_clear(c);
            finished_one(s, false);
        }
    }
    return s;
}

void sw_startcheck_free(struct sw_startcheck *s)
{
    if (!s)
        return;
    for (size_t i = 0; s->checks && i < s->n; i++)
        check_clear(&s->checks[i]);
    free(s->checks);
    sw_live_unref(s->live);
    free(s);
}
