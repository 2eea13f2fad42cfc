/* One error enum for the whole daemon (curl's CURLcode, Redis' C_ERR).
 * SW_OK is 0 so `if (err) goto fail;` reads naturally. Upstream failures keep
 * distinct codes because they map to different client statuses (502/503/504)
 * and to the circuit breaker's notion of a qualifying failure. */
#ifndef SW_COMMON_ERR_H
#define SW_COMMON_ERR_H

enum sw_err {
    SW_OK = 0,
    SW_ENOMEM,          /* allocation failed */
    SW_EINVAL,          /* invalid input (request, config, argument) */
    SW_ETOOBIG,         /* a bounded buffer would exceed its maximum */
    SW_ENOTFOUND,       /* unknown name (model, backend, key) */
    SW_EIO,             /* local I/O error (file, socket) */
    SW_ECONNECT,        /* upstream connection refused / unreachable */
    SW_ELOCAL,          /* the gateway's own limit (open files, ports, memory) kept an
                           upstream connection from opening: nothing said of the upstream */
    SW_ETIMEOUT,        /* a deadline passed */
    SW_ESTATUS,         /* upstream answered with a non-2xx status */
    SW_EPROTO,          /* upstream answered something we cannot parse */
    SW_ECANCELED,       /* the client went away */
    SW_EUNAVAILABLE     /* nothing can serve the request */
};

/* Stable short name of an error code, e.g. "timeout". Never NULL. */
const char *sw_err_str(int err);

/* Whether errno e from socket, connect or accept says this process or host
 * is out of something of its own (descriptors, ephemeral ports, buffers,
 * memory) rather than anything about the peer: SW_ELOCAL, not a verdict on
 * a backend. */
int sw_errno_local_limit(int e);

#endif
