/* A Redis connection over a libevent bufferevent, plain or TLS: see rconn.h. */
#include "state/rconn.h"

#include <arpa/inet.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/dns.h>
#include <event2/event.h>
#include <event2/util.h>
#include <hiredis/hiredis.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

/* Bytes waiting to be written: past this Redis is not keeping up, and a
 * command is refused (the caller treats it as a failed round trip). */
#define MAX_PENDING_OUT (16u << 20)

struct sw_rtls {
    SSL_CTX *ctx;
    bool verify;
};

struct pending {
    struct pending *next;
    sw_rconn_reply_fn cb;
    void *priv;
    bool subscribe;
};

struct sw_rconn {
    struct event_base *base;
    struct sw_rtls *tls;        /* borrowed: outlives the connection */
    char name[256];             /* TLS: the name the certificate must carry */
    struct evutil_addrinfo *addrs, *next_addr; /* the host's addresses; the next to try */
    struct evdns_getaddrinfo_request *dns_req;  /* the host name being resolved */
    struct evbuffer *queued;    /* commands queued while the name resolves */
    bool starting;              /* inside sw_rconn_new */
    int dns_result;             /* a lookup that ended inside sw_rconn_new */
    bool connected;             /* TCP connected (TLS: handshake done) */
    struct bufferevent *bev;
    redisReader *reader;
    SSL *ssl;                   /* owned by bev once it exists */
    sw_rconn_lost_fn lost;
    void *data;
    struct pending *head, *tail;
    int busy;                   /* inside a callback of ours */
    bool failed;                /* pending callbacks were given NULL */
    bool freed;                 /* sw_rconn_free was called while busy */
};

static void ssl_why(char *why, size_t cap, const char *what)
{
    unsigned long e = ERR_get_error();
    char buf[256] = "unknown error";
    if (e)
        ERR_error_string_n(e, buf, sizeof buf);
    ERR_clear_error();
    snprintf(why, cap, "%s: %s", what, buf);
}

struct sw_rtls *sw_rtls_new(const char *ca_file, const char *cert_file, const char *key_file,
                            bool verify, char *why, size_t cap)
{
    struct sw_rtls *t = calloc(1, sizeof *t);
    if (!t) {
        snprintf(why, cap, "out of memory");
        return NULL;
    }
    t->verify = verify;
    t->ctx = SSL_CTX_new(TLS_client_method());
    if (!t->ctx) {
        ssl_why(why, cap, "TLS context");
        goto fail;
    }
    SSL_CTX_set_min_proto_version(t->ctx, TLS1_2_VERSION);
#ifdef SSL_OP_IGNORE_UNEXPECTED_EOF
    /* a server that dies without close_notify: an end of stream, as in plain text */
    SSL_CTX_set_options(t->ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
#endif
    if (ca_file ? SSL_CTX_load_verify_locations(t->ctx, ca_file, NULL) != 1
                : SSL_CTX_set_default_verify_paths(t->ctx) != 1) {
        ssl_why(why, cap, ca_file ? "state.tls.ca_file" : "the system CA store");
        goto fail;
    }
    if (cert_file && SSL_CTX_use_certificate_chain_file(t->ctx, cert_file) != 1) {
        ssl_why(why, cap, "state.tls.cert_file");
        goto fail;
    }
    if (key_file && (SSL_CTX_use_PrivateKey_file(t->ctx, key_file, SSL_FILETYPE_PEM) != 1 ||
                     SSL_CTX_check_private_key(t->ctx) != 1)) {
        ssl_why(why, cap, "state.tls.key_file");
        goto fail;
    }
    SSL_CTX_set_verify(t->ctx, verify ? SSL_VERIFY_PEER : SSL_VERIFY_NONE, NULL);
    return t;
fail:
    sw_rtls_free(t);
    return NULL;
}

void sw_rtls_free(struct sw_rtls *t)
{
    if (!t)
        return;
    if (t->ctx)
        SSL_CTX_free(t->ctx);
    free(t);
}

static bool is_ip(const char *s)
{
    unsigned char b[16];
    return inet_pton(AF_INET, s, b) == 1 || inet_pton(AF_INET6, s, b) == 1;
}

static int connect_next(struct sw_rconn *c);
static void on_read(struct bufferevent *bev, void *arg);
static void on_event(struct bufferevent *bev, short what, void *arg);

static void fail_pending(struct sw_rconn *c)
{
    c->failed = true;
    while (c->head) {
        struct pending *p = c->head;
        c->head = p->next;
        if (!c->head)
            c->tail = NULL;
        if (p->cb)
            p->cb(c, NULL, p->priv);
        free(p);
    }
}

static void destroy(struct sw_rconn *c)
{
    if (c->dns_req)
        evdns_getaddrinfo_cancel(c->dns_req); /* its callback sees EVUTIL_EAI_CANCEL */
    if (c->queued)
        evbuffer_free(c->queued);
    if (c->bev)
        bufferevent_free(c->bev);
    else if (c->ssl)
        SSL_free(c->ssl);
    if (c->addrs)
        evutil_freeaddrinfo(c->addrs);
    if (c->reader)
        redisReaderFree(c->reader);
    free(c);
}

/* The connection is unusable: NULL to the waiting callbacks, then the owner. */
static void lose(struct sw_rconn *c, const char *why)
{
    if (c->failed)
        return;
    c->busy++;
    fail_pending(c);
    if (!c->freed && c->lost)
        c->lost(c, why, c->data);
    c->busy--;
}

/* lose() from one of the loop's callbacks into this connection, which the
 * owner may have freed meanwhile: then it goes. */
static void lose_in_callback(struct sw_rconn *c, const char *why)
{
    lose(c, why);
    if (c->freed && c->busy == 0)
        destroy(c);
}

static void on_read(struct bufferevent *bev, void *arg)
{
    struct sw_rconn *c = arg;
    if (bev != c->bev)
        return;
    struct evbuffer *in = bufferevent_get_input(bev);
    char buf[16384];
    int n;
    c->busy++;
    while (!c->freed && !c->failed && (n = evbuffer_remove(in, buf, sizeof buf)) > 0) {
        if (redisReaderFeed(c->reader, buf, (size_t)n) != REDIS_OK) {
            lose(c, "a reply Redis sent could not be read");
            break;
        }
        for (;;) {
            void *reply = NULL;
            if (redisReaderGetReply(c->reader, &reply) != REDIS_OK) {
                lose(c, "Redis sent a malformed reply");
                break;
            }
            if (!reply)
                break;
            struct pending *p = c->head;
            if (p && !p->subscribe) {
                c->head = p->next;
                if (!c->head)
                    c->tail = NULL;
            }
            if (p && p->cb)
                p->cb(c, reply, p->priv);
            if (p && !p->subscribe)
                free(p);
            freeReplyObject(reply);
            if (c->freed || c->failed)
                break;
        }
    }
    c->busy--;
    if (c->freed && c->busy == 0)
        destroy(c);
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
    struct sw_rconn *c = arg;
    if (bev != c->bev)
        return; /* an address given up for the next one */
    if (what & BEV_EVENT_CONNECTED) {
        c->connected = true;
        return;
    }
    char why[300];
    if (what & BEV_EVENT_EOF) {
        snprintf(why, sizeof why, "closed by the server");
    } else if (c->ssl) {
        unsigned long e = bufferevent_get_openssl_error(bev);
        long vr = SSL_get_verify_result(c->ssl);
        if (vr != X509_V_OK)
            snprintf(why, sizeof why, "TLS: certificate not accepted: %s",
                     X509_verify_cert_error_string(vr));
        else if (e)
            snprintf(why, sizeof why, "TLS: %s", ERR_reason_error_string(e)
                                                     ? ERR_reason_error_string(e) : "error");
        else
            snprintf(why, sizeof why, "%s", evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()));
        while (bufferevent_get_openssl_error(bev))
            ;
    } else {
        snprintf(why, sizeof why, "%s", evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()));
    }
    if (!c->connected && c->next_addr && connect_next(c) == 0)
        return; /* another address of the host (e.g. ::1, then 127.0.0.1) */
    lose_in_callback(c, why);
}

