/* Unit tests of the request walkers (src/pii/walk.c) on every API surface:
 * each structural field with a value of its grammar (skipped) and with free
 * text (refused, naming the field), each binary shape (counted, not read),
 * JSON numbers (scanned as text, masked as a string), values split across
 * adjacent text parts (found; every part they touch masked), the mask
 * round trip, and the pair of walks over a body and its translation (the
 * counts of the two walks; a shared string read once, a changed one read). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/buf.h"
#include "common/err.h"
#include "pii/cache.h"
#include "pii/pii.h"

static struct sw_pii_engine *E;

static int setup(void **state)
{
    (void)state;
    char err[256];
    return sw_pii_engine_new(NULL, 0, &E, err, sizeof err);
}

static int teardown(void **state)
{
    (void)state;
    sw_pii_engine_free(E);
    return 0;
}

/* Values as people type them: a card number with its Luhn digit computed
 * from a prefix, grouped in fours; a Dutch mobile number; an address. */
static void card(char *out, size_t n, const char *prefix15, const char *sep)
{
    char d[17];
    int sum = 0;
    memcpy(d, prefix15, 15);
    for (int i = 0; i < 15; i++) {
        int v = d[14 - i] - '0';
        if (i % 2 == 0 && (v *= 2) > 9)
            v -= 9;
        sum += v;
    }
    d[15] = (char)('0' + (10 - sum % 10) % 10);
    d[16] = 0;
    snprintf(out, n, "%.4s%s%.4s%s%.4s%s%.4s", d, sep, d + 4, sep, d + 8, sep, d + 12);
}

#define MAIL "jan.devries@ziggo.nl"
#define FREE "mail me: " MAIL

static json_t *load(const char *text)
{
    json_error_t je;
    json_t *j = json_loads(text, JSON_DECODE_ANY, &je);
    if (!j)
        fail_msg("%s: %s", je.text, text);
    return j;
}

/* body with %s replaced by the JSON string v */
static json_t *load_with(const char *tmpl, const char *v)
{
    char text[4096], q[512];
    snprintf(q, sizeof q, "\"%s\"", v);
    snprintf(text, sizeof text, tmpl, q);
    return load(text);
}

/* ---- Grammar of structural fields ---- */

struct gram_row {
    enum sw_pii_surface s;
    const char *body;           /* %s: the value */
    const char *valid;
    const char *path;           /* reported for free text */
};

#define CHAT_MSG "{\"model\":\"gpt-4o\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
#define RESP "{\"model\":\"gpt-5\","
static const struct gram_row gram_rows[] = {
    {SW_PII_SURFACE_CHAT, CHAT_MSG "\"tool_choice\":%s}", "required", "tool_choice"},
    {SW_PII_SURFACE_CHAT, CHAT_MSG "\"tool_choice\":{\"type\":%s}}", "function", "tool_choice.type"},
    {SW_PII_SURFACE_CHAT, CHAT_MSG "\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":%s}}}",
     "get_weather", "tool_choice.function.name"},
    {SW_PII_SURFACE_CHAT, CHAT_MSG "\"function_call\":%s}", "auto", "function_call"},
    {SW_PII_SURFACE_CHAT, CHAT_MSG "\"function_call\":{\"name\":%s}}", "lookup-1", "function_call.name"},
    {SW_PII_SURFACE_CHAT, CHAT_MSG "\"reasoning_effort\":%s}", "minimal", "reasoning_effort"},
    {SW_PII_SURFACE_CHAT, CHAT_MSG "\"service_tier\":%s}", "priority", "service_tier"},
    {SW_PII_SURFACE_CHAT, CHAT_MSG "\"modalities\":[\"text\",%s]}", "audio", "modalities[1]"},
    {SW_PII_SURFACE_CHAT, CHAT_MSG "\"audio\":{\"voice\":%s,\"format\":\"mp3\"}}", "coral", "audio.voice"},
    {SW_PII_SURFACE_CHAT, CHAT_MSG "\"audio\":{\"voice\":\"ash\",\"format\":%s}}", "pcm16", "audio.format"},
    {SW_PII_SURFACE_CHAT, CHAT_MSG "\"response_format\":{\"type\":%s}}", "json_object", "response_format.type"},
    {SW_PII_SURFACE_CHAT, "{\"model\":%s,\"messages\":[]}", "Qwen/Qwen2.5-7B-Instruct:Q4_K_M", "model"},
    {SW_PII_SURFACE_CHAT, "{\"model\":\"m\",\"messages\":[{\"role\":%s,\"content\":\"x\"}]}", "developer",
     "messages[0].role"},
    {SW_PII_SURFACE_CHAT, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\","
     "\"image_url\":{\"url\":\"https://example.org/a.png\",\"detail\":%s}}]}]}", "low",
     "messages[0].content[0].image_url.detail"},
    {SW_PII_SURFACE_CHAT, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":%s,"
     "\"text\":\"x\"}]}]}", "text", "messages[0].content[0].type"},
    {SW_PII_SURFACE_CHAT, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"file\","
     "\"file\":{\"file_id\":%s}}]}]}", "file-6F2ksmvXxt4VdoqmHRw6kL", "messages[0].content[0].file.file_id"},
    {SW_PII_SURFACE_CHAT, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"input_audio\","
     "\"input_audio\":{\"data\":\"UklGRg==\",\"format\":%s}}]}]}", "wav",
     "messages[0].content[0].input_audio.format"},
    {SW_PII_SURFACE_CHAT, "{\"model\":\"m\",\"messages\":[{\"role\":\"assistant\",\"tool_calls\":[{\"id\":%s,"
     "\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}}]}]}", "call_qW3rT5yU7iO9pA",
     "messages[0].tool_calls[0].id"},
    {SW_PII_SURFACE_CHAT, "{\"model\":\"m\",\"messages\":[{\"role\":\"assistant\",\"tool_calls\":[{\"id\":\"c\","
     "\"type\":%s,\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}}]}]}", "function",
     "messages[0].tool_calls[0].type"},
    {SW_PII_SURFACE_CHAT, "{\"model\":\"m\",\"messages\":[{\"role\":\"assistant\",\"tool_calls\":[{\"id\":\"c\","
     "\"type\":\"function\",\"function\":{\"name\":%s,\"arguments\":\"{}\"}}]}]}", "search_orders",
     "messages[0].tool_calls[0].function.name"},
    {SW_PII_SURFACE_CHAT, "{\"model\":\"m\",\"messages\":[{\"role\":\"tool\",\"tool_call_id\":%s,"
     "\"content\":\"ok\"}]}", "call_qW3rT5yU7iO9pA", "messages[0].tool_call_id"},
    {SW_PII_SURFACE_CHAT, "{\"model\":\"m\",\"messages\":[{\"role\":\"assistant\",\"audio\":{\"id\":%s}}]}",
     "audio_abc123", "messages[0].audio.id"},
    {SW_PII_SURFACE_CHAT, "{\"model\":\"m\",\"messages\":[],\"tools\":[{\"type\":\"function\",\"function\":"
     "{\"name\":%s,\"parameters\":{}}}]}", "get_weather", "tools[0].function.name"},
    {SW_PII_SURFACE_CHAT, "{\"model\":\"m\",\"messages\":[],\"tools\":[{\"type\":%s,\"function\":"
     "{\"name\":\"f\"}}]}", "function", "tools[0].type"},
    {SW_PII_SURFACE_CHAT, "{\"model\":\"m\",\"messages\":[],\"functions\":[{\"name\":%s}]}", "f_2",
     "functions[0].name"},

