/* The JSON of the Responses API's conversation state: what a stored record
 * (state/respstore.h) holds, built from a finished response, and what is
 * read back from one (the Response object of GET /v1/responses/{id}, the
 * items a continued request is given). Pure: jansson only, no I/O, no clock.
 *
 * A record keeps the Response object without its `output` as `meta`, the
 * output items as `output`, and as `input` what the model was given: the
 * previous record's input and output items, then this request's own input,
 * as the request carried it; read back (sw_resp_record_input) as items
 * (a string as one user message), each with an `id`. `instructions`
 * are not items: they stay with the response that named them, as OpenAI
 * does (a continued request gives its own). */
#ifndef SW_STATE_RESPITEMS_H
#define SW_STATE_RESPITEMS_H

#include <jansson.h>
#include <stddef.h>

#include "state/respstore.h"

/* The stored Response object of r: its meta with `output` set to its output
 * items (a malloc'ed string in *out, *len). SW_OK, SW_EINVAL (a record whose
 * JSON does not read back), SW_ENOMEM. */
int sw_resp_record_object(const struct sw_resp_record *r, char **out, size_t *len);

/* The items a request continuing r is given before its own input (a new
 * array, caller decrefs; NULL on allocation failure or when r's JSON does
 * not read back): r's input items, then its output items without the
 * `reasoning` ones (a chat backend takes no reasoning back). */
json_t *sw_resp_prior_items(const struct sw_resp_record *r);

/* The input items of record r (a new array, caller decrefs; NULL when its
 * input does not read back as a string or an array, or on allocation
 * failure): its input as sw_resp_input_items makes it for r->id. A record
 * keeps the request's input as it came, so an agent's resent items are
 * copied (their text is the parse memo's), not rebuilt, when it is saved;
 * a record that kept the made items reads back the same (making them again
 * changes nothing). */
json_t *sw_resp_record_input(const struct sw_resp_record *r);

/* The input items a record of response resp_id stores (a new array, caller
 * decrefs; NULL on allocation failure or an input that is neither a string
 * nor an array): prior_input (may be NULL: the previous record's input
 * items), then prior_output (may be NULL), then input (a string: one user
 * message with an input_text part). Items without an `id` get one derived
 * from resp_id ("msg_<hex>_in<n>", "fc_..", "fco_..", "item_.." by type),
 * a message without `type` gets type "message", one without `status`
 * status "completed"; a message's string content becomes one input_text
 * (output_text for the assistant) part. Every item's id is distinct and at
 * most SW_RESPSTORE_MAX_ID bytes (one taken earlier in the list, or too
 * long, is replaced by "<prefix>_<hex>_at<i>", i its place), so a page
 * cursor names one item. Borrows everything. */
json_t *sw_resp_input_items(const json_t *prior_input, const json_t *prior_output,
                            const json_t *input, const char *resp_id);

/* A continued request's own body made whole: body's `input` (a string is
 * one user message) becomes prior's items (borrowed, referenced) followed by
 * it, so what is scanned, masked and sent to a backend of the Responses API
 * is the whole conversation. SW_OK, SW_EINVAL (body not an object, input
 * neither a string nor an array, prior not an array), SW_ENOMEM. */
int sw_resp_expand_input(json_t *body, const json_t *prior);

/* What a record stores of a finished Response object (borrowed): *meta the
 * object without `output`, *output its output array (both malloc'ed,
 * compact JSON). SW_OK, SW_EINVAL (not an object with an output array),
 * SW_ENOMEM. */
int sw_resp_split(const json_t *response, char **meta, size_t *meta_len, char **output,
                  size_t *output_len);

/* The page of items (an array, borrowed) q asks for, as a list object in a
 * malloc'ed string (*out, *out_len). SW_EINVAL when items is not an array
 * or q->after names no item; SW_ENOMEM. */
int sw_resp_input_page(const json_t *items, const struct sw_resp_page_query *q, char **out,
                       size_t *out_len);

#endif
