/* PII benchmarks on one core over a corpus of messages separated by \x1e
 * (bench/pii_corpus.py). Every figure is MB/s over the same bytes, best of
 * REPS passes, printed next to baselines measured in the same process.
 *   pii_bench engines CORPUS   vectorscan vs PCRE2-JIT on the built-in patterns
 *   pii_bench pii CORPUS       the engine: detection, mask, mask+unmask
 *   pii_bench spans CORPUS     every span found (message start length type), to diff two trees
 *   pii_bench request BODY     sw_pii_scan_request on one JSON body, 1000 times */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <hs/hs.h>
#include <jansson.h>
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/buf.h"
#include "common/err.h"
#include "pii/detect.h"
#include "pii/map.h"
#include "pii/pii.h"

#define REPS 5

struct msg {
    const char *p;
    size_t n;
};

static struct msg *msgs;
static size_t n_msgs, total;
static volatile size_t sink;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void load(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        exit(2);
    }
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)sz + 1);
    if (!buf || fread(buf, 1, (size_t)sz, f) != (size_t)sz)
        exit(2);
    fclose(f);
    buf[sz] = '\0';
    size_t cap = 1024;
    msgs = malloc(cap * sizeof *msgs);
    for (char *p = buf, *end = buf + sz; p < end;) {
        char *q = memchr(p, '\x1e', (size_t)(end - p));
        if (!q)
            q = end;
        if (n_msgs == cap)
            msgs = realloc(msgs, (cap *= 2) * sizeof *msgs);
        msgs[n_msgs++] = (struct msg){p, (size_t)(q - p)};
        total += (size_t)(q - p);
        *q = '\0';
        p = q + 1;
    }
}

typedef void (*pass_fn)(void *ud);

static double run(const char *name, pass_fn fn, void *ud, double base)
{
    double best = 1e9;
    fn(ud);     /* warm-up */
    for (int r = 0; r < REPS; r++) {
        double t0 = now_s();
        fn(ud);
        double t = now_s() - t0;
        if (t < best)
            best = t;
    }
    double mbs = total / 1048576.0 / best;
    if (base > 0)
        printf("%-44s %9.0f MB/s   %6.3fx baseline\n", name, mbs, mbs / base);
    else
        printf("%-44s %9.0f MB/s\n", name, mbs);
    return mbs;
}

/* ---- Baselines ---- */

static void p_memchr(void *ud)
{
    (void)ud;
    size_t c = 0;
    for (size_t i = 0; i < n_msgs; i++)
        c += memchr(msgs[i].p, '\x01', msgs[i].n) != NULL;
    sink = c;
}

static void p_strlen(void *ud)
{
    (void)ud;
    size_t c = 0;
    for (size_t i = 0; i < n_msgs; i++)
        c += strlen(msgs[i].p);
    sink = c;
}

/* ---- vectorscan ---- */

struct hs_ctx {
    hs_database_t *db;
    hs_scratch_t *scratch;
    size_t matches;
};

static int hs_count(unsigned id, unsigned long long from, unsigned long long to, unsigned flags,
                    void *ctx)
{
    (void)id, (void)from, (void)to, (void)flags;
    ((struct hs_ctx *)ctx)->matches++;
    return 0;
}

static void p_hs(void *ud)
{
    struct hs_ctx *c = ud;
    c->matches = 0;
    for (size_t i = 0; i < n_msgs; i++)
        hs_scan(c->db, msgs[i].p, (unsigned)msgs[i].n, 0, c->scratch, hs_count, c);
    sink = c->matches;
}

static size_t n_patterns(void)
{
    size_t n = 0;
    int ci;
    while (sw_pii_builtin_regex(n, &ci))
        n++;
    return n;
}

static int hs_build(struct hs_ctx *c, unsigned som)
{
    size_t n = n_patterns();
    const char *res[64];
    unsigned flags[64], ids[64];
    for (size_t i = 0; i < n; i++) {
        int ci;
        res[i] = sw_pii_builtin_regex(i, &ci);
        flags[i] = som | (ci ? HS_FLAG_CASELESS : 0);
        ids[i] = (unsigned)i;
    }
    hs_compile_error_t *err;
    if (hs_compile_multi(res, flags, ids, (unsigned)n, HS_MODE_BLOCK, NULL, &c->db, &err)) {
        fprintf(stderr, "hs: %s\n", err->message);
        return -1;
    }
    c->scratch = NULL;
    return hs_alloc_scratch(c->db, &c->scratch);
}

/* ---- PCRE2 JIT ---- */

struct pc_ctx {
    pcre2_code *code[64];
    size_t n;
    pcre2_match_data *md;
    pcre2_match_context *mc;
    pcre2_jit_stack *js;
    size_t matches;
};

