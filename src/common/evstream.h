/* AWS event-stream framing (application/vnd.amazon.eventstream), the binary
 * framing of Bedrock's ConverseStream: decoded incrementally from bytes in
 * any split, and encoded (llmsim and tests). Pure, bounded: no I/O.
 *
 * A message: a 12-byte prelude (total length, headers length, both u32
 * big-endian, then the CRC32 of those 8 bytes), the headers, the payload,
 * and the CRC32 of everything before it. A header: a 1-byte name length,
 * the name, a 1-byte type and its value (bool true/false: none; byte: 1;
 * short: 2; integer: 4; long: 8; byte array and string: a u16 length and
 * the bytes; timestamp: 8, milliseconds; uuid: 16). */
#ifndef SW_COMMON_EVSTREAM_H
#define SW_COMMON_EVSTREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

#define SW_EVS_PRELUDE 12
#define SW_EVS_MIN_MESSAGE 16           /* prelude and message CRC, nothing else */
#define SW_EVS_HEADERS_MAX (128 * 1024) /* the format's own bound on a message's headers */
#define SW_EVS_MAX_HEADERS 32           /* headers of one message kept (more: an error) */

enum sw_evs_type {
    SW_EVS_TRUE, SW_EVS_FALSE, SW_EVS_BYTE, SW_EVS_SHORT, SW_EVS_INT, SW_EVS_LONG,
    SW_EVS_BYTES, SW_EVS_STRING, SW_EVS_TIMESTAMP, SW_EVS_UUID
};

struct sw_evs_header {
    struct sw_str name;
    enum sw_evs_type type;
    struct sw_str value;        /* the value's bytes (strings, byte arrays, uuid) */
    int64_t num;                /* the value of bool (1/0), byte, short, int, long, timestamp */
};

/* One decoded message; every pointer points into the decoder's buffer and
 * is valid during the callback only. The named headers are found among
 * `headers` (ptr NULL when absent). */
struct sw_evs_message {
    struct sw_evs_header headers[SW_EVS_MAX_HEADERS];
    size_t n_headers;
    struct sw_str message_type;     /* :message-type: "event", "exception" or "error" */
    struct sw_str event_type;       /* :event-type */
    struct sw_str exception_type;   /* :exception-type */
    struct sw_str error_code;       /* :error-code (message type "error") */
    struct sw_str error_message;    /* :error-message */
    struct sw_str content_type;     /* :content-type */
    struct sw_str payload;
};

/* Called per message; SW_OK to go on, anything else stops the feed (returned). */
typedef int (*sw_evs_fn)(void *ud, const struct sw_evs_message *m);

struct sw_evs {
    struct sw_buf held;         /* bytes of the incomplete message */
    size_t max_message;         /* the largest total length accepted */
    int err;                    /* sticky first non-OK result */
    const char *why;            /* what was wrong (static), NULL when nothing */
    sw_evs_fn cb;
    void *ud;
};

/* Prepares *d: messages up to max_message bytes (at least SW_EVS_MIN_MESSAGE). */
void sw_evs_init(struct sw_evs *d, size_t max_message, sw_evs_fn cb, void *ud);
/* Feeds len bytes in any split: the same messages and the same result
 * whether the stream comes whole, in pieces or a byte at a time. A message
 * is handed over once all of it arrived and both CRCs matched. Returns
 * SW_OK, SW_EPROTO (a bad CRC, a length out of bounds, a header that does
 * not parse; d->why says which), SW_ETOOBIG (a message over max_message),
 * SW_ENOMEM, or the callback's result; any of those is sticky. */
int sw_evs_feed(struct sw_evs *d, const char *bytes, size_t len);
/* True when bytes were fed that do not yet form a whole message. */
bool sw_evs_pending(const struct sw_evs *d);
void sw_evs_free(struct sw_evs *d);

/* Decodes one whole message at buf[0..len) (exactly one). SW_OK or SW_EPROTO
 * with *why set. */
int sw_evs_decode(const char *buf, size_t len, struct sw_evs_message *m, const char **why);

/* CRC32 (IEEE 802.3, as zlib's crc32) of n bytes, continuing from crc (0 to start). */
uint32_t sw_evs_crc32(uint32_t crc, const void *p, size_t n);

/* Appends one message with string headers name[i]: value[i] (n of them) and
 * the payload. SW_OK, SW_ETOOBIG or SW_ENOMEM. */
int sw_evs_encode(struct sw_buf *out, const char *const *names, const char *const *values,
                  size_t n, const char *payload, size_t payload_len);

#endif
