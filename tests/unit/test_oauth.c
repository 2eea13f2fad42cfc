/* The OAuth2 pieces of the token sources (upstream/oauth.h): base64url, the
 * RS256 JWT (its signature verified here with OpenSSL against the public
 * half of a key made for the test), a service account's assertion and key
 * file, form bodies, token answers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <jansson.h>
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>

#include "common/err.h"
#include "upstream/oauth.h"

static EVP_PKEY *key;
static char *pem;

static int setup(void **state)
{
    (void)state;
    key = EVP_RSA_gen(2048);
    BIO *b = BIO_new(BIO_s_mem());
    if (!key || !b || PEM_write_bio_PrivateKey(b, key, NULL, NULL, 0, NULL, NULL) != 1)
        return -1;
    char *p;
    long n = BIO_get_mem_data(b, &p);
    pem = strndup(p, (size_t)n);
    BIO_free(b);
    return pem ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    EVP_PKEY_free(key);
    free(pem);
    return 0;
}

/* base64url decoding, for the checks (padding-free, - and _). */
static size_t b64url_decode(const char *s, size_t n, unsigned char *out)
{
    uint32_t acc = 0;
    int bits = 0;
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        int v = c >= 'A' && c <= 'Z' ? c - 'A' : c >= 'a' && c <= 'z' ? c - 'a' + 26
                : c >= '0' && c <= '9' ? c - '0' + 52 : c == '-' ? 62 : c == '_' ? 63 : -1;
        assert_true(v >= 0);
        acc = (acc << 6) | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[o++] = (unsigned char)(acc >> bits);
        }
    }
    return o;
}

static void test_b64url(void **state)
{
    (void)state;
    static const struct { const char *in, *out; } t[] = {
        {"", ""}, {"f", "Zg"}, {"fo", "Zm8"}, {"foo", "Zm9v"}, {"foob", "Zm9vYg"},
        {"\xfb\xff", "-_8"}, {"{\"alg\":\"RS256\"}", "eyJhbGciOiJSUzI1NiJ9"},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        struct sw_buf b;
        sw_buf_init(&b, 1024);
        assert_int_equal(sw_oauth_b64url(&b, (const unsigned char *)t[i].in, strlen(t[i].in)), SW_OK);
        assert_string_equal(b.ptr ? b.ptr : "", t[i].out);
        sw_buf_free(&b);
    }
}

/* The three parts of a compact JWS: the signature checks out with the
 * public key, over the first two parts as sent. */
static void verify_jws(const char *jwt, json_t **header, json_t **claims)
{
    const char *d1 = strchr(jwt, '.'), *d2 = d1 ? strchr(d1 + 1, '.') : NULL;
    assert_non_null(d2);
    assert_null(strchr(d2 + 1, '.'));
    unsigned char h[1024], c[4096], sig[1024];
    size_t hl = b64url_decode(jwt, (size_t)(d1 - jwt), h);
    size_t cl = b64url_decode(d1 + 1, (size_t)(d2 - d1 - 1), c);
    size_t sl = b64url_decode(d2 + 1, strlen(d2 + 1), sig);
    assert_int_equal(sl, 256); /* RSA 2048 */
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    assert_int_equal(EVP_DigestVerifyInit(md, NULL, EVP_sha256(), NULL, key), 1);
    assert_int_equal(EVP_DigestVerify(md, sig, sl, (const unsigned char *)jwt, (size_t)(d2 - jwt)), 1);
    /* one byte changed: the signature no longer verifies */
    char *bad = strdup(jwt);
    bad[1] ^= 1;
    assert_int_equal(EVP_DigestVerifyInit(md, NULL, EVP_sha256(), NULL, key), 1);
    assert_int_not_equal(EVP_DigestVerify(md, sig, sl, (const unsigned char *)bad, (size_t)(d2 - jwt)), 1);
    free(bad);
    EVP_MD_CTX_free(md);
    *header = json_loadb((const char *)h, hl, 0, NULL);
    *claims = json_loadb((const char *)c, cl, 0, NULL);
    assert_non_null(*header);
    assert_non_null(*claims);
}

static void test_jwt_rs256(void **state)
{
    (void)state;
    char *jwt = NULL;
    assert_int_equal(sw_oauth_jwt_rs256(pem, "{\"alg\":\"RS256\",\"typ\":\"JWT\"}", "{\"a\":1}", &jwt),
                     SW_OK);
    json_t *h, *c;
    verify_jws(jwt, &h, &c);
    assert_string_equal(json_string_value(json_object_get(h, "alg")), "RS256");
    assert_int_equal(json_integer_value(json_object_get(c, "a")), 1);
    json_decref(h);
    json_decref(c);
    free(jwt);
    /* the same input signs the same (PKCS#1 v1.5 is deterministic) */
    char *a = NULL, *b = NULL;
    assert_int_equal(sw_oauth_jwt_rs256(pem, "{}", "{}", &a), SW_OK);
    assert_int_equal(sw_oauth_jwt_rs256(pem, "{}", "{}", &b), SW_OK);
    assert_string_equal(a, b);
    free(a);
    free(b);
    /* not a key, or not an RSA one */
    assert_int_equal(sw_oauth_jwt_rs256("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
                                        "{}", "{}", &jwt), SW_EINVAL);
    assert_null(jwt);
    EVP_PKEY *ec = EVP_EC_gen("P-256");
    BIO *bio = BIO_new(BIO_s_mem());
    PEM_write_bio_PrivateKey(bio, ec, NULL, NULL, 0, NULL, NULL);
    char *p;
    long n = BIO_get_mem_data(bio, &p);
    char *ecpem = strndup(p, (size_t)n);
    assert_int_equal(sw_oauth_jwt_rs256(ecpem, "{}", "{}", &jwt), SW_EINVAL);
    free(ecpem);
    BIO_free(bio);
    EVP_PKEY_free(ec);
}

