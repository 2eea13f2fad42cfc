/* Unit tests of the secret rules (src/pii/secret.c and the secret patterns
 * of detect.c): each rule finds exactly the secret (the value of an
 * assignment, not its name) as coding agents meet it (.env files, YAML,
 * JSON, code, shell, HTTP headers, credential files), private key blocks
 * are masked whole (header to footer, or to the end when cut short, also
 * with JSON's "\n" escapes and on one line), code that merely names a
 * secret is no secret, and this repository's own tree scans clean outside
 * the files that plant secrets on purpose. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <dirent.h>
#include <sys/stat.h>

#include "common/buf.h"
#include "common/err.h"
#include "pii/pii.h"

static struct sw_pii_engine *E;

static int setup(void **state)
{
    (void)state;
    char err[256];
    int rc = sw_pii_engine_new(NULL, 0, &E, err, sizeof err);
    if (rc)
        fprintf(stderr, "%s\n", err);
    return rc;
}

static int teardown(void **state)
{
    (void)state;
    sw_pii_engine_free(E);
    return 0;
}

/* ---- Helpers ---- */

/* The secrets found in text, joined by '|'. */
struct found {
    const char *t;
    char out[8192];
    size_t n;
};

static int on_secret(void *ud, const struct sw_pii_span *sp)
{
    struct found *f = ud;
    if (sp->type != SW_PII_SECRET)
        return 0;
    int k = snprintf(f->out + f->n, sizeof f->out - f->n, "%s%.*s", f->n ? "|" : "", (int)sp->len, f->t + sp->start);
    if (k > 0)
        f->n += (size_t)k < sizeof f->out - f->n ? (size_t)k : sizeof f->out - f->n - 1;
    return 0;
}

static const char *secrets(const char *t, int json)
{
    static struct found f;
    f.t = t;
    f.n = 0;
    f.out[0] = '\0';
    int rc = json ? sw_pii_scan_json_text(E, t, strlen(t), on_secret, &f)
                  : sw_pii_scan_text(E, t, strlen(t), on_secret, &f);
    assert_int_equal(rc, SW_OK);
    return f.out;
}

static uint32_t seed = 20261201u;

static unsigned rnd(void)
{
    seed = seed * 1103515245u + 12345u;
    return seed >> 8;
}

/* n random bytes of the alphabet, as a provider generates a token body */
static void fill(char *o, size_t n, const char *alpha)
{
    size_t a = strlen(alpha);
    for (size_t i = 0; i < n; i++)
        o[i] = alpha[rnd() % a];
    o[n] = '\0';
}

static const char *const ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
static const char *const HEX = "0123456789abcdef";
static const char *const B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static void b64enc(const char *in, char *out)
{
    static const char al[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t n = strlen(in), k = 0;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)(unsigned char)in[i] << 16;
        if (i + 1 < n)
            v |= (uint32_t)(unsigned char)in[i + 1] << 8;
        if (i + 2 < n)
            v |= (unsigned char)in[i + 2];
        out[k++] = al[(v >> 18) & 63];
        out[k++] = al[(v >> 12) & 63];
        out[k++] = i + 1 < n ? al[(v >> 6) & 63] : '=';
        out[k++] = i + 2 < n ? al[v & 63] : '=';
    }
    out[k] = '\0';
}

/* ---- Assignments: the value, not the name ---- */

