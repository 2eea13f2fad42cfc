/* Unit tests of the PII engine (src/pii): detection per type (positives and
 * hard negatives), validators, masking with stable placeholders, unmasking
 * (whole, JSON-escaped in tool-call arguments, streamed with every split),
 * the map bound (fail closed), custom types with each validator. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <pthread.h>

#include "common/buf.h"
#include "common/err.h"
#include "pii/pii.h"
#include "pii/detect.h"
#include "pii/map.h"
#include "pii/phone.h"
#include "pii/validate.h"
#include "pii/view.h"

static struct sw_pii_engine *E;

static int setup(void **state)
{
    (void)state;
    char err[256];
    struct sw_pii_custom c[] = {
        {"employee_id", "EMP-[0-9]{6}", NULL},
        {"loyalty_card", "LC[0-9]{12}", "luhn"},
        {"account_ref", "REF[A-Z]{2}[0-9]{2}[A-Z0-9]{8}", "mod97"},
        {"member-no", "M#[0-9]{9}", "elfproef"},
        {"quoted", "Q<[^>]{1,20}>", "none"},
    };
    int rc = sw_pii_engine_new(c, sizeof c / sizeof c[0], &E, err, sizeof err);
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

/* "type:value|type:value" of what the engine finds in text. */
struct found {
    const char *text;
    char out[1024];
};

static int on_span(void *ud, const struct sw_pii_span *sp)
{
    struct found *f = ud;
    size_t l = strlen(f->out);
    snprintf(f->out + l, sizeof f->out - l, "%s%s:%.*s", l ? "|" : "",
             sw_pii_type_name(E, sp->type), (int)sp->len, f->text + sp->start);
    return SW_OK;
}

static const char *find(const char *text)
{
    static struct found f;
    f.text = text;
    f.out[0] = '\0';
    assert_int_equal(sw_pii_scan_text(E, text, strlen(text), on_span, &f), SW_OK);
    return f.out;
}

struct det_case {
    const char *text;
    const char *want;       /* "" for nothing */
};

static const struct det_case det_cases[] = {
    /* e-mail */
    {"mail john.doe@example.com now", "email:john.doe@example.com"},
    {"<a_b+tag@sub.example.co.uk>", "email:a_b+tag@sub.example.co.uk"},
    {"...x@example.org.", "email:x@example.org"},
    {"user@localhost and @handle and a@b", ""},
    {"john..doe@example.com", ""},
    /* phone */
    {"bel 06-12345678.", "phone:06-12345678"},
    {"bel 020-1234567 nu", "phone:020-1234567"},
    {"+31 6 12345678", "phone:+31 6 12345678"},
    {"(020) 123 4567", "phone:(020) 123 4567"},
    {"+31 (0)20 123 4567", "phone:+31 (0)20 123 4567"},
    {"US (415) 555-0132 or 415-555-0132", "phone:(415) 555-0132|phone:415-555-0132"},
    {"+1 415 555 0132", "phone:+1 415 555 0132"},
    {"+44 20 7946 0958", "phone:+44 20 7946 0958"},
    {"on 2024-01-15 at 10:30", ""},
    {"123-456-7890 is fake", ""},
    {"order 10612345678", ""},
    /* IBAN */
    {"NL91ABNA0417164300", "iban:NL91ABNA0417164300"},
    {"IBAN NL91 ABNA 0417 1643 00.", "iban:NL91 ABNA 0417 1643 00"},
    {"DE89370400440532013000", "iban:DE89370400440532013000"},
    {"NL91ABNA0417164301", ""},                 /* mod-97 fails */
    {"NL91ABNA04171643001", ""},                /* wrong length for NL */
    {"XX91ABNA0417164300", ""},                 /* unknown country */
    /* cards */
    {"card 4111 1111 1111 1111 exp", "card:4111 1111 1111 1111"},
    {"4111-1111-1111-1111", "card:4111-1111-1111-1111"},
    {"5500005555555559", "card:5500005555555559"},
    {"amex 3782 822463 10005", "card:3782 822463 10005"},
    {"4111 1111 1111 1111 2024", "card:4111 1111 1111 1111"},
    {"4111111111111112", ""},                   /* Luhn fails */
    {"41111111111111111111111", ""},            /* too long */
    {"0000 0000 0000 0000", ""},
    {"1234567812345670", ""},                   /* Luhn ok, no card starts with 1 */
    /* BSN */
    {"BSN 111222333", "bsn:111222333"},
    {"burgerservicenummer: 123456782", "bsn:123456782"},
    {"formulier 1234.56.782", "bsn:1234.56.782"},
    {"klantnummer 123456782", ""},              /* no context */
    {"BSN 123456789", ""},                      /* 11-proef fails */
    {"BSN 1234567820", ""},                     /* ten digits */
    /* SSN */
    {"SSN 123-45-6789", "ssn:123-45-6789"},
    {"id 536-22-9110 on file", "ssn:536-22-9110"},
    {"social security number 536229110", "ssn:536229110"},
    {"000-12-3456 666-12-3456 912-12-3456 123-00-4567 123-45-0000", ""},
    {"078-05-1120", ""},
    {"ref 536229110", ""},
    /* IPv4 */
    {"server 192.168.1.10 down", "ipv4:192.168.1.10"},
    {"http://10.0.0.1:8080/x", "ipv4:10.0.0.1"},
    {"ip 84.12.3.4.", "ipv4:84.12.3.4"},
    {"v1.2.3.4 version 10.0.0.1 firmware 2.4.10.1", ""},
    {"1.2.3.4.5 and 300.1.1.1 and 1.02.3.4", ""},
    {"Chrome/120.0.6099.129", ""},
    {"127.0.0.1 0.0.0.0 255.255.255.0", ""},
    /* IPv6 */
    {"ping 2001:db8::8a2e:370:7334", "ipv6:2001:db8::8a2e:370:7334"},
    {"[2001:db8::2]:443", "ipv6:2001:db8::2"},
    {"fe80::1ff:fe23:4567:890a%eth0", "ipv6:fe80::1ff:fe23:4567:890a"},
    {"2001:0db8:85a3:0000:0000:8a2e:0370:7334", "ipv6:2001:0db8:85a3:0000:0000:8a2e:0370:7334"},
    {"::ffff:192.0.2.128 mapped", "ipv6:::ffff:192.0.2.128"},
    {"ip:2001:db8::1", "ipv6:2001:db8::1"},
    {"12:30:45 and std::vector and a::b and ::1", ""},
    {"MAC 00:1a:2b:3c:4d:5e", ""},
    /* secrets */
    {"key sk-proj-AbCdEf1234567890abcdefGHIJ", "secret:sk-proj-AbCdEf1234567890abcdefGHIJ"},
    /* a random body without a digit (1 in ~500): the prefix is enough (canary test) */
    {"key sk-proj-bRsPTAcbWSuaMDPNtJYcYZVNZGSDHTqjUSfVNRaw", "secret:sk-proj-bRsPTAcbWSuaMDPNtJYcYZVNZGSDHTqjUSfVNRaw"},
    {"sk-ant-api03-AbC123dEf456GhI789jKl012MnO", "secret:sk-ant-api03-AbC123dEf456GhI789jKl012MnO"},
    {"AKIAIOSFODNN7EXAMPLE", "secret:AKIAIOSFODNN7EXAMPLE"},
    {"ghp_abcdefghijklmnopqrstuvwxyz0123456789", "secret:ghp_abcdefghijklmnopqrstuvwxyz0123456789"},
    {"github_pat_11ABCDEFG0123456789_abcdefghijklmnop", "secret:github_pat_11ABCDEFG0123456789_abcdefghijklmnop"},
    {"xoxb-123456789012-abcdefghij", "secret:xoxb-123456789012-abcdefghij"},
    {"AIzaSyA1234567890abcdefghijklmnopqrstuv", "secret:AIzaSyA1234567890abcdefghijklmnopqrstuv"},
    {"glpat-abcdefghij1234567890", "secret:glpat-abcdefghij1234567890"},
    {"Authorization: Bearer abc123DEF456ghi789JKL", "secret:abc123DEF456ghi789JKL"},
    {"postgres://admin:s3cr3t@db:5432/app", "secret:admin:s3cr3t"},
    {"-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\nok",
     "secret:-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----"},
    {"-----BEGIN EC PRIVATE KEY-----\nMHcCAQEE cut", "secret:-----BEGIN EC PRIVATE KEY-----\nMHcCAQEE cut"},
    {"pip install sk-learn; the task-force-alpha-bravo-charlie; risk-assessment-framework-2024x", ""},
    {"The bearer of bad news. Bearer token expired", ""},
    {"curl -H 'authorization: bearer  eyZ0b2tlbiI6IjEyMzQ1Njc4OTAi==' x", "secret:eyZ0b2tlbiI6IjEyMzQ1Njc4OTAi=="},
    {"xBearer Zm9vYmFyYmF6cXV4MTIzNDU2 Bearer short1 Bearer ab/cd+ef.gh~ij_kl-mn9", "secret:ab/cd+ef.gh~ij_kl-mn9"},
    {"https://example.com/path and http://user@host", ""},
    /* custom */
    {"emp EMP-123456.", "employee_id:EMP-123456"},
    {"LC123456789015 LC123456789016", "loyalty_card:LC123456789015"},
    {"M#123456782 M#123456789", "member-no:M#123456782"},
    {"Q<a \"b\" \\c>", "quoted:Q<a \"b\" \\c>"},
    /* merge: the URL credential swallows the e-mail-looking part */
    {"smtp://bob:pw1@mail.example.com", "secret:bob:pw1@mail.example.com"},
    /* plain prose */
    {"The router spills overflow to the cloud when the queue wait exceeds 800 ms; "
     "version 2.1.0 shipped on 2024-05-01 with 16 slots.", ""},
};

/* The whole-text built-ins are found from literal triggers, their extent in
 * C; the candidates must be the ones the patterns' own regexes give with
 * the leftmost start of match (vectorscan), on strings built around each
 * pattern's edges: every literal, body runs of each class at lengths around
 * the minimums, boundary bytes, overlapping and repeated triggers. */
struct cands { size_t n; unsigned v[4096][3]; };

static void cand_add(void *ud, unsigned pat, size_t s, size_t e)
{
    struct cands *c = ud;
    if (c->n < 4096) {
        c->v[c->n][0] = pat;
        c->v[c->n][1] = (unsigned)s;
        c->v[c->n][2] = (unsigned)e;
    }
    c->n++;
}

static int cand_cmp(const void *a, const void *b)
{
    return memcmp(a, b, 3 * sizeof(unsigned));
}

