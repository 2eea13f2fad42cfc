/* llmsim's Google emulation: the generateContent routes, the request read
 * into the simulator's chat facts, the token endpoints' checks (an RS256
 * assertion signed here with OpenSSL, and one tampered with). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include "gauth.h"
#include "gemini.h"

static void test_routes(void **state)
{
    (void)state;
    char m[64];
    bool stream, vertex;
    assert_int_equal(sw_llmsim_gem_route("/v1beta/models/gemini-2.0-flash:generateContent", m, sizeof m,
                                         &stream, &vertex), 0);
    assert_string_equal(m, "gemini-2.0-flash");
    assert_false(stream);
    assert_false(vertex);
    assert_int_equal(sw_llmsim_gem_route("/v1/projects/p/locations/us-central1/publishers/google/models/"
                                         "g:streamGenerateContent", m, sizeof m, &stream, &vertex), 0);
    assert_string_equal(m, "g");
    assert_true(stream);
    assert_true(vertex);
    static const char *const no[] = {
        "/v1beta/models/g", "/v1beta/models/g:countTokens", "/v1/chat/completions",
        "/v1beta/models/:generateContent", "/v1/projects/p/publishers/google/models/g:generateContent",
        "/v2/models/g:generateContent", "/v1beta/models/a/b:generateContent",
    };
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
        assert_int_equal(sw_llmsim_gem_route(no[i], m, sizeof m, &stream, &vertex), -1);
}

static void test_parse(void **state)
{
    (void)state;
    json_t *r = json_loads("{\"systemInstruction\":{\"parts\":[{\"text\":\"sys\"}]},\"contents\":["
                           "{\"role\":\"user\",\"parts\":[{\"text\":\"llmsim:call f {\\\"a\\\":1}\"}]},"
                           "{\"role\":\"model\",\"parts\":[{\"functionCall\":{\"name\":\"f\",\"args\":{}}}]},"
                           "{\"role\":\"user\",\"parts\":[{\"functionResponse\":{\"name\":\"f\",\"response\":"
                           "{\"r\":\"done\"}}}]}],\"tools\":[{\"functionDeclarations\":[{\"name\":\"f\"}]}],"
                           "\"generationConfig\":{\"maxOutputTokens\":7,\"responseMimeType\":\"application/json\"}}",
                           0, NULL);
    struct sw_llmsim_chat c;
    char err[128];
    assert_int_equal(sw_llmsim_gem_parse(r, &c, err, sizeof err), 0);
    assert_int_equal(c.max_tokens, 7);
    assert_true(c.wants_json);
    assert_int_equal(c.n_messages, 4);
    /* the function's result answers the scripted call: it is the echo */
    assert_string_equal(c.last_user.ptr, "{\"r\":\"done\"}");
    assert_string_equal(c.forced_tool, "");
    sw_llmsim_chat_free(&c);
    json_decref(r);
    r = json_loads("{\"contents\":[{\"parts\":[{\"text\":\"hi\"}]}],\"toolConfig\":{\"functionCallingConfig\":"
                   "{\"mode\":\"ANY\",\"allowedFunctionNames\":[\"g\"]}}}", 0, NULL);
    assert_int_equal(sw_llmsim_gem_parse(r, &c, err, sizeof err), 0);
    assert_string_equal(c.forced_tool, "g");
    assert_string_equal(c.last_user.ptr, "hi");
    sw_llmsim_chat_free(&c);
    json_decref(r);
    static const char *const bad[] = {"{}", "{\"contents\":[]}", "{\"contents\":[{\"role\":\"x\",\"parts\":[]}]}",
                                      "{\"contents\":[{\"parts\":[{\"nope\":1}]}]}",
                                      "{\"contents\":[{\"parts\":[{\"text\":\"a\"}]}],\"generationConfig\":"
                                      "{\"maxOutputTokens\":0}}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        r = json_loads(bad[i], 0, NULL);
        assert_int_not_equal(sw_llmsim_gem_parse(r, &c, err, sizeof err), 0);
        sw_llmsim_chat_free(&c);
        json_decref(r);
    }
}

static void b64url(const unsigned char *p, size_t n, char *out)
{
    static const char t[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    size_t o = 0;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0) | (i + 2 < n ? p[i + 2] : 0);
        size_t k = n - i >= 3 ? 4 : n - i + 1;
        for (size_t j = 0; j < k; j++)
            out[o++] = t[(v >> (18 - 6 * j)) & 63];
    }
    out[o] = '\0';
}

