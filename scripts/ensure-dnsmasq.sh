#!/usr/bin/env bash
# ensure-dnsmasq.sh: Debian's dnsmasq-base, the dnsmasq binary without the service that the
# dnsmasq package enables, for inputs.dns_query's tests (internal/testserver/dnsmasq.go).
# The tests run it as a child process on a free port of 127.0.0.1 with a generated config;
# nothing here starts a server.
#
# Idempotent: it installs, with apt-get as root, only when /usr/sbin/dnsmasq is missing.
set -euo pipefail

say() { echo "ensure-dnsmasq: $*" >&2; }

if [ -x /usr/sbin/dnsmasq ]; then
	say "$(/usr/sbin/dnsmasq --version | head -1) ready"
	exit 0
fi
[ "$(id -u)" -eq 0 ] || { say "ERROR: dnsmasq-base missing; run as root to install"; exit 1; }
export DEBIAN_FRONTEND=noninteractive
apt-get install -y --no-install-recommends dnsmasq-base >/dev/null 2>&1 ||
	{ apt-get update >/dev/null && apt-get install -y --no-install-recommends dnsmasq-base >/dev/null; }
say "$(/usr/sbin/dnsmasq --version | head -1) installed"
