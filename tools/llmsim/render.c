#include "render.h"

#include <string.h>

#include "common/err.h"
#include "common/json.h"
#include "gemini.h"

static int str(struct sw_buf *b, const char *s)
{
    return sw_buf_append(b, s, strlen(s));
}

static int esc(struct sw_buf *b, const char *s)
{
    return sw_json_escape(b, s, strlen(s), 0);
}

/* `data: {"id":...,"model":"...","system_fingerprint":null,` of an OpenAI chunk. */
static int build_head(struct sw_buf *b, const struct sw_llmsim_reply *r)
{
    int err = sw_buf_appendf(b,
                             "data: {\"id\":\"%s\",\"object\":\"chat.completion.chunk\","
                             "\"created\":%lld,\"model\":\"",
                             r->id, r->created);
    if (!err)
        err = esc(b, r->model);
    if (!err)
        err = str(b, "\",\"service_tier\":\"default\",\"system_fingerprint\":null,");
    return err;
}

int sw_llmsim_reply_prepare(struct sw_llmsim_reply *r)
{
    struct sw_buf b;
    sw_buf_init(&b, sizeof r->head - 1);
    int err = build_head(&b, r);
    if (!err) {
        memcpy(r->head, b.ptr, b.len + 1);
        r->head_len = b.len;
    }
    sw_buf_free(&b);
    return err;
}

static int oa_chunk_head(struct sw_buf *b, const struct sw_llmsim_reply *r)
{
    if (r->head_len)
        return sw_buf_append(b, r->head, r->head_len);
    return build_head(b, r);
}

/* OpenAI's usage (cached_tokens: what the prefix cache held), and with a
 * prefix cache llama.cpp's timings member after it. */
static int oa_usage(struct sw_buf *b, const struct sw_llmsim_reply *r, int output)
{
    int prompt = r->prompt_tokens;
    int err = sw_buf_appendf(b,
                             "\"usage\":{\"prompt_tokens\":%d,\"completion_tokens\":%d,"
                             "\"total_tokens\":%d,\"prompt_tokens_details\":{\"cached_tokens\":%d,"
                             "\"audio_tokens\":0},\"completion_tokens_details\":{"
                             "\"reasoning_tokens\":0,\"audio_tokens\":0,"
                             "\"accepted_prediction_tokens\":0,\"rejected_prediction_tokens\":0}}",
                             prompt, output, prompt + output, r->cached_tokens);
    if (!err && r->timings)
        err = sw_buf_appendf(b, ",\"timings\":{\"cache_n\":%d,\"prompt_n\":%d}",
                             r->cached_tokens, prompt - r->cached_tokens);
    return err;
}

static int an_usage(struct sw_buf *b, int input, int output)
{
    return sw_buf_appendf(b,
                          "\"usage\":{\"input_tokens\":%d,\"cache_creation_input_tokens\":0,"
                          "\"cache_read_input_tokens\":0,\"output_tokens\":%d,"
                          "\"service_tier\":\"standard\"}",
                          input, output);
}

/* The Anthropic content index of the answer's text (after a thinking block). */
static int text_index(const struct sw_llmsim_reply *r)
{
    return r->dialect == SW_LLMSIM_ANTHROPIC && r->thinking[0] && !r->tool[0] ? 1 : 0;
}

/* A fixed signature: what the real API sends to check a thinking block it
 * gets back. */
#define SIM_SIGNATURE "c2ltLXNpZ25hdHVyZQ=="

/* A thinking block at index 0, its text in pieces of at most 7 bytes (cut at
 * UTF-8 character boundaries), so a client sees text split mid-word. */