static void test_assignments(void **state)
{
    (void)state;
    static const struct {
        const char *text, *want;
        int json;
    } cases[] = {
        {"DB_PASSWORD=hunter2!Winter2024\nDB_HOST=db.internal", "hunter2!Winter2024", 0},
        {"DB_PASSWORD=Tr0ub4dor&3", "Tr0ub4dor&3", 0},
        {"export GITHUB_TOKEN=\"4f9c2a7e81d3b6\"", "4f9c2a7e81d3b6", 0},
        {"SMTP_PASS=quietmorning", "quietmorning", 0},
        {"redis:\n  password: correcthorse\n  port: 6379", "correcthorse", 0},
        {"database:\n  password: \"p@ss w0rd\"\n", "", 0},      /* a quoted value with a space: prose */
        {"{\"client_id\": \"web\", \"client_secret\": \"Zq8-vT3rLw_9pXk\"}", "Zq8-vT3rLw_9pXk", 1},
        {"{\"args\": \"{\\\"password\\\":\\\"Lettuce-42\\\"}\"}", "Lettuce-42", 1},
        {"[default]\naws_access_key_id = AKIAQ3EGRN7W2XK5YTZL\naws_secret_access_key = 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\n",
         "AKIAQ3EGRN7W2XK5YTZL|9dQe7/RtV2mXc+Lp0bNz4KsWf8HuJy1GaEo3TiQv", 0},
        {"Server=db1;Database=shop;User Id=sa;Password=Str0ng!Pass;Encrypt=true", "Str0ng!Pass", 0},
        {"DefaultEndpointsProtocol=https;AccountName=shopdata;AccountKey=Xk3v9QpL2mN8rT5wY7zB1cD4fG6hJ0kM3nP5qR7sT9vW1xZ3aC5eG7iK9mO1qS3uW5yA7cE9gI1kM3oQ5sU7wY9aBQ==;EndpointSuffix=core.windows.net",
         "Xk3v9QpL2mN8rT5wY7zB1cD4fG6hJ0kM3nP5qR7sT9vW1xZ3aC5eG7iK9mO1qS3uW5yA7cE9gI1kM3oQ5sU7wY9aBQ==", 0},
        {"curl 'https://api.example.com/v1/items?limit=5&access_token=a81f2c9d0e&x=1'", "a81f2c9d0e", 0},
        {"mysql -u root --password=s3cr3t-db shop", "s3cr3t-db", 0},
        {"PGPASSWORD=Winter2024 psql -h db -U app", "Winter2024", 0},
        {"$config = ['password' => 'Sommer#2023'];", "Sommer#2023", 0},
        {"cfg := Config{Password: \"Kx9-mmq2\"}", "Kx9-mmq2", 0},
        {"X-Api-Key: 7c1e4b9a22f04d6e", "7c1e4b9a22f04d6e", 0},
        {"PIN_PASSWORD=482913", "482913", 0},
        {"{\"env\": \"DB_PASSWORD=kite-runner-7\\nDEBUG=1\"}", "kite-runner-7", 1},
        /* an environment variable's assignment in a sentence, quoted or
         * not, and a generated value that reads as words of one or two
         * letters; "%s" between letters is part of a password */
        {"SMTP_PASS=GZKnc_ClPwQJkLsu Meine Angaben lauten", "GZKnc_ClPwQJkLsu", 0},
        {"I miei dati sono POSTGRES_PASSWORD=\"jzJDaBGa_W-fInlc\", grazie.", "jzJDaBGa_W-fInlc", 0},
        {"Mis datos son POSTGRES_PASSWORD = rgSvosSeVz-KozVOZB, gracias.", "rgSvosSeVz-KozVOZB", 0},
        {"Meine Angaben lauten DJANGO_SECRET_KEY=cJeXdjPEh.gGrjjun, danke.", "cJeXdjPEh.gGrjjun", 0},
        {"\"jwt_secret\": \"*tP25v%sFjHdSgFA\"", "*tP25v%sFjHdSgFA", 0},
        {"smtp_pass: %sDMiWZHyPFU*HC0Xe", "%sDMiWZHyPFU*HC0Xe", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *got = secrets(cases[i].text, cases[i].json);
        if (strcmp(got, cases[i].want))
            fail_msg("%s\n  want [%s]\n  got  [%s]", cases[i].text, cases[i].want, got);
    }
}

/* Code that names a secret without holding one, and words that only look
 * like the triggers. */
static void test_not_secrets(void **state)
{
    (void)state;
    static const char *const texts[] = {
        "password = get_password()",
        "token = request.headers.get(\"Authorization\")",
        "const token = req.headers.authorization;",
        "interface User {\n  token: string;\n  password: string;\n}",
        "max_tokens=4096",
        "{\"max_tokens\": 4096, \"token_type\": \"bearer\"}",
        "password: ${DB_PASSWORD}",
        "api_key = os.environ[\"OPENAI_API_KEY\"]",
        "self.secret = secret",
        "if password == confirm:",
        "password_hash = bcrypt.hash(pw)",
        "secret_name: app-secrets",
        "WWW-Authenticate: Basic realm=\"api\"",
        "Basic usage: run make and then make test",
        "  password: process.env.DB_PASSWORD,",
        "a key-value store keeps the token counts",
        "token: Option<String>,",
        "password: \"<your password>\"",
        "API_KEY=your_api_key_here",
        "\"password\": \"\"",
        "token_count = 3",
        "let secret = Secret::new(bytes);",
        "password: ********",
        "fn token(&self) -> &str",
        "#define SECRET_MAX 64",
        "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA\n-----END PUBLIC KEY-----",
        "-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIEAgAAuTANBgkqhkiG9w0BAQUFADBaMQswCQYDVQQG\n-----END CERTIFICATE-----",
        "git log 9fceb02d0ae598e95dc970b74767f19372d61af8 AKIA",
        "The SKU is SKAB-1029 and the key-ring holds three keys.",
        "ssh -o PasswordAuthentication=no host",
        "the secret: nothing beats tests",
        "password = req.body.userId",
        "DB_PASSWORD=process.env.DB_PASSWORD",
        "SECRET_KEY = settings.SECRET_KEY",
        "token = this.props.apiKey",
        "password: \"%s\"",
        "DB_PASSWORD=%s",
        "password: \"user_%s_v2\"",
    };
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        const char *got = secrets(texts[i], 0);
        if (got[0])
            fail_msg("%s\n  found [%s]", texts[i], got);
    }
}

