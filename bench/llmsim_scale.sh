#!/usr/bin/env bash
# How many concurrent streaming requests llmsim sustains on one core.
#
#   bench/llmsim_scale.sh                       # 2000 streams, 50 tokens/s each
#   CONNS=4000 TPS=20 DURATION=30 bench/llmsim_scale.sh
#
# llmsim runs pinned to CPU $SIM_CPU (taskset) with as many slots as there are
# connections, so nothing queues: wrk, pinned to CPU $LOAD_CPU, keeps CONNS
# keep-alive connections each streaming one chat completion after another
# (MAX_TOKENS tokens at TPS tokens/s). After a warm-up, the script samples
# llmsim's /admin/stats and /proc CPU counters over a steady-state window and
# reports completed streams/s, tokens/s (= SSE chunks/s), llmsim's CPU and how
# late its token timers fired, next to the ideal numbers (CONNS * TPS tokens/s)
# an infinitely fast simulator would reach.
set -euo pipefail
cd "$(dirname "$0")/.."

CONNS=${CONNS:-2000}
TPS=${TPS:-50}
MAX_TOKENS=${MAX_TOKENS:-64}
DURATION=${DURATION:-20}   # wrk run; the window is DURATION - WARMUP - 1 s
WARMUP=${WARMUP:-3}
BUILD=${BUILD:-build}
SIM_CPU=${SIM_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}

ulimit -n "$(ulimit -Hn)"
if [ "$(ulimit -n)" -lt $((CONNS + 100)) ]; then
  echo "llmsim_scale: fd limit $(ulimit -n) is too low for $CONNS connections" >&2
  exit 1
fi
command -v wrk >/dev/null || { echo "llmsim_scale: needs wrk (scripts/deps.sh test)" >&2; exit 1; }
make -s --no-print-directory BUILD="$BUILD" "$BUILD/llmsim"

. bench/lib.sh   # bench_scratch, log_port
bench_scratch
out=$tmp/llmsim.log
taskset -c "$SIM_CPU" "$BUILD/llmsim" --port 0 --slots "$CONNS" --decode-tps "$TPS" \
  --keep-received 0 >"$out" 2>&1 &
sim=$!
pids+=($sim)
port=$(log_port "$out")
url="http://127.0.0.1:$port"

# one sample: "time tokens_sent served lag_sum ticks sim_cpu_ticks wrk_cpu_ticks"
sample() {
  local st
  st=$(curl -s "$url/admin/stats")
  printf '%s %s %s %s %s %s %s\n' "$(date +%s.%N)" \
    "$(sed -n 's/.*"tokens_sent":\([0-9]*\).*/\1/p' <<<"$st")" \
    "$(sed -n 's/.*"served":\([0-9]*\).*/\1/p' <<<"$st")" \
    "$(sed -n 's/.*"timer_lag_us_sum":\([0-9]*\).*/\1/p' <<<"$st")" \
    "$(sed -n 's/.*"timer_ticks":\([0-9]*\).*/\1/p' <<<"$st")" \
    "$(awk '{print $14 + $15}' "/proc/$sim/stat")" \
    "$(awk '{print $14 + $15}' "/proc/$wrk/stat" 2>/dev/null || echo 0)"
}

MAX_TOKENS=$MAX_TOKENS taskset -c "$LOAD_CPU" wrk -t1 -c "$CONNS" -d "${DURATION}s" --timeout 60s \
  -s bench/llmsim_stream.lua "$url" >"$out.wrk" &
wrk=$!
pids+=($wrk)
sleep "$WARMUP"
a=$(sample)
sleep $((DURATION - WARMUP - 1))
b=$(sample)
wait "$wrk" || true
pids=("$sim")   # wrk has ended: its pid may be another process's by now
wrk=
grep '^wrk:' "$out.wrk" || cat "$out.wrk" >&2

awk -v c="$CONNS" -v tps="$TPS" -v n="$MAX_TOKENS" -v hz="$(getconf CLK_TCK)" -v a="$a" -v b="$b" 'BEGIN {
  split(a, x, " "); split(b, y, " ")
  s = y[1] - x[1]
  printf "llmsim_scale: %d concurrent streams, %d tokens each at %g tokens/s; %.1f s steady-state window\n", c, n, tps, s
  printf "  completed streams/s    %9.1f   (ideal %.1f)\n", (y[3] - x[3]) / s, c / (n / tps)
  printf "  tokens/s (SSE chunks)  %9.0f   (ideal %.0f)\n", (y[2] - x[2]) / s, c * tps
  printf "  llmsim CPU             %8.1f %%  of one core (user + sys)\n", 100 * (y[6] - x[6]) / hz / s
  printf "  wrk (load) CPU         %8.1f %%  of one core\n", 100 * (y[7] - x[7]) / hz / s
  if (y[5] > x[5]) printf "  token timer lag avg    %9.2f ms (how late tokens left llmsim)\n", (y[4] - x[4]) / (y[5] - x[5]) / 1000
}'
