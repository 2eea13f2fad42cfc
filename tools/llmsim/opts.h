/* Command-line flags of build/llmsim (documented in docs/llmsim.md). The
 * table lives in opts.c; parsing is strict: an unknown flag or a bad value is
 * an error with a message (main exits 2). */
#ifndef SW_LLMSIM_OPTS_H
#define SW_LLMSIM_OPTS_H

#include <stdbool.h>
#include <stddef.h>

#include "chat.h"
#include "faults.h"
#include "model.h"

struct sw_llmsim_opts {
    char host[64];               /* --host, default 127.0.0.1 */
    int port;                    /* --port, default 8080; 0 = ephemeral */
    enum sw_llmsim_dialect dialect;
    char model[SW_LLMSIM_MODEL_MAX]; /* --model, default "sim-model" */
    enum sw_llmsim_reply_mode reply;
    int keep_received;           /* --keep-received, default 100 */
    int n_ctx;                   /* --ctx, context size reported by /props (4096) */
    long client_timeout_ms;      /* --client-timeout-ms: receive a request; idle; write stall */
    bool verbose;                /* --verbose: one log line per request */
    bool tokenizer_pieces;       /* --tokenizer pieces: usage counts sw_llmsim_text_pieces
                                  * (default quarter: ceil(bytes / 4), the gateway's estimate) */
    char prefix[128];            /* --prefix: the API served at PREFIX/... for /v1/...; "" none */
    char azure_key[256];         /* --azure-key: speak Azure OpenAI, this api-key; "" off */
    char azure_deployment[SW_LLMSIM_MODEL_MAX]; /* --azure-deployment, default the --model */
    char bedrock_key[256];       /* --bedrock-key ID:SECRET: speak AWS Bedrock's Converse API,
                                  * SigV4 with these keys required; "" off */
    char bedrock_region[64];     /* --bedrock-region, default us-east-1 */
    char gemini_key[256];        /* --gemini-key: serve Google's generateContent, x-goog-api-key
                                  * (or ?key=) K; "" off (Vertex AI paths need a bearer) */
    char google_sa_pubkey[512];  /* --google-sa-pubkey FILE: POST /token checks assertions
                                  * against this PEM public key; "" off */
    char entra_client_id[256];   /* --entra-client-id and --entra-secret: Entra ID's token
                                  * endpoint; "" off */
    char entra_secret[256];
    int token_ttl_s;             /* --token-ttl-s: life of the tokens issued (3600) */
    struct sw_llmsim_params params;
    struct sw_llmsim_faults faults;
};

enum sw_llmsim_opts_result { SW_LLMSIM_OPTS_RUN, SW_LLMSIM_OPTS_HELP, SW_LLMSIM_OPTS_VERSION,
                             SW_LLMSIM_OPTS_ERROR };

/* Parses argv into *o (defaults first). On ERROR writes the reason to err. */
enum sw_llmsim_opts_result sw_llmsim_opts_parse(int argc, char **argv, struct sw_llmsim_opts *o,
                                                char *err, size_t errlen);
/* The --help text. */
const char *sw_llmsim_opts_usage(void);

#endif