static void test_literal_triggers_match_regexes(void **state)
{
    (void)state;
    static const char *const seg[] = {
        "sk-", "sk-proj-", "sk-ant-api03-", "sk_live_", "sk_test_", "rk_live_", "AKIA", "ASIA",
        "ghp_", "ghs_", "github_pat_", "xoxb-", "xoxr-", "AIza", "glpat-", "hf_", "eyJ", ".eyJ",
        ".", "-----BEGIN ", "RSA ", "PRIVATE KEY", "-----", "-", "://", "https", "a+b.c-d",
        "user", ":", "@", "/", " ", "\n", "\t", "\v", "\f", "\r", "_", "+", "=", "x", "9", "Z",
        "\xc3\xa9", "\"", "(", "github_pat_github_pat_", "sk-sk-", "AKIAAKIA", "eyJeyJ",
        "eyJhbGciOi", ".eyJzdWIiOi", ".abcdefgh", "abcdefg", "-----BEGIN RSA PRIVATE KEY-----",
        "-----BEGIN PRIVATE KEY-----", "-----BEGIN  EC 9 PRIVATE KEY-----", "https://u:p@",
        "://user:p:w@", "@example.com", "@a-b.co", "ftp://", "u:p@h"};
    static const char *const cls[] = {
        "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-",
        "aZ9_", "a-Z9", "ABC 0 9"};
    static const int lens[] = {1, 7, 8, 9, 10, 11, 15, 16, 17, 19, 20, 21, 22, 23,
                               29, 30, 31, 34, 35, 36, 40, 41, 52};
    static struct cands a, b;
    unsigned seed = 12345;
    char t[2048];
    size_t total = 0, per[64] = {0};
    for (int round = 0; round < 120000; round++) {
        size_t n = 0;
        int parts = 1 + (int)((seed = seed * 1103515245u + 12345u) >> 16) % 12;
        for (int k = 0; k < parts && n < sizeof t - 128; k++) {
            unsigned r = (seed = seed * 1103515245u + 12345u) >> 8;
            if (r % 7 == 0) {
                /* eyJ B . eyJ B . B, B of 7-9 or 12 bytes, '.' or '_' between */
                static const char *const jp[] = {"eyJ", ".eyJ", "."};
                for (int j = 0; j < 3; j++) {
                    seed = seed * 1103515245u + 12345u;
                    const char *g = (seed >> 20) % 9 ? jp[j] : "_";
                    memcpy(t + n, g, strlen(g));
                    n += strlen(g);
                    int l = (int)((seed >> 16) % 4);
                    l = l == 3 ? 12 : 7 + l;
                    for (int i = 0; i < l; i++) {
                        seed = seed * 1103515245u + 12345u;
                        t[n++] = cls[2][(seed >> 16) % strlen(cls[2])];
                    }
                }
            } else if (r % 3) {
                const char *g = seg[(r / 3) % (sizeof seg / sizeof seg[0])];
                memcpy(t + n, g, strlen(g));
                n += strlen(g);
            } else {
                const char *c = cls[(r / 3) % (sizeof cls / sizeof cls[0])];
                int l = lens[(r / 64) % (sizeof lens / sizeof lens[0])];
                for (int i = 0; i < l; i++) {
                    seed = seed * 1103515245u + 12345u;
                    t[n++] = c[(seed >> 16) % strlen(c)];
                }
            }
        }
        a.n = b.n = 0;
        /* the scan's own path, and the literal database (used without AVX2) */
        assert_int_equal(sw_pii_text_candidates(E, t, n, round & 1 ? 0 : 2, cand_add, &a), SW_OK);
        assert_int_equal(sw_pii_text_candidates(E, t, n, 1, cand_add, &b), SW_OK);
        assert_true(a.n <= 4096);
        qsort(a.v, a.n, sizeof a.v[0], cand_cmp);
        qsort(b.v, b.n, sizeof b.v[0], cand_cmp);
        if (a.n != b.n || memcmp(a.v, b.v, a.n * sizeof a.v[0])) {
            fprintf(stderr, "candidates differ (%zu vs %zu regex) on: %.*s\n", a.n, b.n, (int)n, t);
            for (size_t i = 0; i < a.n || i < b.n; i++)
                fprintf(stderr, "  %u %u %u | %u %u %u\n", i < a.n ? a.v[i][0] : 0, i < a.n ? a.v[i][1] : 0,
                        i < a.n ? a.v[i][2] : 0, i < b.n ? b.v[i][0] : 0, i < b.n ? b.v[i][1] : 0,
                        i < b.n ? b.v[i][2] : 0);
            fail();
        }
        total += a.n;
        for (size_t i = 0; i < a.n; i++)
            per[a.v[i][0] % 64]++;
    }
    /* the strings do hold matches of every one of these patterns */
    size_t kinds = 0;
    for (int i = 0; i < 64; i++)
        kinds += per[i] > 20;
    assert_true(kinds >= 13);
    assert_true(total > 20000);
}

/* A megabyte of one trigger repeated ("sk-sk-sk-...", "eyJeyJ...",
 * "a://a://..."): the same candidates as the regexes, in linear time (a
 * body run walked once per trigger would take minutes here). */
static void test_literal_triggers_repeated(void **state)
{
    (void)state;
    static const char *const unit[] = {"sk-", "eyJ", "github_pat_", "xoxb-", "glpat-", "a://u:p",
                                       "-----BEGIN ", "u:p@"};
    size_t n = 1 << 20;
    char *t = malloc(n);
    struct cands *a = malloc(sizeof *a), *b = malloc(sizeof *b);
    assert_non_null(t);
    assert_non_null(a);
    assert_non_null(b);
    for (size_t u = 0; u < sizeof unit / sizeof unit[0]; u++) {
        size_t l = strlen(unit[u]);
        for (size_t i = 0; i < n; i++)
            t[i] = unit[u][i % l];
        for (int mode = 0; mode <= 2; mode += 2) {
            a->n = b->n = 0;
            assert_int_equal(sw_pii_text_candidates(E, t, n, mode, cand_add, a), SW_OK);
            assert_int_equal(sw_pii_text_candidates(E, t, n, 1, cand_add, b), SW_OK);
            assert_true(a->n <= 4096);
            assert_int_equal(a->n, b->n);
            qsort(a->v, a->n, sizeof a->v[0], cand_cmp);
            qsort(b->v, b->n, sizeof b->v[0], cand_cmp);
            assert_memory_equal(a->v, b->v, a->n * sizeof a->v[0]);
        }
    }
    free(a);
    free(b);
    free(t);
}

static void test_detect_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof det_cases / sizeof det_cases[0]; i++) {
        const char *got = find(det_cases[i].text);
        if (strcmp(got, det_cases[i].want))
            fail_msg("case %zu \"%s\": want \"%s\", got \"%s\"", i, det_cases[i].text,
                     det_cases[i].want, got);
    }
}

/* The same table through the SSE2 pre-pass and the literal database (what
 * a CPU without AVX2 runs). */
static void test_detect_table_without_avx2(void **state)
{
    sw_pii_engine_set_avx2(E, 0);
    test_detect_table(state);
    sw_pii_engine_set_avx2(E, 1);
}

static void test_validators(void **state)
{
    (void)state;
    assert_true(sw_pii_luhn("4111111111111111", 16));
    assert_false(sw_pii_luhn("4111111111111112", 16));
    assert_true(sw_pii_luhn("79927398713", 11));
    assert_true(sw_pii_mod97("GB82WEST12345698765432", 22));
    assert_true(sw_pii_mod97("GB82 WEST 1234 5698 7654 32", 27));
    assert_true(sw_pii_mod97("gb82west12345698765432", 22));
    assert_false(sw_pii_mod97("GB82WEST12345698765433", 22));
    assert_false(sw_pii_mod97("GB82", 4));
    assert_true(sw_pii_elfproef("111222333", 9));
    assert_true(sw_pii_elfproef("123456782", 9));
    assert_false(sw_pii_elfproef("123456789", 9));
    assert_false(sw_pii_elfproef("000000000", 9));
    assert_false(sw_pii_elfproef("12345678", 8));
    assert_int_equal(sw_pii_iban_len('N', 'L'), 18);
    assert_int_equal(sw_pii_iban_len('Z', 'Z'), 0);
    assert_true(sw_pii_ssn_ok("123-45-6789", 11));
    assert_false(sw_pii_ssn_ok("666-45-6789", 11));
    assert_true(sw_pii_ipv4_ok("0.0.0.0", 7));
    assert_false(sw_pii_ipv4_ok("1.2.3", 5));
    assert_false(sw_pii_ipv4_ok("01.2.3.4", 8));
    assert_false(sw_pii_ipv4_ok("256.2.3.4", 9));
    static const char *v6ok[] = {"::1", "::", "1::", "1:2:3:4:5:6:7:8", "1::8", "::ffff:1.2.3.4",
                                 "1:2:3:4:5:6:1.2.3.4", "fe80::1:2", NULL};
    static const char *v6bad[] = {"1:2:3:4:5:6:7", "1:2:3:4:5:6:7:8:9", "1::2::3", ":1:2",
                                  "12345::1", "1:2:3:4:5:6:7:1.2.3.4", "g::1", "1:", NULL};
    for (const char **p = v6ok; *p; p++)
        if (!sw_pii_ipv6_ok(*p, strlen(*p)))
            fail_msg("ipv6 %s should be valid", *p);
    for (const char **p = v6bad; *p; p++)
        if (sw_pii_ipv6_ok(*p, strlen(*p)))
            fail_msg("ipv6 %s should be invalid", *p);
}

static void test_engine_errors(void **state)
{
    (void)state;
    struct sw_pii_engine *e = NULL;
    char err[256];
    struct sw_pii_custom bad_validator = {"x", "X[0-9]+", "crc32"};
    assert_int_equal(sw_pii_engine_new(&bad_validator, 1, &e, err, sizeof err), SW_EINVAL);
    assert_null(e);
    assert_non_null(strstr(err, "crc32"));
    struct sw_pii_custom bad_regex = {"x", "X[0-9", NULL};
    assert_int_equal(sw_pii_engine_new(&bad_regex, 1, &e, err, sizeof err), SW_EINVAL);
    assert_non_null(strstr(err, "\"x\""));
    struct sw_pii_custom builtin_name = {"email", "X[0-9]+", NULL};
    assert_int_equal(sw_pii_engine_new(&builtin_name, 1, &e, err, sizeof err), SW_EINVAL);
    struct sw_pii_custom bad_name = {"no spaces", "X[0-9]+", NULL};
    assert_int_equal(sw_pii_engine_new(&bad_name, 1, &e, err, sizeof err), SW_EINVAL);
    /* long names are fine; their tags are cut and stay distinct */
    struct sw_pii_custom longn[] = {{"a.very-long.custom_entity_name_number_one", "XA[0-9]{3}", NULL},
                                    {"a.very-long.custom_entity_name_number_two", "XB[0-9]{3}", NULL}};
    assert_int_equal(sw_pii_engine_new(longn, 2, &e, err, sizeof err), SW_OK);
    struct sw_pii_map *m = sw_pii_map_new();
    struct sw_buf b;
    sw_buf_init(&b, 1024);
    assert_int_equal(sw_pii_mask_text(e, m, "XA123 XB456", 11, &b, NULL), SW_OK);
    assert_string_equal(b.ptr, "[A_VERY_LONG_CUSTOM_ENTIT_1] [A_VERY_LONG_CUSTOM_ENTIT_2]");
    sw_buf_reset(&b);
    assert_int_equal(sw_pii_unmask_text(m, "[A_VERY_LONG_CUSTOM_ENTIT_2]", 28, 0, &b), SW_OK);
    assert_string_equal(b.ptr, "XB456");
    assert_string_equal(sw_pii_type_name(e, SW_PII_CUSTOM_BASE + 1), "a.very-long.custom_entity_name_number_two");
    sw_buf_free(&b);
    sw_pii_map_free(m);
    sw_pii_engine_free(e);
    struct sw_pii_custom empty = {"x", "a*", NULL};
    assert_int_equal(sw_pii_engine_new(&empty, 1, &e, err, sizeof err), SW_EINVAL);
    assert_int_equal(sw_pii_engine_new(NULL, 0, &e, err, sizeof err), SW_OK);
    assert_int_equal(sw_pii_type_count(e), SW_PII_CUSTOM_BASE);
    assert_string_equal(sw_pii_type_name(e, SW_PII_IBAN), "iban");
    assert_string_equal(sw_pii_type_name(e, 99), "unknown");
    sw_pii_engine_free(e);
    assert_string_equal(sw_pii_type_name(E, SW_PII_CUSTOM_BASE + 3), "member-no");
}