static void test_assertion(void **state)
{
    (void)state;
    struct sw_oauth_sa sa = {.client_email = "sw@p.iam.gserviceaccount.com", .private_key = pem,
                             .private_key_id = "kid-9", .token_uri = "https://oauth2.googleapis.com/token"};
    char *jwt = NULL;
    assert_int_equal(sw_oauth_sa_assertion(&sa, sa.token_uri, "https://www.googleapis.com/auth/cloud-platform",
                                           1700000000, 3600, &jwt), SW_OK);
    json_t *h, *c;
    verify_jws(jwt, &h, &c);
    assert_string_equal(json_string_value(json_object_get(h, "kid")), "kid-9");
    assert_string_equal(json_string_value(json_object_get(h, "typ")), "JWT");
    assert_string_equal(json_string_value(json_object_get(c, "iss")), sa.client_email);
    assert_string_equal(json_string_value(json_object_get(c, "aud")), sa.token_uri);
    assert_string_equal(json_string_value(json_object_get(c, "scope")),
                        "https://www.googleapis.com/auth/cloud-platform");
    assert_int_equal(json_integer_value(json_object_get(c, "iat")), 1700000000);
    assert_int_equal(json_integer_value(json_object_get(c, "exp")), 1700003600);
    json_decref(h);
    json_decref(c);
    free(jwt);
}

static void test_sa_file(void **state)
{
    (void)state;
    json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s}", "type", "service_account", "client_email", "a@b",
                          "private_key", pem, "private_key_id", "k", "token_uri", "https://t/token");
    char *text = json_dumps(o, 0), why[160];
    struct sw_oauth_sa sa;
    assert_int_equal(sw_oauth_sa_parse(text, strlen(text), &sa, why, sizeof why), SW_OK);
    assert_string_equal(sa.client_email, "a@b");
    assert_string_equal(sa.token_uri, "https://t/token");
    assert_string_equal(sa.private_key, pem);
    sw_oauth_sa_free(&sa);
    free(text);
    static const struct { const char *json, *why; } bad[] = {
        {"[]", "not a JSON object"},
        {"{\"type\":\"authorized_user\"}", "its type is not"},
        {"{\"type\":\"service_account\",\"private_key\":\"k\",\"token_uri\":\"u\"}", "no client_email"},
        {"{\"type\":\"service_account\",\"client_email\":\"e\",\"token_uri\":\"u\"}", "no private_key"},
        {"{\"type\":\"service_account\",\"client_email\":\"e\",\"private_key\":\"k\"}", "no token_uri"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(sw_oauth_sa_parse(bad[i].json, strlen(bad[i].json), &sa, why, sizeof why), SW_EINVAL);
        assert_non_null(strstr(why, bad[i].why));
        assert_null(sa.client_email);
        /* what is wrong, never a value of the file */
        assert_null(strstr(why, "\"k\""));
    }
    json_decref(o);
}

static void test_form(void **state)
{
    (void)state;
    struct sw_buf b;
    sw_buf_init(&b, 4096);
    assert_int_equal(sw_oauth_form(&b, "grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"), SW_OK);
    assert_int_equal(sw_oauth_form(&b, "scope", "a b/.default&x=1~"), SW_OK);
    assert_string_equal(b.ptr, "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer"
                               "&scope=a%20b%2F.default%26x%3D1~");
    sw_buf_free(&b);
}

static void test_token_answers(void **state)
{
    (void)state;
    static const struct {
        const char *body;
        int rc;
        const char *token;
        long expires;
        const char *why;
    } t[] = {
        {"{\"access_token\":\"ya29.a\",\"expires_in\":3599,\"token_type\":\"Bearer\"}", SW_OK, "ya29.a", 3599, NULL},
        {"{\"access_token\":\"eyJ.x\",\"expires_in\":\"3600\"}", SW_OK, "eyJ.x", 3600, NULL},
        {"{\"access_token\":\"t\"}", SW_OK, "t", -1, NULL},
        {"{\"access_token\":\"t\",\"expires_in\":-5}", SW_OK, "t", -1, NULL},
        {"{\"error\":\"invalid_grant\",\"error_description\":\"Invalid JWT Signature.\"}", SW_EPROTO, NULL, -1, "invalid_grant"},
        {"{\"error\":\"Bad Thing <script>\"}", SW_EPROTO, NULL, -1, "no access_token"},
        {"{\"access_token\":\"\"}", SW_EPROTO, NULL, -1, "empty"},
        {"{\"access_token\":\"a b\"}", SW_EPROTO, NULL, -1, "visible ASCII"},
        {"{\"access_token\":7}", SW_EPROTO, NULL, -1, "no access_token"},
        {"nope", SW_EPROTO, NULL, -1, "not a JSON object"},
        {"", SW_EPROTO, NULL, -1, "not a JSON object"},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        char *tok = NULL, why[96] = "";
        long exp = 0;
        assert_int_equal(sw_oauth_token_parse(t[i].body, strlen(t[i].body), &tok, &exp, why, sizeof why), t[i].rc);
        if (t[i].token) {
            assert_string_equal(tok, t[i].token);
            assert_int_equal(exp, t[i].expires);
        } else {
            assert_null(tok);
            assert_non_null(strstr(why, t[i].why));
        }
        free(tok);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_b64url),     cmocka_unit_test(test_jwt_rs256),
        cmocka_unit_test(test_assertion),  cmocka_unit_test(test_sa_file),
        cmocka_unit_test(test_form),       cmocka_unit_test(test_token_answers),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