/* ---- Provider tokens ---- */

static void test_tokens(void **state)
{
    (void)state;
    struct {
        const char *prefix, *alpha;
        size_t n;
    } k[] = {
        {"npm_", ALNUM, 36},       {"glptt-", ALNUM, 20},       {"gldt-", ALNUM, 20},
        {"glrt-", ALNUM, 20},      {"xapp-1-A0", ALNUM, 40},    {"whsec_", ALNUM, 32},
        {"SK", HEX, 32},           {"key-", HEX, 32},           {"shpat_", HEX, 32},
        {"dop_v1_", HEX, 64},      {"dapi", HEX, 32},           {"GOCSPX-", ALNUM, 28},
        {"lin_api_", ALNUM, 40},   {"gsk_", ALNUM, 52},         {"sk-or-v1-", HEX, 64},
        {"pypi-AgEIcHlwaS5vcmc", ALNUM, 60}, {"rubygems_", HEX, 48},
    };
    char tok[256], text[512], want[256];
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++)
        for (int round = 0; round < 20; round++) {
            size_t p = strlen(k[i].prefix);
            memcpy(tok, k[i].prefix, p);
            /* a body with both letters and digits, as almost every random one has */
            do
                fill(tok + p, k[i].n, k[i].alpha);
            while (!strpbrk(tok + p, "0123456789") || !strpbrk(tok + p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"));
            snprintf(text, sizeof text, "here is the token %s, keep it", tok);
            snprintf(want, sizeof want, "%s", tok);
            const char *got = secrets(text, 0);
            if (strcmp(got, want))
                fail_msg("%s\n  want [%s]\n  got  [%s]", text, want, got);
        }
    /* SendGrid: SG.<22>.<43> */
    char a[32], b[64];
    fill(a, 22, ALNUM);
    fill(b, 43, ALNUM);
    snprintf(tok, sizeof tok, "SG.%s.%s", a, b);
    snprintf(text, sizeof text, "SENDGRID=%s", tok);
    assert_string_equal(secrets(text, 0), tok);
    snprintf(text, sizeof text, "sendgrid.api_key(\"%s\")", tok);
    assert_string_equal(secrets(text, 0), tok);
    /* webhooks: the path is the secret */
    fill(a, 24, ALNUM);
    snprintf(text, sizeof text, "post to https://hooks.slack.com/services/T03ABCD12/B05EFGH34/%s now", a);
    snprintf(want, sizeof want, "services/T03ABCD12/B05EFGH34/%s", a);
    assert_string_equal(secrets(text, 0), want);
}

/* AWS: the key id with its secret key, written after it or before it. */
static void test_aws_pair(void **state)
{
    (void)state;
    char key[48], text[512], want[128];
    for (int round = 0; round < 50; round++) {
        do
            fill(key, 40, B64);
        while (!strpbrk(key, "0123456789") || !strpbrk(key, "abcdefghijklmnopqrstuvwxyz") ||
               !strpbrk(key, "ABCDEFGHIJKLMNOPQRSTUVWXYZ"));
        snprintf(text, sizeof text, "{\"AccessKeyId\": \"ASIAZ7QK3M2XW5RT8YPL\", \"SecretAccessKey\": \"%s\"}", key);
        snprintf(want, sizeof want, "ASIAZ7QK3M2XW5RT8YPL|%s", key);
        assert_string_equal(secrets(text, 0), want);
        snprintf(text, sizeof text, "use AKIAQ3EGRN7W2XK5YTZL and %s for the bucket", key);
        snprintf(want, sizeof want, "AKIAQ3EGRN7W2XK5YTZL|%s", key);
        assert_string_equal(secrets(text, 0), want);
        snprintf(text, sizeof text, "%s goes with AKIAQ3EGRN7W2XK5YTZL", key);
        snprintf(want, sizeof want, "%s|AKIAQ3EGRN7W2XK5YTZL", key);
        assert_string_equal(secrets(text, 0), want);
    }
    /* a key without a digit (one in a thousand), led by '+', as the
     * `aws configure set` commands write the pair */
    assert_string_equal(
        secrets("aws configure set aws_access_key_id AKIATT22TGAX5OSJXM7O && aws configure set "
                "aws_secret_access_key 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, ok", 0),
        "AKIATT22TGAX5OSJXM7O|+aWpvmWsdBIHeap/FoickNTQqSYbzwYhSr/LGadB");
    /* a 40-byte base64 run far from any key id is no key */
    assert_string_equal(secrets("sha: 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", 0), "");
}

/* Basic credentials: base64 of user:password; Bearer tokens. */
static void test_basic_bearer(void **state)
{
    (void)state;
    static const char *const creds[] = {"alice:Tr0ub4dor&3", "deploy:s3cret", ":only-a-password", "svc-ci@corp:Winter 2024!"};
    char b[128], text[256];
    for (size_t i = 0; i < sizeof creds / sizeof creds[0]; i++) {
        b64enc(creds[i], b);
        snprintf(text, sizeof text, "curl -H 'Authorization: Basic %s' https://ci.example.com", b);
        assert_string_equal(secrets(text, 0), b);
        snprintf(text, sizeof text, "{\"headers\": {\"authorization\": \"basic %s\"}}", b);
        assert_string_equal(secrets(text, 1), b);
    }
    /* base64 of text without a colon is no credential */
    b64enc("hello world", b);
    snprintf(text, sizeof text, "Basic %s", b);
    assert_string_equal(secrets(text, 0), "");
    assert_string_equal(secrets("Authorization: Bearer 9f2kQ7xLm3Vt8Rz1Wp5Yc", 0), "9f2kQ7xLm3Vt8Rz1Wp5Yc");
}

/* Connection strings with passwords: the user:password part. */
static void test_connection_strings(void **state)
{
    (void)state;
    assert_string_equal(secrets("DATABASE_URL=postgres://app:S3cure!pw@db.internal:5432/shop", 0), "app:S3cure!pw@db.internal");  /* with the e-mail-like rest */
    assert_string_equal(secrets("mongodb+srv://admin:kT9x2mQ@cluster0.ab1cd.mongodb.net/test", 0), "admin:kT9x2mQ@cluster0.ab1cd.mongodb.net");
    assert_string_equal(secrets("REDIS_URL=redis://:Qx7-pL2m@cache:6379/0", 0), ":Qx7-pL2m");
    assert_string_equal(secrets("mysql://root:hunter2@localhost/app", 0), "root:hunter2");
    assert_string_equal(secrets("see https://example.com/docs and http://localhost:8080/", 0), "");
    /* a template's slot is not a password; a password that only starts with '%' is */
    assert_string_equal(secrets("url = \"postgres://%s:%s@%s/%s\" % (user, pw, host, db)", 0), "");
    assert_string_equal(secrets("DSN = 'mysql://app:%(password)s@db/app'", 0), "");
    assert_string_equal(secrets("fmt.Sprintf(\"redis://:%1$s@%2$s\", pw, addr)", 0), "");
    assert_string_equal(secrets("mysql://root:p%40ssw0rd@localhost/app", 0), "root:p%40ssw0rd");
    /* a password typed with a raw '@': the user info ends at the last '@' */
    assert_string_equal(secrets("postgres://admin:P@ssw0rd@db:5432/app", 0), "admin:P@ssw0rd");
    assert_string_equal(secrets("redis://:s3cr@t@cache:6379 and bob@example.com", 0), ":s3cr@t");
}

/* ---- Private keys ---- */

static const char *const KEY_KINDS[] = {"RSA PRIVATE KEY", "EC PRIVATE KEY", "DSA PRIVATE KEY", "OPENSSH PRIVATE KEY",
                                        "ENCRYPTED PRIVATE KEY", "PRIVATE KEY", "PGP PRIVATE KEY BLOCK"};

static void key_body(char *o, size_t lines, const char *nl)
{
    size_t k = 0;
    for (size_t i = 0; i < lines; i++) {
        fill(o + k, 64, B64);
        k += 64;
        k += (size_t)sprintf(o + k, "%s", nl);
    }
    o[k] = '\0';
}

static void test_private_keys(void **state)
{
    (void)state;
    static char body[4096], block[12288], text[16384];
    static const char *const nls[] = {"\n", "\\n", " "};
    for (size_t kk = 0; kk < sizeof KEY_KINDS / sizeof KEY_KINDS[0]; kk++)
        for (size_t n = 0; n < 3; n++) {
            key_body(body, 12, nls[n]);
            snprintf(block, sizeof block, "-----BEGIN %s-----%s%s-----END %s-----", KEY_KINDS[kk], nls[n], body, KEY_KINDS[kk]);
            /* whole, and the text after it is left */
            snprintf(text, sizeof text, "my key:%s%s%sthanks", nls[n], block, nls[n]);
            assert_string_equal(secrets(text, 0), block);
            /* in a JSON string (literal \n escapes) */
            if (n == 1) {
                snprintf(text, sizeof text, "{\"path\": \"id\", \"content\": \"%s\", \"n\": 1}", block);
                assert_string_equal(secrets(text, 1), block);
            }
            /* cut short: to the end of the text */
            snprintf(text, sizeof text, "-----BEGIN %s-----%s%s", KEY_KINDS[kk], nls[n], body);
            assert_string_equal(secrets(text, 0), text);
        }
    /* PuTTY */
    key_body(body, 6, "\n");
    snprintf(block, sizeof block,
             "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: eddsa-key-20240101\nPublic-Lines: 2\n%s"
             "Private-Lines: 1\n%sPrivate-MAC: 5a3c0c71d1b5ba3e1d8f5c8a2e6f9b7d4c1a0e3f5b7d9c1e3a5c7e9b1d3f5a7c",
             body, body);
    snprintf(text, sizeof text, "%s\nbye", block);
    assert_string_equal(secrets(text, 0), block);
    /* SSH2 (RFC 4716 form of a private key) */
    snprintf(block, sizeof block, "---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----\nComment: \"k\"\n%s---- END SSH2 ENCRYPTED PRIVATE KEY ----", body);
    snprintf(text, sizeof text, "%s\nbye", block);
    assert_string_equal(secrets(text, 0), block);
}

/* Masked whole: the masked text keeps nothing of the key. */
static void test_private_key_masked(void **state)
{
    (void)state;
    static char body[4096], text[8192];
    key_body(body, 20, "\\n");
    snprintf(text, sizeof text,
             "{\"role\":\"tool\",\"content\":\"-----BEGIN OPENSSH PRIVATE KEY-----\\n%s-----END OPENSSH PRIVATE KEY-----\\n\"}", body);
    struct sw_pii_map *m = sw_pii_map_new();
    struct sw_buf out;
    sw_buf_init(&out, 1 << 20);
    assert_int_equal(sw_pii_mask_json_text(E, m, text, strlen(text), &out, NULL), SW_OK);
    char *o = strndup(out.ptr, out.len);
    assert_string_equal(o, "{\"role\":\"tool\",\"content\":\"[SECRET_1]\\n\"}");
    free(o);
    sw_buf_free(&out);
    sw_pii_map_free(m);
}

/* ---- Every form a secret reaches a field in ---- */

/* Whether spans of any type cover [s, e) of the text. */
struct cover {
    unsigned char on[1024];
};

static int on_cover(void *ud, const struct sw_pii_span *sp)
{
    struct cover *c = ud;
    for (size_t i = sp->start; i < sp->start + sp->len && i < sizeof c->on; i++)
        c->on[i] = 1;
    return 0;
}

struct out {
    char t[1024];
    size_t n;
    size_t ps[2], pe[2];        /* the protected pieces, as written */
    size_t np;
};

static void put(struct out *o, const char *s, size_t n)
{
    assert_true(o->n + n < sizeof o->t);
    memcpy(o->t + o->n, s, n);
    o->n += n;
    o->t[o->n] = '\0';
}

/* s as inside a JSON string: quotes, backslashes and line breaks escaped */
static void put_json(struct out *o, const char *s, bool at_plus)
{
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            put(o, "\\", 1), put(o, s, 1);
        else if (*s == '\n')
            put(o, "\\n", 2);
        else if (at_plus && *s == '@')
            put(o, "\\u0040", 6);
        else if (at_plus && *s == '+')
            put(o, "\\u002b", 6);
        else
            put(o, s, 1);
    }
}

