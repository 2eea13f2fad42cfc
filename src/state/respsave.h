/* Storing a finished Responses answer (`store`, default true): the record
 * of state/respstore.h built from the client's request and the answer
 * object it got, put into the live state's store. Called once per request,
 * where the relay has the finished object (streamed or not). What is stored
 * is what the client sent and got (never the masked form), bounded by the
 * store; nothing of it is logged. */
#ifndef SW_STATE_RESPSAVE_H
#define SW_STATE_RESPSAVE_H

#include <jansson.h>
#include <stdbool.h>

#include "state/respstore.h"

/* Stores answer (a Response object, borrowed) unless request (the client's
 * Responses body as the front made it whole, prior items first; borrowed)
 * says `store: false`. input_raw: the bytes of request's `input` as the
 * client sent them (input_raw_len of them, borrowed), stored as they are;
 * NULL: the input is written from the tree (a body whose input the front
 * made whole). scope: the client key's name (NULL: auth off);
 * sensitive: the request was (a sensitive prior makes it so), kept for the
 * record's life. The put completes on its own (Redis answers later); a
 * refusal is counted by the store and logged without content. s NULL: no
 * store, nothing done. */
void sw_resp_save(struct sw_respstore *s, const char *scope, bool sensitive,
                  const json_t *request, const char *input_raw, size_t input_raw_len,
                  const json_t *answer);

#endif
