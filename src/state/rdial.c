/* Holding a connection to Redis: see rdial.h. */
#include "state/rdial.h"

#include <event2/event.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <string.h>

#include "common/err.h"
#include "common/log.h"

#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 2000
#define CONNECT_TIMEOUT_MS 1000

static void on_retry(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct sw_rdial *d = arg;
    d->dial(d->owner);
}

static void on_deadline(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct sw_rdial *d = arg;
    sw_warn("%s: no connection to Redis %s:%d within %d ms", d->who, d->url->host, d->url->port,
            CONNECT_TIMEOUT_MS);
    d->expired(d->owner);
    sw_rdial_retry(d);
}

int sw_rdial_init(struct sw_rdial *d, struct event_base *base, const struct sw_rurl *url,
                  const char *who, void (*dial)(void *owner), void (*expired)(void *owner),
                  void *owner)
{
    *d = (struct sw_rdial){.base = base, .url = url, .who = who, .backoff_ms = BACKOFF_MIN_MS,
                           .dial = dial, .expired = expired, .owner = owner};
    d->retry = evtimer_new(base, on_retry, d);
    d->deadline = evtimer_new(base, on_deadline, d);
    return d->retry && d->deadline ? SW_OK : SW_ENOMEM;
}

void sw_rdial_free(struct sw_rdial *d)
{
    if (d->retry)
        event_free(d->retry);
    if (d->deadline)
        event_free(d->deadline);
    d->retry = d->deadline = NULL;
}

/* AUTH's answer: a refusal (WRONGPASS, an unknown ACL user) is logged; the
 * deadline retries. Redis's message never holds the password. */
static void on_auth(struct sw_rconn *c, void *reply, void *priv)
{
    (void)c;
    const struct sw_rdial *d = priv;
    const redisReply *r = reply;
    if (r && r->type == REDIS_REPLY_ERROR)
        sw_warn("%s: Redis %s:%d refused the connection: %.200s", d->who, d->url->host,
                d->url->port, r->str);
}

static int command(struct sw_rconn *c, sw_rconn_reply_fn cb, void *priv, int argc,
                   const char **argv)
{
    size_t lens[3];
    for (int i = 0; i < argc; i++)
        lens[i] = strlen(argv[i]);
    return sw_rconn_command(c, cb, priv, false, argc, argv, lens);
}

struct sw_rconn *sw_rdial_open(struct sw_rdial *d, struct sw_rtls *tls, const char *server_name,
                               sw_rconn_lost_fn lost, void *data, bool log_auth)
{
    const struct sw_rurl *u = d->url;
    struct sw_rconn *c = sw_rconn_new(d->base, u->host, u->port, tls, server_name, lost, data);
    if (!c)
        return NULL;
    sw_rconn_reply_fn auth_cb = log_auth ? on_auth : NULL;
    char db[16];
    snprintf(db, sizeof db, "%d", u->db);
    int err = 0;
    if (u->password[0] && u->user[0])
        err |= command(c, auth_cb, d, 3, (const char *[]){"AUTH", u->user, u->password});
    else if (u->password[0])
        err |= command(c, auth_cb, d, 2, (const char *[]){"AUTH", u->password});
    if (u->db)
        err |= command(c, NULL, NULL, 2, (const char *[]){"SELECT", db});
    if (err) {
        sw_rconn_free(c);
        return NULL;
    }
    return c;
}

void sw_rdial_started(struct sw_rdial *d)
{
    struct timeval tv = {CONNECT_TIMEOUT_MS / 1000, (CONNECT_TIMEOUT_MS % 1000) * 1000};
    evtimer_add(d->deadline, &tv);
}

void sw_rdial_connected(struct sw_rdial *d)
{
    evtimer_del(d->deadline);
    d->backoff_ms = BACKOFF_MIN_MS;
}

void sw_rdial_retry(struct sw_rdial *d)
{
    evtimer_del(d->deadline);
    if (evtimer_pending(d->retry, NULL))
        return;
    struct timeval tv = {d->backoff_ms / 1000, (d->backoff_ms % 1000) * 1000};
    evtimer_add(d->retry, &tv);
    d->backoff_ms = d->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : d->backoff_ms * 2;
}
