#include "dialect/oai_stream.h"

#include <stdlib.h>

#include "common/err.h"
#include "common/jdump.h"

int sw_oai_stream_chunk(const json_t *chunk, struct sw_buf *out)
{
    char *s = sw_json_dumps(chunk, JSON_COMPACT);
    if (!s)
        return SW_ENOMEM;
    int err = sw_buf_appendf(out, "data: %s\n\n", s);
    free(s);
    return err ? SW_ENOMEM : SW_OK;
}

int sw_oai_stream_finish(struct sw_buf *out)
{
    return sw_buf_append(out, "data: [DONE]\n\n", 14) ? SW_ENOMEM : SW_OK;
}

int sw_oai_stream_error(const char *code, const char *msg, struct sw_buf *out)
{
    json_t *ev = json_pack("{s:{s:s, s:s, s:n, s:s}}", "error", "message", msg, "type",
                           "server_error", "param", "code", code);
    char *s = ev ? sw_json_dumps(ev, JSON_COMPACT) : NULL;
    json_decref(ev);
    int err = s ? sw_buf_appendf(out, "data: %s\n\n", s) : SW_OK;
    free(s);
    if (!err)
        err = sw_oai_stream_finish(out);
    return err ? SW_ENOMEM : SW_OK;
}
