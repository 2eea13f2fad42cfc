#include "azure.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

int sw_llmsim_prefix_route(const char *prefix, const char *path, char *out, size_t cap)
{
    size_t pl = strlen(prefix);
    if (!strncmp(path, "/v1/", 4) || !strcmp(path, "/v1"))
        return -1;
    if (pl && !strncmp(path, prefix, pl) && path[pl] == '/') {
        int n = snprintf(out, cap, "/v1%s", path + pl);
        return n < 0 || (size_t)n >= cap ? -1 : 0;
    }
    int n = snprintf(out, cap, "%s", path);
    return n < 0 || (size_t)n >= cap ? -1 : 0;
}

/* api-version's value in a query string, or NULL. */
static const char *api_version(const char *query, size_t *len)
{
    static const char key[] = "api-version=";
    for (const char *q = query; q && *q;) {
        if (!strncmp(q, key, sizeof key - 1)) {
            q += sizeof key - 1;
            *len = strcspn(q, "&");
            return *len ? q : NULL;
        }
        q = strchr(q, '&');
        if (q)
            q++;
    }
    return NULL;
}

int sw_llmsim_azure_route(const char *path, const char *query, const char *deployment,
                          char *out, size_t cap, const char **code, const char **msg)
{
    static const char dep[] = "/openai/deployments/", v1[] = "/openai/v1/";
    size_t vlen = 0;
    const char *rest = NULL;
    *code = "404";
    *msg = "Resource not found";
    if (!strncmp(path, v1, sizeof v1 - 1)) {
        rest = path + sizeof v1 - 2;
    } else if (!strcmp(path, "/openai/models")) {
        rest = "/models";
        if (!api_version(query, &vlen)) {
            *code = "BadRequest";
            *msg = "Missing API version";
            return 400;
        }
    } else if (!strncmp(path, dep, sizeof dep - 1)) {
        const char *name = path + sizeof dep - 1;
        size_t nl = strcspn(name, "/");
        if (!name[nl])
            return 404;
        if (!api_version(query, &vlen)) {
            *code = "BadRequest";
            *msg = "Missing API version";
            return 400;
        }
        if (nl != strlen(deployment) || strncmp(name, deployment, nl)) {
            *code = "DeploymentNotFound";
            *msg = "The API deployment for this resource does not exist. If you created the "
                   "deployment within the last 5 minutes, please wait a moment and try again.";
            return 404;
        }
        rest = name + nl;
    } else if (!strncmp(path, "/v1/", 4) || !strcmp(path, "/v1")) {
        return 404;
    } else {
        rest = path; /* /health, /admin/...: llmsim's own */
        int n = snprintf(out, cap, "%s", rest);
        return n < 0 || (size_t)n >= cap ? 404 : 0;
    }
    int n = snprintf(out, cap, "/v1%s", rest);
    return n < 0 || (size_t)n >= cap ? 404 : 0;
}

bool sw_llmsim_azure_auth_ok(const char *api_key_hdr, const char *authorization,
                             const char *key)
{
    if (api_key_hdr)
        return !strcmp(api_key_hdr, key);
    return authorization && !strncmp(authorization, "Bearer ", 7) &&
           !strcmp(authorization + 7, key);
}

char *sw_llmsim_azure_error(int status, const char *code, const char *msg)
{
    json_t *e = json_pack("{s:s, s:s}", "code", code, "message", msg);
    if (e && !strcmp(code, "content_filter")) {
        json_object_set_new(e, "param", json_string("prompt"));
        json_object_set_new(e, "type", json_null());
        json_object_set_new(e, "status", json_integer(status));
        json_object_set_new(
            e, "innererror",
            json_pack("{s:s, s:{s:{s:b, s:s}, s:{s:b, s:s}}}", "code",
                      "ResponsibleAIPolicyViolation", "content_filter_result", "hate", "filtered",
                      1, "severity", "high", "violence", "filtered", 0, "severity", "safe"));
    }
    json_t *root = e ? json_pack("{s:o}", "error", e) : NULL;
    char *s = root ? json_dumps(root, JSON_COMPACT) : NULL;
    json_decref(root);
    return s;
}
