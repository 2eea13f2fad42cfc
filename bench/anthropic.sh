#!/usr/bin/env bash
# The cost of speaking Anthropic's Messages API, as ratios against the plain
# OpenAI path in the same run: Spillway in front of two llmsim processes (one
# OpenAI dialect, one Anthropic dialect; no token delay), wrk sending small
# non-streamed requests for DURATION seconds over CONNS connections in each of
# four combinations:
#   openai -> openai        the baseline (the client's bytes spliced, no tree)
#   anthropic -> openai     request and answer translated
#   openai -> anthropic     request and answer translated
#   anthropic -> anthropic  the client's own body, model rewritten
#   bench/anthropic.sh                 DURATION=5 CONNS=32
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
DURATION=${DURATION:-5}
CONNS=${CONNS:-32}
. bench/lib.sh   # bench_scratch, log_port
bench_scratch

# Starts a command in this shell (so its pid is in pids, stopped on exit) with
# its output in $tmp/LOG; sets URL to where it listens.
start() {   # LOG command...
  "${@:2}" >"$tmp/$1" 2>&1 &
  pids+=($!)
  URL="http://127.0.0.1:$(log_port "$tmp/$1")"
}
start oai.log "$BUILD/llmsim" --port 0 --model m --decode-tps 0 --slots 10000; oai=$URL
start ant.log "$BUILD/llmsim" --port 0 --dialect anthropic --model m --decode-tps 0 --slots 10000; ant=$URL
cat >"$tmp/gw.yaml" <<YAML
listen: "127.0.0.1:0"
backends:
  - { name: o, tier: local, url: "$oai", model: m, slots: 1000, queue_max: 100000 }
  - { name: a, tier: local, url: "$ant", model: m, slots: 1000, queue_max: 100000, dialect: anthropic }
models:
  - { name: to-openai, backends: [o] }
  - { name: to-anthropic, backends: [a] }
pii: { policy: off }
YAML
start gw.log "$BUILD/spillway" -c "$tmp/gw.yaml" --log-level error; gw=$URL

run() {   # $1 client API, $2 model: requests/s
  out=$(BENCH_API=$1 BENCH_MODEL=$2 wrk -t1 -c"$CONNS" -d"${DURATION}s" -s bench/anthropic.lua "$gw")
  if grep -q 'Non-2xx' <<<"$out"; then echo "bench: $1 -> $2 had failed requests:" >&2; echo "$out" >&2; exit 1; fi
  awk '/Requests\/sec/ {print $2}' <<<"$out"
}
base=$(run openai to-openai)
printf '%-26s %10s %7s\n' "client -> backend" "req/s" "ratio"
printf '%-26s %10.0f %7.2f\n' "openai -> openai" "$base" 1
for combo in "anthropic to-openai" "openai to-anthropic" "anthropic to-anthropic"; do
  set -- $combo
  r=$(run "$1" "$2")
  printf '%-26s %10.0f %7.2f\n' "$1 -> ${2#to-}" "$r" "$(awk -v a="$r" -v b="$base" 'BEGIN{print a/b}')"
done
