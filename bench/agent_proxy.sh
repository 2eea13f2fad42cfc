#!/usr/bin/env bash
# Side by side with agent-sized bodies: Spillway (every feature on, as in
# bench/proxy.sh: PII scan local_only, decision log, metrics; once with the
# scan-verdict cache and the parse memo, once with limits.scan_cache_bytes and
# limits.parse_cache_bytes 0), nginx and HAProxy,
# configured by bench/targets.sh, each pinned to PROXY_CPU, in front of the
# same fixed upstream (bench/upstream.c), sending turns of one agent
# conversation (bench/agent_trace.py: system prompt, code and tool results,
# each turn resending the earlier ones).
#
# For each turn in TURNS and each shape in SHAPES (openai: POST
# /v1/chat/completions; anthropic: POST /v1/messages; claude: the same with
# extended thinking, a thinking block in every assistant turn, as Claude Code
# sends it, not in SHAPES by default; responses: POST /v1/responses, as Codex
# sends; Spillway translates all but the first for its OpenAI backend, the
# thinking blocks left out (translation.unsupported: drop), and the others
# pass them through):
#  - non-streamed: N POSTs of that turn's body over CONC keep-alive
#    connections (ab -k) after WARM: CPU µs per request and per KB of body
#    (the proxy's utime + stime from /proc over the run), ab's p50 / p99
#    latency, peak RSS;
#  - streamed (openai only): STREAMS streaming requests of the same body (22
#    SSE events EVENT_MS apart, bench/streams.c): first byte p50 / p99, CPU µs
#    per stream.
# Then the ratios Spillway / nginx and Spillway / HAProxy.
#
# The same body is sent N times, so with the cache every text of it is a hit
# after the first request: "spillway" is a conversation's steady state (no new
# text; a real later turn adds a few KB, which bench/agent_instr.sh counts),
# "spillway0" parses and scans every byte of every request. CPU times are timed, not
# counted: on a loaded machine read the ratios within one run.
#
#   bench/agent_proxy.sh              about 3 minutes
# Knobs: TURNS ("2 10 50"), SHAPES ("openai anthropic responses"), SEED (7), N (2000),
# WARM (40), CONC (8), STREAMS (200), EVENT_MS (20), TARGETS ("spillway
# spillway0 nginx haproxy"), PROXY_CPU (1), LOAD_CPU (0), BUILD, KEEP=1.
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD=${BUILD:-build}
PATH=$PATH:/usr/sbin:/sbin   # nginx, haproxy
TURNS=${TURNS:-"2 10 50"}
SHAPES=${SHAPES:-"openai anthropic responses"}
SEED=${SEED:-7}
N=${N:-2000}
WARM=${WARM:-40}
CONC=${CONC:-8}
STREAMS=${STREAMS:-200}
EVENT_MS=${EVENT_MS:-20}
TARGETS=${TARGETS:-"spillway spillway0 nginx haproxy"}
PROXY_CPU=${PROXY_CPU:-1}
LOAD_CPU=${LOAD_CPU:-0}

ulimit -n "$(ulimit -Hn)"
scripts/deps.sh bench
for b in ab bc python3; do command -v "$b" >/dev/null || { echo "agent_proxy.sh: needs $b" >&2; exit 1; }; done
make -s --no-print-directory BUILD="$BUILD" all
. bench/lib.sh       # bench_scratch, log_port, wait_http
bench_scratch
. bench/targets.sh   # build_tools, write_configs, start_target
build_tools

max=$(for n in $TURNS; do echo "$n"; done | sort -n | tail -1)
for s in $SHAPES; do
  python3 bench/agent_trace.py --out "$tmp/trace.$s" --seed "$SEED" --turns "$max" --shape "$s" \
    --only "$(echo $TURNS | tr ' ' ',')" >"$tmp/sizes.$s"
done

