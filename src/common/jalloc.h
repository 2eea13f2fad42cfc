#ifndef SW_COMMON_JALLOC_H
#define SW_COMMON_JALLOC_H

#include <stddef.h>

/* jansson's allocator with a per-thread cache of small blocks.
 *
 * A request builds and frees a few dozen jansson values (objects, their
 * hash tables, keys, strings, numbers); an agent's body of a few hundred KB
 * a few thousand, its texts of one to a few KB each. Through glibc's malloc
 * most of them miss its per-thread cache (seven blocks per size, none above
 * 1 KB) and go through the shared bins, whose consolidation a later large
 * allocation then pays for. Here blocks up to SW_JALLOC_MAX_SMALL bytes are
 * kept in per-thread free lists by 16-byte size class (at most
 * SW_JALLOC_KEEP per class), blocks up to SW_JALLOC_MAX_BIG by power-of-two
 * class, all of them together at most SW_JALLOC_KEEP_BYTES per thread;
 * beyond that, and for larger blocks, malloc and free as usual. The bound
 * holds the trees of several agent requests in flight at once (an Anthropic
 * body of 359 KB and its translation take about 0.8 MB of blocks): at 4 MiB,
 * eight at a time overflowed it and a third of their blocks went through
 * malloc and free again (bench/instr.sh with an agent body). The blocks kept
 * are memory the thread had in use; glibc keeps most freed memory too. Every block
 * is a malloc block: what jansson hands out (json_dumps) is released with
 * free().
 *
 * sw_jalloc_install() sets it with json_set_alloc_funcs; it must run before
 * the first jansson value is made. Sanitizer builds install nothing, so
 * AddressSanitizer still sees every jansson block freed. */

#define SW_JALLOC_MAX_SMALL 256
#define SW_JALLOC_KEEP 16384                /* small blocks kept per class */
#define SW_JALLOC_MAX_BIG ((1u << 16) - 8)  /* larger blocks: malloc and free */
#define SW_JALLOC_KEEP_BYTES (16u << 20)    /* bytes kept per thread, every class */

/* Returns 1 when installed, 0 when not (sanitizer build). */
int sw_jalloc_install(void);

/* The allocator itself, for tests: same contract as malloc / free. */
void *sw_jalloc_malloc(size_t n);
void sw_jalloc_free(void *p);

/* Small blocks kept in the calling thread's lists, and bytes kept in all of
 * them, for tests. */
size_t sw_jalloc_cached(void);
size_t sw_jalloc_cached_bytes(void);

#endif
