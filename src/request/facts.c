#include "request/facts.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/buf.h"
#include "common/err.h"

/* ---- Headers ---- */

/* Whether a header name may fold to a flag header's (sw_request_name_folds):
 * each of those begins "X-Spillway-", so the first character folding keeps
 * must be an x. Spares the other headers the three comparisons. */
static bool may_fold_to_flag(const char *s, size_t len)
{
    size_t i = 0;
    while (i < len && (s[i] == '_' || s[i] == '-' || s[i] == ' ' || s[i] == '\t'))
        i++;
    return i < len && (s[i] == 'x' || s[i] == 'X');
}

/* The headers read here, in the order their refusals come. */
enum {
    H_TIMEOUT,
    H_ALLOW_CLOUD,              /* the flag headers: H_ALLOW_CLOUD + k */
    H_SENSITIVE,
    H_LATENCY_CRITICAL,
    H_TTFT_BUDGET,
    H_PRIORITY,
    N_HEADERS
};
static const char *const header_names[N_HEADERS] = {
    "X-Request-Timeout-Ms",  "X-Spillway-Allow-Cloud",    "X-Spillway-Sensitive",
    "X-Spillway-Latency-Critical", "X-Spillway-TTFT-Budget-Ms", "X-Spillway-Priority"};
static const size_t header_lens[N_HEADERS] = {
    sizeof "X-Request-Timeout-Ms" - 1,        sizeof "X-Spillway-Allow-Cloud" - 1,
    sizeof "X-Spillway-Sensitive" - 1,        sizeof "X-Spillway-Latency-Critical" - 1,
    sizeof "X-Spillway-TTFT-Budget-Ms" - 1,   sizeof "X-Spillway-Priority" - 1};
#define N_FLAGS 3

/* Milliseconds 1..SW_FACTS_HEADER_MS_MAX as a header writes them, or -1. */
static long header_ms(const char *v)
{
    char *end;
    errno = 0;
    long ms = strtol(v, &end, 10);
    if (errno || end == v || *end || ms < 1 || ms > SW_FACTS_HEADER_MS_MAX)
        return -1;
    return ms;
}

/* One occurrence of a flag header, element by element. Returns false when
 * an element is not a flag: fails closed, a typo never loosens a control. */
static bool read_flag(const char *value, struct sw_facts_flag *out)
{
    bool ok = true;
    for (const char *p = value;; p++) {
        size_t len = strcspn(p, ",");
        int v = sw_request_flag(p, len);
        if (v < 0)
            ok = false;
        else if (v)
            out->any_true = true;
        else
            out->any_false = true;
        p += len;
        if (!*p)
            break;
    }
    return ok;
}

/* Which of header_names `name` is (any case), or N_HEADERS. */
static int header_index(const char *name, size_t len)
{
    for (int k = 0; k < N_HEADERS; k++)
        if (len == header_lens[k] && !strncasecmp(name, header_names[k], len))
            return k;
    return N_HEADERS;
}

/* One pass over the headers; the refusals are then checked in their order:
 * the timeout, a name that is a near-miss of a flag header's
 * ("X_Spillway_Allow_Cloud", "X-Spillway-AllowCloud": a proxy may drop it
 * or a reader may guess, so it is refused rather than a flag silently not
 * set; the first such header received), each flag header in turn, the TTFT
 * budget. Single-valued headers count by their first occurrence. */
