/* The request walkers: which parts of a request body of each API surface are
 * text (scanned, masked), structural (checked to their grammar, not masked),
 * JSON text or binary, and the walk over the jansson tree that applies it.
 * See pii.h; docs/privacy.md lists the tables below for users. */
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/err.h"
#include "common/jmemo.h"
#include "pii/cache.h"
#include "pii/detect.h"
#include "pii/view.h"
#include "pii/map.h"
#include "pii/mask.h"
#include "pii/memo.h"

/* Largest text re-encoded while masking one string or one run of parts (the
 * body is bounded by the front long before this). */
#define TEXT_MAX SW_PII_MAX_TEXT

/* ---- Grammars of the structural fields ---- */

enum gram {
    G_ENUM,         /* one of the words listed with the field, exactly */
    G_ID,           /* an id: 1-128 of A-Z a-z 0-9 _ - ("call_…", "toolu_…", "file-…") */
    G_FN64,         /* an OpenAI function name: ^[a-zA-Z0-9_-]{1,64}$ */
    G_FN128,        /* an Anthropic tool name: ^[a-zA-Z0-9_-]{1,128}$ */
    G_MODEL,        /* a model name: 1-1024 bytes without control characters, as the config
                     * allows them (the front answers 404 to a name the config does not
                     * define before the scan, so no free text passes as a model) */
    G_WORD,         /* a block type: 1-64 of a-z and _ (no digit, '@' or space) */
    G_TOOLTYPE,     /* an Anthropic tool type: a G_WORD, optionally "_" and 8 digits (a date) */
    G_B64,          /* an opaque token of the provider (thinking signature): 1 B - 1 MiB of base64 */
};

static bool in_set(unsigned char ch, bool alnum, const char *extra)
{
    if (alnum && ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9')))
        return true;
    return ch && strchr(extra, ch);
}

static bool all_of(const char *s, size_t n, size_t max, bool alnum, const char *extra)
{
    if (n == 0 || n > max)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!in_set((unsigned char)s[i], alnum, extra))
            return false;
    return true;
}

static bool is_word(const char *s, size_t n)
{
    if (n == 0 || n > 64)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || s[i] == '_'))
            return false;
    return true;
}

static bool gram_ok(enum gram g, const char *const *words, const char *s, size_t n)
{
    switch (g) {
    case G_ENUM:
        for (; *words; words++)
            if (strlen(*words) == n && !memcmp(*words, s, n))
                return true;
        return false;
    case G_ID: return all_of(s, n, 128, true, "_-");
    case G_FN64: return all_of(s, n, 64, true, "_-");
    case G_FN128: return all_of(s, n, 128, true, "_-");
    case G_MODEL:
        if (n == 0 || n > 1024)
            return false;
        for (size_t i = 0; i < n; i++)
            if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] == 0x7f)
                return false;
        return true;
    case G_WORD: return is_word(s, n);
    case G_TOOLTYPE:
        if (n > 9 && s[n - 9] == '_' && all_of(s + n - 8, 8, 8, false, "0123456789"))
            return is_word(s, n - 9);
        return is_word(s, n);
    case G_B64: return all_of(s, n, (size_t)1 << 20, true, "+/=_-");
    }
    return false;
}

/* ---- The tables ----
 * Every string value and object key of a body is text, at any depth, except
 * the fields below (matched by their whole JSON path, "*" standing for any
 * array index). A field not listed, known or not, is scanned.
 *   SKIP   structural: checked to its grammar, not scanned, never masked
 *   IDENT  an id or a name: checked to its grammar and scanned as an object
 *          key is (an entity found counts; it cannot be masked)
 *   JSON   JSON text (tool-call arguments): scanned and masked as JSON
 *   BIN    a binary payload no text scanner can read: counted, not read
 *   IMG    an image URL: binary when a data: URL (after leading white space
 *          or a BOM, in any case), else text */
enum kind { K_NONE, K_SKIP, K_IDENT, K_JSON, K_BIN, K_IMG };

struct field {
    const char *path;
    enum kind kind;
    enum gram gram;
    const char *const *words;       /* G_ENUM: NULL-terminated */
};

#define WORDS(...) ((const char *const[]){__VA_ARGS__, NULL})
#define SKIP_ENUM(p, ...) {p, K_SKIP, G_ENUM, WORDS(__VA_ARGS__)}
#define SKIP(p, g) {p, K_SKIP, g, NULL}
#define IDENT(p, g) {p, K_IDENT, g, NULL}

/* OpenAI chat completions. */
static const struct field chat_fields[] = {
    SKIP("model", G_MODEL),
    SKIP_ENUM("messages.*.role", "system", "developer", "user", "assistant", "tool", "function"),
    IDENT("messages.*.tool_call_id", G_ID),
    IDENT("messages.*.tool_calls.*.id", G_ID),
    SKIP_ENUM("messages.*.tool_calls.*.type", "function", "custom"),
    IDENT("messages.*.tool_calls.*.function.name", G_FN64),
    IDENT("messages.*.tool_calls.*.custom.name", G_FN64),
    IDENT("messages.*.function_call.name", G_FN64),
    SKIP_ENUM("messages.*.content.*.type", "text", "image_url", "input_audio", "file", "refusal"),
    SKIP_ENUM("messages.*.content.*.image_url.detail", "auto", "low", "high"),
    SKIP_ENUM("messages.*.content.*.input_audio.format", "wav", "mp3", "flac", "opus", "pcm16",
              "aac", "ogg", "m4a", "webm"),
    IDENT("messages.*.content.*.file.file_id", G_ID),
    IDENT("messages.*.audio.id", G_ID),
    SKIP_ENUM("tools.*.type", "function", "custom"),
    IDENT("tools.*.function.name", G_FN64),
    IDENT("tools.*.custom.name", G_FN64),
    IDENT("functions.*.name", G_FN64),
    SKIP_ENUM("tool_choice", "none", "auto", "required"),
    SKIP_ENUM("tool_choice.type", "function", "custom", "allowed_tools"),
    IDENT("tool_choice.function.name", G_FN64),
    IDENT("tool_choice.custom.name", G_FN64),
    SKIP_ENUM("tool_choice.allowed_tools.mode", "auto", "required"),
    SKIP_ENUM("function_call", "none", "auto"),
    IDENT("function_call.name", G_FN64),
    SKIP_ENUM("response_format.type", "text", "json_object", "json_schema"),
    SKIP_ENUM("reasoning_effort", "none", "minimal", "low", "medium", "high", "xhigh"),
    SKIP_ENUM("verbosity", "low", "medium", "high"),
    SKIP_ENUM("service_tier", "auto", "default", "flex", "scale", "priority"),
    SKIP_ENUM("modalities.*", "text", "audio"),
    SKIP_ENUM("audio.voice", "alloy", "ash", "ballad", "coral", "echo", "fable", "nova", "onyx",
              "sage", "shimmer", "verse", "marin", "cedar"),
    SKIP_ENUM("audio.format", "wav", "aac", "mp3", "flac", "opus", "pcm16"),
    {"messages.*.tool_calls.*.function.arguments", K_JSON, G_ENUM, NULL},
    {"messages.*.function_call.arguments", K_JSON, G_ENUM, NULL},
    {"messages.*.content.*.input_audio.data", K_BIN, G_ENUM, NULL},
    {"messages.*.content.*.file.file_data", K_BIN, G_ENUM, NULL},
    {"messages.*.content.*.image_url.url", K_IMG, G_ENUM, NULL},
    {"messages.*.content.*.image_url", K_IMG, G_ENUM, NULL},      /* the URL as a bare string */
};

/* Anthropic Messages. Content blocks nest one level in tool_result (and in
 * a document's content source); both levels are listed. Base64 sources
 * (image and document blocks, at any depth) are binary by the rule in
 * walk_object, not by path. tool_use input is an object: walked. */
#define ANTH_CACHE(p) SKIP_ENUM(p ".cache_control.type", "ephemeral"), \
                      SKIP_ENUM(p ".cache_control.ttl", "5m", "1h")
