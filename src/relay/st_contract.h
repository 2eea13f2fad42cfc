/* The output-contract stage: the answer's content (or an Anthropic
 * client's forced tool input) judged against the request's schema
 * (contract/), whole or collected from the stream. The verdict goes to the
 * decision log; a violation is counted per backend and logged (never the
 * content). What a violation does is the model's contract policy:
 *
 *  - whole answer, on_violation retry: FAILOVER to the other tier once
 *    (neutral: the backend did not fail); reject, or a retry that broke it
 *    again: REFUSE, 502 contract_violation; pass: served as it is.
 *  - stream, stream: enforce: the client's stream ends with an error event
 *    instead of its end (the answer was already on its way). */
#ifndef SW_RELAY_ST_CONTRACT_H
#define SW_RELAY_ST_CONTRACT_H

#include <stdbool.h>

#include "config/config.h"
#include "contract/collect.h"
#include "obs/obs.h"
#include "relay/st_dialect.h"
#include "relay/stage.h"

struct sw_contract_stage {
    /* the request's */
    const json_t *schema;           /* borrowed from the request body */
    const char *tool;               /* the forced tool, NULL: the content is judged */
    const struct sw_config_model *model;
    const struct sw_config *cfg;
    const char *id, *public_model;  /* borrowed */
    struct sw_obs_sinks *obs;       /* the contract counter; may be NULL */
    struct sw_dialect_stage *client;    /* writes the client's error event */
    const char *verdict;            /* static verdict name for the log; NULL: not judged */
    bool retried;                   /* the other tier was asked after a violation */
    /* the attempt's */
    const struct sw_config_backend *be;
    bool native;                    /* the client's own API end to end */
    struct sw_contract_collect col;
};

extern const struct sw_stage_ops sw_contract_stage_ops;

void sw_contract_stage_free(struct sw_contract_stage *c);

#endif
