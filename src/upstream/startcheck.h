/* The start-up check: one request to every backend when the daemon starts,
 * so that a wrong url, a refused api_key, an unknown model or a server that
 * is not running is named in a warning (and in GET /admin/state's
 * last_error) before the first client request fails on it. The check is
 * GET {url}/v1/models, or {url}/models after a path of its own (with the api_key): it costs nothing, loads no model,
 * and OpenAI, llama.cpp, vLLM and Ollama all serve it; a 200 must list the
 * backend's model. */
#ifndef SW_UPSTREAM_STARTCHECK_H
#define SW_UPSTREAM_STARTCHECK_H

#include <event2/event.h>

#include "state/live.h"
#include "upstream/curlev.h"

struct sw_startcheck;

/* Starts the checks of live's backends (live is referenced until they end).
 * NULL on allocation failure. */
struct sw_startcheck *sw_startcheck_new(struct sw_curlev *cev, struct sw_live *live);
/* Cancels the checks still running. */
void sw_startcheck_free(struct sw_startcheck *s);

/* The reason of a failed check from its outcome, "" when it passed. curl_rc
 * is a CURLcode, errbuf curl's message; body the answer (may be NULL). */
void sw_startcheck_verdict(const struct sw_config_backend *be, int curl_rc, const char *errbuf,
                           long status, const char *body, size_t body_len, char *out, size_t cap);

#endif
