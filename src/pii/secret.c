/* Secret rules found from literal triggers (see secret.h): the trigger
 * database reports the end of each literal; a rule per trigger kind finds
 * the secret's extent and validates it. Every rule reads a bounded window
 * around its trigger, and the two that could read more (the value run of an
 * assignment, the AWS key search) remember what they read, so a text made of
 * repeated triggers costs linear time. */
#include "pii/secret.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "pii/hsx.h"

/* ---- Rules ---- */

enum kind {
    R_PREFIX,       /* a provider prefix and a body of class cls, min..max bytes */
    R_SENDGRID,     /* SG.<22>.<43> */
    R_WEBHOOK,      /* a webhook host and path: the path is the secret */
    R_AWS_ID,       /* AKIA/ASIA key id: the 40-byte secret key near it */
    R_BASIC,        /* Basic <base64 of user:password> */
    R_ASSIGN,       /* a password/secret/token/key-named name = value */
    R_BLOCK,        /* a PuTTY or SSH2 private key (min: 0 PuTTY, 1 SSH2) */
    R_AZURE,        /* an Entra ID (Azure AD) client secret (see r_azure) */
};

/* Body byte classes. */
enum { C_LOWER = 1, C_UPPER = 2, C_DIGIT = 4, C_US = 8, C_DASH = 16, C_DOT = 32, C_B64 = 64, C_HEX = 128 };
#define C_ALNUM (C_LOWER | C_UPPER | C_DIGIT)

struct rule {
    const char *lit;
    unsigned char kind;
    unsigned char caseless;
    unsigned char cls;          /* R_PREFIX: the body's classes */
    unsigned short min, max;    /* R_PREFIX: body length (max 0: any) */
    unsigned char left;         /* the byte before the literal must not be alphanumeric */
};

static const struct rule rules[] = {
    /* registries, VCS, chat, mail, payment, cloud and AI providers */
    {"npm_", R_PREFIX, 0, C_ALNUM, 36, 36, 1},
    {"pypi-AgEIcHlwaS5vcmc", R_PREFIX, 0, C_ALNUM | C_US | C_DASH, 50, 0, 1},
    {"rubygems_", R_PREFIX, 0, C_HEX, 48, 48, 1},
    {"glptt-", R_PREFIX, 0, C_ALNUM | C_US | C_DASH, 20, 0, 1},
    {"gldt-", R_PREFIX, 0, C_ALNUM | C_US | C_DASH, 20, 0, 1},
    {"glrt-", R_PREFIX, 0, C_ALNUM | C_US | C_DASH, 20, 0, 1},
    {"glsoat-", R_PREFIX, 0, C_ALNUM | C_US | C_DASH, 20, 0, 1},
    {"glcbt-", R_PREFIX, 0, C_ALNUM | C_US | C_DASH, 20, 0, 1},
    {"GR1348941", R_PREFIX, 0, C_ALNUM | C_US | C_DASH, 20, 0, 1},
    {"xapp-", R_PREFIX, 0, C_ALNUM | C_DASH, 20, 0, 1},
    {"xoxe-", R_PREFIX, 0, C_ALNUM | C_DASH, 20, 0, 1},
    {"xoxe.xox", R_PREFIX, 0, C_ALNUM | C_DASH, 20, 0, 1},
    {"whsec_", R_PREFIX, 0, C_ALNUM, 24, 0, 1},
    {"SK", R_PREFIX, 0, C_HEX, 32, 32, 1},                  /* Twilio API key */
    {"key-", R_PREFIX, 0, C_LOWER | C_DIGIT, 32, 32, 1},     /* Mailgun */
    {"xkeysib-", R_PREFIX, 0, C_ALNUM | C_DASH, 64, 0, 1},   /* Brevo (Sendinblue) */
    {"shpat_", R_PREFIX, 0, C_HEX, 32, 32, 1},
    {"shpss_", R_PREFIX, 0, C_HEX, 32, 32, 1},
    {"shpca_", R_PREFIX, 0, C_HEX, 32, 32, 1},
    {"shppa_", R_PREFIX, 0, C_HEX, 32, 32, 1},
    {"dop_v1_", R_PREFIX, 0, C_HEX, 64, 64, 1},
    {"doo_v1_", R_PREFIX, 0, C_HEX, 64, 64, 1},
    {"dor_v1_", R_PREFIX, 0, C_HEX, 64, 64, 1},
    {"dapi", R_PREFIX, 0, C_HEX, 32, 32, 1},                 /* Databricks */
    {"glc_", R_PREFIX, 0, C_ALNUM | C_B64 | C_US, 32, 0, 1}, /* Grafana */
    {"glsa_", R_PREFIX, 0, C_ALNUM | C_US, 32, 0, 1},
    {"GOCSPX-", R_PREFIX, 0, C_ALNUM | C_US | C_DASH, 28, 0, 1},  /* Google OAuth client secret */
    {"AGE-SECRET-KEY-1", R_PREFIX, 0, C_UPPER | C_DIGIT, 58, 0, 1},
    {"ATATT3", R_PREFIX, 0, C_ALNUM | C_US | C_DASH | C_B64, 100, 0, 1},   /* Atlassian */
    {"lin_api_", R_PREFIX, 0, C_ALNUM, 40, 0, 1},
    {"PMAK-", R_PREFIX, 0, C_ALNUM | C_DASH, 59, 0, 1},
    {"gsk_", R_PREFIX, 0, C_ALNUM, 48, 0, 1},                /* Groq */
    {"r8_", R_PREFIX, 0, C_ALNUM, 37, 0, 1},                 /* Replicate */
    {"ntn_", R_PREFIX, 0, C_ALNUM, 40, 0, 1},                /* Notion */
    {"sk-or-v1-", R_PREFIX, 0, C_HEX, 64, 0, 1},             /* OpenRouter */
    {"pscale_tkn_", R_PREFIX, 0, C_ALNUM | C_US | C_DASH | C_DOT, 43, 0, 1},
    {"pscale_pw_", R_PREFIX, 0, C_ALNUM | C_US | C_DASH | C_DOT, 43, 0, 1},
    {"SG.", R_SENDGRID, 0, 0, 0, 0, 1},
    {"Q~", R_AZURE, 0, 0, 0, 0, 0},
    {"hooks.slack.com/", R_WEBHOOK, 0, 0, 0, 0, 0},
    {"discord.com/api/webhooks/", R_WEBHOOK, 0, 0, 0, 0, 0},
    {"discordapp.com/api/webhooks/", R_WEBHOOK, 0, 0, 0, 0, 0},
    {"webhook.office.com/webhookb2/", R_WEBHOOK, 0, 0, 0, 0, 0},
    {"AKIA", R_AWS_ID, 0, 0, 0, 0, 1},
    {"ASIA", R_AWS_ID, 0, 0, 0, 0, 1},
    {"basic ", R_BASIC, 1, 0, 0, 0, 1},
    {"PuTTY-User-Key-File-", R_BLOCK, 0, 0, 0, 0, 0},
    {"---- BEGIN SSH2 ENCRYPTED PRIVATE KEY", R_BLOCK, 0, 0, 1, 0, 0},
    /* names whose value is a secret: the name ends with one of these (cls
     * 1: a number is a value too, as a PIN or password can be) */
    {"password", R_ASSIGN, 1, 1, 0, 0, 0},
    {"passwd", R_ASSIGN, 1, 1, 0, 0, 0},
    {"passphrase", R_ASSIGN, 1, 1, 0, 0, 0},
    {"_pass", R_ASSIGN, 1, 1, 0, 0, 0},
    {"_pwd", R_ASSIGN, 1, 1, 0, 0, 0},
    {"secret", R_ASSIGN, 1, 0, 0, 0, 0},
    {"token", R_ASSIGN, 1, 0, 0, 0, 0},
    {"apikey", R_ASSIGN, 1, 0, 0, 0, 0},
    {"api_key", R_ASSIGN, 1, 0, 0, 0, 0},
    {"api-key", R_ASSIGN, 1, 0, 0, 0, 0},
    {"secretkey", R_ASSIGN, 1, 0, 0, 0, 0},
    {"secret_key", R_ASSIGN, 1, 0, 0, 0, 0},
    {"secret-key", R_ASSIGN, 1, 0, 0, 0, 0},
    {"privatekey", R_ASSIGN, 1, 0, 0, 0, 0},
    {"private_key", R_ASSIGN, 1, 0, 0, 0, 0},
    {"accesskey", R_ASSIGN, 1, 0, 0, 0, 0},
    {"access_key", R_ASSIGN, 1, 0, 0, 0, 0},
    {"access-key", R_ASSIGN, 1, 0, 0, 0, 0},
    {"auth_key", R_ASSIGN, 1, 0, 0, 0, 0},
    {"authkey", R_ASSIGN, 1, 0, 0, 0, 0},
    {"master_key", R_ASSIGN, 1, 0, 0, 0, 0},
    {"encryption_key", R_ASSIGN, 1, 0, 0, 0, 0},
    {"signing_key", R_ASSIGN, 1, 0, 0, 0, 0},
    {"accountkey", R_ASSIGN, 1, 0, 0, 0, 0},               /* Azure storage */
    {"sharedaccesskey", R_ASSIGN, 1, 0, 0, 0, 0},          /* Azure Service Bus, Event Hubs */
};
#define N_RULES (sizeof rules / sizeof rules[0])

