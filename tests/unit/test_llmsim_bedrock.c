/* llmsim's Bedrock emulation (tools/llmsim/bedrock.c): routes, the SigV4
 * verifier against the gateway's signer (and every tampering refused), the
 * answers and their event-stream frames. The AWS SDK reads them in
 * it/bedrock. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <cmocka.h>

#include "bedrock.h"
#include "common/err.h"
#include "common/evstream.h"
#include "common/sigv4.h"

static void test_route(void **state)
{
    (void)state;
    char m[128];
    bool stream = true;
    assert_int_equal(sw_llmsim_bedrock_route("/model/a.b-v1%3A0/converse", m, sizeof m, &stream), 0);
    assert_string_equal(m, "a.b-v1:0");
    assert_false(stream);
    assert_int_equal(sw_llmsim_bedrock_route("/model/x/converse-stream", m, sizeof m, &stream), 0);
    assert_true(stream);
    assert_int_equal(sw_llmsim_bedrock_route("/model//converse", m, sizeof m, &stream), -1);
    assert_int_equal(sw_llmsim_bedrock_route("/model/x/invoke", m, sizeof m, &stream), -1);
    assert_int_equal(sw_llmsim_bedrock_route("/v1/chat/completions", m, sizeof m, &stream), -1);
}

/* Request headers as the transport sends them: name: value pairs. */
struct hdrs {
    const char *n[12], *v[12];
    size_t k;
};

static const char *get(void *ud, const char *name)
{
    struct hdrs *h = ud;
    for (size_t i = 0; i < h->k; i++)
        if (!strcasecmp(h->n[i], name))
            return h->v[i];
    return NULL;
}

/* Splits the signer's "Name: value\r\n" lines into h (storage in buf). */
static void take(struct hdrs *h, char *buf)
{
    for (char *save = NULL, *l = strtok_r(buf, "\r\n", &save); l; l = strtok_r(NULL, "\r\n", &save)) {
        char *c = strstr(l, ": ");
        *c = '\0';
        h->n[h->k] = l, h->v[h->k++] = c + 2;
    }
}

static int verify(struct hdrs *h, const char *path, const char *body, long long now, const char **type)
{
    char msg[300];
    return sw_llmsim_sigv4_verify("POST", path, body, strlen(body), get, h, "AKID", "SECRET",
                                  "us-east-1", now, type, msg, sizeof msg);
}

static void test_verifier(void **state)
{
    (void)state;
    const char *names[] = {"content-type"}, *values[] = {"application/json"};
    const char *path = "/model/a%3A0/converse", *body = "{\"messages\":[]}";
    struct sw_sigv4_req r = {"POST", "127.0.0.1:9", path, "us-east-1", "bedrock", body,
                             strlen(body), 1700000000, names, values, 1};
    struct sw_sigv4_creds c = {"AKID", "SECRET", "TOK"};
    struct sw_sigv4_out o;
    struct sw_buf b;
    sw_buf_init(&b, 8192);
    assert_int_equal(sw_sigv4_sign(&r, &c, &o, &b), SW_OK);
    struct hdrs h = {{"host", "content-type"}, {"127.0.0.1:9", "application/json"}, 2};
    take(&h, b.ptr);
    const char *type = NULL;
    assert_int_equal(verify(&h, path, body, 1700000100, &type), 0);
    /* a changed body, path, host, header value, clock or key: refused */
    assert_int_equal(verify(&h, path, "{\"messages\":[1]}", 1700000100, &type), 403);
    assert_string_equal(type, "InvalidSignatureException");
    assert_int_equal(verify(&h, "/model/b%3A0/converse", body, 1700000100, &type), 403);
    assert_int_equal(verify(&h, path, body, 1700000000 + 301, &type), 403);
    h.v[0] = "127.0.0.1:10";
    assert_int_equal(verify(&h, path, body, 1700000100, &type), 403);
    h.v[0] = "127.0.0.1:9";
    h.v[1] = "text/plain";
    assert_int_equal(verify(&h, path, body, 1700000100, &type), 403);
    h.v[1] = "application/json";
    char msg[300];
    assert_int_equal(sw_llmsim_sigv4_verify("POST", path, body, strlen(body), get, &h, "OTHER",
                                            "SECRET", "us-east-1", 1700000100, &type, msg,
                                            sizeof msg), 403);
    assert_string_equal(type, "UnrecognizedClientException");
    assert_int_equal(sw_llmsim_sigv4_verify("POST", path, body, strlen(body), get, &h, "AKID",
                                            "WRONG", "us-east-1", 1700000100, &type, msg,
                                            sizeof msg), 403);
    assert_int_equal(sw_llmsim_sigv4_verify("POST", path, body, strlen(body), get, &h, "AKID",
                                            "SECRET", "eu-west-1", 1700000100, &type, msg,
                                            sizeof msg), 403);
    struct hdrs none = {{"host"}, {"127.0.0.1:9"}, 1};
    assert_int_equal(verify(&none, path, body, 1700000100, &type), 403);
    assert_string_equal(type, "MissingAuthenticationTokenException");
    sw_buf_free(&b);
}

