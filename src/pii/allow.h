/* Known-safe values of an engine (sw_pii_engine_allowing): a detected span
 * that is one of them is reported as SW_PII_ALLOWED, never as an entity. */
#ifndef SW_PII_ALLOW_H
#define SW_PII_ALLOW_H

#include <stdbool.h>
#include <stddef.h>

struct sw_pii_allow {
    char **values;              /* exact values; e-mail addresses compared in any case */
    size_t n_values;
    char **domains;             /* lower case: an e-mail address at one, or at a subdomain */
    size_t n_domains;
};

/* A copy of the lists, checked: SW_OK, SW_EINVAL with a message in err
 * (empty, too long, too many, a domain that is not a host name), SW_ENOMEM. */
int sw_pii_allow_build(struct sw_pii_allow *a, const char *const *values, size_t n_values,
                       const char *const *domains, size_t n_domains, char *err, size_t errlen);
void sw_pii_allow_free(struct sw_pii_allow *a);

/* Whether the span v[0..n) of type `type` is allowed. */
bool sw_pii_allow_match(const struct sw_pii_allow *a, int type, const char *v, size_t n);

#endif
