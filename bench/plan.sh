#!/usr/bin/env bash
# How long `spillway plan` takes on a week at 10 requests/s (the seed's shape:
# peak 5x for 3 h a day; ~8.9 million requests), on one core (taskset).
# Prints wall and CPU seconds for:
#   1. one replay (--strategies hybrid): the baseline of this script;
#   2. the whole plan (4 strategies incl. the peak-size search), no break-even;
# and the ratio 2/1 (how many replays the whole plan costs) and ns per
# simulated request. A bench, not a test: nothing is asserted.
#   bench/plan.sh [SYNTHETIC_SPEC]      default baseline=10/s,peak=5x,peak_hours=3,days=7,seed=1
#   BUILD=build/other bench/plan.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
SPEC=${1:-baseline=10/s,peak=5x,peak_hours=3,days=7,seed=1}
make -s --no-print-directory BUILD="$BUILD" "$BUILD/spillway"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
run() { # name args...: prints "name wall cpu" (bash's own timing: real, user + sys)
  local name=$1; shift
  local TIMEFORMAT='%R %U %S'
  { time taskset -c 0 "$BUILD/spillway" plan -c bench/plan.yaml \
      --synthetic "$SPEC" --no-breakeven "$@" > "$out/$name.txt"; } 2> "$out/time"
  awk -v n="$name" '{print n, $1, $2 + $3}' "$out/time"
}
one=$(run one --strategies hybrid)
all=$(run all)
n=$(sed -n 's/^trace: .*: \([0-9]*\) requests over.*/\1/p' "$out/all.txt")
cat "$out/all.txt"
echo
read -r _ w1 c1 <<<"$one"
read -r _ w2 c2 <<<"$all"
printf 'requests: %s\n' "$n"
awk -v w1="$w1" -v c1="$c1" -v w2="$w2" -v c2="$c2" -v n="$n" 'BEGIN {
  printf "one replay (hybrid):        wall %6.1f s  cpu %6.1f s  %5.0f ns per request\n", w1, c1, c1 * 1e9 / n
  printf "whole plan (4 strategies):  wall %6.1f s  cpu %6.1f s  = %.1f replays\n", w2, c2, c2 / c1
}'
