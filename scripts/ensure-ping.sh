#!/bin/sh
# ensure-ping.sh: installs Debian's iputils-ping, the system ping that inputs.ping's exec
# method runs and that its tests run on 127.0.0.1 and ::1. The package has no service.
set -eu
if command -v ping >/dev/null 2>&1 && ping -V 2>/dev/null | grep -q iputils; then
	exit 0
fi
SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo
$SUDO apt-get update
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends iputils-ping
