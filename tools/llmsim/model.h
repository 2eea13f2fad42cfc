/* The simulator's performance model: slots, a FIFO wait queue, cold start,
 * prefill and decode timing, output length and the prompt-token estimate.
 * Pure: no I/O, no clock. Every function that depends on time takes `now_us`
 * (a monotonic clock in microseconds chosen by the caller), so the unit tests
 * drive it with a fake clock and server.c with CLOCK_MONOTONIC.
 *
 * Timing of one generation (see docs/llmsim.md):
 *   ready   = max(time it got a slot, time the model finished loading)
 *   first   = ready + (prompt_tokens - cached_tokens) * prefill_ms_per_token
 *             (cached_tokens: what its slot's prefix cache held, --prefix-cache)
 *   token k = first + k * period, period = 1 s / decode_tps (k = 1..n);
 *             decode_tps 0 means every token is due at `first`. */
#ifndef SW_LLMSIM_MODEL_H
#define SW_LLMSIM_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A prompt's prefix identity: hash[k] covers its blocks 0..k (block 0:
 * the system prompt and tools, then one per message), tokens[k] the prompt
 * tokens up to there. The first boundary and the latest ones are kept. */
#define SW_LLMSIM_CHAIN_MAX 64
struct sw_llmsim_prefix {
    uint64_t hash[SW_LLMSIM_CHAIN_MAX];
    int tokens[SW_LLMSIM_CHAIN_MAX];
    int n;
};
#define SW_LLMSIM_PREFIX_CACHE_MAX 64   /* --prefix-cache: prompts kept per slot, at most */

struct sw_llmsim_params {
    int slots;                   /* generations at once, >= 1 */
    int queue_max;               /* requests allowed to wait, 0 = unbounded */
    double prefill_ms_per_token; /* prefill cost per prompt token, >= 0 */
    double decode_tps;           /* tokens/s per slot, 0 = instant */
    int64_t cold_start_ms;       /* load time when cold, 0 = never cold */
    int max_output_tokens;       /* bound of the drawn output length, >= 1 */
    uint64_t seed;               /* seeds the output-length and text draws */
    int prefix_cache;            /* prompts each slot keeps in its prefix cache (LRU), 0: none:
                                    a prompt whose leading blocks a free slot holds prefills
                                    only the rest */
};

enum sw_llmsim_gen_state {
    SW_LLMSIM_GEN_IDLE,          /* not known to the model */
    SW_LLMSIM_GEN_QUEUED,        /* waiting for a slot */
    SW_LLMSIM_GEN_ACTIVE         /* holding a slot (loading, prefill, decode) */
};

/* One generation. The caller owns the memory (it is embedded in the server's
 * per-request struct); the model links it into its queue while it waits. */
struct sw_llmsim_gen {
    int prompt_tokens;           /* set by the caller before submit */
    int output_tokens;           /* set by the caller before submit */
    enum sw_llmsim_gen_state state;
    int64_t submitted_us;        /* when it was submitted */
    int64_t start_us;            /* when it got a slot */
    int64_t ready_us;            /* when prefill begins: slot held and model loaded */
    struct sw_llmsim_prefix prefix; /* set by the caller before submit (n 0: none) */
    int cached_tokens;           /* prompt tokens its slot's cache held (set at start) */
    int slot;                    /* the slot it holds (with a prefix cache), -1: none */
    struct sw_llmsim_gen *next;  /* FIFO link while queued */
};

enum sw_llmsim_load { SW_LLMSIM_COLD, SW_LLMSIM_LOADING, SW_LLMSIM_LOADED };

enum sw_llmsim_admit {
    SW_LLMSIM_STARTED,           /* got a slot now: arm its timer */
    SW_LLMSIM_QUEUED,            /* waits; returned by sw_llmsim_release later */
    SW_LLMSIM_REJECTED           /* queue full (--queue-max): answer 503 */
};

struct sw_llmsim_model {
    struct sw_llmsim_params p;
    int in_flight;               /* generations holding a slot */
    int concurrent_max;          /* peak of in_flight + queued: requests held at once */
    int queued;                  /* generations waiting */
    int outside;                 /* slots held by outside work (another client of the box) */
    int outside_waiting;         /* requests of that client reported waiting (never run) */
    struct sw_llmsim_gen *qhead, *qtail;
    enum sw_llmsim_load load;
    int64_t load_done_us;        /* when LOADING turns LOADED */
    uint64_t rng;                /* output-length draws */
    uint64_t seq;                /* generations submitted so far */
    struct sw_llmsim_slot *slot; /* p.slots of them with a prefix cache (owned); NULL: none */
};

