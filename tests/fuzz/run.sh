#!/bin/sh
# Builds every libFuzzer target tests/fuzz/fuzz_<name>.c with ASan + UBSan and
# runs each for FUZZ_SECONDS (default 30) on its seed corpus
# tests/fuzz/corpus/<name>/, with tests/fuzz/<name>.dict if there is one. New inputs go to build/fuzz/corpus/<name>/ (the
# seeds in the repo are never written); a crashing input is saved as
# build/fuzz/artifacts/<name>-crash-*. Exits non-zero if a target fails to
# build or finds a crash.
#   FUZZ_SECONDS=60 tests/fuzz/run.sh         longer runs
#   FUZZ_TARGETS="sse" tests/fuzz/run.sh      only some targets
set -eu

cd "$(dirname "$0")/../.."
SECS=${FUZZ_SECONDS:-30}
OUT=build/fuzz

if ! command -v clang >/dev/null 2>&1; then
    echo "fuzz: clang not found, installing it (it brings libFuzzer)" >&2
    SUDO=
    [ "$(id -u)" = 0 ] || SUDO=sudo
    $SUDO apt-get update -qq
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq clang
fi

# The modules under test and what they need; nothing with I/O.
SRCS="src/request/request.c src/relay/sse.c $(ls src/pii/*.c) $(ls src/common/*.c)"
CFLAGS="-std=gnu11 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
        -fno-omit-frame-pointer -Wall -Wextra -Werror -D_GNU_SOURCE -Isrc"
JANSSON="$(pkg-config --cflags --libs jansson libhs) -lpthread"

TARGETS=${FUZZ_TARGETS:-$(for f in tests/fuzz/fuzz_*.c; do
    n=${f##*/fuzz_}; echo "${n%.c}"; done)}

mkdir -p "$OUT/artifacts"
failed=0
for t in $TARGETS; do
    bin="$OUT/fuzz_$t"
    echo "== fuzz_$t: build"
    # shellcheck disable=SC2086
    if ! clang $CFLAGS -o "$bin" "tests/fuzz/fuzz_$t.c" $SRCS $JANSSON -lm; then
        echo "fuzz_$t: BUILD FAILED" >&2
        failed=1
        continue
    fi
    mkdir -p "$OUT/corpus/$t"
    log="$OUT/fuzz_$t.log"
    echo "== fuzz_$t: run ${SECS}s (log: $log)"
    dict=
    [ -f "tests/fuzz/$t.dict" ] && dict="-dict=tests/fuzz/$t.dict"
    # shellcheck disable=SC2086
    if "$bin" -max_total_time="$SECS" -timeout=10 -print_final_stats=1 $dict \
            -artifact_prefix="$OUT/artifacts/$t-" \
            "$OUT/corpus/$t" "tests/fuzz/corpus/$t" >"$log" 2>&1; then
        execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
        cov=$(grep -E '^#[0-9]+' "$log" | tail -n 1 | sed -n 's/.*cov: \([0-9]*\).*/\1/p')
        echo "fuzz_$t: OK, ${execs:-?} executions, coverage ${cov:-?} edges"
    else
        echo "fuzz_$t: FAILED, see $log; crashing input in $OUT/artifacts/" >&2
        tail -n 40 "$log" >&2
        failed=1
    fi
done
exit "$failed"
