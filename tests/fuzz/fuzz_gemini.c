/* libFuzzer driver for what Google's and the token endpoints' bytes meet
 * (src/dialect/gemini.c, src/upstream/oauth.c). The input is read four ways:
 *  - line by line as the data of streamGenerateContent?alt=sse events: each
 *    is translated or refused (-1 with a message); every chunk made is an
 *    OpenAI chunk object with an array of choices; once the stream is done
 *    its last chunk carried the usage;
 *  - as a whole GenerateContentResponse: its translation, when there is
 *    one, is an OpenAI answer with one choice and a finish_reason;
 *  - as a token endpoint's answer: a token, when taken, is 1 to
 *    SW_OAUTH_TOKEN_MAX bytes of visible ASCII; refused, the reason is said;
 *  - as a service-account key file: parsed whole, or refused with a reason;
 *  - as an OpenAI request, where it is one: translated or refused with a 400
 *    naming something (never both, never neither). */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "dialect/gemini.h"
#include "upstream/oauth.h"

#include "check.h"

static void check_chunk(const json_t *c)
{
    CHECK(json_is_object(c));
    CHECK(json_is_string(json_object_get(c, "object")));
    CHECK(json_is_array(json_object_get(c, "choices")));
}

static void stream(const uint8_t *data, size_t size)
{
    struct sw_gem_to_oai s;
    sw_gem_to_oai_init(&s, "m", 1);
    json_t *chunks = json_array();
    const char *p = (const char *)data, *end = p + size;
    while (p < end && !s.done) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        const char *msg = NULL;
        size_t before = json_array_size(chunks);
        int rc = sw_gem_to_oai_event(&s, p, n, chunks, &msg);
        CHECK(rc == 0 || (rc == -1 && msg && msg[0]));
        for (size_t i = before; i < json_array_size(chunks); i++)
            check_chunk(json_array_get(chunks, i));
        if (s.done)
            CHECK(json_is_object(json_object_get(json_array_get(chunks, json_array_size(chunks) - 1),
                                                 "usage")));
        p += n + 1;
    }
    json_decref(chunks);
}

static void whole(const json_t *in)
{
    json_t *o = sw_gem_resp_to_openai(in, "m", 1);
    if (!o)
        return;
    json_t *ch = json_object_get(o, "choices");
    CHECK(json_array_size(ch) == 1);
    CHECK(json_is_string(json_object_get(json_array_get(ch, 0), "finish_reason")));
    CHECK(json_is_object(json_object_get(json_array_get(ch, 0), "message")));
    json_decref(o);
}

static void token(const uint8_t *data, size_t size)
{
    char *tok = NULL, why[96] = "";
    long exp = 0;
    int rc = sw_oauth_token_parse((const char *)data, size, &tok, &exp, why, sizeof why);
    if (rc == SW_OK) {
        size_t n = strlen(tok);
        CHECK(n >= 1 && n <= SW_OAUTH_TOKEN_MAX);
        for (size_t i = 0; i < n; i++)
            CHECK((unsigned char)tok[i] > 0x20 && (unsigned char)tok[i] < 0x7f);
        CHECK(exp >= -1);
    } else {
        CHECK(rc == SW_EPROTO || rc == SW_ENOMEM);
        CHECK(!tok && why[0]);
    }
    free(tok);
    struct sw_oauth_sa sa;
    rc = sw_oauth_sa_parse((const char *)data, size, &sa, why, sizeof why);
    if (rc == SW_OK)
        CHECK(sa.client_email && sa.private_key && sa.token_uri);
    else
        CHECK(!sa.client_email && why[0]);
    sw_oauth_sa_free(&sa);
}

static void request(const json_t *in)
{
    if (!json_is_array(json_object_get(in, "messages")))
        return;
    struct sw_request_error err;
    memset(&err, 0, sizeof err);
    json_t *o = sw_gem_req_from_openai(in, 16, &err);
    if (o) {
        CHECK(json_is_array(json_object_get(o, "contents")));
        CHECK(json_array_size(json_object_get(o, "contents")) > 0);
        json_decref(o);
    } else {
        CHECK(err.status == 400 || err.status == 500);
        CHECK(err.message[0]);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 1 << 20)
        return 0;
    stream(data, size);
    token(data, size);
    json_t *in = json_loadb((const char *)data, size, 0, NULL);
    if (in) {
        whole(in);
        request(in);
        json_decref(in);
    }
    return 0;
}