static pcre2_code *pc_compile(const char *re, int caseless)
{
    int ec;
    PCRE2_SIZE eo;
    pcre2_code *c = pcre2_compile((PCRE2_SPTR)re, PCRE2_ZERO_TERMINATED,
                                  caseless ? PCRE2_CASELESS : 0, &ec, &eo, NULL);
    if (!c) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(ec, msg, sizeof msg);
        fprintf(stderr, "pcre2: %s at %zu in %s\n", msg, (size_t)eo, re);
        exit(2);
    }
    if (pcre2_jit_compile(c, PCRE2_JIT_COMPLETE)) {
        fprintf(stderr, "pcre2: JIT unavailable\n");
        exit(2);
    }
    return c;
}

static void p_pcre(void *ud)
{
    struct pc_ctx *c = ud;
    c->matches = 0;
    for (size_t k = 0; k < c->n; k++)
        for (size_t i = 0; i < n_msgs; i++) {
            PCRE2_SIZE off = 0;
            while (off <= msgs[i].n) {
                int rc = pcre2_jit_match(c->code[k], (PCRE2_SPTR)msgs[i].p, msgs[i].n, off, 0,
                                         c->md, c->mc);
                if (rc < 0)
                    break;
                PCRE2_SIZE *ov = pcre2_get_ovector_pointer(c->md);
                c->matches++;
                off = ov[1] > ov[0] ? ov[1] : ov[0] + 1;
            }
        }
    sink = c->matches;
}

static void pc_init(struct pc_ctx *c)
{
    c->md = pcre2_match_data_create(64, NULL);
    c->mc = pcre2_match_context_create(NULL);
    c->js = pcre2_jit_stack_create(32 * 1024, 1024 * 1024, NULL);
    pcre2_jit_stack_assign(c->mc, NULL, c->js);
}

static int engines(void)
{
    printf("corpus: %zu messages, %.1f MB; %zu built-in patterns; best of %d\n", n_msgs,
           total / 1048576.0, n_patterns(), REPS);
    double base = run("baseline memchr (no hit)", p_memchr, NULL, 0);
    run("baseline strlen", p_strlen, NULL, base);

    struct hs_ctx hs_som = {0}, hs_plain = {0};
    if (hs_build(&hs_som, HS_FLAG_SOM_LEFTMOST) || hs_build(&hs_plain, 0))
        return 1;
    run("vectorscan, one db, SOM leftmost", p_hs, &hs_som, base);
    printf("    (%zu raw matches)\n", hs_som.matches);
    run("vectorscan, one db, end offsets only", p_hs, &hs_plain, base);

    struct pc_ctx alt = {0}, sep = {0};
    pc_init(&alt);
    pc_init(&sep);
    /* one alternation of every pattern */
    struct sw_buf b;
    sw_buf_init(&b, 1 << 20);
    size_t n = n_patterns();
    for (size_t i = 0; i < n; i++) {
        int ci;
        const char *re = sw_pii_builtin_regex(i, &ci);
        sw_buf_appendf(&b, "%s(?:%s%s)", i ? "|" : "", ci ? "(?i)" : "", re);
        sep.code[sep.n++] = pc_compile(re, ci);
    }
    alt.code[alt.n++] = pc_compile(b.ptr, 0);
    run("PCRE2 JIT, one alternation", p_pcre, &alt, base);
    run("PCRE2 JIT, one pass per pattern", p_pcre, &sep, base);
    sw_buf_free(&b);
    return 0;
}

/* ---- The engine ---- */

struct eng_ctx {
    struct sw_pii_engine *e;
    size_t spans;
    struct sw_buf masked, restored;
    int mismatch;
};

static int on_span(void *ud, const struct sw_pii_span *sp)
{
    (void)sp;
    ((struct eng_ctx *)ud)->spans++;
    return 0;
}

static void p_detect(void *ud)
{
    struct eng_ctx *c = ud;
    c->spans = 0;
    for (size_t i = 0; i < n_msgs; i++)
        if (sw_pii_scan_text(c->e, msgs[i].p, msgs[i].n, on_span, c))
            exit(3);
    sink = c->spans;
}

static void p_mask(void *ud)
{
    struct eng_ctx *c = ud;
    for (size_t i = 0; i < n_msgs; i++) {
        struct sw_pii_map *m = sw_pii_map_new();
        sw_buf_reset(&c->masked);
        if (sw_pii_mask_text(c->e, m, msgs[i].p, msgs[i].n, &c->masked, NULL))
            exit(3);
        sw_pii_map_free(m);
    }
}

/* Placeholder-shaped text already in the message ("[EMAIL_1]" in the docs)
 * is reserved before masking, as the request path does (mask.c,
 * reserve_field): never issued, never "restored". */
static void reserve_present(struct sw_pii_map *m, const char *t, size_t len)
{
    for (const char *b = t; (b = memchr(b, '[', (size_t)(t + len - b))); b++) {
        size_t i = (size_t)(b - t), j = i + 1;
        while (j < len && j - i < SW_PII_MAX_PLACEHOLDER && sw_pii_ph_char((unsigned char)t[j]))
            j++;
        if (j < len && t[j] == ']' && j > i + 1 && j + 1 - i <= SW_PII_MAX_PLACEHOLDER &&
            sw_pii_map_reserve(m, b, j + 1 - i))
            exit(3);
    }
}

