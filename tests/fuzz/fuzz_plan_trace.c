/* libFuzzer driver for the capacity planner's trace readers (plan/trace.h).
 * The first byte chooses the reader of the rest: the CSV
 * (time,prompt_tokens,output_tokens[,allow_cloud][,priority][,conversation])
 * or decision-log JSON lines. A trace that reads has at least one request,
 * arrivals sorted from 0 within its duration, every output at least one
 * token and allow_cloud 0 or 1; a refused one says why, within the error
 * buffer, NUL-terminated. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "plan/trace.h"

#include "check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    bool csv = !(data[0] & 1);
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    struct sw_plan_trace t;
    char err[256];
    memset(err, 'x', sizeof err);
    int rc = csv ? sw_plan_trace_csv(text, len, &t, err, sizeof err)
                 : sw_plan_trace_declog(text, len, &t, err, sizeof err);
    if (rc) {
        CHECK(rc == -1);
        CHECK(memchr(err, '\0', sizeof err) != NULL);
        CHECK(err[0] != '\0');
        return 0;
    }
    CHECK(t.n >= 1 && t.r);
    CHECK(t.r[0].t_ms == 0);
    for (size_t i = 0; i < t.n; i++) {
        CHECK(i == 0 || t.r[i].t_ms >= t.r[i - 1].t_ms);
        CHECK((int64_t)t.r[i].t_ms < t.duration_ms);
        CHECK(t.r[i].allow_cloud <= 1);
        if (csv)
            CHECK(t.r[i].output >= 1);
    }
    sw_plan_trace_free(&t);
    return 0;
}
