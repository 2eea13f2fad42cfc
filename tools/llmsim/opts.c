#include "opts.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: llmsim [flags]\n"
    "An inference-server simulator (OpenAI / llama.cpp server or Anthropic Messages API).\n"
    "\n"
    "  --host ADDR                 listen address (127.0.0.1)\n"
    "  --port N                    listen port, 0 = ephemeral (8080)\n"
    "  --dialect openai|anthropic  API to speak (openai)\n"
    "  --model ID                  model id listed by /v1/models (sim-model)\n"
    "  --slots N                   generations at once (4)\n"
    "  --queue-max N               requests allowed to wait, 0 = unbounded; beyond: 503 (0)\n"
    "  --prefix-cache N            prompts each slot keeps in its prefix cache (LRU); a prompt\n"
    "                              a free slot holds the start of prefills only the rest (0: none)\n"
    "  --prefill-ms-per-token F    prefill cost per prompt token (0)\n"
    "  --decode-tps F              tokens/s per slot, 0 = instant (50)\n"
    "  --seed N                    seed of output lengths, lorem text and error draws (1)\n"
    "  --max-output-tokens N       bound of the drawn output length without max_tokens (128)\n"
    "  --reply lorem|echo          answer text (lorem)\n"
    "  --cold-start-ms N           model starts unloaded; load time (0 = always loaded)\n"
    "  --keep-received N           request bodies kept for /admin/received (100)\n"
    "  --ctx N                     context size reported by /props (4096)\n"
    "  --client-timeout-ms N       whole request, keep-alive idle, write stall (3600000)\n"
    "  --verbose                   log one line per chat request to stderr\n"
    "  --tokenizer quarter|pieces  prompt tokens: ceil(bytes / 4), or pre-tokenizer pieces (quarter)\n"
    "  --prefix P                  serve the API at P/... (P/chat/completions) instead of /v1/...\n"
    "  --azure-key K               speak Azure OpenAI: api-key K (or a bearer K) required, paths\n"
    "                              /openai/deployments/D/...?api-version=V and /openai/v1/...\n"
    "  --azure-deployment D        the one deployment Azure serves (the --model)\n"
    "  --bedrock-key ID:SECRET     speak AWS Bedrock: POST /model/M/converse[-stream], SigV4\n"
    "                              with these keys required (service bedrock)\n"
    "  --bedrock-region R          the region requests must be signed for (us-east-1)\n"
    "  --gemini-key K              also serve Google's generateContent: x-goog-api-key K; Vertex\n"
    "                              AI paths take a bearer issued by POST /token\n"
    "  --google-sa-pubkey FILE     POST /token: jwt-bearer assertions checked with this PEM key\n"
    "  --entra-client-id ID        with --entra-secret S: POST /{tenant}/oauth2/v2.0/token\n"
    "  --entra-secret S            (client credentials); its tokens are Azure bearers too\n"
    "  --token-ttl-s N             expires_in of the tokens issued (3600)\n"
    "faults (also settable at run time with POST /admin/faults):\n"
    "  --error-rate F              probability a chat request fails (0)\n"
    "  --error-status S            status of those failures: 429 500 502 503 504 529 (500)\n"
    "  --retry-after-s N           Retry-After of injected 429/503/529 (1)\n"
    "  --latency-ms N              added before the first byte (0)\n"
    "  --hang                      accept chat requests and never answer\n"
    "  --close-after-chunks K      close a stream after K token chunks (0 = off)\n"
    "  --stream-error-after K      end a stream with an error event after K tokens\n"
    "  --malformed json|sse        send broken JSON / a broken SSE event\n"
    "  --drift shape|prose         answer response_format (JSON) requests in another shape\n"
    "  --exit-after N              exit(1) on receiving the N-th chat request (0 = off)\n"
    "  --rpm N                     requests per minute, beyond: 429 (0 = unlimited)\n"
    "  --tpm N                     tokens per minute (prompt + output), beyond: 429 (0)\n"
    "  --help, --version\n";

const char *sw_llmsim_opts_usage(void)
{
    return usage;
}

