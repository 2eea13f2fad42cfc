#include "common/loop.h"

struct event_base *sw_loop_new(void)
{
    struct event_config *cfg = event_config_new();
    if (!cfg)
        return NULL;
    event_config_set_max_dispatch_interval(cfg, NULL, SW_LOOP_BATCH, SW_PRI_DEFAULT);
    struct event_base *base = event_base_new_with_config(cfg);
    event_config_free(cfg);
    if (base && event_base_priority_init(base, SW_PRI_N) != 0) {
        event_base_free(base);
        return NULL;
    }
    return base;
}

int sw_loop_pri(struct event *ev, enum sw_loop_pri pri)
{
    int n = event_base_get_npriorities(event_get_base(ev));
    return event_priority_set(ev, (int)pri < n ? (int)pri : n - 1);
}
