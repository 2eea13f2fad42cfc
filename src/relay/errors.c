#include "relay/errors.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"
#include "relay/wait.h"

void sw_relay_reply_failed(struct proxy *p)
{
    bool deadline = p->any_timeout && sw_now_ms() >= p->deadline_ms;
    p->rej_code = deadline ? "deadline_exceeded" : "all_backends_failed";
    p->final_status = deadline ? 504 : 503;
    if (deadline) {
        sw_reply_error(p->req, 504, "timeout_error", "deadline_exceeded", NULL,
                       "No backend answered within the request deadline (%s).",
                       sw_relay_failures(p));
    } else {
        if (p->retry_after_s >= 0) {
            char v[24];
            snprintf(v, sizeof v, "%ld", p->retry_after_s);
            sw_http_add_header(p->req, "Retry-After", v);
        }
        sw_reply_error(p->req, 503, "server_error", "all_backends_failed", NULL,
                       "Every backend for model '%s' failed (%s). The gateway's log and GET "
                       "/admin/state (each backend's last_error) say why.",
                       p->public_model, sw_relay_failures(p));
    }
    sw_warn("request %s: all backends failed: %s", p->id, sw_relay_failures(p));
}

/* The backends tried could not carry the request, and no other may take
 * it: the field is what the client must change. */
void sw_relay_reply_untranslatable(struct proxy *p)
{
    p->final_status = 400;
    p->rej_code = "untranslatable";
    sw_reply_error(p->req, 400, p->cannot->type, p->cannot->code,
                   p->cannot->param[0] ? p->cannot->param : NULL, "%s (%s)",
                   p->cannot->message, sw_relay_failures(p));
    sw_info("request %s: rejected untranslatable (%s)", p->id, p->cannot->code);
}

void sw_relay_reply_rejected(struct proxy *p)
{
    const struct sw_route_plan *pl = &p->plan;
    long retry = pl->retry_after_s >= 0 ? pl->retry_after_s : p->retry_after_s;
    if (retry >= 0) {
        char v[24];
        snprintf(v, sizeof v, "%ld", retry);
        sw_http_add_header(p->req, "Retry-After", v);
    }
    int status = pl->status ? pl->status : 503;
    p->rej_code = pl->code ? pl->code : "all_backends_failed";
    /* None was tried: say what each backend's state is and why, so the
     * answer points at the cause (a wrong url, a server that is not up). */
    char *f;
    if (!sw_relay_failures(p)[0] && p->snap && !strcmp(p->rej_code, "all_backends_failed") &&
        (f = sw_relay_failures_buf(p)))
        sw_relay_describe_backends(p->live, p->snap, f, SW_RELAY_FAILURES_MAX);
    const char *failed = sw_relay_failures(p);
    p->final_status = status;
    /* What to do next: when to retry, or where to look. */
    char next[160] = "";
    if (retry >= 0)
        snprintf(next, sizeof next, " Retry in %ld s (the Retry-After header)%s.", retry,
                 !strcmp(p->rej_code, "budget_exhausted") && !p->tenant_rejected &&
                         !p->facts.tenant_budget_out
                     ? "; routing.spend.cap_usd in the gateway's config sets the cap" : "");
    else if (!strcmp(p->rej_code, "all_backends_failed"))
        snprintf(next, sizeof next, " GET /admin/state shows each backend's state and last_error.");
    sw_reply_error(p->req, status,
                   status == 429   ? "rate_limit_error"
                   : status < 500 ? "invalid_request_error"
                                  : "server_error",
                   pl->code ? pl->code : "all_backends_failed", NULL, "%s%s%s%s%s", pl->message,
                   failed[0] ? " (" : "", failed, failed[0] ? ")" : "", next);
    sw_info("request %s: rejected %s (%d)", p->id, pl->code ? pl->code : "-", status);
}

void sw_relay_reply_upstream_error(struct proxy *p)
{
    long status = p->up.status;
    json_error_t jerr;
    json_t *body = json_loadb(p->resp.ptr ? p->resp.ptr : "", p->resp.len, 0, &jerr);
    p->final_status = (int)status;
    sw_relay_route_headers(p);
    const char *name = sw_relay_backend(p)->name;
    const struct sw_upstream_dialect *ud = sw_upstream_dialect(p->a.up_dialect);
    const json_t *emsg = json_object_get(json_object_get(body, "error"), "message");
    if (!emsg && ud->error_message)
        emsg = ud->error_message(body);
    bool same = p->client_dialect == SW_DIALECT_OPENAI && p->a.up_dialect == SW_DIALECT_OPENAI;
    /* Azure's errors are OpenAI's with its own codes: content_filter (a prompt
     * its filter refused) is kept, innererror and the rest are not */
    const char *ecode = p->a.up_dialect == SW_DIALECT_AZURE
                            ? json_string_value(json_object_get(json_object_get(body, "error"), "code"))
                            : NULL;
    if (!same && json_is_string(emsg)) {
        /* Another API's error, or a client of another API: its message in
         * the client's shape. */
        sw_reply_error(p->req, (int)status, "invalid_request_error",
                       ecode && !strcmp(ecode, "content_filter") ? "content_filter" : "upstream_rejected", NULL,
                       "%s", json_string_value(emsg));
    } else if (body && p->client_dialect == SW_DIALECT_OPENAI &&
               json_is_object(json_object_get(body, "error"))) {
        char *s = json_dumps(body, JSON_COMPACT);
        if (s)
            sw_reply_json(p->req, (int)status, s, strlen(s));
        else
            sw_reply_error(p->req, (int)status, "invalid_request_error", "upstream_rejected",
                           NULL, "Backend '%s' rejected the request with status %ld.", name,
                           status);
        free(s);
    } else {
        sw_reply_error(p->req, (int)status, "invalid_request_error", "upstream_rejected", NULL,
                       "Backend '%s' rejected the request with status %ld.", name, status);
    }
    json_decref(body);
    sw_info("request %s: %s rejected the request with %ld", p->id, name, status);
}
