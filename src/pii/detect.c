/* Detection: candidates from the literal triggers of the whole-text
 * built-ins (extent found in C), from one pre-pass over the text (digit
 * runs, IPv6 and Bearer triggers; with AVX2 also the literals), from the
 * digit patterns (vectorscan, SOM leftmost) on the digit runs and from the
 * custom patterns (vectorscan, SOM leftmost); a C refiner per pattern kind
 * fixes the span and validates it, overlapping results are merged. See
 * pii.h and docs/internals/pii.md. */
#include "pii/pii.h"

#include <hs/hs.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <utf8proc.h>

#include "common/err.h"
#include "pii/detect.h"
#include "pii/allow.h"
#include "pii/cache.h"
#include "pii/hsx.h"
#include "pii/phone.h"
#include "pii/secret.h"
#include "pii/validate.h"
#include "pii/view.h"

/* ---- Patterns ---- */

enum kind {
    K_EMAIL, K_PHONE_INTL, K_PHONE_NAT, K_PHONE_IDD, K_PHONE_ES, K_PHONE_IT, K_PHONE_US, K_IBAN, K_CARD, K_NINE,
    K_SSN, K_DNI, K_RRN, K_IPV4, K_IPV6, K_TOKEN, K_FIXED, K_BEARER, K_JWT,
    K_PRIVKEY, K_URLCRED, K_CUSTOM
};

struct pattern {
    int type;
    int kind;
    int classes;                /* K_TOKEN/K_BEARER: char classes the body needs (digit, upper, lower) */
    int prefix;                 /* K_TOKEN/K_BEARER: bytes of the literal prefix (not the body) */
    unsigned flags;             /* extra hs flags */
    const char *re;
    /* Whole-text built-ins: the literal triggers ('|' between them) that
     * start every match, found without start-of-match tracking (the AVX2
     * pre-pass's probes, or a vectorscan database of the literals); the
     * extent is found in C (lit_hit()). K_TOKEN/K_FIXED: the
     * body after the literal, bytes of class bclass (BC_*), at least bmin of
     * them, or exactly bfix. */
    const char *lits;
    unsigned char bclass;
    unsigned char bmin, bfix;
};

/* Body classes of the secret-token patterns: a byte is in a class when
 * body_cat[byte] & class. */
enum { BC_ALNUM = 1, BC_US = 2, BC_DASH = 4, BC_UPDIG = 8 };

static const struct pattern builtin[] = {
    /* e-mail: a short trigger; the domain is found in C (email_end()): a
     * pattern ending in "\.[A-Za-z]{2,}" made vectorscan look at every '.' */
    {SW_PII_EMAIL, K_EMAIL, 0, 0, 0, "@[A-Za-z0-9\\x80-\\xff-]", "@", 0, 0, 0},
    {SW_PII_PHONE, K_PHONE_INTL, 0, 0, 0, "\\+[1-9][0-9 ().\\-]{6,24}[0-9]", NULL, 0, 0, 0},
    /* national numbers with a trunk 0 (NL, DE, FR, BE, IT, GB, ...), the 00
     * international prefix, Spanish numbers (no trunk prefix, grouped):
     * candidates only, libphonenumber validates them for the configured regions.
     * The leading boundary byte is part of the pattern so that the leftmost
     * start of a match is never inside an earlier number (on_match drops it);
     * national and 00 patterns are short triggers, the candidate is the run
     * of phone characters after them (on_match, at most 32 bytes). */
    {SW_PII_PHONE, K_PHONE_NAT, 0, 0, 0, "(?:^|[^0-9A-Za-z_])\\(?0[1-9]", NULL, 0, 0, 0},
    {SW_PII_PHONE, K_PHONE_IDD, 0, 0, 0, "(?:^|[^0-9A-Za-z_])00[ \\-]?[1-9]", NULL, 0, 0, 0},
    {SW_PII_PHONE, K_PHONE_ES, 0, 0, 0,
     "(?:^|[^0-9A-Za-z_])(?:[679][0-9]{2}[ .\\-][0-9]{3}[ .\\-][0-9]{3}|[679][0-9][ .\\-][0-9]{3}[ .\\-][0-9]{2}[ .\\-][0-9]{2}"
     "|[679][0-9]{2}[ .\\-][0-9]{2}[ .\\-][0-9]{2}[ .\\-][0-9]{2})", NULL, 0, 0, 0},
    /* Italian mobile numbers (10 digits, 3xx) have no trunk prefix either: grouped */
    {SW_PII_PHONE, K_PHONE_IT, 0, 0, 0,
     "(?:^|[^0-9A-Za-z_])3[0-9]{2}[ .\\-/][0-9]{3}[ .\\-]?[0-9]{4}", NULL, 0, 0, 0},
    {SW_PII_PHONE, K_PHONE_US, 0, 0, 0,
     "(?:1[ .\\-])?(?:\\([2-9][0-9]{2}\\) ?|[2-9][0-9]{2}[ .\\-])[2-9][0-9]{2}[ .\\-][0-9]{4}", NULL, 0, 0, 0},
    /* IBAN: country and check digits as the trigger; the rest, 11-32 of
     * [A-Za-z0-9] each after at most one space, is found in C (iban_end():
     * the repeat with leftmost start of match was ~a third of the scan) */
    {SW_PII_IBAN, K_IBAN, 0, 0, 0, "[A-Za-z]{2}[0-9]{2}", NULL, 0, 0, 0},
    {SW_PII_CARD, K_CARD, 0, 0, 0,
     "[0-9]{13,19}|[0-9]{4}(?:[ .\\-/][0-9]{4}){2,3}(?:[ .\\-/][0-9]{1,4})?|[0-9]{4}[ .\\-/][0-9]{6}[ .\\-/][0-9]{4,5}"
     "|[0-9]{8}[ \\-][0-9]{7,8}|[0-9]{4}[ \\-][0-9]{4}[ \\-][0-9]{5}",
     NULL, 0, 0, 0},
    /* nine digits: a BSN (11-proef, with context or dotted) or an SSN (with context) */
    {SW_PII_BSN, K_NINE, 0, 0, 0,
     "[0-9]{9}|[0-9]{4}\\.[0-9]{2}\\.[0-9]{3}|[0-9]{3} [0-9]{2} [0-9]{4}|[0-9]{3} [0-9]{3} [0-9]{3}|[0-9]{3}\\.[0-9]{3}\\.[0-9]{3}", NULL, 0, 0, 0},
    /* Spanish DNI (8 digits + control letter) and NIE (X/Y/Z + 7 digits + letter) */
    {SW_PII_NATIONAL_ID, K_DNI, 0, 0, 0,
     "[0-9]{8}[ \\-]?[A-Za-z]|[0-9]{2}\\.[0-9]{3}\\.[0-9]{3}[ \\-]?[A-Za-z]|[XYZxyz][ \\-]?[0-9]{7}[ \\-]?[A-Za-z]", NULL, 0, 0, 0},
    /* Belgian national register number: YY.MM.DD-SSS.CC (or 11 digits after a word) */
    {SW_PII_NATIONAL_ID, K_RRN, 0, 0, 0,
     "[0-9]{2}\\.[0-9]{2}\\.[0-9]{2}-[0-9]{3}\\.[0-9]{2}|[0-9]{6}-[0-9]{3}-[0-9]{2}|[0-9]{11}", NULL, 0, 0, 0},
    {SW_PII_SSN, K_SSN, 0, 0, 0, "[0-9]{3}-[0-9]{2}-[0-9]{4}", NULL, 0, 0, 0},
    /* IP addresses: short triggers; the candidate is the surrounding run of
     * [0-9.] or [0-9A-Fa-f:.], found by a bounded scan both ways (expand()) */
    {SW_PII_IPV4, K_IPV4, 0, 0, 0, "[0-9]\\.[0-9]{1,3}\\.[0-9]{1,3}\\.[0-9]", NULL, 0, 0, 0},
    {SW_PII_IPV6, K_IPV6, 0, 0, 0, "::[0-9A-Fa-f]|[0-9A-Fa-f]::|[0-9A-Fa-f]:[0-9A-Fa-f]{1,4}:", NULL, 0, 0, 0},
    /* secrets */
    {SW_PII_SECRET, K_TOKEN, 3, 3, 0,
     "sk-(?:proj-|svcacct-|admin-|ant-(?:api|admin|oat)[0-9]{2}-)?[A-Za-z0-9_\\-]{20,}",
     /* the optional part is made of body bytes: the body covers it */
     "sk-", BC_ALNUM | BC_US | BC_DASH, 20, 0},
    {SW_PII_SECRET, K_TOKEN, 2, 8, 0, "(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}",
     "sk_live_|sk_test_|rk_live_|rk_test_", BC_ALNUM, 16, 0},
    {SW_PII_SECRET, K_FIXED, 0, 0, 0, "(?:AKIA|ASIA)[0-9A-Z]{16}", "AKIA|ASIA", BC_UPDIG, 0, 16},
    {SW_PII_SECRET, K_TOKEN, 2, 4, 0, "gh[pousr]_[A-Za-z0-9]{30,}", "ghp_|gho_|ghu_|ghs_|ghr_", BC_ALNUM, 30, 0},
    {SW_PII_SECRET, K_TOKEN, 2, 11, 0, "github_pat_[A-Za-z0-9_]{22,}", "github_pat_", BC_ALNUM | BC_US, 22, 0},
    {SW_PII_SECRET, K_TOKEN, 2, 5, 0, "xox[abposr]-[A-Za-z0-9\\-]{10,}",
     "xoxa-|xoxb-|xoxp-|xoxo-|xoxs-|xoxr-", BC_ALNUM | BC_DASH, 10, 0},
    {SW_PII_SECRET, K_TOKEN, 2, 4, 0, "AIza[0-9A-Za-z_\\-]{35}", "AIza", BC_ALNUM | BC_US | BC_DASH, 0, 35},
    {SW_PII_SECRET, K_TOKEN, 2, 6, 0, "glpat-[0-9A-Za-z_\\-]{20,}", "glpat-", BC_ALNUM | BC_US | BC_DASH, 20, 0},
    {SW_PII_SECRET, K_TOKEN, 2, 3, 0, "hf_[A-Za-z0-9]{30,}", "hf_", BC_ALNUM, 30, 0},
    /* found in C (bearer_at(), from the pass that finds the colons): in
     * vectorscan it was a quarter of the whole-text database's cost */
    {SW_PII_SECRET, K_BEARER, 2, 0, 0, "[Bb]earer +[A-Za-z0-9._~+/\\-]{16,}=*", NULL, 0, 0, 0},
    {SW_PII_SECRET, K_JWT, 0, 0, 0,
     "eyJ[A-Za-z0-9_\\-]{8,}\\.eyJ[A-Za-z0-9_\\-]{8,}\\.[A-Za-z0-9_\\-]{8,}", "eyJ", 0, 0, 0},
    /* PEM (PKCS#1, PKCS#8, SEC1, OpenSSH, encrypted) and OpenPGP private keys */
    {SW_PII_SECRET, K_PRIVKEY, 0, 0, 0, "-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----", "-----BEGIN ", 0, 0, 0},
    /* the user may be empty (redis://:password@host) */
    {SW_PII_SECRET, K_URLCRED, 0, 0, 0,
     "[A-Za-z][A-Za-z0-9+.\\-]*://[^\\s:@/]*:[^\\s@/]+@", "://", 0, 0, 0},
};
#define N_BUILTIN (sizeof builtin / sizeof builtin[0])

static const char *const builtin_names[SW_PII_CUSTOM_BASE] = {
    "email", "phone", "iban", "card", "bsn", "ssn", "ipv4", "ipv6", "secret", "national_id",
};

enum validator { V_NONE, V_LUHN, V_MOD97, V_ELFPROEF };

/* The digit patterns: every match of one lies inside a run of digits and
 * the separators " ().-/+" (with at most the byte before the run, a boundary
 * byte or the X/Y/Z of a NIE, and the byte after it, a DNI's letter), and
 * every match that can be accepted has at least 7 digits, or 4 and three
 * dots (an IPv4 address). */
static bool digit_kind(int kind)
{
    switch (kind) {
    case K_PHONE_INTL: case K_PHONE_NAT: case K_PHONE_IDD: case K_PHONE_ES: case K_PHONE_IT:
    case K_PHONE_US: case K_CARD: case K_NINE: case K_DNI: case K_RRN: case K_SSN: case K_IPV4:
        return true;
    default:
        return false;
    }
}


#define SCRATCH_POOL 16

#define MAX_LITS 48
#define BEARER_BUCKET 0x80

struct sw_pii_engine {
    hs_database_t *ldb;         /* the literal triggers of the whole-text built-ins */
    hs_database_t *cdb;         /* the custom patterns (SOM leftmost), NULL without any */
    hs_database_t *refdb;       /* tests: the whole-text built-ins' regexes, SOM leftmost */
    unsigned n_lits;
    unsigned lit_pat[MAX_LITS]; /* per literal: its pattern */
    unsigned char lit_len[MAX_LITS];
    char lit_str[MAX_LITS][16];
    /* The literals for the AVX2 pre-pass: eight buckets, each a set of
     * 3-byte probes (a literal's bytes from lit_off on, shorter ones padded
     * with any byte) given as the buckets whose probe byte k may have a low
     * (probe_lo[k]) and a high nibble (probe_hi[k]); a position where a
     * bucket passes all three is checked against its literals. */
    unsigned char probe_lo[3][16], probe_hi[3][16];
    unsigned char lit_off[MAX_LITS];
    unsigned char bucket[8][MAX_LITS], n_bucket[8];
    hs_database_t *ddb;         /* the digit patterns, run on digit runs only */
    hs_database_t *sdb;         /* the secret rules of secret.c, their literal triggers */
    unsigned iban_id;           /* the IBAN trigger's pattern, found in C (run_at()) */
    unsigned ipv6_id;           /* the IPv6 trigger's pattern, found in C (ipv6_trigger_at()) */
    unsigned bearer_id;         /* the Bearer pattern, found in C (bearer_at()) */
    bool avx2;                  /* the pre-pass may use AVX2 (prepass()) */
    size_t n_pat;
    struct pattern *pat;        /* n_pat: builtin then one per custom type */
    int n_types;
    char names[SW_PII_MAX_TYPES][SW_PII_MAX_NAME + 1];
    char tags[SW_PII_MAX_TYPES][SW_PII_MAX_TAG + 1];      /* upper case, '-' '.' as '_' */
    int validator[SW_PII_MAX_TYPES];
    int prio[SW_PII_MAX_TYPES];         /* lower wins when spans merge */
    char regions[SW_PII_MAX_PHONE_REGIONS][3];  /* national phone numbers of these */
    size_t n_regions;
    pthread_mutex_t lock;
    hs_scratch_t *proto;                /* template for clones */
    hs_scratch_t *pool[SCRATCH_POOL];
    int n_pool;
    /* An engine made by sw_pii_engine_allowing: the one whose databases,
     * patterns and scratch pool it shares (NULL: its own), and its lists. */
    struct sw_pii_engine *base;
    struct sw_pii_allow allow;
    /* The verdict cache (NULL: none) and what this engine's verdicts are
     * filed under: a number no other engine of the process had, renewed by
     * every change of what it detects. */
    struct sw_pii_cache *cache;
    uint64_t gen;
};

static uint64_t next_gen(void)
{
    static uint64_t gen;
    return __atomic_add_fetch(&gen, 1, __ATOMIC_RELAXED);
}

void sw_pii_engine_set_cache(struct sw_pii_engine *e, struct sw_pii_cache *c)
{
    e->cache = c;
}

struct sw_pii_cache *sw_pii_engine_cache(const struct sw_pii_engine *e)
{
    return e ? e->cache : NULL;
}

uint64_t sw_pii_engine_gen(const struct sw_pii_engine *e)
{
    return e->gen;
}

/* ---- Engine ---- */

static int set_err(char *err, size_t errlen, const char *fmt, const char *a, const char *b)
{
    if (err && errlen)
        snprintf(err, errlen, fmt, a, b);
    return SW_EINVAL;
}

/* The config's name rule (1-64 of A-Z a-z 0-9 _ . -). */
static bool name_ok(const char *n)
{
    size_t l = n ? strlen(n) : 0;
    if (l == 0 || l > SW_PII_MAX_NAME)
        return false;
    for (size_t i = 0; i < l; i++)
        if (!((n[i] >= 'a' && n[i] <= 'z') || (n[i] >= 'A' && n[i] <= 'Z') ||
              (n[i] >= '0' && n[i] <= '9') || n[i] == '_' || n[i] == '-' || n[i] == '.'))
            return false;
    return true;
}

/* The built-in types' names and priorities (lower wins when spans merge),
 * the default phone regions, then custom type i of the config. */
