#include "upstream/oauth.h"

#include <jansson.h>
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"

/* ---- Service-account key files ---- */

static char *dup_field(const json_t *o, const char *key)
{
    const char *v = json_string_value(json_object_get(o, key));
    return v && v[0] ? strdup(v) : NULL;
}

int sw_oauth_sa_parse(const char *json, size_t len, struct sw_oauth_sa *sa, char *why, size_t n)
{
    memset(sa, 0, sizeof *sa);
    json_t *o = len <= SW_OAUTH_BODY_MAX ? json_loadb(json, len, 0, NULL) : NULL;
    const char *type = json_string_value(json_object_get(o, "type"));
    int err = SW_EINVAL;
    if (!json_is_object(o)) {
        snprintf(why, n, "not a JSON object (a service-account key file is)");
        goto out;
    }
    if (!type || strcmp(type, "service_account")) {
        snprintf(why, n, "its type is not \"service_account\"");
        goto out;
    }
    sa->client_email = dup_field(o, "client_email");
    sa->private_key = dup_field(o, "private_key");
    sa->private_key_id = dup_field(o, "private_key_id");
    sa->token_uri = dup_field(o, "token_uri");
    const char *missing = !sa->client_email ? "client_email"
                          : !sa->private_key ? "private_key"
                          : !sa->token_uri   ? "token_uri"
                                             : NULL;
    if (missing) {
        snprintf(why, n, "it has no %s", missing);
        sw_oauth_sa_free(sa);
        goto out;
    }
    err = SW_OK;
out:
    json_decref(o);
    return err;
}

void sw_oauth_sa_free(struct sw_oauth_sa *sa)
{
    free(sa->client_email);
    free(sa->private_key);
    free(sa->private_key_id);
    free(sa->token_uri);
    memset(sa, 0, sizeof *sa);
}

/* ---- JWT ---- */

int sw_oauth_b64url(struct sw_buf *out, const unsigned char *p, size_t len)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    char q[4];
    for (size_t i = 0; i < len; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16;
        size_t k = len - i >= 3 ? 4 : len - i + 1;
        if (i + 1 < len)
            v |= (uint32_t)p[i + 1] << 8;
        if (i + 2 < len)
            v |= p[i + 2];
        q[0] = tab[(v >> 18) & 63];
        q[1] = tab[(v >> 12) & 63];
        q[2] = tab[(v >> 6) & 63];
        q[3] = tab[v & 63];
        if (sw_buf_append(out, q, k))
            return SW_ENOMEM;
    }
    return SW_OK;
}

/* The RS256 signature of len bytes with key; *sig malloc'ed. */
static int sign(EVP_PKEY *key, const char *data, size_t len, unsigned char **sig, size_t *sig_len)
{
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    int err = SW_ENOMEM;
    *sig = NULL;
    if (!md)
        return err;
    if (EVP_DigestSignInit(md, NULL, EVP_sha256(), NULL, key) != 1 ||
        EVP_DigestSign(md, NULL, sig_len, (const unsigned char *)data, len) != 1) {
        err = SW_EINVAL;
        goto out;
    }
    if (!(*sig = malloc(*sig_len)))
        goto out;
    if (EVP_DigestSign(md, *sig, sig_len, (const unsigned char *)data, len) != 1) {
        free(*sig);
        *sig = NULL;
        err = SW_EINVAL;
        goto out;
    }
    err = SW_OK;
out:
    EVP_MD_CTX_free(md);
    return err;
}

int sw_oauth_jwt_rs256(const char *pem, const char *header_json, const char *claims_json,
                       char **out)
{
    *out = NULL;
    BIO *bio = BIO_new_mem_buf(pem, -1);
    EVP_PKEY *key = bio ? PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL) : NULL;
    BIO_free(bio);
    if (!key || EVP_PKEY_base_id(key) != EVP_PKEY_RSA) {
        EVP_PKEY_free(key);
        return bio ? SW_EINVAL : SW_ENOMEM;
    }
    struct sw_buf b;
    sw_buf_init(&b, SW_OAUTH_BODY_MAX);
    unsigned char *sig = NULL;
    size_t sig_len = 0;
    int err = sw_oauth_b64url(&b, (const unsigned char *)header_json, strlen(header_json));
    if (!err)
        err = sw_buf_append(&b, ".", 1);
    if (!err)
        err = sw_oauth_b64url(&b, (const unsigned char *)claims_json, strlen(claims_json));
    if (!err)
        err = sign(key, b.ptr, b.len, &sig, &sig_len);
    if (!err)
        err = sw_buf_append(&b, ".", 1);
    if (!err)
        err = sw_oauth_b64url(&b, sig, sig_len);
    free(sig);
    EVP_PKEY_free(key);
    if (err) {
        sw_buf_free(&b);
        return err;
    }
    *out = b.ptr;
    return SW_OK;
}

