#include "obs/span.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/json.h"
#include "common/utf8.h"

/* ---- Building ---- */

static struct sw_attr *attr_slot(struct sw_attrs *as, const char *key)
{
    if (!key)
        return NULL;
    size_t cap = as->cap ? as->cap : SW_SPAN_MAX_ATTRS;
    if (as->n >= cap) {
        as->dropped++;
        return NULL;
    }
    struct sw_attr *a = &as->a[as->n++];
    memset(a, 0, sizeof *a);
    a->key = key;
    return a;
}

void sw_attrs_str(struct sw_attrs *as, const char *key, const char *v)
{
    struct sw_attr *a = v ? attr_slot(as, key) : NULL;
    if (a)
        a->type = SW_ATTR_STR, a->v.s = v;
}

void sw_attrs_int(struct sw_attrs *as, const char *key, int64_t v)
{
    struct sw_attr *a = attr_slot(as, key);
    if (a)
        a->type = SW_ATTR_INT, a->v.i = v;
}

void sw_attrs_double(struct sw_attrs *as, const char *key, double v)
{
    struct sw_attr *a = isfinite(v) ? attr_slot(as, key) : NULL;
    if (a)
        a->type = SW_ATTR_DOUBLE, a->v.d = v;
}

void sw_attrs_bool(struct sw_attrs *as, const char *key, bool v)
{
    struct sw_attr *a = attr_slot(as, key);
    if (a)
        a->type = SW_ATTR_BOOL, a->v.b = v;
}

void sw_attrs_str_k(struct sw_attrs *as, const char *key, uint16_t klen, const char *v)
{
    struct sw_attr *a = v ? attr_slot(as, key) : NULL;
    if (a)
        a->type = SW_ATTR_STR, a->v.s = v, a->klen = klen;
}

void sw_attrs_name_k(struct sw_attrs *as, const char *key, uint16_t klen, const char *v)
{
    struct sw_attr *a = v ? attr_slot(as, key) : NULL;
    if (a)
        a->type = SW_ATTR_STR, a->v.s = v, a->klen = klen, a->vtrusted = true;
}

void sw_attrs_int_k(struct sw_attrs *as, const char *key, uint16_t klen, int64_t v)
{
    struct sw_attr *a = attr_slot(as, key);
    if (a)
        a->type = SW_ATTR_INT, a->v.i = v, a->klen = klen;
}

void sw_attrs_double_k(struct sw_attrs *as, const char *key, uint16_t klen, double v)
{
    struct sw_attr *a = isfinite(v) ? attr_slot(as, key) : NULL;
    if (a)
        a->type = SW_ATTR_DOUBLE, a->v.d = v, a->klen = klen;
}

void sw_attrs_bool_k(struct sw_attrs *as, const char *key, uint16_t klen, bool v)
{
    struct sw_attr *a = attr_slot(as, key);
    if (a)
        a->type = SW_ATTR_BOOL, a->v.b = v, a->klen = klen;
}

void sw_attrs_strs(struct sw_attrs *as, const char *key, const char *const *v, size_t n)
{
    struct sw_attr *a = v ? attr_slot(as, key) : NULL;
    if (a)
        a->type = SW_ATTR_STRS, a->strs = v, a->n_strs = n > SW_SPAN_MAX_STRS ? SW_SPAN_MAX_STRS : n;
}

struct sw_span_event *sw_span_event(struct sw_span *s, const char *name, int64_t time_ns)
{
    if (s->n_events >= SW_SPAN_MAX_EVENTS) {
        s->dropped_events++;
        return NULL;
    }
    struct sw_span_event *e = &s->events[s->n_events++];
    e->name = name;
    e->time_ns = time_ns;
    e->n = 0;
    e->dropped = 0;
    return e;
}

static struct sw_attr *event_slot(struct sw_span_event *e, const char *key)
{
    if (!e || !key)
        return NULL;
    if (e->n >= SW_SPAN_EVENT_MAX_ATTRS) {
        e->dropped++;
        return NULL;
    }
    struct sw_attr *a = &e->a[e->n++];
    memset(a, 0, sizeof *a);
    a->key = key;
    return a;
}

void sw_event_str(struct sw_span_event *e, const char *key, const char *v)
{
    struct sw_attr *a = v ? event_slot(e, key) : NULL;
    if (a)
        a->type = SW_ATTR_STR, a->v.s = v;
}

void sw_event_int(struct sw_span_event *e, const char *key, int64_t v)
{
    struct sw_attr *a = event_slot(e, key);
    if (a)
        a->type = SW_ATTR_INT, a->v.i = v;
}