int sw_facts_headers(const struct sw_facts_header *h, size_t n, long request_timeout_ms,
                     struct sw_facts_hdrs *out, struct sw_request_error *err)
{
    *out = (struct sw_facts_hdrs){.timeout_ms = request_timeout_ms};
    const char *first[N_HEADERS] = {0};
    struct sw_facts_flag *flags[N_FLAGS] = {&out->allow_cloud, &out->sensitive,
                                            &out->latency_critical};
    bool flag_ok[N_FLAGS] = {true, true, true};
    const char *typo = NULL, *meant = NULL;
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(h[i].name);
        int k = header_index(h[i].name, len);
        if (k == N_HEADERS) {
            for (int f = 0; !typo && f < N_FLAGS && may_fold_to_flag(h[i].name, len); f++)
                if (sw_request_name_near_miss(h[i].name, len, header_names[H_ALLOW_CLOUD + f],
                                              true)) {
                    typo = h[i].name;
                    meant = header_names[H_ALLOW_CLOUD + f];
                }
            continue;
        }
        if (!first[k])
            first[k] = h[i].value;
        if (k >= H_ALLOW_CLOUD && k < H_ALLOW_CLOUD + N_FLAGS &&
            !read_flag(h[i].value, flags[k - H_ALLOW_CLOUD]))
            flag_ok[k - H_ALLOW_CLOUD] = false;
    }

    if (first[H_TIMEOUT]) {
        long ms = header_ms(first[H_TIMEOUT]);
        if (ms < 0) {
            sw_request_error_set(err, 400, "invalid_request_error", "invalid_header",
                                 "X-Request-Timeout-Ms",
                                 "Invalid X-Request-Timeout-Ms: expected milliseconds from 1 "
                                 "to %ld.", SW_FACTS_HEADER_MS_MAX);
            return SW_EINVAL;
        }
        if (ms < request_timeout_ms)
            out->timeout_ms = ms;
    }
    if (typo) {
        sw_request_error_set(err, 400, "invalid_request_error", "invalid_header", typo,
                             "Unknown header '%s': the flag is spelled '%s' (words joined by "
                             "'-').", typo, meant);
        return SW_EINVAL;
    }
    for (int f = 0; f < N_FLAGS; f++)
        if (!flag_ok[f]) {
            const char *name = header_names[H_ALLOW_CLOUD + f];
            sw_request_error_set(err, 400, "invalid_request_error", "invalid_header", name,
                                 "Invalid %s: every value must be true/false, 1/0, yes/no or "
                                 "on/off.", name);
            return SW_EINVAL;
        }
    if (first[H_TTFT_BUDGET]) {
        out->ttft_budget_cap_ms = header_ms(first[H_TTFT_BUDGET]);
        if (out->ttft_budget_cap_ms < 0) {
            sw_request_error_set(err, 400, "invalid_request_error", "invalid_header",
                                 "X-Spillway-TTFT-Budget-Ms",
                                 "Invalid X-Spillway-TTFT-Budget-Ms: expected milliseconds "
                                 "from 1 to %ld.", SW_FACTS_HEADER_MS_MAX);
            return SW_EINVAL;
        }
    }
    out->priority = first[H_PRIORITY];
    return SW_OK;
}

/* ---- Priority ---- */

/* A priority as clients write it: "interactive" or "batch", as
 * sw_request_word reads them. Returns the priority, or -1 for anything else. */
static int parse_priority(const char *v, size_t len)
{
    static const char *const words[] = {"interactive", "batch"};
    static const int priority[] = {SW_PRIORITY_INTERACTIVE, SW_PRIORITY_BATCH};
    int i = sw_request_word(v, len, words, sizeof words / sizeof words[0]);
    return i < 0 ? -1 : priority[i];
}

/* X-Spillway-Priority, else metadata.priority, else the key's default
 * (interactive without a key). -1 with *err filled when a given one is not
 * a priority. */
static int request_priority(const struct sw_facts_in *in, struct sw_request_error *err)
{
    if (in->hdrs->priority) {
        int p = parse_priority(in->hdrs->priority, strlen(in->hdrs->priority));
        if (p < 0)
            sw_request_error_set(err, 400, "invalid_request_error", "invalid_header",
                                 "X-Spillway-Priority",
                                 "Invalid X-Spillway-Priority: expected interactive or batch.");
        return p;
    }
    const json_t *md = json_object_get(in->chat->body, "metadata");
    const json_t *mp = json_is_object(md) ? json_object_get(md, "priority") : NULL;
    if (mp) {
        int p = json_is_string(mp) ? parse_priority(json_string_value(mp),
                                                    json_string_length(mp)) : -1;
        if (p < 0)
            sw_request_error_set(err, 400, "invalid_request_error", "invalid_value",
                                 "metadata.priority",
                                 "Invalid metadata.priority: expected \"interactive\" or "
                                 "\"batch\".");
        return p;
    }
    return in->key ? in->key->priority : SW_PRIORITY_INTERACTIVE;
}

