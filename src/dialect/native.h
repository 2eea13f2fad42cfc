/* One event of a client's own API passed through from a backend that speaks
 * it (no translation), as every dialect's reader returns it: what the relay
 * needs of it (its type, usage, whether it is an error, a token, the end,
 * or only a preamble) with `model` rewritten. Pure. */
#ifndef SW_DIALECT_NATIVE_H
#define SW_DIALECT_NATIVE_H

#include <jansson.h>
#include <stdbool.h>

struct sw_native_event {
    json_t *tree;               /* the event (owned by the caller once returned), the model
                                 * rewritten where the API names it; NULL: nothing to pass
                                 * on (a terminator such as [DONE]) */
    const char *type;           /* points into tree ("" without one) */
    bool error;                 /* an error event */
    char error_type[32];        /* its error type when it looks like the API's (a-z _), or "" */
    long usage_in, usage_out;   /* -1: not in this event */
    bool content;               /* carries a token (a delta) */
    bool stop;                  /* the end of the answer */
    bool preamble;              /* carries no token yet (what it made is held: an error
                                 * after it still fails over) */
};

#endif
