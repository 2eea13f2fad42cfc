#include "model.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

uint64_t sw_llmsim_rand(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

double sw_llmsim_rand01(uint64_t *state)
{
    return (double)(sw_llmsim_rand(state) >> 11) * (1.0 / 9007199254740992.0);
}

void sw_llmsim_model_init(struct sw_llmsim_model *m, const struct sw_llmsim_params *p)
{
    *m = (struct sw_llmsim_model){0};
    m->p = *p;
    if (m->p.slots < 1)
        m->p.slots = 1;
    if (m->p.max_output_tokens < 1)
        m->p.max_output_tokens = 1;
    m->load = m->p.cold_start_ms > 0 ? SW_LLMSIM_COLD : SW_LLMSIM_LOADED;
    m->rng = p->seed;
    if (m->p.prefix_cache > SW_LLMSIM_PREFIX_CACHE_MAX)
        m->p.prefix_cache = SW_LLMSIM_PREFIX_CACHE_MAX;
    if (m->p.prefix_cache > 0) {
        m->slot = calloc((size_t)m->p.slots, sizeof *m->slot);
        for (int i = 0; m->slot && i < m->p.slots; i++) {
            m->slot[i].used_us = -1;
            m->slot[i].held = calloc((size_t)m->p.prefix_cache, sizeof *m->slot[i].held);
            if (!m->slot[i].held) {
                m->p.slots = i > 0 ? i : 1;
                if (i == 0) {
                    free(m->slot);
                    m->slot = NULL;
                }
                break;
            }
        }
    }
    if (!m->slot)
        m->p.prefix_cache = 0;
}

void sw_llmsim_model_free(struct sw_llmsim_model *m)
{
    for (int i = 0; m->slot && i < m->p.slots; i++)
        free(m->slot[i].held);
    free(m->slot);
    m->slot = NULL;
}

int sw_llmsim_prefix_shared(const struct sw_llmsim_prefix *held, const struct sw_llmsim_prefix *q,
                            int prompt_tokens)
{
    int best = 0;
    /* q's latest boundary that held has too (a chained hash covers all
     * before it: a shared one means a shared prefix) */
    for (int j = q->n - 1; j >= 0 && !best; j--)
        for (int i = held->n - 1; i >= 0; i--)
            if (held->hash[i] == q->hash[j]) {
                best = q->tokens[j];
                break;
            }
    if (best >= prompt_tokens)
        best = prompt_tokens - 1;
    return best > 0 ? best : 0;
}

/* The free slot for g, as llama.cpp's server picks one: the slot whose
 * cache holds the longest prefix of g, when that is more than a tenth of its
 * prompt (--slot-prompt-similarity, 0.1 by default; ties: the lowest index);
 * else the one used least recently (a slot never used first; ties: the
 * highest index, as its `t_last_used <= t_last` does). *cached: what that
 * slot holds of g. */
static int pick_slot(const struct sw_llmsim_model *m, const struct sw_llmsim_gen *g, int *cached)
{
    int best = -1, most = 0, lru = -1, lru_held = 0;
    for (int i = 0; i < m->p.slots; i++) {
        const struct sw_llmsim_slot *sl = &m->slot[i];
        if (sl->busy)
            continue;
        int t = 0;
        for (int k = 0; k < sl->n && g->prefix.n > 0; k++) {
            int s = sw_llmsim_prefix_shared(&sl->held[k], &g->prefix, g->prompt_tokens);
            if (s > t)
                t = s;
        }
        if (t > most && 10.0 * t > (double)g->prompt_tokens) {
            most = t;
            best = i;
        }
        if (lru < 0 || sl->used_us <= m->slot[lru].used_us) {
            lru = i;
            lru_held = t;
        }
    }
    if (best < 0) {
        best = lru;
        most = lru_held;
    }
    *cached = most > 0 ? most : 0;
    return best;
}

/* g leaves its slot at now_us: its prompt becomes the slot's most recent
 * entry (the least recent dropped when the cache is full). */
static void slot_keep(struct sw_llmsim_model *m, const struct sw_llmsim_gen *g, int64_t now_us)
{
    if (!m->slot || g->slot < 0 || g->slot >= m->p.slots)
        return;
    struct sw_llmsim_slot *sl = &m->slot[g->slot];
    sl->busy = false;
    sl->used_us = now_us;
    if (g->prefix.n <= 0)
        return;
    int n = sl->n < m->p.prefix_cache ? sl->n : m->p.prefix_cache - 1;
    for (int k = 0; k < sl->n; k++)     /* the same prompt again: moved to the front */
        if (sl->held[k].n == g->prefix.n &&
            sl->held[k].hash[g->prefix.n - 1] == g->prefix.hash[g->prefix.n - 1]) {
            n = k;
            break;
        }
    memmove(&sl->held[1], &sl->held[0], (size_t)n * sizeof sl->held[0]);
    sl->held[0] = g->prefix;
    if (n == sl->n)
        sl->n++;
}

enum sw_llmsim_load sw_llmsim_load_state(struct sw_llmsim_model *m, int64_t now_us)
{
    if (m->load == SW_LLMSIM_LOADING && now_us >= m->load_done_us)
        m->load = SW_LLMSIM_LOADED;
    return m->load;
}

void sw_llmsim_unload(struct sw_llmsim_model *m)
{
    if (m->p.cold_start_ms > 0)
        m->load = SW_LLMSIM_COLD;
}

/* Gives g a slot at now_us; a cold model starts loading, and g's prefill
 * waits for the load to finish. */
static void start(struct sw_llmsim_model *m, struct sw_llmsim_gen *g, int64_t now_us)
{
    enum sw_llmsim_load ls = sw_llmsim_load_state(m, now_us);
    if (ls == SW_LLMSIM_COLD) {
        m->load = SW_LLMSIM_LOADING;
        m->load_done_us = now_us + m->p.cold_start_ms * 1000;
        ls = SW_LLMSIM_LOADING;
    }
    g->slot = -1;
    g->cached_tokens = 0;
    if (m->slot) {
        g->slot = pick_slot(m, g, &g->cached_tokens);
        if (g->slot >= 0)
            m->slot[g->slot].busy = true;
    }
    g->state = SW_LLMSIM_GEN_ACTIVE;
    g->start_us = now_us;
    g->ready_us = ls == SW_LLMSIM_LOADING ? m->load_done_us : now_us;
    g->next = NULL;
    m->in_flight++;
    if (m->in_flight + m->queued > m->concurrent_max)
        m->concurrent_max = m->in_flight + m->queued;
}

enum sw_llmsim_admit sw_llmsim_submit(struct sw_llmsim_model *m, struct sw_llmsim_gen *g,
                                      int64_t now_us)
{
    g->submitted_us = now_us;
    g->next = NULL;
    if (m->in_flight + m->outside < m->p.slots && m->queued == 0) {
        m->seq++;
        start(m, g, now_us);
        return SW_LLMSIM_STARTED;
    }
    if (m->p.queue_max > 0 && m->queued >= m->p.queue_max) {
        g->state = SW_LLMSIM_GEN_IDLE;
        return SW_LLMSIM_REJECTED;
    }
    m->seq++;
    g->state = SW_LLMSIM_GEN_QUEUED;
    if (m->qtail)
        m->qtail->next = g;
    else
        m->qhead = g;
    m->qtail = g;
    m->queued++;
    if (m->in_flight + m->queued > m->concurrent_max)
        m->concurrent_max = m->in_flight + m->queued;
    return SW_LLMSIM_QUEUED;
}

struct sw_llmsim_gen *sw_llmsim_release(struct sw_llmsim_model *m, struct sw_llmsim_gen *g,
                                        int64_t now_us)
{
    if (g->state == SW_LLMSIM_GEN_QUEUED) {
        struct sw_llmsim_gen **pp = &m->qhead, *prev = NULL;
        while (*pp && *pp != g) {
            prev = *pp;
            pp = &(*pp)->next;
        }
        if (*pp) {
            *pp = g->next;
            if (m->qtail == g)
                m->qtail = prev;
            m->queued--;
        }
        g->state = SW_LLMSIM_GEN_IDLE;
        g->next = NULL;
        return NULL;
    }
    if (g->state != SW_LLMSIM_GEN_ACTIVE)
        return NULL;
    g->state = SW_LLMSIM_GEN_IDLE;
    m->in_flight--;
    slot_keep(m, g, now_us);
    return sw_llmsim_start_next(m, now_us);
}

void sw_llmsim_set_outside(struct sw_llmsim_model *m, int processing, int waiting)
{
    m->outside = processing < 0 ? 0 : processing >= m->p.slots ? m->p.slots - 1 : processing;
    m->outside_waiting = waiting < 0 ? 0 : waiting;
}

struct sw_llmsim_gen *sw_llmsim_start_next(struct sw_llmsim_model *m, int64_t now_us)
{
    struct sw_llmsim_gen *n = m->qhead;
    if (!n || m->in_flight + m->outside >= m->p.slots)
        return NULL;
    m->qhead = n->next;
    if (!m->qhead)
        m->qtail = NULL;
    m->queued--;
    start(m, n, now_us);
    return n;
}

int64_t sw_llmsim_prefill_us(const struct sw_llmsim_params *p, int prompt_tokens)
{
    if (prompt_tokens <= 0 || p->prefill_ms_per_token <= 0)
        return 0;
    return llround((double)prompt_tokens * p->prefill_ms_per_token * 1000.0);
}

int64_t sw_llmsim_period_us(const struct sw_llmsim_params *p)
{
    if (p->decode_tps <= 0)
        return 0;
    int64_t us = llround(1e6 / p->decode_tps);
    return us < 1 ? 1 : us;
}

int64_t sw_llmsim_token_due_us(const struct sw_llmsim_model *m, const struct sw_llmsim_gen *g,
                               int k)
{
    return g->ready_us + sw_llmsim_prefill_us(&m->p, g->prompt_tokens - g->cached_tokens) +
           (int64_t)k * sw_llmsim_period_us(&m->p);
}

int sw_llmsim_tokens_due(const struct sw_llmsim_model *m, const struct sw_llmsim_gen *g,
                         int64_t now_us)
{
    int64_t first = g->ready_us + sw_llmsim_prefill_us(&m->p, g->prompt_tokens - g->cached_tokens);
    if (now_us < first)
        return 0;
    int64_t period = sw_llmsim_period_us(&m->p);
    if (period == 0)
        return g->output_tokens;
    int64_t k = (now_us - first) / period;
    return k >= g->output_tokens ? g->output_tokens : (int)k;
}

int sw_llmsim_output_len(struct sw_llmsim_model *m, int max_tokens)
{
    if (max_tokens > 0)
        return max_tokens;
    return 1 + (int)(sw_llmsim_rand(&m->rng) % (uint64_t)m->p.max_output_tokens);
}

int sw_llmsim_prompt_tokens(size_t text_bytes, int n_messages)
{
    size_t t = (text_bytes + 3) / 4 + 4 * (size_t)(n_messages > 0 ? n_messages : 0);
    return t > 0x7fffffff ? 0x7fffffff : (int)t;
}