#define ANTH_BLOCK(p)                                                                   \
    SKIP(p ".type", G_WORD), IDENT(p ".id", G_ID), IDENT(p ".name", G_FN128),          \
        IDENT(p ".tool_use_id", G_ID), IDENT(p ".tool_name", G_FN128),                 \
        SKIP(p ".signature", G_B64), ANTH_CACHE(p),                                    \
        SKIP_ENUM(p ".source.type", "base64", "url", "text", "content", "file"),       \
        SKIP_ENUM(p ".source.media_type", "image/jpeg", "image/png", "image/gif",      \
                  "image/webp", "application/pdf", "text/plain"),                      \
        IDENT(p ".source.file_id", G_ID), SKIP(p ".source.content.*.type", G_WORD),    \
        ANTH_CACHE(p ".source.content.*")
static const struct field messages_fields[] = {
    SKIP("model", G_MODEL),
    SKIP_ENUM("messages.*.role", "user", "assistant", "system"),
    ANTH_BLOCK("messages.*.content.*"),
    SKIP("messages.*.content.*.data", G_B64),           /* redacted_thinking */
    ANTH_BLOCK("messages.*.content.*.content.*"),
    SKIP("system.*.type", G_WORD),
    ANTH_CACHE("system.*"),
    IDENT("tools.*.name", G_FN128),
    SKIP("tools.*.type", G_TOOLTYPE),
    ANTH_CACHE("tools.*"),
    SKIP_ENUM("tool_choice.type", "auto", "any", "tool", "none"),
    IDENT("tool_choice.name", G_FN128),
    SKIP_ENUM("thinking.type", "enabled", "disabled", "adaptive"),
    SKIP_ENUM("service_tier", "auto", "standard_only"),
};

/* OpenAI embeddings. */
static const struct field embeddings_fields[] = {
    SKIP("model", G_MODEL),
    SKIP_ENUM("encoding_format", "float", "base64"),
};

/* OpenAI Responses. Items of input (messages, function calls and their
 * outputs, reasoning, hosted tool calls) and their content parts; a
 * function_call_output's output is a string or parts of the same kinds.
 * Item and part types are any word (the translation and the backend judge
 * them); an encrypted reasoning blob is opaque, like Anthropic's signature. */
#define RESP_PART(p)                                                                     \
    SKIP(p ".type", G_WORD), SKIP_ENUM(p ".detail", "auto", "low", "high", "original"),   \
        IDENT(p ".file_id", G_ID), {p ".file_data", K_BIN, G_ENUM, NULL},              \
        {p ".image_url", K_IMG, G_ENUM, NULL}, {p ".input_audio.data", K_BIN, G_ENUM, NULL}, \
        SKIP_ENUM(p ".input_audio.format", "wav", "mp3")
static const struct field responses_fields[] = {
    SKIP("model", G_MODEL),
    SKIP("input.*.type", G_WORD),
    SKIP_ENUM("input.*.role", "user", "system", "developer", "assistant"),
    SKIP_ENUM("input.*.status", "in_progress", "completed", "incomplete"),
    IDENT("input.*.id", G_ID),
    IDENT("input.*.call_id", G_ID),
    IDENT("input.*.name", G_FN128),
    {"input.*.arguments", K_JSON, G_ENUM, NULL},
    SKIP("input.*.encrypted_content", G_B64),
    RESP_PART("input.*.content.*"),
    RESP_PART("input.*.output.*"),
    SKIP("input.*.summary.*.type", G_WORD),
    SKIP("tools.*.type", G_TOOLTYPE),
    IDENT("tools.*.name", G_FN128),
    SKIP_ENUM("tool_choice", "none", "auto", "required"),
    SKIP("tool_choice.type", G_WORD),
    IDENT("tool_choice.name", G_FN128),
    SKIP_ENUM("text.format.type", "text", "json_object", "json_schema"),
    IDENT("text.format.name", G_FN64),
    SKIP_ENUM("text.verbosity", "low", "medium", "high"),
    SKIP_ENUM("reasoning.effort", "none", "minimal", "low", "medium", "high", "xhigh"),
    SKIP_ENUM("reasoning.summary", "auto", "concise", "detailed"),
    SKIP_ENUM("reasoning.generate_summary", "auto", "concise", "detailed"),
    SKIP_ENUM("service_tier", "auto", "default", "flex", "scale", "priority"),
    SKIP_ENUM("truncation", "auto", "disabled"),
    IDENT("previous_response_id", G_ID),
};

/* AWS Bedrock Converse (built by the gateway for a bedrock backend): the
 * image bytes are binary; toolUse input is an object (walked). */
#define CONVERSE_BLOCK(p)                                                                 \
    SKIP_ENUM(p ".image.format", "png", "jpeg", "gif", "webp"),                           \
        {p ".image.source.bytes", K_BIN, G_ENUM, NULL}, IDENT(p ".toolUse.toolUseId", G_ID), \
        IDENT(p ".toolUse.name", G_FN64), IDENT(p ".toolResult.toolUseId", G_ID),           \
        SKIP_ENUM(p ".toolResult.status", "success", "error")
static const struct field converse_fields[] = {
    SKIP_ENUM("messages.*.role", "user", "assistant"),
    CONVERSE_BLOCK("messages.*.content.*"),
    IDENT("toolConfig.tools.*.toolSpec.name", G_FN64),
    IDENT("toolConfig.toolChoice.tool.name", G_FN64),
};

/* Google's generateContent (Gemini API, Vertex AI). functionCall args and
 * functionResponse response are objects: walked. */
#define GEM_PART(p)                                                                        \
    IDENT(p ".functionCall.name", G_FN128), IDENT(p ".functionCall.id", G_ID),             \
        IDENT(p ".functionResponse.name", G_FN128), IDENT(p ".functionResponse.id", G_ID), \
        SKIP_ENUM(p ".inlineData.mimeType", "image/jpeg", "image/png", "image/gif",       \
                  "image/webp", "image/heic", "image/heif", "application/pdf"),           \
        {p ".inlineData.data", K_BIN, G_ENUM, NULL}
#define GEM_HARM "HARM_CATEGORY_HARASSMENT", "HARM_CATEGORY_HATE_SPEECH",                   \
                 "HARM_CATEGORY_SEXUALLY_EXPLICIT", "HARM_CATEGORY_DANGEROUS_CONTENT",      \
                 "HARM_CATEGORY_CIVIC_INTEGRITY"
static const struct field gemini_fields[] = {
    SKIP_ENUM("contents.*.role", "user", "model"),
    GEM_PART("contents.*.parts.*"),
    GEM_PART("systemInstruction.parts.*"),
    IDENT("tools.*.functionDeclarations.*.name", G_FN128),
    SKIP_ENUM("toolConfig.functionCallingConfig.mode", "AUTO", "ANY", "NONE", "VALIDATED"),
    IDENT("toolConfig.functionCallingConfig.allowedFunctionNames.*", G_FN128),
    SKIP_ENUM("generationConfig.responseMimeType", "application/json", "text/plain",
              "text/x.enum"),
    SKIP_ENUM("safetySettings.*.category", GEM_HARM),
    SKIP_ENUM("safetySettings.*.threshold", "HARM_BLOCK_THRESHOLD_UNSPECIFIED",
              "BLOCK_LOW_AND_ABOVE", "BLOCK_MEDIUM_AND_ABOVE", "BLOCK_ONLY_HIGH", "BLOCK_NONE",
              "OFF"),
};

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))
static const struct {
    const struct field *f;
    size_t n;
} tables[] = {
    [SW_PII_SURFACE_CHAT] = {chat_fields, N_OF(chat_fields)},
    [SW_PII_SURFACE_MESSAGES] = {messages_fields, N_OF(messages_fields)},
    [SW_PII_SURFACE_EMBEDDINGS] = {embeddings_fields, N_OF(embeddings_fields)},
    [SW_PII_SURFACE_RESPONSES] = {responses_fields, N_OF(responses_fields)},
    [SW_PII_SURFACE_CONVERSE] = {converse_fields, N_OF(converse_fields)},
    [SW_PII_SURFACE_GEMINI] = {gemini_fields, N_OF(gemini_fields)},
};
#define N_SURFACES N_OF(tables)

