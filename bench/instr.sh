#!/usr/bin/env bash
# What one proxied request costs, counted rather than timed, so the figures do
# not depend on what else the machine runs: Spillway (every feature on, as in
# bench/proxy.sh), nginx and HAProxy in front of the same fixed upstream
# (bench/upstream.c) with the same 1 KB body (bench/chat-1k.json), configured by
# bench/targets.sh like bench/proxy.sh does.
#
# For each target, one at a time:
#  1. under `valgrind --tool=callgrind` (nginx: master_process off, one worker;
#     HAProxy: -db, nbthread 1): WARM requests, callgrind_control -z, N
#     non-streamed POSTs over CONC keep-alive connections (ab -k), dump:
#     user-space instructions per request. Then STREAM_N streamed requests
#     (22 SSE events each, CONC at a time, one connection each,
#     bench/streams.c), dump: instructions per stream.
#  2. without valgrind: WARM requests, then `strace -c -f -p PID` over the same
#     N requests (and STREAM_N streams): syscalls per request, the top ones.
# docs/internals/datapath.md ("Instructions and syscalls per request") has the
# results and where Spillway's instructions go.
#
#   bench/instr.sh                    about 3 minutes
#   STREAM_N=0 bench/instr.sh         non-streamed only, about 1.5 minutes
#
# Non-streamed figures repeat within 1 % whatever else the machine runs.
# Streamed ones do not (nginx's and HAProxy's varied up to 2x between runs):
# a proxy (or the upstream) that falls behind reads several events at once
# and spends fewer instructions and syscalls per stream, and under callgrind
# the timer work while a proxy waits between events counts too. Compare them
# within one run only.
#
# Knobs (environment): N (2000), WARM (200), CONC (8), STREAM_N (100; 0: no
# streamed run), EVENT_MS (20: gap between SSE events), TARGETS ("spillway
# nginx haproxy"), TOP (syscalls listed per target, 6), BUILD (build), BODY
# (bench/chat-1k.json), API_PATH (/v1/chat/completions; non-streamed only),
# KEEP=1 (keep the temporary directory: callgrind.*.out for callgrind_annotate).
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD=${BUILD:-build}
PATH=$PATH:/usr/sbin:/sbin   # nginx, haproxy
N=${N:-2000}
WARM=${WARM:-200}
CONC=${CONC:-8}
STREAM_N=${STREAM_N:-100}
EVENT_MS=${EVENT_MS:-20}
TARGETS=${TARGETS:-"spillway nginx haproxy"}
TOP=${TOP:-6}
PROXY_CPU=${PROXY_CPU:-1}
LOAD_CPU=${LOAD_CPU:-0}
WAIT_TRIES=${WAIT_TRIES:-2400}   # start-up under valgrind: up to 2 minutes
NGINX_MAIN="master_process off;"  # one process: the one valgrind and strace watch
BODY=${BODY:-bench/chat-1k.json}   # the body of every request
API_PATH=${API_PATH:-/v1/chat/completions}   # where the non-streamed POSTs go

scripts/deps.sh bench
for b in valgrind callgrind_control strace ab; do
  command -v "$b" >/dev/null || { echo "instr.sh: needs $b" >&2; exit 1; }
done
make -s --no-print-directory BUILD="$BUILD" all
. bench/lib.sh       # bench_scratch, log_port, wait_http, ab_run, cg_dump
bench_scratch
. bench/targets.sh   # build_tools, write_configs, start_target
build_tools

taskset -c "$LOAD_CPU" "$BUILD/bench/upstream" 0 "$EVENT_MS" >"$tmp/upstream.log" 2>&1 &
pids+=($!)
UP=$(log_port "$tmp/upstream.log")
write_configs "$UP"

streams_run() { # target n
  local line
  line=$(taskset -c "$LOAD_CPU" "$BUILD/bench/streams" "${URL[$1]}" "$2" "$BODY" "" "$CONC" 1)
  case $line in *" done=$2 "*) ;; *) echo "instr.sh: $1 streams: $line" >&2; exit 1 ;; esac
}
stop_target() {
  kill "${PID_OF[$1]}" 2>/dev/null || true
  wait "${PID_OF[$1]}" 2>/dev/null || true
}
strace_run() { # target label cmd...: syscalls of the target while cmd runs
  local t=$1 l=$2 s
  shift 2
  strace -c -f -p "${PID_OF[$t]}" -o "$tmp/strace.$t.$l" 2>"$tmp/strace.$t.$l.err" &
  s=$!
  for _ in $(seq 1 200); do grep -qs 'attached' "$tmp/strace.$t.$l.err" && break; sleep 0.05; done
  "$@"
  kill -INT "$s"
  wait "$s" || true
}