static void init_builtin_types(struct sw_pii_engine *e)
{
    static const int prio_builtin[SW_PII_CUSTOM_BASE] = {
        [SW_PII_SECRET] = 0, [SW_PII_IBAN] = 2, [SW_PII_CARD] = 3, [SW_PII_EMAIL] = 4,
        [SW_PII_IPV6] = 5, [SW_PII_IPV4] = 6, [SW_PII_SSN] = 7, [SW_PII_BSN] = 8,
        [SW_PII_NATIONAL_ID] = 9, [SW_PII_PHONE] = 10,
    };
    for (int t = 0; t < SW_PII_CUSTOM_BASE; t++) {
        snprintf(e->names[t], sizeof e->names[t], "%s", builtin_names[t]);
        e->prio[t] = prio_builtin[t];
    }
    memcpy(e->pat, builtin, sizeof builtin);
    static const char *const def[] = {SW_PII_DEFAULT_PHONE_REGIONS};
    for (size_t i = 0; i < sizeof def / sizeof def[0]; i++)
        memcpy(e->regions[i], def[i], 3);
    e->n_regions = sizeof def / sizeof def[0];
}

static int add_custom_type(struct sw_pii_engine *e, const struct sw_pii_custom *c, size_t i,
                           char *err, size_t errlen)
{
    int t = SW_PII_CUSTOM_BASE + (int)i;
    if (!name_ok(c->name))
        return set_err(err, errlen, "pii: custom type name \"%s\": want 1-64 characters from A-Z a-z 0-9 _ . -%s",
                       c->name ? c->name : "", "");
    for (int u = 0; u < t; u++)
        if (!strcmp(e->names[u], c->name))
            return set_err(err, errlen, "pii: custom type \"%s\" is defined twice or is built in%s",
                           c->name, "");
    if (!c->regex || !c->regex[0])
        return set_err(err, errlen, "pii: custom type \"%s\": regex is missing%s", c->name, "");
    if (!c->validator || !strcmp(c->validator, "none"))
        e->validator[t] = V_NONE;
    else if (!strcmp(c->validator, "luhn"))
        e->validator[t] = V_LUHN;
    else if (!strcmp(c->validator, "mod97"))
        e->validator[t] = V_MOD97;
    else if (!strcmp(c->validator, "elfproef"))
        e->validator[t] = V_ELFPROEF;
    else
        return set_err(err, errlen,
                       "pii: custom type \"%s\": validator \"%s\" is not one of none, luhn, mod97, elfproef",
                       c->name, c->validator);
    snprintf(e->names[t], sizeof e->names[t], "%s", c->name);
    e->prio[t] = 1;
    e->pat[N_BUILTIN + i] = (struct pattern){t, K_CUSTOM, 0, 0, 0, c->regex, NULL, 0, 0, 0};
    return SW_OK;
}

/* Tags are cut to SW_PII_MAX_TAG; two types with the same cut tag still get
 * distinct placeholders (the map skips a number already issued). */
static void make_tags(struct sw_pii_engine *e)
{
    for (int t = 0; t < e->n_types; t++) {
        size_t k = 0;
        for (; k < SW_PII_MAX_TAG && e->names[t][k]; k++) {
            char ch = e->names[t][k];
            e->tags[t][k] = (ch >= 'a' && ch <= 'z') ? (char)(ch - 'a' + 'A')
                            : (ch == '-' || ch == '.') ? '_' : ch;
        }
        e->tags[t][k] = '\0';
    }
}

/* The whole-text built-ins' literal triggers, one expression each in
 * res/flags/ids (res points into litbuf); the IBAN, IPv6 and Bearer
 * patterns' ids. False when they do not fit MAX_LITS. */
static bool index_literals(struct sw_pii_engine *e, char litbuf[MAX_LITS][16], const char **res,
                           unsigned *flags, unsigned *ids, unsigned *nm)
{
    for (size_t i = 0; i < N_BUILTIN; i++) {
        if (e->pat[i].kind == K_IBAN)
            e->iban_id = (unsigned)i;
        if (e->pat[i].kind == K_IPV6)
            e->ipv6_id = (unsigned)i;
        if (e->pat[i].kind == K_BEARER)
            e->bearer_id = (unsigned)i;
        for (const char *l = e->pat[i].lits; l && *l;) {
            size_t k = strcspn(l, "|");
            if (e->n_lits == MAX_LITS || k >= sizeof litbuf[0])
                return false;
            memcpy(litbuf[e->n_lits], l, k);
            litbuf[e->n_lits][k] = '\0';
            e->lit_pat[e->n_lits] = (unsigned)i;
            e->lit_len[e->n_lits] = (unsigned char)k;
            res[*nm] = litbuf[e->n_lits];
            flags[*nm] = 0;
            ids[(*nm)++] = e->n_lits++;
            l += k + (l[k] == '|');
        }
    }
    return true;
}

/* The AVX2 pre-pass's buckets and probes of the literals (see struct
 * sw_pii_engine). False when a literal fits no bucket. */
static bool bucket_literals(struct sw_pii_engine *e, char litbuf[MAX_LITS][16])
{
    for (unsigned j = 0; j < e->n_lits; j++) {
        /* buckets by the probe's first two bytes, so that no two literals
         * of a bucket make a common word of their bytes ("ght" from "ghp_"
         * and "github_pat_"); "-----BEGIN " is probed at "--B" ("---" is
         * common in markdown) */
        static const char firsts[7][5][3] = {{"@"}, {"sk", "rk"}, {"A"}, {"gh"}, {"gi", "gl"},
                                             {"xo", "hf", "ey", ":/"}, {"--"}};
        const char *l = litbuf[j];
        size_t ll = e->lit_len[j], o = ll >= 6 && !memcmp(l, "---", 3) ? 3 : 0;
        int b = 0;
        for (bool found = false; b < 7 && !found; b += !found)
            for (int f = 0; f < 5 && !found; f++)
                found = firsts[b][f][0] && !strncmp(l + o, firsts[b][f], strlen(firsts[b][f]));
        if (b == 7)
            return false;
        memcpy(e->lit_str[j], l, ll + 1);
        e->lit_off[j] = (unsigned char)o;
        e->bucket[b][e->n_bucket[b]++] = (unsigned char)j;
        for (size_t k = 0; k < 3; k++)
            for (unsigned nb = 0; nb < 16; nb++) {
                unsigned char c = o + k < ll ? (unsigned char)l[o + k] : 0;
                if (o + k >= ll || (c & 15) == nb)
                    e->probe_lo[k][nb] |= (unsigned char)(1u << b);
                if (o + k >= ll || (c >> 4) == nb)
                    e->probe_hi[k][nb] |= (unsigned char)(1u << b);
            }
    }
    /* the last bucket is the Bearer pattern's "ear" (of "earer", bearer_at()) */
    for (size_t k = 0; k < 3; k++) {
        e->probe_lo[k]["ear"[k] & 15] |= BEARER_BUCKET;
        e->probe_hi[k]["ear"[k] >> 4] |= BEARER_BUCKET;
    }
    return true;
}

/* The custom types' database (SOM leftmost), NULL without any; a regex that
 * does not compile names its type. */
static int compile_custom(struct sw_pii_engine *e, const char **res, unsigned *flags,
                          unsigned *ids, char *err, size_t errlen)
{
    hs_compile_error_t *cerr = NULL;
    hs_platform_info_t plat;
    unsigned nm = 0;
    for (size_t i = N_BUILTIN; i < e->n_pat; i++) {
        res[nm] = e->pat[i].re;
        flags[nm] = HS_FLAG_SOM_LEFTMOST | e->pat[i].flags;
        ids[nm++] = (unsigned)i;
    }
    if (nm && hs_compile_multi(res, flags, ids, nm, HS_MODE_BLOCK, sw_hsx_platform(&plat), &e->cdb, &cerr) != HS_SUCCESS) {
        int rc;
        int bad = cerr && cerr->expression >= 0 ? (int)ids[cerr->expression] : -1;
        if (bad >= (int)N_BUILTIN)
            rc = set_err(err, errlen, "pii: custom type \"%s\": regex: %s",
                         e->names[e->pat[bad].type], cerr->message);
        else
            rc = set_err(err, errlen, "pii: custom patterns: %s%s",
                         cerr ? cerr->message : "compile failed", "");
        hs_free_compile_error(cerr);
        return rc;
    }
    return SW_OK;
}

/* The literal triggers (nm of them in res/flags/ids), the custom patterns,
 * the digit patterns (run on digit runs only) and the secret rules. */
static int compile_dbs(struct sw_pii_engine *e, const char **res, unsigned *flags, unsigned *ids,
                       unsigned nm, char *err, size_t errlen)
{
    hs_compile_error_t *cerr = NULL;
    hs_platform_info_t plat;
    if (hs_compile_multi(res, flags, ids, nm, HS_MODE_BLOCK, sw_hsx_platform(&plat), &e->ldb, &cerr) != HS_SUCCESS) {
        int rc = set_err(err, errlen, "pii: built-in patterns: %s%s",
                         cerr ? cerr->message : "compile failed", "");
        hs_free_compile_error(cerr);
        return rc;
    }
    int rc = compile_custom(e, res, flags, ids, err, errlen);
    if (rc)
        return rc;
    unsigned nd = 0;
    for (size_t i = 0; i < N_BUILTIN; i++)
        if (digit_kind(e->pat[i].kind)) {
            res[nd] = e->pat[i].re;
            flags[nd] = HS_FLAG_SOM_LEFTMOST | e->pat[i].flags;
            ids[nd++] = (unsigned)i;
        }
    if (hs_compile_multi(res, flags, ids, nd, HS_MODE_BLOCK, sw_hsx_platform(&plat), &e->ddb, &cerr) != HS_SUCCESS) {
        rc = set_err(err, errlen, "pii: built-in patterns: %s%s",
                     cerr ? cerr->message : "compile failed", "");
        hs_free_compile_error(cerr);
        return rc;
    }
    if (sw_pii_secret_db(&e->sdb) != SW_OK)
        return set_err(err, errlen, "pii: built-in secret rules: %s%s", "compile failed", "");
    return SW_OK;
}

int sw_pii_engine_new(const struct sw_pii_custom *custom, size_t n_custom,
                      struct sw_pii_engine **out, char *err, size_t errlen)
{
    struct sw_pii_engine *e = NULL;
    const char **res = NULL;
    unsigned *flags = NULL, *ids = NULL;
    int rc = SW_ENOMEM;

    *out = NULL;
    if (err && errlen)
        err[0] = '\0';
    if (n_custom > SW_PII_MAX_CUSTOM) {
        char n[16];
        snprintf(n, sizeof n, "%d", SW_PII_MAX_CUSTOM);
        return set_err(err, errlen, "pii: too many custom types (at most %s)%s", n, "");
    }
    e = calloc(1, sizeof *e);
    if (!e)
        return SW_ENOMEM;
    pthread_mutex_init(&e->lock, NULL);
    e->gen = next_gen();
    e->n_pat = N_BUILTIN + n_custom;
    sw_pii_engine_set_avx2(e, 1);
    e->pat = calloc(e->n_pat, sizeof *e->pat);
    res = calloc(e->n_pat + 1, sizeof *res);
    flags = calloc(e->n_pat + 1, sizeof *flags);
    ids = calloc(e->n_pat + 1, sizeof *ids);
    if (!e->pat || !res || !flags || !ids)
        goto fail;
    e->n_types = SW_PII_CUSTOM_BASE + (int)n_custom;
    init_builtin_types(e);
    for (size_t i = 0; i < n_custom; i++)
        if ((rc = add_custom_type(e, &custom[i], i, err, errlen)) != SW_OK)
            goto fail;
    make_tags(e);
    /* The digit patterns only ever match inside a run of digits and
     * separators, so they are scanned only on those runs, found in C
     * (run_at(), which also finds the IBAN trigger: two letters and two
     * digits start such a run); the other built-ins are literal triggers
     * over the whole text, their extent found in C (lit_hit()); the custom
     * types are a database of their own, with the leftmost start of match. */
    rc = SW_ENOMEM;
    unsigned nm = 0;
    char litbuf[MAX_LITS][16];
    if (!index_literals(e, litbuf, res, flags, ids, &nm) || !bucket_literals(e, litbuf))
        goto fail;
    if ((rc = compile_dbs(e, res, flags, ids, nm, err, errlen)) != SW_OK)
        goto fail;
    rc = SW_ENOMEM;
    /* one scratch serves all databases */
    if (hs_alloc_scratch(e->ldb, &e->proto) != HS_SUCCESS ||
        hs_alloc_scratch(e->sdb, &e->proto) != HS_SUCCESS ||
        hs_alloc_scratch(e->ddb, &e->proto) != HS_SUCCESS ||
        (e->cdb && hs_alloc_scratch(e->cdb, &e->proto) != HS_SUCCESS))
        goto fail;
    /* libphonenumber loads its metadata on first use (tens of millions of
     * instructions): here, not in the first request's scan */
    (void)sw_pii_phone_region_ok("NL");
    sw_pii_phone_warm((const char(*)[3])e->regions, e->n_regions);
    /* The engine keeps custom patterns' regex strings only during compile. */
    for (size_t i = N_BUILTIN; i < e->n_pat; i++)
        e->pat[i].re = NULL;
    free(res);
    free(flags);
    free(ids);
    *out = e;
    return SW_OK;
fail:
    free(res);
    free(flags);
    free(ids);
    sw_pii_engine_free(e);
    return rc;
}

int sw_pii_phone_region_known(const char *code)
{
    return code && strlen(code) == 2 && code[0] >= 'A' && code[0] <= 'Z' && code[1] >= 'A' &&
           code[1] <= 'Z' && sw_pii_phone_region_ok(code);
}

int sw_pii_engine_set_phone_regions(struct sw_pii_engine *e, const char *const *codes, size_t n,
                                    char *err, size_t errlen)
{
    if (n > SW_PII_MAX_PHONE_REGIONS) {
        char m[16];
        snprintf(m, sizeof m, "%d", SW_PII_MAX_PHONE_REGIONS);
        return set_err(err, errlen, "pii: phone_regions: at most %s regions%s", m, "");
    }
    for (size_t i = 0; i < n; i++)
        if (!sw_pii_phone_region_known(codes[i]))
            return set_err(err, errlen,
                           "pii: phone_regions: \"%s\" is not a region code (two upper-case letters, ISO 3166, e.g. NL, DE, GB, US)%s",
                           codes[i] ? codes[i] : "", "");
    for (size_t i = 0; i < n; i++)
        memcpy(e->regions[i], codes[i], 3);
    e->n_regions = n;
    e->gen = next_gen();
    sw_pii_phone_warm((const char(*)[3])e->regions, e->n_regions);
    return SW_OK;
}

int sw_pii_engine_allowing(const struct sw_pii_engine *base, const char *const *values,
                           size_t n_values, const char *const *domains, size_t n_domains,
                           struct sw_pii_engine **out, char *err, size_t errlen)
{
    struct sw_pii_engine *e = malloc(sizeof *e);
    if (!e)
        return SW_ENOMEM;
    memcpy(e, base, sizeof *e);     /* the lock and pool copied are never used: base's are */
    e->base = base->base ? base->base : (struct sw_pii_engine *)base;
    e->gen = next_gen();
    int rc = sw_pii_allow_build(&e->allow, values, n_values, domains, n_domains, err, errlen);
    if (rc) {
        free(e);
        return rc;
    }
    *out = e;
    return SW_OK;
}

void sw_pii_engine_free(struct sw_pii_engine *e)
{
    if (!e)
        return;
    if (e->base) {
        sw_pii_allow_free(&e->allow);
        free(e);
        return;
    }
    for (int i = 0; i < e->n_pool; i++)
        hs_free_scratch(e->pool[i]);
    hs_free_scratch(e->proto);
    hs_free_database(e->ldb);
    hs_free_database(e->cdb);
    hs_free_database(e->refdb);
    hs_free_database(e->ddb);
    hs_free_database(e->sdb);
    pthread_mutex_destroy(&e->lock);
    free(e->pat);
    free(e);
}

void sw_pii_engine_set_avx2(struct sw_pii_engine *e, int on)
{
#if defined(__x86_64__) && defined(__GNUC__)
    e->avx2 = on && __builtin_cpu_supports("avx2");
    e->gen = next_gen();
#else
    (void)on;
    e->avx2 = false;
#endif
}

int sw_pii_type_count(const struct sw_pii_engine *e)
{
    return e ? e->n_types : SW_PII_CUSTOM_BASE;
}

const char *sw_pii_type_name(const struct sw_pii_engine *e, int type)
{
    if (type >= 0 && type < SW_PII_CUSTOM_BASE)
        return builtin_names[type];
    if (e && type >= 0 && type < e->n_types)
        return e->names[type];
    return "unknown";
}

const char *sw_pii_builtin_regex(size_t i, int *caseless)
{
    if (i >= N_BUILTIN)
        return NULL;
    *caseless = (builtin[i].flags & HS_FLAG_CASELESS) != 0;
    return builtin[i].re;
}

const char *sw_pii_type_tag(const struct sw_pii_engine *e, int type)
{
    if (e && type >= 0 && type < e->n_types)
        return e->tags[type];
    return "PII";
}

static hs_scratch_t *scratch_get(struct sw_pii_engine *e)
{
    if (e->base)
        e = e->base;
    hs_scratch_t *s = NULL;
    pthread_mutex_lock(&e->lock);
    if (e->n_pool > 0)
        s = e->pool[--e->n_pool];
    pthread_mutex_unlock(&e->lock);
    if (!s && hs_clone_scratch(e->proto, &s) != HS_SUCCESS)
        return NULL;
    return s;
}

