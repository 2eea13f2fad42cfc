/* Runtime (virtual) keys: client keys created, updated and revoked through
 * the admin API without a reload (docs/operations.md, docs/scaling.md "Keys
 * and teams"). A key is kept as the SHA-256 of its secret, never the secret,
 * with its key_id, name, team and tenancy rules (the fields of keys[]).
 *
 * Without state.redis the keys live in this process only and are lost on
 * restart. With state.redis they live in Redis (<p>vkeys: hash key_id ->
 * JSON record, <p>vkeys:ver: a version counter): a change is written and
 * announced (PUBLISH "vkeys" on <p>events) in one script; every replica
 * reloads the set on the announcement, and also whenever the version it
 * reads on its 200 ms sync differs from the one it holds, so a missed
 * message costs at most one sync: a revoked key is refused on every replica
 * within well under a second. While Redis is unreachable a replica keeps
 * the set it last read.
 *
 * Entries are never freed while the process runs (revoked ones stay,
 * marked), so a request in flight may keep borrowing its key. Bounded:
 * SW_VKEYS_MAX. */
#ifndef SW_STATE_VKEYS_H
#define SW_STATE_VKEYS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/config.h"

#define SW_VKEYS_MAX 1024
#define SW_VKEYS_MODEL_MAX 128

struct sw_vkeys;
struct sw_rstate;
struct json_t;

struct sw_vkeys *sw_vkeys_new(void);
void sw_vkeys_free(struct sw_vkeys *v);
/* Shared on Redis from now on (NULL: this process only): hooks itself to
 * rs's announcements and sync tick (sw_rstate_hook). */
void sw_vkeys_set_redis(struct sw_vkeys *v, struct sw_rstate *rs, const char *prefix);

/* The live key whose secret hashes to SHA-256(bearer); NULL when none or
 * revoked. team_index is resolved against cfg. Borrowed, valid for the
 * process's life. */
const struct sw_config_key *sw_vkeys_find(struct sw_vkeys *v, const struct sw_config *cfg,
                                          const char *bearer);

/* Whether a key_id is a runtime key's (live or revoked). */
bool sw_vkeys_has_id(const struct sw_vkeys *v, const char *id);

/* Creates a key from a JSON object {name, id?, team?, budget?, rpm?, tpm?,
 * models?, max_tier?, on_budget?}: the secret is generated and written to
 * secret (cap >= 48), shown this once. SW_OK; SW_EINVAL with why set (a
 * field, a duplicate id or name, an unknown team); SW_EUNAVAILABLE when full. */
int sw_vkeys_create(struct sw_vkeys *v, const struct sw_config *cfg, const struct json_t *req,
                    char *secret, size_t cap, const struct sw_config_key **out, char *why,
                    size_t why_cap);

/* Updates the rules (and name, team) of a runtime key from the same JSON
 * fields (absent ones stay). SW_ENOTFOUND for an unknown or revoked id. */
int sw_vkeys_update(struct sw_vkeys *v, const struct sw_config *cfg, const char *id,
                    const struct json_t *req, const struct sw_config_key **out, char *why,
                    size_t why_cap);

/* Revokes a key: refused from now on (every replica: see above). */
int sw_vkeys_revoke(struct sw_vkeys *v, const char *id);

/* Calls fn for each runtime key (revoked ones too, with revoked set). */
void sw_vkeys_each(struct sw_vkeys *v,
                   void (*fn)(void *ud, const struct sw_config_key *k, bool revoked,
                              int64_t created_ms),
                   void *ud);

#endif
