#!/usr/bin/env bash
# ensure-prometheus.sh: put Debian's Prometheus 2.42 and node_exporter 1.5 binaries where the
# integration tests look for them (internal/testserver/prometheus.go):
#
#   ${MORSE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/morse}/prometheus/2.42.0/prometheus
#   ${MORSE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/morse}/node-exporter/1.5.0/prometheus-node-exporter
#
# The tests run them as child processes on free loopback ports, with temporary data
# directories; nothing here starts a server. The packages are not installed system-wide on
# purpose: each enables a systemd service that listens on every interface (:9090, :9100).
#
# Idempotent. Each binary comes, in this order of preference, from:
#   1. the installed Debian package, if it is the version wanted;
#   2. the package's .deb, fetched with `apt-get download` (Debian's archive; no root needed
#      once the package lists know it) and unpacked with dpkg-deb. `apt-get update` runs
#      first, as root, only when apt does not know the version.
# Both are static Go binaries; the script checks that they run.
set -euo pipefail

CACHE="${MORSE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/morse}"

say() { echo "ensure-prometheus: $*" >&2; }
die() { say "ERROR: $*"; exit 1; }

# fetch PACKAGE VERSION BINARY DEST: copies /usr/bin/BINARY of PACKAGE at VERSION to DEST.
fetch() {
	local pkg="$1" version="$2" bin="$3" dest="$4"
	if [ -x "$dest" ] && timeout 10 "$dest" --version >/dev/null 2>&1; then
		say "$pkg $version ready at $dest"
		return 0
	fi
	mkdir -p "$(dirname "$dest")"
	local tmp
	tmp="$(mktemp -d)"
	# shellcheck disable=SC2064 # expand now: tmp is local
	trap "rm -rf '$tmp'" RETURN
	local installed
	installed="$(dpkg-query -W -f='${Version}' "$pkg" 2>/dev/null || true)"
	if [[ "$installed" == "$version"[+-]* ]] && [ -x "/usr/bin/$bin" ]; then
		say "copying the installed package's binary ($installed)"
		cp "/usr/bin/$bin" "$tmp/$bin"
	else
		local cand
		cand="$(apt-cache policy "$pkg" 2>/dev/null | awk '/Candidate:/ {print $2}')"
		if [[ "$cand" != "$version"[+-]* ]]; then
			[ "$(id -u)" -eq 0 ] || die "apt knows no $pkg $version (candidate: '${cand:-none}') and only root can run apt-get update"
			say "apt-get update (apt knows no $pkg $version yet)"
			apt-get update -qq || die "apt-get update failed"
			cand="$(apt-cache policy "$pkg" 2>/dev/null | awk '/Candidate:/ {print $2}')"
		fi
		[[ "$cand" == "$version"[+-]* ]] || die "Debian offers $pkg '${cand:-none}', not $version (bookworm's)"
		say "downloading $pkg=$cand"
		# As root, apt warns that it downloads unsandboxed; that is expected here.
		(cd "$tmp" && apt-get download -qq "$pkg=$cand") || die "apt-get download $pkg failed"
		dpkg-deb -x "$tmp/${pkg}_"*.deb "$tmp/root" || die "cannot unpack the $pkg .deb"
		cp "$tmp/root/usr/bin/$bin" "$tmp/$bin"
	fi
	chmod 755 "$tmp/$bin"
	timeout 10 "$tmp/$bin" --version >/dev/null 2>&1 || die "$bin does not run here"
	# Atomic: a test that looks while this runs sees the old state or the whole file.
	mv -f "$tmp/$bin" "$dest"
	say "$pkg $version ready at $dest"
}

fetch prometheus 2.42.0 prometheus "$CACHE/prometheus/2.42.0/prometheus"
fetch prometheus-node-exporter 1.5.0 prometheus-node-exporter "$CACHE/node-exporter/1.5.0/prometheus-node-exporter"