/* A bufferevent (with a fresh SSL for TLS) connecting to the next address;
 * what was queued on the previous one moves over (nothing of it was sent:
 * that one never connected). 0, or -1 when no address is left. */
static int connect_next(struct sw_rconn *c)
{
    struct evbuffer *queued = evbuffer_new();
    if (!queued)
        return -1;
    if (c->queued)
        evbuffer_add_buffer(queued, c->queued);
    if (c->bev) {
        evbuffer_add_buffer(queued, bufferevent_get_output(c->bev));
        bufferevent_free(c->bev);
        c->bev = NULL;
        c->ssl = NULL;
    }
    int opts = BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS;
    while (c->next_addr) {
        struct evutil_addrinfo *ai = c->next_addr;
        c->next_addr = ai->ai_next;
        if (c->tls) {
            c->ssl = SSL_new(c->tls->ctx);
            if (!c->ssl)
                break;
            if (!is_ip(c->name) && SSL_set_tlsext_host_name(c->ssl, c->name) != 1)
                break;
            if (c->tls->verify) {
                X509_VERIFY_PARAM *vp = SSL_get0_param(c->ssl);
                X509_VERIFY_PARAM_set_hostflags(vp, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
                if ((is_ip(c->name) ? X509_VERIFY_PARAM_set1_ip_asc(vp, c->name)
                                    : X509_VERIFY_PARAM_set1_host(vp, c->name, 0)) != 1)
                    break;
            }
            c->bev = bufferevent_openssl_socket_new(c->base, -1, c->ssl,
                                                    BUFFEREVENT_SSL_CONNECTING, opts);
            if (c->bev)
                bufferevent_openssl_set_allow_dirty_shutdown(c->bev, 1);
        } else {
            c->bev = bufferevent_socket_new(c->base, -1, opts);
        }
        if (!c->bev)
            break;
        c->ssl = c->tls ? c->ssl : NULL; /* now owned by bev */
        bufferevent_setcb(c->bev, on_read, NULL, on_event, c);
        if (bufferevent_enable(c->bev, EV_READ | EV_WRITE) == 0 &&
            bufferevent_socket_connect(c->bev, ai->ai_addr, (int)ai->ai_addrlen) == 0) {
            evbuffer_add_buffer(bufferevent_get_output(c->bev), queued);
            evbuffer_free(queued);
            return 0;
        }
        bufferevent_free(c->bev); /* and its SSL */
        c->bev = NULL;
        c->ssl = NULL;
    }
    if (c->ssl && !c->bev)
        SSL_free(c->ssl);
    c->ssl = NULL;
    ERR_clear_error();
    evbuffer_free(queued);
    return -1;
}

/* The resolver of an event loop, made at its first use and kept (the
 * daemon has one loop); it does not keep the loop alive when idle. */
static struct evdns_base *dns_for(struct event_base *base)
{
    static struct event_base *owner;
    static struct evdns_base *dns;
    if (dns && owner == base)
        return dns;
    struct evdns_base *d = evdns_base_new(base, EVDNS_BASE_INITIALIZE_NAMESERVERS |
                                                    EVDNS_BASE_DISABLE_WHEN_INACTIVE);
    if (d) {
        owner = base;
        dns = d; /* an earlier loop's resolver is left to it */
    }
    return d;
}

static void on_resolved(int result, struct evutil_addrinfo *res, void *arg)
{
    struct sw_rconn *c = arg;
    if (result == EVUTIL_EAI_CANCEL)
        return; /* the connection is being freed */
    c->dns_req = NULL;
    c->addrs = res;
    c->next_addr = res;
    if (!res && result == 0)
        result = EVUTIL_EAI_FAIL;
    if (c->starting) {
        c->dns_result = result; /* sw_rconn_new goes on */
        return;
    }
    if (result == 0 && connect_next(c) == 0)
        return;
    char why[300];
    snprintf(why, sizeof why, "%s", result ? evutil_gai_strerror(result) : "could not connect");
    lose_in_callback(c, why);
}

struct sw_rconn *sw_rconn_new(struct event_base *base, const char *host, int port,
                              struct sw_rtls *tls, const char *server_name, sw_rconn_lost_fn lost,
                              void *data)
{
    struct sw_rconn *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->base = base;
    c->tls = tls;
    c->lost = lost;
    c->data = data;
    snprintf(c->name, sizeof c->name, "%s", server_name && server_name[0] ? server_name : host);
    c->reader = redisReaderCreate();
    if (!c->reader)
        goto fail;
    char ports[16];
    snprintf(ports, sizeof ports, "%d", port);
    struct evutil_addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                                    .ai_protocol = IPPROTO_TCP};
    /* An address is taken as it is; a name is resolved on the event loop
     * (evdns: /etc/hosts, then the resolv.conf name servers), never blocking
     * it. Every address is tried in turn. */
    if (is_ip(host)) {
        hints.ai_flags = EVUTIL_AI_NUMERICHOST;
        if (evutil_getaddrinfo(host, ports, &hints, &c->addrs) || !c->addrs)
            goto fail;
    } else {
        struct evdns_base *dns = dns_for(base);
        c->queued = evbuffer_new();
        if (!dns || !c->queued)
            goto fail;
        c->starting = true;
        c->dns_result = 1; /* still resolving */
        c->dns_req = evdns_getaddrinfo(dns, host, ports, &hints, on_resolved, c);
        c->starting = false;
        if (c->dns_result == 1)
            return c; /* on_resolved connects */
        if (c->dns_result != 0)
            goto fail;
    }
    c->next_addr = c->addrs;
    if (connect_next(c))
        goto fail;
    return c;
fail:
    destroy(c);
    return NULL;
}

