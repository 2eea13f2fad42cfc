/* llmsim as AWS Bedrock's runtime (--bedrock-key): the Converse and
 * ConverseStream routes, a SigV4 verifier of its own, and the answers in
 * Bedrock's wire format (JSON, and the event-stream framing with both CRCs).
 * Pure: no I/O, the time is passed in. */
#ifndef SW_LLMSIM_BEDROCK_H
#define SW_LLMSIM_BEDROCK_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/buf.h"

/* POST /model/{modelId}/converse or /converse-stream: the model id
 * percent-decoded into model. 0, or -1 when the path is not one of those. */
int sw_llmsim_bedrock_route(const char *path, char *model, size_t cap, bool *stream);

/* A request header by its name (any case); NULL when absent. */
typedef const char *(*sw_llmsim_header_fn)(void *ud, const char *name);

/* Checks a request's SigV4 Authorization header (AWS4-HMAC-SHA256) as
 * Bedrock does: the access key known, the scope's date the X-Amz-Date's,
 * region and service "bedrock", the X-Amz-Date within 5 minutes of now_s,
 * X-Amz-Content-Sha256 (when sent) the body's hash, host and x-amz-date
 * among the signed headers, and the signature of the canonical request
 * rebuilt from the signed headers' values as received. 0, or the status
 * (403) with *type the exception's name and msg Bedrock's message. */
int sw_llmsim_sigv4_verify(const char *method, const char *raw_path, const char *body,
                           size_t len, sw_llmsim_header_fn hdr, void *ud, const char *key_id,
                           const char *secret, const char *region, long long now_s,
                           const char **type, char *msg, size_t cap);

/* What one Converse request asks for. */
struct sw_llmsim_bedrock_plan {
    struct sw_buf echo;         /* the last user turn's text (or tool result): the answer */
    char tool[128];             /* a tool to call ("" none): toolChoice tool, or any's first */
    char tool_id[64];
    int max_tokens;             /* inferenceConfig.maxTokens, 0: none */
    int input_tokens;           /* echo tokens of every text of the request */
    int output_tokens;          /* of the answer (set by sw_llmsim_bedrock_parse) */
    bool length;                /* cut by max_tokens */
};

/* Reads a Converse body (borrowed). 0, or -1 with msg (a ValidationException's). */
int sw_llmsim_bedrock_parse(const json_t *req, long long seq, struct sw_llmsim_bedrock_plan *p,
                            char *msg, size_t cap);
void sw_llmsim_bedrock_plan_free(struct sw_llmsim_bedrock_plan *p);

/* The Converse answer (a new tree). */
json_t *sw_llmsim_bedrock_answer(const struct sw_llmsim_bedrock_plan *p, int latency_ms);

/* The ConverseStream answer as event-stream messages appended to out:
 * messageStart, the blocks (text deltas one echo token each; a tool call's
 * start and its input in two deltas), messageStop, metadata. With
 * error_after >= 0, an exception message of type exc (e.g.
 * "throttlingException") follows that many deltas and ends the stream; with
 * cut_after > 0 the stream ends after that many deltas, unfinished. */
int sw_llmsim_bedrock_stream(const struct sw_llmsim_bedrock_plan *p, int error_after,
                             const char *exc, int cut_after, struct sw_buf *out);

/* Bedrock's error body {"message": msg}; the exception name for a status
 * (429 ThrottlingException, 400 ValidationException, 403
 * AccessDeniedException, 404 ResourceNotFoundException, 408
 * ModelTimeoutException, 424 ModelErrorException, 503
 * ServiceUnavailableException, else InternalServerException). */
char *sw_llmsim_bedrock_error(const char *msg);
const char *sw_llmsim_bedrock_exception(int status);

#endif