/* ---- Bytes ---- */

static unsigned char cls[256];
static pthread_once_t cls_once = PTHREAD_ONCE_INIT;

static void cls_init(void)
{
    for (int c = 0; c < 256; c++) {
        unsigned k = 0;
        if (c >= 'a' && c <= 'z')
            k |= C_LOWER;
        if (c >= 'A' && c <= 'Z')
            k |= C_UPPER;
        if (c >= '0' && c <= '9')
            k |= C_DIGIT;
        if (c == '_')
            k |= C_US;
        if (c == '-')
            k |= C_DASH;
        if (c == '.')
            k |= C_DOT;
        if (c == '+' || c == '/' || c == '=')
            k |= C_B64;
        if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))
            k |= C_HEX;
        cls[c] = (unsigned char)k;
    }
}

static inline bool alnum(unsigned char c) { return (cls[c] & C_ALNUM) != 0; }
static inline bool ident(unsigned char c) { return (cls[c] & (C_ALNUM | C_US)) != 0; }
static inline bool b64(unsigned char c) { return alnum(c) || c == '+' || c == '/'; }
static inline unsigned char lower(unsigned char c) { return c >= 'A' && c <= 'Z' ? (unsigned char)(c | 0x20) : c; }

/* Letters and digits both: a random token, not a word or a number. */
static bool letters_and_digits(const unsigned char *b, size_t n)
{
    unsigned k = 0;
    for (size_t i = 0; i < n; i++)
        k |= cls[b[i]];
    return (k & C_DIGIT) && (k & (C_LOWER | C_UPPER));
}

/* ---- Scan state ---- */

struct st {
    const unsigned char *t;
    size_t len;
    int (*add)(void *ud, size_t s, size_t e);
    void *ud;
    int rc;
    /* the last assignment value run walked, on a line / inline: [vfrom, vend) */
    size_t vfrom[2], vend[2];
    /* AWS: the text before aws_fwd was searched forward for a key; the
     * last key found there starts at aws_key (SIZE_MAX: none), and the text
     * before aws_back was searched backwards */
    size_t aws_fwd, aws_key_s, aws_key_e, aws_back;
    /* per prefix rule: the last body run walked, [rfrom, rend) */
    size_t rfrom[N_RULES], rend[N_RULES];
    /* per block format: the end line searched from bk_from, found at bk_at */
    size_t bk_from[2], bk_at[2];
    bool bk_have[2];
};

