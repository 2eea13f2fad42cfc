/* Where a request's path lands among llmsim's own routes when it serves its
 * API under a prefix (--prefix) or as Azure OpenAI (--azure-key): the path
 * rewritten to the /v1/... llmsim routes, or the status and message of
 * Azure's own answer. Pure: no I/O. */
#ifndef SW_LLMSIM_AZURE_H
#define SW_LLMSIM_AZURE_H

#include <stdbool.h>
#include <stddef.h>

#define SW_LLMSIM_PREFIX_MAX 128
#define SW_LLMSIM_PATH_MAX 512

/* --prefix P: the API is served at P/... instead of /v1/... (P/chat/completions
 * is /v1/chat/completions); /v1/... itself is then not served. Paths outside
 * both (/health, /metrics, /admin/...) are kept. 0 and out filled, or -1:
 * not served (404). */
int sw_llmsim_prefix_route(const char *prefix, const char *path, char *out, size_t cap);

/* Azure's routing: /openai/deployments/{deployment}/{rel}?api-version=V
 * (deployment must be `deployment`, V present) or /openai/v1/{rel}, as
 * /v1/{rel}; /openai/models?api-version=V as /v1/models. Other /v1/...
 * paths are not Azure's. 0 and out filled; else the status (400, 404) with
 * *code and *msg in Azure's words. */
int sw_llmsim_azure_route(const char *path, const char *query, const char *deployment,
                          char *out, size_t cap, const char **code, const char **msg);

/* Azure's key check: the api-key header, or a bearer token, equal to key. */
bool sw_llmsim_azure_auth_ok(const char *api_key_hdr, const char *authorization,
                             const char *key);

/* Azure's error body: {"error":{"code":...,"message":...}} with, for a
 * content-filter refusal, param "prompt", status and innererror. */
char *sw_llmsim_azure_error(int status, const char *code, const char *msg);

#endif
