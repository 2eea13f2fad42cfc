/* A table-driven walker over a libyaml document (Redis' createSizeTConfig,
 * nginx's ngx_command_t): each section of the config is a table of settings
 * (key, type, bounds, default, offsetof) and one generic function checks a
 * mapping against it, fills the struct and reports every problem as
 * "file:line:col: key.path: what is wrong and what is allowed".
 *
 * Scalars go through ${NAME} substitution before they are typed. A message
 * never shows the value of a substituted scalar, only its source text, so
 * that secrets from the environment cannot leak into logs.
 *
 * Pure: no I/O, no clock. All positions are 1-based. */
#ifndef SW_CONFIG_WALK_H
#define SW_CONFIG_WALK_H

#include <stdbool.h>
#include <stddef.h>
#include <yaml.h>

#include "config/errors.h"

struct sw_buf;

/* Looks up ${NAME}; NULL when unset (config.h's sw_config_getenv_fn is the same type). */
typedef const char *(*sw_walk_getenv_fn)(const char *name, void *ud);

#define SW_WALK_MAX_SETTINGS 48   /* settings per section */
#define SW_WALK_MAX_ERRORS 100    /* messages kept; the rest are counted */
#define SW_WALK_MAX_SCALAR 65536  /* bytes of one scalar after substitution */
#define SW_WALK_MAX_PATH 256      /* bytes of a key path such as backends[3].price */

enum sw_walk_type {
    SW_WALK_TEXT,   /* char *: 1..4096 bytes, no control characters */
    SW_WALK_NAME,   /* char *: 1..64 of A-Z a-z 0-9 _ . - (safe in labels, headers) */
    SW_WALK_SECRET, /* char *: no whitespace; the value is never shown */
    SW_WALK_LONG,   /* long in [min, max] */
    SW_WALK_DOUBLE, /* double in [dmin, dmax] */
    SW_WALK_BOOL,   /* bool: true | false */
    SW_WALK_ENUM,   /* int-sized enum: the index of the value in names[] */
    SW_WALK_MAP,    /* nested mapping: sub's offsets are relative to base + off */
    SW_WALK_LIST,   /* list of mappings: array of sub->elem_size at off, size_t count at aux_off */
    SW_WALK_CUSTOM, /* parse(): anything the types above cannot say */
};

struct sw_walk;
struct sw_walk_section;

struct sw_walk_setting {
    const char *key;
    enum sw_walk_type type;
    size_t off;             /* where the value lives, relative to the section's base */
    size_t aux_off;         /* LIST and CUSTOM: a second field (count, port) */
    bool required;
    const char *optional_if;    /* "key=value": not required when that sibling key holds
                                 * that scalar (url with dialect=bedrock); NULL: never */
    long min, max, def;     /* LONG bounds and default; BOOL/ENUM default in def */
    double dmin, dmax, ddef;
    const char *const *names;          /* ENUM: NULL-terminated */
    const struct sw_walk_section *sub; /* MAP, LIST */
    const char *hint;       /* what is allowed, appended to "missing" and type errors */
    const char *fix;        /* ENUM: what to write instead, appended to a wrong value's error */
    /* CUSTOM: parses node into base; reports its own errors. */
    void (*parse)(struct sw_walk *w, const struct sw_walk_setting *s,
                  const yaml_node_t *node, void *base, const char *path);
};

/* vals[i] is the value node of settings[i], NULL when the key is absent. */
typedef void (*sw_walk_check_fn)(struct sw_walk *w, void *base, const yaml_node_t *map,
                                 const yaml_node_t *const *vals, const char *path,
                                 size_t index);

struct sw_walk_section {
    const struct sw_walk_setting *settings;
    size_t n;
    size_t elem_size;       /* LIST: size of one element */
    sw_walk_check_fn check; /* cross-field checks after the mapping was walked; may be NULL */
};

struct sw_walk_msg {
    size_t line, col, seq;
    char *text;
};

struct sw_walk {
    const char *file;
    yaml_document_t *doc;
    sw_walk_getenv_fn getenv_fn;
    void *getenv_ud;
    void *user;             /* the struct being filled, for check functions */
    struct sw_walk_msg *msgs;
    size_t n_msgs, cap_msgs, dropped;
    bool oom;
};