/* ---- Masking ---- */

static char *mask(struct sw_pii_map *m, const char *text, struct sw_pii_counts *c)
{
    struct sw_buf b;
    sw_buf_init(&b, 1 << 20);
    assert_int_equal(sw_pii_mask_text(E, m, text, strlen(text), &b, c), SW_OK);
    char *s = strdup(b.ptr ? b.ptr : "");
    sw_buf_free(&b);
    return s;
}

static char *unmask(const struct sw_pii_map *m, const char *text, int json)
{
    struct sw_buf b;
    sw_buf_init(&b, 1 << 20);
    assert_int_equal(sw_pii_unmask_text(m, text, strlen(text), json, &b), SW_OK);
    char *s = strdup(b.ptr ? b.ptr : "");
    sw_buf_free(&b);
    return s;
}

static void test_mask_stable(void **state)
{
    (void)state;
    struct sw_pii_map *m = sw_pii_map_new();
    struct sw_pii_counts c = {0};
    const char *in = "a@example.com, b@example.com, a@example.com; call 06-12345678 or "
                     "mail a@example.com. EMP-123456";
    char *out = mask(m, in, &c);
    assert_string_equal(out, "[EMAIL_1], [EMAIL_2], [EMAIL_1]; call [PHONE_1] or mail "
                             "[EMAIL_1]. [EMPLOYEE_ID_1]");
    assert_int_equal(c.n[SW_PII_EMAIL], 4);
    assert_int_equal(c.n[SW_PII_PHONE], 1);
    assert_int_equal(c.n[SW_PII_CUSTOM_BASE], 1);
    assert_int_equal(c.total, 6);
    assert_int_equal(sw_pii_map_size(m), 4);
    /* a second text shares the map: same value, same placeholder */
    char *out2 = mask(m, "again b@example.com", NULL);
    assert_string_equal(out2, "again [EMAIL_2]");
    /* placeholders are not PII themselves */
    assert_string_equal(find(out), "");
    char *back = unmask(m, out, 0);
    assert_string_equal(back, in);
    /* unknown or malformed placeholders stay as they are */
    char *other = unmask(m, "[EMAIL_9] [EMAIL_1 [email_1] [EMAIL_1]] [[EMAIL_2]", 0);
    assert_string_equal(other, "[EMAIL_9] [EMAIL_1 [email_1] a@example.com] [b@example.com");
    char *custom = unmask(m, "[MEMBER_NO_1]", 0);
    assert_string_equal(custom, "[MEMBER_NO_1]");
    free(out), free(out2), free(back), free(other), free(custom);
    sw_pii_map_free(m);
}

static void test_map_bound(void **state)
{
    (void)state;
    struct sw_pii_map *m = sw_pii_map_new();
    char v[32];
    const char *ph;
    size_t phl;
    for (int i = 0; i < SW_PII_MAP_MAX_ENTRIES; i++) {
        int n = snprintf(v, sizeof v, "u%d@example.com", i);
        assert_int_equal(sw_pii_map_put(m, SW_PII_EMAIL, "EMAIL", v, (size_t)n, &ph, &phl), SW_OK);
    }
    /* known values still resolve; a new one fails closed */
    assert_int_equal(sw_pii_map_put(m, SW_PII_EMAIL, "EMAIL", "u7@example.com", 14, &ph, &phl), SW_OK);
    assert_string_equal(ph, "[EMAIL_8]");
    assert_int_equal(sw_pii_map_put(m, SW_PII_EMAIL, "EMAIL", "new@example.com", 15, &ph, &phl),
                     SW_ETOOBIG);
    sw_pii_map_free(m);

    /* through mask_request: a body with too many distinct values is refused */
    json_t *msgs = json_array();
    struct sw_buf b;
    sw_buf_init(&b, 1 << 22);
    for (int i = 0; i <= SW_PII_MAP_MAX_ENTRIES; i++)
        assert_int_equal(sw_buf_appendf(&b, "u%d@example.com ", i), SW_OK);
    json_array_append_new(msgs, json_pack("{s:s, s:s}", "role", "user", "content", b.ptr));
    json_t *body = json_pack("{s:s, s:o}", "model", "m", "messages", msgs);
    m = sw_pii_map_new();
    struct sw_pii_counts c;
    assert_int_equal(sw_pii_mask_request(E, m, body, &c), SW_ETOOBIG);
    sw_pii_map_free(m);
    json_decref(body);
    sw_buf_free(&b);
}

/* ---- Requests and responses ---- */

static const char *REQ =
    "{\"model\":\"gpt-4o\",\"messages\":["
    "{\"role\":\"system\",\"content\":\"You help [EMAIL_1] users.\"},"
    "{\"role\":\"user\",\"content\":\"I am a@example.com, IBAN NL91ABNA0417164300\"},"
    "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"and 06-12345678\"},"
    "  {\"type\":\"image_url\",\"image_url\":{\"url\":\"https://x/a@example.com.png\"}}]},"
    "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"c1\",\"type\":\"function\","
    "  \"function\":{\"name\":\"lookup\",\"arguments\":\"{\\\"dsn\\\":\\\"postgres://u:p\\\\\\\"a\\\\\\\\ss@db/x\\\"}\"}}]},"
    "{\"role\":\"tool\",\"tool_call_id\":\"c1\",\"content\":\"found b@example.com\"}"
    "],\"metadata\":{\"owner\":\"c@example.com\"}}";

static void test_request_roundtrip(void **state)
{
    (void)state;
    json_error_t je;
    json_t *body = json_loads(REQ, 0, &je);
    if (!body)
        fail_msg("%s", je.text);
    struct sw_pii_counts c;
    assert_int_equal(sw_pii_scan_request(E, body, &c), SW_OK);
    /* not the model name; the http image URL and metadata are text like any other */
    assert_int_equal(c.n[SW_PII_EMAIL], 4);
    assert_int_equal(c.n[SW_PII_IBAN], 1);
    assert_int_equal(c.n[SW_PII_PHONE], 1);
    assert_int_equal(c.n[SW_PII_SECRET], 1);
    assert_int_equal(c.total, 7);
    assert_int_equal(c.binary, 0);

    /* the value of the secret holds a quote and a backslash */
    json_t *args0 = json_loads(json_string_value(json_object_get(json_object_get(json_array_get(
        json_object_get(json_array_get(json_object_get(body, "messages"), 3), "tool_calls"), 0),
        "function"), "arguments")), 0, NULL);
    assert_string_equal(json_string_value(json_object_get(args0, "dsn")), "postgres://u:p\"a\\ss@db/x");
    json_decref(args0);

    struct sw_pii_map *m = sw_pii_map_new();
    assert_int_equal(sw_pii_mask_request(E, m, body, &c), SW_OK);
    assert_int_equal(c.total, 7);
    json_t *msgs = json_object_get(body, "messages");
    /* "[EMAIL_1]" was in the request already: reserved, so the real one is 2 */
    assert_string_equal(json_string_value(json_object_get(json_array_get(msgs, 0), "content")),
                        "You help [EMAIL_1] users.");
    assert_string_equal(json_string_value(json_object_get(json_array_get(msgs, 1), "content")),
                        "I am [EMAIL_2], IBAN [IBAN_1]");
    assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(
                            json_array_get(msgs, 2), "content"), 0), "text")),
                        "and [PHONE_1]");
    const char *args = json_string_value(json_object_get(json_object_get(json_array_get(
        json_object_get(json_array_get(msgs, 3), "tool_calls"), 0), "function"), "arguments"));
    assert_string_equal(args, "{\"dsn\":\"postgres://[SECRET_1]@db/x\"}");
    assert_string_equal(json_string_value(json_object_get(json_array_get(msgs, 4), "content")),
                        "found [EMAIL_4]");
    assert_string_equal(json_string_value(json_object_get(json_object_get(
                            json_array_get(json_object_get(json_array_get(msgs, 2), "content"), 1),
                            "image_url"), "url")),
                        "https://x/[EMAIL_3]");
    assert_string_equal(json_string_value(json_object_get(json_object_get(body, "metadata"), "owner")),
                        "[EMAIL_5]");
    assert_string_equal(json_string_value(json_object_get(body, "model")), "gpt-4o");
    char *dump = json_dumps(body, JSON_COMPACT);
    assert_null(strstr(dump, "NL91"));
    assert_null(strstr(dump, "12345678"));
    assert_null(strstr(dump, "ss@db"));
    free(dump);

    /* the answer echoes placeholders in content and in tool-call arguments */
    json_t *resp = json_pack(
        "{s:s, s:[{s:i, s:{s:s, s:s, s:[{s:s, s:s, s:{s:s, s:s}}]}, s:s}]}", "object",
        "chat.completion", "choices", "index", 0, "message", "role", "assistant", "content",
        "Hi [EMAIL_2] ([EMAIL_1]), IBAN [IBAN_1], [PHONE_1], [IBAN_9]", "tool_calls", "id", "c2",
        "type", "function", "function", "name", "connect", "arguments",
        "{\"dsn\": \"postgres://[SECRET_1]@db/x\", \"who\": \"[EMAIL_4]\"}", "finish_reason",
        "tool_calls");
    assert_int_equal(sw_pii_unmask_response(m, resp), SW_OK);
    json_t *msg = json_object_get(json_array_get(json_object_get(resp, "choices"), 0), "message");
    assert_string_equal(json_string_value(json_object_get(msg, "content")),
                        "Hi a@example.com ([EMAIL_1]), IBAN NL91ABNA0417164300, 06-12345678, [IBAN_9]");
    const char *rargs = json_string_value(json_object_get(json_object_get(json_array_get(
        json_object_get(msg, "tool_calls"), 0), "function"), "arguments"));
    json_t *a = json_loads(rargs, 0, &je);
    if (!a)
        fail_msg("arguments no longer JSON: %s: %s", je.text, rargs);
    assert_string_equal(json_string_value(json_object_get(a, "dsn")), "postgres://u:p\"a\\ss@db/x");
    assert_string_equal(json_string_value(json_object_get(a, "who")), "b@example.com");
    json_decref(a);
    json_decref(resp);
    sw_pii_map_free(m);
    json_decref(body);
}

/* Every string of the body is scanned, at any depth and in unknown fields,
 * except the structural allow-list (by whole path: the same key elsewhere is
 * scanned); keys are scanned; binary payloads are counted, not read. */
