/* Test helper: drives the response store (src/state/respredis.c, or the
 * memory one without a URL) from stdin, one command per line, fields split
 * by tabs, one answer line each on stdout (it/respstore_redis):
 *
 *   put ID SCOPE SENSITIVE(0|1) CREATED INPUT OUTPUT META  -> ok | err NAME
 *   get ID SCOPE        -> ok SENSITIVE CREATED INPUT OUTPUT META | err NAME
 *   del ID SCOPE        -> ok | err NAME
 *   list ID SCOPE LIMIT ORDER(asc|desc) AFTER("" for none)  -> ok JSON | err NAME
 *   limits ENTRIES BYTES TTL_S                             -> ok
 *   stats               -> ok EVICTED EXPIRED REFUSED
 *
 * Usage: respstore_drive [REDIS_URL KEY_PREFIX] ENTRIES BYTES TTL_S. With a
 * URL it waits (at most 5 s) until the store answers, then prints "ready". */
#include <event2/buffer.h>
#include <event2/event.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/err.h"
#include "config/config.h"
#include "state/respredis.h"
#include "state/respitems.h"
#include "state/resplist.h"
#include "state/respstore.h"

static struct event_base *base;
static bool done, quiet;
static int last_err;

static void pump_later(void);

static void on_done(int err, void *ud)
{
    (void)ud;
    last_err = err;
    if (err)
        printf("err\t%s\n", sw_err_str(err));
    else
        printf("ok\n");
    done = true;
    fflush(stdout);
    pump_later();
}

static void on_get(int err, const struct sw_resp_record *r, void *ud)
{
    (void)ud;
    last_err = err;
    if (quiet)
        ;
    else if (err)
        printf("err\t%s\n", sw_err_str(err));
    else
        printf("ok\t%d\t%lld\t%.*s\t%.*s\t%.*s\n", r->sensitive, (long long)r->created_at_s,
               (int)r->input_len, r->input, (int)r->output_len, r->output, (int)r->meta_len,
               r->meta ? r->meta : "");
    done = true;
    fflush(stdout);
    pump_later();
}

static void on_list(int err, const char *json, size_t len, void *ud)
{
    (void)ud;
    last_err = err;
    if (err)
        printf("err\t%s\n", sw_err_str(err));
    else
        printf("ok\t%.*s\n", (int)len, json);
    done = true;
    fflush(stdout);
    pump_later();
}

static int64_t mono(void *ud)
{
    (void)ud;
    return sw_now_ms();
}

/* Splits line at tabs into at most max fields; returns how many. */
static int split(char *line, char **f, int max)
{
    int n = 0;
    f[n++] = line;
    for (char *p = line; *p && n < max; p++)
        if (*p == '\t') {
            *p = '\0';
            f[n++] = p + 1;
        }
    return n;
}

static struct sw_respstore *store;
static void pump(void);
static void pump_later(void)
{
    if (store)
        pump();
}
static struct evbuffer *in;
static bool eof, pumping;
static struct event *stdin_ev;