/* The tables as trees of path segments, built once: the walk keeps the node
 * its path has reached (one step per level, among a node's few children), so
 * a value is classified by one lookup, with no string built or split. */
#define PATH_NODES 512

struct pnode {
    const char *seg;            /* NULL: "*", any array index */
    size_t len;
    const struct field *f;      /* a listed path ends here */
    int child, next;            /* first child, next sibling; -1 none */
    uint64_t kmask;             /* KBIT of each named child: most keys not listed
                                 * ("temperature", "stream") are told apart at once */
};
#define KBIT(k, len) ((uint64_t)1 << (((len) * 7 + (unsigned char)(k)[0]) & 63))
static struct pnode pnodes[PATH_NODES];
static int n_pnodes;
static int roots[N_SURFACES];
static pthread_once_t pnodes_once = PTHREAD_ONCE_INIT;

static int pnode_child(int n, const char *k, size_t klen)
{
    if (k && (!klen || !(pnodes[n].kmask & KBIT(k, klen))))
        return -1;
    for (int c = pnodes[n].child; c >= 0; c = pnodes[c].next)
        if (pnodes[c].seg ? (k && klen == pnodes[c].len && k[0] == pnodes[c].seg[0] &&
                             !memcmp(k, pnodes[c].seg, klen))
                          : !k)
            return c;
    return -1;
}

static int pnode_new(const char *seg, size_t len, int next)
{
    if (n_pnodes == PATH_NODES)
        abort();                /* fixed tables: never at run time */
    pnodes[n_pnodes] = (struct pnode){seg, len, NULL, -1, next, 0};
    return n_pnodes++;
}

static void pnodes_add(int root, const struct field *f)
{
    int n = root;
    for (const char *p = f->path;;) {
        const char *dot = strchr(p, '.');
        size_t len = dot ? (size_t)(dot - p) : strlen(p);
        bool any = len == 1 && p[0] == '*';
        int c = pnode_child(n, any ? NULL : p, len);
        if (c < 0) {
            /* appended: siblings are tried in table order, the common
             * fields ("model", "messages", "role", "content") first */
            c = pnode_new(any ? NULL : p, len, -1);
            if (!any)
                pnodes[n].kmask |= KBIT(p, len);
            int *link = &pnodes[n].child;
            while (*link >= 0)
                link = &pnodes[*link].next;
            *link = c;
        }
        n = c;
        if (!dot)
            break;
        p = dot + 1;
    }
    pnodes[n].f = f;
}

static void pnodes_init(void)
{
    for (size_t s = 0; s < N_SURFACES; s++) {
        roots[s] = pnode_new(NULL, 0, -1);
        for (size_t i = 0; i < tables[s].n; i++)
            pnodes_add(roots[s], &tables[s].f[i]);
    }
}

/* ---- Binary payloads ---- */

/* Bytes of white space or an invisible character (BOM, zero-width, no-break
 * and other Unicode spaces) at s[0..n), or 0. */
static size_t blank_at(const unsigned char *s, size_t n)
{
    if (s[0] == ' ' || (s[0] >= '\t' && s[0] <= '\r'))
        return 1;
    if (n >= 2 && s[0] == 0xc2 && s[1] == 0xa0)
        return 2;
    if (n >= 3 && s[0] == 0xef && s[1] == 0xbb && s[2] == 0xbf)
        return 3;   /* U+FEFF */
    if (n >= 3 && s[0] == 0xe2 && s[1] == 0x80 && (s[2] <= 0x8f || s[2] == 0xaf))
        return 3;   /* U+2000-U+200F, U+202F */
    if (n >= 3 && s[0] == 0xe2 && s[1] == 0x81 && (s[2] == 0x9f || s[2] == 0xa0))
        return 3;   /* U+205F, U+2060 */
    if (n >= 3 && s[0] == 0xe3 && s[1] == 0x80 && s[2] == 0x80)
        return 3;   /* U+3000 */
    return 0;
}

/* Whether s is a data: URL once leading blanks are skipped (any case);
 * base64_only: and one with ";base64" in its header whose payload is only
 * base64 and line breaks (a text that merely starts like one is text). */
static bool is_data_url(const char *str, size_t n, bool base64_only)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0, b;
    while (i < n && (b = blank_at(s + i, n - i)))
        i += b;
    if (n - i < 5 || strncasecmp((const char *)s + i, "data:", 5))
        return false;
    if (!base64_only)
        return true;
    const unsigned char *comma = memchr(s + i, ',', n - i < 1024 ? n - i : 1024);
    if (!comma)
        return false;
    bool b64 = false;
    for (const unsigned char *p = s + i; p + 7 <= comma; p++)
        if (*p == ';' && !strncasecmp((const char *)p, ";base64", 7))
            b64 = true;
    if (!b64)
        return false;
    for (const unsigned char *p = comma + 1; p < s + n; p++)
        if (!in_set(*p, true, "+/=_-\r\n"))
            return false;
    return true;
}

/* ---- The walk ---- */

/* Deepest nesting walked; a deeper body fails (the caller fails closed). */
#define WALK_MAX_DEPTH 256

struct walk;

/* Called for each text field (json_text: JSON text), each run of adjacent
 * text parts, each binary payload, each id or name, each number and each
 * object key. A NULL callback skips those. */
struct walk_fns {
    int (*text)(void *ud, json_t *str, int json_text);
    int (*parts)(void *ud, json_t *arr, size_t from, size_t to);
    int (*binary)(void *ud, json_t *str);
    int (*ident)(void *ud, const char *s, size_t len);
    /* t[ctx..len): the number as it is read (walk_number), after the
     * context t[0..ctx); *repl: a new value to put in its place (a string),
     * or left NULL */
    int (*number)(void *ud, const char *t, size_t len, size_t ctx, json_t **repl);
    int (*key)(void *ud, const char *key, size_t len);
    /* Elements of a top-level array that are not text parts (a message, a
     * tool): known, asked of up to 64 at a time from `from` on, returns the
     * bits 1 << (i - from) of those whose verdict is known already (and
     * applied): they are not walked; element is called for each of the
     * others before its walk (after false) and after a walk that succeeded
     * (after true). ctx: what the walk of one depends on besides the
     * element and the engine (surface, leniency, its path's node). */
    uint64_t (*known)(void *ud, const json_t *arr, size_t from, uint64_t ctx);
    int (*element)(void *ud, const json_t *el, uint64_t ctx, bool after);
};

struct walk {
    const struct walk_fns *fns;
    void *ud;
    bool lenient;               /* a structural field outside its grammar is text */
    bool messages;              /* SW_PII_SURFACE_MESSAGES */
    bool short_clean;           /* no custom type: a number under 7 digits holds nothing */
    char *bad;
    size_t bad_len;
    size_t depth;
    const json_t *part_text;    /* the "text" of a part scanned with its run */
    bool lone_part;             /* the element walked is a text part on its own */
    int node[WALK_MAX_DEPTH + 1];   /* per depth: the tree node its path reached, -1 none */
    const char *key[WALK_MAX_DEPTH + 1];    /* per depth: the key, NULL for an index */
    size_t klen[WALK_MAX_DEPTH + 1];        /* the key's length, or the index */
};

/* One level down, under key k (NULL: array index i). */
static void descend(struct walk *w, const char *k, size_t klen)
{
    int n = w->node[w->depth];
    w->depth++;
    w->node[w->depth] = n < 0 ? -1 : pnode_child(n, k, klen);
    w->key[w->depth] = k;
    w->klen[w->depth] = klen;
}

/* Writes the JSON path of the current value to w->bad ("messages[2].id").
 * A key outside [A-Za-z0-9_-]{1,64} is written as "?" (never a value). */
static int fail_at(struct walk *w)
{
    if (!w->bad || !w->bad_len)
        return SW_EINVAL;
    size_t o = 0;
    w->bad[0] = 0;
    for (size_t d = 1; d <= w->depth && o + 1 < w->bad_len; d++) {
        int r;
        size_t room = w->bad_len - o;
        if (!w->key[d])
            r = snprintf(w->bad + o, room, "[%zu]", w->klen[d]);
        else if (all_of(w->key[d], w->klen[d], 64, true, "_-"))
            r = snprintf(w->bad + o, room, "%s%.*s", o ? "." : "", (int)w->klen[d], w->key[d]);
        else
            r = snprintf(w->bad + o, room, "%s?", o ? "." : "");
        if (r < 0)
            break;
        o += (size_t)r < room ? (size_t)r : room - 1;
    }
    return SW_EINVAL;
}