static void scratch_put(struct sw_pii_engine *e, hs_scratch_t *s)
{
    if (e->base)
        e = e->base;
    pthread_mutex_lock(&e->lock);
    if (e->n_pool < SCRATCH_POOL) {
        e->pool[e->n_pool++] = s;
        s = NULL;
    }
    pthread_mutex_unlock(&e->lock);
    if (s)
        hs_free_scratch(s);
}

/* ---- Character helpers ---- */

static inline bool is_digit(unsigned char c) { return c >= '0' && c <= '9'; }
static inline bool is_alpha(unsigned char c) { return (c | 0x20) >= 'a' && (c | 0x20) <= 'z'; }
static inline bool is_alnum(unsigned char c) { return is_digit(c) || is_alpha(c); }
static inline bool is_hex(unsigned char c)
{
    return is_digit(c) || ((c | 0x20) >= 'a' && (c | 0x20) <= 'f');
}

enum { N_CBUF = 32, N_SPBUF = 16 };

struct scan {
    const struct sw_pii_engine *e;
    const unsigned char *t;
    size_t len;
    struct cand { unsigned id; size_t s, e; } *c;
    size_t n, cap;
    size_t *last;               /* per pattern: index+1 of its latest candidate, 0 none */
    size_t mend[N_BUILTIN];     /* per literal-triggered pattern: the furthest candidate end */
    size_t rfrom[N_BUILTIN], rend[N_BUILTIN];   /* per pattern: the last body run walked */
    struct cand *cbuf;          /* the first candidates and spans, on scan_raw's stack (not */
    struct sw_pii_span *spbuf;  /* zeroed): no allocation for most texts */
    bool full;
    struct sw_pii_span *sp;
    size_t nsp, capsp;
    size_t off;                 /* offset of the scanned window in t (digit runs) */
    struct win { size_t s, e, b; } *w;  /* digit runs to scan with the digit patterns; b: in cat */
    size_t nw, capw;
    bool cat;                   /* scanning the runs joined: positions map through w[].b */
    size_t wk;                  /* the run the last match was in */
    bool later;                 /* the refiner rejected a "later group" (retried, see scan_raw) */
    bool later_ok;              /* retrying: the digits before are an entity of their own */
    /* private keys: the END line searched for from pk_from was found at
     * pk_end (its closing dashes end at pk_close), or not (pk_end: len) */
    bool pk_have;
    size_t pk_from, pk_end, pk_close;
};

static inline int at(const struct scan *sc, size_t i)
{
    return i < sc->len ? sc->t[i] : -1;
}
static inline int before(const struct scan *sc, size_t s, size_t k)
{
    return s >= k ? sc->t[s - k] : -1;
}

/* A number-like entity must not continue a longer number on its left:
 * "1234-555-0132" is not a phone from "234". */
static bool left_num_ok(const struct scan *sc, size_t s)
{
    int p = before(sc, s, 1);
    if (p < 0)
        return true;
    if (is_alnum((unsigned char)p) || p == '_')
        return false;
    if ((p == '-' || p == '.' || p == '/' || p == '+' || p == ',') && before(sc, s, 2) >= 0 &&
        is_digit((unsigned char)before(sc, s, 2)))
        return false;
    return true;
}

/* ... nor on its right: "06-12345678.5" or "123456782x". */
static bool right_num_ok(const struct scan *sc, size_t e)
{
    int n = at(sc, e);
    if (n < 0)
        return true;
    if (is_alnum((unsigned char)n) || n == '_')
        return false;
    if ((n == '.' || n == ',' || n == '-' || n == '/') && at(sc, e + 1) >= 0 &&
        is_digit((unsigned char)at(sc, e + 1)))
        return false;
    return true;
}

/* The n bytes before s, ASCII letters in lower case, at w (no NUL). */
static void lower_before(const struct scan *sc, size_t s, size_t n, char *w)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = sc->t[s - n + i];
        w[i] = (char)((ch >= 'A' && ch <= 'Z') ? ch + 32 : ch);
    }
}

/* Case-insensitive: does one of words occur in the window of `back` bytes
 * before s? */
static bool context_before(const struct scan *sc, size_t s, size_t back, const char *const *words)
{
    size_t from = s > back ? s - back : 0;
    char w[128];
    size_t n = s - from;
    if (n > sizeof w - 1)
        n = sizeof w - 1;
    lower_before(sc, s, n, w);
    w[n] = '\0';
    /* one pass over the window: at each byte, the words starting with it
     * (a list has at most 32 words) */
    uint32_t first[256] = {0};
    size_t wl[32];
    int nw = 0;
    for (; words[nw] && nw < 32; nw++) {
        wl[nw] = strlen(words[nw]);
        first[(unsigned char)words[nw][0]] |= 1u << nw;
    }
    for (size_t i = 0; i < n; i++)
        for (uint32_t m = first[(unsigned char)w[i]]; m; m &= m - 1) {
            int k = __builtin_ctz(m);
            if (wl[k] <= n - i && !memcmp(w + i, words[k], wl[k]))
                return true;
        }
    return false;
}

/* Version-string context right before an IPv4-looking number:
 * "v1.2.3.4", "version 1.2.3.4", "firmware: 1.2.3.4". */
static bool version_context(const struct scan *sc, size_t s)
{
    static const char *const words[] = {"version", "versie", "ver", "release", "firmware",
                                        "build", "rev", "v", NULL};
    size_t i = s;
    while (i > 0 && s - i < 4 && (sc->t[i - 1] == ' ' || sc->t[i - 1] == ':' ||
                                  sc->t[i - 1] == '=' || sc->t[i - 1] == '.'))
        i--;
    for (const char *const *w = words; *w; w++) {
        size_t l = strlen(*w);
        if (i < l)
            continue;
        bool eq = true;
        for (size_t k = 0; k < l && eq; k++) {
            unsigned char ch = sc->t[i - l + k];
            eq = (char)((ch >= 'A' && ch <= 'Z') ? ch + 32 : ch) == (*w)[k];
        }
        if (eq && (i == l || !is_alpha(sc->t[i - l - 1])))
            return true;
    }
    return false;
}

/* ---- Refiners: candidate [s, e) -> exact span, or nothing ---- */

static inline bool is_local(unsigned char c)
{
    return is_alnum(c) || c == '.' || c == '_' || c == '%' || c == '+' || c == '-';
}

/* A letter, mark or digit of any script (Unicode categories L, M, N): what
 * an internationalised address (RFC 6531, IDN) has besides ASCII. */
static bool word_cp(utf8proc_int32_t c)
{
    utf8proc_category_t k = utf8proc_category(c);
    return k >= UTF8PROC_CATEGORY_LU && k <= UTF8PROC_CATEGORY_NO;
}

static bool letter_cp(utf8proc_int32_t c)
{
    utf8proc_category_t k = utf8proc_category(c);
    return k >= UTF8PROC_CATEGORY_LU && k <= UTF8PROC_CATEGORY_ME;
}

/* The non-ASCII character that ends at e: its start, or e when the bytes
 * before e are no such character (ASCII, or not UTF-8). */
static size_t cp_start(const struct scan *sc, size_t e, utf8proc_int32_t *c)
{
    size_t s = e;
    while (s > 0 && e - s < 4 && (sc->t[s - 1] & 0xc0) == 0x80)
        s--;
    if (s == e || s == 0 || sc->t[s - 1] < 0xc0)
        return e;
    s--;
    utf8proc_ssize_t n = utf8proc_iterate(sc->t + s, (utf8proc_ssize_t)(e - s), c);
    return n > 0 && (size_t)n == e - s ? s : e;
}

/* The length of the non-ASCII character at i (0 when there is none), its code point in *c. */
static size_t cp_len(const struct scan *sc, size_t i, utf8proc_int32_t *c)
{
    if (i >= sc->len || sc->t[i] < 0x80)
        return 0;
    utf8proc_ssize_t n = utf8proc_iterate(sc->t + i, (utf8proc_ssize_t)(sc->len - i), c);
    return n > 0 ? (size_t)n : 0;
}

/* The start of the local-part character that ends at s (an ASCII local
 * byte, or a letter, mark or digit of any script), or s. */
static size_t local_before(const struct scan *sc, size_t s)
{
    if (s == 0)
        return s;
    if (is_local(sc->t[s - 1]))
        return s - 1;
    utf8proc_int32_t c;
    size_t k = cp_start(sc, s, &c);
    return k < s && word_cp(c) ? k : s;
}

/* The pattern starts at '@' (a literal makes the scan fast); the local part
 * is found by a bounded backward scan (RFC 5321 and 6531: at most 64
 * bytes), ASCII or, in an internationalised address, any letter, mark or
 * digit, so a non-ASCII local part is taken whole. */
static bool r_email(const struct scan *sc, size_t *ps, size_t *pe)
{
    size_t a = *ps, e = *pe, s = a, k;
    while ((k = local_before(sc, s)) < s && a - k <= 64)
        s = k;
    if (local_before(sc, s) < s)
        return false;       /* local part longer than 64 */
    while (s < a && (sc->t[s] == '.' || sc->t[s] == '-'))
        s++;
    if (s == a || sc->t[a - 1] == '.' || e - s > 254)
        return false;
    bool alnum = false;     /* "%@example.com" in a SQL LIKE is not an address */
    for (size_t i = s; i < a && !alnum; i++)
        alnum = is_alnum(sc->t[i]) || sc->t[i] >= 0x80;
    if (!alnum)
        return false;
    for (size_t i = s + 1; i < a; i++)
        if (sc->t[i] == '.' && sc->t[i - 1] == '.')
            return false;
    /* domain labels: not empty, not starting or ending with '-' */
    size_t ls = a + 1;
    for (size_t i = a + 1; i <= e; i++)
        if (i == e || sc->t[i] == '.') {
            if (i == ls || sc->t[ls] == '-' || sc->t[i - 1] == '-')
                return false;
            ls = i + 1;
        }
    *ps = s;
    return true;
}

/* Walks a phone-like run from s: digit groups separated by single ' ', '-',
 * '.', '/' or parenthesized groups; returns, for the longest prefix within
 * [s, e) whose digit count satisfies ok_count and whose right side is a
 * boundary, its end. (0) as in "+31 (0)6" is skipped in the count. */
static bool phone_walk(const struct scan *sc, size_t s, size_t e, int min_d, int max_d,
                       bool paren, size_t *pend)
{
    int digits = 0, best = -1;
    size_t best_end = 0, i = s;
    while (i < e) {
        unsigned char ch = sc->t[i];
        if (is_digit(ch)) {
            size_t g = i;
            while (i < e && is_digit(sc->t[i]))
                i++;
            int nd = (int)(i - g);
            if (paren && nd == 1 && sc->t[g] == '0' && g > s && sc->t[g - 1] == '(')
                nd = 0;     /* trunk prefix "(0)" */
            digits += nd;
            if (digits > max_d)
                break;
            if (!paren && digits >= min_d && right_num_ok(sc, i)) {
                best = digits;
                best_end = i;
            }
            continue;
        }
        if (ch == '(' && !paren) {
            paren = true;
            i++;
            continue;
        }
        if (ch == ')' && paren) {
            paren = false;
            i++;
            if (i < e && sc->t[i] == ' ')
                i++;
            continue;
        }
        if ((ch == ' ' || ch == '-' || ch == '.' || ch == '/') && i + 1 < e &&
            (is_digit(sc->t[i + 1]) || sc->t[i + 1] == '(')) {
            i++;
            continue;
        }
        break;
    }
    if (best < 0)
        return false;
    *pend = best_end;
    return true;
}

static bool r_phone(const struct scan *sc, int kind, size_t *ps, size_t *pe)
{
    size_t s = *ps, e = *pe, end;
    if (!left_num_ok(sc, s))
        return false;
    switch (kind) {
    case K_PHONE_INTL: {
        /* "(+31) 6 12345678": the country code in parentheses */
        bool paren = before(sc, s, 1) == '(' && memchr(sc->t + s, ')', e - s);
        if (!phone_walk(sc, s + 1, e, 8, 15, paren, &end))
            return false;
        if (paren)
            s--;
        break;
    }
    default: /* K_PHONE_US */
        if (!phone_walk(sc, s, e, 10, 11, false, &end))
            return false;
        break;
    }
    *ps = s;
    *pe = end;
    return true;
}

/* Ends of the phone-like run from s (as phone_walk), every one whose digit
 * count is in [min_d, max_d] and whose right side is a boundary; longest
 * last. Returns how many (at most 8). Also the digit groups' lengths, for
 * the date test. */
static int phone_ends(const struct scan *sc, size_t s, size_t e, int min_d, int max_d,
                      size_t *ends, int *glen, int *ng)
{
    int digits = 0, n = 0;
    size_t i = s;
    bool paren = false;
    *ng = 0;
    while (i < e) {
        unsigned char ch = sc->t[i];
        if (is_digit(ch)) {
            size_t g = i;
            while (i < e && is_digit(sc->t[i]))
                i++;
            if (*ng < 8)
                glen[(*ng)++] = (int)(i - g);
            digits += (int)(i - g);
            if (digits > max_d)
                break;
            if (!paren && digits >= min_d && right_num_ok(sc, i) && n < 8)
                ends[n++] = i;
            continue;
        }
        if (ch == '(' && !paren) {
            paren = true;
            i++;
            continue;
        }
        if (ch == ')' && paren) {
            paren = false;
            i++;
            if (i < e && sc->t[i] == ' ')
                i++;
            continue;
        }
        if ((ch == ' ' || ch == '-' || ch == '.' || ch == '/') && i + 1 < e &&
            (is_digit(sc->t[i + 1]) || (sc->t[i + 1] == '(' && !paren))) {
            i++;
            continue;
        }
        break;
    }
    return n;
}

/* "01-06-2024", "01.06.2024 12": a date, not a phone number. */
static bool date_groups(const struct scan *sc, size_t s, const int *glen, int ng)
{
    if (ng < 3 || glen[0] > 2 || glen[1] > 2 || glen[2] != 4)
        return false;
    size_t i = s;
    while (!is_digit(sc->t[i]))
        i++;
    int d = (sc->t[i] - '0') * (glen[0] == 2 ? 10 : 1) + (glen[0] == 2 ? sc->t[i + 1] - '0' : 0);
    i += (size_t)glen[0] + 1;
    int m = (sc->t[i] - '0') * (glen[1] == 2 ? 10 : 1) + (glen[1] == 2 ? sc->t[i + 1] - '0' : 0);
    i += (size_t)glen[1] + 1;
    bool year = (sc->t[i] == '1' && sc->t[i + 1] == '9') || (sc->t[i] == '2' && sc->t[i + 1] == '0');
    return d >= 1 && d <= 31 && m >= 1 && m <= 12 && year;
}

/* Words after which a number is an order/invoice/account number or an
 * amount, not a phone number (checked in the 24 bytes before a national
 * candidate; a number in +CC notation is a phone whatever precedes it). */
static const char *const not_phone_words[] = {
    "order", "invoice", "factuur", "bestelnummer", "ticket", "tracking", "serial", "batch",
    "sku", "#", "eur", "usd", "gbp", "bsn",
    "\xe2\x82\xac" /* € */, "$", "\xc2\xa3" /* £ */, NULL};

/* What may stand between a not-phone word and its number: "Order no.
 * 0612345678", "invoice number: ...", "ticket #", "serial nº". */
static const char *const number_words[] = {
    "no", "nr", "n", "num", "number", "nummer", "numero", "n\xc3\xbamero", "n\xc2\xba", "id", "ref", "is",
    "code", "of", NULL};

static bool connector(const char *w, size_t n)
{
    for (int k = 0; number_words[k]; k++)
        if (strlen(number_words[k]) == n && !memcmp(w, number_words[k], n))
            return true;
    return false;
}

/* A not-phone word counts in the 24 bytes before s, back to the nearest digit
 * or line break, when only its own letters ("orders"), punctuation and
 * connectors (number_words) follow it: "SSN# 173532604 tomorrow. 02 383 40
 * 24" is a phone number (the '#' belongs to the number before it), "Order
 * no. 0612345678" is not, and neither is "the orders. Call 0612345678". */
static bool not_phone_context(const struct scan *sc, size_t s)
{
    size_t back = 0;
    while (back < 24 && back < s) {
        unsigned char ch = sc->t[s - back - 1];
        if (is_digit(ch) || ch == '\n')
            break;
        back++;
    }
    if (back == 0)
        return false;
    char w[32];
    lower_before(sc, s, back, w);
    for (size_t i = 0; i < back; i++)
        for (int k = 0; not_phone_words[k]; k++) {
            size_t l = strlen(not_phone_words[k]), j = i + l;
            if (l > back - i || memcmp(w + i, not_phone_words[k], l))
                continue;
            if (is_alpha((unsigned char)w[i]) && s - back + i > 0 && is_alpha(sc->t[s - back + i - 1]))
                continue;           /* inside a word: "border" */
            while (j < back && w[j] >= 'a' && w[j] <= 'z' && is_alpha((unsigned char)w[i]))
                j++;                /* the word's own letters: "orders", "tickets" */
            bool only = true;
            while (only && j < back) {
                size_t a = j;
                while (j < back && (unsigned char)w[j] > ' ' && !strchr(".:#-/()", w[j]))
                    j++;
                only = a == j ? (j++, true) : connector(w + a, j - a);
            }
            if (only)
                return true;
        }
    return false;
}

