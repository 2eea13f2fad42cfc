/* GET / DELETE of stored responses and their input items: see
 * responses_state.h. */
#include "front/responses_state.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/jfast.h"
#include "common/log.h"
#include "common/query.h"
#include "relay/reply.h"
#include "state/respitems.h"
#include "state/resplist.h"
#include "state/respstore.h"

static const char prefix[] = "/v1/responses/", items_suffix[] = "/input_items";

enum call_kind { CALL_GET, CALL_DELETE, CALL_ITEMS, CALL_PRIOR };

/* One call to the store. The store may answer later (Redis): the call
 * outlives a client that leaves (req NULL, the answer dropped) and counts in
 * flight meanwhile, so a drain waits for it. */
struct call {
    struct sw_front *f;
    struct sw_http_req *req;    /* NULL once the client left */
    enum call_kind kind;
    char id[SW_RESPSTORE_MAX_ID + 1];
    sw_front_resp_resume_fn resume; /* CALL_PRIOR */
    int64_t start_ms;
};

bool sw_front_resp_path(const char *path)
{
    return !strncmp(path, prefix, sizeof prefix - 1) && path[sizeof prefix - 1] != '\0';
}

/* Whether s (n bytes) has a valid id's characters only. */
static bool id_chars(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-'))
            return false;
    }
    return n > 0 && n <= SW_RESPSTORE_MAX_ID;
}

/* The id in path and whether it names the input items; false when the path
 * is neither form or the id cannot be one (too long, a character no id
 * has): that id exists nowhere. */
static bool parse_path(const char *path, char *id, size_t n, bool *items)
{
    const char *s = path + sizeof prefix - 1, *slash = strchr(s, '/');
    size_t len = slash ? (size_t)(slash - s) : strlen(s);
    *items = slash != NULL;
    if (slash && strcmp(slash, items_suffix) != 0)
        return false;
    if (len >= n || !id_chars(s, len))
        return false;
    memcpy(id, s, len);
    id[len] = '\0';
    return true;
}

bool sw_front_resp_method_ok(struct sw_http_req *req)
{
    const char *path = sw_http_path(req);
    size_t plen = strlen(path), slen = sizeof items_suffix - 1;
    bool items = plen > slen && !strcmp(path + plen - slen, items_suffix);
    enum sw_http_method m = sw_http_method(req);
    if (m == SW_HTTP_GET || m == SW_HTTP_HEAD || (m == SW_HTTP_DELETE && !items))
        return true;
    sw_reply_error(req, 405, "invalid_request_error", "method_not_allowed", NULL,
                   items ? "Method not allowed on /v1/responses/{id}/input_items; use GET."
                         : "Method not allowed on /v1/responses/{id}; use GET or DELETE.");
    return false;
}

/* ---- Answers ---- */

static void reply_not_found(struct sw_http_req *req, const char *id)
{
    if (id && id[0])
        sw_reply_error(req, 404, "invalid_request_error", NULL, NULL,
                       "Response with id '%s' not found.", id);
    else
        sw_reply_error(req, 404, "invalid_request_error", NULL, NULL, "Response not found.");
}

/* A store error (err != SW_OK) answered to req. */
static void reply_store_error(struct sw_http_req *req, const struct call *c, int err)
{
    if (err == SW_ENOTFOUND) {
        reply_not_found(req, c->id);
    } else if (err == SW_EUNAVAILABLE || err == SW_ETIMEOUT || err == SW_EIO ||
               err == SW_EPROTO) {
        const char *why = err == SW_ETIMEOUT ? "did not answer in time" : "is unreachable";
        sw_warn("responses: the response store (Redis) %s: a %s was answered 503", why,
                c->kind == CALL_DELETE ? "delete" : "read");
        sw_reply_error(req, 503, "server_error", "store_unavailable", NULL,
                       "The response store (Redis, state.redis) %s: stored responses cannot "
                       "be read or deleted until it is back. Retry later.", why);
    } else if (err == SW_EINVAL && c->kind == CALL_ITEMS) {
        sw_reply_error(req, 400, "invalid_request_error", "invalid_value", "after",
                       "after does not name an input item of this response.");
    } else {
        sw_reply_error(req, 500, "server_error", NULL, NULL,
                       "The stored response could not be read (%s).", sw_err_str(err));
    }
}

/* The store answered: the request (NULL when the client left) taken back
 * from the gone watch, to be answered before call_end. */
static struct sw_http_req *call_take(struct call *c)
{
    if (c->req)
        sw_http_on_gone(c->req, NULL, NULL);
    return c->req;
}

/* Frees c once answered; the request no longer counts in flight. */
static void call_end(struct call *c)
{
    if (c->req)
        sw_front_finished(c->f);
    free(c);
}