static bool parse_long(const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

static bool parse_double(const char *s, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v) || v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

enum kind { K_FLAG, K_INT, K_DOUBLE, K_STR };

struct flag {
    const char *name;
    enum kind kind;
    double lo, hi;               /* bounds of K_INT / K_DOUBLE */
};

static const struct flag flags[] = {
    {"--host", K_STR, 0, 0},
    {"--port", K_INT, 0, 65535},
    {"--dialect", K_STR, 0, 0},
    {"--model", K_STR, 0, 0},
    {"--slots", K_INT, 1, 100000},
    {"--queue-max", K_INT, 0, 100000000},
    {"--prefix-cache", K_INT, 0, 64},
    {"--prefill-ms-per-token", K_DOUBLE, 0, 60000},
    {"--decode-tps", K_DOUBLE, 0, 1000000},
    {"--seed", K_INT, 0, 2147483647},
    {"--max-output-tokens", K_INT, 1, 10000000},
    {"--reply", K_STR, 0, 0},
    {"--cold-start-ms", K_INT, 0, 3600000},
    {"--keep-received", K_INT, 0, 100000},
    {"--ctx", K_INT, 1, 100000000},
    {"--client-timeout-ms", K_INT, 100, 3600000},
    {"--verbose", K_FLAG, 0, 0},
    {"--tokenizer", K_STR, 0, 0},
    {"--prefix", K_STR, 0, 0},
    {"--azure-key", K_STR, 0, 0},
    {"--azure-deployment", K_STR, 0, 0},
    {"--bedrock-key", K_STR, 0, 0},
    {"--bedrock-region", K_STR, 0, 0},
    {"--gemini-key", K_STR, 0, 0},
    {"--google-sa-pubkey", K_STR, 0, 0},
    {"--entra-client-id", K_STR, 0, 0},
    {"--entra-secret", K_STR, 0, 0},
    {"--token-ttl-s", K_INT, 1, 86400},
    {"--error-rate", K_DOUBLE, 0, 1},
    {"--error-status", K_INT, 400, 599},
    {"--retry-after-s", K_INT, 0, 86400},
    {"--latency-ms", K_INT, 0, 3600000},
    {"--hang", K_FLAG, 0, 0},
    {"--close-after-chunks", K_INT, 0, 1000000000},
    {"--stream-error-after", K_INT, 0, 1000000000},
    {"--malformed", K_STR, 0, 0},
    {"--drift", K_STR, 0, 0},
    {"--exit-after", K_INT, 0, 1000000000},
    {"--rpm", K_INT, 0, 1000000000},
    {"--tpm", K_INT, 0, 1000000000},
};

static void defaults(struct sw_llmsim_opts *o)
{
    memset(o, 0, sizeof *o);
    snprintf(o->host, sizeof o->host, "127.0.0.1");
    o->port = 8080;
    o->dialect = SW_LLMSIM_OPENAI;
    snprintf(o->model, sizeof o->model, "sim-model");
    snprintf(o->bedrock_region, sizeof o->bedrock_region, "us-east-1");
    o->reply = SW_LLMSIM_REPLY_LOREM;
    o->keep_received = 100;
    o->token_ttl_s = 3600;
    o->n_ctx = 4096;
    o->client_timeout_ms = 3600000;
    o->params.slots = 4;
    o->params.decode_tps = 50;
    o->params.seed = 1;
    o->params.max_output_tokens = 128;
    sw_llmsim_faults_clear(&o->faults);
}

/* Applies one flag whose value (if any) has been parsed. */
static bool apply(struct sw_llmsim_opts *o, const char *name, const char *s, long l, double d)
{
    struct sw_llmsim_params *p = &o->params;
    struct sw_llmsim_faults *f = &o->faults;
    if (!strcmp(name, "--host")) {
        if (strlen(s) >= sizeof o->host)
            return false;
        snprintf(o->host, sizeof o->host, "%s", s);
    } else if (!strcmp(name, "--port")) {
        o->port = (int)l;
    } else if (!strcmp(name, "--dialect")) {
        if (!strcmp(s, "openai"))
            o->dialect = SW_LLMSIM_OPENAI;
        else if (!strcmp(s, "anthropic"))
            o->dialect = SW_LLMSIM_ANTHROPIC;
        else
            return false;
    } else if (!strcmp(name, "--prefix")) {
        size_t n = strlen(s);
        if (n < 2 || n >= sizeof o->prefix || s[0] != '/' || s[n - 1] == '/' ||
            strpbrk(s, "?# "))
            return false;
        snprintf(o->prefix, sizeof o->prefix, "%s", s);
    } else if (!strcmp(name, "--azure-key")) {
        if (!*s || strlen(s) >= sizeof o->azure_key)
            return false;
        snprintf(o->azure_key, sizeof o->azure_key, "%s", s);
    } else if (!strcmp(name, "--gemini-key") || !strcmp(name, "--google-sa-pubkey") ||
               !strcmp(name, "--entra-client-id") || !strcmp(name, "--entra-secret")) {
        char *dst = !strcmp(name, "--gemini-key")         ? o->gemini_key
                    : !strcmp(name, "--google-sa-pubkey") ? o->google_sa_pubkey
                    : !strcmp(name, "--entra-client-id")  ? o->entra_client_id
                                                          : o->entra_secret;
        size_t cap = !strcmp(name, "--google-sa-pubkey") ? sizeof o->google_sa_pubkey
                                                         : sizeof o->gemini_key;
        if (!*s || strlen(s) >= cap)
            return false;
        snprintf(dst, cap, "%s", s);
    } else if (!strcmp(name, "--token-ttl-s")) {
        o->token_ttl_s = (int)l;
    } else if (!strcmp(name, "--azure-deployment")) {
        if (!*s || strlen(s) >= sizeof o->azure_deployment || strchr(s, '/'))
            return false;
        snprintf(o->azure_deployment, sizeof o->azure_deployment, "%s", s);
    } else if (!strcmp(name, "--bedrock-key")) {
        const char *colon = strchr(s, ':');
        if (!colon || colon == s || !colon[1] || strlen(s) >= sizeof o->bedrock_key)
            return false;
        snprintf(o->bedrock_key, sizeof o->bedrock_key, "%s", s);
    } else if (!strcmp(name, "--bedrock-region")) {
        if (!*s || strlen(s) >= sizeof o->bedrock_region ||
            s[strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789-")])
            return false;
        snprintf(o->bedrock_region, sizeof o->bedrock_region, "%s", s);
    } else if (!strcmp(name, "--model")) {
        if (!*s || strlen(s) >= sizeof o->model)
            return false;
        snprintf(o->model, sizeof o->model, "%s", s);
    } else if (!strcmp(name, "--slots")) {
        p->slots = (int)l;
    } else if (!strcmp(name, "--queue-max")) {
        p->queue_max = (int)l;
    } else if (!strcmp(name, "--prefix-cache")) {
        p->prefix_cache = (int)l;
    } else if (!strcmp(name, "--prefill-ms-per-token")) {
        p->prefill_ms_per_token = d;
    } else if (!strcmp(name, "--decode-tps")) {
        p->decode_tps = d;
    } else if (!strcmp(name, "--seed")) {
        p->seed = (uint64_t)l;
    } else if (!strcmp(name, "--max-output-tokens")) {
        p->max_output_tokens = (int)l;
    } else if (!strcmp(name, "--reply")) {
        if (!strcmp(s, "lorem"))
            o->reply = SW_LLMSIM_REPLY_LOREM;
        else if (!strcmp(s, "echo"))
            o->reply = SW_LLMSIM_REPLY_ECHO;
        else
            return false;
    } else if (!strcmp(name, "--cold-start-ms")) {
        p->cold_start_ms = l;
    } else if (!strcmp(name, "--keep-received")) {
        o->keep_received = (int)l;
    } else if (!strcmp(name, "--ctx")) {
        o->n_ctx = (int)l;
    } else if (!strcmp(name, "--client-timeout-ms")) {
        o->client_timeout_ms = l;
    } else if (!strcmp(name, "--verbose")) {
        o->verbose = true;
    } else if (!strcmp(name, "--tokenizer")) {
        if (!strcmp(s, "quarter"))
            o->tokenizer_pieces = false;
        else if (!strcmp(s, "pieces"))
            o->tokenizer_pieces = true;
        else
            return false;
    } else if (!strcmp(name, "--error-rate")) {
        f->error_rate = d;
    } else if (!strcmp(name, "--error-status")) {
        f->error_status = (int)l;
    } else if (!strcmp(name, "--retry-after-s")) {
        f->retry_after_s = (int)l;
    } else if (!strcmp(name, "--latency-ms")) {
        f->latency_ms = (int)l;
    } else if (!strcmp(name, "--hang")) {
        f->hang = true;
    } else if (!strcmp(name, "--close-after-chunks")) {
        f->close_after_chunks = (int)l;
    } else if (!strcmp(name, "--stream-error-after")) {
        f->stream_error = true;
        f->stream_error_after = (int)l;
    } else if (!strcmp(name, "--malformed")) {
        if (!strcmp(s, "json"))
            f->malformed = SW_LLMSIM_MALFORMED_JSON;
        else if (!strcmp(s, "sse"))
            f->malformed = SW_LLMSIM_MALFORMED_SSE;
        else
            return false;
    } else if (!strcmp(name, "--drift")) {
        if (!strcmp(s, "shape"))
            f->drift = SW_LLMSIM_DRIFT_SHAPE;
        else if (!strcmp(s, "prose"))
            f->drift = SW_LLMSIM_DRIFT_PROSE;
        else
            return false;
    } else if (!strcmp(name, "--exit-after")) {
        f->exit_after = (int)l;
    } else if (!strcmp(name, "--rpm")) {
        f->rpm = (int)l;
    } else if (!strcmp(name, "--tpm")) {
        f->tpm = (int)l;
    }
    return true;
}

enum sw_llmsim_opts_result sw_llmsim_opts_parse(int argc, char **argv, struct sw_llmsim_opts *o,
                                                char *err, size_t errlen)
{
    defaults(o);
    for (int i = 1; i < argc; i++) {
        char name[64];
        const char *arg = argv[i], *val = NULL;
        if (!strcmp(arg, "--help") || !strcmp(arg, "-h"))
            return SW_LLMSIM_OPTS_HELP;
        if (!strcmp(arg, "--version"))
            return SW_LLMSIM_OPTS_VERSION;
        /* --flag=value or --flag value */
        const char *eq = strchr(arg, '=');
        size_t nlen = eq ? (size_t)(eq - arg) : strlen(arg);
        if (nlen >= sizeof name) {
            snprintf(err, errlen, "unknown flag %.64s (see --help)", arg);
            return SW_LLMSIM_OPTS_ERROR;
        }
        memcpy(name, arg, nlen);
        name[nlen] = '\0';
        const struct flag *fl = NULL;
        for (size_t k = 0; k < sizeof flags / sizeof flags[0]; k++)
            if (!strcmp(flags[k].name, name))
                fl = &flags[k];
        if (!fl) {
            snprintf(err, errlen, "unknown flag %s (see --help)", name);
            return SW_LLMSIM_OPTS_ERROR;
        }
        if (fl->kind == K_FLAG) {
            if (eq) {
                snprintf(err, errlen, "%s takes no value", name);
                return SW_LLMSIM_OPTS_ERROR;
            }
            apply(o, name, NULL, 0, 0);
            continue;
        }
        if (eq) {
            val = eq + 1;
        } else if (i + 1 < argc) {
            val = argv[++i];
        } else {
            snprintf(err, errlen, "%s needs a value", name);
            return SW_LLMSIM_OPTS_ERROR;
        }
        long l = 0;
        double d = 0;
        bool ok = true;
        if (fl->kind == K_INT)
            ok = parse_long(val, (long)fl->lo, (long)fl->hi, &l);
        else if (fl->kind == K_DOUBLE)
            ok = parse_double(val, fl->lo, fl->hi, &d);
        if (ok)
            ok = apply(o, name, val, l, d);
        if (!ok) {
            if (fl->kind == K_STR)
                snprintf(err, errlen, "%s: bad value \"%.64s\" (see --help)", name, val);
            else
                snprintf(err, errlen, "%s: bad value \"%.64s\" (allowed: %s in [%g, %g])", name,
                         val, fl->kind == K_INT ? "an integer" : "a number", fl->lo, fl->hi);
            return SW_LLMSIM_OPTS_ERROR;
        }
    }
    return SW_LLMSIM_OPTS_RUN;
}
