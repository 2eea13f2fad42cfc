/* A bounded, growable byte buffer (curl's curlx_dyn with its `toobig`).
 * Every buffer in Spillway has a named maximum; appending past it fails with
 * SW_ETOOBIG and leaves the buffer unchanged. The content is always kept
 * NUL-terminated (the NUL is not counted in len) so it can be handed to
 * parsers that want C strings. */
#ifndef SW_COMMON_BUF_H
#define SW_COMMON_BUF_H

#include <stddef.h>
#include <stdint.h>

struct sw_buf {
    char *ptr;      /* owned; NULL until the first append */
    size_t len;     /* bytes used, excluding the trailing NUL */
    size_t cap;     /* bytes allocated */
    size_t max;     /* largest len allowed */
};

/* A string slice that is not necessarily NUL-terminated (h2o's h2o_iovec_t). */
struct sw_str {
    const char *ptr;
    size_t len;
};

void sw_buf_init(struct sw_buf *b, size_t max);
/* Appends len bytes; SW_ETOOBIG past max, SW_ENOMEM on allocation failure. */
int sw_buf_append(struct sw_buf *b, const void *data, size_t len);
/* Makes room for extra more bytes (and the NUL) without appending: a writer
 * may then fill b->ptr + b->len up to extra bytes and add to b->len.
 * SW_OK, SW_ETOOBIG (past max) or SW_ENOMEM. */
int sw_buf_reserve(struct sw_buf *b, size_t extra);
/* The digits of v in base 10 or 16 (lower case), zero-padded to min_digits
 * (at most 20), into out (at least 21 bytes, not NUL-terminated); returns
 * how many. No printf: it runs on the hot path. */
size_t sw_fmt_u64(char *out, uint64_t v, unsigned base, int min_digits);
/* Copies s into out (cap > 0 bytes) as snprintf(out, cap, "%s", s) does: at
 * most cap - 1 bytes, then a NUL; returns how many bytes were copied. */
size_t sw_str_copy(char *out, size_t cap, const char *s);
/* Appends a C string; the decimal digits of v, zero-padded to min_digits. */
int sw_buf_append_str(struct sw_buf *b, const char *s);
int sw_buf_append_u64(struct sw_buf *b, uint64_t v, int min_digits);
int sw_buf_appendf(struct sw_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Drops the first n bytes (n <= len). */
void sw_buf_consume(struct sw_buf *b, size_t n);
void sw_buf_reset(struct sw_buf *b);
void sw_buf_free(struct sw_buf *b);

#endif
