/* The account step of a relayed request: its one decision-log line and its
 * metrics (never prompt or answer text), written once when it ends. */
#ifndef SW_RELAY_ACCOUNT_H
#define SW_RELAY_ACCOUNT_H

#include "relay/proxy.h"

/* Records the request's decision (borrowed; nothing is changed). */
void sw_relay_record(const struct proxy *p);

#endif
