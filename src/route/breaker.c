/* Circuit breaker: see breaker.h for the states and the choices. */
#include "route/breaker.h"

#include "common/err.h"

static int64_t cap_retry_after(int64_t retry_after_ms)
{
    if (retry_after_ms <= 0)
        return 0;
    return retry_after_ms > SW_BREAKER_MAX_RETRY_AFTER_MS ? SW_BREAKER_MAX_RETRY_AFTER_MS
                                                          : retry_after_ms;
}

static void clear_failures(struct sw_breaker *b)
{
    b->fail_head = 0;
    b->fail_n = 0;
    b->retry_until_ms = 0;
}

/* Enter OPEN from CLOSED or HALF_OPEN. */
static void trip(struct sw_breaker *b, int64_t now_ms, int64_t retry_after_ms)
{
    int64_t until = now_ms + b->cooldown_ms;
    int64_t ra = cap_retry_after(retry_after_ms);
    if (ra && now_ms + ra > until)
        until = now_ms + ra;
    if (b->retry_until_ms > until)
        until = b->retry_until_ms;
    b->state = SW_BREAKER_OPEN;
    b->open_until_ms = until;
    b->probe_out = false;
    b->opened_total++;
    clear_failures(b);
}

int sw_breaker_init(struct sw_breaker *b, int threshold, int64_t window_ms, int64_t cooldown_ms)
{
    int err = SW_OK;
    *b = (struct sw_breaker){0};
    if (threshold > SW_BREAKER_MAX_THRESHOLD) {
        err = SW_EINVAL;
        threshold = 0;
    }
    b->threshold = threshold > 0 ? threshold : SW_BREAKER_DEFAULT_THRESHOLD;
    b->window_ms = window_ms > 0 ? window_ms : SW_BREAKER_DEFAULT_WINDOW_MS;
    b->cooldown_ms = cooldown_ms > 0 ? cooldown_ms : SW_BREAKER_DEFAULT_COOLDOWN_MS;
    b->state = SW_BREAKER_CLOSED;
    return err;
}

enum sw_breaker_state sw_breaker_state(struct sw_breaker *b, int64_t now_ms)
{
    if (b->state == SW_BREAKER_OPEN && now_ms >= b->open_until_ms) {
        b->state = SW_BREAKER_HALF_OPEN;
        b->probe_out = false;
    }
    return b->state;
}

bool sw_breaker_probe_free(struct sw_breaker *b, int64_t now_ms)
{
    return sw_breaker_state(b, now_ms) == SW_BREAKER_HALF_OPEN && !b->probe_out;
}

bool sw_breaker_allow(struct sw_breaker *b, int64_t now_ms)
{
    switch (sw_breaker_state(b, now_ms)) {
    case SW_BREAKER_CLOSED:
        return true;
    case SW_BREAKER_HALF_OPEN:
        if (!b->probe_out) {
            b->probe_out = true;
            b->probes_total++;
            return true;
        }
        break;
    case SW_BREAKER_OPEN:
        break;
    }
    b->rejected_total++;
    return false;
}

void sw_breaker_on_success(struct sw_breaker *b, int64_t now_ms)
{
    if (sw_breaker_state(b, now_ms) != SW_BREAKER_HALF_OPEN)
        return;
    b->state = SW_BREAKER_CLOSED;
    b->probe_out = false;
    b->closed_total++;
    clear_failures(b);
}

