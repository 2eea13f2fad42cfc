#!/usr/bin/env bash
# First bytes of bursts of new streams on a fresh proxy: for each target and
# each of RUNS fresh processes, the bursts of BURSTS run one after the other
# (bench/streams.c, Connection: close, at most WINDOW waiting for their first
# byte) against bench/upstream.c (22 SSE events EVENT_MS apart), each to its
# end. A burst bigger than any before opens new upstream connections (the
# ones of the bursts before stay pooled) and, in the proxy, new descriptors;
# the same burst again reuses both. Configured by bench/targets.sh (Spillway
# with every feature on), each proxy pinned to PROXY_CPU, the client and the
# upstream to LOAD_CPU.
#
#   bench/first_burst.sh                          about 1 minute
#   BURSTS="64 200 200" RUNS=3 bench/first_burst.sh
#
# Prints one line per burst: target, run, streams, first byte p50 and p99 in
# ms. Compare the targets within one run of the script only.
# docs/internals/datapath.md ("The first burst: the descriptor table") has
# the results.
#
# Knobs (environment): TARGETS ("spillway nginx"), BURSTS ("64 200 200 2000
# 2000"), RUNS (2), WINDOW (1000), EVENT_MS (50), BUILD (build), PROXY_CPU
# (1), LOAD_CPU (0).
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD=${BUILD:-build}
PATH=$PATH:/usr/sbin:/sbin   # nginx, haproxy
TARGETS=${TARGETS:-"spillway nginx"}
BURSTS=${BURSTS:-"64 200 200 2000 2000"}
RUNS=${RUNS:-2}
WINDOW=${WINDOW:-1000}
EVENT_MS=${EVENT_MS:-50}
PROXY_CPU=${PROXY_CPU:-1}
LOAD_CPU=${LOAD_CPU:-0}
BODY=bench/chat-1k.json

ulimit -n "$(ulimit -Hn)"
scripts/deps.sh bench
make -s --no-print-directory BUILD="$BUILD" all
. bench/lib.sh       # bench_scratch, log_port, wait_http
bench_scratch
. bench/targets.sh   # build_tools, write_configs, start_target
build_tools

taskset -c "$LOAD_CPU" "$BUILD/bench/upstream" 0 "$EVENT_MS" >"$tmp/upstream.log" 2>&1 &
pids+=($!)
UP=$(log_port "$tmp/upstream.log")
write_configs "$UP"

printf '%-10s %4s %7s %9s %9s\n' target run streams "fb p50" "fb p99"
for t in $TARGETS; do
  for r in $(seq 1 "$RUNS"); do
    start_target "$t"
    wait_http "http://${URL[$t]}/health"
    for n in $BURSTS; do
      line=$(taskset -c "$LOAD_CPU" "$BUILD/bench/streams" "${URL[$t]}" "$n" "$BODY" "" "$WINDOW" 1)
      case $line in *" done=$n "*) ;; *) echo "first_burst.sh: $t: $line" >&2; exit 1 ;; esac
      p50=$(sed -n 's/.*fb_p50_ms=\([0-9.]*\).*/\1/p' <<<"$line")
      p99=$(sed -n 's/.*fb_p99_ms=\([0-9.]*\).*/\1/p' <<<"$line")
      printf '%-10s %4s %7s %9s %9s\n' "$t" "$r" "$n" "$p50" "$p99"
    done
    kill "${PID_OF[$t]}" 2>/dev/null || true
    wait "${PID_OF[$t]}" 2>/dev/null || true
  done
done
