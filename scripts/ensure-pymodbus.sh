#!/usr/bin/env bash
# ensure-pymodbus.sh: Debian's python3-pymodbus (3.0, with python3-serial and
# python3-serial-asyncio, which its server module imports) for the tests of inputs.modbus:
# internal/testserver/modbus.go runs testdata/modbus/server.py with Debian's /usr/bin/python3
# on free loopback ports. Nothing here starts a server. Idempotent: it installs only when the
# server module does not import.
set -euo pipefail

say() { echo "ensure-pymodbus: $*" >&2; }
ok() { /usr/bin/python3 -c 'import pymodbus.server, pymodbus.datastore' 2>/dev/null; }

if ok; then
	say "pymodbus ready for /usr/bin/python3"
	exit 0
fi
SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo
pkgs="python3 python3-pymodbus python3-serial python3-serial-asyncio"
if ! DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $pkgs >/dev/null; then
	say "apt-get update (the packages were not found)"
	$SUDO apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $pkgs >/dev/null
fi
ok || { say "ERROR: pymodbus does not import after installing"; exit 1; }
say "pymodbus ready for /usr/bin/python3"
