/* Unit tests of the load-signal parsers (src/upstream/loadsig.c): the
 * Prometheus text reader (labels, comments, NaN, exact names, garbage) and
 * each source's answer, table-driven. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "upstream/loadsig.h"

struct prom_case {
    const char *name;
    const char *text;
    const char *metric;
    int rc;
    double want;
};

static const struct prom_case prom_cases[] = {
    {"plain", "a 3\n", "a", 0, 3},
    {"no trailing newline", "a 3", "a", 0, 3},
    {"crlf", "a 3\r\nb 4\r\n", "b", 0, 4},
    {"comments and help skipped",
     "# HELP a the a\n# TYPE a gauge\n# a 100\na 2\n", "a", 0, 2},
    {"labels summed over series",
     "vllm:num_requests_running{model_name=\"x\"} 2\n"
     "vllm:num_requests_running{model_name=\"y\"} 3.5\n",
     "vllm:num_requests_running", 0, 5.5},
    {"quoted brace, comma and escaped quote in a label",
     "m{a=\"}\",b=\"x\\\"}y\",c=\"\\\\\"} 7\n", "m", 0, 7},
    {"timestamp after the value", "m 4 1700000000000\n", "m", 0, 4},
    {"exponent", "m 1.5e1\n", "m", 0, 15},
    {"NaN sample ignored", "m NaN\nm{x=\"1\"} 2\n", "m", 0, 2},
    {"only NaN: not found", "m NaN\n", "m", -1, 0},
    {"+Inf ignored", "m +Inf\n", "m", -1, 0},
    {"prefix is not the metric", "m_total 9\nm_created 1\n", "m", -1, 0},
    {"longer name is not the metric", "vllm:num_requests_running_x 9\n",
     "vllm:num_requests_running", -1, 0},
    {"metric is not a prefix of the line's", "mx 9\n", "m", -1, 0},
    {"absent", "a 1\n", "b", -1, 0},
    {"empty text", "", "m", -1, 0},
    {"unclosed labels skipped", "m{a=\"1\" 5\nm 2\n", "m", 0, 2},
    {"no value", "m\nm{a=\"b\"}\n", "m", -1, 0},
    {"garbage value", "m abc\nm 3x\nm 0x10\n", "m", -1, 0},
    {"leading blanks", "   m 6\n", "m", 0, 6},
    {"binary garbage", "\x01\x02\xff m 1\n\x00", "m", -1, 0},
};

static void test_prom(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof prom_cases / sizeof prom_cases[0]; i++) {
        const struct prom_case *c = &prom_cases[i];
        double v = -1;
        size_t len = strlen(c->text);
        int rc = sw_prom_sum(c->text, len, c->metric, &v);
        if (rc != c->rc || (rc == 0 && fabs(v - c->want) > 1e-9)) {
            print_error("case \"%s\": rc %d value %g, want rc %d value %g\n", c->name, rc, v,
                        c->rc, c->want);
            fail();
        }
    }
}

/* Not NUL-terminated: the reader stops at len. */
static void test_prom_len(void **state)
{
    (void)state;
    const char text[] = "m 1\nm 2\n";
    double v;
    assert_int_equal(sw_prom_sum(text, 4, "m", &v), 0);
    assert_true(v == 1);
    assert_int_equal(sw_prom_sum(text, 2, "m", &v), -1);
}

struct source_case {
    const char *name;
    enum sw_load_source src;
    const char *path;
    int status;
    const char *body;
    int rc;
    double processing, waiting;
    bool saturated;
};

