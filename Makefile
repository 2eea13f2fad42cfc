# Spillway: plain Makefile with pkg-config (see ../shared/STYLE.md "Build").
#   make            build build/spillway and build/llmsim
#   make run        install what is missing, build, start the demo (examples/demo.yaml, dashboard URL printed)
#   make test       install what is missing, build, run unit tests, fuzz smoke, integration tests, install check, 60 s soak
#   make test-unit / test-it / fuzz-smoke / bench / fuzz / soak / check-pure / check-banned / check-layers / check-longfn
#   make install    binary, man page, examples, systemd unit (PREFIX=/usr/local, DESTDIR honoured)
#   make install-check   make install into a temp DESTDIR and check what landed (run by make test)
#   SANITIZE=1      build with AddressSanitizer + UndefinedBehaviorSanitizer (own build dir)

CC      ?= cc
PKGS    := libevent libcurl jansson yaml-0.1 libhs libutf8proc libpcre2-8 libsystemd hiredis \
           libevent_openssl openssl libxxhash
ifeq ($(SANITIZE),1)
BUILD   ?= build/asan
SANFLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
OPT     := -O1 -g
else
BUILD   ?= build
SANFLAGS :=
OPT     := -O2 -g
endif

VERSION := $(shell cat VERSION 2>/dev/null || echo 0.0.0)
CFLAGS  += -std=gnu11 $(OPT) -Wall -Wextra -Werror -Wshadow -Wformat=2 -Wno-format-nonliteral \
           -D_GNU_SOURCE -DSW_VERSION='"$(VERSION)"' -Isrc -I$(BUILD)/gen $(SANFLAGS) \
           $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
# libphonenumber (C++, no pkg-config file) validates phone candidates: src/pii/phone.cc
# simdjson (C++, no pkg-config file on Debian 12) parses request bodies: src/common/jfast.cc
CXX     ?= g++
CXXFLAGS += -std=gnu++17 $(OPT) -Wall -Wextra -Werror -Isrc $(SANFLAGS)
LDLIBS  += $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lphonenumber -lprotobuf -lsimdjson -lstdc++ -lm
LDFLAGS += $(SANFLAGS)

