#include "upstream/upstream.h"

#include <stdlib.h>
#include <string.h>

#include "common/err.h"

int sw_upstream_start_on(struct sw_upstream *u, const struct sw_upstream_transport *t,
                         struct sw_curlev *cev, const struct sw_config_backend *be,
                         const char *path, const char *headers, char *body, size_t body_len,
                         const struct iovec *parts, int n_parts, long timeout_ms,
                         const char *trace_id, const struct sw_upstream_cbs *cbs, void *ud)
{
    memset(u, 0, sizeof *u);
    u->t = t;
    u->body = body;
    u->body_len = body_len;
    int err = n_parts < 0 ? SW_EINVAL
              : n_parts   ? sw_iovs_set(&u->parts, parts, n_parts)
                          : sw_iovs_set(&u->parts, &(struct iovec){body, body_len}, 1);
    if (err) {
        free(body);
        u->body = NULL;
        return err;
    }
    u->cev = cev;
    u->cbs = *cbs;
    u->ud = ud;
    u->retry_after_s = -1;
    err = t->start(u, be, path, headers, timeout_ms, trace_id);
    if (err)
        sw_upstream_cleanup(u);
    return err;
}

void sw_upstream_abort(struct sw_upstream *u)
{
    if (u->t)
        u->t->abort(u);
}

void sw_upstream_resume(struct sw_upstream *u)
{
    if (u->t)
        u->t->resume(u);
}

void sw_upstream_drop_sent(struct sw_upstream *u)
{
    if (u->t && u->t->drop_sent && u->running)
        u->t->drop_sent(u);
}

void sw_upstream_cleanup(struct sw_upstream *u)
{
    sw_upstream_abort(u);
    if (u->t)
        u->t->release(u);
    free(u->body);
    u->body = NULL;
    sw_iovs_free(&u->parts);
}
