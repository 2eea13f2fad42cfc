/* The path after a backend's url (sw_upstream_path) for every way a url
 * is written, an attempt's target (sw_upstream_target) and the rows'
 * columns the relay asks instead of naming a dialect, and the azure
 * dialect's table: its headers, paths, answers, stream events, and the
 * config's checks of its keys. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "common/buf.h"
#include "config/config.h"
#include "upstream/dialect.h"

static struct sw_config *parse(const char *text, struct sw_config_errors *errs)
{
    struct sw_config *cfg = NULL;
    memset(errs, 0, sizeof *errs);
    sw_config_parse("t.yaml", text, strlen(text), NULL, NULL, &cfg, errs);
    return cfg;
}

/* The full URL a request for `rel` goes to, for a backend whose url is
 * written `url` (and whose other keys are `extra`). */
static const char *joined(const char *url, const char *extra, const char *rel, char *out,
                          size_t cap)
{
    char text[1024];
    snprintf(text, sizeof text,
             "backends:\n  - { name: b, tier: cloud, url: \"%s\", model: m%s }\n"
             "models:\n  - { name: chat, backends: [b] }\n",
             url, extra);
    struct sw_config_errors errs;
    struct sw_config *cfg = parse(text, &errs);
    for (size_t i = 0; i < errs.n; i++)
        print_message("%s\n", errs.msgs[i]);
    assert_non_null(cfg);
    sw_config_errors_free(&errs);
    const struct sw_config_backend *be = &cfg->backends[0];
    struct sw_buf b;
    sw_buf_init(&b, 4096);
    assert_int_equal(sw_upstream_path(be, be->dialect, rel, &b), 0);
    snprintf(out, cap, "%s%s", be->url, b.ptr);
    sw_buf_free(&b);
    sw_config_unref(cfg);
    return out;
}

static void test_join_table(void **state)
{
    (void)state;
    static const struct {
        const char *url, *extra, *rel, *want;
    } rows[] = {
        /* no path: /v1 first (today's configs unchanged) */
        {"http://127.0.0.1:8080", "", "chat/completions", "http://127.0.0.1:8080/v1/chat/completions"},
        {"http://127.0.0.1:8080/", "", "models", "http://127.0.0.1:8080/v1/models"},
        {"https://api.anthropic.com", ", dialect: anthropic", "messages",
         "https://api.anthropic.com/v1/messages"},
        {"https://api.openai.com", ", dialect: responses", "responses",
         "https://api.openai.com/v1/responses"},
        /* ending in /v1: the same server */
        {"http://host:8000/v1", "", "chat/completions", "http://host:8000/v1/chat/completions"},
        {"http://host:8000/v1/", "", "embeddings", "http://host:8000/v1/embeddings"},
        {"https://api.groq.com/openai/v1", "", "chat/completions",
         "https://api.groq.com/openai/v1/chat/completions"},
        {"https://openrouter.ai/api/v1", "", "models", "https://openrouter.ai/api/v1/models"},
        /* another path: the API's base, as an SDK's base_url */
        {"https://generativelanguage.googleapis.com/v1beta/openai", "", "chat/completions",
         "https://generativelanguage.googleapis.com/v1beta/openai/chat/completions"},
        {"https://generativelanguage.googleapis.com/v1beta/openai/", "", "embeddings",
         "https://generativelanguage.googleapis.com/v1beta/openai/embeddings"},
        {"https://gw.example/anthropic", ", dialect: anthropic", "messages",
         "https://gw.example/anthropic/messages"},
        {"https://gw.example/openai/v2", ", dialect: responses", "responses",
         "https://gw.example/openai/v2/responses"},
        /* azure: the resource's root, its own paths */
        {"https://r.openai.azure.com", ", dialect: azure, api_key: k", "chat/completions",
         "https://r.openai.azure.com/openai/v1/chat/completions"},
        {"https://r.openai.azure.com", ", dialect: azure, api_key: k, azure: { deployment: gpt4o-eu, api_version: 2024-10-21 }",
         "chat/completions",
         "https://r.openai.azure.com/openai/deployments/gpt4o-eu/chat/completions?api-version=2024-10-21"},
        {"https://r.openai.azure.com", ", dialect: azure, api_key: k, azure: { api_version: 2025-01-01-preview }",
         "embeddings",
         "https://r.openai.azure.com/openai/deployments/m/embeddings?api-version=2025-01-01-preview"},
        {"https://r.openai.azure.com", ", dialect: azure, api_key: k, azure: { api_version: 2024-10-21 }",
         "models", "https://r.openai.azure.com/openai/models?api-version=2024-10-21"},
    };
    char out[512];
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
        const char *got = joined(rows[i].url, rows[i].extra, rows[i].rel, out, sizeof out);
        if (strcmp(got, rows[i].want))
            fail_msg("row %zu: %s -> %s, want %s", i, rows[i].url, got, rows[i].want);
    }
}