/* Length of the digit group that ends at e (0 if none). */
static size_t group_back(const struct scan *sc, size_t s, size_t e)
{
    size_t i = e;
    while (i > s && is_digit(sc->t[i - 1]))
        i--;
    return e - i;
}

/* Does the run [s, e) end in two groups of four digits that a third group
 * of four continues after a separator? */
static bool fours_go_on(const struct scan *sc, size_t s, size_t e)
{
    int sep = at(sc, e);
    if (!(sep == ' ' || sep == '-' || sep == '.'))
        return false;
    size_t n = 0;
    while (at(sc, e + 1 + n) >= 0 && is_digit((unsigned char)at(sc, e + 1 + n)))
        n++;
    if (n != 4 || group_back(sc, s, e) != 4 || e < s + 5)
        return false;
    return group_back(sc, s, e - 5) == 4;
}

/* Whether the digits that end at e are the end of a word ("wlan0", "v2",
 * "T1"), not a number: a letter or '_' right before them. */
static bool word_before(const struct scan *sc, size_t e)
{
    size_t j = e;
    while (j > 0 && e - j < 32 && is_digit(sc->t[j - 1]))
        j--;
    return j > 0 && j < e && (is_alpha(sc->t[j - 1]) || sc->t[j - 1] == '_');
}

/* National (trunk 0), 00-prefixed and Spanish candidates: the longest run
 * that libphonenumber accepts for one of the engine's regions (00 numbers:
 * for their own country). */
static bool r_phone_checked(struct scan *sc, int kind, size_t *ps, size_t *pe)
{
    size_t s = *ps, e = *pe, ends[8];
    int glen[8], ng;
    if (!left_num_ok(sc, s) || before(sc, s, 1) == '+')
        return false;
    if (before(sc, s, 1) == ' ' && before(sc, s, 2) >= 0 && is_digit((unsigned char)before(sc, s, 2)) &&
        !sc->later_ok && !word_before(sc, s - 1)) {
        /* a later group of a longer grouped number (an account), unless the
         * digits before it are an entity of their own (two numbers written
         * one after the other): scan_raw retries it once spans are known */
        sc->later = true;
        return false;
    }
    if (sc->t[s] == '(' && !memchr(sc->t + s, ')', e - s))
        s++;        /* "(06-12345678)": the parenthesis is the text's */
    int n = phone_ends(sc, s, e, kind == K_PHONE_ES ? 9 : kind == K_PHONE_IT || kind == K_PHONE_IDD ? 10 : 9,
                       kind == K_PHONE_ES ? 9 : kind == K_PHONE_IT ? 10 : kind == K_PHONE_IDD ? 17 : 13,
                       ends, glen, &ng);
    if (n == 0 || date_groups(sc, s, glen, ng) || not_phone_context(sc, s))
        return false;
    if (ng == 1 && glen[0] > 11 && kind != K_PHONE_IDD &&
        !(glen[0] == 12 && sc->t[s] == '0' && sc->t[s + 1] == '1' && sc->t[s + 2] >= '5' &&
          sc->t[s + 2] <= '7'))
        return false;           /* a long unbroken run is an id, not a number to dial
                                   (but "0031612345678" is one: 00 + country + number,
                                   and so is a German mobile 015x/016x/017x of 12 digits) */
    if (ng == 3 && glen[0] == 3 && glen[1] == 2 && glen[2] == 4 && sc->t[s + 3] == '-')
        return false;           /* AAA-GG-SSSS is the shape of a US SSN */
    if (ng == 4 && glen[0] == 3 && glen[1] == 3 && glen[2] == 3 && glen[3] == 3 && sc->t[s + 3] == '.' &&
        sc->t[s + 7] == '.' && sc->t[s + 11] == '.')
        return false;           /* "010.001.002.003": a zero-padded IPv4 address (or a version) */
    /* Spanish numbers and Italian mobiles have no trunk prefix: checked for
     * their own country only */
    const char(*regions)[3] = (const char(*)[3])sc->e->regions;
    size_t n_regions = sc->e->n_regions;
    if (kind == K_PHONE_ES || kind == K_PHONE_IT) {
        const char *own = kind == K_PHONE_ES ? "ES" : "IT";
        size_t k = 0;
        while (k < n_regions && memcmp(regions[k], own, 2))
            k++;
        if (k == n_regions)
            return false;
        regions += k;
        n_regions = 1;
    }
    if (kind == K_PHONE_NAT) {
        size_t i = s;
        while (!is_digit(sc->t[i]))
            i++;
        if (sc->t[i + 1] == '0')
            return false;       /* 00: the international prefix */
    }
    for (int k = n - 1; k >= 0; k--) {
        char buf[64];
        size_t l = ends[k] - s;
        if (l + 1 >= sizeof buf)
            continue;
        if (kind == K_PHONE_IDD) {
            /* "0031 (0)6 ...": + for 00, and the trunk "(0)" left out */
            size_t o = 0;
            buf[o++] = '+';
            size_t from = s + 2 + (sc->t[s + 2] == '-');      /* "00-49-...": the prefix's dash */
            for (size_t i = from; i < ends[k]; i++) {
                if (i + 2 < ends[k] && !memcmp(sc->t + i, "(0)", 3)) {
                    i += 2;
                    continue;
                }
                buf[o++] = (char)sc->t[i];
            }
            l = o;
        } else {
            memcpy(buf, sc->t + s, l);
        }
        if (sw_pii_phone_valid(buf, l, regions, n_regions)) {
            explicit_bzero(buf, sizeof buf);
            *ps = s;
            *pe = ends[k];
            return true;
        }
        explicit_bzero(buf, sizeof buf);
    }
    /* Not valid but possible (a range the metadata does not allocate yet),
     * unless it is the start of a longer number in groups of four ("0123
     * 4567 8901 2345" is an account, not a phone and a rest). */
    if (kind == K_PHONE_IDD)
        return false;
    for (int k = n - 1; k >= 0; k--) {
        size_t l = ends[k] - s;
        if (l + 1 >= 64 || fours_go_on(sc, s, ends[k]))
            continue;
        if (sw_pii_phone_possible((const char *)sc->t + s, l, regions, n_regions)) {
            *ps = s;
            *pe = ends[k];
            return true;
        }
    }
    return false;
}

static bool r_iban(const struct scan *sc, size_t *ps, size_t *pe)
{
    size_t s = *ps, e = *pe;
    char c0 = (char)(sc->t[s] & ~0x20), c1 = (char)(sc->t[s + 1] & ~0x20);
    int want = sw_pii_iban_len(c0, c1), n = 0;
    if (!want || (s > 0 && is_alnum(sc->t[s - 1])))
        return false;
    size_t i = s;
    while (i < e && n < want) {
        if (sc->t[i] == ' ') {
            if (i + 1 >= e || !is_alnum(sc->t[i + 1]))
                break;
            i++;
            continue;
        }
        n++;
        i++;
    }
    if (n != want || (i < sc->len && is_alnum(sc->t[i])))
        return false;
    if (!sw_pii_mod97((const char *)sc->t + s, i - s))
        return false;
    *pe = i;
    return true;
}

/* Whether the first digits d are those of a 16-digit card's issuer: Visa
 * (4), Mastercard (51-55, 2221-2720), Discover (6011, 65), UnionPay (62),
 * JCB (35). */
static bool iin16(const unsigned char *d)
{
    int two = (d[0] - '0') * 10 + (d[1] - '0');
    int four = two * 100 + (d[2] - '0') * 10 + (d[3] - '0');
    return d[0] == '4' || (two >= 51 && two <= 55) || (four >= 2221 && four <= 2720) || four == 6011 ||
           two == 65 || two == 62 || two == 35;
}

/* Whether the first digits d of a card number of n digits are an issuer's:
 * 13 Visa, 14 Diners (30, 36, 38), 15 Amex (34, 37), 16-19 iin16(). */
static bool issuer(const unsigned char *d, int n)
{
    if (n == 13)
        return d[0] == '4';
    if (n == 14)
        return d[0] == '3' && (d[1] == '0' || d[1] == '6' || d[1] == '8');
    if (n == 15)
        return d[0] == '3' && (d[1] == '4' || d[1] == '7');
    return iin16(d);
}

/* A card number from s (a group's start) within [s, e): its end in *pe.
 * later: s is a later group of the run, after another number's digits
 * ("0612345678 4111 1111 1111 1111"): taken only with an issuer's prefix. */
static bool card_from(const struct scan *sc, size_t s, size_t e, bool later, size_t *pe)
{
    if (sc->t[s] < '2' || sc->t[s] > '6')
        return false;
    /* candidate ends: after each digit group, longest first */
    size_t ends[8];
    int n = 0, digits = 0, nd[8];
    unsigned char sep = 0;      /* one separator throughout: "4111.1111.1111.1111" */
    for (size_t i = s; i < e;) {
        while (i < e && is_digit(sc->t[i])) {
            i++;
            digits++;
        }
        if (n < 8) {
            ends[n] = i;
            nd[n++] = digits;
        }
        if (i < e) {
            if (sep && sc->t[i] != sep)
                break;
            sep = sc->t[i];
            i++;        /* separator */
        }
    }
    for (int k = n - 1; k >= 0; k--) {
        if (nd[k] < 13 || nd[k] > 19)
            continue;
        int nx = at(sc, ends[k]);
        if (nx >= 0 && (is_alnum((unsigned char)nx) || nx == '_'))
            continue;
        if (k == 0 && nx >= 0 && (nx == '.' || nx == ',') && is_digit((unsigned char)at(sc, ends[k] + 1)))
            continue;
        if (!sw_pii_luhn((const char *)sc->t + s, ends[k] - s))
            continue;
        /* all one digit passes Luhn for some lengths: not a card */
        bool same = true;
        for (size_t i = s; i < ends[k] && same; i++)
            same = !is_digit(sc->t[i]) || sc->t[i] == sc->t[s];
        if (same)
            continue;
        /* two halves of eight (seven: Amex) and a 13-digit 4-4-5 are groupings of few
         * issuers; other numbers in them (references, two numbers side by
         * side) are taken only with an issuer's prefix */
        if (k == 1 && nd[0] == 8 && (nd[1] == 16 || nd[1] == 15) && !issuer(sc->t + s, nd[1]))
            continue;   /* 8-8 of a 16-digit issuer, 8-7 of Amex (34, 37) */
        if (k == 2 && nd[0] == 4 && nd[1] == 8 && nd[2] == 13 && !issuer(sc->t + s, 13))
            continue;
        if (later && !issuer(sc->t + s, nd[k]))
            continue;
        *pe = ends[k];
        return true;
    }
    return false;
}

/* A card number in the candidate run [*ps, *pe), from its start or from a
 * later group's: two numbers written one after the other ("00 39 389 099
 * 6961 2505 2947 3694 1779") hold one. Every card found there is masked:
 * the span is their union. */
static bool r_card(const struct scan *sc, size_t *ps, size_t *pe)
{
    size_t s = *ps, e = *pe, from = SIZE_MAX, to = 0;
    for (int g = 0; g < 8 && s < e; g++) {
        size_t ce;
        if ((g > 0 || left_num_ok(sc, s)) && card_from(sc, s, e, g > 0, &ce)) {
            from = from < s ? from : s;
            to = to > ce ? to : ce;
        }
        while (s < e && is_digit(sc->t[s]))
            s++;
        if (++s >= e || !is_digit(sc->t[s]))
            break;
    }
    if (from == SIZE_MAX)
        return false;
    *ps = from;
    *pe = to;
    return true;
}

static const char *const bsn_words[] = {"bsn", "burgerservice", "sofinummer", "sofi-nummer",
                                        "sofi nummer", "citizen service", "persoonsnummer", NULL};
static const char *const ssn_words[] = {"ssn", "social security", "social-security", NULL};

/* Whether a BSN in three groups of three ("768 844 198", "768.844.198")
 * needs a BSN word before it, as a plain 9-digit run does. Measured on the
 * labeled corpus (docs/privacy.md): without the word, amounts with thousands
 * separators and Spanish phone numbers in 3-3-3 groups pass the 11-proef one
 * time in eleven and become false BSNs. */
#define BSN_GROUPED_NEEDS_WORD 1

/* Nine digits (plain, "1234.56.782", "768 844 198", "768.844.198" or
 * "123 45 6789"): a BSN when it passes the 11-proef and is written
 * 1234.56.782 or follows a BSN word; else an SSN when it passes the SSN rules
 * and follows an SSN word; else nothing. */
static bool r_nine(const struct scan *sc, size_t *ps, size_t *pe, int *type)
{
    size_t s = *ps, e = *pe;
    if (!left_num_ok(sc, s) || !right_num_ok(sc, e))
        return false;
    bool dotted = e - s == 11 && sc->t[s + 4] == '.';
    bool spaced = e - s == 11 && sc->t[s + 3] == ' ' && sc->t[s + 6] == ' ';
    bool grouped = e - s == 11 && (sc->t[s + 3] == ' ' || sc->t[s + 3] == '.') &&
                   sc->t[s + 7] == sc->t[s + 3];
    if (grouped) {
        /* not a part of a longer grouped number: "1 768 844 198 00"; a
         * number right after its BSN word ("BSN: 818 083 530 00 34 ...")
         * starts there, whatever follows it */
        int p = before(sc, s, 1), n = at(sc, e);
        if ((p == ' ' && before(sc, s, 2) >= 0 && is_digit((unsigned char)before(sc, s, 2))) ||
            (n == ' ' && at(sc, e + 1) >= 0 && is_digit((unsigned char)at(sc, e + 1)) &&
             !context_before(sc, s, 24, bsn_words)))
            return false;
        if (sw_pii_elfproef((const char *)sc->t + s, e - s) &&
            (!BSN_GROUPED_NEEDS_WORD || context_before(sc, s, 48, bsn_words))) {
            *type = SW_PII_BSN;
            return true;
        }
        return false;
    }
    if (!spaced && sw_pii_elfproef((const char *)sc->t + s, e - s) &&
        (dotted || context_before(sc, s, 48, bsn_words))) {
        *type = SW_PII_BSN;
        return true;
    }
    if (!dotted && sw_pii_ssn_ok((const char *)sc->t + s, e - s) &&
        context_before(sc, s, 48, ssn_words)) {
        *type = SW_PII_SSN;
        return true;
    }
    return false;
}

/* DNI: 8 digits and the letter "TRWAGMYFPDXBNJZSQVHLCKE"[n % 23]; NIE: X, Y
 * or Z (as 0, 1, 2) and 7 digits, the same letter rule. Not glued to letters
 * or digits on either side. */
static bool r_dni(const struct scan *sc, size_t *ps, size_t *pe)
{
    static const char letters[] = "TRWAGMYFPDXBNJZSQVHLCKE";
    size_t s = *ps, e = *pe;
    int p = before(sc, s, 1);
    if (p >= 0 && (is_alnum((unsigned char)p) || p == '_' ||
                   ((p == '-' || p == '.' || p == '/') && before(sc, s, 2) >= 0 && is_digit((unsigned char)before(sc, s, 2)))))
        return false;
    int n = at(sc, e);
    if (n >= 0 && (is_alnum((unsigned char)n) || n == '_'))
        return false;
    /* DNI: 8 digits (or 2.3.3 with dots), NIE: X/Y/Z + 7 digits; then the
     * letter, glued or after one space or dash (after a space only in upper
     * case: "12345678 a year" is prose) */
    unsigned long v = 0;
    int nd = 0;
    size_t i = s;
    unsigned char c0 = sc->t[s] & (unsigned char)~0x20;
    bool nie = c0 == 'X' || c0 == 'Y' || c0 == 'Z';
    if (nie) {
        v = (unsigned long)(c0 - 'X');
        i++;
        if (i < e && (sc->t[i] == ' ' || sc->t[i] == '-'))
            i++;
    }
    for (; i < e; i++) {
        if (is_digit(sc->t[i])) {
            v = v * 10 + (unsigned long)(sc->t[i] - '0');
            nd++;
        } else if (sc->t[i] != '.' || nie) {
            break;
        }
    }
    if (nd != (nie ? 7 : 8))
        return false;
    if (i < e - 1 && (sc->t[i] == ' ' || sc->t[i] == '-')) {
        if (sc->t[i] == ' ' && (sc->t[e - 1] < 'A' || sc->t[e - 1] > 'Z'))
            return false;
        i++;
    }
    if (i != e - 1 || v == 0)
        return false;
    char want = letters[v % 23];
    return (char)(sc->t[e - 1] & ~0x20) == want && sc->t[e - 1] >= 'A';
}

static const char *const rrn_words[] = {"rijksregister", "registre national", "numéro national",
                                        "numero national", "national register", "insz", "niss",
                                        "identificatienummer", NULL};

