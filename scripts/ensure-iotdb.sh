#!/usr/bin/env bash
# ensure-iotdb.sh: put the jars of Apache IoTDB (a ConfigNode and a DataNode)
# where the integration tests find them (internal/testserver/iotdb.go, which
# copies them with the JDK into a FROM-scratch image: IoTDB binds every
# interface whatever its settings say, so it runs in a network namespace of
# its own).
#
# Idempotent, safe to run from several processes at once (flock), quick when
# the jars are already there. Meant for `make test-deps` on a fresh Debian 12
# machine; the test harness also runs it itself when the jars are missing.
#   1. installs Debian's openjdk-17-jre-headless if no `java` 17 or newer is
#      on PATH, and Debian's maven if `mvn` is missing (needs root then);
#   2. resolves testdata/containers/iotdb/pom.xml (iotdb-server and
#      iotdb-confignode with their runtime dependencies) from Maven
#      Central into
#          ${XDG_CACHE_HOME:-$HOME/.cache}/morse/iotdb/<iotdb.version>/libs
#      and writes libs/.complete holding the sha256 of the pom. A version
#      change gives a new directory; any other change of the pom refetches.
# Prints the libs directory on stdout. About 165 jars and 105 MB.
set -euo pipefail

say() { echo "ensure-iotdb: $*" >&2; }
die() { say "ERROR: $*"; exit 1; }

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
POM="$ROOT/testdata/containers/iotdb/pom.xml"
[ -f "$POM" ] || die "$POM not found"

VERSION="$(sed -n 's:.*<iotdb.version>\(.*\)</iotdb.version>.*:\1:p' "$POM")"
[ -n "$VERSION" ] || die "no <iotdb.version> in $POM"
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/morse/iotdb/$VERSION"
LIBS="$CACHE/libs"
HASH="$(sha256sum "$POM" | cut -d' ' -f1)"

complete() { [ -f "$LIBS/.complete" ] && [ "$(cat "$LIBS/.complete")" = "$HASH" ]; }

# ---- 1. packages -----------------------------------------------------------
java_major() {
	# `java -version` prints e.g.: openjdk version "17.0.15" 2025-04-15
	java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -n1
}

pkgs=()
if ! command -v java >/dev/null 2>&1 || [ "$(java_major)" -lt 17 ]; then
	pkgs+=(openjdk-17-jre-headless)
fi
if ! complete && ! command -v mvn >/dev/null 2>&1; then
	pkgs+=(maven)
fi
if [ ${#pkgs[@]} -gt 0 ]; then
	[ "$(id -u)" -eq 0 ] || die "need root to install ${pkgs[*]}"
	say "installing ${pkgs[*]} (Debian packages)"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${pkgs[@]}"
fi

# ---- 2. jars ---------------------------------------------------------------
if complete; then
	echo "$LIBS"
	exit 0
fi

mkdir -p "$CACHE"
exec 9>"$CACHE/.lock"
flock 9
# Another process may have fetched them while this one waited for the lock.
if complete; then
	echo "$LIBS"
	exit 0
fi

say "fetching IoTDB $VERSION jars from Maven Central into $LIBS"
TMP="$(mktemp -d "$CACHE/libs.tmp.XXXXXX")"
trap 'rm -rf "$TMP"' EXIT
start=$SECONDS
mvn -q -B -f "$POM" dependency:copy-dependencies \
	-DincludeScope=runtime -DoutputDirectory="$TMP" >&2 ||
	die "mvn could not resolve $POM (is Maven Central reachable?)"
n="$(find "$TMP" -name '*.jar' | wc -l)"
[ "$n" -gt 0 ] || die "mvn copied no jars"
echo "$HASH" >"$TMP/.complete"
rm -rf "$LIBS"
mv "$TMP" "$LIBS"
trap - EXIT
say "$n jars, $(du -sh "$LIBS" | cut -f1), in $((SECONDS - start)) s"
echo "$LIBS"
