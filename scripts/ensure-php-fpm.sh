#!/usr/bin/env bash
# ensure-php-fpm.sh: puts Debian bookworm's PHP-FPM 8.2 binary where the tests of
# inputs.phpfpm look for it (internal/testserver/phpfpm.go):
#
#   ${MORSE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/morse}/php-fpm/8.2/php-fpm8.2
#
# The tests run it as a child process with a generated config (-n: no php.ini, so no
# extension is needed) on a free loopback port and a unix socket; nothing here starts a
# server. The package is not installed system-wide on purpose: it pulls in php8.2-cli and
# php8.2-common, and its postinst starts a service. The binary is fetched with
# `apt-get download` (`apt-get update` first, as root, only when apt does not know an 8.2
# version), unpacked with dpkg-deb, and linked against the system's libraries, which apt-get
# installs when they are missing. Idempotent.
set -euo pipefail

CACHE="${MORSE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/morse}"
VERSION=8.2
PKG=php$VERSION-fpm
DEST="$CACHE/php-fpm/$VERSION/php-fpm$VERSION"

say() { echo "ensure-php-fpm: $*" >&2; }
die() { say "ERROR: $*"; exit 1; }

if [ -x "$DEST" ] && timeout 10 "$DEST" -n -v >/dev/null 2>&1; then
	say "php-fpm $VERSION ready at $DEST"
	exit 0
fi
SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo
cand="$(apt-cache policy "$PKG" 2>/dev/null | awk '/Candidate:/ {print $2}')"
if [[ "$cand" != "$VERSION".* ]]; then
	say "apt-get update (apt knows no $PKG yet)"
	$SUDO apt-get update -qq || die "apt-get update failed"
	cand="$(apt-cache policy "$PKG" 2>/dev/null | awk '/Candidate:/ {print $2}')"
fi
[[ "$cand" == "$VERSION".* ]] || die "Debian offers $PKG '${cand:-none}', not $VERSION (bookworm's)"
# The libraries the binary links, without the package's service and PHP's other packages.
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
	libacl1 libapparmor1 libargon2-1 libpcre2-8-0 libsodium23 libssl3 libsystemd0 libxml2 zlib1g \
	>/dev/null || die "cannot install php-fpm's libraries"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
chmod 755 "$tmp" # apt's _apt user writes the download here
say "downloading $PKG=$cand"
(cd "$tmp" && apt-get download -qq "$PKG=$cand") || die "apt-get download $PKG failed"
dpkg-deb -x "$tmp"/"$PKG"_*.deb "$tmp/root" || die "cannot unpack the $PKG .deb"
mkdir -p "$(dirname "$DEST")"
install -m 755 "$tmp/root/usr/sbin/php-fpm$VERSION" "$tmp/php-fpm"
timeout 10 "$tmp/php-fpm" -n -v >/dev/null 2>&1 || die "php-fpm does not run here"
# Atomic: a test that looks while this runs sees the old state or the whole file.
mv -f "$tmp/php-fpm" "$DEST"
say "php-fpm $VERSION ready at $DEST"
