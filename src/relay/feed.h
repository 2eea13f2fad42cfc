/* The upstream's bytes into the current attempt (relay/feed.c). */
#ifndef SW_RELAY_FEED_H
#define SW_RELAY_FEED_H

#include <stddef.h>

#include "relay/proxy.h"

/* The upstream transfer's data callback (struct sw_upstream_cbs). ud: the proxy. */
size_t sw_relay_on_data(void *ud, const char *bytes, size_t len);
/* The SSE parser's event callback (sw_sse_init). ud: the proxy. */
int sw_relay_on_sse_event(void *ud, const char *event, const char *data, size_t len);
/* The event-stream decoder's message callback (sw_evs_init), for a backend
 * whose dialect frames its stream (ops->frame): the message as one event. */
int sw_relay_on_evs_message(void *ud, const struct sw_evs_message *m);

#endif
