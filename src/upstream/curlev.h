/* libcurl's multi interface driven by a libevent loop (curl's
 * docs/examples/hiperfifo.c pattern): curl tells us which sockets to watch
 * and when to time out; libevent tells curl when they are ready. One multi
 * handle per process keeps the connection cache, so connections to each
 * backend are reused (keep-alive pools) across requests. */
#ifndef SW_UPSTREAM_CURLEV_H
#define SW_UPSTREAM_CURLEV_H

#include <curl/curl.h>
#include <event2/event.h>

struct sw_curlev;

/* Called once when a transfer added with sw_curlev_add finishes on its own
 * (success or failure). Not called for transfers removed with
 * sw_curlev_remove. The easy handle is already detached from the multi. */
typedef void (*sw_curlev_done_fn)(void *ud, CURLcode rc);

struct sw_curlev *sw_curlev_new(struct event_base *base, long max_total_connections);
void sw_curlev_free(struct sw_curlev *cev);

/* Starts a transfer. The caller keeps ownership of `easy` and must not free it
 * before on_done ran or sw_curlev_remove returned. */
int sw_curlev_add(struct sw_curlev *cev, CURL *easy, sw_curlev_done_fn on_done, void *ud);

/* Aborts a running transfer at once (its connection is closed, so the
 * upstream sees the abort). Safe to call from inside curl callbacks of other
 * transfers; from inside this transfer's own callbacks, return an error from
 * the callback instead. */
void sw_curlev_remove(struct sw_curlev *cev, CURL *easy);

/* The plain-HTTP/1.1 client's connection pools (src/upstream/h1.h), which
 * serve http:// backends on numeric addresses next to curl. */
struct sw_h1pool *sw_curlev_h1(struct sw_curlev *cev);

/* Number of transfers in progress. */
int sw_curlev_running(const struct sw_curlev *cev);

struct sw_config_backend;

/* A new easy handle for a request to backend `be` (borrowed): the URL
 * be->url followed by path, http and https only, no redirects, no signals,
 * the whole transfer bounded by timeout_ms (at least 1 ms: curl reads 0 as
 * no limit) and its connect by the backend's connect_timeout_ms (never past
 * timeout_ms), TLS checked as the backend says (verify or not, its CA
 * file). Every transfer to a backend (relay attempt, start-up check, health
 * and load polls) starts from it. The caller adds what its request needs
 * (method, headers, callbacks) and owns the handle (curl_easy_cleanup).
 * NULL when out of memory or the URL is too long. */
CURL *sw_curlev_easy(const struct sw_config_backend *be, const char *path, long timeout_ms);

/* Has curl open easy's sockets through Spillway (close-on-exec) and set
 * *sock_errno to the errno of a socket that could not be opened (0 when it
 * could): curl reports that only as "couldn't connect", and the gateway's
 * own limits (sw_errno_local_limit) must not count against a backend. */
void sw_curlev_note_socket_errno(CURL *easy, int *sock_errno);

/* Whether a transfer that ended with rc failed on the gateway's own limits:
 * curl could not connect because the socket noted in sock_errno could not
 * be opened. */
int sw_curlev_local_limit(CURLcode rc, int sock_errno);

#endif
