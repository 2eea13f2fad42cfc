#!/usr/bin/env bash
# What a Responses request costs Spillway next to a chat request, counted
# rather than timed: one gateway (every feature on, as bench/instr.sh has it:
# bench/targets.sh's spillway_features) under `valgrind --tool=callgrind`, one
# llmsim upstream (openai dialect: chat completions and, natively,
# /v1/responses; every token at once, a fixed 64-token lorem answer), and
# three models in one config:
#
#   chat   chat -> chat             POST /v1/chat/completions to a chat backend
#   rchat  Responses -> chat        POST /v1/responses, the same chat backend
#                                   (translated to chat completions and back)
#   resp   Responses -> Responses   POST /v1/responses to a backend with
#                                   dialects: [openai, responses] (passed through)
#
# The bodies say the same thing: bench/chat-1k.json, and its Responses
# equivalent written from it (the system message as `instructions`, the user
# message as the one input message, max_tokens as max_output_tokens, the same
# temperature).
#
# For each case: WARM requests, callgrind_control -z, N non-streamed POSTs
# over CONC keep-alive connections (ab -k), dump: instructions per request.
# Then STREAM_N streamed POSTs, one at a time, one connection each (curl):
# instructions per stream. Printed: both per case, and as ratios to chat.
# docs/internals/datapath.md ("Instructions and syscalls per request") has
# the figures.
#
#   bench/responses_instr.sh                 about 3 minutes
#   STREAM_N=0 bench/responses_instr.sh      non-streamed only
#
# Knobs (environment): N (1000), WARM (100), CONC (8), STREAM_N (100; 0: no
# streamed run), CASES ("chat rchat resp"), BUILD (build), KEEP=1 (keep the
# temporary directory: callgrind.*.out for callgrind_annotate).
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD=${BUILD:-build}
N=${N:-1000}
WARM=${WARM:-100}
CONC=${CONC:-8}
STREAM_N=${STREAM_N:-100}
CASES=${CASES:-"chat rchat resp"}
PROXY_CPU=${PROXY_CPU:-1}
LOAD_CPU=${LOAD_CPU:-0}
WAIT_TRIES=${WAIT_TRIES:-2400}   # start-up under valgrind: up to 2 minutes
BODY=bench/chat-1k.json

for b in valgrind callgrind_control ab curl python3; do
  command -v "$b" >/dev/null || { echo "responses_instr.sh: needs $b" >&2; exit 1; }
done
make -s --no-print-directory BUILD="$BUILD" all
. bench/lib.sh       # bench_scratch, log_port, wait_http, ab_run, cg_dump
bench_scratch
. bench/targets.sh   # spillway_features, start_target

declare -A PATH_OF BODY_OF
PATH_OF=([chat]=/v1/chat/completions [rchat]=/v1/responses [resp]=/v1/responses)
python3 - "$BODY" "$tmp" <<'EOF'
import json, sys
chat = json.load(open(sys.argv[1]))
system = [m["content"] for m in chat["messages"] if m["role"] == "system"]
user = [m for m in chat["messages"] if m["role"] != "system"]
for model in ("chat", "rchat", "resp"):
    if model == "chat":
        body = dict(chat, model=model)
    else:
        body = {"model": model, "max_output_tokens": chat["max_tokens"],
                "temperature": chat["temperature"], "instructions": "\n".join(system),
                "input": [{"role": m["role"], "content": m["content"]} for m in user]}
    with open(f"{sys.argv[2]}/{model}.json", "w") as f:
        json.dump(body, f)
    body["stream"] = True
    with open(f"{sys.argv[2]}/{model}.stream.json", "w") as f:
        json.dump(body, f)
EOF
for c in chat rchat resp; do BODY_OF[$c]=$tmp/$c.json; done

taskset -c "$LOAD_CPU" "$BUILD/llmsim" --port 0 --slots 1000 --decode-tps 0 --keep-received 0 \
  >"$tmp/llmsim.log" 2>&1 &