static int thinking_block(struct sw_buf *b, const char *text)
{
    int err = str(b, "event: content_block_start\ndata: {\"type\":\"content_block_start\","
                     "\"index\":0,\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\","
                     "\"signature\":\"\"}}\n\n");
    size_t len = strlen(text);
    for (size_t at = 0; !err && at < len;) {
        size_t n = len - at < 7 ? len - at : 7;
        while (at + n < len && n > 1 && ((unsigned char)text[at + n] & 0xC0) == 0x80)
            n--;
        err = str(b, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\","
                     "\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"");
        if (!err)
            err = sw_json_escape(b, text + at, n, 0);
        if (!err)
            err = str(b, "\"}}\n\n");
        at += n;
    }
    if (!err)
        err = str(b, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\","
                     "\"index\":0,\"delta\":{\"type\":\"signature_delta\",\"signature\":\""
                     SIM_SIGNATURE "\"}}\n\n"
                     "event: content_block_stop\ndata: {\"type\":\"content_block_stop\","
                     "\"index\":0}\n\n");
    return err;
}

int sw_llmsim_render_stream_start(struct sw_buf *b, const struct sw_llmsim_reply *r)
{
    int err;
    if (r->dialect == SW_LLMSIM_GEMINI)
        return sw_llmsim_gem_stream_start(b, r);
    if (r->dialect == SW_LLMSIM_OPENAI && r->tool[0]) { /* the call, its arguments streamed */
        err = oa_chunk_head(b, r);
        if (!err)
            err = str(b, "\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\","
                         "\"content\":null,\"tool_calls\":[{\"index\":0,\"id\":\"call_sim1\","
                         "\"type\":\"function\",\"function\":{\"name\":\"");
        if (!err)
            err = esc(b, r->tool);
        if (!err)
            err = str(b, "\",\"arguments\":\"\"}}]},\"logprobs\":null,\"finish_reason\":null}]}\n\n");
        return err;
    }
    if (r->dialect == SW_LLMSIM_OPENAI) {
        err = oa_chunk_head(b, r);
        if (!err)
            err = str(b, "\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\","
                         "\"content\":\"\",\"refusal\":null},\"logprobs\":null,"
                         "\"finish_reason\":null}]}\n\n");
        return err;
    }
    err = sw_buf_appendf(b,
                         "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{"
                         "\"id\":\"%s\",\"type\":\"message\",\"role\":\"assistant\","
                         "\"model\":\"",
                         r->id);
    if (!err)
        err = esc(b, r->model);
    if (!err)
        err = str(b, "\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,");
    if (!err)
        err = an_usage(b, r->prompt_tokens, 1);
    if (!err && r->tool[0]) { /* a forced tool: one tool_use block, its input streamed */
        err = str(b, "}}\n\n"
                     "event: content_block_start\ndata: {\"type\":\"content_block_start\","
                     "\"index\":0,\"content_block\":{\"type\":\"tool_use\","
                     "\"id\":\"toolu_sim1\",\"name\":\"");
        if (!err)
            err = esc(b, r->tool);
        if (!err)
            err = str(b, "\",\"input\":{}}}\n\n"
                         "event: ping\ndata: {\"type\": \"ping\"}\n\n");
    } else if (!err) {
        err = str(b, "}}\n\n");
        if (!err && r->thinking[0])
            err = thinking_block(b, r->thinking);
        if (!err)
            err = sw_buf_appendf(b,
                                 "event: content_block_start\ndata: {\"type\":\"content_block_start\","
                                 "\"index\":%d,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}"
                                 "\n\nevent: ping\ndata: {\"type\": \"ping\"}\n\n",
                                 text_index(r));
    }
    return err;
}

int sw_llmsim_render_stream_token(struct sw_buf *b, const struct sw_llmsim_reply *r,
                                  struct sw_str text, enum sw_llmsim_malformed malformed)
{
    int err;
    /* sse: the event's JSON is broken over two lines and the second lacks its
     * "data: " prefix, so a client sees a data field that does not parse. */
    const char *brk = malformed == SW_LLMSIM_MALFORMED_SSE ? "\n" : "";
    if (r->dialect == SW_LLMSIM_GEMINI)
        return sw_llmsim_gem_stream_token(b, r, text, malformed);
    if (r->dialect == SW_LLMSIM_OPENAI) {
        err = oa_chunk_head(b, r);
        if (!err)
            err = str(b, brk);
        if (!err)
            err = str(b, r->tool[0] ? "\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{"
                                      "\"index\":0,\"function\":{\"arguments\":\""
                                    : "\"choices\":[{\"index\":0,\"delta\":{\"content\":\"");
    } else {
        err = str(b, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",");
        if (!err)
            err = str(b, brk);
        if (!err)
            err = r->tool[0] ? str(b, "\"index\":0,\"delta\":{\"type\":\"input_json_delta\","
                                      "\"partial_json\":\"")
                             : sw_buf_appendf(b, "\"index\":%d,\"delta\":{\"type\":\"text_delta\","
                                                 "\"text\":\"", text_index(r));
    }
    if (!err)
        err = sw_json_escape(b, text.ptr, text.len, 0);
    if (err)
        return err;
    if (malformed == SW_LLMSIM_MALFORMED_JSON) /* the object is never closed */
        return str(b, "\",\n\n");
    if (r->dialect == SW_LLMSIM_OPENAI)
        return str(b, r->tool[0] ? "\"}}]},\"logprobs\":null,\"finish_reason\":null}]}\n\n"
                                 : "\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n");
    return str(b, "\"}}\n\n");
}

int sw_llmsim_render_stream_error(struct sw_buf *b, const struct sw_llmsim_reply *r)
{
    if (r->dialect == SW_LLMSIM_GEMINI)
        return sw_llmsim_gem_stream_error(b, r);
    if (r->dialect == SW_LLMSIM_OPENAI)
        return str(b, "data: {\"error\":{\"message\":\"The server is overloaded.\","
                      "\"type\":\"server_error\",\"param\":null,\"code\":\"overloaded\"}}\n\n");
    return str(b, "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":"
                  "\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n");
}

int sw_llmsim_render_stream_end(struct sw_buf *b, const struct sw_llmsim_reply *r,
                                int output_tokens, bool length)
{
    int err;
    if (r->dialect == SW_LLMSIM_GEMINI)
        return sw_llmsim_gem_stream_end(b, r, output_tokens, length);
    if (r->dialect == SW_LLMSIM_OPENAI) {
        err = oa_chunk_head(b, r);
        if (!err)
            err = sw_buf_appendf(b,
                                 "\"choices\":[{\"index\":0,\"delta\":{},\"logprobs\":null,"
                                 "\"finish_reason\":\"%s\"}]}\n\n",
                                 length ? "length" : r->tool[0] ? "tool_calls" : "stop");
        if (!err && r->include_usage) {
            err = oa_chunk_head(b, r);
            if (!err)
                err = str(b, "\"choices\":[],");
            if (!err)
                err = oa_usage(b, r, output_tokens);
            if (!err)
                err = str(b, "}\n\n");
        }
        if (!err)
            err = str(b, "data: [DONE]\n\n");
        return err;
    }
    return sw_buf_appendf(b,
                          "event: content_block_stop\ndata: {\"type\":\"content_block_stop\","
                          "\"index\":%d}\n\n"
                          "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{"
                          "\"stop_reason\":\"%s\",\"stop_sequence\":null},\"usage\":{"
                          "\"output_tokens\":%d}}\n\n"
                          "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
                          text_index(r), length ? "max_tokens" : r->tool[0] ? "tool_use" : "end_turn",
                          output_tokens);
}

/* A forced tool's call: the text is its arguments (OpenAI, as a string) or
 * its input (Anthropic: the text parsed; text that is not a JSON object
 * becomes {"text": ...}). */
static int render_tool_message(struct sw_buf *b, const struct sw_llmsim_reply *r,
                               const char *text, size_t len, int output_tokens)
{
    json_t *m;
    if (r->dialect == SW_LLMSIM_OPENAI) {
        m = json_pack("{s:s, s:s, s:I, s:s, s:[{s:i, s:{s:s, s:n, s:[{s:s, s:s, s:{s:s, s:s%}}]}, "
                      "s:n, s:s}], s:{s:i, s:i, s:i}}",
                      "id", r->id, "object", "chat.completion", "created", (json_int_t)r->created,
                      "model", r->model, "choices", "index", 0, "message", "role", "assistant",
                      "content", "tool_calls", "id", "call_sim1", "type", "function", "function",
                      "name", r->tool, "arguments", text, len, "logprobs", "finish_reason",
                      "tool_calls", "usage", "prompt_tokens", r->prompt_tokens,
                      "completion_tokens", output_tokens, "total_tokens",
                      r->prompt_tokens + output_tokens);
    } else {
        json_error_t je;
        json_t *input = json_loadb(text, len, 0, &je);
        if (!json_is_object(input)) {
            json_decref(input);
            input = json_pack("{s:s%}", "text", text, len);
        }
        m = json_pack("{s:s, s:s, s:s, s:s, s:[{s:s, s:s, s:s, s:o}], s:s, s:n, "
                      "s:{s:i, s:i}}",
                      "id", r->id, "type", "message", "role", "assistant", "model", r->model,
                      "content", "type", "tool_use", "id", "toolu_sim1", "name", r->tool, "input",
                      input, "stop_reason", "tool_use", "stop_sequence", "usage", "input_tokens",
                      r->prompt_tokens, "output_tokens", output_tokens);
    }
    char *s = m ? json_dumps(m, JSON_COMPACT) : NULL;
    json_decref(m);
    int err = s ? sw_buf_append_str(b, s) : SW_ENOMEM;
    free(s);
    return err;
}

int sw_llmsim_render_message(struct sw_buf *b, const struct sw_llmsim_reply *r,
                             const char *text, size_t len, int output_tokens, bool length,
                             enum sw_llmsim_malformed malformed)
{
    int err;
    if (r->dialect == SW_LLMSIM_GEMINI)
        return sw_llmsim_gem_message(b, r, text, len, output_tokens, length, malformed);
    if (r->tool[0] && !malformed)
        return render_tool_message(b, r, text, len, output_tokens);
    if (r->dialect == SW_LLMSIM_OPENAI) {
        err = sw_buf_appendf(b,
                             "{\"id\":\"%s\",\"object\":\"chat.completion\",\"created\":%lld,"
                             "\"model\":\"",
                             r->id, r->created);
        if (!err)
            err = esc(b, r->model);
        if (!err)
            err = str(b, "\",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\","
                         "\"content\":\"");
        if (!err)
            err = sw_json_escape(b, text, len, 0);
        if (!err && malformed)
            return str(b, "\",\"refusal\":");
        if (!err)
            err = sw_buf_appendf(b,
                                 "\",\"refusal\":null,\"annotations\":[]},\"logprobs\":null,"
                                 "\"finish_reason\":\"%s\"}],",
                                 length ? "length" : "stop");
        if (!err)
            err = oa_usage(b, r, output_tokens);
        if (!err)
            err = str(b, ",\"service_tier\":\"default\",\"system_fingerprint\":null}");
        return err;
    }
    err = sw_buf_appendf(b, "{\"id\":\"%s\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"",
                         r->id);
    if (!err)
        err = esc(b, r->model);
    if (!err)
        err = str(b, "\",\"content\":[");
    if (!err && r->thinking[0]) {
        err = str(b, "{\"type\":\"thinking\",\"thinking\":\"");
        if (!err)
            err = esc(b, r->thinking);
        if (!err)
            err = str(b, "\",\"signature\":\"" SIM_SIGNATURE "\"},");
    }
    if (!err)
        err = str(b, "{\"type\":\"text\",\"text\":\"");
    if (!err)
        err = sw_json_escape(b, text, len, 0);
    if (!err && malformed)
        return str(b, "\"}],\"stop_reason\":");
    if (!err)
        err = sw_buf_appendf(b, "\"}],\"stop_reason\":\"%s\",\"stop_sequence\":null,",
                             length ? "max_tokens" : "end_turn");
    if (!err)
        err = an_usage(b, r->prompt_tokens, output_tokens);
    if (!err)
        err = str(b, "}");
    return err;
}

static const char *oa_code(int status)
{
    switch (status) {
    case 400: return "invalid_request_error";
    case 404: return "not_found";
    case 429: return "rate_limit_exceeded";
    case 500: return "internal_error";
    case 502: return "bad_gateway";
    case 503: return "service_unavailable";
    case 504: return "timeout";
    case 529: return "overloaded";
    default: return status < 500 ? "invalid_request_error" : "server_error";
    }
}

static const char *an_type(int status)
{
    switch (status) {
    case 400: return "invalid_request_error";
    case 401: return "authentication_error";
    case 403: return "permission_error";
    case 404: return "not_found_error";
    case 413: return "request_too_large";
    case 429: return "rate_limit_error";
    case 504: return "timeout_error";
    case 529: return "overloaded_error";
    default: return status < 500 ? "invalid_request_error" : "api_error";
    }
}

int sw_llmsim_render_error(struct sw_buf *b, enum sw_llmsim_dialect d, int status,
                           const char *message, const char *limit)
{
    int err;
    if (d == SW_LLMSIM_GEMINI)
        return sw_llmsim_gem_error(b, status, message);
    if (d == SW_LLMSIM_OPENAI) {
        const char *type = status == 429 ? (limit ? limit : "requests")
                           : status >= 500 ? "server_error"
                           : status == 404 ? "invalid_request_error"
                                           : "invalid_request_error";
        err = str(b, "{\"error\":{\"message\":\"");
        if (!err)
            err = esc(b, message);
        if (!err)
            err = sw_buf_appendf(b, "\",\"type\":\"%s\",\"param\":null,\"code\":\"%s\"}}", type,
                                 oa_code(status));
        return err;
    }
    err = sw_buf_appendf(b, "{\"type\":\"error\",\"error\":{\"type\":\"%s\",\"message\":\"",
                         an_type(status));
    if (!err)
        err = esc(b, message);
    if (!err)
        err = str(b, "\"}}");
    return err;
}
