/* The text an answer is judged on, streamed or whole: the content, or when
 * a tool is forced (an Anthropic client's tool_choice) that tool's
 * arguments / input. Collected chunk by chunk for a stream, bounded like a
 * non-streamed answer. Pure: no I/O, no clock. */
#ifndef SW_CONTRACT_COLLECT_H
#define SW_CONTRACT_COLLECT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/buf.h"

struct sw_contract_collect {
    const char *tool;           /* the forced tool (borrowed), NULL: the content is judged */
    struct sw_buf text;         /* what streamed so far */
    bool overflow;              /* the text passed its bound: judged as no JSON */
    int block;                  /* Anthropic stream: the tool's tool_use block, -1 none, -2 done */
    bool called;                /* Anthropic stream: that block started */
};

/* Prepares *c for a new stream of at most max_bytes (frees what it held). */
void sw_contract_collect_init(struct sw_contract_collect *c, const char *tool, size_t max_bytes);
void sw_contract_collect_free(struct sw_contract_collect *c);
/* One OpenAI chunk (borrowed): its choices[0].delta.content, or the forced
 * tool's arguments (its only call). */
void sw_contract_collect_chunk(struct sw_contract_collect *c, const json_t *chunk);
/* One event of an Anthropic stream (borrowed, `type` its type): the
 * input_json_delta fragments of the forced tool's tool_use block (no
 * forced tool: the text blocks' text_delta fragments). */
void sw_contract_collect_native(struct sw_contract_collect *c, const char *type, const json_t *ev);
/* The judged text of a stream of OpenAI chunks: NULL after an overflow
 * (*len is then what was kept), else the text ("" when none). */
const char *sw_contract_collected(const struct sw_contract_collect *c, size_t *len);
/* The same for an Anthropic stream: the tool's input; "{}" when it was
 * called with no fragments (an empty input); NULL (len 0) when it was not
 * called, NULL after an overflow. */
const char *sw_contract_collected_native(const struct sw_contract_collect *c, size_t *len);

/* The judged text of a whole OpenAI answer (borrowed from it): the first
 * choice's message.content, or the forced tool's call's arguments; NULL
 * when there is none (*len 0). */
const char *sw_contract_answer_text(const json_t *answer, const char *tool, size_t *len);
/* The same for a whole Anthropic answer: the forced tool's tool_use input
 * as compact JSON (malloc'ed), NULL when it was not called; no forced tool:
 * the text blocks joined. */
char *sw_contract_native_answer_text(const json_t *answer, const char *tool);

#endif
