#!/usr/bin/env bash
# A collector that stops answering under load costs no request and bounded
# memory: the gateway (tracing on, sample_ratio 1.0, http/protobuf, the
# default queue_max 4096 and batch 512) in front of one llmsim, CONC
# keep-alive clients for WARM_S s with the OTLP receiver answering, SILENT_S s
# with it silent (it accepts the connection and reads each export, never
# answers: the gateway's timeout_ms and retries run), AFTER_S s answering
# again. Prints requests done / failed, the gateway's RSS before / peak /
# after, the span queue's largest depth and the drops by reason (/metrics).
# Exits non-zero when a request failed. Wall-clock phases; the figures are
# counts and sizes, not times.
#
#   bench/otel_silent.sh                          about 1 minute
#   SILENT_S=5 WARM_S=3 AFTER_S=3 bench/otel_silent.sh
#
# Knobs (environment): CONC (8), WARM_S (10), SILENT_S (30), AFTER_S (10),
# BUILD (build).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
make -s --no-print-directory BUILD="$BUILD" all
SPILLWAY_BUILD=$BUILD exec node bench/otel_silent.mjs
