#include "common/evstream.h"

#include <pthread.h>
#include <string.h>

#include "common/err.h"

/* ---- CRC32 ---- */

/* The reflected IEEE polynomial, a byte at a time from a table made on
 * first use (256 entries; the framing's CRCs cover a few hundred bytes). */
static uint32_t crc_table[256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        crc_table[i] = c;
    }
}

uint32_t sw_evs_crc32(uint32_t crc, const void *p, size_t n)
{
    pthread_once(&crc_once, crc_init);
    const unsigned char *s = p;
    crc = ~crc;
    for (size_t i = 0; i < n; i++)
        crc = crc_table[(crc ^ s[i]) & 0xff] ^ (crc >> 8);
    return ~crc;
}

static uint32_t be32(const char *p)
{
    const unsigned char *u = (const unsigned char *)p;
    return (uint32_t)u[0] << 24 | (uint32_t)u[1] << 16 | (uint32_t)u[2] << 8 | u[3];
}

static uint64_t be_n(const char *p, size_t n)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v = v << 8 | (unsigned char)p[i];
    return v;
}

/* ---- One message ---- */

/* The prelude at p (12 bytes): its CRC and lengths checked, the total out. */
static int prelude(const char *p, size_t max_message, uint32_t *total, const char **why)
{
    uint32_t t = be32(p), h = be32(p + 4);
    if (sw_evs_crc32(0, p, 8) != be32(p + 8)) {
        *why = "event-stream prelude CRC mismatch";
        return SW_EPROTO;
    }
    if (t < SW_EVS_MIN_MESSAGE || h > SW_EVS_HEADERS_MAX || h > t - SW_EVS_MIN_MESSAGE) {
        *why = "event-stream message lengths out of bounds";
        return SW_EPROTO;
    }
    if (t > max_message) {
        *why = "event-stream message larger than allowed";
        return SW_ETOOBIG;
    }
    *total = t;
    return SW_OK;
}

static void name_header(struct sw_evs_message *m, const struct sw_evs_header *h)
{
    static const struct {
        const char *name;
        size_t off;
    } known[] = {
        {":message-type", offsetof(struct sw_evs_message, message_type)},
        {":event-type", offsetof(struct sw_evs_message, event_type)},
        {":exception-type", offsetof(struct sw_evs_message, exception_type)},
        {":error-code", offsetof(struct sw_evs_message, error_code)},
        {":error-message", offsetof(struct sw_evs_message, error_message)},
        {":content-type", offsetof(struct sw_evs_message, content_type)},
    };
    if (h->type != SW_EVS_STRING)
        return;
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (h->name.len == strlen(known[i].name) &&
            !memcmp(h->name.ptr, known[i].name, h->name.len)) {
            *(struct sw_str *)((char *)m + known[i].off) = h->value;
            return;
        }
}

/* One header at p[0..n): its length consumed, or 0 when it does not parse. */
static size_t header(const char *p, size_t n, struct sw_evs_header *h)
{
    static const signed char fixed[] = {0, 0, 1, 2, 4, 8, -1, -1, 8, 16};
    if (n < 1 || (unsigned char)p[0] == 0 || n < 2u + (unsigned char)p[0])
        return 0;
    size_t nl = (unsigned char)p[0], i = 1 + nl;
    h->name = (struct sw_str){p + 1, nl};
    unsigned type = (unsigned char)p[i++];
    if (type > SW_EVS_UUID)
        return 0;
    h->type = (enum sw_evs_type)type;
    size_t vl;
    if (fixed[type] >= 0) {
        vl = (size_t)fixed[type];
    } else {
        if (n - i < 2)
            return 0;
        vl = (size_t)be_n(p + i, 2);
        i += 2;
    }
    if (n - i < vl)
        return 0;
    h->value = (struct sw_str){p + i, vl};
    h->num = type == SW_EVS_TRUE ? 1 : 0;
    if (type == SW_EVS_BYTE)
        h->num = (int8_t)p[i];
    else if (type == SW_EVS_SHORT)
        h->num = (int16_t)be_n(p + i, 2);
    else if (type == SW_EVS_INT)
        h->num = (int32_t)be_n(p + i, 4);
    else if (type == SW_EVS_LONG || type == SW_EVS_TIMESTAMP)
        h->num = (int64_t)be_n(p + i, 8);
    return i + vl;
}

int sw_evs_decode(const char *buf, size_t len, struct sw_evs_message *m, const char **why)
{
    uint32_t total;
    memset(m, 0, sizeof *m);
    if (len < SW_EVS_MIN_MESSAGE) {
        *why = "event-stream message shorter than its prelude";
        return SW_EPROTO;
    }
    int err = prelude(buf, len, &total, why);
    if (err || total != len) {
        if (!err)
            *why = "event-stream message length mismatch";
        return SW_EPROTO;
    }
    if (sw_evs_crc32(0, buf, len - 4) != be32(buf + len - 4)) {
        *why = "event-stream message CRC mismatch";
        return SW_EPROTO;
    }
    size_t hl = be32(buf + 4);
    const char *h = buf + SW_EVS_PRELUDE;
    for (size_t off = 0; off < hl;) {
        if (m->n_headers == SW_EVS_MAX_HEADERS) {
            *why = "event-stream message with too many headers";
            return SW_EPROTO;
        }
        struct sw_evs_header *eh = &m->headers[m->n_headers];
        size_t used = header(h + off, hl - off, eh);
        if (!used) {
            *why = "event-stream header does not parse";
            return SW_EPROTO;
        }
        name_header(m, eh);
        m->n_headers++;
        off += used;
    }
    m->payload = (struct sw_str){h + hl, len - SW_EVS_MIN_MESSAGE - hl};
    return SW_OK;
}

