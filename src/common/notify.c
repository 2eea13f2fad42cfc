/* Readiness notifications through libsystemd's sd_notify(3). Without
 * $NOTIFY_SOCKET (not started by systemd) it sends nothing, so the same
 * binary runs with or without a service manager. */
#include "common/notify.h"

#include <systemd/sd-daemon.h>

int sw_notify(const char *state)
{
    return sd_notify(0, state) < 0 ? -1 : 0;
}