void sw_event_double(struct sw_span_event *e, const char *key, double v)
{
    struct sw_attr *a = isfinite(v) ? event_slot(e, key) : NULL;
    if (a)
        a->type = SW_ATTR_DOUBLE, a->v.d = v;
}

/* s cut to SW_SPAN_MAX_STR bytes at a UTF-8 boundary and made valid UTF-8,
 * into tmp (room for SW_SPAN_MAX_STR + 1); its length. */
static size_t clip(const char *s, char *tmp)
{
    size_t n = strnlen(s, SW_SPAN_MAX_STR);
    memcpy(tmp, s, n);
    n = sw_utf8_trim(tmp, n);
    sw_utf8_sanitize(tmp, n);
    tmp[n] = '\0';
    return n;
}

/* ---- A writer into a scratch buffer ----
 * Encoding runs once per span on the event loop, so it is a plain cursor
 * over one bounded buffer (no growth, no formatted output for integers);
 * the result is copied out once. */

struct w {
    char *p, *end, *start;
    bool over;                  /* the bound was hit: the encoding is void */
};

static inline bool room(struct w *w, size_t n)
{
    if ((size_t)(w->end - w->p) >= n)
        return true;
    w->over = true;
    return false;
}

static inline void put(struct w *w, const void *s, size_t n)
{
    if (room(w, n)) {
        memcpy(w->p, s, n);
        w->p += n;
    }
}

/* a string literal only: its size is the literal's */
#define PUT(w, lit) put((w), "" lit, sizeof(lit) - 1)

/* The two decimal digits of 0..99, one lookup per pair. */
static const char dec_pairs[201] =
    "0001020304050607080910111213141516171819"
    "2021222324252627282930313233343536373839"
    "4041424344454647484950515253545556575859"
    "6061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

/* Four digits at a time; a time of millisecond resolution (a multiple of
 * 10^6 ns, as every span's) as its milliseconds and six zeros. */
static void put_u64(struct w *w, uint64_t v)
{
    char b[24];
    int i = 24;
    if (v >= 1000000 && v % 1000000 == 0) {
        i -= 6;
        memcpy(b + i, "000000", 6);
        v /= 1000000;
    }
    while (v >= 10000) {
        uint64_t q = v / 10000;
        unsigned r = (unsigned)(v - 10000 * q);
        i -= 4;
        memcpy(b + i, dec_pairs + 2 * (r / 100), 2);
        memcpy(b + i + 2, dec_pairs + 2 * (r % 100), 2);
        v = q;
    }
    if (v >= 100) {
        uint64_t q = v / 100;
        i -= 2;
        memcpy(b + i, dec_pairs + 2 * (v - 100 * q), 2);
        v = q;
    }
    if (v >= 10) {
        i -= 2;
        memcpy(b + i, dec_pairs + 2 * v, 2);
    } else {
        b[--i] = (char)('0' + v);
    }
    put(w, b + i, (size_t)(24 - i));
}

static void put_i64(struct w *w, int64_t v)
{
    if (v < 0) {
        PUT(w, "-");
        put_u64(w, (uint64_t)0 - (uint64_t)v);
    } else {
        put_u64(w, (uint64_t)v);
    }
}

static void put_hex(struct w *w, const uint8_t *b, size_t n)
{
    char tmp[2 * SW_TRACE_ID_LEN + 1];
    sw_trace_hex(b, n, tmp);
    put(w, tmp, 2 * n);
}

/* ---- OTLP JSON ---- */

/* A byte a JSON string holds as it is: printable ASCII but '"' and '\\'
 * (NUL is not: it ends the string). */
static inline bool plain(unsigned char c)
{
    return (unsigned)(c - 0x20) < 0x5f && c != '"' && c != '\\';
}

#define ONES 0x0101010101010101ull
#define HIGHS 0x8080808080808080ull

/* Eight bytes at once: whether any is below 0x20, at or above 0x7f, '"'
 * or '\\' (a false alarm only sends the bytes to the byte-wise check). */
static inline bool word_needs_care(uint64_t x)
{
    uint64_t q = x ^ (ONES * '"'), b = x ^ (ONES * '\\'), d = x ^ (ONES * 0x7f);
    return (((x - ONES * 0x20) & ~x) | x | ((q - ONES) & ~q) | ((b - ONES) & ~b) |
            ((d - ONES) & ~d)) & HIGHS;
}

/* s as a JSON string: printable ASCII is copied as it is (eight bytes at a
 * time); anything else goes through clip and the shared escaper. */
