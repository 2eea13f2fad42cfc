/* The front's two clocks on the event loop: the event-loop lag ring (a timer
 * due every SW_TICKS_LAG_MS records how late it fired; the gauge is the worst
 * of the last SW_TICKS_LAG_N ticks) and a one-second timer that calls back
 * whoever samples the dashboard's series. Neither knows the front or the
 * admin endpoints: front.c starts them, admin.c reads the lag. */
#ifndef SW_FRONT_TICKS_H
#define SW_FRONT_TICKS_H

#include <stdint.h>

#include <event2/event.h>

#define SW_TICKS_LAG_MS 100
#define SW_TICKS_LAG_N 10

struct sw_ticks {
    struct event *lag_timer;
    int64_t lag_last_ms;
    int64_t lag_ms[SW_TICKS_LAG_N];
    unsigned lag_i;
    struct event *second_timer;
    void (*each_second)(void *ud);
    void *ud;
};

/* Starts both timers on base (t zeroed before); each_second(ud) runs once a
 * second. SW_OK, or SW_ENOMEM with whatever was made left for sw_ticks_stop. */
int sw_ticks_start(struct sw_ticks *t, struct event_base *base, void (*each_second)(void *ud),
                   void *ud);
/* Frees the timers; t may be zeroed or half started. */
void sw_ticks_stop(struct sw_ticks *t);

/* One lag tick at now_ms (the timer's callback; tests pass a fake clock). */
void sw_ticks_lag_record(struct sw_ticks *t, int64_t now_ms);
/* The worst event-loop lag (ms) of the last SW_TICKS_LAG_N ticks. */
double sw_ticks_lag_ms(const struct sw_ticks *t);

#endif