enum variant { V_PLAIN, V_TEXT, V_ZW, V_ESC, N_VARIANTS };
static const char *const variant_name[] = {"plain", "text", "zw", "esc"};

/* A protected piece in variant v: as it is, with two zero-width
 * characters inside (at a third and two thirds), or JSON-escaped. */
static void put_piece(struct out *o, const char *p, enum variant v, unsigned k)
{
    static const char *const zw[] = {"\xe2\x80\x8b", "\xe2\x80\x8c", "\xe2\x80\x8d", "\xe2\x81\xa0", "\xef\xbb\xbf"};
    size_t n = strlen(p);
    o->ps[o->np] = o->n;
    if (v == V_ESC) {
        put_json(o, p, true);
    } else if (v == V_ZW) {
        size_t a = n / 3, b = 2 * n / 3;
        put(o, p, a);
        put(o, zw[k % 5], 3);
        put(o, p + a, b - a);
        put(o, zw[(k + 2) % 5], 3);
        put(o, p + b, n - b);
    } else {
        put(o, p, n);
    }
    o->pe[o->np++] = o->n;
}

/* Secrets as an agent reads them out of a repository or a user pastes them,
 * each with the file's syntax around it (pre, post: not protected), in
 * every form it reaches a field in: as it is, in a sentence, with
 * zero-width characters inside, JSON-escaped in tool-call arguments on
 * the line after a "\n". An AWS key pair protects its two keys (mid is
 * the syntax between them). Every byte of each protected piece is masked. */
