/* netimp: an impaired IP link between two network namespaces, for kernels
 * without sch_netem. It opens a TUN device in its own namespace (DEV_A) and one
 * in namespace NS_B (DEV_B, via setns on /run/netns/NS_B), and copies every IP
 * packet from one to the other, each direction impaired alike: a delay with
 * normally distributed jitter, random loss, and reordering (a share of packets
 * skips the delay queue, as netem's `reorder` does). The kernel's TCP on both
 * ends sees real delay, loss and reordering; nothing is simulated above IP.
 *
 *   netimp DEV_A NS_B DEV_B [SEED]
 *
 * It prints "ready" once both devices exist (the caller then gives them
 * addresses and brings them up with `ip`), and reads settings from stdin, one
 * line each, replacing the previous ones, answering "ok" (or "error: ...")
 * on stdout:
 *   delay_ms=300 jitter_ms=100 loss=0.05 reorder=0.25
 * (missing keys are 0; an empty line clears every impairment). At most QMAX
 * packets wait in the delay queue; more are dropped, as a full netem queue
 * does. Exits when stdin closes; the TUN devices go with it. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <math.h>
#include <poll.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

enum { PKT_MAX = 65536, QMAX = 4096 };

struct pkt {
  int64_t due_ns;
  uint64_t seq; /* ties keep arrival order */
  int to;       /* 0: write to DEV_A, 1: to DEV_B */
  size_t len;
  unsigned char *data;
};

struct imp {
  double delay_ms, jitter_ms, loss, reorder;
};

static struct pkt heap[QMAX];
static size_t nheap;
static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint64_t rng_next(void) {
  /* xorshift64* */
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return rng_state * 2685821657736338717ULL;
}

static double uniform01(void) { return (double)(rng_next() >> 11) / 9007199254740992.0; }

static double gauss(void) {
  /* Box-Muller */
  double u = uniform01(), v = uniform01();
  if (u < 1e-300) u = 1e-300;
  return sqrt(-2.0 * log(u)) * cos(2.0 * M_PI * v);
}

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int before(const struct pkt *a, const struct pkt *b) {
  return a->due_ns < b->due_ns || (a->due_ns == b->due_ns && a->seq < b->seq);
}

static void heap_push(struct pkt p) {
  size_t i = nheap++;
  heap[i] = p;
  while (i > 0 && before(&heap[i], &heap[(i - 1) / 2])) {
    struct pkt t = heap[i];
    heap[i] = heap[(i - 1) / 2];
    heap[(i - 1) / 2] = t;
    i = (i - 1) / 2;
  }
}

static struct pkt heap_pop(void) {
  struct pkt top = heap[0];
  heap[0] = heap[--nheap];
  size_t i = 0;
  for (;;) {
    size_t l = 2 * i + 1, r = l + 1, m = i;
    if (l < nheap && before(&heap[l], &heap[m])) m = l;
    if (r < nheap && before(&heap[r], &heap[m])) m = r;
    if (m == i) break;
    struct pkt t = heap[i];
    heap[i] = heap[m];
    heap[m] = t;
    i = m;
  }
  return top;
}

static int tun_open(const char *name) {
  int fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return -1;
  struct ifreq ifr;
  memset(&ifr, 0, sizeof ifr);
  ifr.ifr_flags = IFF_TUN | IFF_NO_PI;
  snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "%s", name);
  if (ioctl(fd, TUNSETIFF, &ifr) < 0) {
    int e = errno;
    close(fd);
    errno = e;
    return -1;
  }
  return fd;
}

/* "delay_ms=300 jitter_ms=100 loss=0.05 reorder=0.25" -> *out; -1 on a bad line. */
static int parse_settings(char *line, struct imp *out, const char **why) {
  struct imp s = {0};
  for (char *save = NULL, *tok = strtok_r(line, " \t\r\n", &save); tok; tok = strtok_r(NULL, " \t\r\n", &save)) {
    char *eq = strchr(tok, '=');
    if (!eq) return *why = "expected key=value", -1;
    *eq = '\0';
    char *end;
    double v = strtod(eq + 1, &end);
    if (end == eq + 1 || *end || !(v >= 0)) return *why = "value must be a number >= 0", -1;
    if (!strcmp(tok, "delay_ms")) s.delay_ms = v;
    else if (!strcmp(tok, "jitter_ms")) s.jitter_ms = v;
    else if (!strcmp(tok, "loss") && v <= 1) s.loss = v;
    else if (!strcmp(tok, "reorder") && v <= 1) s.reorder = v;
    else return *why = "unknown key (delay_ms, jitter_ms, loss, reorder) or share above 1", -1;
  }
  *out = s;
  return 0;
}

static uint64_t seq;
static unsigned long dropped_loss, dropped_full;

