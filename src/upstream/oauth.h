/* The OAuth2 pieces of a token source (upstream/token.h), apart from its
 * I/O: a Google service account's key file, the RS256-signed JWT it
 * exchanges for an access token (RFC 7523, grant type
 * urn:ietf:params:oauth:grant-type:jwt-bearer), form bodies, and the token
 * endpoint's answer. No I/O, no clock (the time comes in); the signature is
 * OpenSSL's (EVP, RSASSA-PKCS1-v1_5 with SHA-256). */
#ifndef SW_UPSTREAM_OAUTH_H
#define SW_UPSTREAM_OAUTH_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

/* The largest access token kept (Google's are ~1-2 KB, Entra's ~2-4 KB). */
#define SW_OAUTH_TOKEN_MAX 16384
/* The largest token-endpoint answer or key file read. */
#define SW_OAUTH_BODY_MAX 65536

/* What a service-account key file says (all malloc'ed; NULL: absent). */
struct sw_oauth_sa {
    char *client_email;
    char *private_key;      /* PEM */
    char *private_key_id;   /* the JWT's kid */
    char *token_uri;
};

/* Parses a service-account JSON (len bytes, borrowed): type
 * "service_account", client_email, private_key and token_uri required.
 * SW_OK, or SW_EINVAL with why (n bytes) saying what is wrong (never a
 * value of the file), or SW_ENOMEM. */
int sw_oauth_sa_parse(const char *json, size_t len, struct sw_oauth_sa *sa, char *why, size_t n);
void sw_oauth_sa_free(struct sw_oauth_sa *sa);

/* base64url without padding (RFC 7515) of len bytes, appended. */
int sw_oauth_b64url(struct sw_buf *out, const unsigned char *p, size_t len);

/* A compact JWS: base64url(header).base64url(claims).base64url(RS256
 * signature) with the PEM private key (RSA). *out malloc'ed. SW_OK,
 * SW_EINVAL (the key cannot be read or is not RSA) or SW_ENOMEM. */
int sw_oauth_jwt_rs256(const char *pem, const char *header_json, const char *claims_json,
                       char **out);

/* The assertion a service account sends: header {"alg":"RS256","typ":"JWT",
 * "kid"}, claims iss (client_email), scope, aud (the token endpoint),
 * iat = now_s, exp = now_s + lifetime_s. */
int sw_oauth_sa_assertion(const struct sw_oauth_sa *sa, const char *aud, const char *scope,
                          int64_t now_s, long lifetime_s, char **out);

/* key=value, percent-encoded (application/x-www-form-urlencoded), with '&'
 * before it when out is not empty. */
int sw_oauth_form(struct sw_buf *out, const char *key, const char *value);

/* A token endpoint's answer (len bytes, borrowed): {"access_token",
 * "expires_in" (a number or a numeric string, seconds), ...}. SW_OK with
 * *token (malloc'ed, 1..SW_OAUTH_TOKEN_MAX bytes of visible ASCII) and
 * *expires_in_s (-1: not given); SW_EPROTO when it is not one (why: the
 * endpoint's own error code when it gave one, a word of [a-z_], else what
 * is wrong); SW_ENOMEM. */
int sw_oauth_token_parse(const char *body, size_t len, char **token, long *expires_in_s,
                         char *why, size_t n);

#endif