static const char *WHOLE =
    "{\"model\":\"m-model\",\"user\":\"user.x@example.com\",\"stop\":[\"stop.x@example.com\"],"
    "\"prediction\":{\"type\":\"content\",\"content\":\"pred.x@example.com\"},"
    "\"reasoning_effort\":\"low\",\"service_tier\":\"flex\","
    "\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"x\","
    "  \"schema\":{\"description\":\"schema.x@example.com\"}}},"
    "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"description\":\"tooldesc.x@example.com\","
    "  \"parameters\":{\"type\":\"object\",\"properties\":{\"who\":{\"type\":\"string\","
    "  \"enum\":[\"toolenum.x@example.com\"]}}}}}],"
    "\"tool_choice\":\"auto\",\"x_unknown\":{\"a\":[[{\"b\":\"deep.x@example.com\"}]]},"
    "\"metadata\":{\"k\":\"meta.x@example.com\"},"
    "\"messages\":[{\"role\":\"user\",\"name\":\"sender.x@example.com\",\"content\":[{\"type\":\"file\","
    "  \"file\":{\"filename\":\"filename.x@example.com.pdf\",\"file_data\":\"data:x;base64,filedata.y@example.com\","
    "  \"file_id\":\"file-Abc123\"}},"
    "  {\"type\":\"image_url\",\"image_url\":{\"url\":\"data:image/png;base64,imgdata.y@example.com\","
    "   \"detail\":\"high\"}},"
    "  {\"type\":\"image_url\",\"image_url\":{\"url\":\"https://h/http.x@example.com\"}},"
    "  {\"type\":\"input_audio\",\"input_audio\":{\"data\":\"audio.y@example.com\",\"format\":\"wav\"}}]},"
    " {\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"call_Q1w2e3\","
    "  \"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"{\\\"m\\\":\\\"args.x@example.com\\\"}\"}}]},"
    " {\"role\":\"tool\",\"tool_call_id\":\"call_Q1w2e3\",\"content\":\"ok\"}]}";

static const char *const WHOLE_SCANNED[] = {
    "user.x@example.com", "stop.x@example.com", "pred.x@example.com", "schema.x@example.com", "tooldesc.x@example.com",
    "toolenum.x@example.com", "deep.x@example.com", "meta.x@example.com", "sender.x@example.com", "filename.x@example.com",
    "http.x@example.com", "args.x@example.com"};
static const char *const WHOLE_SKIPPED[] = {
    "\"m-model\"", "\"low\"", "\"flex\"", "\"json_schema\"", "\"auto\"",
    "\"file-Abc123\"", "\"high\"", "\"call_Q1w2e3\"",
    "base64,filedata.y@example.com", "base64,imgdata.y@example.com", "audio.y@example.com"};

static void test_request_whole_body(void **state)
{
    (void)state;
    json_error_t je;
    json_t *body = json_loads(WHOLE, 0, &je);
    if (!body)
        fail_msg("%s", je.text);
    struct sw_pii_counts c;
    assert_int_equal(sw_pii_scan_request(E, body, &c), SW_OK);
    assert_int_equal(c.n[SW_PII_EMAIL], sizeof WHOLE_SCANNED / sizeof *WHOLE_SCANNED);
    assert_int_equal(c.total, c.n[SW_PII_EMAIL]);
    assert_int_equal(c.binary, 3);      /* data: image, audio, file_data; not the https image */

    struct sw_pii_map *m = sw_pii_map_new();
    assert_int_equal(sw_pii_mask_request(E, m, body, &c), SW_OK);
    assert_int_equal(c.total, sizeof WHOLE_SCANNED / sizeof *WHOLE_SCANNED);
    assert_int_equal(c.binary, 3);
    char *dump = json_dumps(body, JSON_COMPACT);
    for (size_t i = 0; i < sizeof WHOLE_SCANNED / sizeof *WHOLE_SCANNED; i++)
        if (strstr(dump, WHOLE_SCANNED[i]))
            fail_msg("%s left unmasked in %s", WHOLE_SCANNED[i], dump);
    for (size_t i = 0; i < sizeof WHOLE_SKIPPED / sizeof *WHOLE_SKIPPED; i++)
        if (!strstr(dump, WHOLE_SKIPPED[i]))
            fail_msg("structural or binary %s was rewritten in %s", WHOLE_SKIPPED[i], dump);
    /* the arguments stay JSON; the enum value carries the placeholder */
    assert_non_null(strstr(dump, "\"enum\":[\"[EMAIL_"));
    assert_non_null(strstr(dump, "\"arguments\":\"{\\\"m\\\":\\\"[EMAIL_"));
    free(dump);
    sw_pii_map_free(m);
    json_decref(body);
}

/* A key holding an entity: counted by the scan; the mask cannot rename it
 * and fails (the caller never sends such a request where masking was
 * needed). A plain key is fine. */
static void test_request_keys(void **state)
{
    (void)state;
    struct sw_pii_counts c;
    json_t *body = json_pack("{s:s, s:[{s:s, s:s}], s:{s:{s:{s:{s:s}}}}}", "model", "m", "messages",
                             "role", "user", "content", "hello", "tools", "parameters",
                             "properties", "k@example.com", "type", "string");
    assert_int_equal(sw_pii_scan_request(E, body, &c), SW_OK);
    assert_int_equal(c.n[SW_PII_EMAIL], 1);
    struct sw_pii_map *m = sw_pii_map_new();
    assert_int_equal(sw_pii_mask_request(E, m, body, &c), SW_EINVAL);
    sw_pii_map_free(m);
    json_decref(body);

    body = json_pack("{s:s, s:[{s:s, s:s}], s:{s:s}}", "model", "m", "messages", "role", "user",
                     "content", "mail j@example.com", "metadata", "email", "on file");
    assert_int_equal(sw_pii_scan_request(E, body, &c), SW_OK);
    assert_int_equal(c.total, 1);
    m = sw_pii_map_new();
    assert_int_equal(sw_pii_mask_request(E, m, body, &c), SW_OK);
    assert_int_equal(c.total, 1);
    sw_pii_map_free(m);
    json_decref(body);

    /* a key with a NUL cannot pose as an allow-listed one */
    json_t *o = json_object();
    json_object_setn_new(o, "model\0x", 7, json_string("z@example.com"));
    assert_int_equal(sw_pii_scan_request(E, o, &c), SW_OK);
    assert_int_equal(c.n[SW_PII_EMAIL], 1);
    json_decref(o);
}

static int count_span(void *ud, const struct sw_pii_span *sp)
{
    (void)sp;
    (*(int *)ud)++;
    return SW_OK;
}

/* Keys of only lower-case letters and '_' are not scanned when the engine
 * has no custom types: no built-in type can match such a text. The premise
 * is checked here against the engine itself, on random words and on the
 * lower-case forms of every secret prefix followed by long bodies; keys with
 * a digit are still scanned; an engine with a custom type scans every key. */
static void test_request_plain_keys(void **state)
{
    (void)state;
    char err[256];
    struct sw_pii_engine *e0 = NULL, *ec = NULL;
    assert_int_equal(sw_pii_engine_new(NULL, 0, &e0, err, sizeof err), SW_OK);
    static const char *const prefixes[] = {"", "sk_live_", "rk_test_", "ghp_", "gho_", "github_pat_",
                                           "hf_", "bearer_", "xoxb_", "aiza", "glpat_", "akia",
                                           "eyj", "sk_", "begin_private_key_"};
    unsigned seed = 12345;
    char w[300];
    for (int i = 0; i < 20000; i++) {
        const char *p = prefixes[i % (sizeof prefixes / sizeof prefixes[0])];
        size_t n = strlen(p), len = n + (size_t)(rand_r(&seed) % 200);
        memcpy(w, p, n);
        for (size_t k = n; k < len; k++) {
            unsigned r = (unsigned)rand_r(&seed) % 27;
            w[k] = r == 26 ? '_' : (char)('a' + r);
        }
        int found = 0;
        assert_int_equal(sw_pii_scan_text(e0, w, len, count_span, &found), SW_OK);
        if (found)
            fail_msg("a built-in type matched the lower-case word %.*s", (int)len, w);
    }

    struct sw_pii_counts c;
    json_t *body = json_pack("{s:s, s:[{s:s, s:s}], s:{s:s, s:s}}", "model", "m", "messages", "role",
                             "user", "content", "hello", "metadata",
                             "sk_live_abcdefghijklmnopqrstuvwx", "plain",
                             "sk_live_51habcdefghij1234567890", "with digits");
    assert_int_equal(sw_pii_scan_request(e0, body, &c), SW_OK);
    assert_int_equal(c.n[SW_PII_SECRET], 1);
    json_decref(body);

    struct sw_pii_custom custom = {"codename", "falcon_[a-z]+", NULL};
    assert_int_equal(sw_pii_engine_new(&custom, 1, &ec, err, sizeof err), SW_OK);
    body = json_pack("{s:s, s:{s:s}}", "model", "m", "metadata", "falcon_plan", "on file");
    assert_int_equal(sw_pii_scan_request(ec, body, &c), SW_OK);
    assert_int_equal(c.total, 1);
    struct sw_pii_map *m = sw_pii_map_new();
    assert_int_equal(sw_pii_mask_request(ec, m, body, &c), SW_EINVAL);
    sw_pii_map_free(m);
    json_decref(body);
    sw_pii_engine_free(ec);
    sw_pii_engine_free(e0);
}

/* Deep nesting is walked to the bound; past it the walk fails (fail closed). */
static void test_request_depth(void **state)
{
    (void)state;
    struct sw_pii_counts c;
    json_t *leaf = json_string("deep d@example.com");
    for (int i = 0; i < 200; i++)
        leaf = i % 2 ? json_pack("{s:o}", "x", leaf) : json_pack("[o]", leaf);
    json_t *body = json_pack("{s:s, s:o}", "model", "m", "extra", leaf);
    assert_int_equal(sw_pii_scan_request(E, body, &c), SW_OK);
    assert_int_equal(c.n[SW_PII_EMAIL], 1);
    struct sw_pii_map *m = sw_pii_map_new();
    assert_int_equal(sw_pii_mask_request(E, m, body, &c), SW_OK);
    assert_int_equal(c.total, 1);
    sw_pii_map_free(m);
    json_decref(body);

    leaf = json_string("x");
    for (int i = 0; i < 300; i++)
        leaf = json_pack("[o]", leaf);
    body = json_pack("{s:s, s:o}", "model", "m", "extra", leaf);
    assert_int_equal(sw_pii_scan_request(E, body, &c), SW_ETOOBIG);
    m = sw_pii_map_new();
    assert_int_equal(sw_pii_mask_request(E, m, body, &c), SW_ETOOBIG);
    sw_pii_map_free(m);
    json_decref(body);
}

/* What masking sends re-scans clean: a number glued to a masked value is
 * only a number of its own once the value is a placeholder; the mask then
 * fails (never sent) rather than send a text the scanner would flag. */
static void test_request_masked_rescans_clean(void **state)
{
    (void)state;
    struct sw_pii_counts c;
    json_t *body = json_pack("{s:s, s:[{s:s, s:s}]}", "model", "m", "messages", "role", "user",
                             "content", "EMP-654321+1 3 6 1234 1234:67:678");
    assert_int_equal(sw_pii_scan_request(E, body, &c), SW_OK);
    assert_true(c.total > 0);
    struct sw_pii_map *m = sw_pii_map_new();
    if (sw_pii_mask_request(E, m, body, &c) == SW_OK) {
        assert_int_equal(sw_pii_scan_request(E, body, &c), SW_OK);
        assert_int_equal(c.total, 0);
    }
    sw_pii_map_free(m);
    json_decref(body);
}

static void test_json_text_mask(void **state)
{
    (void)state;
    struct sw_pii_map *m = sw_pii_map_new();
    struct sw_buf b;
    sw_buf_init(&b, 1 << 16);
    const char *in = "{\"card\":4111111111111111,\"dsn\":\"smtp://u:p\\\"q@h\",\"mail\":\"x@example.com\"}";
    assert_int_equal(sw_pii_mask_json_text(E, m, in, strlen(in), &b, NULL), SW_OK);
    assert_string_equal(b.ptr, "{\"card\":\"[CARD_1]\",\"dsn\":\"smtp://[SECRET_1]@h\",\"mail\":\"[EMAIL_1]\"}");
    /* the map holds decoded values: the same secret in plain text gets the same placeholder */
    char *plain = mask(m, "smtp://u:p\"q@h", NULL);
    assert_string_equal(plain, "smtp://[SECRET_1]@h");
    char *back = unmask(m, plain, 0);
    assert_string_equal(back, "smtp://u:p\"q@h");
    char *jback = unmask(m, b.ptr, 1);
    assert_string_equal(jback, "{\"card\":\"4111111111111111\",\"dsn\":\"smtp://u:p\\\"q@h\",\"mail\":\"x@example.com\"}");
    free(plain), free(back), free(jback);
    sw_buf_free(&b);
    sw_pii_map_free(m);
}


/* Detection on the normalised view: Unicode spaces, format characters and
 * full-width forms; the span is the original bytes, zero-width chars inside
 * it included. */
/* An Anthropic answer in its own shape: text, thinking and a tool's input
 * restored; the signature and redacted data are the provider's own. */
static void test_unmask_message(void **state)
{
    (void)state;
    struct sw_pii_map *m = sw_pii_map_new();
    const char *ph;
    size_t phl;
    assert_int_equal(sw_pii_map_put(m, SW_PII_EMAIL, "EMAIL", "a\"b@example.com", 15, &ph, &phl), SW_OK);
    char p[64];
    snprintf(p, sizeof p, "%.*s", (int)phl, ph);
    json_t *msg = json_pack("{s:s, s:[{s:s, s:s++, s:s}, {s:s, s:s}, {s:s, s:{s:[s, i], s:{s:s}}}, "
                            "{s:s, s:s}]}",
                            "type", "message", "content", "type", "thinking", "thinking", "mail ", p,
                            " now", "signature", p, "type", "text", "text", p, "type", "tool_use",
                            "input", "to", p, 1, "more", "cc", p, "type", "redacted_thinking", "data", p);
    assert_non_null(msg);
    assert_int_equal(sw_pii_unmask_message(m, msg), SW_OK);
    json_t *c = json_object_get(msg, "content");
    assert_string_equal(json_string_value(json_object_get(json_array_get(c, 0), "thinking")),
                        "mail a\"b@example.com now");
    assert_string_equal(json_string_value(json_object_get(json_array_get(c, 0), "signature")), p);
    assert_string_equal(json_string_value(json_object_get(json_array_get(c, 1), "text")),
                        "a\"b@example.com");
    json_t *in = json_object_get(json_array_get(c, 2), "input");
    assert_string_equal(json_string_value(json_array_get(json_object_get(in, "to"), 0)),
                        "a\"b@example.com");
    assert_string_equal(json_string_value(json_object_get(json_object_get(in, "more"), "cc")),
                        "a\"b@example.com");
    assert_string_equal(json_string_value(json_object_get(json_array_get(c, 3), "data")), p);
    json_decref(msg);
    sw_pii_map_free(m);
}

static json_t *delta_ev(int index, const char *type, const char *field, const char *text)
{
    return json_pack("{s:s, s:i, s:{s:s, s:s}}", "type", "content_block_delta", "index", index,
                     "delta", "type", type, field, text);
}

static const char *delta_text(json_t *ev, const char *field)
{
    return json_string_value(json_object_get(json_object_get(ev, "delta"), field));
}

/* Streamed: a placeholder split across deltas is held per block and comes
 * out restored, the tail of a block flushed before its stop; tool input is
 * JSON text (escaped); bounds and mixed kinds fail. */
static void test_unmask_native_stream(void **state)
{
    (void)state;
    struct sw_pii_map *m = sw_pii_map_new();
    const char *ph;
    size_t phl;
    assert_int_equal(sw_pii_map_put(m, SW_PII_EMAIL, "EMAIL", "a\"b@example.com", 15, &ph, &phl), SW_OK);
    char p[64];
    snprintf(p, sizeof p, "%.*s", (int)phl, ph);
    struct sw_pii_nstream *s = sw_pii_nstream_new(m);
    assert_non_null(s);
    json_t *before = NULL;
    json_t *start = json_pack("{s:s, s:{s:[]}}", "type", "message_start", "message", "content");
    assert_int_equal(sw_pii_nstream_event(s, start, &before), SW_OK);
    assert_null(before);
    json_decref(start);
    /* thinking at index 0: "x " + first 3 bytes of the placeholder, then the rest */
    char head[16], tail[64];
    snprintf(head, sizeof head, "x %.3s", p);
    snprintf(tail, sizeof tail, "%s y", p + 3);
    json_t *d1 = delta_ev(0, "thinking_delta", "thinking", head);
    assert_int_equal(sw_pii_nstream_event(s, d1, &before), SW_OK);
    assert_string_equal(delta_text(d1, "thinking"), "x ");
    json_t *d2 = delta_ev(0, "thinking_delta", "thinking", tail);
    assert_int_equal(sw_pii_nstream_event(s, d2, &before), SW_OK);
    assert_string_equal(delta_text(d2, "thinking"), "a\"b@example.com y");
    /* text at index 1 ends mid-placeholder: flushed before its stop, as it was */
    json_t *d3 = delta_ev(1, "text_delta", "text", "[EMAI");
    assert_int_equal(sw_pii_nstream_event(s, d3, &before), SW_OK);
    assert_string_equal(delta_text(d3, "text"), "");
    json_t *stop = json_pack("{s:s, s:i}", "type", "content_block_stop", "index", 1);
    assert_int_equal(sw_pii_nstream_event(s, stop, &before), SW_OK);
    assert_non_null(before);
    assert_int_equal(json_integer_value(json_object_get(before, "index")), 1);
    assert_string_equal(json_string_value(json_object_get(json_object_get(before, "delta"), "type")),
                        "text_delta");
    assert_string_equal(delta_text(before, "text"), "[EMAI");
    json_decref(before);
    /* a tool's input at index 2: the value escaped inside the JSON text */
    char args[96];
    snprintf(args, sizeof args, "{\"to\":\"%s\"}", p);
    json_t *d4 = delta_ev(2, "input_json_delta", "partial_json", args);
    assert_int_equal(sw_pii_nstream_event(s, d4, &before), SW_OK);
    assert_string_equal(delta_text(d4, "partial_json"), "{\"to\":\"a\\\"b@example.com\"}");
    /* one block, two kinds of delta while text is held: refused */
    json_t *d5 = delta_ev(2, "input_json_delta", "partial_json", "\"[EM");
    assert_int_equal(sw_pii_nstream_event(s, d5, &before), SW_OK);
    json_t *d6 = delta_ev(2, "text_delta", "text", "x");
    assert_int_equal(sw_pii_nstream_event(s, d6, &before), SW_EINVAL);
    assert_int_equal(sw_pii_nstream_event(s, json_array_get(NULL, 0), &before), SW_EINVAL);
    json_decref(d1);
    json_decref(d2);
    json_decref(d3);
    json_decref(d4);
    json_decref(d5);
    json_decref(d6);
    json_decref(stop);
    sw_pii_nstream_free(s);
    /* more than 64 blocks open at once */
    s = sw_pii_nstream_new(m);
    int rc = SW_OK;
    for (int i = 0; i < 70 && rc == SW_OK; i++) {
        json_t *d = delta_ev(i, "text_delta", "text", "[EM");
        rc = sw_pii_nstream_event(s, d, &before);
        json_decref(d);
    }
    assert_int_equal(rc, SW_EINVAL);
    sw_pii_nstream_free(s);
    sw_pii_map_free(m);
}

static void test_unicode_view(void **state)
{
    (void)state;
    static const struct det_case cases[] = {
        {"mail john\xe2\x80\x8b.doe@example.com now", "email:john\xe2\x80\x8b.doe@example.com"},
        {"x\xc2\xad@example.com", "email:x\xc2\xad@example.com"},                     /* soft hyphen */
        {"\xef\xbb\xbfjane@example.org", "email:jane@example.org"},                   /* BOM before */
        {"\xef\xbd\x8a\xef\xbd\x8f@example.com", "email:\xef\xbd\x8a\xef\xbd\x8f@example.com"}, /* full-width jo */
        {"jo\xef\xbc\xa0" "example.com", "email:jo\xef\xbc\xa0" "example.com"},       /* full-width @ */
        {"card 4111\xc2\xa0" "1111\xc2\xa0" "1111\xc2\xa0" "1111 exp",
         "card:4111\xc2\xa0" "1111\xc2\xa0" "1111\xc2\xa0" "1111"},                  /* no-break spaces */
        {"card 4111\xe2\x80\xaf" "1111\xe3\x80\x80" "1111\xe2\x80\x89" "1111",
         "card:4111\xe2\x80\xaf" "1111\xe3\x80\x80" "1111\xe2\x80\x89" "1111"},      /* U+202F U+3000 U+2009 */
        {"\xef\xbc\x94\xef\xbc\x91\xef\xbc\x91\xef\xbc\x91\xef\xbc\x91\xef\xbc\x91\xef\xbc\x91\xef\xbc\x91"
         "\xef\xbc\x91\xef\xbc\x91\xef\xbc\x91\xef\xbc\x91\xef\xbc\x91\xef\xbc\x91\xef\xbc\x91\xef\xbc\x91",
         "card:\xef\xbc\x94\xef\xbc\x91\xef\xbc\x91\xef\xbc\x91\xef\xbc\x91\xef\xbc\x91\xef\xbc\x91\xef\xbc\x91"
         "\xef\xbc\x91\xef\xbc\x91\xef\xbc\x91\xef\xbc\x91\xef\xbc\x91\xef\xbc\x91\xef\xbc\x91\xef\xbc\x91"},
        {"NL91\xe2\x81\xa0" "ABNA0417164300", "iban:NL91\xe2\x81\xa0" "ABNA0417164300"},  /* word joiner */
        {"caf\xc3\xa9 x@example.com \xe2\x82\xac", "email:x@example.com"},          /* offsets after multibyte */
        {"\xe2\x80\x8b\xe2\x80\x8b\xe2\x80\x8b", ""},
        {"na\xc3\xafve r\xc3\xa9sum\xc3\xa9 1.0", ""},
        {"\xff\xfe x@example.com", "email:x@example.com"},                         /* not UTF-8: kept */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *got = find(cases[i].text);
        if (strcmp(got, cases[i].want))
            fail_msg("case %zu: got \"%s\", want \"%s\"", i, got, cases[i].want);
    }
    /* masking takes the whole value: no part of it stays in clear */
    struct sw_pii_map *m = sw_pii_map_new();
    char *out = mask(m, "to john\xe2\x80\x8b.doe@example.com!", NULL);
    assert_string_equal(out, "to [EMAIL_1]!");
    char *back = unmask(m, out, 0);
    assert_string_equal(back, "to john\xe2\x80\x8b.doe@example.com!");
    free(out), free(back);
    sw_pii_map_free(m);
}

struct spans {
    struct sw_pii_span *sp;
    int n;
};

static int collect_span(void *ud, const struct sw_pii_span *sp)
{
    struct spans *c = ud;
    if (c->n < 8)
        c->sp[c->n] = *sp;
    c->n++;
    return SW_OK;
}

static int collect_span_all(void *ud, const struct sw_pii_span *sp);

/* Text whose every character the view keeps is scanned as it is: for each
 * code point, sw_pii_view_keeps says exactly whether the view is its UTF-8
 * unchanged; and spans found in such text cover whole characters, as they
 * do when the view is built (the same text with a full-width digit added,
 * which forces the view). */
static void test_view_identity(void **state)
{
    (void)state;
    for (int32_t c = 0x80; c <= 0x10ffff; c++) {
        if (c >= 0xd800 && c < 0xe000)
            continue;
        char u[4];
        size_t n = c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
        if (n == 2) {
            u[0] = (char)(0xc0 | (c >> 6)), u[1] = (char)(0x80 | (c & 0x3f));
        } else if (n == 3) {
            u[0] = (char)(0xe0 | (c >> 12)), u[1] = (char)(0x80 | ((c >> 6) & 0x3f));
            u[2] = (char)(0x80 | (c & 0x3f));
        } else {
            u[0] = (char)(0xf0 | (c >> 18)), u[1] = (char)(0x80 | ((c >> 12) & 0x3f));
            u[2] = (char)(0x80 | ((c >> 6) & 0x3f)), u[3] = (char)(0x80 | (c & 0x3f));
        }
        struct sw_pii_view v;
        assert_int_equal(sw_pii_view_build(&v, u, n, 0), SW_OK);
        bool same = v.len == n && !memcmp(v.t, u, n);
        sw_pii_view_free(&v);
        if (same != sw_pii_view_keeps(c))
            fail_msg("U+%04X: view keeps it %d, sw_pii_view_keeps says %d", (unsigned)c, same,
                     sw_pii_view_keeps(c));
        assert_int_equal(sw_pii_view_kind(u, n, 0), same ? SW_PII_VIEW_UTF8 : SW_PII_VIEW_BUILD);
    }
    assert_int_equal(sw_pii_view_kind("plain ascii", 11, 0), SW_PII_VIEW_NONE);
    assert_int_equal(sw_pii_view_kind("\xff x", 3, 0), SW_PII_VIEW_BUILD);     /* not UTF-8 */

    /* "." matches one byte: these matches start or end inside a character */
    struct sw_pii_engine *e = NULL;
    struct sw_pii_custom c[] = {{"tail", "ID[0-9]{3}.", NULL}, {"head", ".KEY[0-9]{3}", NULL}};
    char err[256];
    assert_int_equal(sw_pii_engine_new(c, 2, &e, err, sizeof err), SW_OK);
    static const char *const texts[] = {
        "ref ID123\xc3\xa9 and \xe2\x82\xacKEY456 end",     /* é, € */
        "ref ID123\xf0\x9f\x98\x80 and \xf0\x9f\x98\x80KEY456", /* U+1F600 */
    };
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        char forced[128];
        snprintf(forced, sizeof forced, "%s \xef\xbc\x91", texts[i]);
        assert_int_equal(sw_pii_view_kind(texts[i], strlen(texts[i]), 0), SW_PII_VIEW_UTF8);
        assert_int_equal(sw_pii_view_kind(forced, strlen(forced), 0), SW_PII_VIEW_BUILD);
        struct sw_pii_span a[8], b[8];
        struct spans sa = {a, 0}, sb = {b, 0};
        assert_int_equal(sw_pii_scan_text(e, texts[i], strlen(texts[i]), collect_span, &sa), SW_OK);
        assert_int_equal(sw_pii_scan_text(e, forced, strlen(forced), collect_span, &sb), SW_OK);
        assert_int_equal(sa.n, 2);
        assert_int_equal(sb.n, 2);
        for (int k = 0; k < 2; k++) {
            assert_int_equal(a[k].start, b[k].start);
            assert_int_equal(a[k].len, b[k].len);
            /* whole characters: neither edge is a continuation byte */
            assert_true(((unsigned char)texts[i][a[k].start] & 0xc0) != 0x80);
            assert_true(((unsigned char)texts[i][a[k].start + a[k].len] & 0xc0) != 0x80);
        }
    }
    sw_pii_engine_free(e);
}