/* ---- Policies ---- */

/* Residency: the cloud regions a sensitive request may use, the intersection
 * of the lists that are set (global, key, model); none set: none. The names
 * are the config's and live as long as it. */
static void allowed_regions(const struct sw_facts_in *in, struct sw_route_facts *facts)
{
    const struct sw_config_regions *lists[3] = {&in->cfg->pii.sensitive_regions,
                                                in->key ? &in->key->sensitive_regions : NULL,
                                                &in->model->sensitive_regions};
    const struct sw_config_regions *first = NULL;
    for (size_t i = 0; i < 3 && !first; i++)
        if (lists[i] && lists[i]->set)
            first = lists[i];
    facts->n_regions = 0;
    for (size_t r = 0; first && r < first->n; r++) {
        bool everywhere = true;
        for (size_t i = 0; i < 3; i++)
            if (lists[i] && lists[i]->set && !sw_config_regions_has(lists[i], first->names[r]))
                everywhere = false;
        if (everywhere && facts->n_regions < SW_CONFIG_MAX_REGIONS)
            facts->regions[facts->n_regions++] = first->names[r];
    }
}

/* The most restrictive of the global, key and model PII policies. */
static enum sw_pii_policy pii_policy(const struct sw_facts_in *in)
{
    enum sw_pii_policy policy = in->cfg->pii.policy;
    if (in->key && in->key->pii > policy)
        policy = in->key->pii;
    if (in->model->pii > policy)
        policy = in->model->pii;
    return policy;
}

/* The most restrictive of the global, key and model binary_parts. */
static enum sw_pii_binary binary_parts(const struct sw_facts_in *in)
{
    enum sw_pii_binary binary = in->cfg->pii.binary_parts;
    if (in->key && in->key->pii_binary_parts > binary)
        binary = in->key->pii_binary_parts;
    if (in->model->pii_binary_parts > binary)
        binary = in->model->pii_binary_parts;
    return binary;
}

/* ---- The PII scan ---- */

/* "email, iban": the types found, for messages and logs (never the values). */
static void type_list(const struct sw_facts_scanner *scan, const struct sw_pii_counts *c,
                      char *out, size_t cap)
{
    size_t used = 0;
    out[0] = '\0';
    for (int t = 0; t < SW_PII_MAX_TYPES && used < cap; t++)
        if (c->n[t]) {
            int w = snprintf(out + used, cap - used, "%s%s", used ? ", " : "",
                             scan->type_name(scan->ud, t));
            if (w < 0)
                break;
            used += (size_t)w;
        }
}

/* Scans the client's own body with its API's table (an Anthropic or a
 * Responses body goes whole to a backend of its API, so its fields that the
 * OpenAI translation drops are scanned too), then, when the first scan ran,
 * the translation (it joins and rewrites some texts). Reads in->api and
 * in->chat only, and writes only *out: what a worker thread may run. */
void sw_facts_scan(const struct sw_facts_in *in, const struct sw_facts_scanner *scan,
                   struct sw_facts_scan *out)
{
    const struct sw_chat_request *chat = in->chat;
    enum sw_pii_surface surface = chat->native && in->api == SW_API_RESPONSES
                                      ? SW_PII_SURFACE_RESPONSES
                                  : chat->native                 ? SW_PII_SURFACE_MESSAGES
                                  : in->api == SW_API_EMBEDDINGS ? SW_PII_SURFACE_EMBEDDINGS
                                                                 : SW_PII_SURFACE_CHAT;
    memset(out, 0, offsetof(struct sw_facts_scan, bad));
    out->bad[0] = '\0';
    if (chat->native && scan->pair) {
        out->body_rc = scan->pair(scan->ud, surface, chat->native, &out->body, out->bad,
                                  sizeof out->bad, SW_PII_SURFACE_CHAT, chat->body,
                                  &out->built, &out->built_rc);
        out->built_ran = out->body_rc == SW_OK;
        return;
    }
    out->body_rc = scan->body(scan->ud, surface, chat->native ? chat->native : chat->body,
                              &out->body, out->bad, sizeof out->bad);
    if (out->body_rc != SW_OK || !chat->native)
        return;
    out->built_ran = true;
    out->built_rc = scan->built(scan->ud, SW_PII_SURFACE_CHAT, chat->body, &out->built);
}

