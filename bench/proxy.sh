#!/usr/bin/env bash
# Side-by-side proxy benchmark: Spillway (every feature on), nginx (proxy_pass
# with an upstream keep-alive pool) and HAProxy (http-reuse always), in one
# run, each proxy pinned to the same core, in front of the same fixed upstream
# (bench/upstream.c: canned chat.completion, or 22 SSE events EVENT_MS apart
# ending with "data: [DONE]") with the same 1 KB chat body (bench/chat-1k.json).
# docs/internals/datapath.md explains every column.
#
#   bench/proxy.sh                  full run (~3 min): wrk 5 s, streams 200/2000/10000
#   QUICK=1 bench/proxy.sh          ~30 s: wrk 2 s, streams 200/2000, events 50 ms apart
#
# Knobs (environment): DURATION (wrk seconds), CONNS (wrk connections, 64),
# STREAMS ("200 2000 10000"), EVENT_MS (gap between SSE events), WINDOW (most
# streams opened and still waiting for their first byte, 1000), CONN_CLOSE
# (1: every stream sends "Connection: close"; 0: keep-alive), TARGETS
# ("spillway nginx haproxy"), PROXY_CPU (1), LOAD_CPU (0: wrk, the stream
# client and the upstream), SANITIZE (1: the sanitizer build), BUILD (build,
# or build/asan with SANITIZE=1).
set -euo pipefail
cd "$(dirname "$0")/.."

SANITIZE=${SANITIZE:-0}   # 1: Spillway from the sanitizer build (build/asan)
if [ "$SANITIZE" = 1 ]; then BUILD=${BUILD:-build/asan}; else BUILD=${BUILD:-build}; fi
PATH=$PATH:/usr/sbin:/sbin   # nginx, haproxy
QUICK=${QUICK:-0}
if [ "$QUICK" = 1 ]; then
  DURATION=${DURATION:-2}; STREAMS=${STREAMS:-"200 2000"}; EVENT_MS=${EVENT_MS:-50}
else
  DURATION=${DURATION:-5}; STREAMS=${STREAMS:-"200 2000 10000"}; EVENT_MS=${EVENT_MS:-200}
fi
CONNS=${CONNS:-64}
WINDOW=${WINDOW:-1000}
CONN_CLOSE=${CONN_CLOSE:-1}
TARGETS=${TARGETS:-"spillway nginx haproxy"}
PROXY_CPU=${PROXY_CPU:-1}
LOAD_CPU=${LOAD_CPU:-0}
BODY=bench/chat-1k.json

# 10000 streams through a proxy take 2 descriptors each there (client side and
# upstream side): raise the soft limit as far as the hard one allows.
ulimit -n "$(ulimit -Hn)"
scripts/deps.sh bench
command -v bc >/dev/null || { echo "proxy.sh: needs bc" >&2; exit 1; }
make -s --no-print-directory BUILD="$BUILD" SANITIZE="$SANITIZE" all
. bench/lib.sh       # bench_scratch, log_port, wait_http
bench_scratch
. bench/targets.sh   # build_tools, write_configs, start_target
build_tools