static int walk_string(struct walk *w, json_t *v)
{
    const struct walk_fns *fns = w->fns;
    int n = w->node[w->depth];
    const struct field *f = n < 0 ? NULL : pnodes[n].f;
    const char *s = json_string_value(v);
    size_t len = json_string_length(v);
    if (v == w->part_text)
        return SW_OK;
    switch (f ? f->kind : K_NONE) {
    case K_SKIP:
    case K_IDENT:
        if (!gram_ok(f->gram, f->words, s, len)) {
            if (!w->lenient)
                return fail_at(w);
            break;      /* scanned as text */
        }
        if (f->kind == K_SKIP || !fns->ident)
            return SW_OK;
        {
            int rc = fns->ident(w->ud, s, len);
            return rc == SW_EINVAL ? fail_at(w) : rc;
        }
    case K_JSON:
        return fns->text ? fns->text(w->ud, v, 1) : SW_OK;
    case K_BIN:
        return fns->binary ? fns->binary(w->ud, v) : SW_OK;
    case K_IMG:
        if (is_data_url(s, len, false))
            return fns->binary ? fns->binary(w->ud, v) : SW_OK;
        break;
    default:
        break;
    }
    /* Anywhere else a base64 data: URL is binary (counted) and still read
     * as text: a text that looks like one cannot hide from the scan. */
    if (is_data_url(s, len, true) && fns->binary) {
        int rc = fns->binary(w->ud, v);
        if (rc)
            return rc;
    }
    return fns->text ? fns->text(w->ud, v, 0) : SW_OK;
}

/* A JSON number is text too: a card or phone number can be written as one.
 * Integers are exact; a real is scanned as the digits it holds: an integral
 * one as its digits alone (what a reader of "4929531180662219.0" sees), any
 * other in the shortest of "%.15g" and "%.17g" that reads back as it. A real of magnitude 2^53 or more, or not
 * finite, no longer holds the digits the client wrote (an integer beyond
 * int64 is already refused by the parser): fail closed. The number is
 * scanned after the end of its nearest key ("bsn: 111222333"), the context
 * that the detectors of bare digit runs need, as a text would give it. */
#define NUMBER_KEY_CONTEXT 48

/* Whether d is the double of a decimal of at most 6 significant digits
 * (0.2, 1024, 0.75): r / 10^k is the correctly rounded quotient, the same
 * double strtod gives for that decimal. */
static bool short_real(double d)
{
    double p = 1;
    for (int k = 0; k <= 6; k++, p *= 10) {
        double x = d * p, r = nearbyint(x);
        if (fabs(x) >= 1e6)
            return false;
        if (r / p == d)
            return true;
    }
    return false;
}

static int format_int(char *out, size_t room, json_int_t v)
{
    char b[24];
    size_t n = 0;
    unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
    do
        b[n++] = (char)('0' + u % 10);
    while ((u /= 10));
    if (v < 0)
        b[n++] = '-';
    if (n >= room)
        return -1;
    for (size_t i = 0; i < n; i++)
        out[i] = b[n - 1 - i];
    out[n] = 0;
    return (int)n;
}

static int walk_number(struct walk *w, json_t *v, json_t **repl)
{
    char t[NUMBER_KEY_CONTEXT + 2 + 64];
    size_t ctx = 0;
    int r;
    double d = json_is_real(v) ? json_real_value(v) : 0;
    if (json_is_real(v) && (!isfinite(d) || fabs(d) >= 9007199254740992.0))
        return fail_at(w);
    /* fewer than 7 digits: no built-in type (number_needs_no_scan) */
    if (w->short_clean && (json_is_integer(v) ? json_integer_value(v) > -1000000 &&
                                                    json_integer_value(v) < 1000000
                                              : short_real(d)))
        return SW_OK;
    for (size_t k = w->depth; k > 0; k--)
        if (w->key[k]) {
            size_t kl = w->klen[k] < NUMBER_KEY_CONTEXT ? w->klen[k] : NUMBER_KEY_CONTEXT;
            memcpy(t, w->key[k] + w->klen[k] - kl, kl);
            memcpy(t + kl, ": ", 2);
            ctx = kl + 2;
            break;
        }
    char *n = t + ctx;
    size_t room = sizeof t - ctx;
    if (json_is_integer(v)) {
        r = format_int(n, room, json_integer_value(v));
    } else if (d == floor(d)) {
        r = snprintf(n, room, "%.0f", d);
    } else {
        /* the digits the client wrote: the shortest of 15 or 17 that reads
         * back as the same double (the rest of the 17 that jansson writes is
         * the binary fraction's noise) */
        r = snprintf(n, room, "%.15g", d);
        if (r > 0 && (size_t)r < room && strtod(n, NULL) != d)
            r = snprintf(n, room, "%.17g", d);
    }
    if (r <= 0 || (size_t)r >= room)
        return SW_EINVAL;
    /* A phone number as an integer has lost its '+': under a phone-named
     * key, 11 to 15 digits (E.164 with the country code) are read with it. */
    if (json_is_integer(v) && r >= 11 && r <= 15 && n[0] != '-' && (size_t)r + 1 < room &&
        sw_pii_phone_key(t, ctx)) {
        memmove(n + 1, n, (size_t)r + 1);
        n[0] = '+';
        r++;
    }
    return w->fns->number ? w->fns->number(w->ud, t, ctx + (size_t)r, ctx, repl) : SW_OK;
}

/* A text part: {"type": "text", "text": "..."} (OpenAI content parts and
 * Anthropic text blocks have the same shape; the Responses API's parts are
 * of type "input_text" or "output_text"). */
static json_t *part_text(const json_t *el)
{
    /* the type first: a message or an item (most of what is asked) has none
     * or another, and its text is not looked up */
    json_t *type = json_object_get(el, "type");
    if (!json_is_string(type))
        return NULL;
    const char *t = json_string_value(type);
    size_t n = json_string_length(type);
    if (!((n == 4 && !memcmp(t, "text", 4)) || (n == 10 && !memcmp(t, "input_text", 10)) ||
          (n == 11 && !memcmp(t, "output_text", 11))))
        return NULL;
    json_t *text = json_object_get(el, "text");
    return json_is_string(text) ? text : NULL;
}

static int walk_value(struct walk *w, json_t *v, json_t **repl);
static int walk_element(struct walk *w, json_t *el, json_t **repl);

static int walk_object(struct walk *w, json_t *v)
{
    const char *key;
    size_t klen;
    json_t *val, *bin = NULL;
    int rc;
    /* An Anthropic base64 source (image and document blocks, at any depth):
     * its data is binary. */
    if (w->messages && w->depth && w->key[w->depth] && w->klen[w->depth] == 6 &&
        !memcmp(w->key[w->depth], "source", 6)) {
        json_t *type = json_object_get(v, "type");
        if (json_is_string(type) && !strcmp(json_string_value(type), "base64"))
            bin = json_object_get(v, "data");
    }
    json_object_keylen_foreach(v, key, klen, val) {
        json_t *repl = NULL;
        if (w->fns->key && (rc = w->fns->key(w->ud, key, klen)))
            return rc;
        descend(w, key, klen);
        if (val == bin && json_is_string(val))
            rc = w->fns->binary ? w->fns->binary(w->ud, val) : SW_OK;
        else
            rc = walk_value(w, val, &repl);
        w->depth--;
        if (rc)
            return rc;
        if (repl && json_object_setn_new_nocheck(v, key, klen, repl))
            return SW_ENOMEM;
    }
    return SW_OK;
}

/* The context of the elements of a top-level array whose elements' path
 * node is node (walk_fns.element). */
static uint64_t element_ctx(const struct walk *w, int node)
{
    return (uint64_t)(uint32_t)node << 2 | (uint64_t)w->lenient << 1 | w->messages;
}