static int add(struct st *st, size_t s, size_t e)
{
    if (e <= s)
        return 0;
    int rc = st->add(st->ud, s, e);
    if (rc)
        st->rc = rc;
    return rc;
}

/* ---- Prefix tokens ---- */

static size_t run(const struct st *st, size_t i, size_t lim, unsigned c)
{
    if (lim > st->len)
        lim = st->len;
    while (i < lim && (cls[st->t[i]] & c))
        i++;
    return i;
}

static int r_prefix(struct st *st, const struct rule *r, size_t s, size_t q)
{
    size_t max = r->max ? r->max : 512, ri = (size_t)(r - rules), e;
    /* the run to its end, remembered: "glc_glc_glc_..." walks it once */
    if (q >= st->rfrom[ri] && q < st->rend[ri]) {
        e = st->rend[ri];
    } else {
        e = run(st, q, st->len, r->cls);
        st->rfrom[ri] = q;
        st->rend[ri] = e;
    }
    if (e - q < r->min || e - q > max)
        return 0;
    if (e < st->len && alnum(st->t[e]))
        return 0;
    if (!letters_and_digits(st->t + q, e - q))
        return 0;
    return add(st, s, e);
}

static int r_sendgrid(struct st *st, size_t s, size_t q)
{
    const unsigned c = C_ALNUM | C_US | C_DASH;
    size_t a = run(st, q, q + 23, c);
    if (a - q != 22 || a >= st->len || st->t[a] != '.')
        return 0;
    size_t b = run(st, a + 1, a + 45, c);
    if (b - a - 1 != 43 || (b < st->len && alnum(st->t[b])))
        return 0;
    return add(st, s, b);
}

/* The path after a webhook host: at least 20 bytes of letters, digits and
 * / _ - with letters and digits both (a line break after a '/' included). */
static int r_webhook(struct st *st, size_t q)
{
    size_t e = q;
    for (; e < st->len && e - q <= 512; e++) {
        unsigned char c = st->t[e];
        if ((cls[c] & (C_ALNUM | C_US | C_DASH)) || c == '/')
            continue;
        /* a URL wrapped after one of its slashes */
        if (c == '\n' && e > q && st->t[e - 1] == '/' && e + 1 < st->len && alnum(st->t[e + 1]))
            continue;
        break;
    }
    if (e - q < 20 || e - q > 512 || !letters_and_digits(st->t + q, e - q))
        return 0;
    return add(st, q, e);
}

/* A private key block of a format without the PEM header (PuTTY, SSH2):
 * from its first line to the end of its last line, or to the end of the
 * text when it is cut short. The search for the end is remembered: a later
 * header before the end found ends there too. */
static int r_block(struct st *st, const struct rule *r, size_t s, size_t q)
{
    /* the first line as the format writes it: PuTTY's version digit, a
     * colon, a space and the key type (lower case); SSH2's closing dashes */
    if (r->min ? (st->len - q < 5 || memcmp(st->t + q, " ----", 5))
               : (st->len - q < 4 || (st->t[q] != '2' && st->t[q] != '3') || st->t[q + 1] != ':' ||
                  st->t[q + 2] != ' ' || !(cls[st->t[q + 3]] & C_LOWER)))
        return 0;
    /* and the line ends there (the key type, or the dashes): a line break
     * or JSON's "\n" */
    size_t h = r->min ? q + 5 : q + 3;
    while (!r->min && h < st->len && h - q < 64 && (cls[st->t[h]] & (C_ALNUM | C_DASH | C_DOT | C_US)))
        h++;
    if (h < st->len && st->t[h] != '\n' && st->t[h] != '\r' && !(st->t[h] == '\\' && h + 1 < st->len && st->t[h + 1] == 'n'))
        return 0;
    const char *endlit = r->min ? "---- END SSH2 " : "Private-MAC: ";
    size_t k = strlen(endlit), e;
    if (st->bk_have[r->min] && q >= st->bk_from[r->min] && st->bk_at[r->min] >= q) {
        e = st->bk_at[r->min];
    } else {
        const unsigned char *f = memmem(st->t + q, st->len - q, endlit, k);
        e = f ? (size_t)(f - st->t) : st->len;
        st->bk_have[r->min] = true;
        st->bk_from[r->min] = q;
        st->bk_at[r->min] = e;
    }
    if (e < st->len) {
        e += k;     /* to the end of that line */
        while (e < st->len && e - q < 1u << 20 && st->t[e] != '\n' && st->t[e] != '\r' &&
               !(st->t[e] == '\\' && e + 1 < st->len && (st->t[e + 1] == 'n' || st->t[e + 1] == 'r')))
            e++;
    }
    return add(st, s, e);
}

/* ---- Entra ID client secrets ---- */

/* The bytes of an Entra ID (Azure AD) client secret: letters, digits and
 * _ ~ . - (the first three: not '-'). */
static inline bool az_body(unsigned char c) { return ident(c) || c == '~' || c == '.' || c == '-'; }

/* Three bytes, a digit, "Q~" (the trigger) and 31 to 34 more, standalone,
 * with upper case, lower case and a digit. A '.' after the 34th byte ends
 * the sentence, not the secret. */