/* ---- Incremental feed ---- */

void sw_evs_init(struct sw_evs *d, size_t max_message, sw_evs_fn cb, void *ud)
{
    memset(d, 0, sizeof *d);
    d->max_message = max_message < SW_EVS_MIN_MESSAGE ? SW_EVS_MIN_MESSAGE : max_message;
    sw_buf_init(&d->held, d->max_message);
    d->cb = cb;
    d->ud = ud;
}

void sw_evs_free(struct sw_evs *d)
{
    sw_buf_free(&d->held);
}

bool sw_evs_pending(const struct sw_evs *d)
{
    return d->held.len > 0;
}

static int deliver(struct sw_evs *d, const char *p, size_t n)
{
    struct sw_evs_message m;
    int err = sw_evs_decode(p, n, &m, &d->why);
    if (!err)
        err = d->cb(d->ud, &m);
    return err;
}

/* One step: consumes what it can of bytes[0..len) into *used. */
static int step(struct sw_evs *d, const char *bytes, size_t len, size_t *used)
{
    uint32_t total;
    struct sw_buf *hb = &d->held;
    if (hb->len == 0 && len >= SW_EVS_PRELUDE) {
        int err = prelude(bytes, d->max_message, &total, &d->why);
        if (err)
            return err;
        if (len >= total) {
            *used = total;
            return deliver(d, bytes, total);
        }
        *used = len;
        return sw_buf_append(hb, bytes, len);
    }
    size_t want = hb->len < SW_EVS_PRELUDE ? SW_EVS_PRELUDE - hb->len : 0;
    if (!want) {
        if (prelude(hb->ptr, d->max_message, &total, &d->why))
            return SW_EPROTO; /* checked when it arrived */
        want = total - hb->len;
    }
    size_t take = len < want ? len : want;
    int err = sw_buf_append(hb, bytes, take);
    *used = take;
    if (err)
        return err;
    if (hb->len == SW_EVS_PRELUDE) {
        err = prelude(hb->ptr, d->max_message, &total, &d->why);
        if (err)
            return err;
    } else if (hb->len < SW_EVS_PRELUDE) {
        return SW_OK;
    } else {
        total = be32(hb->ptr);
    }
    if (hb->len < total)
        return SW_OK;
    err = deliver(d, hb->ptr, hb->len);
    sw_buf_reset(hb);
    return err;
}

int sw_evs_feed(struct sw_evs *d, const char *bytes, size_t len)
{
    while (!d->err && len > 0) {
        size_t used = 0;
        d->err = step(d, bytes, len, &used);
        bytes += used;
        len -= used;
    }
    return d->err;
}

/* ---- Encoding ---- */

static int put32(struct sw_buf *out, uint32_t v)
{
    unsigned char b[4] = {(unsigned char)(v >> 24), (unsigned char)(v >> 16),
                          (unsigned char)(v >> 8), (unsigned char)v};
    return sw_buf_append(out, b, 4);
}

int sw_evs_encode(struct sw_buf *out, const char *const *names, const char *const *values,
                  size_t n, const char *payload, size_t payload_len)
{
    size_t hl = 0;
    for (size_t i = 0; i < n; i++) {
        size_t nl = strlen(names[i]), vl = strlen(values[i]);
        if (nl == 0 || nl > 255 || vl > 65535)
            return SW_EINVAL;
        hl += 1 + nl + 1 + 2 + vl;
    }
    if (hl > SW_EVS_HEADERS_MAX || payload_len > UINT32_MAX - SW_EVS_MIN_MESSAGE - hl)
        return SW_ETOOBIG;
    uint32_t total = (uint32_t)(SW_EVS_MIN_MESSAGE + hl + payload_len);
    size_t start = out->len;
    int err = put32(out, total);
    if (!err)
        err = put32(out, (uint32_t)hl);
    if (!err)
        err = put32(out, sw_evs_crc32(0, out->ptr + start, 8));
    for (size_t i = 0; !err && i < n; i++) {
        size_t nl = strlen(names[i]), vl = strlen(values[i]);
        unsigned char pre[1] = {(unsigned char)nl}, ty[3] = {SW_EVS_STRING,
                                                               (unsigned char)(vl >> 8),
                                                               (unsigned char)vl};
        err = sw_buf_append(out, pre, 1);
        if (!err)
            err = sw_buf_append(out, names[i], nl);
        if (!err)
            err = sw_buf_append(out, ty, 3);
        if (!err)
            err = sw_buf_append(out, values[i], vl);
    }
    if (!err && payload_len)
        err = sw_buf_append(out, payload, payload_len);
    if (!err)
        err = put32(out, sw_evs_crc32(0, out->ptr + start, out->len - start));
    if (err && out->ptr) {
        out->len = start;
        out->ptr[start] = '\0';
    }
    return err;
}
