#include "request/embed.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "common/err.h"
#include "common/json.h"

#define TOKEN_ID_MAX 2147483647LL

/* The embeddings errors name a JSON real "a number" (the chat errors say
 * "a decimal"); every other type as sw_json_type_name does. */
static const char *type_name(const json_t *v)
{
    return json_is_real(v) ? "a number" : sw_json_type_name(v);
}

static bool token_id(const json_t *v)
{
    return json_is_integer(v) && json_integer_value(v) >= 0 && json_integer_value(v) <= TOKEN_ID_MAX;
}

#define BAD(code, param, ...)                                                              \
    do {                                                                                   \
        sw_request_error_set(err, 400, "invalid_request_error", code, param, __VA_ARGS__); \
        return SW_EINVAL;                                                                  \
    } while (0)

/* A token array: non-empty, every item a token id. */
static int check_tokens(const json_t *arr, const char *param, long *tokens,
                        struct sw_request_error *err)
{
    if (json_array_size(arr) == 0)
        BAD("invalid_value", param, "Invalid '%s': a token array must not be empty.", param);
    size_t k;
    json_t *t;
    json_array_foreach(arr, k, t) {
        if (!token_id(t)) {
            char at[48];
            snprintf(at, sizeof at, "%s[%zu]", param, k);
            BAD("invalid_type", at,
                "Invalid '%s': expected a token id (an integer from 0 to %lld), but got %s.", at,
                TOKEN_ID_MAX, type_name(t));
        }
    }
    *tokens += (long)json_array_size(arr);
    return SW_OK;
}

static int check_input(const json_t *root, struct sw_chat_request *req, struct sw_request_error *err)
{
    const json_t *in = json_object_get(root, "input");
    long est = 0;
    if (!in || json_is_null(in))
        BAD("missing_required_parameter", "input", "Missing required parameter: 'input'.");
    if (json_is_string(in)) {
        if (json_string_length(in) == 0)
            BAD("invalid_value", "input", "Invalid 'input': it must not be an empty string.");
        req->prompt_tokens_est = sw_request_estimate_tokens(json_string_length(in));
        return SW_OK;
    }
    if (!json_is_array(in))
        BAD("invalid_type", "input",
            "Invalid type for 'input': expected a string, an array of strings, an array of "
            "token ids or an array of token arrays, but got %s instead.", type_name(in));
    size_t n = json_array_size(in);
    if (n == 0)
        BAD("invalid_value", "input", "Invalid 'input': the array must not be empty.");
    if (n > SW_EMBED_MAX_INPUTS)
        BAD("invalid_value", "input",
            "Invalid 'input': %zu items, more than the limit of %d per request.", n,
            SW_EMBED_MAX_INPUTS);
    const json_t *first = json_array_get(in, 0);
    if (json_is_integer(first)) {
        req->token_inputs = true;
        int rc = check_tokens(in, "input", &est, err);
        req->prompt_tokens_est = est;
        return rc;
    }
    size_t k;
    json_t *item;
    json_array_foreach(in, k, item) {
        char param[32];
        snprintf(param, sizeof param, "input[%zu]", k);
        if (json_is_string(first)) {
            if (!json_is_string(item))
                BAD("invalid_type", param,
                    "Invalid type for '%s': expected a string like the other items, but got %s "
                    "instead.", param, type_name(item));
            if (json_string_length(item) == 0)
                BAD("invalid_value", param, "Invalid '%s': it must not be an empty string.", param);
            est += sw_request_estimate_tokens(json_string_length(item));
        } else if (json_is_array(first)) {
            if (!json_is_array(item))
                BAD("invalid_type", param,
                    "Invalid type for '%s': expected a token array like the other items, but "
                    "got %s instead.", param, type_name(item));
            if (check_tokens(item, param, &est, err))
                return SW_EINVAL;
            req->token_inputs = true;
        } else {
            BAD("invalid_type", param,
                "Invalid type for '%s': expected a string, a token id or a token array, but got "
                "%s instead.", param, type_name(item));
        }
    }
    req->prompt_tokens_est = est;
    return SW_OK;
}

static int check_options(const json_t *root, struct sw_request_error *err)
{
    const json_t *v = json_object_get(root, "dimensions");
    if (v && !json_is_null(v)) {
        if (!json_is_integer(v))
            BAD("invalid_type", "dimensions",
                "Invalid type for 'dimensions': expected an integer, but got %s instead.",
                type_name(v));
        if (json_integer_value(v) < 1 || json_integer_value(v) > SW_EMBED_MAX_DIMENSIONS)
            BAD("invalid_value", "dimensions",
                "Invalid 'dimensions': expected an integer from 1 to %d.", SW_EMBED_MAX_DIMENSIONS);
    }
    v = json_object_get(root, "encoding_format");
    if (v && !json_is_null(v)) {
        if (!json_is_string(v) || (strcmp(json_string_value(v), "float") != 0 &&
                                   strcmp(json_string_value(v), "base64") != 0))
            BAD("invalid_value", "encoding_format",
                "Invalid 'encoding_format': expected 'float' or 'base64'.");
    }
    v = json_object_get(root, "user");
    if (v && !json_is_null(v) && !json_is_string(v))
        BAD("invalid_type", "user", "Invalid type for 'user': expected a string, but got %s instead.",
            type_name(v));
    return SW_OK;
}

int sw_embed_parse(const char *body, size_t len, struct sw_chat_request *req,
                   struct sw_request_error *err)
{
    memset(req, 0, sizeof *req);
    req->allow_cloud = -1;
    req->api = SW_API_EMBEDDINGS;
    int load_rc;
    json_t *root = sw_request_json_load(body, len, err, &load_rc);
    if (!root)
        return load_rc;
    int rc = SW_EINVAL;
    const json_t *model = json_object_get(root, "model");
    if (!json_is_object(root)) {
        sw_request_error_set(err, 400, "invalid_request_error", "invalid_type", NULL,
                             "Invalid type for the request body: expected an object, but got %s "
                             "instead.", type_name(root));
    } else if (!model || json_is_null(model)) {
        sw_request_error_set(err, 400, "invalid_request_error", "missing_required_parameter",
                             "model", "Missing required parameter: 'model'.");
    } else if (!json_is_string(model) || json_string_length(model) == 0) {
        sw_request_error_set(err, 400, "invalid_request_error", "invalid_type", "model",
                             "Invalid 'model': expected a non-empty string.");
    } else {
        rc = check_input(root, req, err);
        if (!rc)
            rc = check_options(root, err);
        /* metadata.allow_cloud keeps an embedding local as it keeps a chat */
        if (!rc)
            rc = sw_request_metadata(root, req, err);
    }
    if (rc) {
        json_decref(root);
        memset(req, 0, sizeof *req);
        req->allow_cloud = -1;
        return rc;
    }
    req->body = root;
    req->model = json_string_value(model);
    /* Every input text, or token id, is a part of the body: its bytes bound
     * the tokens billed (sw_request_bound_tokens). */
    req->prompt_tokens_max = sw_request_bound_tokens(len, 0, 0, 0);
    if (req->prompt_tokens_max < req->prompt_tokens_est)
        req->prompt_tokens_max = req->prompt_tokens_est;
    return SW_OK;
}
