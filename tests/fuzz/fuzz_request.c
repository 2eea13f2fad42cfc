/* libFuzzer driver for sw_request_parse: any input either parses into a
 * consistent request or yields an error that renders as valid OpenAI JSON. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/err.h"
#include "request/request.h"

#define CHECK(cond) do { if (!(cond)) __builtin_trap(); } while (0)

static void check_error(const struct sw_request_error *err)
{
    char *s = sw_request_error_json(err);
    json_t *root, *e;

    CHECK(err->status == 400 || err->status == 500);
    CHECK(err->message[0] != '\0');
    CHECK(memchr(err->message, '\0', sizeof(err->message)) != NULL);
    CHECK(memchr(err->param, '\0', sizeof(err->param)) != NULL);
    CHECK(s != NULL);
    root = json_loads(s, 0, NULL);
    CHECK(root != NULL);
    e = json_object_get(root, "error");
    CHECK(json_is_string(json_object_get(e, "message")));
    CHECK(strcmp(json_string_value(json_object_get(e, "message")), err->message) == 0);
    CHECK(err->param[0] ? json_is_string(json_object_get(e, "param"))
                        : json_is_null(json_object_get(e, "param")));
    json_decref(root);
    free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct sw_chat_request req;
    struct sw_request_error err;
    int rc = sw_request_parse((const char *)data, size, &req, &err);

    if (rc == SW_OK) {
        CHECK(req.body != NULL);
        CHECK(req.model != NULL && req.model[0] != '\0');
        CHECK(req.n_messages > 0);
        CHECK(req.prompt_tokens_est >= 4 * (long)req.n_messages);
        CHECK(req.max_tokens >= 0);
        CHECK(req.allow_cloud >= -1 && req.allow_cloud <= 1);
        CHECK(!req.include_usage || req.stream);
    } else {
        CHECK(rc == SW_EINVAL || rc == SW_ENOMEM);
        CHECK(req.body == NULL);
        check_error(&err);
    }
    sw_request_free(&req);
    return 0;
}