static void json_str(struct w *w, const char *s)
{
    if (!room(w, SW_JSON_ESCAPED_MAX(SW_SPAN_MAX_STR) + 2))
        return;
    size_t n = strnlen(s, SW_SPAN_MAX_STR);
    char *q = w->p;
    *q++ = '"';
    size_t i = 0;
    for (uint64_t x; i + 8 <= n; i += 8) {
        memcpy(&x, s + i, 8);
        if (word_needs_care(x))
            break;
    }
    while (i < n && plain((unsigned char)s[i]))
        i++;
    if (i < n) {
        char tmp[SW_SPAN_MAX_STR + 1];
        size_t m = clip(s, tmp);
        q += sw_json_escape_into(q, tmp, m, SW_JSON_ESC_ALL_CTL);
    } else {
        memcpy(q, s, n); /* all printable ASCII: a cut at the bound is a character boundary */
        q += n;
    }
    *q++ = '"';
    w->p = q;
}

static void json_double(struct w *w, double d)
{
    if (d == (double)(int64_t)d && d > -1e15 && d < 1e15) {
        put_i64(w, (int64_t)d); /* an integral number needs no float formatting */
        return;
    }
    char b[32];
    int n = snprintf(b, sizeof b, "%.17g", d);
    put(w, b, (size_t)n);
}

static void json_value(struct w *w, const struct sw_attr *a)
{
    switch (a->type) {
    case SW_ATTR_STR:
        PUT(w, "{\"stringValue\":");
        json_str(w, a->v.s);
        break;
    case SW_ATTR_INT:
        PUT(w, "{\"intValue\":\"");
        put_i64(w, a->v.i);
        PUT(w, "\"");
        break;
    case SW_ATTR_DOUBLE:
        PUT(w, "{\"doubleValue\":");
        json_double(w, a->v.d);
        break;
    case SW_ATTR_BOOL:
        if (a->v.b)
            PUT(w, "{\"boolValue\":true");
        else
            PUT(w, "{\"boolValue\":false");
        break;
    case SW_ATTR_STRS:
        PUT(w, "{\"arrayValue\":{\"values\":[");
        for (size_t i = 0; i < a->n_strs; i++) {
            if (i)
                PUT(w, ",");
            PUT(w, "{\"stringValue\":");
            json_str(w, a->strs[i] ? a->strs[i] : "");
            PUT(w, "}");
        }
        PUT(w, "]}");
        break;
    }
    PUT(w, "}");
}

/* A string value's length when check (plain_len or short_ascii) passes it,
 * else -1; a trusted name (at most 100 bytes by its setter's rule) passes
 * unchecked. */
static inline long str_len(const struct sw_attr *a, long (*check)(const char *))
{
    if (!a->vtrusted)
        return check(a->v.s);
    size_t n = strnlen(a->v.s, 101);
    return n > 100 ? -1 : (long)n;
}

/* The length of s when a JSON string holds it as it is (printable ASCII but
 * '"' and '\\') and it has at most 100 bytes, else -1. */
static long plain_len(const char *s)
{
    size_t n = strnlen(s, 101), i = 0;
    if (n > 100)
        return -1;
    uint64_t x;
    for (; i + 8 <= n; i += 8) {
        memcpy(&x, s + i, 8);
        if (word_needs_care(x))
            return -1;
    }
    if (i < n && n >= 8) { /* the tail as the last eight bytes, overlapping */
        memcpy(&x, s + n - 8, 8);
        return word_needs_care(x) ? -1 : (long)n;
    }
    while (i < n && plain((unsigned char)s[i]))
        i++;
    return i < n ? -1 : (long)n;
}

#define LIT(q, lit) (memcpy((q), lit, sizeof(lit) - 1), (q) += sizeof(lit) - 1)

/* One attribute whose key (and string value) a JSON string holds as it is,
 * written with one bound check: the same bytes as the general path. false:
 * the general path writes it. */
static bool json_attr_short(struct w *w, const struct sw_attr *a)
{
    long kn = a->klen ? (long)a->klen : plain_len(a->key), sn = 0;
    if (kn < 0 || a->type == SW_ATTR_STRS ||
        (a->type == SW_ATTR_STR && (sn = str_len(a, plain_len)) < 0))
        return false;
    if (!room(w, (size_t)(kn + sn) + 64))
        return true; /* the encoding is void */
    char *q = w->p;
    LIT(q, "{\"key\":\"");
    memcpy(q, a->key, (size_t)kn);
    q += kn;
    LIT(q, "\",\"value\":");
    if (a->type == SW_ATTR_STR) {
        LIT(q, "{\"stringValue\":\"");
        memcpy(q, a->v.s, (size_t)sn);
        q += sn;
        LIT(q, "\"}}");
        w->p = q;
        return true;
    }
    w->p = q;
    json_value(w, a);
    PUT(w, "}");
    return true;
}

