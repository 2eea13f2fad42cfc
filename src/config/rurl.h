/* The Redis URL of `state.redis`: the config checks it, the shared state
 * (state/rstate.c) connects with it. Pure: no I/O, no clock, no allocation
 * beyond what the caller passes.
 *
 *   redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]     plain TCP
 *   rediss://[[USER]:PASSWORD@]HOST[:PORT][/DB]    TLS (state.tls)
 *
 * PORT defaults to 6379, DB to 0. USER (Redis 6 ACL) is optional: AUTH with
 * the password alone when absent. */
#ifndef SW_CONFIG_RURL_H
#define SW_CONFIG_RURL_H

#include <stdbool.h>
#include <stddef.h>

struct sw_rurl {
    char host[256];
    int port;
    bool tls;                   /* rediss:// */
    char user[128];             /* "" when none */
    char password[256];         /* "" when none */
    int db;
};

/* Parses url into *out. 0 on success; otherwise -1 and a message (never
 * containing the password) in why. */
int sw_rurl_parse(const char *url, struct sw_rurl *out, char *why, size_t why_cap);

#endif
