#!/usr/bin/env bash
# Instructions per byte of PII detection (sw_pii_scan_text and all it calls)
# on the bench corpus, counted by callgrind: independent of the machine's
# load, unlike bench/pii.sh's MB/s. Builds the bench as bench/pii.sh does.
#   bench/pii_instr.sh [MEGABYTES]      (default 2: callgrind is ~50x slower)
# Then the instructions of one sw_pii_scan_request on bench/chat-1k.json.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
MB=${1:-2}
PII_BENCH_MODE=count bench/pii.sh "$MB" >/dev/null   # builds the bench and the corpus
corpus="$BUILD/bench/pii_corpus_${MB}.txt"
out="$BUILD/bench/callgrind.pii.out"
bytes=$("$BUILD/bench/pii_bench" count "$corpus" | sed -n 's/.* \([0-9]*\) bytes.*/\1/p')
valgrind --tool=callgrind --callgrind-out-file="$out" --toggle-collect=sw_pii_scan_text \
  "$BUILD/bench/pii_bench" count "$corpus" >/dev/null 2>&1
ir=$(callgrind_annotate "$out" 2>/dev/null | sed -n 's/^ *\([0-9,]*\) .*PROGRAM TOTALS.*/\1/p' | tr -d ,)
echo "detect: $ir instructions over $bytes bytes = $(awk -v i="$ir" -v b="$bytes" 'BEGIN{printf "%.1f", i/b}') instructions/byte"
echo "per function: callgrind_annotate $out | head -40"
# The per-request cost of the request walker (every string and key of a
# 1 KB chat request scanned): sw_pii_scan_request, 1000 times.
req=bench/chat-1k.json
out2="$BUILD/bench/callgrind.pii_req.out"
valgrind --tool=callgrind --callgrind-out-file="$out2" --toggle-collect=sw_pii_scan_request \
  "$BUILD/bench/pii_bench" request "$req" >/dev/null 2>&1
ir2=$(callgrind_annotate "$out2" 2>/dev/null | sed -n 's/^ *\([0-9,]*\) .*PROGRAM TOTALS.*/\1/p' | tr -d ,)
echo "request walk: $((ir2 / 1000)) instructions per sw_pii_scan_request of $req ($(wc -c <"$req") bytes)"
echo "per function: callgrind_annotate $out2 | head -40"
