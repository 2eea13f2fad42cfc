#!/usr/bin/env bash
# The cost of judging an Anthropic client's streamed forced-tool input (passed
# through from an Anthropic backend untranslated) against its input_schema, as a
# ratio against the same stream as text (not judged) in the same run: Spillway in
# front of llmsim --dialect anthropic --reply echo (no token delay); wrk sends a
# streamed request whose 1 KB JSON answer comes back in ~260 events.
#   bench/contract_stream.sh                 DURATION=5 CONNS=16 ROUNDS=5
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
DURATION=${DURATION:-5}
CONNS=${CONNS:-16}
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$tmp"; }
trap cleanup EXIT

start() {   # $1 log, rest: command; echoes its listening URL
  "${@:2}" >"$tmp/$1" 2>&1 &
  pids+=($!)
  for _ in $(seq 100); do
    url=$(sed -n 's/.*listening on \([0-9.]*:[0-9]*\).*/http:\/\/\1/p' "$tmp/$1" | head -n 1)
    [ -n "$url" ] && { echo "$url"; return; }
    sleep 0.1
  done
  echo "bench: $1 did not start" >&2; cat "$tmp/$1" >&2; exit 1
}
ant=$(start ant.log "$BUILD/llmsim" --port 0 --dialect anthropic --model m --reply echo --decode-tps 0 --slots 10000)
cat >"$tmp/gw.yaml" <<YAML
listen: "127.0.0.1:0"
backends:
  - { name: a, tier: cloud, url: "$ant", model: m, dialect: anthropic }
models:
  - { name: m, backends: [a] }
pii: { policy: off }
YAML
gw=$(start gw.log "$BUILD/spillway" -c "$tmp/gw.yaml" --log-level error)

run() {   # $1 BENCH_TOOL: requests/s
  out=$(BENCH_TOOL=$1 wrk -t1 -c"$CONNS" -d"${DURATION}s" -s bench/contract_stream.lua "$gw")
  if grep -q 'Non-2xx' <<<"$out"; then echo "bench: BENCH_TOOL=$1 had failed requests:" >&2; echo "$out" >&2; exit 1; fi
  awk '/Requests\/sec/ {print $2}' <<<"$out"
}
# Alternating rounds, so a neighbour's load hits both sides alike; the median
# ratio is the result.
ROUNDS=${ROUNDS:-5}
printf '%-6s %12s %12s %7s\n' "round" "text req/s" "tool req/s" "ratio"
ratios=()
for i in $(seq "$ROUNDS"); do
  base=$(run 0)
  judged=$(run 1)
  r=$(awk -v a="$judged" -v b="$base" 'BEGIN{printf "%.3f", a/b}')
  ratios+=("$r")
  printf '%-6s %12.0f %12.0f %7s\n' "$i" "$base" "$judged" "$r"
done
printf 'median ratio (forced tool judged / text not judged): %s\n' \
  "$(printf '%s\n' "${ratios[@]}" | sort -n | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}')"