#define ANTH "{\"model\":\"claude-sonnet-4-5\",\"max_tokens\":64,"
    {SW_PII_SURFACE_MESSAGES, ANTH "\"messages\":[{\"role\":%s,\"content\":\"hi\"}]}", "assistant",
     "messages[0].role"},
    {SW_PII_SURFACE_MESSAGES, ANTH "\"messages\":[{\"role\":\"user\",\"content\":\"x\"},{\"role\":%s,"
     "\"content\":\"hi\"}]}", "system", "messages[1].role"},
    {SW_PII_SURFACE_MESSAGES, ANTH "\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":%s,"
     "\"text\":\"hi\"}]}]}", "text", "messages[0].content[0].type"},
    {SW_PII_SURFACE_MESSAGES, ANTH "\"messages\":[{\"role\":\"assistant\",\"content\":[{\"type\":\"tool_use\","
     "\"id\":%s,\"name\":\"get_weather\",\"input\":{}}]}]}", "toolu_01A09q90qw90lq917835lq9",
     "messages[0].content[0].id"},
    {SW_PII_SURFACE_MESSAGES, ANTH "\"messages\":[{\"role\":\"assistant\",\"content\":[{\"type\":\"tool_use\","
     "\"id\":\"toolu_1\",\"name\":%s,\"input\":{}}]}]}", "get_weather", "messages[0].content[0].name"},
    {SW_PII_SURFACE_MESSAGES, ANTH "\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\","
     "\"tool_use_id\":%s,\"content\":\"15 degrees\"}]}]}", "toolu_01A09q90qw90lq917835lq9",
     "messages[0].content[0].tool_use_id"},
    {SW_PII_SURFACE_MESSAGES, ANTH "\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\","
     "\"text\":\"hi\",\"cache_control\":{\"type\":%s}}]}]}", "ephemeral",
     "messages[0].content[0].cache_control.type"},
    {SW_PII_SURFACE_MESSAGES, ANTH "\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\","
     "\"text\":\"hi\",\"cache_control\":{\"type\":\"ephemeral\",\"ttl\":%s}}]}]}", "1h",
     "messages[0].content[0].cache_control.ttl"},
    {SW_PII_SURFACE_MESSAGES, ANTH "\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image\","
     "\"source\":{\"type\":%s,\"url\":\"https://example.org/a.png\"}}]}]}", "url",
     "messages[0].content[0].source.type"},
    {SW_PII_SURFACE_MESSAGES, ANTH "\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"document\","
     "\"source\":{\"type\":\"base64\",\"media_type\":%s,\"data\":\"JVBERi0xLjQK\"}}]}]}", "application/pdf",
     "messages[0].content[0].source.media_type"},
    {SW_PII_SURFACE_MESSAGES, ANTH "\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\","
     "\"tool_use_id\":\"t1\",\"content\":[{\"type\":%s,\"text\":\"ok\"}]}]}]}", "text",
     "messages[0].content[0].content[0].type"},
    {SW_PII_SURFACE_MESSAGES, ANTH "\"messages\":[{\"role\":\"assistant\",\"content\":[{\"type\":\"thinking\","
     "\"thinking\":\"hmm\",\"signature\":%s}]}]}", "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pk",
     "messages[0].content[0].signature"},
    {SW_PII_SURFACE_MESSAGES, ANTH "\"messages\":[],\"thinking\":{\"type\":%s,\"budget_tokens\":2048}}",
     "enabled", "thinking.type"},
    {SW_PII_SURFACE_MESSAGES, ANTH "\"messages\":[],\"tool_choice\":{\"type\":%s}}", "any", "tool_choice.type"},
    {SW_PII_SURFACE_MESSAGES, ANTH "\"messages\":[],\"tool_choice\":{\"type\":\"tool\",\"name\":%s}}",
     "get_weather", "tool_choice.name"},
    {SW_PII_SURFACE_MESSAGES, ANTH "\"messages\":[],\"tools\":[{\"name\":%s,\"input_schema\":{}}]}",
     "mcp__github__create_issue", "tools[0].name"},
    {SW_PII_SURFACE_MESSAGES, ANTH "\"messages\":[],\"tools\":[{\"type\":%s,\"name\":\"web_search\"}]}",
     "web_search_20250305", "tools[0].type"},
    {SW_PII_SURFACE_MESSAGES, ANTH "\"messages\":[],\"system\":[{\"type\":\"text\",\"text\":\"be brief\","
     "\"cache_control\":{\"type\":%s}}]}", "ephemeral", "system[0].cache_control.type"},
    {SW_PII_SURFACE_MESSAGES, ANTH "\"messages\":[],\"service_tier\":%s}", "standard_only", "service_tier"},
    {SW_PII_SURFACE_MESSAGES, "{\"model\":%s,\"messages\":[]}", "claude-opus-4-1@20250805", "model"},

    {SW_PII_SURFACE_EMBEDDINGS, "{\"model\":\"e5\",\"input\":\"hi\",\"encoding_format\":%s}", "base64",
     "encoding_format"},

    {SW_PII_SURFACE_RESPONSES, RESP "\"input\":[{\"role\":%s,\"content\":\"hi\"}]}", "developer", "input[0].role"},
    {SW_PII_SURFACE_RESPONSES, RESP "\"input\":[{\"type\":%s,\"role\":\"user\",\"content\":\"hi\"}]}",
     "message", "input[0].type"},
    {SW_PII_SURFACE_RESPONSES, RESP "\"input\":[{\"role\":\"user\",\"content\":[{\"type\":%s,\"text\":\"hi\"}]}]}",
     "input_text", "input[0].content[0].type"},
    {SW_PII_SURFACE_RESPONSES, RESP "\"input\":[{\"role\":\"user\",\"content\":[{\"type\":\"input_image\","
     "\"image_url\":\"https://x/a.png\",\"detail\":%s}]}]}", "low", "input[0].content[0].detail"},
    {SW_PII_SURFACE_RESPONSES, RESP "\"input\":[{\"type\":\"function_call\",\"call_id\":%s,\"name\":\"f\","
     "\"arguments\":\"{}\"}]}", "call_abc-1", "input[0].call_id"},
    {SW_PII_SURFACE_RESPONSES, RESP "\"input\":[{\"type\":\"function_call\",\"call_id\":\"c\",\"name\":%s,"
     "\"arguments\":\"{}\"}]}", "get_weather", "input[0].name"},
    {SW_PII_SURFACE_RESPONSES, RESP "\"input\":[{\"type\":\"function_call\",\"id\":%s,\"call_id\":\"c\","
     "\"name\":\"f\",\"arguments\":\"{}\"}]}", "fc_123", "input[0].id"},
    {SW_PII_SURFACE_RESPONSES, RESP "\"input\":[{\"type\":\"function_call\",\"status\":%s,\"call_id\":\"c\","
     "\"name\":\"f\",\"arguments\":\"{}\"}]}", "completed", "input[0].status"},
    {SW_PII_SURFACE_RESPONSES, RESP "\"input\":[{\"type\":\"function_call_output\",\"call_id\":\"c\","
     "\"output\":[{\"type\":%s,\"text\":\"x\"}]}]}", "input_text", "input[0].output[0].type"},
    {SW_PII_SURFACE_RESPONSES, RESP "\"input\":\"hi\",\"tools\":[{\"type\":%s,\"name\":\"f\"}]}", "function",
     "tools[0].type"},
    {SW_PII_SURFACE_RESPONSES, RESP "\"input\":\"hi\",\"tools\":[{\"type\":\"function\",\"name\":%s}]}",
     "exec_command", "tools[0].name"},
    {SW_PII_SURFACE_RESPONSES, RESP "\"input\":\"hi\",\"tool_choice\":%s}", "required", "tool_choice"},
    {SW_PII_SURFACE_RESPONSES, RESP "\"input\":\"hi\",\"tool_choice\":{\"type\":%s,\"name\":\"f\"}}",
     "function", "tool_choice.type"},
    {SW_PII_SURFACE_RESPONSES, RESP "\"input\":\"hi\",\"tool_choice\":{\"type\":\"function\",\"name\":%s}}",
     "f", "tool_choice.name"},
    {SW_PII_SURFACE_RESPONSES, RESP "\"input\":\"hi\",\"text\":{\"format\":{\"type\":%s}}}", "json_schema",
     "text.format.type"},
    {SW_PII_SURFACE_RESPONSES, RESP "\"input\":\"hi\",\"text\":{\"format\":{\"type\":\"json_schema\","
     "\"name\":%s,\"schema\":{}}}}", "person", "text.format.name"},
    {SW_PII_SURFACE_RESPONSES, RESP "\"input\":\"hi\",\"text\":{\"verbosity\":%s}}", "low", "text.verbosity"},
    {SW_PII_SURFACE_RESPONSES, RESP "\"input\":\"hi\",\"reasoning\":{\"effort\":%s}}", "high", "reasoning.effort"},
    {SW_PII_SURFACE_RESPONSES, RESP "\"input\":\"hi\",\"reasoning\":{\"summary\":%s}}", "auto", "reasoning.summary"},
    {SW_PII_SURFACE_RESPONSES, RESP "\"input\":\"hi\",\"truncation\":%s}", "auto", "truncation"},
    {SW_PII_SURFACE_RESPONSES, RESP "\"input\":\"hi\",\"service_tier\":%s}", "flex", "service_tier"},
    {SW_PII_SURFACE_RESPONSES, RESP "\"input\":\"hi\",\"previous_response_id\":%s}", "resp_68af12",
     "previous_response_id"},
    {SW_PII_SURFACE_RESPONSES, "{\"model\":%s,\"input\":\"hi\"}", "gpt-5.5", "model"},
    {SW_PII_SURFACE_EMBEDDINGS, "{\"model\":%s,\"input\":\"hi\"}", "text-embedding-3-small", "model"},
};

