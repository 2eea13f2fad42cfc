/* The collected validation messages of a config file, each
 * "file:line:col: key: message" (filled by the walker, config/walk.h; freed
 * with sw_config_errors_free, config/config.h). */
#ifndef SW_CONFIG_ERRORS_H
#define SW_CONFIG_ERRORS_H

#include <stddef.h>

struct sw_config_errors {
    char **msgs;
    size_t n;
};

#endif
