/* Access tokens of a backend that authenticates with OAuth2 bearers: one
 * token source per set of credentials, shared by every request and every
 * config snapshot whose backend names the same credentials. Three kinds:
 *
 *   service account   vertex.credentials_file: an RS256 JWT signed with the
 *                     account's key (upstream/oauth.h) exchanged at its
 *                     token_uri (grant type jwt-bearer), scope cloud-platform
 *   client credentials  azure.tenant_id, client_id, client_secret: Entra ID's
 *                     /oauth2/v2.0/token, scope cognitiveservices .default
 *   token command     vertex.token_command: run through /bin/sh, its standard
 *                     output a token response (JSON) or the token itself
 *                     (then kept SW_TOKEN_COMMAND_TTL_S seconds)
 *
 * A token is cached until it expires and refreshed ahead of that (from
 * SW_TOKEN_AHEAD_S seconds before, or a quarter of its life when that is
 * shorter), on the event loop: the HTTP exchange is a transfer of the
 * upstream's curl multi handle, the command a child process whose output
 * the loop reads (killed past vertex.token_command_timeout_ms). While a
 * refresh runs, a request with no valid token waits for it
 * (sw_token_get answers pending and calls back); a failed refresh is
 * logged once per failure, counted, and answered to every waiter, and
 * for SW_TOKEN_RETRY_MS after it requests fail at once with the same
 * reason (the relay turns that into a 503 the breaker counts). No token or
 * secret is ever logged. docs/configuration.md has the settings. */
#ifndef SW_UPSTREAM_TOKEN_H
#define SW_UPSTREAM_TOKEN_H

#include <stdbool.h>
#include <stdint.h>

#include "config/config.h"

#define SW_TOKEN_AHEAD_S 300
#define SW_TOKEN_COMMAND_TTL_S 300
#define SW_TOKEN_RETRY_MS 1000
#define SW_TOKEN_EXCHANGE_TIMEOUT_MS 10000

struct event_base;
struct sw_curlev;
struct sw_token_source;

/* A request waiting for a refresh: linked into its source by sw_token_get,
 * unlinked before done is called (or by sw_token_cancel). done gets the
 * token (borrowed: copy it) or NULL and why. */
struct sw_token_wait {
    struct sw_token_wait *next;
    bool linked;
    void (*done)(struct sw_token_wait *w, const char *token, const char *why);
};

/* Counts of a source, for metrics and tests. */
struct sw_token_stats {
    long refreshes;             /* exchanges (or command runs) started */
    long failures;              /* ... that failed */
    long waits;                 /* requests that waited for one */
};

/* The token source of backend be (borrowed), made on first use in the
 * process-wide registry (base and cev are the loop and transfers it runs
 * on); NULL when be authenticates without one, or out of memory. */
struct sw_token_source *sw_token_source_for(struct event_base *base, struct sw_curlev *cev,
                                            const struct sw_config_backend *be);

/* The current token: 0 with *token malloc'ed (the caller frees it); 1:
 * pending, w is linked and called once the refresh ends; -1: failed, why
 * (static or the source's, valid until the next call) says why. now_ms:
 * the monotonic clock. */
int sw_token_get(struct sw_token_source *ts, int64_t now_ms, struct sw_token_wait *w,
                 char **token, const char **why);

/* Unlinks w if it waits (its done is not called). */
void sw_token_cancel(struct sw_token_source *ts, struct sw_token_wait *w);

void sw_token_stats(const struct sw_token_source *ts, struct sw_token_stats *out);

/* Frees every source (pending exchanges aborted, commands killed; waiters
 * are not called). At exit, after the loop has stopped. */
void sw_token_registry_free(void);

#endif
