#!/usr/bin/env bash
# What a burst of new streams costs one proxy, counted rather than timed, up
# to their first bytes: N streams opened at once (bench/streams.c, Connection:
# close, at most WINDOW waiting for their first byte) against bench/upstream.c
# with EVENTS SSE events EVENT_MS apart, so the first event of each comes at
# once and the next long after the measurement. Configured by bench/targets.sh
# (Spillway with every feature on). A warm-up burst of WARMN streams runs to
# its end first (its upstream connections stay pooled).
#
#   MODE=instr    callgrind, zeroed before the burst, dumped WAIT s after it
#                 starts: user-space instructions per stream start
#   MODE=syscalls strace -c -f over WAIT s from the burst: syscalls per start
#   MODE=rss      VmRSS sampled for WAIT s from the burst, and the streams
#                 open then (ss): (peak - before) / N, KB per open stream
#
#   MODE=instr bench/stream_starts.sh
#   MODE=rss N=8000 EVENT_MS=14000 WAIT=12 bench/stream_starts.sh
#
# Knobs (environment): MODE (instr), TARGET (spillway, nginx, haproxy), N
# (200), WINDOW (1000), WARMN (20), EVENT_MS (10000), EVENTS (3), WAIT (6),
# EXTRA (more lines for Spillway's config, e.g. 'routing: { affinity:
# { enabled: false } }'), BUILD (build), KEEP=1 (keep the profile).
# docs/internals/datapath.md ("A burst of stream starts") has the results.
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD=${BUILD:-build}
PATH=$PATH:/usr/sbin:/sbin   # nginx, haproxy
MODE=${MODE:-instr}
TARGET=${TARGET:-spillway}
N=${N:-200}
WINDOW=${WINDOW:-1000}
WARMN=${WARMN:-20}
EVENT_MS=${EVENT_MS:-10000}
EVENTS=${EVENTS:-3}
WAIT=${WAIT:-6}
PROXY_CPU=${PROXY_CPU:-1}
LOAD_CPU=${LOAD_CPU:-0}
WAIT_TRIES=${WAIT_TRIES:-2400}   # start-up under valgrind
BODY=bench/chat-1k.json
[ "$MODE" = instr ] && NGINX_MAIN="master_process off;"   # one process for valgrind

ulimit -n "$(ulimit -Hn)"
scripts/deps.sh bench
make -s --no-print-directory BUILD="$BUILD" all
. bench/lib.sh       # bench_scratch, log_port, wait_http
bench_scratch
. bench/targets.sh   # build_tools, write_configs, start_target
build_tools

taskset -c "$LOAD_CPU" "$BUILD/bench/upstream" 0 "$EVENT_MS" "$EVENTS" >"$tmp/upstream.log" 2>&1 &
pids+=($!)
UP=$(log_port "$tmp/upstream.log")
write_configs "$UP"
[ -n "${EXTRA:-}" ] && echo "$EXTRA" >>"$tmp/spillway.yaml"

case $MODE in
instr) start_target "$TARGET" valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.out" ;;
syscalls | rss) start_target "$TARGET" ;;
*) echo "stream_starts.sh: MODE is instr, syscalls or rss" >&2; exit 2 ;;
esac
PID=${PID_OF[$TARGET]}
wait_http "http://${URL[$TARGET]}/health"
burst() { # n: streams at once, in the background; sets CLIENT
  taskset -c "$LOAD_CPU" "$BUILD/bench/streams" "${URL[$TARGET]}" "$1" "$BODY" "" "$WINDOW" 1 \
    >"$tmp/streams.out" &
  CLIENT=$!
}
burst "$WARMN"
wait "$CLIENT"
all=$( (pgrep -P "$PID" || true; echo "$PID") | tr '\n' ' ')

case $MODE in
instr)
  callgrind_control -z "$PID" >/dev/null 2>&1
  burst "$N"
  sleep "$WAIT"
  callgrind_control -d starts "$PID" >/dev/null 2>&1
  sleep 1
  f=$(ls -t "$tmp"/cg.out* | head -1)
  ir=$(awk '/^(summary|totals):/ {print $2; exit}' "$f")
  echo "$TARGET: $(( ir / N )) instructions per stream start ($N at once)"
  [ "${KEEP:-0}" = 1 ] && cp "$f" "$tmp/callgrind.starts.out"
  [ "$TARGET" = spillway ] && python3 bench/callgrind_libs.py "$f" "$N" spillway 12 start ;;
syscalls)
  opts=$(for p in $all; do printf -- '-p %s ' "$p"; done)
  # shellcheck disable=SC2086
  strace -c -f $opts -o "$tmp/strace.out" 2>"$tmp/strace.err" &
  s=$!
  for _ in $(seq 1 200); do grep -qs attached "$tmp/strace.err" && break; sleep 0.05; done
  burst "$N"
  sleep "$WAIT"
  kill -INT "$s"
  wait "$s" || true
  awk -v n="$N" -v t="$TARGET" '/^-/ || /^% time/ || $NF == "total" || NF < 5 { next }
    { c += $4; top = top sprintf("%s %.2f  ", $NF, $4 / n) }
    END { printf "%s: %.2f syscalls per stream start (%d at once)\n  %s\n", t, c / n, n, top }' \
    "$tmp/strace.out" ;;
rss)
  r0=0; for p in $all; do r0=$((r0 + $(awk '/^VmRSS:/ {print $2}' "/proc/$p/status"))); done
  burst "$N"
  peak=0
  for _ in $(seq 1 $((WAIT * 10))); do
    r=0; for p in $all; do r=$((r + $(awk '/^VmRSS:/ {print $2}' "/proc/$p/status"))); done
    [ "$r" -gt "$peak" ] && peak=$r
    sleep 0.1
  done
  open=$(ss -Htn state established "( sport = :${URL[$TARGET]##*:} )" | wc -l)
  echo "$TARGET: $(echo "scale=2; ($peak - $r0) / $N" | bc) KB per stream" \
    "(RSS $r0 KB before, peak $peak KB; $open of $N open at the end)" ;;
esac
kill "$CLIENT" 2>/dev/null || true