/* The runs of digits of a text are scanned joined: with many runs (more
 * than a stack buffer's worth) every entity is found at its own place. */
static void test_digit_runs_joined(void **state)
{
    (void)state;
    static const char *const vals[] = {"4111 1111 1111 1111", "06-12345678", "+31 6 12345678",
                                       "123-45-6789", "NL91ABNA0417164300", "192.0.2.44"};
    enum { NV = sizeof vals / sizeof vals[0], REP = 60 };
    static char text[REP * NV * 40];
    size_t n = 0;
    for (int r = 0; r < REP; r++)
        for (int v = 0; v < NV; v++)
            n += (size_t)snprintf(text + n, sizeof text - n, "no %d: %s; ", r, vals[v]);
    struct sw_pii_span sp[REP * NV + 8];
    struct spans got = {sp, 0};
    assert_int_equal(sw_pii_scan_text(E, text, n, collect_span_all, &got), SW_OK);
    assert_int_equal(got.n, REP * NV);
    for (int i = 0; i < got.n; i++) {
        const char *want = vals[i % NV];
        if (sp[i].len != strlen(want) || memcmp(text + sp[i].start, want, sp[i].len))
            fail_msg("span %d: \"%.*s\", want \"%s\"", i, (int)sp[i].len, text + sp[i].start, want);
    }
}

