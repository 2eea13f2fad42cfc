#include "relay/stage.h"

#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>

static enum sw_stage_rc (*hook_of(const struct sw_stage *s, enum sw_stage_hook h))(
    struct sw_stage *, struct sw_stage_io *)
{
    switch (h) {
    case SW_STAGE_REQUEST:
        return s->ops->request;
    case SW_STAGE_EVENT:
        return s->ops->event;
    case SW_STAGE_ANSWER:
        return s->ops->answer;
    case SW_STAGE_END:
        return s->ops->end;
    }
    return NULL;
}

/* Stage i's hook h. For END, the chunks its end hook added pass at once
 * through the event hooks of the stages after it. */
static enum sw_stage_rc run_one(const struct sw_stage *stages, size_t n, size_t i,
                                enum sw_stage_hook h, struct sw_stage_io *io)
{
    struct sw_stage *s = (struct sw_stage *)&stages[i];
    enum sw_stage_rc (*f)(struct sw_stage *, struct sw_stage_io *) = hook_of(s, h);
    enum sw_stage_rc rc = f ? f(s, io) : SW_STAGE_OK;
    if (rc != SW_STAGE_OK) {
        io->at = i;
        return rc;
    }
    for (size_t j = i + 1; h == SW_STAGE_END && j < n && io->chunks &&
                           json_array_size(io->chunks) > 0; j++) {
        struct sw_stage *t = (struct sw_stage *)&stages[j];
        rc = t->ops->event ? t->ops->event(t, io) : SW_STAGE_OK;
        if (rc != SW_STAGE_OK) {
            io->at = j;
            return rc;
        }
    }
    return SW_STAGE_OK;
}

/* Runs stages from position `from` (in the hook's order: index from, from+1
 * ... for response hooks; from, from-1 ... for the request hook). */
static enum sw_stage_rc run_from(const struct sw_stage *stages, size_t n, enum sw_stage_hook h,
                                 struct sw_stage_io *io, size_t from)
{
    if (h == SW_STAGE_REQUEST) {
        for (size_t i = from; i-- > 0;) {
            enum sw_stage_rc rc = run_one(stages, n, i, h, io);
            if (rc != SW_STAGE_OK)
                return rc;
        }
        return SW_STAGE_OK;
    }
    for (size_t i = from; i < n; i++) {
        enum sw_stage_rc rc = run_one(stages, n, i, h, io);
        if (rc != SW_STAGE_OK)
            return rc;
    }
    return SW_STAGE_OK;
}

enum sw_stage_rc sw_stage_run(const struct sw_stage *stages, size_t n, enum sw_stage_hook h,
                              struct sw_stage_io *io)
{
    return run_from(stages, n, h, io, h == SW_STAGE_REQUEST ? n : 0);
}

enum sw_stage_rc sw_stage_resume(const struct sw_stage *stages, size_t n, enum sw_stage_hook h,
                                 struct sw_stage_io *io, enum sw_stage_rc rc)
{
    if (rc != SW_STAGE_OK)
        return rc;
    /* the request hook runs downwards: after stage at comes at - 1 */
    return run_from(stages, n, h, io, h == SW_STAGE_REQUEST ? io->at : io->at + 1);
}

void sw_stage_reset(const struct sw_stage *stages, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (stages[i].ops->reset)
            stages[i].ops->reset((struct sw_stage *)&stages[i]);
}

enum sw_stage_rc sw_stage_fail(struct sw_stage_io *io, int err, int status, const char *fmt, ...)
{
    io->verdict.err = err;
    io->verdict.status = status;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(io->verdict.msg, sizeof io->verdict.msg, fmt, ap);
    va_end(ap);
    return SW_STAGE_FAILOVER;
}

enum sw_stage_action sw_stage_action(enum sw_stage_rc rc, bool started)
{
    switch (rc) {
    case SW_STAGE_OK:
        return SW_ACT_GO_ON;
    case SW_STAGE_PENDING:
        return SW_ACT_WAIT;
    case SW_STAGE_FAILOVER:
        return started ? SW_ACT_END_STREAM : SW_ACT_NEXT_BACKEND;
    case SW_STAGE_REFUSE:
        return started ? SW_ACT_END_STREAM : SW_ACT_ANSWER_ERROR;
    }
    return SW_ACT_NEXT_BACKEND;
}

void sw_stage_io_clear(struct sw_stage_io *io)
{
    json_decref(io->body);
    free(io->text);
    json_decref(io->chunks);
    json_decref(io->native);
    json_decref(io->native_before);
    json_decref(io->answer);
    free(io->reply_owned);
    io->body = io->chunks = io->native = io->native_before = io->answer = NULL;
    io->text = io->reply_owned = NULL;
    sw_iovs_free(&io->parts);
}