/* Belgian national register number: birth date YYMMDD (month 0-12, +20 or
 * +40 for bis numbers; day 0-31), a 3-digit serial, and 97 - (the first 9
 * digits, or 2 followed by them for births from 2000) mod 97. Written
 * YY.MM.DD-SSS.CC or YYMMDD-SSS-CC it needs no context; 11 bare digits only
 * after one of the words above (1 in 97 random numbers pass the check). */
static bool r_rrn(const struct scan *sc, size_t *ps, size_t *pe)
{
    size_t s = *ps, e = *pe;
    if (!left_num_ok(sc, s) || !right_num_ok(sc, e))
        return false;
    int d[11], n = 0;
    for (size_t i = s; i < e && n < 11; i++)
        if (is_digit(sc->t[i]))
            d[n++] = sc->t[i] - '0';
    if (n != 11)
        return false;
    if (e - s == 11 && !context_before(sc, s, 48, rrn_words))
        return false;
    int mm = d[2] * 10 + d[3], dd = d[4] * 10 + d[5];
    int m = mm >= 40 ? mm - 40 : mm >= 20 ? mm - 20 : mm;
    if (m > 12 || dd > 31)
        return false;
    unsigned long long v = 0;
    for (int i = 0; i < 9; i++)
        v = v * 10 + (unsigned long long)d[i];
    int cc = d[9] * 10 + d[10];
    return (int)(97 - v % 97) == cc || (int)(97 - (2000000000ULL + v) % 97) == cc;
}

static bool r_ssn(const struct scan *sc, size_t *ps, size_t *pe)
{
    size_t s = *ps, e = *pe;
    if (!left_num_ok(sc, s) || !right_num_ok(sc, e))
        return false;
    return sw_pii_ssn_ok((const char *)sc->t + s, e - s);
}

static bool r_ipv4(const struct scan *sc, size_t *ps, size_t *pe)
{
    size_t s = *ps, e = *pe;
    int p = before(sc, s, 1);
    if (p >= 0 && (is_alnum((unsigned char)p) || p == '.' || p == '_'))
        return false;
    if (p == '/' && before(sc, s, 2) >= 0 && is_alnum((unsigned char)before(sc, s, 2)))
        return false;       /* "Chrome/1.2.3.4" */
    int n = at(sc, e);
    if (n >= 0 && (is_alnum((unsigned char)n) || n == '_'))
        return false;
    if ((n == '.' || n == '-') && at(sc, e + 1) >= 0 && is_digit((unsigned char)at(sc, e + 1)))
        return false;
    if (!sw_pii_ipv4_ok((const char *)sc->t + s, e - s))
        return false;
    /* loopback, "this host" and netmasks/broadcast are not anyone's address */
    unsigned first = 0;
    for (size_t i = s; i < e && is_digit(sc->t[i]); i++)
        first = first * 10 + (unsigned)(sc->t[i] - '0');
    if (first == 127 || first == 0 || first == 255)
        return false;
    return !version_context(sc, s);
}

static bool r_ipv6(const struct scan *sc, size_t *ps, size_t *pe)
{
    size_t s = *ps, e = *pe;
    int p = before(sc, s, 1);
    if (p >= 0 && (is_alnum((unsigned char)p) || p == '_'))
        return false;
    for (int tries = 0; tries < 10 && e > s + 2; tries++) {
        while (e > s && sc->t[e - 1] == '.')
            e--;
        if (e <= s + 2)
            return false;   /* nothing left but dots: no address, and no byte before s to back off to */
        int n = at(sc, e);
        bool right = n < 0 || !(is_alnum((unsigned char)n) || n == '_');
        if (right && sw_pii_ipv6_ok((const char *)sc->t + s, e - s)) {
            int groups = 0;
            bool digit = false;
            for (size_t i = s; i < e; i++) {
                if (is_hex(sc->t[i]) && (i == s || !is_hex(sc->t[i - 1])))
                    groups++;
                digit |= is_digit(sc->t[i]);
            }
            if (groups >= 2 && digit) {
                *pe = e;
                return true;
            }
            return false;
        }
        /* back off to the previous ':' or '.' */
        size_t k = e - 1;
        while (k > s && sc->t[k] != ':' && sc->t[k] != '.')
            k--;
        if (k <= s)
            return false;
        if (sc->t[k] == ':' && k > s && sc->t[k - 1] == ':')
            e = k + 1;      /* keep "::" */
        else
            e = k;
        if (e == *pe)
            return false;
    }
    return false;
}

static bool random_enough(const unsigned char *b, size_t n, int classes)
{
    bool d = false, u = false, l = false;
    for (size_t i = 0; i < n; i++) {
        d |= is_digit(b[i]);
        u |= b[i] >= 'A' && b[i] <= 'Z';
        l |= b[i] >= 'a' && b[i] <= 'z';
    }
    if (classes >= 3)
        return d && u && l;
    return d && (u || l);
}

/* OpenAI's project/service/admin keys and Anthropic's: prefixes specific
 * enough that a body without digits (it happens: ~1 in 500 random 40-char
 * bodies) is still a key. Found by the gateway's canary test. */
static bool long_key_prefix(const unsigned char *t, size_t n)
{
    static const char *const prefixes[] = {"sk-proj-", "sk-svcacct-", "sk-admin-", "sk-ant-"};
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++) {
        size_t k = strlen(prefixes[i]);
        if (n > k && !memcmp(t, prefixes[i], k))
            return true;
    }
    return false;
}

/* The user info of a URL ends at the last '@' of its authority, as URL
 * parsers read it: a password typed with a raw '@' ("admin:P@ss@db", or
 * "%40" read as '@' by the view) is one value. at: the first '@'; the
 * authority ends at a blank, '/', '?', '#', a quote or '<' '>' (looked at
 * for at most 256 bytes). */
static size_t last_userinfo_at(const struct scan *sc, size_t at)
{
    size_t last = at;
    for (size_t i = at + 1; i < sc->len && i - at <= 256; i++) {
        unsigned char c = sc->t[i];
        if (c <= ' ' || c == '/' || c == '?' || c == '#' || c == '"' || c == '\'' || c == '<' ||
            c == '>' || c == '`')
            break;
        if (c == '@')
            last = i;
    }
    return last;
}

/* t[0..n) is one printf or Python %-conversion and nothing else ("%s",
 * "%(password)s", "%1$s", "%-8s"): a template's slot, not a value. */
static bool printf_conversion(const unsigned char *t, size_t n)
{
    size_t i = 1;
    if (n < 2 || t[0] != '%')
        return false;
    if (t[i] == '(') {
        while (i < n && t[i] != ')')
            i++;
        if (i++ >= n)
            return false;
    }
    while (i < n && (is_digit(t[i]) || t[i] == '-' || t[i] == '+' || t[i] == ' ' || t[i] == '#' ||
                     t[i] == '.' || t[i] == '$'))
        i++;
    return i + 1 == n && is_alpha(t[i]);
}

static bool mixed_case(const unsigned char *b, size_t n)
{
    bool u = false, l = false;
    for (size_t i = 0; i < n; i++) {
        u |= b[i] >= 'A' && b[i] <= 'Z';
        l |= b[i] >= 'a' && b[i] <= 'z';
    }
    return u && l;
}

static bool r_secret(struct scan *sc, const struct pattern *p, size_t *ps, size_t *pe)
{
    size_t s = *ps, e = *pe;
    switch (p->kind) {
    case K_TOKEN:
    case K_FIXED:
    case K_JWT: {
        int b = before(sc, s, 1);
        if (b >= 0 && (is_alnum((unsigned char)b) || b == '_' || b == '-'))
            return false;
        int n = at(sc, e);
        if (n >= 0 && (is_alnum((unsigned char)n) || n == '_'))
            return false;
        if (p->kind == K_TOKEN) {
            size_t body = (size_t)p->prefix;
            /* the sk-ant/sk-proj forms have a longer literal prefix; the body
             * is what follows the last '-' of the prefix area */
            int classes = p->classes;
            if (long_key_prefix(sc->t + s, e - s))
                classes = 2; /* the prefix says key: digits or mixed case suffice */
            if (!random_enough(sc->t + s + body, e - s - body, classes) &&
                !(classes == 2 && mixed_case(sc->t + s + body, e - s - body)))
                return false;
        }
        return true;
    }
    case K_BEARER: {
        size_t i = s + 6;
        while (i < e && sc->t[i] == ' ')
            i++;
        int b = before(sc, s, 1);
        if (b >= 0 && is_alnum((unsigned char)b))
            return false;
        if (!random_enough(sc->t + i, e - i, 2))
            return false;
        *ps = i;
        return true;
    }
    case K_PRIVKEY: {
        /* To the END line, or to the end of the text when it is cut short.
         * The search is remembered: a later header before the END line
         * found (repeated headers, none ended) ends there too, so the text
         * is searched once, not once per header. */
        struct scan *w = sc;
        size_t lim = sc->len;
        /* a key follows the header (base64, or Proc-Type: of an encrypted
         * PKCS#1 key), after line breaks, JSON "\n" escapes or spaces: a
         * header quoted in prose or docs ("`-----BEGIN ... KEY-----` to the
         * END line") is not a key */
        size_t k = e;
        while (k < lim && k - e < 16 && (sc->t[k] == ' ' || sc->t[k] == '\r' || sc->t[k] == '\n' ||
                                         (sc->t[k] == '\\' && k + 1 < lim && (sc->t[k + 1] == 'n' || sc->t[k + 1] == 'r'))))
            k += sc->t[k] == '\\' ? 2 : 1;
        if (k < lim && !is_alnum(sc->t[k]) && sc->t[k] != '+' && sc->t[k] != '/')
            return false;
        if (!(w->pk_have && e >= w->pk_from && w->pk_end >= e)) {
            const unsigned char *end = memmem(sc->t + e, lim - e, "-----END ", 9);
            w->pk_have = true;
            w->pk_from = e;
            w->pk_end = end ? (size_t)(end - sc->t) : lim;
            w->pk_close = lim;
            if (end) {
                size_t j = w->pk_end + 9;
                const unsigned char *dash = memmem(sc->t + j, lim - j, "-----", 5);
                w->pk_close = dash ? (size_t)(dash - sc->t) + 5 : lim;
            }
        }
        *pe = w->pk_close;
        return true;
    }
    case K_URLCRED: {
        const unsigned char *sep = memmem(sc->t + s, e - s, "://", 3);
        if (!sep)
            return false;
        *ps = (size_t)(sep - sc->t) + 3;
        *pe = last_userinfo_at(sc, e - 1);  /* before the '@' that ends the user info */
        if (*pe <= *ps)
            return false;
        /* a placeholder or a reference is not a secret (scheme://user:PASSWORD@,
         * redis://:${REDIS_PASSWORD}@, [USER]:PASSWORD, a template's %s) */
        const unsigned char *c = memchr(sc->t + *ps, ':', *pe - *ps);
        size_t pw = c ? (size_t)(c - sc->t) + 1 : *ps, n = *pe - pw;
        if (n == 0 || sc->t[pw] == '$' || sc->t[pw] == '{' || sc->t[pw] == '<' || sc->t[pw] == '[' ||
            sc->t[*ps] == '[' || sc->t[*ps] == '<')
            return false;
        if (printf_conversion(sc->t + pw, n))
            return false;
        static const char *const names[] = {"password", "passwd", "pass", "secret", "pwd", "pw"};
        for (size_t k = 0; k < sizeof names / sizeof names[0]; k++)
            if (n == strlen(names[k]) && !strncasecmp((const char *)sc->t + pw, names[k], n))
                return false;
        return true;
    }
    }
    return false;
}

static bool r_custom(const struct scan *sc, int type, size_t *ps, size_t *pe)
{
    const char *b = (const char *)sc->t + *ps;
    size_t n = *pe - *ps;
    switch (sc->e->validator[type]) {
    case V_LUHN:
        return sw_pii_luhn(b, n);
    case V_MOD97:
        return sw_pii_mod97(b, n);
    case V_ELFPROEF:
        return sw_pii_elfproef(b, n);
    default:
        return n > 0;
    }
}

static bool refine(struct scan *sc, const struct pattern *p, size_t *s, size_t *e, int *type)
{
    *type = p->type;
    switch (p->kind) {
    case K_EMAIL: return r_email(sc, s, e);
    case K_PHONE_INTL:
    case K_PHONE_US: return r_phone(sc, p->kind, s, e);
    case K_PHONE_NAT:
    case K_PHONE_IDD:
    case K_PHONE_ES:
    case K_PHONE_IT: return r_phone_checked(sc, p->kind, s, e);
    case K_IBAN: return r_iban(sc, s, e);
    case K_CARD: return r_card(sc, s, e);
    case K_NINE: return r_nine(sc, s, e, type);
    case K_SSN: return r_ssn(sc, s, e);
    case K_DNI: return r_dni(sc, s, e);
    case K_RRN: return r_rrn(sc, s, e);
    case K_IPV4: return r_ipv4(sc, s, e);
    case K_IPV6: return r_ipv6(sc, s, e);
    case K_CUSTOM: return r_custom(sc, p->type, s, e);
    default: return r_secret(sc, p, s, e);
    }
}

/* ---- Scan ---- */

/* Cheap left-boundary test run in the match callback so a long run of digits
 * (each end reports its own leftmost start) does not flood the candidates. */
static bool early_ok(const struct scan *sc, int kind, size_t s)
{
    switch (kind) {
    case K_CARD: case K_NINE: case K_SSN: case K_RRN: case K_PHONE_NAT: case K_PHONE_IDD: case K_PHONE_ES:
    case K_PHONE_IT:
    case K_PHONE_US:
        return left_num_ok(sc, s);
    case K_IPV4:
    case K_IPV6: {
        int p = before(sc, s, 1);
        return p < 0 || !(is_alnum((unsigned char)p) || p == '_');
    }
    default:
        return true;
    }
}

/* The run of address characters around a trigger match, at most 48 bytes
 * each way (an IPv6 text form is at most 45). */
static void expand(const struct scan *sc, bool v6, size_t *ps, size_t *pe)
{
    size_t s = *ps, e = *pe, lim = 48;
    if (v6) {
        while (s > 0 && *ps - s < lim && (is_hex(sc->t[s - 1]) || sc->t[s - 1] == ':' || sc->t[s - 1] == '.'))
            s--;
        while (e < sc->len && e - s < 2 * lim && (is_hex(sc->t[e]) || sc->t[e] == ':' || sc->t[e] == '.'))
            e++;
        /* "ip:2001:db8::1": a single leading ':' belongs to the text */
        if (e - s > 2 && sc->t[s] == ':' && sc->t[s + 1] != ':')
            s++;
    } else {
        while (s > 0 && *ps - s < lim && (is_digit(sc->t[s - 1]) || sc->t[s - 1] == '.'))
            s--;
        while (e < sc->len && e - s < 2 * lim && (is_digit(sc->t[e]) || sc->t[e] == '.'))
            e++;
    }
    /* a sentence may end right after an address */
    while (e > s && sc->t[e - 1] == '.')
        e--;
    *ps = s;
    *pe = e;
}

/* The end of the longest domain after the '@' at a that
 * label(.label)*.tld matches (labels of [A-Za-z0-9-] or, in an
 * internationalised domain, letters, marks and digits of any script; a TLD
 * of 2+ letters of any script, or an A-label "xn--..."; at most 255 bytes),
 * or 0. */
static size_t email_end(const struct scan *sc, size_t a)
{
    size_t i = a + 1, seg = i, best = 0, lim = a + 1 + 255;
    bool dot = false, letters = true;
    int nchar = 0;
    while (i < sc->len && i < lim) {
        unsigned char ch = sc->t[i];
        if (ch == '.') {
            if (i == seg)
                break;          /* an empty label */
            dot = true;
            seg = ++i;
            letters = true;
            nchar = 0;
            continue;
        }
        utf8proc_int32_t c;
        size_t n = cp_len(sc, i, &c);
        if (n) {
            if (!word_cp(c) || i + n > lim)
                break;
            letters = letters && letter_cp(c);
            i += n;
        } else {
            if (!is_alnum(ch) && ch != '-')
                break;
            letters = letters && is_alpha(ch);
            i++;
        }
        nchar++;
        if (dot && nchar >= 2 &&
            (letters || (i - seg > 4 && !memcmp(sc->t + seg, "xn--", 4) && ch != '-')))
            best = i;
    }
    return best;
}

/* The end of the longest run of 11-32 alphanumerics, each after at most
 * one space, from e (after an IBAN's country and check digits), or 0. */
static size_t iban_end(const struct scan *sc, size_t e)
{
    size_t i = e;
    int n = 0;
    while (n < 32 && i < sc->len) {
        if (sc->t[i] == ' ' && i + 1 < sc->len && is_alnum(sc->t[i + 1]))
            i += 2;
        else if (is_alnum(sc->t[i]))
            i++;
        else
            break;
        n++;
    }
    return n >= 11 ? i : 0;
}

