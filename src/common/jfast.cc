// A fast JSON loader: simdjson parses, a jansson tree is built; see jfast.h.
#include "common/jfast.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

#include <simdjson.h>

namespace dom = simdjson::dom;

namespace {

// Texts up to this size reuse one parser and one padded copy per thread
// (their memory stays for the next request: simdjson's index and tape take
// about 10 bytes per byte of text, so at most about 5.5 MB per thread that
// parsed such a text); a larger one gets its own, freed when it is parsed, so
// one very big body does not pin its memory. An agent's body of a few
// hundred KB allocated and freed per request costs more in page faults (the
// heap's top trimmed and touched again) than its parse.
constexpr size_t kKeepBytes = 512u << 10;

// The flags the fast path implements; any other one is json_loadb's job.
constexpr size_t kFlags = JSON_REJECT_DUPLICATES | JSON_DECODE_ANY;

struct Scratch {
    dom::parser parser;
    std::unique_ptr<char[]> buf;
    size_t cap = 0;

    // A copy of s with SIMDJSON_PADDING readable bytes after it, or nullptr.
    const char *pad(const char *s, size_t len)
    {
        if (cap < len + simdjson::SIMDJSON_PADDING) {
            size_t want = len + simdjson::SIMDJSON_PADDING;
            if (want < 4096)
                want = 4096;
            buf.reset(new (std::nothrow) char[want]);
            cap = buf ? want : 0;
            if (!buf)
                return nullptr;
        }
        memcpy(buf.get(), s, len);
        memset(buf.get() + len, 0, simdjson::SIMDJSON_PADDING);
        return buf.get();
    }
};

struct Ctx {
    bool reject_dups;
    bool oom;           // an allocation failed: the answer is "out of memory"
    size_t max_values;  // 0: no bound; else more structural characters than this declines
};

json_t *build(dom::element el, Ctx &c);

// An allocation result: nullptr marks the context out of memory.
json_t *alloced(json_t *j, Ctx &c)
{
    if (!j)
        c.oom = true;
    return j;
}

json_t *build_object(dom::object obj, Ctx &c)
{
    json_t *o = alloced(json_object(), c);

    if (!o)
        return nullptr;
    for (dom::key_value_pair kv : obj) {
        std::string_view k = kv.key;
        // jansson refuses a NUL in a key whatever the flags.
        if (memchr(k.data(), '\0', k.size())) {
            json_decref(o);
            return nullptr;
        }
        json_t *v = build(kv.value, c);
        // json_object_setn_new_nocheck releases v when it fails (memory:
        // the key is neither NULL nor the object its own value).
        size_t before = json_object_size(o);
        if (!v || json_object_setn_new_nocheck(o, k.data(), k.size(), v)) {
            if (v)
                c.oom = true;
            json_decref(o);
            return nullptr;
        }
        // A key seen before replaced its value instead of adding a member:
        // a duplicate (one hash lookup per key, not two).
        if (c.reject_dups && json_object_size(o) == before) {
            json_decref(o);
            return nullptr;
        }
    }
    return o;
}

json_t *build_array(dom::array arr, Ctx &c)
{
    json_t *a = alloced(json_array(), c);

    if (!a)
        return nullptr;
    for (dom::element e : arr) {
        json_t *v = build(e, c);
        if (!v || json_array_append_new(a, v)) {
            if (v)
                c.oom = true;
            json_decref(a);
            return nullptr;
        }
    }
    return a;
}

// nullptr: out of memory (c.oom), or a value the fast path does not map
// (json_loadb decides).
json_t *build(dom::element el, Ctx &c)
{
    switch (el.type()) {
    case dom::element_type::OBJECT:
        return build_object(el.get_object().value_unsafe(), c);
    case dom::element_type::ARRAY:
        return build_array(el.get_array().value_unsafe(), c);
    case dom::element_type::STRING: {
        std::string_view s = el.get_string().value_unsafe();
        // \u0000: jansson rejects it without JSON_ALLOW_NUL, with its message.
        if (memchr(s.data(), '\0', s.size()))
            return nullptr;
        // simdjson has checked the UTF-8 of the whole text and the escapes.
        return alloced(json_stringn_nocheck(s.data(), s.size()), c);
    }
    case dom::element_type::INT64:
        return alloced(json_integer(el.get_int64().value_unsafe()), c);
    case dom::element_type::UINT64:
        // Beyond int64: jansson rejects it ("too big integer").
        return nullptr;
    case dom::element_type::DOUBLE: {
        // simdjson, like jansson, reads a number with a fraction or an
        // exponent as a real (-0.0 too), one without as an integer ("-0": 0).
        return alloced(json_real(el.get_double().value_unsafe()), c);
    }
    case dom::element_type::BOOL:
        return json_boolean(el.get_bool().value_unsafe());
    case dom::element_type::NULL_VALUE:
        return json_null();
    }
    return nullptr;
}

json_t *parse_with(dom::parser &parser, const char *padded, size_t len, size_t flags, Ctx &c)
{
    dom::element root;

    if (parser.parse(padded, len, false).get(root))
        return nullptr;
    // Every value starts at a structural character (as do keys, colons,
    // commas and closing brackets): no more of them than the bound means
    // no more values. More declines before anything is built, and the
    // caller's shape check decides (with its message).
    if (c.max_values && parser.implementation->n_structural_indexes > c.max_values)
        return nullptr;
    // Without JSON_DECODE_ANY jansson takes only an object or an array.
    if (!(flags & JSON_DECODE_ANY) && root.type() != dom::element_type::OBJECT &&
        root.type() != dom::element_type::ARRAY)
        return nullptr;
    return build(root, c);
}

// max_depth: the simdjson parser's nesting bound (0: whatever the thread's
// parser has; a text it refuses as too deep goes to json_loadb, which decides).
json_t *fast(const char *s, size_t len, size_t flags, Ctx &c, size_t max_depth = 0)
{
    c.reject_dups = flags & JSON_REJECT_DUPLICATES;
    c.oom = false;
    if ((flags & ~kFlags) || len == 0 || !s)
        return nullptr;
    try {
        if (len <= kKeepBytes) {
            thread_local Scratch scratch;
            // Set once per thread for the request path: no reallocation when
            // a declined body falls back to sw_json_load.
            size_t cap = scratch.parser.capacity() > len ? scratch.parser.capacity() : len;
            if (max_depth && scratch.parser.max_depth() != max_depth &&
                scratch.parser.allocate(cap > 4096 ? cap : 4096, max_depth) != simdjson::SUCCESS) {
                c.oom = true;
                return nullptr;
            }
            const char *p = scratch.pad(s, len);
            if (!p) {
                c.oom = true;
                return nullptr;
            }
            return parse_with(scratch.parser, p, len, flags, c);
        }
        simdjson::padded_string copy(s, len);
        if (copy.size() != len) {
            c.oom = true;
            return nullptr;
        }
        dom::parser parser;
        if (max_depth && parser.allocate(len, max_depth) != simdjson::SUCCESS) {
            c.oom = true;
            return nullptr;
        }
        return parse_with(parser, copy.data(), len, flags, c);
    } catch (...) {
        // std::bad_alloc from the parser's growth or the padded copy.
        c.oom = true;
        return nullptr;
    }
}

}  // namespace