static const struct source_case source_cases[] = {
    {"llamacpp metrics", SW_LOAD_LLAMACPP, "/metrics", 200,
     "# HELP llamacpp:requests_processing x\nllamacpp:requests_processing 3\n"
     "llamacpp:requests_deferred 2\n", 0, 3, 2, false},
    {"llamacpp metrics missing deferred", SW_LOAD_LLAMACPP, "/metrics", 200,
     "llamacpp:requests_processing 3\n", -1, 0, 0, false},
    {"llamacpp slots", SW_LOAD_LLAMACPP, "/slots", 200,
     "[{\"id\":0,\"is_processing\":true},{\"id\":1,\"is_processing\":false},"
     "{\"id\":2,\"is_processing\":true}]", 0, 2, 0, false},
    {"llamacpp slots, old state field", SW_LOAD_LLAMACPP, "/slots", 200,
     "[{\"id\":0,\"state\":1},{\"id\":1,\"state\":0}]", 0, 1, 0, false},
    {"llamacpp slots garbage", SW_LOAD_LLAMACPP, "/slots", 200, "{\"slots\":1}", -1, 0, 0,
     false},
    {"llamacpp 501", SW_LOAD_LLAMACPP, "/metrics", 501, "", -1, 0, 0, false},
    {"vllm", SW_LOAD_VLLM, "/metrics", 200,
     "vllm:num_requests_running{model_name=\"m\"} 4.0\n"
     "vllm:num_requests_waiting{model_name=\"m\"} 7.0\n"
     "vllm:num_requests_swapped{model_name=\"m\"} 1.0\n", 0, 4, 7, false},
    {"vllm without waiting", SW_LOAD_VLLM, "/metrics", 200,
     "vllm:num_requests_running 4\n", -1, 0, 0, false},
    {"sglang", SW_LOAD_SGLANG, "/metrics", 200,
     "sglang:num_running_reqs{model_name=\"m\"} 5\nsglang:num_queue_reqs{model_name=\"m\"} 1\n",
     0, 5, 1, false},
    {"tgi", SW_LOAD_TGI, "/metrics", 200, "tgi_batch_current_size 2\ntgi_queue_size 9\n", 0, 2,
     9, false},
    {"tgi queue only", SW_LOAD_TGI, "/metrics", 200, "tgi_queue_size 9\n", 0, 0, 9, false},
    {"ollama ps", SW_LOAD_OLLAMA, "/api/ps", 200, "{\"models\":[{\"name\":\"x\"}]}", 0, 0, 0,
     false},
    {"ollama 503 saturated", SW_LOAD_OLLAMA, "/api/ps", 503, "busy", 0, 0, 0, true},
    {"ollama garbage", SW_LOAD_OLLAMA, "/api/ps", 200, "<html>", -1, 0, 0, false},
    {"vllm 500", SW_LOAD_VLLM, "/metrics", 500, "vllm:num_requests_running 1\n", -1, 0, 0,
     false},
    {"none", SW_LOAD_NONE, NULL, 200, "", -1, 0, 0, false},
};

static void test_sources(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof source_cases / sizeof source_cases[0]; i++) {
        const struct source_case *c = &source_cases[i];
        struct sw_load_sample s;
        char err[160] = "";
        int rc = sw_load_parse(c->src, c->path, c->status, c->body, strlen(c->body), &s, err,
                               sizeof err);
        bool ok = rc == c->rc;
        if (ok && rc == 0)
            ok = s.processing == c->processing && s.waiting == c->waiting &&
                 s.saturated == c->saturated;
        if (ok && rc != 0)
            ok = err[0] != '\0';
        if (!ok) {
            print_error("case \"%s\": rc %d (%s) p %g w %g sat %d\n", c->name, rc, err,
                        s.processing, s.waiting, s.saturated);
            fail();
        }
    }
}

/* A vLLM v1 /metrics page as it prints the prefix cache (one engine). */
static const char *vllm_page(char *buf, size_t n, double queries, double hits)
{
    snprintf(buf, n,
             "# HELP vllm:num_requests_running Number of requests in model execution batches.\n"
             "# TYPE vllm:num_requests_running gauge\n"
             "vllm:num_requests_running{engine=\"0\",model_name=\"qwen\"} 1.0\n"
             "# HELP vllm:prefix_cache_queries_total Prefix cache queries, in terms of number of "
             "queried tokens.\n"
             "# TYPE vllm:prefix_cache_queries_total counter\n"
             "vllm:prefix_cache_queries_total{engine=\"0\",model_name=\"qwen\"} %.1f\n"
             "# HELP vllm:prefix_cache_hits_total Prefix cache hits, in terms of number of "
             "cached tokens.\n"
             "# TYPE vllm:prefix_cache_hits_total counter\n"
             "vllm:prefix_cache_hits_total{engine=\"0\",model_name=\"qwen\"} %.1f\n",
             queries, hits);
    return buf;
}

