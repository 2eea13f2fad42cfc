/* libFuzzer target for the hot-path JSON scanner (src/common/jscan.c).
 * Promises checked on every input:
 *  - whatever it accepts as an object, jansson accepts as an object (it
 *    never lets malformed JSON through to a client or a backend);
 *  - whatever jansson accepts as an object without duplicate keys or raw NUL
 *    bytes, within the scanner's depth limit, it accepts too;
 *  - a member it reports spans exactly one value, and cutting that member
 *    (sw_jscan_cut) leaves an object jansson still accepts;
 *  - on a text it accepts, sw_jscan_members (no syntax check) finds the
 *    same members; on any text it stays within the bytes given (ASan). */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/jscan.h"

#include "check.h"


/* jansson's verdict; a number it cannot represent (a real that overflows
 * a double) is valid JSON all the same, so that refusal is told apart. */
static bool out_of_range;

static json_t *load_flags(const char *p, size_t n, size_t flags)
{
    json_error_t e;
    json_t *v = json_loadb(p, n, JSON_ALLOW_NUL | JSON_DECODE_ANY | JSON_DECODE_INT_AS_REAL | flags, &e);
    out_of_range = !v && (strstr(e.text, "overflow") || strstr(e.text, "too big"));
    return v;
}

static json_t *load(const char *p, size_t n)
{
    return load_flags(p, n, 0);
}

static int nesting(const uint8_t *d, size_t n)
{
    int depth = 0, max = 0;
    for (size_t i = 0; i < n; i++) {
        if (d[i] == '{' || d[i] == '[')
            depth++;
        if (depth > max)
            max = depth;
    }
    return max;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    static const char *const keys[] = {"model", "usage", "choices", "a"};
    struct sw_jspan v[4], m[4];
    bool mine = sw_jscan_object(text, size, keys, v, m, 4);
    struct sw_jspan lv[4], lm[4];
    bool located = sw_jscan_members(text, size, keys, lv, lm, 4);
    if (mine) {
        CHECK(located);
        CHECK(memcmp(v, lv, sizeof v) == 0 && memcmp(m, lm, sizeof m) == 0);
    }
    json_t *tree = load(text, size);
    bool theirs = json_is_object(tree);
    if (mine && !theirs && out_of_range)
        return 0;
    if (mine)
        CHECK(theirs);
    /* jansson reads a raw NUL byte as the end of the text; the scanner refuses it. */
    if (theirs && nesting(data, size) <= SW_JSCAN_MAX_DEPTH && !memchr(data, 0, size)) {
        json_t *strict = load_flags(text, size, JSON_REJECT_DUPLICATES);
        if (strict)
            CHECK(mine);
        json_decref(strict);
    }
    if (mine) {
        for (int i = 0; i < 4; i++) {
            if (!v[i].len)
                continue;
            json_t *val = load(text + v[i].off, v[i].len);
            CHECK(val != NULL);
            CHECK(json_equal(val, json_object_get(tree, keys[i])));
            json_decref(val);
            struct sw_jspan cut = sw_jscan_cut(text, size, m[i]);
            char *rest = malloc(size - cut.len + 1);
            CHECK(rest != NULL);
            memcpy(rest, text, cut.off);
            memcpy(rest + cut.off, text + cut.off + cut.len, size - cut.off - cut.len);
            json_t *after = load(rest, size - cut.len);
            CHECK(json_is_object(after));
            json_decref(after);
            free(rest);
        }
    }
    json_decref(tree);
    return 0;
}