static void json_attrs(struct w *w, const struct sw_attr *a, size_t n)
{
    PUT(w, "\"attributes\":[");
    for (size_t i = 0; i < n; i++) {
        if (i)
            PUT(w, ",");
        if (json_attr_short(w, &a[i]))
            continue;
        PUT(w, "{\"key\":");
        json_str(w, a[i].key);
        PUT(w, ",\"value\":");
        json_value(w, &a[i]);
        PUT(w, "}");
    }
    PUT(w, "]");
}

static void json_span(const struct sw_span *s, struct w *w)
{
    PUT(w, "{\"traceId\":\"");
    if (s->trace_hex)
        put(w, s->trace_hex, 2 * SW_TRACE_ID_LEN);
    else
        put_hex(w, s->trace_id, SW_TRACE_ID_LEN);
    PUT(w, "\",\"spanId\":\"");
    put_hex(w, s->span_id, SW_SPAN_ID_LEN);
    PUT(w, "\"");
    if (s->has_parent) {
        PUT(w, ",\"parentSpanId\":\"");
        put_hex(w, s->parent_id, SW_SPAN_ID_LEN);
        PUT(w, "\"");
    }
    if (s->trace_state && *s->trace_state) {
        PUT(w, ",\"traceState\":");
        json_str(w, s->trace_state);
    }
    PUT(w, ",\"flags\":");
    put_u64(w, s->flags);
    PUT(w, ",\"name\":");
    json_str(w, s->name ? s->name : "");
    PUT(w, ",\"kind\":");
    put_u64(w, (uint64_t)s->kind);
    PUT(w, ",\"startTimeUnixNano\":\"");
    put_i64(w, s->start_ns);
    PUT(w, "\",\"endTimeUnixNano\":\"");
    put_i64(w, s->end_ns);
    PUT(w, "\",");
    json_attrs(w, s->attrs.a, s->attrs.n);
    if (s->attrs.dropped) {
        PUT(w, ",\"droppedAttributesCount\":");
        put_u64(w, s->attrs.dropped);
    }
    PUT(w, ",\"events\":[");
    for (size_t i = 0; i < s->n_events; i++) {
        const struct sw_span_event *e = &s->events[i];
        if (i)
            PUT(w, ",");
        PUT(w, "{\"timeUnixNano\":\"");
        put_i64(w, e->time_ns);
        PUT(w, "\",\"name\":");
        json_str(w, e->name ? e->name : "");
        PUT(w, ",");
        json_attrs(w, e->a, e->n);
        if (e->dropped) {
            PUT(w, ",\"droppedAttributesCount\":");
            put_u64(w, e->dropped);
        }
        PUT(w, "}");
    }
    PUT(w, "]");
    if (s->dropped_events) {
        PUT(w, ",\"droppedEventsCount\":");
        put_u64(w, s->dropped_events);
    }
    PUT(w, ",\"status\":{\"code\":");
    put_u64(w, (uint64_t)s->status);
    if (s->status == SW_SPAN_ERROR && s->status_msg) {
        PUT(w, ",\"message\":");
        json_str(w, s->status_msg);
    }
    PUT(w, "}}");
}

/* ---- OTLP protobuf ---- */

enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_I32 = 5 };

static void pb_varint(struct w *w, uint64_t v)
{
    if (!room(w, 10))
        return;
    while (v >= 0x80) {
        *w->p++ = (char)(v | 0x80);
        v >>= 7;
    }
    *w->p++ = (char)v;
}

static inline void pb_tag(struct w *w, unsigned field, unsigned wt)
{
    pb_varint(w, (uint64_t)field << 3 | wt);
}

static void pb_fixed64(struct w *w, unsigned field, uint64_t v)
{
    pb_tag(w, field, WT_I64);
    if (!room(w, 8))
        return;
    for (int i = 0; i < 8; i++)
        *w->p++ = (char)(v >> (8 * i));
}

static void pb_fixed32(struct w *w, unsigned field, uint32_t v)
{
    pb_tag(w, field, WT_I32);
    if (!room(w, 4))
        return;
    for (int i = 0; i < 4; i++)
        *w->p++ = (char)(v >> (8 * i));
}

static void pb_bytes(struct w *w, unsigned field, const void *p, size_t n)
{
    pb_tag(w, field, WT_LEN);
    pb_varint(w, n);
    put(w, p, n);
}

/* A string field: ASCII as it is (checked eight bytes at a time),
 * anything else through clip (valid UTF-8). */