static void test_grammar_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof gram_rows / sizeof *gram_rows; i++) {
        const struct gram_row *r = &gram_rows[i];
        struct sw_pii_counts c;
        char bad[SW_PII_MAX_BAD_PATH];
        json_t *ok = load_with(r->body, r->valid);
        int rc = sw_pii_scan_body(E, r->s, ok, &c, bad, sizeof bad);
        if (rc != SW_OK || c.total)
            fail_msg("row %zu (%s = %s): rc %d, %u found, bad '%s'", i, r->path, r->valid, rc, c.total, bad);
        struct sw_pii_map *m = sw_pii_map_new();
        if ((rc = sw_pii_mask_body(E, m, r->s, ok, &c, bad, sizeof bad)) != SW_OK)
            fail_msg("row %zu (%s): mask rc %d", i, r->path, rc);
        sw_pii_map_free(m);
        json_decref(ok);

        /* free text, an address in it: refused with the field's path, by
         * the scan and by the mask, on the surface's own table */
        const char *wrong[] = {FREE, "auto ", "", "x y"};
        /* a model name is any configured name (the front answers 404 to
         * others before the scan): only empty or control characters fail */
        const char *wrong_model[] = {"", "tab\\there", "nul\\u0001"};
        int model = !strcmp(r->path, "model");
        size_t n_wrong = model ? 3 : sizeof wrong / sizeof *wrong;
        for (size_t w = 0; w < n_wrong; w++) {
            json_t *no = load_with(r->body, model ? wrong_model[w] : wrong[w]);
            bad[0] = 'x';
            rc = sw_pii_scan_body(E, r->s, no, &c, bad, sizeof bad);
            if (rc != SW_EINVAL || strcmp(bad, r->path))
                fail_msg("row %zu (%s) with value %zu: rc %d, bad '%s'", i, r->path, w, rc, bad);
            m = sw_pii_map_new();
            rc = sw_pii_mask_body(E, m, r->s, no, &c, bad, sizeof bad);
            if (rc != SW_EINVAL || strcmp(bad, r->path))
                fail_msg("row %zu (%s) mask with value %zu: rc %d, bad '%s'", i, r->path, w, rc, bad);
            sw_pii_map_free(m);
            json_decref(no);
        }
    }
}

/* Too long for the documented patterns: 65-character OpenAI function
 * names, 129-character Anthropic tool names and ids. */
