/* Per key and model PII engines for the known-safe lists. */
#include "state/piiallow.h"

#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "config/config.h"
#include "pii/pii.h"

static bool empty(const struct sw_config_pii_allow *l)
{
    return !l || (l->n_values == 0 && l->n_domains == 0);
}

/* The lists together (borrowed strings) into v and d, which have room. */
static void gather(const struct sw_config_pii_allow *const *lists, size_t n, const char **v,
                   size_t *nv, const char **d, size_t *nd)
{
    *nv = *nd = 0;
    for (size_t i = 0; i < n; i++) {
        if (!lists[i])
            continue;
        for (size_t k = 0; k < lists[i]->n_values; k++)
            v[(*nv)++] = lists[i]->values[k];
        for (size_t k = 0; k < lists[i]->n_domains; k++)
            d[(*nd)++] = lists[i]->domains[k];
    }
}

static int build_one(const struct sw_pii_engine *root, const struct sw_config_pii_allow *const *lists,
                     struct sw_pii_engine **out, char *err, size_t errlen)
{
    size_t cap = 0;
    for (int i = 0; i < 3; i++)
        cap += lists[i] ? lists[i]->n_values + lists[i]->n_domains : 0;
    const char **v = calloc(cap ? cap : 1, sizeof *v), **d = calloc(cap ? cap : 1, sizeof *d);
    size_t nv, nd;
    int rc = v && d ? SW_OK : SW_ENOMEM;
    if (!rc) {
        gather(lists, 3, v, &nv, d, &nd);
        /* the lists together may pass the engine's bound of each: the file's,
         * the key's and the model's are each checked by the config */
        rc = sw_pii_engine_allowing(root, v, nv < SW_PII_MAX_ALLOW ? nv : SW_PII_MAX_ALLOW, d,
                                    nd < SW_PII_MAX_ALLOW ? nd : SW_PII_MAX_ALLOW, out, err, errlen);
    }
    free(v);
    free(d);
    return rc;
}

int sw_piiallow_build(struct sw_piiallow *a, const struct sw_config *cfg,
                      const struct sw_pii_engine *root, char *err, size_t errlen)
{
    *a = (struct sw_piiallow){.root = root, .n_models = cfg->n_models};
    bool any = !empty(&cfg->pii.allow);
    for (size_t m = 0; m < cfg->n_models; m++)
        any = any || !empty(&cfg->models[m].pii_allow);
    size_t rows = 1;
    for (size_t k = 0; k < cfg->n_keys; k++)
        rows += !empty(&cfg->keys[k].pii_allow);
    if (!root || !cfg->n_models || (!any && rows == 1))
        return SW_OK;
    a->row = calloc(cfg->n_keys ? cfg->n_keys : 1, sizeof *a->row);
    a->n_e = rows * cfg->n_models;
    a->e = calloc(a->n_e, sizeof *a->e);
    if (!a->row || !a->e) {
        sw_piiallow_free(a);
        return SW_ENOMEM;
    }
    size_t r = 0;
    for (size_t k = 0; k <= cfg->n_keys; k++) {
        const struct sw_config_pii_allow *key = NULL;
        if (k > 0) {
            if (empty(&cfg->keys[k - 1].pii_allow))
                continue;
            key = &cfg->keys[k - 1].pii_allow;
            a->row[k - 1] = ++r;
        }
        for (size_t m = 0; m < cfg->n_models; m++) {
            const struct sw_config_pii_allow *lists[3] = {&cfg->pii.allow, key,
                                                          &cfg->models[m].pii_allow};
            if (empty(lists[0]) && empty(lists[1]) && empty(lists[2]))
                continue;
            int rc = build_one(root, lists, &a->e[r * cfg->n_models + m], err, errlen);
            if (rc) {
                sw_piiallow_free(a);
                return rc;
            }
        }
    }
    return SW_OK;
}

void sw_piiallow_free(struct sw_piiallow *a)
{
    for (size_t i = 0; a->e && i < a->n_e; i++)
        sw_pii_engine_free(a->e[i]);
    free(a->e);
    free(a->row);
    *a = (struct sw_piiallow){.root = a->root};
}

const struct sw_pii_engine *sw_piiallow_for(const struct sw_piiallow *a, const struct sw_config *cfg,
                                            const struct sw_config_key *key,
                                            const struct sw_config_model *model)
{
    if (!a->e || !model)
        return a->root;
    size_t m = (size_t)(model - cfg->models), r = key ? a->row[key - cfg->keys] : 0;
    if (m >= a->n_models)
        return a->root;
    const struct sw_pii_engine *e = a->e[r * a->n_models + m];
    return e ? e : a->root;
}
