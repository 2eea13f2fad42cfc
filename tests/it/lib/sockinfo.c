/* sockinfo PID: the TCP sockets of process PID, one JSON object a line:
 *   {"fd":7,"local_port":8080,"peer_port":51234,"nodelay":1}
 * (peer_port 0: not connected, e.g. a listener). Each socket is borrowed with
 * pidfd_getfd(2) (Linux 5.6+; needs ptrace rights over PID: the test runs it
 * on a process it started) and read with getsockname/getpeername/getsockopt.
 * Exit 2 when the process's fds cannot be borrowed (the test then skips). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

static int port_of(const struct sockaddr_storage *ss)
{
    if (ss->ss_family == AF_INET)
        return ntohs(((const struct sockaddr_in *)ss)->sin_port);
    if (ss->ss_family == AF_INET6)
        return ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
    return -1;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: sockinfo PID\n");
        return 1;
    }
    int pid = atoi(argv[1]);
    int pfd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (pfd < 0) {
        fprintf(stderr, "sockinfo: pidfd_open %d: %s\n", pid, strerror(errno));
        return 2;
    }
    char dir[64];
    snprintf(dir, sizeof dir, "/proc/%d/fd", pid);
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "sockinfo: %s: %s\n", dir, strerror(errno));
        return 2;
    }
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char path[384], link[128];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        ssize_t n = readlink(path, link, sizeof link - 1);
        if (n <= 0)
            continue;
        link[n] = '\0';
        if (strncmp(link, "socket:", 7) != 0)
            continue;
        int fd = (int)syscall(SYS_pidfd_getfd, pfd, atoi(e->d_name), 0);
        if (fd < 0) {
            if (errno == EPERM || errno == ENOSYS) {
                fprintf(stderr, "sockinfo: pidfd_getfd: %s\n", strerror(errno));
                return 2;
            }
            continue; /* closed meanwhile */
        }
        int type = 0;
        socklen_t tl = sizeof type;
        struct sockaddr_storage me, peer;
        socklen_t ml = sizeof me, pl = sizeof peer;
        if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) == 0 && type == SOCK_STREAM &&
            getsockname(fd, (struct sockaddr *)&me, &ml) == 0 && port_of(&me) >= 0) {
            int peer_port = getpeername(fd, (struct sockaddr *)&peer, &pl) == 0 ? port_of(&peer) : 0;
            int nodelay = -1;
            socklen_t nl = sizeof nodelay;
            if (getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &nodelay, &nl) != 0)
                nodelay = -1;
            printf("{\"fd\":%s,\"local_port\":%d,\"peer_port\":%d,\"nodelay\":%d}\n", e->d_name,
                   port_of(&me), peer_port, nodelay);
        }
        close(fd);
    }
    closedir(d);
    return 0;
}
