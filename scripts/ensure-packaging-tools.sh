#!/usr/bin/env bash
# ensure-packaging-tools.sh: the tools `make deb` and the packaging tests
# (packaging/mkdeb) use, installed from Debian's archive when missing.
#
#   dpkg-deb, md5sum, sh   build and inspect the .deb (dpkg, coreutils, dash:
#                          essential on Debian, so only checked)
#   systemd-analyze        checks packaging/morse.service (package systemd)
#   kill                   /bin/kill must exist in the unit's verify root
#                          (package procps)
#
# Installing the systemd package does not make it PID 1 or start anything; it
# only provides systemd-analyze. Idempotent; needs root only to install.
set -euo pipefail

say() { echo "ensure-packaging-tools: $*" >&2; }
die() { say "ERROR: $*"; exit 1; }

for tool in dpkg-deb md5sum sh; do
	command -v "$tool" >/dev/null 2>&1 || die "$tool is missing; this script expects a Debian system"
done

pkgs=()
command -v systemd-analyze >/dev/null 2>&1 || pkgs+=(systemd)
[ -x /bin/kill ] || pkgs+=(procps)

if [ ${#pkgs[@]} -gt 0 ]; then
	[ "$(id -u)" -eq 0 ] || die "need root to install ${pkgs[*]}"
	say "installing ${pkgs[*]} (Debian packages)"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${pkgs[@]}"
fi

command -v systemd-analyze >/dev/null 2>&1 || die "systemd-analyze still missing"
[ -x /bin/kill ] || die "/bin/kill still missing"
say "systemd-analyze: $(systemd-analyze --version | head -n 1)"