static void test_grammar_lengths(void **state)
{
    (void)state;
    char name[200], tmpl[512];
    struct sw_pii_counts c;
    char bad[SW_PII_MAX_BAD_PATH];
    struct {
        enum sw_pii_surface s;
        const char *body;
        size_t max;
        const char *path;
    } rows[] = {
        {SW_PII_SURFACE_CHAT, "{\"model\":\"m\",\"messages\":[],\"tools\":[{\"type\":\"function\",\"function\":{\"name\":%s}}]}",
         64, "tools[0].function.name"},
        {SW_PII_SURFACE_MESSAGES, "{\"model\":\"m\",\"messages\":[],\"tools\":[{\"name\":%s}]}", 128, "tools[0].name"},
        {SW_PII_SURFACE_CHAT, "{\"model\":\"m\",\"messages\":[{\"role\":\"tool\",\"tool_call_id\":%s}]}", 128,
         "messages[0].tool_call_id"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
        snprintf(tmpl, sizeof tmpl, "%s", rows[i].body);
        memset(name, 'a', rows[i].max);
        name[rows[i].max] = 0;
        json_t *b = load_with(tmpl, name);
        assert_int_equal(sw_pii_scan_body(E, rows[i].s, b, &c, bad, sizeof bad), SW_OK);
        json_decref(b);
        name[rows[i].max] = 'a';
        name[rows[i].max + 1] = 0;
        b = load_with(tmpl, name);
        assert_int_equal(sw_pii_scan_body(E, rows[i].s, b, &c, bad, sizeof bad), SW_EINVAL);
        assert_string_equal(bad, rows[i].path);
        json_decref(b);
    }
    /* bad may be NULL; a too small one is cut, still a string */
    json_t *b = load_with("{\"model\":\"m\",\"messages\":[{\"role\":\"tool\",\"tool_call_id\":%s}]}", FREE);
    assert_int_equal(sw_pii_scan_body(E, SW_PII_SURFACE_CHAT, b, &c, NULL, 0), SW_EINVAL);
    char small[8];
    assert_int_equal(sw_pii_scan_body(E, SW_PII_SURFACE_CHAT, b, &c, small, sizeof small), SW_EINVAL);
    assert_int_equal(strlen(small), 7);
    assert_memory_equal(small, "message", 7);
    /* the old chat form refuses it too */
    assert_int_equal(sw_pii_scan_request(E, b, &c), SW_EINVAL);
    json_decref(b);
}

/* An id or a name of its grammar that still holds an entity (digits only)
 * is counted, and cannot be masked. Usual ids scan clean. */
static void test_ident_scanned(void **state)
{
    (void)state;
    struct sw_pii_counts c;
    char bad[SW_PII_MAX_BAD_PATH];
    json_t *b = load_with("{\"model\":\"m\",\"messages\":[{\"role\":\"tool\",\"tool_call_id\":%s,"
                          "\"content\":\"ok\"}]}", "0648217730");
    assert_int_equal(sw_pii_scan_body(E, SW_PII_SURFACE_CHAT, b, &c, bad, sizeof bad), SW_OK);
    assert_int_equal(c.n[SW_PII_PHONE], 1);
    struct sw_pii_map *m = sw_pii_map_new();
    assert_int_equal(sw_pii_mask_body(E, m, SW_PII_SURFACE_CHAT, b, &c, bad, sizeof bad), SW_EINVAL);
    assert_string_equal(bad, "messages[0].tool_call_id");
    sw_pii_map_free(m);
    json_decref(b);
    const char *ids[] = {"call_qW3rT5yU7iO9pA", "toolu_01A09q90qw90lq917835lq9", "call_abc123",
                         "chatcmpl-tool-8d0c8e4f5b0a4b7f9d8c6e2a1f3b5c7d", "file-6F2ksmvXxt4VdoqmHRw6kL"};
    for (size_t i = 0; i < sizeof ids / sizeof *ids; i++) {
        b = load_with("{\"model\":\"m\",\"messages\":[{\"role\":\"tool\",\"tool_call_id\":%s}]}", ids[i]);
        assert_int_equal(sw_pii_scan_body(E, SW_PII_SURFACE_CHAT, b, &c, bad, sizeof bad), SW_OK);
        if (c.total)
            fail_msg("id %s found as PII", ids[i]);
        json_decref(b);
    }
}

/* ---- Binary content ---- */

struct bin_row {
    enum sw_pii_surface s;
    const char *body;
    unsigned binary;
};

#define B64PNG "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk"
static const struct bin_row bin_rows[] = {
    /* OpenAI image_url data: URLs, however they start */
    {SW_PII_SURFACE_CHAT, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\","
     "\"image_url\":{\"url\":\"data:image/png;base64," B64PNG "\"}}]}]}", 1},
    {SW_PII_SURFACE_CHAT, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\","
     "\"image_url\":{\"url\":\" data:image/png;base64," B64PNG "\"}}]}]}", 1},
    {SW_PII_SURFACE_CHAT, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\","
     "\"image_url\":{\"url\":\"\\n\\tdata:image/png;base64," B64PNG "\"}}]}]}", 1},
    {SW_PII_SURFACE_CHAT, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\","
     "\"image_url\":{\"url\":\"\\ufeffdata:image/png;base64," B64PNG "\"}}]}]}", 1},
    {SW_PII_SURFACE_CHAT, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\","
     "\"image_url\":{\"url\":\"DaTa:IMAGE/PNG;BASE64," B64PNG "\"}}]}]}", 1},
    {SW_PII_SURFACE_CHAT, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\","
     "\"image_url\":\"\\u00a0data:image/png;base64," B64PNG "\"}]}]}", 1},
    {SW_PII_SURFACE_CHAT, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"input_audio\","
     "\"input_audio\":{\"data\":\"UklGRiQAAABXQVZFZm10IBAAAAABAAEA\",\"format\":\"wav\"}}]}]}", 1},
    {SW_PII_SURFACE_CHAT, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"file\","
     "\"file\":{\"filename\":\"a.pdf\",\"file_data\":\"data:application/pdf;base64,JVBERi0xLjQK\"}}]}]}", 1},
    /* a base64 data: URL anywhere, any surface */
    {SW_PII_SURFACE_CHAT, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
     "\"metadata\":{\"scan\":\"\\r\\n data:application/pdf;base64,JVBERi0x\\nLjQK\"}}", 1},
    {SW_PII_SURFACE_EMBEDDINGS, "{\"model\":\"e\",\"input\":[\"hello\",\"data:text/plain;base64,aGVsbG8=\"]}", 1},
    /* Anthropic image and document blocks, also inside tool_result */
    {SW_PII_SURFACE_MESSAGES, "{\"model\":\"c\",\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image\","
     "\"source\":{\"type\":\"base64\",\"media_type\":\"image/png\",\"data\":\"" B64PNG "\"}}]}]}", 1},
    {SW_PII_SURFACE_MESSAGES, "{\"model\":\"c\",\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"document\","
     "\"title\":\"scan\",\"source\":{\"type\":\"base64\",\"media_type\":\"application/pdf\",\"data\":\"JVBERi0xLjQK\"}}]}]}", 1},
    {SW_PII_SURFACE_MESSAGES, "{\"model\":\"c\",\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\","
     "\"tool_use_id\":\"toolu_1\",\"content\":[{\"type\":\"text\",\"text\":\"screenshot:\"},{\"type\":\"image\","
     "\"source\":{\"type\":\"base64\",\"media_type\":\"image/png\",\"data\":\"" B64PNG "\"}},"
     "{\"type\":\"document\",\"source\":{\"type\":\"base64\",\"media_type\":\"application/pdf\","
     "\"data\":\"JVBERi0xLjQK\"}}]}]}]}", 2},
    /* Responses parts: an input_image data: URL, an input_file's data, a tool output's image */
    {SW_PII_SURFACE_RESPONSES, "{\"model\":\"m\",\"input\":[{\"role\":\"user\",\"content\":[{\"type\":\"input_image\","
     "\"image_url\":\"data:image/png;base64," B64PNG "\"}]}]}", 1},
    {SW_PII_SURFACE_RESPONSES, "{\"model\":\"m\",\"input\":[{\"role\":\"user\",\"content\":[{\"type\":\"input_file\","
     "\"filename\":\"a.pdf\",\"file_data\":\"JVBERi0xLjQK\"}]}]}", 1},
    {SW_PII_SURFACE_RESPONSES, "{\"model\":\"m\",\"input\":[{\"type\":\"function_call_output\",\"call_id\":\"c\","
     "\"output\":[{\"type\":\"input_image\",\"image_url\":\"data:image/png;base64," B64PNG "\"}]}]}", 1},
    {SW_PII_SURFACE_RESPONSES, "{\"model\":\"m\",\"input\":[{\"role\":\"user\",\"content\":[{\"type\":\"input_image\","
     "\"image_url\":\"https://example.org/a.png\"}]}]}", 0},
    /* not binary: an https image, a text document, a text that only starts like a data: URL */
    {SW_PII_SURFACE_CHAT, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\","
     "\"image_url\":{\"url\":\"https://example.org/a.png\"}}]}]}", 0},
    {SW_PII_SURFACE_MESSAGES, "{\"model\":\"c\",\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"document\","
     "\"source\":{\"type\":\"text\",\"media_type\":\"text/plain\",\"data\":\"notes\"}}]}]}", 0},
    {SW_PII_SURFACE_CHAT, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":"
     "\"data:;base64,aGk= and now, the text.\"}]}", 0},
};

static void test_binary_shapes(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof bin_rows / sizeof *bin_rows; i++) {
        struct sw_pii_counts c;
        char bad[SW_PII_MAX_BAD_PATH];
        json_t *b = load(bin_rows[i].body);
        int rc = sw_pii_scan_body(E, bin_rows[i].s, b, &c, bad, sizeof bad);
        if (rc != SW_OK || c.binary != bin_rows[i].binary)
            fail_msg("row %zu: rc %d bad '%s', binary %u, want %u", i, rc, bad, c.binary,
                     bin_rows[i].binary);
        struct sw_pii_map *m = sw_pii_map_new();
        rc = sw_pii_mask_body(E, m, bin_rows[i].s, b, &c, bad, sizeof bad);
        if (rc != SW_OK || c.binary != bin_rows[i].binary)
            fail_msg("mask row %zu: rc %d, binary %u", i, rc, c.binary);
        sw_pii_map_free(m);
        json_decref(b);
    }
    /* the payload is not read: an address in it is not counted, but binary
     * is, so the caller's binary_parts rule decides */
    json_t *b = load("{\"model\":\"c\",\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"document\","
                     "\"source\":{\"type\":\"base64\",\"media_type\":\"application/pdf\",\"data\":\"" MAIL "\"}}]}]}");
    struct sw_pii_counts c;
    assert_int_equal(sw_pii_scan_body(E, SW_PII_SURFACE_MESSAGES, b, &c, NULL, 0), SW_OK);
    assert_int_equal(c.binary, 1);
    assert_int_equal(c.total, 0);
    json_decref(b);
    /* the text after a would-be data: URL is scanned */
    b = load("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"data:;base64,aGk= " FREE "\"}]}");
    assert_int_equal(sw_pii_scan_body(E, SW_PII_SURFACE_CHAT, b, &c, NULL, 0), SW_OK);
    assert_int_equal(c.n[SW_PII_EMAIL], 1);
    json_decref(b);
}

