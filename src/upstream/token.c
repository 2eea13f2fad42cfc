/* Token sources (token.h): the registry, the refresh on the loop, the
 * waiters. The exchange's pieces that need no I/O are upstream/oauth.c. */
#include "upstream/token.h"

#include <curl/curl.h>
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/err.h"
#include "common/log.h"
#include "upstream/curlev.h"
#include "upstream/oauth.h"

extern char **environ;

#define GOOGLE_SCOPE "https://www.googleapis.com/auth/cloud-platform"
#define ENTRA_SCOPE "https://cognitiveservices.azure.com/.default"
#define ENTRA_URL "https://login.microsoftonline.com/%s/oauth2/v2.0/token"
/* The life a service account asks its assertion for (Google's most). */
#define ASSERTION_LIFETIME_S 3600

enum kind { K_SERVICE_ACCOUNT, K_CLIENT_CREDENTIALS, K_COMMAND };

struct sw_token_source {
    struct sw_token_source *next;   /* the registry */
    char *identity;                 /* what makes two backends' credentials the same */
    enum kind kind;
    struct event_base *base;
    struct sw_curlev *cev;
    char *backend;                  /* the first backend's name, for logs */
    /* the credentials */
    struct sw_oauth_sa sa;
    char *token_url;
    char *client_id, *client_secret;
    char *command;
    long command_timeout_ms;
    char load_error[200];           /* the key file could not be used: every get fails */
    /* the token */
    char *token;
    int64_t expires_ms, refresh_at_ms;  /* monotonic */
    int64_t failed_ms;              /* the last failure, 0 none */
    char why[200];                  /* ... and what failed */
    /* the refresh under way */
    bool refreshing;
    CURL *easy;
    struct curl_slist *hdrs;
    char *form;
    struct sw_buf answer;
    pid_t pid;
    int fd;
    struct event *ev_read, *ev_timeout, *ev_reap;
    struct sw_token_wait *waiters;
    struct sw_token_stats stats;
};

static struct sw_token_source *registry;

/* ---- The end of a refresh ---- */

static void wake(struct sw_token_source *ts, const char *token, const char *why)
{
    struct sw_token_wait *w;
    while ((w = ts->waiters)) {
        ts->waiters = w->next;
        w->next = NULL;
        w->linked = false;
        w->done(w, token, why);
    }
}

static void refresh_failed(struct sw_token_source *ts, const char *fmt, const char *what)
{
    snprintf(ts->why, sizeof ts->why, fmt, what);
    ts->failed_ms = sw_now_ms();
    ts->stats.failures++;
    ts->refreshing = false;
    sw_warn("backend %s: access token refresh failed: %s", ts->backend, ts->why);
    wake(ts, NULL, ts->why);
}

/* A token and its life (seconds; -1 not given: the kind's default). */
static void refreshed(struct sw_token_source *ts, char *token, long life_s)
{
    int64_t now = sw_now_ms();
    if (life_s < 0)
        life_s = ts->kind == K_COMMAND ? SW_TOKEN_COMMAND_TTL_S : ASSERTION_LIFETIME_S;
    long ahead = life_s / 4 < SW_TOKEN_AHEAD_S ? life_s / 4 : SW_TOKEN_AHEAD_S;
    free(ts->token);
    ts->token = token;
    ts->expires_ms = now + (int64_t)life_s * 1000;
    ts->refresh_at_ms = now + (int64_t)(life_s - ahead) * 1000;
    ts->failed_ms = 0;
    ts->why[0] = '\0';
    ts->refreshing = false;
    sw_info("backend %s: access token refreshed (valid %ld s)", ts->backend, life_s);
    wake(ts, ts->token, NULL);
}

/* The answer of an exchange or a command: a token response, or (a
 * command's) the token alone on its first line. */