json_t *sw_json_load_fast_only(const char *s, size_t len, size_t flags)
{
    Ctx c = {};
    return fast(s, len, flags, c);
}

json_t *sw_json_load_bounded(const char *s, size_t len, size_t flags, size_t max_values,
                             size_t max_depth, bool *oom)
{
    *oom = false;
    if (!max_depth || !max_values)
        return nullptr;
    Ctx c = {};
    c.max_values = max_values;
    json_t *j = fast(s, len, flags, c, max_depth);
    *oom = !j && c.oom;
    return j;
}

json_t *sw_json_load(const char *s, size_t len, size_t flags, json_error_t *err)
{
    Ctx c = {};
    json_t *j = fast(s, len, flags, c);

    if (j || c.oom) {
        // What json_loadb leaves in err on success.
        if (err) {
            err->line = err->column = -1;
            err->position = 0;
            snprintf(err->source, sizeof err->source, "%s", "<buffer>");
            err->text[0] = '\0';
            if (!j) {
                // As jansson reports a failed allocation.
                snprintf(err->text, sizeof err->text, "%s", "out of memory");
                err->text[JSON_ERROR_TEXT_LENGTH - 1] = (char)json_error_out_of_memory;
            }
        }
        return j;
    }
    return json_loadb(s ? s : "", s ? len : 0, flags, err);
}
