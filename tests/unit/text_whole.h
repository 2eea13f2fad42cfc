/* Checks of a translated request's text (req->text with the parse memo's
 * pieces put in, sw_request_text_whole), shared by the translations'
 * tests. Include after cmocka.h. */
#ifndef SW_TEST_TEXT_WHOLE_H
#define SW_TEST_TEXT_WHOLE_H

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "request/request.h"

/* a's whole text is b's. */
static inline void assert_same_text(const struct sw_chat_request *a,
                                    const struct sw_chat_request *b)
{
    size_t na, nb;
    char *ta = sw_request_text_whole(a, &na), *tb = sw_request_text_whole(b, &nb);
    assert_non_null(ta);
    assert_non_null(tb);
    assert_int_equal(na, nb);
    assert_memory_equal(ta, tb, na);
    free(ta);
    free(tb);
}

/* req's whole text is the compact dump of its body. */
static inline void assert_text_is_dump(const struct sw_chat_request *req)
{
    char *text = json_dumps(req->body, JSON_COMPACT);
    size_t n;
    char *whole = sw_request_text_whole(req, &n);
    assert_non_null(text);
    assert_non_null(whole);
    assert_int_equal(strlen(text), n);
    assert_memory_equal(text, whole, n);
    free(text);
    free(whole);
}

#endif
