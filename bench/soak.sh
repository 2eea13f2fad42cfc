#!/usr/bin/env bash
# Soak test: SOAK_S seconds (default 600) of mixed load with faults toggling,
# sampling the gateway's RSS, open fds and /healthz lag every second; fails on
# growth or a lost request. Writes bench/out/soak.csv and soak.svg (SOAK_OUT
# to change). `make test` runs it for 60 s (make soak-smoke). Details in
# bench/soak.mjs and docs/reliability.md.
#   bench/soak.sh              10 minutes
#   SOAK_S=60 bench/soak.sh    one minute
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
make -s all BUILD="$BUILD" SANITIZE="${SANITIZE:-}" >/dev/null
SPILLWAY_BUILD=$BUILD exec node bench/soak.mjs