static int collect_span_all(void *ud, const struct sw_pii_span *sp)
{
    struct spans *c = ud;
    c->sp[c->n++] = *sp;
    return SW_OK;
}

static char *mask_json(struct sw_pii_map *m, const char *in)
{
    struct sw_buf b;
    sw_buf_init(&b, 1 << 20);
    assert_int_equal(sw_pii_mask_json_text(E, m, in, strlen(in), &b, NULL), SW_OK);
    char *s = strdup(b.ptr ? b.ptr : "");
    sw_buf_free(&b);
    json_t *a = json_loads(in, JSON_DECODE_ANY, NULL);
    if (a) {        /* JSON in, JSON out */
        json_t *o = json_loads(s, JSON_DECODE_ANY, NULL);
        if (!o)
            fail_msg("masked JSON does not parse: %s", s);
        json_decref(o);
        json_decref(a);
    }
    return s;
}

/* JSON text: detection on the decoded strings, the placeholder replaces the
 * escaped range, the output is JSON. */
static void test_json_escapes(void **state)
{
    (void)state;
    struct sw_pii_map *m = sw_pii_map_new();
    char *o;
    /* a card right after an escaped newline */
    o = mask_json(m, "{\"note\":\"line\\n4111 1111 1111 1111\"}");
    assert_string_equal(o, "{\"note\":\"line\\n[CARD_1]\"}");
    free(o);
    /* an e-mail after an escape; e-mail written with \u0040 */
    o = mask_json(m, "{\"a\":\"x\\nbob@example.com\",\"b\":\"a\\u0040b.com\"}");
    assert_string_equal(o, "{\"a\":\"x\\n[EMAIL_1]\",\"b\":\"[EMAIL_2]\"}");
    free(o);
    char *back = unmask(m, "[EMAIL_2]", 0);
    assert_string_equal(back, "a@b.com");       /* the decoded value */
    free(back);
    /* escapes inside the value: \/ and a surrogate pair before; \t inside a
     * card separates its groups as a space does */
    o = mask_json(m, "[\"\\ud83d\\ude00 jane\\u002edoe@example.org\", \"4111\\t1111 1111 1111\"]");
    assert_string_equal(o, "[\"\\ud83d\\ude00 [EMAIL_3]\", \"[CARD_2]\"]");
    free(o);
    o = mask_json(m, "{\"iban\":\"NL91\\u0020ABNA\\u00200417\\u00201643\\u002000\"}");
    assert_string_equal(o, "{\"iban\":\"[IBAN_1]\"}");
    free(o);
    back = unmask(m, "[IBAN_1]", 0);
    assert_string_equal(back, "NL91 ABNA 0417 1643 00");
    free(back);
    /* a value with a quote-looking escape next to it stays inside its string */
    o = mask_json(m, "{\"u\":\"smtp://u:p@h\\\"\",\"v\":1}");
    assert_non_null(strstr(o, "[SECRET_1]"));
    free(o);
    /* a bare number that is a card: the whole literal, quoted */
    o = mask_json(m, "{\"n\":4111111111111111}");
    assert_string_equal(o, "{\"n\":\"[CARD_3]\"}");
    free(o);
    /* the scan of arguments sees the same */
    int n = 0;
    const char *args = "{\"to\":\"a\\u0040b.com\",\"c\":\"\\n4111 1111 1111 1111\"}";
    assert_int_equal(sw_pii_scan_json_text(E, args, strlen(args), count_span, &n), SW_OK);
    assert_int_equal(n, 2);
    /* and so does the request scanner on tool-call arguments */
    json_t *body = json_pack("{s:s, s:[{s:s, s:n, s:[{s:s, s:s, s:{s:s, s:s}}]}]}", "model", "m",
                             "messages", "role", "assistant", "content", "tool_calls", "id", "c",
                             "type", "function", "function", "name", "f", "arguments", args);
    struct sw_pii_counts counts;
    assert_int_equal(sw_pii_scan_request(E, body, &counts), SW_OK);
    assert_int_equal(counts.n[SW_PII_EMAIL], 1);
    assert_int_equal(counts.n[SW_PII_CARD], 1);
    json_decref(body);
    /* plain text with a backslash is not decoded */
    assert_string_equal(find("a\\u0040b.com"), "");
    sw_pii_map_free(m);
}

/* National phone numbers, validated by libphonenumber for the configured
 * regions; look-alikes stay clean. */