static void test_secret_forms_masked_whole(void **state)
{
    (void)state;
    static const struct {
        const char *fmt, *pre, *v, *mid, *v2, *post;
        bool no_esc;
    } cases[] = {
        {"sk", "", "sk-proj-OLnVlBg78lsGuMCQpXfN1GTbbbCctS8rNZPRHB39sEFh0TIy", NULL, NULL, "", 0},
        {"akia", "", "AKIARIHBX56X7PSRSM46", NULL, NULL, "", 0},
        {"ghp", "", "ghp_Zen7Ko12uw2gz3LRHttvty1VO45i5gAo6Bkf", NULL, NULL, "", 0},
        {"jwt", "", "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiI0MjkwOTkxMiIsIm5hbWUiOiJsdWthcyBsZWZldnJlIiwiaWF0IjoxNzc5Njc2NDMxfQ.NnqimgoPaPBxxecfvKiMNXKfleGZEZmRTovP_0tGCTp", NULL, NULL, "", 0},
        {"aws-pair", "AWS_ACCESS_KEY_ID=", "ASIAN76GGPMGBXNSLN6Y", "\nAWS_SECRET_ACCESS_KEY=", "VPXNCGZtI1TkRrQmExXmMJAlMLUNaJdGybpO7go1", "", 0},
        {"aws-pair", "export AWS_ACCESS_KEY_ID=", "AKIAGXRS4KYZIESY3P26", " AWS_SECRET_ACCESS_KEY=", "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", "", 0},
        {"aws-pair", "\"AccessKeyId\": \"", "ASIAIGUU5EEM5HCNAIPD", "\",\n  \"SecretAccessKey\": \"", "2RV2obJMKlULhbY66DLjxYG4FVaSoqCyHYHMTpoI", "\"", 0},
        {"aws-pair", "aws configure set aws_access_key_id ", "ASIATSHJQIUOYESS3RXY", " && aws configure set aws_secret_access_key ", "lDl2NP9YSvulX0SifqzEXKk2LVb3Azgr0iKoTEdO", "", 0},
        {"basic", "authorization: basic ", "YW5uYXNjaG1pZHQ6RWZyaXhBIzhCIyFFUS1iVXNuQQ==", NULL, NULL, "", 0},
        {"basic", "\"Authorization\": \"Basic ", "bG90dGVfam9uZXM6b3JiaXQzMjk1WEROVA==", NULL, NULL, "\"", 0},
        {"basic", "curl -H \"Authorization: Basic ", "Z2l1bGlhX2pvaG5zb246dmVsdmV0MDIxNUxTTkY=", NULL, NULL, "\" https://api.internal/v1/", 0},
        {"basic", "Authorization: Basic ", "ZW1tYV9iYWtrZXI6TWFwbGVfT3JiaXQwNjk/", NULL, NULL, "", 0},
        {"env", "JWT_SECRET=\"", "harbor7734JCVR", NULL, NULL, "\"", 0},
        {"env", "\"secret_key\": \"", "zRRPM51-sLSv*P8p", NULL, NULL, "\"", 0},
        {"env", "\"django_secret_key\": \"", "Zomer-Maple859?", NULL, NULL, "\"", 0},
        {"env", "export SMTP_PASS='", "!jhrMGam1I9_.2tUqVY9e", NULL, NULL, "'", 0},
        {"env", "APP_SECRET=", "%enUqpPu8m#TRxpZaW1hCLX", NULL, NULL, "", 0},
        {"env", "DB_PASSWORD = ", "!sbyy!gsgI%i326OO", NULL, NULL, "", 0},
        {"env", "POSTGRES_PASSWORD=", "Copper.Maple2207&", NULL, NULL, "", 0},
        {"env", "admin_password: ", "*Kq7vX2mLp9_tR4w", NULL, NULL, "", 0},
        {"npm", "//registry.npmjs.org/:_authToken=", "npm_LNg0oBb19l0GCtGhLowoiNeVpylZj8PhHGtg", NULL, NULL, "", 0},
        {"sendgrid", "", "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", NULL, NULL, "", 0},
        {"azure", "client_secret: ", "Mok2Q~vwgXgRrMFMIB4kHQS-r1uai0Uv-maH.CGt", NULL, NULL, "", 0},
        {"azure", "AZURE_CLIENT_SECRET=", "3pO1Q~8NpTbuGL6YH-q_tOvIkWTS6Gj-1BQnwQjY", NULL, NULL, "", 0},
        {"azure", "", "nls7Q~46ZmusN.VX4hE0QZ7c56k_8B5qly-wHbV3", NULL, NULL, "", 0},
        {"azure", "", "IGO8Q~SlJOU8gxsCb~TbSQPTSb.vP1MZ9Be2GhCy", NULL, NULL, "", 0},
        {"azure", "DefaultEndpointsProtocol=https;AccountName=moreaustore;AccountKey=", "u7T2kq9PzXW4bN+e1YvLr8sA0cJmQ3hDfG6oKiV5wRnB/tZyE2xUa7lMpC9dHs4gJk0qWfOeN1bLvYr3TzXiPm6S8==", NULL, NULL, ";EndpointSuffix=core.windows.net", 0},
        {"github", "", "ghu_44ixzz6sdn0wUbGXnhdqdHXZk2hEDsNwVAzC", NULL, NULL, "", 0},
        {"github", "", "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T0uDpO7k", NULL, NULL, "", 0},
        {"slack", "", "xoxp-57589849135-812166281887-ZvDC3ldceBMJ7B9jTAUKSipX", NULL, NULL, "", 0},
        {"slack", "https://hooks.slack.com/services/", "TCYW1EBH8/BZ59P6KDMCQ/Dsf19LVXa2pvrbgyeFVMQa3T", NULL, NULL, "", 0},
        {"stripe", "", "sk_live_JDLhbNSX9QLSwGmwoVZYj2UA", NULL, NULL, "", 0},
        {"conn", "Server=tcp:moreau.database.windows.net,1433;Database=app;User ID=sa;Password=", "velvet2600FMFB", NULL, NULL, ";Encrypt=True;", 0},
        /* a URL's password on the line after "user:" (the e-mail-like
         * pattern of detect.c): not in this table's esc form */
        {"conn", "mysql://root:", "Canal-Zomer1843!", NULL, NULL, "@mysql:3306/app", 1},
        {"conn", "DATABASE_URL=postgresql://app:", "WinterWinter5496!", NULL, NULL, "@localhost/app", 1},
    };
    static const char *const sentence[][2] = {
        {"Please contact me at ", " tomorrow."}, {"Mijn gegevens: ", ", graag bevestigen."},
        {"Meine Angaben lauten ", ", danke."}, {"Voici mes coordonn\xc3\xa9" "es : ", ". Merci !"},
        {"Mis datos son ", ", gracias."}, {"I miei dati sono ", ", grazie."},
    };
    size_t bad = 0;
    char report[4096];
    size_t rn = 0;
    report[0] = '\0';
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        for (unsigned v = 0; v < N_VARIANTS; v++) {
            if (v == V_ESC && cases[i].no_esc)
                continue;
            struct out o = {.n = 0};
            const char *const *sn = sentence[(i + v) % 6];
            if (v == V_ESC) {
                put(&o, "{\"cmd\":\"", 8);
                put_json(&o, cases[i].pre, false);
                put(&o, "\\n", 2);
            } else {
                if (v != V_PLAIN)
                    put(&o, sn[0], strlen(sn[0]));
                put(&o, cases[i].pre, strlen(cases[i].pre));
            }
            put_piece(&o, cases[i].v, (enum variant)v, (unsigned)i);
            if (cases[i].mid) {
                if (v == V_ESC)
                    put_json(&o, cases[i].mid, false);
                else
                    put(&o, cases[i].mid, strlen(cases[i].mid));
                put_piece(&o, cases[i].v2, (enum variant)v, (unsigned)i + 1);
            }
            if (v == V_ESC) {
                put_json(&o, cases[i].post, false);
                put(&o, "\"}", 2);
            } else {
                put(&o, cases[i].post, strlen(cases[i].post));
                if (v != V_PLAIN)
                    put(&o, sn[1], strlen(sn[1]));
            }
            struct cover c;
            memset(&c, 0, sizeof c);
            int rc = v == V_ESC ? sw_pii_scan_json_text(E, o.t, o.n, on_cover, &c)
                                : sw_pii_scan_text(E, o.t, o.n, on_cover, &c);
            assert_int_equal(rc, SW_OK);
            bool whole = true;
            for (size_t p = 0; p < o.np; p++)
                for (size_t k = o.ps[p]; k < o.pe[p]; k++)
                    whole = whole && c.on[k];
            if (!whole) {
                bad++;
                int w = snprintf(report + rn, sizeof report - rn, "  %s (%s): %s\n", cases[i].fmt, variant_name[v], o.t);
                if (w > 0 && (size_t)w < sizeof report - rn)
                    rn += (size_t)w;
            }
        }
    }
    if (bad)
        fail_msg("%zu secrets not masked whole:\n%s", bad, report);
}

