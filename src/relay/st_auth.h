/* The access-token stage: an attempt on a backend that authenticates with
 * an OAuth2 bearer (upstream/token.h) gets a valid token before its body
 * leaves. A cached token is taken at once; while its source refreshes, the
 * request hook answers PENDING and resumes when the refresh ends; a
 * refresh that failed is a FAILOVER with status 503 (the breaker counts
 * it: the backend cannot be reached), nothing sent. */
#ifndef SW_RELAY_ST_AUTH_H
#define SW_RELAY_ST_AUTH_H

#include "relay/stage.h"
#include "upstream/token.h"

struct sw_auth_stage {
    struct sw_token_source *ts;     /* the attempt's source (NULL: the stage is not run) */
    struct sw_token_wait w;
    struct sw_stage_io *io;         /* while pending */
    char *token;                    /* the attempt's token (owned), NULL: none */
};

extern const struct sw_stage_ops sw_auth_stage_ops;

/* Cancels a pending wait and frees the token (a new attempt, or the end). */
void sw_auth_stage_free(struct sw_auth_stage *a);

#endif
