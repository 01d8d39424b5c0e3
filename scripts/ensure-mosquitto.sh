#!/usr/bin/env bash
# ensure-mosquitto.sh: install Debian's mosquitto package (the broker and mosquitto_passwd)
# for the MQTT plugins' tests (internal/testserver/mosquitto.go). The tests run the broker
# as a child process on free loopback ports with a generated config; nothing here starts a
# server, and the package's own service is kept from starting while it is installed (it
# would listen on 1883).
#
# Idempotent and quick when mosquitto is already there. Needs root to install.
set -euo pipefail

say() { echo "ensure-mosquitto: $*" >&2; }
die() { say "ERROR: $*"; exit 1; }

have() { command -v mosquitto >/dev/null 2>&1 || [ -x /usr/sbin/mosquitto ]; }

if have && command -v mosquitto_passwd >/dev/null 2>&1; then
	say "mosquitto ready"
	exit 0
fi
[ "$(id -u)" -eq 0 ] || die "need root to install Debian's mosquitto package"
say "installing mosquitto (Debian package)"
export DEBIAN_FRONTEND=noninteractive NEEDRESTART_MODE=l
policy_added=
if [ ! -e /usr/sbin/policy-rc.d ]; then
	printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
	chmod 755 /usr/sbin/policy-rc.d
	policy_added=1
fi
rc=0
apt-get install -y -qq --no-install-recommends mosquitto || {
	apt-get update -qq && apt-get install -y -qq --no-install-recommends mosquitto
} || rc=$?
[ -z "$policy_added" ] || rm -f /usr/sbin/policy-rc.d
[ "$rc" -eq 0 ] || die "apt-get failed (exit $rc) installing mosquitto"
have || die "mosquitto not found after installing it"
say "mosquitto ready"
