#!/usr/bin/env bash
# systemd-rootfs.sh: a Debian bookworm root filesystem with systemd 252 as its
# init, as a tarball for a `FROM scratch` + `ADD rootfs.tar /` image. `make
# test-systemd` runs the morse package under it (internal/systemdtest).
#
# Prints the tarball's path on stdout. The tarball is cached outside the
# repository, under $MORSE_CACHE (default $HOME/.cache/morse)/rootfs/KEY/,
# where KEY hashes everything that decides its contents: the suite, the
# variant, the package list, the mirror, the architecture and this recipe's
# version. Change any of them and the next run builds a new one (1.5 to 3 min,
# about 100 MB). Next to it, packages.txt lists the versions installed.
#
# The mirror is the one apt on this machine uses for Debian (the first URI
# of /etc/apt/sources.list.d/debian.sources, else of a `deb` line for Debian in
# /etc/apt/sources.list); $MORSE_DEBIAN_MIRROR overrides it. debootstrap is
# installed from Debian's archive when missing. Needs root (debootstrap does).
set -euo pipefail

SUITE=bookworm
VARIANT=minbase
INCLUDE=systemd,systemd-sysv,dbus,procps
RECIPE=2 # raise when the steps below change what the tarball holds

say() { echo "systemd-rootfs: $*" >&2; }
die() { say "ERROR: $*"; exit 1; }

mirror() {
	if [ -n "${MORSE_DEBIAN_MIRROR:-}" ]; then
		echo "$MORSE_DEBIAN_MIRROR"
		return
	fi
	local m=""
	if [ -r /etc/apt/sources.list.d/debian.sources ]; then
		# deb822: the URIs of the stanza whose Suites name the release itself.
		m=$(awk -v suite="$SUITE" '
			/^$/ { if (uris != "" && hit) { print uris; exit } uris=""; hit=0 }
			/^URIs:/ { uris=$2 }
			/^Suites:/ { for (i = 2; i <= NF; i++) if ($i == suite) hit=1 }
			END { if (uris != "" && hit) print uris }
		' /etc/apt/sources.list.d/debian.sources | head -n 1)
	fi
	if [ -z "$m" ] && [ -r /etc/apt/sources.list ]; then
		m=$(awk '$1 == "deb" && $2 ~ /debian\/?$/ { print $2; exit }' /etc/apt/sources.list)
	fi
	echo "${m:-http://deb.debian.org/debian}"
}

MIRROR=$(mirror)
ARCH=$(dpkg --print-architecture)
KEY=$(printf '%s\n' "$SUITE" "$VARIANT" "$INCLUDE" "$MIRROR" "$ARCH" "$RECIPE" | sha256sum | cut -c1-16)
CACHE="${MORSE_CACHE:-$HOME/.cache/morse}/rootfs/$SUITE-$KEY"
TAR="$CACHE/rootfs.tar"

if [ -s "$TAR" ]; then
	say "cached: $TAR"
	echo "$TAR"
	exit 0
fi

[ "$(id -u)" -eq 0 ] || die "debootstrap needs root"
if ! command -v debootstrap >/dev/null 2>&1; then
	say "installing debootstrap (Debian package)"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >&2
	apt-get install -y -qq --no-install-recommends debootstrap >&2
fi

mkdir -p "$CACHE"
WORK=$(mktemp -d "$CACHE/build.XXXXXX")
cleanup() {
	# debootstrap may leave /proc or /sys mounted inside if interrupted.
	for m in proc sys dev/pts dev; do umount -l "$WORK/root/$m" 2>/dev/null || true; done
	rm -rf "$WORK"
}
trap cleanup EXIT

say "debootstrap $SUITE ($VARIANT, +$INCLUDE) from $MIRROR into $WORK/root"
start=$SECONDS
debootstrap --variant="$VARIANT" --include="$INCLUDE" "$SUITE" "$WORK/root" "$MIRROR" >"$WORK/debootstrap.log" 2>&1 || {
	tail -n 40 "$WORK/debootstrap.log" >&2
	die "debootstrap failed"
}
say "debootstrap took $((SECONDS - start))s"

R="$WORK/root"
chroot "$R" dpkg-query -W -f '${Package} ${Version}\n' >"$WORK/packages.txt"
# Documentation, manuals, locales and apt's caches: not needed to run a service.
rm -rf "$R"/usr/share/doc/* "$R"/usr/share/man/* "$R"/usr/share/info/* \
	"$R"/usr/share/locale/* "$R"/var/cache/apt/*.bin "$R"/var/cache/apt/archives/*.deb \
	"$R"/var/lib/apt/lists/* "$R"/var/log/*.log
# Each container boots with a machine ID of its own.
: >"$R/etc/machine-id"
# No ttys in a container: the console getty would respawn in a loop.
ln -sf /dev/null "$R/etc/systemd/system/getty.target"
# Nothing scheduled may take dpkg's lock or the network in the middle of a test.
for timer in apt-daily apt-daily-upgrade dpkg-db-backup e2scrub_all fstrim; do
	ln -sf /dev/null "$R/etc/systemd/system/$timer.timer"
done
# Keep the journal in memory, as a test does not need it to persist.
mkdir -p "$R/etc/systemd/journald.conf.d"
printf '[Journal]\nStorage=volatile\n' >"$R/etc/systemd/journald.conf.d/volatile.conf"

tar --numeric-owner -C "$R" -cf "$WORK/rootfs.tar" .
mv "$WORK/packages.txt" "$CACHE/packages.txt"
mv "$WORK/rootfs.tar" "$TAR"
say "built $TAR ($(du -h "$TAR" | cut -f1)) in $((SECONDS - start))s"
echo "$TAR"