static void pb_string(struct w *w, unsigned field, const char *s)
{
    size_t n = strnlen(s, SW_SPAN_MAX_STR), i = 0;
    uint64_t hi = 0, x;
    for (; i + 8 <= n; i += 8) {
        memcpy(&x, s + i, 8);
        hi |= x;
    }
    for (; i < n; i++)
        hi |= (unsigned char)s[i];
    if (hi & HIGHS) {
        char tmp[SW_SPAN_MAX_STR + 1];
        size_t m = clip(s, tmp);
        pb_bytes(w, field, tmp, m);
        return;
    }
    pb_bytes(w, field, s, n);
}

/* A nested message: its tag and a one-byte length now (pb_open), the
 * length fixed once its content is written (pb_close moves the content when
 * the length needs more bytes). */
static char *pb_open(struct w *w, unsigned field)
{
    pb_tag(w, field, WT_LEN);
    PUT(w, "\0");
    return w->p;
}

static void pb_close(struct w *w, char *mark)
{
    if (w->over)
        return;
    size_t n = (size_t)(w->p - mark);
    if (n < 128) {
        mark[-1] = (char)n;
        return;
    }
    unsigned char b[10];
    size_t k = 0;
    for (uint64_t v = n; v; v >>= 7)
        b[k++] = (unsigned char)((v & 0x7f) | (v >> 7 ? 0x80 : 0));
    if (!room(w, k - 1))
        return;
    memmove(mark - 1 + k, mark, n);
    memcpy(mark - 1, b, k);
    w->p += k - 1;
}

static void pb_anyvalue(struct w *w, unsigned field, const struct sw_attr *a)
{
    char *m = pb_open(w, field), *m2;
    switch (a->type) {
    case SW_ATTR_STR:
        pb_string(w, 1, a->v.s);
        break;
    case SW_ATTR_BOOL:
        pb_tag(w, 2, WT_VARINT);
        pb_varint(w, a->v.b ? 1 : 0);
        break;
    case SW_ATTR_INT:
        pb_tag(w, 3, WT_VARINT);
        pb_varint(w, (uint64_t)a->v.i);
        break;
    case SW_ATTR_DOUBLE: {
        uint64_t bits;
        memcpy(&bits, &a->v.d, sizeof bits);
        pb_fixed64(w, 4, bits);
        break;
    }
    case SW_ATTR_STRS:
        m2 = pb_open(w, 5);
        for (size_t i = 0; i < a->n_strs; i++) {
            struct sw_attr one = {.type = SW_ATTR_STR, .v.s = a->strs[i] ? a->strs[i] : ""};
            pb_anyvalue(w, 1, &one);
        }
        pb_close(w, m2);
        break;
    }
    pb_close(w, m);
}

/* The length of s when it is ASCII of at most 100 bytes, else -1. */
static inline long short_ascii(const char *s)
{
    size_t n = strnlen(s, 101), i = 0;
    if (n > 100)
        return -1;
    uint64_t hi = 0, x;
    for (; i + 8 <= n; i += 8) {
        memcpy(&x, s + i, 8);
        hi |= x;
    }
    if (i < n && n >= 8) { /* the tail as the last eight bytes, overlapping */
        memcpy(&x, s + n - 8, 8);
        hi |= x;
    } else {
        for (; i < n; i++)
            hi |= (unsigned char)s[i];
    }
    return hi & HIGHS ? -1 : (long)n;
}

/* One KeyValue whose key is short ASCII and whose value a scalar or a
 * short ASCII string, written in one pass with its lengths known up front:
 * the same bytes as pb_open / pb_string / pb_anyvalue / pb_close (every
 * length then fits in one byte). false: the general path writes it. */
