#!/usr/bin/env bash
# Gateway overhead: the same wrk load (non-streaming chat completions) once
# directly against a fast llmsim and once through Spillway in front of it, in
# one run on one machine; prints requests/s and p50/p99 latency of both, the
# throughput ratio and the latency Spillway adds.
#   bench/run.sh [DURATION_S] [CONNECTIONS]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
DUR=${1:-10}
CONNS=${2:-64}
scripts/deps.sh test
make -s all

. bench/lib.sh   # bench_scratch, log_port
bench_scratch

# A fast upstream: instant decode, many slots, 16 tokens per answer.
"$BUILD/llmsim" --port 0 --model fast --slots 4096 --decode-tps 0 --max-output-tokens 16 >"$tmp/sim.log" 2>&1 &
pids+=($!)
SIM=$(log_port "$tmp/sim.log")
cat >"$tmp/gw.yaml" <<YAML
listen: "127.0.0.1:0"
backends:
  - { name: fast, tier: local, url: "http://127.0.0.1:$SIM", model: fast, slots: 1024 }
models:
  - { name: chat, backends: [fast] }
limits: { max_connections: 4096 }
YAML
"$BUILD/spillway" -c "$tmp/gw.yaml" --log-level warn >"$tmp/gw.log" 2>&1 &
pids+=($!)
GW=$(log_port "$tmp/gw.log")

run() { # name url model
  BENCH_MODEL=$3 wrk -t1 -c"$CONNS" -d"${DUR}s" --latency -s bench/chat.lua "$2/v1/chat/completions" >"$tmp/$1.txt"
  rps=$(awk '/^Requests\/sec/ {print $2}' "$tmp/$1.txt")
  p50=$(awk '$1=="50%" {print $2}' "$tmp/$1.txt")
  p99=$(awk '$1=="99%" {print $2}' "$tmp/$1.txt")
  non2xx=$(awk '/Non-2xx/ {print $5}' "$tmp/$1.txt")
  printf '%-9s %10s req/s   p50 %8s   p99 %8s   non-2xx %s\n' "$1" "$rps" "$p50" "$p99" "${non2xx:-0}"
  eval "${1}_rps=$rps; ${1}_p50=$p50; ${1}_p99=$p99"
}
ms() { # wrk prints 1.23ms / 456.00us / 1.2s
  case "$1" in *us) echo "${1%us} / 1000" | bc -l ;; *ms) echo "${1%ms}" ;; *s) echo "${1%s} * 1000" | bc -l ;; esac
}

echo "wrk -t1 -c$CONNS -d${DUR}s, non-streaming, 16 output tokens, $(nproc) cores"
wrk -t1 -c"$CONNS" -d2s -s bench/chat.lua "http://127.0.0.1:$SIM/v1/chat/completions" >/dev/null  # warm-up
run direct "http://127.0.0.1:$SIM" fast
run spillway "http://127.0.0.1:$GW" chat
printf 'throughput ratio (spillway/direct): %.2f\n' "$(echo "$spillway_rps / $direct_rps" | bc -l)"
printf 'added latency: p50 %+.3f ms, p99 %+.3f ms\n' \
  "$(echo "$(ms "$spillway_p50") - $(ms "$direct_p50")" | bc -l)" \
  "$(echo "$(ms "$spillway_p99") - $(ms "$direct_p99")" | bc -l)"
