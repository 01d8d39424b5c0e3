#!/usr/bin/env bash
# ensure-nginx.sh: puts Debian bookworm's nginx 1.22.1 binary where the tests of
# inputs.http, inputs.http_response and inputs.net_response look for it
# (internal/testserver/nginx.go):
#
#   ${MORSE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/morse}/nginx/1.22.1/nginx
#
# The tests run it as a child process with a generated config on free loopback ports;
# nothing here starts a server. The package is not installed system-wide on purpose: its
# postinst starts a service on port 80. The binary is fetched with `apt-get download`
# (`apt-get update` first, as root, only when apt does not know the version), unpacked with
# dpkg-deb, and linked against the system's libssl, libpcre2, zlib and libcrypt, which
# apt-get installs when they are missing. Idempotent.
set -euo pipefail

CACHE="${MORSE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/morse}"
VERSION=1.22.1
DEST="$CACHE/nginx/$VERSION/nginx"

say() { echo "ensure-nginx: $*" >&2; }
die() { say "ERROR: $*"; exit 1; }

if [ -x "$DEST" ] && timeout 10 "$DEST" -v >/dev/null 2>&1; then
	say "nginx $VERSION ready at $DEST"
	exit 0
fi
SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo
cand="$(apt-cache policy nginx 2>/dev/null | awk '/Candidate:/ {print $2}')"
if [[ "$cand" != "$VERSION"[+-]* ]]; then
	say "apt-get update (apt knows no nginx $VERSION yet)"
	$SUDO apt-get update -qq || die "apt-get update failed"
	cand="$(apt-cache policy nginx 2>/dev/null | awk '/Candidate:/ {print $2}')"
fi
[[ "$cand" == "$VERSION"[+-]* ]] || die "Debian offers nginx '${cand:-none}', not $VERSION (bookworm's)"
# The libraries the binary links, without the package's service.
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
	libssl3 libpcre2-8-0 zlib1g libcrypt1 >/dev/null || die "cannot install nginx's libraries"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
chmod 755 "$tmp" # apt's _apt user writes the download here
say "downloading nginx=$cand"
(cd "$tmp" && apt-get download -qq "nginx=$cand") || die "apt-get download nginx failed"
dpkg-deb -x "$tmp"/nginx_*.deb "$tmp/root" || die "cannot unpack the nginx .deb"
mkdir -p "$(dirname "$DEST")"
install -m 755 "$tmp/root/usr/sbin/nginx" "$tmp/nginx"
timeout 10 "$tmp/nginx" -v >/dev/null 2>&1 || die "nginx does not run here"
# Atomic: a test that looks while this runs sees the old state or the whole file.
mv -f "$tmp/nginx" "$DEST"
say "nginx $VERSION ready at $DEST"
