#include "relay/reply.h"

#include <event2/buffer.h>
#include <event2/keyvalq_struct.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "request/request.h"

void sw_reply_route_headers(struct evhttp_request *req, const char *backend,
                            const char *tier, const char *reason)
{
    struct evkeyvalq *h = evhttp_request_get_output_headers(req);
    evhttp_remove_header(h, "X-Spillway-Backend");
    evhttp_remove_header(h, "X-Spillway-Tier");
    evhttp_remove_header(h, "X-Spillway-Reason");
    evhttp_add_header(h, "X-Spillway-Backend", backend);
    evhttp_add_header(h, "X-Spillway-Tier", tier);
    evhttp_add_header(h, "X-Spillway-Reason", reason);
}

const char *sw_reply_status_text(int status)
{
    switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 413: return "Payload Too Large";
    case 415: return "Unsupported Media Type";
    case 429: return "Too Many Requests";
    case 500: return "Internal Server Error";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    default: return status < 400 ? "OK" : "Error";
    }
}

void sw_reply_json(struct evhttp_request *req, int status, const char *body, size_t len)
{
    struct evkeyvalq *h = evhttp_request_get_output_headers(req);
    if (!evhttp_find_header(h, "X-Spillway-Backend"))
        sw_reply_route_headers(req, "none", "none", "none");
    evhttp_remove_header(h, "Content-Type");
    evhttp_add_header(h, "Content-Type", "application/json");
    struct evbuffer *out = evbuffer_new();
    if (out)
        evbuffer_add(out, body, len);
    evhttp_send_reply(req, status, sw_reply_status_text(status), out);
    if (out)
        evbuffer_free(out);
}

void sw_reply_error(struct evhttp_request *req, int status, const char *type,
                    const char *code, const char *param, const char *fmt, ...)
{
    struct sw_request_error e;
    char msg[sizeof e.message];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
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