static int walk_array(struct walk *w, json_t *v)
{
    size_t n = json_array_size(v);
    /* a top-level array's elements with a known verdict, from `from` on:
     * never a text part (no verdict is kept for one), so never in a run */
    bool ask = w->depth == 1 && w->fns->known;
    uint64_t known = 0, ctx = 0;
    size_t from = 0;
    if (ask) {
        ctx = element_ctx(w, w->node[1] < 0 ? -1 : pnode_child(w->node[1], NULL, 0));
        known = w->fns->known(w->ud, v, 0, ctx);
    }
    int rc;
    for (size_t i = 0; i < n;) {
        if (ask && i - from >= 64) {
            from = i;
            known = w->fns->known(w->ud, v, from, ctx);
        }
        if (known >> (i - from) & 1) {
            i++;
            continue;
        }
        /* A run of adjacent text parts is one text: a value split across
         * two parts is still found. */
        size_t j = i;
        while (j < n && part_text(json_array_get(v, j)))
            j++;
        size_t to = j > i + 1 ? j : i + 1;
        if (j > i + 1 && w->fns->parts && (rc = w->fns->parts(w->ud, v, i, j)))
            return rc;
        for (size_t k = i; k < to; k++) {
            json_t *repl = NULL, *el = json_array_get(v, k);
            w->part_text = j > i + 1 ? part_text(el) : NULL;
            w->lone_part = j == i + 1;
            descend(w, NULL, k);
            rc = walk_element(w, el, &repl);
            w->depth--;
            w->part_text = NULL;
            w->lone_part = false;
            if (rc)
                return rc;
            if (repl && json_array_set_new(v, k, repl))
                return SW_ENOMEM;
        }
        i = to;
    }
    return SW_OK;
}

static int walk_value(struct walk *w, json_t *v, json_t **repl)
{
    if (json_is_string(v))
        return walk_string(w, v);
    if (json_is_number(v))
        return walk_number(w, v, repl);
    if (!json_is_object(v) && !json_is_array(v))
        return SW_OK;
    if (w->depth >= WALK_MAX_DEPTH)
        return SW_ETOOBIG;
    /* the part's own "text" is skipped only directly under the part */
    const json_t *pt = w->part_text;
    if (json_is_array(v))
        w->part_text = NULL;
    int rc = json_is_object(v) ? walk_object(w, v) : walk_array(w, v);
    w->part_text = pt;
    return rc;
}

/* An array's element; one of a top-level array as a whole through
 * fns->element when there is one. */
static int walk_element(struct walk *w, json_t *el, json_t **repl)
{
    if (w->depth != 2 || !w->fns->element || w->part_text || w->lone_part ||
        (!json_is_object(el) && !json_is_array(el)))
        return walk_value(w, el, repl);
    uint64_t ctx = element_ctx(w, w->node[2]);
    int rc = w->fns->element(w->ud, el, ctx, false);
    if (rc)
        return rc;
    rc = walk_value(w, el, repl);
    return rc || *repl ? rc : w->fns->element(w->ud, el, ctx, true);
}

static int walk_body(const struct sw_pii_engine *e, enum sw_pii_surface s, bool lenient,
                     json_t *body, const struct walk_fns *fns, void *ud, char *bad, size_t bad_len)
{
    /* on the stack (about 6 KB; only the root's slots are set: a level's are
     * written before they are read): a heap block of this size would take
     * glibc's slow path on every request */
    struct walk w;
    pthread_once(&pnodes_once, pnodes_init);
    if (bad && bad_len)
        bad[0] = 0;
    if ((unsigned)s >= N_SURFACES || !json_is_object(body))
        return SW_EINVAL;
    w.fns = fns;
    w.ud = ud;
    w.lenient = lenient;
    w.messages = s == SW_PII_SURFACE_MESSAGES;
    w.short_clean = sw_pii_type_count(e) == SW_PII_CUSTOM_BASE;
    w.bad = bad;
    w.bad_len = bad_len;
    w.depth = 0;
    w.part_text = NULL;
    w.lone_part = false;
    w.node[0] = roots[s];
    w.key[0] = NULL;
    w.klen[0] = 0;
    return walk_object(&w, body);
}

/* ---- Scanning ---- */

struct req_ctx {
    const struct sw_pii_engine *e;
    struct sw_pii_map *m;
    struct sw_pii_counts *counts;
    struct sw_pii_memo *memo;   /* scans: NULL, or texts' verdicts recorded (replay false)
                                 * or replayed (replay true); see memo.h */
    bool replay;
    struct sw_pii_counts before;    /* the counts when the element being walked began */
    struct sw_buf buf;
    struct sw_buf joined;
    struct sw_buf joined2;      /* the same run with RUN_SEP between the parts */
};

static void wipe(struct sw_buf *b)
{
    if (b->ptr)
        explicit_bzero(b->ptr, b->cap);
    sw_buf_free(b);
}

static int on_count_span(void *ud, const struct sw_pii_span *sp)
{
    struct sw_pii_counts *c = ud;
    if (sp->type == SW_PII_ALLOWED)
        c->allowed++;
    else if (sp->type >= 0 && sp->type < SW_PII_MAX_TYPES) {
        c->n[sp->type]++;
        c->total++;
    }
    return SW_OK;
}

/* A span counted, and kept in the memo for the text being recorded. */
struct memo_rec {
    struct sw_pii_counts *counts;
    struct sw_pii_memo *memo;
    bool lost;                  /* a span could not be kept: the text is not recorded */
};

static int on_memo_span(void *ud, const struct sw_pii_span *sp)
{
    struct memo_rec *r = ud;
    if (!r->lost && !sw_pii_memo_span(r->memo, sp))
        r->lost = true;
    return on_count_span(r->counts, sp);
}

static int scan_field(void *ud, json_t *str, int json_text)
{
    struct req_ctx *c = ud;
    int (*scan_text)(const struct sw_pii_engine *, const char *, size_t, sw_pii_on_span,
                     void *) = json_text ? sw_pii_scan_json_text : sw_pii_scan_text;
    if (c->memo && c->replay) {
        const struct sw_pii_memo_ent *me = sw_pii_memo_get(c->memo, str, json_text);
        if (me) {
            for (uint32_t k = 0; k < me->n; k++)
                on_count_span(c->counts, &c->memo->sp[me->first + k]);
            return SW_OK;
        }
    } else if (c->memo && !c->memo->full) {
        struct memo_rec r = {c->counts, c->memo, false};
        size_t first = c->memo->n_sp;
        int rc = scan_text(c->e, json_string_value(str), json_string_length(str), on_memo_span,
                           &r);
        if (!rc && !r.lost)
            sw_pii_memo_put(c->memo, str, json_text, first);
        return rc;
    }
    return scan_text(c->e, json_string_value(str), json_string_length(str), on_count_span,
                     c->counts);
}

/* The run's texts joined, with nothing between them (a value split across
 * parts is whole again), into c->joined; off (n + 1 entries, may be NULL)
 * gets each part's start. */
static int join_parts(struct req_ctx *c, json_t *arr, size_t from, size_t to, size_t *off)
{
    sw_buf_reset(&c->joined);
    for (size_t i = from; i < to; i++) {
        json_t *t = part_text(json_array_get(arr, i));
        if (off)
            off[i - from] = c->joined.len;
        int rc = sw_buf_append(&c->joined, json_string_value(t), json_string_length(t));
        if (rc)
            return rc;
    }
    if (off)
        off[to - from] = c->joined.len;
    return SW_OK;
}

struct span_list {
    struct sw_pii_span *v;
    size_t n, cap;
};

static int on_collect_span(void *ud, const struct sw_pii_span *sp)
{
    struct span_list *l = ud;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        struct sw_pii_span *v = realloc(l->v, cap * sizeof *v);
        if (!v)
            return SW_ENOMEM;
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = *sp;
    return SW_OK;
}

