/* An Anthropic client's body as an Anthropic backend takes it (see
 * anth_native.h). Pure: no I/O, no clock. */
#include "dialect/anth_native.h"

#include <string.h>

#include "common/err.h"
#include "dialect/req_util.h"

/* ---- System messages inside messages ---- */

/* Whether the anthropic-beta value names the mid-conversation system
 * feature ("mid-conversation-system-<date>"). */
static bool beta_mid_system(const char *beta)
{
    static const char name[] = "mid-conversation-system-";
    for (const char *p = beta; p && *p;) {
        p += strspn(p, " \t,");
        size_t n = strcspn(p, ",");
        if (n >= sizeof name - 1 && !memcmp(p, name, sizeof name - 1))
            return true;
        p += n;
    }
    return false;
}

static const char *role_of(const json_t *m)
{
    const char *r = json_string_value(json_object_get(m, "role"));
    return r ? r : "";
}

/* A system message's content as top-level system blocks appended to sys. */
static int append_system_blocks(json_t *sys, const json_t *content)
{
    if (json_is_string(content))
        return json_array_append_new(sys, json_pack("{s:s, s:O}", "type", "text", "text", content));
    size_t i;
    json_t *b;
    json_array_foreach(content, i, b) if (json_array_append(sys, b)) return -1;
    return 0;
}

int sw_anth_native_system(json_t *native, const char *beta)
{
    json_t *msgs = json_object_get(native, "messages");
    bool keep_later = beta_mid_system(beta), leading = true, any = false;
    size_t i;
    json_t *m;
    json_array_foreach(msgs, i, m) {
        bool sys = !strcmp(role_of(m), "system");
        any |= sys && (leading || !keep_later);
        leading &= sys;
    }
    if (!any)
        return SW_OK;
    json_t *top = json_object_get(native, "system");
    json_t *sys = json_array();
    if (!sys)
        return SW_ENOMEM;
    int rc = 0;
    if (json_is_string(top) && json_string_length(top))
        rc = json_array_append_new(sys, json_pack("{s:s, s:O}", "type", "text", "text", top));
    else if (json_is_array(top))
        rc = json_array_extend(sys, top);
    leading = true;
    for (i = 0; !rc && i < json_array_size(msgs);) {
        m = json_array_get(msgs, i);
        bool is_sys = !strcmp(role_of(m), "system");
        if (is_sys && (leading || !keep_later)) {
            rc = append_system_blocks(sys, json_object_get(m, "content")) ||
                 json_array_remove(msgs, i);
            continue;
        }
        leading &= is_sys;
        i++;
    }
    if (!rc)
        rc = json_object_set_new(native, "system", sys);
    else
        json_decref(sys);
    return rc ? SW_ENOMEM : SW_OK;
}

/* ---- Thinking after a turn without it ---- */

bool sw_anth_native_thinking(json_t *native)
{
    json_t *th = json_object_get(native, "thinking");
    const char *t = json_string_value(json_object_get(th, "type"));
    if (!t || !strcmp(t, "disabled"))
        return false;
    json_t *msgs = json_object_get(native, "messages"), *last = NULL;
    for (size_t i = json_array_size(msgs); i-- > 0 && !last;)
        if (!strcmp(role_of(json_array_get(msgs, i)), "assistant"))
            last = json_array_get(msgs, i);
    json_t *content = json_object_get(last, "content");
    bool calls = false;
    size_t i;
    json_t *b;
    json_array_foreach(content, i, b) calls |= !strcmp(sw_dialect_type_of(b), "tool_use");
    const char *first = sw_dialect_type_of(json_array_get(content, 0));
    if (!calls || !strcmp(first, "thinking") || !strcmp(first, "redacted_thinking"))
        return false;
    json_object_set_new(native, "thinking", json_pack("{s:s}", "type", "disabled"));
    json_t *edits = json_object_get(json_object_get(native, "context_management"), "edits");
    for (i = 0; i < json_array_size(edits);) {
        if (!strncmp(sw_dialect_type_of(json_array_get(edits, i)), "clear_thinking_", 15))
            json_array_remove(edits, i);
        else
            i++;
    }
    if (json_is_array(edits) && json_array_size(edits) == 0)
        json_object_del(native, "context_management");
    return true;
}

int sw_anth_native_prepare(json_t *native, const char *beta, bool system_msgs)
{
    int rc = system_msgs ? sw_anth_native_system(native, beta) : SW_OK;
    if (!rc)
        sw_anth_native_thinking(native);
    return rc;
}
