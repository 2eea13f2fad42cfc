#!/usr/bin/env bash
# `make run`: starts two llmsim processes (a local box and a "cloud"), Spillway
# in front of them with examples/demo.yaml plus a freshly generated admin key,
# and a small load generator (scripts/demo-traffic.mjs: a trickle, and a spike
# every minute) so the dashboard has something to show. Prints the dashboard's
# URL with the key in its fragment (#key=..., which browsers never send).
# Ctrl-C stops everything.
#   scripts/demo.sh [--no-traffic]
#   DEMO_TRAFFIC=0            the same as --no-traffic (make run DEMO_TRAFFIC=0)
#   DEMO_PORT, DEMO_LOCAL_PORT, DEMO_CLOUD_PORT   default 8080, 8081, 8082
#   DEMO_SPIKE_EVERY          seconds between spikes, default 60
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
PORT=${DEMO_PORT:-8080}
LOCAL_PORT=${DEMO_LOCAL_PORT:-8081}
CLOUD_PORT=${DEMO_CLOUD_PORT:-8082}
TRAFFIC=${DEMO_TRAFFIC:-1}
for arg in "$@"; do
  case $arg in
    --no-traffic) TRAFFIC=0 ;;
    *) echo "usage: scripts/demo.sh [--no-traffic]" >&2; exit 2 ;;
  esac
done

for port in "$PORT" "$LOCAL_PORT" "$CLOUD_PORT"; do
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
    echo "demo: port $port is in use; stop whatever listens there and retry" >&2
    exit 1
  fi
done

pids=()
run=$(mktemp -d "${TMPDIR:-/tmp}/spillway-demo.XXXXXX")
cleanup() {
  trap - INT TERM EXIT
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$run"
}
trap cleanup INT TERM EXIT

# The runtime configuration: the committed example with this run's ports and
# a random admin key (never written into the repository).
key=$(od -An -N24 -tx1 /dev/urandom | tr -d ' \n')
umask 077
sed -e "s/127\.0\.0\.1:8080/127.0.0.1:$PORT/" -e "s/127\.0\.0\.1:8081/127.0.0.1:$LOCAL_PORT/" \
    -e "s/127\.0\.0\.1:8082/127.0.0.1:$CLOUD_PORT/" examples/demo.yaml > "$run/demo.yaml"
printf '\nadmin:\n  key: "%s"\n' "$key" >> "$run/demo.yaml"

"$BUILD/llmsim" --port "$LOCAL_PORT" --model llama-3.1-8b-instruct --slots 2 --decode-tps 40 \
  --prefill-ms-per-token 0.5 --prefix-cache 4 --max-output-tokens 120 --seed 1 > /dev/null &
pids+=($!)
"$BUILD/llmsim" --port "$CLOUD_PORT" --model gpt-4o-mini --slots 64 --decode-tps 120 \
  --latency-ms 250 --max-output-tokens 120 --seed 2 > /dev/null &
pids+=($!)
# The decision log (one JSON line per request) goes to a file, not the terminal.
"$BUILD/spillway" -c "$run/demo.yaml" > "$run/decisions.jsonl" &
gw=$!
pids+=($gw)

# Up when it answers; the URL is printed only then, so one click works.
for _ in $(seq 100); do
  (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break
  kill -0 "$gw" 2>/dev/null || { echo "demo: spillway did not start" >&2; exit 1; }
  sleep 0.1
done

if [ "$TRAFFIC" != 0 ] && ! command -v node > /dev/null; then
  echo "demo: node not found (scripts/deps.sh run installs it): no background traffic" >&2
  TRAFFIC=0
fi
if [ "$TRAFFIC" != 0 ]; then
  node scripts/demo-traffic.mjs "http://127.0.0.1:$PORT" "${DEMO_SPIKE_EVERY:-60}" &
  pids+=($!)
  traffic="background traffic: a trickle, and a spike every ${DEMO_SPIKE_EVERY:-60} s (--no-traffic: none)"
else
  traffic="no background traffic: --no-traffic or DEMO_TRAFFIC=0"
fi

cat <<TXT

  Spillway demo: http://127.0.0.1:$PORT  (local llmsim :$LOCAL_PORT, "cloud" llmsim :$CLOUD_PORT)

  Dashboard: http://127.0.0.1:$PORT/dashboard#key=$key
  ($traffic)
  Decision log: tail -f $run/decisions.jsonl

  Stream an answer:
    curl -N http://127.0.0.1:$PORT/v1/chat/completions -H 'Content-Type: application/json' \\
      -d '{"model":"chat","stream":true,"messages":[{"role":"user","content":"Hello!"}]}'

  Watch the headers X-Spillway-Backend / -Tier / -Reason with curl -i. A spike of 8 at
  once: the local box takes what it can start within 800 ms, the rest spills over:
    for i in \$(seq 8); do curl -s -o /dev/null -D - http://127.0.0.1:$PORT/v1/chat/completions \\
      -H 'Content-Type: application/json' \\
      -d '{"model":"chat","max_tokens":60,"messages":[{"role":"user","content":"hi"}]}' \\
      | grep -i x-spillway-reason & done; wait
  Ctrl-C stops the gateway, both simulators and the traffic.

TXT
wait "$gw"