/* Each dialect's chat endpoint is relative (the join adds the rest). */
static void test_chat_paths_relative(void **state)
{
    (void)state;
    for (int d = SW_DIALECT_OPENAI; d <= SW_DIALECT_AZURE; d++)
        assert_true(sw_upstream_dialect((enum sw_dialect)d)->chat_path[0] != '/');
    assert_string_equal(sw_upstream_dialect(SW_DIALECT_AZURE)->name, "azure");
}

static void assert_errs(const char *text, const char *want)
{
    struct sw_config_errors errs;
    struct sw_config *cfg = parse(text, &errs);
    assert_null(cfg);
    bool found = false;
    for (size_t i = 0; i < errs.n; i++)
        found |= strstr(errs.msgs[i], want) != NULL;
    if (!found) {
        for (size_t i = 0; i < errs.n; i++)
            print_message("%s\n", errs.msgs[i]);
        fail_msg("no error with \"%s\"", want);
    }
    sw_config_errors_free(&errs);
}

#define ONE(be) "backends:\n  - " be "\nmodels:\n  - { name: chat, backends: [b] }\n"

static void test_url_mistakes(void **state)
{
    (void)state;
    assert_errs(ONE("{ name: b, tier: cloud, url: \"http://h:8000/v1/v1\", model: m }"),
                "has /v1 twice");
    assert_errs(ONE("{ name: b, tier: cloud, url: \"https://x.example/v1beta/openai/chat/completions\", model: m }"),
                "use \"https://x.example/v1beta/openai\"");
    assert_errs(ONE("{ name: b, tier: cloud, url: \"https://x.example/v1?key=1\", model: m }"),
                "must not contain a query");
}

static void test_azure_config(void **state)
{
    (void)state;
    assert_errs(ONE("{ name: b, tier: cloud, url: \"https://r.openai.azure.com\", model: m, dialect: azure }"),
                "an azure backend needs api_key");
    assert_errs(ONE("{ name: b, tier: cloud, url: \"https://r.openai.azure.com/openai/v1\", model: m, dialect: azure, api_key: k }"),
                "the resource's root");
    assert_errs(ONE("{ name: b, tier: cloud, url: \"https://r.openai.azure.com\", model: m, dialects: [azure, openai], api_key: k }"),
                "azure is spoken alone");
    assert_errs(ONE("{ name: b, tier: cloud, url: \"https://r.openai.azure.com\", model: m, dialect: azure, api_key: k, azure: { deployment: \"a/b\" } }"),
                "may hold only");
    assert_errs(ONE("{ name: b, tier: cloud, url: \"https://r.openai.azure.com\", model: m, dialect: azure, api_key: k, azure: { api_version: \"x&y=1\" } }"),
                "may hold only");
    assert_errs(ONE("{ name: b, tier: cloud, url: \"https://api.openai.com\", model: m, azure: { deployment: d } }"),
                "is for dialect azure only");
}