pids+=($!)
UP=$(log_port "$tmp/llmsim.log")
{
  echo 'listen: "127.0.0.1:0"'
  echo 'backends:'
  echo "  - { name: simchat, tier: local, url: \"http://127.0.0.1:$UP\", model: bench, slots: 1000, queue_max: 1000 }"
  echo "  - { name: simresp, tier: local, url: \"http://127.0.0.1:$UP\", model: bench, slots: 1000, queue_max: 1000, dialects: [openai, responses] }"
  echo 'models:'
  echo '  - { name: chat, backends: [simchat] }'
  echo '  - { name: rchat, backends: [simchat] }'
  echo '  - { name: resp, backends: [simresp] }'
  spillway_features
} >"$tmp/spillway.yaml"

streams_run() { # case n: n streamed POSTs one after another; each must end complete
  local c=$1 i end out=$tmp/stream.out
  # lorem answers always reach their token limit: a Responses stream ends incomplete
  case $c in chat) end='^data: \[DONE\]' ;; *) end='"type":"response\.(completed|incomplete)"' ;; esac
  for i in $(seq 1 "$2"); do
    taskset -c "$LOAD_CPU" curl -sS -N -o "$out" -H 'content-type: application/json' \
      --data-binary @"$tmp/$c.stream.json" "http://${URL[spillway]}${PATH_OF[$c]}" ||
      { echo "responses_instr.sh: $c stream $i failed" >&2; exit 1; }
    grep -qE "$end" "$out" || { echo "responses_instr.sh: $c stream $i incomplete:" >&2; head -c 2000 "$out" >&2; exit 1; }
  done
}

echo "  spillway under callgrind" >&2
start_target spillway valgrind --tool=callgrind --callgrind-out-file="$tmp/callgrind.spillway.out"
wait_http "http://${URL[spillway]}/health"
res=$tmp/results   # case key value
for c in $CASES; do
  echo "  $c" >&2
  ab_run spillway "$WARM" "${PATH_OF[$c]}" "${BODY_OF[$c]}"
  callgrind_control -z "${PID_OF[spillway]}" >/dev/null 2>&1
  ab_run spillway "$N" "${PATH_OF[$c]}" "${BODY_OF[$c]}"
  echo "$c ir_req $(( $(cg_dump spillway "$c.req") / N ))" >>"$res"
  if [ "$STREAM_N" -gt 0 ]; then
    streams_run "$c" 5
    callgrind_control -z "${PID_OF[spillway]}" >/dev/null 2>&1
    streams_run "$c" "$STREAM_N"
    echo "$c ir_stream $(( $(cg_dump spillway "$c.stream") / STREAM_N ))" >>"$res"
  fi
done

get() { awk -v t="$1" -v k="$2" '$1 == t && $2 == k {print $3}' "$res"; }
ratio() { # case key
  local a b
  a=$(get "$1" "$2"); b=$(get chat "$2")
  if [ -n "$a" ] && [ -n "$b" ]; then printf '%.2f' "$(echo "$a / $b" | bc -l)"; else echo -; fi
}
declare -A NAME=([chat]="chat->chat" [rchat]="Responses->chat" [resp]="Responses->Responses")
echo
echo "responses_instr.sh: $N non-streamed requests per case (ab -k -c $CONC) after $WARM warm-up;" \
  "$STREAM_N streams per case (one at a time, one connection each); answers of 64 tokens"
printf '\n%-22s %12s %8s %14s %8s\n' case "instr/req" "x chat" "instr/stream" "x chat"
for c in $CASES; do
  is=$(get "$c" ir_stream)
  printf '%-22s %12s %8s %14s %8s\n' "${NAME[$c]}" "$(get "$c" ir_req)" "$(ratio "$c" ir_req)" \
    "${is:--}" "$(ratio "$c" ir_stream)"
done
echo "(KEEP=1 keeps the profiles: callgrind_annotate --inclusive=yes --tree=both FILE)"