static bool pb_attr_short(struct w *w, unsigned field, const struct sw_attr *a)
{
    long kn = a->klen ? (long)a->klen : short_ascii(a->key), sn = 0;
    if (kn < 0 || field > 15)
        return false;
    unsigned char val[12];
    size_t vn = 0;
    uint64_t v;
    switch (a->type) {
    case SW_ATTR_STR:
        if ((sn = str_len(a, short_ascii)) < 0)
            return false;
        vn = 2 + (size_t)sn;
        break;
    case SW_ATTR_BOOL:
        val[vn++] = 2 << 3 | WT_VARINT;
        val[vn++] = a->v.b ? 1 : 0;
        break;
    case SW_ATTR_INT:
        val[vn++] = 3 << 3 | WT_VARINT;
        for (v = (uint64_t)a->v.i; v >= 0x80; v >>= 7)
            val[vn++] = (unsigned char)(v | 0x80);
        val[vn++] = (unsigned char)v;
        break;
    case SW_ATTR_DOUBLE:
        val[vn++] = 4 << 3 | WT_I64;
        memcpy(&v, &a->v.d, sizeof v);
        for (int i = 0; i < 8; i++)
            val[vn++] = (unsigned char)(v >> (8 * i));
        break;
    default:
        return false;
    }
    size_t kv = 2 + (size_t)kn + 2 + vn;
    if (kv >= 128)
        return false;
    if (!room(w, 2 + kv))
        return true; /* the encoding is void */
    unsigned char *q = (unsigned char *)w->p;
    *q++ = (unsigned char)(field << 3 | WT_LEN);
    *q++ = (unsigned char)kv;
    *q++ = 1 << 3 | WT_LEN;
    *q++ = (unsigned char)kn;
    memcpy(q, a->key, (size_t)kn);
    q += kn;
    *q++ = 2 << 3 | WT_LEN;
    *q++ = (unsigned char)vn;
    if (a->type == SW_ATTR_STR) {
        *q++ = 1 << 3 | WT_LEN;
        *q++ = (unsigned char)sn;
        memcpy(q, a->v.s, (size_t)sn);
        q += sn;
    } else {
        memcpy(q, val, vn);
        q += vn;
    }
    w->p = (char *)q;
    return true;
}

static void pb_attrs(struct w *w, unsigned field, const struct sw_attr *a, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (pb_attr_short(w, field, &a[i]))
            continue;
        char *m = pb_open(w, field);
        pb_string(w, 1, a[i].key);
        pb_anyvalue(w, 2, &a[i]);
        pb_close(w, m);
    }
}

static void pb_uint(struct w *w, unsigned field, uint64_t v)
{
    pb_tag(w, field, WT_VARINT);
    pb_varint(w, v);
}

static void pb_span(const struct sw_span *s, struct w *w)
{
    pb_bytes(w, 1, s->trace_id, SW_TRACE_ID_LEN);
    pb_bytes(w, 2, s->span_id, SW_SPAN_ID_LEN);
    if (s->trace_state && *s->trace_state)
        pb_string(w, 3, s->trace_state);
    if (s->has_parent)
        pb_bytes(w, 4, s->parent_id, SW_SPAN_ID_LEN);
    pb_string(w, 5, s->name ? s->name : "");
    pb_uint(w, 6, (uint64_t)s->kind);
    pb_fixed64(w, 7, (uint64_t)s->start_ns);
    pb_fixed64(w, 8, (uint64_t)s->end_ns);
    pb_attrs(w, 9, s->attrs.a, s->attrs.n);
    if (s->attrs.dropped)
        pb_uint(w, 10, s->attrs.dropped);
    for (size_t i = 0; i < s->n_events; i++) {
        const struct sw_span_event *e = &s->events[i];
        char *m = pb_open(w, 11);
        pb_fixed64(w, 1, (uint64_t)e->time_ns);
        pb_string(w, 2, e->name ? e->name : "");
        pb_attrs(w, 3, e->a, e->n);
        if (e->dropped)
            pb_uint(w, 4, e->dropped);
        pb_close(w, m);
    }
    if (s->dropped_events)
        pb_uint(w, 12, s->dropped_events);
    char *m = pb_open(w, 15);
    if (s->status == SW_SPAN_ERROR && s->status_msg)
        pb_string(w, 2, s->status_msg);
    if (s->status)
        pb_uint(w, 3, (uint64_t)s->status);
    pb_close(w, m);
    pb_fixed32(w, 16, s->flags);
}

/* The scratch one span is encoded into (the event loop's thread). */
#define SPAN_SCRATCH (256 * 1024)
static __thread char span_scratch[SPAN_SCRATCH];

int sw_span_encode(const struct sw_span *s, enum sw_span_encoding enc, struct sw_buf *out)
{
    struct w w = {span_scratch, span_scratch + SPAN_SCRATCH, span_scratch, false};
    if (enc == SW_OTLP_PROTOBUF)
        pb_span(s, &w);
    else
        json_span(s, &w);
    if (w.over)
        return SW_ETOOBIG;
    return sw_buf_append(out, w.start, (size_t)(w.p - w.start));
}

/* ---- Export request ---- */

static void json_request(const struct sw_attrs *res, const char *scope, const char *version,
                         const struct sw_str *spans, size_t n, struct w *w)
{
    PUT(w, "{\"resourceSpans\":[{\"resource\":{");
    json_attrs(w, res->a, res->n);
    PUT(w, "},\"scopeSpans\":[{\"scope\":{\"name\":");
    json_str(w, scope);
    PUT(w, ",\"version\":");
    json_str(w, version);
    PUT(w, "},\"spans\":[");
    for (size_t i = 0; i < n; i++) {
        if (i)
            PUT(w, ",");
        put(w, spans[i].ptr, spans[i].len);
    }
    PUT(w, "]}]}]}");
}