res=$tmp/results   # target key value
for t in $TARGETS; do
  echo "  $t under callgrind" >&2
  start_target "$t" valgrind --tool=callgrind --callgrind-out-file="$tmp/callgrind.$t.out"
  wait_http "http://${URL[$t]}/health"
  ab_run "$t" "$WARM" "$API_PATH"
  callgrind_control -z "${PID_OF[$t]}" >/dev/null 2>&1
  ab_run "$t" "$N" "$API_PATH"
  echo "$t ir_req $(( $(cg_dump "$t" req) / N ))" >>"$res"
  if [ "$STREAM_N" -gt 0 ]; then
    callgrind_control -z "${PID_OF[$t]}" >/dev/null 2>&1
    streams_run "$t" "$STREAM_N"
    echo "$t ir_stream $(( $(cg_dump "$t" stream) / STREAM_N ))" >>"$res"
  fi
  stop_target "$t"

  echo "  $t under strace" >&2
  start_target "$t"
  wait_http "http://${URL[$t]}/health"
  ab_run "$t" "$WARM" "$API_PATH"
  strace_run "$t" req ab_run "$t" "$N" "$API_PATH"
  [ "$STREAM_N" -gt 0 ] && strace_run "$t" stream streams_run "$t" "$STREAM_N"
  stop_target "$t"
done

# strace -c's table: % time, seconds, usecs/call, calls, [errors,] syscall;
# counted from the rows (the total row's layout varies between versions)
sys_sum() { awk -v n="$2" '/^-/ || /^% time/ || $NF == "total" || NF < 5 { next } { c += $4 } END { printf "%.2f", c / n }' "$1"; }
sys_top() { # file n: the TOP syscalls by count, per request
  awk -v n="$2" -v top="$TOP" '
    /^-/ || /^% time/ || $NF == "total" || NF < 5 { next }
    { c[$NF] = $4 }
    END { k = 0; for (s in c) order[++k] = s
          for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (c[order[j]] > c[order[i]]) { x = order[i]; order[i] = order[j]; order[j] = x }
          for (i = 1; i <= k && i <= top; i++) printf "%s%s %.2f", (i > 1 ? ", " : ""), order[i], c[order[i]] / n }' "$1"
}
get() { awk -v t="$1" -v k="$2" '$1 == t && $2 == k {print $3}' "$res"; }

echo
echo "instr.sh: $N non-streamed requests (1 KB body, ab -k -c $CONC) after $WARM warm-up;" \
  "$STREAM_N streams of 22 SSE events ($CONC at a time, one connection each)"
printf '\n%-10s %14s %14s %14s %14s\n' target "instr/req" "syscalls/req" "instr/stream" "syscalls/stream"
for t in $TARGETS; do
  ss=-; is=$(get "$t" ir_stream)
  [ "$STREAM_N" -gt 0 ] && ss=$(sys_sum "$tmp/strace.$t.stream" "$STREAM_N")
  printf '%-10s %14s %14s %14s %14s\n' "$t" "$(get "$t" ir_req)" "$(sys_sum "$tmp/strace.$t.req" "$N")" "${is:--}" "$ss"
done
for b in nginx haproxy; do
  case " $TARGETS " in *" spillway "*) ;; *) break ;; esac
  case " $TARGETS " in *" $b "*) ;; *) continue ;; esac
  printf 'spillway/%-8s instructions %.2f (non-streamed)' "$b" \
    "$(echo "$(get spillway ir_req) / $(get "$b" ir_req)" | bc -l)"
  [ "$STREAM_N" -gt 0 ] && printf ', %.2f (streamed)' "$(echo "$(get spillway ir_stream) / $(get "$b" ir_stream)" | bc -l)"
  echo
done
echo
echo "top syscalls per non-streamed request:"
for t in $TARGETS; do echo "  $t: $(sys_top "$tmp/strace.$t.req" "$N")"; done
if [ "$STREAM_N" -gt 0 ]; then
  echo "top syscalls per stream:"
  for t in $TARGETS; do echo "  $t: $(sys_top "$tmp/strace.$t.stream" "$STREAM_N")"; done
fi
case " $TARGETS " in *" spillway "*)
  echo
  echo "where Spillway's instructions go, non-streamed:"
  python3 bench/callgrind_libs.py "$tmp/callgrind.spillway.req.out" "$N" spillway 12 request
  if [ "$STREAM_N" -gt 0 ]; then
    echo
    echo "streamed:"
    python3 bench/callgrind_libs.py "$tmp/callgrind.spillway.stream.out" "$STREAM_N" spillway 12 stream
  fi
  echo "(KEEP=1 keeps the profiles: callgrind_annotate --inclusive=yes --tree=both FILE)" ;;
esac