proc_pids() { # a target's processes: the one started and its children (nginx's worker)
  local pid=$1 kids
  kids=$(pgrep -P "$pid" | tr '\n' ',' || true)
  echo "${pid},${kids}" | sed 's/,*$//'
}
cpu_ticks() { # utime + stime of a comma-separated pid list
  local t=0 p
  for p in ${1//,/ }; do
    t=$((t + $(awk '{sub(/.*\) /, ""); print $12 + $13}' "/proc/$p/stat")))
  done
  echo "$t"
}
rss_kb() {
  local t=0 p
  for p in ${1//,/ }; do t=$((t + $(awk '/^VmRSS:/ {print $2}' "/proc/$p/status"))); done
  echo "$t"
}

# ---- the fixed upstream ----
taskset -c "$LOAD_CPU" "$BUILD/bench/upstream" 0 "$EVENT_MS" >"$tmp/upstream.log" 2>&1 &
pids+=($!); UPPID=$!
UP=$(log_port "$tmp/upstream.log")

write_configs "$UP"   # bench/targets.sh

declare -A PIDS MAIN
for t in $TARGETS; do
  start_target "$t"
  PIDS[$t]=${PID_OF[$t]}; MAIN[$t]=${PID_OF[$t]}
done
URL[direct]="127.0.0.1:$UP"
res=$tmp/results   # one line per measurement: target test key=value...
for t in $TARGETS; do
  wait_http "http://${URL[$t]}/health"
  PIDS[$t]=$(proc_pids "${PIDS[$t]}")
  echo "$t base rss_kb=$(rss_kb "${PIDS[$t]}")" >>"$res"   # idle, before any load
done
notes=$tmp/notes
touch "$notes"
alive() { # target test: false (and a note) once the proxy has exited
  local rc=0
  [ "$1" = direct ] && return 0
  kill -0 "${MAIN[$1]}" 2>/dev/null && return 0
  grep -q "^  $1 " "$notes" && return 1
  wait "${MAIN[$1]}" || rc=$?
  echo "  $1 exited during or before \"$2\" (exit status $rc$([ $rc -gt 128 ] && echo ", signal $((rc - 128))"))" >>"$notes"
  return 1
}

# ---- non-streamed: wrk ----
wrk_run() { # target
  local t=$1 u="http://${URL[$1]}/v1/chat/completions" c0 c1 peak=0 r w
  BENCH_BODY=$BODY taskset -c "$LOAD_CPU" wrk -t1 -c"$CONNS" -d1s -s bench/chat_file.lua "$u" >/dev/null
  [ "$t" = direct ] || c0=$(cpu_ticks "${PIDS[$t]}")
  BENCH_BODY=$BODY taskset -c "$LOAD_CPU" wrk -t1 -c"$CONNS" -d"${DURATION}s" --latency \
    -s bench/chat_file.lua "$u" >"$tmp/wrk.$t" &
  w=$!
  while kill -0 "$w" 2>/dev/null; do   # peak RSS while the load runs
    if [ "$t" != direct ]; then r=$(rss_kb "${PIDS[$t]}"); [ "$r" -gt "$peak" ] && peak=$r; fi
    sleep 0.2
  done
  wait "$w"
  [ "$t" = direct ] || c1=$(cpu_ticks "${PIDS[$t]}")
  awk -v t="$t" -v c0="${c0:-0}" -v c1="${c1:-0}" -v hz="$(getconf CLK_TCK)" -v rss="$peak" '
    function ms(v) { if (v ~ /us$/) return v / 1000; if (v ~ /ms$/) return v + 0; if (v ~ /s$/) return v * 1000; return v }
    / requests in / { n = $1 }
    /^Requests\/sec/ { rps = $2 }
    $1 == "50%" { p50 = ms($2) }
    $1 == "99%" { p99 = ms($2) }
    /Non-2xx/ { bad += $NF }
    /Socket errors/ { gsub(/,/, ""); bad += $4 + $6 + $8 + $10 }
    END {
      printf "%s wrk rps=%.0f p50_ms=%.3f p99_ms=%.3f", t, rps, p50, p99
      if (t != "direct") printf " cpu_us_req=%.1f rss_mb=%.1f", n ? (c1 - c0) / hz * 1e6 / n : 0, rss / 1024
      printf " errors=%d\n", bad
    }' "$tmp/wrk.$t" >>"$res"
}

# ---- streams: bench/streams.c ----
stream_run() { # target N
  local t=$1 n=$2 u0 line
  u0=$(cpu_ticks "$UPPID")
  line=$(taskset -c "$LOAD_CPU" "$BUILD/bench/streams" "${URL[$t]}" "$n" "$BODY" \
    "${PIDS[$t]}" "$WINDOW" "$CONN_CLOSE")
  echo "$t s$n $line up_cpu_s=$(echo "($(cpu_ticks "$UPPID") - $u0) / $(getconf CLK_TCK)" | bc -l)" >>"$res"
}

echo "proxy.sh: upstream bench/upstream.c on :$UP (22 SSE events, $EVENT_MS ms apart); 1 KB body;" \
  "proxies on CPU $PROXY_CPU, load and upstream on CPU $LOAD_CPU; $(nproc) CPUs; ulimit -n $(ulimit -n)" >&2
for t in direct $TARGETS; do
  echo "  wrk $t" >&2
  alive "$t" wrk && wrk_run "$t"
  alive "$t" wrk || true
done
for n in $STREAMS; do
  for t in $TARGETS; do
    echo "  $n streams $t" >&2
    alive "$t" "$n streams" || continue
    stream_run "$t" "$n"
    alive "$t" "$n streams" || continue
    # the next run starts once this proxy has let go of the streams' connections
    for _ in $(seq 1 100); do
      [ "$(ss -Htn state established "( sport = :${URL[$t]##*:} )" | wc -l)" -lt 10 ] && break
      sleep 0.1
    done
  done
done

bench/proxy_report.awk -v conns="$CONNS" -v dur="$DURATION" -v event_ms="$EVENT_MS" \
  -v targets="$TARGETS" -v window="$WINDOW" -v conn_close="$CONN_CLOSE" "$res"
if [ -s "$notes" ]; then echo; echo "proxies that exited:"; cat "$notes"; fi
if [ -s "$tmp/spillway.log" ] && grep -qiE 'error|warn' "$tmp/spillway.log"; then
  echo "spillway log (warnings and errors, first 5):"; grep -iE 'error|warn' "$tmp/spillway.log" | head -5
fi