/* ---- Numbers ---- */

static void test_numbers(void **state)
{
    (void)state;
    char cd[32], text[1024];
    card(cd, sizeof cd, "492953118066221", "");
    struct {
        const char *tmpl;
        int type;
    } rows[] = {
        {"{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"pay\"}],\"metadata\":{\"card\":%s}}", SW_PII_CARD},
        {"{\"model\":\"m\",\"messages\":[],\"x\":[1,2,%s]}", SW_PII_CARD},
        {"{\"model\":\"m\",\"messages\":[],\"x\":%s.0}", SW_PII_CARD},
        {"{\"model\":\"m\",\"messages\":[],\"x\":{\"mobiel\":31648217730}}%.0s", SW_PII_PHONE},
        {"{\"model\":\"m\",\"messages\":[],\"customer\":{\"bsn\":111222333}}%.0s", SW_PII_BSN},
        {"{\"model\":\"m\",\"messages\":[],\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\","
         "\"parameters\":{\"default\":%s}}}]}", SW_PII_CARD},
    };
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
        snprintf(text, sizeof text, rows[i].tmpl, cd);
        for (int s = 0; s < 3; s++) {
            json_t *b = load(text);
            struct sw_pii_counts c;
            assert_int_equal(sw_pii_scan_body(E, (enum sw_pii_surface)s, b, &c, NULL, 0), SW_OK);
            if (c.n[rows[i].type] != 1)
                fail_msg("row %zu surface %d: %u of type %d in %s", i, s, c.n[rows[i].type], rows[i].type, text);
            struct sw_pii_map *m = sw_pii_map_new();
            assert_int_equal(sw_pii_mask_body(E, m, (enum sw_pii_surface)s, b, &c, NULL, 0), SW_OK);
            assert_int_equal(c.n[rows[i].type], 1);
            char *dump = json_dumps(b, JSON_COMPACT);
            if (strstr(dump, cd) || !strstr(dump, "\"["))
                fail_msg("row %zu: %s", i, dump);
            /* the masked body scans clean; the answer gets the digits back */
            assert_int_equal(sw_pii_scan_body(E, (enum sw_pii_surface)s, b, &c, NULL, 0), SW_OK);
            assert_int_equal(c.total, 0);
            struct sw_buf out;
            sw_buf_init(&out, 1 << 20);
            assert_int_equal(sw_pii_unmask_text(m, dump, strlen(dump), 0, &out), SW_OK);
            if (rows[i].type == SW_PII_CARD && !memmem(out.ptr, out.len, cd, strlen(cd)))
                fail_msg("row %zu: not restored", i);
            sw_buf_free(&out);
            free(dump);
            sw_pii_map_free(m);
            json_decref(b);
        }
    }
    /* ordinary numbers are left as they are */
    json_t *b = load("{\"model\":\"m\",\"messages\":[],\"temperature\":0.7,\"max_tokens\":4096,"
                     "\"seed\":1700000000,\"top_p\":1,\"logit_bias\":{\"50256\":-100}}");
    struct sw_pii_counts c;
    assert_int_equal(sw_pii_scan_body(E, SW_PII_SURFACE_CHAT, b, &c, NULL, 0), SW_OK);
    assert_int_equal(c.total, 0);
    json_decref(b);
    /* a real that no longer holds the digits written: refused, with its path */
    char bad[SW_PII_MAX_BAD_PATH];
    b = load("{\"model\":\"m\",\"messages\":[],\"metadata\":{\"n\":[1, 4.9295311806622193e18]}}");
    assert_int_equal(sw_pii_scan_body(E, SW_PII_SURFACE_CHAT, b, &c, bad, sizeof bad), SW_EINVAL);
    assert_string_equal(bad, "metadata.n[1]");
    json_decref(b);
    b = load("{\"model\":\"m\",\"messages\":[],\"x\":9007199254740991}");     /* an integer: exact */
    assert_int_equal(sw_pii_scan_body(E, SW_PII_SURFACE_CHAT, b, &c, bad, sizeof bad), SW_OK);
    json_decref(b);
}

