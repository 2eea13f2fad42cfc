// A fast JSON loader: simdjson parses, a jansson tree is built; see jfast.h.
#include "common/jfast.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

#include <simdjson.h>

#include "common/jmemo.h"

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

    // A copy of s with SIMDJSON_PADDING readable bytes after it, or nullptr;
    // with plan, its hits replaced by a 0 (*len: the copy's length).
    const char *pad(const char *s, size_t *len, const struct sw_jmemo_plan *plan)
    {
        if (cap < *len + simdjson::SIMDJSON_PADDING) {
            size_t want = *len + simdjson::SIMDJSON_PADDING;
            if (want < 4096)
                want = 4096;
            buf.reset(new (std::nothrow) char[want]);
            cap = buf ? want : 0;
            if (!buf)
                return nullptr;
        }
        if (plan)
            *len = sw_jmemo_compact(plan, s, *len, buf.get());
        else
            memcpy(buf.get(), s, *len);
        memset(buf.get() + *len, 0, simdjson::SIMDJSON_PADDING);
        return buf.get();
    }
};

struct Ctx {
    bool reject_dups;
    bool oom;           // an allocation failed: the answer is "out of memory"
    size_t max_values;  // 0: no bound; else more structural characters than this declines
    size_t max_depth;   // the parser's nesting bound (0: its own)
    struct sw_jmemo_plan *plan;  // the root's array elements the memo knows or is offered
    size_t next;        // the plan's next element
};

json_t *build(dom::element el, Ctx &c);
json_t *build_array(dom::array arr, Ctx &c, int64_t member = -1);

// A member of the root object: its arrays hold the planned elements.
json_t *build_member(dom::element el, Ctx &c, int64_t member)
{
    if (member >= 0 && el.type() == dom::element_type::ARRAY)
        return build_array(el.get_array().value_unsafe(), c, member);
    return build(el, c);
}

// An allocation result: nullptr marks the context out of memory.
json_t *alloced(json_t *j, Ctx &c)
{
    if (!j)
        c.oom = true;
    return j;
}

// root: the body's own object, whose arrays the memo's plan is about.
json_t *build_object(dom::object obj, Ctx &c, bool root = false)
{
    json_t *o = alloced(json_object(), c);
    int64_t member = root && c.plan ? 0 : -1;

    if (!o)
        return nullptr;
    for (dom::key_value_pair kv : obj) {
        std::string_view k = kv.key;
        // jansson refuses a NUL in a key whatever the flags.
        if (memchr(k.data(), '\0', k.size())) {
            json_decref(o);
            return nullptr;
        }
        json_t *v = build_member(kv.value, c, member);
        if (member >= 0)
            member++;
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

// The value of a planned element: the memo's for a hit (where the parser
// read the 0 that replaced it), else the one built, offered to the memo.
json_t *planned(dom::element e, Ctx &c, sw_jmemo_elem &pe)
{
    if (pe.hit) {
        if (e.type() != dom::element_type::INT64 || e.get_int64().value_unsafe() != 0)
            return nullptr;     // not where the plan put it: the fallback decides
        return json_incref(pe.value);
    }
    json_t *v = build(e, c);
    pe.value = json_incref(v);
    return v;
}

// member >= 0: an array of the root, the member-th; its planned elements
// come from or go to the memo.
json_t *build_array(dom::array arr, Ctx &c, int64_t member)
{
    json_t *a = alloced(json_array(), c);
    uint32_t k = 0;

    if (!a)
        return nullptr;
    for (dom::element e : arr) {
        sw_jmemo_elem *pe = member >= 0 && c.next < c.plan->n ? &c.plan->e[c.next] : nullptr;
        json_t *v;
        if (pe && pe->member == (uint32_t)member && pe->index == k) {
            c.next++;
            v = planned(e, c, *pe);
        } else {
            v = build(e, c);
        }
        k++;
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
    // A hit counts as the structural characters and nesting of its bytes,
    // not of the 0 the parser read. It sits two levels down (root, array);
    // the parser takes a text nested less deep than its bound.
    size_t values = parser.implementation->n_structural_indexes;
    if (c.plan && c.plan->hits) {
        values += c.plan->hit_values - c.plan->hits;
        if (c.plan->hit_depth + 2 >= (c.max_depth ? c.max_depth : parser.max_depth()))
            return nullptr;
    }
    if (c.max_values && values > c.max_values)
        return nullptr;
    // Without JSON_DECODE_ANY jansson takes only an object or an array.
    if (!(flags & JSON_DECODE_ANY) && root.type() != dom::element_type::OBJECT &&
        root.type() != dom::element_type::ARRAY)
        return nullptr;
    if (c.plan)
        return root.type() == dom::element_type::OBJECT
                   ? build_object(root.get_object().value_unsafe(), c, true)
                   : nullptr;
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
            const char *p = scratch.pad(s, &len, c.plan);
            if (!p) {
                c.oom = true;
                return nullptr;
            }
            return parse_with(scratch.parser, p, len, flags, c);
        }
        simdjson::padded_string copy(len);
        if (copy.size() != len) {
            c.oom = true;
            return nullptr;
        }
        if (c.plan)
            len = sw_jmemo_compact(c.plan, s, len, copy.data());
        else
            memcpy(copy.data(), s, len);
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
    c.max_depth = max_depth;
    struct sw_jmemo_plan plan;
    if (sw_jmemo_plan(s, len, flags, &plan))
        c.plan = &plan;
    json_t *j = fast(s, len, flags, c, max_depth);
    if (c.plan)
        sw_jmemo_done(&plan, s, j != nullptr);
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
