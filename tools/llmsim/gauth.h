/* The token endpoints llmsim emulates, so a gateway's OAuth2 token sources
 * run offline: Google's (POST /token: grant type jwt-bearer, the assertion
 * an RS256 JWT whose signature is checked with the service account's
 * public key, --google-sa-pubkey) and Entra ID's (POST
 * /{tenant}/oauth2/v2.0/token: client_credentials with --entra-client-id
 * and --entra-secret). The tokens llmsim issues (kept by the server) live
 * --token-ttl-s seconds. Pure but for OpenSSL. */
#ifndef SW_LLMSIM_GAUTH_H
#define SW_LLMSIM_GAUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The value of key in an application/x-www-form-urlencoded body, decoded
 * into out (cap bytes); false when absent or too long. */
bool sw_llmsim_form_get(const char *body, size_t len, const char *key, char *out, size_t cap);

/* Checks a jwt-bearer grant (form body): grant_type, an assertion signed
 * RS256 with the PEM public key pub_pem, its claims iss, scope, aud
 * (non-empty strings), iat <= now_s + 60 < exp + 60. 0, or -1 with why. */
int sw_llmsim_google_grant(const char *body, size_t len, const char *pub_pem, int64_t now_s,
                           char *why, size_t n);

/* Checks a client_credentials grant: client_id and client_secret equal the
 * expected ones, a scope given. 0, or -1 with why (Entra's error code). */
int sw_llmsim_entra_grant(const char *body, size_t len, const char *client_id,
                          const char *secret, char *why, size_t n);

/* /{tenant}/oauth2/v2.0/token: true for such a path. */
bool sw_llmsim_entra_path(const char *path);

#endif
