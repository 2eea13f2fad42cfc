# Sourced by the bench scripts (from the repository root): a scratch
# directory, the processes to stop on exit, and bounded waits.
#
#   bench_scratch         sets tmp (a new directory) and pids (an empty array);
#                         on exit every pid in pids is killed and tmp removed
#                         (KEEP=1 keeps it and says where)
#   log_port FILE         waits for "listening on H:P" in FILE; prints P
#   free_port             prints a loopback port free at the time of asking
#   wait_http URL         waits until URL answers at all
#   wait_log FILE PATTERN waits until FILE has a line matching PATTERN
#   ab_run T N [PATH] [BODY]
#                         N POSTs of BODY (default $BODY) to PATH (default
#                         /v1/chat/completions) of URL[T] over CONC keep-alive
#                         connections (ab -k -l: answers may differ in
#                         length; pinned to LOAD_CPU); ends the
#                         script unless all N answer 2xx
#   cg_dump T LABEL       T runs under callgrind with --callgrind-out-file=
#                         $tmp/callgrind.T.out (pid PID_OF[T]): dumps the counters
#                         since the last zeroing to $tmp/callgrind.T.LABEL.out;
#                         prints their instruction total
#
# Every wait tries WAIT_TRIES times (default 200) 50 ms apart, then ends the
# script with a message naming what it waited for.

WAIT_TRIES=${WAIT_TRIES:-200}
BENCH_NAME=$(basename "$0")

bench_cleanup() {
  trap - INT TERM EXIT
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [ "${KEEP:-0}" = 1 ]; then echo "$BENCH_NAME: kept $tmp" >&2; else rm -rf "$tmp"; fi
}
bench_scratch() {
  tmp=$(mktemp -d)
  pids=()
  trap bench_cleanup EXIT
  trap 'bench_cleanup; exit 130' INT TERM
}

log_port() { # FILE
  local p
  for _ in $(seq 1 "$WAIT_TRIES"); do
    p=$(grep -oE 'listening on (http://)?[0-9.]+:[0-9]+' "$1" 2>/dev/null | head -1 | sed 's/.*://')
    [ -n "$p" ] && { echo "$p"; return; }
    sleep 0.05
  done
  echo "$BENCH_NAME: $1 never listened:" >&2; cat "$1" >&2; exit 1
}
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
wait_http() { # URL
  for _ in $(seq 1 "$WAIT_TRIES"); do
    curl -s -o /dev/null -m 1 "$1" && return
    sleep 0.05
  done
  echo "$BENCH_NAME: $1 does not answer" >&2; exit 1
}
wait_log() { # FILE PATTERN
  for _ in $(seq 1 "$WAIT_TRIES"); do
    grep -q "$2" "$1" 2>/dev/null && return
    sleep 0.05
  done
  echo "$BENCH_NAME: no '$2' in $1" >&2; exit 1
}
ab_run() { # T N [PATH] [BODY]
  local out=$tmp/ab.$1 bad path=${3:-/v1/chat/completions} body=${4:-$BODY}
  taskset -c "$LOAD_CPU" ab -q -k -l -n "$2" -c "$CONC" -p "$body" -T application/json \
    "http://${URL[$1]}$path" >"$out" 2>&1 || { cat "$out" >&2; exit 1; }
  bad=$(awk '/^Failed requests:/ {b += $3} /^Non-2xx responses:/ {b += $3}
             /^Complete requests:/ {c = $3} END {print (c == n) ? b + 0 : "incomplete"}' n="$2" "$out")
  [ "$bad" = 0 ] || { echo "$BENCH_NAME: $1: $bad failed of $2" >&2; cat "$out" >&2; exit 1; }
}
cg_dump() { # target label: dump the counters since the last zeroing; prints Ir
  local t=$1 f before after
  before=$(ls "$tmp"/callgrind."$t".out.* 2>/dev/null | wc -l)
  callgrind_control -d "$2" "${PID_OF[$t]}" >/dev/null 2>&1
  for _ in $(seq 1 600); do   # the dump is written once the process next runs
    after=$(ls "$tmp"/callgrind."$t".out.* 2>/dev/null | wc -l)
    [ "$after" -gt "$before" ] && break
    sleep 0.1
  done
  f=$(ls -t "$tmp"/callgrind."$t".out.* | head -1)
  for _ in $(seq 1 100); do grep -q '^totals:' "$f" && break; sleep 0.1; done
  mv "$f" "$tmp/callgrind.$t.$2.out"
  awk '/^totals:/ {print $2}' "$tmp/callgrind.$t.$2.out"
}
