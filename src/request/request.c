#include "request/request.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/buf.h"
#include "common/err.h"
#include "common/jdump.h"
#include "common/jfast.h"
#include "common/jmemo.h"
#include "common/jscan.h"
#include "common/json.h"
#include "common/satmath.h"
#include "common/utf8.h"

/* Validation walks the body once, depth first, in the order a reader of the
 * request would: model, messages (each message in turn), then the optional
 * parameters. The first problem found is the one reported, with the JSON
 * path of the field as `param`, as OpenAI does. While walking it sums the
 * token estimate and notes tools and images. */

#define PATH_MAX_BYTES 128      /* sizeof(struct sw_request_error.param) */
#define QUOTE_MAX_BYTES 40      /* a client's value quoted in a message */

/* The members of one small object, read in one pass: most members the
 * validation asks for are absent, and a jansson look-up hashes the key
 * even then. */
#define MEMBERS_MAX 16
struct members {
    const json_t *obj;          /* the object indexed; NULL: none */
    size_t n;
    struct {
        const char *key;
        size_t len;
        json_t *v;
    } m[MEMBERS_MAX];
};

struct ctx {
    struct sw_request_error *err;
    struct members body, msg;   /* the body's members; the message's being checked */
    long tokens;                /* prompt_tokens_est so far (saturating: never wraps) */
    size_t media_bytes;         /* bytes of the media strings (image url, audio and file data) */
    long media_tokens;          /* what those parts count instead (saturating) */
    bool has_images;
};

/* ---- UTF-8 hygiene for error fields ---- */

/* Copies src into dst[size], truncated on a character boundary, sanitized. */
static void copy_field(char *dst, size_t size, const char *src)
{
    size_t len = src ? strnlen(src, size) : 0;
    if (len >= size)
        len = sw_utf8_trim(src, size - 1);
    if (len)
        memcpy(dst, src, len);
    dst[len] = '\0';
    sw_utf8_sanitize(dst, len);
}

/* ---- Errors ---- */

static void error_vset(struct sw_request_error *e, int status, const char *type,
                       const char *code, const char *param, const char *fmt, va_list ap)
{
    int n;

    e->status = status;
    copy_field(e->type, sizeof(e->type), type);
    copy_field(e->code, sizeof(e->code), code);
    copy_field(e->param, sizeof(e->param), param);
    n = vsnprintf(e->message, sizeof(e->message), fmt, ap);
    if (n < 0) {
        e->message[0] = '\0';
        return;
    }
    size_t len = (size_t)n;
    if (len >= sizeof(e->message)) {
        len = sw_utf8_trim(e->message, sizeof(e->message) - 1);
        e->message[len] = '\0';
    }
    sw_utf8_sanitize(e->message, len);
}

void sw_request_error_set(struct sw_request_error *e, int status, const char *type,
                          const char *code, const char *param, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    error_vset(e, status, type, code, param, fmt, ap);
    va_end(ap);
}

char *sw_request_error_json(const struct sw_request_error *err)
{
    /* Copies make the fields NUL-terminated and valid UTF-8 even if *err
     * was filled by hand, so json_pack only fails when out of memory. */
    struct sw_request_error e;
    json_t *root;
    char *out;

    copy_field(e.type, sizeof(e.type), err->type);
    copy_field(e.code, sizeof(e.code), err->code);
    copy_field(e.param, sizeof(e.param), err->param);
    copy_field(e.message, sizeof(e.message), err->message);
    root = json_pack("{s:{s:s, s:s, s:o, s:o}}", "error",
                     "message", e.message,
                     "type", e.type,
                     "param", e.param[0] ? json_string(e.param) : json_null(),
                     "code", e.code[0] ? json_string(e.code) : json_null());
    if (!root)
        return NULL;
    out = json_dumps(root, JSON_COMPACT);
    json_decref(root);
    return out;
}

