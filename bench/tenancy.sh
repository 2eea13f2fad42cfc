#!/usr/bin/env bash
# What key budgets and rate limits (keys[].budget, rpm, tpm; docs/scaling.md
# "Keys and teams") add per request: one gateway config with a key without
# limits ("off") and with a budget, rpm and tpm it never reaches ("on"), both
# in front of one priced cloud backend (llmsim, instant answers), in memory
# and on Redis, side by side in one run. "on" reserves and settles every
# request on the key's ledger: in memory a hash lookup; on Redis three round
# trips (admission, reservation, settlement) on top of the others. Reports
# wrk's p50/p99 and the gateway's CPU per request, and the ratios on / off.
#   bench/tenancy.sh               DURATION=10 CONNS=16 ROUNDS=2
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
DURATION=${DURATION:-10}
CONNS=${CONNS:-16}
ROUNDS=${ROUNDS:-2}
for bin in redis-server wrk "$BUILD/spillway" "$BUILD/llmsim"; do
  command -v "$bin" >/dev/null || { echo "bench/tenancy.sh: $bin not found" >&2; exit 1; }
done
. bench/lib.sh
bench_scratch
ticks() { awk '{sub(/.*\) /, ""); print $12 + $13}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)

rport=$(free_port)
redis-server --port "$rport" --bind 127.0.0.1 --save '' --appendonly no > "$tmp/redis.log" &
pids+=($!)
"$BUILD/llmsim" --port 0 --slots 1000 --decode-tps 0 --keep-received 0 > "$tmp/sim.log" 2>&1 &
pids+=($!)
sim=$(log_port "$tmp/sim.log")
wait_log "$tmp/redis.log" "Ready to accept"

conf() { # $1: the key's limits, $2: extra section
  cat <<YAML
listen: "127.0.0.1:0"
decision_log: "/dev/null"
keys:
  - { name: bench, key: sk-bench, id: bench $1 }
backends:
  - { name: cloud, tier: cloud, url: "http://127.0.0.1:$sim", model: m,
      price: { input_usd_per_mtok: 1, output_usd_per_mtok: 1 } }
models:
  - { name: chat, backends: [cloud] }
$2
YAML
}
limits=', budget: { usd: 1000000, window: day }, rpm: 100000000, tpm: 1000000000'
redis="state: { redis: \"redis://127.0.0.1:$rport/0\", timeout_ms: 200 }"
conf "" "" > "$tmp/mem-off.yaml"
conf "$limits" "" > "$tmp/mem-on.yaml"
conf "" "$redis" > "$tmp/redis-off.yaml"
conf "$limits" "$redis" > "$tmp/redis-on.yaml"
modes="mem-off mem-on redis-off redis-on"
declare -A gw gwpid
for mode in $modes; do
  "$BUILD/spillway" -c "$tmp/$mode.yaml" --log-level info > "$tmp/$mode.log" 2>&1 &
  gwpid[$mode]=$!; pids+=($!)
  gw[$mode]=$(log_port "$tmp/$mode.log")
done
for mode in $modes; do wait_log "$tmp/$mode.log" "start-up checks done"; done
wait_log "$tmp/redis-off.log" "shared state again"
wait_log "$tmp/redis-on.log" "shared state again"

run() { # $1 mode -> "p50_ms p99_ms reqs gw_ticks non2xx"
  local g=${gwpid[$1]} t0 t1
  t0=$(ticks "$g")
  BENCH_KEY=sk-bench wrk -t1 -c"$CONNS" -d"${DURATION}s" --latency -s bench/tenancy.lua \
    "http://127.0.0.1:${gw[$1]}/v1/chat/completions" > "$tmp/wrk.txt"
  t1=$(ticks "$g")
  awk -v gt=$((t1 - t0)) '
    function ms(v) { if (v ~ /us$/) return v / 1000; if (v ~ /ms$/) return v + 0; if (v ~ /s$/) return v * 1000; return v }
    / 50%/ { p50 = ms($2) } / 99%/ { p99 = ms($2) } /requests in/ { n = $1 } /Non-2xx/ { bad = $4 }
    END { print p50, p99, n, gt, bad + 0 }' "$tmp/wrk.txt"
}
printf "%-5s %-10s %10s %10s %9s %14s %7s\n" round mode p50_ms p99_ms requests gw_cpu_us/req non2xx
declare -A sum
for r in $(seq "$ROUNDS"); do
  for mode in $modes; do
    read -r p50 p99 n gt bad < <(run "$mode")
    g=$(awk -v t="$gt" -v n="$n" -v hz="$hz" 'BEGIN { printf "%.1f", t / hz * 1e6 / n }')
    printf "%-5s %-10s %10.3f %10.3f %9d %14s %7s\n" "$r" "$mode" "$p50" "$p99" "$n" "$g" "$bad"
    sum[$mode.p50]=$(awk -v a="${sum[$mode.p50]:-0}" -v b="$p50" 'BEGIN{print a+b}')
    sum[$mode.p99]=$(awk -v a="${sum[$mode.p99]:-0}" -v b="$p99" 'BEGIN{print a+b}')
    sum[$mode.cpu]=$(awk -v a="${sum[$mode.cpu]:-0}" -v b="$g" 'BEGIN{print a+b}')
  done
done
ratio() { # $1 / $2 label
  awk -v a="${sum[$1.p50]}" -v b="${sum[$2.p50]}" -v c="${sum[$1.p99]}" -v d="${sum[$2.p99]}" \
      -v e="${sum[$1.cpu]}" -v f="${sum[$2.cpu]}" -v n="$ROUNDS" -v l="$3" 'BEGIN {
    printf "%s: p50 x%.2f (+%.3f ms), p99 x%.2f (+%.3f ms), gateway CPU per request x%.2f (+%.1f us)\n",
      l, a / b, (a - b) / n, c / d, (c - d) / n, e / f, (e - f) / n }'
}
ratio mem-on mem-off "key budgets in memory, on / off"
ratio redis-on redis-off "key budgets on Redis, on / off"
grep -q "unreachable or slow" "$tmp/redis-on.log" && echo "note: the Redis replica was degraded during the run (see its log)" || true
