/* The operator's endpoints: GET /metrics, GET /dashboard and the admin API
 * (every /admin/ path, authenticated with admin.key; see docs/operations.md). */
#ifndef SW_FRONT_ADMIN_H
#define SW_FRONT_ADMIN_H

#include <stdbool.h>
#include <stddef.h>

#include "front/internal.h"

/* Answers 404 (admin API disabled) or 401 and returns false unless the
 * request carries the admin key. */
bool sw_admin_authorized(struct sw_front *f, struct sw_http_req *req);

void sw_admin_metrics(struct sw_front *f, struct sw_http_req *req);
void sw_admin_dashboard(struct sw_front *f, struct sw_http_req *req);
void sw_admin_state(struct sw_front *f, struct sw_http_req *req);
void sw_admin_emergency(struct sw_front *f, struct sw_http_req *req);
void sw_admin_reload(struct sw_front *f, struct sw_http_req *req);
void sw_admin_decisions(struct sw_front *f, struct sw_http_req *req);
void sw_admin_thresholds(struct sw_front *f, struct sw_http_req *req);
/* GET /admin/series?window=S: the dashboard's charts (obs/series.h). */
void sw_admin_series(struct sw_front *f, struct sw_http_req *req);
/* Records one sample of the counters and gauges into f->series (once a second). */
void sw_admin_series_tick(struct sw_front *f);
/* POST /admin/breakers/{name}/reset: name is len bytes. */
void sw_admin_breaker_reset(struct sw_front *f, struct sw_http_req *req, const char *name,
                            size_t len);

#endif