static int r_azure(struct st *st, size_t s, size_t q)
{
    const unsigned char *t = st->t;
    if (s < 4 || !(cls[t[s - 1]] & C_DIGIT))
        return 0;
    size_t b = s - 4;
    for (size_t i = b; i < s - 1; i++)
        if (!az_body(t[i]) || t[i] == '-')
            return 0;
    if (b > 0 && (az_body(t[b - 1]) || t[b - 1] == '+' || t[b - 1] == '/'))
        return 0;
    size_t e = q;
    while (e < st->len && e - q <= 35 && az_body(t[e]))
        e++;
    while (e - q > 34 && t[e - 1] == '.')
        e--;
    if (e - q < 31 || e - q > 34 || (e < st->len && az_body(t[e]) && t[e] != '.') ||
        (e < st->len && (t[e] == '+' || t[e] == '/' || t[e] == '=')))
        return 0;
    unsigned k = 0;
    for (size_t i = b; i < e; i++)
        k |= cls[t[i]];
    if ((k & (C_LOWER | C_UPPER | C_DIGIT)) != (C_LOWER | C_UPPER | C_DIGIT))
        return 0;
    return add(st, b, e);
}

/* ---- AWS secret access keys ---- */

#define AWS_WINDOW 256

/* A standalone run of 40 base64 bytes with upper and lower case and a
 * digit, '+' or '/' (one key in a thousand has no digit), as an AWS secret
 * access key is written, starting at i. */
static bool aws_key_at(const struct st *st, size_t i)
{
    if (i + 40 > st->len || (i > 0 && b64(st->t[i - 1])))
        return false;
    unsigned k = 0;
    bool sym = false;
    for (size_t j = i; j < i + 40; j++) {
        if (!b64(st->t[j]))
            return false;
        k |= cls[st->t[j]];
        sym |= st->t[j] == '+' || st->t[j] == '/';
    }
    if (i + 40 < st->len && (b64(st->t[i + 40]) || st->t[i + 40] == '='))
        return false;
    return (k & C_UPPER) && (k & C_LOWER) && ((k & C_DIGIT) || sym);
}

/* The first key starting in [from, lim), each position looked at once over
 * the whole scan (aws_fwd), or SIZE_MAX. */
static size_t aws_key_fwd(struct st *st, size_t from, size_t lim)
{
    if (st->aws_key_s != SIZE_MAX && st->aws_key_s >= from && st->aws_key_s < lim)
        return st->aws_key_s;
    size_t i = from > st->aws_fwd ? from : st->aws_fwd;
    for (; i < lim; i++) {
        /* a key starts a base64 run: skip to the next run start */
        if (!b64(st->t[i]) || (i > 0 && b64(st->t[i - 1])))
            continue;
        if (aws_key_at(st, i)) {
            st->aws_fwd = i + 1;
            st->aws_key_s = i;
            st->aws_key_e = i + 40;
            return i;
        }
    }
    if (lim > st->aws_fwd)
        st->aws_fwd = lim;
    return SIZE_MAX;
}

/* A key id (AKIA/ASIA + 16 of [A-Z0-9], the pattern table masks it) makes
 * a secret of the 40-byte key written within AWS_WINDOW bytes after it, or
 * else before it. */
static int r_aws(struct st *st, size_t s, size_t q)
{
    size_t e = q;
    while (e < st->len && e - q < 17 && ((st->t[e] >= 'A' && st->t[e] <= 'Z') || (st->t[e] >= '0' && st->t[e] <= '9')))
        e++;
    if (e - q != 16 || (e < st->len && alnum(st->t[e])))
        return 0;
    size_t lim = e + AWS_WINDOW > st->len ? st->len : e + AWS_WINDOW;
    size_t k = aws_key_fwd(st, e, lim);
    if (k != SIZE_MAX)
        return add(st, k, k + 40);
    size_t from = s > AWS_WINDOW ? s - AWS_WINDOW : 0;
    if (from < st->aws_back)
        from = st->aws_back;
    for (size_t i = from; i + 40 <= s; i++)
        if (b64(st->t[i]) && (i == 0 || !b64(st->t[i - 1])) && aws_key_at(st, i)) {
            st->aws_back = s;
            return add(st, i, i + 40);
        }
    if (s > st->aws_back)
        st->aws_back = s;
    return 0;
}

/* ---- Basic credentials ---- */

static int b64val(unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+')
        return 62;
    if (c == '/')
        return 63;
    return -1;
}

/* "Basic " and the base64 of user:password (printable text with a colon,
 * as RFC 7617 encodes it): the base64 is the secret. */
static int r_basic(struct st *st, size_t q)
{
    const unsigned char *t = st->t;
    /* spaces, and the credentials on the next line */
    bool nl = false;
    while (q < st->len && (t[q] == ' ' || t[q] == '\t' || (!nl && t[q] == '\n'))) {
        nl |= t[q] == '\n';
        q++;
    }
    size_t e = q;
    while (e < st->len && e - q <= 1024 && b64(t[e]))
        e++;
    size_t n = e - q;
    while (e < st->len && t[e] == '=' && e - q < n + 2)
        e++;
    if (n < 4 || n > 1024 || (e < st->len && (alnum(t[e]) || t[e] == '=')))
        return 0;
    /* decode: at least 3 bytes, each printable, one a colon */
    uint32_t acc = 0;
    int bits = 0;
    size_t out = 0;
    bool colon = false;
    for (size_t i = q; i < q + n; i++) {
        acc = (acc << 6) | (uint32_t)b64val(t[i]);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            unsigned char c = (unsigned char)(acc >> bits);
            acc &= (1u << bits) - 1;
            if (c < 0x20 || c == 0x7f)
                return 0;
            colon |= c == ':';
            out++;
        }
    }
    if (out < 3 || !colon)
        return 0;
    return add(st, q, e);
}

/* ---- Assignments ---- */

