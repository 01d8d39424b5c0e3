#!/usr/bin/env bash
# ensure-victoriametrics.sh: put Debian's VictoriaMetrics 1.79.5 binary where the
# integration tests look for it (internal/testserver/victoriametrics.go), and the same
# package's vmagent beside it for the benchmarks against vmagent (bench/e2e, make
# bench-vmagent):
#
#   ${MORSE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/morse}/victoria-metrics/1.79.5/victoria-metrics
#   ${MORSE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/morse}/victoria-metrics/1.79.5/vmagent
#
# The tests run it as a child process on a free loopback port, with a temporary
# data directory; nothing here starts a server.
#
# Idempotent. The binaries come, in this order of preference, from:
#   1. the installed Debian package victoria-metrics, if it is version 1.79.5;
#   2. the package's .deb, fetched with `apt-get download` (Debian's archive, no
#      root needed once the package lists know it) and unpacked with dpkg-deb.
#      `apt-get update` runs first, as root, only when apt knows no 1.79.5.
# It is not installed system-wide on purpose: the package enables a systemd
# service that would listen on every interface at :8428.
#
# The binary links libc and libzstd (libzstd1 is part of every Debian system, as
# apt itself needs it); the script checks that it runs.
set -euo pipefail

VERSION=1.79.5
CACHE="${MORSE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/morse}"
DEST_DIR="$CACHE/victoria-metrics/$VERSION"
DEST="$DEST_DIR/victoria-metrics"
AGENT="$DEST_DIR/vmagent"

say() { echo "ensure-victoriametrics: $*" >&2; }
die() { say "ERROR: $*"; exit 1; }

# runs BIN: the binary starts and prints its flags (it has no -version output in
# Debian's build, so -help is the check that it links and runs).
runs() { timeout 10 "$1" -help >/dev/null 2>&1; }

if [ -x "$DEST" ] && runs "$DEST" && [ -x "$AGENT" ] && runs "$AGENT"; then
	say "VictoriaMetrics $VERSION ready at $DEST, vmagent at $AGENT"
	exit 0
fi

mkdir -p "$DEST_DIR"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

installed="$(dpkg-query -W -f='${Version}' victoria-metrics 2>/dev/null || true)"
if [[ "$installed" == "$VERSION"+* || "$installed" == "$VERSION"-* ]] && [ -x /usr/bin/victoria-metrics ] && [ -x /usr/bin/vmagent ]; then
	say "copying the installed package's binaries ($installed)"
	cp /usr/bin/victoria-metrics "$tmp/victoria-metrics"
	cp /usr/bin/vmagent "$tmp/vmagent"
else
	candidate() { apt-cache policy victoria-metrics 2>/dev/null | awk '/Candidate:/ {print $2}'; }
	cand="$(candidate)"
	if [[ "$cand" != "$VERSION"+* && "$cand" != "$VERSION"-* ]]; then
		[ "$(id -u)" -eq 0 ] || die "apt knows no victoria-metrics $VERSION (candidate: '${cand:-none}') and only root can run apt-get update"
		say "apt-get update (apt knows no victoria-metrics $VERSION yet)"
		apt-get update -qq || die "apt-get update failed"
		cand="$(candidate)"
	fi
	[[ "$cand" == "$VERSION"+* || "$cand" == "$VERSION"-* ]] ||
		die "Debian offers victoria-metrics '${cand:-none}', not $VERSION (bookworm has 1.79.5+ds1-2+b5)"
	say "downloading victoria-metrics=$cand"
	# As root, apt warns that it downloads unsandboxed; that is expected here.
	(cd "$tmp" && apt-get download -qq "victoria-metrics=$cand") || die "apt-get download failed"
	dpkg-deb -x "$tmp"/victoria-metrics_*.deb "$tmp/root" || die "cannot unpack the .deb"
	cp "$tmp/root/usr/bin/victoria-metrics" "$tmp/victoria-metrics"
	cp "$tmp/root/usr/bin/vmagent" "$tmp/vmagent"
fi

for bin in victoria-metrics vmagent; do
	chmod 755 "$tmp/$bin"
	runs "$tmp/$bin" || die "$bin does not run here (missing libzstd1? ldd says: $(ldd "$tmp/$bin" 2>&1 | grep 'not found' || true))"
done
# Atomic: a test that looks while this runs sees the old state or the whole file.
mv -f "$tmp/vmagent" "$AGENT"
mv -f "$tmp/victoria-metrics" "$DEST"
say "VictoriaMetrics $VERSION ready at $DEST, vmagent at $AGENT"