/* ---- Adjacent text parts ---- */

static void check_parts(enum sw_pii_surface s, const char *body, const char *value, int type,
                        const char *const *want_parts, const char *parts_path)
{
    json_t *b = load(body);
    struct sw_pii_counts c;
    assert_int_equal(sw_pii_scan_body(E, s, b, &c, NULL, 0), SW_OK);
    if (c.n[type] != 1 || c.total != 1)
        fail_msg("%u of type %d (total %u) in %s", c.n[type], type, c.total, body);
    struct sw_pii_map *m = sw_pii_map_new();
    assert_int_equal(sw_pii_mask_body(E, m, s, b, &c, NULL, 0), SW_OK);
    assert_int_equal(c.total, 1);
    char *dump = json_dumps(b, JSON_COMPACT);
    /* no part keeps a piece of it: not the first half, not the second */
    size_t vl = strlen(value);
    char half[64];
    snprintf(half, sizeof half, "%.*s", (int)(vl / 2), value);
    if (strstr(dump, half) || strstr(dump, value + vl - vl / 2))
        fail_msg("a piece of %s left in %s", value, dump);
    json_t *arr = b;
    for (const char *p = parts_path; *p;) {
        const char *dot = strchr(p, '.');
        size_t l = dot ? (size_t)(dot - p) : strlen(p);
        char k[32];
        snprintf(k, sizeof k, "%.*s", (int)l, p);
        arr = json_is_array(arr) ? json_array_get(arr, strtoul(k, NULL, 10)) : json_object_get(arr, k);
        p += l + (dot ? 1 : 0);
    }
    for (size_t i = 0; want_parts[i]; i++) {
        const char *got = json_string_value(json_object_get(json_array_get(arr, i), "text"));
        if (!got || strcmp(got, want_parts[i]))
            fail_msg("part %zu: '%s', want '%s' (%s)", i, got ? got : "(null)", want_parts[i], dump);
    }
    assert_int_equal(sw_pii_scan_body(E, s, b, &c, NULL, 0), SW_OK);
    assert_int_equal(c.total, 0);
    free(dump);
    sw_pii_map_free(m);
    json_decref(b);
}

