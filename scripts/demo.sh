#!/usr/bin/env bash
# `make run`: starts two llmsim processes (a local box and a "cloud") and
# Spillway in front of them with examples/demo.yaml; Ctrl-C stops all three.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}

for port in 8080 8081 8082; do
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
    echo "demo: port $port is in use; stop whatever listens there and retry" >&2
    exit 1
  fi
done

pids=()
cleanup() {
  trap - INT TERM EXIT
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup INT TERM EXIT

"$BUILD/llmsim" --port 8081 --model llama-3.1-8b-instruct --slots 2 --decode-tps 40 \
  --prefill-ms-per-token 0.5 --max-output-tokens 120 --seed 1 > /dev/null &
pids+=($!)
"$BUILD/llmsim" --port 8082 --model gpt-4o-mini --slots 64 --decode-tps 120 \
  --latency-ms 250 --max-output-tokens 120 --seed 2 > /dev/null &
pids+=($!)

cat <<'TXT'

  Spillway demo: http://127.0.0.1:8080  (local llmsim :8081, "cloud" llmsim :8082)

  Stream an answer:
    curl -N http://127.0.0.1:8080/v1/chat/completions -H 'Content-Type: application/json' \
      -d '{"model":"chat","stream":true,"messages":[{"role":"user","content":"Hello!"}]}'

  Watch the headers X-Spillway-Backend / -Tier / -Reason with curl -i. A spike of 8 at
  once: the local box takes what it can start within 800 ms, the rest spills over:
    for i in $(seq 8); do curl -s -o /dev/null -D - http://127.0.0.1:8080/v1/chat/completions \
      -d '{"model":"chat","max_tokens":60,"messages":[{"role":"user","content":"hi"}]}' \
      | grep -i x-spillway-reason & done; wait
  Ctrl-C stops the gateway and both simulators.

TXT
"$BUILD/spillway" -c examples/demo.yaml &
pids+=($!)
wait "${pids[2]}"
