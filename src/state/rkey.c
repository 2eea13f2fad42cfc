#include "state/rkey.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int sw_rkey(char *buf, size_t cap, const char *prefix, const char *what, const char *arg)
{
    int n = arg ? snprintf(buf, cap, "%s%s:%s", prefix, what, arg)
                : snprintf(buf, cap, "%s%s", prefix, what);
    return n < 0 || (size_t)n >= cap ? -1 : n;
}

long long sw_rkey_window_start(long long wall_ms, long long window_ms)
{
    if (window_ms <= 0)
        return 0;
    long long q = wall_ms / window_ms;
    if (wall_ms % window_ms != 0 && wall_ms < 0)
        q--;
    return q * window_ms;
}

bool sw_rkey_parse_queue(const char *s, long *n, long long *expiry_ms)
{
    if (!s)
        return false;
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || *end != ' ' || v < 0)
        return false;
    const char *e = end + 1;
    long long x = strtoll(e, &end, 10);
    if (end == e || *end)
        return false;
    *n = v;
    *expiry_ms = x;
    return true;
}
