/* The cost of the output contract on one non-streamed answer:
 * sw_contract_check() (parse the content, validate it) over a typical
 * structured answer (a list of 20 records, $defs, enum, pattern, bounds),
 * next to a baseline in the same process that only parses the same content
 * with jansson, so the ratio is comparable across noisy machines. Built and
 * run by bench/contract.sh.
 *
 *   contract [ITERATIONS]      default 20000 per scenario */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "contract/contract.h"

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

#define SCHEMA(NAME)                                                                          \
    "{\"type\":\"object\",\"required\":[\"items\"],\"additionalProperties\":false,"                    \
    "\"properties\":{\"items\":{\"type\":\"array\",\"maxItems\":100,\"items\":{\"$ref\":\"#/$defs/item\"}}},"  \
    "\"$defs\":{\"item\":{\"type\":\"object\",\"required\":[\"id\",\"name\",\"kind\",\"score\"],"           \
    "\"additionalProperties\":false,\"properties\":{\"id\":{\"type\":\"integer\",\"minimum\":0},"           \
    "\"name\":" NAME ","                                                                      \
    "\"kind\":{\"enum\":[\"person\",\"place\",\"thing\"]},"                                          \
    "\"score\":{\"type\":\"number\",\"minimum\":0,\"maximum\":1},"                                     \
    "\"tags\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}}}}}}"
static const char schema_nopat[] = SCHEMA("{\"type\":\"string\",\"minLength\":1,\"maxLength\":64}");
/* The same with a pattern on name: PCRE2 compiles it per string checked. */
static const char schema_pat[] =
    SCHEMA("{\"type\":\"string\",\"minLength\":1,\"maxLength\":64,\"pattern\":\"^[a-z]+-[0-9]+$\"}");

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 20000;
    char content[8192];
    size_t len = (size_t)snprintf(content, sizeof content, "{\"items\":[");
    for (int i = 0; i < 20; i++)
        len += (size_t)snprintf(content + len, sizeof content - len,
                                "%s{\"id\":%d,\"name\":\"record-%d\",\"kind\":\"thing\",\"score\":0.%d,"
                                "\"tags\":[\"a\",\"b\"]}", i ? "," : "", i, i, i % 10);
    len += (size_t)snprintf(content + len, sizeof content - len, "]}");

    json_error_t e;
    json_t *s1 = json_loads(schema_nopat, 0, &e), *s2 = json_loads(schema_pat, 0, &e);
    if (!s1 || !s2 || sw_contract_check(s1, content, len, NULL) != SW_CONTRACT_OK ||
        sw_contract_check(s2, content, len, NULL) != SW_CONTRACT_OK) {
        fprintf(stderr, "contract bench: the sample does not conform\n");
        return 1;
    }
    double t0 = now_ns();
    for (long i = 0; i < n; i++)
        json_decref(json_loadb(content, len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &e));
    double base = (now_ns() - t0) / (double)n;
    t0 = now_ns();
    for (long i = 0; i < n; i++)
        sw_contract_check(s1, content, len, NULL);
    double plain = (now_ns() - t0) / (double)n;
    t0 = now_ns();
    for (long i = 0; i < n; i++)
        sw_contract_check(s2, content, len, NULL);
    double pat = (now_ns() - t0) / (double)n;
    printf("answer %zu bytes, 20 records, %ld iterations\n", len, n);
    printf("baseline: parse only (jansson)        %8.0f ns\n", base);
    printf("contract check, no pattern            %8.0f ns  (%.2fx baseline)\n", plain, plain / base);
    printf("contract check, pattern on 20 strings %8.0f ns  (%.2fx baseline)\n", pat, pat / base);
    json_decref(s1);
    json_decref(s2);
    return 0;
}
