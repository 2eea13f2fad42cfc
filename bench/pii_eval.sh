#!/usr/bin/env bash
# Precision and recall of the PII detector per type on the labeled corpus.
# Compiles src/pii and src/common directly (no dependency on the rest of the tree).
#   bench/pii_eval.sh [-v] [tests/pii/corpus/labeled.jsonl]
#   BUILD=build/other bench/pii_eval.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
mkdir -p "$BUILD"
${CXX:-g++} -std=gnu++17 -O2 -g -Wall -Wextra -Werror -Isrc -c src/pii/phone.cc -o "$BUILD/pii_phone.o"
${CC:-cc} -std=gnu11 -O2 -g -Wall -Wextra -Werror -D_GNU_SOURCE -Isrc \
  $(pkg-config --cflags jansson libhs libpcre2-8 libutf8proc libevent) -o "$BUILD/pii_eval" tests/pii/pii_eval.c src/pii/*.c "$BUILD/pii_phone.o" src/common/*.c \
  $(pkg-config --libs jansson libhs libpcre2-8 libutf8proc libevent) -lphonenumber -lprotobuf -lsystemd -lstdc++ -lpthread -lm
v=
if [ "${1:-}" = -v ]; then v=-v; shift; fi
exec "$BUILD/pii_eval" $v "${1:-tests/pii/corpus/labeled.jsonl}"
