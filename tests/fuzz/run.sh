#!/usr/bin/env bash
# Builds every libFuzzer target tests/fuzz/fuzz_<name>.c with ASan + UBSan and
# runs each for FUZZ_SECONDS (default 30) on its seed corpus
# tests/fuzz/corpus/<name>/, with tests/fuzz/<name>.dict if there is one. New
# inputs go to build/fuzz/corpus/<name>/ (the seeds in the repo are never
# written); a crashing input is saved as build/fuzz/artifacts/<name>-crash-*,
# copied to tests/fuzz/regress/<name>/ and printed in base64 (commit it: from
# then on every run, the smoke run too, replays tests/fuzz/regress/<name>/*
# first and fails while any of them still crashes). Targets run FUZZ_JOBS (2)
# at a time. Exits non-zero if a target fails to build or finds a crash.
# The target list is the files tests/fuzz/fuzz_*.c: a new file is a new
# target, in `make fuzz`, `make fuzz-smoke` and CI (.ci/run). The modules
# under test are compiled once into build/fuzz/obj/ (again only when a source
# or a header it includes changed).
#   FUZZ_SECONDS=60 tests/fuzz/run.sh         longer runs
#   FUZZ_TARGETS="sse" tests/fuzz/run.sh      only some targets
#   FUZZ_SMOKE=1 tests/fuzz/run.sh            `make fuzz-smoke` (in `make test`):
#       FUZZ_RUNS (20000) inputs per target with seed 1, from the committed
#       seeds only: new inputs go to a scratch build/fuzz/smoke/<name>/,
#       emptied first, so each run starts from the same corpus
# Reproduce a crash: build/fuzz/fuzz_<name> build/fuzz/artifacts/<name>-crash-...
set -eu

cd "$(dirname "$0")/../.."
SMOKE=${FUZZ_SMOKE:-0}
if [ "$SMOKE" = 1 ]; then SECS=${FUZZ_SECONDS:-5}; else SECS=${FUZZ_SECONDS:-30}; fi
OUT=build/fuzz

if ! command -v clang >/dev/null 2>&1; then
    echo "fuzz: clang not found, installing it (it brings libFuzzer)" >&2
    SUDO=
    [ "$(id -u)" = 0 ] || SUDO=sudo
    $SUDO apt-get update -qq
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq clang
fi

# The modules under test and what they need: the parsers (the fast JSON
# loader, C++ with simdjson, too), the dialect
# translation, the PII engine (its
# C++ phone validator too), the config loader and the HTTP server (driven over
# loopback by fuzz_http).
SRCS="src/request/request.c src/request/prefix.c src/plan/trace.c src/obs/tracectx.c src/obs/span.c src/relay/sse.c $(ls src/dialect/*.c) $(ls src/pii/*.c src/pii/*.cc) $(ls src/common/*.c src/common/*.cc)
      $(ls src/config/*.c) src/http/server.c src/contract/schema.c
      src/state/respitems.c src/state/respstore.c src/upstream/oauth.c
      /usr/share/llhttp/api.c /usr/share/llhttp/http.c /usr/share/llhttp/llhttp.c"
SAN="-fsanitize=address,undefined -fno-sanitize-recover=undefined"
CFLAGS="-std=gnu11 -g -O1 $SAN -fno-omit-frame-pointer -Wall -Wextra -Werror -D_GNU_SOURCE -Isrc
        -I/usr/share/include/llhttp $(pkg-config --cflags jansson libhs yaml-0.1 libevent libutf8proc libxxhash)"
CXXFLAGS="-std=gnu++17 -g -O1 $SAN -fno-sanitize=vptr,function -fno-omit-frame-pointer -Wall -Wextra -Werror -Isrc"
LIBS="$(pkg-config --libs jansson libhs yaml-0.1 libevent libutf8proc libpcre2-8 libsystemd libcrypto libxxhash) -lphonenumber -lprotobuf -lsimdjson -lstdc++ -lpthread -lm"

TARGETS=${FUZZ_TARGETS:-$(for f in tests/fuzz/fuzz_*.c; do
    n=${f##*/fuzz_}; echo "${n%.c}"; done)}

# Objects of the modules, instrumented for coverage (fuzzer-no-link); a
# change of flags rebuilds them all.
mkdir -p "$OUT/obj" "$OUT/artifacts"
flags="$CFLAGS $CXXFLAGS -fsanitize=fuzzer-no-link $(clang --version | head -n 1)"
if [ ! -f "$OUT/obj/flags" ] || [ "$(cat "$OUT/obj/flags")" != "$flags" ]; then
    rm -rf "$OUT/obj"
    mkdir -p "$OUT/obj"
    printf '%s' "$flags" >"$OUT/obj/flags"
