/* Differential libFuzzer driver for sw_json_load (simdjson building a
 * jansson tree) against json_loadb, with each set of flags the daemon uses
 * and the plain ones: both accept or both reject the same input; on accept
 * the trees are equal (json_equal) and serialise to the same bytes (so
 * integer-vs-real, -0.0 and key order agree too); on reject the errors are
 * the same (text, line, column, position, code). The fast path alone
 * (sw_json_load_fast_only) must never accept what jansson rejects nor build
 * another tree. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/jfast.h"
#include "common/jmemo.h"

#include "check.h"

static void same_tree(json_t *a, json_t *b)
{
    CHECK(json_equal(a, b));
    char *sa = json_dumps(a, JSON_ENCODE_ANY | JSON_COMPACT | JSON_REAL_PRECISION(17));
    char *sb = json_dumps(b, JSON_ENCODE_ANY | JSON_COMPACT | JSON_REAL_PRECISION(17));
    CHECK(sa && sb);
    CHECK(strcmp(sa, sb) == 0);
    free(sa);
    free(sb);
}

static void check_flags(const char *s, size_t len, size_t flags)
{
    json_error_t ef, ej;
    memset(&ef, 0x55, sizeof ef);
    memset(&ej, 0x55, sizeof ej);
    json_t *j = json_loadb(s, len, flags, &ej);
    json_t *f = sw_json_load(s, len, flags, &ef);
    json_t *fo = sw_json_load_fast_only(s, len, flags);

    CHECK((f != NULL) == (j != NULL));
    CHECK(!fo || j);
    if (j) {
        same_tree(f, j);
        if (fo)
            same_tree(fo, j);
        CHECK(ef.text[0] == '\0');
    } else {
        CHECK(strcmp(ef.text, ej.text) == 0);
        CHECK(ef.line == ej.line && ef.column == ej.column && ef.position == ej.position);
        CHECK(json_error_code(&ef) == json_error_code(&ej));
    }
    json_decref(j);
    json_decref(f);
    json_decref(fo);
}

/* The input between pre and post: as a string value, an object key, an
 * array's members, so every byte sequence also tests string decoding (UTF-8,
 * escapes, surrogates, control characters) and number reading, which
 * the uninstrumented parsers give libFuzzer no coverage signal for. */
static void check_wrapped(const char *pre, const char *s, size_t size, const char *post)
{
    size_t a = strlen(pre), b = strlen(post);
    char *w = malloc(a + size + b);

    CHECK(w != NULL);
    memcpy(w, pre, a);
    memcpy(w + a, s, size);
    memcpy(w + a + size, post, b);
    check_flags(w, a + size + b, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY);
    free(w);
}

/* The bounded loader with the parse memo on, over bodies where the input
 * sits between elements the memo holds (its bytes decide the separators,
 * so whatever the memo's walk of the body makes of them, the parser's
 * answer must be json_loadb's), and, parsed twice, as an element itself. */
static void check_memo(const char *s, size_t size)
{
    static char fill[9000];
    if (!fill[0]) {
        sw_jmemo_set_max(8u << 20);
        int n = snprintf(fill, sizeof fill, "{\"role\":\"user\",\"content\":\"");
        for (size_t i = (size_t)n; i < sizeof fill - 3; i++)
            fill[i] = "ab cd\\n ef"[i % 10];
        memcpy(fill + sizeof fill - 3, "\"}", 3);
        if (fill[sizeof fill - 4] == '\\')
            fill[sizeof fill - 4] = 'z';
    }
    const char *const frames[][3] = {
        {"{\"messages\":[", "", "]}"},
        {"{\"messages\":[", ",", "],\"n\":1}"},
    };
    for (size_t f = 0; f < sizeof frames / sizeof *frames; f++) {
        size_t a = strlen(frames[f][0]), sep = strlen(frames[f][1]), b = strlen(frames[f][2]);
        size_t fl = strlen(fill), len = a + 2 * (fl + sep) + size + b;
        char *w = malloc(len);
        CHECK(w != NULL);
        char *p = w;
        memcpy(p, frames[f][0], a), p += a;
        memcpy(p, fill, fl), p += fl;
        memcpy(p, frames[f][1], sep), p += sep;
        memcpy(p, s, size), p += size;
        memcpy(p, frames[f][1], sep), p += sep;
        memcpy(p, fill, fl), p += fl;
        memcpy(p, frames[f][2], b);
        for (int round = 0; round < 2; round++) {
            bool oom = false;
            json_t *m = sw_json_load_bounded(w, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY,
                                             100000, 64, &oom);
            json_t *j = json_loadb(w, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, NULL);
            CHECK(!m || j);
            if (m)
                same_tree(m, j);
            json_decref(m);
            json_decref(j);
        }
        free(w);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *s = (const char *)data;

    check_memo(s, size);

    check_flags(s, size, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY);   /* request bodies */
    check_flags(s, size, JSON_DECODE_ANY);
    check_flags(s, size, 0);
    check_wrapped("[\"", s, size, "\"]");
    check_wrapped("{\"a\":1,\"", s, size, "\":2}");
    check_wrapped("[", s, size, "]");
    return 0;
}
