#!/usr/bin/env bash
# ensure-snmp.sh: install Debian's snmpd (the agent), snmp (snmptrap, snmpwalk) and
# libsnmp-base (Net-SNMP's MIBs in /usr/share/snmp/mibs; Debian ships the IETF ones, IF-MIB among them, only in the non-free snmp-mibs-downloader, so the tests load stand-ins of their own) for the tests of inputs.snmp and
# inputs.snmp_trap (internal/testserver/snmpd.go). The tests run snmpd as a child process on
# a free loopback UDP port with a generated config; nothing here starts a server, and the
# package's own service is kept from starting while it is installed (it would listen on 161).
#
# Idempotent and quick when the three are already there. Needs root to install.
set -euo pipefail

say() { echo "ensure-snmp: $*" >&2; }
die() { say "ERROR: $*"; exit 1; }

have() {
	[ -x /usr/sbin/snmpd ] && command -v snmptrap >/dev/null 2>&1 &&
		[ -f /usr/share/snmp/mibs/NET-SNMP-MIB.txt ]
}

if have; then
	say "snmpd, snmptrap and the MIBs ready"
	exit 0
fi
[ "$(id -u)" -eq 0 ] || die "need root to install Debian's snmpd, snmp and libsnmp-base packages"
say "installing snmpd, snmp and libsnmp-base (Debian packages)"
export DEBIAN_FRONTEND=noninteractive NEEDRESTART_MODE=l
policy_added=
if [ ! -e /usr/sbin/policy-rc.d ]; then
	printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
	chmod 755 /usr/sbin/policy-rc.d
	policy_added=1
fi
pkgs="snmpd snmp libsnmp-base"
rc=0
apt-get install -y -qq --no-install-recommends $pkgs || {
	apt-get update -qq && apt-get install -y -qq --no-install-recommends $pkgs
} || rc=$?
[ -z "$policy_added" ] || rm -f /usr/sbin/policy-rc.d
[ "$rc" -eq 0 ] || die "apt-get failed (exit $rc) installing $pkgs"
have || die "snmpd, snmptrap or NET-SNMP-MIB.txt not found after installing $pkgs"
say "snmpd, snmptrap and the MIBs ready"
