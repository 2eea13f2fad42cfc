#!/usr/bin/env bash
# What tracing costs Spillway per request, counted rather than timed: the
# gateway (every feature on, as bench/instr.sh has it: bench/targets.sh's
# spillway_features) under `valgrind --tool=callgrind` in front of one llmsim
# upstream (every token at once), three times in one run:
#
#   off     no telemetry key
#   json    telemetry.otlp, http/json, sample_ratio 1.0 (every request traced)
#   proto   the same in http/protobuf
#
# The collector is a sink on loopback (python3) that answers 200 to every
# export; the gateway's own work (span building, encoding, batching, the
# OTLP/HTTP POSTs on its curl multi handle) is in its instruction count.
# For each case: WARM requests, callgrind_control -z, N non-streamed POSTs
# over CONC keep-alive connections (ab -k), dump: instructions per request;
# then STREAM_N streamed POSTs (curl, one at a time): instructions per stream.
# Printed: both per case, and as ratios to off (the bench's answer).
#
#   bench/otel_instr.sh                  about 3 minutes
#   STREAM_N=0 bench/otel_instr.sh       non-streamed only
#
# Knobs (environment): N (1000), WARM (100), CONC (8), STREAM_N (50), CASES
# ("off json proto"), BUILD (build), KEEP=1 (keep the temporary directory).
set -euo pipefail
cd "$(dirname "$0")/.."
BENCH_NAME=otel_instr.sh

BUILD=${BUILD:-build}
N=${N:-1000}
WARM=${WARM:-100}
CONC=${CONC:-8}
STREAM_N=${STREAM_N:-50}
CASES=${CASES:-"off json proto"}
PROXY_CPU=${PROXY_CPU:-1}
LOAD_CPU=${LOAD_CPU:-0}
WAIT_TRIES=${WAIT_TRIES:-2400}   # start-up under valgrind: up to 2 minutes
BODY=bench/chat-1k.json

for b in valgrind callgrind_control ab curl python3; do
  command -v "$b" >/dev/null || { echo "otel_instr.sh: needs $b" >&2; exit 1; }
done
make -s --no-print-directory BUILD="$BUILD" all
. bench/lib.sh       # bench_scratch, log_port, wait_http, ab_run, cg_dump
bench_scratch
. bench/targets.sh   # spillway_features, start_target

taskset -c "$LOAD_CPU" "$BUILD/llmsim" --port 0 --slots 1000 --decode-tps 0 --keep-received 0 \
  >"$tmp/llmsim.log" 2>&1 &
pids+=($!)
UP=$(log_port "$tmp/llmsim.log")

# The collector: answers every POST with 200 and forgets it; counts spans' bytes.
taskset -c "$LOAD_CPU" python3 -u - >"$tmp/collector.log" 2>&1 <<'PY' &
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_POST(self):
        n = int(self.headers.get("content-length", "0"))
        self.rfile.read(n)
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", "2")
        self.end_headers()
        self.wfile.write(b"{}")
    def log_message(self, *a):
        pass
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
print("listening on 127.0.0.1:%d" % s.server_address[1], flush=True)
s.serve_forever()
PY
pids+=($!)
COL=$(log_port "$tmp/collector.log")

write_config() { # case
  {
    echo 'listen: "127.0.0.1:0"'
    echo 'backends:'
    echo "  - { name: sim, tier: local, url: \"http://127.0.0.1:$UP\", model: bench, slots: 1000, queue_max: 1000 }"
    echo 'models:'
    echo '  - { name: bench, backends: [sim] }'
    spillway_features
    case $1 in
    json)  echo "telemetry: { otlp: { endpoint: \"http://127.0.0.1:$COL\", protocol: http/json, sample_ratio: 1.0 } }" ;;
    proto) echo "telemetry: { otlp: { endpoint: \"http://127.0.0.1:$COL\", protocol: http/protobuf, sample_ratio: 1.0 } }" ;;
    esac
  } >"$tmp/spillway.yaml"
}
python3 - "$BODY" "$tmp" <<'PY'
import json, sys
b = json.load(open(sys.argv[1]))
b["model"] = "bench"
json.dump(b, open(sys.argv[2] + "/body.json", "w"))
b["stream"] = True
json.dump(b, open(sys.argv[2] + "/stream.json", "w"))
PY

streams_run() { # n: streamed POSTs one after another; each must end with [DONE]
  local i out=$tmp/stream.out
  for i in $(seq 1 "$1"); do
    taskset -c "$LOAD_CPU" curl -sS -N -o "$out" -H 'content-type: application/json' \
      --data-binary @"$tmp/stream.json" "http://${URL[spillway]}/v1/chat/completions" ||
      { echo "otel_instr.sh: stream $i failed" >&2; exit 1; }
    grep -q '^data: \[DONE\]' "$out" || { echo "otel_instr.sh: stream $i incomplete" >&2; exit 1; }
  done
}

res=$tmp/results   # case key value
for c in $CASES; do
  echo "  $c: spillway under callgrind" >&2
  write_config "$c"
  start_target spillway valgrind --tool=callgrind --callgrind-out-file="$tmp/callgrind.spillway.out"
  wait_http "http://${URL[spillway]}/healthz"
  ab_run spillway "$WARM" /v1/chat/completions "$tmp/body.json"
  callgrind_control -z "${PID_OF[spillway]}" >/dev/null 2>&1
  ab_run spillway "$N" /v1/chat/completions "$tmp/body.json"
  echo "$c ir_req $(( $(cg_dump spillway "$c.req") / N ))" >>"$res"
  if [ "$STREAM_N" -gt 0 ]; then
    streams_run 5
    callgrind_control -z "${PID_OF[spillway]}" >/dev/null 2>&1
    streams_run "$STREAM_N"
    echo "$c ir_stream $(( $(cg_dump spillway "$c.stream") / STREAM_N ))" >>"$res"
  fi
  if [ "$c" != off ]; then
    curl -s "http://${URL[spillway]}/metrics" | grep -E '^spillway_otel_(spans_exported_total|spans_dropped_total)' \
      | sed "s/^/    $c: /" >&2
  fi
  kill "${PID_OF[spillway]}" 2>/dev/null || true
  wait "${PID_OF[spillway]}" 2>/dev/null || true
  mkdir -p "$tmp/$c"
  mv "$tmp"/callgrind.spillway.* "$tmp/$c/" 2>/dev/null || true
done

get() { awk -v t="$1" -v k="$2" '$1 == t && $2 == k {print $3}' "$res"; }
ratio() { # case key
  local a b
  a=$(get "$1" "$2"); b=$(get off "$2")
  if [ -n "$a" ] && [ -n "$b" ]; then printf '%.3f' "$(echo "$a / $b" | bc -l)"; else echo -; fi
}
declare -A NAME=([off]="tracing off" [json]="on, http/json, 1.0" [proto]="on, http/protobuf, 1.0")
echo
echo "otel_instr.sh: $N non-streamed requests per case (ab -k -c $CONC) after $WARM warm-up;" \
  "$STREAM_N streams per case (one at a time)"
printf '\n%-26s %12s %8s %14s %8s\n' case "instr/req" "x off" "instr/stream" "x off"
for c in $CASES; do
  is=$(get "$c" ir_stream)
  printf '%-26s %12s %8s %14s %8s\n' "${NAME[$c]}" "$(get "$c" ir_req)" "$(ratio "$c" ir_req)" \
    "${is:--}" "$(ratio "$c" ir_stream)"
done