static void pb_request(const struct sw_attrs *res, const char *scope, const char *version,
                       const struct sw_str *spans, size_t n, struct w *w)
{
    char *rs = pb_open(w, 1); /* ExportTraceServiceRequest.resource_spans */
    char *r = pb_open(w, 1);  /* ResourceSpans.resource */
    pb_attrs(w, 1, res->a, res->n);
    pb_close(w, r);
    char *ss = pb_open(w, 2); /* ResourceSpans.scope_spans */
    char *sc = pb_open(w, 1); /* ScopeSpans.scope */
    pb_string(w, 1, scope);
    pb_string(w, 2, version);
    pb_close(w, sc);
    for (size_t i = 0; i < n; i++)
        pb_bytes(w, 2, spans[i].ptr, spans[i].len); /* ScopeSpans.spans */
    pb_close(w, ss);
    pb_close(w, rs);
}

int sw_otlp_request(const struct sw_attrs *resource, const char *scope_name,
                    const char *scope_version, const struct sw_str *spans, size_t n,
                    enum sw_span_encoding enc, struct sw_buf *out)
{
    /* room: the spans, their framing (at most 16 bytes each), and the
     * resource and scope, every string at its longest escaped; written in
     * place at the end of out */
    size_t cap = 4096 + (resource->n + 2) * (2 * SW_JSON_ESCAPED_MAX(SW_SPAN_MAX_STR) + 64);
    for (size_t i = 0; i < n; i++)
        cap += spans[i].len + 16;
    if (cap > out->max - out->len)
        cap = out->max - out->len;
    int err = sw_buf_reserve(out, cap);
    if (err)
        return err;
    char *buf = out->ptr + out->len;
    struct w w = {buf, buf + cap, buf, false};
    if (enc == SW_OTLP_PROTOBUF)
        pb_request(resource, scope_name, scope_version, spans, n, &w);
    else
        json_request(resource, scope_name, scope_version, spans, n, &w);
    if (w.over) {
        out->ptr[out->len] = '\0';
        return SW_ETOOBIG;
    }
    out->len += (size_t)(w.p - buf);
    out->ptr[out->len] = '\0';
    return SW_OK;
}

/* ---- Export requests from parts ---- */

int sw_otlp_frame_init(struct sw_otlp_frame *f, const struct sw_attrs *resource,
                       const char *scope_name, const char *scope_version,
                       enum sw_span_encoding enc)
{
    f->enc = enc;
    sw_buf_init(&f->res, SW_OTLP_FRAME_MAX);
    sw_buf_init(&f->scope, SW_OTLP_FRAME_MAX);
    size_t cap = 4096 + (resource->n + 2) * (2 * SW_JSON_ESCAPED_MAX(SW_SPAN_MAX_STR) + 64);
    int err = sw_buf_reserve(&f->res, cap);
    if (!err)
        err = sw_buf_reserve(&f->scope, cap);
    if (err)
        goto fail;
    struct w w = {f->res.ptr, f->res.ptr + cap, f->res.ptr, false};
    struct w s = {f->scope.ptr, f->scope.ptr + cap, f->scope.ptr, false};
    if (enc == SW_OTLP_PROTOBUF) {
        char *r = pb_open(&w, 1); /* ResourceSpans.resource */
        pb_attrs(&w, 1, resource->a, resource->n);
        pb_close(&w, r);
        char *sc = pb_open(&s, 1); /* ScopeSpans.scope */
        pb_string(&s, 1, scope_name);
        pb_string(&s, 2, scope_version);
        pb_close(&s, sc);
    } else {
        /* the request's opening up to its span list */
        PUT(&w, "{\"resourceSpans\":[{\"resource\":{");
        json_attrs(&w, resource->a, resource->n);
        PUT(&w, "},\"scopeSpans\":[{\"scope\":{\"name\":");
        json_str(&w, scope_name);
        PUT(&w, ",\"version\":");
        json_str(&w, scope_version);
        PUT(&w, "},\"spans\":[");
    }
    if (w.over || s.over) {
        err = SW_ETOOBIG;
        goto fail;
    }
    f->res.len = (size_t)(w.p - w.start);
    f->res.ptr[f->res.len] = '\0';
    f->scope.len = (size_t)(s.p - s.start);
    f->scope.ptr[f->scope.len] = '\0';
    return SW_OK;
fail:
    sw_otlp_frame_free(f);
    return err;
}

void sw_otlp_frame_free(struct sw_otlp_frame *f)
{
    sw_buf_free(&f->res);
    sw_buf_free(&f->scope);
}

