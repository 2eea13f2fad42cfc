/* Embeddings as the simulator answers them (OpenAI POST /v1/embeddings):
 * one deterministic vector per input, seeded by a hash of the input's bytes
 * (a string's UTF-8, a token array's compact JSON), drawn uniform in [-1, 1]
 * and normalised to length 1; `dimensions` long (default
 * SW_LLMSIM_EMBED_DIMS); float or base64 (little-endian float32) encoding.
 * Usage counts prompt tokens the way the gateway estimates them: ceil(bytes
 * / 4) per string, the length of each token array. Pure (jansson only). */
#ifndef SW_LLMSIM_EMBED_H
#define SW_LLMSIM_EMBED_H

#include <stddef.h>

#include <jansson.h>

#include "common/buf.h"

#define SW_LLMSIM_EMBED_DIMS 64
#define SW_LLMSIM_EMBED_MAX_DIMS 65536
#define SW_LLMSIM_EMBED_MAX_INPUTS 2048

/* Validates root (borrowed) as an embeddings request and renders the whole
 * answer into out. model: the requested one, else default_model. On
 * SW_EINVAL writes the reason to err; *prompt_tokens gets the usage. */
int sw_llmsim_embed(const json_t *root, const char *default_model, struct sw_buf *out,
                    int *prompt_tokens, char *err, size_t errlen);

/* The vector of one input (len bytes), n floats of unit length. */
void sw_llmsim_embed_vector(const char *bytes, size_t len, float *out, int n);

#endif