static void test_cache_parse(void **state)
{
    (void)state;
    char page[2048];
    struct sw_cache_report r;
    vllm_page(page, sizeof page, 12800, 9600);
    assert_int_equal(sw_load_parse_cache(SW_LOAD_VLLM, page, strlen(page), &r), 0);
    assert_true(r.totals && !r.gauge);
    assert_true(r.queries_total == 12800 && r.hits_total == 9600);
    /* v0.8-0.10 print them under the gpu_ names too; older ones a gauge only */
    const char *gpu = "vllm:gpu_prefix_cache_queries_total{model_name=\"m\"} 100\n"
                      "vllm:gpu_prefix_cache_hits_total{model_name=\"m\"} 40\n";
    assert_int_equal(sw_load_parse_cache(SW_LOAD_VLLM, gpu, strlen(gpu), &r), 0);
    assert_true(r.totals && r.queries_total == 100 && r.hits_total == 40);
    const char *v0 = "# TYPE vllm:gpu_prefix_cache_hit_rate gauge\n"
                     "vllm:gpu_prefix_cache_hit_rate{model_name=\"m\"} 0.85\n";
    assert_int_equal(sw_load_parse_cache(SW_LOAD_VLLM, v0, strlen(v0), &r), 0);
    assert_true(!r.totals && r.gauge && r.gauge_rate == 0.85);
    /* one counter without the other, no figures, another source: nothing */
    const char *half = "vllm:prefix_cache_queries_total 100\n";
    assert_int_equal(sw_load_parse_cache(SW_LOAD_VLLM, half, strlen(half), &r), -1);
    assert_int_equal(sw_load_parse_cache(SW_LOAD_VLLM, "vllm:num_requests_running 1\n", 28, &r), -1);
    assert_int_equal(sw_load_parse_cache(SW_LOAD_LLAMACPP, page, strlen(page), &r), -1);
}

static void test_cache_delta(void **state)
{
    (void)state;
    struct sw_cache_counters c = {0};
    struct sw_cache_report r = {.totals = true, .queries_total = 50000, .hits_total = 10000};
    double rate = -1;
    /* the first report is the baseline: its history is not this interval's */
    assert_false(sw_cache_counters_take(&c, &r, &rate));
    /* 4000 tokens looked up since, 3000 found: 0.75 */
    r.queries_total = 54000;
    r.hits_total = 13000;
    assert_true(sw_cache_counters_take(&c, &r, &rate));
    assert_true(rate == 0.75);
    /* too little since: the older baseline stays and the next poll adds up */
    r.queries_total = 54040;
    r.hits_total = 13040;
    assert_false(sw_cache_counters_take(&c, &r, &rate));
    r.queries_total = 54100;
    r.hits_total = 13100;
    assert_true(sw_cache_counters_take(&c, &r, &rate));
    assert_true(rate == 1);
    /* a restart (counters back near zero): a new baseline, then deltas */
    r.queries_total = 200;
    r.hits_total = 0;
    assert_false(sw_cache_counters_take(&c, &r, &rate));
    r.queries_total = 1200;
    r.hits_total = 500;
    assert_true(sw_cache_counters_take(&c, &r, &rate));
    assert_true(rate == 0.5);
    /* hits past queries (two engines' counters sampled apart): at most 1 */
    r.queries_total = 1300;
    r.hits_total = 800;
    assert_true(sw_cache_counters_take(&c, &r, &rate));
    assert_true(rate == 1);
    r.queries_total = NAN;
    assert_false(sw_cache_counters_take(&c, &r, &rate));
    /* the gauge: taken when it moves (traffic), not on every poll */
    struct sw_cache_counters g = {0};
    struct sw_cache_report gr = {.gauge = true, .gauge_rate = 0.6};
    assert_false(sw_cache_counters_take(&g, &gr, &rate));
    assert_false(sw_cache_counters_take(&g, &gr, &rate));
    gr.gauge_rate = 0.7;
    assert_true(sw_cache_counters_take(&g, &gr, &rate));
    assert_true(rate == 0.7);
}

static void test_names(void **state)
{
    (void)state;
    assert_string_equal(sw_load_source_name(SW_LOAD_VLLM), "vllm");
    assert_string_equal(sw_load_source_name(SW_LOAD__COUNT), "unknown");
    assert_string_equal(sw_load_path(SW_LOAD_OLLAMA), "/api/ps");
    assert_null(sw_load_path(SW_LOAD_NONE));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_prom),
        cmocka_unit_test(test_prom_len),
        cmocka_unit_test(test_sources),
        cmocka_unit_test(test_cache_parse),
        cmocka_unit_test(test_cache_delta),
        cmocka_unit_test(test_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