/* Values that stand for no secret: types, literals, empty words. */
static const char *const not_values[] = {
    "null", "nil", "none", "true", "false", "yes", "no", "undefined", "string", "str", "bytes",
    "bool", "boolean", "int", "integer", "number", "required", "optional", "empty", "secret",
    "password", "token", "redacted", "hidden", "masked", "placeholder", "example", "default",
    "env", "file", "value", "self", "this", "new", "var", "let", "const", "return", "option", "any",
    "object", "include", "omit", "unknown", "void", "text", "uuid", "unused", "dummy", "fake", "wrong",
    "test", "changeme", "sample", "foo", "bar", "xyz", "abc", "...",
};

static bool eq_nocase(const unsigned char *a, size_t n, const char *w)
{
    size_t k = strlen(w);
    if (n != k)
        return false;
    for (size_t i = 0; i < n; i++)
        if (lower(a[i]) != (unsigned char)w[i])
            return false;
    return true;
}

static bool has(const unsigned char *a, size_t n, const char *w)
{
    size_t k = strlen(w);
    for (size_t i = 0; i + k <= n; i++)
        if (!memcmp(a + i, w, k))
            return true;
    return false;
}

/* A printf "%s" in a value: with no letter or digit right before or after
 * it ("%s", "%s:%s@db", "/%s", "user_%s"); next to one it is two
 * characters of a chosen password ("tP25v%sFjH", "%sDMiWZ"). */
static bool format_s(const unsigned char *a, size_t n)
{
    for (size_t i = 0; i + 2 <= n; i++)
        if (a[i] == '%' && a[i + 1] == 's' && (i == 0 || !alnum(a[i - 1])) && (i + 2 == n || !alnum(a[i + 2])))
            return true;
    return false;
}

/* Whether a value is a placeholder, a reference or code rather than a
 * secret; id: the name it is assigned to. */
static bool letters_only(const unsigned char *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!(cls[v[i]] & (C_LOWER | C_UPPER)))
            return false;
    return true;
}

/* What a person or a generator picks as a password: 7 bytes or more, a
 * letter and a digit or symbol (not a word, a glob or a number). */
static bool chosen(const unsigned char *v, size_t n)
{
    bool letter = false, other = false;
    for (size_t i = 0; i < n; i++) {
        if (cls[v[i]] & (C_LOWER | C_UPPER))
            letter = true;
        else if (v[i] != '.' && v[i] != '-' && v[i] != '_' && v[i] != '*')
            other = true;
    }
    return n >= 7 && letter && other;
}

/* A printf conversion on its own: %s, %-20s, %08.3lf. */
static bool printf_format(const unsigned char *v, size_t n)
{
    size_t i = 1;
    while (i < n && (v[i] == '-' || v[i] == '+' || v[i] == ' ' || v[i] == '#' || v[i] == '0'))
        i++;
    while (i < n && (cls[v[i]] & C_DIGIT))
        i++;
    if (i < n && v[i] == '.')
        for (i++; i < n && (cls[v[i]] & C_DIGIT); i++)
            ;
    size_t l = i;
    while (i < n && (cls[v[i]] & (C_LOWER | C_UPPER)))
        i++;
    return i == n && i > l && i - l <= 2;
}

/* #rgb, #rrggbb, #rrggbbaa */
static bool colour(const unsigned char *v, size_t n)
{
    if (n != 4 && n != 5 && n != 7 && n != 9)
        return false;
    for (size_t i = 1; i < n; i++)
        if (!(cls[v[i]] & C_HEX) && !(v[i] >= 'A' && v[i] <= 'F'))
            return false;
    return true;
}

static bool not_a_value(const unsigned char *v, size_t n, const unsigned char *id, size_t idn)
{
    if (n < 3)
        return true;
    switch (v[0]) {
    case '$': case '{': case '<': case '[': case '(': case '&': case '|': case '>':
    case '\\': case '@':
        return true;
    case '!':           /* YAML tags: !vault, !Ref (a word); "!k2x..." is a password */
        if (letters_only(v + 1, n - 1))
            return true;
        break;
    case '%':           /* formats and references: %s, %-10s, %(pw)s, %{pw}, %APPDATA% */
        if (v[1] == '(' || v[1] == '{' || v[1] == '%' || v[n - 1] == '%' || printf_format(v, n) ||
            !chosen(v + 1, n - 1))
            return true;
        break;
    case '#':           /* a comment, an interpolation, a colour */
        if (v[1] == '{' || colour(v, n) || !chosen(v + 1, n - 1))
            return true;
        break;
    case '*':           /* a mask, a glob, a dereference */
        if (!chosen(v + 1, n - 1))
            return true;
        break;
    default:
        break;
    }
    bool same = true;
    for (size_t i = 1; i < n && same; i++)
        same = v[i] == v[0];
    if (same)
        return true;            /* "****", "xxxx" */
    for (size_t i = 0; i < sizeof not_values / sizeof not_values[0]; i++)
        if (eq_nocase(v, n, not_values[i]))
            return true;
    if (n == idn) {
        bool eq = true;
        for (size_t i = 0; i < n && eq; i++)
            eq = lower(v[i]) == lower(id[i]);
        if (eq)
            return true;        /* password=password: a name, as in code */
    }
    if (has(v, n, "${") || has(v, n, "{{") || format_s(v, n) || has(v, n, "...") || has(v, n, "<your") ||
        has(v, n, "YOUR_") || has(v, n, "your_") || has(v, n, "your-") || has(v, n, "xxxx") || has(v, n, "XXXX"))
        return true;
    return false;
}

/* A call, an index, a type argument, a member or scope access ("f(x)",
 * "env[", "Option<String>", "a->b", "A::b"). */