static int on_match(unsigned int id, unsigned long long from, unsigned long long to,
                    unsigned int flags, void *ctx)
{
    struct scan *sc = ctx;
    (void)flags;
    const struct pattern *p = &sc->e->pat[id];
    if (sc->cat) {
        /* a match lies within one run (see scan_raw) */
        while (sc->wk + 1 < sc->nw && sc->w[sc->wk + 1].b <= from)
            sc->wk++;
        while (sc->wk > 0 && sc->w[sc->wk].b > from)
            sc->wk--;
        sc->off = sc->w[sc->wk].s - sc->w[sc->wk].b;
    }
    size_t s = (size_t)from + sc->off, e = (size_t)to + sc->off;
    size_t li = sc->last[id];
    if (p->kind == K_IPV4 || p->kind == K_IPV6)
        expand(sc, p->kind == K_IPV6, &s, &e);
    if (p->kind == K_PHONE_US && sc->t[s] == '1' && e - s > 2 && !left_num_ok(sc, s))
        s += 2;     /* "+44 20 7035 3171 212 636 0207": the "1 " ends the number before */
    if (p->kind == K_EMAIL && (e = email_end(sc, s)) == 0)
        return 0;
    if (p->kind == K_IBAN && (e = iban_end(sc, e)) == 0)
        return 0;
    if ((p->kind == K_PHONE_NAT || p->kind == K_PHONE_IDD || p->kind == K_PHONE_ES ||
         p->kind == K_PHONE_IT) &&
        !is_digit(sc->t[s]) && sc->t[s] != '(')
        s++;        /* the boundary byte */
    if (p->kind == K_PHONE_NAT || p->kind == K_PHONE_IDD)
        while (e < sc->len && e - s < 32 &&
               (is_digit(sc->t[e]) || sc->t[e] == ' ' || sc->t[e] == '(' || sc->t[e] == ')' ||
                sc->t[e] == '.' || sc->t[e] == '/' || sc->t[e] == '-'))
            e++;
    if (p->kind == K_CARD && !left_num_ok(sc, s)) {
        /* the leftmost start is inside a number before the card ("0612345678
         * 4111 1111 1111 1111"): the card starts at the next group */
        size_t g = s;
        while (g < e && is_digit(sc->t[g]))
            g++;
        if (g + 1 < e && !is_digit(sc->t[g]) && is_digit(sc->t[g + 1]))
            s = g + 1;
    }
    if (li && sc->c[li - 1].s == s) {
        if (e > sc->c[li - 1].e)
            sc->c[li - 1].e = e;    /* keep the longest */
        return 0;
    }
    if (!early_ok(sc, p->kind, s))
        return 0;
    if (sc->n == sc->cap) {
        if (sc->cap >= SW_PII_MAX_CANDIDATES) {
            sc->full = true;
            return 1;
        }
        size_t nc = sc->cap ? sc->cap * 2 : 64;
        struct cand *c = sc->c == sc->cbuf ? malloc(nc * sizeof *c) : realloc(sc->c, nc * sizeof *c);
        if (!c) {
            sc->full = false;
            sc->cap = 0;        /* marks ENOMEM */
            return 1;
        }
        if (sc->c == sc->cbuf)
            memcpy(c, sc->cbuf, N_CBUF * sizeof *c);
        sc->c = c;
        sc->cap = nc;
    }
    sc->c[sc->n] = (struct cand){id, s, e};
    sc->last[id] = ++sc->n;
    return 0;
}

/* The secret-token body classes (BC_*) of each byte. */
static const unsigned char body_cat[256] = {
    ['0'] = BC_ALNUM | BC_UPDIG, ['1'] = BC_ALNUM | BC_UPDIG, ['2'] = BC_ALNUM | BC_UPDIG,
    ['3'] = BC_ALNUM | BC_UPDIG, ['4'] = BC_ALNUM | BC_UPDIG, ['5'] = BC_ALNUM | BC_UPDIG,
    ['6'] = BC_ALNUM | BC_UPDIG, ['7'] = BC_ALNUM | BC_UPDIG, ['8'] = BC_ALNUM | BC_UPDIG,
    ['9'] = BC_ALNUM | BC_UPDIG,
    ['A'] = BC_ALNUM | BC_UPDIG, ['B'] = BC_ALNUM | BC_UPDIG, ['C'] = BC_ALNUM | BC_UPDIG,
    ['D'] = BC_ALNUM | BC_UPDIG, ['E'] = BC_ALNUM | BC_UPDIG, ['F'] = BC_ALNUM | BC_UPDIG,
    ['G'] = BC_ALNUM | BC_UPDIG, ['H'] = BC_ALNUM | BC_UPDIG, ['I'] = BC_ALNUM | BC_UPDIG,
    ['J'] = BC_ALNUM | BC_UPDIG, ['K'] = BC_ALNUM | BC_UPDIG, ['L'] = BC_ALNUM | BC_UPDIG,
    ['M'] = BC_ALNUM | BC_UPDIG, ['N'] = BC_ALNUM | BC_UPDIG, ['O'] = BC_ALNUM | BC_UPDIG,
    ['P'] = BC_ALNUM | BC_UPDIG, ['Q'] = BC_ALNUM | BC_UPDIG, ['R'] = BC_ALNUM | BC_UPDIG,
    ['S'] = BC_ALNUM | BC_UPDIG, ['T'] = BC_ALNUM | BC_UPDIG, ['U'] = BC_ALNUM | BC_UPDIG,
    ['V'] = BC_ALNUM | BC_UPDIG, ['W'] = BC_ALNUM | BC_UPDIG, ['X'] = BC_ALNUM | BC_UPDIG,
    ['Y'] = BC_ALNUM | BC_UPDIG, ['Z'] = BC_ALNUM | BC_UPDIG,
    ['a'] = BC_ALNUM, ['b'] = BC_ALNUM, ['c'] = BC_ALNUM, ['d'] = BC_ALNUM, ['e'] = BC_ALNUM,
    ['f'] = BC_ALNUM, ['g'] = BC_ALNUM, ['h'] = BC_ALNUM, ['i'] = BC_ALNUM, ['j'] = BC_ALNUM,
    ['k'] = BC_ALNUM, ['l'] = BC_ALNUM, ['m'] = BC_ALNUM, ['n'] = BC_ALNUM, ['o'] = BC_ALNUM,
    ['p'] = BC_ALNUM, ['q'] = BC_ALNUM, ['r'] = BC_ALNUM, ['s'] = BC_ALNUM, ['t'] = BC_ALNUM,
    ['u'] = BC_ALNUM, ['v'] = BC_ALNUM, ['w'] = BC_ALNUM, ['x'] = BC_ALNUM, ['y'] = BC_ALNUM,
    ['z'] = BC_ALNUM,
    ['_'] = BC_US, ['-'] = BC_DASH,
};

/* The end of the run of bytes of body class c from i (at most to lim). */
static inline size_t body_run(const struct scan *sc, size_t i, size_t lim, unsigned c)
{
    while (i < lim && (body_cat[sc->t[i]] & c))
        i++;
    return i;
}

/* body_run() to the end of the text for pattern pi, remembering the run: a
 * later trigger inside it ("sk-sk-sk-...", "eyJeyJ...") ends at the same
 * place, so a text of repeated triggers costs linear time, not quadratic. */
static inline size_t body_run_memo(struct scan *sc, unsigned pi, size_t i, unsigned c)
{
    if (i >= sc->rfrom[pi] && i < sc->rend[pi])
        return sc->rend[pi];
    size_t r = body_run(sc, i, sc->len, c);
    sc->rfrom[pi] = i;
    sc->rend[pi] = r;
    return r;
}

static inline bool url_space(unsigned char c)
{
    return c == ' ' || (c >= '\t' && c <= '\r');    /* \s: HT LF VT FF CR and space */
}

/* The match of pattern p whose literal trigger starts at s and ends at q:
 * its start and its longest end, as vectorscan with the leftmost start of
 * match reports it (every end, each with its leftmost start), or false. */
static bool lit_extent(struct scan *sc, unsigned pi, size_t *ps, size_t q, size_t *pe)
{
    const struct pattern *p = &sc->e->pat[pi];
    const unsigned char *t = sc->t;
    size_t len = sc->len, r;
    switch (p->kind) {
    case K_EMAIL:           /* @[A-Za-z0-9\x80-\xff-] */
        if (q >= len || !(is_alnum(t[q]) || t[q] == '-' || t[q] >= 0x80))
            return false;
        *pe = q + 1;
        return true;
    case K_TOKEN:
    case K_FIXED:
        if (p->bfix) {      /* exactly bfix body bytes: one end */
            if (len - q < p->bfix || body_run(sc, q, q + p->bfix, p->bclass) != q + p->bfix)
                return false;
            *pe = q + p->bfix;
            return true;
        }
        /* the body is the longest run; every end from bmin bytes on matches */
        r = body_run_memo(sc, pi, q, p->bclass);
        if (r - q < p->bmin)
            return false;
        *pe = r;
        return true;
    case K_JWT: {           /* eyJ B{8,} . eyJ B{8,} . B{8,}, B = [A-Za-z0-9_-] (no '.') */
        const unsigned c = BC_ALNUM | BC_US | BC_DASH;
        r = body_run_memo(sc, pi, q, c);
        if (r - q < 8 || len - r < 4 || memcmp(t + r, ".eyJ", 4))
            return false;
        q = r + 4;
        r = body_run(sc, q, len, c);
        if (r - q < 8 || r >= len || t[r] != '.')
            return false;
        q = r + 1;
        r = body_run(sc, q, len, c);
        if (r - q < 8)
            return false;
        *pe = r;
        return true;
    }
    case K_PRIVKEY: {       /* "-----BEGIN " [A-Z0-9 ]{0,40} "PRIVATE KEY" (" BLOCK")? "-----" */
        r = q;
        while (r < len && r - q <= 57 && ((body_cat[t[r]] & BC_UPDIG) || t[r] == ' '))
            r++;
        /* the class holds "PRIVATE KEY" but not '-': it ends the run */
        bool key = r - q >= 11 && r - q <= 51 && !memcmp(t + r - 11, "PRIVATE KEY", 11);
        bool block = r - q >= 17 && r - q <= 57 && !memcmp(t + r - 17, "PRIVATE KEY BLOCK", 17);
        if (!(key || block) || len - r < 5 || memcmp(t + r, "-----", 5))
            return false;
        *pe = r + 5;
        return true;
    }
    case K_URLCRED: {       /* [A-Za-z][A-Za-z0-9+.-]* :// [^\s:@/]* : [^\s@/]+ @ */
        size_t s = *ps;
        while (s > 0 && (is_alnum(t[s - 1]) || t[s - 1] == '+' || t[s - 1] == '.' || t[s - 1] == '-'))
            s--;
        while (s < *ps && !is_alpha(t[s]))      /* the leftmost start: a letter */
            s++;
        if (s == *ps)
            return false;
        r = q;
        while (r < len && !url_space(t[r]) && t[r] != ':' && t[r] != '@' && t[r] != '/')
            r++;
        if (r >= len || t[r] != ':')
            return false;
        q = ++r;
        while (r < len && !url_space(t[r]) && t[r] != '@' && t[r] != '/')
            r++;
        if (r == q || r >= len || t[r] != '@')
            return false;
        *ps = s;
        *pe = r + 1;
        return true;
    }
    default:
        return false;
    }
}

/* A literal trigger of a whole-text built-in ends at `to`. Vectorscan with
 * the leftmost start of match reported, per pattern, every end with its
 * leftmost start, and on_match made one candidate of each start: the ends
 * a later trigger shares with an earlier one went to the earlier start, so
 * a trigger is a candidate only when its longest end goes further. */
static int lit_hit(unsigned int id, unsigned long long from, unsigned long long to,
                   unsigned int flags, void *ctx)
{
    struct scan *sc = ctx;
    (void)from;
    (void)flags;
    unsigned pi = sc->e->lit_pat[id];
    size_t s = (size_t)to - sc->e->lit_len[id], e;
    if (!lit_extent(sc, pi, &s, (size_t)to, &e) || e <= sc->mend[pi])
        return 0;
    sc->mend[pi] = e;
    return on_match(pi, s, e, 0, sc);
}

/* Byte classes of a digit run: digits, the dot, other separators. */
enum { RC_NONE, RC_SEP, RC_DOT, RC_DIGIT };
static const unsigned char run_class[256] = {
    [' '] = RC_SEP, ['('] = RC_SEP, [')'] = RC_SEP, ['-'] = RC_SEP, ['/'] = RC_SEP,
    ['+'] = RC_SEP, ['.'] = RC_DOT,
    ['0'] = RC_DIGIT, ['1'] = RC_DIGIT, ['2'] = RC_DIGIT, ['3'] = RC_DIGIT, ['4'] = RC_DIGIT,
    ['5'] = RC_DIGIT, ['6'] = RC_DIGIT, ['7'] = RC_DIGIT, ['8'] = RC_DIGIT, ['9'] = RC_DIGIT,
};

/* The pre-pass state: where the last digit run ended (a run is not
 * walked back past it), the last colon. */
struct prepass {
    size_t prev_run;
    size_t prev_colon;          /* (size_t)-1: none yet */
};

/* The run of digits and separators (run_class) around the digit at i: kept,
 * one byte more on each side, for the digit patterns (scan_raw) when it has
 * enough digits for an entity. A run that starts with two digits right
 * after two letters is an IBAN trigger ([A-Za-z]{2}[0-9]{2}: the letters
 * end the previous run). */
static inline __attribute__((always_inline)) int run_at(struct scan *sc, size_t i, struct prepass *pp)
{
    const unsigned char *t = sc->t;
    size_t len = sc->len, s = i, e = i + 1;
    int nd = 1, dots = 0, plus = 0;
    while (s > pp->prev_run && run_class[t[s - 1]]) {
        s--;
        dots += run_class[t[s]] == RC_DOT;      /* no digit before i */
        plus += t[s] == '+';
    }
    for (unsigned c; e < len && (c = run_class[t[e]]); e++) {
        nd += c == RC_DIGIT;
        dots += c == RC_DOT;
    }
    pp->prev_run = e;
    /* (t[s] is a digit only when the run starts at i) */
    if (s == i && e - s >= 2 && s >= 2 && is_digit(t[s + 1]) && is_alpha(t[s - 1]) &&
        is_alpha(t[s - 2]) && on_match(sc->e->iban_id, s - 2, s + 2, 0, sc))
        return 1;
    /* The fewest digits an accepted entity has: an IPv4 address 4 (and
     * three dots); a NIE 7 and a DNI 8, each with its letter right after the
     * run; a +CC number 8 (with its '+', before the first digit); all
     * others 9 or more. */
    if (nd < 9 && !(nd >= 4 && dots >= 3) &&
        !(nd >= 7 && e < len && is_alpha(t[e])) && !(nd == 8 && plus))
        return 0;
    if (s > 0)
        s--;
    if (e < len)
        e++;
    if (sc->nw && sc->w[sc->nw - 1].e >= s) {
        sc->w[sc->nw - 1].e = e;    /* one byte apart: one window */
        return 0;
    }
    if (sc->nw == sc->capw) {
        size_t nc = sc->capw ? sc->capw * 2 : 16;
        struct win *w = realloc(sc->w, nc * sizeof *w);
        if (!w)
            return 1;               /* not full: ENOMEM */
        sc->w = w;
        sc->capw = nc;
    }
    sc->w[sc->nw++] = (struct win){s, e, 0};
    return 0;
}

/* The IPv6 trigger ::[0-9A-Fa-f]|[0-9A-Fa-f]::|[0-9A-Fa-f]:[0-9A-Fa-f]{1,4}:
 * as vectorscan reports it with the leftmost start (each end once, in
 * increasing order), found from the text's colons: a colon c ends the
 * second or third alternative (the third, when it matches, starts further
 * left) at c+1, and ends "::h" at c+2 when it is the second colon. */
static int ipv6_trigger_at(struct scan *sc, size_t c)
{
    const unsigned char *t = sc->t;
    size_t len = sc->len, s = 0;
    unsigned id = sc->e->ipv6_id;
    bool hit = false;
    for (size_t k = 4; k >= 1 && !hit; k--) {
        if (c < k + 2 || t[c - k - 1] != ':' || !is_hex(t[c - k - 2]))
            continue;
        size_t h = 0;
        while (h < k && is_hex(t[c - 1 - h]))
            h++;
        if (h == k) {
            hit = true;
            s = c - k - 2;
        }
    }
    if (!hit && c >= 2 && t[c - 1] == ':' && is_hex(t[c - 2])) {
        hit = true;
        s = c - 2;
    }
    if (hit && on_match(id, s, c + 1, 0, sc))
        return 1;
    if (c >= 1 && t[c - 1] == ':' && c + 1 < len && is_hex(t[c + 1]) &&
        on_match(id, c - 1, c + 2, 0, sc))
        return 1;
    return 0;
}

static inline bool is_bearer_tok(unsigned char c)
{
    return is_alnum(c) || c == '.' || c == '_' || c == '~' || c == '+' || c == '/' || c == '-';
}

/* The Bearer pattern [Bb]earer +[A-Za-z0-9._~+/-]{16,}=* at the "earer"
 * at q, as vectorscan reports it: from the B, its longest end. */
