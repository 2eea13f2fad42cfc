/* GET /v1/responses/{id}/input_items: a stored record's input items
 * (state/respitems.h reads them back), a page at a time. */
#ifndef SW_STATE_RESPLIST_H
#define SW_STATE_RESPLIST_H

#include "state/respstore.h"

/* The record's input items as
 * {"object":"list","data":[...],"first_id","last_id","has_more"}: q's page
 * of them, through cb once (SW_EINVAL: a record whose input does not read
 * back, or a cursor that names no item; the store's errors). */
void sw_resp_list_input(struct sw_respstore *s, const char *id, const char *scope,
                        const struct sw_resp_page_query *q, sw_respstore_list_fn cb, void *ud);

#endif
