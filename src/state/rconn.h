/* One connection to Redis on the daemon's event loop, plain TCP or TLS: the
 * transport of the shared state (rstate.c). hiredis only speaks the protocol
 * here (redisFormatCommandArgv encodes, a redisReader decodes); the bytes go
 * through a libevent bufferevent, an OpenSSL one for rediss://, so both
 * schemes share one code path.
 *
 * Replies arrive in the order the commands were sent: each command's
 * callback waits in a FIFO. A subscription's callback stays at the head and
 * receives every later message. When the connection fails or is freed,
 * every waiting callback is called once with a NULL reply. */
#ifndef SW_STATE_RCONN_H
#define SW_STATE_RCONN_H

#include <stdbool.h>
#include <stddef.h>

struct event_base;
struct sw_rconn;
struct sw_rtls;
struct sw_config_state_tls;

/* reply: a redisReply *, NULL when the connection is gone; valid during the call. */
typedef void (*sw_rconn_reply_fn)(struct sw_rconn *c, void *reply, void *priv);
/* The connection failed (connect, TLS handshake, I/O, protocol): why is a
 * short reason without secrets. The callbacks of pending commands have been
 * called; the owner frees c (it may do so inside this call). */
typedef void (*sw_rconn_lost_fn)(struct sw_rconn *c, const char *why, void *data);

/* TLS settings shared by a replica's connections (an SSL_CTX). NULL and a
 * reason in why when a file cannot be loaded. verify false: no certificate
 * check (the caller warns). */
struct sw_rtls *sw_rtls_new(const char *ca_file, const char *cert_file, const char *key_file,
                            bool verify, char *why, size_t why_cap);
void sw_rtls_free(struct sw_rtls *t);

/* Starts connecting to host:port; with tls, a TLS session whose certificate
 * is checked against server_name (a DNS name or an IP address). Commands may
 * be queued at once. NULL on failure to start. */
struct sw_rconn *sw_rconn_new(struct event_base *base, const char *host, int port,
                              struct sw_rtls *tls, const char *server_name, sw_rconn_lost_fn lost,
                              void *data);
/* Calls every pending callback with NULL (unless the connection already
 * failed) and closes. Safe inside any of c's callbacks. */
void sw_rconn_free(struct sw_rconn *c);
void *sw_rconn_data(const struct sw_rconn *c);

/* Queues a command (argv/lens borrowed: copied into the output buffer); cb
 * (may be NULL) gets its reply. subscribe: cb gets this reply and every later
 * one (SUBSCRIBE). 0, or -1 when it could not be queued (cb not called): the
 * connection failed, or 16 MiB are already waiting to be written. */
int sw_rconn_command(struct sw_rconn *c, sw_rconn_reply_fn cb, void *priv, bool subscribe,
                     int argc, const char **argv, const size_t *lens);

#endif
