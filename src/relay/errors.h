/* The answers of a request no backend served, in the client's API: every
 * backend failed (503, or 504 past the deadline), the plan's structured
 * rejection, a request no backend's API could carry (400 naming the field),
 * and a backend's own 4xx passed through. Each sets the request's final
 * status (and rejection code) for the decision log; the loop then ends the
 * request. */
#ifndef SW_RELAY_ERRORS_H
#define SW_RELAY_ERRORS_H

#include "relay/proxy.h"

void sw_relay_reply_failed(struct proxy *p);
void sw_relay_reply_rejected(struct proxy *p);
void sw_relay_reply_untranslatable(struct proxy *p);
/* The current attempt's upstream answered a 4xx that is the request's. */
void sw_relay_reply_upstream_error(struct proxy *p);

#endif