static int by_start(const void *a, const void *b)
{
    const struct sw_pii_span *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

/* Between the parts of a run read one part at a time: a blank line, which
 * ends every value (a number takes at most one line break), so each part
 * keeps its own edges ("ref 1." then "0049 152 176 9604" is not one number). */
#define RUN_SEP "\n\n"
#define RUN_SEP_LEN (sizeof RUN_SEP - 1)

/* Where byte pos of the run joined with RUN_SEP between parts is in the run
 * joined with nothing: off[] the parts' starts there (n + 1 entries); a
 * separator maps to the end of its part (*sep set). */
static size_t unsep(const size_t *off, size_t n, size_t pos, bool *sep)
{
    size_t lo = 0, hi = n;      /* the part: largest i with off[i] + i * RUN_SEP_LEN <= pos */
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if (off[mid] + mid * RUN_SEP_LEN <= pos)
            lo = mid;
        else
            hi = mid;
    }
    size_t local = pos - (off[lo] + lo * RUN_SEP_LEN);
    *sep = local >= off[lo + 1] - off[lo];
    return *sep ? off[lo + 1] : off[lo] + local;
}

/* Where the pair reading starts part i's segment: segment j is part j,
 * part j + 1 and RUN_SEP (off[0] is 0). */
static size_t pair_base(const size_t *off, size_t i)
{
    return off[i] + (off[i + 1] - off[1]) + i * RUN_SEP_LEN;
}

/* The run read two neighbouring parts at a time, each pair apart from the
 * others: a value split across two parts whose neighbours touch it ("04094"
 * and "57849" between "Records:" and "Please ...") is whole with its own
 * edges there. Each part is read twice: linear. Spans are appended to l in
 * the coordinates of the run joined with nothing. */
static int pair_spans(struct req_ctx *c, size_t n, const size_t *off, struct span_list *l)
{
    int rc;
    sw_buf_reset(&c->joined2);
    for (size_t i = 0; i + 1 < n; i++) {
        const char *t = c->joined.ptr ? c->joined.ptr : "";
        if ((rc = sw_buf_append(&c->joined2, t + off[i], off[i + 2] - off[i])) ||
            (rc = sw_buf_append(&c->joined2, RUN_SEP, RUN_SEP_LEN)))
            return rc;
    }
    size_t first = l->n;
    if ((rc = sw_pii_scan_text(c->e, c->joined2.ptr ? c->joined2.ptr : "", c->joined2.len,
                               on_collect_span, l)))
        return rc;
    for (size_t k = first; k < l->n; k++) {
        size_t lo = 0, hi = n - 1;  /* the segment: largest i with pair_base(i) <= start */
        while (hi - lo > 1) {
            size_t mid = (lo + hi) / 2;
            if (pair_base(off, mid) <= l->v[k].start)
                lo = mid;
            else
                hi = mid;
        }
        size_t local = l->v[k].start - pair_base(off, lo), seg = off[lo + 2] - off[lo];
        size_t s0 = off[lo] + (local < seg ? local : seg);
        size_t e0 = off[lo] + (local + l->v[k].len < seg ? local + l->v[k].len : seg);
        l->v[k].start = s0;
        l->v[k].len = e0 > s0 ? e0 - s0 : 0;
    }
    return SW_OK;
}

/* The entities of a run of text parts, in the coordinates of the run joined
 * with nothing between the parts (c->joined, off[] the parts' starts, n + 1
 * entries): the union of what is found in that text (a value split across
 * two parts is whole again), in the parts read one at a time (a value at a
 * part's edge keeps its boundary: "4111 1111 1111 1111" then "and ..." is
 * not one word) and in neighbouring pairs (pair_spans). Sorted,
 * overlaps merged. */
static int run_spans(struct req_ctx *c, json_t *arr, size_t from, size_t to, size_t *off,
                     struct span_list *l)
{
    size_t n = to - from;
    int rc;
    sw_buf_reset(&c->joined);
    sw_buf_reset(&c->joined2);
    l->n = 0;
    for (size_t i = 0; i < n; i++) {
        json_t *t = part_text(json_array_get(arr, from + i));
        off[i] = c->joined.len;
        if ((rc = sw_buf_append(&c->joined, json_string_value(t), json_string_length(t))) ||
            (i && (rc = sw_buf_append(&c->joined2, RUN_SEP, RUN_SEP_LEN))) ||
            (rc = sw_buf_append(&c->joined2, json_string_value(t), json_string_length(t))))
            return rc;
    }
    off[n] = c->joined.len;
    if ((rc = sw_pii_scan_text(c->e, c->joined.ptr ? c->joined.ptr : "", c->joined.len,
                               on_collect_span, l)))
        return rc;
    size_t first = l->n;
    if ((rc = sw_pii_scan_text(c->e, c->joined2.ptr ? c->joined2.ptr : "", c->joined2.len,
                               on_collect_span, l)))
        return rc;
    for (size_t k = first; k < l->n; k++) {
        bool sep;
        size_t s0 = unsep(off, n, l->v[k].start, &sep);
        size_t e0 = unsep(off, n, l->v[k].start + l->v[k].len - 1, &sep);
        if (!sep)
            e0++;
        l->v[k].start = s0;
        l->v[k].len = e0 > s0 ? e0 - s0 : 0;
    }
    if (n >= 3 && (rc = pair_spans(c, n, off, l)))
        return rc;
    if (l->n > 1)
        qsort(l->v, l->n, sizeof *l->v, by_start);
    size_t w = 0;
    for (size_t k = 0; k < l->n; k++) {
        if (!l->v[k].len)
            continue;
        if (w && l->v[k].start < l->v[w - 1].start + l->v[w - 1].len) {
            struct sw_pii_span *m = &l->v[w - 1];
            size_t e = l->v[k].start + l->v[k].len, pe = m->start + m->len;
            /* known-safe only as the same value in every reading: a union
             * with anything else is an entity */
            if (m->type == SW_PII_ALLOWED && (l->v[k].type != SW_PII_ALLOWED ||
                                              l->v[k].start != m->start || e != pe))
                m->type = l->v[k].type != SW_PII_ALLOWED ? l->v[k].type : SW_PII_EMAIL;
            else if (l->v[k].type == SW_PII_ALLOWED && (l->v[k].start != m->start || e != pe) &&
                     m->type == SW_PII_ALLOWED)
                m->type = SW_PII_EMAIL;
            if (e > pe)
                m->len = e - m->start;
            continue;
        }
        l->v[w++] = l->v[k];
    }
    l->n = w;
    return SW_OK;
}

static int scan_parts(void *ud, json_t *arr, size_t from, size_t to)
{
    struct req_ctx *c = ud;
    struct span_list l = {0};
    size_t *off = malloc((to - from + 1) * sizeof *off);
    int rc = off ? run_spans(c, arr, from, to, off, &l) : SW_ENOMEM;
    for (size_t k = 0; !rc && k < l.n; k++)
        on_count_span(c->counts, &l.v[k]);
    free(off);
    free(l.v);
    return rc;
}

/* True when no built-in type can match the text: only lower-case ASCII
 * letters and '_' ("max_tokens", "content"). Every built-in needs a digit,
 * an upper-case letter, or one of "@:-+./ " (secret tokens with a lower-case
 * prefix, "sk_live_", "ghp_", "hf_", need digits or mixed case in their body).
 * Custom types can match anything, so an engine with any is asked. Most
 * object keys are such words, and a scan's fixed cost is most of a short
 * text's; test_request_plain_keys checks this premise against the engine. */
static bool needs_no_scan(const struct sw_pii_engine *e, const char *t, size_t len)
{
    if (sw_pii_type_count(e) != SW_PII_CUSTOM_BASE)
        return false;
    for (size_t i = 0; i < len; i++)
        if (!((t[i] >= 'a' && t[i] <= 'z') || t[i] == '_'))
            return false;
    return true;
}

/* The same for a number: no built-in type is a number of fewer than 7
 * digits (the shortest, a national phone number, has more). */
static bool number_needs_no_scan(const struct sw_pii_engine *e, const char *t, size_t len)
{
    if (sw_pii_type_count(e) != SW_PII_CUSTOM_BASE)
        return false;
    size_t digits = 0;
    for (size_t i = 0; i < len; i++)
        digits += t[i] >= '0' && t[i] <= '9';
    return digits < 7;
}

static int scan_key(void *ud, const char *key, size_t len)
{
    struct req_ctx *c = ud;
    if (needs_no_scan(c->e, key, len))
        return SW_OK;
    return sw_pii_scan_text(c->e, key, len, on_count_span, c->counts);
}

