/* Verdicts by string for a second walk; see memo.h. */
#include "pii/memo.h"

#include <stdlib.h>
#include <string.h>

#define MIN_SLOTS 64
#define MAX_SPANS ((size_t)UINT32_MAX)

void sw_pii_memo_init(struct sw_pii_memo *m)
{
    memset(m, 0, sizeof *m);
}

void sw_pii_memo_free(struct sw_pii_memo *m)
{
    free(m->tab);
    free(m->sp);
    memset(m, 0, sizeof *m);
}

static size_t slot_of(const json_t *str, bool json, size_t cap)
{
    uint64_t h = ((uint64_t)(uintptr_t)str >> 4) ^ (uint64_t)json;
    return (size_t)((h * 0x9e3779b97f4a7c15ull) >> 20) & (cap - 1);
}

bool sw_pii_memo_span(struct sw_pii_memo *m, const struct sw_pii_span *sp)
{
    if (m->full)
        return false;
    if (m->n_sp == m->cap_sp) {
        size_t cap = m->cap_sp ? m->cap_sp * 2 : 64;
        struct sw_pii_span *v = cap <= MAX_SPANS ? realloc(m->sp, cap * sizeof *v) : NULL;
        if (!v) {
            m->full = true;
            return false;
        }
        m->sp = v;
        m->cap_sp = cap;
    }
    m->sp[m->n_sp++] = *sp;
    return true;
}

/* Doubles the table (at most half full after). */
static bool grow(struct sw_pii_memo *m)
{
    size_t cap = m->cap ? m->cap * 2 : MIN_SLOTS;
    struct sw_pii_memo_ent *t = calloc(cap, sizeof *t);
    if (!t)
        return false;
    for (size_t i = 0; i < m->cap; i++) {
        const struct sw_pii_memo_ent *e = &m->tab[i];
        if (!e->str)
            continue;
        size_t s = slot_of(e->str, e->json, cap);
        while (t[s].str)
            s = (s + 1) & (cap - 1);
        t[s] = *e;
    }
    free(m->tab);
    m->tab = t;
    m->cap = cap;
    return true;
}

void sw_pii_memo_put(struct sw_pii_memo *m, const json_t *str, bool json, size_t first)
{
    if (m->full || first > m->n_sp || m->n_sp > MAX_SPANS)
        return;
    if ((m->used + 1) * 2 > m->cap && !grow(m)) {
        m->full = true;
        return;
    }
    size_t s = slot_of(str, json, m->cap);
    while (m->tab[s].str && !(m->tab[s].str == str && m->tab[s].json == json))
        s = (s + 1) & (m->cap - 1);
    if (!m->tab[s].str)
        m->used++;
    m->tab[s] = (struct sw_pii_memo_ent){str, (uint32_t)first, (uint32_t)(m->n_sp - first), json};
}

const struct sw_pii_memo_ent *sw_pii_memo_get(const struct sw_pii_memo *m, const json_t *str,
                                              bool json)
{
    if (!m->cap)
        return NULL;
    for (size_t s = slot_of(str, json, m->cap); m->tab[s].str; s = (s + 1) & (m->cap - 1))
        if (m->tab[s].str == str && m->tab[s].json == json)
            return &m->tab[s];
    return NULL;
}
