/* A compact JSON writer for jansson trees: the bytes json_dumps(v,
 * JSON_COMPACT) writes, without its per-character callback and its
 * loop-check table. Objects in their iteration (insertion) order, strings
 * escaped as sw_json_escape's default form, integers in decimal, reals as
 * jansson's "%.17g" with ".0" added when it reads as an integer and the
 * exponent's '+' and leading zeros dropped. A string that is not valid
 * UTF-8 fails the dump, as it fails json_dumps. A tree nested deeper than
 * SW_JSON_DUMP_DEPTH is handed to json_dumps itself (which also refuses a
 * tree that contains itself), so the answer is json_dumps's in every case.
 * tests/fuzz/fuzz_jdump.c compares the two on random trees. */
#ifndef SW_COMMON_JDUMP_H
#define SW_COMMON_JDUMP_H

#include <stddef.h>

#include <jansson.h>

#include "common/buf.h"

#define SW_JSON_DUMP_DEPTH 256

/* Appends v (borrowed) to out as json_dumps(v, flags) would write it.
 * flags: JSON_COMPACT, optionally | JSON_ENCODE_ANY (without it a value
 * that is not an object or an array is refused, as json_dumps refuses it);
 * any other flag goes to json_dumps. SW_OK; SW_EINVAL where json_dumps
 * returns NULL (invalid UTF-8, a loop, a refused root); SW_ETOOBIG or
 * SW_ENOMEM. On an error out is as it was. */
int sw_json_dump_buf(const json_t *v, size_t flags, struct sw_buf *out);

/* Texts a dump shares instead of copying them (the kept text of each
 * element the parse memo holds): piece i's len bytes go before offset
 * v[i].at of what the dump wrote, in order; ref keeps them (common/jmemo.h). */
struct sw_json_piece {
    size_t at;
    const char *data;
    size_t len;
    void *ref;
};
struct sw_json_pieces {
    struct sw_json_piece *v;
    size_t n, cap;
    size_t bytes;               /* their lengths' sum */
};

/* sw_json_dump_buf(v, JSON_COMPACT, out) with each element's kept text a
 * piece of pc rather than a copy in out: the text is out's bytes with the
 * pieces put in. On an error pc is empty. */
int sw_json_dump_pieces(const json_t *v, struct sw_buf *out, struct sw_json_pieces *pc);
/* Gives the pieces' references back; pc is empty after. */
void sw_json_pieces_free(struct sw_json_pieces *pc);

/* Appends v in decimal, as the dump writes an integer. */
int sw_json_put_int(struct sw_buf *b, long long v);

/* json_dumps(v, flags) the fast way: a malloc'd NUL-terminated string
 * (free it with free()), or NULL where json_dumps returns NULL. */
char *sw_json_dumps(const json_t *v, size_t flags);

#endif
