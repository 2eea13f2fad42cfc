#!/usr/bin/env bash
# `make install` into a temporary DESTDIR, then checks what landed: the files,
# the binary runs, the man page renders with `man -l`, the unit names the
# installed paths and passes `systemd-analyze verify` (skipped, with a message,
# where systemd is absent), and the alert rules pass `promtool check rules`.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
dest=$(mktemp -d "${TMPDIR:-/tmp}/spillway-install-XXXXXX")
trap 'rm -rf "$dest"' EXIT
fail() { echo "install-check: $*" >&2; exit 1; }

make --no-print-directory -s install BUILD="$BUILD" DESTDIR="$dest" PREFIX=/usr/local >/dev/null
for f in usr/local/bin/spillway usr/local/share/man/man1/spillway.1 \
         usr/local/lib/systemd/system/spillway.service etc/spillway/spillway.yaml \
         usr/local/share/doc/spillway/examples/demo.yaml \
         usr/local/share/doc/spillway/prometheus/alerts.yml; do
  [ -s "$dest/$f" ] || fail "$f missing after make install DESTDIR=$dest"
done
[ -x "$dest/usr/local/bin/spillway" ] || fail "the installed binary is not executable"
"$dest/usr/local/bin/spillway" --version | grep -q '^spillway ' || fail "the installed binary does not run"

# An installed config is kept on a second install.
echo '# mine' >> "$dest/etc/spillway/spillway.yaml"
make --no-print-directory -s install BUILD="$BUILD" DESTDIR="$dest" PREFIX=/usr/local >/dev/null
grep -q '^# mine' "$dest/etc/spillway/spillway.yaml" || fail "make install overwrote etc/spillway/spillway.yaml"

man=$(MANWIDTH=80 man -P cat -l "$dest/usr/local/share/man/man1/spillway.1" 2>&1) || fail "man -l failed: $man"
grep -q 'NOTIFY_SOCKET' <<<"$man" && grep -q -- '--check-config' <<<"$man" || fail "the man page lacks its sections"
warn=$(groff -mandoc -ww -z "$dest/usr/local/share/man/man1/spillway.1" 2>&1 || true)
[ -z "$warn" ] || fail "groff warns about the man page: $warn"

unit="$dest/usr/local/lib/systemd/system/spillway.service"
grep -q '^ExecStart=/usr/local/bin/spillway -c /etc/spillway/spillway.yaml$' "$unit" || fail "the unit does not run the installed binary"
grep -q '^Type=notify$' "$unit" || fail "the unit is not Type=notify"
! grep -q '@[A-Z]*@' "$unit" || fail "the unit has unfilled @PLACEHOLDERS@"
if command -v systemd-analyze >/dev/null 2>&1; then
  # verify checks that the commands exist: point them at the DESTDIR copies.
  tmpunit="$dest/spillway.service"
  sed -e "s|=/usr/local/bin/|=$dest/usr/local/bin/|; s|/etc/spillway/|$dest/etc/spillway/|g" "$unit" > "$tmpunit"
  out=$(systemd-analyze verify --man=no "$tmpunit" 2>&1) || fail "systemd-analyze verify: $out"
  [ -z "$out" ] || fail "systemd-analyze verify warns: $out"
else
  echo "install-check: systemd-analyze not found; the unit's syntax is not verified" >&2
fi

if command -v promtool >/dev/null 2>&1; then
  promtool check rules "$dest/usr/local/share/doc/spillway/prometheus/alerts.yml" >/dev/null \
    || fail "promtool check rules docs/prometheus/alerts.yml failed"
else
  fail "promtool not found (scripts/deps.sh test installs the prometheus package)"
fi
echo "install-check: ok"