static void answer_read(struct sw_token_source *ts)
{
    char *token = NULL, why[96];
    long life = -1;
    const char *a = ts->answer.ptr ? ts->answer.ptr : "";
    size_t n = ts->answer.len;
    int err = sw_oauth_token_parse(a, n, &token, &life, why, sizeof why);
    if (err == SW_EPROTO && ts->kind == K_COMMAND && n && a[0] != '{') {
        size_t k = strcspn(a, "\r\n");
        while (k && (a[k - 1] == ' ' || a[k - 1] == '\t'))
            k--;
        bool ok = k && k <= SW_OAUTH_TOKEN_MAX;
        for (size_t i = 0; ok && i < k; i++)
            ok = (unsigned char)a[i] > 0x20 && (unsigned char)a[i] < 0x7f;
        if (ok && (token = strndup(a, k)))
            err = SW_OK;
    }
    sw_buf_free(&ts->answer);
    if (err)
        refresh_failed(ts, "the token answer was not usable (%s)", err == SW_ENOMEM ? "out of memory" : why);
    else
        refreshed(ts, token, life);
}

/* ---- The HTTP exchange ---- */

static size_t on_http_data(char *p, size_t size, size_t n, void *ud)
{
    struct sw_token_source *ts = ud;
    return sw_buf_append(&ts->answer, p, size * n) ? 0 : size * n;
}

static void http_clear(struct sw_token_source *ts)
{
    if (ts->easy)
        curl_easy_cleanup(ts->easy);
    curl_slist_free_all(ts->hdrs);
    free(ts->form);
    ts->easy = NULL;
    ts->hdrs = NULL;
    ts->form = NULL;
}

static void on_http_done(void *ud, CURLcode rc)
{
    struct sw_token_source *ts = ud;
    long status = 0;
    curl_easy_getinfo(ts->easy, CURLINFO_RESPONSE_CODE, &status);
    http_clear(ts);
    if (rc != CURLE_OK) {
        sw_buf_free(&ts->answer);
        refresh_failed(ts, "the token endpoint could not be reached (%s)", curl_easy_strerror(rc));
        return;
    }
    if (status != 200) {
        char *token = NULL, why[96], st[112];
        long life;
        int perr = sw_oauth_token_parse(ts->answer.ptr ? ts->answer.ptr : "", ts->answer.len,
                                        &token, &life, why, sizeof why);
        free(token);
        snprintf(st, sizeof st, "%ld%s%s", status, perr == SW_EPROTO ? " " : "",
                 perr == SW_EPROTO ? why : "");
        sw_buf_free(&ts->answer);
        refresh_failed(ts, "the token endpoint answered %s", st);
        return;
    }
    answer_read(ts);
}

/* The form of the exchange: the assertion, or the client credentials. */
static int exchange_form(struct sw_token_source *ts, struct sw_buf *f)
{
    if (ts->kind == K_CLIENT_CREDENTIALS)
        return sw_oauth_form(f, "grant_type", "client_credentials") ||
                       sw_oauth_form(f, "client_id", ts->client_id) ||
                       sw_oauth_form(f, "client_secret", ts->client_secret) ||
                       sw_oauth_form(f, "scope", ENTRA_SCOPE)
                   ? SW_ENOMEM
                   : SW_OK;
    char *jwt = NULL;
    int err = sw_oauth_sa_assertion(&ts->sa, ts->token_url, GOOGLE_SCOPE, sw_wall_s(),
                                    ASSERTION_LIFETIME_S, &jwt);
    if (!err && (sw_oauth_form(f, "grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer") ||
                 sw_oauth_form(f, "assertion", jwt)))
        err = SW_ENOMEM;
    free(jwt);
    return err;
}

