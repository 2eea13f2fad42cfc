/* The simulator's HTTP side: a libevent evhttp server on one event loop that
 * speaks the OpenAI (plus llama.cpp extras) or Anthropic dialect, drives the
 * pure model (model.h) with one timer per active generation, injects the
 * faults (faults.h), and answers the evidence endpoints under /admin/. */
#ifndef SW_LLMSIM_SERVER_H
#define SW_LLMSIM_SERVER_H

#include <event2/event.h>

#include "opts.h"

struct sw_llmsim_server;

/* Binds o->host:o->port (0 = ephemeral) on base. Borrows base; copies *o.
 * Returns SW_OK or an error (message logged). */
int sw_llmsim_server_new(struct event_base *base, const struct sw_llmsim_opts *o,
                         struct sw_llmsim_server **out);
/* The bound port. */
int sw_llmsim_server_port(const struct sw_llmsim_server *s);
/* Drops every request in progress and frees the server. */
void sw_llmsim_server_free(struct sw_llmsim_server *s);

#endif
