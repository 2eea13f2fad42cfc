/* The prefix identity of a request body as the simulator's prefix cache
 * sees it (model.h, struct sw_llmsim_prefix): block 0 holds the system
 * prompt (OpenAI leading system/developer messages, Anthropic `system`,
 * Responses `instructions`) and the tools, then one block per message (or
 * Responses input item); each hash covers its block's compact JSON and
 * every block before it. Token counts are prompt_tokens in proportion to
 * the bytes up to each boundary. Pure (jansson only). */
#ifndef SW_LLMSIM_PREFIX_H
#define SW_LLMSIM_PREFIX_H

#include <jansson.h>

#include "model.h"

void sw_llmsim_prefix_of(const json_t *root, int prompt_tokens, struct sw_llmsim_prefix *out);

#endif