static void test_split_parts(void **state)
{
    (void)state;
    char cd[32], a[32], z[32], body[2048];
    card(cd, sizeof cd, "535982114067003", " ");
    snprintf(a, sizeof a, "%.10s", cd);         /* "5359 8211 " */
    snprintf(z, sizeof z, "%s", cd + 10);
    /* OpenAI content parts */
    snprintf(body, sizeof body, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":["
             "{\"type\":\"text\",\"text\":\"my card is %s\"},{\"type\":\"text\",\"text\":\"%s, thanks\"}]}]}", a, z);
    check_parts(SW_PII_SURFACE_CHAT, body, cd, SW_PII_CARD,
                (const char *const[]){"my card is [CARD_1]", ", thanks", NULL}, "messages.0.content");
    /* three parts, the middle one wholly inside the value */
    snprintf(body, sizeof body, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":["
             "{\"type\":\"text\",\"text\":\"mail jan.dev\"},{\"type\":\"text\",\"text\":\"ries@zig\"},"
             "{\"type\":\"text\",\"text\":\"go.nl please\"}]}]}");
    check_parts(SW_PII_SURFACE_CHAT, body, MAIL, SW_PII_EMAIL,
                (const char *const[]){"mail [EMAIL_1]", "", " please", NULL}, "messages.0.content");
    /* Anthropic text blocks of one message, with cache_control on one */
    snprintf(body, sizeof body, "{\"model\":\"c\",\"messages\":[{\"role\":\"user\",\"content\":["
             "{\"type\":\"text\",\"text\":\"bel me op 06 48\"},{\"type\":\"text\",\"text\":\"21 77 30 morgen\","
             "\"cache_control\":{\"type\":\"ephemeral\"}}]}]}");
    check_parts(SW_PII_SURFACE_MESSAGES, body, "06 4821 7730", SW_PII_PHONE,
                (const char *const[]){"bel me op [PHONE_1]", " morgen", NULL}, "messages.0.content");
    /* and of system */
    snprintf(body, sizeof body, "{\"model\":\"c\",\"messages\":[],\"system\":["
             "{\"type\":\"text\",\"text\":\"The user is jan.devries\"},{\"type\":\"text\",\"text\":\"@ziggo.nl.\"}]}");
    check_parts(SW_PII_SURFACE_MESSAGES, body, MAIL, SW_PII_EMAIL,
                (const char *const[]){"The user is [EMAIL_1]", ".", NULL}, "system");
    /* a value at a part's edge, a word right after it in the next part:
     * still a value of its own (the parts are also read one per line) */
    char cd2[32];
    card(cd2, sizeof cd2, "454335991987826", "");
    snprintf(body, sizeof body, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":["
             "{\"type\":\"text\",\"text\":\"card %s\"},{\"type\":\"text\",\"text\":\"and the rest\"}]}]}", cd2);
    check_parts(SW_PII_SURFACE_CHAT, body, cd2, SW_PII_CARD,
                (const char *const[]){"card [CARD_1]", "and the rest", NULL}, "messages.0.content");
    /* a part that is only the value, after a part that ends in a digit:
     * the two are not one number (the parts are read apart by a blank line) */
    snprintf(body, sizeof body, "{\"model\":\"c\",\"messages\":[],\"system\":["
             "{\"type\":\"text\",\"text\":\"Records assistant, ref T1.\"},"
             "{\"type\":\"text\",\"text\":\"0049 152 176 9604\"}]}");
    check_parts(SW_PII_SURFACE_MESSAGES, body, "0049 152 176 9604", SW_PII_PHONE,
                (const char *const[]){"Records assistant, ref T1.", "[PHONE_1]", NULL}, "system");
    /* a value split in two parts whose neighbours touch both halves */
    snprintf(body, sizeof body, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":["
             "{\"type\":\"text\",\"text\":\"Records:\"},{\"type\":\"text\",\"text\":\"06940\"},"
             "{\"type\":\"text\",\"text\":\"34454\"},{\"type\":\"text\",\"text\":\"Please call\"}]}]}");
    check_parts(SW_PII_SURFACE_CHAT, body, "0694034454", SW_PII_PHONE,
                (const char *const[]){"Records:", "[PHONE_1]", "", "Please call", NULL}, "messages.0.content");
    /* Responses input_text parts of one message, and output_text parts of an earlier answer */
    snprintf(body, sizeof body, "{\"model\":\"m\",\"input\":[{\"role\":\"user\",\"content\":["
             "{\"type\":\"input_text\",\"text\":\"mail jan.dev\"},{\"type\":\"input_text\",\"text\":\"ries@ziggo.nl now\"}]}]}");
    check_parts(SW_PII_SURFACE_RESPONSES, body, MAIL, SW_PII_EMAIL,
                (const char *const[]){"mail [EMAIL_1]", " now", NULL}, "input.0.content");
    snprintf(body, sizeof body, "{\"model\":\"m\",\"input\":[{\"type\":\"message\",\"role\":\"assistant\",\"content\":["
             "{\"type\":\"output_text\",\"text\":\"Noted: jan.devries\"},{\"type\":\"output_text\",\"text\":\"@ziggo.nl\"}]}]}");
    check_parts(SW_PII_SURFACE_RESPONSES, body, MAIL, SW_PII_EMAIL,
                (const char *const[]){"Noted: [EMAIL_1]", "", NULL}, "input.0.content");
    /* a value wholly inside one part, with another part beside it */
    snprintf(body, sizeof body, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":["
             "{\"type\":\"text\",\"text\":\"hi\"},{\"type\":\"text\",\"text\":\"mail " MAIL "\"}]}]}");
    check_parts(SW_PII_SURFACE_CHAT, body, MAIL, SW_PII_EMAIL,
                (const char *const[]){"hi", "mail [EMAIL_1]", NULL}, "messages.0.content");
}

/* ---- Mask round trip on each surface ---- */

