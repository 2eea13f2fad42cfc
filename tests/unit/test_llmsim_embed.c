/* llmsim's embeddings: deterministic unit vectors seeded by the input's
 * bytes, `dimensions` honoured, base64 the little-endian float32 of the same
 * vector, usage as documented, 400 reasons for bad input. */
#include <jansson.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "common/err.h"
#include "embed.h"

static json_t *answer(const char *req, int *tokens)
{
    json_error_t e;
    json_t *root = json_loads(req, 0, &e);
    assert_non_null(root);
    struct sw_buf out;
    sw_buf_init(&out, 1 << 20);
    char err[256];
    assert_int_equal(sw_llmsim_embed(root, "sim", &out, tokens, err, sizeof err), SW_OK);
    json_t *a = json_loadb(out.ptr, out.len, 0, &e);
    assert_non_null(a);
    sw_buf_free(&out);
    json_decref(root);
    return a;
}

static void test_vectors(void **state)
{
    (void)state;
    int tokens;
    json_t *a = answer("{\"model\":\"m\",\"input\":[\"hello\",\"hello\",\"world\"],\"dimensions\":16}", &tokens);
    assert_int_equal(tokens, 6);
    assert_string_equal(json_string_value(json_object_get(a, "model")), "m");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(a, "usage"), "prompt_tokens")), 6);
    json_t *data = json_object_get(a, "data");
    assert_int_equal(json_array_size(data), 3);
    double v[3][16];
    for (size_t i = 0; i < 3; i++) {
        json_t *emb = json_object_get(json_array_get(data, i), "embedding");
        assert_int_equal(json_integer_value(json_object_get(json_array_get(data, i), "index")), (json_int_t)i);
        assert_int_equal(json_array_size(emb), 16);
        double norm = 0;
        for (size_t k = 0; k < 16; k++) {
            v[i][k] = json_number_value(json_array_get(emb, k));
            norm += v[i][k] * v[i][k];
        }
        assert_true(fabs(norm - 1) < 1e-5);
    }
    assert_memory_equal(v[0], v[1], sizeof v[0]);
    assert_memory_not_equal(v[0], v[2], sizeof v[0]);
    json_decref(a);

    /* Default length; base64 is the float32 of the same vector. */
    a = answer("{\"input\":\"hello\"}", &tokens);
    assert_string_equal(json_string_value(json_object_get(a, "model")), "sim");
    assert_int_equal(json_array_size(json_object_get(json_array_get(json_object_get(a, "data"), 0), "embedding")),
                     SW_LLMSIM_EMBED_DIMS);
    json_decref(a);
    a = answer("{\"input\":\"hello\",\"dimensions\":16,\"encoding_format\":\"base64\"}", &tokens);
    const char *b64 = json_string_value(json_object_get(json_array_get(json_object_get(a, "data"), 0), "embedding"));
    assert_non_null(b64);
    assert_int_equal(strlen(b64), 4 * ((16 * 4 + 2) / 3));
    float f[16];
    sw_llmsim_embed_vector("hello", 5, f, 16);
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    unsigned char raw[66] = {0};
    size_t n = 0;
    for (size_t i = 0; b64[i] && b64[i + 1]; i += 4) {
        uint32_t q = 0;
        for (int k = 0; k < 4; k++)
            q = q << 6 | (uint32_t)(b64[i + k] == '=' ? 0 : strchr(tab, b64[i + k]) - tab);
        raw[n++] = (unsigned char)(q >> 16);
        raw[n++] = (unsigned char)(q >> 8);
        raw[n++] = (unsigned char)q;
    }
    for (int k = 0; k < 16; k++) {
        uint32_t u = (uint32_t)raw[4 * k] | (uint32_t)raw[4 * k + 1] << 8 |
                     (uint32_t)raw[4 * k + 2] << 16 | (uint32_t)raw[4 * k + 3] << 24;
        float x;
        memcpy(&x, &u, 4);
        assert_true(x == f[k]);
        assert_true(fabs(x - v[0][k]) < 1e-6);
    }
    json_decref(a);
    a = answer("{\"input\":[[1,2,3],[4]]}", &tokens);
    assert_int_equal(tokens, 4);
    json_decref(a);
}

static void test_bad(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "[]", "{}", "{\"input\":\"\"}", "{\"input\":[]}", "{\"input\":[\"a\",\"\"]}", "{\"input\":[[]]}",
        "{\"input\":[-1]}", "{\"input\":\"a\",\"dimensions\":0}", "{\"input\":\"a\",\"encoding_format\":\"hex\"}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        json_error_t e;
        json_t *root = json_loads(bad[i], 0, &e);
        struct sw_buf out;
        sw_buf_init(&out, 1 << 20);
        char err[256] = "";
        int tokens;
        assert_int_equal(sw_llmsim_embed(root, "sim", &out, &tokens, err, sizeof err), SW_EINVAL);
        assert_true(err[0]);
        sw_buf_free(&out);
        json_decref(root);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vectors),
        cmocka_unit_test(test_bad),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