void sw_breaker_on_failure(struct sw_breaker *b, int64_t now_ms, int64_t retry_after_ms)
{
    int64_t ra = cap_retry_after(retry_after_ms);

    if (now_ms > b->last_fail_ms)
        b->last_fail_ms = now_ms;
    switch (sw_breaker_state(b, now_ms)) {
    case SW_BREAKER_OPEN:
        if (ra && now_ms + ra > b->open_until_ms)
            b->open_until_ms = now_ms + ra;
        return;
    case SW_BREAKER_HALF_OPEN:
        trip(b, now_ms, ra);
        return;
    case SW_BREAKER_CLOSED:
        break;
    }

    if (ra && now_ms + ra > b->retry_until_ms)
        b->retry_until_ms = now_ms + ra;
    b->fail_ms[b->fail_head] = now_ms;
    b->fail_head = (b->fail_head + 1) % b->threshold;
    if (b->fail_n < b->threshold)
        b->fail_n++;
    /* With the ring full, fail_head indexes the oldest of the last `threshold`
     * failures: all of them are in the window iff that one is. */
    if (b->fail_n == b->threshold && now_ms - b->fail_ms[b->fail_head % b->threshold] < b->window_ms)
        trip(b, now_ms, ra);
}

void sw_breaker_release_probe(struct sw_breaker *b)
{
    if (b->state == SW_BREAKER_HALF_OPEN)
        b->probe_out = false;
}

int64_t sw_breaker_open_until(struct sw_breaker *b, int64_t now_ms)
{
    return sw_breaker_state(b, now_ms) == SW_BREAKER_OPEN ? b->open_until_ms : 0;
}

bool sw_breaker_panic_free(struct sw_breaker *b, int64_t now_ms)
{
    return sw_breaker_state(b, now_ms) != SW_BREAKER_CLOSED && b->panic_out < SW_BREAKER_PANIC_MAX;
}

bool sw_breaker_allow_panic(struct sw_breaker *b, int64_t now_ms)
{
    if (!sw_breaker_panic_free(b, now_ms))
        return false;
    b->panic_out++;
    b->panic_total++;
    return true;
}

void sw_breaker_panic_end(struct sw_breaker *b, int64_t now_ms, int64_t sent_ms,
                          enum sw_breaker_verdict v)
{
    if (b->panic_out > 0)
        b->panic_out--;
    enum sw_breaker_state st = sw_breaker_state(b, now_ms);
    if (v == SW_BREAKER_ANSWERED && st != SW_BREAKER_CLOSED && b->last_fail_ms < sent_ms) {
        b->state = SW_BREAKER_CLOSED;
        b->probe_out = false;
        b->closed_total++;
        clear_failures(b);
        /* Probation: one answer proves the backend answers, not that it is
         * well. The ring holds threshold - 1 failures at now, so the next
         * qualifying failure within window_ms opens it again. */
        for (int i = 0; i < b->threshold - 1; i++) {
            b->fail_ms[b->fail_head] = now_ms;
            b->fail_head = (b->fail_head + 1) % b->threshold;
            b->fail_n++;
        }
    } else if (v == SW_BREAKER_FAILED && st == SW_BREAKER_OPEN &&
               now_ms + b->cooldown_ms > b->open_until_ms) {
        b->open_until_ms = now_ms + b->cooldown_ms;
    }
}

void sw_breaker_reset(struct sw_breaker *b)
{
    b->state = SW_BREAKER_CLOSED;
    b->probe_out = false;
    b->open_until_ms = 0;
    clear_failures(b);
}

bool sw_breaker_qualifies(int http_status, int transport_err)
{
    if (transport_err != SW_OK)
        return transport_err == SW_ECONNECT || transport_err == SW_ETIMEOUT;
    switch (http_status) {
    case 429:
    case 502:
    case 503:
    case 504:
    case 529: /* Anthropic's "overloaded" */
        return true;
    default:
        return false;
    }
}

void sw_breaker_force_open(struct sw_breaker *b, int64_t now_ms, int64_t until_ms)
{
    if (until_ms <= now_ms)
        return;
    if (b->state != SW_BREAKER_OPEN) {
        b->opened_total++;
        b->state = SW_BREAKER_OPEN;
        b->open_until_ms = until_ms;
    } else if (until_ms > b->open_until_ms) {
        b->open_until_ms = until_ms;
    }
    b->probe_out = false;
}