/* ---- This repository's tree scans clean ---- */

/* Files that plant secrets on purpose (tests of the detector, corpora). */
static const char *const planted[] = {
    "tests/unit/test_pii.c",
    "tests/unit/test_pii_secret.c",
    "tests/unit/test_pii_linear.c",
    "tests/unit/test_pii_offsets.c",
    "tests/unit/test_pii_cache.c",      /* a planted token among the cached spans */
    "tests/pii/",
    "tests/fuzz/corpus/",
    "tests/unit/test_config.c",         /* credentials in URLs refused in the config */
    "tests/unit/test_config_ct.c",      /* constant-time key comparison */
    "tests/unit/test_config_aws.c",     /* AWS keys in the config, the env and shared files */
    "tests/unit/test_state_redis.c",    /* Redis URLs with passwords */
    "tests/it/anthropic.test.mjs",      /* canary values */
    "tests/it/bedrock.test.mjs",        /* llmsim's AWS test keys, a shared credentials file */
    "tests/it/gemini.test.mjs",         /* the test Entra secret, llmsim's issued tokens */
    "tests/unit/test_oauth.c",          /* token answers and a key's PEM markers as test data */
    "tests/it/cli.test.mjs",            /* Basic credentials, keys in error messages */
    "tests/it/gateway.test.mjs",        /* a cloud key in the test config */
    "tests/it/operations.test.mjs",     /* canary values */
    "tests/it/rediss.test.mjs",         /* the test Redis user's password */
    "tests/it/privacy_echo.test.mjs",   /* a password in a backend URL of the test config */
    "tests/it/privacy_surfaces.test.mjs", /* a planted API key */
    "tests/it/responses_privacy.test.mjs", /* a planted API key */
    "bench/soak.mjs",                   /* a cloud key in the soak config */
    NULL,
};