void sw_rconn_free(struct sw_rconn *c)
{
    if (!c || c->freed)
        return;
    c->busy++;
    fail_pending(c);
    c->busy--;
    c->freed = true;
    if (c->busy == 0)
        destroy(c);
}

void *sw_rconn_data(const struct sw_rconn *c)
{
    return c->data;
}

int sw_rconn_command(struct sw_rconn *c, sw_rconn_reply_fn cb, void *priv, bool subscribe,
                     int argc, const char **argv, const size_t *lens)
{
    if (!c || c->freed || c->failed)
        return -1;
    struct evbuffer *out = c->bev ? bufferevent_get_output(c->bev) : c->queued;
    if (evbuffer_get_length(out) > MAX_PENDING_OUT)
        return -1;
    struct pending *p = calloc(1, sizeof *p);
    if (!p)
        return -1;
    char *cmd = NULL;
    int n = redisFormatCommandArgv(&cmd, argc, argv, lens);
    if (n < 0 || evbuffer_add(out, cmd, (size_t)n)) {
        if (n >= 0)
            redisFreeCommand(cmd);
        free(p);
        return -1;
    }
    redisFreeCommand(cmd);
    p->cb = cb;
    p->priv = priv;
    p->subscribe = subscribe;
    if (c->tail)
        c->tail->next = p;
    else
        c->head = p;
    c->tail = p;
    return 0;
}
