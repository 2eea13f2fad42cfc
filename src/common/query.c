#include "common/query.h"

#include <string.h>
#include <strings.h>

#include "common/err.h"

static int hex_digit(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c |= 0x20;
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Decodes v[0..n) into out[size]; SW_ETOOBIG when it does not fit. */
static int decode(const char *v, size_t n, char *out, size_t size)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        char c = v[i];
        int hi, lo;
        if (c == '+') {
            c = ' ';
        } else if (c == '%' && i + 2 < n &&
                   (hi = hex_digit((unsigned char)v[i + 1])) >= 0 &&
                   (lo = hex_digit((unsigned char)v[i + 2])) >= 0) {
            c = (char)(hi << 4 | lo);
            i += 2;
        }
        if (o + 1 >= size) {
            out[0] = '\0';
            return SW_ETOOBIG;
        }
        out[o++] = c;
    }
    out[o] = '\0';
    return SW_OK;
}

int sw_query_param(const char *q, const char *name, char *out, size_t size)
{
    size_t nl = strlen(name);
    if (size)
        out[0] = '\0';
    for (const char *p = q; p && *p;) {
        size_t part = strcspn(p, "&");
        const char *eq = memchr(p, '=', part);
        if (eq && (size_t)(eq - p) == nl && strncasecmp(p, name, nl) == 0) {
            if (!size)
                return SW_ETOOBIG;
            return decode(eq + 1, part - nl - 1, out, size);
        }
        p += part;
        if (*p == '&')
            p++;
    }
    return SW_ENOTFOUND;
}