static int start_http(struct sw_token_source *ts)
{
    struct sw_buf f;
    sw_buf_init(&f, SW_OAUTH_BODY_MAX);
    int err = exchange_form(ts, &f);
    if (err) {
        sw_buf_free(&f);
        return err;
    }
    ts->form = f.ptr;
    sw_buf_init(&ts->answer, SW_OAUTH_BODY_MAX);
    ts->easy = curl_easy_init();
    ts->hdrs = curl_slist_append(NULL, "Content-Type: application/x-www-form-urlencoded");
    if (!ts->easy || !ts->hdrs) {
        http_clear(ts);
        return SW_ENOMEM;
    }
    curl_easy_setopt(ts->easy, CURLOPT_URL, ts->token_url);
    curl_easy_setopt(ts->easy, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(ts->easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(ts->easy, CURLOPT_TIMEOUT_MS, (long)SW_TOKEN_EXCHANGE_TIMEOUT_MS);
    curl_easy_setopt(ts->easy, CURLOPT_HTTPHEADER, ts->hdrs);
    curl_easy_setopt(ts->easy, CURLOPT_POSTFIELDS, ts->form);
    curl_easy_setopt(ts->easy, CURLOPT_POSTFIELDSIZE, (long)f.len);
    curl_easy_setopt(ts->easy, CURLOPT_WRITEFUNCTION, on_http_data);
    curl_easy_setopt(ts->easy, CURLOPT_WRITEDATA, ts);
    if (sw_curlev_add(ts->cev, ts->easy, on_http_done, ts)) {
        http_clear(ts);
        return SW_ENOMEM;
    }
    return SW_OK;
}

/* ---- The token command ---- */

static void command_clear(struct sw_token_source *ts, bool kill_it)
{
    if (ts->ev_read)
        event_free(ts->ev_read);
    if (ts->ev_timeout)
        event_free(ts->ev_timeout);
    if (ts->ev_reap)
        event_free(ts->ev_reap);
    ts->ev_read = ts->ev_timeout = ts->ev_reap = NULL;
    if (ts->fd >= 0)
        close(ts->fd);
    ts->fd = -1;
    if (ts->pid > 0) {
        int st;
        /* its output is complete (or it ran out of time): it is not needed */
        if (kill_it || waitpid(ts->pid, &st, WNOHANG) == 0) {
            kill(ts->pid, SIGKILL);
            waitpid(ts->pid, &st, 0);
        }
    }
    ts->pid = 0;
}

/* The command's output is complete: its exit status decides, once it has
 * exited (looked at again every 5 ms, without waiting; the timeout still
 * bounds it). */
static void on_reap(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what;
    struct sw_token_source *ts = arg;
    int st = 0;
    if (waitpid(ts->pid, &st, WNOHANG) != ts->pid) {
        struct timeval tv = {0, 5000};
        if (!ts->ev_reap)
            ts->ev_reap = evtimer_new(ts->base, on_reap, ts);
        if (ts->ev_reap && !evtimer_add(ts->ev_reap, &tv))
            return;
        command_clear(ts, true);
        sw_buf_free(&ts->answer);
        refresh_failed(ts, "%s", "the token command could not be waited for");
        return;
    }
    ts->pid = 0;
    command_clear(ts, false);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        sw_buf_free(&ts->answer);
        refresh_failed(ts, "%s", "the token command failed (non-zero exit)");
        return;
    }
    answer_read(ts);
}

static void on_command_read(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    struct sw_token_source *ts = arg;
    char b[4096];
    ssize_t n = read(fd, b, sizeof b);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (n > 0) {
        if (sw_buf_append(&ts->answer, b, (size_t)n)) {
            command_clear(ts, true);
            sw_buf_free(&ts->answer);
            refresh_failed(ts, "%s", "the token command printed too much");
        }
        return;
    }
    /* end of its output */
    event_free(ts->ev_read);
    ts->ev_read = NULL;
    close(ts->fd);
    ts->fd = -1;
    on_reap(-1, 0, ts);
}

static void on_command_timeout(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what;
    struct sw_token_source *ts = arg;
    command_clear(ts, true);
    sw_buf_free(&ts->answer);
    refresh_failed(ts, "%s", "the token command ran out of time (killed)");
}

static int start_command(struct sw_token_source *ts)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC))
        return SW_EIO;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, p[1], 1);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    char *argv[] = {"/bin/sh", "-c", ts->command, NULL};
    pid_t pid;
    int rc = posix_spawn(&pid, "/bin/sh", &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(p[1]);
    if (rc) {
        close(p[0]);
        return SW_EIO;
    }
    ts->pid = pid;
    ts->fd = p[0];
    fcntl(ts->fd, F_SETFL, fcntl(ts->fd, F_GETFL) | O_NONBLOCK);
    sw_buf_init(&ts->answer, SW_OAUTH_BODY_MAX);
    ts->ev_read = event_new(ts->base, ts->fd, EV_READ | EV_PERSIST, on_command_read, ts);
    ts->ev_timeout = evtimer_new(ts->base, on_command_timeout, ts);
    struct timeval tv = {ts->command_timeout_ms / 1000, (ts->command_timeout_ms % 1000) * 1000};
    if (!ts->ev_read || !ts->ev_timeout || event_add(ts->ev_read, NULL) ||
        evtimer_add(ts->ev_timeout, &tv)) {
        command_clear(ts, true);
        sw_buf_free(&ts->answer);
        return SW_ENOMEM;
    }
    return SW_OK;
}