static inline bool call_like(const unsigned char *v, size_t n, size_t i)
{
    return v[i] == '(' || v[i] == ')' || v[i] == '[' || v[i] == ']' || v[i] == '<' || v[i] == '>' ||
           (i + 1 < n && ((v[i] == '-' && v[i + 1] == '>') || (v[i] == ':' && v[i + 1] == ':')));
}

/* A path of names without digits: process.env.DB_PASSWORD, settings.token. */
static bool name_path(const unsigned char *v, size_t n)
{
    bool dot = false;
    for (size_t i = 0; i < n; i++) {
        if (v[i] == '.')
            dot = true;
        else if (!(cls[v[i]] & (C_LOWER | C_UPPER | C_US)))
            return false;
    }
    return dot;
}

/* A value that only code would assign: a name or a path of names
 * ("req.body.password", "apiKey"), or a call. */
static bool code_like(const unsigned char *v, size_t n)
{
    unsigned k = 0;
    for (size_t i = 0; i < n; i++) {
        if (call_like(v, n, i))
            return true;
        k |= cls[v[i]];
        if (!(ident(v[i]) || v[i] == '.' || v[i] == ':' || v[i] == '-'))
            return false;       /* a symbol: not a name */
    }
    return !(k & C_DIGIT);
}

/* Where an unquoted value ends: at a space or quote; inline (a query or
 * connection string, code) also at , ; ) } ] < > and an '&' before a name (on a line of its own,
 * as in .env and YAML, those are part of the value). */
static inline bool ends_value(const unsigned char *t, size_t len, size_t i, bool inl)
{
    unsigned char c = t[i];
    if (c <= ' ' || c == '"' || c == '\'' || c == '`')
        return true;
    if (inl && (c == ',' || c == ';' || c == ')' || c == '}' || c == ']' || c == '<' || c == '>'))
        return true;
    /* '&' before a name is a query's separator ("pw=x&user=y"); before a
     * space, a comma or the end it is the value's own symbol */
    if (inl && c == '&')
        return i + 1 < len && ident(t[i + 1]);
    /* a JSON escape: "\n", "\"" (the text is JSON) */
    return c == '\\' && i + 1 < len &&
           (t[i + 1] == 'n' || t[i + 1] == 'r' || t[i + 1] == 't' || t[i + 1] == '"' || t[i + 1] == '\\');
}

/* The end of the unquoted value run from i, remembered: a later value
 * starting inside the same run ends at the same place. */
static size_t value_run(struct st *st, size_t i, bool inl)
{
    if (i >= st->vfrom[inl] && i < st->vend[inl])
        return st->vend[inl];
    size_t e = i;
    while (e < st->len && !ends_value(st->t, st->len, e, inl))
        e++;
    st->vfrom[inl] = i;
    st->vend[inl] = e;
    return e;
}

/* A number: no token or key (ms_per_token: 0.5), though a PIN may be one. */
static bool numeric(const unsigned char *v, size_t n, bool *digits_only)
{
    bool d = false, only = true;
    for (size_t i = 0; i < n; i++) {
        if (v[i] >= '0' && v[i] <= '9')
            d = true;
        else if (v[i] == '.' || v[i] == '-' || v[i] == '+' || v[i] == 'e')
            only = false;
        else
            return false;
    }
    *digits_only = only;
    return d;
}

/* Digits or symbols (not a word, nor words joined by - _ .): what a
 * generated or chosen secret has, and a name or a placeholder has not. */
static bool has_digit_or_symbol(const unsigned char *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!(cls[v[i]] & (C_LOWER | C_UPPER)) && v[i] != '-' && v[i] != '_' && v[i] != '.')
            return true;
    return false;
}

static inline bool quote_at(const unsigned char *t, size_t len, size_t i)
{
    /* '\n' is a quote too: the JSON view writes a string's edges as line breaks */
    return t[i] == '"' || t[i] == '\'' || t[i] == '`' || t[i] == '\n' || (t[i] == '\\' && i + 1 < len && t[i + 1] == '"');
}

/* A value whose letters change case the way a generated string's do: both
 * cases, and three or more words of one or two letters when it is read as
 * camelCase ("rgSvosSeVz-KozVOZB": rg Svos Se Vz Koz VOZB). Names read as
 * few long words (process.env.DB_PASSWORD, req.body.userId, apiKey). */
static bool random_like(const unsigned char *v, size_t n)
{
    unsigned k = 0;
    int short_words = 0;
    size_t w = 0;                       /* letters in the current word */
    for (size_t i = 0; i <= n; i++) {
        unsigned c = i < n ? cls[v[i]] : 0;
        bool letter = c & (C_LOWER | C_UPPER);
        /* a word starts at an upper-case letter after a lower-case one, and
         * at the last capital of a run before a lower-case letter ("XMLParser") */
        bool starts = letter && i > 0 && (c & C_UPPER) &&
                      ((cls[v[i - 1]] & C_LOWER) ||
                       ((cls[v[i - 1]] & C_UPPER) && i + 1 < n && (cls[v[i + 1]] & C_LOWER)));
        if (!letter || starts) {
            short_words += w > 0 && w <= 2;
            w = 0;
        }
        if (letter) {
            w++;
            k |= c;
        }
    }
    return (k & C_LOWER) && (k & C_UPPER) && short_words >= 3;
}

/* An environment variable's name: upper case, digits and '_'. */
static bool env_name(const unsigned char *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!(cls[v[i]] & (C_UPPER | C_DIGIT | C_US)))
            return false;
    return n > 0;
}

/* An assignment r_assign reads: the name [is, q), its context and the separator after it;
 * the value starts at i. */
