#include "gauth.h"

#include <jansson.h>
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int hexval(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                        : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                                               : -1;
}

bool sw_llmsim_form_get(const char *body, size_t len, const char *key, char *out, size_t cap)
{
    size_t kl = strlen(key), i = 0;
    while (i < len) {
        size_t end = i;
        while (end < len && body[end] != '&')
            end++;
        if (end - i > kl && !memcmp(body + i, key, kl) && body[i + kl] == '=') {
            size_t o = 0;
            for (size_t j = i + kl + 1; j < end; j++) {
                char c = body[j];
                if (c == '+')
                    c = ' ';
                else if (c == '%' && j + 2 < end && hexval(body[j + 1]) >= 0 &&
                         hexval(body[j + 2]) >= 0) {
                    c = (char)(hexval(body[j + 1]) * 16 + hexval(body[j + 2]));
                    j += 2;
                }
                if (o + 1 >= cap)
                    return false;
                out[o++] = c;
            }
            out[o] = '\0';
            return true;
        }
        i = end + 1;
    }
    return false;
}

/* base64url (no padding) of n bytes into out; its length, or -1. */
static long b64url_decode(const char *s, size_t n, unsigned char *out, size_t cap)
{
    uint32_t acc = 0;
    int bits = 0;
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        int v = c >= 'A' && c <= 'Z' ? c - 'A' : c >= 'a' && c <= 'z' ? c - 'a' + 26
                : c >= '0' && c <= '9' ? c - '0' + 52 : c == '-' ? 62 : c == '_' ? 63 : -1;
        if (v < 0)
            return -1;
        acc = (acc << 6) | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            if (o >= cap)
                return -1;
            out[o++] = (unsigned char)(acc >> bits);
        }
    }
    return (long)o;
}

static int verify(const char *pub_pem, const char *signed_part, size_t signed_len,
                  const unsigned char *sig, size_t sig_len)
{
    BIO *bio = BIO_new_mem_buf(pub_pem, -1);
    EVP_PKEY *key = bio ? PEM_read_bio_PUBKEY(bio, NULL, NULL, NULL) : NULL;
    BIO_free(bio);
    EVP_MD_CTX *md = key ? EVP_MD_CTX_new() : NULL;
    int ok = md && EVP_DigestVerifyInit(md, NULL, EVP_sha256(), NULL, key) == 1 &&
             EVP_DigestVerify(md, sig, sig_len, (const unsigned char *)signed_part, signed_len) == 1;
    EVP_MD_CTX_free(md);
    EVP_PKEY_free(key);
    return ok ? 0 : -1;
}

static int why_is(char *why, size_t n, const char *msg)
{
    snprintf(why, n, "%s", msg);
    return -1;
}

/* The claims of a verified assertion checked. */
static int claims_ok(const unsigned char *c, long clen, int64_t now_s, char *why, size_t n)
{
    json_t *o = json_loadb((const char *)c, (size_t)clen, 0, NULL);
    const char *iss = json_string_value(json_object_get(o, "iss"));
    const char *scope = json_string_value(json_object_get(o, "scope"));
    const char *aud = json_string_value(json_object_get(o, "aud"));
    json_t *iat = json_object_get(o, "iat"), *exp = json_object_get(o, "exp");
    int rc = 0;
    if (!iss || !iss[0] || !scope || !scope[0] || !aud || !aud[0])
        rc = why_is(why, n, "invalid_grant: iss, scope and aud are required");
    else if (!json_is_integer(iat) || !json_is_integer(exp) || json_integer_value(iat) > now_s + 60 ||
             json_integer_value(exp) + 60 <= now_s || json_integer_value(exp) <= json_integer_value(iat))
        rc = why_is(why, n, "invalid_grant: Invalid JWT: Token must be a short-lived token");
    json_decref(o);
    return rc;
}

int sw_llmsim_google_grant(const char *body, size_t len, const char *pub_pem, int64_t now_s,
                           char *why, size_t n)
{
    char gt[128];
    static char jwt[16384];
    if (!sw_llmsim_form_get(body, len, "grant_type", gt, sizeof gt) ||
        strcmp(gt, "urn:ietf:params:oauth:grant-type:jwt-bearer"))
        return why_is(why, n, "unsupported_grant_type: Invalid grant_type");
    if (!sw_llmsim_form_get(body, len, "assertion", jwt, sizeof jwt))
        return why_is(why, n, "invalid_request: Missing required parameter: assertion");
    char *d1 = strchr(jwt, '.'), *d2 = d1 ? strchr(d1 + 1, '.') : NULL;
    if (!d1 || !d2 || strchr(d2 + 1, '.'))
        return why_is(why, n, "invalid_grant: Invalid JWT: not three parts");
    unsigned char head[1024], claims[4096], sig[1024];
    long hl = b64url_decode(jwt, (size_t)(d1 - jwt), head, sizeof head);
    long cl = b64url_decode(d1 + 1, (size_t)(d2 - d1 - 1), claims, sizeof claims);
    long sl = b64url_decode(d2 + 1, strlen(d2 + 1), sig, sizeof sig);
    if (hl <= 0 || cl <= 0 || sl <= 0)
        return why_is(why, n, "invalid_grant: Invalid JWT: bad base64url");
    json_t *h = json_loadb((const char *)head, (size_t)hl, 0, NULL);
    const char *alg = json_string_value(json_object_get(h, "alg"));
    bool rs256 = alg && !strcmp(alg, "RS256");
    json_decref(h);
    if (!rs256)
        return why_is(why, n, "invalid_grant: Invalid JWT: alg must be RS256");
    if (!pub_pem || verify(pub_pem, jwt, (size_t)(d2 - jwt), sig, (size_t)sl))
        return why_is(why, n, "invalid_grant: Invalid JWT Signature.");
    return claims_ok(claims, cl, now_s, why, n);
}

int sw_llmsim_entra_grant(const char *body, size_t len, const char *client_id,
                          const char *secret, char *why, size_t n)
{
    char gt[64], id[256], sec[512], scope[512];
    if (!sw_llmsim_form_get(body, len, "grant_type", gt, sizeof gt) ||
        strcmp(gt, "client_credentials"))
        return why_is(why, n, "unsupported_grant_type");
    if (!sw_llmsim_form_get(body, len, "client_id", id, sizeof id) || strcmp(id, client_id))
        return why_is(why, n, "unauthorized_client");
    if (!sw_llmsim_form_get(body, len, "client_secret", sec, sizeof sec) || strcmp(sec, secret))
        return why_is(why, n, "invalid_client");
    if (!sw_llmsim_form_get(body, len, "scope", scope, sizeof scope) || !scope[0])
        return why_is(why, n, "invalid_scope");
    return 0;
}

bool sw_llmsim_entra_path(const char *path)
{
    static const char tail[] = "/oauth2/v2.0/token";
    size_t n = strlen(path), t = sizeof tail - 1;
    return n > t + 1 && path[0] == '/' && !strcmp(path + n - t, tail) &&
           !memchr(path + 1, '/', n - t - 1);
}
