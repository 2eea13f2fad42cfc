/* The one place the daemon reads the clock. Pure modules never include this:
 * they receive `now` as an argument. */
#ifndef SW_COMMON_CLOCK_H
#define SW_COMMON_CLOCK_H

#include <stdint.h>

/* Monotonic milliseconds (CLOCK_MONOTONIC), for deadlines and durations. */
int64_t sw_now_ms(void);
/* Wall-clock seconds since the epoch, for "created" fields and logs. */
int64_t sw_wall_s(void);
/* Wall-clock milliseconds since the epoch (spend windows align to UTC hours/days). */
int64_t sw_wall_ms(void);

#endif
