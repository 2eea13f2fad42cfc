#!/usr/bin/env bash
# Three Spillway replicas sharing one Redis, HAProxy in front (docs/scaling.md):
# redis-server :6390, llmsim "local" :8081 (2 slots) and "cloud" :8082, replicas
# :8091-8093 (examples/replicas/), HAProxy :8080. Ctrl-C stops everything.
#   scripts/replicas-demo.sh            run until Ctrl-C
#   DEMO_CHECK=1 scripts/replicas-demo.sh   start, send a burst, show the shared state, stop
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
PATH=$PATH:/usr/sbin:/sbin
export ADMIN_KEY=${ADMIN_KEY:-sk-admin-demo}
for bin in redis-server haproxy "$BUILD/spillway" "$BUILD/llmsim"; do
  command -v "$bin" >/dev/null || { echo "replicas-demo: $bin not found (scripts/deps.sh bench; make)" >&2; exit 1; }
done
for port in 6390 8080 8081 8082 8091 8092 8093; do
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
    echo "replicas-demo: port $port is in use; stop whatever listens there and retry" >&2
    exit 1
  fi
done

tmp=$(mktemp -d)
pids=()
cleanup() {
  trap - INT TERM EXIT
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup INT TERM EXIT
wait_port() { for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done; echo "replicas-demo: nothing on :$1" >&2; exit 1; }

redis-server --port 6390 --bind 127.0.0.1 --save '' --appendonly no > "$tmp/redis.log" &
pids+=($!)
"$BUILD/llmsim" --port 8081 --model llama-3.1-8b-instruct --slots 8 --decode-tps 40 > /dev/null &
pids+=($!)
"$BUILD/llmsim" --port 8082 --model gpt-4o-mini --slots 64 --decode-tps 120 --latency-ms 250 > /dev/null &
pids+=($!)
wait_port 6390; wait_port 8081; wait_port 8082
for r in a b c; do
  "$BUILD/spillway" -c "examples/replicas/spillway-$r.yaml" --log-level warn > "$tmp/spillway-$r.log" 2>&1 &
  pids+=($!)
done
wait_port 8091; wait_port 8092; wait_port 8093
haproxy -f examples/replicas/haproxy.cfg -db > "$tmp/haproxy.log" 2>&1 &
pids+=($!)
wait_port 8080

cat <<TXT

  Three replicas behind HAProxy: http://127.0.0.1:8080 (replicas :8091 :8092 :8093,
  Redis :6390, local llmsim :8081 with slots: 2 shared, "cloud" llmsim :8082).

  A burst of 12: the local box never runs more than 2 at once, whichever replica sent
  them (curl -s 127.0.0.1:8081/admin/stats: concurrent_max), the rest spill over:
    for i in \$(seq 12); do curl -s -o /dev/null -D - http://127.0.0.1:8080/v1/chat/completions \\
      -H 'Content-Type: application/json' \\
      -d '{"model":"chat","max_tokens":60,"messages":[{"role":"user","content":"hi"}]}' \\
      | grep -i x-spillway-backend & done; wait
  Declare an emergency on one replica, read it on another:
    curl -s -X POST 127.0.0.1:8091/admin/emergency -H "Authorization: Bearer $ADMIN_KEY" -d '{"declared":true}'
    curl -s 127.0.0.1:8093/admin/state -H "Authorization: Bearer $ADMIN_KEY" | head -c 300
  Kill Redis (kill ${pids[0]}): the replicas keep serving, "degraded": "redis".

TXT
if [ "${DEMO_CHECK:-0}" = 1 ]; then
  burst=()
  for i in $(seq 12); do
    curl -s -o /dev/null -w '%{http_code} ' http://127.0.0.1:8080/v1/chat/completions -H 'Content-Type: application/json' \
      -d '{"model":"chat","max_tokens":30,"messages":[{"role":"user","content":"hi"}]}' &
    burst+=($!)
  done
  wait "${burst[@]}"
  echo
  echo "local llmsim: $(curl -s 127.0.0.1:8081/admin/stats | grep -o '"concurrent_max": *[0-9]*')"
  echo "replica b: $(curl -s 127.0.0.1:8092/admin/state -H "Authorization: Bearer $ADMIN_KEY" | grep -o '"state": *{[^}]*}')"
  exit 0
fi
wait "${pids[0]}"