static int count(void *ud, const struct sw_evs_message *m)
{
    char (*types)[40] = ud;
    size_t i = 0;
    while (types[i][0])
        i++;
    const struct sw_str *t = m->event_type.ptr ? &m->event_type : &m->exception_type;
    snprintf(types[i], 40, "%.*s", (int)t->len, t->ptr);
    return SW_OK;
}

static void test_answers(void **state)
{
    (void)state;
    json_error_t e;
    json_t *req = json_loads("{\"messages\":[{\"role\":\"user\",\"content\":[{\"text\":\"hello "
                             "there\"}]}],\"inferenceConfig\":{\"maxTokens\":2}}", 0, &e);
    struct sw_llmsim_bedrock_plan p;
    char msg[200];
    assert_int_equal(sw_llmsim_bedrock_parse(req, 1, &p, msg, sizeof msg), 0);
    assert_int_equal(p.output_tokens, 2);
    assert_true(p.length);
    json_t *a = sw_llmsim_bedrock_answer(&p, 1);
    assert_string_equal(json_string_value(json_object_get(a, "stopReason")), "max_tokens");
    assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(
        json_object_get(json_object_get(a, "output"), "message"), "content"), 0), "text")),
        "hello th");
    json_decref(a);
    struct sw_buf out;
    sw_buf_init(&out, 1 << 20);
    assert_int_equal(sw_llmsim_bedrock_stream(&p, -1, NULL, 0, &out), SW_OK);
    char types[16][40];
    memset(types, 0, sizeof types);
    struct sw_evs d;
    sw_evs_init(&d, 1 << 16, count, types);
    assert_int_equal(sw_evs_feed(&d, out.ptr, out.len), SW_OK);
    sw_evs_free(&d);
    static const char *const want[] = {"messageStart", "contentBlockDelta", "contentBlockDelta",
                                       "contentBlockStop", "messageStop", "metadata"};
    for (size_t i = 0; i < 6; i++)
        assert_string_equal(types[i], want[i]);
    /* an exception after one delta ends it */
    sw_buf_reset(&out);
    memset(types, 0, sizeof types);
    assert_int_equal(sw_llmsim_bedrock_stream(&p, 1, "throttlingException", 0, &out), SW_OK);
    sw_evs_init(&d, 1 << 16, count, types);
    assert_int_equal(sw_evs_feed(&d, out.ptr, out.len), SW_OK);
    sw_evs_free(&d);
    assert_string_equal(types[2], "throttlingException");
    assert_string_equal(types[3], "");
    sw_buf_free(&out);
    sw_llmsim_bedrock_plan_free(&p);
    json_decref(req);
    /* roles must alternate, starting with the user */
    req = json_loads("{\"messages\":[{\"role\":\"assistant\",\"content\":[]}]}", 0, &e);
    assert_int_equal(sw_llmsim_bedrock_parse(req, 1, &p, msg, sizeof msg), -1);
    sw_llmsim_bedrock_plan_free(&p);
    json_decref(req);
    assert_string_equal(sw_llmsim_bedrock_exception(429), "ThrottlingException");
    assert_string_equal(sw_llmsim_bedrock_exception(503), "ServiceUnavailableException");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_route),
        cmocka_unit_test(test_verifier),
        cmocka_unit_test(test_answers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