/* What the two scans say together: per type the larger count of the two is
 * kept. A scan that cannot run (too large) fails closed: the request is
 * sensitive. SW_EINVAL with *err filled: a structural field outside its
 * grammar. */
static int merge_scan(const struct sw_facts_scan *r, struct sw_facts *f,
                      struct sw_request_error *err)
{
    sw_str_copy(f->bad, sizeof f->bad, r->bad);
    f->pii.counts = r->body;
    if (r->body_rc == SW_EINVAL) {
        sw_request_error_set(err, 400, "invalid_request_error", "invalid_value",
                             f->bad[0] ? f->bad : NULL,
                             "%s: the value is not one this field takes (an enum value, an id "
                             "or name of its documented pattern, or a number within 2^53).",
                             f->bad[0] ? f->bad : "body");
        f->refused = SW_FACTS_REFUSED_FIELD;
        return SW_EINVAL;
    }
    if (r->body_rc != SW_OK || (r->built_ran && r->built_rc != SW_OK)) {
        f->route.sensitive = true;
        f->scan_failed = true;
        return SW_OK;
    }
    if (!r->built_ran)
        return SW_OK;
    const struct sw_pii_counts *tr = &r->built;
    struct sw_pii_counts *c = &f->pii.counts;
    for (int t = 0; t < SW_PII_MAX_TYPES; t++)
        if (tr->n[t] > c->n[t]) {
            c->total += tr->n[t] - c->n[t];
            c->n[t] = tr->n[t];
        }
    if (tr->binary > c->binary)
        c->binary = tr->binary;
    if (tr->allowed > c->allowed)
        c->allowed = tr->allowed;
    return SW_OK;
}

/* What the scan's result means under the policy: PII found is refused
 * (block) or keeps the request local (local_only); content parts the
 * scanner cannot read (data: images, audio, file bytes, token ids) cannot be
 * vouched for nor masked, so unless binary_parts allows them the request is
 * sensitive and stays off the cloud. */
static int apply_scan(const struct sw_facts_in *in, const struct sw_facts_scanner *scan,
                      struct sw_facts *f, struct sw_request_error *err)
{
    if (in->chat->token_inputs)
        f->pii.counts.binary++;
    if (f->pii.counts.total > 0) {
        if (f->pii.policy == SW_PII_POLICY_BLOCK) {
            type_list(scan, &f->pii.counts, f->types, sizeof f->types);
            sw_request_error_set(err, 400, "invalid_request_error", "pii_blocked",
                                 in->api == SW_API_RESPONSES ? "input" : "messages",
                                 "The request contains personal data or secrets (%s) and its "
                                 "policy blocks such requests.", f->types);
            f->refused = SW_FACTS_REFUSED_PII;
            return SW_EINVAL;
        }
        if (f->pii.policy == SW_PII_POLICY_LOCAL_ONLY)
            f->route.sensitive = true;
    }
    if (f->pii.policy != SW_PII_POLICY_OFF && f->pii.counts.binary > 0 &&
        binary_parts(in) != SW_PII_BINARY_ALLOW) {
        f->route.sensitive = true;
        f->pii.binary_blocked = true;
    }
    return SW_OK;
}

/* ---- Derivation ---- */

/* The highest tier the key may use: keys[].max_tier and its team's, the
 * lower of the two. */
static enum sw_tier key_tier(const struct sw_facts_in *in)
{
    const struct sw_config_key *key = in->key;
    if (!key)
        return SW_TIER_CLOUD;
    if (key->t.max_tier == SW_MAX_TIER_LOCAL)
        return SW_TIER_LOCAL;
    if (key->team_index >= 0 && (size_t)key->team_index < in->cfg->n_teams &&
        in->cfg->teams[key->team_index].t.max_tier == SW_MAX_TIER_LOCAL)
        return SW_TIER_LOCAL;
    return SW_TIER_CLOUD;
}

