#!/usr/bin/env bash
# The cost of one routing decision (it must stay well under a microsecond).
# Builds the library (make all), links bench/decide.c against it and runs it:
# ns per sw_route_decide() call over a 2 local + 2 cloud view, for several
# request shapes, next to a memset-of-the-plan baseline measured in the same
# process.
#   bench/decide.sh [ITERATIONS]        default 10000000 per scenario
#   BUILD=build/other bench/decide.sh   another build directory
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
make -s --no-print-directory BUILD="$BUILD" "$BUILD/libspillway.a"
mkdir -p "$BUILD/bench"
${CC:-cc} -std=gnu11 -O2 -g -Wall -Wextra -Werror -D_GNU_SOURCE -Isrc \
  -o "$BUILD/bench/decide" bench/decide.c "$BUILD/libspillway.a" -lm
exec "$BUILD/bench/decide" "$@"
