/* The per-request placeholder map; see map.h. */
#include "pii/map.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"

#define SLOTS 8192              /* power of two, 2 * SW_PII_MAP_MAX_ENTRIES */

struct entry {
    char *value;                /* owned; NULL for a reserved placeholder */
    size_t vlen;
    char ph[SW_PII_MAX_PLACEHOLDER + 1];
    size_t phlen;
};

struct sw_pii_map {
    struct entry *ent;
    size_t n, cap;
    size_t bytes;               /* value bytes held */
    uint32_t next[SW_PII_MAX_TYPES];        /* last number issued per type */
    uint32_t *by_value;         /* SLOTS: entry index + 1, 0 empty */
    uint32_t *by_ph;
    size_t issued;
};

static uint64_t hash(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ull;
    }
    return h ^ (h >> 29);
}

struct sw_pii_map *sw_pii_map_new(void)
{
    struct sw_pii_map *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    /* The indexes are allocated on first use: most requests carry no PII. */
    return m;
}

void sw_pii_map_free(struct sw_pii_map *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->n; i++) {
        if (m->ent[i].value) {
            explicit_bzero(m->ent[i].value, m->ent[i].vlen);
            free(m->ent[i].value);
        }
    }
    if (m->ent)
        explicit_bzero(m->ent, m->cap * sizeof *m->ent);
    free(m->ent);
    free(m->by_value);
    free(m->by_ph);
    free(m);
}

size_t sw_pii_map_size(const struct sw_pii_map *m)
{
    return m ? m->issued : 0;
}

static int ensure(struct sw_pii_map *m)
{
    if (!m->by_value) {
        m->by_value = calloc(SLOTS, sizeof *m->by_value);
        m->by_ph = calloc(SLOTS, sizeof *m->by_ph);
        if (!m->by_value || !m->by_ph)
            return SW_ENOMEM;
    }
    if (m->n == SW_PII_MAP_MAX_ENTRIES)
        return SW_ETOOBIG;
    if (m->n == m->cap) {
        size_t nc = m->cap ? m->cap * 2 : 16;
        struct entry *ne = calloc(nc, sizeof *ne);
        if (!ne)
            return SW_ENOMEM;
        if (m->n) {
            memcpy(ne, m->ent, m->n * sizeof *ne);
            explicit_bzero(m->ent, m->cap * sizeof *m->ent);
        }
        free(m->ent);
        m->ent = ne;
        m->cap = nc;
    }
    return SW_OK;
}

static uint32_t *find_ph(const struct sw_pii_map *m, const char *ph, size_t phlen)
{
    size_t i = hash(ph, phlen) & (SLOTS - 1);
    for (;; i = (i + 1) & (SLOTS - 1)) {
        uint32_t k = m->by_ph[i];
        if (!k)
            return &m->by_ph[i];
        const struct entry *en = &m->ent[k - 1];
        if (en->phlen == phlen && !memcmp(en->ph, ph, phlen))
            return &m->by_ph[i];
    }
}

int sw_pii_map_reserve(struct sw_pii_map *m, const char *ph, size_t phlen)
{
    if (phlen > SW_PII_MAX_PLACEHOLDER)
        return SW_OK;       /* can never be issued */
    int rc = ensure(m);
    if (rc == SW_ETOOBIG && m->by_ph && *find_ph(m, ph, phlen))
        return SW_OK;
    if (rc)
        return rc;
    uint32_t *slot = find_ph(m, ph, phlen);
    if (*slot)
        return SW_OK;
    struct entry *en = &m->ent[m->n];
    memcpy(en->ph, ph, phlen);
    en->ph[phlen] = '\0';
    en->phlen = phlen;
    en->value = NULL;
    *slot = (uint32_t)++m->n;
    return SW_OK;
}

int sw_pii_map_put(struct sw_pii_map *m, int type, const char *tag, const char *value,
                   size_t vlen, const char **ph, size_t *phlen)
{
    if (type < 0 || type >= SW_PII_MAX_TYPES)
        return SW_EINVAL;
    if (m->by_value) {
        size_t i = hash(value, vlen) & (SLOTS - 1);
        for (;; i = (i + 1) & (SLOTS - 1)) {
            uint32_t k = m->by_value[i];
            if (!k)
                break;
            const struct entry *en = &m->ent[k - 1];
            if (en->vlen == vlen && !memcmp(en->value, value, vlen)) {
                *ph = en->ph;
                *phlen = en->phlen;
                return SW_OK;
            }
        }
    }
    if (m->bytes + vlen > SW_PII_MAP_MAX_BYTES)
        return SW_ETOOBIG;
    int rc = ensure(m);
    if (rc)
        return rc;
    struct entry *en = &m->ent[m->n];
    uint32_t *slot;
    for (;;) {
        uint32_t num = ++m->next[type];
        if (num > 9999)
            return SW_ETOOBIG;
        int l = snprintf(en->ph, sizeof en->ph, "[%s_%u]", tag, num);
        if (l < 0 || (size_t)l >= sizeof en->ph)
            return SW_EINVAL;
        en->phlen = (size_t)l;
        slot = find_ph(m, en->ph, en->phlen);
        if (!*slot)
            break;      /* reserved or (impossible) issued: take the next number */
    }
    en->value = malloc(vlen ? vlen : 1);
    if (!en->value)
        return SW_ENOMEM;
    memcpy(en->value, value, vlen);
    en->vlen = vlen;
    *slot = (uint32_t)(m->n + 1);
    size_t i = hash(value, vlen) & (SLOTS - 1);
    while (m->by_value[i])
        i = (i + 1) & (SLOTS - 1);
    m->by_value[i] = (uint32_t)(m->n + 1);
    m->n++;
    m->issued++;
    m->bytes += vlen;
    *ph = en->ph;
    *phlen = en->phlen;
    return SW_OK;
}

const char *sw_pii_map_get(const struct sw_pii_map *m, const char *ph, size_t phlen,
                           size_t *vlen)
{
    if (!m || !m->by_ph || phlen > SW_PII_MAX_PLACEHOLDER)
        return NULL;
    uint32_t k = *find_ph(m, ph, phlen);
    if (!k || !m->ent[k - 1].value)
        return NULL;
    *vlen = m->ent[k - 1].vlen;
    return m->ent[k - 1].value;
}