/* A scalar after ${NAME} substitution. v is owned by the caller (free()). */
struct sw_walk_scalar {
    char *v;
    size_t len;
    const char *raw;        /* the source text, borrowed from the document */
    size_t raw_len;
    bool substituted;       /* v came (partly) from the environment: never show v */
    bool null;              /* plain "", "~" or "null" */
};

void sw_walk_init(struct sw_walk *w, const char *file, yaml_document_t *doc,
                  sw_walk_getenv_fn getenv_fn, void *ud, void *user);

/* Records "file:line:col: path: message" (line and col 1-based; path may be ""). */
void sw_walk_error_at(struct sw_walk *w, size_t line, size_t col, const char *path,
                      const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* Same, at the start of node (1:1 when node is NULL). */
void sw_walk_error(struct sw_walk *w, const yaml_node_t *node, const char *path,
                   const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Walks mapping `node` against `sec`, storing into base; defaults are applied
 * first, then every key is checked, then sec->check runs. */
void sw_walk_map(struct sw_walk *w, const struct sw_walk_section *sec,
                 const yaml_node_t *node, void *base, const char *path, size_t index);

/* Sets every default of sec (and of its nested maps) into base. */
void sw_walk_defaults(const struct sw_walk_section *sec, void *base);

/* Substitutes ${NAME} in a scalar node. SW_OK, or SW_EINVAL after reporting
 * (unset variable, bad reference, too long), or SW_ENOMEM. */
int sw_walk_scalar(struct sw_walk *w, const yaml_node_t *node, const char *path,
                   struct sw_walk_scalar *out);

/* A string setting of type s->type (TEXT, NAME or SECRET) from node: checks
 * the node's type and content, reports problems, and on success stores a
 * malloc'd string in *out. */
int sw_walk_string(struct sw_walk *w, const struct sw_walk_setting *s,
                   const yaml_node_t *node, const char *path, char **out);

/* One string of a list: i its index, ipath "path[i]", v its value (malloc'd;
 * the callback owns it: it keeps or frees it). */
typedef void (*sw_walk_item_fn)(struct sw_walk *w, const yaml_node_t *item, const char *ipath,
                                size_t i, char *v, void *ctx);

/* Walks the YAML list `node`: each item is read as the string setting
 * `item` (problems reported at path[i]) and given to each(). A node that is
 * not a list is reported as "expected <want>, got <what it is>". Returns the
 * number of items, or -1 when node is not a list. */
long sw_walk_strings(struct sw_walk *w, const struct sw_walk_setting *item, const yaml_node_t *node,
                     const char *path, const char *want, sw_walk_item_fn each, void *ctx);

/* Appends n bytes of s to out with every URL in it ("scheme://...") shown
 * without its credentials and query: the user:pass@ part becomes "***@",
 * the query "?***", a fragment "#***"; the rest stays as it is. Every
 * quoted value in a message goes through it (sw_walk_show, sw_walk_describe). */
int sw_walk_redact_urls(const char *s, size_t n, struct sw_buf *out);

/* Writes a printable, quoted, bounded rendering of the scalar for messages:
 * "edge", or "${TIER}" (after substitution) when it came from the environment. */
void sw_walk_show(const struct sw_walk_scalar *s, char *out, size_t cap);

/* "a mapping", "a list", "null" or the quoted scalar, for "got ..." messages. */
void sw_walk_describe(struct sw_walk *w, const yaml_node_t *node, char *out, size_t cap);

/* key.path joining: "" + "listen" = "listen", "limits" + "max_body_bytes". */
void sw_walk_path_key(char *out, size_t cap, const char *path, const char *key);
void sw_walk_path_index(char *out, size_t cap, const char *path, size_t i);

/* The value node of the setting named key in vals (see sw_walk_check_fn). */
const yaml_node_t *sw_walk_val(const struct sw_walk_section *sec,
                               const yaml_node_t *const *vals, const char *key);

/* Hands the messages, sorted by position, to errs (which takes ownership).
 * Returns SW_OK when there were none, SW_EINVAL when there were, SW_ENOMEM if
 * memory ran out at any point. Frees what it holds either way. */
int sw_walk_finish(struct sw_walk *w, struct sw_config_errors *errs);

#endif