static bool is_planted(const char *path)
{
    for (size_t i = 0; planted[i]; i++) {
        size_t k = strlen(planted[i]);
        if (planted[i][k - 1] == '/' ? !strncmp(path, planted[i], k) : !strcmp(path, planted[i]))
            return true;
    }
    return false;
}

struct tree {
    size_t files, bytes, found;
    char report[4096];
    size_t rn;
};

struct where {
    const char *path, *t;
    struct tree *tr;
};

static int on_tree_span(void *ud, const struct sw_pii_span *sp)
{
    struct where *w = ud;
    if (sp->type != SW_PII_SECRET)
        return 0;
    size_t line = 1;
    for (size_t i = 0; i < sp->start; i++)
        line += w->t[i] == '\n';
    w->tr->found++;
    /* the place, never the value */
    int k = snprintf(w->tr->report + w->tr->rn, sizeof w->tr->report - w->tr->rn, "  %s:%zu (%zu bytes)\n", w->path,
                     line, sp->len);
    if (k > 0 && (size_t)k < sizeof w->tr->report - w->tr->rn)
        w->tr->rn += (size_t)k;
    return 0;
}

static void scan_tree(const char *dir, struct tree *tr)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.' || !strcmp(de->d_name, "node_modules"))
            continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        struct stat st;
        if (lstat(path, &st))
            continue;
        if (S_ISDIR(st.st_mode)) {
            scan_tree(path, tr);
            continue;
        }
        if (!S_ISREG(st.st_mode) || st.st_size == 0 || st.st_size > (8 << 20) || is_planted(path))
            continue;
        FILE *f = fopen(path, "rb");
        if (!f)
            continue;
        char *t = malloc((size_t)st.st_size);
        size_t n = t ? fread(t, 1, (size_t)st.st_size, f) : 0;
        fclose(f);
        if (!t || memchr(t, '\0', n)) {         /* binary */
            free(t);
            continue;
        }
        struct where w = {path, t, tr};
        assert_int_equal(sw_pii_scan_text(E, t, n, on_tree_span, &w), SW_OK);
        tr->files++;
        tr->bytes += n;
        free(t);
    }
    closedir(d);
}

static void test_tree_scans_clean(void **state)
{
    (void)state;
    static const char *const roots[] = {"src", "docs", "tests", "examples", "bench", "scripts", "tools"};
    struct tree tr = {0};
    for (size_t i = 0; i < sizeof roots / sizeof roots[0]; i++)
        scan_tree(roots[i], &tr);
    print_message("tree: %zu files, %zu bytes scanned, %zu secrets\n", tr.files, tr.bytes, tr.found);
    if (tr.found)
        fail_msg("secrets found in the tree (a rule without precision, or a file to list in planted[]):\n%s", tr.report);
    assert_true(tr.files > 100);    /* run from the repository's root */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_assignments),
        cmocka_unit_test(test_not_secrets),
        cmocka_unit_test(test_tokens),
        cmocka_unit_test(test_aws_pair),
        cmocka_unit_test(test_basic_bearer),
        cmocka_unit_test(test_connection_strings),
        cmocka_unit_test(test_private_keys),
        cmocka_unit_test(test_private_key_masked),
        cmocka_unit_test(test_secret_forms_masked_whole),
        cmocka_unit_test(test_tree_scans_clean),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
