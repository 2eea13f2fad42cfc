/* Diagnostics to stderr, one line each: "2026-11-30T07:01:02.123Z level msg".
 * Never pass prompt or answer text, API keys or PII to these functions. */
#ifndef SW_COMMON_LOG_H
#define SW_COMMON_LOG_H

enum sw_log_level { SW_LOG_DEBUG, SW_LOG_INFO, SW_LOG_WARN, SW_LOG_ERROR };

void sw_log_set_level(enum sw_log_level level);
void sw_log(enum sw_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#define sw_debug(...) sw_log(SW_LOG_DEBUG, __VA_ARGS__)
#define sw_info(...) sw_log(SW_LOG_INFO, __VA_ARGS__)
#define sw_warn(...) sw_log(SW_LOG_WARN, __VA_ARGS__)
#define sw_error(...) sw_log(SW_LOG_ERROR, __VA_ARGS__)

/* Counts one more of a repeated event in *n; true at the 1st, 2nd, 4th, 8th,
 * ... : the ones to log, so a flood of them logs little. */
static inline int sw_log_doubling(unsigned long *n)
{
    unsigned long k = ++*n;
    return (k & (k - 1)) == 0;
}

#endif
