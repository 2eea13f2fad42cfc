#!/usr/bin/env bash
# bench/proxy.sh RUNS times in a row, then each ratio of its last table
# (Spillway's figure / the other proxy's) per run and its median: one run
# on a shared VM can be off by 1.5x, a median of runs much less. Every knob
# of bench/proxy.sh applies (STREAMS, DURATION, TARGETS, ...).
#   RUNS=3 bench/proxy_runs.sh
#   RUNS=5 STREAMS=" " TARGETS="spillway haproxy" bench/proxy_runs.sh
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-3}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for i in $(seq 1 "$RUNS"); do
  echo "proxy_runs.sh: run $i of $RUNS" >&2
  bench/proxy.sh >"$out/run$i.txt"
done
echo "bench/proxy.sh, $RUNS runs in a row; the last run in full:"
cat "$out/run$RUNS.txt"
echo
echo "each ratio per run, and its median"
# the ratio rows: a figure name (words) followed by one number per other proxy
awk -v runs="$RUNS" '
  FNR == 1 { run++; on = 0 }
  /^ratios / { on = 1; next }
  on && /^figure/ { hdr = $0; sub(/^figure +/, "", hdr); nh = split(hdr, h, " "); next }
  on && NF > nh {
    # the last nh fields are the values; the words before them (which may
    # start with a number: "200 streams fb p99") name the figure
    name = $1; nv = nh
    for (i = 2; i <= NF - nh; i++) name = name " " $i
    for (j = 1; j <= nh; j++) v[j] = $(NF - nh + j)
    if (!(name in seen)) { seen[name] = 1; order[++no] = name }
    for (j = 1; j <= nv; j++) val[name, j, run] = v[j]
  }
  function median(name, j,    a, n, r, x, k, t) {
    n = 0
    for (r = 1; r <= runs; r++) { x = val[name, j, r]; if (x != "" && x != "-") a[++n] = x + 0 }
    if (!n) return "-"
    for (k = 2; k <= n; k++) { t = a[k]; for (r = k - 1; r >= 1 && a[r] > t; r--) a[r + 1] = a[r]; a[r + 1] = t }
    return sprintf("%.2f", n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2)
  }
  END {
    for (j = 1; j <= nh; j++) {
      printf "\n%-24s %s\n", "figure (" h[j] ")", "per run -> median"
      for (o = 1; o <= no; o++) {
        name = order[o]; line = ""
        for (r = 1; r <= runs; r++) line = line sprintf(" %5s", val[name, j, r] == "" ? "-" : val[name, j, r])
        printf "%-24s%s -> %s\n", name, line, median(name, j)
      }
    }
  }' "$out"/run*.txt
