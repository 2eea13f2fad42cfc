#include "relay/reply.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dialect/anth_resp.h"
#include "request/request.h"

void sw_reply_route_headers(struct sw_http_req *req, const char *backend, const char *tier,
                            const char *region, const char *reason)
{
    sw_http_set_header(req, "X-Spillway-Backend", backend);
    sw_http_set_header(req, "X-Spillway-Tier", tier);
    sw_http_set_header(req, "X-Spillway-Region", region ? region : "none");
    sw_http_set_header(req, "X-Spillway-Reason", reason);
}

void sw_reply_json(struct sw_http_req *req, int status, const char *body, size_t len)
{
    if (!sw_http_has_header_out(req, "X-Spillway-Backend"))
        sw_reply_route_headers(req, "none", "none", "none", "none");
    sw_http_reply(req, status, "application/json", body, len);
}

/* Whether path is prefix or below it (prefix + "/..."). */
static bool path_under(const char *path, const char *prefix, size_t n)
{
    return path && !strncmp(path, prefix, n) && (!path[n] || path[n] == '/');
}

bool sw_reply_is_anthropic(struct sw_http_req *req)
{
    static const char messages[] = "/v1/messages", models[] = "/v1/models";
    const char *path = sw_http_path(req);
    return path_under(path, messages, sizeof messages - 1) ||
           (path_under(path, models, sizeof models - 1) &&
            sw_http_header(req, "anthropic-version", NULL));
}

void sw_reply_error(struct sw_http_req *req, int status, const char *type,
                    const char *code, const char *param, const char *fmt, ...)
{
    struct sw_request_error e;
    char msg[sizeof e.message];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (sw_reply_is_anthropic(req)) {
        /* Anthropic's shape; its "overloaded" status where OpenAI's says 503. */
        if (status == 503)
            status = 529;
        sw_request_error_set(&e, status, type, code, param, "%s", msg);
        char *body = sw_anth_error_json(status, e.message);
        if (body)
            sw_reply_json(req, status, body, strlen(body));
        else
            sw_reply_json(req, 500, "{\"type\":\"error\",\"error\":{\"type\":\"api_error\","
                                    "\"message\":\"out of memory\"}}", 71);
        free(body);
        return;
    }
    /* One renderer of OpenAI's error shape: it also keeps the text valid UTF-8. */
    sw_request_error_set(&e, status, type, code, param, "%s", msg);
    char *body = sw_request_error_json(&e);
    if (body) {
        sw_reply_json(req, status, body, strlen(body));
    } else {
        static const char fallback[] =
            "{\"error\":{\"message\":\"out of memory\",\"type\":\"server_error\",\"param\":null,\"code\":null}}";
        sw_reply_json(req, 500, fallback, sizeof fallback - 1);
    }
    free(body);
}
