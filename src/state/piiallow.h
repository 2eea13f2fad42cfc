/* The PII engines of a config's known-safe lists (pii.allow, keys[].pii_allow,
 * models[].pii_allow): one per model, and one per model for each key with a
 * list of its own, each allowing the file's, the key's and the model's
 * values together. They share the root engine's compiled patterns. */
#ifndef SW_STATE_PIIALLOW_H
#define SW_STATE_PIIALLOW_H

#include <stddef.h>

struct sw_config;
struct sw_config_key;
struct sw_config_model;
struct sw_pii_engine;

struct sw_piiallow {
    const struct sw_pii_engine *root;
    size_t n_models;
    size_t *row;                    /* per key: its row (0: no list of its own) */
    struct sw_pii_engine **e;       /* rows x n_models; NULL: the root (nothing allowed) */
    size_t n_e;
};

/* SW_OK, SW_ENOMEM, or SW_EINVAL with a message in err (a list the config
 * check let through). root borrowed: it outlives a. */
int sw_piiallow_build(struct sw_piiallow *a, const struct sw_config *cfg,
                      const struct sw_pii_engine *root, char *err, size_t errlen);
void sw_piiallow_free(struct sw_piiallow *a);

/* The engine for a request of `key` (NULL: auth off) for `model`, both of
 * the config a was built from; the root when no list applies or a is empty. */
const struct sw_pii_engine *sw_piiallow_for(const struct sw_piiallow *a, const struct sw_config *cfg,
                                            const struct sw_config_key *key,
                                            const struct sw_config_model *model);

#endif
