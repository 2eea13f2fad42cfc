#include "front/ticks.h"

#include <stddef.h>

#include "common/clock.h"
#include "common/err.h"

void sw_ticks_lag_record(struct sw_ticks *t, int64_t now_ms)
{
    int64_t late = now_ms - t->lag_last_ms - SW_TICKS_LAG_MS;
    t->lag_ms[t->lag_i++ % SW_TICKS_LAG_N] = late > 0 ? late : 0;
    t->lag_last_ms = now_ms;
}

double sw_ticks_lag_ms(const struct sw_ticks *t)
{
    int64_t worst = 0;
    for (int i = 0; i < SW_TICKS_LAG_N; i++)
        if (t->lag_ms[i] > worst)
            worst = t->lag_ms[i];
    return (double)worst;
}

static void on_lag_tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    sw_ticks_lag_record(arg, sw_now_ms());
}

static void on_second(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct sw_ticks *t = arg;
    t->each_second(t->ud);
}

int sw_ticks_start(struct sw_ticks *t, struct event_base *base, void (*each_second)(void *ud),
                   void *ud)
{
    t->each_second = each_second;
    t->ud = ud;
    t->lag_timer = event_new(base, -1, EV_PERSIST, on_lag_tick, t);
    if (!t->lag_timer)
        return SW_ENOMEM;
    t->lag_last_ms = sw_now_ms();
    struct timeval lag_tv = {0, SW_TICKS_LAG_MS * 1000};
    event_add(t->lag_timer, &lag_tv);
    t->second_timer = event_new(base, -1, EV_PERSIST, on_second, t);
    if (!t->second_timer)
        return SW_ENOMEM;
    event_add(t->second_timer, &(struct timeval){1, 0});
    return SW_OK;
}

void sw_ticks_stop(struct sw_ticks *t)
{
    if (t->lag_timer)
        event_free(t->lag_timer);
    if (t->second_timer)
        event_free(t->second_timer);
    t->lag_timer = t->second_timer = NULL;
}
