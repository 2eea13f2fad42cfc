#include "common/buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"

void sw_buf_init(struct sw_buf *b, size_t max)
{
    b->ptr = NULL;
    b->len = 0;
    b->cap = 0;
    b->max = max;
}

static int reserve(struct sw_buf *b, size_t extra)
{
    if (extra > b->max - b->len)
        return SW_ETOOBIG;
    size_t need = b->len + extra + 1;
    if (need <= b->cap)
        return SW_OK;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need)
        cap *= 2;
    char *p = realloc(b->ptr, cap);
    if (!p)
        return SW_ENOMEM;
    b->ptr = p;
    b->cap = cap;
    return SW_OK;
}

int sw_buf_reserve(struct sw_buf *b, size_t extra)
{
    return reserve(b, extra);
}

int sw_buf_append(struct sw_buf *b, const void *data, size_t len)
{
    int err = reserve(b, len);
    if (err)
        return err;
    if (len)
        memcpy(b->ptr + b->len, data, len);
    b->len += len;
    b->ptr[b->len] = '\0';
    return SW_OK;
}

size_t sw_str_copy(char *out, size_t cap, const char *s)
{
    size_t n = strnlen(s, cap - 1);
    memcpy(out, s, n);
    out[n] = '\0';
    return n;
}

int sw_buf_append_str(struct sw_buf *b, const char *s)
{
    return sw_buf_append(b, s, strlen(s));
}

size_t sw_fmt_u64(char *out, uint64_t v, unsigned base, int min_digits)
{
    static const char digits[] = "0123456789abcdef";
    char tmp[24];
    int n = 0;
    if (base == 10) { /* a constant divisor: multiplications, not divisions */
        do {
            tmp[n++] = (char)('0' + v % 10);
            v /= 10;
        } while ((v || n < min_digits) && n < 20);
        for (int i = 0; i < n; i++)
            out[i] = tmp[n - 1 - i];
        return (size_t)n;
    }
    do {
        tmp[n++] = digits[v % base];
        v /= base;
    } while ((v || n < min_digits) && n < 20);
    for (int i = 0; i < n; i++)
        out[i] = tmp[n - 1 - i];
    return (size_t)n;
}

int sw_buf_append_u64(struct sw_buf *b, uint64_t v, int min_digits)
{
    char tmp[24];
    return sw_buf_append(b, tmp, sw_fmt_u64(tmp, v, 10, min_digits));
}

int sw_buf_appendf(struct sw_buf *b, const char *fmt, ...)
{
    /* One pass when it fits in what is allocated; a second after growing. */
    va_list ap;
    size_t room = b->cap > b->len + 1 ? b->cap - b->len - 1 : 0;
    if (room > b->max - b->len)
        room = b->max - b->len;
    va_start(ap, fmt);
    int n = vsnprintf(room ? b->ptr + b->len : NULL, room ? room + 1 : 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return SW_EINVAL;
    if ((size_t)n <= room) {
        b->len += (size_t)n;
        return SW_OK;
    }
    if (b->ptr)
        b->ptr[b->len] = '\0';
    int err = reserve(b, (size_t)n);
    if (err)
        return err;
    va_start(ap, fmt);
    vsnprintf(b->ptr + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
    return SW_OK;
}

void sw_buf_consume(struct sw_buf *b, size_t n)
{
    if (n >= b->len) {
        b->len = 0;
    } else {
        memmove(b->ptr, b->ptr + n, b->len - n);
        b->len -= n;
    }
    if (b->ptr)
        b->ptr[b->len] = '\0';
}

void sw_buf_reset(struct sw_buf *b)
{
    b->len = 0;
    if (b->ptr)
        b->ptr[0] = '\0';
}

void sw_buf_free(struct sw_buf *b)
{
    free(b->ptr);
    sw_buf_init(b, b->max);
}
