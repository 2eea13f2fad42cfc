/* Which stages a request's attempts run, and their contexts. */
#ifndef SW_RELAY_STAGES_H
#define SW_RELAY_STAGES_H

#include <stdbool.h>

#include "relay/proxy.h"

/* The stages' request-wide contexts (after p's request fields are set). */
void sw_relay_stages_init(struct proxy *p);

/* The current attempt's stage list (p->a.stages), upstream side first, and
 * the attempt's parts of the contexts (reset). `own_api`: the request goes
 * in the client's own API. */
void sw_relay_stages_pick(struct proxy *p, bool own_api);

/* Whether an answer in a forced format tool (json_answer) is the content
 * (an OpenAI response_format, json_schema or json_object, sent to a backend
 * that asks for shapes with a tool). */
bool sw_relay_format_tool(const struct proxy *p);

#endif