static int bearer_at(struct scan *sc, size_t q)
{
    const unsigned char *t = sc->t;
    size_t len = sc->len;
    if (q == 0 || (t[q - 1] != 'B' && t[q - 1] != 'b') || q + 6 > len || memcmp(t + q, "earer ", 6))
        return 0;
    size_t j = q + 6, k;
    while (j < len && t[j] == ' ')
        j++;
    for (k = j; k < len && is_bearer_tok(t[k]); k++)
        ;
    if (k - j < 16)
        return 0;
    while (k < len && t[k] == '=')
        k++;
    return on_match(sc->e->bearer_id, q - 1, k, 0, sc);
}

/* At a colon c: every IPv6 alternative needs two colons at most five bytes
 * apart (the second one at c), so a colon with no colon in the five bytes
 * before it is passed over. */
static inline int colon_at(struct scan *sc, size_t c, struct prepass *pp)
{
    size_t prev = pp->prev_colon;
    pp->prev_colon = c;
    return prev != (size_t)-1 && c - prev <= 5 && ipv6_trigger_at(sc, c);
}

/* The pre-pass's work on one block of text at base: dm, its digits, cm,
 * its colons, bm, its "ea??r" (the Bearer pattern's "earer"). */
static inline __attribute__((always_inline)) int prepass_block(struct scan *sc, size_t base, uint32_t dm, uint32_t cm,
                                uint32_t bm, uint32_t lm, const unsigned char *lb,
                                struct prepass *pp)
{
    /* literal triggers: lm, the positions where a bucket's probe passes,
     * lb[bit], those buckets */
    for (; lm; lm &= lm - 1) {
        unsigned bit = (unsigned)__builtin_ctz(lm);
        size_t q = base + bit;
        if ((lb[bit] & BEARER_BUCKET) && bearer_at(sc, q))
            return 1;
        for (unsigned bb = lb[bit] & ~BEARER_BUCKET; bb; bb &= bb - 1) {
            unsigned b = (unsigned)__builtin_ctz(bb);
            for (unsigned k = 0; k < sc->e->n_bucket[b]; k++) {
                unsigned j = sc->e->bucket[b][k];
                size_t o = sc->e->lit_off[j], ll = sc->e->lit_len[j];
                if (q >= o && sc->len - (q - o) >= ll && !memcmp(sc->t + q - o, sc->e->lit_str[j], ll) &&
                    lit_hit(j, 0, q - o + ll, 0, sc))
                    return 1;
            }
        }
    }
    for (; bm; bm &= bm - 1)
        if (bearer_at(sc, base + (size_t)__builtin_ctz(bm)))
            return 1;
    for (; cm; cm &= cm - 1)
        if (colon_at(sc, base + (size_t)__builtin_ctz(cm), pp))
            return 1;
    /* digits: each starts a run unless an earlier run covered it */
    if (pp->prev_run > base)
        dm = pp->prev_run - base >= 32 ? 0 : dm & (~0u << (pp->prev_run - base));
    while (dm) {
        if (run_at(sc, base + (size_t)__builtin_ctz(dm), pp))
            return 1;
        dm = pp->prev_run - base >= 32 ? 0 : dm & (~0u << (pp->prev_run - base));
    }
    return 0;
}

/* The bytes from i on, one at a time. */
static int prepass_tail(struct scan *sc, size_t i, struct prepass *pp)
{
    const unsigned char *t = sc->t;
    for (; i < sc->len; i++) {
        if (t[i] == 'e' && bearer_at(sc, i))
            return 1;
        if (t[i] == ':' && colon_at(sc, i, pp))
            return 1;
        if (is_digit(t[i]) && i >= pp->prev_run && run_at(sc, i, pp))
            return 1;
    }
    return 0;
}

/* One pass over the text finds the digit runs for the digit patterns (and
 * the IBAN trigger), the IPv6 triggers and the Bearer pattern: 16 bytes a
 * step with SSE2, 32 with AVX2 where the CPU has it. */
#ifdef __SSE2__
static int prepass_sse2(struct scan *sc, struct prepass *pp)
{
    const unsigned char *t = sc->t;
    size_t len = sc->len, i = 0;
    const __m128i lo = _mm_set1_epi8('0' - 1), hi = _mm_set1_epi8('9' + 1);
    const __m128i colon = _mm_set1_epi8(':');
    const __m128i ce = _mm_set1_epi8('e'), ca = _mm_set1_epi8('a'), cr = _mm_set1_epi8('r');
    for (; i + 20 <= len; i += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(t + i));
        __m128i v1 = _mm_loadu_si128((const __m128i *)(t + i + 1));
        __m128i v4 = _mm_loadu_si128((const __m128i *)(t + i + 4));
        /* signed compares: bytes >= 0x80 are negative, never digits */
        uint32_t dm = (uint32_t)_mm_movemask_epi8(_mm_and_si128(_mm_cmpgt_epi8(v, lo), _mm_cmplt_epi8(v, hi)));
        uint32_t cm = (uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(v, colon));
        uint32_t bm = (uint32_t)_mm_movemask_epi8(_mm_and_si128(
            _mm_and_si128(_mm_cmpeq_epi8(v, ce), _mm_cmpeq_epi8(v1, ca)), _mm_cmpeq_epi8(v4, cr)));
        if ((dm | cm | bm) && prepass_block(sc, i, dm, cm, bm, 0, NULL, pp))
            return 1;
    }
    return prepass_tail(sc, i, pp);
}
#endif

#if defined(__x86_64__) && defined(__GNUC__)
#define HAVE_AVX2_PASS 1
__attribute__((target("avx2"))) static int prepass_avx2(struct scan *sc, struct prepass *pp)
{
    const unsigned char *t = sc->t;
    size_t len = sc->len, i = 0;
    const __m256i lo = _mm256_set1_epi8('0' - 1), hi = _mm256_set1_epi8('9' + 1);
    const __m256i colon = _mm256_set1_epi8(':');
    const __m256i nib = _mm256_set1_epi8(0x0f), zero = _mm256_setzero_si256();
    __m256i plo[3], phi[3];
    unsigned char lb[32];
    for (int k = 0; k < 3; k++) {
        plo[k] = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)sc->e->probe_lo[k]));
        phi[k] = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)sc->e->probe_hi[k]));
    }
#define PROBE(k, vk) _mm256_and_si256(_mm256_shuffle_epi8(plo[k], _mm256_and_si256(vk, nib)), \
                                      _mm256_shuffle_epi8(phi[k], _mm256_and_si256(_mm256_srli_epi16(vk, 4), nib)))
    for (; i + 34 <= len; i += 32) {
        __m256i v = _mm256_loadu_si256((const __m256i *)(t + i));
        __m256i v1 = _mm256_loadu_si256((const __m256i *)(t + i + 1));
        __m256i v2 = _mm256_loadu_si256((const __m256i *)(t + i + 2));
        __m256i lbv = _mm256_and_si256(_mm256_and_si256(PROBE(0, v), PROBE(1, v1)), PROBE(2, v2));
        uint32_t lm = ~(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(lbv, zero));
        if (lm)
            _mm256_storeu_si256((__m256i *)lb, lbv);
        uint32_t dm = (uint32_t)_mm256_movemask_epi8(
            _mm256_and_si256(_mm256_cmpgt_epi8(v, lo), _mm256_cmpgt_epi8(hi, v)));
        uint32_t cm = (uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(v, colon));
        if ((dm | cm | lm) && prepass_block(sc, i, dm, cm, 0, lm, lb, pp))
            return 1;
    }
    /* the rest (fewer than 36 bytes) as blocks of a zero-padded copy, wiped
     * after: zero bytes are none of the bytes looked for */
    unsigned char pad[72];
    int rc = 0;
    while (!rc && i < len) {
        size_t n = len - i < 32 ? len - i : 32, c = len - i < 34 ? len - i : 34;
        memcpy(pad, t + i, c);
        memset(pad + c, 0, sizeof pad - c);
        __m256i v = _mm256_loadu_si256((const __m256i *)pad);
        __m256i v1 = _mm256_loadu_si256((const __m256i *)(pad + 1));
        __m256i v2 = _mm256_loadu_si256((const __m256i *)(pad + 2));
        uint32_t keep = n == 32 ? ~0u : (1u << n) - 1;
        __m256i lbv = _mm256_and_si256(_mm256_and_si256(PROBE(0, v), PROBE(1, v1)), PROBE(2, v2));
        uint32_t lm = keep & ~(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(lbv, zero));
        if (lm)
            _mm256_storeu_si256((__m256i *)lb, lbv);
        uint32_t dm = keep & (uint32_t)_mm256_movemask_epi8(
            _mm256_and_si256(_mm256_cmpgt_epi8(v, lo), _mm256_cmpgt_epi8(hi, v)));
        uint32_t cm = keep & (uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(v, colon));
        if (dm | cm | lm)
            rc = prepass_block(sc, i, dm, cm, 0, lm, lb, pp);
        i += n;
    }
#undef PROBE
    explicit_bzero(pad, sizeof pad);
    return rc;
}
#endif

/* The pre-pass; with AVX2 it also finds the literal triggers (else
 * scan_raw runs the literal database). */
static int prepass(struct scan *sc)
{
    struct prepass pp = {0, (size_t)-1};
#ifdef HAVE_AVX2_PASS
    if (sc->e->avx2)
        return prepass_avx2(sc, &pp);
#endif
#ifdef __SSE2__
    return prepass_sse2(sc, &pp);
#else
    return prepass_tail(sc, 0, &pp);
#endif
}

/* A stretch of digits alone longer than 2 * DIGITS_KEEP bytes: no digit
 * match inside it but its first and last DIGITS_KEEP bytes can be taken
 * (every match is at most ~40 bytes long, and an accepted one has a
 * non-digit, or the text's edge, at one end at least: a start or an end
 * between two digits fails the boundary checks, which read the text, not
 * the window). So only those bytes are scanned by the digit patterns: the
 * digit database costs thousands of instructions a byte on a long run of
 * digits. The window is cut in two around the stretch. */
#define DIGITS_KEEP 64

static int cut_digit_stretches(struct scan *sc)
{
    size_t extra = 0;
    for (size_t k = 0; k < sc->nw; k++)
        for (size_t i = sc->w[k].s; i < sc->w[k].e;) {
            if (!is_digit(sc->t[i])) {
                i++;
                continue;
            }
            size_t a = i;
            while (i < sc->w[k].e && is_digit(sc->t[i]))
                i++;
            extra += i - a > 2 * DIGITS_KEEP;
        }
    if (!extra)
        return SW_OK;
    struct win *w = malloc((sc->nw + extra) * sizeof *w);
    if (!w)
        return SW_ENOMEM;
    size_t n = 0;
    for (size_t k = 0; k < sc->nw; k++) {
        size_t from = sc->w[k].s;
        for (size_t i = sc->w[k].s; i < sc->w[k].e;) {
            if (!is_digit(sc->t[i])) {
                i++;
                continue;
            }
            size_t a = i;
            while (i < sc->w[k].e && is_digit(sc->t[i]))
                i++;
            if (i - a > 2 * DIGITS_KEEP) {
                w[n++] = (struct win){from, a + DIGITS_KEEP, 0};
                from = i - DIGITS_KEEP;
            }
        }
        w[n++] = (struct win){from, sc->w[k].e, 0};
    }
    free(sc->w);
    sc->w = w;
    sc->nw = sc->capw = n;
    return SW_OK;
}

static int add_span(struct scan *sc, size_t s, size_t e, int type)
{
    if (sc->nsp == sc->capsp) {
        size_t nc = sc->capsp ? sc->capsp * 2 : 32;
        struct sw_pii_span *n = sc->sp == sc->spbuf ? malloc(nc * sizeof *n)
                                                     : realloc(sc->sp, nc * sizeof *n);
        if (!n)
            return SW_ENOMEM;
        if (sc->sp == sc->spbuf)
            memcpy(n, sc->spbuf, N_SPBUF * sizeof *n);
        sc->sp = n;
        sc->capsp = nc;
    }
    sc->sp[sc->nsp++] = (struct sw_pii_span){s, e - s, type};
    return SW_OK;
}

static int secret_span(void *ud, size_t s, size_t e)
{
    return add_span(ud, s, e, SW_PII_SECRET);
}

static int span_cmp(const void *a, const void *b)
{
    const struct sw_pii_span *x = a, *y = b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    if (x->len != y->len)
        return x->len > y->len ? -1 : 1;
    return x->type - y->type;
}

/* Scans the digit runs sc->w[0, sc->nw) (nw > 0) with the digit database, into *hr:
 * one run in place; several joined by '\n' in catbuf (catcap bytes) or a buffer
 * allocated when they do not fit, returned in *cat and *cat_len for the caller to wipe
 * and free. SW_OK, or SW_ENOMEM. */
static int scan_digit_runs(struct scan *sc, hs_scratch_t *scratch, const char *text, char *catbuf,
                           size_t catcap, char **cat, size_t *cat_len, hs_error_t *hr)
{
    const struct sw_pii_engine *e = sc->e;
    if (sc->nw == 1) {
        sc->off = sc->w[0].s;
        *hr = sw_hsx_scan(e->ddb, text + sc->off, (unsigned)(sc->w[0].e - sc->off), scratch, on_match, sc);
        return SW_OK;
    }
    /* One scan of the runs joined by '\n' (a scan's fixed cost is most of
     * a short run's). No match can cross a '\n' (no digit pattern has it
     * but as the boundary before a match, and a run's first byte, the one
     * before its digits and separators, cannot start one), nor start at
     * one: each match is a match of its run's own scan. */
    size_t n = sc->nw - 1;
    for (size_t i = 0; i < sc->nw; i++)
        n += sc->w[i].e - sc->w[i].s;
    char *c = n <= catcap ? catbuf : malloc(n);
    *cat = c;
    if (!c)
        return SW_ENOMEM;
    *cat_len = n;
    n = 0;
    for (size_t i = 0; i < sc->nw; i++) {
        if (i)
            c[n++] = '\n';
        sc->w[i].b = n;
        memcpy(c + n, text + sc->w[i].s, sc->w[i].e - sc->w[i].s);
        n += sc->w[i].e - sc->w[i].s;
    }
    sc->cat = true;
    *hr = sw_hsx_scan(e->ddb, c, (unsigned)n, scratch, on_match, sc);
    sc->cat = false;
    sc->off = 0;
    return SW_OK;
}

/* Refines each candidate into a span; those refine leaves for later (sc->later) are
 * moved to sc->c[0, *n_later). SW_OK, or add_span's error. */
static int take_candidates(struct scan *sc, size_t *n_later)
{
    const struct sw_pii_engine *e = sc->e;
    int rc;
    for (size_t i = 0; i < sc->n; i++) {
        const struct pattern *p = &e->pat[sc->c[i].id];
        size_t s = sc->c[i].s, en = sc->c[i].e;
        int type;
        sc->later = false;
        if (refine(sc, p, &s, &en, &type) && en > s) {
            rc = add_span(sc, s, en, type);
            if (rc)
                return rc;
        } else if (sc->later) {
            sc->c[(*n_later)++] = sc->c[i];      /* i >= n_later: kept for the retry */
        }
    }
    return SW_OK;
}

/* A number right after another number ("02 383 40 24 643 604 451"): a
 * candidate that looked like a later group of one long number is taken
 * after all when the digits before it are part of an entity found on
 * their own (each is then masked; the union when they touch). */
/* Repeated while it finds more: a number taken this way can be the one
 * before the next ("... 7158 01315220003"). The candidates are sc->c[0, n_later).
 * SW_OK, or add_span's error. */
static int take_later(struct scan *sc, size_t n_later)
{
    const struct sw_pii_engine *e = sc->e;
    int rc;
    sc->later_ok = true;
    for (size_t added = 1; added && n_later;) {
        added = 0;
        size_t nsp = sc->nsp, keep = 0;
        for (size_t i = 0; i < n_later; i++) {
            const struct pattern *p = &e->pat[sc->c[i].id];
            size_t s = sc->c[i].s, en = sc->c[i].e;
            int type;
            bool covered = false;
            for (size_t k = 0; k < nsp && !covered; k++)
                covered = s >= 2 && sc->sp[k].start <= s - 2 && s - 2 < sc->sp[k].start + sc->sp[k].len;
            if (!covered) {
                sc->c[keep++] = sc->c[i];
                continue;
            }
            if (refine(sc, p, &s, &en, &type) && en > s) {
                rc = add_span(sc, s, en, type);
                if (rc)
                    return rc;
                added++;
            }
        }
        n_later = keep;
    }
    return SW_OK;
}

/* Merge overlaps: the union is kept, typed by the highest priority; each merged span is
 * passed to on_span. SW_OK, or on_span's error. */
static int merge_spans(struct scan *sc, sw_pii_on_span on_span, void *ud)
{
    const struct sw_pii_engine *e = sc->e;
    int rc;
    if (sc->nsp > 1)
        qsort(sc->sp, sc->nsp, sizeof *sc->sp, span_cmp);
    for (size_t i = 0; i < sc->nsp;) {
        struct sw_pii_span m = sc->sp[i];
        size_t end = m.start + m.len;
        size_t j = i + 1;
        for (; j < sc->nsp && sc->sp[j].start < end; j++) {
            size_t ej = sc->sp[j].start + sc->sp[j].len;
            if (ej > end)
                end = ej;
            if (e->prio[sc->sp[j].type] < e->prio[m.type])
                m.type = sc->sp[j].type;
        }
        m.len = end - m.start;
        i = j;
        rc = on_span(ud, &m);
        if (rc)
            return rc;
    }
    return SW_OK;
}

