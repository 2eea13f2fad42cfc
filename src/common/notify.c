/* The sd_notify protocol written out (systemd.io/NOTIFY, sd_notify(3)):
 * a datagram to the AF_UNIX socket in $NOTIFY_SOCKET, a path or, with a
 * leading '@', an abstract name. Thirty lines instead of a libsystemd
 * dependency, so the same binary runs with or without systemd. */
#include "common/notify.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int sw_notify(const char *state)
{
    const char *path = getenv("NOTIFY_SOCKET");
    if (!path || !path[0])
        return 0;
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    size_t len = strlen(path);
    if ((path[0] != '/' && path[0] != '@') || len >= sizeof sa.sun_path)
        return -1;
    memcpy(sa.sun_path, path, len);
    if (path[0] == '@')
        sa.sun_path[0] = '\0';
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    ssize_t n = sendto(fd, state, strlen(state), MSG_NOSIGNAL, (const struct sockaddr *)&sa,
                       (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len));
    close(fd);
    return n == (ssize_t)strlen(state) ? 0 : -1;
}