/* ---- Getting a token ---- */

static void start_refresh(struct sw_token_source *ts)
{
    if (ts->refreshing)
        return;
    ts->refreshing = true;
    ts->stats.refreshes++;
    int err = ts->kind == K_COMMAND ? start_command(ts) : start_http(ts);
    if (err)
        refresh_failed(ts, "the refresh could not start (%s)", sw_err_str(err));
}

int sw_token_get(struct sw_token_source *ts, int64_t now_ms, struct sw_token_wait *w,
                 char **token, const char **why)
{
    *token = NULL;
    *why = NULL;
    if (ts->load_error[0]) {
        *why = ts->load_error;
        return -1;
    }
    if (ts->token && now_ms < ts->expires_ms) {
        if (now_ms >= ts->refresh_at_ms && !ts->refreshing &&
            (!ts->failed_ms || now_ms - ts->failed_ms >= SW_TOKEN_RETRY_MS))
            start_refresh(ts); /* ahead of the expiry: this request keeps the current one */
        if (!(*token = strdup(ts->token))) {
            *why = "out of memory";
            return -1;
        }
        return 0;
    }
    if (!ts->refreshing && ts->failed_ms && now_ms - ts->failed_ms < SW_TOKEN_RETRY_MS) {
        *why = ts->why;
        return -1;
    }
    start_refresh(ts);
    if (!ts->refreshing) { /* it failed at once */
        *why = ts->why;
        return -1;
    }
    w->next = ts->waiters;
    w->linked = true;
    ts->waiters = w;
    ts->stats.waits++;
    return 1;
}

void sw_token_cancel(struct sw_token_source *ts, struct sw_token_wait *w)
{
    if (!ts || !w->linked)
        return;
    for (struct sw_token_wait **pp = &ts->waiters; *pp; pp = &(*pp)->next)
        if (*pp == w) {
            *pp = w->next;
            break;
        }
    w->next = NULL;
    w->linked = false;
}

void sw_token_stats(const struct sw_token_source *ts, struct sw_token_stats *out)
{
    *out = ts->stats;
}

/* ---- The registry ---- */

/* The identity of be's credentials, malloc'ed; NULL: it has none. */
static char *identity_of(const struct sw_config_backend *be, enum kind *kind)
{
    struct sw_buf b;
    sw_buf_init(&b, 1 << 16);
    int err = SW_OK;
    bool vertex = be->dialect == SW_DIALECT_VERTEX || be->dialect == SW_DIALECT_VERTEX_ANTHROPIC;
    if (vertex && be->vertex.credentials_file) {
        *kind = K_SERVICE_ACCOUNT;
        err = sw_buf_appendf(&b, "sa\n%s\n%s", be->vertex.credentials_file,
                             be->vertex.token_url ? be->vertex.token_url : "");
    } else if (vertex && be->vertex.token_command) {
        *kind = K_COMMAND;
        err = sw_buf_appendf(&b, "cmd\n%s\n%ld", be->vertex.token_command,
                             be->vertex.token_command_timeout_ms);
    } else if (be->dialect == SW_DIALECT_AZURE && be->azure.client_secret && be->azure.tenant_id &&
               be->azure.client_id) {
        *kind = K_CLIENT_CREDENTIALS;
        err = sw_buf_appendf(&b, "entra\n%s\n%s\n%s\n%s", be->azure.tenant_id, be->azure.client_id,
                             be->azure.client_secret, be->azure.token_url ? be->azure.token_url : "");
    } else {
        return NULL;
    }
    if (err) {
        sw_buf_free(&b);
        return NULL;
    }
    return b.ptr;
}

