/* Storing a finished Responses answer: see respsave.h. */
#include "state/respsave.h"

#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/jdump.h"
#include "common/log.h"
#include "state/respitems.h"

static void on_put(int err, void *ud)
{
    (void)ud;
    if (err)
        sw_warn("responses: a response was not stored: %s (counted in "
                "spillway_responses_store_refused_total)", sw_err_str(err));
}

void sw_resp_save(struct sw_respstore *s, const char *scope, bool sensitive,
                  const json_t *request, const char *input_raw, size_t input_raw_len,
                  const json_t *answer)
{
    json_t *store = json_object_get(request, "store");
    if (!s || json_is_false(store))
        return;
    const char *id = json_string_value(json_object_get(answer, "id"));
    json_t *in = json_object_get(request, "input");
    /* the input as the request carried it, its own bytes when the caller
     * has them: read back as items (sw_resp_record_input) */
    bool kept = id && (json_is_string(in) || json_is_array(in));
    char *meta = NULL, *output = NULL,
         *dumped = kept && !input_raw ? sw_json_dumps(in, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
    const char *input = input_raw ? input_raw : dumped;
    size_t meta_len = 0, output_len = 0,
           input_len = input_raw ? input_raw_len : dumped ? strlen(dumped) : 0;
    int err = kept && input ? sw_resp_split(answer, &meta, &meta_len, &output, &output_len)
                            : SW_EINVAL;
    if (err) {
        sw_warn("responses: a response could not be stored: %s", sw_err_str(err));
    } else {
        const struct sw_resp_record r = {
            .id = id, .scope = scope ? scope : "", .sensitive = sensitive,
            .created_at_s = json_integer_value(json_object_get(answer, "created_at")),
            .input = input, .input_len = input_len,
            .output = output, .output_len = output_len,
            .meta = meta, .meta_len = meta_len,
        };
        sw_respstore_put(s, &r, on_put, NULL); /* the store copies what it keeps */
    }
    /* request content: wiped before it is freed, as the memory store does */
    char *const bufs[] = {dumped, output, meta};
    for (size_t i = 0; i < 3; i++)
        if (bufs[i]) {
            explicit_bzero(bufs[i], strlen(bufs[i]));
            free(bufs[i]);
        }
}
