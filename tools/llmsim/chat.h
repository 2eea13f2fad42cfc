/* Chat requests as the simulator sees them: minimal validation of an OpenAI
 * chat-completions or Anthropic messages body, the facts the model needs
 * (prompt-token estimate, max_tokens, stream), and the answer's text (lorem
 * words or an echo of the last user message), token by token. Pure (jansson
 * only). */
#ifndef SW_LLMSIM_CHAT_H
#define SW_LLMSIM_CHAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "common/buf.h"

enum sw_llmsim_dialect { SW_LLMSIM_OPENAI, SW_LLMSIM_ANTHROPIC, SW_LLMSIM_GEMINI };
enum sw_llmsim_reply_mode { SW_LLMSIM_REPLY_LOREM, SW_LLMSIM_REPLY_ECHO };

#define SW_LLMSIM_MODEL_MAX 256     /* longest model id kept from a request */
#define SW_LLMSIM_ECHO_MAX (8 << 20) /* longest user text kept for echo (= body limit) */

struct sw_llmsim_chat {
    bool stream;
    bool include_usage;          /* OpenAI stream_options.include_usage */
    int max_tokens;              /* max_completion_tokens / max_tokens, -1 = absent */
    char model[SW_LLMSIM_MODEL_MAX]; /* requested model, "" when absent */
    int n_messages;              /* messages (+1 for an Anthropic top-level system) */
    size_t text_bytes;           /* bytes of all message text */
    int prompt_tokens;           /* sw_llmsim_prompt_tokens(text_bytes, n_messages) */
    size_t text_pieces;          /* sw_llmsim_text_pieces of all message text */
    int prompt_tokens_pieces;    /* text_pieces + 4 per message (--tokenizer pieces) */
    struct sw_buf last_user;     /* text of the last user message (owned) */
    bool wants_json;             /* OpenAI response_format type json_schema or json_object,
                                  * or a forced tool */
    char forced_tool[128];       /* tool_choice names one tool (OpenAI {type: function},
                                  * Anthropic {type: tool}); "" = none */
    bool scripted;               /* forced_tool set by a scripted call (sw_llmsim_chat_script):
                                  * called streamed too, in every dialect */
    bool thinking;               /* Anthropic thinking.type enabled or adaptive: the answer
                                  * starts with a thinking block (echo mode) */
};

/* The prefix of a last user message that scripts a tool call (echo mode). */
#define SW_LLMSIM_SCRIPT_PREFIX "llmsim:call "

/* A scripted tool call, for clients that only call tools on their own
 * (tool_choice auto): when the request offers tools (has_tools) and the
 * last user message is "llmsim:call NAME ARGS", then, if no tool output
 * follows that message (tool_out NULL), NAME is forced with ARGS as the
 * echo (its arguments); otherwise the echo is tool_out's text (a string or
 * text parts), so the answer after the tool shows what the tool returned.
 * Anything else leaves *c as it is. SW_OK or SW_ETOOBIG. */
int sw_llmsim_chat_script(struct sw_llmsim_chat *c, bool has_tools, const json_t *tool_out);

/* Pieces of the n bytes of text s as a BPE tokenizer counts them, at most n
 * (the --tokenizer pieces count; rules in chat.c). */
size_t sw_llmsim_text_pieces(const char *s, size_t n);

/* What every request body of llmsim's starts with: *c reset (max_tokens -1,
 * the echo buffer ready), the body an object, `model` a string, `stream` a
 * boolean or null. SW_OK, or SW_EINVAL with a message in err. */
int sw_llmsim_chat_parse_head(json_t *root, struct sw_llmsim_chat *c, char *err, size_t errlen);

/* Validates root (borrowed) as a request of dialect d and fills *c. On
 * SW_EINVAL writes the reason to err. Call sw_llmsim_chat_free either way. */
int sw_llmsim_chat_parse(json_t *root, enum sw_llmsim_dialect d, struct sw_llmsim_chat *c,
                         char *err, size_t errlen);
void sw_llmsim_chat_free(struct sw_llmsim_chat *c);

/* ---- Answer text ---- */

/* Produces the answer one token at a time. lorem: words drawn from a
 * generator seeded per request; echo: the source text in pieces of 4 bytes,
 * each piece extended to the next UTF-8 character boundary. */
struct sw_llmsim_text {
    enum sw_llmsim_reply_mode mode;
    uint64_t rng;                /* lorem */
    const char *src;             /* echo: borrowed */
    size_t len, pos;             /* echo */
    int k;                       /* tokens produced so far */
};

void sw_llmsim_text_lorem(struct sw_llmsim_text *t, uint64_t seed);
void sw_llmsim_text_echo(struct sw_llmsim_text *t, const char *src, size_t len);
/* The next token's text (borrowed; empty once an echo source is used up). */
struct sw_str sw_llmsim_text_next(struct sw_llmsim_text *t);
/* Number of echo tokens in s (the 4-bytes, UTF-8-boundary rule). */
int sw_llmsim_echo_tokens(const char *s, size_t len);

#endif
