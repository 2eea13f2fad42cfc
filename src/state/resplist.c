/* A response's input items, a page at a time: see resplist.h. */
#include "state/resplist.h"

#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "state/respitems.h"

struct list_call {
    struct sw_resp_page_query q;
    char after[SW_RESPSTORE_MAX_ID + 1];
    sw_respstore_list_fn cb;
    void *ud;
};

static void on_list_record(int err, const struct sw_resp_record *r, void *ud)
{
    struct list_call *c = ud;
    char *out = NULL;
    size_t len = 0;
    json_t *items = err ? NULL : sw_resp_record_input(r);
    if (!err)
        err = items ? sw_resp_input_page(items, &c->q, &out, &len) : SW_EINVAL;
    json_decref(items);
    c->cb(err, out, len, c->ud);
    free(out);
    free(c);
}

void sw_resp_list_input(struct sw_respstore *s, const char *id, const char *scope,
                        const struct sw_resp_page_query *q, sw_respstore_list_fn cb, void *ud)
{
    struct list_call *c = calloc(1, sizeof *c);
    if (!c) {
        cb(SW_ENOMEM, NULL, 0, ud);
        return;
    }
    c->q = *q;
    if (q->after) {
        if (strnlen(q->after, sizeof c->after) >= sizeof c->after) {
            free(c);
            cb(SW_EINVAL, NULL, 0, ud);
            return;
        }
        memcpy(c->after, q->after, strlen(q->after) + 1);
        c->q.after = c->after;
    }
    c->cb = cb;
    c->ud = ud;
    sw_respstore_get(s, id, scope, on_list_record, c);
}