static void test_phone_national(void **state)
{
    (void)state;
    static const struct det_case cases[] = {
        {"bel (030) 3327 0601 aub", "phone:(030) 3327 0601"},        /* DE */
        {"Tel. 030 33270601", "phone:030 33270601"},
        {"call 07700 900464 now", "phone:07700 900464"},             /* GB */
        {"or +44 7700 900464", "phone:+44 7700 900464"},
        {"appelez le 01 42 68 53 00.", "phone:01 42 68 53 00"},      /* FR */
        {"+33 1 42 68 53 00", "phone:+33 1 42 68 53 00"},
        {"bel 02 555 12 12", "phone:02 555 12 12"},                 /* BE */
        {"llame al 912 345 678", "phone:912 345 678"},              /* ES */
        {"chiama 06 6982 1234", "phone:06 6982 1234"},              /* IT */
        {"(415) 555-0132", "phone:(415) 555-0132"},                 /* US */
        {"bel 0031 6 12345678", "phone:0031 6 12345678"},           /* 00 prefix */
        {"0049 30 33270601", "phone:0049 30 33270601"},
        {"bel 00 31 6 12345678", "phone:00 31 6 12345678"},       /* 00, a space, the country */
        {"tel 0031612345678.", "phone:0031612345678"},             /* 00 + country + number, unbroken */
        {"llame al 919 65 44 25", "phone:919 65 44 25"},          /* ES, 3-2-2-2 */
        {"chiama il 335 069 5869", "phone:335 069 5869"},        /* IT mobile, no trunk 0 */
        {"costa 335 069 5869 euro", "phone:335 069 5869"},
        {"cell 335/8670234", "phone:335/8670234"},
        {"cell 335-8670234", "phone:335-8670234"},
        {"lotto 335 069", ""},
        {"iban nl91abna0417164300 ok", "iban:nl91abna0417164300"},  /* typed in lower case */
        {"iban nl91 abna 0417 1643 00", "iban:nl91 abna 0417 1643 00"},
        {"konto NO93 8601 1117 947 ok", "iban:NO93 8601 1117 947"},   /* the shortest: 15 characters */
        {"konto NO9386011117947.", "iban:NO9386011117947"},
        {"sha de4432109876543210987654 x", ""},                  /* not the length of a DE IBAN */
        {"06-12345678", "phone:06-12345678"},                       /* NL */
        /* national numbers as people type them, some in ranges the metadata
         * does not (yet) allocate: possible for the region is enough */
        {"Handy 015175928665", "phone:015175928665"},              /* DE mobile, 12 digits unbroken */
        {"Tel. 017648256276.", "phone:017648256276"},
        {"bel 09 790 51 55", "phone:09 790 51 55"},                 /* BE, zone 09, 2-3-2-2 */
        {"bel 098937895", "phone:098937895"},
        {"llame al 767 726 907", "phone:767 726 907"},             /* ES 7x */
        {"ring 07781531292", "phone:07781531292"},                 /* GB mobile */
        /* a number right after another entity is a number of its own */
        {"Mis datos son 93 736 14 15 643 604 451", "phone:93 736 14 15|phone:643 604 451"},
        {"+44 20 7035 3171 212 636 0207", "phone:+44 20 7035 3171 212 636 0207"},  /* US after another number */
        {"BSN: 818 083 530 00 34 96 346 7158 01315220003",
         "bsn:818 083 530 00 34 96 346 7158|phone:01315220003"},
        /* a not-phone word belongs to the number after it, not to the next one */
        {"SSN# 173532604 tomorrow. 02 383 40 24", "ssn:173532604|phone:02 383 40 24"},
        {"Order no. 0612345678", ""},
        {"bel 02 383 40 24 of 0123 4567 8901 2345", "phone:02 383 40 24"},  /* a later group of an account */
        {"too long 0123456789012", ""},
        /* negatives */
        {"order 0001234567 shipped", ""},
        {"at 2024-06-01 12:30:45 UTC", ""},
        {"on 01-06-2024 12:30", ""},
        {"on 01.06.2024 the price was 1 299,00 EUR", ""},
        {"version 10.2.3.4567 build 0.9.1", ""},
        {"invoice INV-2024-000123", ""},
        {"ISBN 978-0-306-40615-7", ""},
        {"ISBN 0-306-40615-2", ""},
        {"ticket #0912345678123", ""},
        {"items 912345678", ""},                                    /* ES needs its groups */
        {"078-05-1120", ""},                                         /* SSN shape */
        {"0000 000 000", ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *got = find(cases[i].text);
        if (strcmp(got, cases[i].want))
            fail_msg("case %zu \"%s\": want \"%s\", got \"%s\"", i, cases[i].text, cases[i].want, got);
    }
    /* the regions are configurable: with only NL, Spanish and German numbers are not phones */
    char err[256];
    struct sw_pii_engine *nl;
    assert_int_equal(sw_pii_engine_new(NULL, 0, &nl, err, sizeof err), SW_OK);
    const char *only[] = {"NL"};
    assert_int_equal(sw_pii_engine_set_phone_regions(nl, only, 1, err, sizeof err), SW_OK);
    int n = 0;
    const char *t = "912 345 678 / 030 33270601 / 06-12345678";
    assert_int_equal(sw_pii_scan_text(nl, t, strlen(t), count_span, &n), SW_OK);
    assert_int_equal(n, 1);
    n = 0;      /* the default engine finds all three */
    assert_int_equal(sw_pii_scan_text(E, t, strlen(t), count_span, &n), SW_OK);
    assert_int_equal(n, 3);
    const char *bad[] = {"NL", "XX"};
    assert_int_equal(sw_pii_engine_set_phone_regions(nl, bad, 2, err, sizeof err), SW_EINVAL);
    assert_non_null(strstr(err, "XX"));
    const char *lower[] = {"nl"};
    assert_int_equal(sw_pii_engine_set_phone_regions(nl, lower, 1, err, sizeof err), SW_EINVAL);
    sw_pii_engine_free(nl);
}

/* BSN in 3-3-3 groups (with the word, like a plain run); Spanish DNI/NIE. */
/* National phone numbers are checked against libphonenumber's metadata by
 * compiled rules of their own: on random national numbers of each default
 * region (4-13 digits, some with a leading 0) they must say what
 * libphonenumber's IsValidNumberForRegion says. */
static void test_phone_rules_match_libphonenumber(void **state)
{
    (void)state;
    static const char *const regions[] = {"NL", "DE", "FR", "BE", "ES", "IT", "GB", "US"};
    uint64_t x = 0x9e3779b97f4a7c15ull;
    int valid = 0, disagree = 0;
    for (size_t r = 0; r < sizeof regions / sizeof regions[0]; r++) {
        for (int k = 0; k < 5000; k++) {
            char nsn[16];
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            int len = 4 + (int)(x % 10), lead = (x >> 8) % 5 == 0;
            for (int i = 0; i < len; i++) {
                x ^= x << 13; x ^= x >> 7; x ^= x << 17;
                nsn[i] = (char)('0' + (i < lead ? 0 : i == lead ? 1 + (int)(x % 9) : (int)(x % 10)));
            }
            nsn[len] = '\0';
            int lib = -1, rules = sw_pii_phone_rules_vs_lib(regions[r], nsn, &lib);
            assert_int_not_equal(rules, -1);        /* the compiled rules are in use */
            if (rules != lib && disagree++ < 5)
                fprintf(stderr, "%s %s: rules %d, libphonenumber %d\n", regions[r], nsn, rules, lib);
            valid += lib == 1;
        }
    }
    assert_int_equal(disagree, 0);
    assert_true(valid > 1000);      /* the sample reaches valid numbers of every kind */
}

/* International numbers ('+' or 00 written as +) are checked without
 * libphonenumber's Parse where Parse would strip no national prefix; the
 * direct check must give Parse + IsPossibleNumber's answer whenever it
 * answers. Random country codes (valid and not), lengths, separators and
 * trunk prefixes. */
static void test_phone_intl_matches_parse(void **state)
{
    (void)state;
    static const char *const ccs[] = {"1", "7", "20", "31", "32", "33", "34", "39", "44", "49",
                                      "52", "54", "55", "61", "81", "86", "91", "351", "353",
                                      "358", "380", "800", "882", "979", "28", "42", "999"};
    static const char seps[] = " .-/()";
    uint64_t x = 0x2545f4914f6cdd1dull;
    int answered = 0, possible = 0, disagree = 0;
    for (int k = 0; k < 20000; k++) {
        char b[64];
        size_t n = 0;
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        const char *cc = ccs[x % (sizeof ccs / sizeof ccs[0])];
        b[n++] = '+';
        for (const char *c = cc; *c; c++)
            b[n++] = *c;
        int digits = 4 + (int)((x >> 8) % 14), trunk = (x >> 16) % 4 == 0;
        for (int i = 0; i < digits; i++) {
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            if (x % 4 == 0)
                b[n++] = seps[(x >> 4) % (sizeof seps - 1)];
            b[n++] = (char)('0' + (i == 0 && trunk ? 0 : (int)((x >> 12) % 10)));
        }
        int parse = -1, fast = sw_pii_phone_intl_vs_parse(b, n, &parse);
        assert_int_not_equal(parse, -1);
        if (fast < 0)
            continue;
        answered++;
        possible += fast;
        if (fast != parse && disagree++ < 5)
            fprintf(stderr, "%.*s: direct %d, Parse %d\n", (int)n, b, fast, parse);
    }
    assert_int_equal(disagree, 0);
    assert_true(answered > 10000);      /* the direct check answers most */
    assert_true(possible > 2000);       /* and the sample reaches possible numbers */
}

static void test_national_ids(void **state)
{
    (void)state;
    static const struct det_case cases[] = {
        {"Mijn BSN is 768 844 198.", "bsn:768 844 198"},
        {"BSN: 768.844.198", "bsn:768.844.198"},
        {"burgerservicenummer 111 222 333", "bsn:111 222 333"},
        {"formulier 1234.56.782", "bsn:1234.56.782"},           /* 4-2-3 dots: no word needed */
        {"Revenue EUR 768.844.198 in 2023", ""},                /* 11-proef ok, no word */
        {"population 111 222 333", ""},                         /* (768 844 198 is also a possible Spanish number) */
        {"BSN 768 844 199", ""},                                /* 11-proef fails */
        {"BSN 1 768 844 198 00", ""},                           /* part of a longer number */
        {"Mi DNI es 12345678Z.", "national_id:12345678Z"},
        {"DNI 12345678-Z", "national_id:12345678-Z"},
        {"NIE X1234567L", "national_id:X1234567L"},
        {"DNI 12.345.678-Z", "national_id:12.345.678-Z"},         /* dotted */
        {"DNI 12345678 Z", "national_id:12345678 Z"},
        {"it costs 12345678 z a year", ""},                       /* a lower-case letter after a space is prose */
        {"NIE X 1234567 L", "national_id:X 1234567 L"},
        {"NIE X-1234567-L", "national_id:X-1234567-L"},
        {"DNI 12.345.678-A", ""},                                 /* wrong letter */
        {"NIE Y1234567X y Z1234567R", "national_id:Y1234567X|national_id:Z1234567R"},
        {"dni 00000023t", "national_id:00000023t"},
        {"DNI 12345678A", ""},                                  /* wrong letter */
        {"NIE X12345678L", ""},                                 /* NIE has 7 digits */
        {"code AB12345678Z", ""},                               /* glued to letters */
        {"ref 912345678Z9", ""},
        /* Belgian national register number */
        {"RRN 85.07.30-033.28 ok", "national_id:85.07.30-033.28"},
        {"geboren 2017: 17.01.01-001.71", "national_id:17.01.01-001.71"},
        {"850730-033-28", "national_id:850730-033-28"},
        {"rijksregisternummer 85073003328", "national_id:85073003328"},
        {"order 85073003328", ""},                               /* bare: needs the word */
        {"85.07.30-033.29", ""},                                 /* check digits fail */
        {"85.13.30-033.70", ""},                                 /* month 13 (check digits ok) */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *got = find(cases[i].text);
        if (strcmp(got, cases[i].want))
            fail_msg("case %zu \"%s\": want \"%s\", got \"%s\"", i, cases[i].text, cases[i].want, got);
    }
    struct sw_pii_map *m = sw_pii_map_new();
    char *out = mask(m, "DNI 12345678Z", NULL);
    assert_string_equal(out, "DNI [NATIONAL_ID_1]");
    free(out);
    sw_pii_map_free(m);
    assert_string_equal(sw_pii_type_name(E, SW_PII_NATIONAL_ID), "national_id");
    assert_int_equal(SW_PII_MAX_CUSTOM, 22);
}

static void test_request_empty_and_bad(void **state)
{
    (void)state;
    struct sw_pii_counts c;
    json_t *body = json_pack("{s:s, s:[{s:s, s:s}]}", "model", "m", "messages", "role", "user",
                             "content", "nothing personal here, version 1.2.3.4");
    struct sw_pii_map *m = sw_pii_map_new();
    assert_int_equal(sw_pii_mask_request(E, m, body, &c), SW_OK);
    assert_int_equal(c.total, 0);
    assert_int_equal(sw_pii_map_size(m), 0);
    json_t *arr = json_array();
    assert_int_equal(sw_pii_scan_request(E, arr, &c), SW_EINVAL);
    assert_int_equal(sw_pii_mask_request(E, m, arr, &c), SW_EINVAL);
    /* an empty map leaves responses alone */
    json_t *resp = json_pack("{s:[{s:{s:s}}]}", "choices", "message", "content", "[EMAIL_1]");
    assert_int_equal(sw_pii_unmask_response(m, resp), SW_OK);
    json_decref(resp);
    json_decref(arr);
    json_decref(body);
    sw_pii_map_free(m);
}

/* ---- Streaming ---- */

static json_t *chunk_content(const char *s, size_t n)
{
    return json_pack("{s:s, s:s, s:i, s:s, s:[{s:i, s:{s:s%}, s:n}]}", "id", "chatcmpl-1", "object",
                     "chat.completion.chunk", "created", 1700000000, "model", "m", "choices",
                     "index", 0, "delta", "content", s, n, "finish_reason");
}

static json_t *chunk_args(const char *s, size_t n)
{
    return json_pack("{s:s, s:s, s:i, s:s, s:[{s:i, s:{s:[{s:i, s:{s:s%}}]}, s:n}]}", "id",
                     "chatcmpl-1", "object", "chat.completion.chunk", "created", 1700000000,
                     "model", "m", "choices", "index", 0, "delta", "tool_calls", "index", 1,
                     "function", "arguments", s, n, "finish_reason");
}

static const char *content_of(json_t *chunk)
{
    return json_string_value(json_object_get(json_object_get(json_array_get(
        json_object_get(chunk, "choices"), 0), "delta"), "content"));
}

static const char *args_of(json_t *chunk)
{
    json_t *tcs = json_object_get(json_object_get(json_array_get(json_object_get(chunk, "choices"),
                                                                 0), "delta"), "tool_calls");
    return json_string_value(json_object_get(json_object_get(json_array_get(tcs, 0), "function"),
                                             "arguments"));
}

/* Feeds text cut at the given offsets; returns the concatenated output. */
static void stream_cut(const struct sw_pii_map *m, const char *text, const size_t *cuts, int ncuts,
                       int args, struct sw_buf *out)
{
    struct sw_pii_stream *s = sw_pii_stream_new(m);
    size_t len = strlen(text), prev = 0;
    assert_non_null(s);
    for (int i = 0; i <= ncuts; i++) {
        size_t end = i < ncuts ? cuts[i] : len;
        json_t *ch = args ? chunk_args(text + prev, end - prev) : chunk_content(text + prev, end - prev);
        assert_int_equal(sw_pii_stream_chunk(s, ch), SW_OK);
        const char *o = args ? args_of(ch) : content_of(ch);
        assert_non_null(o);
        assert_int_equal(sw_buf_append(out, o, strlen(o)), SW_OK);
        json_decref(ch);
        prev = end;
    }
    json_t *fin = sw_pii_stream_finish(s);
    if (fin) {
        assert_string_equal(json_string_value(json_object_get(fin, "id")), "chatcmpl-1");
        assert_string_equal(json_string_value(json_object_get(fin, "model")), "m");
        assert_int_equal(json_integer_value(json_object_get(fin, "created")), 1700000000);
        const char *o = args ? args_of(fin) : content_of(fin);
        assert_non_null(o);
        assert_int_equal(sw_buf_append(out, o, strlen(o)), SW_OK);
        json_decref(fin);
    }
    assert_null(sw_pii_stream_finish(s));
    sw_pii_stream_free(s);
}

static void test_stream_every_split(void **state)
{
    (void)state;
    struct sw_pii_map *m = sw_pii_map_new();
    char *masked = mask(m, "a\"b@example.com? no: x@example.com, 06-12345678, "
                           "postgres://u:p\"a\\ss@db", NULL);
    assert_string_equal(masked, "a\"[EMAIL_1]? no: [EMAIL_2], [PHONE_1], postgres://[SECRET_1]@db");
    free(masked);
    static const char *texts[] = {
        "Hi [EMAIL_1], [PHONE_1][EMAIL_2] [SECRET_1] [[EMAIL_1]] [EMAIL_ [PHONE_12] end [EMAIL_2]",
        "{\"to\": \"[EMAIL_1]\", \"dsn\": \"postgres://[SECRET_1]@db\"}",
        "trailing [EMAIL_",
        "[EMAIL_1]",
        "",
    };
    for (size_t t = 0; t < sizeof texts / sizeof texts[0]; t++) {
        for (int args = 0; args <= 1; args++) {
            const char *text = texts[t];
            size_t len = strlen(text);
            char *want = unmask(m, text, args);
            struct sw_buf out;
            sw_buf_init(&out, 1 << 16);
            stream_cut(m, text, NULL, 0, args, &out);
            assert_string_equal(out.ptr ? out.ptr : "", want);
            for (size_t i = 0; i <= len; i++) {
                sw_buf_reset(&out);
                size_t cuts[1] = {i};
                stream_cut(m, text, cuts, 1, args, &out);
                if (strcmp(out.ptr ? out.ptr : "", want))
                    fail_msg("split at %zu of \"%s\": got \"%s\" want \"%s\"", i, text, out.ptr, want);
            }
            if (len <= 64)
                for (size_t i = 0; i <= len; i++)
                    for (size_t j = i; j <= len; j++) {
                        sw_buf_reset(&out);
                        size_t cuts[2] = {i, j};
                        stream_cut(m, text, cuts, 2, args, &out);
                        if (strcmp(out.ptr ? out.ptr : "", want))
                            fail_msg("split at %zu,%zu of \"%s\": got \"%s\"", i, j, text, out.ptr);
                    }
            if (args) {
                json_t *a = json_loads(want, 0, NULL);
                if (t == 1) {
                    assert_non_null(a);
                    assert_string_equal(json_string_value(json_object_get(a, "to")), "b@example.com");
                    assert_string_equal(json_string_value(json_object_get(a, "dsn")), "postgres://u:p\"a\\ss@db");
                }
                json_decref(a);
            }
            sw_buf_free(&out);
            free(want);
        }
    }
    sw_pii_map_free(m);
}

static void test_stream_finish_reason_flush(void **state)
{
    (void)state;
    struct sw_pii_map *m = sw_pii_map_new();
    char *masked = mask(m, "x@example.com", NULL);
    free(masked);
    struct sw_pii_stream *s = sw_pii_stream_new(m);
    json_t *c1 = chunk_content("to [EMAIL_1] and [EMA", 21);
    assert_int_equal(sw_pii_stream_chunk(s, c1), SW_OK);
    assert_string_equal(content_of(c1), "to x@example.com and ");
    /* the last chunk carries finish_reason and no content: the held text goes there */
    json_t *c2 = json_pack("{s:s, s:s, s:i, s:s, s:[{s:i, s:{}, s:s}]}", "id", "chatcmpl-1",
                           "object", "chat.completion.chunk", "created", 1, "model", "m",
                           "choices", "index", 0, "delta", "finish_reason", "stop");
    assert_int_equal(sw_pii_stream_chunk(s, c2), SW_OK);
    assert_string_equal(content_of(c2), "[EMA");
    assert_null(sw_pii_stream_finish(s));
    json_decref(c1);
    json_decref(c2);
    /* a tool call's arguments held at finish_reason are flushed into tool_calls */
    json_t *c3 = chunk_args("{\"a\":\"[EMAIL_", 13);
    assert_int_equal(sw_pii_stream_chunk(s, c3), SW_OK);
    assert_string_equal(args_of(c3), "{\"a\":\"");
    json_t *c4 = json_pack("{s:s, s:[{s:i, s:n, s:s}]}", "id", "chatcmpl-1", "choices", "index", 0,
                           "delta", "finish_reason", "tool_calls");
    assert_int_equal(sw_pii_stream_chunk(s, c4), SW_OK);
    assert_string_equal(args_of(c4), "[EMAIL_");
    json_decref(c3);
    json_decref(c4);
    /* a stream cut short: finish() returns what is held */
    json_t *c5 = chunk_content("bye [EMAIL", 10);
    assert_int_equal(sw_pii_stream_chunk(s, c5), SW_OK);
    json_t *fin = sw_pii_stream_finish(s);
    assert_non_null(fin);
    assert_string_equal(content_of(fin), "[EMAIL");
    assert_string_equal(json_string_value(json_object_get(fin, "object")), "chat.completion.chunk");
    assert_true(json_is_null(json_object_get(json_array_get(json_object_get(fin, "choices"), 0),
                                             "finish_reason")));
    json_decref(fin);
    json_decref(c5);
    /* more than 128 tool calls or a negative index: refused */
    json_t *bad = chunk_content("x", 1);
    json_t *tc = json_pack("[{s:i, s:{s:s}}]", "index", 500, "function", "arguments", "[E");
    json_object_set_new(json_object_get(json_array_get(json_object_get(bad, "choices"), 0), "delta"),
                        "tool_calls", tc);
    assert_int_equal(sw_pii_stream_chunk(s, bad), SW_EINVAL);
    json_decref(bad);
    sw_pii_stream_free(s);
    sw_pii_map_free(m);
}

static void test_stream_empty_map_passthrough(void **state)
{
    (void)state;
    struct sw_pii_map *m = sw_pii_map_new();
    struct sw_pii_stream *s = sw_pii_stream_new(m);
    json_t *c = chunk_content("look: [EMAIL_1 and [", 20);
    assert_int_equal(sw_pii_stream_chunk(s, c), SW_OK);
    assert_string_equal(content_of(c), "look: [EMAIL_1 and [");
    assert_null(sw_pii_stream_finish(s));
    json_decref(c);
    sw_pii_stream_free(s);
    sw_pii_map_free(m);
}

static void test_bounds(void **state)
{
    (void)state;
    /* a long run of digits does not flood the candidates, nor do many '@' */
    size_t n = 1 << 20;
    char *t = malloc(n + 1);
    memset(t, '7', n);
    t[n] = '\0';
    assert_string_equal(find(t), "");
    for (size_t i = 0; i < n; i += 2)
        t[i] = '@', t[i + 1] = 'a';
    assert_string_equal(find(t), "");
    free(t);
}

/* One engine, several threads scanning at once (the scratch pool). */
static void *scan_thread(void *arg)
{
    (void)arg;
    const char *t = "mail a@example.com, IBAN NL91ABNA0417164300, ip 10.1.2.3, v1.2.3.4";
    for (int i = 0; i < 2000; i++) {
        struct sw_pii_counts c = {0};
        struct sw_pii_map *m = sw_pii_map_new();
        struct sw_buf b;
        sw_buf_init(&b, 4096);
        if (sw_pii_mask_text(E, m, t, strlen(t), &b, &c) || c.total != 3 ||
            strcmp(b.ptr, "mail [EMAIL_1], IBAN [IBAN_1], ip [IPV4_1], v1.2.3.4")) {
            sw_buf_free(&b);
            sw_pii_map_free(m);
            return (void *)1;
        }
        sw_buf_free(&b);
        sw_pii_map_free(m);
    }
    return NULL;
}

static void test_threads(void **state)
{
    (void)state;
    pthread_t th[6];
    for (int i = 0; i < 6; i++)
        assert_int_equal(pthread_create(&th[i], NULL, scan_thread, NULL), 0);
    for (int i = 0; i < 6; i++) {
        void *r;
        assert_int_equal(pthread_join(th[i], &r), 0);
        assert_null(r);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_detect_table),
        cmocka_unit_test(test_validators),
        cmocka_unit_test(test_phone_rules_match_libphonenumber),
        cmocka_unit_test(test_phone_intl_matches_parse),
        cmocka_unit_test(test_engine_errors),
        cmocka_unit_test(test_mask_stable),
        cmocka_unit_test(test_map_bound),
        cmocka_unit_test(test_request_roundtrip),
        cmocka_unit_test(test_request_whole_body),
        cmocka_unit_test(test_request_keys),
        cmocka_unit_test(test_request_plain_keys),
        cmocka_unit_test(test_request_depth),
        cmocka_unit_test(test_request_masked_rescans_clean),
        cmocka_unit_test(test_json_text_mask),
        cmocka_unit_test(test_unmask_message),
        cmocka_unit_test(test_unmask_native_stream),
        cmocka_unit_test(test_unicode_view),
        cmocka_unit_test(test_view_identity),
        cmocka_unit_test(test_digit_runs_joined),
        cmocka_unit_test(test_json_escapes),
        cmocka_unit_test(test_phone_national),
        cmocka_unit_test(test_national_ids),
        cmocka_unit_test(test_request_empty_and_bad),
        cmocka_unit_test(test_stream_every_split),
        cmocka_unit_test(test_stream_finish_reason_flush),
        cmocka_unit_test(test_stream_empty_map_passthrough),
        cmocka_unit_test(test_bounds),
        cmocka_unit_test(test_threads),
        cmocka_unit_test(test_literal_triggers_match_regexes),
        cmocka_unit_test(test_literal_triggers_repeated),
        cmocka_unit_test(test_detect_table_without_avx2),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