/* Counts the entities of t that reach its number part t[ctx..len). */
struct number_ctx {
    struct sw_pii_counts *counts;
    size_t ctx;
    int type;                   /* the first entity's type, -1 none */
};

static int on_number_span(void *ud, const struct sw_pii_span *sp)
{
    struct number_ctx *nc = ud;
    if (sp->start + sp->len <= nc->ctx)
        return SW_OK;
    if (nc->type < 0)
        nc->type = sp->type;
    return nc->counts ? on_count_span(nc->counts, sp) : SW_OK;
}

static int scan_number(void *ud, const char *t, size_t len, size_t ctx, json_t **repl)
{
    struct req_ctx *c = ud;
    struct number_ctx nc = {c->counts, ctx, -1};
    (void)repl;
    if (number_needs_no_scan(c->e, t + ctx, len - ctx))
        return SW_OK;
    return sw_pii_scan_text(c->e, t, len, on_number_span, &nc);
}

static int count_binary(void *ud, json_t *str)
{
    struct req_ctx *c = ud;
    (void)str;
    c->counts->binary++;
    return SW_OK;
}

/* The verdict on an element the parse memo holds (common/jmemo.h), kept
 * with it: the counts its walk added, for this engine's generation (which
 * anything that changes what it detects renews) and the walk's context;
 * `none` when they are all 0 (most messages: they need not be read). */
struct element_note {
    uint64_t gen, ctx;
    bool none;
    struct sw_pii_counts counts;
};
_Static_assert(sizeof(struct sw_pii_counts) % sizeof(uint32_t) == 0, "counts are words");

#define COUNT_WORDS (sizeof(struct sw_pii_counts) / sizeof(uint32_t))

struct known {
    struct req_ctx *c;
    uint64_t gen, ctx;
};

static bool add_verdict(void *ud, size_t i, const void *note)
{
    const struct known *k = ud;
    const struct element_note *n = note;
    (void)i;
    if (n->gen != k->gen || n->ctx != k->ctx)
        return false;
    if (n->none)
        return true;
    uint32_t *to = (uint32_t *)k->c->counts;
    const uint32_t *add = (const uint32_t *)&n->counts;
    for (size_t w = 0; w < COUNT_WORDS; w++)
        to[w] += add[w];
    return true;
}

static uint64_t scan_known(void *ud, const json_t *arr, size_t from, uint64_t ctx)
{
    struct req_ctx *c = ud;
    struct known k = {c, sw_pii_engine_gen(c->e), ctx};
    return sw_jmemo_note_each(arr, from, k.gen ^ ctx, sizeof(struct element_note), add_verdict, &k);
}

static int scan_element(void *ud, const json_t *el, uint64_t ctx, bool after)
{
    struct req_ctx *c = ud;
    if (!after) {
        c->before = *c->counts;
        return SW_OK;
    }
    uint64_t gen = sw_pii_engine_gen(c->e);
    struct element_note n = {.gen = gen, .ctx = ctx};
    const uint32_t *to = (const uint32_t *)c->counts, *was = (const uint32_t *)&c->before;
    uint32_t *d = (uint32_t *)&n.counts, any = 0;
    for (size_t i = 0; i < COUNT_WORDS; i++)
        any |= d[i] = to[i] - was[i];
    n.none = !any;
    sw_jmemo_note_put(el, gen ^ ctx, &n, sizeof n);
    return SW_OK;
}

static int scan_body(const struct sw_pii_engine *e, enum sw_pii_surface s, bool lenient,
                     const json_t *body, struct sw_pii_counts *counts, char *bad, size_t bad_len,
                     struct sw_pii_memo *memo, bool replay)
{
    struct req_ctx c = {.e = e, .counts = counts, .memo = memo, .replay = replay};
    memset(counts, 0, sizeof *counts);
    sw_buf_init(&c.joined, TEXT_MAX);
    sw_buf_init(&c.joined2, TEXT_MAX);
    /* An element with a verdict is not walked, in a pair's walks too: the
     * first records the spans of the texts it reads, and the second reads
     * again (with the memo's verdict or a scan of its own) only the texts
     * of the translation's elements without one; a translation kept with
     * its element (sw_jmemo_derived_put) has verdicts of its own. */
    static const struct walk_fns fns = {scan_field,  scan_parts, count_binary, scan_key,
                                        scan_number, scan_key,   scan_known,   scan_element};
    int rc = walk_body(e, s, lenient, (json_t *)body, &fns, &c, bad, bad_len);
    wipe(&c.joined);
    wipe(&c.joined2);
    return rc;
}

int sw_pii_scan_body(const struct sw_pii_engine *e, enum sw_pii_surface s, const json_t *body,
                     struct sw_pii_counts *counts, char *bad, size_t bad_len)
{
    return scan_body(e, s, false, body, counts, bad, bad_len, NULL, false);
}

int sw_pii_scan_built(const struct sw_pii_engine *e, enum sw_pii_surface s, const json_t *body,
                      struct sw_pii_counts *counts)
{
    return scan_body(e, s, true, body, counts, NULL, 0, NULL, false);
}

int sw_pii_scan_pair(const struct sw_pii_engine *e, enum sw_pii_surface s, const json_t *body,
                     struct sw_pii_counts *counts, char *bad, size_t bad_len,
                     enum sw_pii_surface built_s, const json_t *built,
                     struct sw_pii_counts *built_counts, int *built_rc)
{
    struct sw_pii_memo memo;
    sw_pii_memo_init(&memo);
    int rc = scan_body(e, s, false, body, counts, bad, bad_len, &memo, false);
    *built_rc = SW_OK;
    if (!rc)
        *built_rc = scan_body(e, built_s, true, built, built_counts, NULL, 0, &memo, true);
    sw_pii_memo_free(&memo);
    return rc;
}

int sw_pii_scan_request(const struct sw_pii_engine *e, const json_t *body,
                        struct sw_pii_counts *counts)
{
    return sw_pii_scan_body(e, SW_PII_SURFACE_CHAT, body, counts, NULL, 0);
}

/* ---- Masking ---- */

static int reserve_text(struct req_ctx *c, const char *t, size_t len)
{
    for (const char *b = t; (b = memchr(b, '[', (size_t)(t + len - b)));) {
        size_t pl = sw_pii_ph_len_at(t, len, (size_t)(b - t));
        if (pl) {
            int rc = sw_pii_map_reserve(c->m, b, pl);
            if (rc)
                return rc;
        }
        b++;
    }
    return SW_OK;
}

static int reserve_field(void *ud, json_t *str, int json_text)
{
    (void)json_text;
    return reserve_text(ud, json_string_value(str), json_string_length(str));
}

static int reserve_parts(void *ud, json_t *arr, size_t from, size_t to)
{
    struct req_ctx *c = ud;
    int rc = join_parts(c, arr, from, to, NULL);
    return rc ? rc : reserve_text(c, c->joined.ptr ? c->joined.ptr : "", c->joined.len);
}

/* A key, an id or a name cannot be masked: renaming it changes what the
 * body means (a tool schema's property names, which tool result answers
 * which call). One holding an entity fails the whole mask, so the request is
 * never sent where masking was needed. */
static int check_key(void *ud, const char *key, size_t len)
{
    struct req_ctx *c = ud;
    struct sw_pii_counts n = {0};
    if (needs_no_scan(c->e, key, len))
        return SW_OK;
    int rc = sw_pii_scan_text(c->e, key, len, on_count_span, &n);
    if (rc)
        return rc;
    return n.total ? SW_EINVAL : SW_OK;
}

