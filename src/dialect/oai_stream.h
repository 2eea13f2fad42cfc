/* An OpenAI client's stream: chunks as SSE events, the end, and the error
 * event that ends a stream already started. Pure: no I/O, no clock. */
#ifndef SW_DIALECT_OAI_STREAM_H
#define SW_DIALECT_OAI_STREAM_H

#include <jansson.h>

#include "common/buf.h"

/* "data: {chunk}\n\n" (the chunk borrowed). SW_OK or SW_ENOMEM. */
int sw_oai_stream_chunk(const json_t *chunk, struct sw_buf *out);
/* "data: [DONE]\n\n". */
int sw_oai_stream_finish(struct sw_buf *out);
/* data: {"error":{"message","type":"server_error","param":null,"code"}}
 * then data: [DONE] (the error event is left out only when out of memory). */
int sw_oai_stream_error(const char *code, const char *msg, struct sw_buf *out);

#endif