/* Runs one command line; its answer sets done (now or later). */
static void exec_line(char *line)
{
    struct sw_respstore *s = store;
    struct sw_respstore_limits lim;
    char *f[9];
    int nf = split(line, f, 9);
    done = false;
    if (!strcmp(f[0], "put") && nf == 8) {
        struct sw_resp_record r = {.id = f[1], .scope = f[2], .sensitive = f[3][0] == '1',
                                   .created_at_s = strtoll(f[4], NULL, 10), .input = f[5],
                                   .input_len = strlen(f[5]), .output = f[6],
                                   .output_len = strlen(f[6]), .meta = f[7],
                                   .meta_len = strlen(f[7])};
        sw_respstore_put(s, &r, on_done, NULL);
    } else if (!strcmp(f[0], "get") && nf == 3) {
        sw_respstore_get(s, f[1], f[2], on_get, NULL);
    } else if (!strcmp(f[0], "del") && nf == 3) {
        sw_respstore_delete(s, f[1], f[2], on_done, NULL);
    } else if (!strcmp(f[0], "list") && nf == 6) {
        struct sw_resp_page_query q = {.limit = strtol(f[3], NULL, 10),
                                       .asc = !strcmp(f[4], "asc"),
                                       .after = f[5][0] ? f[5] : NULL};
        sw_resp_list_input(s, f[1], f[2], &q, on_list, NULL);
    } else if (!strcmp(f[0], "limits") && nf == 4) {
        lim = (struct sw_respstore_limits){strtol(f[1], NULL, 10), strtol(f[2], NULL, 10),
                                           strtol(f[3], NULL, 10)};
        sw_respstore_set_limits(s, &lim);
        printf("ok\n");
        done = true;
    } else if (!strcmp(f[0], "stats") && nf == 1) {
        struct sw_respstore_stats st;
        sw_respstore_stats(s, &st);
        printf("ok\t%llu\t%llu\t%llu\n", (unsigned long long)st.evicted,
               (unsigned long long)st.expired, (unsigned long long)st.refused);
        done = true;
    } else {
        printf("err\tusage\n");
        done = true;
    }
}

/* Runs the buffered lines one at a time: the next once the last answered. */
static void pump(void)
{
    if (pumping)
        return;
    pumping = true;
    char *line;
    size_t n;
    while (done && (line = evbuffer_readln(in, &n, EVBUFFER_EOL_LF))) {
        exec_line(line);
        free(line);
        fflush(stdout);
    }
    pumping = false;
    if (done && eof)
        event_base_loopbreak(base);
}

static void on_stdin(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    (void)arg;
    int r = evbuffer_read(in, fd, 1 << 16);
    if (r <= 0) {
        eof = true;
        event_del(stdin_ev);
    }
    pump();
}

int main(int argc, char **argv)
{
    if (argc != 4 && argc != 6) {
        fprintf(stderr, "usage: %s [REDIS_URL KEY_PREFIX] ENTRIES BYTES TTL_S\n", argv[0]);
        return 2;
    }
    int a = argc == 6 ? 3 : 1;
    struct sw_respstore_limits lim = {strtol(argv[a], NULL, 10), strtol(argv[a + 1], NULL, 10),
                                      strtol(argv[a + 2], NULL, 10)};
    base = event_base_new();
    struct sw_respstore *s;
    if (argc == 6) {
        struct sw_config_state st = {.redis = argv[1], .key_prefix = argv[2], .timeout_ms = 50};
        s = sw_respstore_redis_new(base, &st, &lim);
    } else {
        s = sw_respstore_memory_new(&lim, mono, NULL);
    }
    if (!s)
        return 1;
    if (argc == 6) {
        int64_t end = sw_now_ms() + 5000;
        do {
            done = false;
            /* a get answers "unavailable" until the connection is up */
            quiet = true;
            sw_respstore_get(s, "ready-probe", "", on_get, NULL);
            while (!done)
                event_base_loop(base, EVLOOP_ONCE);
            if (last_err == SW_EUNAVAILABLE) {
                struct timeval tv = {0, 20000};
                event_base_loopexit(base, &tv);
                event_base_dispatch(base);
            }
        } while (last_err == SW_EUNAVAILABLE && sw_now_ms() < end);
        quiet = false;
        printf("ready\n");
        fflush(stdout);
    }
    /* stdin on the loop, so the store's timers (reconnects) run between commands */
    store = s;
    in = evbuffer_new();
    stdin_ev = event_new(base, 0, EV_READ | EV_PERSIST, on_stdin, NULL);
    event_add(stdin_ev, NULL);
    done = true;
    event_base_dispatch(base);
    event_free(stdin_ev);
    evbuffer_free(in);
    sw_respstore_free(s);
    event_base_free(base);
    return 0;
}