static void p_mask_unmask(void *ud)
{
    struct eng_ctx *c = ud;
    for (size_t i = 0; i < n_msgs; i++) {
        struct sw_pii_map *m = sw_pii_map_new();
        reserve_present(m, msgs[i].p, msgs[i].n);
        sw_buf_reset(&c->masked);
        sw_buf_reset(&c->restored);
        if (sw_pii_mask_text(c->e, m, msgs[i].p, msgs[i].n, &c->masked, NULL) ||
            sw_pii_unmask_text(m, c->masked.ptr, c->masked.len, 0, &c->restored))
            exit(3);
        if (c->restored.len != msgs[i].n || memcmp(c->restored.ptr, msgs[i].p, msgs[i].n))
            c->mismatch++;
        sw_pii_map_free(m);
    }
}

static int pii(void)
{
    struct eng_ctx c = {0};
    char err[256];
    if (sw_pii_engine_new(NULL, 0, &c.e, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    sw_buf_init(&c.masked, SW_PII_MAX_TEXT);
    sw_buf_init(&c.restored, SW_PII_MAX_TEXT);
    printf("corpus: %zu messages, %.1f MB, one core, best of %d\n", n_msgs, total / 1048576.0,
           REPS);
    double base = run("baseline memchr (no hit)", p_memchr, NULL, 0);
    run("baseline strlen", p_strlen, NULL, base);
    run("detect (sw_pii_scan_text)", p_detect, &c, base);
    printf("    (%zu entities)\n", c.spans);
    run("mask (new map + sw_pii_mask_text + free)", p_mask, &c, base);
    run("mask+unmask (round trip, checked)", p_mask_unmask, &c, base);
    if (c.mismatch) {
        printf("ROUND TRIP MISMATCH in %d messages\n", c.mismatch);
        return 1;
    }
    sw_buf_free(&c.masked);
    sw_buf_free(&c.restored);
    sw_pii_engine_free(c.e);
    return 0;
}

/* One detection pass and nothing else, for an instruction count
 * (bench/pii_instr.sh: valgrind counts only what sw_pii_scan_text runs). */
static int count(void)
{
    struct eng_ctx c = {0};
    char err[256];
    if (sw_pii_engine_new(NULL, 0, &c.e, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    p_detect(&c);
    printf("corpus: %zu messages, %zu bytes, %zu entities\n", n_msgs, total, c.spans);
    sw_pii_engine_free(c.e);
    return 0;
}

/* Every span of every message (message, start, length, type), to compare
 * two versions of the detector on the whole corpus: diff their outputs. */
struct dump_ctx { size_t msg; };

static int on_dump(void *ud, const struct sw_pii_span *sp)
{
    printf("%zu %zu %zu %d\n", ((struct dump_ctx *)ud)->msg, sp->start, sp->len, sp->type);
    return 0;
}

static int spans(void)
{
    struct sw_pii_engine *e;
    char err[256];
    if (sw_pii_engine_new(NULL, 0, &e, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    struct dump_ctx d;
    for (d.msg = 0; d.msg < n_msgs; d.msg++)
        if (sw_pii_scan_text(e, msgs[d.msg].p, msgs[d.msg].n, on_dump, &d))
            return 3;
    sw_pii_engine_free(e);
    return 0;
}

/* sw_pii_scan_request on one request body (bench/chat-1k.json), 1000 times,
 * for an instruction count per request (bench/pii_instr.sh). */
static int request(const char *path)
{
    struct sw_pii_engine *e;
    char err[256];
    json_error_t je;
    json_t *body = json_load_file(path, 0, &je);
    if (!body || sw_pii_engine_new(NULL, 0, &e, err, sizeof err)) {
        fprintf(stderr, "%s\n", body ? err : je.text);
        return 1;
    }
    struct sw_pii_counts counts;
    for (int i = 0; i < 1000; i++)
        if (sw_pii_scan_request(e, body, &counts))
            return 3;
    printf("1000 requests, %u entities each\n", (unsigned)counts.total);
    json_decref(body);
    sw_pii_engine_free(e);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 3 || (strcmp(argv[1], "engines") && strcmp(argv[1], "pii") && strcmp(argv[1], "count") &&
                      strcmp(argv[1], "spans") && strcmp(argv[1], "request"))) {
        fprintf(stderr, "usage: %s engines|pii|count|spans CORPUS | request BODY.json\n", argv[0]);
        return 2;
    }
    if (!strcmp(argv[1], "request"))
        return request(argv[2]);
    load(argv[2]);
    if (!strcmp(argv[1], "spans"))
        return spans();
    return !strcmp(argv[1], "engines") ? engines() : !strcmp(argv[1], "count") ? count() : pii();
}