int sw_oauth_sa_assertion(const struct sw_oauth_sa *sa, const char *aud, const char *scope,
                          int64_t now_s, long lifetime_s, char **out)
{
    *out = NULL;
    json_t *h = json_pack("{s:s, s:s}", "alg", "RS256", "typ", "JWT");
    json_t *c = json_pack("{s:s, s:s, s:s, s:I, s:I}", "iss", sa->client_email, "scope", scope,
                          "aud", aud, "iat", (json_int_t)now_s,
                          "exp", (json_int_t)(now_s + lifetime_s));
    if (h && sa->private_key_id)
        json_object_set_new(h, "kid", json_string(sa->private_key_id));
    char *hs = h ? json_dumps(h, JSON_COMPACT) : NULL, *cs = c ? json_dumps(c, JSON_COMPACT) : NULL;
    int err = hs && cs ? sw_oauth_jwt_rs256(sa->private_key, hs, cs, out) : SW_ENOMEM;
    free(hs);
    free(cs);
    json_decref(h);
    json_decref(c);
    return err;
}

/* ---- Form bodies ---- */

static int form_escaped(struct sw_buf *out, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        bool plain = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                     (ch >= '0' && ch <= '9') || ch == '-' || ch == '.' || ch == '_' || ch == '~';
        char e[3] = {'%', hex[ch >> 4], hex[ch & 15]};
        if (plain ? sw_buf_append(out, s, 1) : sw_buf_append(out, e, 3))
            return SW_ENOMEM;
    }
    return SW_OK;
}

int sw_oauth_form(struct sw_buf *out, const char *key, const char *value)
{
    if ((out->len && sw_buf_append(out, "&", 1)) || form_escaped(out, key) ||
        sw_buf_append(out, "=", 1) || form_escaped(out, value))
        return SW_ENOMEM;
    return SW_OK;
}

/* ---- Token responses ---- */

static bool visible_ascii(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] <= 0x20 || (unsigned char)s[i] >= 0x7f)
            return false;
    return true;
}

/* An expires_in: a non-negative integer, or such a number as a string
 * (some endpoints quote it); -1 when absent or anything else. */
static long expires_of(const json_t *v)
{
    if (json_is_integer(v) && json_integer_value(v) >= 0 && json_integer_value(v) <= 10000000)
        return (long)json_integer_value(v);
    const char *s = json_string_value(v);
    if (s && s[0] && strlen(s) <= 8 && strspn(s, "0123456789") == strlen(s))
        return strtol(s, NULL, 10);
    return -1;
}

int sw_oauth_token_parse(const char *body, size_t len, char **token, long *expires_in_s,
                         char *why, size_t n)
{
    *token = NULL;
    *expires_in_s = -1;
    json_t *o = len <= SW_OAUTH_BODY_MAX ? json_loadb(body, len, 0, NULL) : NULL;
    json_t *at = json_object_get(o, "access_token");
    const char *code = json_string_value(json_object_get(o, "error"));
    int err = SW_EPROTO;
    if (!json_is_object(o)) {
        snprintf(why, n, "not a JSON object");
    } else if (!json_is_string(at)) {
        size_t cl = code ? strlen(code) : 0;
        if (cl && cl < 64 && strspn(code, "abcdefghijklmnopqrstuvwxyz_") == cl)
            snprintf(why, n, "%s", code);
        else
            snprintf(why, n, "no access_token");
    } else if (!json_string_length(at) || json_string_length(at) > SW_OAUTH_TOKEN_MAX ||
               !visible_ascii(json_string_value(at), json_string_length(at))) {
        snprintf(why, n, "the access_token is empty, too long or not visible ASCII");
    } else {
        *expires_in_s = expires_of(json_object_get(o, "expires_in"));
        *token = strdup(json_string_value(at));
        err = *token ? SW_OK : SW_ENOMEM;
    }
    json_decref(o);
    return err;
}
