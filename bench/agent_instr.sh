#!/usr/bin/env bash
# The PII scan work of turns 2, 10 and 50 of one agent conversation
# (bench/agent_trace.py), counted by callgrind rather than timed: for each turn
# N, bench/agent_scan scans turn N-1's body (as the gateway did one request
# earlier), then turn N's, and only that second scan (sw_pii_scan_body and all
# it calls) is counted, with the verdict cache (limits.scan_cache_bytes, 16
# MiB) and without it. Printed per turn: the body's bytes, the bytes the turn
# added, instructions with and without the cache; of those with the cache, the
# texts' keyed fingerprints (sw_pii_cache_key_of, inclusive: Poly1305) and the rest (the walk
# and the detection of what missed), that rest per new byte; then the thread's
# CPU time of the same scan run natively (median of REPEAT runs; noisy on a
# loaded machine, a ratio within one run is what to read).
#
# valgrind has no AVX-512, so under callgrind OpenSSL takes its AVX2 Poly1305;
# natively it takes the AVX-512 one.
#
# GATEWAY=1 adds a second table: each turn's body sent GW_N times through the
# whole gateway (bench/instr.sh with BODY set, Spillway alone, every feature
# on, non-streamed): instructions per request and per KB of body, the parse,
# the scan (with every text a cache hit after the first request), the relay;
# and the front's parse of the body alone natively timed (bench/agent_parse:
# sw_request_parse and sw_request_free, median of REPEAT, µs).
#   bench/agent_instr.sh                about 2 minutes
#   GATEWAY=1 bench/agent_instr.sh      about 6 minutes
#   GATEWAY=1 SCAN=0 bench/agent_instr.sh   the second table only
# Knobs: TURNS ("2 10 50"), SEED (7), SHAPE (openai | anthropic), REPEAT (31),
# GATEWAY (0), GW_N (200), SCAN (1; 0: no scan table), BUILD. A profile of one
# turn: KEEP=1 BODY=turn.json API_PATH=... TARGETS=spillway STREAM_N=0
# bench/instr.sh, then callgrind_annotate on the callgrind.spillway.req.out kept.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
TURNS=${TURNS:-"2 10 50"}
SEED=${SEED:-7}
SHAPE=${SHAPE:-openai}
REPEAT=${REPEAT:-31}
GATEWAY=${GATEWAY:-0}
GW_N=${GW_N:-200}
SCAN=${SCAN:-1}
command -v valgrind >/dev/null || { echo "agent_instr.sh: needs valgrind" >&2; exit 1; }
make -s --no-print-directory BUILD="$BUILD" "$BUILD/bench/agent_scan"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
only=$(for n in $TURNS; do printf '%d,%d,' $((n - 1)) "$n"; done)
max=$(for n in $TURNS; do echo "$n"; done | sort -n | tail -1)
python3 bench/agent_trace.py --out "$tmp" --seed "$SEED" --turns "$max" --shape "$SHAPE" \
  --only "${only%,}" >"$tmp/sizes"
surface=chat; [ "$SHAPE" = anthropic ] && surface=messages
count() { # cache_bytes prev turn: instructions of the measured scan
  valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.out" --toggle-collect=measured_scan \
    "$BUILD/bench/agent_scan" "$1" "$2" "$3" "$surface" >"$tmp/run.out" 2>/dev/null
  awk '/^totals:/ {print $2}' "$tmp/cg.out"
}
digest_ir() { # the last count's instructions in sw_pii_cache_key_of, inclusive
  callgrind_annotate --inclusive=yes "$tmp/cg.out" 2>/dev/null |
    awk '/:sw_pii_cache_key_of / && !found {gsub(",", "", $1); v = $1; found = 1} END {print found ? v : 0}'
}
cpu_us() { # cache_bytes prev turn
  "$BUILD/bench/agent_scan" "$1" "$2" "$3" "$surface" "$REPEAT" | sed -n 's/^cpu_us_median=//p'
}
if [ "$SCAN" = 1 ]; then
printf '%-5s %8s %7s %11s %11s %11s %11s %9s %9s %9s %8s\n' turn bytes new \
  "ir cache" "ir none" "ir digest" "ir rest" "rest/new" "us cache" "us none" "hit/miss"
for n in $TURNS; do
  p=$(printf '%s/turn_%03d.json' "$tmp" $((n - 1)))
  t=$(printf '%s/turn_%03d.json' "$tmp" "$n")
  bytes=$(awk -v n="$n" '$1 == n {print $2}' "$tmp/sizes")
  new=$(awk -v n="$n" '$1 == n {print $3}' "$tmp/sizes")
  with=$(count 16777216 "$p" "$t")
  dig=$(digest_ir)
  hm=$(sed -n 's/.*hits=\([0-9]*\) misses=\([0-9]*\)/\1\/\2/p' "$tmp/run.out")
  without=$(count 0 "$p" "$t")
  uc=$(cpu_us 16777216 "$p" "$t")
  un=$(cpu_us 0 "$p" "$t")
  awk -v n="$n" -v b="$bytes" -v nw="$new" -v w="$with" -v wo="$without" -v d="$dig" -v hm="$hm" \
      -v uc="$uc" -v un="$un" 'BEGIN {
    printf "%-5s %8d %7d %11d %11d %11d %11d %9.1f %9.1f %9.1f %8s\n", n, b, nw, w, wo, d, w - d,
      (w - d) / nw, uc, un, hm }'
done
fi
[ "$GATEWAY" = 1 ] || exit 0
path=/v1/chat/completions
[ "$SHAPE" = anthropic ] && path=/v1/messages   # translated for the OpenAI upstream
echo
echo "through the gateway: $GW_N requests of each body (bench/instr.sh, non-streamed, $path)"
make -s --no-print-directory BUILD="$BUILD" "$BUILD/bench/agent_parse"
printf '%-5s %8s %12s %9s %9s\n' turn bytes "instr/req" "instr/KB" "parse us"
for n in $TURNS; do
  t=$(printf '%s/turn_%03d.json' "$tmp" "$n")
  bytes=$(awk -v n="$n" '$1 == n {print $2}' "$tmp/sizes")
  ir=$(BODY="$t" API_PATH="$path" TARGETS=spillway STREAM_N=0 N="$GW_N" WARM=30 BUILD="$BUILD" \
      bench/instr.sh 2>/dev/null |
    awk '$1 == "spillway" && NF == 5 {print $2}')
  [ -n "$ir" ] || { echo "agent_instr.sh: turn $n: bench/instr.sh failed" >&2; exit 1; }
  pu=$("$BUILD/bench/agent_parse" "$t" "$REPEAT" "$surface" | sed -n 's/^parse_us_median=//p')
  awk -v n="$n" -v b="$bytes" -v ir="$ir" -v pu="$pu" \
    'BEGIN { printf "%-5s %8d %12d %9.0f %9.1f\n", n, b, ir, ir / (b / 1024), pu }'
done
