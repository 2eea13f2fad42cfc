/* The accounting of a relayed request: what an attempt may cost (reserved
 * before it is sent), what it did cost (its claim settled on the real usage,
 * its decision-log entry), and the request's one decision-log line and its
 * metrics (never prompt or answer text), written once when it ends. */
#ifndef SW_RELAY_ACCOUNT_H
#define SW_RELAY_ACCOUNT_H

#include "relay/proxy.h"

/* How an attempt ended, for its breaker and its decision-log entry:
 * neutral is neither (skipped, refused, left, or the client gone). */
enum sw_relay_outcome { SW_OUTCOME_OK, SW_OUTCOME_FAILED, SW_OUTCOME_NEUTRAL };

/* The most a cloud attempt on be can cost: the prompt's upper bound, and
 * without max_tokens the max_output_tokens sent upstream (as the local claim
 * reserves). A reservation of this bounds a cap across replicas, so it must
 * not fall short of the bill. */
double sw_relay_worst_usd(const struct proxy *p, const struct sw_config_backend *be);

/* Settles the current attempt (begun; the loop calls this once per
 * attempt): its decision-log entry and span end, its claim settled
 * (sw_claim_settle: the bucket and the spend on the real usage, the breaker
 * and the learned rates told the outcome, the local slot released, which
 * may start the next queued request), the shared state's hold and the
 * key's ledgers released at its cost; an ok one makes the request served
 * with its tokens and time to first byte. */
void sw_relay_settle(struct proxy *p, enum sw_relay_outcome o, int http_status,
                     int transport_err);

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