static int scan_raw(const struct sw_pii_engine *e, const char *text, size_t len,
                    sw_pii_on_span on_span, void *ud)
{
    struct sw_pii_engine *me = (struct sw_pii_engine *)e;   /* scratch pool only */
    struct scan sc = {.e = e, .t = (const unsigned char *)text, .len = len};
    hs_scratch_t *scratch = NULL;
    int rc = SW_OK;
    char catbuf[2048], *cat = NULL;     /* the digit runs joined (wiped after) */
    size_t last[N_BUILTIN + SW_PII_MAX_CUSTOM];
    struct cand cbuf[N_CBUF];
    struct sw_pii_span spbuf[N_SPBUF];
    size_t cat_len = 0;

    if (len == 0)
        return SW_OK;
    if (len > SW_PII_MAX_TEXT || len > 0xffffffffu)
        return SW_ETOOBIG;
    memset(last, 0, e->n_pat * sizeof *last);
    sc.last = last;
    sc.c = sc.cbuf = cbuf;
    sc.cap = N_CBUF;
    sc.sp = sc.spbuf = spbuf;
    sc.capsp = N_SPBUF;
    /* every scan runs the secret rules' database */
    scratch = scratch_get(me);
    if (!scratch) {
        rc = SW_ENOMEM;
        goto done;
    }
    memset(sc.mend, 0, sizeof sc.mend);
    hs_error_t hr = e->avx2 ? HS_SUCCESS : sw_hsx_scan(e->ldb, text, (unsigned)len, scratch, lit_hit, &sc);
    if (hr == HS_SUCCESS && e->cdb)
        hr = sw_hsx_scan(e->cdb, text, (unsigned)len, scratch, on_match, &sc);
    if (hr == HS_SUCCESS && prepass(&sc))
        hr = HS_SCAN_TERMINATED;
    if (hr == HS_SUCCESS && cut_digit_stretches(&sc)) {
        rc = SW_ENOMEM;
        goto done;
    }
    if (hr == HS_SUCCESS && sc.nw && !scratch) {
        scratch = scratch_get(me);
        if (!scratch) {
            rc = SW_ENOMEM;
            goto done;
        }
    }
    if (hr == HS_SUCCESS && sc.nw && (rc = scan_digit_runs(&sc, scratch, text, catbuf, sizeof catbuf,
                                                           &cat, &cat_len, &hr)))
        goto done;
    if (hr == HS_SCAN_TERMINATED) {
        rc = sc.full ? SW_ETOOBIG : SW_ENOMEM;
        goto done;
    }
    if (hr != HS_SUCCESS) {
        rc = hr == HS_NOMEM ? SW_ENOMEM : SW_EINVAL;
        goto done;
    }
    size_t n_later = 0;
    if ((rc = take_candidates(&sc, &n_later)) || (rc = take_later(&sc, n_later)))
        goto done;
    /* the secret rules of secret.c */
    rc = sw_pii_secret_scan(e->sdb, scratch, sc.t, len, secret_span, &sc);
    if (rc)
        goto done;
    rc = merge_spans(&sc, on_span, ud);
done:
    if (scratch)
        scratch_put(me, scratch);
    if (cat) {
        explicit_bzero(cat, cat_len);
        if (cat != catbuf)
            free(cat);
    }
    free(sc.w);
    if (sc.c != sc.cbuf)
        free(sc.c);
    if (sc.sp != sc.spbuf)
        free(sc.sp);
    return rc;
}

int sw_pii_text_candidates(struct sw_pii_engine *e, const char *t, size_t len, int reference,
                           void (*cb)(void *ud, unsigned pat, size_t s, size_t end), void *ud)
{
    struct scan sc = {.e = e, .t = (const unsigned char *)t, .len = len};
    size_t last[N_BUILTIN + SW_PII_MAX_CUSTOM] = {0};
    struct cand cbuf[N_CBUF];
    hs_scratch_t *scratch = NULL;
    int rc = SW_OK;
    if (len > 0xffffffffu)
        return SW_ETOOBIG;
    if (reference && !e->refdb) {
        const char *res[N_BUILTIN];
        unsigned flags[N_BUILTIN], ids[N_BUILTIN], n = 0;
        hs_compile_error_t *cerr = NULL;
        hs_platform_info_t plat;
        for (size_t i = 0; i < N_BUILTIN; i++)
            if (builtin[i].lits) {
                res[n] = builtin[i].re;
                flags[n] = HS_FLAG_SOM_LEFTMOST | builtin[i].flags;
                ids[n++] = (unsigned)i;
            }
        if (hs_compile_multi(res, flags, ids, n, HS_MODE_BLOCK, sw_hsx_platform(&plat), &e->refdb, &cerr) != HS_SUCCESS) {
            hs_free_compile_error(cerr);
            return SW_EINVAL;
        }
    }
    sc.last = last;
    sc.c = sc.cbuf = cbuf;
    sc.cap = N_CBUF;
    if (hs_alloc_scratch(reference ? e->refdb : e->ldb, &scratch) != HS_SUCCESS)
        return SW_ENOMEM;
    hs_error_t hr;
    if (reference == 1)
        hr = sw_hsx_scan(e->refdb, t, (unsigned)len, scratch, on_match, &sc);
    else if (reference == 0 && e->avx2)
        hr = prepass(&sc) ? HS_SCAN_TERMINATED : HS_SUCCESS;
    else
        hr = sw_hsx_scan(e->ldb, t, (unsigned)len, scratch, lit_hit, &sc);
    if (hr != HS_SUCCESS)
        rc = hr == HS_SCAN_TERMINATED && sc.full ? SW_ETOOBIG : SW_ENOMEM;
    for (size_t i = 0; !rc && i < sc.n; i++)
        if (e->pat[sc.c[i].id].lits)
            cb(ud, sc.c[i].id, sc.c[i].s, sc.c[i].e);
    free(sc.w);
    hs_free_scratch(scratch);
    if (sc.c != sc.cbuf)
        free(sc.c);
    return rc;
}

/* Spans of the view, mapped back to the input. Two view spans can map onto
 * one input character (a compatibility form that expands to several
 * characters): such neighbours are merged, so input spans never overlap. */
struct mapback {
    const struct sw_pii_view *v;        /* NULL: the text itself (t, len) */
    const unsigned char *t;
    size_t len;
    sw_pii_on_span on_span;
    void *ud;
    struct sw_pii_span pend;
    bool have;
};

static int on_view_span(void *ud, const struct sw_pii_span *sp)
{
    struct mapback *mb = ud;
    size_t s, e;
    if (mb->v) {
        s = mb->v->os[sp->start];
        e = mb->v->oe[sp->start + sp->len - 1];
    } else {
        /* the text is its own view (valid UTF-8, every character kept): a
         * span covers whole characters, as the view's offsets would give */
        s = sp->start;
        e = sp->start + sp->len;
        while (s > 0 && (mb->t[s] & 0xc0) == 0x80)
            s--;
        while (e < mb->len && (mb->t[e] & 0xc0) == 0x80)
            e++;
    }
    if (mb->have && s < mb->pend.start + mb->pend.len) {
        if (e > mb->pend.start + mb->pend.len)
            mb->pend.len = e - mb->pend.start;
        return SW_OK;
    }
    if (mb->have) {
        int rc = mb->on_span(mb->ud, &mb->pend);
        if (rc)
            return rc;
    }
    mb->pend = (struct sw_pii_span){s, e - s, sp->type};
    mb->have = true;
    return SW_OK;
}

/* A byte of a bare JSON literal (number, true, false, null). */
static bool bare_char(unsigned char ch)
{
    return is_alnum(ch) || ch == '+' || ch == '-' || ch == '.';
}

/* JSON text: each span is kept inside one string, or widened to its whole
 * bare literal (a number), so that replacing it keeps JSON text JSON. A span
 * that starts inside a string ends at the latest at its closing quote; one
 * that starts on an opening quote starts after it. */
struct jclip {
    const unsigned char *t;
    size_t len, jpos, last_end;
    bool in_str;
    sw_pii_on_span on_span;
    void *ud;
};

static void jclip_state(struct jclip *c, size_t to)
{
    for (size_t i = c->jpos; i < to; i++) {
        if (c->in_str) {
            if (c->t[i] == '\\')
                i++;
            else if (c->t[i] == '"')
                c->in_str = false;
        } else if (c->t[i] == '"') {
            c->in_str = true;
        }
    }
    if (to > c->jpos)
        c->jpos = to;
}

static int on_jclip_span(void *ud, const struct sw_pii_span *sp)
{
    struct jclip *c = ud;
    size_t s = sp->start, e = sp->start + sp->len;
    if (s < c->last_end)
        s = c->last_end;            /* the previous literal was widened over it */
    if (e <= s)
        return SW_OK;
    jclip_state(c, s);
    if (!c->in_str && c->t[s] == '"' && e - s > 1) {
        s++;
        jclip_state(c, s);
    }
    if (c->in_str) {
        size_t i = s;
        while (i < e && c->t[i] != '"')
            i += c->t[i] == '\\' ? 2 : 1;
        if (i < e)
            e = i;
    } else if (bare_char(c->t[s])) {
        while (s > c->last_end && bare_char(c->t[s - 1]))
            s--;
        size_t i = s;
        while (i < c->len && bare_char(c->t[i]))
            i++;
        if (i > e)
            e = i;      /* never shorter: past the literal the text is not JSON */
    }   /* else: not JSON here, the span as found */
    if (e <= s)
        return SW_OK;
    c->last_end = e;
    struct sw_pii_span out = {s, e - s, sp->type};
    return c->on_span(c->ud, &out);
}

static int scan_view(const struct sw_pii_engine *e, const char *text, size_t len, int json,
                     sw_pii_on_span on_span, void *ud);

/* Known-safe values: a span that is one is passed on as SW_PII_ALLOWED. */
struct allow_filter {
    const struct sw_pii_allow *a;
    const char *t;
    sw_pii_on_span on_span;
    void *ud;
};

static int on_allow_span(void *ud, const struct sw_pii_span *sp)
{
    struct allow_filter *f = ud;
    struct sw_pii_span out = *sp;
    if (sw_pii_allow_match(f->a, sp->type, f->t + sp->start, sp->len))
        out.type = SW_PII_ALLOWED;
    return f->on_span(f->ud, &out);
}

static int scan_fresh(const struct sw_pii_engine *e, const char *text, size_t len, int json,
                      sw_pii_on_span on_span, void *ud)
{
    struct allow_filter f = {&e->allow, text, on_span, ud};
    if (e->allow.n_values || e->allow.n_domains) {
        on_span = on_allow_span;
        ud = &f;
    }
    if (!json)
        return scan_view(e, text, len, 0, on_span, ud);
    struct jclip c = {.t = (const unsigned char *)text, .len = len, .on_span = on_span, .ud = ud};
    return scan_view(e, text, len, 1, on_jclip_span, &c);
}

/* Spans of one reading, in the input's offsets and in order. */
struct spanlist {
    struct sw_pii_span *sp;
    size_t n, cap;
};

static int on_list_span(void *ud, const struct sw_pii_span *sp)
{
    struct spanlist *l = ud;
    if (l->n == l->cap) {
        size_t nc = l->cap ? l->cap * 2 : 16;
        struct sw_pii_span *p = realloc(l->sp, nc * sizeof *p);
        if (!p)
            return SW_ENOMEM;
        l->sp = p;
        l->cap = nc;
    }
    l->sp[l->n++] = *sp;
    return SW_OK;
}

static int scan_reading(const struct sw_pii_engine *e, struct sw_pii_view *v, struct spanlist *out)
{
    struct mapback mb = {.v = v, .on_span = on_list_span, .ud = out};
    int rc = scan_raw(e, v->t, v->len, on_view_span, &mb);
    if (!rc && mb.have)
        rc = on_list_span(out, &mb.pend);
    if (v->t)
        explicit_bzero(v->t, v->cap);
    sw_pii_view_free(v);
    return rc;
}

/* A text whose view read a tab or line break inside a number is also read
 * with every break a boundary, and the spans of both readings are masked
 * (their union where they overlap, typed by the higher priority): a line
 * that ends in a digit never hides a value on the next line ("ref T1." then
 * "0049 152 176 9604"), and a number wrapped over two lines is still found
 * whole. Two linear scans. Takes v (freed). */
static int scan_two_readings(const struct sw_pii_engine *e, const char *text, size_t len, int json,
                             struct sw_pii_view *v, sw_pii_on_span on_span, void *ud)
{
    struct spanlist a = {0}, b = {0};
    struct sw_pii_view w;
    int rc = scan_reading(e, v, &a);
    if (!rc)
        rc = sw_pii_view_build2(&w, text, len, json, false);
    if (!rc)
        rc = scan_reading(e, &w, &b);
    size_t i = 0, j = 0;
    bool have = false;
    struct sw_pii_span m = {0};
    while (!rc && (i < a.n || j < b.n)) {
        struct sw_pii_span x = j >= b.n || (i < a.n && a.sp[i].start <= b.sp[j].start) ? a.sp[i++] : b.sp[j++];
        if (have && x.start < m.start + m.len) {
            if (x.start + x.len > m.start + m.len)
                m.len = x.start + x.len - m.start;
            if (e->prio[x.type] < e->prio[m.type])
                m.type = x.type;
            continue;
        }
        if (have)
            rc = on_span(ud, &m);
        m = x;
        have = true;
    }
    if (!rc && have)
        rc = on_span(ud, &m);
    free(a.sp);
    free(b.sp);
    return rc;
}

static int scan_view(const struct sw_pii_engine *e, const char *text, size_t len, int json,
                     sw_pii_on_span on_span, void *ud)
{
    if (len == 0)
        return SW_OK;
    if (len > SW_PII_MAX_TEXT || len > 0xffffffffu)
        return SW_ETOOBIG;
    int kind = sw_pii_view_kind(text, len, json);
    if (kind == SW_PII_VIEW_NONE)
        return scan_raw(e, text, len, on_span, ud);
    if (kind == SW_PII_VIEW_UTF8) {
        struct mapback mb = {.t = (const unsigned char *)text, .len = len, .on_span = on_span, .ud = ud};
        int rc = scan_raw(e, text, len, on_view_span, &mb);
        if (!rc && mb.have)
            rc = on_span(ud, &mb.pend);
        return rc;
    }
    struct sw_pii_view v;
    int rc = sw_pii_view_build(&v, text, len, json);
    if (rc)
        return rc;
    if (v.joined)
        return scan_two_readings(e, text, len, json, &v, on_span, ud);
    struct mapback mb = {.v = &v, .on_span = on_span, .ud = ud};
    rc = scan_raw(e, v.t, v.len, on_view_span, &mb);
    if (!rc && mb.have)
        rc = on_span(ud, &mb.pend);
    if (v.t)
        explicit_bzero(v.t, v.cap);
    sw_pii_view_free(&v);
    return rc;
}

static int replay(const struct sw_pii_span *sp, size_t n, sw_pii_on_span on_span, void *ud)
{
    int rc = SW_OK;
    for (size_t i = 0; i < n && !rc; i++)
        rc = on_span(ud, &sp[i]);
    return rc;
}

/* A scan through the engine's verdict cache: the same spans, in the same
 * order, as scan_fresh gives (a hit replays what the same engine found in
 * the same bytes; a miss scans them whole, stores the spans, replays them).
 * A scan that fails is not stored. */
static int scan(const struct sw_pii_engine *e, const char *text, size_t len, int json,
                sw_pii_on_span on_span, void *ud)
{
    struct sw_pii_cache_key k;
    if (!e->cache || len < (json ? SW_PII_CACHE_MIN_JSON : SW_PII_CACHE_MIN_TEXT) ||
        len > SW_PII_MAX_TEXT ||
        !sw_pii_cache_key_of(e->cache, text, len, e->gen, json, &k))
        return scan_fresh(e, text, len, json, on_span, ud);
    struct sw_pii_span buf[16], *sp;
    size_t n;
    if (sw_pii_cache_get(e->cache, &k, buf, sizeof buf / sizeof *buf, &sp, &n)) {
        int rc = replay(sp, n, on_span, ud);
        if (sp != buf)
            free(sp);
        return rc;
    }
    struct spanlist l = {0}; /* the spans, collected to be stored and replayed */
    int rc = scan_fresh(e, text, len, json, on_list_span, &l);
    if (!rc) {
        sw_pii_cache_put(e->cache, &k, l.sp, l.n);
        rc = replay(l.sp, l.n, on_span, ud);
    }
    free(l.sp);
    return rc;
}

int sw_pii_scan_text(const struct sw_pii_engine *e, const char *text, size_t len,
                     sw_pii_on_span on_span, void *ud)
{
    return scan(e, text, len, 0, on_span, ud);
}

int sw_pii_scan_json_text(const struct sw_pii_engine *e, const char *text, size_t len,
                          sw_pii_on_span on_span, void *ud)
{
    return scan(e, text, len, 1, on_span, ud);
}
