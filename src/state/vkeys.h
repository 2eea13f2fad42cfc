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
 * the set it last read. A change is answered once Redis has it (the done
 * callback below); a change Redis does not take is not reported as shared:
 * a new key is dropped again, an update or a revocation stays on this
 * replica (a revocation is never undone by a later load).
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

/* How a change reaches Redis. Each change below that returns SW_OK with
 * *pending true calls done(ud, stored) exactly once, later, from the event
 * loop: stored true once Redis has it, false when Redis failed, answered an
 * error or timed out (a new key is then dropped again). *pending false: no
 * Redis (this process only), done is never called. A change Redis cannot be
 * asked to take now returns SW_ECONNECT with why set, done not called. */
typedef void (*sw_vkeys_done_fn)(void *ud, bool stored);
struct sw_vkeys_wait {
    sw_vkeys_done_fn done;
    void *ud;
    bool *pending;
};

/* Creates a key from a JSON object {name, id?, team?, budget?, rpm?, tpm?,
 * models?, max_tier?, on_budget?}: the secret is generated and written to
 * secret (cap >= 48), shown this once. SW_OK; SW_EINVAL with why set (a
 * field, a duplicate id or name, an unknown team); SW_EUNAVAILABLE when full;
 * SW_ECONNECT when Redis cannot take it now (no key is created). */
int sw_vkeys_create(struct sw_vkeys *v, const struct sw_config *cfg, const struct json_t *req,
                    char *secret, size_t cap, const struct sw_config_key **out, char *why,
                    size_t why_cap, const struct sw_vkeys_wait *w);

/* Updates the rules (and name, team) of a runtime key from the same JSON
 * fields (absent ones stay). SW_ENOTFOUND for an unknown or revoked id;
 * SW_ECONNECT when Redis cannot take it now (the change applies on this
 * replica only). */
int sw_vkeys_update(struct sw_vkeys *v, const struct sw_config *cfg, const char *id,
                    const struct json_t *req, const struct sw_config_key **out, char *why,
                    size_t why_cap, const struct sw_vkeys_wait *w);

/* Revokes a key: refused from now on (every replica: see above).
 * SW_ENOTFOUND for an unknown or revoked id (a revocation Redis has not taken
 * may be asked for again). SW_ECONNECT (why set) when Redis cannot take it
 * now: refused on this replica, and written again on each sync until Redis
 * takes it. */
int sw_vkeys_revoke(struct sw_vkeys *v, const char *id, char *why, size_t why_cap,
                    const struct sw_vkeys_wait *w);

/* Calls fn for each runtime key (revoked ones too, with revoked set). */
void sw_vkeys_each(struct sw_vkeys *v,
                   void (*fn)(void *ud, const struct sw_config_key *k, bool revoked,
                              int64_t created_ms),
                   void *ud);

#endif