static void on_got(int err, const struct sw_resp_record *r, void *ud)
{
    struct call *c = ud;
    struct sw_http_req *req = call_take(c);
    if (req && err) {
        reply_store_error(req, c, err);
    } else if (req) {
        char *body = NULL;
        size_t len = 0;
        int jerr = sw_resp_record_object(r, &body, &len);
        if (jerr)
            reply_store_error(req, c, jerr); /* a record that does not read back: 500 */
        else
            sw_reply_json(req, 200, body, len);
        free(body);
    }
    call_end(c);
}

static void on_deleted(int err, void *ud)
{
    struct call *c = ud;
    struct sw_http_req *req = call_take(c);
    if (req && err) {
        reply_store_error(req, c, err);
    } else if (req) {
        char body[SW_RESPSTORE_MAX_ID + 64];
        int n = snprintf(body, sizeof body, "{\"id\":\"%s\",\"object\":\"response\","
                         "\"deleted\":true}", c->id);
        sw_reply_json(req, 200, body, (size_t)n);
    }
    call_end(c);
}

static void on_listed(int err, const char *json, size_t len, void *ud)
{
    struct call *c = ud;
    struct sw_http_req *req = call_take(c);
    if (req && err)
        reply_store_error(req, c, err);
    else if (req)
        sw_reply_json(req, 200, json, len);
    call_end(c);
}

static void on_gone(void *ud)
{
    struct call *c = ud;
    struct sw_front *f = c->f;
    c->req = NULL; /* the answer is dropped when it comes */
    sw_front_finished(f);
}

/* ---- Requests ---- */

static void on_prior(int err, const struct sw_resp_record *r, void *ud)
{
    struct call *c = ud;
    struct sw_http_req *req = call_take(c);
    if (req) {
        struct sw_resp_prior p = {.err = err, .start_ms = c->start_ms};
        memcpy(p.id, c->id, sizeof p.id);
        if (!err) {
            p.sensitive = r->sensitive;
            p.items = sw_resp_prior_items(r);
            if (!p.items)
                p.err = SW_ENOMEM;
        }
        c->resume(c->f, req, &p);
        json_decref(p.items);
    }
    call_end(c); /* after resume: the request is the relay's by now, still in flight */
}

/* OpenAI's list query of input_items: limit 1..100 (20), order asc|desc
 * (desc), after an item id. False when answered 400. */
static bool page_query(struct sw_http_req *req, struct sw_resp_page_query *q, char *after,
                       size_t n)
{
    const char *qs = sw_http_query(req);
    char v[32];
    *q = (struct sw_resp_page_query){.limit = 20};
    int err = sw_query_param(qs, "limit", v, sizeof v);
    if (err != SW_ENOTFOUND) {
        char *end;
        errno = 0;
        q->limit = strtol(v, &end, 10);
        if (err || errno || end == v || *end || q->limit < 1 || q->limit > 100) {
            sw_reply_error(req, 400, "invalid_request_error", "invalid_value", "limit",
                           "limit must be an integer from 1 to 100.");
            return false;
        }
    }
    err = sw_query_param(qs, "order", v, sizeof v);
    if (err != SW_ENOTFOUND) {
        if (err || (strcmp(v, "asc") && strcmp(v, "desc"))) {
            sw_reply_error(req, 400, "invalid_request_error", "invalid_value", "order",
                           "order must be asc or desc.");
            return false;
        }
        q->asc = !strcmp(v, "asc");
    }
    err = sw_query_param(qs, "after", after, n);
    if (err == SW_OK && after[0]) {
        q->after = after;
    } else if (err != SW_ENOTFOUND && err != SW_OK) {
        sw_reply_error(req, 400, "invalid_request_error", "invalid_value", "after",
                       "after does not name an input item of this response.");
        return false;
    }
    return true;
}

/* A new call for req, counted in flight and watched for the client leaving. */
static struct call *call_new(struct sw_front *f, struct sw_http_req *req, enum call_kind kind,
                             const char *id)
{
    struct call *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    *c = (struct call){.f = f, .req = req, .kind = kind};
    memcpy(c->id, id, strlen(id) + 1);
    f->in_flight++;
    sw_http_on_gone(req, on_gone, c);
    return c;
}

