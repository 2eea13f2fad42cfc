#include "common/err.h"

#include <errno.h>

int sw_errno_local_limit(int e)
{
    return e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM || e == EADDRNOTAVAIL;
}

const char *sw_err_str(int err)
{
    switch ((enum sw_err)err) {
    case SW_OK: return "ok";
    case SW_ENOMEM: return "out_of_memory";
    case SW_EINVAL: return "invalid";
    case SW_ETOOBIG: return "too_big";
    case SW_ENOTFOUND: return "not_found";
    case SW_EIO: return "io_error";
    case SW_ECONNECT: return "connect_error";
    case SW_ELOCAL: return "local_limit";
    case SW_ETIMEOUT: return "timeout";
    case SW_ESTATUS: return "upstream_status";
    case SW_EPROTO: return "upstream_protocol";
    case SW_ECANCELED: return "canceled";
    case SW_EUNAVAILABLE: return "unavailable";
    }
    return "unknown";
}
