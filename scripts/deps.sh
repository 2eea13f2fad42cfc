#!/usr/bin/env bash
# Installs what the build and the tests need, and only what is missing.
# Debian packages via apt-get (only for what pkg-config / PATH cannot find),
# npm packages via `npm ci` from the committed lock file.
#   scripts/deps.sh build   libraries for building spillway and llmsim
#   scripts/deps.sh run     build + node (make run: the demo's traffic generator)
#   scripts/deps.sh test    build + test tools (cmocka, node, wrk, clang, curl, python3, ab, ...) + npm ci
#   scripts/deps.sh bench   build + what bench/proxy.sh and bench/instr.sh run (nginx, haproxy, wrk, valgrind, ...)
set -euo pipefail
cd "$(dirname "$0")/.."
what=${1:-build}

need=()
pc() { pkg-config --exists "$1" 2>/dev/null || need+=("$2"); }
bin() { command -v "$1" >/dev/null 2>&1 || need+=("$2"); }

bin pkg-config pkg-config
bin cc gcc
bin make make
pc libevent libevent-dev
pc libevent_openssl libevent-dev    # state.redis rediss://: the OpenSSL bufferevent
pc openssl libssl-dev                # state.redis rediss://: TLS to Redis (src/state/rconn.c)
pc libcurl libcurl4-openssl-dev
pc jansson libjansson-dev
pc yaml-0.1 libyaml-dev
pc libhs libvectorscan-dev
pc libutf8proc libutf8proc-dev         # PII: Unicode normalisation (NFKC, categories)
pc libsystemd libsystemd-dev          # sd_notify: readiness and reload for systemd (Type=notify)
pc libpcre2-8 libpcre2-dev             # output contract: JSON Schema "pattern" (src/contract/schema.c)
pc hiredis libhiredis-dev              # state.redis: shared state across replicas (docs/scaling.md)
pc libxxhash libxxhash-dev             # prefix affinity: XXH3 over each request's blocks (src/request/prefix.c)
bin g++ g++                            # PII: src/pii/phone.cc
hdr() { [ -f "/usr/include/$1" ] || need+=("$2"); }
[ -f /usr/share/llhttp/llhttp.c ] || need+=(node-llhttp)   # HTTP/1 parser, C sources compiled in (Makefile)
hdr phonenumbers/phonenumberutil.h libphonenumber-dev   # PII: phone validation (no pkg-config file)
pc protobuf libprotobuf-dev             # PII: libphonenumber's metadata read in src/pii/phone.cc
hdr simdjson.h libsimdjson-dev           # request bodies parsed by src/common/jfast.cc (no pkg-config file)
if [ "$what" = run ]; then
  bin node nodejs             # scripts/demo-traffic.mjs (make run)
fi
if [ "$what" = test ]; then
  pc cmocka libcmocka-dev
  [ -d /usr/share/json-schema-test-suite/tests ] || need+=(json-schema-test-suite)   # tests/unit/test_schema.c
  bin node nodejs
  bin npm npm
  bin wrk wrk
  bin curl curl
  bin python3 python3         # tests/it/http_clients.test.mjs: urllib, http.client
  bin ab apache2-utils        # tests/it/http_clients.test.mjs: ApacheBench
  bin bc bc
  bin valgrind valgrind       # tests/unit/test_pii_linear: instruction counts (callgrind and its header)
  bin redis-server redis-server   # tests/it/replicas.test.mjs: the shared state (state.redis)
  bin openssl openssl
  bin chromium chromium       # tests/it/dashboard.test.mjs (driven by playwright-core)
  sbin() { command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ] || [ -x "/sbin/$1" ] || need+=("$2"); }
  sbin ip iproute2            # tests/it/faults.test.mjs: network namespaces, veth, tc netem / tbf
  sbin modprobe kmod          # tests/it/faults.test.mjs: modprobe sch_netem
  sbin haproxy haproxy        # tests/it/redis_tls.test.mjs: the TLS tunnel to a TLS-only Redis
  bin promtool prometheus     # make install-check: promtool check rules docs/prometheus/alerts.yml
  bin man man-db              # make install-check: man -l renders dist/spillway.1
  bin groff groff             #   ... and checks it for warnings
  # make fuzz-smoke: clang and its libFuzzer runtime (a recommendation of clang's, skipped below)
  printf 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { (void)d; return (int)n * 0; }\n' \
    | clang -fsanitize=fuzzer -x c - -o /dev/null >/dev/null 2>&1 || need+=(clang libclang-rt-dev)
fi

if [ "$what" = bench ]; then
  PATH=$PATH:/usr/sbin:/sbin   # nginx and haproxy live there
  bin wrk wrk
  bin curl curl
  bin nginx nginx
  bin haproxy haproxy
  bin taskset util-linux
  bin pgrep procps
  bin ss iproute2
  bin python3 python3
  bin bc bc
  pc libpcre2-8 libpcre2-dev            # bench/pii.sh: the PCRE2-JIT baseline
  bin valgrind valgrind                 # bench/instr.sh, bench/pii_instr.sh: callgrind
  bin strace strace                     # bench/instr.sh: syscalls per request
  bin ab apache2-utils                  # bench/instr.sh: a fixed number of requests
fi

if [ ${#need[@]} -gt 0 ]; then
  echo "deps: installing ${need[*]}" >&2
  SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

if [ "$what" = test ]; then
  # npm ci only when the lock file changed since the last install.
  stamp=node_modules/.spillway-lock
  if [ ! -f "$stamp" ] || ! cmp -s package-lock.json "$stamp"; then
    npm ci --no-audit --no-fund --loglevel=error
    cp package-lock.json "$stamp"
  fi
fi
