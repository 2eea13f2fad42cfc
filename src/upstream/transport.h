/* The two transports of an upstream attempt (struct sw_upstream_transport,
 * upstream/upstream.h): the built-in HTTP/1.1 client (upstream/h1.h) and
 * libcurl's multi handle (upstream/curlev.h), and the choice between them
 * (sw_upstream_start is defined here). Another transport is one more table. */
#ifndef SW_UPSTREAM_TRANSPORT_H
#define SW_UPSTREAM_TRANSPORT_H

#include <stdbool.h>

#include "upstream/upstream.h"

extern const struct sw_upstream_transport sw_transport_h1;
extern const struct sw_upstream_transport sw_transport_curl;

/* The transport that serves url: the HTTP/1.1 client for plain HTTP on a
 * numeric address or localhost, curl for the rest. */
const struct sw_upstream_transport *sw_transport_for(struct sw_curlev *cev, const char *url);

#endif
