/* libFuzzer driver for the request walkers (sw_pii_scan_request,
 * sw_pii_mask_request). Any body in; when it parses as JSON:
 *  - a non-object is refused by both (SW_EINVAL);
 *  - scan and mask agree: the mask succeeds exactly when the scan does and no
 *    key holds an entity (and the tool-call arguments stay JSON), and then
 *    masks at least the entities the scan counted (more when masking
 *    revealed a number next to a masked value) and as many binary parts;
 *  - the masked body serialises to valid JSON that parses back equal to it;
 *  - re-scanning the masked body finds no entity in any string or key the
 *    walker reads, and no more binary parts;
 *  - a failed mask is reported, never a success with a partial result.
 * The input body itself is never required to be valid UTF-8: jansson
 * refuses what is not, and such an input is skipped. */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "pii/pii.h"

#include "check.h"

static struct sw_pii_engine *E;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!E) {
        char err[256];
        static const struct sw_pii_custom custom[] = {
            {"employee_id", "EMP-[0-9]{6}", NULL},
        };
        CHECK(sw_pii_engine_new(custom, 1, &E, err, sizeof err) == SW_OK);
    }
    json_t *body = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL);
    if (!body)
        return 0;
    struct sw_pii_counts scan, masked, rescan;
    int src = sw_pii_scan_request(E, body, &scan);
    struct sw_pii_map *m = sw_pii_map_new();
    CHECK(m);
    int mrc = sw_pii_mask_request(E, m, body, &masked);
    if (!json_is_object(body)) {
        CHECK(src == SW_EINVAL && mrc == SW_EINVAL);
        goto done;
    }
    if (src != SW_OK) {
        CHECK(mrc != SW_OK);            /* what cannot be scanned cannot be masked */
        goto done;
    }
    if (mrc != SW_OK) {
        /* a key holding an entity, arguments that would stop being JSON, or
         * the map's bounds: only ever when there was something to mask */
        CHECK(scan.total > 0);
        goto done;
    }
    /* every entity the scan found is masked, and what masking revealed
     * (a number after a masked value) in further passes */
    CHECK(masked.total >= scan.total);
    CHECK(masked.binary == scan.binary);
    CHECK(sw_pii_map_size(m) <= masked.total);
    CHECK((scan.total == 0) == (sw_pii_map_size(m) == 0));

    char *dump = json_dumps(body, JSON_COMPACT | JSON_ENCODE_ANY);
    CHECK(dump);
    json_error_t je;
    json_t *back = json_loads(dump, JSON_DECODE_ANY, &je);
    if (!back)
        fprintf(stderr, "masked body no longer JSON: %s\n", je.text);
    CHECK(back);
    CHECK(json_equal(back, body));
    CHECK(sw_pii_scan_request(E, back, &rescan) == SW_OK);
    if (rescan.total)
        fprintf(stderr, "masked body still holds %u entities: %s\n", rescan.total, dump);
    CHECK(rescan.total == 0);
    /* a data: URL outside the binary fields is read as text too: masking
     * an entity in it can make it stop being one */
    CHECK(rescan.binary <= scan.binary);
    json_decref(back);
    free(dump);
done:
    sw_pii_map_free(m);
    json_decref(body);
    return 0;
}