SW_SRC   := $(shell find src -name '*.c' ! -path src/main.c | sort)
SW_CXX   := $(shell find src -name '*.cc' | sort)
# llhttp (the HTTP/1 parser of Node.js) ships as C sources in Debian's
# node-llhttp: compiled in, without our warning flags (third-party code).
LLHTTP_DIR := /usr/share/llhttp
LLHTTP_OBJ := $(BUILD)/obj/llhttp/api.o $(BUILD)/obj/llhttp/http.o $(BUILD)/obj/llhttp/llhttp.o
CFLAGS  += -I/usr/share/include/llhttp
SW_OBJ   := $(SW_SRC:%.c=$(BUILD)/obj/%.o) $(SW_CXX:%.cc=$(BUILD)/obj/%.o) $(LLHTTP_OBJ)
# llmsim serves the Responses API by translating its own chat answers with the gateway's translator.
SIM_SRC  := $(shell find tools/llmsim -name '*.c' ! -name main.c | sort) $(sort $(wildcard src/common/*.c src/http/*.c)) \
            src/dialect/responses_resp.c
SIM_OBJ  := $(SIM_SRC:%.c=$(BUILD)/obj/%.o) $(LLHTTP_OBJ)
# Unit tests: tests/unit/test_llmsim_*.c link with the simulator, the rest with the daemon.
UT_SIM   := $(sort $(wildcard tests/unit/test_llmsim*.c))
UT_SW    := $(filter-out $(UT_SIM),$(sort $(wildcard tests/unit/test_*.c)))
UT_BIN   := $(UT_SW:tests/unit/%.c=$(BUILD)/tests/%) $(UT_SIM:tests/unit/%.c=$(BUILD)/tests/%)

.PHONY: all run test test-unit test-it bench fuzz fuzz-smoke soak soak-smoke deps deps-test check-pure check-banned check-layers check-longfn clean install install-check
all: $(BUILD)/spillway $(BUILD)/llmsim

deps:
	@scripts/deps.sh build
deps-test:
	@scripts/deps.sh test

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c $< -o $@
$(BUILD)/obj/%.o: %.cc
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) -MMD -MP -c $< -o $@
$(BUILD)/obj/llhttp/%.o: $(LLHTTP_DIR)/%.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 $(OPT) $(SANFLAGS) -I/usr/share/include/llhttp -c $< -o $@

# The dashboard page is compiled in: a C array of its bytes, made with od and
# sed (coreutils), so no extra tool is needed.
$(BUILD)/gen/dashboard_html.h: src/obs/dashboard.html
	@mkdir -p $(dir $@)
	@{ echo '/* Generated from $< by the Makefile: do not edit. */'; \
	   echo 'static const unsigned char dashboard_html[] = {'; \
	   od -An -v -tx1 $< | sed 's/ *\([0-9a-f][0-9a-f]\)/0x\1,/g'; \
	   echo '0x00};'; \
	   echo 'static const unsigned long dashboard_html_len = sizeof dashboard_html - 1;'; \
	 } > $@.tmp && mv $@.tmp $@
$(BUILD)/obj/src/obs/dashboard.o: $(BUILD)/gen/dashboard_html.h

$(BUILD)/libspillway.a: $(SW_OBJ)
	@rm -f $@; ar rcs $@ $^
$(BUILD)/libllmsim.a: $(SIM_OBJ)
	@rm -f $@; ar rcs $@ $^

$(BUILD)/spillway: $(BUILD)/obj/src/main.o $(BUILD)/libspillway.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)
$(BUILD)/llmsim: $(BUILD)/obj/tools/llmsim/main.o $(BUILD)/libllmsim.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(UT_SW:tests/unit/%.c=$(BUILD)/tests/%): $(BUILD)/tests/%: tests/unit/%.c $(BUILD)/libspillway.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Itests/unit $(LDFLAGS) -o $@ $< $(BUILD)/libspillway.a $(LDLIBS) -lcmocka
# test_agent_replay builds bench/agent_sim.c into itself.
$(BUILD)/tests/test_agent_replay: bench/agent_sim.c bench/agent_sim.h
# test_pii_wipe inspects every block the daemon's code frees (its __wrap_free).
$(BUILD)/tests/test_pii_wipe: private LDFLAGS += -Wl,--wrap=free
$(BUILD)/tests/test_respstore_wipe: private LDFLAGS += -Wl,--wrap=free
$(UT_SIM:tests/unit/%.c=$(BUILD)/tests/%): $(BUILD)/tests/%: tests/unit/%.c $(BUILD)/libllmsim.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Itools/llmsim -Itests/unit $(LDFLAGS) -o $@ $< $(BUILD)/libllmsim.a $(LDLIBS) -lcmocka

# The pure modules (route, pii, request, config validation) include no I/O headers;
# obs (metrics, decision log, account) no event-loop, HTTP-client or clock headers.
check-pure:
	@! grep -rnE '#include [<"](event2/|curl/|hiredis|time\.h|sys/time\.h)' \
	   src/request src/route src/pii src/config src/contract src/dialect src/state/localq.c src/state/claim.c src/state/rkey.c src/state/respstore.c src/state/respitems.c src/state/store.c \
	   src/obs/metrics.c src/obs/declog.c src/obs/obs.c src/obs/series.c 2>/dev/null \
	   || (echo "check-pure: a pure module includes an I/O or clock header" >&2; false)
	@! grep -rnE '#include "common/log.h"|\b(printf|fprintf|dprintf|puts|fputs|perror|syslog|write|sw_(info|warn|error|debug|log))[[:space:]]*\(' \
	   src/pii \
	   || (echo "check-pure: the PII engine must not log or print (values must never reach a log)" >&2; false)
	@! grep -nE '#include "common/log.h"|\b(printf|fprintf|dprintf|puts|fputs|perror|syslog|write|sw_(info|warn|error|debug|log))[[:space:]]*\(' \
	   src/request/facts.c \
	   || (echo "check-pure: the fact derivation must not log or print (the front logs what it returns)" >&2; false)
	@! grep -rnE '#include [<"](curl/|hiredis|upstream/(curlev|h1|transport)\.h|state/(rstate|rconn)\.h)' src/relay \
	   || (echo "check-pure: the relay sees one store (state/store.h) and one transport (upstream/upstream.h): no curl, hiredis or implementation header" >&2; false)

# No call the project bans (STYLE.md "Memory and ownership"): unbounded copies,
# a conversion that cannot report an error. Allowed instead: snprintf, vsnprintf,
# memcpy with a length, sw_buf, strtol. A call is the name as a word, then "(".
# The first line checks that the pattern still finds what it must.
BANNED_RE := \b(atoi|sprintf|vsprintf|strcpy|strcat|gets)[[:space:]]*\(
check-banned:
	@printf 'n = atoi(s); sprintf (b, f); strcpy(d, s); strcat(d, s); gets(b); vsprintf(b, f, a);\n' \
	   | grep -oE '$(BANNED_RE)' | wc -l | grep -qx 6 \
	   || (echo "check-banned: the pattern no longer finds the banned calls" >&2; false)
	@! printf 'snprintf(b, n, f); vsnprintf(b, n, f, a); strncpy_s(d); fgets(b); sw_gets(x);\n' \
	   | grep -qE '$(BANNED_RE)' \
	   || (echo "check-banned: the pattern finds allowed calls" >&2; false)
	@! grep -rnE --include='*.c' --include='*.h' --include='*.cc' '$(BANNED_RE)' src tools \
	   || (echo "check-banned: a banned call (atoi, sprintf, vsprintf, strcpy, strcat, gets) in src/ or tools/" >&2; false)

# No include cycle between src/ files (x.c with x.h is one node) and the
# layering rules of scripts/layers.py (config/ below upstream/ and state/; the
# view builder below none of the decision). `python3 scripts/layers.py` prints the graph's cycles.
check-layers:
	@python3 scripts/layers.py --check >/dev/null || python3 scripts/layers.py --check

# No function in src/ over 100 lines, brace to brace, but the tables listed in
# scripts/longfn.py (`python3 scripts/longfn.py -n 60` lists the long ones).
check-longfn:
	@python3 scripts/longfn.py --check >/dev/null || python3 scripts/longfn.py --check

# DEMO_TRAFFIC=0: no background traffic (scripts/demo.sh --no-traffic).
DEMO_TRAFFIC ?= 1
run:
	@scripts/deps.sh run
	@$(MAKE) --no-print-directory all
	@DEMO_TRAFFIC=$(DEMO_TRAFFIC) scripts/demo.sh

test: deps-test
	@$(MAKE) --no-print-directory all unit-bins
	@$(MAKE) --no-print-directory check-pure check-banned check-layers check-longfn test-unit fuzz-smoke test-it install-check
ifneq ($(SANITIZE),1)
	@$(MAKE) --no-print-directory soak-smoke
endif

unit-bins: $(UT_BIN) $(BUILD)/tests/sockinfo $(BUILD)/tests/netimp $(BUILD)/tests/respstore_drive \
           $(BUILD)/tests/aws_drive \
           $(BUILD)/bench/replay

# Test helper: the TCP sockets of a process and their options (it/gateway).
$(BUILD)/tests/sockinfo: tests/it/lib/sockinfo.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $<

# Test helper: the response store on a real Redis, driven from stdin (it/respstore_redis).
$(BUILD)/tests/respstore_drive: tests/it/lib/respstore_drive.c $(BUILD)/libspillway.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(BUILD)/libspillway.a $(LDLIBS)

# Test helper: the SigV4 signer and the event-stream decoder on inputs from stdin (it/aws_refs).
$(BUILD)/tests/aws_drive: tests/it/lib/aws_drive.c $(BUILD)/libspillway.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(BUILD)/libspillway.a $(LDLIBS)

# Router quality on a multi-turn agent scenario against an oracle (docs/routing.md).
$(BUILD)/bench/agent_replay: bench/agent_replay.c bench/agent_sim.c bench/agent_sim.h $(BUILD)/libspillway.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Ibench $(LDFLAGS) -o $@ bench/agent_replay.c bench/agent_sim.c $(BUILD)/libspillway.a $(LDLIBS)

# Offline replay of the spill decision against an oracle (docs/routing.md).
$(BUILD)/bench/replay: bench/replay.c bench/replay_sim.c bench/replay_sim.h $(BUILD)/libspillway.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Ibench $(LDFLAGS) -o $@ bench/replay.c bench/replay_sim.c $(BUILD)/libspillway.a $(LDLIBS)

# The PII scan work of one turn of an agent's conversation (bench/agent_instr.sh).
$(BUILD)/bench/agent_scan: bench/agent_scan.c $(BUILD)/libspillway.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(BUILD)/libspillway.a $(LDLIBS)

# The front's parse of one body, natively timed (bench/agent_instr.sh GATEWAY=1).
$(BUILD)/bench/agent_parse: bench/agent_parse.c $(BUILD)/libspillway.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(BUILD)/libspillway.a $(LDLIBS)

test-unit: $(UT_BIN)
	@set -e; for t in $(UT_BIN); do echo "== $$t"; $$t; done

# Test helper: an impaired IP link (delay, loss, reordering) where tc netem is missing (it/faults).
$(BUILD)/tests/netimp: tests/it/lib/netimp.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< -lm

test-it: all $(BUILD)/tests/sockinfo $(BUILD)/tests/netimp $(BUILD)/tests/respstore_drive
	SPILLWAY_BUILD=$(BUILD) node --test --test-concurrency=1 tests/it/*.test.mjs

bench:
	@BUILD=$(BUILD) SANITIZE=$(SANITIZE) bench/proxy.sh

fuzz:
	@tests/fuzz/run.sh

# Every fuzz target, 20000 inputs with seed 1, from its committed corpus (ASan + UBSan, its own
# build in build/fuzz whatever SANITIZE says); the long runs are `make fuzz`.
fuzz-smoke:
	@FUZZ_SMOKE=1 tests/fuzz/run.sh

# Installation. The unit runs $(BINDIR)/spillway -c $(SYSCONFDIR)/spillway/spillway.yaml;
# an existing spillway.yaml is never overwritten.
PREFIX     ?= /usr/local
BINDIR     ?= $(PREFIX)/bin
MANDIR     ?= $(PREFIX)/share/man
DOCDIR     ?= $(PREFIX)/share/doc/spillway
SYSCONFDIR ?= /etc
UNITDIR    ?= $(PREFIX)/lib/systemd/system

install: $(BUILD)/spillway
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(DOCDIR)/examples \
	   $(DESTDIR)$(DOCDIR)/prometheus $(DESTDIR)$(UNITDIR) $(DESTDIR)$(SYSCONFDIR)/spillway
	install -m 755 $(BUILD)/spillway $(DESTDIR)$(BINDIR)/spillway
	install -m 644 dist/spillway.1 $(DESTDIR)$(MANDIR)/man1/spillway.1
	install -m 644 examples/*.yaml $(DESTDIR)$(DOCDIR)/examples/
	install -m 644 docs/prometheus/alerts.yml $(DESTDIR)$(DOCDIR)/prometheus/alerts.yml
	sed -e 's|@BINDIR@|$(BINDIR)|g' -e 's|@SYSCONFDIR@|$(SYSCONFDIR)|g' dist/systemd/spillway.service.in \
	   > $(DESTDIR)$(UNITDIR)/spillway.service
	chmod 644 $(DESTDIR)$(UNITDIR)/spillway.service
	[ -e $(DESTDIR)$(SYSCONFDIR)/spillway/spillway.yaml ] || \
	   install -m 644 examples/llamacpp-openai.yaml $(DESTDIR)$(SYSCONFDIR)/spillway/spillway.yaml

install-check: $(BUILD)/spillway
	@BUILD=$(BUILD) scripts/install-check.sh

# Mixed load with faults toggling; fails on RSS/fd growth or a lost request
# (bench/soak.sh, docs/reliability.md). `make test` runs 60 s, normal build only.
soak: all
	@BUILD=$(BUILD) SANITIZE=$(SANITIZE) bench/soak.sh
soak-smoke: all
	@BUILD=$(BUILD) SANITIZE=$(SANITIZE) SOAK_S=60 bench/soak.sh

clean:
	rm -rf build

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