static void test_mask_roundtrip(void **state)
{
    (void)state;
    const struct {
        enum sw_pii_surface s;
        const char *body;
    } rows[] = {
        {SW_PII_SURFACE_CHAT, "{\"model\":\"gpt-4o\",\"messages\":[{\"role\":\"system\",\"content\":\"Help " MAIL "\"},"
         "{\"role\":\"assistant\",\"tool_calls\":[{\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"f\","
         "\"arguments\":\"{\\\"to\\\":\\\"" MAIL "\\\",\\\"card\\\":5359821140670030}\"}}]},"
         "{\"role\":\"tool\",\"tool_call_id\":\"call_1\",\"content\":\"sent to 06 4821 7730\"}],"
         "\"tool_choice\":\"auto\",\"metadata\":{\"mobiel\":31648217730}}"},
        {SW_PII_SURFACE_MESSAGES, "{\"model\":\"claude-sonnet-4-5\",\"max_tokens\":100,\"system\":\"for " MAIL "\","
         "\"messages\":[{\"role\":\"assistant\",\"content\":[{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"send\","
         "\"input\":{\"to\":\"" MAIL "\",\"tel\":31648217730,\"cc\":[\"+31 6 4821 7730\"]}}]},"
         "{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"toolu_1\",\"content\":["
         "{\"type\":\"text\",\"text\":\"sent to 06 48\"},{\"type\":\"text\",\"text\":\"21 77 30\"}]},"
         "{\"type\":\"text\",\"text\":\"ok?\",\"citations\":[{\"cited_text\":\"" MAIL "\"}]}]}]}"},
        {SW_PII_SURFACE_EMBEDDINGS, "{\"model\":\"e5\",\"input\":[\"" MAIL "\",\"06 4821 7730\"],\"user\":\"" MAIL "\"}"},
        {SW_PII_SURFACE_RESPONSES, "{\"model\":\"gpt-5\",\"instructions\":\"for " MAIL "\",\"input\":["
         "{\"type\":\"function_call\",\"call_id\":\"call_1\",\"name\":\"send\","
         "\"arguments\":\"{\\\"to\\\":\\\"" MAIL "\\\",\\\"card\\\":5359821140670030}\"},"
         "{\"type\":\"function_call_output\",\"call_id\":\"call_1\",\"output\":\"sent to 06 4821 7730\"},"
         "{\"type\":\"reasoning\",\"id\":\"rs_1\",\"summary\":[{\"type\":\"summary_text\",\"text\":\"user " MAIL "\"}],"
         "\"encrypted_content\":\"gAAAAB\"}],\"client_metadata\":{\"tel\":\"+31 6 4821 7730\"}}"},
        /* a coding agent's body: a file's text in a system message inside
         * messages (string and blocks), its own fields carried whole */
        {SW_PII_SURFACE_MESSAGES, "{\"model\":\"coder\",\"max_tokens\":100,\"thinking\":{\"type\":\"adaptive\"},"
         "\"context_management\":{\"edits\":[{\"type\":\"clear_thinking_20251015\",\"keep\":\"all\"}]},"
         "\"output_config\":{\"effort\":\"high\"},\"messages\":[{\"role\":\"user\",\"content\":\"read it\"},"
         "{\"role\":\"system\",\"content\":\"Result of calling the Read tool:\\n1\\tmail " MAIL "\"},"
         "{\"role\":\"system\",\"content\":[{\"type\":\"text\",\"text\":\"call 06 4821 7730\"}]},"
         "{\"role\":\"assistant\",\"content\":[{\"type\":\"thinking\",\"thinking\":\"the card 5359821140670030\",\"signature\":\"c2ln\"}]}]}"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
        json_t *b = load(rows[i].body);
        struct sw_pii_counts c, c2;
        assert_int_equal(sw_pii_scan_body(E, rows[i].s, b, &c, NULL, 0), SW_OK);
        assert_true(c.total >= 3);
        struct sw_pii_map *m = sw_pii_map_new();
        assert_int_equal(sw_pii_mask_body(E, m, rows[i].s, b, &c2, NULL, 0), SW_OK);
        assert_int_equal(c2.total, c.total);
        char *dump = json_dumps(b, JSON_COMPACT);
        if (strstr(dump, "ziggo") || strstr(dump, "4821") || strstr(dump, "31648217730") || strstr(dump, "5359821140670030"))
            fail_msg("row %zu left a value: %s", i, dump);
        assert_int_equal(sw_pii_scan_body(E, rows[i].s, b, &c, NULL, 0), SW_OK);
        assert_int_equal(c.total, 0);
        struct sw_buf out;
        sw_buf_init(&out, 1 << 20);
        assert_int_equal(sw_pii_unmask_text(m, dump, strlen(dump), 0, &out), SW_OK);
        assert_non_null(memmem(out.ptr, out.len, MAIL, strlen(MAIL)));
        sw_buf_free(&out);
        free(dump);
        sw_pii_map_free(m);
        json_decref(b);
    }
}

/* A body the gateway built (a translation): a field outside its grammar is
 * read as text, not refused; within it, skipped as for the client's body. */
static void test_built_lenient(void **state)
{
    (void)state;
    struct sw_pii_counts c;
    json_t *b = load_with("{\"model\":\"m\",\"messages\":[{\"role\":\"tool\",\"tool_call_id\":%s,"
                          "\"content\":\"ok\"}],\"reasoning_effort\":\"low\"}", FREE);
    assert_int_equal(sw_pii_scan_built(E, SW_PII_SURFACE_CHAT, b, &c), SW_OK);
    assert_int_equal(c.n[SW_PII_EMAIL], 1);
    assert_int_equal(c.total, 1);
    json_decref(b);
}

/* sw_pii_scan_pair counts what sw_pii_scan_body and sw_pii_scan_built
 * count; a text the translation shares is not looked up again (the cache
 * sees it once), one it holds as its own string is, and a copy changed by
 * one byte is found changed. */
static void test_pair(void **state)
{
    (void)state;
    char err[256], pad[600];
    memset(pad, 'a', sizeof pad - 1);
    pad[sizeof pad - 1] = 0;
    char clean[1024], dirty[1024];
    snprintf(clean, sizeof clean, "%s mail me: jan.devries#ziggo.nl", pad);
    snprintf(dirty, sizeof dirty, "%s mail me: jan.devries@ziggo.nl", pad);
    for (int changed = 0; changed < 2; changed++) {
        struct sw_pii_cache *cache = sw_pii_cache_new((size_t)1 << 20);
        struct sw_pii_engine *e = NULL;
        assert_non_null(cache);
        assert_int_equal(sw_pii_engine_new(NULL, 0, &e, err, sizeof err), SW_OK);
        sw_pii_engine_set_cache(e, cache);
        json_t *shared = json_string(pad), *own = json_string(clean);
        json_t *native = json_pack("{s:s, s:[{s:s, s:[{s:s, s:O}]}, {s:s, s:[{s:s, s:s}]}]}",
                                   "model", "m", "messages", "role", "user", "content", "type",
                                   "text", "text", shared, "role", "user", "content", "type",
                                   "text", "text", clean);
        json_t *built = json_pack("{s:s, s:[{s:s, s:O}, {s:s, s:O}]}", "model", "m", "messages",
                                  "role", "user", "content", shared, "role", "user", "content",
                                  own);
        if (changed)
            json_string_set(own, dirty);
        assert_non_null(native);
        assert_non_null(built);
        struct sw_pii_counts a, b, pa, pb;
        char bad[SW_PII_MAX_BAD_PATH];
        int brc = -1;
        assert_int_equal(sw_pii_scan_pair(e, SW_PII_SURFACE_MESSAGES, native, &pa, bad, sizeof bad,
                                          SW_PII_SURFACE_CHAT, built, &pb, &brc), SW_OK);
        assert_int_equal(brc, SW_OK);
        struct sw_pii_cache_stats st;
        sw_pii_cache_get_stats(cache, &st);
        /* the native walk looked both texts up; the built one only its own string */
        assert_int_equal(st.hits + st.misses, 3);
        assert_int_equal(sw_pii_scan_body(e, SW_PII_SURFACE_MESSAGES, native, &a, bad,
                                          sizeof bad), SW_OK);
        assert_int_equal(sw_pii_scan_built(e, SW_PII_SURFACE_CHAT, built, &b), SW_OK);
        assert_memory_equal(&a, &pa, sizeof a);
        assert_memory_equal(&b, &pb, sizeof b);
        assert_int_equal(pa.total, 0);
        assert_int_equal(pb.n[SW_PII_EMAIL], changed ? 1 : 0);
        json_decref(own);
        json_decref(shared);
        json_decref(native);
        json_decref(built);
        sw_pii_engine_free(e);
        sw_pii_cache_free(cache);
    }
}

/* A body that is not an object; an unknown surface. */
static void test_bad_input(void **state)
{
    (void)state;
    struct sw_pii_counts c;
    char bad[SW_PII_MAX_BAD_PATH] = "x";
    json_t *a = json_array();
    assert_int_equal(sw_pii_scan_body(E, SW_PII_SURFACE_MESSAGES, a, &c, bad, sizeof bad), SW_EINVAL);
    assert_string_equal(bad, "");
    json_decref(a);
    json_t *o = json_object();
    assert_int_equal(sw_pii_scan_body(E, (enum sw_pii_surface)7, o, &c, bad, sizeof bad), SW_EINVAL);
    json_decref(o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_grammar_table),
        cmocka_unit_test(test_grammar_lengths),
        cmocka_unit_test(test_ident_scanned),
        cmocka_unit_test(test_binary_shapes),
        cmocka_unit_test(test_numbers),
        cmocka_unit_test(test_split_parts),
        cmocka_unit_test(test_mask_roundtrip),
        cmocka_unit_test(test_built_lenient),
        cmocka_unit_test(test_pair),
        cmocka_unit_test(test_bad_input),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
