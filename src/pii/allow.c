/* Known-safe values: exact values and e-mail domains. */
#include "pii/allow.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/err.h"
#include "pii/pii.h"

static bool host_name(const char *d)
{
    size_t n = strlen(d), label = 0;
    bool dot = false;
    if (n == 0 || n > 253 || d[0] == '.' || d[n - 1] == '.')
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = d[i];
        if (c == '.') {
            if (label == 0)
                return false;
            label = 0;
            dot = true;
        } else if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-') {
            if (++label > 63)
                return false;
        } else {
            return false;
        }
    }
    return dot;
}

bool sw_pii_allow_domain_ok(const char *d)
{
    char low[SW_PII_MAX_ALLOW_LEN + 1];
    size_t n = strlen(d);
    if (n > SW_PII_MAX_ALLOW_LEN)
        return false;
    for (size_t i = 0; i <= n; i++)
        low[i] = (char)(d[i] >= 'A' && d[i] <= 'Z' ? d[i] + 32 : d[i]);
    return host_name(low);
}

static int copy_list(char ***out, const char *const *in, size_t n, bool domains, char *err,
                     size_t errlen)
{
    if (n > SW_PII_MAX_ALLOW) {
        snprintf(err, errlen, "at most %d %s", SW_PII_MAX_ALLOW, domains ? "domains" : "values");
        return SW_EINVAL;
    }
    *out = n ? calloc(n, sizeof **out) : NULL;
    if (n && !*out)
        return SW_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        size_t l = strlen(in[i]);
        if (l == 0 || l > SW_PII_MAX_ALLOW_LEN) {
            snprintf(err, errlen, "%s %zu is %s (1-%d bytes)", domains ? "domain" : "value", i,
                     l ? "too long" : "empty", SW_PII_MAX_ALLOW_LEN);
            return SW_EINVAL;
        }
        if (!((*out)[i] = strdup(in[i])))
            return SW_ENOMEM;
        if (domains) {
            for (char *c = (*out)[i]; *c; c++)
                if (*c >= 'A' && *c <= 'Z')
                    *c = (char)(*c + 32);
            if (!host_name((*out)[i])) {
                snprintf(err, errlen, "domain %zu is not a host name such as example.com", i);
                return SW_EINVAL;
            }
        }
    }
    return SW_OK;
}

int sw_pii_allow_build(struct sw_pii_allow *a, const char *const *values, size_t n_values,
                       const char *const *domains, size_t n_domains, char *err, size_t errlen)
{
    *a = (struct sw_pii_allow){0};
    a->n_values = n_values;
    a->n_domains = n_domains;
    int rc = copy_list(&a->values, values, n_values, false, err, errlen);
    if (!rc)
        rc = copy_list(&a->domains, domains, n_domains, true, err, errlen);
    if (rc)
        sw_pii_allow_free(a);
    return rc;
}

static void free_list(char **l, size_t n)
{
    for (size_t i = 0; l && i < n; i++)
        free(l[i]);
    free(l);
}

void sw_pii_allow_free(struct sw_pii_allow *a)
{
    free_list(a->values, a->n_values);
    free_list(a->domains, a->n_domains);
    *a = (struct sw_pii_allow){0};
}

/* v[0..n) is at d: its part after the last '@' is d or ends in "." d. */
static bool at_domain(const char *v, size_t n, const char *d)
{
    const char *at = memrchr(v, '@', n);
    if (!at)
        return false;
    size_t hl = n - (size_t)(at + 1 - v), dl = strlen(d);
    const char *h = at + 1;
    if (hl < dl || strncasecmp(h + hl - dl, d, dl))
        return false;
    return hl == dl || h[hl - dl - 1] == '.';
}

bool sw_pii_allow_match(const struct sw_pii_allow *a, int type, const char *v, size_t n)
{
    for (size_t i = 0; i < a->n_values; i++) {
        const char *x = a->values[i];
        if (strlen(x) == n && (type == SW_PII_EMAIL ? !strncasecmp(x, v, n) : !memcmp(x, v, n)))
            return true;
    }
    if (type != SW_PII_EMAIL)
        return false;
    for (size_t i = 0; i < a->n_domains; i++)
        if (at_domain(v, n, a->domains[i]))
            return true;
    return false;
}
