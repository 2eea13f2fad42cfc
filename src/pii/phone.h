/* Phone number validation by libphonenumber (phone.cc, C++ behind a C API).
 * Runs only on the candidates the vectorscan pass found. Thread-safe; never
 * logs (libphonenumber's logger is replaced by a null logger). */
#ifndef SW_PII_PHONE_H
#define SW_PII_PHONE_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Whether cc (two upper-case letters) is a region libphonenumber knows. */
bool sw_pii_phone_region_ok(const char *cc);
/* Compiles the validation rules of the n regions ahead of the first scan. */
void sw_pii_phone_warm(const char (*regions)[3], size_t n);
/* Whether s[0..len) (digits and punctuation as written) is a valid number:
 * starting with '+', in international notation (any country); else a
 * national number valid for one of the n regions (two-letter codes). */
bool sw_pii_phone_valid(const char *s, size_t len, const char (*regions)[3], size_t n);
/* Whether s[0..len), in national notation, has the length of a fixed-line or
 * mobile number of one of the n regions (valid or not). */
bool sw_pii_phone_possible(const char *s, size_t len, const char (*regions)[3], size_t n);

/* Whether nsn (a national significant number: digits only, NUL-terminated)
 * is valid for region by the compiled rules sw_pii_phone_valid uses (1 or 0,
 * -1: the region has none and libphonenumber decides), with *lib set to
 * libphonenumber's own IsValidNumberForRegion. For tests: the two agree. */
int sw_pii_phone_rules_vs_lib(const char *region, const char *nsn, int *lib);
/* Whether s[0..len) ('+' and digits with " ().-/") is a possible number by
 * the direct check sw_pii_phone_valid uses (1 or 0, -1: Parse decides), with
 * *parse set to libphonenumber's Parse + IsPossibleNumber. For tests. */
int sw_pii_phone_intl_vs_parse(const char *s, size_t len, int *parse);

#ifdef __cplusplus
}
#endif

#endif
