/* AWS Signature Version 4 for one request, header-signed (the Authorization
 * header), as AWS documents it and @smithy/signature-v4 computes it: with
 * the same inputs and clock both give the same signature. Pure: the time
 * is passed in; OpenSSL's SHA-256 and HMAC do the hashing. Works for any
 * transport, since it only adds headers.
 *
 * The canonical request: method, the canonical path (the path as sent,
 * "." and ".." and empty segments removed, then every byte but A-Z a-z 0-9
 * - _ . ~ and '/' percent-encoded once more, as every service but S3 wants),
 * the canonical query (empty: this signer signs requests without a query),
 * the signed headers "name:value\n" (lower-case names, sorted; values
 * trimmed, runs of white space as one space), their names joined by ';',
 * and the hex SHA-256 of the body. Signed always: host, x-amz-content-sha256,
 * x-amz-date, x-amz-security-token (with a session token), and the extra
 * headers given. */
#ifndef SW_COMMON_SIGV4_H
#define SW_COMMON_SIGV4_H

#include <stddef.h>

#include "common/buf.h"

#define SW_SIGV4_MAX_HEADERS 16

struct sw_sigv4_creds {
    const char *access_key_id;
    const char *secret_access_key;
    const char *session_token;          /* NULL: none */
};

struct sw_sigv4_req {
    const char *method;                 /* "POST" */
    const char *host;                   /* the Host header's value as sent */
    const char *path;                   /* as sent, percent-encoded, without a query */
    const char *region;                 /* "us-east-1" */
    const char *service;                /* "bedrock" */
    const char *body;
    size_t body_len;
    long long now_s;                    /* unix seconds: X-Amz-Date */
    const char *const *names;           /* extra headers signed (n of them), as sent */
    const char *const *values;
    size_t n;
};

/* What a signature is made of, kept for tests and the verifier. */
struct sw_sigv4_out {
    char amz_date[17];                  /* YYYYMMDDTHHMMSSZ */
    char payload_hash[65];              /* hex SHA-256 of the body */
    char signed_headers[512];           /* "host;x-amz-content-sha256;x-amz-date" */
    char signature[65];                 /* hex */
};

/* Signs r with c: *out filled, and when hdrs is not NULL the headers to
 * send appended ("X-Amz-Date: ...\r\n", X-Amz-Content-Sha256, X-Amz-Security-Token
 * with a session token, "Authorization: AWS4-HMAC-SHA256 Credential=...,
 * SignedHeaders=..., Signature=...\r\n"). The secret is never copied out.
 * SW_OK, SW_EINVAL (a missing field, a header name or value that cannot be
 * sent, too many headers), SW_ENOMEM or SW_ETOOBIG. */
int sw_sigv4_sign(const struct sw_sigv4_req *r, const struct sw_sigv4_creds *c,
                  struct sw_sigv4_out *out, struct sw_buf *hdrs);

/* The signature (hex) of a canonical request already built: the string to
 * sign of amz_date, region and service, and the signing key of the secret
 * (a verifier builds the canonical request from what it received). */
int sw_sigv4_signature(const char *canonical, size_t len, const char *amz_date,
                       const char *region, const char *service, const char *secret,
                       char sig[65]);

/* The hex SHA-256 of n bytes. */
int sw_sigv4_sha256_hex(const void *p, size_t n, char out[65]);

/* The canonical path of a path as sent (see above), into out. */
int sw_sigv4_canonical_path(const char *path, struct sw_buf *out);

/* YYYYMMDDTHHMMSSZ of unix seconds t (UTC; proleptic Gregorian), 17 bytes with the NUL. */
void sw_sigv4_amz_date(long long t, char out[17]);

/* Unix seconds of an X-Amz-Date, or -1 when it is not one. */
long long sw_sigv4_parse_date(const char *s);

#endif