/* One slot's prefix cache: the prompts it processed, most recent first. */
struct sw_llmsim_slot {
    bool busy;
    int64_t used_us;                 /* when its latest generation left it; -1: never used */
    int n;
    struct sw_llmsim_prefix *held;   /* prefix_cache entries */
};

/* Copies *p; the model starts cold when p->cold_start_ms > 0. With
 * p->prefix_cache > 0 it allocates the slots' caches (without memory:
 * none); sw_llmsim_model_free frees them. */
void sw_llmsim_model_init(struct sw_llmsim_model *m, const struct sw_llmsim_params *p);
void sw_llmsim_model_free(struct sw_llmsim_model *m);

/* The prompt tokens of prefix q that prefix `held` (a prompt a slot
 * processed) shares: the tokens at the last boundary both have, at most
 * prompt_tokens - 1 (a server always computes the last token). */
int sw_llmsim_prefix_shared(const struct sw_llmsim_prefix *held, const struct sw_llmsim_prefix *q,
                            int prompt_tokens);

/* Admits g (state IDLE, prompt/output tokens set). STARTED: g holds a slot,
 * its timing is fixed (a cold model starts loading now). QUEUED: g waits at
 * the tail. REJECTED: the queue is full; g stays IDLE. */
enum sw_llmsim_admit sw_llmsim_submit(struct sw_llmsim_model *m, struct sw_llmsim_gen *g,
                                      int64_t now_us);

/* Removes g, finished or abandoned, from wherever it is (slot or queue; IDLE
 * is a no-op). If it held a slot, the head of the queue is started at now_us
 * and returned so the caller can arm its timer; otherwise NULL. */
struct sw_llmsim_gen *sw_llmsim_release(struct sw_llmsim_model *m, struct sw_llmsim_gen *g,
                                        int64_t now_us);

/* Load state at now_us (LOADING becomes LOADED once its time has come). */
enum sw_llmsim_load sw_llmsim_load_state(struct sw_llmsim_model *m, int64_t now_us);
/* Makes the model cold again (only when cold_start_ms > 0). Generations that
 * already hold a slot keep their timing; the next one to start reloads. */
void sw_llmsim_unload(struct sw_llmsim_model *m);

/* Outside load: `processing` slots (clamped to 0..slots-1) are held by work
 * of another client of the box for as long as it is set, so fewer remain for
 * the requests this server answers; `waiting` (>= 0) is only reported. */
void sw_llmsim_set_outside(struct sw_llmsim_model *m, int processing, int waiting);
/* After the outside load shrank: starts the head of the queue at now_us if
 * a slot is free and returns it (call until NULL), else NULL. */
struct sw_llmsim_gen *sw_llmsim_start_next(struct sw_llmsim_model *m, int64_t now_us);

/* Prefill duration of `prompt_tokens` tokens, in microseconds (a
 * generation's: its prompt less its cached tokens). */
int64_t sw_llmsim_prefill_us(const struct sw_llmsim_params *p, int prompt_tokens);
/* Decode period in microseconds (0 when decode_tps is 0). */
int64_t sw_llmsim_period_us(const struct sw_llmsim_params *p);
/* When token k (1..output_tokens) of an ACTIVE g is due. */
int64_t sw_llmsim_token_due_us(const struct sw_llmsim_model *m, const struct sw_llmsim_gen *g,
                               int k);
/* How many tokens of an ACTIVE g are due at now_us (0..output_tokens). */
int sw_llmsim_tokens_due(const struct sw_llmsim_model *m, const struct sw_llmsim_gen *g,
                         int64_t now_us);

/* Output length: `max_tokens` when the request gave one (> 0), else a draw
 * uniform in [1, max_output_tokens] from the seeded generator. */
int sw_llmsim_output_len(struct sw_llmsim_model *m, int max_tokens);

/* The prompt-token estimate the gateway uses too: ceil(text_bytes / 4) over
 * all message text, plus 4 per message. */
int sw_llmsim_prompt_tokens(size_t text_bytes, int n_messages);

/* splitmix64: the one PRNG of the simulator (seeded, reproducible). */
uint64_t sw_llmsim_rand(uint64_t *state);
/* A double in [0, 1) from the generator. */
double sw_llmsim_rand01(uint64_t *state);

#endif