int sw_facts_begin(const struct sw_facts_in *in, struct sw_facts *out,
                   struct sw_request_error *err)
{
    const struct sw_chat_request *chat = in->chat;
    const struct sw_config_key *key = in->key;
    const struct sw_facts_hdrs *h = in->hdrs;
    memset(out, 0, offsetof(struct sw_facts, bad));
    out->bad[0] = out->types[0] = '\0';
    out->start_ms = in->start_ms;

    int priority = request_priority(in, err);
    if (priority < 0) {
        out->refused = SW_FACTS_REFUSED_PRIORITY;
        return SW_EINVAL;
    }

    out->route = (struct sw_route_facts){
        .prompt_tokens_est = chat->prompt_tokens_est,
        .prompt_tokens_max = chat->prompt_tokens_max,
        /* An embedding has no output tokens: its estimate is the prefill alone. */
        .max_tokens = in->api == SW_API_EMBEDDINGS ? 1
                      : chat->max_tokens > 0      ? chat->max_tokens
                                                  : in->cfg->routing.default_max_tokens,
        .allows_cloud = (!key || key->allow_cloud) && !h->allow_cloud.any_false &&
                        chat->allow_cloud != 0 && key_tier(in) == SW_TIER_CLOUD,
        .sensitive = (key && key->sensitive) || h->sensitive.any_true,
        .latency_critical = h->latency_critical.any_true,
        .needs_tools = chat->has_tools,
        .needs_images = chat->has_images,
        .deadline_ms = in->start_ms + h->timeout_ms,
        .ttft_budget_ms = key ? key->ttft_budget_ms : 0,
        .max_tokens_given = chat->max_tokens > 0,
        .priority = (enum sw_priority)priority,
        .ttft_budget_cap_ms = h->ttft_budget_cap_ms,
    };
    allowed_regions(in, &out->route);
    out->pii.policy = pii_policy(in);
    return SW_OK;
}

bool sw_facts_needs_scan(const struct sw_facts *f)
{
    return f->pii.policy != SW_PII_POLICY_OFF;
}

int sw_facts_finish(const struct sw_facts_in *in, const struct sw_facts_scanner *scan,
                    const struct sw_facts_scan *res, struct sw_facts *out,
                    struct sw_request_error *err)
{
    if (sw_facts_needs_scan(out) && merge_scan(res, out, err) != SW_OK)
        return SW_EINVAL;
    return apply_scan(in, scan, out, err);
}

int sw_facts_derive(const struct sw_facts_in *in, const struct sw_facts_scanner *scan,
                    struct sw_facts *out, struct sw_request_error *err)
{
    if (sw_facts_begin(in, out, err) != SW_OK)
        return SW_EINVAL;
    struct sw_facts_scan res;
    if (sw_facts_needs_scan(out))
        sw_facts_scan(in, scan, &res);
    return sw_facts_finish(in, scan, &res, out, err);
}

/* ---- The real engine ---- */

static int engine_body(void *ud, enum sw_pii_surface s, const json_t *body,
                       struct sw_pii_counts *counts, char *bad, size_t bad_len)
{
    return sw_pii_scan_body(ud, s, body, counts, bad, bad_len);
}

static int engine_built(void *ud, enum sw_pii_surface s, const json_t *body,
                        struct sw_pii_counts *counts)
{
    return sw_pii_scan_built(ud, s, body, counts);
}

static const char *engine_type_name(void *ud, int type)
{
    return sw_pii_type_name(ud, type);
}

static int engine_pair(void *ud, enum sw_pii_surface s, const json_t *body,
                       struct sw_pii_counts *counts, char *bad, size_t bad_len,
                       enum sw_pii_surface built_s, const json_t *built,
                       struct sw_pii_counts *built_counts, int *built_rc)
{
    return sw_pii_scan_pair(ud, s, body, counts, bad, bad_len, built_s, built, built_counts,
                            built_rc);
}

struct sw_facts_scanner sw_facts_engine_scanner(const struct sw_pii_engine *e)
{
    return (struct sw_facts_scanner){engine_body, engine_built, engine_type_name, (void *)e,
                                     engine_pair};
}
