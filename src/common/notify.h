/* Readiness notifications to a service manager (systemd's sd_notify
 * protocol): one datagram to the unix socket named by $NOTIFY_SOCKET. */
#ifndef SW_COMMON_NOTIFY_H
#define SW_COMMON_NOTIFY_H

/* Sends `state` (e.g. "READY=1", newline-separated assignments). Does
 * nothing when NOTIFY_SOCKET is unset; returns 0 then or when sent, -1 if
 * it could not be sent (the daemon goes on: a missing notification only
 * delays the manager's view). */
int sw_notify(const char *state);

#endif