struct assign {
    size_t is, q, i;
    bool quoted_name;           /* "name" / 'name' (or a name on a JSON "\n" line of its own) */
    bool own_line;              /* the name starts a line (or a list item, an argument "--name") */
    bool line;                  /* ... or a query or connection string's part */
    bool spaced;                /* blanks around the separator */
    bool colon;                 /* ':' or ":=", not '=' */
    bool env;                   /* NAME=value with an environment variable's name */
};

/* The name ending at [s, a->q): false when it does not end there; else sets a->is and
 * the context before it. */
static bool assign_name(const unsigned char *t, size_t len, size_t s, struct assign *a)
{
    size_t q = a->q;
    /* the name ends here: not "tokens", "password_hash", "token.length" */
    if (q < len && (ident(t[q]) || ((t[q] == '-' || t[q] == '.') && q + 1 < len && alnum(t[q + 1]))))
        return false;
    size_t is = s;
    while (is > 0 && s - is < 64 && (ident(t[is - 1]) || t[is - 1] == '-' || t[is - 1] == '.'))
        is--;
    /* the context before the name: the start of a line (or of a JSON "\n"),
     * an argument "--name", a query or connection string's separator */
    size_t b = is;
    bool quoted_name = false;
    if (b > 0 && (t[b - 1] == '"' || t[b - 1] == '\'' || t[b - 1] == '\n')) {
        quoted_name = t[b - 1] != '\n' || (q < len && t[q] == '\n');
        if (t[b - 1] != '\n')
            b--;
        if (b > 0 && t[b - 1] == '\\')
            b--;
    }
    while (b > 0 && is - b < 32 && (t[b - 1] == ' ' || t[b - 1] == '\t'))
        b--;
    if (b >= 7 && !memcmp(t + b - 7, "export ", 7))
        b -= 7;
    bool own_line = b == 0 || t[b - 1] == '\n' || t[b - 1] == '\r' || (b >= 2 && t[b - 2] == '\\' && t[b - 1] == 'n') ||
                    (b >= 2 && t[b - 2] == '-' && t[b - 1] == ' ') || t[is] == '-';
    bool line = own_line || t[b - 1] == ';' || t[b - 1] == '?' || t[b - 1] == '&';
    a->is = is;
    a->quoted_name = quoted_name;
    a->own_line = own_line;
    a->line = line;
    return true;
}

/* The separator after the name (=, =>, :, :=, with the name's closing quote and blanks):
 * false when there is none (or ==, =~, ::, or nothing after it); else sets a->i to the
 * value's first byte, a->spaced and a->colon. */
static bool assign_sep(const unsigned char *t, size_t len, struct assign *a)
{
    size_t q = a->q;
    size_t i = q;
    if (i < len && (t[i] == '"' || t[i] == '\'' || t[i] == '`' || t[i] == '\n'))
        i++;
    else if (i + 1 < len && t[i] == '\\' && t[i + 1] == '"')
        i += 2;
    bool spaced = false;
    while (i < len && i - q < 16 && (t[i] == ' ' || t[i] == '\t')) {
        i++;
        spaced = true;
    }
    if (i >= len)
        return false;
    bool colon = false;
    if (t[i] == '=') {
        if (i + 1 < len && (t[i + 1] == '=' || t[i + 1] == '~'))
            return false;
        i += 1 + (i + 1 < len && t[i + 1] == '>');
    } else if (t[i] == ':') {
        if (i + 1 < len && t[i + 1] == ':')
            return false;
        colon = true;
        i += 1 + (i + 1 < len && t[i + 1] == '=');
    } else {
        return false;
    }
    while (i < len && i - q < 48 && (t[i] == ' ' || t[i] == '\t')) {
        i++;
        spaced = true;
    }
    if (i >= len)
        return false;
    a->i = i;
    a->spaced = spaced;
    a->colon = colon;
    return true;
}

/* A quoted value at a->i: the secret (added), or 0 when it is not one. */
static int assign_quoted(struct st *st, const struct rule *r, const struct assign *a)
{
    const unsigned char *t = st->t;
    size_t len = st->len, i = a->i, is = a->is, q = a->q;
    bool digits_only;
    bool esc = t[i] == '\\';
    unsigned char qc = esc ? '"' : t[i];
    size_t v = i + (esc ? 2 : 1);
    /* the value on the line after its opening quote */
    if (qc != '\n' && v < len && t[v] == '\r')
        v++;
    if (qc != '\n' && v < len && t[v] == '\n')
        v++;
    size_t lim = v + 256 < len ? v + 256 : len;
    const unsigned char *c = memchr(t + v, qc, lim - v);
    if (!c)
        return 0;
    size_t ve = (size_t)(c - t);
    if (esc && (ve == v || t[ve - 1] != '\\'))
        return 0;
    if (esc)
        ve--;
    for (size_t k = v; k < ve; k++)
        if (t[k] <= ' ')
            return 0;       /* prose ("Enter your password"), not a secret */
    if (not_a_value(t + v, ve - v, t + is, q - is))
        return 0;
    if (numeric(t + v, ve - v, &digits_only) && !(digits_only && r->cls))
        return 0;
    /* code: a name of the language (not a quoted key) given a literal,
     * in an argument list or an object */
    size_t after = ve + (esc ? 2 : 1);
    bool code = !a->quoted_name && (!a->own_line || (after < len && (t[after] == ',' || t[after] == ';' || t[after] == ')')));
    if (code && !a->env && !has_digit_or_symbol(t + v, ve - v) && !random_like(t + v, ve - v))
        return 0;
    return add(st, v, ve);
}