/* A grant body with an assertion of claims signed by key. */
static void grant(EVP_PKEY *key, const char *claims, char *body, size_t cap, bool tamper)
{
    char h[128], c[1024], signing[2048], s[1024];
    static const char head[] = "{\"alg\":\"RS256\",\"typ\":\"JWT\"}";
    b64url((const unsigned char *)head, sizeof head - 1, h);
    b64url((const unsigned char *)claims, strlen(claims), c);
    snprintf(signing, sizeof signing, "%s.%s", h, c);
    unsigned char sig[512];
    size_t sl = sizeof sig;
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    assert_int_equal(EVP_DigestSignInit(md, NULL, EVP_sha256(), NULL, key), 1);
    assert_int_equal(EVP_DigestSign(md, sig, &sl, (unsigned char *)signing, strlen(signing)), 1);
    EVP_MD_CTX_free(md);
    if (tamper)
        sig[10] ^= 1;
    b64url(sig, sl, s);
    snprintf(body, cap, "grant_type=urn%%3Aietf%%3Aparams%%3Aoauth%%3Agrant-type%%3Ajwt-bearer&assertion=%s.%s",
             signing, s);
}

static void test_google_grant(void **state)
{
    (void)state;
    EVP_PKEY *key = EVP_RSA_gen(2048);
    BIO *b = BIO_new(BIO_s_mem());
    PEM_write_bio_PUBKEY(b, key);
    char *p;
    long n = BIO_get_mem_data(b, &p);
    char *pub = strndup(p, (size_t)n);
    BIO_free(b);
    char body[4096], why[160];
    static const char ok[] = "{\"iss\":\"a@b\",\"scope\":\"s\",\"aud\":\"http://x/token\",\"iat\":1000,\"exp\":4600}";
    grant(key, ok, body, sizeof body, false);
    assert_int_equal(sw_llmsim_google_grant(body, strlen(body), pub, 1010, why, sizeof why), 0);
    assert_int_equal(sw_llmsim_google_grant(body, strlen(body), pub, 9000, why, sizeof why), -1);
    assert_non_null(strstr(why, "short-lived"));
    grant(key, ok, body, sizeof body, true);
    assert_int_equal(sw_llmsim_google_grant(body, strlen(body), pub, 1010, why, sizeof why), -1);
    assert_non_null(strstr(why, "Signature"));
    grant(key, "{\"iss\":\"a@b\",\"aud\":\"x\",\"iat\":1000,\"exp\":4600}", body, sizeof body, false);
    assert_int_equal(sw_llmsim_google_grant(body, strlen(body), pub, 1010, why, sizeof why), -1);
    assert_int_equal(sw_llmsim_google_grant("grant_type=client_credentials", 29, pub, 1010, why, sizeof why), -1);
    free(pub);
    EVP_PKEY_free(key);
}

static void test_entra_and_forms(void **state)
{
    (void)state;
    char v[64], why[64];
    static const char f[] = "a=1&scope=x%2F.default+y&b=";
    assert_true(sw_llmsim_form_get(f, sizeof f - 1, "scope", v, sizeof v));
    assert_string_equal(v, "x/.default y");
    assert_true(sw_llmsim_form_get(f, sizeof f - 1, "b", v, sizeof v));
    assert_string_equal(v, "");
    assert_false(sw_llmsim_form_get(f, sizeof f - 1, "c", v, sizeof v));
    static const char g[] = "grant_type=client_credentials&client_id=app&client_secret=s3&scope=x";
    assert_int_equal(sw_llmsim_entra_grant(g, sizeof g - 1, "app", "s3", why, sizeof why), 0);
    assert_int_equal(sw_llmsim_entra_grant(g, sizeof g - 1, "app", "other", why, sizeof why), -1);
    assert_string_equal(why, "invalid_client");
    assert_true(sw_llmsim_entra_path("/contoso.onmicrosoft.com/oauth2/v2.0/token"));
    assert_false(sw_llmsim_entra_path("/oauth2/v2.0/token"));
    assert_false(sw_llmsim_entra_path("/a/b/oauth2/v2.0/token"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_routes), cmocka_unit_test(test_parse),
        cmocka_unit_test(test_google_grant), cmocka_unit_test(test_entra_and_forms),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