static void test_azure_headers(void **state)
{
    (void)state;
    const struct sw_upstream_dialect *az = sw_upstream_dialect(SW_DIALECT_AZURE);
    struct sw_config_backend be = {.url = "https://r.openai.azure.com", .model = "m",
                                   .api_key = "KEY", .dialect = SW_DIALECT_AZURE};
    struct sw_buf h;
    sw_buf_init(&h, 4096);
    assert_int_equal(az->headers(&be, NULL, &h), 0);
    assert_string_equal(h.ptr, "api-key: KEY\r\n");
    sw_buf_reset(&h);
    be.azure.entra_token = "TOK";
    assert_int_equal(az->headers(&be, NULL, &h), 0);
    assert_string_equal(h.ptr, "Authorization: Bearer TOK\r\n");
    sw_buf_free(&h);
}

static void test_azure_answer(void **state)
{
    (void)state;
    const struct sw_upstream_dialect *az = sw_upstream_dialect(SW_DIALECT_AZURE);
    json_t *a = json_loads(
        "{\"id\":\"c\",\"object\":\"chat.completion\",\"prompt_filter_results\":[{\"prompt_index\":0,"
        "\"content_filter_results\":{}}],\"choices\":[{\"index\":0,\"finish_reason\":\"content_filter\","
        "\"message\":{\"role\":\"assistant\",\"content\":\"x\"},\"content_filter_results\":{\"hate\":"
        "{\"filtered\":true,\"severity\":\"high\"}}}],\"usage\":{\"prompt_tokens\":3,"
        "\"completion_tokens\":1,\"total_tokens\":4}}",
        0, NULL);
    assert_non_null(a);
    json_t *o = az->answer_to_openai(a, "chat", 1, false);
    assert_non_null(o);
    assert_null(json_object_get(o, "prompt_filter_results"));
    json_t *c0 = json_array_get(json_object_get(o, "choices"), 0);
    assert_null(json_object_get(c0, "content_filter_results"));
    assert_string_equal(json_string_value(json_object_get(c0, "finish_reason")), "content_filter");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(o, "usage"), "prompt_tokens")), 3);
    json_decref(o);
    json_decref(a);
}

static void test_azure_stream(void **state)
{
    (void)state;
    const struct sw_upstream_dialect *az = sw_upstream_dialect(SW_DIALECT_AZURE);
    struct sw_dialect_stream s;
    az->stream_init(&s, "chat", 1, false);
    json_t *chunks = json_array();
    bool done = false;
    const char *msg = NULL;
    static const char report[] =
        "{\"choices\":[],\"created\":0,\"id\":\"\",\"model\":\"\",\"object\":\"\","
        "\"prompt_filter_results\":[{\"prompt_index\":0,\"content_filter_results\":{}}]}";
    assert_int_equal(az->stream_event(&s, report, sizeof report - 1, chunks, &done, &msg), 0);
    assert_int_equal(json_array_size(chunks), 0);
    static const char delta[] =
        "{\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":"
        "{\"content\":\"hi\"},\"finish_reason\":null,\"content_filter_results\":{}}]}";
    assert_int_equal(az->stream_event(&s, delta, sizeof delta - 1, chunks, &done, &msg), 0);
    assert_int_equal(json_array_size(chunks), 1);
    json_t *c0 = json_array_get(json_object_get(json_array_get(chunks, 0), "choices"), 0);
    assert_null(json_object_get(c0, "content_filter_results"));
    static const char usage[] = "{\"id\":\"c\",\"choices\":[],\"usage\":{\"prompt_tokens\":1,"
                                "\"completion_tokens\":1,\"total_tokens\":2}}";
    assert_int_equal(az->stream_event(&s, usage, sizeof usage - 1, chunks, &done, &msg), 0);
    assert_int_equal(json_array_size(chunks), 2);
    assert_false(done);
    assert_int_equal(az->stream_event(&s, "[DONE]", 6, chunks, &done, &msg), 0);
    assert_true(done);
    assert_int_equal(az->stream_event(&s, "{nope", 5, chunks, &done, &msg), -1);
    assert_non_null(msg);
    json_decref(chunks);
}

/* Path and headers of an attempt: the dialect's headers, the caller's
 * after them, the chat or embeddings path. */