void sw_front_resp_state(struct sw_front *f, struct sw_http_req *req,
                         const struct sw_config_key *key)
{
    char id[SW_RESPSTORE_MAX_ID + 1];
    bool items;
    if (!parse_path(sw_http_path(req), id, sizeof id, &items)) {
        reply_not_found(req, NULL);
        return;
    }
    struct sw_respstore *store = f->live->g->resp;
    if (!store) {
        reply_not_found(req, id);
        return;
    }
    struct sw_resp_page_query q;
    char after[SW_RESPSTORE_MAX_ID + 1];
    if (items && !page_query(req, &q, after, sizeof after))
        return;
    enum call_kind kind = items ? CALL_ITEMS
                          : sw_http_method(req) == SW_HTTP_DELETE ? CALL_DELETE
                                                                  : CALL_GET;
    struct call *c = call_new(f, req, kind, id);
    if (!c) {
        sw_reply_error(req, 500, "server_error", NULL, NULL, "Out of memory.");
        return;
    }
    const char *scope = key ? key->name : "";
    if (c->kind == CALL_ITEMS)
        sw_resp_list_input(store, c->id, scope, &q, on_listed, c);
    else if (c->kind == CALL_DELETE)
        sw_respstore_delete(store, c->id, scope, on_deleted, c);
    else
        sw_respstore_get(store, c->id, scope, on_got, c);
}

/* ---- previous_response_id ---- */

bool sw_front_resp_prior(struct sw_front *f, struct sw_http_req *req,
                         const struct sw_config_key *key, const char *body, size_t len,
                         int64_t start_ms, sw_front_resp_resume_fn resume,
                         struct sw_jspan *input)
{
    static const char field[] = "previous_response_id";
    static const char *const keys[] = {field, "input"};
    struct sw_jspan sp[2];
    /* One walk of the top level (the body's syntax is the parse's to check:
     * on a malformed one the spans mean nothing, and the parse refuses it) */
    bool object = body && sw_jscan_members(body, len, keys, sp, NULL, 2);
    *input = object ? sp[1] : (struct sw_jspan){0};
    if (!object || !sp[0].len)
        return false; /* the usual case: no second parse */
    *input = (struct sw_jspan){0};
    json_error_t je;
    json_t *root = sw_json_load(body, len, 0, &je);
    json_t *v = json_object_get(root, field);
    struct sw_resp_prior p = {.err = SW_OK, .start_ms = start_ms};
    bool fetch = false;
    if (json_is_string(v)) {
        const char *s = json_string_value(v);
        size_t n = json_string_length(v);
        if (id_chars(s, n)) {
            memcpy(p.id, s, n);
            fetch = true;
        } else {
            p.err = SW_ENOTFOUND; /* no record has such an id */
        }
    } else if (v && !json_is_null(v)) {
        p.err = SW_EINVAL;
    }
    json_decref(root);
    if (!fetch && !p.err)
        return false;
    struct sw_respstore *store = f->live->g->resp;
    if (!fetch || !store) {
        if (!p.err)
            p.err = SW_ENOTFOUND;
        resume(f, req, &p);
        return true;
    }
    struct call *c = call_new(f, req, CALL_PRIOR, p.id);
    if (!c) {
        p.err = SW_ENOMEM;
        resume(f, req, &p);
        return true;
    }
    c->resume = resume;
    c->start_ms = start_ms;
    sw_respstore_get(store, c->id, key ? key->name : "", on_prior, c);
    return true;
}

void sw_front_resp_prior_error(const struct sw_resp_prior *prior, struct sw_request_error *e)
{
    int err = prior->err;
    if (err == SW_ENOTFOUND && prior->id[0])
        sw_request_error_set(e, 404, "invalid_request_error", "previous_response_not_found",
                             "previous_response_id", "Previous response with id '%s' not found.",
                             prior->id);
    else if (err == SW_ENOTFOUND)
        sw_request_error_set(e, 404, "invalid_request_error", "previous_response_not_found",
                             "previous_response_id", "Previous response not found.");
    else if (err == SW_EINVAL)
        sw_request_error_set(e, 400, "invalid_request_error", "invalid_type",
                             "previous_response_id",
                             "previous_response_id: expected a string (a response id) or null.");
    else if (err == SW_EUNAVAILABLE || err == SW_ETIMEOUT || err == SW_EIO || err == SW_EPROTO)
        sw_request_error_set(e, 503, "server_error", "store_unavailable", "previous_response_id",
                             "The response store (Redis, state.redis) %s: the previous response "
                             "cannot be read until it is back. Retry later.",
                             err == SW_ETIMEOUT ? "did not answer in time" : "is unreachable");
    else
        sw_request_error_set(e, 500, "server_error", NULL, NULL,
                             "The previous response could not be read (%s).", sw_err_str(err));
}

int sw_front_resp_continue(const struct sw_resp_prior *prior, struct sw_chat_request *chat)
{
    if (!prior || !prior->items || !chat->native)
        return SW_OK;
    return sw_resp_expand_input(chat->native, prior->items) == SW_ENOMEM ? SW_ENOMEM : SW_OK;
}
