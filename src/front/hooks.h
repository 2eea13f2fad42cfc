/* What the admin API asks of the daemon (sw_front_set_hooks). reload returns
 * SW_OK or writes why not into msg. */
#ifndef SW_FRONT_HOOKS_H
#define SW_FRONT_HOOKS_H

#include <stddef.h>

struct sw_front_hooks {
    int (*reload)(void *ud, char *msg, size_t cap);
    void *ud;
};

#endif
