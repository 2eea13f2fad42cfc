/* Holding a connection to Redis: what the shared state (rstate.c) and the
 * response store (respredis.c) do alike. A connection is opened logged in
 * (AUTH with the URL's user and password, SELECT its db) and given
 * CONNECT_TIMEOUT_MS to be usable; after a loss, or that deadline, it is
 * dialled again after a backoff (100 ms, doubling to 2 s, back to 100 ms
 * once connected). The owner says what usable means (its PING answered, a
 * SUBSCRIBE confirmed) and tears its connections down when the deadline
 * passes. Log lines name the owner (`who`) and the host, never a secret. */
#ifndef SW_STATE_RDIAL_H
#define SW_STATE_RDIAL_H

#include <stdbool.h>

#include "config/rurl.h"
#include "state/rconn.h"

struct event;
struct event_base;

struct sw_rdial {
    struct event_base *base;
    const struct sw_rurl *url;      /* borrowed from the owner */
    const char *who;                /* "state", "respstore" */
    struct event *retry, *deadline;
    long backoff_ms;
    void (*dial)(void *owner);      /* dial now: the backoff is over */
    void (*expired)(void *owner);   /* the deadline passed unconnected: tear down (a retry
                                       follows) */
    void *owner;
};

/* Sets d up (both callbacks required). SW_OK or SW_ENOMEM (d is then safe
 * to free). */
int sw_rdial_init(struct sw_rdial *d, struct event_base *base, const struct sw_rurl *url,
                  const char *who, void (*dial)(void *owner), void (*expired)(void *owner),
                  void *owner);
void sw_rdial_free(struct sw_rdial *d);

/* A connection to d->url (tls and server_name for rediss://, as
 * sw_rconn_new) with its login queued; a refused AUTH is logged when
 * log_auth (one of several connections to the same server logs it). NULL
 * when it cannot be started or the login cannot be queued. */
struct sw_rconn *sw_rdial_open(struct sw_rdial *d, struct sw_rtls *tls, const char *server_name,
                               sw_rconn_lost_fn lost, void *data, bool log_auth);

/* The owner's connections were opened: the deadline runs from now. */
void sw_rdial_started(struct sw_rdial *d);
/* They are usable: no deadline, the backoff back to its minimum. */
void sw_rdial_connected(struct sw_rdial *d);
/* Dial again after the backoff (a retry already pending stays). */
void sw_rdial_retry(struct sw_rdial *d);

#endif
