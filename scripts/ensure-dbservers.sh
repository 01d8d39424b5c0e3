#!/usr/bin/env bash
# ensure-dbservers.sh: install Debian's mariadb-server, postgresql and redis-server packages
# for the tests of inputs.mysql, inputs.postgresql and inputs.redis
# (internal/testserver/{mariadb,postgres,redis}.go). The tests run each server as a child
# process in a temporary directory on a free loopback port; nothing here starts a server, and
# the packages' own services are kept from starting while they are installed
# (policy-rc.d), as they would listen on 3306, 5432 and 6379.
#
# Idempotent and quick when the servers are already there. Needs root to install.
set -euo pipefail

say() { echo "ensure-dbservers: $*" >&2; }
die() { say "ERROR: $*"; exit 1; }

have() {
	command -v mariadbd >/dev/null 2>&1 || [ -x /usr/sbin/mariadbd ] || return 1
	command -v mariadb-install-db >/dev/null 2>&1 || return 1
	command -v redis-server >/dev/null 2>&1 || [ -x /usr/bin/redis-server ] || return 1
	ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 || return 1
}

if have; then
	say "mariadb, postgresql and redis ready"
	exit 0
fi
[ "$(id -u)" -eq 0 ] || die "need root to install Debian's mariadb-server, postgresql and redis-server"
say "installing mariadb-server, postgresql and redis-server (Debian packages)"
export DEBIAN_FRONTEND=noninteractive NEEDRESTART_MODE=l
policy_added=
if [ ! -e /usr/sbin/policy-rc.d ]; then
	printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
	chmod 755 /usr/sbin/policy-rc.d
	policy_added=1
fi
pkgs="mariadb-server postgresql redis-server"
rc=0
apt-get install -o DPkg::Lock::Timeout=900 -y -qq --no-install-recommends $pkgs >/dev/null || {
	apt-get -o DPkg::Lock::Timeout=900 update -qq && apt-get install -o DPkg::Lock::Timeout=900 -y -qq --no-install-recommends $pkgs >/dev/null
} || rc=$?
[ -z "$policy_added" ] || rm -f /usr/sbin/policy-rc.d
[ "$rc" -eq 0 ] || die "apt-get failed (exit $rc) installing $pkgs"
have || die "a server is missing after installing $pkgs"
say "mariadb, postgresql and redis ready"