fi
stale() {   # $1 object: missing, or older than a file its .d lists
    [ -f "$1" ] || return 0
    for f in $(sed -e 's/^[^:]*://' -e 's/\\$//' "${1%.o}.d"); do
        [ "$f" -nt "$1" ] && return 0
    done
    return 1
}
OBJS=
for src in $SRCS; do
    obj="$OUT/obj/$(echo "${src%.*}" | tr / _).o"
    OBJS="$OBJS $obj"
    cc="clang $CFLAGS"
    case $src in
        *.cc) cc="clang++ $CXXFLAGS" ;;
        /usr/share/llhttp/*) cc="clang ${CFLAGS/-Werror/} -w" ;;   # third-party sources: no warnings
    esac
    if stale "$obj"; then
        # shellcheck disable=SC2086
        if ! $cc -fsanitize=fuzzer-no-link -MMD -MF "${obj%.o}.d" -c "$src" -o "$obj"; then
            echo "fuzz: BUILD FAILED ($src)" >&2
            exit 1
        fi
    fi
done

# Builds fuzz_$1; then replays every input in tests/fuzz/regress/$1/ (crashes
# found earlier, committed: each must now pass), then fuzzes. Its verdict is
# its exit status; a new crashing input is copied to tests/fuzz/regress/$1/
# and printed in base64 so it can be committed from a CI log.
run_target() {
    t=$1
    bin="$OUT/fuzz_$t"
    # shellcheck disable=SC2086
    if ! clang $CFLAGS -fsanitize=fuzzer -o "$bin" "tests/fuzz/fuzz_$t.c" $OBJS $LIBS \
            >"$OUT/fuzz_$t.build.log" 2>&1; then
        cat "$OUT/fuzz_$t.build.log" >&2
        echo "fuzz_$t: BUILD FAILED" >&2
        return 1
    fi
    regress="tests/fuzz/regress/$t"
    if [ -d "$regress" ] && [ -n "$(ls -A "$regress")" ]; then
        rlog="$OUT/fuzz_$t.regress.log"
        if "$bin" -timeout=10 "$regress"/* >"$rlog" 2>&1; then
            echo "fuzz_$t: $(ls "$regress" | wc -l) regression inputs replayed, OK"
        else
            echo "fuzz_$t: a regression input fails again, see $rlog" >&2
            grep -E 'Running:|check failed|ERROR|SUMMARY' "$rlog" >&2 || tail -n 40 "$rlog" >&2
            return 1
        fi
    fi
    if [ "$SMOKE" = 1 ]; then
        corpus="$OUT/smoke/$t"
        rm -rf "$corpus"
    else
        corpus="$OUT/corpus/$t"
    fi
    mkdir -p "$corpus"
    log="$OUT/fuzz_$t.log"
    dict=
    [ -f "tests/fuzz/$t.dict" ] && dict="-dict=tests/fuzz/$t.dict"
    # The smoke run is reproducible: a fixed seed and a fixed number of inputs
    # (a time limit would explore more on a faster machine), so `make test`
    # gives the same verdict everywhere; exploration is `make fuzz`'s job.
    if [ "$SMOKE" = 1 ]; then
        limit="-seed=1 -runs=${FUZZ_RUNS:-20000}"
        echo "== fuzz_$t: ${FUZZ_RUNS:-20000} inputs, seed 1 (log: $log)"
    else
        limit="-max_total_time=$SECS"
        echo "== fuzz_$t: run ${SECS}s (log: $log)"
    fi
    rm -f "$OUT/artifacts/$t-"*
    # shellcheck disable=SC2086
    if "$bin" $limit -timeout=10 -print_final_stats=1 $dict \
            -artifact_prefix="$OUT/artifacts/$t-" \
            "$corpus" "tests/fuzz/corpus/$t" >"$log" 2>&1; then
        execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
        cov=$(grep -E '^#[0-9]+' "$log" | tail -n 1 | sed -n 's/.*cov: \([0-9]*\).*/\1/p')
        secs=$(sed -n 's/^stat::.*//; s/.*Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log")
        echo "fuzz_$t: OK, ${execs:-?} executions in ${secs:-?} s, coverage ${cov:-?} edges"
        return 0
    fi
    echo "fuzz_$t: FAILED, see $log" >&2
    grep -E 'check failed|ERROR|SUMMARY|Test unit written' "$log" >&2 || tail -n 40 "$log" >&2
    mkdir -p "$regress"
    for a in "$OUT/artifacts/$t-"*; do
        [ -f "$a" ] || continue
        cp "$a" "$regress/"
        echo "fuzz_$t: crashing input saved as $regress/${a##*/}; commit it (base64 -d):" >&2
        base64 -w 76 "$a" >&2
    done
    return 1
}

# Two targets at a time (FUZZ_JOBS), so `make fuzz` with FUZZ_SECONDS=30 on
# 2 cores stays within a few minutes.
JOBS=${FUZZ_JOBS:-2}
failed=0
running=0
for t in $TARGETS; do
    if [ "$running" -ge "$JOBS" ]; then
        wait -n || failed=1
        running=$((running - 1))
    fi
    run_target "$t" &
    running=$((running + 1))
done
while [ "$running" -gt 0 ]; do
    wait -n || failed=1
    running=$((running - 1))
done
exit "$failed"
