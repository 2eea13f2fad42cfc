#include "relay/st_auth.h"

#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/err.h"

static void on_token(struct sw_token_wait *w, const char *token, const char *why)
{
    struct sw_auth_stage *a = (struct sw_auth_stage *)((char *)w - offsetof(struct sw_auth_stage, w));
    struct sw_stage_io *io = a->io;
    a->io = NULL;
    enum sw_stage_rc rc = SW_STAGE_OK;
    if (!token)
        rc = sw_stage_fail(io, SW_ESTATUS, 503, "access token: %s", why ? why : "refresh failed");
    else if (!(a->token = strdup(token)))
        rc = sw_stage_fail(io, SW_ENOMEM, 0, "out of memory");
    if (rc)
        io->verdict.end_class = "token_refresh_failed";
    io->resume(io, rc);
}

static enum sw_stage_rc auth_request(struct sw_stage *st, struct sw_stage_io *io)
{
    struct sw_auth_stage *a = st->ctx;
    const char *why = NULL;
    free(a->token);
    a->token = NULL;
    a->w.done = on_token;
    int r = sw_token_get(a->ts, sw_now_ms(), &a->w, &a->token, &why);
    if (r == 1) {
        a->io = io;
        return SW_STAGE_PENDING;
    }
    if (r == 0)
        return SW_STAGE_OK;
    enum sw_stage_rc rc = sw_stage_fail(io, SW_ESTATUS, 503, "access token: %s",
                                        why ? why : "refresh failed");
    io->verdict.end_class = "token_refresh_failed";
    return rc;
}

void sw_auth_stage_free(struct sw_auth_stage *a)
{
    sw_token_cancel(a->ts, &a->w);
    a->io = NULL;
    free(a->token);
    a->token = NULL;
}

static void auth_reset(struct sw_stage *st)
{
    sw_auth_stage_free(st->ctx);
}

const struct sw_stage_ops sw_auth_stage_ops = {
    .name = "auth",
    .request = auth_request,
    .reset = auth_reset,
};
