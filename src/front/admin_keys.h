/* The keys' and teams' usage for operators: GET /admin/keys, GET
 * /admin/keys/{id} (key_id, never the secret) and the spillway_key_* and
 * spillway_team_* families of GET /metrics, with a bounded number of label
 * values (docs/operations.md, docs/scaling.md "Keys and teams"). */
#ifndef SW_FRONT_ADMIN_KEYS_H
#define SW_FRONT_ADMIN_KEYS_H

#include <stddef.h>

#include "common/buf.h"
#include "front/internal.h"

/* At most this many key_id label values in /metrics: the keys that spent
 * most on this replica; the rest are summed under key_id="other". */
#define SW_ADMIN_KEYS_METRICS_MAX 50

/* Appends the key and team families to out. SW_OK or SW_ENOMEM. */
int sw_admin_keys_metrics(struct sw_front *f, struct sw_buf *out);

/* GET /admin/keys: every configured key and team, with its rules and usage. */
void sw_admin_keys(struct sw_front *f, struct sw_http_req *req);

/* GET /admin/keys/{id} (id is len bytes): one key; 404 when unknown. */
void sw_admin_key(struct sw_front *f, struct sw_http_req *req, const char *id, size_t len);

#endif
