#!/bin/sh
# test-deps-supervisor.sh: installs Supervisor (Debian's supervisor package: supervisord and
# supervisorctl) for the inputs.procstat supervisor_units test, which runs a real supervisord
# of its own in a temporary directory. The package's own service is not needed and not
# started by the tests.
set -eu
if command -v supervisord >/dev/null 2>&1 && command -v supervisorctl >/dev/null 2>&1; then
	exit 0
fi
SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo
$SUDO apt-get update
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends supervisor
