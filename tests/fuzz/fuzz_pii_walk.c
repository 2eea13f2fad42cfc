/* libFuzzer driver for the request walkers of every API surface
 * (sw_pii_scan_body, sw_pii_mask_body). The first byte picks the surface
 * (chat, Messages, embeddings, Responses), the rest is the body; when it parses as JSON:
 *  - a non-object is refused by both (SW_EINVAL, empty path);
 *  - a field outside its grammar: both refuse it with the same path, a
 *    NUL-terminated string within the buffer;
 *  - scan and mask agree: the mask succeeds only when the scan does, and then
 *    masks at least the entities the scan counted (numbers, runs of text
 *    parts, every string and key);
 *  - the masked body serialises to valid JSON that parses back equal to it
 *    and re-scans clean, with no more binary parts than before;
 *  - a failed mask is reported, never a success with a partial result. */
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
        CHECK(sw_pii_engine_new(NULL, 0, &E, err, sizeof err) == SW_OK);
    }
    if (size < 1)
        return 0;
    enum sw_pii_surface s = (enum sw_pii_surface)(data[0] % 4);
    json_t *body = json_loadb((const char *)data + 1, size - 1, JSON_DECODE_ANY, NULL);
    if (!body)
        return 0;
    struct sw_pii_counts scan, masked, rescan;
    char bad[SW_PII_MAX_BAD_PATH], mbad[SW_PII_MAX_BAD_PATH];
    memset(bad, 'x', sizeof bad);
    int src = sw_pii_scan_body(E, s, body, &scan, bad, sizeof bad);
    CHECK(memchr(bad, 0, sizeof bad));
    struct sw_pii_map *m = sw_pii_map_new();
    CHECK(m);
    int mrc = sw_pii_mask_body(E, m, s, body, &masked, mbad, sizeof mbad);
    CHECK(memchr(mbad, 0, sizeof mbad));
    if (!json_is_object(body)) {
        CHECK(src == SW_EINVAL && mrc == SW_EINVAL && !bad[0] && !mbad[0]);
        goto done;
    }
    if (src == SW_EINVAL && bad[0]) {
        /* the mask walks in the same order: the same first bad field, unless
         * a key or id holding an entity (which the scan counted) came first */
        CHECK(mrc == SW_EINVAL && (!strcmp(bad, mbad) || scan.total > 0));
        goto done;
    }
    if (src != SW_OK) {
        CHECK(mrc != SW_OK);
        goto done;
    }
    if (mrc != SW_OK) {
        /* a key, id or name holding an entity, arguments that would stop
         * being JSON, the map's bounds: only when there was something */
        CHECK(scan.total > 0);
        goto done;
    }
    CHECK(masked.total >= scan.total);
    CHECK(masked.binary == scan.binary);
    CHECK((scan.total == 0) == (sw_pii_map_size(m) == 0));
    char *dump = json_dumps(body, JSON_COMPACT | JSON_ENCODE_ANY);
    CHECK(dump);
    json_t *back = json_loads(dump, JSON_DECODE_ANY, NULL);
    CHECK(back);
    CHECK(json_equal(back, body));
    CHECK(sw_pii_scan_body(E, s, back, &rescan, NULL, 0) == SW_OK);
    if (rescan.total)
        fprintf(stderr, "masked body still holds %u entities: %s\n", rescan.total, dump);
    CHECK(rescan.total == 0);
    CHECK(rescan.binary <= scan.binary);
    json_decref(back);
    free(dump);
done:
    sw_pii_map_free(m);
    json_decref(body);
    return 0;
}
