/* The SigV4 signer (common/sigv4.c): dates without a clock, the canonical
 * path, what a signature depends on, refusals. The signatures themselves
 * are held against @smithy/signature-v4 in it/aws_refs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "common/err.h"
#include "common/sigv4.h"

static void test_dates(void **state)
{
    (void)state;
    char d[17];
    sw_sigv4_amz_date(0, d);
    assert_string_equal(d, "19700101T000000Z");
    sw_sigv4_amz_date(951782400, d); /* a leap day */
    assert_string_equal(d, "20000229T000000Z");
    sw_sigv4_amz_date(1735689599, d);
    assert_string_equal(d, "20241231T235959Z");
    for (long long t = 0; t < 4102444800LL; t += 7777777) {
        sw_sigv4_amz_date(t, d);
        assert_int_equal(sw_sigv4_parse_date(d), t);
    }
    assert_int_equal(sw_sigv4_parse_date("20241331T000000Z"), -1);
    assert_int_equal(sw_sigv4_parse_date("20241231T000000"), -1);
    assert_int_equal(sw_sigv4_parse_date(NULL), -1);
}

static void canon(const char *in, const char *want)
{
    struct sw_buf b;
    sw_buf_init(&b, 4096);
    assert_int_equal(sw_sigv4_canonical_path(in, &b), SW_OK);
    assert_string_equal(b.ptr ? b.ptr : "", want);
    sw_buf_free(&b);
}

static void test_canonical_path(void **state)
{
    (void)state;
    canon("/model/a%3A0/converse", "/model/a%253A0/converse");
    canon("/model/x/../y/./converse", "/model/y/converse");
    canon("/a//b/", "/a/b/");
    canon("/", "/");
    canon("/sp ace~_-.", "/sp%20ace~_-.");
}

static const char *const names[] = {"content-type"};
static const char *const values[] = {"application/json"};

static struct sw_sigv4_req req(void)
{
    return (struct sw_sigv4_req){"POST", "bedrock-runtime.us-east-1.amazonaws.com",
                                 "/model/m/converse", "us-east-1", "bedrock", "{}", 2,
                                 1700000000, names, values, 1};
}

static void test_signature_depends_on_every_input(void **state)
{
    (void)state;
    struct sw_sigv4_creds c = {"AKID", "SECRET", NULL};
    struct sw_sigv4_out base, o;
    struct sw_sigv4_req r = req();
    struct sw_buf h;
    sw_buf_init(&h, 8192);
    assert_int_equal(sw_sigv4_sign(&r, &c, &base, &h), SW_OK);
    assert_string_equal(base.signed_headers, "content-type;host;x-amz-content-sha256;x-amz-date");
    assert_non_null(strstr(h.ptr, "X-Amz-Date: 20231114T221320Z\r\n"));
    assert_non_null(strstr(h.ptr, "Authorization: AWS4-HMAC-SHA256 Credential=AKID/20231114/"
                                  "us-east-1/bedrock/aws4_request, SignedHeaders="));
    assert_null(strstr(h.ptr, "SECRET"));
    /* the same inputs, the same signature */
    assert_int_equal(sw_sigv4_sign(&r, &c, &o, NULL), SW_OK);
    assert_string_equal(o.signature, base.signature);
    /* each input changes it */
    struct sw_sigv4_req v[6];
    for (int i = 0; i < 6; i++)
        v[i] = req();
    v[0].body = "{ }", v[0].body_len = 3;
    v[1].path = "/model/n/converse";
    v[2].now_s += 1;
    v[3].region = "eu-west-1";
    v[4].host = "127.0.0.1:8080";
    v[5].n = 0;
    for (int i = 0; i < 6; i++) {
        assert_int_equal(sw_sigv4_sign(&v[i], &c, &o, NULL), SW_OK);
        assert_string_not_equal(o.signature, base.signature);
    }
    struct sw_sigv4_creds c2 = {"AKID", "SECRET2", NULL};
    assert_int_equal(sw_sigv4_sign(&r, &c2, &o, NULL), SW_OK);
    assert_string_not_equal(o.signature, base.signature);
    /* a session token is signed and sent */
    struct sw_sigv4_creds ct = {"AKID", "SECRET", "TOKEN"};
    sw_buf_reset(&h);
    assert_int_equal(sw_sigv4_sign(&r, &ct, &o, &h), SW_OK);
    assert_string_equal(o.signed_headers,
                        "content-type;host;x-amz-content-sha256;x-amz-date;x-amz-security-token");
    assert_non_null(strstr(h.ptr, "X-Amz-Security-Token: TOKEN\r\n"));
    sw_buf_free(&h);
}

static void test_signature_of_canonical(void **state)
{
    (void)state;
    /* the signature of the canonical request built by hand equals sign's */
    struct sw_sigv4_creds c = {"AKID", "SECRET", NULL};
    struct sw_sigv4_req r = req();
    struct sw_sigv4_out o;
    assert_int_equal(sw_sigv4_sign(&r, &c, &o, NULL), SW_OK);
    char cr[1024];
    snprintf(cr, sizeof cr,
             "POST\n/model/m/converse\n\ncontent-type:application/json\nhost:%s\n"
             "x-amz-content-sha256:%s\nx-amz-date:%s\n\n%s\n%s",
             r.host, o.payload_hash, o.amz_date, o.signed_headers, o.payload_hash);
    char sig[65];
    assert_int_equal(sw_sigv4_signature(cr, strlen(cr), o.amz_date, "us-east-1", "bedrock",
                                        "SECRET", sig), SW_OK);
    assert_string_equal(sig, o.signature);
    char h[65];
    assert_int_equal(sw_sigv4_sha256_hex("{}", 2, h), SW_OK);
    assert_string_equal(h, o.payload_hash);
}

static void test_refusals(void **state)
{
    (void)state;
    struct sw_sigv4_creds c = {"AKID", "SECRET", NULL};
    struct sw_sigv4_out o;
    struct sw_sigv4_req r = req();
    const char *bad_v[] = {"a\r\nInjected: 1"};
    r.values = bad_v;
    assert_int_equal(sw_sigv4_sign(&r, &c, &o, NULL), SW_EINVAL);
    r = req();
    const char *dup_n[] = {"Host"};
    r.names = dup_n;
    assert_int_equal(sw_sigv4_sign(&r, &c, &o, NULL), SW_EINVAL);
    r = req();
    r.region = "us/east";
    assert_int_equal(sw_sigv4_sign(&r, &c, &o, NULL), SW_EINVAL);
    r = req();
    struct sw_sigv4_creds none = {NULL, "SECRET", NULL};
    assert_int_equal(sw_sigv4_sign(&r, &none, &o, NULL), SW_EINVAL);
    struct sw_sigv4_creds crlf = {"AKID", "SECRET", "tok\nen"};
    assert_int_equal(sw_sigv4_sign(&r, &crlf, &o, NULL), SW_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dates),
        cmocka_unit_test(test_canonical_path),
        cmocka_unit_test(test_signature_depends_on_every_input),
        cmocka_unit_test(test_signature_of_canonical),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