static int mask_field(void *ud, json_t *str, int json_text)
{
    struct req_ctx *c = ud;
    const char *t = json_string_value(str);
    size_t len = json_string_length(str);
    uint32_t before = c->counts->total;
    sw_buf_reset(&c->buf);
    int rc = (json_text ? sw_pii_mask_json_text : sw_pii_mask_text)(c->e, c->m, t, len, &c->buf,
                                                                     c->counts);
    if (rc)
        return rc;
    if (c->counts->total == before)
        return SW_OK;
    /* The masked text must scan clean: masking can change what surrounds a
     * value (a number right after a masked one is no longer "a later group of
     * a longer number"), and what the scanner finds only then was never
     * masked. It is masked in further passes (same map; placeholders are
     * never detected); a text still not clean after them fails the mask
     * rather than go out with it. */
    for (int pass = 0;; pass++) {
        struct sw_pii_counts again = {0};
        /* scanned as it will be scanned: JSON text (arguments) as JSON text */
        if ((rc = (json_text ? sw_pii_scan_json_text : sw_pii_scan_text)(
                 c->e, c->buf.ptr ? c->buf.ptr : "", c->buf.len, on_count_span, &again)))
            return rc;
        if (!again.total)
            break;
        if (pass == 3)
            return SW_EINVAL;
        struct sw_buf next;
        sw_buf_init(&next, c->buf.max);
        uint32_t allowed = c->counts->allowed;  /* counted in the first pass */
        rc = (json_text ? sw_pii_mask_json_text : sw_pii_mask_text)(
            c->e, c->m, c->buf.ptr ? c->buf.ptr : "", c->buf.len, &next, c->counts);
        c->counts->allowed = allowed;
        if (rc) {
            wipe(&next);
            return rc;
        }
        wipe(&c->buf);
        c->buf = next;
    }
    if (json_text) {
        /* Arguments that were valid JSON must stay valid JSON. */
        json_t *a = json_loadb(t, len, JSON_DECODE_ANY, NULL);
        if (a) {
            json_decref(a);
            json_t *b = json_loadb(c->buf.ptr ? c->buf.ptr : "", c->buf.len, JSON_DECODE_ANY, NULL);
            if (!b)
                return SW_EINVAL;
            json_decref(b);
        }
    }
    if (json_string_setn(str, c->buf.ptr ? c->buf.ptr : "", c->buf.len))
        return SW_EINVAL;       /* not UTF-8 (a custom regex split a character) */
    return SW_OK;
}

/* A number holding an entity becomes a string: the placeholder of the
 * whole number ("[PHONE_1]"), which the answer's unmasking restores as its
 * digits. */
static int mask_number(void *ud, const char *t, size_t len, size_t ctx, json_t **repl)
{
    struct req_ctx *c = ud;
    struct number_ctx nc = {c->counts, ctx, -1};
    const char *ph;
    size_t phlen;
    if (number_needs_no_scan(c->e, t + ctx, len - ctx))
        return SW_OK;
    int rc = sw_pii_scan_text(c->e, t, len, on_number_span, &nc);
    if (rc || nc.type < 0)
        return rc;
    if ((rc = sw_pii_map_put(c->m, nc.type, sw_pii_type_tag(c->e, nc.type), t + ctx, len - ctx,
                             &ph, &phlen)))
        return rc;
    if (!(*repl = json_stringn_nocheck(ph, phlen)))
        return SW_ENOMEM;
    return SW_OK;
}

/* Masks parts [from, to) of arr as one text: each entity of the joined
 * text becomes its placeholder in the part where it starts, and the rest of
 * it is cut from every later part it reaches, so no part keeps a piece the
 * cloud could put together again. Repeated, as for one string, until the
 * joined text scans clean (at most 4 passes, each linear). */
/* Takes the known-safe spans out of l (they stay as they are); returns how many. */
static uint32_t drop_allowed(struct span_list *l)
{
    size_t w = 0;
    for (size_t k = 0; k < l->n; k++)
        if (l->v[k].type != SW_PII_ALLOWED)
            l->v[w++] = l->v[k];
    uint32_t dropped = (uint32_t)(l->n - w);
    l->n = w;
    return dropped;
}

static int mask_parts(void *ud, json_t *arr, size_t from, size_t to)
{
    struct req_ctx *c = ud;
    size_t n = to - from, *off = malloc((n + 1) * sizeof *off);
    struct span_list l = {0};
    int rc = off ? SW_OK : SW_ENOMEM;
    for (int pass = 0; !rc; pass++) {
        if ((rc = run_spans(c, arr, from, to, off, &l)))
            break;
        uint32_t allowed = drop_allowed(&l);
        if (pass == 0)
            c->counts->allowed += allowed;  /* left as they are, found again each pass */
        if (!l.n)
            break;
        if (pass == 3) {
            rc = SW_EINVAL;
            break;
        }
        const char *jt = c->joined.ptr;
        for (size_t k = 0; k < l.n; k++) {
            const char *ph;
            size_t phlen;
            int type = l.v[k].type;
            if ((rc = sw_pii_map_put(c->m, type, sw_pii_type_tag(c->e, type), jt + l.v[k].start,
                                     l.v[k].len, &ph, &phlen)))
                break;
            if (type >= 0 && type < SW_PII_MAX_TYPES) {
                c->counts->n[type]++;
                c->counts->total++;
            }
        }
        size_t k = 0;
        for (size_t p = 0; p < n && !rc; p++) {
            size_t ps = off[p], pe = off[p + 1], pos = ps;
            sw_buf_reset(&c->buf);
            for (; k < l.n && l.v[k].start < pe; k++) {
                size_t s = l.v[k].start, e = s + l.v[k].len;
                if (e <= ps)
                    continue;
                if (s >= ps) {
                    const char *ph;
                    size_t phlen;
                    if ((rc = sw_buf_append(&c->buf, jt + pos, s - pos)) ||
                        (rc = sw_pii_map_put(c->m, l.v[k].type, sw_pii_type_tag(c->e, l.v[k].type),
                                             jt + s, l.v[k].len, &ph, &phlen)) ||
                        (rc = sw_buf_append(&c->buf, ph, phlen)))
                        break;
                }
                pos = e < pe ? e : pe;
                if (e > pe)
                    break;      /* it goes on into the next part */
            }
            if (!rc && !(rc = sw_buf_append(&c->buf, jt + pos, pe - pos)) &&
                json_string_setn(part_text(json_array_get(arr, from + p)),
                                 c->buf.ptr ? c->buf.ptr : "", c->buf.len))
                rc = SW_EINVAL;
        }
    }
    free(off);
    free(l.v);
    return rc;
}

static int mask_body(const struct sw_pii_engine *e, struct sw_pii_map *m, enum sw_pii_surface s,
                     json_t *body, struct sw_pii_counts *counts, char *bad, size_t bad_len)
{
    struct sw_pii_counts local;
    struct req_ctx c = {.e = e, .m = m, .counts = counts ? counts : &local};
    memset(c.counts, 0, sizeof *c.counts);
    if (bad && bad_len)
        bad[0] = 0;
    if (!json_is_object(body) || !m)
        return SW_EINVAL;
    sw_buf_init(&c.buf, TEXT_MAX);
    sw_buf_init(&c.joined, TEXT_MAX);
    sw_buf_init(&c.joined2, TEXT_MAX);
    /* The first pass checks every grammar, reserves placeholder-shaped texts
     * and fails on a key, id or name holding an entity; the second masks.
     * Binary payloads are left as they are (counted): whether they may go at
     * all is the caller's decision (pii.binary_parts). */
    static const struct walk_fns reserve = {reserve_field, reserve_parts, NULL, check_key, NULL,
                                            check_key, NULL, NULL};
    static const struct walk_fns mask = {mask_field, mask_parts, count_binary, NULL, mask_number,
                                         NULL, NULL, NULL};
    int rc = walk_body(e, s, false, body, &reserve, &c, bad, bad_len);
    if (!rc)
        rc = walk_body(e, s, false, body, &mask, &c, bad, bad_len);
    wipe(&c.buf);
    wipe(&c.joined);
    wipe(&c.joined2);
    return rc;
}

int sw_pii_mask_body(const struct sw_pii_engine *e, struct sw_pii_map *m, enum sw_pii_surface s,
                     json_t *body, struct sw_pii_counts *counts, char *bad, size_t bad_len)
{
    return mask_body(e, m, s, body, counts, bad, bad_len);
}

int sw_pii_mask_request(const struct sw_pii_engine *e, struct sw_pii_map *m, json_t *body,
                        struct sw_pii_counts *counts)
{
    return mask_body(e, m, SW_PII_SURFACE_CHAT, body, counts, NULL, 0);
}
