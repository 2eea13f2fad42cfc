#!/usr/bin/env bash
# The cost of the output contract on one answer (parse + JSON Schema
# validation), next to a parse-only baseline in the same process.
#   bench/contract.sh [ITERATIONS]      default 20000 per scenario
#   BUILD=build/other bench/contract.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
make -s --no-print-directory BUILD="$BUILD" "$BUILD/libspillway.a"
mkdir -p "$BUILD/bench"
${CC:-cc} -std=gnu11 -O2 -g -Wall -Wextra -Werror -D_GNU_SOURCE -Isrc \
  -o "$BUILD/bench/contract" bench/contract.c "$BUILD/libspillway.a" \
  $(pkg-config --libs jansson libpcre2-8) -lm
exec "$BUILD/bench/contract" "$@"