static int fail(struct ctx *c, const char *code, const char *param, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int fail(struct ctx *c, const char *code, const char *param, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    error_vset(c->err, 400, "invalid_request_error", code, param, fmt, ap);
    va_end(ap);
    return SW_EINVAL;
}

static int fail_missing(struct ctx *c, const char *path)
{
    return fail(c, "missing_required_parameter", path,
                "Missing required parameter: '%s'.", path);
}

static int fail_type(struct ctx *c, const char *path, const char *expected, const json_t *got)
{
    return fail(c, "invalid_type", path,
                "Invalid type for '%s': expected %s, but got %s instead.",
                path, expected, sw_json_type_name(got));
}

/* A client's string quoted in a message: at most QUOTE_MAX_BYTES, then "...". */
static void quote(char *out, size_t size, const char *s)
{
    size_t len = strlen(s);
    if (len <= QUOTE_MAX_BYTES && len < size) {
        memcpy(out, s, len + 1);
        return;
    }
    len = sw_utf8_trim(s, QUOTE_MAX_BYTES < size - 4 ? QUOTE_MAX_BYTES : size - 4);
    memcpy(out, s, len);
    memcpy(out + len, "...", 4);
}

static int fail_enum(struct ctx *c, const char *path, const char *got, const char *supported)
{
    char q[QUOTE_MAX_BYTES + 4];
    quote(q, sizeof(q), got);
    return fail(c, "invalid_value", path,
                "Invalid value for '%s': '%s'. Supported values are: %s.", path, q, supported);
}

/* path = base + suffix, e.g. "messages[2]" + ".role"; the result is bounded
 * (a metadata key may be long) and only ever used for display. */
/* out = a b c, cut to fit size (never inside a UTF-8 character). Paths
 * are built for every member checked, so no printf here. */
static void join3(char *out, size_t size, const char *a, const char *b, const char *c)
{
    const char *parts[3] = { a, b, c };
    size_t n = 0;
    bool cut = false;

    for (int i = 0; i < 3 && !cut; i++) {
        size_t len = strlen(parts[i]);

        if (len > size - 1 - n) {
            len = size - 1 - n;
            cut = true;
        }
        memcpy(out + n, parts[i], len);
        n += len;
    }
    out[cut ? sw_utf8_trim(out, n) : n] = '\0';
}

/* out = base suffix */
static void join(char *out, size_t size, const char *base, const char *suffix)
{
    join3(out, size, base, suffix, "");
}

/* out = base[i] */
static void join_index(char *out, size_t size, const char *base, size_t i)
{
    char num[24];
    char *p = num + sizeof(num);

    *--p = '\0';
    *--p = ']';
    do
        *--p = (char)('0' + i % 10);
    while ((i /= 10) != 0);
    *--p = '[';
    join3(out, size, base, p, "");
}

/* base, a message's path "messages[index]", written on first use (base[0]
 * is NUL until then): most messages need no path. */
static const char *msg_path(char *base, size_t size, size_t index)
{
    if (!base[0])
        join_index(base, size, "messages", index);
    return base;
}

/* Indexes obj's members into ix when it is an object of at most
 * MEMBERS_MAX of them; otherwise ix indexes nothing. */
static void index_members(struct members *ix, json_t *obj)
{
    ix->obj = NULL;
    ix->n = 0;
    if (!json_is_object(obj) || json_object_size(obj) > MEMBERS_MAX)
        return;
    for (void *it = json_object_iter(obj); it && ix->n < MEMBERS_MAX;
         it = json_object_iter_next(obj, it)) {
        ix->m[ix->n].key = json_object_iter_key(it);
        ix->m[ix->n].len = json_object_iter_key_len(it);
        ix->m[ix->n].v = json_object_iter_value(it);
        ix->n++;
    }
    ix->obj = obj;
}

/* Inlined where it is called, so that a literal key's length is a constant. */
static inline __attribute__((always_inline)) json_t *find_member(const struct members *ix,
                                                                 const char *key)
{
    size_t len = strlen(key);
    for (size_t i = 0; i < ix->n; i++)
        if (ix->m[i].len == len && ix->m[i].key[0] == key[0] && !memcmp(ix->m[i].key, key, len))
            return ix->m[i].v;
    return NULL;
}

/* json_object_get(obj, key), from the index when obj is the body or the
 * message being checked. */
static inline __attribute__((always_inline)) json_t *get(const struct ctx *c, json_t *obj,
                                                         const char *key)
{
    if (obj && obj == c->body.obj)
        return find_member(&c->body, key);
    if (obj && obj == c->msg.obj)
        return find_member(&c->msg, key);
    return json_object_get(obj, key);
}

/* Optional members: absent and null are the same. */
static inline __attribute__((always_inline)) json_t *opt(const struct ctx *c, json_t *obj,
                                                         const char *key)
{
    json_t *v = get(c, obj, key);
    return json_is_null(v) ? NULL : v;
}

static void add_text(struct ctx *c, size_t bytes)
{
    c->tokens = sw_sat_add_long(c->tokens, sw_request_estimate_tokens(bytes));
}

long sw_request_estimate_tokens(size_t text_bytes)
{
    return (long)(text_bytes / 4 + (text_bytes % 4 != 0));      /* <= 2^62: fits */
}

long sw_request_bound_tokens(size_t body_bytes, size_t media_bytes, long media_tokens,
                             size_t n_messages)
{
    size_t text = body_bytes > media_bytes ? body_bytes - media_bytes : 0;
    long t = text > (size_t)LONG_MAX ? LONG_MAX : (long)text;
    long tmpl = n_messages > (size_t)(LONG_MAX / SW_REQUEST_MESSAGE_TOKENS)
                    ? LONG_MAX
                    : (long)n_messages * SW_REQUEST_MESSAGE_TOKENS;
    t = sw_sat_add_long(t, media_tokens > 0 ? media_tokens : 0);
    t = sw_sat_add_long(t, tmpl);
    return sw_sat_add_long(t, SW_REQUEST_PRIMING_TOKENS);
}

/* A required string member of obj; on success *out is it. */
static int need_string(struct ctx *c, json_t *obj, const char *key, const char *base,
                       json_t **out)
{
    json_t *v = get(c, obj, key);

    if (!v || !json_is_string(v)) {     /* the path is made only for the error */
        char path[PATH_MAX_BYTES];
        join3(path, sizeof(path), base, ".", key);
        return v ? fail_type(c, path, "a string", v) : fail_missing(c, path);
    }
    if (out)
        *out = v;
    return SW_OK;
}

/* A required object member of obj. */
static int need_object(struct ctx *c, json_t *obj, const char *key, const char *base,
                       json_t **out)
{
    json_t *v = get(c, obj, key);

    if (!v || !json_is_object(v)) {
        char path[PATH_MAX_BYTES];
        join3(path, sizeof(path), base, ".", key);
        return v ? fail_type(c, path, "an object", v) : fail_missing(c, path);
    }
    *out = v;
    return SW_OK;
}

static int fail_empty_array(struct ctx *c, const char *path)
{
    return fail(c, "invalid_value", path,
                "Invalid '%s': empty array. Expected an array with minimum length 1, "
                "but got an empty array instead.", path);
}

/* ---- Messages ---- */

enum role { ROLE_SYSTEM, ROLE_DEVELOPER, ROLE_USER, ROLE_ASSISTANT, ROLE_TOOL, ROLE_FUNCTION };

static const char *const role_names[] = {
    "system", "developer", "user", "assistant", "tool", "function",
};
#define ROLES_SUPPORTED \
    "'system', 'developer', 'user', 'assistant', 'tool', 'function'"

/* Content part types each role accepts (OpenAI's per-role unions). */
enum part { PART_TEXT = 1, PART_IMAGE_URL = 2, PART_INPUT_AUDIO = 4, PART_FILE = 8,
            PART_REFUSAL = 16 };

static const struct {
    const char *name;
    enum part part;
} part_names[] = {
    { "text", PART_TEXT },
    { "image_url", PART_IMAGE_URL },
    { "input_audio", PART_INPUT_AUDIO },
    { "file", PART_FILE },
    { "refusal", PART_REFUSAL },
};

static unsigned role_parts(enum role r)
{
    switch (r) {
    case ROLE_USER: return PART_TEXT | PART_IMAGE_URL | PART_INPUT_AUDIO | PART_FILE;
    case ROLE_ASSISTANT: return PART_TEXT | PART_REFUSAL;
    default: return PART_TEXT;
    }
}

static const char *role_parts_supported(enum role r)
{
    switch (r) {
    case ROLE_USER: return "'text', 'image_url', 'input_audio', 'file'";
    case ROLE_ASSISTANT: return "'text', 'refusal'";
    default: return "'text'";
    }
}

/* input_audio and file parts: ceil(inline data bytes / 4), at least
 * SW_REQUEST_MEDIA_MIN_TOKENS (a file given by file_id counts the minimum). */
static long media_tokens(const json_t *data)
{
    long t = json_is_string(data) ? sw_request_estimate_tokens(json_string_length(data)) : 0;
    return t > SW_REQUEST_MEDIA_MIN_TOKENS ? t : SW_REQUEST_MEDIA_MIN_TOKENS;
}

/* A media part of `tokens`, whose string `data` (may be NULL) the bound
 * counts as those tokens instead of its bytes. */
static void add_media(struct ctx *c, const json_t *data, long tokens)
{
    c->tokens = sw_sat_add_long(c->tokens, tokens);
    c->media_tokens = sw_sat_add_long(c->media_tokens, tokens);
    if (json_is_string(data))
        c->media_bytes += json_string_length(data);
}

static int check_part(struct ctx *c, enum role role, json_t *part, const char *path)
{
    json_t *type, *v, *obj;
    unsigned kind = 0;
    int err;

    if (!json_is_object(part))
        return fail_type(c, path, "an object", part);
    err = need_string(c, part, "type", path, &type);
    if (err)
        return err;
    for (size_t i = 0; i < sizeof(part_names) / sizeof(part_names[0]); i++)
        if (strcmp(json_string_value(type), part_names[i].name) == 0)
            kind = part_names[i].part;
    if (!(kind & role_parts(role))) {
        char tpath[PATH_MAX_BYTES];
        join(tpath, sizeof(tpath), path, ".type");
        return fail_enum(c, tpath, json_string_value(type), role_parts_supported(role));
    }
    switch ((enum part)kind) {
    case PART_TEXT:
        err = need_string(c, part, "text", path, &v);
        if (err)
            return err;
        add_text(c, json_string_length(v));
        break;
    case PART_REFUSAL:
        err = need_string(c, part, "refusal", path, &v);
        if (err)
            return err;
        add_text(c, json_string_length(v));
        break;
    case PART_IMAGE_URL: {
        char opath[PATH_MAX_BYTES];
        err = need_object(c, part, "image_url", path, &obj);
        if (err)
            return err;
        join(opath, sizeof(opath), path, ".image_url");
        err = need_string(c, obj, "url", opath, &v);
        if (err)
            return err;
        c->has_images = true;
        json_t *detail = json_object_get(obj, "detail");
        add_media(c, v, json_is_string(detail) && !strcmp(json_string_value(detail), "low")
                            ? SW_REQUEST_IMAGE_LOW_TOKENS
                            : SW_REQUEST_IMAGE_TOKENS);
        break;
    }
    case PART_INPUT_AUDIO: {
        char opath[PATH_MAX_BYTES];
        err = need_object(c, part, "input_audio", path, &obj);
        if (err)
            return err;
        join(opath, sizeof(opath), path, ".input_audio");
        err = need_string(c, obj, "data", opath, NULL);
        if (err)
            return err;
        err = need_string(c, obj, "format", opath, NULL);
        if (err)
            return err;
        c->has_images = true;
        v = json_object_get(obj, "data");
        add_media(c, v, media_tokens(v));
        break;
    }
    case PART_FILE:
        err = need_object(c, part, "file", path, &obj);
        if (err)
            return err;
        c->has_images = true;
        v = json_object_get(obj, "file_data");
        add_media(c, v, media_tokens(v));
        break;
    }
    return SW_OK;
}

/* A {name, arguments} function call, as in tool_calls[i].function and the
 * legacy function_call; arguments count toward the estimate. */
static int check_call(struct ctx *c, json_t *fn, const char *path)
{
    json_t *args;
    int err;

    err = need_string(c, fn, "name", path, NULL);
    if (err)
        return err;
    err = need_string(c, fn, "arguments", path, &args);
    if (err)
        return err;
    add_text(c, json_string_length(args));
    return SW_OK;
}

static int check_tool_calls(struct ctx *c, json_t *calls, const char *base)
{
    char path[PATH_MAX_BYTES], cpath[PATH_MAX_BYTES], tpath[PATH_MAX_BYTES];
    json_t *call, *type, *fn;
    size_t i;
    int err;

    join(path, sizeof(path), base, ".tool_calls");
    if (!json_is_array(calls))
        return fail_type(c, path, "an array", calls);
    if (json_array_size(calls) == 0)
        return fail_empty_array(c, path);
    json_array_foreach(calls, i, call) {
        join_index(cpath, sizeof(cpath), path, i);
        if (!json_is_object(call))
            return fail_type(c, cpath, "an object", call);
        err = need_string(c, call, "id", cpath, NULL);
        if (err)
            return err;
        err = need_string(c, call, "type", cpath, &type);
        if (err)
            return err;
        if (strcmp(json_string_value(type), "function") != 0) {
            join(tpath, sizeof(tpath), cpath, ".type");
            return fail_enum(c, tpath, json_string_value(type), "'function'");
        }
        err = need_object(c, call, "function", cpath, &fn);
        if (err)
            return err;
        join(tpath, sizeof(tpath), cpath, ".function");
        err = check_call(c, fn, tpath);
        if (err)
            return err;
    }
    return SW_OK;
}

static int check_message(struct ctx *c, json_t *msg, size_t index)
{
    char base[PATH_MAX_BYTES], path[PATH_MAX_BYTES];
    json_t *role_v, *content, *v;
    enum role role = ROLE_USER;
    bool has_call = false;
    size_t i;
    int err;

    base[0] = '\0';    /* "messages[i]", written when a path needs it (msg_path) */
    if (!json_is_object(msg))
        return fail_type(c, msg_path(base, sizeof(base), index), "an object", msg);
    index_members(&c->msg, msg);

    role_v = get(c, msg, "role");
    if (!json_is_string(role_v))
        return need_string(c, msg, "role", msg_path(base, sizeof(base), index), &role_v);
    for (i = 0; i < sizeof(role_names) / sizeof(role_names[0]); i++)
        if (strcmp(json_string_value(role_v), role_names[i]) == 0)
            break;
    if (i == sizeof(role_names) / sizeof(role_names[0])) {
        join(path, sizeof(path), msg_path(base, sizeof(base), index), ".role");
        return fail_enum(c, path, json_string_value(role_v), ROLES_SUPPORTED);
    }
    role = (enum role)i;

    if (role == ROLE_FUNCTION) {
        err = need_string(c, msg, "name", msg_path(base, sizeof(base), index), NULL);
        if (err)
            return err;
    } else if ((v = opt(c, msg, "name")) && !json_is_string(v)) {
        join(path, sizeof(path), msg_path(base, sizeof(base), index), ".name");
        return fail_type(c, path, "a string", v);
    }
    if (role == ROLE_TOOL) {
        err = need_string(c, msg, "tool_call_id", msg_path(base, sizeof(base), index), NULL);
        if (err)
            return err;
    }
    if (role == ROLE_ASSISTANT) {
        if ((v = opt(c, msg, "tool_calls"))) {
            err = check_tool_calls(c, v, msg_path(base, sizeof(base), index));
            if (err)
                return err;
            has_call = true;
        }
        if ((v = opt(c, msg, "function_call"))) {
            join(path, sizeof(path), msg_path(base, sizeof(base), index), ".function_call");
            if (!json_is_object(v))
                return fail_type(c, path, "an object", v);
            err = check_call(c, v, path);
            if (err)
                return err;
            has_call = true;
        }
        if ((v = opt(c, msg, "audio"))) {
            join(path, sizeof(path), msg_path(base, sizeof(base), index), ".audio");
            if (!json_is_object(v))
                return fail_type(c, path, "an object", v);
            has_call = true;    /* a reference to a previous audio answer */
        }
    }

    content = get(c, msg, "content");
    if (content && json_is_string(content)) {     /* the usual message: no path needed */
        add_text(c, json_string_length(content));
        return SW_OK;
    }
    join(path, sizeof(path), msg_path(base, sizeof(base), index), ".content");
    if (!content || json_is_null(content)) {
        /* The function role's content is nullable in OpenAI's schema. */
        if (has_call || (role == ROLE_FUNCTION && content))
            return SW_OK;
        if (!content)
            return fail_missing(c, path);
        return fail(c, "invalid_type", path,
                    "Invalid type for '%s': expected one of a string or an array of "
                    "objects, but got null instead. null is allowed only for an "
                    "assistant message with 'tool_calls' or 'function_call'.", path);
    }
    if (!json_is_array(content))
        return fail_type(c, path, "one of a string or an array of objects", content);
    if (json_array_size(content) == 0)
        return fail_empty_array(c, path);
    json_array_foreach(content, i, v) {
        char ppath[PATH_MAX_BYTES];
        join_index(ppath, sizeof(ppath), path, i);
        err = check_part(c, role, v, ppath);
        if (err)
            return err;
    }
    return SW_OK;
}

/* ---- Top-level parameters ---- */

static int check_model(struct ctx *c, json_t *body, struct sw_chat_request *req)
{
    json_t *v = get(c, body, "model");

    if (!v)
        return fail_missing(c, "model");
    if (!json_is_string(v))
        return fail_type(c, "model", "a string", v);
    if (json_string_length(v) == 0)
        return fail(c, "invalid_value", "model",
                    "Invalid value for 'model': expected a non-empty string, the name "
                    "of a model.");
    req->model = json_string_value(v);
    return SW_OK;
}

/* What checking a message added to the counts, kept with it by the parse
 * memo (an agent's resent message is checked once): it depends on the
 * message alone. */
#define MESSAGE_NOTE 0x63686b6d736731ull    /* "chkmsg1" */

struct message_note {
    long tokens, media_tokens;
    size_t media_bytes;
    long has_images;
};

static int checked_message(struct ctx *c, json_t *msg, size_t index)
{
    struct message_note n = {0};
    if (!sw_jmemo_note_get(msg, MESSAGE_NOTE, &n, sizeof n)) {
        const struct message_note was = {c->tokens, c->media_tokens, c->media_bytes, c->has_images};
        c->tokens = c->media_tokens = 0;
        c->media_bytes = 0;
        c->has_images = false;
        int err = check_message(c, msg, index);
        n = (struct message_note){c->tokens, c->media_tokens, c->media_bytes, c->has_images};
        c->tokens = was.tokens;
        c->media_tokens = was.media_tokens;
        c->media_bytes = was.media_bytes;
        c->has_images = was.has_images;
        if (err)
            return err;
        sw_jmemo_note_put(msg, MESSAGE_NOTE, &n, sizeof n);
    }
    c->tokens = sw_sat_add_long(c->tokens, n.tokens);
    c->media_tokens = sw_sat_add_long(c->media_tokens, n.media_tokens);
    c->media_bytes += n.media_bytes;
    c->has_images = c->has_images || n.has_images;
    return SW_OK;
}

static int check_messages(struct ctx *c, json_t *body, struct sw_chat_request *req)
{
    json_t *v = get(c, body, "messages"), *msg;
    size_t i;
    int err = SW_OK;

    if (!v)
        return fail_missing(c, "messages");
    if (!json_is_array(v))
        return fail_type(c, "messages", "an array", v);
    if (json_array_size(v) == 0)
        return fail_empty_array(c, "messages");
    sw_jmemo_hold();    /* each message's note is asked for */
    json_array_foreach(v, i, msg) {
        err = checked_message(c, msg, i);
        if (err)
            break;
        c->tokens = sw_sat_add_long(c->tokens, SW_REQUEST_MESSAGE_TOKENS);
    }
    sw_jmemo_release();
    if (err)
        return err;
    c->tokens = sw_sat_add_long(c->tokens, SW_REQUEST_PRIMING_TOKENS);
    req->n_messages = json_array_size(v);
    return SW_OK;
}

static int check_stream(struct ctx *c, json_t *body, struct sw_chat_request *req)
{
    json_t *v = opt(c, body, "stream"), *opts, *u;

    if (v && !json_is_boolean(v))
        return fail_type(c, "stream", "a boolean", v);
    req->stream = json_is_true(v);

    opts = opt(c, body, "stream_options");
    if (!opts)
        return SW_OK;
    if (!json_is_object(opts))
        return fail_type(c, "stream_options", "an object", opts);
    if (!req->stream)
        return fail(c, "invalid_value", "stream_options",
                    "Invalid value for 'stream_options': it is only allowed when "
                    "'stream' is true.");
    u = opt(c, opts, "include_usage");
    if (u && !json_is_boolean(u))
        return fail_type(c, "stream_options.include_usage", "a boolean", u);
    req->include_usage = json_is_true(u);
    return SW_OK;
}

/* An optional integer in 1..max; *out is left alone when absent. */
static int check_count(struct ctx *c, json_t *body, const char *key, long max, long *out)
{
    json_t *v = opt(c, body, key);

    if (!v)
        return SW_OK;
    if (!json_is_integer(v))
        return fail_type(c, key, "an integer", v);
    if (json_integer_value(v) < 1)
        return fail(c, "invalid_value", key,
                    "Invalid '%s': integer below minimum value. Expected a value >= 1, "
                    "but got %" JSON_INTEGER_FORMAT " instead.", key, json_integer_value(v));
    if (json_integer_value(v) > max)
        return fail(c, "invalid_value", key,
                    "Invalid '%s': integer above maximum value. Expected a value <= %ld, "
                    "but got %" JSON_INTEGER_FORMAT " instead.", key, max,
                    json_integer_value(v));
    *out = (long)json_integer_value(v);
    return SW_OK;
}

static int check_range(struct ctx *c, json_t *body, const char *key, double max)
{
    json_t *v = opt(c, body, key);
    double d;

    if (!v)
        return SW_OK;
    if (!json_is_number(v))
        return fail_type(c, key, "a number", v);
    d = json_number_value(v);
    if (d < 0)
        return fail(c, "invalid_value", key,
                    "Invalid '%s': number below minimum value. Expected a value >= 0, "
                    "but got %g instead.", key, d);
    if (d > max)
        return fail(c, "invalid_value", key,
                    "Invalid '%s': number above maximum value. Expected a value <= %g, "
                    "but got %g instead.", key, max, d);
    return SW_OK;
}

static int check_sampling(struct ctx *c, json_t *body, struct sw_chat_request *req)
{
    long completion = 0, legacy = 0, n = 1;
    int err;

    err = check_count(c, body, "max_tokens", SW_REQUEST_MAX_TOKENS, &legacy);
    if (err)
        return err;
    err = check_count(c, body, "max_completion_tokens", SW_REQUEST_MAX_TOKENS,
                      &completion);
    if (err)
        return err;
    req->max_tokens = completion ? completion : legacy;
    err = check_range(c, body, "temperature", 2);
    if (err)
        return err;
    err = check_range(c, body, "top_p", 1);
    if (err)
        return err;
    err = check_count(c, body, "n", LONG_MAX, &n);
    if (err)
        return err;
    if (n > 1)
        return fail(c, "invalid_value", "n",
                    "Invalid value for 'n': %ld. Spillway relays a single choice per "
                    "request; set 'n' to 1 or leave it out.", n);
    return SW_OK;
}

/* The compact JSON size of a tool definition, kept with it by the parse
 * memo (an agent sends its tools with every turn): it depends on the
 * definition alone. */
#define DEFINITION_NOTE 0x746f6f6c646566ull     /* "tooldef" */

/* Adds the compact JSON size of a tool definition to the estimate. */
static int add_definition(struct ctx *c, const json_t *def)
{
    size_t bytes;
    if (!sw_jmemo_note_get(def, DEFINITION_NOTE, &bytes, sizeof bytes)) {
        bytes = json_dumpb(def, NULL, 0, JSON_COMPACT);
        if (bytes == 0)
            return SW_ENOMEM;
        sw_jmemo_note_put(def, DEFINITION_NOTE, &bytes, sizeof bytes);
    }
    add_text(c, bytes);
    return SW_OK;
}

/* Whether t is a tool check_tools takes as it is: {"type": "function",
 * "function": {"name": "...", ...}}. */
static bool function_tool(const json_t *t)
{
    const char *type = json_string_value(json_object_get(t, "type"));
    json_t *fn = json_object_get(t, "function");
    return type && !strcmp(type, "function") && json_is_object(fn) &&
           json_is_string(json_object_get(fn, "name"));
}

static int check_tools(struct ctx *c, json_t *body, struct sw_chat_request *req)
{
    char path[PATH_MAX_BYTES], fpath[PATH_MAX_BYTES];
    json_t *tools = opt(c, body, "tools"), *funcs = opt(c, body, "functions"), *t, *type, *fn;
    size_t i;
    int err;

    if (tools) {
        if (!json_is_array(tools))
            return fail_type(c, "tools", "an array", tools);
        if (json_array_size(tools) == 0)
            return fail_empty_array(c, "tools");
        json_array_foreach(tools, i, t) {
            if (function_tool(t)) {     /* the usual case: no path written */
                err = add_definition(c, t);
                if (err)
                    return err;
                continue;
            }
            join_index(path, sizeof(path), "tools", i);
            if (!json_is_object(t))
                return fail_type(c, path, "an object", t);
            err = need_string(c, t, "type", path, &type);
            if (err)
                return err;
            if (strcmp(json_string_value(type), "function") != 0) {
                join(fpath, sizeof(fpath), path, ".type");
                return fail_enum(c, fpath, json_string_value(type), "'function'");
            }
            err = need_object(c, t, "function", path, &fn);
            if (err)
                return err;
            join(fpath, sizeof(fpath), path, ".function");
            err = need_string(c, fn, "name", fpath, NULL);
            if (err)
                return err;
            err = add_definition(c, t);
            if (err)
                return err;
        }
        req->has_tools = true;
    }
    if (funcs) {
        if (!json_is_array(funcs))
            return fail_type(c, "functions", "an array", funcs);
        if (json_array_size(funcs) == 0)
            return fail_empty_array(c, "functions");
        json_array_foreach(funcs, i, fn) {
            join_index(path, sizeof(path), "functions", i);
            if (!json_is_object(fn))
                return fail_type(c, path, "an object", fn);
            err = need_string(c, fn, "name", path, NULL);
            if (err)
                return err;
            err = add_definition(c, fn);
            if (err)
                return err;
        }
        req->has_tools = true;
    }
    return SW_OK;
}

int sw_request_word(const char *s, size_t len, const char *const *words, size_t n)
{
    while (len && (*s == ' ' || *s == '\t')) {
        s++;
        len--;
    }
    while (len && (s[len - 1] == ' ' || s[len - 1] == '\t'))
        len--;
    for (size_t i = 0; i < n; i++)
        if (len == strlen(words[i]) && !strncasecmp(s, words[i], len))
            return (int)i;
    return -1;
}

int sw_request_flag(const char *s, size_t len)
{
    /* no at even places, yes at odd ones */
    static const char *const words[] = {"false", "true", "0", "1", "no", "yes", "off", "on"};
    int i = sw_request_word(s, len, words, sizeof words / sizeof words[0]);
    return i < 0 ? -1 : i % 2;
}

/* One character of a name as sw_request_name_folds reads it: 0 for one it
 * drops ('_', '-', space, tab), else the character in lower case. */
static char fold_char(char ch)
{
    if (ch == '_' || ch == '-' || ch == ' ' || ch == '\t')
        return 0;
    return ch >= 'A' && ch <= 'Z' ? (char)(ch - 'A' + 'a') : ch;
}

bool sw_request_name_folds(const char *s, size_t len, const char *canon)
{
    size_t i = 0;
    for (const char *k = canon;; k++) {
        char want = 0;
        while (*k && !(want = fold_char(*k)))
            k++;
        char got = 0;
        while (i < len && !(got = fold_char(s[i])))
            i++;
        if (!want || !got)
            return !want && !got;
        if (want != got)
            return false;
        i++;
    }
}

bool sw_request_name_near_miss(const char *s, size_t len, const char *canon, bool any_case)
{
    if (!sw_request_name_folds(s, len, canon))
        return false;
    bool exact = len == strlen(canon) &&
                 (any_case ? !strncasecmp(s, canon, len) : !memcmp(s, canon, len));
    return !exact;
}

/* metadata: string values as OpenAI requires, except allow_cloud, Spillway's
 * own flag, which must be a boolean or a flag string (null and any other
 * type are refused, never read as unset). A key that is a near-miss of
 * allow_cloud (other case, '-' for '_', spaces) is refused too: a typo must
 * never leave the request cloud-eligible. */
static int check_metadata(struct ctx *c, json_t *body, struct sw_chat_request *req)
{
    char path[PATH_MAX_BYTES];
    json_t *md = opt(c, body, "metadata"), *v;
    const char *key;

    req->allow_cloud = -1;
    if (!md)
        return SW_OK;
    if (!json_is_object(md))
        return fail_type(c, "metadata", "an object", md);
    json_object_foreach(md, key, v) {
        join3(path, sizeof(path), "metadata", ".", key);
        if (sw_request_name_near_miss(key, strlen(key), "allow_cloud", false))
            return fail(c, "invalid_value", path,
                        "Unknown metadata key '%s': the privacy flag is spelled "
                        "'metadata.allow_cloud' (lower case, with an underscore).", path);
        if (strcmp(key, "allow_cloud") != 0) {
            if (!json_is_string(v))
                return fail_type(c, path, "a string", v);
            continue;
        }
        int flag = json_is_string(v) ? sw_request_flag(json_string_value(v), json_string_length(v))
                                     : json_is_boolean(v) ? json_is_true(v) : -1;
        if (flag >= 0)
            req->allow_cloud = flag;
        else if (json_is_string(v))
            return fail_enum(c, path, json_string_value(v),
                             "true, false, or the strings true/false, 1/0, yes/no, on/off");
        else
            return fail_type(c, path, "a boolean or one of the strings true/false, 1/0, yes/no, on/off", v);
    }
    return SW_OK;
}

int sw_request_metadata(json_t *body, struct sw_chat_request *req, struct sw_request_error *err)
{
    struct ctx c = {.err = err};
    return check_metadata(&c, body, req);
}

/* ---- Shape of the body before decoding ---- */

/* In valid JSON every value is the root, the first element or member of a
 * non-empty array or object, or follows a comma; so values = 1 + commas +
 * non-empty containers, and object keys (one per member value) need no
 * counting. Strings are skipped with memchr: a quote ends the string unless
 * an odd run of backslashes precedes it. Invalid JSON may be counted
 * anyhow: the decoder refuses it, and up to its first error it reads the
 * bytes as this scan does, so it never builds more than was counted. */
bool sw_request_json_shape(const char *s, size_t len, size_t max_values, size_t max_depth,
                           struct sw_json_shape *out)
{
    const char *p = s, *end = s + len;
    size_t values = 0, depth = 0, deepest = 0;
    bool open = false;          /* just after '[' or '{': is the container empty? */
    bool ok = true;

    while (p < end) {
        unsigned char ch = (unsigned char)*p++;

        if (ch == ' ' || ch == '\n' || ch == '\r' || ch == '\t')
            continue;
        if (open) {
            open = false;
            if (ch != ']' && ch != '}')
                values++;
        } else if (values == 0) {
            values = 1;         /* the root */
        }
        switch (ch) {
        case '[':
        case '{':
            if (++depth > deepest)
                deepest = depth;
            open = true;
            break;
        case ']':
        case '}':
            if (depth > 0)
                depth--;
            break;
        case ',':
            values++;
            break;
        case '"':
            for (;;) {
                const char *q = memchr(p, '"', (size_t)(end - p)), *b;
                if (!q) {
                    p = end;
                    break;
                }
                for (b = q; b > p && b[-1] == '\\'; b--)
                    ;
                p = q + 1;
                if ((q - b) % 2 == 0)
                    break;
            }
            break;
        default:
            break;
        }
        if (values > max_values || deepest > max_depth) {
            ok = false;
            break;
        }
    }
    if (out) {
        out->values = values;
        out->depth = deepest;
    }
    return ok;
}

/* ---- Parse ---- */

static void set_oom(struct sw_request_error *err)
{
    sw_request_error_set(err, 500, "server_error", "out_of_memory", NULL,
                         "The gateway ran out of memory while reading the request.");
}

/* The refusal of a body past SW_REQUEST_MAX_JSON_VALUES or _DEPTH. */
static void set_too_complex(struct sw_request_error *err, const struct sw_json_shape *shape)
{
    if (shape->depth > SW_REQUEST_MAX_JSON_DEPTH)
        sw_request_error_set(err, 400, "invalid_request_error", "json_too_complex", NULL,
                             "The JSON body of your request is too complex: arrays and "
                             "objects are nested more than %d levels deep, the limit.",
                             SW_REQUEST_MAX_JSON_DEPTH);
    else
        sw_request_error_set(err, 400, "invalid_request_error", "json_too_complex", NULL,
                             "The JSON body of your request is too complex: it holds more "
                             "than %d values (objects, arrays, strings, numbers, booleans "
                             "and nulls), the limit.", SW_REQUEST_MAX_JSON_VALUES);
}

static bool tree_shape(const json_t *v, size_t depth, struct sw_json_shape *sh);

/* The key of an element's own shape kept with it by the parse memo. */
#define SHAPE_NOTE 0x73686170653131ull      /* "shape11" */

/* tree_shape of an element of a top-level array (a translated message):
 * its own counts are kept with it when the memo holds it. */
static bool element_shape(const json_t *v, size_t depth, struct sw_json_shape *sh)
{
    struct sw_json_shape own = {0, 0};
    if (!sw_jmemo_note_get(v, SHAPE_NOTE, &own, sizeof own)) {
        if (!tree_shape(v, 0, &own))
            return false;
        sw_jmemo_note_put(v, SHAPE_NOTE, &own, sizeof own);
    }
    sh->values += own.values;
    if (depth + own.depth > sh->depth)
        sh->depth = depth + own.depth;
    return sh->values <= SW_REQUEST_MAX_JSON_VALUES && sh->depth <= SW_REQUEST_MAX_JSON_DEPTH;
}

/* What sw_request_json_shape counts in the compact text of the tree under
 * v, at nesting `depth` (v's container, if it is one, is one deeper):
 * stops once either count is past its max. */
static bool tree_shape(const json_t *v, size_t depth, struct sw_json_shape *sh)
{
    size_t n = json_is_array(v) ? json_array_size(v) : json_is_object(v) ? json_object_size(v) : 0;
    if (!json_is_array(v) && !json_is_object(v))
        return true;
    if (++depth > sh->depth)
        sh->depth = depth;
    sh->values += n;
    if (sh->values > SW_REQUEST_MAX_JSON_VALUES || sh->depth > SW_REQUEST_MAX_JSON_DEPTH)
        return false;
    if (json_is_array(v)) {
        for (size_t i = 0; i < n; i++) {
            const json_t *el = json_array_get(v, i);
            if (!(depth == 2 && (json_is_object(el) || json_is_array(el))
                      ? element_shape(el, depth, sh)
                      : tree_shape(el, depth, sh)))
                return false;
        }
        return true;
    }
    for (void *it = json_object_iter((json_t *)v); it;
         it = json_object_iter_next((json_t *)v, it))
        if (!tree_shape(json_object_iter_value(it), depth, sh))
            return false;
    return true;
}

static void set_parse_error(struct sw_request_error *err, size_t len, const json_error_t *je)
{
    const char *text = je->text;

    if (len == 0) {
        sw_request_error_set(err, 400, "invalid_request_error", "invalid_json", NULL,
                             "We could not parse the JSON body of your request: the body "
                             "is empty; expected a JSON object.");
        return;
    }
    if (json_error_code(je) == json_error_null_character)
        text = "\\u0000 is not allowed in strings";
    sw_request_error_set(err, 400, "invalid_request_error", "invalid_json", NULL,
                         "We could not parse the JSON body of your request: %s at line %d "
                         "column %d.", text, je->line, je->column);
}

json_t *sw_request_json_load(const char *body, size_t len, struct sw_request_error *err,
                             int *rc)
{
    struct sw_json_shape shape;
    json_error_t je;

    *rc = SW_EINVAL;
    /* A body within the bounds: parsed and built in one pass. */
    bool oom = false;
    json_t *fast = body && len ? sw_json_load_bounded(body, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY,
                                                      SW_REQUEST_MAX_JSON_VALUES,
                                                      SW_REQUEST_MAX_JSON_DEPTH, &oom)
                               : NULL;
    if (fast)
        return fast;
    if (oom) {
        *rc = SW_ENOMEM;
        set_oom(err);
        return NULL;
    }
    /* Bounded work and memory whatever the client sent: the shape is checked
     * before jansson builds anything. */
    if (body && len && !sw_request_json_shape(body, len, SW_REQUEST_MAX_JSON_VALUES,
                                              SW_REQUEST_MAX_JSON_DEPTH, &shape)) {
        set_too_complex(err, &shape);
        return NULL;
    }
    memset(&je, 0, sizeof(je));     /* jansson leaves the code byte unset on some failures */
    json_t *root = sw_json_load(body ? body : "", body ? len : 0,
                                JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &je);
    if (root)
        return root;
    /* jansson fails without a message when its first allocation fails. */
    if (json_error_code(&je) == json_error_out_of_memory || je.text[0] == '\0') {
        *rc = SW_ENOMEM;
        set_oom(err);
    } else {
        set_parse_error(err, body ? len : 0, &je);
    }
    return NULL;
}

/* Validates root (taken) into *req; len: the bytes of the body it is. */
static int validate(json_t *root, size_t len, struct sw_chat_request *req,
                    struct sw_request_error *err)
{
    struct ctx c = { .err = err };
    int rc;

    if (!json_is_object(root)) {
        rc = fail(&c, "invalid_type", NULL,
                  "Invalid type for the request body: expected an object, but got %s "
                  "instead.", sw_json_type_name(root));
        goto fail;
    }
    index_members(&c.body, root);
    rc = check_model(&c, root, req);
    if (rc)
        goto fail;
    rc = check_messages(&c, root, req);
    if (rc)
        goto fail;
    rc = check_stream(&c, root, req);
    if (rc)
        goto fail;
    rc = check_sampling(&c, root, req);
    if (rc)
        goto fail;
    rc = check_tools(&c, root, req);
    if (rc)
        goto fail;
    rc = check_metadata(&c, root, req);
    if (rc)
        goto fail;
    req->body = root;
    req->prompt_tokens_est = c.tokens;
    req->prompt_tokens_max = sw_request_bound_tokens(len, c.media_bytes, c.media_tokens,
                                                     req->n_messages);
    req->has_images = c.has_images;
    return SW_OK;

fail:
    json_decref(root);
    memset(req, 0, sizeof(*req));
    req->allow_cloud = -1;
    if (rc != SW_ENOMEM)
        return rc;
    set_oom(err);
    return rc;
}

int sw_request_parse(const char *body, size_t len, struct sw_chat_request *req,
                     struct sw_request_error *err)
{
    int rc;

    memset(req, 0, sizeof(*req));
    req->allow_cloud = -1;
    json_t *root = sw_request_json_load(body, len, err, &rc);
    return root ? validate(root, len, req, err) : rc;
}

/* The places in req->text the relay splices by, read off the text just
 * written from root: the translations put `model` first. */
static void mark_text(struct sw_chat_request *req, const json_t *root)
{
    static const char head[] = "{\"model\":\"";
    const size_t at = sizeof head - 2; /* the value's opening quote */
    const unsigned char *t = (const unsigned char *)req->text,
                        *end = t + req->text_len,
                        *past = req->text_len > sizeof head && !memcmp(t, head, sizeof head - 1)
                                    ? sw_jscan_skip_string(t + at + 1, end)
                                    : NULL;
    if (past) {
        req->text_model_off = at;
        req->text_model_len = (size_t)(past - (t + at));
    }
    req->text_metadata = json_object_get(root, "metadata") != NULL;
    req->text_stream_options = json_object_get(root, "stream_options") != NULL;
}

int sw_request_parse_built(json_t *root, size_t text_hint, struct sw_chat_request *req,
                           struct sw_request_error *err)
{
    struct sw_json_shape sh = {.values = 1, .depth = 0};
    struct sw_buf text;
    int rc;

    memset(req, 0, sizeof(*req));
    req->allow_cloud = -1;
    sw_jmemo_hold();    /* each element's note is asked for */
    bool shaped = tree_shape(root, 0, &sh);
    sw_jmemo_release();
    if (!shaped) {      /* before any text is written */
        set_too_complex(err, &sh);
        json_decref(root);
        return SW_EINVAL;
    }
    sw_buf_init(&text, SIZE_MAX / 8);
    struct sw_json_pieces pc;
    if (sw_buf_reserve(&text, text_hint + 1024) || sw_json_dump_pieces(root, &text, &pc)) {
        json_decref(root);
        sw_buf_free(&text);
        set_oom(err);
        return SW_ENOMEM;
    }
    rc = validate(root, text.len + pc.bytes, req, err);
    if (rc) {
        sw_buf_free(&text);
        sw_json_pieces_free(&pc);
        return rc;
    }
    req->text = text.ptr;
    req->text_len = text.len;
    req->text_pieces = pc;
    mark_text(req, root);
    return SW_OK;
}

char *sw_request_text_whole(const struct sw_chat_request *req, size_t *len)
{
    const struct sw_json_pieces *pc = &req->text_pieces;
    size_t n = req->text_len + pc->bytes, from = 0;
    char *w = req->text ? malloc(n + 1) : NULL, *at = w;
    if (!w)
        return NULL;
    for (size_t i = 0; i < pc->n; i++) {
        memcpy(at, req->text + from, pc->v[i].at - from);
        at += pc->v[i].at - from;
        memcpy(at, pc->v[i].data, pc->v[i].len);
        at += pc->v[i].len;
        from = pc->v[i].at;
    }
    memcpy(at, req->text + from, req->text_len - from);
    w[n] = '\0';
    *len = n;
    return w;
}

void sw_request_free(struct sw_chat_request *req)
{
    json_decref(req->body);
    json_decref(req->native);
    free(req->untranslatable);
    free(req->text);
    sw_json_pieces_free(&req->text_pieces);
    memset(req, 0, sizeof(*req));
    req->allow_cloud = -1;
}