/* An unquoted value at a->i: the secret (added), or 0 when it is not one. */
static int assign_bare(struct st *st, const struct rule *r, const struct assign *a)
{
    const unsigned char *t = st->t;
    size_t len = st->len, i = a->i, is = a->is, q = a->q;
    bool digits_only;
    size_t ve = value_run(st, i, !a->own_line);
    if (ve - i > 256)
        return 0;
    /* on a line of its own, a value that ends with , or ; is code's */
    bool code_end = false;
    while (ve > i && (t[ve - 1] == ',' || t[ve - 1] == ';')) {
        ve--;
        code_end = true;
    }
    if (not_a_value(t + i, ve - i, t + is, q - is))
        return 0;
    if (numeric(t + i, ve - i, &digits_only) && !(digits_only && r->cls))
        return 0;
    /* Unquoted: a config line's value (NAME=value, name: value to the end
     * of the line), else only what cannot be a name in code. */
    size_t ee = ve + code_end;
    bool eol = ee >= len || t[ee] == '\n' || t[ee] == '\r' || t[ee] == ';' || t[ee] == '&' ||
               (t[ee] == '\\' && ee + 1 < len && (t[ee + 1] == 'n' || t[ee + 1] == 'r')) ||
               (t[ee] == ' ' && (ee + 1 >= len || t[ee + 1] == '#' || t[ee + 1] == '\n'));
    bool config = (a->line || a->env) && (eol || a->env) && !code_end && (a->colon || !a->spaced);
    if (config) {
        for (size_t k = i; k < ve; k++)
            if (call_like(t + i, ve - i, k - i))
                return 0;
        if (name_path(t + i, ve - i) && !random_like(t + i, ve - i))
            return 0;
    } else if ((code_like(t + i, ve - i) || !has_digit_or_symbol(t + i, ve - i)) && !random_like(t + i, ve - i)) {
        return 0;
    }
    return add(st, i, ve);
}

/* The name ending at [s, q) (a trigger at its end) assigned a value: the
 * value is the secret. Forms: NAME=value (.env, shell, URL query,
 * connection strings), name: value (YAML, HTTP headers), "name": "value"
 * (JSON), name = "value" / name := "value" / 'name' => 'value' (code).
 * A value in code needs digits or symbols: `apiKey: 'unused'`,
 * `token = accessToken` name no secret. */
static int r_assign(struct st *st, const struct rule *r, size_t s, size_t q)
{
    const unsigned char *t = st->t;
    size_t len = st->len;
    struct assign a = {.q = q};
    if (!assign_name(t, len, s, &a) || !assign_sep(t, len, &a))
        return 0;
    /* NAME=value with an environment variable's name (upper case, no
     * spaces): an assignment wherever it stands ("DB_PASSWORD=x ./run.sh",
     * POSTGRES_PASSWORD="x" in a sentence), whatever the value's letters */
    a.env = !a.colon && !a.spaced && t[q] == '=' && env_name(t + a.is, q - a.is);
    return quote_at(t, len, a.i) ? assign_quoted(st, r, &a) : assign_bare(st, r, &a);
}

/* ---- Scan ---- */

static int on_hit(unsigned int id, unsigned long long from, unsigned long long to, unsigned int flags,
                  void *ctx)
{
    struct st *st = ctx;
    (void)from;
    (void)flags;
    const struct rule *r = &rules[id];
    size_t q = (size_t)to, s = q - strlen(r->lit);
    if (r->left && s > 0 && alnum(st->t[s - 1]))
        return 0;
    switch (r->kind) {
    case R_PREFIX: return r_prefix(st, r, s, q);
    case R_SENDGRID: return r_sendgrid(st, s, q);
    case R_WEBHOOK: return r_webhook(st, q);
    case R_AWS_ID: return r_aws(st, s, q);
    case R_BASIC: return r_basic(st, q);
    case R_ASSIGN: return r_assign(st, r, s, q);
    case R_BLOCK: return r_block(st, r, s, q);
    case R_AZURE: return r_azure(st, s, q);
    default: return 0;
    }
}

int sw_pii_secret_db(hs_database_t **db)
{
    const char *res[N_RULES];
    unsigned flags[N_RULES], ids[N_RULES];
    char buf[N_RULES][64];
    hs_compile_error_t *cerr = NULL;
    hs_platform_info_t plat;
    pthread_once(&cls_once, cls_init);
    for (size_t i = 0; i < N_RULES; i++) {
        /* the literal as a regex: every byte escaped */
        const char *l = rules[i].lit;
        size_t k = 0;
        for (; *l && k + 4 < sizeof buf[i]; l++) {
            if (!alnum((unsigned char)*l))
                buf[i][k++] = '\\';
            buf[i][k++] = *l;
        }
        buf[i][k] = '\0';
        res[i] = buf[i];
        flags[i] = rules[i].caseless ? HS_FLAG_CASELESS : 0;
        ids[i] = (unsigned)i;
    }
    if (hs_compile_multi(res, flags, ids, (unsigned)N_RULES, HS_MODE_BLOCK, sw_hsx_platform(&plat), db, &cerr) != HS_SUCCESS) {
        hs_free_compile_error(cerr);
        return SW_EINVAL;
    }
    return SW_OK;
}

int sw_pii_secret_scan(const hs_database_t *db, hs_scratch_t *scratch, const unsigned char *t,
                       size_t len, int (*addf)(void *ud, size_t s, size_t e), void *ud)
{
    struct st st = {.t = t, .len = len, .add = addf, .ud = ud, .aws_key_s = SIZE_MAX};
    if (len == 0)
        return SW_OK;
    if (len > 0xffffffffu)
        return SW_ETOOBIG;
    hs_error_t hr = sw_hsx_scan(db, (const char *)t, (unsigned)len, scratch, on_hit, &st);
    if (hr == HS_SCAN_TERMINATED)
        return st.rc ? st.rc : SW_ENOMEM;
    return hr == HS_SUCCESS ? SW_OK : hr == HS_NOMEM ? SW_ENOMEM : SW_EINVAL;
}
