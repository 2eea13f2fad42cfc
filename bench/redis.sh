#!/usr/bin/env bash
# What the shared state (state.redis, docs/scaling.md) adds per request: the
# same gateway config with and without Redis, side by side in one run, in
# front of one llmsim (instant answers) and one redis-server. Each request
# takes a local slot, so with Redis it makes two round trips (lease, release).
# Reports wrk's p50/p99 latency and the gateway's CPU per request (and Redis's),
# and the ratios Redis on / off. "tls" is the same over rediss:// to a
# TLS-only redis-server (a CA and certificate made with openssl here), with
# its ratios to off and to on. Runs alternate off/on/tls ROUNDS times.
#   bench/redis.sh                 DURATION=10 CONNS=16 ROUNDS=2
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
DURATION=${DURATION:-10}
CONNS=${CONNS:-16}
ROUNDS=${ROUNDS:-2}
for bin in redis-server wrk openssl "$BUILD/spillway" "$BUILD/llmsim"; do
  command -v "$bin" >/dev/null || { echo "bench/redis.sh: $bin not found" >&2; exit 1; }
done
. bench/lib.sh   # bench_scratch, log_port, free_port, wait_log
bench_scratch
ticks() { awk '{sub(/.*\) /, ""); print $12 + $13}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)

rport=$(free_port)
redis-server --port "$rport" --bind 127.0.0.1 --save '' --appendonly no > "$tmp/redis.log" &
rpid=$!; pids+=($rpid)
( cd "$tmp"
  openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=bench-ca -keyout ca.key -out ca.crt
  openssl req -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 -keyout server.key -out server.csr
  echo 'subjectAltName=IP:127.0.0.1' > ext
  openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 1 -extfile ext -out server.crt
) > /dev/null 2>&1
tport=$(free_port)
redis-server --port 0 --tls-port "$tport" --tls-cert-file "$tmp/server.crt" --tls-key-file "$tmp/server.key" \
  --tls-auth-clients no --bind 127.0.0.1 --save '' --appendonly no > "$tmp/redis-tls.log" &
tpid=$!; pids+=($tpid)
"$BUILD/llmsim" --port 0 --slots 1000 --decode-tps 0 --keep-received 0 > "$tmp/sim.log" 2>&1 &
pids+=($!)
sim=$(log_port "$tmp/sim.log")
wait_log "$tmp/redis.log" "Ready to accept"
wait_log "$tmp/redis-tls.log" "Ready to accept"

conf() { # $1: extra section
  cat <<YAML
listen: "127.0.0.1:0"
decision_log: "/dev/null"
backends:
  - { name: edge, tier: local, url: "http://127.0.0.1:$sim", model: m, slots: 256, queue_max: 1000 }
models:
  - { name: chat, backends: [edge] }
$1
YAML
}
conf "" > "$tmp/off.yaml"
conf "state: { redis: \"redis://127.0.0.1:$rport/0\", timeout_ms: 200 }" > "$tmp/on.yaml"
conf "state: { redis: \"rediss://127.0.0.1:$tport/0\", timeout_ms: 200, tls: { ca_file: \"$tmp/ca.crt\" } }" > "$tmp/tls.yaml"
declare -A gw gwpid rpids=([off]=$rpid [on]=$rpid [tls]=$tpid)
for mode in off on tls; do
  "$BUILD/spillway" -c "$tmp/$mode.yaml" --log-level info > "$tmp/$mode.log" 2>&1 &
  gwpid[$mode]=$!; pids+=($!)
  gw[$mode]=$(log_port "$tmp/$mode.log")
done
wait_log "$tmp/off.log" "start-up checks done"
wait_log "$tmp/on.log" "start-up checks done"
wait_log "$tmp/on.log" "shared state again"
wait_log "$tmp/tls.log" "start-up checks done"
wait_log "$tmp/tls.log" "shared state again"

run() { # $1 mode -> "p50_ms p99_ms reqs gw_ticks redis_ticks"
  local g=${gwpid[$1]} rpid=${rpids[$1]} t0 r0
  t0=$(ticks "$g"); r0=$(ticks "$rpid")
  wrk -t1 -c"$CONNS" -d"${DURATION}s" --latency -s bench/chat.lua "http://127.0.0.1:${gw[$1]}/v1/chat/completions" > "$tmp/wrk.txt"
  local t1 r1
  t1=$(ticks "$g"); r1=$(ticks "$rpid")
  awk -v gt=$((t1 - t0)) -v rt=$((r1 - r0)) '
    function ms(v) { if (v ~ /us$/) return v / 1000; if (v ~ /ms$/) return v + 0; if (v ~ /s$/) return v * 1000; return v }
    / 50%/ { p50 = ms($2) } / 99%/ { p99 = ms($2) } /requests in/ { n = $1 }
    END { print p50, p99, n, gt, rt }' "$tmp/wrk.txt"
}
printf "%-5s %-6s %10s %10s %9s %14s %14s\n" round mode p50_ms p99_ms requests gw_cpu_us/req redis_cpu_us/req
declare -A sum
for r in $(seq "$ROUNDS"); do
  for mode in off on tls; do
    read -r p50 p99 n gt rt < <(run "$mode")
    g=$(awk -v t="$gt" -v n="$n" -v hz="$hz" 'BEGIN { printf "%.1f", t / hz * 1e6 / n }')
    rr=$(awk -v t="$rt" -v n="$n" -v hz="$hz" 'BEGIN { printf "%.1f", t / hz * 1e6 / n }')
    printf "%-5s %-6s %10.3f %10.3f %9d %14s %14s\n" "$r" "$mode" "$p50" "$p99" "$n" "$g" "$rr"
    sum[$mode.p50]=$(awk -v a="${sum[$mode.p50]:-0}" -v b="$p50" 'BEGIN{print a+b}')
    sum[$mode.p99]=$(awk -v a="${sum[$mode.p99]:-0}" -v b="$p99" 'BEGIN{print a+b}')
    sum[$mode.cpu]=$(awk -v a="${sum[$mode.cpu]:-0}" -v b="$g" 'BEGIN{print a+b}')
  done
done
awk -v a="${sum[on.p50]}" -v b="${sum[off.p50]}" -v c="${sum[on.p99]}" -v d="${sum[off.p99]}" \
    -v e="${sum[on.cpu]}" -v f="${sum[off.cpu]}" -v n="$ROUNDS" 'BEGIN {
  printf "redis on / off: p50 x%.2f (+%.3f ms), p99 x%.2f (+%.3f ms), gateway CPU per request x%.2f (+%.1f us)\n",
    a / b, (a - b) / n, c / d, (c - d) / n, e / f, (e - f) / n }'
ratio() { # $1 / $2 label
  awk -v a="${sum[$1.p50]}" -v b="${sum[$2.p50]}" -v c="${sum[$1.p99]}" -v d="${sum[$2.p99]}" \
      -v e="${sum[$1.cpu]}" -v f="${sum[$2.cpu]}" -v n="$ROUNDS" -v l="$3" 'BEGIN {
    printf "%s: p50 x%.2f (+%.3f ms), p99 x%.2f (+%.3f ms), gateway CPU per request x%.2f (+%.1f us)\n",
      l, a / b, (a - b) / n, c / d, (c - d) / n, e / f, (e - f) / n }'
}
ratio tls off "rediss / off"
ratio tls on "rediss / redis"
grep -q "unreachable or slow" "$tmp/tls.log" && echo "note: the rediss replica was degraded during the run (see its log)" || true
grep -q "unreachable or slow" "$tmp/on.log" && echo "note: the Redis replica was degraded during the run (see its log)" || true
