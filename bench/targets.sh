# Sourced by bench/proxy.sh, bench/instr.sh (and bench/responses_instr.sh, for
# spillway_features and start_target): the proxies they compare, each
# configured the same way in both, and the helpers that start them.
#
# Before sourcing: bench/lib.sh (its bench_scratch run: tmp, pids), BUILD,
# PROXY_CPU. Then:
#   build_tools           compiles the upstream and the stream client
#                         (bench/upstream.c, bench/streams.c) into $BUILD/bench
#   write_configs UP      configs for Spillway, nginx and HAProxy in front of
#                         the upstream on 127.0.0.1:UP; sets NGX and HAP (ports)
#   spillway_features     prints the config lines that turn Spillway's features
#                         on (PII scan, decision log, limits), for a config
#                         written elsewhere (bench/responses_instr.sh)
#   start_target T [WRAPPER...]
#                         starts target T (spillway, nginx, haproxy) pinned to
#                         PROXY_CPU, under WRAPPER (e.g. valgrind) if given;
#                         sets PID_OF[T] (the pid started) and URL[T] (H:P)
# Knobs: NGINX_MAIN (extra top-level nginx directives, e.g. "master_process
# off;"); SPILLWAY_EXTRA (config lines appended to Spillway's, e.g.
# "routing: { affinity: { enabled: false } }"); bench/lib.sh's WAIT_TRIES.

declare -A URL PID_OF
NGINX_MAIN=${NGINX_MAIN:-}

spillway_features() {
  echo 'pii: { policy: local_only }'
  echo "decision_log: \"$tmp/decisions.log\""
  echo 'limits: { max_connections: 20000, client_timeout_ms: 60000 }'
  [ -z "${SPILLWAY_EXTRA:-}" ] || echo "$SPILLWAY_EXTRA"
}

build_tools() {
  local p
  mkdir -p "$BUILD/bench"
  for p in upstream streams; do
    ${CC:-cc} -std=gnu11 -O2 -Wall -Wextra -Werror -D_GNU_SOURCE -o "$BUILD/bench/$p" "bench/$p.c"
  done
}

write_configs() { # UP
  local up=$1 i
  # ---- Spillway: PII scan (local_only), decision log to a file, metrics ----
  # One backend may have at most 1024 slots: 20 local backends on the same
  # upstream give 20000 slots, so no stream waits in Spillway's queue.
  {
    echo 'listen: "127.0.0.1:0"'
    echo 'backends:'
    for i in $(seq -w 0 19); do
      echo "  - { name: up$i, tier: local, url: \"http://127.0.0.1:$up\", model: bench, slots: 1000, queue_max: 1000, prefill_tps: 1000000 }"
    done
    echo 'models:'
    printf '  - { name: chat, backends: ['
    for i in $(seq -w 0 19); do printf '%sup%s' "$([ "$i" = 00 ] || echo ', ')" "$i"; done
    echo '] }'
    spillway_features
  } >"$tmp/spillway.yaml"

  # ---- nginx: one worker, upstream keep-alive pool, no response buffering ----
  NGX=$(free_port)
  mkdir -p "$tmp/nginx"
  cat >"$tmp/nginx/nginx.conf" <<EOF
daemon off;
$NGINX_MAIN
worker_processes 1;
worker_rlimit_nofile $(ulimit -n);
pid $tmp/nginx/nginx.pid;
error_log $tmp/nginx/error.log warn;
events { worker_connections $(ulimit -n); }
http {
  access_log off;
  client_body_temp_path $tmp/nginx/body;
  proxy_temp_path $tmp/nginx/proxy;
  fastcgi_temp_path $tmp/nginx/fastcgi;
  uwsgi_temp_path $tmp/nginx/uwsgi;
  scgi_temp_path $tmp/nginx/scgi;
  keepalive_requests 1000000;
  upstream up { server 127.0.0.1:$up; keepalive 1024; keepalive_requests 1000000; }
  server {
    listen 127.0.0.1:$NGX backlog=65535;
    location / {
      proxy_pass http://up;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
      proxy_read_timeout 60s;
    }
  }
}
EOF

  # ---- HAProxy: one thread, idle upstream connections shared by every client ----
  HAP=$(free_port)
  cat >"$tmp/haproxy.cfg" <<EOF
global
  nbthread 1
  maxconn $(( ($(ulimit -n) - 100) / 2 ))   # 2 descriptors per proxied connection
defaults
  mode http
  timeout connect 5s
  timeout client 60s
  timeout server 60s
  timeout http-keep-alive 60s
  http-reuse always
  # without it HAProxy sends a partial chunked body with MSG_MORE and Linux
  # holds each SSE event up to 200 ms
  option http-no-delay
frontend fe
  bind 127.0.0.1:$HAP backlog 65535
  default_backend be
backend be
  server up 127.0.0.1:$up
EOF
}

start_target() { # T [WRAPPER...]: adds the pid to the caller's pids array (killed on exit)
  local t=$1
  shift
  case $t in
  spillway)
    taskset -c "$PROXY_CPU" "$@" "$BUILD/spillway" -c "$tmp/spillway.yaml" --log-level warn \
      >"$tmp/spillway.log" 2>&1 &
    PID_OF[$t]=$!; pids+=($!)
    URL[$t]="127.0.0.1:$(log_port "$tmp/spillway.log")" ;;
  nginx)
    taskset -c "$PROXY_CPU" "$@" nginx -p "$tmp/nginx" -e "$tmp/nginx/error.log" -c "$tmp/nginx/nginx.conf" \
      >"$tmp/nginx.log" 2>&1 &
    PID_OF[$t]=$!; pids+=($!)
    URL[$t]="127.0.0.1:$NGX" ;;
  haproxy)
    taskset -c "$PROXY_CPU" "$@" haproxy -db -f "$tmp/haproxy.cfg" >"$tmp/haproxy.log" 2>&1 &
    PID_OF[$t]=$!; pids+=($!)
    URL[$t]="127.0.0.1:$HAP" ;;
  *) echo "$(basename "$0"): unknown target $t" >&2; exit 2 ;;
  esac
}
