/* For the fuzz targets of the fronts that translate (Anthropic Messages,
 * Responses): a translation validated as a tree (sw_request_parse_built) is
 * what the parse of its compact text gives, and the text it kept (what a
 * plain attempt is spliced from) is that text. */
#ifndef SW_FUZZ_BUILT_H
#define SW_FUZZ_BUILT_H

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "request/request.h"

#include "check.h"

static inline void check_built(const struct sw_chat_request *req)
{
    char *text = json_dumps(req->body, JSON_COMPACT);
    CHECK(text);
    struct sw_chat_request again;
    struct sw_request_error err;
    int rc = sw_request_parse(text, strlen(text), &again, &err);
    if (rc != SW_OK)
        fprintf(stderr, "not a valid chat request: %s at %s: %s\n", err.code, err.param, err.message);
    CHECK(rc == SW_OK);
    CHECK(req->text && req->text_len == strlen(text) && !memcmp(req->text, text, req->text_len));
    CHECK(json_equal(again.body, req->body));
    CHECK(again.prompt_tokens_est == req->prompt_tokens_est);
    CHECK(req->untranslatable ? req->prompt_tokens_max >= again.prompt_tokens_max
                              : req->prompt_tokens_max == again.prompt_tokens_max);
    CHECK(!strcmp(again.model, req->model) && again.stream == req->stream &&
          again.include_usage == req->include_usage && again.max_tokens == req->max_tokens &&
          again.n_messages == req->n_messages && again.has_tools == req->has_tools &&
          again.has_images == req->has_images && again.allow_cloud == req->allow_cloud);
    sw_request_free(&again);
    free(text);
}

#endif
