/* The live dashboard: one self-contained HTML page (src/obs/dashboard.html,
 * inline CSS and JS, no external resources) compiled into the binary. The
 * Makefile turns the file into build/gen/dashboard_html.h. The page polls
 * GET /admin/state, GET /admin/decisions?n=20, GET /admin/series?window=S
 * (with the admin key) and GET /metrics once a second. */
#ifndef SW_OBS_DASHBOARD_H
#define SW_OBS_DASHBOARD_H

#include <stddef.h>

/* The page (static storage, UTF-8, NUL-terminated); *len gets its length
 * without the NUL. Serve it as "text/html; charset=utf-8". */
const char *sw_dashboard_html(size_t *len);

#endif
