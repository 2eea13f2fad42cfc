#!/usr/bin/env bash
# What the dashboard's series endpoint costs: GET /admin/series?window=S for
# 300, 900 and 3600 s against GET /admin/state (the baseline: the call the page
# already made every second), in one run on one gateway, as ratios of the mean
# time per call (curl, sequential, loopback) and answer sizes. The ring holds
# only what the gateway sampled since start; a full hour is not waited for, so
# the 3600 s window has 'null' for most seconds (smaller than a full one).
#   bench/series.sh               N=200 calls each
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
N=${N:-200}
. bench/lib.sh   # bench_scratch, free_port, wait_http
bench_scratch
LP=$(free_port); GP=$(free_port)
"$BUILD/llmsim" --port "$LP" --model m --slots 4 --decode-tps 2000 > /dev/null 2>&1 &
pids+=($!)
cat > "$tmp/c.yaml" <<YAML
listen: "127.0.0.1:$GP"
admin: { key: "bench" }
backends:
  - { name: "edge", tier: "local", url: "http://127.0.0.1:$LP", model: "m", slots: 4 }
models:
  - { name: "chat", backends: ["edge"] }
YAML
"$BUILD/spillway" -c "$tmp/c.yaml" > /dev/null 2> "$tmp/log" &
pids+=($!)
wait_http "http://127.0.0.1:$GP/healthz"
# A few seconds of traffic so the samples are not all empty.
for _ in $(seq 40); do
  curl -s -o /dev/null "http://127.0.0.1:$GP/v1/chat/completions" -H 'Content-Type: application/json' \
    -d '{"model":"chat","max_tokens":4,"messages":[{"role":"user","content":"hi"}]}'
  sleep 0.1
done
measure() {   # path -> "mean_seconds bytes"
  local url="http://127.0.0.1:$GP$1"
  curl -s -o /dev/null -H 'Authorization: Bearer bench' "$url"   # warm
  local total=0 size=0
  for _ in $(seq "$N"); do
    read -r t s < <(curl -s -o /dev/null -w '%{time_total} %{size_download}\n' -H 'Authorization: Bearer bench' "$url")
    total=$(echo "$total + $t" | bc -l); size=$s
  done
  echo "$(echo "$total / $N" | bc -l) $size"
}
read -r base bsize < <(measure /admin/state)
printf '%-28s %10s %10s %8s\n' call mean_ms bytes ratio
printf '%-28s %10.3f %10d %8.2f\n' /admin/state "$(echo "$base * 1000" | bc -l)" "$bsize" 1
for w in 300 900 3600; do
  read -r t s < <(measure "/admin/series?window=$w")
  printf '%-28s %10.3f %10d %8.2f\n' "/admin/series?window=$w" "$(echo "$t * 1000" | bc -l)" "$s" "$(echo "$t / $base" | bc -l)"
done