static void test_target(void **state)
{
    (void)state;
    struct sw_config_backend be = {.url = "http://127.0.0.1:1", .model = "m", .api_key = "K",
                                   .dialect = SW_DIALECT_OPENAI};
    struct sw_buf path, hdrs, extra;
    sw_buf_init(&path, 4096);
    sw_buf_init(&hdrs, 4096);
    sw_buf_init(&extra, 4096);
    assert_int_equal(sw_buf_append(&extra, "traceparent: t\r\n", 16), 0);
    assert_int_equal(sw_upstream_target(&be, SW_DIALECT_OPENAI, SW_API_CHAT, true, NULL, &extra,
                                        "{}", 2, &path, &hdrs),
                     0);
    assert_string_equal(path.ptr, "/v1/chat/completions");
    assert_string_equal(hdrs.ptr, "Authorization: Bearer K\r\ntraceparent: t\r\n");
    sw_buf_reset(&path);
    sw_buf_reset(&hdrs);
    assert_int_equal(sw_upstream_target(&be, SW_DIALECT_OPENAI, SW_API_EMBEDDINGS, false, NULL,
                                        NULL, "{}", 2, &path, &hdrs),
                     0);
    assert_string_equal(path.ptr, "/v1/embeddings");
    sw_buf_reset(&path);
    sw_buf_reset(&hdrs);
    be.dialect = SW_DIALECT_ANTHROPIC;
    struct sw_upstream_client_hdrs ch = {{"2023-06-01", NULL}, NULL};
    assert_int_equal(sw_upstream_target(&be, SW_DIALECT_ANTHROPIC, SW_API_CHAT, false, &ch, NULL,
                                        "{}", 2, &path, &hdrs),
                     0);
    assert_string_equal(path.ptr, "/v1/messages");
    assert_string_equal(hdrs.ptr, "x-api-key: K\r\nanthropic-version: 2023-06-01\r\n");
    sw_buf_free(&path);
    sw_buf_free(&hdrs);
    sw_buf_free(&extra);
}

/* The columns the relay reads instead of branching on a dialect. */
static void test_row_columns(void **state)
{
    (void)state;
    static const struct {
        enum sw_dialect d;
        const char *provider;
        bool embeddings, native_unmask, client_headers, error_message;
    } rows[] = {
        {SW_DIALECT_OPENAI, "openai", true, false, false, false},
        {SW_DIALECT_ANTHROPIC, "anthropic", false, true, true, false},
        {SW_DIALECT_RESPONSES, "openai", false, false, false, false},
        {SW_DIALECT_AZURE, "azure.ai.openai", true, false, false, false},
        {SW_DIALECT_BEDROCK, "aws.bedrock", false, false, false, true},
        {SW_DIALECT_GEMINI, "gcp.gemini", false, false, false, false},
        {SW_DIALECT_VERTEX, "gcp.vertex_ai", false, false, false, false},
        {SW_DIALECT_VERTEX_ANTHROPIC, "gcp.vertex_ai", false, false, false, false},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        const struct sw_upstream_dialect *d = sw_upstream_dialect(rows[i].d);
        assert_string_equal(d->provider_name, rows[i].provider);
        assert_int_equal(d->embeddings, rows[i].embeddings);
        assert_int_equal(d->native_unmask, rows[i].native_unmask);
        assert_int_equal(d->client_headers[0] != NULL, rows[i].client_headers);
        assert_int_equal(d->error_message != NULL, rows[i].error_message);
    }
    json_t *aws = json_pack("{s:s}", "Message", "no such model");
    const json_t *m = sw_upstream_dialect(SW_DIALECT_BEDROCK)->error_message(aws);
    assert_string_equal(json_string_value(m), "no such model");
    json_decref(aws);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_join_table),       cmocka_unit_test(test_chat_paths_relative),
        cmocka_unit_test(test_url_mistakes),     cmocka_unit_test(test_azure_config),
        cmocka_unit_test(test_azure_headers),    cmocka_unit_test(test_azure_answer),
        cmocka_unit_test(test_azure_stream),     cmocka_unit_test(test_target),
        cmocka_unit_test(test_row_columns),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