/* Reads the service account's key file into ts->sa (or ts->load_error). */
static void load_key_file(struct sw_token_source *ts, const char *path)
{
    FILE *f = fopen(path, "rb");
    char *buf = malloc(SW_OAUTH_BODY_MAX + 1), why[160] = "";
    size_t n = f && buf ? fread(buf, 1, SW_OAUTH_BODY_MAX + 1, f) : 0;
    if (f)
        fclose(f);
    if (!f)
        snprintf(why, sizeof why, "it cannot be read (%s)", strerror(errno));
    else if (!buf)
        snprintf(why, sizeof why, "out of memory");
    else if (n > SW_OAUTH_BODY_MAX)
        snprintf(why, sizeof why, "it is larger than %d bytes", SW_OAUTH_BODY_MAX);
    else
        sw_oauth_sa_parse(buf, n, &ts->sa, why, sizeof why);
    free(buf);
    if (why[0]) {
        snprintf(ts->load_error, sizeof ts->load_error, "vertex.credentials_file: %s", why);
        sw_warn("backend %s: %s", ts->backend, ts->load_error);
    }
}

static struct sw_token_source *source_new(struct event_base *base, struct sw_curlev *cev,
                                          const struct sw_config_backend *be, char *identity,
                                          enum kind kind)
{
    struct sw_token_source *ts = calloc(1, sizeof *ts);
    if (!ts)
        return NULL;
    ts->identity = identity;
    ts->kind = kind;
    ts->base = base;
    ts->cev = cev;
    ts->fd = -1;
    ts->backend = strdup(be->name);
    ts->command_timeout_ms = be->vertex.token_command_timeout_ms > 0 ? be->vertex.token_command_timeout_ms
                                                                     : 10000;
    struct sw_buf u;
    sw_buf_init(&u, 4096);
    if (kind == K_SERVICE_ACCOUNT) {
        load_key_file(ts, be->vertex.credentials_file);
        const char *url = be->vertex.token_url ? be->vertex.token_url : ts->sa.token_uri;
        ts->token_url = url ? strdup(url) : NULL;
    } else if (kind == K_CLIENT_CREDENTIALS) {
        if (!be->azure.token_url)
            sw_buf_appendf(&u, ENTRA_URL, be->azure.tenant_id);
        ts->token_url = be->azure.token_url ? strdup(be->azure.token_url) : u.ptr;
        u.ptr = NULL;
        ts->client_id = strdup(be->azure.client_id);
        ts->client_secret = strdup(be->azure.client_secret);
    } else {
        ts->command = strdup(be->vertex.token_command);
    }
    sw_buf_free(&u);
    if (!ts->backend || (kind != K_COMMAND && !ts->token_url && !ts->load_error[0]) ||
        (kind == K_COMMAND && !ts->command) ||
        (kind == K_CLIENT_CREDENTIALS && (!ts->client_id || !ts->client_secret)))
        snprintf(ts->load_error, sizeof ts->load_error, "out of memory");
    ts->next = registry;
    registry = ts;
    return ts;
}

struct sw_token_source *sw_token_source_for(struct event_base *base, struct sw_curlev *cev,
                                            const struct sw_config_backend *be)
{
    enum kind kind;
    char *id = identity_of(be, &kind);
    if (!id)
        return NULL;
    for (struct sw_token_source *ts = registry; ts; ts = ts->next)
        if (!strcmp(ts->identity, id) && ts->base == base) {
            free(id);
            return ts;
        }
    struct sw_token_source *ts = source_new(base, cev, be, id, kind);
    if (!ts)
        free(id);
    return ts;
}

void sw_token_registry_free(void)
{
    while (registry) {
        struct sw_token_source *ts = registry;
        registry = ts->next;
        if (ts->easy)
            sw_curlev_remove(ts->cev, ts->easy);
        http_clear(ts);
        command_clear(ts, true);
        sw_buf_free(&ts->answer);
        sw_oauth_sa_free(&ts->sa);
        free(ts->identity);
        free(ts->backend);
        free(ts->token_url);
        free(ts->client_id);
        free(ts->client_secret);
        free(ts->command);
        free(ts->token);
        free(ts);
    }
}
