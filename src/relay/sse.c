#include "relay/sse.h"

#include <string.h>

#include "common/err.h"

/* The parser keeps one invariant that makes it split-independent: every byte
 * is handled the same way whether it arrives alone or inside a larger feed.
 * Line bytes go to `line` (never the terminator), a terminator processes the
 * line, and a '\n' right after a '\r' is skipped even across two feeds.
 * The size bound is checked against the bytes held, which do not depend on
 * how the stream was split, so SW_ETOOBIG fires at the same byte too. */

void sw_sse_init(struct sw_sse *p, size_t max_event_bytes, sw_sse_event_fn cb, void *ud)
{
    memset(p, 0, sizeof(*p));
    sw_buf_init(&p->line, max_event_bytes);
    sw_buf_init(&p->data, max_event_bytes);
    p->cb = cb;
    p->ud = ud;
}

void sw_sse_free(struct sw_sse *p)
{
    sw_buf_free(&p->line);
    sw_buf_free(&p->data);
}

int sw_sse_pending(const struct sw_sse *p)
{
    return p->line.len > 0 || p->has_data || p->event[0] != '\0';
}

/* ---- Lines ---- */

static int append_line(struct sw_sse *p, const char *bytes, size_t n)
{
    /* line.max is max_event_bytes: bound the line and the data together. */
    if (n > p->line.max || p->line.len + p->data.len > p->line.max - n)
        return SW_ETOOBIG;
    return sw_buf_append(&p->line, bytes, n);
}

static int dispatch(struct sw_sse *p)
{
    int err = SW_OK;

    if (p->has_data) {
        const char *data = p->data.ptr ? p->data.ptr : "";
        err = p->cb(p->ud, p->event, data, p->data.len);
    }
    sw_buf_reset(&p->data);
    p->has_data = 0;
    p->event[0] = '\0';
    return err;
}

static int on_field(struct sw_sse *p, const char *name, size_t name_len,
                    const char *value, size_t value_len)
{
    int err;

    if (name_len == 4 && memcmp(name, "data", 4) == 0) {
        if (p->has_data) {
            err = sw_buf_append(&p->data, "\n", 1);
            if (err)
                return err;
        }
        err = sw_buf_append(&p->data, value, value_len);
        if (err)
            return err;
        p->has_data = 1;
    } else if (name_len == 5 && memcmp(name, "event", 5) == 0) {
        size_t n = value_len < sizeof(p->event) - 1 ? value_len : sizeof(p->event) - 1;
        memcpy(p->event, value, n);
        p->event[n] = '\0';
    }
    /* "id", "retry" and unknown fields: ignored. */
    return SW_OK;
}

/* One complete line (its terminator excluded): from `line`, or straight
 * from the fed bytes when the whole line arrived in one feed. */
static int on_line(struct sw_sse *p, const char *s, size_t len)
{
    int err;

    if (!p->seen_line) {
        p->seen_line = 1;
        if (len >= 3 && memcmp(s, "\xEF\xBB\xBF", 3) == 0) {
            s += 3;
            len -= 3;
        }
    }
    if (len == 0) {
        err = dispatch(p);
    } else if (s[0] == ':') {
        err = SW_OK;
    } else {
        const char *colon = memchr(s, ':', len);
        if (colon) {
            const char *value = colon + 1;
            size_t value_len = len - (size_t)(value - s);
            if (value_len > 0 && value[0] == ' ') {
                value++;
                value_len--;
            }
            err = on_field(p, s, (size_t)(colon - s), value, value_len);
        } else {
            err = on_field(p, s, len, "", 0);
        }
    }
    sw_buf_reset(&p->line);
    return err;
}

/* ---- Feeding ---- */

/* The first '\n' or '\r': memchr for the '\n' (vectorised in libc), then
 * for a '\r' before it (rare: most streams end lines with '\n' alone). */
static const char *find_eol(const char *s, size_t len)
{
    const char *nl = memchr(s, '\n', len);
    const char *cr = memchr(s, '\r', nl ? (size_t)(nl - s) : len);
    return cr ? cr : nl;
}

int sw_sse_feed(struct sw_sse *p, const char *bytes, size_t len)
{
    size_t i = 0;
    int err;

    if (p->err)
        return p->err;
    while (i < len) {
        if (p->last_cr) {
            p->last_cr = 0;
            if (bytes[i] == '\n') {
                i++;
                continue;
            }
        }
        const char *eol = find_eol(bytes + i, len - i);
        size_t n = eol ? (size_t)(eol - (bytes + i)) : len - i;
        if (eol && p->line.len == 0) {
            /* The whole line is in this feed: parsed where it is, not
             * copied into `line` first (the same bound applies). */
            if (n > p->line.max || p->data.len > p->line.max - n) {
                err = SW_ETOOBIG;
                goto fail;
            }
            p->last_cr = *eol == '\r';
            err = on_line(p, bytes + i, n);
            i += n + 1;
            if (err)
                goto fail;
            continue;
        }
        err = append_line(p, bytes + i, n);
        if (err)
            goto fail;
        if (!eol)
            break;
        p->last_cr = *eol == '\r';
        i += n + 1;
        err = on_line(p, p->line.ptr ? p->line.ptr : "", p->line.len);
        if (err)
            goto fail;
    }
    return SW_OK;

fail:
    p->err = err;
    return err;
}