taskset -c "$LOAD_CPU" "$BUILD/bench/upstream" 0 "$EVENT_MS" >"$tmp/upstream.log" 2>&1 &
pids+=($!)
UP=$(log_port "$tmp/upstream.log")
write_configs "$UP"
# nginx keeps a body up to 1 MiB in memory (its default writes one above 16 KB to a file)
sed -i 's|^  access_log off;|  access_log off;\n  client_body_buffer_size 1m;\n  client_max_body_size 8m;|' "$tmp/nginx/nginx.conf"
# a coding agent's thinking blocks go to the chat backend without them, as
# docs/agents.md sets it (the other shapes have nothing it cannot carry)
grep -q '^translation:' "$tmp/spillway.yaml" || echo 'translation: { unsupported: drop }' >>"$tmp/spillway.yaml"
# spillway0: the same Spillway without the scan-verdict cache and the parse memo
sed 's|^limits: { |limits: { scan_cache_bytes: 0, parse_cache_bytes: 0, |' "$tmp/spillway.yaml" >"$tmp/spillway0.yaml"
grep -q 'scan_cache_bytes: 0' "$tmp/spillway0.yaml" || { echo "agent_proxy.sh: spillway0 config" >&2; exit 1; }

start() { # target
  case $1 in
  spillway0)
    taskset -c "$PROXY_CPU" "$BUILD/spillway" -c "$tmp/spillway0.yaml" --log-level warn >"$tmp/spillway0.log" 2>&1 &
    PID_OF[$1]=$!; pids+=($!)
    URL[$1]="127.0.0.1:$(log_port "$tmp/spillway0.log")" ;;
  *) start_target "$1" ;;
  esac
}
proc_pids() { local kids; kids=$(pgrep -P "$1" | tr '\n' ',' || true); echo "$1,$kids" | sed 's/,*$//'; }
cpu_ticks() { local t=0 p; for p in ${1//,/ }; do t=$((t + $(awk '{sub(/.*\) /, ""); print $12 + $13}' "/proc/$p/stat"))); done; echo "$t"; }
rss_kb() { local t=0 p; for p in ${1//,/ }; do t=$((t + $(awk '/^VmRSS:/ {print $2}' "/proc/$p/status"))); done; echo "$t"; }
HZ=$(getconf CLK_TCK)

res=$tmp/results   # target shape turn key value
ab_run() { # target shape body n out
  local path=/v1/chat/completions
  case $2 in anthropic | claude) path=/v1/messages ;; esac
  [ "$2" = responses ] && path=/v1/responses
  taskset -c "$LOAD_CPU" ab -q -k -n "$4" -c "$CONC" -p "$3" -T application/json \
    -H 'anthropic-version: 2023-06-01' "http://${URL[$1]}$path" >"$5" 2>&1 || { cat "$5" >&2; exit 1; }
  local bad
  bad=$(awk '/^Failed requests:/ {b += $3} /^Non-2xx responses:/ {b += $3} END {print b + 0}' "$5")
  [ "$bad" = 0 ] || { echo "agent_proxy.sh: $1 $2: $bad failed" >&2; cat "$5" >&2; exit 1; }
}
for t in $TARGETS; do
  start "$t"
  wait_http "http://${URL[$t]}/health"
  P=$(proc_pids "${PID_OF[$t]}")
  for s in $SHAPES; do
    for n in $TURNS; do
      body=$(printf '%s/trace.%s/turn_%03d.json' "$tmp" "$s" "$n")
      echo "  $t $s turn $n" >&2
      ab_run "$t" "$s" "$body" "$WARM" "$tmp/ab.warm"
      c0=$(cpu_ticks "$P"); peak=0
      ab_run "$t" "$s" "$body" "$N" "$tmp/ab.$t.$s.$n" &
      a=$!
      while kill -0 "$a" 2>/dev/null; do r=$(rss_kb "$P"); [ "$r" -gt "$peak" ] && peak=$r; sleep 0.2; done
      wait "$a"
      c1=$(cpu_ticks "$P")
      kb=$(awk -v n="$n" '$1 == n {print $2 / 1024}' "$tmp/sizes.$s")
      awk -v t="$t" -v s="$s" -v n="$n" -v c="$((c1 - c0))" -v hz="$HZ" -v N="$N" -v kb="$kb" -v rss="$peak" '
        $1 == "50%" { p50 = $2 } $1 == "99%" { p99 = $2 }
        END { us = c / hz * 1e6 / N
              printf "%s %s %s kb %.1f\n%s %s %s us_req %.1f\n%s %s %s us_kb %.2f\n%s %s %s p50 %s\n%s %s %s p99 %s\n%s %s %s rss %.1f\n",
                t, s, n, kb, t, s, n, us, t, s, n, us / kb, t, s, n, p50, t, s, n, p99, t, s, n, rss / 1024 }' \
        "$tmp/ab.$t.$s.$n" >>"$res"
      if [ "$s" = openai ] && [ "$STREAMS" -gt 0 ]; then
        c0=$(cpu_ticks "$P")
        line=$(taskset -c "$LOAD_CPU" "$BUILD/bench/streams" "${URL[$t]}" "$STREAMS" "$body" "$P" 1000 1)
        c1=$(cpu_ticks "$P")
        case $line in *" done=$STREAMS "*) ;; *) echo "agent_proxy.sh: $t streams: $line" >&2 ;; esac
        for k in fb_p50_ms fb_p99_ms done; do
          echo "$t $s $n $k $(echo "$line" | tr ' ' '\n' | sed -n "s/^$k=//p")" >>"$res"
        done
        echo "$t $s $n us_stream $(echo "($c1 - $c0) / $HZ * 1000000 / $STREAMS" | bc -l | xargs printf '%.1f')" >>"$res"
      fi
    done
  done
  kill "${PID_OF[$t]}" 2>/dev/null || true
  wait "${PID_OF[$t]}" 2>/dev/null || true
done

get() { awk -v t="$1" -v s="$2" -v n="$3" -v k="$4" '$1 == t && $2 == s && $3 == n && $4 == k {print $5}' "$res"; }
echo
echo "agent_proxy.sh: seed $SEED, $N non-streamed requests per body (ab -k -c $CONC) after $WARM;" \
  "$STREAMS streams of 22 SSE events $EVENT_MS ms apart; proxies on CPU $PROXY_CPU, load on CPU $LOAD_CPU"
printf '\n%-9s %-9s %4s %6s %9s %8s %8s %8s %7s %8s %8s %9s\n' target shape turn KB "us/req" "us/KB" \
  "p50 ms" "p99 ms" "RSS MB" "fb p50" "fb p99" "us/stream"
for s in $SHAPES; do for n in $TURNS; do for t in $TARGETS; do
  printf '%-9s %-9s %4s %6s %9s %8s %8s %8s %7s %8s %8s %9s\n' "$t" "$s" "$n" "$(get "$t" "$s" "$n" kb)" \
    "$(get "$t" "$s" "$n" us_req)" "$(get "$t" "$s" "$n" us_kb)" "$(get "$t" "$s" "$n" p50)" \
    "$(get "$t" "$s" "$n" p99)" "$(get "$t" "$s" "$n" rss)" "$(get "$t" "$s" "$n" fb_p50_ms)" \
    "$(get "$t" "$s" "$n" fb_p99_ms)" "$(get "$t" "$s" "$n" us_stream)"
done; done; done
echo
echo "ratios (CPU per request; first byte p99 of streams):"
for sp in spillway spillway0; do
  case " $TARGETS " in *" $sp "*) ;; *) continue ;; esac
  for b in nginx haproxy; do
    case " $TARGETS " in *" $b "*) ;; *) continue ;; esac
    for s in $SHAPES; do for n in $TURNS; do
      r=$(echo "$(get $sp "$s" "$n" us_req) / $(get $b "$s" "$n" us_req)" | bc -l)
      f=-
      [ -n "$(get $sp "$s" "$n" fb_p99_ms)" ] && [ -n "$(get $b "$s" "$n" fb_p99_ms)" ] &&
        f=$(printf '%.2f' "$(echo "$(get $sp "$s" "$n" fb_p99_ms) / $(get $b "$s" "$n" fb_p99_ms)" | bc -l)")
      printf '  %-9s / %-7s %-9s turn %-3s cpu %.2f  fb p99 %s\n' "$sp" "$b" "$s" "$n" "$r" "$f"
    done; done
  done
done