/* A varint into b (room for 10); its length. */
static size_t varint_at(unsigned char *b, uint64_t v)
{
    size_t k = 0;
    for (; v >= 0x80; v >>= 7)
        b[k++] = (unsigned char)(v | 0x80);
    b[k++] = (unsigned char)v;
    return k;
}

int sw_span_encode_framed(const struct sw_span *s, enum sw_span_encoding enc, size_t max_len,
                          struct sw_buf *out)
{
    struct w w = {span_scratch, span_scratch + SPAN_SCRATCH, span_scratch, false};
    if (enc == SW_OTLP_PROTOBUF)
        pb_span(s, &w);
    else
        json_span(s, &w);
    size_t n = (size_t)(w.p - w.start);
    if (w.over || n > max_len)
        return SW_ETOOBIG;
    unsigned char pre[11];
    size_t k = 1;
    if (enc == SW_OTLP_PROTOBUF) {
        pre[0] = 2 << 3 | WT_LEN; /* ScopeSpans.spans */
        k += varint_at(pre + 1, n);
    } else {
        pre[0] = ',';
    }
    int err = sw_buf_reserve(out, k + n);
    if (err)
        return err;
    memcpy(out->ptr + out->len, pre, k);
    memcpy(out->ptr + out->len + k, w.start, n);
    out->len += k + n;
    out->ptr[out->len] = '\0';
    return SW_OK;
}

int sw_otlp_frame_request(const struct sw_otlp_frame *f, const char *spans, size_t len,
                          struct sw_buf *out)
{
    if (!len)
        return SW_EINVAL;
    unsigned char rs[11], ss[11];
    size_t rk = 0, sk = 0;
    int err;
    if (f->enc == SW_OTLP_PROTOBUF) {
        /* ExportTraceServiceRequest{1: ResourceSpans{1: resource, 2: ScopeSpans{1: scope,
         * 2: spans...}}}: the two enclosing lengths are known up front */
        size_t ss_len = f->scope.len + len;
        ss[0] = 2 << 3 | WT_LEN;
        sk = 1 + varint_at(ss + 1, ss_len);
        size_t rs_len = f->res.len + sk + ss_len;
        rs[0] = 1 << 3 | WT_LEN;
        rk = 1 + varint_at(rs + 1, rs_len);
        err = sw_buf_reserve(out, rk + rs_len);
        if (err)
            return err;
        sw_buf_append(out, rs, rk);
        sw_buf_append(out, f->res.ptr, f->res.len);
        sw_buf_append(out, ss, sk);
        sw_buf_append(out, f->scope.ptr, f->scope.len);
        return sw_buf_append(out, spans, len);
    }
    /* the spans come with a comma before each: the first one's is left out */
    err = sw_buf_reserve(out, f->res.len + len - 1 + 6);
    if (err)
        return err;
    sw_buf_append(out, f->res.ptr, f->res.len);
    sw_buf_append(out, spans + 1, len - 1);
    return sw_buf_append(out, "]}]}]}", 6);
}

size_t sw_otlp_frame_gap(const struct sw_otlp_frame *f)
{
    return f->res.len + f->scope.len + 2 * 11;
}

int sw_otlp_frame_wrap(const struct sw_otlp_frame *f, struct sw_buf *b, size_t gap,
                       size_t *start)
{
    if (b->len <= gap || gap < sw_otlp_frame_gap(f))
        return SW_EINVAL;
    size_t len = b->len - gap;
    char *at = b->ptr + gap;
    if (f->enc == SW_OTLP_PROTOBUF) {
        unsigned char rs[11], ss[11];
        size_t ss_len = f->scope.len + len;
        ss[0] = 2 << 3 | WT_LEN;
        size_t sk = 1 + varint_at(ss + 1, ss_len);
        size_t rs_len = f->res.len + sk + ss_len;
        rs[0] = 1 << 3 | WT_LEN;
        size_t rk = 1 + varint_at(rs + 1, rs_len);
        at -= f->scope.len;
        memcpy(at, f->scope.ptr, f->scope.len);
        at -= sk;
        memcpy(at, ss, sk);
        at -= f->res.len;
        memcpy(at, f->res.ptr, f->res.len);
        at -= rk;
        memcpy(at, rs, rk);
        *start = (size_t)(at - b->ptr);
        return SW_OK;
    }
    /* the opening ends where the first span's comma was */
    at = at + 1 - f->res.len;
    memcpy(at, f->res.ptr, f->res.len);
    *start = (size_t)(at - b->ptr);
    return sw_buf_append(b, "]}]}]}", 6);
}
