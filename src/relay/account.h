/* The account step of a relayed request: its one decision-log line and its
 * metrics (never prompt or answer text), written once when it ends. */
#ifndef SW_RELAY_ACCOUNT_H
#define SW_RELAY_ACCOUNT_H

#include "relay/proxy.h"

/* Records the request's decision (borrowed; nothing is changed). */
void sw_relay_record(const struct proxy *p);

/* The current attempt's backend cannot carry fields of the request (its
 * translation left them out): under translation.unsupported: drop (the
 * model's, else the file's) the attempt goes on without them, their names
 * logged and kept for the decision log and the metrics (p->a.dropped), and
 * true is returned; under reject, false (the backend is out for it). */
bool sw_relay_drop_fields(struct proxy *p);

/* The log line of fields left out for a backend (bits 1 << enum
 * sw_anth_field; names from a closed set, never the client's text). */
void sw_relay_log_dropped(const char *id, const char *backend, uint32_t bits);


#endif
