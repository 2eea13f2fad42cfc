#include "config/rurl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(char *why, size_t cap, const char *msg)
{
    snprintf(why, cap, "%s", msg);
    return -1;
}

/* Percent-decodes [s, s+n) into out (cap bytes); -1 when bad or too long. */
static int decode(const char *s, size_t n, char *out, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '%') {
            if (i + 2 >= n)
                return -1;
            char hex[3] = {s[i + 1], s[i + 2], 0};
            char *end;
            long v = strtol(hex, &end, 16);
            if (*end || v <= 0)
                return -1;
            c = (char)v;
            i += 2;
        }
        if (o + 1 >= cap)
            return -1;
        out[o++] = c;
    }
    out[o] = 0;
    return 0;
}

static long number(const char *s, size_t n, long max)
{
    if (n == 0 || n > 10)
        return -1;
    long v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v <= max ? v : -1;
}

int sw_rurl_parse(const char *url, struct sw_rurl *out, char *why, size_t cap)
{
    *out = (struct sw_rurl){.port = 6379};
    if (!url)
        return fail(why, cap, "is empty");
    const char *s;
    if (!strncmp(url, "rediss://", 9)) {
        out->tls = true;
        s = url + 9;
    } else if (!strncmp(url, "redis://", 8)) {
        s = url + 8;
    } else {
        return fail(why, cap, "is not a redis:// or rediss:// URL "
                              "(redis[s]://[[USER]:PASSWORD@]HOST:PORT/DB)");
    }
    const char *end = s + strlen(s);
    const char *slash = strchr(s, '/');
    const char *auth_end = memchr(s, '@', (size_t)((slash ? slash : end) - s));
    /* the password may hold '@' and '/' only percent-encoded */
    if (auth_end) {
        const char *colon = memchr(s, ':', (size_t)(auth_end - s));
        if (!colon)
            return fail(why, cap, "has user info without a password (redis://:PASSWORD@HOST)");
        if (decode(s, (size_t)(colon - s), out->user, sizeof out->user))
            return fail(why, cap, "has a user name that is too long or badly percent-encoded");
        if (decode(colon + 1, (size_t)(auth_end - colon - 1), out->password, sizeof out->password))
            return fail(why, cap, "has a password that is too long or badly percent-encoded");
        s = auth_end + 1;
    }
    const char *host_end = slash ? slash : end;
    const char *hs = s, *he;
    const char *port_s = NULL;
    if (*s == '[') {
        he = memchr(s, ']', (size_t)(host_end - s));
        if (!he)
            return fail(why, cap, "has an unterminated [IPv6] address");
        hs = s + 1;
        if (he + 1 < host_end) {
            if (he[1] != ':')
                return fail(why, cap, "has junk after the [IPv6] address");
            port_s = he + 2;
        }
    } else {
        const char *colon = memchr(s, ':', (size_t)(host_end - s));
        he = colon ? colon : host_end;
        if (colon)
            port_s = colon + 1;
    }
    size_t hl = (size_t)(he - hs);
    if (hl == 0)
        return fail(why, cap, "has no host");
    if (hl >= sizeof out->host)
        return fail(why, cap, "has a host name that is too long");
    for (size_t i = 0; i < hl; i++)
        if ((unsigned char)hs[i] <= ' ' || hs[i] == '@' || hs[i] == '/')
            return fail(why, cap, "has an invalid host");
    memcpy(out->host, hs, hl);
    out->host[hl] = 0;
    if (port_s) {
        long p = number(port_s, (size_t)(host_end - port_s), 65535);
        if (p < 1)
            return fail(why, cap, "has an invalid port (1..65535)");
        out->port = (int)p;
    }
    if (slash && slash + 1 < end) {
        long db = number(slash + 1, (size_t)(end - slash - 1), 1000000);
        if (db < 0)
            return fail(why, cap, "has an invalid database number after the / (0, 1, ...)");
        out->db = (int)db;
    }
    return 0;
}