/* One packet read from side `from`: dropped, queued, or (no delay) written now. */
static void impair(const struct imp *s, int fds[2], int from, const unsigned char *data, size_t len) {
  if (s->loss > 0 && uniform01() < s->loss) {
    dropped_loss++;
    return;
  }
  double d = s->delay_ms;
  if (s->reorder > 0 && uniform01() < s->reorder) d = 0;
  else if (s->jitter_ms > 0) d += s->jitter_ms * gauss();
  if (d <= 0 && nheap == 0) {
    /* A write error (the far device down, its queue full) loses the packet, as a wire would. */
    (void)!write(fds[!from], data, len);
    return;
  }
  if (nheap == QMAX) {
    dropped_full++;
    return;
  }
  unsigned char *copy = malloc(len);
  if (!copy) {
    dropped_full++;
    return;
  }
  memcpy(copy, data, len);
  heap_push((struct pkt){.due_ns = now_ns() + (int64_t)(d > 0 ? d * 1e6 : 0), .seq = seq++, .to = !from, .len = len, .data = copy});
}

int main(int argc, char **argv) {
  if (argc < 4 || argc > 5 || !strcmp(argv[1], "--help")) {
    fprintf(stderr, "usage: netimp DEV_A NS_B DEV_B [SEED]\n");
    return 2;
  }
  if (argc == 5) rng_state ^= strtoull(argv[4], NULL, 10) * 0x100000001b3ULL;
  int fds[2];
  fds[0] = tun_open(argv[1]);
  if (fds[0] < 0) {
    fprintf(stderr, "netimp: TUN %s: %s\n", argv[1], strerror(errno));
    return 1;
  }
  char nspath[256];
  snprintf(nspath, sizeof nspath, "/run/netns/%s", argv[2]);
  int nsfd = open(nspath, O_RDONLY | O_CLOEXEC);
  if (nsfd < 0 || setns(nsfd, CLONE_NEWNET) < 0) {
    fprintf(stderr, "netimp: namespace %s: %s\n", argv[2], strerror(errno));
    return 1;
  }
  close(nsfd);
  fds[1] = tun_open(argv[3]);
  if (fds[1] < 0) {
    fprintf(stderr, "netimp: TUN %s in %s: %s\n", argv[3], argv[2], strerror(errno));
    return 1;
  }
  setvbuf(stdout, NULL, _IOLBF, 0);
  printf("ready\n");

  struct imp s = {0};
  static unsigned char buf[PKT_MAX];
  char line[512];
  size_t linelen = 0;
  for (;;) {
    int timeout = -1;
    if (nheap) {
      int64_t wait = heap[0].due_ns - now_ns();
      timeout = wait <= 0 ? 0 : (int)((wait + 999999) / 1000000);
    }
    struct pollfd pf[3] = {{fds[0], POLLIN, 0}, {fds[1], POLLIN, 0}, {0, POLLIN, 0}};
    int n = poll(pf, 3, timeout);
    if (n < 0 && errno != EINTR) {
      perror("netimp: poll");
      return 1;
    }
    for (int side = 0; side < 2 && n > 0; side++) {
      if (!(pf[side].revents & POLLIN)) continue;
      /* Bounded batch per wakeup so one busy direction cannot starve the other. */
      for (int k = 0; k < 64; k++) {
        ssize_t r = read(fds[side], buf, sizeof buf);
        if (r <= 0) break;
        impair(&s, fds, side, buf, (size_t)r);
      }
    }
    if (n > 0 && pf[2].revents) {
      ssize_t r = read(0, line + linelen, sizeof line - 1 - linelen);
      if (r <= 0) break; /* stdin closed: the caller is gone */
      linelen += (size_t)r;
      line[linelen] = '\0';
      char *nl;
      while ((nl = strchr(line, '\n'))) {
        *nl = '\0';
        if (!strcmp(line, "stats")) {
          printf("queued=%zu dropped_loss=%lu dropped_full=%lu\n", nheap, dropped_loss, dropped_full);
        } else {
          const char *why = "";
          struct imp next;
          if (parse_settings(line, &next, &why) == 0) {
            s = next;
            printf("ok\n");
          } else {
            printf("error: %s\n", why);
          }
        }
        size_t rest = linelen - (size_t)(nl + 1 - line);
        memmove(line, nl + 1, rest + 1);
        linelen = rest;
      }
      if (linelen == sizeof line - 1) linelen = 0; /* an over-long line is discarded */
    }
    for (int64_t t = now_ns(); nheap && heap[0].due_ns <= t;) {
      struct pkt p = heap_pop();
      (void)!write(fds[p.to], p.data, p.len);
      free(p.data);
    }
  }
  return 0;
}
