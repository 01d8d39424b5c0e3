#!/usr/bin/env bash
# ensure-syslog-senders.sh: the real syslog senders of inputs.syslog's tests
# (internal/testserver/syslog.go): util-linux's logger, from Debian's bsdutils, and the
# openssl command line, whose s_client is the TLS client. Nothing here starts a server.
#
# Idempotent: it installs, with apt-get as root, only what is missing.
set -euo pipefail

say() { echo "ensure-syslog-senders: $*" >&2; }

missing=()
logger --help 2>/dev/null | grep -q -- --octet-count || missing+=(bsdutils)
command -v openssl >/dev/null || missing+=(openssl)
if [ ${#missing[@]} -eq 0 ]; then
	say "logger and openssl ready"
	exit 0
fi
[ "$(id -u)" -eq 0 ] || { say "ERROR: ${missing[*]} missing; run as root to install"; exit 1; }
export DEBIAN_FRONTEND=noninteractive
apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null 2>&1 ||
	{ apt-get update >/dev/null && apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null; }
say "installed ${missing[*]}"
