#!/usr/bin/env bash
# ensure-questdb.sh: put QuestDB's server jar in the download cache, for the
# integration tests of outputs.questdb (internal/testserver/questdb.go runs it
# as a child process of the test on the machine's JDK).
#
# Idempotent and cached outside the repository:
#   ${XDG_CACHE_HOME:-$HOME/.cache}/morse/questdb/<version>/questdb-<version>.jar
# The directory is keyed by version, so a version change fetches again. A jar
# already there whose sha256 is right is kept; nothing is downloaded.
#
#   1. installs Debian's openjdk-17-jre-headless if no `java` 17 or later is
#      on the PATH, and Debian's maven if `mvn` is missing (Debian 12, root);
#   2. fetches org.questdb:questdb:<version> from Maven Central with
#      `mvn dependency:copy` into a temporary directory beside the cache,
#      checks its sha256 and moves it into place, under a lock so that test
#      processes running at once download it once.
# Prints the jar's path on stdout; everything else goes to stderr.
set -euo pipefail

VERSION=9.1.0
# sha256 of questdb-9.1.0.jar as published on Maven Central.
SHA256=89d27871990db40b85716ffe0db0ad2a369b9e2169d985053bffb05167271682

CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/morse/questdb/$VERSION"
JAR="$CACHE/questdb-$VERSION.jar"

say() { echo "ensure-questdb: $*" >&2; }
die() { say "ERROR: $*"; exit 1; }

jar_ok() { [ -f "$JAR" ] && echo "$SHA256  $JAR" | sha256sum -c --quiet - >/dev/null 2>&1; }

if jar_ok; then
	echo "$JAR"
	exit 0
fi

apt_install() {
	command -v apt-get >/dev/null || die "$1 is missing and apt-get is not available to install it"
	say "installing Debian package(s): $*"
	if [ -z "${MORSE_APT_UPDATED:-}" ]; then
		DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
		export MORSE_APT_UPDATED=1
	fi
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >&2
}

java_major() {
	# `java -version` prints e.g.: openjdk version "17.0.15" 2025-04-15
	java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -n1
}

if ! command -v java >/dev/null || [ "$(java_major)" -lt 17 ]; then
	apt_install openjdk-17-jre-headless
fi
command -v mvn >/dev/null || apt_install maven

mkdir -p "$CACHE"
exec 9>"$CACHE/.lock"
flock 9
if jar_ok; then # another process fetched it while we waited for the lock
	echo "$JAR"
	exit 0
fi

TMP=$(mktemp -d "$CACHE/.fetch.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
say "fetching org.questdb:questdb:$VERSION from Maven Central"
mvn -q -B -Dstyle.color=never dependency:copy -Dartifact="org.questdb:questdb:$VERSION" -DoutputDirectory="$TMP" >&2 ||
	die "mvn could not fetch org.questdb:questdb:$VERSION"
got=$(sha256sum "$TMP/questdb-$VERSION.jar" | cut -d' ' -f1)
[ "$got" = "$SHA256" ] || die "questdb-$VERSION.jar has sha256 $got, want $SHA256"
mv -f "$TMP/questdb-$VERSION.jar" "$JAR"
say "cached $JAR"
echo "$JAR"
